/*
 * Calls that fail and calls that succeed, printing each return code and
 * errno: the output must be the same with and without the shim.
 */
#include <errno.h>

#include "common.h"

#define SHOW(call)                                                                   \
	do {                                                                         \
		errno = 4242;                                                        \
		int rc_ = (int)(call);                                               \
		printf("%-40s rc=%d errno=%d\n", #call, rc_, errno);                 \
	} while (0)

int main(void)
{
	void *p = NULL;
	SHOW(cudaMalloc(&p, 1024));
	SHOW(cudaFree(p));
	SHOW(cudaFree((void *)0x1234));
	SHOW(cudaMalloc(&p, (size_t)1 << 40));
	SHOW(cudaFree(NULL));
	SHOW(cudaMallocHost(&p, 4096));
	SHOW(cudaFreeHost(p));
	SHOW(cudaFreeHost((void *)0x1234));
	SHOW(cudaStreamDestroy((cudaStream_t)0x1234));
	SHOW(cudaSetDevice(99));
	SHOW(cudaGetLastError());
	return 0;
}
