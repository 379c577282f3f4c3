/*
 * A null CUDA runtime (libcudart.so.13) for the benchmark's scaling rows
 * (scripts/bench.sh): cudaMalloc hands out addresses from a per-thread range
 * and cudaFree accepts them, with no lock, no memory and no driver. The fake
 * runtime serialises every allocation on one mutex, so with more threads than
 * cores its untraced runs spend their CPU waiting for it and a traced -
 * untraced difference measures the mutex; against this one, the difference
 * is the tracer's own cost per event at every thread count.
 * Only what tests/e2e/progs/bench_alloc.c calls is here.
 *
 * The per-thread range is initial-exec TLS: no __tls_get_addr, whose slow
 * path after a dlopen or dlclose may call free(). So a signal handler may
 * call cudaMalloc here whatever it interrupted (tests/e2e/t_hostile_sig_*.sh);
 * one that interrupts cudaMalloc itself may be handed the same address.
 */
#include <stdatomic.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

static atomic_uintptr_t next_range = 0x7f0000000000u;
static __thread uintptr_t cur __attribute__((tls_model("initial-exec")));
static __thread uintptr_t end __attribute__((tls_model("initial-exec")));

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
	if (!devPtr)
		return cudaErrorInvalidValue;
	size = size ? (size + 255) & ~(size_t)255 : 256;
	if (end - cur < size) {
		/* a fresh 1 TiB range per thread (and per exhaustion): no two threads share one */
		cur = atomic_fetch_add(&next_range, (uintptr_t)1 << 40);
		end = cur + ((uintptr_t)1 << 40);
	}
	*devPtr = (void *)cur;
	cur += size;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
	(void)devPtr;
	return cudaSuccess;
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
	return error == cudaSuccess ? "no error" : "error";
}
