/*
 * Capture path: cudaGetDriverEntryPoint, cudaGetDriverEntryPointByVersion and
 * their _ptsz exports, called as runtime exports, each with cudaEnableDefault,
 * cudaEnableLegacyStream and cudaEnablePerThreadDefaultStream. The functions
 * handed out are called; no runtime allocation API is called at all. Prints
 * return codes and statuses (never pointers): the same with and without the
 * shim (tests/e2e/t_paths_entry.sh).
 *
 * The variant: per-thread when the flag asks for it, or with
 * cudaEnableDefault from a _ptsz export; legacy otherwise. Traced calls:
 *   cuMemAlloc_v2 4, cuMemFree_v2 4                       (one pair per lookup function)
 *   cuMemAllocAsync 6, cuMemFreeAsync 6                   (legacy variants, stream 0)
 *   cuMemAllocAsync_ptsz 6, cuMemFreeAsync_ptsz 6         (per-thread, stream 0 -> 0x2)
 *   cuStreamSynchronize 2 + 2, cuStreamSynchronize_ptsz 2 + 2, cuStreamCreate 1,
 *   cuMemAllocAsync 1 and cuMemFreeAsync 1 on a created stream, cuStreamDestroy_v2 1
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
						  unsigned int cudaVersion, unsigned long long flags,
						  enum cudaDriverEntryPointQueryResult *driverStatus);

#define KiB 1024ul
#define MiB (1024ul * 1024ul)
#define SENTINEL_PFN ((void *)0x1)
#define SENTINEL_STATUS 77

typedef CUresult (*devget_t)(CUdevice *, int);
typedef CUresult (*retain_t)(CUcontext *, CUdevice);
typedef CUresult (*setcur_t)(CUcontext);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);
typedef CUresult (*aalloc_t)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*afree_t)(CUdeviceptr, CUstream);
typedef CUresult (*sync_t)(CUstream);
typedef CUresult (*sc_t)(CUstream *, unsigned);
typedef CUresult (*sd_t)(CUstream);
typedef CUresult (*mgi_t)(size_t *, size_t *);

enum { EP, EP_PTSZ, EPBV, EPBV_PTSZ };
static const char *const ep_names[] = {"cudaGetDriverEntryPoint", "cudaGetDriverEntryPoint_ptsz",
				       "cudaGetDriverEntryPointByVersion",
				       "cudaGetDriverEntryPointByVersion_ptsz"};
static const char *const flag_names[] = {"cudaEnableDefault", "cudaEnableLegacyStream",
					 "cudaEnablePerThreadDefaultStream"};

static const char *pfn_state(void *p)
{
	return p == SENTINEL_PFN ? "untouched" : p ? "set" : "null";
}

/* One lookup through entry-point function ep (ByVersion at version ver). */
static void *entry(int ep, const char *sym, unsigned ver, unsigned long long flags)
{
	void *pfn = SENTINEL_PFN;
	enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)SENTINEL_STATUS;
	cudaError_t rc;
	switch (ep) {
	case EP: rc = cudaGetDriverEntryPoint(sym, &pfn, flags, &st); break;
	case EP_PTSZ: rc = cudaGetDriverEntryPoint_ptsz(sym, &pfn, flags, &st); break;
	case EPBV: rc = cudaGetDriverEntryPointByVersion(sym, &pfn, ver, flags, &st); break;
	default: rc = cudaGetDriverEntryPointByVersion_ptsz(sym, &pfn, ver, flags, &st); break;
	}
	printf("%s(%s, ver=%u, %s) rc=%d status=%d pfn=%s\n", ep_names[ep], sym,
	       ep == EP || ep == EP_PTSZ ? 0 : ver, flags < 3 ? flag_names[flags] : "bad-flags",
	       (int)rc, (int)st, pfn_state(pfn));
	return rc == cudaSuccess && pfn != SENTINEL_PFN ? pfn : NULL;
}

#define NEED(p)                                                                            \
	do {                                                                               \
		if (!(p)) {                                                                \
			fprintf(stderr, "%s:%d: lookup failed\n", __FILE__, __LINE__);     \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

#define CALL(what, call) printf("  call %s rc=%d\n", what, (int)(call))

int main(void)
{
	/* A current context, through untraced names. */
	devget_t devget = (devget_t)entry(EP, "cuDeviceGet", 0, cudaEnableDefault);
	retain_t retain = (retain_t)entry(EP, "cuDevicePrimaryCtxRetain", 0, cudaEnableDefault);
	setcur_t setcur = (setcur_t)entry(EP, "cuCtxSetCurrent", 0, cudaEnableDefault);
	NEED(devget && retain && setcur);
	CUdevice dev = -1;
	CUcontext ctx = NULL;
	CALL("cuDeviceGet", devget(&dev, 0));
	CALL("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
	CALL("cuCtxSetCurrent", setcur(ctx));

	for (int ep = EP; ep <= EPBV_PTSZ; ep++) {
		alloc_t ma = (alloc_t)entry(ep, "cuMemAlloc", 13000, cudaEnableDefault);
		free_t mf = (free_t)entry(ep, "cuMemFree", 13000, cudaEnableDefault);
		NEED(ma && mf);
		CUdeviceptr d = 0;
		CALL("cuMemAlloc 1MiB", ma(&d, 1 * MiB));
		CALL("cuMemFree", mf(d));
		for (unsigned long long fl = cudaEnableDefault; fl <= cudaEnablePerThreadDefaultStream; fl++) {
			aalloc_t aa = (aalloc_t)entry(ep, "cuMemAllocAsync", 13000, fl);
			afree_t af = (afree_t)entry(ep, "cuMemFreeAsync", 13000, fl);
			NEED(aa && af);
			CUdeviceptr a = 0;
			CALL("cuMemAllocAsync 64KiB", aa(&a, 64 * KiB, NULL));
			CALL("cuMemFreeAsync", af(a, NULL));
		}
		sync_t sy = (sync_t)entry(ep, "cuStreamSynchronize", 13000, cudaEnableDefault);
		NEED(sy);
		CALL("cuStreamSynchronize", sy(NULL));
		/* Lookups that find nothing: success, no function, the reason. */
		entry(ep, "cuNoSuchFunction", 13000, cudaEnableDefault);
		entry(ep, "cuMemAlloc", 3000, cudaEnableDefault);
		entry(ep, "cuMemAllocAsync", 11010, cudaEnablePerThreadDefaultStream);
		entry(ep, "cuMemAlloc", 13000, 7);
	}

	/*
	 * Which variant really runs: a free on a blocking stream is observed by
	 * a legacy default-stream synchronisation, not by a per-thread one.
	 */
	sync_t sy_pt = (sync_t)entry(EP, "cuStreamSynchronize", 0, cudaEnablePerThreadDefaultStream);
	sync_t sy_lg = (sync_t)entry(EPBV, "cuStreamSynchronize", 13000, cudaEnableLegacyStream);
	sync_t sy_ptd = (sync_t)entry(EPBV_PTSZ, "cuStreamSynchronize", 13000, cudaEnableDefault);
	sync_t sy_lg2 = (sync_t)entry(EP_PTSZ, "cuStreamSynchronize", 0, cudaEnableLegacyStream);
	sc_t sc = (sc_t)entry(EP, "cuStreamCreate", 0, cudaEnableDefault);
	sd_t sd = (sd_t)entry(EP, "cuStreamDestroy", 0, cudaEnableDefault);
	mgi_t mgi = (mgi_t)entry(EP, "cuMemGetInfo", 0, cudaEnableDefault);
	aalloc_t aa = (aalloc_t)entry(EP, "cuMemAllocAsync", 0, cudaEnableLegacyStream);
	afree_t af = (afree_t)entry(EP, "cuMemFreeAsync", 0, cudaEnableLegacyStream);
	NEED(sy_pt && sy_lg && sy_ptd && sy_lg2 && sc && sd && mgi && aa && af);
	CUstream s = NULL;
	size_t free0 = 0, free1 = 0, total = 0;
	CALL("cuStreamCreate(blocking)", sc(&s, CU_STREAM_DEFAULT));
	CALL("cuMemGetInfo", mgi(&free0, &total));
	CUdeviceptr x = 0;
	CALL("cuMemAllocAsync(s) 8MiB", aa(&x, 8 * MiB, s));
	CALL("cuMemFreeAsync(s)", af(x, s));
	CALL("cuStreamSynchronize(per-thread)", sy_pt(NULL));
	CALL("cuStreamSynchronize(_ptsz default)", sy_ptd(NULL));
	CALL("cuMemGetInfo", mgi(&free1, &total));
	printf("  charged after per-thread syncs: %zu MiB\n", (free0 - free1) / MiB);
	CALL("cuStreamSynchronize(legacy)", sy_lg(NULL));
	CALL("cuStreamSynchronize(_ptsz legacy)", sy_lg2(NULL));
	CALL("cuMemGetInfo", mgi(&free1, &total));
	printf("  charged after legacy syncs: %zu MiB\n", (free0 - free1) / MiB);
	CALL("cuStreamDestroy", sd(s));
	return 0;
}
