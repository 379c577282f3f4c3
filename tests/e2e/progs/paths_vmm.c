/*
 * Capture path: the virtual memory management API, from a libcuda handle:
 * "paths_vmm dlsym" looks the exported names up with dlsym, "paths_vmm gpa"
 * gets them through cuGetProcAddress_v2 (tests/e2e/t_paths_vmm.sh).
 *
 *   D  = cuMemAlloc 1 MiB, live until the end (freed)
 *   A  = reserve 2 MiB; P1 = create 2 MiB; map P1 at A; access; write;
 *        unmap; release P1; free A                         (all clean)
 *   B  = reserve 8 MiB; P2 = create 4 MiB, P3 = create 2 MiB;
 *        map P2 at B, P3 at B + 4 MiB; access; write both;
 *        release P3 while mapped, then unmap it;
 *        cuMemAddressFree(B) while P2 is mapped fails;
 *        P2, its mapping and B are leaked.
 *   "paths_vmm MODE reset": then cuDevicePrimaryCtxReset, with P2, its
 *        mapping and B live: the checkpoint ends all three, and the mapping
 *        of an allocation live there is address space, not memory (one
 *        leak of 4 MiB, freed by context teardown).
 * Traced calls: cuMemAddressReserve 2, cuMemCreate 3, cuMemMap 3,
 * cuMemUnmap 2, cuMemRelease 2, cuMemAddressFree 2 (1 fails),
 * cuMemAlloc_v2 1, cuMemFree_v2 1.
 * Peak device bytes (device + physical): 1 + 4 + 2 = 7 MiB.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define MiB (1024ul * 1024ul)

typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*init_t)(unsigned);
typedef CUresult (*devget_t)(CUdevice *, int);
typedef CUresult (*retain_t)(CUcontext *, CUdevice);
typedef CUresult (*setcur_t)(CUcontext);
typedef CUresult (*preset_t)(CUdevice);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);
typedef CUresult (*gran_t)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
typedef CUresult (*reserve_t)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*afree_t)(CUdeviceptr, size_t);
typedef CUresult (*create_t)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
			     unsigned long long);
typedef CUresult (*release_t)(CUmemGenericAllocationHandle);
typedef CUresult (*map_t)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*unmap_t)(CUdeviceptr, size_t);
typedef CUresult (*access_t)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);

static void *handle;
static gpa2_t gpa;

/* export: the name dlsym sees; base: the name cuGetProcAddress takes. */
static void *get(const char *export, const char *base)
{
	void *fn = NULL;
	if (gpa) {
		CUdriverProcAddressQueryResult st;
		if (gpa(base, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
			fn = NULL;
	} else {
		fn = dlsym(handle, export);
	}
	if (!fn) {
		fprintf(stderr, "no %s\n", export);
		exit(3);
	}
	return fn;
}

#define SHOW(call) printf("%-52s rc=%d\n", #call, (int)(call))
#define CHECK(call)                                                                        \
	do {                                                                               \
		CUresult rc_ = (call);                                                     \
		printf("%-52s rc=%d\n", #call, (int)rc_);                                  \
		if (rc_ != CUDA_SUCCESS)                                                   \
			exit(3);                                                           \
	} while (0)

int main(int argc, char **argv)
{
	handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!handle)
		return 3;
	if (argc > 1 && strcmp(argv[1], "gpa") == 0) {
		gpa = (gpa2_t)dlsym(handle, "cuGetProcAddress_v2");
		if (!gpa)
			return 3;
	}
	init_t cuInit_ = (init_t)get("cuInit", "cuInit");
	devget_t cuDeviceGet_ = (devget_t)get("cuDeviceGet", "cuDeviceGet");
	retain_t cuDevicePrimaryCtxRetain_ = (retain_t)get("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
	setcur_t cuCtxSetCurrent_ = (setcur_t)get("cuCtxSetCurrent", "cuCtxSetCurrent");
	alloc_t cuMemAlloc_ = (alloc_t)get("cuMemAlloc_v2", "cuMemAlloc");
	free_t cuMemFree_ = (free_t)get("cuMemFree_v2", "cuMemFree");
	gran_t cuMemGetAllocationGranularity_ = (gran_t)get("cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity");
	reserve_t cuMemAddressReserve_ = (reserve_t)get("cuMemAddressReserve", "cuMemAddressReserve");
	afree_t cuMemAddressFree_ = (afree_t)get("cuMemAddressFree", "cuMemAddressFree");
	create_t cuMemCreate_ = (create_t)get("cuMemCreate", "cuMemCreate");
	release_t cuMemRelease_ = (release_t)get("cuMemRelease", "cuMemRelease");
	map_t cuMemMap_ = (map_t)get("cuMemMap", "cuMemMap");
	unmap_t cuMemUnmap_ = (unmap_t)get("cuMemUnmap", "cuMemUnmap");
	access_t cuMemSetAccess_ = (access_t)get("cuMemSetAccess", "cuMemSetAccess");

	CUdevice dev = -1;
	CUcontext ctx = NULL;
	CHECK(cuInit_(0));
	CHECK(cuDeviceGet_(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain_(&ctx, dev));
	CHECK(cuCtxSetCurrent_(ctx));

	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	size_t gran = 0;
	CHECK(cuMemGetAllocationGranularity_(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	printf("granularity %zu MiB\n", gran / MiB);
	CUmemAccessDesc acc;
	memset(&acc, 0, sizeof acc);
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

	CUdeviceptr d = 0;
	CHECK(cuMemAlloc_(&d, 1 * MiB));

	/* A: a full, clean cycle. */
	CUdeviceptr a = 0;
	CUmemGenericAllocationHandle p1 = 0;
	CHECK(cuMemAddressReserve_(&a, 2 * MiB, 0, 0, 0));
	CHECK(cuMemCreate_(&p1, 2 * MiB, &prop, 0));
	CHECK(cuMemMap_(a, 2 * MiB, 0, p1, 0));
	CHECK(cuMemSetAccess_(a, 2 * MiB, &acc, 1));
	memset((void *)(uintptr_t)a, 0xa5, 2 * MiB);
	CHECK(cuMemUnmap_(a, 2 * MiB));
	CHECK(cuMemRelease_(p1));
	CHECK(cuMemAddressFree_(a, 2 * MiB));

	/* B: one mapping (and what it needs) left behind. */
	CUdeviceptr b = 0;
	CUmemGenericAllocationHandle p2 = 0, p3 = 0;
	CHECK(cuMemAddressReserve_(&b, 8 * MiB, 0, 0, 0));
	CHECK(cuMemCreate_(&p2, 4 * MiB, &prop, 0));
	CHECK(cuMemCreate_(&p3, 2 * MiB, &prop, 0));
	CHECK(cuMemMap_(b, 4 * MiB, 0, p2, 0));
	CHECK(cuMemMap_(b + 4 * MiB, 2 * MiB, 0, p3, 0));
	CHECK(cuMemSetAccess_(b, 6 * MiB, &acc, 1));
	memset((void *)(uintptr_t)b, 0x5a, 6 * MiB);
	CHECK(cuMemRelease_(p3));
	unsigned char last = ((volatile unsigned char *)(uintptr_t)b)[6 * MiB - 1];
	printf("released-but-mapped memory still readable: %d\n", last == 0x5a);
	CHECK(cuMemUnmap_(b + 4 * MiB, 2 * MiB));
	SHOW(cuMemAddressFree_(b, 8 * MiB)); /* fails: P2 is mapped there */

	CHECK(cuMemFree_(d));
	if (argc > 2 && strcmp(argv[2], "reset") == 0) {
		preset_t reset_ = (preset_t)get("cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxReset");
		CHECK(reset_(dev));
	}
	return 0;
}
