/*
 * cudaMallocAsync from the device's default pool: four blocks allocated on
 * stream s1, one leaked, three freed with cudaFreeAsync on stream s2 (ordered
 * after s1 by an event); then a block allocated and freed on the legacy
 * default stream.
 */
#include "gt.h"

int main(int argc, char **argv)
{
	gt_init(argc, argv, "leak_async");
	CK(cudaSetDevice(0));
	int pools = 0;
	CK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
	if (!pools) {
		fprintf(stderr, "leak_async: device has no memory pools\n");
		return 4;
	}
	cudaStream_t s1, s2;
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

	const size_t leak_size = (4u << 20) + 4096;
	void *leaked;
	CK(cudaMallocAsync(&leaked, leak_size, s1));
	gt_alloc(GT_DEVICE, leaked, leak_size, "cudaMallocAsync");
	gt_touch(leaked, leak_size, s1);

	const size_t sizes[3] = {2u << 20, 6u << 20, (1u << 20) + 100};
	void *tmp[3];
	for (int i = 0; i < 3; i++) {
		CK(cudaMallocAsync(&tmp[i], sizes[i], s1));
		gt_alloc(GT_DEVICE, tmp[i], sizes[i], "cudaMallocAsync");
		gt_touch(tmp[i], sizes[i], s1);
	}
	cudaEvent_t done;
	CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
	CK(cudaEventRecord(done, s1));
	CK(cudaStreamWaitEvent(s2, done, 0));
	for (int i = 0; i < 3; i++) {
		CK(cudaFreeAsync(tmp[i], s2));
		gt_free(GT_DEVICE, tmp[i]);
	}
	CK(cudaStreamSynchronize(s2));
	CK(cudaStreamSynchronize(s1));

	void *legacy;
	CK(cudaMallocAsync(&legacy, 512u << 10, 0));
	gt_alloc(GT_DEVICE, legacy, 512u << 10, "cudaMallocAsync");
	gt_touch(legacy, 512u << 10, 0);
	CK(cudaFreeAsync(legacy, 0));
	gt_free(GT_DEVICE, legacy);
	CK(cudaStreamSynchronize(0));

	CK(cudaEventDestroy(done));
	CK(cudaStreamDestroy(s1));
	CK(cudaStreamDestroy(s2));
	gt_finish();
	return 0;
}
