/*
 * Capture path: the program calls the runtime's exported symbols directly.
 * Each call must be one runtime event; the driver calls the (fake) runtime
 * makes inside it must not be recorded. Prints every return code, so the
 * output is the same with and without the shim (tests/e2e/t_paths_export.sh).
 *
 * Traced calls: cudaMalloc 9 (1 fails), cudaFree 7, cudaMallocHost 1,
 * cudaFreeHost 1, cudaMallocManaged 1, cudaMallocPitch 1, cudaHostRegister 1,
 * cudaHostUnregister 1, cudaStreamCreate 1, cudaMallocAsync 1,
 * cudaFreeAsync 1, cudaStreamSynchronize 1, cudaStreamDestroy 1.
 * Leaked: 3 x 64 KiB of cudaMalloc, from one site.
 */
#include "common.h"

#define KiB 1024ul

#define SHOW(call) printf("%-44s rc=%d\n", #call, (int)(call))

NOINLINE static void *alloc64k(void)
{
	void *p = NULL;
	SHOW(cudaMalloc(&p, 64 * KiB));
	return p;
}

int main(void)
{
	void *p[8];
	for (int i = 0; i < 8; i++)
		p[i] = alloc64k();
	for (int i = 0; i < 5; i++)
		SHOW(cudaFree(p[i]));
	void *q = NULL;
	SHOW(cudaMalloc(&q, (size_t)64 << 30)); /* fails: out of memory */

	SHOW(cudaMallocHost(&q, 4 * KiB));
	SHOW(cudaFreeHost(q));
	SHOW(cudaMallocManaged(&q, 8 * KiB, cudaMemAttachGlobal));
	SHOW(cudaFree(q));
	size_t pitch = 0;
	SHOW(cudaMallocPitch(&q, &pitch, 1000, 4));
	SHOW(cudaFree(q));
	static char host[64 * 1024];
	SHOW(cudaHostRegister(host, sizeof host, cudaHostRegisterDefault));
	SHOW(cudaHostUnregister(host));

	cudaStream_t s;
	SHOW(cudaStreamCreate(&s));
	SHOW(cudaMallocAsync(&q, 1024 * KiB, s));
	SHOW(cudaFreeAsync(q, s));
	SHOW(cudaStreamSynchronize(s));
	SHOW(cudaStreamDestroy(s));
	return 0;
}
