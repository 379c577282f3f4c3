/*
 * cudaMallocManaged, kept small on purpose (never ask for more managed memory
 * than the card has): one 64 KiB leak, two blocks freed. Each block is
 * written by a kernel and read back on the host.
 */
#include "gt.h"

int main(int argc, char **argv)
{
	gt_init(argc, argv, "leak_managed");
	CK(cudaSetDevice(0));
	int managed = 0;
	CK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
	if (!managed) {
		fprintf(stderr, "leak_managed: device has no managed memory\n");
		return 4;
	}
	const size_t sizes[3] = {64u << 10, 256u << 10, (1u << 20) + 512};
	unsigned char *m[3];
	for (int i = 0; i < 3; i++) {
		CK(cudaMallocManaged((void **)&m[i], sizes[i], cudaMemAttachGlobal));
		gt_alloc(GT_MANAGED, m[i], sizes[i], "cudaMallocManaged");
		gt_touch(m[i], sizes[i], 0);
	}
	CK(cudaDeviceSynchronize());
	unsigned sum = 0;
	for (int i = 0; i < 3; i++)
		sum += m[i][sizes[i] - 1];
	fprintf(stderr, "leak_managed: checksum %u\n", sum);
	for (int i = 1; i < 3; i++) {
		CK(cudaFree(m[i]));
		gt_free(GT_MANAGED, m[i]);
	}
	gt_finish();
	return 0;
}
