/*
 * Fragmentation with known holes, a pool and VMM on device 0
 * (tests/e2e/t_frag.sh), in this order:
 *
 *   A0..A7 = eight cudaMalloc of 1 MiB (the fake carves them first-fit: one run
 *   of 8 MiB); free A1, A3, A4: holes of 1 MiB and 2 MiB in a span of 8 MiB
 *   pool = cudaMemPoolCreate; P1 = 2 MiB, P2 = 1 MiB from it on stream S;
 *   cudaFreeAsync(P1, S); sync S; cudaMemPoolTrimTo(pool, 0)
 *   VMM: reserve 8 MiB; create H1, H2 of 2 MiB each (H2 makes the peak:
 *   5 + 1 + 4 = 10 MiB of device bytes); map H1 at the start of the range
 *
 * Nothing is freed after that. Prints "ptr A<i> <address>" for the blocks and
 * the fake's own pool counters ("pool used N reserved N").
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

static void *drv(const char *name)
{
	static void *lib;
	if (!lib)
		lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *fn = lib ? dlsym(lib, name) : NULL;
	if (!fn) {
		fprintf(stderr, "no %s\n", name);
		exit(3);
	}
	return fn;
}

#define DRV_CHECK(call)                                                                    \
	do {                                                                               \
		CUresult r_ = (call);                                                      \
		if (r_ != CUDA_SUCCESS) {                                                  \
			fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, \
				(int)r_);                                                  \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

int main(void)
{
	void *a[8];
	CHECK(cudaSetDevice(0));
	for (int i = 0; i < 8; i++) {
		CHECK(cudaMalloc(&a[i], 1 * MiB));
		printf("ptr A%d %p\n", i, a[i]);
	}
	CHECK(cudaFree(a[1]));
	CHECK(cudaFree(a[3]));
	CHECK(cudaFree(a[4]));

	cudaMemPool_t pool;
	struct cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaMemPoolCreate(&pool, &props));
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	void *p1, *p2;
	CHECK(cudaMallocFromPoolAsync(&p1, 2 * MiB, pool, s));
	CHECK(cudaMallocFromPoolAsync(&p2, 1 * MiB, pool, s));
	CHECK(cudaFreeAsync(p1, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemPoolTrimTo(pool, 0));
	size_t used = 0, reserved = 0;
	CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
	CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
	printf("pool used %zu reserved %zu\n", used, reserved);

	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long) =
		drv("cuMemAddressReserve");
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			   unsigned long long) = drv("cuMemCreate");
	CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			unsigned long long) = drv("cuMemMap");
	CUdeviceptr va;
	DRV_CHECK(reserve(&va, 8 * MiB, 0, 0, 0));
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CUmemGenericAllocationHandle h1, h2;
	DRV_CHECK(create(&h1, 2 * MiB, &prop, 0));
	DRV_CHECK(create(&h2, 2 * MiB, &prop, 0));
	DRV_CHECK(map(va, 2 * MiB, 0, h1, 0));
	return 0;
}
