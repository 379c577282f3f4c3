/*
 * Peaks per phase (tests/e2e/t_peaks.sh), run with NVTX_INJECTION64_PATH:
 *   cumtrace_mark("load"); keep = 1 MiB
 *   nvtxRangePushA("fwd"); 4 MiB, freed; nvtxRangePop()      fwd: 5 MiB (from 1)
 *   cumtrace_mark("step")
 *   nvtxRangePushA("fwd"); 2 MiB; nvtxRangePop(); freed      fwd: 3 MiB (from 1)
 *   cumtrace_range_push("io") on a second thread; 512 KiB there, freed; pop
 *   keep freed
 * Phases: before "load" nothing; load 5 MiB (growth 5); step 3 MiB (from 1);
 * fwd twice, at most 5 MiB (growth 4); io 1.5 MiB (from 1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include "common.h"

#define KiB 1024ul
#define MiB (1024ul * 1024ul)

static void (*mark)(const char *);
static void (*range_push)(const char *);
static void (*range_pop)(void);

static void *io(void *arg)
{
	void *p;
	range_push("io");
	CHECK(cudaMalloc(&p, 512 * KiB));
	CHECK(cudaFree(p));
	range_pop();
	return arg;
}

int main(void)
{
	mark = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cumtrace_mark");
	range_push = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cumtrace_range_push");
	range_pop = (void (*)(void))dlsym(RTLD_DEFAULT, "cumtrace_range_pop");
	if (!mark || !range_push || !range_pop) {
		fprintf(stderr, "not traced: no cumtrace_mark\n");
		return 3;
	}
	void *keep, *p;
	mark("load");
	CHECK(cudaMalloc(&keep, 1 * MiB));
	nvtxRangePushA("fwd");
	CHECK(cudaMalloc(&p, 4 * MiB));
	CHECK(cudaFree(p));
	nvtxRangePop();
	mark("step");
	nvtxRangePushA("fwd");
	CHECK(cudaMalloc(&p, 2 * MiB));
	nvtxRangePop();
	CHECK(cudaFree(p));
	pthread_t t;
	pthread_create(&t, NULL, io, NULL);
	pthread_join(t, NULL);
	CHECK(cudaFree(keep));
	return 0;
}
