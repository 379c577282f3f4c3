/*
 * Every runtime allocation path once, with leaks planted at known sites.
 * Prints "expect KEY VALUE" lines that the test compares with the report.
 */
#include <string.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

NOINLINE static void *leak_device(size_t n)
{
	void *p;
	CHECK(cudaMalloc(&p, n));
	return p;
}

NOINLINE static void *leak_pinned(size_t n)
{
	void *p;
	CHECK(cudaMallocHost(&p, n));
	return p;
}

int main(void)
{
	void *p;
	for (int i = 0; i < 10; i++) {
		CHECK(cudaMalloc(&p, 4096));
		CHECK(cudaFree(p));
	}
	for (int i = 0; i < 2; i++)
		leak_device(1 * MiB); /* site A: 2 x 1 MiB */
	leak_device(3 * MiB);	      /* site B: 3 MiB */
	leak_pinned(64 * 1024);
	CHECK(cudaHostAlloc(&p, 128 * 1024, cudaHostAllocPortable));
	CHECK(cudaMallocManaged(&p, 256 * 1024, cudaMemAttachGlobal));
	size_t pitch = 0;
	CHECK(cudaMallocPitch(&p, &pitch, 1000, 10));

	/* Failures: never allocations. */
	int oom = cudaMalloc(&p, (size_t)64 << 30) == cudaErrorMemoryAllocation;
	int bad_free = cudaFree((void *)0x10) != cudaSuccess;

	cudaStream_t s1, s2;
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	void *a;
	CHECK(cudaMallocAsync(&a, 1 * MiB, s1));
	CHECK(cudaFreeAsync(a, s2));
	CHECK(cudaStreamSynchronize(s2));

	cudaMemPool_t pool;
	struct cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaMemPoolCreate(&pool, &props));
	void *b;
	CHECK(cudaMallocFromPoolAsync(&b, 512 * 1024, pool, s1));
	CHECK(cudaFreeAsync(b, s1));
	CHECK(cudaStreamSynchronize(s1));
	CHECK(cudaMemPoolTrimTo(pool, 0));
	CHECK(cudaMemPoolDestroy(pool));

	static char host[1 << 20];
	CHECK(cudaHostRegister(host, sizeof host, cudaHostRegisterDefault));
	CHECK(cudaHostUnregister(host));

	struct cudaPitchedPtr pp;
	struct cudaExtent extent = {256, 4, 4};
	CHECK(cudaMalloc3D(&pp, extent));
	CHECK(cudaFree(pp.ptr));

	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	CHECK(cudaDeviceSynchronize());

	CHECK(cudaSetDevice(1));
	leak_device(5 * MiB); /* site C, on device 1 */

	unsigned long device_leak = 2 * MiB + 3 * MiB + pitch * 10 + 5 * MiB;
	printf("expect oom_failed %d\n", oom);
	printf("expect bad_free_failed %d\n", bad_free);
	printf("expect allocations %d\n", 10 + 3 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1);
	printf("expect frees %d\n", 10 + 1 + 1 + 1 + 1);
	printf("expect failed_calls 2\n");
	printf("expect leak_count 8\n");
	printf("expect leak_bytes %lu\n", device_leak + 64 * 1024 + 128 * 1024 + 256 * 1024);
	printf("expect device_leak_bytes %lu\n", device_leak);
	printf("expect peak_bytes %lu\n", device_leak);
	return 0;
}
