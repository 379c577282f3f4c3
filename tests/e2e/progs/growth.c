/*
 * Twelve iterations of a training-like loop (tests/e2e/t_growth.sh). Each
 * keeps 1 MiB in a list (a growth leak, freed before exit), uses a steady
 * cache (libtorch_cuda.so: 8 MiB taken in the first iteration, reused after)
 * and a temporary buffer freed in the same iteration.
 *   growth mark       steps are cumtrace_mark("step") instants
 *   growth nvtx       steps are NVTX ranges "iteration" nested in "epoch"
 *   growth startend   steps are nvtxRangeStartA/End ranges "iteration"
 */
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <string.h>

#include "common.h"

void *fake_torch_empty(size_t n);
void fake_torch_release(void *p);

#define MiB (1024ul * 1024ul)
#define ITERS 12

static void *kept[ITERS];

NOINLINE static void keep(int i)
{
	CHECK(cudaMalloc(&kept[i], 1 * MiB));
}

NOINLINE static void step(int i)
{
	void *c = fake_torch_empty(8 * MiB);
	void *tmp;
	if (!c)
		exit(3);
	CHECK(cudaMalloc(&tmp, 256 * 1024));
	keep(i);
	CHECK(cudaFree(tmp));
	fake_torch_release(c);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mark";
	void (*mark)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cumtrace_mark");
	CHECK(cudaFree(0));
	if (!strcmp(mode, "nvtx"))
		nvtxRangePushA("epoch");
	for (int i = 0; i < ITERS; i++) {
		if (!strcmp(mode, "mark")) {
			if (mark)
				mark("step");
			step(i);
		} else if (!strcmp(mode, "nvtx")) {
			nvtxRangePushA("iteration");
			step(i);
			nvtxRangePop();
		} else {
			nvtxRangeId_t id = nvtxRangeStartA("iteration");
			step(i);
			nvtxRangeEnd(id);
		}
	}
	if (!strcmp(mode, "mark") && mark)
		mark("step");
	if (!strcmp(mode, "nvtx"))
		nvtxRangePop();
	for (int i = 0; i < ITERS; i++)
		CHECK(cudaFree(kept[i]));
	return 0;
}
