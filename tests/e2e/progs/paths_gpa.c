/*
 * Capture path: cuGetProcAddress_v2 and the legacy cuGetProcAddress, both
 * fetched with dlsym on a libcuda.so.1 handle (the runtime is never called).
 * Every lookup and every call prints its return code (never a pointer), so
 * the output must be the same with and without the shim
 * (tests/e2e/t_paths_gpa.sh compares them and counts the events).
 *
 * Per form (v2 first, then legacy) the traced calls are:
 *   cuMemAlloc_v2 4, cuMemFree_v2 4, cuMemAllocAsync 2, cuMemFreeAsync 2,
 *   cuMemAllocAsync_ptsz 1, cuMemFreeAsync_ptsz 1, cuStreamSynchronize 2,
 *   cuStreamSynchronize_ptsz 2, cuStreamCreate 1, cuStreamDestroy_v2 1
 * plus, once, a cuMemFree_v2 of a bad pointer (a failure).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#undef cuGetProcAddress

#define KiB 1024ul
#define MiB (1024ul * 1024ul)
#define PT CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define SENTINEL_PFN ((void *)0x1)
#define SENTINEL_STATUS 77

typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_t)(const char *, void **, int, cuuint64_t);
typedef CUresult (*init_t)(unsigned);
typedef CUresult (*count_t)(int *);
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

static const char *pfn_state(void *p)
{
	return p == SENTINEL_PFN ? "untouched" : p ? "set" : "null";
}

/* One lookup through a v2-shaped or a legacy-shaped cuGetProcAddress. */
static void *lookup(const char *form, gpa2_t g2, gpa1_t g1, const char *sym, int ver,
		    cuuint64_t flags)
{
	void *pfn = SENTINEL_PFN;
	CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)SENTINEL_STATUS;
	CUresult rc = g2 ? g2(sym, &pfn, ver, flags, &st) : g1(sym, &pfn, ver, flags);
	if (g2)
		printf("%s %s ver=%d flags=%llu rc=%d status=%d pfn=%s\n", form, sym, ver,
		       (unsigned long long)flags, (int)rc, (int)st, pfn_state(pfn));
	else
		printf("%s %s ver=%d flags=%llu rc=%d pfn=%s\n", form, sym, ver,
		       (unsigned long long)flags, (int)rc, pfn_state(pfn));
	return rc == CUDA_SUCCESS ? pfn : NULL;
}

#define NEED(p)                                                                            \
	do {                                                                               \
		if (!(p)) {                                                                \
			fprintf(stderr, "%s:%d: lookup failed\n", __FILE__, __LINE__);     \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

#define CALL(what, call) printf("  call %s rc=%d\n", what, (int)(call))

static void *cuda_handle;

/* The traced calls of one form: see the header comment. */
static void run_form(const char *form, gpa2_t g2, gpa1_t g1, int first)
{
	printf("== %s\n", form);
	/* Untraced names pass through and work. */
	count_t count = (count_t)lookup(form, g2, g1, "cuDeviceGetCount", 13000, 0);
	NEED(count);
	int n = -1;
	CALL("cuDeviceGetCount", count(&n));
	printf("  devices=%d same_as_dlsym=%d\n", n, (void *)count == dlsym(cuda_handle, "cuDeviceGetCount"));
	init_t init = (init_t)lookup(form, g2, g1, "cuInit", 13000, 0);
	NEED(init);
	CALL("cuInit", init(0));

	/* cuMemAlloc at 13000 is cuMemAlloc_v2, with or without the per-thread flag. */
	alloc_t ma = (alloc_t)lookup(form, g2, g1, "cuMemAlloc", 13000, 0);
	alloc_t ma_pt = (alloc_t)lookup(form, g2, g1, "cuMemAlloc", 13000, PT);
	free_t mf = (free_t)lookup(form, g2, g1, "cuMemFree", 13000, LEGACY);
	NEED(ma && ma_pt && mf);
	CUdeviceptr d1 = 0, d2 = 0;
	CALL("cuMemAlloc 1MiB", ma(&d1, 1 * MiB));
	CALL("cuMemAlloc(pt) 2MiB", ma_pt(&d2, 2 * MiB));
	CALL("cuMemFree", mf(d1));
	CALL("cuMemFree", mf(d2));
	if (first)
		CALL("cuMemFree(bad)", mf((CUdeviceptr)0x1234));

	/* Stream-ordered: the per-thread flag picks the _ptsz variants. */
	aalloc_t aa_pt = (aalloc_t)lookup(form, g2, g1, "cuMemAllocAsync", 13000, PT);
	afree_t af_pt = (afree_t)lookup(form, g2, g1, "cuMemFreeAsync", 13000, PT);
	aalloc_t aa_lg = (aalloc_t)lookup(form, g2, g1, "cuMemAllocAsync", 13000, LEGACY);
	afree_t af_lg = (afree_t)lookup(form, g2, g1, "cuMemFreeAsync", 13000, LEGACY);
	sync_t sy_lg = (sync_t)lookup(form, g2, g1, "cuStreamSynchronize", 13000, LEGACY);
	sync_t sy_pt = (sync_t)lookup(form, g2, g1, "cuStreamSynchronize", 13000, PT);
	NEED(aa_pt && af_pt && aa_lg && af_lg && sy_lg && sy_pt);
	CUdeviceptr a = 0, b = 0;
	CALL("cuMemAllocAsync(pt) 3MiB", aa_pt(&a, 3 * MiB, NULL));
	CALL("cuMemFreeAsync(pt)", af_pt(a, NULL));
	CALL("cuMemAllocAsync(legacy) 4MiB", aa_lg(&b, 4 * MiB, NULL));
	CALL("cuMemFreeAsync(legacy)", af_lg(b, NULL));
	CALL("cuStreamSynchronize(legacy)", sy_lg(NULL));
	CALL("cuStreamSynchronize(pt)", sy_pt(NULL));

	/*
	 * Which variant really runs: a free on a blocking stream is observed by
	 * a legacy default-stream synchronisation, not by a per-thread one
	 * (tests/fake/README.md), so the charged bytes tell them apart.
	 */
	sc_t sc = (sc_t)lookup(form, g2, g1, "cuStreamCreate", 13000, 0);
	sd_t sd = (sd_t)lookup(form, g2, g1, "cuStreamDestroy", 13000, 0);
	mgi_t mgi = (mgi_t)lookup(form, g2, g1, "cuMemGetInfo", 13000, 0);
	NEED(sc && sd && mgi);
	CUstream s = NULL;
	size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
	CALL("cuStreamCreate(blocking)", sc(&s, CU_STREAM_DEFAULT));
	CALL("cuMemGetInfo", mgi(&free0, &total));
	CUdeviceptr x = 0;
	CALL("cuMemAllocAsync(legacy, s) 8MiB", aa_lg(&x, 8 * MiB, s));
	CALL("cuMemFreeAsync(legacy, s)", af_lg(x, s));
	CALL("cuStreamSynchronize(pt)", sy_pt(NULL));
	CALL("cuMemGetInfo", mgi(&free1, &total));
	printf("  charged after per-thread sync: %zu MiB\n", (free0 - free1) / MiB);
	CALL("cuStreamSynchronize(legacy)", sy_lg(NULL));
	CALL("cuMemGetInfo", mgi(&free2, &total));
	printf("  charged after legacy sync: %zu MiB\n", (free0 - free2) / MiB);
	CALL("cuStreamDestroy", sd(s));

	/* cuGetProcAddress itself: at 13000 the v2 form, at 11030 the legacy one. */
	gpa2_t self2 = (gpa2_t)lookup(form, g2, g1, "cuGetProcAddress", 13000, 0);
	gpa1_t self1 = (gpa1_t)lookup(form, g2, g1, "cuGetProcAddress", 11030, 0);
	NEED(self2 && self1);
	char sub[64];
	snprintf(sub, sizeof sub, "%s>v2", form);
	alloc_t ma2 = (alloc_t)lookup(sub, self2, NULL, "cuMemAlloc", 13000, 0);
	free_t mf2 = (free_t)lookup(sub, self2, NULL, "cuMemFree", 13000, 0);
	lookup(sub, self2, NULL, "cuNoSuchFunction", 13000, 0);
	snprintf(sub, sizeof sub, "%s>v1", form);
	alloc_t ma1 = (alloc_t)lookup(sub, NULL, self1, "cuMemAlloc", 13000, 0);
	free_t mf1 = (free_t)lookup(sub, NULL, self1, "cuMemFree", 13000, 0);
	NEED(ma2 && mf2 && ma1 && mf1);
	CUdeviceptr e = 0, f = 0;
	CALL("cuMemAlloc via returned v2 512KiB", ma2(&e, 512 * KiB));
	CALL("cuMemFree via returned v2", mf2(e));
	CALL("cuMemAlloc via returned v1 256KiB", ma1(&f, 256 * KiB));
	CALL("cuMemFree via returned v1", mf1(f));

	/* Failures must look exactly as without the shim. */
	lookup(form, g2, g1, "cuNoSuchFunction", 13000, 0);
	lookup(form, g2, g1, "cuMemAlloc", 3000, 0);
	lookup(form, g2, g1, "cuMemAlloc", 14000, 0);
	lookup(form, g2, g1, "cuMemAlloc", 13000, 0x8);
	lookup(form, g2, g1, "cuMemAllocAsync", 11010, PT);
}

/*
 * "v2only": only cuGetProcAddress_v2 is taken from dlsym (as a statically
 * linked runtime does); cuGetProcAddress itself is then fetched through it
 * and used: 2 cuMemAlloc_v2 and 2 cuMemFree_v2 calls.
 */
static int run_v2only(void)
{
	gpa2_t g2 = (gpa2_t)dlsym(cuda_handle, "cuGetProcAddress_v2");
	NEED(g2);
	init_t init = (init_t)lookup("v2only", g2, NULL, "cuInit", 13000, 0);
	devget_t devget = (devget_t)lookup("v2only", g2, NULL, "cuDeviceGet", 13000, 0);
	retain_t retain = (retain_t)lookup("v2only", g2, NULL, "cuDevicePrimaryCtxRetain", 13000, 0);
	setcur_t setcur = (setcur_t)lookup("v2only", g2, NULL, "cuCtxSetCurrent", 13000, 0);
	NEED(init && devget && retain && setcur);
	CUdevice dev = -1;
	CUcontext ctx = NULL;
	CALL("cuInit", init(0));
	CALL("cuDeviceGet", devget(&dev, 0));
	CALL("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
	CALL("cuCtxSetCurrent", setcur(ctx));
	gpa2_t self2 = (gpa2_t)lookup("v2only", g2, NULL, "cuGetProcAddress", 13000, 0);
	NEED(self2);
	for (int i = 0; i < 2; i++) {
		alloc_t ma = (alloc_t)lookup("v2only>v2", self2, NULL, "cuMemAlloc", 13000, 0);
		free_t mf = (free_t)lookup("v2only>v2", self2, NULL, "cuMemFree", 13000, 0);
		lookup("v2only>v2", self2, NULL, "cuNoSuchFunction", 13000, 0);
		NEED(ma && mf);
		CUdeviceptr d = 0;
		CALL("cuMemAlloc 1MiB", ma(&d, 1 * MiB));
		CALL("cuMemFree", mf(d));
	}
	/*
	 * The legacy export, looked up now, must still be the 4-argument
	 * function: called with a fifth argument (harmless in the x86-64 and
	 * aarch64 calling conventions) it must leave that status alone. A
	 * legacy entry that forwards to cuGetProcAddress_v2 writes it.
	 */
	gpa2_t legacy_as_v2 = (gpa2_t)dlsym(cuda_handle, "cuGetProcAddress");
	NEED(legacy_as_v2);
	lookup("v2only>legacy(5 args)", legacy_as_v2, NULL, "cuMemAlloc", 13000, 0);
	return 0;
}

int main(int argc, char **argv)
{
	cuda_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	NEED(cuda_handle);
	if (argc > 1 && strcmp(argv[1], "v2only") == 0)
		return run_v2only();
	gpa2_t g2 = (gpa2_t)dlsym(cuda_handle, "cuGetProcAddress_v2");
	gpa1_t g1 = (gpa1_t)dlsym(cuda_handle, "cuGetProcAddress");
	NEED(g2 && g1);

	/* A context for the allocations, through untraced names. */
	devget_t devget = (devget_t)lookup("setup", g2, NULL, "cuDeviceGet", 13000, 0);
	retain_t retain = (retain_t)lookup("setup", g2, NULL, "cuDevicePrimaryCtxRetain", 13000, 0);
	setcur_t setcur = (setcur_t)lookup("setup", g2, NULL, "cuCtxSetCurrent", 13000, 0);
	init_t init = (init_t)lookup("setup", g2, NULL, "cuInit", 13000, 0);
	NEED(devget && retain && setcur && init);
	CUdevice dev = -1;
	CUcontext ctx = NULL;
	CALL("cuInit", init(0));
	CALL("cuDeviceGet", devget(&dev, 0));
	CALL("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
	CALL("cuCtxSetCurrent", setcur(ctx));

	run_form("v2", g2, NULL, 1);
	run_form("v1", NULL, g1, 0);
	return 0;
}
