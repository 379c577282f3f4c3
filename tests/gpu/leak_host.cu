/*
 * Host memory that CUDA page-locks: cudaMallocHost (one leak, one freed),
 * cudaHostAlloc (one leak, one freed) and cudaHostRegister of user memory
 * (one left registered, one unregistered). No device memory at all: the
 * device peak is 0.
 */
#include "gt.h"

static void *page_aligned(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n)) {
		fprintf(stderr, "leak_host: posix_memalign failed\n");
		exit(3);
	}
	memset(p, 0x44, n);
	return p;
}

int main(int argc, char **argv)
{
	gt_init(argc, argv, "leak_host");
	CK(cudaSetDevice(0));

	void *h_leak, *h_freed;
	CK(cudaMallocHost(&h_leak, 2u << 20));
	gt_alloc(GT_HOST_PINNED, h_leak, 2u << 20, "cudaMallocHost");
	memset(h_leak, 1, 2u << 20);
	CK(cudaMallocHost(&h_freed, 1u << 20));
	gt_alloc(GT_HOST_PINNED, h_freed, 1u << 20, "cudaMallocHost");
	memset(h_freed, 2, 1u << 20);

	const size_t ha_leak_size = (4u << 20) + 4096;
	void *ha_leak, *ha_freed;
	CK(cudaHostAlloc(&ha_leak, ha_leak_size, cudaHostAllocPortable));
	gt_alloc(GT_HOST_PINNED, ha_leak, ha_leak_size, "cudaHostAlloc");
	memset(ha_leak, 3, ha_leak_size);
	CK(cudaHostAlloc(&ha_freed, 3u << 20, cudaHostAllocMapped));
	gt_alloc(GT_HOST_PINNED, ha_freed, 3u << 20, "cudaHostAlloc");
	memset(ha_freed, 4, 3u << 20);

	void *r_leak = page_aligned(1u << 20), *r_freed = page_aligned(512u << 10);
	CK(cudaHostRegister(r_leak, 1u << 20, cudaHostRegisterDefault));
	gt_alloc(GT_HOST_REGISTERED, r_leak, 1u << 20, "cudaHostRegister");
	CK(cudaHostRegister(r_freed, 512u << 10, cudaHostRegisterDefault));
	gt_alloc(GT_HOST_REGISTERED, r_freed, 512u << 10, "cudaHostRegister");

	CK(cudaFreeHost(h_freed));
	gt_free(GT_HOST_PINNED, h_freed);
	CK(cudaFreeHost(ha_freed));
	gt_free(GT_HOST_PINNED, ha_freed);
	CK(cudaHostUnregister(r_freed));
	gt_free(GT_HOST_REGISTERED, r_freed);
	free(r_freed);

	gt_finish();
	return 0;
}
