/*
 * Driver-API virtual memory management (link -lcuda): one allocation left
 * mapped (cuMemCreate of 2 granules, cuMemAddressReserve of 4 granules,
 * cuMemMap + cuMemSetAccess of the 2 granules; nothing released), and while
 * it lives, a second one of 1 granule made and torn down completely
 * (cuMemUnmap, cuMemRelease, cuMemAddressFree).
 */
#define GT_WITH_VMM
#include "gt.h"

int main(int argc, char **argv)
{
	gt_init(argc, argv, "leak_vmm");
	CK(cudaSetDevice(0));
	CK(cudaFree(0)); /* the primary context is current from here on */
	CKD(cuInit(0));
	CUdevice dev;
	CKD(cuDeviceGet(&dev, 0));
	size_t gran = gt_vmm_granularity(dev);
	if (!gran) {
		fprintf(stderr, "leak_vmm: no virtual memory management on this device\n");
		return 4;
	}
	fprintf(stderr, "leak_vmm: granularity %zu\n", gran);
	struct gt_vmm leaked = gt_vmm_make(dev, 2 * gran, 4 * gran);
	struct gt_vmm freed = gt_vmm_make(dev, gran, gran);
	gt_vmm_destroy(&freed);
	(void)leaked;
	gt_finish();
	return 0;
}
