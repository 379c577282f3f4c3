/*
 * cumtrace_bench_pause as tests/e2e/t_bench_pause.sh checks it: 4 MiB
 * allocated and freed traced, a 1 MiB block allocated traced and freed while
 * paused (it reads as live at exit: nothing is allocated after it, which could
 * be given its address), 2 MiB allocated while paused by this thread and 8 MiB
 * by another (neither is recorded), a CuPy pool block handed out while paused
 * (not recorded) and one handed out and given back after the resume (two
 * framework events), then a pause asked twice (one pause) and a resume. Every call's result is checked
 * and printed as "rc NAME VALUE"; without the shim it prints "untraced".
 */
#include <cumtrace/cumtrace.h>
#include <dlfcn.h>
#include <pthread.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

static void *worker(void *arg)
{
	void *p;
	CHECK(cudaMalloc(&p, 8 * MiB));
	CHECK(cudaFree(p));
	return arg;
}

int main(void)
{
	__typeof__(cumtrace_bench_pause) *bench_pause =
		(__typeof__(cumtrace_bench_pause) *)dlsym(RTLD_DEFAULT, "cumtrace_bench_pause");
	if (!bench_pause) {
		puts("untraced");
		return 0;
	}
	__typeof__(cumtrace_cupy_alloc) *cupy_alloc =
		(__typeof__(cumtrace_cupy_alloc) *)dlsym(RTLD_DEFAULT, "cumtrace_cupy_alloc");
	__typeof__(cumtrace_cupy_free) *cupy_free =
		(__typeof__(cumtrace_cupy_free) *)dlsym(RTLD_DEFAULT, "cumtrace_cupy_free");
	void *a, *b, *c;
	CHECK(cudaMalloc(&c, 4 * MiB));
	CHECK(cudaFree(c));
	CHECK(cudaMalloc(&a, 1 * MiB));
	printf("rc pause %d\n", bench_pause(1));
	CHECK(cudaMalloc(&b, 2 * MiB));
	CHECK(cudaFree(a));
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 4;
	CHECK(cudaFree(b));
	cupy_alloc(0, 0x7f0000100000ull, 512, 500);
	printf("rc resume %d\n", bench_pause(0));
	cupy_alloc(0, 0x7f0000200000ull, 256, 256);
	cupy_free(0, 0x7f0000200000ull, 256);
	printf("rc again %d %d %d\n", bench_pause(1), bench_pause(1), bench_pause(0));
	printf("rc resumed %d\n", bench_pause(0));
	return 0;
}
