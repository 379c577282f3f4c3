/*
 * One leak of every class (tests/e2e/t_leak_classes.sh and the suppression,
 * diff and CI-format tests): memory kept by a PyTorch-like caching allocator
 * (libtorch_cuda.so), a cuBLAS workspace (libcublas.so.13) and NCCL buffers
 * (libnccl.so.2), all built for the tests in tests/e2e/libs/; a plain user
 * leak; an allocation live at cudaDeviceReset on device 1.
 *   leak_classes [extra]   "extra": one more user leak (a second site) and a
 *                          bigger user leak, for the diff and baseline tests
 */
#include <string.h>

#include "common.h"

void *fake_torch_empty(size_t n);
void fake_torch_release(void *p);
void *fake_cublasCreate(size_t workspace);
int fake_ncclCommInit(size_t buffers);

#define MiB (1024ul * 1024ul)

NOINLINE static void *user_leak(size_t n)
{
	void *p;
	CHECK(cudaMalloc(&p, n));
	return p;
}

NOINLINE static void *extra_leak(size_t n)
{
	void *p;
	CHECK(cudaMalloc(&p, n));
	return p;
}

NOINLINE static void reset_device_1(void)
{
	void *p;
	CHECK(cudaSetDevice(1));
	CHECK(cudaMalloc(&p, 1 * MiB)); /* live at the reset */
	CHECK(cudaDeviceReset());
	CHECK(cudaSetDevice(0));
}

int main(int argc, char **argv)
{
	int extra = argc > 1 && !strcmp(argv[1], "extra");
	CHECK(cudaFree(0));
	/* the caching allocator: one 2 MiB block, used twice, kept at exit */
	void *t = fake_torch_empty(2 * MiB);
	if (!t)
		return 3;
	fake_torch_release(t);
	if (fake_torch_empty(2 * MiB) != t)
		return 3;
	fake_torch_release(t);
	if (!fake_cublasCreate(4 * MiB) || fake_ncclCommInit(6 * MiB))
		return 3;
	user_leak(extra ? 5 * MiB : 3 * MiB);
	if (extra)
		extra_leak(512 * 1024);
	reset_device_1();
	return 0;
}
