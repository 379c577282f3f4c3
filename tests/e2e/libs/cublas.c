/*
 * A stand-in for libcublas.so.13 (tests/e2e/t_leak_classes.sh): creating a
 * handle allocates a workspace that stays allocated until exit.
 */
#include <stddef.h>

#include <cuda_runtime_api.h>

void *fake_cublasCreate(size_t workspace);

__attribute__((noinline)) void *fake_cublasCreate(size_t workspace)
{
	void *p = NULL;
	return cudaMalloc(&p, workspace) == cudaSuccess ? p : NULL;
}
