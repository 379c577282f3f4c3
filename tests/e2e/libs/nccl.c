/*
 * A stand-in for libnccl.so.2 (tests/e2e/t_leak_classes.sh): a communicator
 * allocates its buffers with the driver API and keeps them until exit.
 */
#include <stddef.h>

#include <cuda.h>

int fake_ncclCommInit(size_t buffers);

__attribute__((noinline)) int fake_ncclCommInit(size_t buffers)
{
	CUdeviceptr p = 0;
	if (cuInit(0) != CUDA_SUCCESS)
		return -1;
	return cuMemAlloc(&p, buffers) == CUDA_SUCCESS ? 0 : -1;
}
