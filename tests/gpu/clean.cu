/*
 * Negative control: every kind of allocation the other programs leak, each
 * allocated, used and freed; plus one cudaMalloc that is meant to fail (it
 * asks for 1 PiB) and must count as a failed call, never as an allocation.
 * Expected: zero leaks everywhere.
 */
#define GT_WITH_VMM
#include "gt.h"

int main(int argc, char **argv)
{
	gt_init(argc, argv, "clean");
	CK(cudaSetDevice(0));
	CK(cudaFree(0));

	void *d;
	CK(cudaMalloc(&d, 4u << 20));
	gt_alloc(GT_DEVICE, d, 4u << 20, "cudaMalloc");
	gt_touch(d, 4u << 20, 0);

	void *huge = NULL;
	cudaError_t e = cudaMalloc(&huge, 1ull << 50);
	if (e == cudaSuccess) {
		fprintf(stderr, "clean: a 1 PiB cudaMalloc succeeded?\n");
		return 3;
	}
	gt_failed_call();
	(void)cudaGetLastError(); /* cudaErrorMemoryAllocation is not sticky: clear it */

	size_t pitch;
	void *p;
	CK(cudaMallocPitch(&p, &pitch, 1000, 50));
	gt_alloc(GT_DEVICE, p, (unsigned long long)pitch * 50, "cudaMallocPitch");
	CK(cudaMemset2D(p, pitch, 0, 1000, 50));

	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	void *a;
	CK(cudaMallocAsync(&a, 1u << 20, s));
	gt_alloc(GT_DEVICE, a, 1u << 20, "cudaMallocAsync");
	gt_touch(a, 1u << 20, s);
	CK(cudaFreeAsync(a, s));
	gt_free(GT_DEVICE, a);
	CK(cudaStreamSynchronize(s));
	CK(cudaStreamDestroy(s));

	void *h, *ha;
	CK(cudaMallocHost(&h, 1u << 20));
	gt_alloc(GT_HOST_PINNED, h, 1u << 20, "cudaMallocHost");
	CK(cudaHostAlloc(&ha, 1u << 20, cudaHostAllocDefault));
	gt_alloc(GT_HOST_PINNED, ha, 1u << 20, "cudaHostAlloc");
	memset(h, 1, 1u << 20);
	memset(ha, 2, 1u << 20);

	void *r = NULL;
	if (posix_memalign(&r, 4096, 256u << 10))
		return 3;
	CK(cudaHostRegister(r, 256u << 10, cudaHostRegisterDefault));
	gt_alloc(GT_HOST_REGISTERED, r, 256u << 10, "cudaHostRegister");

	unsigned char *m;
	CK(cudaMallocManaged((void **)&m, 64u << 10, cudaMemAttachGlobal));
	gt_alloc(GT_MANAGED, m, 64u << 10, "cudaMallocManaged");
	gt_touch(m, 64u << 10, 0);
	CK(cudaDeviceSynchronize());
	fprintf(stderr, "clean: managed byte %u\n", m[100]);

	CKD(cuInit(0));
	CUdevice dev;
	CKD(cuDeviceGet(&dev, 0));
	size_t gran = gt_vmm_granularity(dev);
	if (gran) {
		struct gt_vmm v = gt_vmm_make(dev, gran, 2 * gran);
		gt_vmm_destroy(&v);
	}

	CK(cudaFree(m));
	gt_free(GT_MANAGED, m);
	CK(cudaHostUnregister(r));
	gt_free(GT_HOST_REGISTERED, r);
	free(r);
	CK(cudaFreeHost(ha));
	gt_free(GT_HOST_PINNED, ha);
	CK(cudaFreeHost(h));
	gt_free(GT_HOST_PINNED, h);
	CK(cudaFree(p));
	gt_free(GT_DEVICE, p);
	CK(cudaFree(d));
	gt_free(GT_DEVICE, d);

	gt_finish();
	return 0;
}
