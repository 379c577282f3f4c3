/*
 * Every traced CUDA function, called once or more through whatever way in a
 * resolver stands for (tests/e2e/t_paths_twin.sh): included by the program
 * tests/e2e/progs/paths_twin.c and by the library tests/e2e/libs/twin.c, so
 * that the calls come from an object with no CUDA in its dependency tree (the
 * program) or from one that links libcudart and libcuda (the library).
 *
 * Each call prints one line, "call EVENT rc=R errno=E" for a traced function
 * (EVENT: the event it must record), "aux NAME rc=R errno=E" for an untraced
 * one, then what it wrote to its out-parameters: never a raw pointer, only
 * what is the same in every run (null, set or untouched; sizes, pitches;
 * whether two handed-out pointers are equal). errno is set to TWIN_ERRNO
 * before each call. The output must be the same with and without the shim.
 */
#ifndef CT_TWIN_CALLS_H
#define CT_TWIN_CALLS_H
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define TWIN_ERRNO 4242
#define TWIN_KIB ((size_t)1024)
#define TWIN_MIB ((size_t)1024 * 1024)
#define TWIN_HUGE ((size_t)1 << 50) /* more than any fake device has: out of memory */
#define TWIN_UNTOUCHED ((void *)0x10)

/*
 * A way in: get returns the function for an exported name (NULL when the way
 * has none) and sets *event to the name of the variant it really is (for
 * cuGetProcAddress with the per-thread flag, NAME_ptsz where one exists).
 */
struct twin_way {
	const char *name;
	void *(*get)(const struct twin_way *way, const char *name, const char **event);
	void *ctx;
	int flags;
};

/* Every name cumtrace traces (preload/hooks/hooks.def), for the lookups that must
 * find nothing while no CUDA library is in the global scope. */
static const char *const twin_traced_names[] = {
	"cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc",
	"cudaHostRegister", "cudaHostUnregister", "cudaMallocManaged", "cudaMallocPitch",
	"cudaMalloc3D", "cudaMallocAsync", "cudaMallocAsync_ptsz", "cudaMallocFromPoolAsync",
	"cudaMallocFromPoolAsync_ptsz", "cudaFreeAsync", "cudaFreeAsync_ptsz", "cudaMemPoolCreate",
	"cudaMemPoolDestroy", "cudaMemPoolTrimTo", "cudaStreamCreate", "cudaStreamCreateWithFlags",
	"cudaStreamCreateWithPriority", "cudaStreamDestroy", "cudaStreamSynchronize",
	"cudaStreamSynchronize_ptsz", "cudaDeviceSynchronize", "cudaDeviceReset", "cudaSetDevice",
	"cuMemAlloc_v2", "cuMemAllocPitch_v2", "cuMemFree_v2", "cuMemAllocHost_v2",
	"cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister_v2", "cuMemHostUnregister",
	"cuMemAllocManaged", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
	"cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync", "cuMemFreeAsync_ptsz", "cuMemPoolCreate",
	"cuMemPoolDestroy", "cuMemPoolTrimTo", "cuMemCreate", "cuMemRelease",
	"cuMemAddressReserve", "cuMemAddressFree", "cuMemMap", "cuMemUnmap", "cuStreamCreate",
	"cuStreamCreateWithPriority", "cuStreamDestroy_v2", "cuStreamSynchronize",
	"cuStreamSynchronize_ptsz", "cuCtxDestroy_v2", "cuDevicePrimaryCtxReset_v2",
	"cuGetProcAddress_v2", "cuGetProcAddress", "cudaGetDriverEntryPoint",
	"cudaGetDriverEntryPoint_ptsz", "cudaGetDriverEntryPointByVersion",
	"cudaGetDriverEntryPointByVersion_ptsz",
};
#define TWIN_TRACED_COUNT (sizeof twin_traced_names / sizeof twin_traced_names[0])

static void *twin_fn(const struct twin_way *w, const char *name, const char **event)
{
	*event = name;
	void *fn = w->get(w, name, event);
	if (!fn)
		printf("  get %s: none\n", name);
	return fn;
}

static const char *twin_ptr(const void *p)
{
	return p == TWIN_UNTOUCHED ? "untouched" : p ? "set" : "null";
}

/* TWIN_CALL(way, "call" or "aux", fn_t, "name", args...): one call, its line; its rc (-1: no function). */
#define TWIN_CALL(w, what, fn_t, name, ...)                                                  \
	__extension__({                                                                      \
		const char *ev_;                                                             \
		fn_t f_ = (fn_t)twin_fn(w, name, &ev_);                                      \
		int rc_ = -1;                                                                \
		if (f_) {                                                                    \
			errno = TWIN_ERRNO;                                                  \
			rc_ = (int)f_(__VA_ARGS__);                                          \
			int e_ = errno;                                                      \
			printf("%s %s rc=%d errno=%d\n", what, ev_, rc_, e_);                \
		}                                                                            \
		rc_;                                                                         \
	})
#define TWIN_T(w, fn_t, name, ...) TWIN_CALL(w, "call", fn_t, name, __VA_ARGS__)
#define TWIN_AUX(w, fn_t, name, ...) TWIN_CALL(w, "aux", fn_t, name, __VA_ARGS__)

/* Pool properties, the runtime's or the driver's: pinned memory on device 0. */
#define TWIN_POOL_PROPS(props, pinned, device)                                               \
	do {                                                                                 \
		memset(&(props), 0, sizeof(props));                                          \
		(props).allocType = (pinned);                                                \
		(props).location.type = (device);                                            \
		(props).location.id = 0;                                                     \
	} while (0)

/* alloc(&p, size, ...) of host memory, what it wrote to p, then free(p). */
#define TWIN_HOST_PAIR(w, alloc_t, alloc, free_t, free, size, ...)                          \
	do {                                                                                 \
		void *p_ = TWIN_UNTOUCHED;                                                   \
		TWIN_T(w, alloc_t, alloc, &p_, size __VA_OPT__(, ) __VA_ARGS__);             \
		printf("  ptr=%s\n", twin_ptr(p_));                                          \
		TWIN_T(w, free_t, free, p_);                                                 \
	} while (0)

/* ---- lookups by base name: cuGetProcAddress(_v2), cudaGetDriverEntryPoint* ------ */

#define TWIN_VERSION 12000
#define TWIN_PT 0x2     /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cudaEnablePerThreadDefaultStream */
#define TWIN_LEGACY 0x1 /* CU_GET_PROC_ADDRESS_LEGACY_STREAM, cudaEnableLegacyStream */

typedef CUresult (*tw_gpa2)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*tw_gpa1)(const char *, void **, int, cuuint64_t);
typedef cudaError_t (*tw_entry)(const char *, void **, unsigned long long,
				enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*tw_entry_ver)(const char *, void **, unsigned int, unsigned long long,
				    enum cudaDriverEntryPointQueryResult *);

/* How a lookup by base name is made: which function, which form, per-thread by default. */
enum twin_lookup { TWIN_GPA2, TWIN_GPA1, TWIN_ENTRY, TWIN_ENTRY_VER };
struct twin_lookup_fn {
	enum twin_lookup form;
	void *fn;
	int ptsz_default; /* the _ptsz export of cudaGetDriverEntryPoint(ByVersion) */
};

/* Base names with a per-thread-default-stream variant (NAME_ptsz). */
static int twin_has_ptsz(const char *base)
{
	static const char *const names[] = {"cuMemAllocAsync", "cuMemAllocFromPoolAsync",
					    "cuMemFreeAsync", "cuStreamSynchronize"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(names[i], base) == 0)
			return 1;
	return 0;
}

/*
 * The function for an export name through a lookup by base name: NAME less
 * _v2/_v3/_ptsz, at TWIN_VERSION, _ptsz names with the per-thread flag, the
 * others with flags. cuCtxCreate_v3 at 13000 (cudaGetDriverEntryPoint) is
 * cuCtxCreate_v4, which reads the arguments twin_driver passes the same way.
 * Prints the lookup (return code, status, errno) as an "aux" line.
 */
static void *twin_lookup(const struct twin_lookup_fn *l, int flags, const char *name,
			 const char **event)
{
	char base[64];
	snprintf(base, sizeof base, "%s", name);
	int ptsz = 0;
	size_t n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, "_ptsz") == 0) {
		base[n -= 5] = 0;
		ptsz = 1;
	}
	if (n > 3 && base[n - 3] == '_' && base[n - 2] == 'v')
		base[n - 3] = 0;
	int f = ptsz ? TWIN_PT : flags;
	void *fn = TWIN_UNTOUCHED;
	int rc = -1, status = 77;
	errno = TWIN_ERRNO;
	switch (l->form) {
	case TWIN_GPA2: {
		CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)77;
		rc = ((tw_gpa2)l->fn)(base, &fn, TWIN_VERSION, (cuuint64_t)f, &st);
		status = (int)st;
		break;
	}
	case TWIN_GPA1:
		rc = ((tw_gpa1)l->fn)(base, &fn, TWIN_VERSION, (cuuint64_t)f);
		break;
	case TWIN_ENTRY: {
		enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)77;
		rc = ((tw_entry)l->fn)(base, &fn, (unsigned long long)f, &st);
		status = (int)st;
		break;
	}
	case TWIN_ENTRY_VER: {
		enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)77;
		rc = ((tw_entry_ver)l->fn)(base, &fn, TWIN_VERSION, (unsigned long long)f, &st);
		status = (int)st;
		break;
	}
	}
	int e = errno;
	printf("aux lookup %s flags=%d rc=%d status=%d errno=%d pfn=%s\n", base, f, rc, status, e,
	       twin_ptr(fn));
	int pt = (f & TWIN_PT) || (l->ptsz_default && !(f & TWIN_LEGACY));
	if (pt && !ptsz && twin_has_ptsz(base)) {
		static char ev[80];
		snprintf(ev, sizeof ev, "%s_ptsz", base);
		*event = ev;
	}
	return rc == 0 && fn != TWIN_UNTOUCHED ? fn : NULL;
}

/* A way whose ctx is a struct twin_lookup_fn. */
static void *twin_get_lookup(const struct twin_way *w, const char *name, const char **event)
{
	return twin_lookup(w->ctx, w->flags, name, event);
}

/* ---- the runtime: 45 traced calls, 3 of them fail ------------------------------- */

typedef cudaError_t (*tw_rt_malloc)(void **, size_t);
typedef cudaError_t (*tw_rt_free)(void *);
typedef cudaError_t (*tw_rt_hostalloc)(void **, size_t, unsigned);
typedef cudaError_t (*tw_rt_register)(void *, size_t, unsigned);
typedef cudaError_t (*tw_rt_pitch)(void **, size_t *, size_t, size_t);
typedef cudaError_t (*tw_rt_3d)(struct cudaPitchedPtr *, struct cudaExtent);
typedef cudaError_t (*tw_rt_async)(void **, size_t, cudaStream_t);
typedef cudaError_t (*tw_rt_pool_async)(void **, size_t, cudaMemPool_t, cudaStream_t);
typedef cudaError_t (*tw_rt_free_async)(void *, cudaStream_t);
typedef cudaError_t (*tw_rt_pool_create)(cudaMemPool_t *, const struct cudaMemPoolProps *);
typedef cudaError_t (*tw_rt_pool)(cudaMemPool_t);
typedef cudaError_t (*tw_rt_trim)(cudaMemPool_t, size_t);
typedef cudaError_t (*tw_rt_screate)(cudaStream_t *);
typedef cudaError_t (*tw_rt_screate_flags)(cudaStream_t *, unsigned);
typedef cudaError_t (*tw_rt_screate_prio)(cudaStream_t *, unsigned, int);
typedef cudaError_t (*tw_rt_stream)(cudaStream_t);
typedef cudaError_t (*tw_rt_void)(void);
typedef cudaError_t (*tw_rt_set_device)(int);

static char twin_host_page[4096] __attribute__((aligned(4096)));

static void twin_runtime(const struct twin_way *w)
{
	printf("== %s: runtime\n", w->name);
	TWIN_T(w, tw_rt_set_device, "cudaSetDevice", 0);
	void *d = TWIN_UNTOUCHED, *e = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_malloc, "cudaMalloc", &d, 1 * TWIN_MIB);
	printf("  ptr=%s\n", twin_ptr(d));
	TWIN_T(w, tw_rt_free, "cudaFree", d);
	TWIN_T(w, tw_rt_free, "cudaFree", (void *)0x1234);
	TWIN_T(w, tw_rt_malloc, "cudaMalloc", &e, TWIN_HUGE);
	printf("  ptr=%s\n", twin_ptr(e));
	/* The freed block comes back for the same size: equal pointers both ways. */
	void *d2 = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_malloc, "cudaMalloc", &d2, 1 * TWIN_MIB);
	printf("  ptr=%s same_as_first=%d\n", twin_ptr(d2), d2 == d);
	TWIN_T(w, tw_rt_free, "cudaFree", d2);

	TWIN_HOST_PAIR(w, tw_rt_malloc, "cudaMallocHost", tw_rt_free, "cudaFreeHost", 4 * TWIN_KIB);
	TWIN_HOST_PAIR(w, tw_rt_hostalloc, "cudaHostAlloc", tw_rt_free, "cudaFreeHost", 8 * TWIN_KIB, 0);
	TWIN_T(w, tw_rt_register, "cudaHostRegister", twin_host_page, sizeof twin_host_page, 0);
	TWIN_T(w, tw_rt_register, "cudaHostRegister", twin_host_page, sizeof twin_host_page, 0);
	TWIN_T(w, tw_rt_free, "cudaHostUnregister", twin_host_page);

	TWIN_HOST_PAIR(w, tw_rt_hostalloc, "cudaMallocManaged", tw_rt_free, "cudaFree", 64 * TWIN_KIB,
		       cudaMemAttachGlobal);
	void *p = TWIN_UNTOUCHED;
	size_t pitch = 7;
	TWIN_T(w, tw_rt_pitch, "cudaMallocPitch", &p, &pitch, 100, 10);
	printf("  ptr=%s pitch=%zu\n", twin_ptr(p), pitch);
	TWIN_T(w, tw_rt_free, "cudaFree", p);
	struct cudaPitchedPtr pp = {TWIN_UNTOUCHED, 7, 7, 7};
	struct cudaExtent extent = {100, 10, 2};
	TWIN_T(w, tw_rt_3d, "cudaMalloc3D", &pp, extent);
	printf("  ptr=%s pitch=%zu xsize=%zu ysize=%zu\n", twin_ptr(pp.ptr), pp.pitch, pp.xsize,
	       pp.ysize);
	TWIN_T(w, tw_rt_free, "cudaFree", pp.ptr);

	cudaStream_t s = TWIN_UNTOUCHED, s2 = TWIN_UNTOUCHED, s3 = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_screate, "cudaStreamCreate", &s);
	TWIN_T(w, tw_rt_screate_flags, "cudaStreamCreateWithFlags", &s2, cudaStreamNonBlocking);
	TWIN_T(w, tw_rt_screate_prio, "cudaStreamCreateWithPriority", &s3, 0, 0);
	printf("  streams=%s,%s,%s distinct=%d\n", twin_ptr(s), twin_ptr(s2), twin_ptr(s3),
	       s != s2 && s2 != s3 && s != s3);
	void *a = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_async, "cudaMallocAsync", &a, 1 * TWIN_MIB, s);
	printf("  ptr=%s\n", twin_ptr(a));
	TWIN_T(w, tw_rt_free_async, "cudaFreeAsync", a, s);
	TWIN_T(w, tw_rt_stream, "cudaStreamSynchronize", s);
	a = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_async, "cudaMallocAsync_ptsz", &a, 2 * TWIN_MIB, NULL);
	printf("  ptr=%s\n", twin_ptr(a));
	TWIN_T(w, tw_rt_free_async, "cudaFreeAsync_ptsz", a, NULL);
	TWIN_T(w, tw_rt_stream, "cudaStreamSynchronize_ptsz", NULL);

	struct cudaMemPoolProps props;
	TWIN_POOL_PROPS(props, cudaMemAllocationTypePinned, cudaMemLocationTypeDevice);
	cudaMemPool_t pool = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_pool_create, "cudaMemPoolCreate", &pool, &props);
	printf("  pool=%s\n", twin_ptr(pool));
	a = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_pool_async, "cudaMallocFromPoolAsync", &a, 1 * TWIN_MIB, pool, s);
	printf("  ptr=%s\n", twin_ptr(a));
	TWIN_T(w, tw_rt_free_async, "cudaFreeAsync", a, s);
	TWIN_T(w, tw_rt_stream, "cudaStreamSynchronize", s);
	void *b = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_pool_async, "cudaMallocFromPoolAsync_ptsz", &b, 1 * TWIN_MIB, pool, NULL);
	printf("  ptr=%s reused=%d\n", twin_ptr(b), a == b);
	TWIN_T(w, tw_rt_free_async, "cudaFreeAsync_ptsz", b, NULL);
	TWIN_T(w, tw_rt_stream, "cudaStreamSynchronize_ptsz", NULL);
	TWIN_T(w, tw_rt_trim, "cudaMemPoolTrimTo", pool, 0);
	TWIN_T(w, tw_rt_pool, "cudaMemPoolDestroy", pool);
	TWIN_T(w, tw_rt_stream, "cudaStreamDestroy", s);
	TWIN_T(w, tw_rt_stream, "cudaStreamDestroy", s2);
	TWIN_T(w, tw_rt_stream, "cudaStreamDestroy", s3);
	TWIN_T(w, tw_rt_void, "cudaDeviceSynchronize");
	TWIN_T(w, tw_rt_void, "cudaDeviceReset");
	/* After the reset the runtime makes its context again at the next call. */
	d = TWIN_UNTOUCHED;
	TWIN_T(w, tw_rt_malloc, "cudaMalloc", &d, 4 * TWIN_KIB);
	printf("  ptr=%s\n", twin_ptr(d));
	TWIN_T(w, tw_rt_free, "cudaFree", d);
}

/* ---- the driver: 46 traced calls, 5 of them fail -------------------------------- */

typedef CUresult (*tw_cu_init)(unsigned);
typedef CUresult (*tw_cu_dev_get)(CUdevice *, int);
typedef CUresult (*tw_cu_retain)(CUcontext *, CUdevice);
typedef CUresult (*tw_cu_ctx)(CUcontext);
typedef CUresult (*tw_cu_ctx_create)(CUcontext *, CUexecAffinityParam *, int, unsigned, CUdevice);
typedef CUresult (*tw_cu_reset)(CUdevice);
typedef CUresult (*tw_cu_alloc)(CUdeviceptr *, size_t);
typedef CUresult (*tw_cu_free)(CUdeviceptr);
typedef CUresult (*tw_cu_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*tw_cu_host)(void **, size_t);
typedef CUresult (*tw_cu_hostalloc)(void **, size_t, unsigned);
typedef CUresult (*tw_cu_freehost)(void *);
typedef CUresult (*tw_cu_register)(void *, size_t, unsigned);
typedef CUresult (*tw_cu_managed)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*tw_cu_async)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*tw_cu_pool_async)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*tw_cu_free_async)(CUdeviceptr, CUstream);
typedef CUresult (*tw_cu_pool_create)(CUmemoryPool *, const CUmemPoolProps *);
typedef CUresult (*tw_cu_pool)(CUmemoryPool);
typedef CUresult (*tw_cu_trim)(CUmemoryPool, size_t);
typedef CUresult (*tw_cu_create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
				 unsigned long long);
typedef CUresult (*tw_cu_release)(CUmemGenericAllocationHandle);
typedef CUresult (*tw_cu_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*tw_cu_va_free)(CUdeviceptr, size_t);
typedef CUresult (*tw_cu_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
			      unsigned long long);
typedef CUresult (*tw_cu_unmap)(CUdeviceptr, size_t);
typedef CUresult (*tw_cu_screate)(CUstream *, unsigned);
typedef CUresult (*tw_cu_screate_prio)(CUstream *, unsigned, int);
typedef CUresult (*tw_cu_stream)(CUstream);

#define TWIN_DP(x) twin_ptr((void *)(uintptr_t)(x))

/* A current context on device 0 (untraced calls). */
static CUcontext twin_driver_context(const struct twin_way *w)
{
	CUdevice dev = -1;
	CUcontext ctx = TWIN_UNTOUCHED;
	TWIN_AUX(w, tw_cu_init, "cuInit", 0);
	TWIN_AUX(w, tw_cu_dev_get, "cuDeviceGet", &dev, 0);
	TWIN_AUX(w, tw_cu_retain, "cuDevicePrimaryCtxRetain", &ctx, dev);
	TWIN_AUX(w, tw_cu_ctx, "cuCtxSetCurrent", ctx);
	printf("  device=%d ctx=%s\n", (int)dev, twin_ptr(ctx));
	return ctx;
}

static void twin_driver(const struct twin_way *w)
{
	printf("== %s: driver\n", w->name);
	CUcontext primary = twin_driver_context(w);
	CUdeviceptr d = 0x10, e = 0x10;
	TWIN_T(w, tw_cu_alloc, "cuMemAlloc_v2", &d, 1 * TWIN_MIB);
	printf("  ptr=%s\n", TWIN_DP(d));
	TWIN_T(w, tw_cu_free, "cuMemFree_v2", d);
	TWIN_T(w, tw_cu_free, "cuMemFree_v2", (CUdeviceptr)0x1234);
	TWIN_T(w, tw_cu_alloc, "cuMemAlloc_v2", &e, TWIN_HUGE);
	printf("  ptr=%s\n", TWIN_DP(e));
	CUdeviceptr p = 0x10;
	size_t pitch = 7;
	TWIN_T(w, tw_cu_pitch, "cuMemAllocPitch_v2", &p, &pitch, 100, 10, 4);
	printf("  ptr=%s pitch=%zu\n", TWIN_DP(p), pitch);
	TWIN_T(w, tw_cu_free, "cuMemFree_v2", p);
	TWIN_HOST_PAIR(w, tw_cu_host, "cuMemAllocHost_v2", tw_cu_freehost, "cuMemFreeHost", 4 * TWIN_KIB);
	TWIN_HOST_PAIR(w, tw_cu_hostalloc, "cuMemHostAlloc", tw_cu_freehost, "cuMemFreeHost", 8 * TWIN_KIB,
		       0);
	TWIN_T(w, tw_cu_register, "cuMemHostRegister_v2", twin_host_page, sizeof twin_host_page, 0);
	TWIN_T(w, tw_cu_freehost, "cuMemHostUnregister", twin_host_page);
	TWIN_T(w, tw_cu_freehost, "cuMemHostUnregister", twin_host_page);
	CUdeviceptr m = 0x10;
	TWIN_T(w, tw_cu_managed, "cuMemAllocManaged", &m, 64 * TWIN_KIB, CU_MEM_ATTACH_GLOBAL);
	printf("  ptr=%s\n", TWIN_DP(m));
	TWIN_T(w, tw_cu_free, "cuMemFree_v2", m);

	CUstream s = TWIN_UNTOUCHED, s2 = TWIN_UNTOUCHED;
	TWIN_T(w, tw_cu_screate, "cuStreamCreate", &s, CU_STREAM_DEFAULT);
	TWIN_T(w, tw_cu_screate_prio, "cuStreamCreateWithPriority", &s2, CU_STREAM_NON_BLOCKING, 0);
	printf("  streams=%s,%s distinct=%d\n", twin_ptr(s), twin_ptr(s2), s != s2);
	CUdeviceptr a = 0x10, b = 0x10;
	TWIN_T(w, tw_cu_async, "cuMemAllocAsync", &a, 1 * TWIN_MIB, s);
	printf("  ptr=%s\n", TWIN_DP(a));
	TWIN_T(w, tw_cu_free_async, "cuMemFreeAsync", a, s);
	TWIN_T(w, tw_cu_stream, "cuStreamSynchronize", s);
	TWIN_T(w, tw_cu_async, "cuMemAllocAsync_ptsz", &b, 2 * TWIN_MIB, NULL);
	printf("  ptr=%s\n", TWIN_DP(b));
	TWIN_T(w, tw_cu_free_async, "cuMemFreeAsync_ptsz", b, NULL);
	TWIN_T(w, tw_cu_stream, "cuStreamSynchronize_ptsz", NULL);

	CUmemPoolProps props;
	TWIN_POOL_PROPS(props, CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_LOCATION_TYPE_DEVICE);
	CUmemoryPool pool = TWIN_UNTOUCHED;
	TWIN_T(w, tw_cu_pool_create, "cuMemPoolCreate", &pool, &props);
	printf("  pool=%s\n", twin_ptr(pool));
	a = b = 0x10;
	TWIN_T(w, tw_cu_pool_async, "cuMemAllocFromPoolAsync", &a, 1 * TWIN_MIB, pool, s);
	TWIN_T(w, tw_cu_free_async, "cuMemFreeAsync", a, s);
	TWIN_T(w, tw_cu_stream, "cuStreamSynchronize", s);
	TWIN_T(w, tw_cu_pool_async, "cuMemAllocFromPoolAsync_ptsz", &b, 1 * TWIN_MIB, pool, NULL);
	printf("  ptrs=%s,%s reused=%d\n", TWIN_DP(a), TWIN_DP(b), a == b);
	TWIN_T(w, tw_cu_free_async, "cuMemFreeAsync_ptsz", b, NULL);
	TWIN_T(w, tw_cu_stream, "cuStreamSynchronize_ptsz", NULL);
	TWIN_T(w, tw_cu_trim, "cuMemPoolTrimTo", pool, 0);
	TWIN_T(w, tw_cu_pool, "cuMemPoolDestroy", pool);

	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CUdeviceptr va = 0x10;
	CUmemGenericAllocationHandle mh = 0x10;
	TWIN_T(w, tw_cu_reserve, "cuMemAddressReserve", &va, 4 * TWIN_MIB, 0, 0, 0);
	TWIN_T(w, tw_cu_create, "cuMemCreate", &mh, 2 * TWIN_MIB, &prop, 0);
	printf("  va=%s handle=%s\n", TWIN_DP(va), TWIN_DP(mh));
	TWIN_T(w, tw_cu_map, "cuMemMap", va, 2 * TWIN_MIB, 0, mh, 0);
	TWIN_T(w, tw_cu_map, "cuMemMap", va, 2 * TWIN_MIB, 0, mh, 0);
	TWIN_T(w, tw_cu_unmap, "cuMemUnmap", va, 2 * TWIN_MIB);
	TWIN_T(w, tw_cu_release, "cuMemRelease", mh);
	TWIN_T(w, tw_cu_va_free, "cuMemAddressFree", va, 4 * TWIN_MIB);

	TWIN_T(w, tw_cu_stream, "cuStreamDestroy_v2", s);
	TWIN_T(w, tw_cu_stream, "cuStreamDestroy_v2", s2);
	CUcontext own = TWIN_UNTOUCHED;
	TWIN_AUX(w, tw_cu_ctx_create, "cuCtxCreate_v3", &own, NULL, 0, 0, 0);
	printf("  ctx=%s same_as_primary=%d\n", twin_ptr(own), own == primary);
	TWIN_T(w, tw_cu_ctx, "cuCtxDestroy_v2", own);
#ifndef TWIN_DEFINED_CALLS_ONLY
	/*
	 * A destroyed context's handle: the real driver answers 201 or 709
	 * depending on whether its memory was reused meanwhile (the heap's
	 * layout), so tests/gpu/behaviour.sh leaves this call out there.
	 */
	TWIN_T(w, tw_cu_ctx, "cuCtxDestroy_v2", own);
#endif
	TWIN_AUX(w, tw_cu_ctx, "cuCtxSetCurrent", primary);
	TWIN_T(w, tw_cu_reset, "cuDevicePrimaryCtxReset_v2", 0);
	/* The reset primary context is made again by the next retain. */
	primary = twin_driver_context(w);
	d = 0x10;
	TWIN_T(w, tw_cu_alloc, "cuMemAlloc_v2", &d, 4 * TWIN_KIB);
	printf("  ptr=%s\n", TWIN_DP(d));
	TWIN_T(w, tw_cu_free, "cuMemFree_v2", d);
}

#endif
