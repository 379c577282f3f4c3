/*
 * cudaMalloc: two leaks of distinct sizes from two call sites, three blocks
 * freed after the peak, and one more block allocated and freed after it. The two
 * leaking call sites are functions of their own (not inlined), so a symbolized leak
 * report names them.
 */
#include "gt.h"

__attribute__((noinline)) static void *leak_one_mib(void)
{
	void *p;
	CK(cudaMalloc(&p, 1u << 20));
	gt_alloc(GT_DEVICE, p, 1u << 20, "cudaMalloc");
	gt_touch(p, 1u << 20, 0);
	return p;
}

__attribute__((noinline)) static void *leak_three_mib_and_a_bit(void)
{
	const size_t n = (3u << 20) + 256;
	void *p;
	CK(cudaMalloc(&p, n));
	gt_alloc(GT_DEVICE, p, n, "cudaMalloc");
	gt_touch(p, n, 0);
	return p;
}

int main(int argc, char **argv)
{
	gt_init(argc, argv, "leak_malloc");
	CK(cudaSetDevice(0));
	leak_one_mib();
	leak_three_mib_and_a_bit();

	const size_t sizes[3] = {8u << 20, 16u << 20, 512u << 10};
	void *tmp[3];
	for (int i = 0; i < 3; i++) {
		CK(cudaMalloc(&tmp[i], sizes[i]));
		gt_alloc(GT_DEVICE, tmp[i], sizes[i], "cudaMalloc");
		gt_touch(tmp[i], sizes[i], 0);
	}
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < 3; i++) {
		CK(cudaFree(tmp[i]));
		gt_free(GT_DEVICE, tmp[i]);
	}

	void *late;
	CK(cudaMalloc(&late, 2u << 20));
	gt_alloc(GT_DEVICE, late, 2u << 20, "cudaMalloc");
	gt_touch(late, 2u << 20, 0);
	CK(cudaDeviceSynchronize());
	CK(cudaFree(late));
	gt_free(GT_DEVICE, late);

	gt_finish();
	return 0;
}
