/*
 * One process on two devices (issue 20, needs two GPUs): on device 0 a 64 MiB
 * and a 16 MiB buffer, on device 1 a 32 MiB buffer; peer access 0 -> 1 enabled
 * and a peer copy made; the 16 MiB buffer on device 0 and a 4 MiB buffer on
 * device 1 are left allocated (planted leaks), the rest freed after the peak.
 *
 * Ground truth, one line per device (parsed by tests/gpu/two_gpu.sh):
 *   DEV d=0 peak=83886080 leaked=16777216 leaks=1
 *   DEV d=1 peak=37748736 leaked=4194304 leaks=1
 * and "DEVINFO d=D used_at_start=N used_at_end=N" from cudaMemGetInfo (the memory no
 * allocation call shows: context and driver). Exit 4 when fewer than two devices.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                             \
	do {                                                                                 \
		cudaError_t e_ = (call);                                                     \
		if (e_ != cudaSuccess) {                                                     \
			fprintf(stderr, "two_dev: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(3);                                                             \
		}                                                                            \
	} while (0)

static size_t used(int d)
{
	size_t free_b = 0, total = 0;
	CK(cudaSetDevice(d));
	CK(cudaMemGetInfo(&free_b, &total));
	return total - free_b;
}

int main(void)
{
	int n = 0;
	CK(cudaGetDeviceCount(&n));
	if (n < 2) {
		fprintf(stderr, "two_dev: %d device(s): needs two\n", n);
		return 4;
	}
	size_t start0 = used(0), start1 = used(1);
	void *a0, *b0, *a1, *c1;
	CK(cudaSetDevice(0));
	CK(cudaMalloc(&a0, 64u << 20));
	CK(cudaMalloc(&b0, 16u << 20));
	CK(cudaSetDevice(1));
	CK(cudaMalloc(&a1, 32u << 20));
	CK(cudaMalloc(&c1, 4u << 20));
	int can = 0;
	CK(cudaDeviceCanAccessPeer(&can, 0, 1));
	CK(cudaSetDevice(0));
	if (can)
		CK(cudaDeviceEnablePeerAccess(1, 0));
	CK(cudaMemset(a0, 1, 64u << 20));
	CK(cudaMemcpyPeer(a1, 1, a0, 0, 32u << 20));
	CK(cudaDeviceSynchronize());
	CK(cudaFree(a0));
	CK(cudaSetDevice(1));
	CK(cudaFree(a1));
	printf("DEV d=0 peak=%u leaked=%u leaks=1\n", (64u + 16u) << 20, 16u << 20);
	printf("DEV d=1 peak=%u leaked=%u leaks=1\n", (32u + 4u) << 20, 4u << 20);
	printf("DEVINFO d=0 used_at_start=%zu used_at_end=%zu peer=%d\n", start0, used(0), can);
	printf("DEVINFO d=1 used_at_start=%zu used_at_end=%zu\n", start1, used(1));
	return 0;
}
