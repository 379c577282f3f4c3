/*
 * Fake CUDA runtime (libcudart.so.13) for cumtrace's tests.
 *
 * Like the real runtime it reaches the driver only through
 * dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) and
 * dlsym(handle, "cuGetProcAddress_v2"), and takes every other driver
 * function from cuGetProcAddress_v2, once, at the first runtime call
 * (pthread_once), which also runs cuInit. It never links against libcuda.
 *
 * It keeps no allocation state of its own: every runtime allocation or free
 * is exactly one driver call, so a tracer can check that an allocation seen
 * at both levels is counted once. Contexts follow the real runtime: a thread
 * uses the driver's current context when it has one, else the primary
 * context of its current device (cudaSetDevice, default 0), which the
 * runtime retains on first use and keeps for the life of the process.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <driver_types.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exported names that cuda_runtime_api.h declares only in per-thread
 * default stream builds. */
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
						   cudaStream_t stream);
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus);
cudaError_t CUDARTAPI cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
							  cudaGraphInstantiateParams *instantiateParams);
cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t CUDARTAPI cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t CUDARTAPI cudaMemset_ptds(void *devPtr, int value, size_t count);
cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
						   unsigned long long flags,
						   enum cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
							    unsigned int cudaVersion, unsigned long long flags,
							    enum cudaDriverEntryPointQueryResult *driverStatus);

#define RT_MAX_DEVICES 64

/* The driver functions used: field, base name, pointer type, whether the
 * per-thread-default-stream variant is asked for. */
#define DRIVER_FUNCS(X) \
	X(init, "cuInit", PFN_cuInit_v2000, 0) \
	X(driverGetVersion, "cuDriverGetVersion", PFN_cuDriverGetVersion_v2020, 0) \
	X(deviceGetCount, "cuDeviceGetCount", PFN_cuDeviceGetCount_v2000, 0) \
	X(primaryRetain, "cuDevicePrimaryCtxRetain", PFN_cuDevicePrimaryCtxRetain_v7000, 0) \
	X(primaryReset, "cuDevicePrimaryCtxReset", PFN_cuDevicePrimaryCtxReset_v11000, 0) \
	X(ctxGetCurrent, "cuCtxGetCurrent", PFN_cuCtxGetCurrent_v4000, 0) \
	X(ctxSetCurrent, "cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000, 0) \
	X(ctxGetDevice, "cuCtxGetDevice", PFN_cuCtxGetDevice_v13000, 0) \
	X(ctxSynchronize, "cuCtxSynchronize", PFN_cuCtxSynchronize_v13000, 0) \
	X(memGetInfo, "cuMemGetInfo", PFN_cuMemGetInfo_v3020, 0) \
	X(memAlloc, "cuMemAlloc", PFN_cuMemAlloc_v3020, 0) \
	X(memAllocPitch, "cuMemAllocPitch", PFN_cuMemAllocPitch_v3020, 0) \
	X(memAllocManaged, "cuMemAllocManaged", PFN_cuMemAllocManaged_v6000, 0) \
	X(arrayCreate, "cuArrayCreate", PFN_cuArrayCreate_v3020, 0) \
	X(array3DCreate, "cuArray3DCreate", PFN_cuArray3DCreate_v3020, 0) \
	X(mipmappedCreate, "cuMipmappedArrayCreate", PFN_cuMipmappedArrayCreate_v5000, 0) \
	X(arrayDestroy, "cuArrayDestroy", PFN_cuArrayDestroy_v2000, 0) \
	X(mipmappedDestroy, "cuMipmappedArrayDestroy", PFN_cuMipmappedArrayDestroy_v5000, 0) \
	X(memFree, "cuMemFree", PFN_cuMemFree_v3020, 0) \
	X(memAllocHost, "cuMemAllocHost", PFN_cuMemAllocHost_v3020, 0) \
	X(memHostAlloc, "cuMemHostAlloc", PFN_cuMemHostAlloc_v2020, 0) \
	X(memFreeHost, "cuMemFreeHost", PFN_cuMemFreeHost_v2000, 0) \
	X(memHostRegister, "cuMemHostRegister", PFN_cuMemHostRegister_v6050, 0) \
	X(memHostUnregister, "cuMemHostUnregister", PFN_cuMemHostUnregister_v4000, 0) \
	X(memAllocAsync, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020, 0) \
	X(memAllocAsync_pt, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020_ptsz, 1) \
	X(memAllocFromPool, "cuMemAllocFromPoolAsync", PFN_cuMemAllocFromPoolAsync_v11020, 0) \
	X(memAllocFromPool_pt, "cuMemAllocFromPoolAsync", PFN_cuMemAllocFromPoolAsync_v11020_ptsz, 1) \
	X(memFreeAsync, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020, 0) \
	X(memFreeAsync_pt, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020_ptsz, 1) \
	X(poolCreate, "cuMemPoolCreate", PFN_cuMemPoolCreate_v11020, 0) \
	X(poolDestroy, "cuMemPoolDestroy", PFN_cuMemPoolDestroy_v11020, 0) \
	X(poolTrimTo, "cuMemPoolTrimTo", PFN_cuMemPoolTrimTo_v11020, 0) \
	X(poolSetAttribute, "cuMemPoolSetAttribute", PFN_cuMemPoolSetAttribute_v11020, 0) \
	X(poolGetAttribute, "cuMemPoolGetAttribute", PFN_cuMemPoolGetAttribute_v11020, 0) \
	X(defaultMemPool, "cuDeviceGetDefaultMemPool", PFN_cuDeviceGetDefaultMemPool_v11020, 0) \
	X(streamCreate, "cuStreamCreate", PFN_cuStreamCreate_v2000, 0) \
	X(streamCreatePrio, "cuStreamCreateWithPriority", PFN_cuStreamCreateWithPriority_v5050, 0) \
	X(streamDestroy, "cuStreamDestroy", PFN_cuStreamDestroy_v4000, 0) \
	X(streamSync, "cuStreamSynchronize", PFN_cuStreamSynchronize_v2000, 0) \
	X(streamSync_pt, "cuStreamSynchronize", PFN_cuStreamSynchronize_v7000_ptsz, 1) \
	X(streamQuery, "cuStreamQuery", PFN_cuStreamQuery_v2000, 0) \
	X(streamQuery_pt, "cuStreamQuery", PFN_cuStreamQuery_v7000_ptsz, 1) \
	X(memcpyHtoD, "cuMemcpyHtoD", PFN_cuMemcpyHtoD_v3020, 0) \
	X(memcpyHtoD_pt, "cuMemcpyHtoD", PFN_cuMemcpyHtoD_v7000_ptds, 1) \
	X(memcpyDtoH, "cuMemcpyDtoH", PFN_cuMemcpyDtoH_v3020, 0) \
	X(memcpyDtoH_pt, "cuMemcpyDtoH", PFN_cuMemcpyDtoH_v7000_ptds, 1) \
	X(memcpy, "cuMemcpy", PFN_cuMemcpy_v4000, 0) \
	X(memcpy_pt, "cuMemcpy", PFN_cuMemcpy_v7000_ptds, 1) \
	X(memsetD8, "cuMemsetD8", PFN_cuMemsetD8_v3020, 0) \
	X(memsetD8_pt, "cuMemsetD8", PFN_cuMemsetD8_v7000_ptds, 1) \
	/* ---- CUDA graphs (issue 19 §2) ---- */ \
	X(graphCreate, "cuGraphCreate", PFN_cuGraphCreate_v10000, 0) \
	X(graphDestroy, "cuGraphDestroy", PFN_cuGraphDestroy_v10000, 0) \
	X(beginCapture, "cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010, 0) \
	X(beginCapture_pt, "cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010_ptsz, 1) \
	X(endCapture, "cuStreamEndCapture", PFN_cuStreamEndCapture_v10000, 0) \
	X(endCapture_pt, "cuStreamEndCapture", PFN_cuStreamEndCapture_v10000_ptsz, 1) \
	X(isCapturing, "cuStreamIsCapturing", PFN_cuStreamIsCapturing_v10000, 0) \
	X(isCapturing_pt, "cuStreamIsCapturing", PFN_cuStreamIsCapturing_v10000_ptsz, 1) \
	X(addMemAllocNode, "cuGraphAddMemAllocNode", PFN_cuGraphAddMemAllocNode_v11040, 0) \
	X(addMemFreeNode, "cuGraphAddMemFreeNode", PFN_cuGraphAddMemFreeNode_v11040, 0) \
	X(instantiate, "cuGraphInstantiateWithFlags", PFN_cuGraphInstantiateWithFlags_v11040, 0) \
	X(instantiateParams, "cuGraphInstantiateWithParams", PFN_cuGraphInstantiateWithParams_v12000, 0) \
	X(instantiateParams_pt, "cuGraphInstantiateWithParams", PFN_cuGraphInstantiateWithParams_v12000_ptsz, 1) \
	X(graphLaunch, "cuGraphLaunch", PFN_cuGraphLaunch_v10000, 0) \
	X(graphLaunch_pt, "cuGraphLaunch", PFN_cuGraphLaunch_v10000_ptsz, 1) \
	X(execDestroy, "cuGraphExecDestroy", PFN_cuGraphExecDestroy_v10000, 0) \
	X(graphMemTrim, "cuDeviceGraphMemTrim", PFN_cuDeviceGraphMemTrim_v11040, 0) \
	X(getGraphMemAttr, "cuDeviceGetGraphMemAttribute", PFN_cuDeviceGetGraphMemAttribute_v11040, 0) \
	X(setGraphMemAttr, "cuDeviceSetGraphMemAttribute", PFN_cuDeviceSetGraphMemAttribute_v11040, 0) \
	/* ---- imported and shared memory (issue 19 §4) ---- */ \
	X(ipcGetMemHandle, "cuIpcGetMemHandle", PFN_cuIpcGetMemHandle_v4010, 0) \
	X(ipcOpenMemHandle, "cuIpcOpenMemHandle", PFN_cuIpcOpenMemHandle_v11000, 0) \
	X(ipcCloseMemHandle, "cuIpcCloseMemHandle", PFN_cuIpcCloseMemHandle_v4010, 0) \
	X(poolExportPointer, "cuMemPoolExportPointer", PFN_cuMemPoolExportPointer_v11020, 0) \
	X(poolImportPointer, "cuMemPoolImportPointer", PFN_cuMemPoolImportPointer_v11020, 0)

#define X(field, name, type, pt) type field;
static struct driver { DRIVER_FUNCS(X) } D;
#undef X

#define X(field, name, type, pt) { name, offsetof(struct driver, field), pt },
static const struct {
	const char *name;
	size_t offset;
	int per_thread;
} g_driver_tab[] = { DRIVER_FUNCS(X) };
#undef X

/* Picks the legacy or the per-thread variant of a driver function. */
#define DRV(field, pt) ((pt) ? D.field##_pt : D.field)

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cudaError_t g_load_err = cudaErrorInsufficientDriver; /* dlopen and symbol table */
static cudaError_t g_init_err = cudaErrorInsufficientDriver; /* cuInit */
static PFN_cuGetProcAddress_v12000 g_gpa;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static CUcontext g_primary[RT_MAX_DEVICES];	/* retained primary contexts */
static __thread int t_dev;			/* cudaSetDevice */
static __thread cudaError_t t_last;		/* cudaGetLastError */

/* ---- errors ---------------------------------------------------------------- */
#define E(code, text) { code, #code, text }
static const struct {
	cudaError_t code;
	const char *name, *text;
} g_errors[] = {
	E(cudaSuccess, "no error"),
	E(cudaErrorInvalidValue, "invalid argument"),
	E(cudaErrorMemoryAllocation, "out of memory"),
	E(cudaErrorInitializationError, "initialization error"),
	E(cudaErrorCudartUnloading, "driver shutting down"),
	E(cudaErrorProfilerDisabled, "profiler disabled while using external profiling tool"),
	E(cudaErrorProfilerNotInitialized, "profiler not initialized: call cudaProfilerInitialize()"),
	E(cudaErrorProfilerAlreadyStarted, "profiler already started"),
	E(cudaErrorProfilerAlreadyStopped, "profiler already stopped"),
	E(cudaErrorInvalidConfiguration, "invalid configuration argument"),
	E(cudaErrorInvalidPitchValue, "invalid pitch argument"),
	E(cudaErrorInvalidSymbol, "invalid device symbol"),
	E(cudaErrorInvalidHostPointer, "invalid host pointer"),
	E(cudaErrorInvalidDevicePointer, "invalid device pointer"),
	E(cudaErrorInvalidTexture, "invalid texture"),
	E(cudaErrorInvalidTextureBinding, "invalid texture binding"),
	E(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor"),
	E(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy"),
	E(cudaErrorAddressOfConstant, "address of constant"),
	E(cudaErrorTextureFetchFailed, "texture fetch failed"),
	E(cudaErrorTextureNotBound, "texture not bound"),
	E(cudaErrorSynchronizationError, "synchronization error"),
	E(cudaErrorInvalidFilterSetting, "invalid filter setting"),
	E(cudaErrorInvalidNormSetting, "invalid norm setting"),
	E(cudaErrorMixedDeviceExecution, "mixed device execution"),
	E(cudaErrorNotYetImplemented, "not yet implemented"),
	E(cudaErrorMemoryValueTooLarge, "memory value too large"),
	E(cudaErrorStubLibrary, "CUDA driver is a stub library"),
	E(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version"),
	E(cudaErrorCallRequiresNewerDriver, "CUDA driver is too old for this call"),
	E(cudaErrorInvalidSurface, "invalid surface"),
	E(cudaErrorDuplicateVariableName, "duplicate variable name"),
	E(cudaErrorDuplicateTextureName, "duplicate texture name"),
	E(cudaErrorDuplicateSurfaceName, "duplicate surface name"),
	E(cudaErrorDevicesUnavailable, "CUDA-capable device(s) is/are busy or unavailable"),
	E(cudaErrorIncompatibleDriverContext, "incompatible driver context"),
	E(cudaErrorMissingConfiguration, "__global__ function call is not configured"),
	E(cudaErrorPriorLaunchFailure, "prior launch failure"),
	E(cudaErrorLaunchMaxDepthExceeded, "launch max depth exceeded"),
	E(cudaErrorLaunchFileScopedTex, "launch file scoped tex"),
	E(cudaErrorLaunchFileScopedSurf, "launch file scoped surf"),
	E(cudaErrorSyncDepthExceeded, "sync depth exceeded"),
	E(cudaErrorLaunchPendingCountExceeded, "launch pending count exceeded"),
	E(cudaErrorInvalidDeviceFunction, "invalid device function"),
	E(cudaErrorNoDevice, "no CUDA-capable device is detected"),
	E(cudaErrorInvalidDevice, "invalid device ordinal"),
	E(cudaErrorDeviceNotLicensed, "device doesn't have valid Grid license"),
	E(cudaErrorSoftwareValidityNotEstablished, "software validity not established"),
	E(cudaErrorStartupFailure, "startup failure"),
	E(cudaErrorInvalidKernelImage, "device kernel image is invalid"),
	E(cudaErrorDeviceUninitialized, "invalid device context"),
	E(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed"),
	E(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed"),
	E(cudaErrorArrayIsMapped, "array is mapped"),
	E(cudaErrorAlreadyMapped, "resource already mapped"),
	E(cudaErrorNoKernelImageForDevice, "no kernel image is available for execution on the device"),
	E(cudaErrorAlreadyAcquired, "resource already acquired"),
	E(cudaErrorNotMapped, "resource not mapped"),
	E(cudaErrorNotMappedAsArray, "resource not mapped as array"),
	E(cudaErrorNotMappedAsPointer, "resource not mapped as pointer"),
	E(cudaErrorECCUncorrectable, "uncorrectable ECC error encountered"),
	E(cudaErrorUnsupportedLimit, "limit is not supported on this architecture"),
	E(cudaErrorDeviceAlreadyInUse, "exclusive-thread device already in use by a different thread"),
	E(cudaErrorPeerAccessUnsupported, "peer access is not supported between these two devices"),
	E(cudaErrorInvalidPtx, "a PTX JIT compilation failed"),
	E(cudaErrorInvalidGraphicsContext, "invalid OpenGL or DirectX context"),
	E(cudaErrorNvlinkUncorrectable, "uncorrectable NVLink error detected during the execution"),
	E(cudaErrorJitCompilerNotFound, "PTX JIT compiler library not found"),
	E(cudaErrorUnsupportedPtxVersion, "the provided PTX was compiled with an unsupported toolchain."),
	E(cudaErrorJitCompilationDisabled, "PTX JIT compilation was disabled"),
	E(cudaErrorUnsupportedExecAffinity, "the provided execution affinity is not supported"),
	E(cudaErrorUnsupportedDevSideSync, "unsupported dev side sync"),
	E(cudaErrorContained, "contained"),
	E(cudaErrorInvalidSource, "invalid source"),
	E(cudaErrorFileNotFound, "file not found"),
	E(cudaErrorSharedObjectSymbolNotFound, "shared object symbol not found"),
	E(cudaErrorSharedObjectInitFailed, "shared object initialization failed"),
	E(cudaErrorOperatingSystem, "OS call failed or operation not supported on this OS"),
	E(cudaErrorInvalidResourceHandle, "invalid resource handle"),
	E(cudaErrorIllegalState, "the operation cannot be performed in the present state"),
	E(cudaErrorLossyQuery, "attempted introspection would be semantically lossy"),
	E(cudaErrorSymbolNotFound, "named symbol not found"),
	E(cudaErrorNotReady, "device not ready"),
	E(cudaErrorIllegalAddress, "an illegal memory access was encountered"),
	E(cudaErrorLaunchOutOfResources, "too many resources requested for launch"),
	E(cudaErrorLaunchTimeout, "the launch timed out and was terminated"),
	E(cudaErrorLaunchIncompatibleTexturing, "launch uses incompatible texturing mode"),
	E(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled"),
	E(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled"),
	E(cudaErrorSetOnActiveProcess, "cannot set while device is active in this process"),
	E(cudaErrorContextIsDestroyed, "context is destroyed"),
	E(cudaErrorAssert, "device-side assert triggered"),
	E(cudaErrorTooManyPeers, "peer mapping resources exhausted"),
	E(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped"),
	E(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region"),
	E(cudaErrorHardwareStackError, "hardware stack error"),
	E(cudaErrorIllegalInstruction, "an illegal instruction was encountered"),
	E(cudaErrorMisalignedAddress, "misaligned address"),
	E(cudaErrorInvalidAddressSpace, "operation not supported on global/shared address space"),
	E(cudaErrorInvalidPc, "invalid program counter"),
	E(cudaErrorLaunchFailure, "unspecified launch failure"),
	E(cudaErrorCooperativeLaunchTooLarge, "too many blocks in cooperative launch"),
	E(cudaErrorTensorMemoryLeak, "tensor memory leak"),
	E(cudaErrorNotPermitted, "operation not permitted"),
	E(cudaErrorNotSupported, "operation not supported"),
	E(cudaErrorSystemNotReady, "system not yet initialized"),
	E(cudaErrorSystemDriverMismatch, "system has unsupported display driver / cuda driver combination"),
	E(cudaErrorCompatNotSupportedOnDevice, "forward compatibility was attempted on non supported HW"),
	E(cudaErrorMpsConnectionFailed, "mps connection failed"),
	E(cudaErrorMpsRpcFailure, "mps rpc failure"),
	E(cudaErrorMpsServerNotReady, "mps server not ready"),
	E(cudaErrorMpsMaxClientsReached, "mps max clients reached"),
	E(cudaErrorMpsMaxConnectionsReached, "mps max connections reached"),
	E(cudaErrorMpsClientTerminated, "mps client terminated"),
	E(cudaErrorCdpNotSupported, "cdp not supported"),
	E(cudaErrorCdpVersionMismatch, "cdp version mismatch"),
	E(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing"),
	E(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture"),
	E(cudaErrorStreamCaptureMerge, "operation would result in a merge of separate capture sequences"),
	E(cudaErrorStreamCaptureUnmatched, "capture was not ended in the same stream as it began"),
	E(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work"),
	E(cudaErrorStreamCaptureIsolation, "dependency created on uncaptured work in another stream"),
	E(cudaErrorStreamCaptureImplicit, "operation would make the legacy stream depend on a capturing blocking stream"),
	E(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream"),
	E(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread"),
	E(cudaErrorTimeout, "wait operation timed out"),
	E(cudaErrorGraphExecUpdateFailure, "graph exec update failure"),
	E(cudaErrorExternalDevice, "external device"),
	E(cudaErrorInvalidClusterSize, "invalid cluster size"),
	E(cudaErrorFunctionNotLoaded, "function not loaded"),
	E(cudaErrorInvalidResourceType, "invalid resource type"),
	E(cudaErrorInvalidResourceConfiguration, "invalid resource configuration"),
	E(cudaErrorUnknown, "unknown error"),
};
#undef E

static int error_index(int code)
{
	for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++)
		if ((int)g_errors[i].code == code)
			return (int)i;
	return -1;
}

/* Driver and runtime codes share their numbers (CUDA_ERROR_OUT_OF_MEMORY and
 * cudaErrorMemoryAllocation are both 2, ...); a driver code the runtime has
 * no number for becomes cudaErrorUnknown. */
static cudaError_t rt_map(CUresult r)
{
	return r == CUDA_SUCCESS ? cudaSuccess : error_index((int)r) >= 0 ? (cudaError_t)r : cudaErrorUnknown;
}

/* Records e as the thread's last error (cudaErrorNotReady is not an error)
 * and returns it. */
static cudaError_t rt_fail(cudaError_t e)
{
	if (e != cudaSuccess && e != cudaErrorNotReady)
		t_last = e;
	return e;
}

static cudaError_t rt_drv(CUresult r)
{
	return rt_fail(rt_map(r));
}

/* Stores the device pointer *d of a successful allocation. (d is read
 * after the call that fills it, whatever the argument evaluation order.) */
static cudaError_t rt_ptr(CUresult r, const CUdeviceptr *d, void **out)
{
	if (r == CUDA_SUCCESS)
		*out = (void *)(uintptr_t)*d;
	return rt_drv(r);
}

static CUdeviceptr dptr(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

/* ---- initialisation ------------------------------------------------------- */

/* pthread_once body: loads the driver, fetches the table, runs cuInit. */
static void rt_load(void)
{
	int saved = errno;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h || !(*(void **)&g_gpa = dlsym(h, "cuGetProcAddress_v2")))
		goto out;
	for (size_t i = 0; i < sizeof(g_driver_tab) / sizeof(g_driver_tab[0]); i++) {
		void *fn = NULL;
		cuuint64_t flags = g_driver_tab[i].per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
							      : CU_GET_PROC_ADDRESS_LEGACY_STREAM;

		if (g_gpa(g_driver_tab[i].name, &fn, CUDART_VERSION, flags, NULL) || !fn)
			goto out;
		memcpy((char *)&D + g_driver_tab[i].offset, &fn, sizeof(fn));
	}
	g_load_err = cudaSuccess;
	g_init_err = rt_map(D.init(0));
out:
	errno = saved;
}

/* The driver is loaded, or the reason it is not. */
static cudaError_t rt_load_once(void)
{
	pthread_once(&g_once, rt_load);
	return g_load_err;
}

/* The driver is loaded and initialised, or the reason it is not. */
static cudaError_t rt_init(void)
{
	return rt_load_once() ? g_load_err : g_init_err;
}

/* The primary context of dev, retained on first use for the process. */
static cudaError_t rt_primary_ctx(int dev, CUcontext *out)
{
	CUresult r = CUDA_SUCCESS;

	if (dev < 0 || dev >= RT_MAX_DEVICES)
		return cudaErrorInvalidDevice;
	pthread_mutex_lock(&g_mu);
	if (!g_primary[dev])
		r = D.primaryRetain(&g_primary[dev], dev);
	*out = g_primary[dev];
	pthread_mutex_unlock(&g_mu);
	return rt_map(r);
}

/* Initialises the runtime and makes sure the thread has a current context:
 * the driver's current one if any, else its device's primary context. */
static cudaError_t rt_enter(void)
{
	cudaError_t e = rt_init();
	CUcontext c;
	CUresult r;

	if (e)
		return e;
	if ((r = D.ctxGetCurrent(&c)) || c)
		return rt_map(r);
	if ((e = rt_primary_ctx(t_dev, &c)))
		return e;
	return rt_map(D.ctxSetCurrent(c));
}

/* First statement of most runtime calls. */
#define RT_ENTER() do { \
	cudaError_t e_ = rt_enter(); \
	if (e_) \
		return rt_fail(e_); \
} while (0)

/* Defines the export name(params): enter the runtime, make one driver call. */
#define RUNTIME_FN(name, params, call) \
	cudaError_t CUDARTAPI name params { RT_ENTER(); return rt_drv(call); }

/* Defines the export name(params) and its per-thread-default-stream twin
 * name##suffix(params) as impl(args..., 0) and impl(args..., 1). */
#define STREAM_PAIR(name, suffix, params, impl, ...) \
	cudaError_t CUDARTAPI name params { return impl(__VA_ARGS__, 0); } \
	cudaError_t CUDARTAPI name##suffix params { return impl(__VA_ARGS__, 1); }

/* ---- devices ---------------------------------------------------------------- */

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
	cudaError_t e;

	if (!count)
		return rt_fail(cudaErrorInvalidValue);
	if ((e = rt_init())) {
		*count = 0;
		return rt_fail(e);
	}
	return rt_drv(D.deviceGetCount(count));
}

/* Also makes the device's primary context current, as CUDA 12+ does. */
cudaError_t CUDARTAPI cudaSetDevice(int device)
{
	cudaError_t e = rt_init();
	CUcontext c;
	int n;

	if (e || (e = rt_map(D.deviceGetCount(&n))))
		return rt_fail(e);
	if (device < 0 || device >= n)
		return rt_fail(cudaErrorInvalidDevice);
	if ((e = rt_primary_ctx(device, &c)) || (e = rt_map(D.ctxSetCurrent(c))))
		return rt_fail(e);
	t_dev = device;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGetDevice(int *device)
{
	cudaError_t e = rt_init();
	CUcontext c;
	CUresult r;

	if (!device)
		return rt_fail(cudaErrorInvalidValue);
	if (e)
		return rt_fail(e);
	if ((r = D.ctxGetCurrent(&c)) || c)
		return rt_drv(r ? r : D.ctxGetDevice(device, c));
	*device = t_dev;
	return cudaSuccess;
}

RUNTIME_FN(cudaDeviceSynchronize, (void),
	   D.ctxSynchronize(NULL))

/* Resets the primary context when it is the current one: the driver frees
 * its allocations (device, pinned, managed) and streams. Stream-ordered
 * allocations and pools survive, as documented for the real runtime. With
 * a cuCtxCreate context current there is no runtime state to reset. */
cudaError_t CUDARTAPI cudaDeviceReset(void)
{
	CUcontext c;
	CUdevice dev;
	CUresult r;
	int primary;

	RT_ENTER();
	if ((r = D.ctxGetCurrent(&c)) || (r = D.ctxGetDevice(&dev, c)))
		return rt_drv(r);
	pthread_mutex_lock(&g_mu);
	primary = dev >= 0 && dev < RT_MAX_DEVICES && g_primary[dev] == c;
	pthread_mutex_unlock(&g_mu);
	return primary ? rt_drv(D.primaryReset(dev)) : cudaSuccess;
}

RUNTIME_FN(cudaMemGetInfo, (size_t *free_bytes, size_t *total),
	   D.memGetInfo(free_bytes, total))

/* ---- allocation ------------------------------------------------------------ */

/* Common start of the allocation calls: enters the runtime and checks the
 * result pointer. Returns RT_PROCEED when the driver is to be called, else
 * the call's result: a zero size succeeds with *out NULL, no driver call. */
#define RT_PROCEED ((cudaError_t)-1)
static cudaError_t rt_alloc_start(void **out, size_t size)
{
	cudaError_t e = rt_enter();

	if (e || !out)
		return rt_fail(e ? e : cudaErrorInvalidValue);
	if (!size) {
		*out = NULL;
		return cudaSuccess;
	}
	return RT_PROCEED;
}

/*
 * CUMTRACE_FAKE_SPIN_NS=N: cudaMalloc spins N ns before it returns, as a real
 * allocation takes microseconds (about 3 us for torch's cudaMallocAsync on
 * the H200): for benchmarks of what the shim does around the real call
 * (what it asked the memory for before it may have arrived).
 */
static void rt_spin(void)
{
	static _Atomic long spin_ns = -1;
	long ns = atomic_load_explicit(&spin_ns, memory_order_relaxed);
	if (ns < 0) {
		/* digits only, as the driver's knobs: anything else is reported and means 0 */
		int saved = errno;
		const char *s = getenv("CUMTRACE_FAKE_SPIN_NS");
		char *end = NULL;
		ns = s && *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : 0;
		if (s && *s && (!end || *end || ns == LONG_MAX)) {
			fprintf(stderr, "fake libcudart: ignoring CUMTRACE_FAKE_SPIN_NS=%s\n", s);
			ns = 0;
		}
		errno = saved;
		atomic_store_explicit(&spin_ns, ns, memory_order_relaxed);
	}
	if (ns <= 0)
		return;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
	cudaError_t e = rt_alloc_start(devPtr, size);
	CUdeviceptr d = 0;

	if (e != RT_PROCEED)
		return e;
	rt_spin();
	return rt_ptr(D.memAlloc(&d, size), &d, devPtr);
}

/* cudaMemAttach* flags have the values of CU_MEM_ATTACH_*. */
cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	cudaError_t e = rt_alloc_start(devPtr, size);
	CUdeviceptr d = 0;

	return e != RT_PROCEED ? e : rt_ptr(D.memAllocManaged(&d, size, flags), &d, devPtr);
}

/* cudaMallocPitch and cudaMalloc3D (height * depth rows) in one driver call. */
static cudaError_t rt_pitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	CUdeviceptr d = 0;

	if (!width || !height) {
		*devPtr = NULL;
		*pitch = 0;
		return cudaSuccess;
	}
	return rt_ptr(D.memAllocPitch(&d, pitch, width, height, 4), &d, devPtr);
}

cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	RT_ENTER();
	if (!devPtr || !pitch)
		return rt_fail(cudaErrorInvalidValue);
	return rt_pitch(devPtr, pitch, width, height);
}

cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
	struct cudaPitchedPtr pp = { NULL, 0, extent.width, extent.height };
	size_t rows;
	cudaError_t e;

	RT_ENTER();
	if (!pitchedDevPtr)
		return rt_fail(cudaErrorInvalidValue);
	if (__builtin_mul_overflow(extent.height, extent.depth, &rows))
		return rt_fail(cudaErrorMemoryAllocation);
	if (!(e = rt_pitch(&pp.ptr, &pp.pitch, extent.width, rows)))
		*pitchedDevPtr = pp;
	return e;
}

cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
	RT_ENTER(); /* cudaFree(NULL) is the idiom for "initialise now" */
	return devPtr ? rt_drv(D.memFree(dptr(devPtr))) : cudaSuccess;
}

/* ---- arrays: the driver's, with the runtime's channel format turned into the driver's ---- */

/* A channel format as a driver format and channel count: channels of one size (8, 16 or 32 bits),
 * signed, unsigned or float; 0 when the fake does not know it. */
static int rt_array_format(const struct cudaChannelFormatDesc *desc, CUarray_format *fmt, unsigned *ch)
{
	int bits[4];

	if (!desc)
		return 0;
	bits[0] = desc->x, bits[1] = desc->y, bits[2] = desc->z, bits[3] = desc->w;
	*ch = 0;
	for (int i = 0; i < 4; i++)
		if (bits[i]) {
			if (bits[i] != desc->x)
				return 0;
			(*ch)++;
		}
	if (*ch == 3 || !*ch)
		return 0;
	switch (desc->f) {
	case cudaChannelFormatKindSigned:
		*fmt = desc->x == 8 ? CU_AD_FORMAT_SIGNED_INT8 : desc->x == 16 ? CU_AD_FORMAT_SIGNED_INT16
			: CU_AD_FORMAT_SIGNED_INT32;
		break;
	case cudaChannelFormatKindUnsigned:
		*fmt = desc->x == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : desc->x == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
			: CU_AD_FORMAT_UNSIGNED_INT32;
		break;
	case cudaChannelFormatKindFloat:
		if (desc->x != 16 && desc->x != 32)
			return 0;
		*fmt = desc->x == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
		return 1;
	default:
		return 0;
	}
	return desc->x == 8 || desc->x == 16 || desc->x == 32;
}

static cudaError_t rt_array3d(void **out, const struct cudaChannelFormatDesc *desc, struct cudaExtent e,
			      unsigned levels, unsigned flags, int mipmapped)
{
	CUDA_ARRAY3D_DESCRIPTOR d;

	RT_ENTER();
	memset(&d, 0, sizeof d);
	if (!out || !rt_array_format(desc, &d.Format, &d.NumChannels))
		return rt_fail(cudaErrorInvalidValue);
	d.Width = e.width, d.Height = e.height, d.Depth = e.depth;
	d.Flags = flags & cudaArrayLayered ? CUDA_ARRAY3D_LAYERED : 0;
	if (mipmapped)
		return rt_drv(D.mipmappedCreate((CUmipmappedArray *)out, &d, levels));
	return rt_drv(D.array3DCreate((CUarray *)out, &d));
}

cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width,
				      size_t height, unsigned int flags)
{
	CUDA_ARRAY_DESCRIPTOR d;

	(void)flags;
	RT_ENTER();
	memset(&d, 0, sizeof d);
	if (!array || !rt_array_format(desc, &d.Format, &d.NumChannels))
		return rt_fail(cudaErrorInvalidValue);
	d.Width = width, d.Height = height;
	return rt_drv(D.arrayCreate((CUarray *)array, &d));
}

cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
					struct cudaExtent extent, unsigned int flags)
{
	return rt_array3d((void **)array, desc, extent, 1, flags, 0);
}

cudaError_t CUDARTAPI cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
					       const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
					       unsigned int numLevels, unsigned int flags)
{
	return rt_array3d((void **)mipmappedArray, desc, extent, numLevels, flags, 1);
}

cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array)
{
	RT_ENTER();
	return array ? rt_drv(D.arrayDestroy((CUarray)array)) : cudaSuccess;
}

cudaError_t CUDARTAPI cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
	RT_ENTER();
	return mipmappedArray ? rt_drv(D.mipmappedDestroy((CUmipmappedArray)mipmappedArray)) : cudaSuccess;
}

cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size)
{
	cudaError_t e = rt_alloc_start(ptr, size);

	return e != RT_PROCEED ? e : rt_drv(D.memAllocHost(ptr, size));
}

/* cudaHostAlloc* flags have the values of CU_MEMHOSTALLOC_*. */
cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaError_t e = rt_alloc_start(pHost, size);

	return e != RT_PROCEED ? e : rt_drv(D.memHostAlloc(pHost, size, flags));
}

cudaError_t CUDARTAPI cudaFreeHost(void *ptr)
{
	RT_ENTER();
	return ptr ? rt_drv(D.memFreeHost(ptr)) : cudaSuccess;
}

/* cudaHostRegister* flags have the values of CU_MEMHOSTREGISTER_*. */
RUNTIME_FN(cudaHostRegister, (void *ptr, size_t size, unsigned int flags),
	   D.memHostRegister(ptr, size, flags))

RUNTIME_FN(cudaHostUnregister, (void *ptr),
	   D.memHostUnregister(ptr))

/* ---- stream-ordered allocation ---------------------------------------------- */

/* cudaMallocAsync (from_pool 0) and cudaMallocFromPoolAsync, legacy or
 * per-thread (pt) default stream. */
static cudaError_t rt_malloc_async(void **out, size_t size, int from_pool, cudaMemPool_t pool, cudaStream_t s,
				   int pt)
{
	cudaError_t e = rt_alloc_start(out, size);
	CUdeviceptr d = 0;

	if (e != RT_PROCEED)
		return e;
	return rt_ptr(from_pool ? DRV(memAllocFromPool, pt)(&d, size, pool, s) : DRV(memAllocAsync, pt)(&d, size, s),
		      &d, out);
}

static cudaError_t rt_free_async(void *p, cudaStream_t s, int pt)
{
	RT_ENTER();
	return p ? rt_drv(DRV(memFreeAsync, pt)(dptr(p), s)) : cudaSuccess;
}

STREAM_PAIR(cudaMallocAsync, _ptsz, (void **devPtr, size_t size, cudaStream_t hStream),
	    rt_malloc_async, devPtr, size, 0, NULL, hStream)

STREAM_PAIR(cudaMallocFromPoolAsync, _ptsz, (void **ptr, size_t size, cudaMemPool_t memPool,
	    cudaStream_t stream),
	    rt_malloc_async, ptr, size, 1, memPool, stream)

STREAM_PAIR(cudaFreeAsync, _ptsz, (void *devPtr, cudaStream_t hStream),
	    rt_free_async, devPtr, hStream)

cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	CUmemPoolProps p;

	RT_ENTER();
	if (!poolProps)
		return rt_fail(cudaErrorInvalidValue);
	memset(&p, 0, sizeof(p));
	p.allocType = (CUmemAllocationType)poolProps->allocType;
	p.handleTypes = (CUmemAllocationHandleType)poolProps->handleTypes;
	p.location.type = (CUmemLocationType)poolProps->location.type;
	p.location.id = poolProps->location.id;
	p.win32SecurityAttributes = poolProps->win32SecurityAttributes;
	p.maxSize = poolProps->maxSize;
	p.usage = poolProps->usage;
	return rt_drv(D.poolCreate(memPool, &p));
}

RUNTIME_FN(cudaMemPoolDestroy, (cudaMemPool_t memPool),
	   D.poolDestroy(memPool))

RUNTIME_FN(cudaMemPoolTrimTo, (cudaMemPool_t memPool, size_t minBytesToKeep),
	   D.poolTrimTo(memPool, minBytesToKeep))

/* cudaMemPoolAttr values are those of CUmemPool_attribute. */
RUNTIME_FN(cudaMemPoolSetAttribute, (cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value),
	   D.poolSetAttribute(memPool, (CUmemPool_attribute)attr, value))

RUNTIME_FN(cudaMemPoolGetAttribute, (cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value),
	   D.poolGetAttribute(memPool, (CUmemPool_attribute)attr, value))

RUNTIME_FN(cudaDeviceGetDefaultMemPool, (cudaMemPool_t *memPool, int device),
	   D.defaultMemPool(memPool, device))

/* ---- streams ---------------------------------------------------------------- */

RUNTIME_FN(cudaStreamCreate, (cudaStream_t *pStream),
	   D.streamCreate(pStream, CU_STREAM_DEFAULT))

/* cudaStreamNonBlocking is CU_STREAM_NON_BLOCKING. */
RUNTIME_FN(cudaStreamCreateWithFlags, (cudaStream_t *pStream, unsigned int flags),
	   D.streamCreate(pStream, flags))

RUNTIME_FN(cudaStreamCreateWithPriority, (cudaStream_t *pStream, unsigned int flags, int priority),
	   D.streamCreatePrio(pStream, flags, priority))

RUNTIME_FN(cudaStreamDestroy, (cudaStream_t stream),
	   D.streamDestroy(stream))

static cudaError_t rt_stream_sync(cudaStream_t stream, int query, int pt)
{
	RT_ENTER();
	return rt_drv(query ? DRV(streamQuery, pt)(stream) : DRV(streamSync, pt)(stream));
}

STREAM_PAIR(cudaStreamSynchronize, _ptsz, (cudaStream_t stream),
	    rt_stream_sync, stream, 0)

STREAM_PAIR(cudaStreamQuery, _ptsz, (cudaStream_t stream),
	    rt_stream_sync, stream, 1)

/* ---- copies ----------------------------------------------------------------- */

static cudaError_t rt_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, int pt)
{
	CUresult r;

	RT_ENTER();
	switch (kind) {
	case cudaMemcpyHostToDevice:
		r = DRV(memcpyHtoD, pt)(dptr(dst), src, count);
		break;
	case cudaMemcpyDeviceToHost:
		r = DRV(memcpyDtoH, pt)(dst, dptr(src), count);
		break;
	case cudaMemcpyHostToHost:
	case cudaMemcpyDeviceToDevice:
	case cudaMemcpyDefault:
		r = DRV(memcpy, pt)(dptr(dst), dptr(src), count);
		break;
	default:
		return rt_fail(cudaErrorInvalidMemcpyDirection);
	}
	return rt_drv(r);
}

STREAM_PAIR(cudaMemcpy, _ptds, (void *dst, const void *src, size_t count, enum cudaMemcpyKind kind),
	    rt_memcpy, dst, src, count, kind)

static cudaError_t rt_memset(void *devPtr, int value, size_t count, int pt)
{
	RT_ENTER();
	return rt_drv(DRV(memsetD8, pt)(dptr(devPtr), (unsigned char)value, count));
}

STREAM_PAIR(cudaMemset, _ptds, (void *devPtr, int value, size_t count),
	    rt_memset, devPtr, value, count)

/* ---- errors and versions -------------------------------------------------- */

cudaError_t CUDARTAPI cudaGetLastError(void)
{
	cudaError_t e = t_last;

	t_last = cudaSuccess;
	return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void)
{
	return t_last;
}

const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
	int i = error_index((int)error);

	return i >= 0 ? g_errors[i].name : "unrecognized error code";
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
	int i = error_index((int)error);

	return i >= 0 ? g_errors[i].text : "unrecognized error code";
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return rt_fail(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

/* With no driver to load the version is 0, and that is not an error. */
cudaError_t CUDARTAPI cudaDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return rt_fail(cudaErrorInvalidValue);
	if (rt_load_once()) {
		*driverVersion = 0;
		return cudaSuccess;
	}
	return rt_drv(D.driverGetVersion(driverVersion));
}

/* cudaGetDriverEntryPoint* forward to cuGetProcAddress_v2. cudaEnableDefault
 * means legacy streams, or per-thread streams from the _ptsz exports (what a
 * per-thread-default-stream build calls). A symbol the driver does not have
 * is not an error: *funcPtr is NULL and driverStatus says why. */
static cudaError_t rt_entry_point(const char *symbol, void **funcPtr, unsigned int cudaVersion,
				  unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus,
				  int pt)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	cuuint64_t cuflags;
	CUresult r;

	if (rt_load_once())
		return rt_fail(g_load_err);
	if (!symbol || !funcPtr || cudaVersion > INT32_MAX)
		return rt_fail(cudaErrorInvalidValue);
	switch (flags) {
	case cudaEnableDefault:
		cuflags = pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
		break;
	case cudaEnableLegacyStream:
		cuflags = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
		break;
	case cudaEnablePerThreadDefaultStream:
		cuflags = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
		break;
	default:
		return rt_fail(cudaErrorInvalidValue);
	}
	r = g_gpa(symbol, funcPtr, (int)cudaVersion, cuflags, &st);
	if (r == CUDA_ERROR_NOT_FOUND) {
		*funcPtr = NULL;
		r = CUDA_SUCCESS;
	}
	if (!r && driverStatus)
		*driverStatus = (enum cudaDriverEntryPointQueryResult)st;
	return rt_drv(r);
}

STREAM_PAIR(cudaGetDriverEntryPoint, _ptsz, (const char *symbol, void **funcPtr, unsigned long long flags,
	    enum cudaDriverEntryPointQueryResult *driverStatus),
	    rt_entry_point, symbol, funcPtr, CUDART_VERSION, flags, driverStatus)

STREAM_PAIR(cudaGetDriverEntryPointByVersion, _ptsz, (const char *symbol, void **funcPtr,
	    unsigned int cudaVersion, unsigned long long flags, enum cudaDriverEntryPointQueryResult *driverStatus),
	    rt_entry_point, symbol, funcPtr, cudaVersion, flags, driverStatus)

/* ---- CUDA graphs (issue 19 §2) ---------------------------------------------- */

/* Each is one driver call; cudaStreamCaptureMode and cudaGraphMemAttributeType
 * values are those of the driver's enums. */
static cudaError_t rt_begin_capture(cudaStream_t s, enum cudaStreamCaptureMode mode, int pt)
{
	RT_ENTER();
	return rt_drv(DRV(beginCapture, pt)(s, (CUstreamCaptureMode)mode));
}

static cudaError_t rt_end_capture(cudaStream_t s, cudaGraph_t *g, int pt)
{
	RT_ENTER();
	return rt_drv(DRV(endCapture, pt)(s, g));
}

static cudaError_t rt_is_capturing(cudaStream_t s, enum cudaStreamCaptureStatus *st, int pt)
{
	RT_ENTER();
	return rt_drv(DRV(isCapturing, pt)(s, (CUstreamCaptureStatus *)st));
}

static cudaError_t rt_instantiate_params(cudaGraphExec_t *pe, cudaGraph_t g, cudaGraphInstantiateParams *p, int pt)
{
	CUDA_GRAPH_INSTANTIATE_PARAMS d;
	CUresult r;

	RT_ENTER();
	if (!p)
		return rt_fail(cudaErrorInvalidValue);
	memset(&d, 0, sizeof(d));
	d.flags = p->flags;
	d.hUploadStream = p->uploadStream;
	r = DRV(instantiateParams, pt)(pe, g, &d);
	p->errNode_out = d.hErrNode_out;
	p->result_out = (cudaGraphInstantiateResult)d.result_out;
	return rt_drv(r);
}

static cudaError_t rt_graph_launch(cudaGraphExec_t e, cudaStream_t s, int pt)
{
	RT_ENTER();
	return rt_drv(DRV(graphLaunch, pt)(e, s));
}

STREAM_PAIR(cudaStreamBeginCapture, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureMode mode),
	    rt_begin_capture, stream, mode)

STREAM_PAIR(cudaStreamEndCapture, _ptsz, (cudaStream_t stream, cudaGraph_t *pGraph),
	    rt_end_capture, stream, pGraph)

STREAM_PAIR(cudaStreamIsCapturing, _ptsz, (cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus),
	    rt_is_capturing, stream, pCaptureStatus)

STREAM_PAIR(cudaGraphInstantiateWithParams, _ptsz, (cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
	    cudaGraphInstantiateParams *instantiateParams),
	    rt_instantiate_params, pGraphExec, graph, instantiateParams)

STREAM_PAIR(cudaGraphLaunch, _ptsz, (cudaGraphExec_t graphExec, cudaStream_t stream),
	    rt_graph_launch, graphExec, stream)

RUNTIME_FN(cudaGraphCreate, (cudaGraph_t *pGraph, unsigned int flags),
	   D.graphCreate(pGraph, flags))

RUNTIME_FN(cudaGraphDestroy, (cudaGraph_t graph),
	   D.graphDestroy(graph))

cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies, size_t numDependencies,
					       struct cudaMemAllocNodeParams *nodeParams)
{
	CUDA_MEM_ALLOC_NODE_PARAMS d;
	CUresult r;

	RT_ENTER();
	if (!nodeParams)
		return rt_fail(cudaErrorInvalidValue);
	memset(&d, 0, sizeof(d));
	d.poolProps.allocType = (CUmemAllocationType)nodeParams->poolProps.allocType;
	d.poolProps.handleTypes = (CUmemAllocationHandleType)nodeParams->poolProps.handleTypes;
	d.poolProps.location.type = (CUmemLocationType)nodeParams->poolProps.location.type;
	d.poolProps.location.id = nodeParams->poolProps.location.id;
	d.accessDescs = (const CUmemAccessDesc *)nodeParams->accessDescs;
	d.accessDescCount = nodeParams->accessDescCount;
	d.bytesize = nodeParams->bytesize;
	r = D.addMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &d);
	if (r == CUDA_SUCCESS)
		nodeParams->dptr = (void *)(uintptr_t)d.dptr;
	return rt_drv(r);
}

RUNTIME_FN(cudaGraphAddMemFreeNode, (cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
	   const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dptr),
	   D.addMemFreeNode(pGraphNode, graph, pDependencies, numDependencies, (CUdeviceptr)(uintptr_t)dptr))

RUNTIME_FN(cudaGraphInstantiate, (cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags),
	   D.instantiate(pGraphExec, graph, flags))

RUNTIME_FN(cudaGraphInstantiateWithFlags, (cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
	   unsigned long long flags),
	   D.instantiate(pGraphExec, graph, flags))

RUNTIME_FN(cudaGraphExecDestroy, (cudaGraphExec_t graphExec),
	   D.execDestroy(graphExec))

RUNTIME_FN(cudaDeviceGraphMemTrim, (int device),
	   D.graphMemTrim(device))

RUNTIME_FN(cudaDeviceGetGraphMemAttribute, (int device, enum cudaGraphMemAttributeType attr, void *value),
	   D.getGraphMemAttr(device, (CUgraphMem_attribute)attr, value))

RUNTIME_FN(cudaDeviceSetGraphMemAttribute, (int device, enum cudaGraphMemAttributeType attr, void *value),
	   D.setGraphMemAttr(device, (CUgraphMem_attribute)attr, value))
/* ---- imported and shared memory (issue 19 §4): the driver's ---- */

_Static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle), "IPC handle layout");
_Static_assert(sizeof(struct cudaMemPoolPtrExportData) == sizeof(CUmemPoolPtrExportData), "export data layout");

cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
	RT_ENTER();
	return rt_drv(D.ipcGetMemHandle((CUipcMemHandle *)handle, dptr(devPtr)));
}

cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
	CUipcMemHandle h;
	CUdeviceptr d = 0;

	RT_ENTER();
	if (!devPtr)
		return rt_fail(cudaErrorInvalidValue);
	memcpy(&h, &handle, sizeof h);
	return rt_ptr(D.ipcOpenMemHandle(&d, h, flags), &d, devPtr);
}

cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void *devPtr)
{
	RT_ENTER();
	return rt_drv(D.ipcCloseMemHandle(dptr(devPtr)));
}

cudaError_t CUDARTAPI cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *exportData, void *ptr)
{
	RT_ENTER();
	return rt_drv(D.poolExportPointer((CUmemPoolPtrExportData *)exportData, dptr(ptr)));
}

cudaError_t CUDARTAPI cudaMemPoolImportPointer(void **ptr, cudaMemPool_t memPool, struct cudaMemPoolPtrExportData *exportData)
{
	CUdeviceptr d = 0;

	RT_ENTER();
	if (!ptr)
		return rt_fail(cudaErrorInvalidValue);
	return rt_ptr(D.poolImportPointer(&d, (CUmemoryPool)memPool, (CUmemPoolPtrExportData *)exportData), &d, ptr);
}
