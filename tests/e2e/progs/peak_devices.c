/*
 * Per-device peaks (tests/e2e/t_peaks.sh):
 *   device 0: A 3 MiB, B 5 MiB           dev0 8 MiB: its peak
 *   device 1: C 6 MiB                    14 MiB in all: the peak of all devices
 *   device 0: free B
 *   device 1: D 4 MiB                    dev1 10 MiB: its peak (all: 13 MiB)
 * then everything is freed.
 */
#include "common.h"

#define MiB (1024ul * 1024ul)

NOINLINE static void *site_a(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 3 * MiB));
	return p;
}

NOINLINE static void *site_b(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 5 * MiB));
	return p;
}

NOINLINE static void *site_c(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 6 * MiB));
	return p;
}

NOINLINE static void *site_d(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 4 * MiB));
	return p;
}

int main(void)
{
	CHECK(cudaSetDevice(0));
	void *a = site_a(), *b = site_b();
	CHECK(cudaSetDevice(1));
	void *c = site_c();
	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(b));
	CHECK(cudaSetDevice(1));
	void *d = site_d();
	CHECK(cudaFree(c));
	CHECK(cudaFree(d));
	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(a));
	return 0;
}
