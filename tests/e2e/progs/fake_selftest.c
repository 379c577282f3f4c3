/*
 * Self-test of the fake CUDA libraries in tests/fake/.
 *
 * Exercises every faked runtime call (linked against the fake libcudart)
 * and every faked driver call (through dlopen("libcuda.so.1") and dlsym of
 * the exported names), cuGetProcAddress and cudaGetDriverEntryPoint*
 * included. Prints "fake_selftest: N checks passed" and exits 0, or names
 * each failed check on stderr and exits 1.
 *
 * Honours CUMTRACE_FAKE_DEVICES and CUMTRACE_FAKE_CAPACITY (expects the
 * values they set); needs a capacity of at least 64 MiB, and with 0 devices
 * only checks that the runtime reports cudaErrorNoDevice.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef cuGetProcAddress /* the test names the exported symbols themselves */

/* Runtime exports that cuda_runtime_api.h declares only for per-thread builds. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
						  unsigned int cudaVersion, unsigned long long flags,
						  enum cudaDriverEntryPointQueryResult *driverStatus);

#define MiB ((size_t)1 << 20)
#define GRAN (2 * MiB)

/* ---- checks ------------------------------------------------------------------ */
static int g_pass, g_fail;

static void check(int ok, const char *what, int line, const char *got)
{
	if (ok) {
		__atomic_add_fetch(&g_pass, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&g_fail, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "fake_selftest.c:%d: check failed: %s%s%s\n", line, what, got ? ", got " : "",
		got ? got : "");
}

#define CHECK(cond) check(!!(cond), #cond, __LINE__, NULL)
#define RT(call, want) do { \
	cudaError_t e_ = (call); \
	check(e_ == (want), #call " == " #want, __LINE__, cudaGetErrorName(e_)); \
} while (0)
#define OK(call) RT(call, cudaSuccess)
#define CU(call, want) do { \
	CUresult r_ = (call); \
	const char *n_ = NULL; \
	d.cuGetErrorName(r_, &n_); \
	check(r_ == (want), #call " == " #want, __LINE__, n_ ? n_ : "?"); \
} while (0)
#define CUOK(call) CU(call, CUDA_SUCCESS)

/* ---- the driver, by exported name -------------------------------------------- */
#define DRIVER_FUNCS(X) \
	X(cuInit, PFN_cuInit_v2000) \
	X(cuDriverGetVersion, PFN_cuDriverGetVersion_v2020) \
	X(cuDeviceGet, PFN_cuDeviceGet_v2000) \
	X(cuDeviceGetCount, PFN_cuDeviceGetCount_v2000) \
	X(cuDeviceGetName, PFN_cuDeviceGetName_v2000) \
	X(cuDeviceTotalMem_v2, PFN_cuDeviceTotalMem_v3020) \
	X(cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000) \
	X(cuDevicePrimaryCtxRelease_v2, PFN_cuDevicePrimaryCtxRelease_v11000) \
	X(cuDevicePrimaryCtxReset_v2, PFN_cuDevicePrimaryCtxReset_v11000) \
	X(cuCtxGetCurrent, PFN_cuCtxGetCurrent_v4000) \
	X(cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000) \
	X(cuCtxCreate_v2, PFN_cuCtxCreate_v3020) \
	X(cuCtxCreate_v3, PFN_cuCtxCreate_v11040) \
	X(cuCtxCreate_v4, PFN_cuCtxCreate_v12050) \
	X(cuCtxDestroy_v2, PFN_cuCtxDestroy_v4000) \
	X(cuCtxGetDevice, PFN_cuCtxGetDevice_v2000) \
	X(cuCtxGetDevice_v2, PFN_cuCtxGetDevice_v13000) \
	X(cuCtxSynchronize, PFN_cuCtxSynchronize_v2000) \
	X(cuCtxSynchronize_v2, PFN_cuCtxSynchronize_v13000) \
	X(cuMemGetInfo_v2, PFN_cuMemGetInfo_v3020) \
	X(cuGetErrorString, PFN_cuGetErrorString_v6000) \
	X(cuGetErrorName, PFN_cuGetErrorName_v6000) \
	X(cuPointerGetAttribute, PFN_cuPointerGetAttribute_v4000) \
	X(cuMemGetAddressRange_v2, PFN_cuMemGetAddressRange_v3020) \
	X(cuMemAlloc_v2, PFN_cuMemAlloc_v3020) \
	X(cuMemAllocPitch_v2, PFN_cuMemAllocPitch_v3020) \
	X(cuMemFree_v2, PFN_cuMemFree_v3020) \
	X(cuMemAllocHost_v2, PFN_cuMemAllocHost_v3020) \
	X(cuMemHostAlloc, PFN_cuMemHostAlloc_v2020) \
	X(cuMemFreeHost, PFN_cuMemFreeHost_v2000) \
	X(cuMemHostRegister_v2, PFN_cuMemHostRegister_v6050) \
	X(cuMemHostUnregister, PFN_cuMemHostUnregister_v4000) \
	X(cuMemAllocManaged, PFN_cuMemAllocManaged_v6000) \
	X(cuMemAllocAsync, PFN_cuMemAllocAsync_v11020) \
	X(cuMemAllocAsync_ptsz, PFN_cuMemAllocAsync_v11020_ptsz) \
	X(cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020) \
	X(cuMemAllocFromPoolAsync_ptsz, PFN_cuMemAllocFromPoolAsync_v11020_ptsz) \
	X(cuMemFreeAsync, PFN_cuMemFreeAsync_v11020) \
	X(cuMemFreeAsync_ptsz, PFN_cuMemFreeAsync_v11020_ptsz) \
	X(cuMemPoolCreate, PFN_cuMemPoolCreate_v11020) \
	X(cuMemPoolDestroy, PFN_cuMemPoolDestroy_v11020) \
	X(cuMemPoolTrimTo, PFN_cuMemPoolTrimTo_v11020) \
	X(cuMemPoolSetAttribute, PFN_cuMemPoolSetAttribute_v11020) \
	X(cuMemPoolGetAttribute, PFN_cuMemPoolGetAttribute_v11020) \
	X(cuDeviceGetDefaultMemPool, PFN_cuDeviceGetDefaultMemPool_v11020) \
	X(cuDeviceGetMemPool, PFN_cuDeviceGetMemPool_v11020) \
	X(cuMemcpyHtoD_v2, PFN_cuMemcpyHtoD_v3020) \
	X(cuMemcpyHtoD_v2_ptds, PFN_cuMemcpyHtoD_v7000_ptds) \
	X(cuMemcpyDtoH_v2, PFN_cuMemcpyDtoH_v3020) \
	X(cuMemcpyDtoH_v2_ptds, PFN_cuMemcpyDtoH_v7000_ptds) \
	X(cuMemcpy, PFN_cuMemcpy_v4000) \
	X(cuMemcpy_ptds, PFN_cuMemcpy_v7000_ptds) \
	X(cuMemsetD8_v2, PFN_cuMemsetD8_v3020) \
	X(cuMemsetD8_v2_ptds, PFN_cuMemsetD8_v7000_ptds) \
	X(cuMemGetAllocationGranularity, PFN_cuMemGetAllocationGranularity_v10020) \
	X(cuMemAddressReserve, PFN_cuMemAddressReserve_v10020) \
	X(cuMemAddressFree, PFN_cuMemAddressFree_v10020) \
	X(cuMemCreate, PFN_cuMemCreate_v10020) \
	X(cuMemRelease, PFN_cuMemRelease_v10020) \
	X(cuMemMap, PFN_cuMemMap_v10020) \
	X(cuMemUnmap, PFN_cuMemUnmap_v10020) \
	X(cuMemSetAccess, PFN_cuMemSetAccess_v10020) \
	X(cuStreamCreate, PFN_cuStreamCreate_v2000) \
	X(cuStreamCreateWithPriority, PFN_cuStreamCreateWithPriority_v5050) \
	X(cuStreamDestroy_v2, PFN_cuStreamDestroy_v4000) \
	X(cuStreamSynchronize, PFN_cuStreamSynchronize_v2000) \
	X(cuStreamSynchronize_ptsz, PFN_cuStreamSynchronize_v7000_ptsz) \
	X(cuStreamQuery, PFN_cuStreamQuery_v2000) \
	X(cuStreamQuery_ptsz, PFN_cuStreamQuery_v7000_ptsz) \
	X(cuGetProcAddress, PFN_cuGetProcAddress_v11030) \
	X(cuGetProcAddress_v2, PFN_cuGetProcAddress_v12000)

#define X(name, type) type name;
static struct { DRIVER_FUNCS(X) } d;
#undef X

static void *g_libcuda;

static void load_driver(void)
{
	g_libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	CHECK(g_libcuda != NULL);
	if (!g_libcuda) {
		fprintf(stderr, "fake_selftest: %s\n", dlerror());
		exit(1);
	}
#define X(name, type) \
	*(void **)&d.name = dlsym(g_libcuda, #name); \
	check(d.name != NULL, "dlsym(libcuda.so.1, \"" #name "\")", __LINE__, NULL);
	DRIVER_FUNCS(X)
#undef X
	if (g_fail)
		exit(1);
}

/* ---- helpers ------------------------------------------------------------------- */
static int g_ndev;
static size_t g_cap;

/* The selftest's own reading of CUMTRACE_FAKE_CAPACITY and _DEVICES: digits
 * and an optional K/M/G/T (binary) suffix; anything else means the default,
 * as in the driver. */
static unsigned long long env_size(const char *name, unsigned long long def)
{
	const char *s = getenv(name);
	const char *units = "KMGT";
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return def;
	v = strtoull(s, &end, 10);
	for (int i = 0; *end && units[i]; i++) {
		if ((*end | 0x20) == (units[i] | 0x20)) {
			v <<= 10 * (i + 1);
			end += end[1] == 'i' ? 2 : 1;
			break;
		}
	}
	if (*end == 'B' || *end == 'b')
		end++;
	return *end ? def : v;
}

static size_t mem_free(void)
{
	size_t f = 0, t = 0;

	OK(cudaMemGetInfo(&f, &t));
	return f;
}

static size_t pool_attr(cudaMemPool_t pool, enum cudaMemPoolAttr attr)
{
	cuuint64_t v = ~0ull;

	OK(cudaMemPoolGetAttribute(pool, attr, &v));
	return (size_t)v;
}

static int ptr_dev(const void *p)
{
	int dev = -1;

	CUOK(d.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)(uintptr_t)p));
	return dev;
}

static size_t ptr_size(const void *p)
{
	size_t size = 0;

	CUOK(d.cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)(uintptr_t)p));
	return size;
}

static CUdeviceptr dp(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

/* ---- sections ------------------------------------------------------------------- */

/* Runs before the test opens libcuda itself. */
static void test_runtime_basics(void)
{
	int v = 0, n = -1, dev = -1;

	errno = 4242;
	OK(cudaGetDeviceCount(&n)); /* first call: loads and initialises the driver */
	CHECK(errno == 4242);
	CHECK(n == g_ndev);
	OK(cudaRuntimeGetVersion(&v));
	CHECK(v == 13000);
	OK(cudaDriverGetVersion(&v));
	CHECK(v == 13000);
	OK(cudaGetDevice(&dev));
	CHECK(dev == 0);
	RT(cudaSetDevice(g_ndev), cudaErrorInvalidDevice);
	RT(cudaPeekAtLastError(), cudaErrorInvalidDevice);
	RT(cudaGetLastError(), cudaErrorInvalidDevice);
	RT(cudaGetLastError(), cudaSuccess);
	CHECK(!strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory"));
	CHECK(!strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation"));
	CHECK(!strcmp(cudaGetErrorName(cudaErrorInvalidDevicePointer), "cudaErrorInvalidDevicePointer"));
	CHECK(!strcmp(cudaGetErrorString((cudaError_t)12345), "unrecognized error code"));
	CHECK(CUDA_ERROR_OUT_OF_MEMORY == (int)cudaErrorMemoryAllocation);
}

static void test_driver_basics(void)
{
	int v = 0;
	const char *s = NULL;

	CUOK(d.cuInit(0));
	CU(d.cuInit(1), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuDriverGetVersion(&v));
	CHECK(v == 13000);
	CUOK(d.cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
	CHECK(s && !strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY"));
	CUOK(d.cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
	CHECK(s && !strcmp(s, "invalid argument"));
	CU(d.cuGetErrorString((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	CHECK(s == NULL);
}

static void test_devices(void)
{
	CUdevice dev = -1;
	char name[64] = "";
	int n = 0;
	size_t total = 0;

	CUOK(d.cuDeviceGetCount(&n));
	CHECK(n == g_ndev);
	CUOK(d.cuDeviceGet(&dev, g_ndev - 1));
	CHECK(dev == g_ndev - 1);
	CU(d.cuDeviceGet(&dev, g_ndev), CUDA_ERROR_INVALID_DEVICE);
	CUOK(d.cuDeviceGetName(name, sizeof(name), 0));
	CHECK(name[0] != '\0');
	CU(d.cuDeviceGetName(name, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuDeviceTotalMem_v2(&total, 0));
	CHECK(total == g_cap);
}

static void test_malloc(void)
{
	size_t f0 = mem_free(), f = 0, t = 0;
	char buf[4096], back[4096];
	void *p = NULL, *q = (void *)1;
	CUdeviceptr base = 0;
	size_t range = 0;
	unsigned long long id1 = 0, id2 = 0;

	OK(cudaMemGetInfo(&f, &t));
	CHECK(t == g_cap);
	CHECK(f == t); /* nothing allocated yet */
	OK(cudaMalloc(&p, MiB));
	CHECK(p != NULL && (uintptr_t)p % 512 == 0);
	CHECK(mem_free() == f0 - MiB);
	CHECK(ptr_dev(p) == 0);
	CHECK(ptr_size(p) == MiB);
	CUOK(d.cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp(p) + 100));
	CHECK(base == dp(p));
	CUOK(d.cuMemGetAddressRange_v2(&base, &range, dp(p) + 4096));
	CHECK(base == dp(p) && range == MiB);

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)i;
	OK(cudaMemcpy(p, buf, sizeof(buf), cudaMemcpyHostToDevice));
	OK(cudaMemcpy(back, p, sizeof(back), cudaMemcpyDeviceToHost));
	CHECK(!memcmp(buf, back, sizeof(buf)));
	OK(cudaMemset(p, 0x5a, 100));
	OK(cudaMemcpy_ptds(back, p, 100, cudaMemcpyDefault));
	CHECK(back[0] == 0x5a && back[99] == 0x5a);
	OK(cudaMemset_ptds((char *)p + 100, 1, 1));
	CHECK(((char *)p)[100] == 1);
	OK(cudaMemcpy((char *)p + 4096, p, 4096, cudaMemcpyDeviceToDevice));
	CHECK(!memcmp((char *)p + 4096, p, 4096));
	RT(cudaMemcpy(back, p, 10, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
	RT(cudaMemcpy(back, (char *)p + MiB - 10, 20, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
	RT(cudaMemset((char *)p + MiB, 0, 1), cudaErrorInvalidValue);

	OK(cudaMalloc(&q, 0));
	CHECK(q == NULL);
	RT(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
	RT(cudaFree((char *)p + 512), cudaErrorInvalidValue);
	OK(cudaFree(NULL));
	OK(cudaFree(p));
	CHECK(mem_free() == f0);
	RT(cudaFree(p), cudaErrorInvalidValue);
	RT(cudaFree(buf), cudaErrorInvalidValue);
	RT(cudaMemcpy(back, p, 10, cudaMemcpyDeviceToHost), cudaErrorInvalidValue); /* freed */
	RT(cudaGetLastError(), cudaErrorInvalidValue);

	/* Buffer ids are unique, even for a reused address. */
	OK(cudaMalloc(&p, 1000));
	CUOK(d.cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, dp(p)));
	OK(cudaFree(p));
	OK(cudaMalloc(&q, 1000));
	CUOK(d.cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, dp(q)));
	CHECK(id1 != id2);
	CHECK(mem_free() == f0 - 1024); /* rounded to 512 */
	OK(cudaFree(q));
	CU(d.cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp(q)), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemGetAddressRange_v2(&base, &range, dp(q)), CUDA_ERROR_NOT_FOUND);
}

static void test_oom(void)
{
	size_t f0 = mem_free(), big = (f0 - MiB) / 512 * 512, rest;
	void *a = NULL, *b = NULL, *p = (void *)1;
	CUdeviceptr dptr = 0;

	RT(cudaMalloc(&p, g_cap + 1), cudaErrorMemoryAllocation);
	CHECK(p == (void *)1);
	RT(cudaGetLastError(), cudaErrorMemoryAllocation);
	RT(cudaMalloc(&p, SIZE_MAX), cudaErrorMemoryAllocation);
	CHECK(mem_free() == f0);
	OK(cudaMalloc(&a, big));
	rest = f0 - big;
	CHECK(mem_free() == rest);
	RT(cudaMalloc(&p, rest + 1), cudaErrorMemoryAllocation);
	CU(d.cuMemAlloc_v2(&dptr, rest + 1), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(mem_free() == rest);
	OK(cudaMalloc(&b, rest / 512 * 512));
	CHECK(mem_free() < 512);
	RT(cudaMallocManaged(&p, 1, cudaMemAttachGlobal), cudaErrorMemoryAllocation);
	RT(cudaMallocAsync(&p, 1, 0), cudaErrorMemoryAllocation);
	OK(cudaFree(b));
	OK(cudaFree(a));
	CHECK(mem_free() == f0);
}

static void test_host(void)
{
	size_t f0 = mem_free();
	void *h = NULL, *h2 = NULL;
	char *buf = malloc(3 * 4096);
	unsigned type = 0;
	void *hp = NULL;

	OK(cudaMallocHost(&h, 10000));
	CHECK(h != NULL);
	memset(h, 1, 10000);
	CHECK(mem_free() == f0); /* pinned host memory is not device memory */
	CUOK(d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp(h)));
	CHECK(type == CU_MEMORYTYPE_HOST);
	CUOK(d.cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, dp(h) + 8));
	CHECK(hp == (char *)h + 8);
	OK(cudaHostAlloc(&h2, 100, cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined));
	RT(cudaHostAlloc(&hp, 100, 0x80), cudaErrorInvalidValue);
	RT(cudaFreeHost(buf), cudaErrorInvalidValue);
	RT(cudaFreeHost((char *)h + 16), cudaErrorInvalidValue);
	OK(cudaFreeHost(h2));
	OK(cudaFreeHost(h));
	RT(cudaFreeHost(h), cudaErrorInvalidValue);
	OK(cudaFreeHost(NULL));
	OK(cudaMallocHost(&hp, 0));
	CHECK(hp == NULL);

	OK(cudaHostRegister(buf, 3 * 4096, cudaHostRegisterDefault));
	RT(cudaHostRegister(buf + 4096, 100, cudaHostRegisterDefault), cudaErrorHostMemoryAlreadyRegistered);
	RT(cudaHostRegister(buf, 100, 0x100), cudaErrorInvalidValue);
	CUOK(d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp(buf) + 5000));
	CHECK(type == CU_MEMORYTYPE_HOST);
	OK(cudaMemcpy(buf, "abc", 4, cudaMemcpyHostToDevice)); /* registered memory is device-visible */
	CHECK(!strcmp(buf, "abc"));
	RT(cudaHostUnregister(buf + 1), cudaErrorHostMemoryNotRegistered);
	OK(cudaHostUnregister(buf));
	RT(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
	CU(d.cuMemHostUnregister(NULL), CUDA_ERROR_INVALID_VALUE);

	/* The same through the driver. */
	CUOK(d.cuMemAllocHost_v2(&h, 64));
	CUOK(d.cuMemFreeHost(h));
	CUOK(d.cuMemHostAlloc(&h, 64, CU_MEMHOSTALLOC_DEVICEMAP));
	CUOK(d.cuMemFreeHost(h));
	CUOK(d.cuMemHostRegister_v2(buf, 4096, CU_MEMHOSTREGISTER_PORTABLE));
	CUOK(d.cuMemHostUnregister(buf));
	CHECK(mem_free() == f0);
	free(buf);
}

static void test_managed_and_pitch(void)
{
	size_t f0 = mem_free(), pitch = 0;
	void *m = NULL, *p = NULL;
	unsigned managed = 0;
	struct cudaPitchedPtr pp = { 0 };
	CUdeviceptr dptr = 0;

	OK(cudaMallocManaged(&m, 3 * MiB, cudaMemAttachGlobal));
	CHECK(mem_free() == f0 - 3 * MiB);
	memset(m, 7, 3 * MiB);
	CUOK(d.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dp(m)));
	CHECK(managed == 1);
	RT(cudaMallocManaged(&p, 16, 4), cudaErrorInvalidValue);
	OK(cudaFree(m));
	CUOK(d.cuMemAllocManaged(&dptr, 100, CU_MEM_ATTACH_HOST));
	CUOK(d.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dptr));
	CHECK(managed == 1);
	CUOK(d.cuMemFree_v2(dptr));

	OK(cudaMallocPitch(&p, &pitch, 1000, 10));
	CHECK(pitch == 1024);
	CHECK(mem_free() == f0 - 10 * 1024);
	OK(cudaFree(p));
	OK(cudaMalloc3D(&pp, (struct cudaExtent){ 100, 4, 3 }));
	CHECK(pp.ptr != NULL && pp.pitch == 512 && pp.xsize == 100 && pp.ysize == 4);
	CHECK(mem_free() == f0 - 12 * 512);
	OK(cudaFree(pp.ptr));
	CU(d.cuMemAllocPitch_v2(&dptr, &pitch, 100, 2, 3), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuMemAllocPitch_v2(&dptr, &pitch, 513, 2, 16));
	CHECK(pitch == 1024);
	CUOK(d.cuMemFree_v2(dptr));
	CHECK(mem_free() == f0);
}

static void test_streams(void)
{
	cudaStream_t s = NULL, s2 = NULL;
	CUstream cs = NULL;

	OK(cudaStreamCreate(&s));
	OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	RT(cudaStreamCreateWithFlags(&s2, 0x10), cudaErrorInvalidValue);
	OK(cudaStreamQuery(s));
	OK(cudaStreamQuery_ptsz(s2));
	OK(cudaStreamSynchronize(s));
	OK(cudaStreamSynchronize_ptsz(s2));
	OK(cudaStreamSynchronize(0));
	OK(cudaStreamSynchronize(cudaStreamLegacy));
	OK(cudaStreamSynchronize(cudaStreamPerThread));
	OK(cudaStreamDestroy(s));
	OK(cudaStreamDestroy(s2));
	RT(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
	RT(cudaStreamDestroy(0), cudaErrorInvalidResourceHandle);
	RT(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
	OK(cudaStreamCreateWithPriority(&s, cudaStreamDefault, -100));
	OK(cudaStreamDestroy(s));
	OK(cudaDeviceSynchronize());

	CUOK(d.cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
	CUOK(d.cuStreamQuery(cs));
	CUOK(d.cuStreamQuery_ptsz(NULL));
	CUOK(d.cuStreamSynchronize(cs));
	CUOK(d.cuStreamSynchronize_ptsz(CU_STREAM_PER_THREAD));
	CUOK(d.cuStreamDestroy_v2(cs));
	CUOK(d.cuStreamCreateWithPriority(&cs, 0, 5));
	CUOK(d.cuStreamDestroy_v2(cs));
	CU(d.cuStreamCreate(&cs, 4), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuCtxSynchronize());
	CUOK(d.cuCtxSynchronize_v2(NULL));
}

/* Stream-ordered frees hold memory until a synchronisation observes them. */
static void test_deferred_frees(void)
{
	size_t f0 = mem_free();
	cudaStream_t s = NULL, nb = NULL;
	void *p = NULL, *q = NULL;
	CUdeviceptr dptr = 0;

	OK(cudaStreamCreate(&s));
	OK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));

	OK(cudaMallocAsync(&p, MiB, s));
	CHECK(mem_free() == f0 - MiB);
	CHECK(ptr_dev(p) == 0);
	OK(cudaFreeAsync(p, s));
	CHECK(mem_free() == f0 - MiB); /* pending */
	RT(cudaFreeAsync(p, s), cudaErrorInvalidValue);
	OK(cudaStreamSynchronize(s));
	CHECK(mem_free() == f0);

	/* The default stream, completed by a device synchronisation. */
	OK(cudaMallocAsync(&p, MiB, 0));
	OK(cudaFreeAsync(p, 0));
	CHECK(mem_free() == f0 - MiB);
	OK(cudaDeviceSynchronize());
	CHECK(mem_free() == f0);

	/* The legacy default stream waits for blocking streams only. */
	OK(cudaMallocAsync(&p, MiB, s));
	OK(cudaMallocAsync(&q, MiB, nb));
	OK(cudaFreeAsync(p, s));
	OK(cudaFreeAsync(q, nb));
	CHECK(mem_free() == f0 - 2 * MiB);
	OK(cudaStreamSynchronize_ptsz(0)); /* per-thread default stream: waits for neither */
	CHECK(mem_free() == f0 - 2 * MiB);
	OK(cudaStreamSynchronize(0));
	CHECK(mem_free() == f0 - MiB);
	OK(cudaStreamQuery(nb)); /* a query that finds the stream idle completes it */
	CHECK(mem_free() == f0);

	/* Destroying the stream completes its frees; cudaFree frees at once. */
	OK(cudaMallocAsync_ptsz(&p, MiB, nb));
	OK(cudaFreeAsync_ptsz(p, nb));
	CHECK(mem_free() == f0 - MiB);
	OK(cudaStreamDestroy(nb));
	CHECK(mem_free() == f0);
	OK(cudaMallocAsync(&p, MiB, s));
	OK(cudaFree(p));
	CHECK(mem_free() == f0);

	/* A plain allocation may be freed on a stream, too. */
	OK(cudaMalloc(&p, MiB));
	OK(cudaFreeAsync(p, s));
	CHECK(mem_free() == f0 - MiB);
	OK(cudaStreamSynchronize(s));
	CHECK(mem_free() == f0);

	/* The driver entry points, per-thread variants included. */
	CUOK(d.cuMemAllocAsync(&dptr, MiB, s));
	CUOK(d.cuMemFreeAsync(dptr, s));
	CUOK(d.cuStreamSynchronize(s));
	CUOK(d.cuMemAllocAsync_ptsz(&dptr, MiB, NULL));
	CUOK(d.cuMemFreeAsync_ptsz(dptr, NULL));
	CHECK(mem_free() == f0 - MiB);
	CUOK(d.cuStreamSynchronize_ptsz(NULL));
	CHECK(mem_free() == f0);
	CU(d.cuMemAllocAsync(&dptr, 0, s), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemAllocAsync(&dptr, 16, (CUstream)(uintptr_t)0x1234), CUDA_ERROR_INVALID_HANDLE);
	OK(cudaStreamDestroy(s));
}

static void test_pools(void)
{
	size_t f0 = mem_free();
	struct cudaMemPoolProps props = { 0 };
	cudaMemPool_t pool = NULL, def = NULL;
	CUmemoryPool cdef = NULL, handle = NULL;
	cudaStream_t s = NULL;
	void *a = NULL, *b = NULL, *c = NULL;
	cuuint64_t v;
	size_t half = g_cap / 2 / 512 * 512, big = (half + half / 2 + 511) / 512 * 512;

	OK(cudaStreamCreate(&s));
	OK(cudaDeviceGetDefaultMemPool(&def, 0));
	CUOK(d.cuDeviceGetDefaultMemPool(&cdef, 0));
	CUOK(d.cuDeviceGetMemPool(&handle, 0));
	CHECK(def != NULL && def == cdef && def == handle);
	RT(cudaMemPoolDestroy(def), cudaErrorInvalidValue);
	RT(cudaDeviceGetDefaultMemPool(&def, g_ndev), cudaErrorInvalidDevice);

	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = g_ndev;
	RT(cudaMemPoolCreate(&pool, &props), cudaErrorInvalidDevice);
	props.location.id = 0;
	OK(cudaMemPoolCreate(&pool, &props));

	/* An explicit pool keeps freed memory, and reuses it, until trimmed. */
	OK(cudaMallocFromPoolAsync(&a, MiB, pool, s));
	CUOK(d.cuPointerGetAttribute(&handle, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, dp(a)));
	CHECK(handle == pool);
	OK(cudaFreeAsync(a, s));
	OK(cudaStreamSynchronize(s));
	CHECK(mem_free() == f0 - MiB);
	CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == MiB);
	CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0);
	OK(cudaMallocFromPoolAsync(&b, MiB, pool, s));
	CHECK(b == a);
	CHECK(mem_free() == f0 - MiB);
	CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemCurrent) == MiB);
	CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemHigh) == MiB);
	OK(cudaFreeAsync(b, s));
	OK(cudaMemPoolTrimTo(pool, 0)); /* the free is still pending: nothing to release */
	CHECK(mem_free() == f0 - MiB);
	OK(cudaStreamSynchronize(s));
	OK(cudaMemPoolTrimTo(pool, 0));
	CHECK(mem_free() == f0);
	CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 0);

	/* Trimming keeps at least what it is told to keep. */
	OK(cudaMallocFromPoolAsync(&a, MiB, pool, s));
	OK(cudaMallocFromPoolAsync_ptsz(&b, MiB, pool, s));
	OK(cudaFreeAsync(a, s));
	OK(cudaFreeAsync(b, s));
	OK(cudaStreamSynchronize(s));
	CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == 2 * MiB);
	OK(cudaMemPoolTrimTo(pool, MiB));
	CHECK(pool_attr(pool, cudaMemPoolAttrReservedMemCurrent) == MiB);
	CHECK(mem_free() == f0 - MiB);
	OK(cudaMemPoolTrimTo(pool, 0));
	CHECK(mem_free() == f0);

	/* A release threshold of 0 gives memory back at each synchronisation. */
	v = 0;
	OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &v));
	CHECK(pool_attr(pool, cudaMemPoolAttrReleaseThreshold) == 0);
	OK(cudaMallocFromPoolAsync(&a, MiB, pool, s));
	OK(cudaFreeAsync(a, s));
	CHECK(mem_free() == f0 - MiB);
	OK(cudaStreamSynchronize(s));
	CHECK(mem_free() == f0);
	v = UINT64_MAX;
	OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &v));
	v = 0;
	OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &v));
	CHECK(pool_attr(pool, cudaMemPoolAttrUsedMemHigh) == 0);
	RT(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v), cudaErrorInvalidValue);

	/* On exhaustion a pool releases its own cache and tries again. */
	OK(cudaMallocFromPoolAsync(&a, half, pool, s));
	OK(cudaFreeAsync(a, s));
	OK(cudaStreamSynchronize(s));
	CHECK(mem_free() == f0 - half);
	OK(cudaMallocFromPoolAsync(&b, big, pool, s));
	CHECK(mem_free() == f0 - big);
	OK(cudaFreeAsync(b, s));
	RT(cudaMallocFromPoolAsync(&b, g_cap + 1, pool, s), cudaErrorMemoryAllocation);
	OK(cudaStreamSynchronize(s));
	OK(cudaMemPoolTrimTo(pool, 0));
	CHECK(mem_free() == f0);

	/* Destroyed with an allocation outstanding, the pool lives until it is freed. */
	OK(cudaMallocFromPoolAsync(&c, MiB, pool, s));
	OK(cudaMemPoolDestroy(pool));
	RT(cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
	RT(cudaMallocFromPoolAsync(&a, MiB, pool, s), cudaErrorInvalidValue);
	CHECK(mem_free() == f0 - MiB);
	OK(cudaFree(c));
	CHECK(mem_free() == f0);
	RT(cudaMallocFromPoolAsync(&a, MiB, NULL, s), cudaErrorInvalidValue);

	/* The same through the driver. */
	{
		CUmemPoolProps cp = { 0 };
		CUdeviceptr x = 0;

		cp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		cp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		CUOK(d.cuMemPoolCreate(&handle, &cp));
		CUOK(d.cuMemAllocFromPoolAsync(&x, MiB, handle, s));
		CUOK(d.cuMemFreeAsync(x, s));
		CUOK(d.cuMemAllocFromPoolAsync_ptsz(&x, MiB, handle, s)); /* another MiB: the first is pending */
		CUOK(d.cuMemFreeAsync(x, s));
		CUOK(d.cuStreamSynchronize(s));
		CUOK(d.cuMemPoolGetAttribute(handle, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v));
		CHECK(v == 2 * MiB);
		v = 0;
		CUOK(d.cuMemPoolSetAttribute(handle, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
		CUOK(d.cuMemPoolTrimTo(handle, 0));
		CUOK(d.cuMemPoolDestroy(handle));
		cp.location.type = CU_MEM_LOCATION_TYPE_HOST;
		CU(d.cuMemPoolCreate(&handle, &cp), CUDA_ERROR_NOT_SUPPORTED);
	}
	CHECK(mem_free() == f0);
	OK(cudaStreamDestroy(s));
}

static void test_vmm(void)
{
	size_t f0 = mem_free(), gran = 0;
	CUmemAllocationProp prop = { 0 };
	CUmemAccessDesc acc = { 0 };
	CUdeviceptr va = 0, va2 = 0, hinted = 0;
	CUmemGenericAllocationHandle h = 0, h2 = 0;
	char back[8];
	int dev = -1;
	size_t range = 0;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CUOK(d.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CHECK(gran == GRAN);
	CUOK(d.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	CHECK(gran == GRAN);
	prop.location.id = g_ndev;
	CU(d.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
	   CUDA_ERROR_INVALID_DEVICE);
	CU(d.cuMemCreate(&h, GRAN, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
	prop.location.id = 0;

	/* Reservations: granularity multiples, aligned, hints honoured when free. */
	CU(d.cuMemAddressReserve(&va, GRAN + 4096, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemAddressReserve(&va, GRAN, 3 * GRAN, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuMemAddressReserve(&va, 16 * MiB, 0, 0, 0));
	CHECK(va != 0 && va % GRAN == 0);
	CUOK(d.cuMemAddressReserve(&va2, 4 * MiB, 8 * MiB, 0, 0));
	CHECK(va2 % (8 * MiB) == 0);
	CUOK(d.cuMemAddressFree(va2, 4 * MiB));
	CU(d.cuMemAddressFree(va2, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuMemAddressReserve(&hinted, 4 * MiB, 0, va2, 0));
	CHECK(hinted == va2);
	CUOK(d.cuMemAddressFree(hinted, 4 * MiB));

	/* Physical memory counts against the capacity. */
	CU(d.cuMemCreate(&h, MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemCreate(&h, (g_cap / GRAN + 1) * GRAN, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
	CUOK(d.cuMemCreate(&h, 4 * MiB, &prop, 0));
	CHECK(mem_free() == f0 - 4 * MiB);

	/* Mappings: inside a reservation, not overlapping, inaccessible until cuMemSetAccess. */
	CU(d.cuMemMap(va + 14 * MiB, 4 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemMap(va, 4 * MiB, 2 * MiB, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemMap(va, 4 * MiB, 0, h, 1), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemMap(va, 4 * MiB, 0, h + 8, 0), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuMemMap(va, 4 * MiB, 0, h, 0));
	CU(d.cuMemMap(va + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuMemcpyHtoD_v2(va, "x", 1), CUDA_ERROR_INVALID_VALUE);
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = 0;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CU(d.cuMemSetAccess(va, 8 * MiB, &acc, 1), CUDA_ERROR_INVALID_VALUE); /* not all mapped */
	CUOK(d.cuMemSetAccess(va, 4 * MiB, &acc, 1));
	CUOK(d.cuMemcpyHtoD_v2(va + 100, "hello", 6));
	CHECK(!strcmp((char *)(uintptr_t)va + 100, "hello"));
	CUOK(d.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + MiB));
	CHECK(dev == 0);
	CUOK(d.cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, va + MiB));
	CHECK(range == 4 * MiB);

	/* A second mapping of the same handle aliases the first. */
	CUOK(d.cuMemMap(va + 4 * MiB, 4 * MiB, 0, h, 0));
	CUOK(d.cuMemSetAccess(va + 4 * MiB, 4 * MiB, &acc, 1));
	CUOK(d.cuMemcpyDtoH_v2(back, va + 4 * MiB + 100, 6));
	CHECK(!strcmp(back, "hello"));
	CUOK(d.cuMemcpyHtoD_v2(va + 4 * MiB - 3, "abcdef", 6)); /* across adjacent mappings */
	CUOK(d.cuMemcpy(va + 3 * MiB, va + 4 * MiB - 3, 6));
	CHECK(!memcmp((char *)(uintptr_t)va + 3 * MiB, "abcdef", 6));
	CUOK(d.cuMemsetD8_v2(va, 0, 8 * MiB));

	/* Released while mapped, the memory stays until the last unmap. */
	CUOK(d.cuMemRelease(h));
	CU(d.cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	CHECK(mem_free() == f0 - 4 * MiB);
	CU(d.cuMemUnmap(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* part of a mapping */
	CU(d.cuMemAddressFree(va, 16 * MiB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	CUOK(d.cuMemUnmap(va, 4 * MiB));
	CHECK(mem_free() == f0 - 4 * MiB);
	CU(d.cuMemcpyHtoD_v2(va, "x", 1), CUDA_ERROR_INVALID_VALUE);
	CUOK(d.cuMemUnmap(va + 4 * MiB, 4 * MiB));
	CHECK(mem_free() == f0);

	/* Two mappings unmapped in one call. */
	CUOK(d.cuMemCreate(&h, 2 * MiB, &prop, 0));
	CUOK(d.cuMemCreate(&h2, 2 * MiB, &prop, 0));
	CUOK(d.cuMemMap(va, 2 * MiB, 0, h, 0));
	CUOK(d.cuMemMap(va + 2 * MiB, 2 * MiB, 0, h2, 0));
	CUOK(d.cuMemSetAccess(va, 4 * MiB, &acc, 1));
	memset((void *)(uintptr_t)va, 1, 4 * MiB); /* plain host stores */
	CUOK(d.cuMemUnmap(va, 4 * MiB));
	CUOK(d.cuMemRelease(h));
	CUOK(d.cuMemRelease(h2));
	CHECK(mem_free() == f0);
	CUOK(d.cuMemAddressFree(va, 16 * MiB));
}

static void test_contexts(void)
{
	CUcontext cur = NULL, pc = NULL, nc = NULL, owner = NULL, c2 = NULL;
	CUdevice dev = -1;
	CUdeviceptr x = 0;
	size_t f0 = mem_free(), f = 0, t = 0;
	void *p = NULL;

	CUOK(d.cuCtxGetCurrent(&cur));
	CHECK(cur != NULL);
	CUOK(d.cuDevicePrimaryCtxRetain(&pc, 0));
	CHECK(pc == cur);
	CUOK(d.cuDevicePrimaryCtxRelease_v2(0));
	CU(d.cuDevicePrimaryCtxRelease_v2(g_ndev), CUDA_ERROR_INVALID_DEVICE);
	CU(d.cuDevicePrimaryCtxReset_v2(g_ndev), CUDA_ERROR_INVALID_DEVICE);
	CUOK(d.cuCtxGetDevice(&dev));
	CHECK(dev == 0);

	/* A created context becomes current; the runtime follows it. */
	CUOK(d.cuCtxCreate_v4(&nc, NULL, 0, 0));
	CUOK(d.cuCtxGetCurrent(&cur));
	CHECK(cur == nc);
	CUOK(d.cuCtxGetDevice_v2(&dev, nc));
	CHECK(dev == 0);
	CUOK(d.cuMemAlloc_v2(&x, MiB));
	OK(cudaMalloc(&p, MiB));
	CUOK(d.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dp(p)));
	CHECK(owner == nc);
	CUOK(d.cuMemGetInfo_v2(&f, &t));
	CHECK(f == f0 - 2 * MiB);
	OK(cudaDeviceReset()); /* not the primary context: nothing to reset */
	CHECK(mem_free() == f0 - 2 * MiB);

	/* Destroying it frees what it owns. */
	CUOK(d.cuCtxDestroy_v2(nc));
	CUOK(d.cuCtxGetCurrent(&cur));
	CHECK(cur == NULL);
	CU(d.cuMemAlloc_v2(&x, 16), CUDA_ERROR_INVALID_CONTEXT);
	CHECK(mem_free() == f0); /* the runtime binds the primary context again */
	CU(d.cuCtxSetCurrent(nc), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	CU(d.cuCtxDestroy_v2(nc), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	CU(d.cuCtxDestroy_v2(pc), CUDA_ERROR_INVALID_CONTEXT);
	CU(d.cuCtxSetCurrent((CUcontext)(uintptr_t)0x1234), CUDA_ERROR_INVALID_CONTEXT);

	CUOK(d.cuCtxCreate_v2(&c2, 0, 0));
	CUOK(d.cuCtxDestroy_v2(c2));
	CUOK(d.cuCtxCreate_v3(&c2, NULL, 0, 0, g_ndev - 1));
	CUOK(d.cuCtxGetDevice(&dev));
	CHECK(dev == g_ndev - 1);
	CUOK(d.cuCtxDestroy_v2(c2));
	CU(d.cuCtxCreate_v4(&c2, NULL, 0, g_ndev), CUDA_ERROR_INVALID_DEVICE);
	CUOK(d.cuCtxSetCurrent(pc));
}

/* cudaDeviceReset frees what the primary context owns, but not
 * stream-ordered allocations. */
static void test_reset(void)
{
	size_t f0 = mem_free();
	void *p = NULL, *h = NULL, *m = NULL, *a = NULL;
	cudaStream_t s = NULL;

	OK(cudaMalloc(&p, MiB));
	OK(cudaMallocHost(&h, 100));
	OK(cudaMallocManaged(&m, MiB, cudaMemAttachGlobal));
	OK(cudaStreamCreate(&s));
	OK(cudaMallocAsync(&a, MiB, 0));
	CHECK(mem_free() == f0 - 3 * MiB);
	OK(cudaDeviceReset());
	CHECK(mem_free() == f0 - MiB);
	RT(cudaFree(p), cudaErrorInvalidValue);
	RT(cudaFree(m), cudaErrorInvalidValue);
	RT(cudaFreeHost(h), cudaErrorInvalidValue);
	RT(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
	OK(cudaFreeAsync(a, 0));
	OK(cudaDeviceSynchronize());
	CHECK(mem_free() == f0);
	OK(cudaMalloc(&p, MiB)); /* the device works after a reset */
	OK(cudaFree(p));
	RT(cudaGetLastError(), cudaErrorInvalidResourceHandle);
}

/* Random allocations and frees: no two live allocations overlap (each is
 * filled with its own byte and checked before it is freed), interior
 * pointers find their allocation, and the accounting is exact throughout. */
static void test_allocator_stress(void)
{
	enum { SLOTS = 512, OPS = 20000 };
	static void *p[SLOTS];
	static size_t len[SLOTS];
	size_t f0 = mem_free(), used = 0;
	unsigned seed = 12345;
	int bad = 0;

	for (int op = 0; op < OPS && !bad; op++) {
		int i;

		seed = seed * 1103515245u + 12345u;
		i = (int)((seed >> 8) % SLOTS);
		if (!p[i]) {
			size_t n = 1 + (seed >> 4) % (op % 97 ? 20000 : 3 * MiB);

			if (cudaMalloc(&p[i], n) != cudaSuccess) {
				bad = 1;
				break;
			}
			len[i] = n;
			used += (n + 511) / 512 * 512;
			memset(p[i], i & 0xff, n);
		} else {
			const unsigned char *c = p[i];
			CUdeviceptr base = 0;

			d.cuPointerGetAttribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dp(c) + len[i] / 2);
			bad |= base != dp(c);
			for (size_t k = 0; k < len[i]; k += 97)
				bad |= c[k] != (i & 0xff);
			bad |= c[len[i] - 1] != (i & 0xff);
			bad |= cudaFree(p[i]) != cudaSuccess;
			used -= (len[i] + 511) / 512 * 512;
			p[i] = NULL;
		}
		if (op % 1000 == 0)
			bad |= mem_free() != f0 - used;
	}
	CHECK(!bad);
	for (int i = 0; i < SLOTS; i++)
		if (p[i])
			OK(cudaFree(p[i]));
	CHECK(mem_free() == f0);
}

static void *other_thread(void *arg)
{
	int dev = -1;
	CUcontext c = (CUcontext)1;
	CUdeviceptr x = 0;

	(void)arg;
	CUOK(d.cuCtxGetCurrent(&c));
	CHECK(c == NULL); /* the driver's current context is per thread */
	CU(d.cuMemAlloc_v2(&x, 16), CUDA_ERROR_INVALID_CONTEXT);
	OK(cudaGetDevice(&dev));
	CHECK(dev == 0); /* so is the runtime's current device */
	return NULL;
}

static void test_devices_and_threads(void)
{
	size_t f0 = mem_free(), f1;
	pthread_t th;
	void *p = NULL;
	int dev = -1;

	if (g_ndev < 2)
		return;
	OK(cudaSetDevice(1));
	OK(cudaGetDevice(&dev));
	CHECK(dev == 1);
	f1 = mem_free();
	OK(cudaMalloc(&p, 2 * MiB));
	CHECK(ptr_dev(p) == 1);
	CHECK(mem_free() == f1 - 2 * MiB);
	CHECK(pthread_create(&th, NULL, other_thread, NULL) == 0);
	pthread_join(th, NULL);
	OK(cudaGetDevice(&dev));
	CHECK(dev == 1);
	OK(cudaSetDevice(0));
	CHECK(mem_free() == f0);
	OK(cudaFree(p)); /* unified addressing: any device's context frees it */
	OK(cudaSetDevice(1));
	CHECK(mem_free() == f1);
	OK(cudaSetDevice(0));
}

static void *stress_thread(void *arg)
{
	int bad = 0;
	cudaStream_t s = NULL;

	(void)arg;
	bad |= cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess;
	for (int i = 0; i < 300 && !bad; i++) {
		void *p = NULL, *q = NULL;

		bad |= cudaMalloc(&p, 4096 + (size_t)i) != cudaSuccess;
		bad |= cudaMemset(p, i, 4096) != cudaSuccess;
		bad |= cudaMallocAsync(&q, 512 * (size_t)(i + 1), s) != cudaSuccess;
		bad |= cudaFreeAsync(q, s) != cudaSuccess;
		bad |= cudaFree(p) != cudaSuccess;
		if (i % 16 == 0)
			bad |= cudaStreamSynchronize(s) != cudaSuccess;
	}
	bad |= cudaStreamDestroy(s) != cudaSuccess;
	CHECK(!bad);
	return NULL;
}

static void test_concurrency(void)
{
	size_t f0 = mem_free();
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, stress_thread, NULL) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(mem_free() == f0);
}

/* ---- entry points ---------------------------------------------------------------- */
struct proc_case {
	const char *symbol;
	int version;
	unsigned flags;
	const char *want;	/* exported name expected, NULL: none */
	CUresult rc;
	CUdriverProcAddressQueryResult status;
};

#define LEG CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PTS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define HIT(sym, ver, fl, want) { sym, ver, fl, want, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS }
#define MISS(sym, ver, fl, st) { sym, ver, fl, NULL, CUDA_ERROR_NOT_FOUND, st }
static const struct proc_case g_proc_cases[] = {
	HIT("cuInit", 13000, 0, "cuInit"),
	HIT("cuDriverGetVersion", 13000, LEG, "cuDriverGetVersion"),
	HIT("cuDeviceGet", 13000, LEG, "cuDeviceGet"),
	HIT("cuDeviceGetCount", 13000, LEG, "cuDeviceGetCount"),
	HIT("cuDeviceGetName", 13000, LEG, "cuDeviceGetName"),
	HIT("cuDeviceTotalMem", 13000, LEG, "cuDeviceTotalMem_v2"),
	HIT("cuDevicePrimaryCtxRetain", 13000, LEG, "cuDevicePrimaryCtxRetain"),
	HIT("cuDevicePrimaryCtxRelease", 13000, LEG, "cuDevicePrimaryCtxRelease_v2"),
	HIT("cuDevicePrimaryCtxReset", 13000, LEG, "cuDevicePrimaryCtxReset_v2"),
	HIT("cuCtxGetCurrent", 13000, LEG, "cuCtxGetCurrent"),
	HIT("cuCtxSetCurrent", 13000, LEG, "cuCtxSetCurrent"),
	HIT("cuCtxCreate", 13000, LEG, "cuCtxCreate_v4"),
	HIT("cuCtxCreate", 12000, LEG, "cuCtxCreate_v3"),
	HIT("cuCtxCreate", 3020, LEG, "cuCtxCreate_v2"),
	HIT("cuCtxDestroy", 13000, LEG, "cuCtxDestroy_v2"),
	HIT("cuCtxGetDevice", 12080, LEG, "cuCtxGetDevice"),
	HIT("cuCtxGetDevice", 13000, LEG, "cuCtxGetDevice_v2"),
	HIT("cuCtxSynchronize", 12000, LEG, "cuCtxSynchronize"),
	HIT("cuCtxSynchronize", 13000, LEG, "cuCtxSynchronize_v2"),
	HIT("cuMemGetInfo", 13000, LEG, "cuMemGetInfo_v2"),
	HIT("cuGetErrorString", 13000, LEG, "cuGetErrorString"),
	HIT("cuGetErrorName", 13000, LEG, "cuGetErrorName"),
	HIT("cuPointerGetAttribute", 13000, LEG, "cuPointerGetAttribute"),
	HIT("cuMemGetAddressRange", 13000, LEG, "cuMemGetAddressRange_v2"),
	HIT("cuMemAlloc", 13000, 0, "cuMemAlloc_v2"),
	HIT("cuMemAlloc", 3020, LEG, "cuMemAlloc_v2"),
	MISS("cuMemAlloc", 3010, LEG, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT),
	HIT("cuMemAllocPitch", 13000, LEG, "cuMemAllocPitch_v2"),
	HIT("cuMemFree", 13000, LEG, "cuMemFree_v2"),
	HIT("cuMemAllocHost", 13000, PTS, "cuMemAllocHost_v2"), /* no per-thread variant: legacy */
	HIT("cuMemHostAlloc", 13000, LEG, "cuMemHostAlloc"),
	HIT("cuMemFreeHost", 13000, LEG, "cuMemFreeHost"),
	HIT("cuMemHostRegister", 13000, LEG, "cuMemHostRegister_v2"),
	HIT("cuMemHostUnregister", 13000, LEG, "cuMemHostUnregister"),
	HIT("cuMemAllocManaged", 13000, LEG, "cuMemAllocManaged"),
	HIT("cuMemAllocAsync", 13000, LEG, "cuMemAllocAsync"),
	HIT("cuMemAllocAsync", 13000, PTS, "cuMemAllocAsync_ptsz"),
	MISS("cuMemAllocAsync", 11010, PTS, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT),
	HIT("cuMemAllocFromPoolAsync", 13000, LEG, "cuMemAllocFromPoolAsync"),
	HIT("cuMemAllocFromPoolAsync", 11020, PTS, "cuMemAllocFromPoolAsync_ptsz"),
	HIT("cuMemFreeAsync", 13000, 0, "cuMemFreeAsync"),
	HIT("cuMemFreeAsync", 13000, PTS, "cuMemFreeAsync_ptsz"),
	HIT("cuMemPoolCreate", 13000, LEG, "cuMemPoolCreate"),
	HIT("cuMemPoolDestroy", 13000, LEG, "cuMemPoolDestroy"),
	HIT("cuMemPoolTrimTo", 13000, LEG, "cuMemPoolTrimTo"),
	HIT("cuMemPoolSetAttribute", 13000, LEG, "cuMemPoolSetAttribute"),
	HIT("cuMemPoolGetAttribute", 13000, LEG, "cuMemPoolGetAttribute"),
	HIT("cuDeviceGetDefaultMemPool", 13000, LEG, "cuDeviceGetDefaultMemPool"),
	HIT("cuDeviceGetMemPool", 13000, LEG, "cuDeviceGetMemPool"),
	HIT("cuMemcpyHtoD", 13000, LEG, "cuMemcpyHtoD_v2"),
	HIT("cuMemcpyHtoD", 13000, PTS, "cuMemcpyHtoD_v2_ptds"),
	HIT("cuMemcpyHtoD", 6050, PTS, "cuMemcpyHtoD_v2"), /* before per-thread streams */
	HIT("cuMemcpyDtoH", 13000, LEG, "cuMemcpyDtoH_v2"),
	HIT("cuMemcpyDtoH", 13000, PTS, "cuMemcpyDtoH_v2_ptds"),
	HIT("cuMemcpy", 13000, LEG, "cuMemcpy"),
	HIT("cuMemcpy", 13000, PTS, "cuMemcpy_ptds"),
	HIT("cuMemsetD8", 13000, LEG, "cuMemsetD8_v2"),
	HIT("cuMemsetD8", 13000, PTS, "cuMemsetD8_v2_ptds"),
	HIT("cuMemGetAllocationGranularity", 13000, LEG, "cuMemGetAllocationGranularity"),
	HIT("cuMemAddressReserve", 13000, LEG, "cuMemAddressReserve"),
	HIT("cuMemAddressFree", 13000, LEG, "cuMemAddressFree"),
	HIT("cuMemCreate", 13000, LEG, "cuMemCreate"),
	HIT("cuMemRelease", 13000, LEG, "cuMemRelease"),
	HIT("cuMemMap", 13000, LEG, "cuMemMap"),
	HIT("cuMemUnmap", 13000, LEG, "cuMemUnmap"),
	HIT("cuMemSetAccess", 13000, LEG, "cuMemSetAccess"),
	HIT("cuStreamCreate", 13000, LEG, "cuStreamCreate"),
	HIT("cuStreamCreateWithPriority", 13000, LEG, "cuStreamCreateWithPriority"),
	HIT("cuStreamDestroy", 13000, LEG, "cuStreamDestroy_v2"),
	HIT("cuStreamSynchronize", 13000, LEG, "cuStreamSynchronize"),
	HIT("cuStreamSynchronize", 13000, PTS, "cuStreamSynchronize_ptsz"),
	HIT("cuStreamQuery", 13000, PTS, "cuStreamQuery_ptsz"),
	HIT("cuStreamQuery", 13000, LEG, "cuStreamQuery"),
	HIT("cuGetProcAddress", 13000, LEG, "cuGetProcAddress_v2"),
	HIT("cuGetProcAddress", 11030, LEG, "cuGetProcAddress"),
	MISS("cuMemAlloc_v2", 13000, LEG, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND),
	MISS("cuNoSuchFunction", 13000, LEG, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND),
};

static void test_get_proc_address(void)
{
	void *fn = (void *)1;
	CUdriverProcAddressQueryResult st;

	for (size_t i = 0; i < sizeof(g_proc_cases) / sizeof(g_proc_cases[0]); i++) {
		const struct proc_case *pc = &g_proc_cases[i];
		void *want = pc->want ? dlsym(g_libcuda, pc->want) : NULL;
		CUresult r;

		fn = (void *)1;
		st = (CUdriverProcAddressQueryResult)-1;
		r = d.cuGetProcAddress_v2(pc->symbol, &fn, pc->version, pc->flags, &st);
		if (r != pc->rc || st != pc->status || fn != want || (pc->want && !want))
			fprintf(stderr, "  cuGetProcAddress_v2(\"%s\", %d, %u): rc %d status %d\n", pc->symbol,
				pc->version, pc->flags, (int)r, (int)st);
		CHECK(r == pc->rc && st == pc->status && fn == want && (!pc->want || want));
	}
	CUOK(d.cuGetProcAddress("cuMemFree", &fn, 12000, 0));
	CHECK(fn == (void *)d.cuMemFree_v2);
	/* A version newer than the driver's is refused. */
	CU(d.cuGetProcAddress_v2("cuMemFree", &fn, 13010, 0, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuGetProcAddress_v2("cuMemFree", &fn, 13000, 4, NULL), CUDA_ERROR_INVALID_VALUE);
	CU(d.cuGetProcAddress_v2(NULL, &fn, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_driver_entry_points(void)
{
	void *fn = NULL;
	enum cudaDriverEntryPointQueryResult st = (enum cudaDriverEntryPointQueryResult)-1;
	PFN_cuMemGetInfo_v3020 get_info = NULL;
	size_t f = 0, t = 0;

	OK(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &st));
	CHECK(fn == (void *)d.cuMemAlloc_v2 && st == cudaDriverEntryPointSuccess);
	OK(cudaGetDriverEntryPoint("cuStreamSynchronize", &fn, cudaEnableDefault, NULL));
	CHECK(fn == (void *)d.cuStreamSynchronize);
	OK(cudaGetDriverEntryPoint("cuStreamSynchronize", &fn, cudaEnablePerThreadDefaultStream, NULL));
	CHECK(fn == (void *)d.cuStreamSynchronize_ptsz);
	OK(cudaGetDriverEntryPoint_ptsz("cuStreamSynchronize", &fn, cudaEnableDefault, NULL));
	CHECK(fn == (void *)d.cuStreamSynchronize_ptsz);
	OK(cudaGetDriverEntryPoint_ptsz("cuMemFreeAsync", &fn, cudaEnableLegacyStream, NULL));
	CHECK(fn == (void *)d.cuMemFreeAsync);
	OK(cudaGetDriverEntryPoint("cuNoSuchFunction", &fn, cudaEnableDefault, &st));
	CHECK(fn == NULL && st == cudaDriverEntryPointSymbolNotFound);
	RT(cudaGetDriverEntryPoint("cuMemAlloc", &fn, 8, NULL), cudaErrorInvalidValue);

	OK(cudaGetDriverEntryPointByVersion("cuCtxCreate", &fn, 11040, cudaEnableDefault, &st));
	CHECK(fn == (void *)d.cuCtxCreate_v3 && st == cudaDriverEntryPointSuccess);
	OK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 3010, cudaEnableDefault, &st));
	CHECK(fn == NULL && st == cudaDriverEntryPointVersionNotSufficent);
	OK(cudaGetDriverEntryPointByVersion_ptsz("cuMemsetD8", &fn, 13000, cudaEnableDefault, &st));
	CHECK(fn == (void *)d.cuMemsetD8_v2_ptds);
	RT(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 13010, cudaEnableDefault, NULL),
	   cudaErrorInvalidValue);
	RT(cudaGetLastError(), cudaErrorInvalidValue);

	/* A pointer from there is callable. */
	OK(cudaGetDriverEntryPointByVersion("cuMemGetInfo", (void **)&get_info, 13000, cudaEnableDefault, NULL));
	CUOK(get_info(&f, &t));
	CHECK(t == g_cap && f == mem_free());
}
#pragma GCC diagnostic pop

/* errno survives successful calls, mmap and memfd work included. */
static void test_errno(void)
{
	CUmemAllocationProp prop = { 0 };
	CUmemGenericAllocationHandle h = 0;
	CUdeviceptr va = 0;
	void *p = NULL, *hp = NULL;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	errno = 4343;
	OK(cudaMalloc(&p, 8 * MiB));
	OK(cudaFree(p));
	OK(cudaMallocHost(&hp, 4096));
	OK(cudaFreeHost(hp));
	CUOK(d.cuMemAddressReserve(&va, GRAN, 0, 0, 0));
	CUOK(d.cuMemCreate(&h, GRAN, &prop, 0));
	CUOK(d.cuMemMap(va, GRAN, 0, h, 0));
	CUOK(d.cuMemUnmap(va, GRAN));
	CUOK(d.cuMemRelease(h));
	CUOK(d.cuMemAddressFree(va, GRAN));
	CHECK(errno == 4343);
}

int main(void)
{
	g_ndev = (int)env_size("CUMTRACE_FAKE_DEVICES", 2);
	g_cap = (size_t)env_size("CUMTRACE_FAKE_CAPACITY", 1ull << 30);
	if (g_ndev == 0) {
		int n = -1;
		void *p = NULL;

		RT(cudaGetDeviceCount(&n), cudaErrorNoDevice);
		CHECK(n == 0);
		RT(cudaMalloc(&p, 16), cudaErrorNoDevice);
	} else {
		test_runtime_basics(); /* first: it sees the runtime come up */
		load_driver();
		test_driver_basics();
		test_devices();
		test_malloc();
		test_oom();
		test_host();
		test_managed_and_pitch();
		test_streams();
		test_deferred_frees();
		test_pools();
		test_vmm();
		test_contexts();
		test_reset();
		test_devices_and_threads();
		test_allocator_stress();
		test_concurrency();
		test_get_proc_address();
		test_driver_entry_points();
		test_errno();
	}
	if (g_fail) {
		fprintf(stderr, "fake_selftest: %d of %d checks failed\n", g_fail, g_pass + g_fail);
		return 1;
	}
	printf("fake_selftest: %d checks passed\n", g_pass);
	return 0;
}
