/*
 * Drives the fake libcupti (tests/fake/cupti.c) the way the real CUPTI calls
 * its subscriber from inside CUDA calls, for tests/e2e/t_cupti.sh.
 *
 *   cupti_emit preload   run under LD_PRELOAD=libcumtrace.so: the first
 *                        traced call (cudaSetDevice) starts tracing
 *   cupti_emit inject    no preload: dlopen $CUDA_INJECTION64_PATH and call
 *                        its InitializeInjection, as the driver does in cuInit
 *
 * Prints "KEY VALUE" lines the test compares with the dump. Fake addresses
 * are 0x6d00000N0000 so the test can find each scenario's events.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <cupti.h>

#include "common.h"

typedef int (*emit_fn)(int, unsigned, int, const void *, void *, uint32_t, const char *);
typedef size_t (*list_fn)(int *, unsigned *, size_t);
static emit_fn emit;

#define RT CUPTI_CB_DOMAIN_RUNTIME_API
#define DRV CUPTI_CB_DOMAIN_DRIVER_API
#define RTID(n) CUPTI_RUNTIME_TRACE_CBID_##n
#define DRVID(n) CUPTI_DRIVER_TRACE_CBID_##n

static _Atomic uint32_t next_corr = 1000;

struct pending {
	int domain;
	unsigned cbid;
	uint32_t corr;
	const void *params;
};

/* API_ENTER / API_EXIT. Macros, so that the function using them is the
 * innermost program frame of the callback's stack. */
#define ENTER(pend, dom, id, prm)                                                           \
	do {                                                                                \
		(pend).domain = (dom);                                                      \
		(pend).cbid = (id);                                                         \
		(pend).corr = atomic_fetch_add(&next_corr, 1);                              \
		(pend).params = (prm);                                                      \
		emit((pend).domain, (pend).cbid, CUPTI_API_ENTER, (pend).params, NULL,      \
		     (pend).corr, #id);                                                     \
	} while (0)
#define LEAVE(pend, rc)                                                                     \
	do {                                                                                \
		int rc_ = (rc);                                                             \
		emit((pend).domain, (pend).cbid, CUPTI_API_EXIT, (pend).params, &rc_,       \
		     (pend).corr, "");                                                      \
	} while (0)

/* The ids the issue lists: exactly these, nothing else, ever. */
static const struct {
	int domain;
	unsigned cbid;
} expected[] = {
	{RT, RTID(cudaMalloc_v3020)},
	{RT, RTID(cudaFree_v3020)},
	{RT, RTID(cudaMallocHost_v3020)},
	{RT, RTID(cudaFreeHost_v3020)},
	{RT, RTID(cudaHostAlloc_v3020)},
	{RT, RTID(cudaHostRegister_v4000)},
	{RT, RTID(cudaHostUnregister_v4000)},
	{RT, RTID(cudaMallocManaged_v6000)},
	{RT, RTID(cudaMallocPitch_v3020)},
	{RT, RTID(cudaMalloc3D_v3020)},
	{RT, RTID(cudaMallocAsync_v11020)},
	{RT, RTID(cudaMallocAsync_ptsz_v11020)},
	{RT, RTID(cudaMallocFromPoolAsync_v11020)},
	{RT, RTID(cudaMallocFromPoolAsync_ptsz_v11020)},
	{RT, RTID(cudaFreeAsync_v11020)},
	{RT, RTID(cudaFreeAsync_ptsz_v11020)},
	{RT, RTID(cudaMemPoolCreate_v11020)},
	{RT, RTID(cudaMemPoolDestroy_v11020)},
	{RT, RTID(cudaMemPoolTrimTo_v11020)},
	{RT, RTID(cudaStreamCreate_v3020)},
	{RT, RTID(cudaStreamCreateWithFlags_v5000)},
	{RT, RTID(cudaStreamCreateWithPriority_v5050)},
	{RT, RTID(cudaStreamDestroy_v3020)},
	{RT, RTID(cudaStreamDestroy_v5050)},
	{RT, RTID(cudaStreamSynchronize_v3020)},
	{RT, RTID(cudaStreamSynchronize_ptsz_v7000)},
	{RT, RTID(cudaDeviceSynchronize_v3020)},
	{RT, RTID(cudaDeviceReset_v3020)},
	{RT, RTID(cudaSetDevice_v3020)},
	{RT, RTID(cudaMallocArray_v3020)},
	{RT, RTID(cudaMalloc3DArray_v3020)},
	{RT, RTID(cudaMallocMipmappedArray_v5000)},
	{RT, RTID(cudaFreeArray_v3020)},
	{RT, RTID(cudaFreeMipmappedArray_v5000)},
	{DRV, DRVID(cuMemAlloc_v2)},
	{DRV, DRVID(cuMemAllocPitch_v2)},
	{DRV, DRVID(cuMemFree_v2)},
	{DRV, DRVID(cuMemAllocHost_v2)},
	{DRV, DRVID(cuMemHostAlloc)},
	{DRV, DRVID(cuMemFreeHost)},
	{DRV, DRVID(cuMemHostRegister_v2)},
	{DRV, DRVID(cuMemHostUnregister)},
	{DRV, DRVID(cuMemAllocManaged)},
	{DRV, DRVID(cuMemAllocAsync)},
	{DRV, DRVID(cuMemAllocAsync_ptsz)},
	{DRV, DRVID(cuMemAllocFromPoolAsync)},
	{DRV, DRVID(cuMemAllocFromPoolAsync_ptsz)},
	{DRV, DRVID(cuMemFreeAsync)},
	{DRV, DRVID(cuMemFreeAsync_ptsz)},
	{DRV, DRVID(cuMemPoolCreate)},
	{DRV, DRVID(cuMemPoolDestroy)},
	{DRV, DRVID(cuMemPoolTrimTo)},
	{DRV, DRVID(cuMemCreate)},
	{DRV, DRVID(cuMemRelease)},
	{DRV, DRVID(cuMemMap)},
	{DRV, DRVID(cuMemUnmap)},
	{DRV, DRVID(cuMemAddressReserve)},
	{DRV, DRVID(cuMemAddressFree)},
	{DRV, DRVID(cuStreamCreate)},
	{DRV, DRVID(cuStreamCreateWithPriority)},
	{DRV, DRVID(cuStreamDestroy_v2)},
	{DRV, DRVID(cuStreamSynchronize)},
	{DRV, DRVID(cuStreamSynchronize_ptsz)},
	{DRV, DRVID(cuCtxDestroy_v2)},
	{DRV, DRVID(cuDevicePrimaryCtxReset_v2)},
	{DRV, DRVID(cuArrayCreate_v2)},
	{DRV, DRVID(cuArray3DCreate_v2)},
	{DRV, DRVID(cuMipmappedArrayCreate)},
	{DRV, DRVID(cuArrayDestroy)},
	{DRV, DRVID(cuMipmappedArrayDestroy)},
	/* ---- CUDA graphs (issue 19 §2) ---- */
	{RT, RTID(cudaStreamBeginCapture_v10000)},
	{RT, RTID(cudaStreamBeginCapture_ptsz_v10000)},
	{RT, RTID(cudaStreamEndCapture_v10000)},
	{RT, RTID(cudaStreamEndCapture_ptsz_v10000)},
	{RT, RTID(cudaGraphAddMemAllocNode_v11040)},
	{RT, RTID(cudaGraphAddMemFreeNode_v11040)},
	{RT, RTID(cudaGraphInstantiate_v12000)},
	{RT, RTID(cudaGraphInstantiateWithFlags_v11040)},
	{RT, RTID(cudaGraphInstantiateWithParams_v12000)},
	{RT, RTID(cudaGraphInstantiateWithParams_ptsz_v12000)},
	{RT, RTID(cudaGraphLaunch_v10000)},
	{RT, RTID(cudaGraphLaunch_ptsz_v10000)},
	{RT, RTID(cudaGraphExecDestroy_v10000)},
	{RT, RTID(cudaGraphDestroy_v10000)},
	{RT, RTID(cudaDeviceGraphMemTrim_v11040)},
	{DRV, DRVID(cuStreamBeginCapture_v2)},
	{DRV, DRVID(cuStreamBeginCapture_v2_ptsz)},
	{DRV, DRVID(cuStreamEndCapture)},
	{DRV, DRVID(cuStreamEndCapture_ptsz)},
	{DRV, DRVID(cuGraphAddMemAllocNode)},
	{DRV, DRVID(cuGraphAddMemFreeNode)},
	{DRV, DRVID(cuGraphInstantiateWithFlags)},
	{DRV, DRVID(cuGraphInstantiateWithParams)},
	{DRV, DRVID(cuGraphInstantiateWithParams_ptsz)},
	{DRV, DRVID(cuGraphLaunch)},
	{DRV, DRVID(cuGraphLaunch_ptsz)},
	{DRV, DRVID(cuGraphExecDestroy)},
	{DRV, DRVID(cuGraphDestroy)},
	{DRV, DRVID(cuDeviceGraphMemTrim)},
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */
	{RT, RTID(cudaIpcGetMemHandle_v4010)},
	{RT, RTID(cudaIpcOpenMemHandle_v4010)},
	{RT, RTID(cudaIpcCloseMemHandle_v4010)},
	{RT, RTID(cudaMemPoolExportPointer_v11020)},
	{RT, RTID(cudaMemPoolImportPointer_v11020)},
	{DRV, DRVID(cuIpcGetMemHandle)},
	{DRV, DRVID(cuIpcOpenMemHandle_v2)},
	{DRV, DRVID(cuIpcCloseMemHandle)},
	{DRV, DRVID(cuMemExportToShareableHandle)},
	{DRV, DRVID(cuMemImportFromShareableHandle)},
	{DRV, DRVID(cuMemRetainAllocationHandle)},
	{DRV, DRVID(cuMemPoolExportPointer)},
	{DRV, DRVID(cuMemPoolImportPointer)},
	{DRV, DRVID(cuMulticastCreate)},
	{DRV, DRVID(cuMulticastAddDevice)},
	{DRV, DRVID(cuMulticastBindMem)},
	{DRV, DRVID(cuMulticastBindAddr)},
	{DRV, DRVID(cuMulticastUnbind)},
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

static void check_enabled(list_fn list)
{
	int doms[2048];
	unsigned ids[2048];
	size_t n = list(doms, ids, 2048);
	size_t matched = 0;
	for (size_t i = 0; i < n && i < 2048; i++) {
		int found = 0;
		for (size_t k = 0; k < NEXPECTED; k++)
			found |= expected[k].domain == doms[i] && expected[k].cbid == ids[i];
		if (found)
			matched++;
		else
			printf("enabled_extra %d %u\n", doms[i], ids[i]);
	}
	printf("enabled_count %zu\n", n);
	printf("enabled_expected %zu\n", NEXPECTED);
	printf("enabled_match %d\n", n == NEXPECTED && matched == NEXPECTED);
}

/* A: cudaMalloc with the runtime's nested cuMemAlloc_v2, never freed. */
NOINLINE static void leak_site_a(void)
{
	struct pending rt, drv;
	void *p = NULL;
	cudaMalloc_v3020_params mp = {&p, 3u << 20};
	ENTER(rt, RT, RTID(cudaMalloc_v3020), &mp);
	CUdeviceptr d = 0;
	cuMemAlloc_v2_params dp = {&d, 3u << 20};
	ENTER(drv, DRV, DRVID(cuMemAlloc_v2), &dp);
	d = 0x6d0000100000ull;
	LEAVE(drv, CUDA_SUCCESS);
	p = (void *)(uintptr_t)d;
	LEAVE(rt, cudaSuccess);
}

/* B: cudaMalloc + cudaFree, each with its nested driver call. */
NOINLINE static void malloc_free_b(void)
{
	struct pending rt, drv;
	void *p = NULL;
	cudaMalloc_v3020_params mp = {&p, 4096};
	ENTER(rt, RT, RTID(cudaMalloc_v3020), &mp);
	CUdeviceptr d = 0;
	cuMemAlloc_v2_params dp = {&d, 4096};
	ENTER(drv, DRV, DRVID(cuMemAlloc_v2), &dp);
	d = 0x6d0000200000ull;
	LEAVE(drv, CUDA_SUCCESS);
	p = (void *)(uintptr_t)d;
	LEAVE(rt, cudaSuccess);

	cudaFree_v3020_params fp = {p};
	ENTER(rt, RT, RTID(cudaFree_v3020), &fp);
	cuMemFree_v2_params dfp = {d};
	ENTER(drv, DRV, DRVID(cuMemFree_v2), &dfp);
	LEAVE(drv, CUDA_SUCCESS);
	LEAVE(rt, cudaSuccess);
}

/* C: the driver API on its own: recorded at the driver level. */
NOINLINE static void driver_c(void)
{
	struct pending drv;
	CUdeviceptr d = 0;
	cuMemAlloc_v2_params dp = {&d, 2u << 20};
	ENTER(drv, DRV, DRVID(cuMemAlloc_v2), &dp);
	d = 0x6d0000400000ull;
	LEAVE(drv, CUDA_SUCCESS);
	cuMemFree_v2_params fp = {d};
	ENTER(drv, DRV, DRVID(cuMemFree_v2), &fp);
	LEAVE(drv, CUDA_SUCCESS);
}

/* D: a failed cudaMalloc: result kept, the out-parameter never read. */
NOINLINE static void failed_d(void)
{
	struct pending rt;
	void *p = (void *)0x6d0000dead00ull;
	cudaMalloc_v3020_params mp = {&p, (size_t)64 << 30};
	ENTER(rt, RT, RTID(cudaMalloc_v3020), &mp);
	LEAVE(rt, cudaErrorMemoryAllocation);
}

/* E: stream arguments, the per-thread default stream of _ptsz. */
NOINLINE static void async_e(void)
{
	struct pending rt;
	void *p = NULL;
	cudaMallocAsync_ptsz_v11020_params ap = {&p, 8192, NULL};
	ENTER(rt, RT, RTID(cudaMallocAsync_ptsz_v11020), &ap);
	p = (void *)0x6d0000500000ull;
	LEAVE(rt, cudaSuccess);
	cudaFreeAsync_v11020_params fp = {p, (cudaStream_t)(uintptr_t)0x1234};
	ENTER(rt, RT, RTID(cudaFreeAsync_v11020), &fp);
	LEAVE(rt, cudaSuccess);
}

/* F: cudaSetDevice sets the device of later events; pitch and size. */
NOINLINE static void device_f(void)
{
	struct pending rt;
	cudaSetDevice_v3020_params sp = {1};
	ENTER(rt, RT, RTID(cudaSetDevice_v3020), &sp);
	LEAVE(rt, cudaSuccess);
	void *p = NULL;
	size_t pitch = 0;
	cudaMallocPitch_v3020_params pp = {&p, &pitch, 1000, 10};
	ENTER(rt, RT, RTID(cudaMallocPitch_v3020), &pp);
	p = (void *)0x6d0000600000ull;
	pitch = 1024;
	LEAVE(rt, cudaSuccess);
	cudaSetDevice_v3020_params back = {0};
	ENTER(rt, RT, RTID(cudaSetDevice_v3020), &back);
	LEAVE(rt, cudaSuccess);
}

/* G: stream creation: handle, flags, priority. */
NOINLINE static void stream_g(void)
{
	struct pending rt;
	cudaStream_t s = NULL;
	cudaStreamCreateWithPriority_v5050_params cp = {&s, 1, -1};
	ENTER(rt, RT, RTID(cudaStreamCreateWithPriority_v5050), &cp);
	s = (cudaStream_t)(uintptr_t)0x6d0000700000ull;
	LEAVE(rt, cudaSuccess);
}

/* H: VMM: the device of cuMemCreate comes from its prop, cuMemMap's aux is the handle. */
NOINLINE static void vmm_h(void)
{
	struct pending drv;
	CUmemGenericAllocationHandle h = 0;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 3;
	cuMemCreate_params cp = {&h, 2u << 20, &prop, 0};
	ENTER(drv, DRV, DRVID(cuMemCreate), &cp);
	h = 0x6d0000800000ull;
	LEAVE(drv, CUDA_SUCCESS);
	cuMemMap_params mp = {0x6d0000810000ull, 2u << 20, 0, h, 0};
	ENTER(drv, DRV, DRVID(cuMemMap), &mp);
	LEAVE(drv, CUDA_SUCCESS);
}

/* I: an id cumtrace did not enable is never delivered. J: an exit with no
 * enter (the call began before the subscription) records nothing. */
NOINLINE static void stray_ij(void)
{
	struct pending rt;
	char buf[16];
	cudaMemcpy_v3020_params cp = {buf, buf, sizeof buf, cudaMemcpyHostToHost};
	int delivered = emit(RT, RTID(cudaMemcpy_v3020), CUPTI_API_ENTER, &cp, NULL, 1, "");
	printf("memcpy_delivered %d\n", delivered);
	void *p = (void *)0x6d0000900000ull;
	cudaMalloc_v3020_params mp = {&p, 4096};
	rt.domain = RT;
	rt.cbid = RTID(cudaMalloc_v3020);
	rt.corr = 7;
	rt.params = &mp;
	LEAVE(rt, cudaSuccess);
}

/* K: another thread's calls are its own, even while main has one open. */
static void *thread_k(void *arg)
{
	struct pending drv;
	CUdeviceptr d = 0;
	cuMemAlloc_v2_params dp = {&d, 65536};
	ENTER(drv, DRV, DRVID(cuMemAlloc_v2), &dp);
	d = 0x6d0000b00000ull;
	LEAVE(drv, CUDA_SUCCESS);
	return arg;
}

NOINLINE static void threads_k(void)
{
	struct pending rt;
	void *p = NULL;
	cudaMalloc_v3020_params mp = {&p, 65536};
	ENTER(rt, RT, RTID(cudaMalloc_v3020), &mp);
	pthread_t t;
	pthread_create(&t, NULL, thread_k, NULL);
	pthread_join(t, NULL);
	p = (void *)0x6d0000a00000ull;
	LEAVE(rt, cudaSuccess);
}

/* L: a real (fake-runtime) call inside its callbacks: the interposition
 * wrapper must not record it too. */
NOINLINE static void overlap_l(void)
{
	struct pending rt;
	void *q = NULL;
	cudaMalloc_v3020_params mp = {&q, 12288};
	ENTER(rt, RT, RTID(cudaMalloc_v3020), &mp);
	int rc = cudaMalloc(&q, 12288);
	LEAVE(rt, rc);
	printf("real_ptr_l %#llx\n", (unsigned long long)(uintptr_t)q);
	cudaFree_v3020_params fp = {q};
	ENTER(rt, RT, RTID(cudaFree_v3020), &fp);
	rc = cudaFree(q);
	LEAVE(rt, rc);
}

/* M: a real call CUPTI does not report (the fake runtime cannot): under the
 * CUPTI backend nobody records it; with CUPTI taken interposition does. */
NOINLINE static void plain_m(void)
{
	void *q = NULL;
	CHECK(cudaMalloc(&q, 20480));
	printf("real_ptr_m %#llx\n", (unsigned long long)(uintptr_t)q);
	CHECK(cudaFree(q));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "preload";
	if (strcmp(mode, "inject") == 0) {
		const char *path = getenv("CUDA_INJECTION64_PATH");
		void *shim = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
		if (!shim) {
			fprintf(stderr, "cannot load CUDA_INJECTION64_PATH: %s\n", dlerror());
			return 3;
		}
		int (*init)(void) = (int (*)(void))dlsym(shim, "InitializeInjection");
		if (!init) {
			fprintf(stderr, "no InitializeInjection in %s\n", path);
			return 3;
		}
		printf("inject_rc %d\n", init());
	} else {
		CHECK(cudaSetDevice(0)); /* the first traced call starts tracing */
	}
	void *lib = dlopen("libcupti.so.13", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "cannot load the fake libcupti.so.13: %s\n", dlerror());
		return 3;
	}
	emit = (emit_fn)dlsym(lib, "fakecupti_emit");
	list_fn list = (list_fn)dlsym(lib, "fakecupti_enabled_list");
	int (*subscribed)(void) = (int (*)(void))dlsym(lib, "fakecupti_subscribed");
	unsigned (*calls)(void) = (unsigned (*)(void))dlsym(lib, "fakecupti_subscribe_calls");
	if (!emit || !list || !subscribed || !calls) {
		fprintf(stderr, "libcupti.so.13 is not the fake one\n");
		return 3;
	}
	printf("subscribed %d\n", subscribed());
	printf("subscribe_calls %u\n", calls());
	check_enabled(list);
	/* "paused": every callback below comes while cumtrace_bench_pause(1) holds */
	int (*bench_pause)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cumtrace_bench_pause");
	if (strcmp(mode, "paused") == 0)
		printf("pause_rc %d\n", bench_pause ? bench_pause(1) : -2);

	leak_site_a();
	malloc_free_b();
	driver_c();
	failed_d();
	async_e();
	device_f();
	stream_g();
	vmm_h();
	stray_ij();
	threads_k();
	overlap_l();
	plain_m();
	if (strcmp(mode, "paused") == 0)
		printf("resume_rc %d\n", bench_pause ? bench_pause(0) : -2);
	fflush(stdout);
	return 0;
}
