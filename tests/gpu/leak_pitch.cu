/*
 * cudaMallocPitch: one leak; one pitched block and one cudaMalloc3D block
 * freed. Sizes are what the program holds: pitch * height (* depth).
 */
#include "gt.h"

int main(int argc, char **argv)
{
	gt_init(argc, argv, "leak_pitch");
	CK(cudaSetDevice(0));

	void *leaked;
	size_t pitch;
	CK(cudaMallocPitch(&leaked, &pitch, 1000, 300));
	gt_alloc(GT_DEVICE, leaked, (unsigned long long)pitch * 300, "cudaMallocPitch");
	CK(cudaMemset2D(leaked, pitch, 0x11, 1000, 300));

	void *freed;
	size_t pitch2;
	CK(cudaMallocPitch(&freed, &pitch2, 4000, 100));
	gt_alloc(GT_DEVICE, freed, (unsigned long long)pitch2 * 100, "cudaMallocPitch");
	CK(cudaMemset2D(freed, pitch2, 0x22, 4000, 100));

	struct cudaPitchedPtr cube;
	struct cudaExtent ext = make_cudaExtent(500, 64, 8);
	CK(cudaMalloc3D(&cube, ext));
	gt_alloc(GT_DEVICE, cube.ptr, (unsigned long long)cube.pitch * ext.height * ext.depth,
		 "cudaMalloc3D");
	CK(cudaMemset3D(cube, 0x33, ext));
	CK(cudaDeviceSynchronize());

	CK(cudaFree(freed));
	gt_free(GT_DEVICE, freed);
	CK(cudaFree(cube.ptr));
	gt_free(GT_DEVICE, cube.ptr);

	gt_finish();
	return 0;
}
