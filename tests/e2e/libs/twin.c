/*
 * libcttwin.so (tests/e2e/t_paths_twin.sh): a library that links libcudart
 * and libcuda and is loaded with dlopen(RTLD_LOCAL), from C or from Python
 * ctypes, like a Python extension module. twin_export() makes every traced
 * call by export from here (tests/e2e/progs/twin_calls.h); twin_addr() hands
 * out this library's address of an export, for identity checks.
 */
#include "../progs/twin_calls.h"

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
						  unsigned int cudaVersion, unsigned long long flags,
						  enum cudaDriverEntryPointQueryResult *driverStatus);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				      CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			unsigned int flags, CUdevice dev);
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

void twin_export(const char *way);
void *twin_addr(const char *name);
void twin_free_bad(void);
void twin_last_error(const char *who);

#define E(name) {#name, (void *)name}
static const struct {
	const char *name;
	void *fn;
} twin_exports[] = {
	E(cudaMalloc), E(cudaFree), E(cudaMallocHost), E(cudaFreeHost), E(cudaHostAlloc),
	E(cudaHostRegister), E(cudaHostUnregister), E(cudaMallocManaged), E(cudaMallocPitch),
	E(cudaMalloc3D), E(cudaMallocAsync), E(cudaMallocAsync_ptsz), E(cudaMallocFromPoolAsync),
	E(cudaMallocFromPoolAsync_ptsz), E(cudaFreeAsync), E(cudaFreeAsync_ptsz),
	E(cudaMemPoolCreate), E(cudaMemPoolDestroy), E(cudaMemPoolTrimTo), E(cudaStreamCreate),
	E(cudaStreamCreateWithFlags), E(cudaStreamCreateWithPriority), E(cudaStreamDestroy),
	E(cudaStreamSynchronize), E(cudaStreamSynchronize_ptsz), E(cudaDeviceSynchronize),
	E(cudaDeviceReset), E(cudaSetDevice),
	E(cuInit), E(cuDeviceGet), E(cuDevicePrimaryCtxRetain), E(cuCtxSetCurrent), E(cuCtxCreate_v3),
	E(cuMemAlloc_v2), E(cuMemAllocPitch_v2), E(cuMemFree_v2), E(cuMemAllocHost_v2),
	E(cuMemHostAlloc), E(cuMemFreeHost), E(cuMemHostRegister_v2), E(cuMemHostUnregister),
	E(cuMemAllocManaged), E(cuMemAllocAsync), E(cuMemAllocAsync_ptsz), E(cuMemAllocFromPoolAsync),
	E(cuMemAllocFromPoolAsync_ptsz), E(cuMemFreeAsync), E(cuMemFreeAsync_ptsz), E(cuMemPoolCreate),
	E(cuMemPoolDestroy), E(cuMemPoolTrimTo), E(cuMemCreate), E(cuMemRelease), E(cuMemAddressReserve),
	E(cuMemAddressFree), E(cuMemMap), E(cuMemUnmap), E(cuStreamCreate), E(cuStreamCreateWithPriority),
	E(cuStreamDestroy_v2), E(cuStreamSynchronize), E(cuStreamSynchronize_ptsz), E(cuCtxDestroy_v2),
	E(cuDevicePrimaryCtxReset_v2),
	E(cuGetProcAddress_v2), E(cuGetProcAddress), E(cudaGetDriverEntryPoint),
	E(cudaGetDriverEntryPoint_ptsz), E(cudaGetDriverEntryPointByVersion),
	E(cudaGetDriverEntryPointByVersion_ptsz),
};
#undef E

void *twin_addr(const char *name)
{
	for (size_t i = 0; i < sizeof twin_exports / sizeof twin_exports[0]; i++)
		if (strcmp(twin_exports[i].name, name) == 0)
			return twin_exports[i].fn;
	return NULL;
}

static void *twin_get_export(const struct twin_way *w, const char *name, const char **event)
{
	return twin_addr(name);
}

/* Every traced function by export, then the lookups by base name through exports. */
void twin_export(const char *way)
{
	struct twin_way w = {way, twin_get_export, NULL, 0};
	twin_runtime(&w);
	twin_driver(&w);
	/* Direct calls (through the PLT), not through an address. */
	printf("== %s: direct\n", way);
	void *d = TWIN_UNTOUCHED;
	errno = TWIN_ERRNO;
	int rc = cudaMalloc(&d, 3 * TWIN_MIB);
	printf("call cudaMalloc rc=%d errno=%d ptr=%s\n", rc, errno, twin_ptr(d));
	errno = TWIN_ERRNO;
	rc = cudaFree(d);
	printf("call cudaFree rc=%d errno=%d\n", rc, errno);
	CUdeviceptr dd = 0x10;
	errno = TWIN_ERRNO;
	rc = cuMemAlloc_v2(&dd, 3 * TWIN_MIB);
	printf("call cuMemAlloc_v2 rc=%d errno=%d ptr=%s\n", rc, errno, TWIN_DP(dd));
	errno = TWIN_ERRNO;
	rc = cuMemFree_v2(dd);
	printf("call cuMemFree_v2 rc=%d errno=%d\n", rc, errno);

	const struct twin_lookup_fn lookups[] = {
		{TWIN_GPA2, (void *)cuGetProcAddress_v2, 0},
		{TWIN_GPA1, (void *)cuGetProcAddress, 0},
		{TWIN_ENTRY, (void *)cudaGetDriverEntryPoint, 0},
		{TWIN_ENTRY_VER, (void *)cudaGetDriverEntryPointByVersion_ptsz, 1},
	};
	static const char *const names[] = {"cuGetProcAddress_v2", "cuGetProcAddress",
					    "cudaGetDriverEntryPoint",
					    "cudaGetDriverEntryPointByVersion_ptsz"};
	for (size_t i = 0; i < sizeof lookups / sizeof lookups[0]; i++) {
		char name[96];
		snprintf(name, sizeof name, "%s %s", way, names[i]);
		struct twin_way lw = {name, twin_get_lookup, (void *)&lookups[i], 0};
		twin_driver(&lw);
	}
}

/* A failing traced call: it sets the last error of the runtime copy it reaches. */
void twin_free_bad(void)
{
	errno = TWIN_ERRNO;
	int rc = cudaFree((void *)0x1234);
	printf("call cudaFree rc=%d errno=%d\n", rc, errno);
}

/* The last error of this library's own runtime copy (cudaGetLastError is not traced). */
void twin_last_error(const char *who)
{
	printf("aux cudaGetLastError %s rc=%d\n", who, (int)cudaGetLastError());
}
