/*
 * A stand-in for a training job, for the demo: weights allocated once, a
 * workspace per step freed at the end of the step, an optimizer state that
 * is allocated lazily, pinned staging buffers, and a bug: every 10th step
 * keeps its "metrics" buffer alive.
 */
#include <string.h>
#include <dlfcn.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

static void (*mark)(const char *);

NOINLINE static void *alloc_weights(size_t n)
{
	void *p;
	CHECK(cudaMalloc(&p, n));
	return p;
}

NOINLINE static void *alloc_activations(size_t n, cudaStream_t s)
{
	void *p;
	CHECK(cudaMallocAsync(&p, n, s));
	return p;
}

NOINLINE static void *save_metrics(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 2 * MiB));
	return p;
}

NOINLINE static void train_step(int step, cudaStream_t s, void **optimizer_state)
{
	void *act[4];
	for (int i = 0; i < 4; i++)
		act[i] = alloc_activations((size_t)(8 + 4 * i) * MiB, s);
	if (!*optimizer_state)
		CHECK(cudaMalloc(optimizer_state, 64 * MiB));
	void *metrics = save_metrics();
	for (int i = 3; i >= 0; i--)
		CHECK(cudaFreeAsync(act[i], s));
	if (step % 10 != 9) /* the bug: every 10th step leaks its metrics */
		CHECK(cudaFree(metrics));
	CHECK(cudaStreamSynchronize(s));
}

int main(void)
{
	mark = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cumtrace_mark");
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	void *weights = alloc_weights(128 * MiB);
	void *staging;
	CHECK(cudaHostAlloc(&staging, 16 * MiB, cudaHostAllocDefault));
	void *optimizer_state = NULL;
	for (int step = 0; step < 40; step++) {
		if (mark) {
			char name[32];
			snprintf(name, sizeof name, "step %d", step);
			mark(name);
		}
		train_step(step, s, &optimizer_state);
	}
	CHECK(cudaFree(optimizer_state));
	CHECK(cudaFree(weights));
	CHECK(cudaFreeHost(staging));
	CHECK(cudaStreamDestroy(s));
	printf("demo_train: 40 steps done\n");
	return 0;
}
