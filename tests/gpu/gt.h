/*
 * Ground truth for the GPU validation programs (the .cu files beside this header).
 *
 * Every program records each CUDA allocation it makes with gt_alloc() and
 * each free with gt_free(), right next to the call, and ends with
 * gt_finish(), which prints one line on stdout:
 *
 *   GROUND_TRUTH {"program": ..., "kinds": {KIND: {...}}, ...}
 *
 * Kinds carry cumtrace's names (include/cumtrace/format.h). The device peak
 * counts device and vmm_physical bytes only, as cumtrace-report's peak does.
 * "--reset" on the command line makes gt_finish() call cudaDeviceReset()
 * first (compute-sanitizer documents that leak checking wants the context
 * destroyed; cumtrace treats the reset as a leak checkpoint). What leaked is
 * the same either way: whatever the program never freed.
 *
 * Build: nvcc [-cudart shared] -DGT_CUDART='"static"|"shared"' ... (scripts/gpu-validate.sh
 * does it). -DGT_HOST_ONLY leaves the kernel out, for a dry run without a GPU.
 */
#ifndef GT_H
#define GT_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GT_CUDART
#define GT_CUDART "unknown"
#endif

#define CK(call)                                                                        \
	do {                                                                            \
		cudaError_t ck_e_ = (call);                                             \
		if (ck_e_ != cudaSuccess) {                                             \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(ck_e_));                             \
			exit(3);                                                        \
		}                                                                       \
	} while (0)

enum gt_kind {
	GT_DEVICE,
	GT_HOST_PINNED,
	GT_HOST_REGISTERED,
	GT_MANAGED,
	GT_VMM_PHYSICAL,
	GT_VMM_RESERVED,
	GT_VMM_MAPPED,
	GT_NKINDS
};

static const char *const gt_kind_name[GT_NKINDS] = {
	"device", "host_pinned", "host_registered", "managed",
	"vmm_physical", "vmm_reserved", "vmm_mapped"};

struct gt_block {
	int kind;
	unsigned long long key; /* address, or VMM allocation handle */
	unsigned long long bytes;
	const char *api;
	int live;
};

struct gt_kind_stats {
	long allocs, frees;
	unsigned long long live_bytes, peak_bytes;
};

#define GT_MAX_BLOCKS 256
static struct gt_block gt_blocks[GT_MAX_BLOCKS];
static int gt_nblocks;
static struct gt_kind_stats gt_stats[GT_NKINDS];
static unsigned long long gt_dev_live, gt_dev_peak;
static long gt_failed;
static const char *gt_program = "?";
static int gt_reset;

static inline void gt_init(int argc, char **argv, const char *program)
{
	gt_program = program;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--reset"))
			gt_reset = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
}

static inline int gt_is_device_bytes(int kind)
{
	return kind == GT_DEVICE || kind == GT_VMM_PHYSICAL;
}

/* Record a successful allocation of bytes at key (address or handle). */
static inline void gt_alloc(int kind, const void *key, unsigned long long bytes, const char *api)
{
	if (gt_nblocks == GT_MAX_BLOCKS) {
		fprintf(stderr, "gt: too many blocks\n");
		exit(3);
	}
	struct gt_block *b = &gt_blocks[gt_nblocks++];
	b->kind = kind;
	b->key = (unsigned long long)(uintptr_t)key;
	b->bytes = bytes;
	b->api = api;
	b->live = 1;
	struct gt_kind_stats *s = &gt_stats[kind];
	s->allocs++;
	s->live_bytes += bytes;
	if (s->live_bytes > s->peak_bytes)
		s->peak_bytes = s->live_bytes;
	if (gt_is_device_bytes(kind)) {
		gt_dev_live += bytes;
		if (gt_dev_live > gt_dev_peak)
			gt_dev_peak = gt_dev_live;
	}
}

/* Record the free of the live block of this kind at key. */
static inline void gt_free(int kind, const void *key)
{
	unsigned long long k = (unsigned long long)(uintptr_t)key;
	for (int i = gt_nblocks - 1; i >= 0; i--) {
		struct gt_block *b = &gt_blocks[i];
		if (!b->live || b->kind != kind || b->key != k)
			continue;
		b->live = 0;
		gt_stats[kind].frees++;
		gt_stats[kind].live_bytes -= b->bytes;
		if (gt_is_device_bytes(kind))
			gt_dev_live -= b->bytes;
		return;
	}
	fprintf(stderr, "gt: free of unknown %s block %#llx\n", gt_kind_name[kind], k);
	exit(3);
}

/* Record a call that was meant to fail (it allocates nothing). */
static inline void gt_failed_call(void)
{
	gt_failed++;
}

#ifdef GT_HOST_ONLY
/* A dry run of the kit without a GPU (plain C++ against tests/fake/): no kernels. */
static inline void gt_touch(void *p, size_t n, cudaStream_t s)
{
	(void)p;
	(void)n;
	(void)s;
}
#else
__global__ void gt_touch_kernel(unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (unsigned char)(v + i);
}

/* Write every byte of device-accessible memory on stream s (real use of it). */
static inline void gt_touch(void *p, size_t n, cudaStream_t s)
{
	gt_touch_kernel<<<128, 256, 0, s>>>((unsigned char *)p, n, 0x5a);
	CK(cudaGetLastError());
}
#endif

/* Print the GROUND_TRUTH line (after cudaDeviceReset when --reset was given). */
static inline void gt_finish(void)
{
	CK(cudaDeviceSynchronize());
	if (gt_reset)
		CK(cudaDeviceReset());
	long allocs = 0, frees = 0, leaked = 0;
	unsigned long long leaked_bytes = 0;
	printf("GROUND_TRUTH {\"program\": \"%s\", \"cudart\": \"%s\", \"pid\": %d, \"reset\": %s, "
	       "\"kinds\": {",
	       gt_program, GT_CUDART, (int)getpid(), gt_reset ? "true" : "false");
	int first = 1;
	for (int k = 0; k < GT_NKINDS; k++) {
		const struct gt_kind_stats *s = &gt_stats[k];
		if (!s->allocs)
			continue;
		long lc = 0;
		unsigned long long lb = 0;
		for (int i = 0; i < gt_nblocks; i++)
			if (gt_blocks[i].kind == k && gt_blocks[i].live) {
				lc++;
				lb += gt_blocks[i].bytes;
			}
		printf("%s\"%s\": {\"allocs\": %ld, \"frees\": %ld, \"leaked_count\": %ld, "
		       "\"leaked_bytes\": %llu, \"peak_bytes\": %llu, \"leaked_sizes\": [",
		       first ? "" : ", ", gt_kind_name[k], s->allocs, s->frees, lc, lb,
		       s->peak_bytes);
		int f2 = 1;
		for (int i = 0; i < gt_nblocks; i++)
			if (gt_blocks[i].kind == k && gt_blocks[i].live) {
				printf("%s%llu", f2 ? "" : ", ", gt_blocks[i].bytes);
				f2 = 0;
			}
		printf("], \"leaked_apis\": [");
		f2 = 1;
		for (int i = 0; i < gt_nblocks; i++)
			if (gt_blocks[i].kind == k && gt_blocks[i].live) {
				printf("%s\"%s\"", f2 ? "" : ", ", gt_blocks[i].api);
				f2 = 0;
			}
		printf("]}");
		first = 0;
		allocs += s->allocs;
		frees += s->frees;
		leaked += lc;
		leaked_bytes += lb;
	}
	printf("}, \"allocs\": %ld, \"frees\": %ld, \"failed_calls\": %ld, \"leaked_count\": %ld, "
	       "\"leaked_bytes\": %llu, \"peak_device_bytes\": %llu}\n",
	       allocs, frees, gt_failed, leaked, leaked_bytes, gt_dev_peak);
	fflush(stdout);
}

#ifdef GT_WITH_VMM
#include <cuda.h>

#define CKD(call)                                                                       \
	do {                                                                            \
		CUresult ckd_e_ = (call);                                               \
		if (ckd_e_ != CUDA_SUCCESS) {                                           \
			const char *ckd_s_ = "?";                                       \
			cuGetErrorString(ckd_e_, &ckd_s_);                              \
			fprintf(stderr, "%s:%d: %s failed: %d %s\n", __FILE__, __LINE__, \
				#call, (int)ckd_e_, ckd_s_);                            \
			exit(3);                                                        \
		}                                                                       \
	} while (0)

/* A VMM allocation made of its three parts. */
struct gt_vmm {
	CUmemGenericAllocationHandle handle;
	CUdeviceptr va;
	size_t reserved, mapped;
};

static inline CUmemAllocationProp gt_vmm_prop(int dev)
{
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	return prop;
}

/* The minimum granularity of VMM physical allocations on dev (0 if unsupported). */
static inline size_t gt_vmm_granularity(int dev)
{
	int supported = 0;
	CKD(cuDeviceGetAttribute(&supported,
				 CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
	if (!supported)
		return 0;
	CUmemAllocationProp prop = gt_vmm_prop(dev);
	size_t gran = 0;
	CKD(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	return gran;
}

/*
 * cuMemCreate phys bytes, cuMemAddressReserve reserve bytes (>= phys),
 * cuMemMap the physical memory at the start of the range, cuMemSetAccess,
 * then write it from a kernel.
 */
static inline struct gt_vmm gt_vmm_make(int dev, size_t phys, size_t reserve)
{
	struct gt_vmm v;
	CUmemAllocationProp prop = gt_vmm_prop(dev);
	CKD(cuMemCreate(&v.handle, phys, &prop, 0));
	gt_alloc(GT_VMM_PHYSICAL, (const void *)(uintptr_t)v.handle, phys, "cuMemCreate");
	CKD(cuMemAddressReserve(&v.va, reserve, 0, 0, 0));
	gt_alloc(GT_VMM_RESERVED, (const void *)(uintptr_t)v.va, reserve, "cuMemAddressReserve");
	CKD(cuMemMap(v.va, phys, 0, v.handle, 0));
	gt_alloc(GT_VMM_MAPPED, (const void *)(uintptr_t)v.va, phys, "cuMemMap");
	CUmemAccessDesc access;
	memset(&access, 0, sizeof access);
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CKD(cuMemSetAccess(v.va, phys, &access, 1));
	v.reserved = reserve;
	v.mapped = phys;
	gt_touch((void *)(uintptr_t)v.va, phys, 0);
	CK(cudaDeviceSynchronize());
	return v;
}

/* Undo gt_vmm_make: unmap, release the handle, free the range. */
static inline void gt_vmm_destroy(struct gt_vmm *v)
{
	CKD(cuMemUnmap(v->va, v->mapped));
	gt_free(GT_VMM_MAPPED, (const void *)(uintptr_t)v->va);
	CKD(cuMemRelease(v->handle));
	gt_free(GT_VMM_PHYSICAL, (const void *)(uintptr_t)v->handle);
	CKD(cuMemAddressFree(v->va, v->reserved));
	gt_free(GT_VMM_RESERVED, (const void *)(uintptr_t)v->va);
}
#endif /* GT_WITH_VMM */

#endif /* GT_H */
