/*
 * Out-of-memory on a real GPU (scripts/gpu-oom.sh): 1 GiB cudaMalloc blocks
 * from one site until one fails, then a 1 GiB cuMemAlloc_v2 (driver) that
 * fails too. After each failure: the return code, whether errno is still the
 * EDOM set before the call, cudaGetLastError, and cudaMemGetInfo; a traced run
 * must print what an untraced one prints (except the free bytes, which other
 * processes may move). Prints "blocks N" and frees everything.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define GiB (1ull << 30)
#define MAXB 1024

__attribute__((noinline)) static cudaError_t grab(void **p)
{
	cudaError_t rc = cudaMalloc(p, GiB);
	__asm__ __volatile__("" ::: "memory"); /* not a tail call: grab keeps its frame */
	return rc;
}

static void after(const char *what, int rc)
{
	int e = errno;
	cudaError_t last = cudaGetLastError();
	size_t free_b = 0, total = 0;
	cudaMemGetInfo(&free_b, &total);
	printf("%s rc=%d errno=%s last=%d\n", what, rc, e == EDOM ? "EDOM" : "changed", (int)last);
	printf("meminfo %s free=%zu total=%zu\n", what, free_b, total);
}

int main(void)
{
	static void *b[MAXB];
	int n = 0;
	if (cudaSetDevice(0) != cudaSuccess)
		return 3;
	for (;;) {
		errno = EDOM;
		cudaError_t rc = n < MAXB ? grab(&b[n]) : cudaErrorMemoryAllocation;
		if (rc != cudaSuccess) {
			after("runtime", rc);
			break;
		}
		n++;
	}
	printf("blocks %d\n", n);
	CUdeviceptr d;
	errno = EDOM;
	CUresult r = cuMemAlloc(&d, GiB);
	after("driver", r);
	for (int i = 0; i < n; i++)
		cudaFree(b[i]);
	return 0;
}
