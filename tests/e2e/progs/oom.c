/*
 * Out-of-memory failures under CUMTRACE_FAKE_CAPACITY=64M (tests/e2e/t_oom.sh):
 *
 *   device 0: site A = three cudaMalloc of 16 MiB, site B = one of 8 MiB: 56 MiB live
 *   1. cudaMalloc 48 MiB fails (8 MiB free of 64 MiB)
 *   2. cuMemAlloc_v2 12 MiB (driver, from a libcuda handle) fails the same way
 *   device 1, another thread: site C = cudaMalloc 32 MiB, then
 *   3. cudaMallocAsync 40 MiB on the legacy stream fails (32 MiB free of 64 MiB)
 *
 * For each failure it prints the return code, errno (set to EDOM before the
 * call), cudaGetLastError and cudaMemGetInfo after it: a traced run must print
 * what an untraced one prints. Then it frees everything.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

NOINLINE static void *site_a(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 16 * MiB));
	return p;
}

NOINLINE static void *site_b(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 8 * MiB));
	return p;
}

static void after(const char *what, int rc)
{
	int e = errno;
	size_t free_b = 0, total = 0;
	cudaError_t last = cudaGetLastError();
	CHECK(cudaMemGetInfo(&free_b, &total));
	printf("%s rc=%d errno=%s last=%d free=%zu total=%zu\n", what, rc, e == EDOM ? "EDOM" : "changed",
	       (int)last, free_b, total);
}

NOINLINE static int fail_runtime(void)
{
	void *p = NULL;
	errno = EDOM;
	return cudaMalloc(&p, 48 * MiB);
}

NOINLINE static int fail_driver(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	CUresult (*alloc)(CUdeviceptr *, size_t) =
		lib ? (CUresult(*)(CUdeviceptr *, size_t))dlsym(lib, "cuMemAlloc_v2") : NULL;
	if (!alloc) {
		fprintf(stderr, "no cuMemAlloc_v2\n");
		exit(3);
	}
	CUdeviceptr d = 0;
	errno = EDOM;
	return alloc(&d, 12 * MiB);
}

static void *on_device1(void *arg)
{
	void *c, *p = NULL;
	CHECK(cudaSetDevice(1));
	printf("tid1 %ld\n", (long)syscall(SYS_gettid));
	CHECK(cudaMalloc(&c, 32 * MiB)); /* site C */
	errno = EDOM;
	int rc = cudaMallocAsync(&p, 40 * MiB, 0);
	after("async", rc);
	CHECK(cudaFree(c));
	return arg;
}

int main(void)
{
	void *a[3], *b;
	printf("tid0 %ld\n", (long)syscall(SYS_gettid));
	for (int i = 0; i < 3; i++)
		a[i] = site_a();
	b = site_b();
	int rc = fail_runtime();
	after("runtime", rc);
	rc = fail_driver();
	after("driver", rc);
	pthread_t t;
	pthread_create(&t, NULL, on_device1, NULL);
	pthread_join(t, NULL);
	for (int i = 0; i < 3; i++)
		CHECK(cudaFree(a[i]));
	CHECK(cudaFree(b));
	return 0;
}
