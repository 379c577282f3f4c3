/*
 * The CUDA runtime API hooks: one row per intercepted symbol.
 *
 * A row is CT_RT(name, op, kind, (params), (args), in, out):
 *   op, kind  what the event records (enum ct_op / enum ct_kind, short names)
 *   in        statements run always, filling struct ct_call c from arguments
 *   out       statements run only when the real call succeeded, reading its
 *             out-parameters
 * Adding a hook is adding a row. The wrapper forwards to the next definition
 * of the symbol (the real libcudart), passes its return value and errno back
 * unchanged, and records nothing when the call is nested inside another
 * traced call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>

#include <cuda_runtime_api.h>

#include "ct.h"

/* Resolve the real symbol once; later calls read the cached pointer. */
static void *ct_next_symbol(void *_Atomic *cache, const char *name)
{
	void *fn = atomic_load_explicit(cache, memory_order_acquire);
	if (CT_LIKELY(fn != NULL))
		return fn;
	int saved = errno;
	fn = dlsym(RTLD_NEXT, name);
	errno = saved;
	if (fn)
		atomic_store_explicit(cache, fn, memory_order_release);
	return fn;
}

#define CT_STREAM_PER_THREAD ((uint64_t)0x2) /* cudaStreamPerThread */

/* _ptsz variants: stream 0 means the per-thread default stream. */
#define CT_PTSZ(s) ((s) ? (uint64_t)(uintptr_t)(s) : CT_STREAM_PER_THREAD)
#define CT_P(x) ((uint64_t)(uintptr_t)(x))

#define CT_RT(name, op_, kind_, params, args, in, out)                                       \
	typedef cudaError_t(*ct_fn_##name) params;                                            \
	CT_EXPORT cudaError_t name params;                                                    \
	cudaError_t name params                                                               \
	{                                                                                     \
		static void *_Atomic real;                                                    \
		ct_fn_##name fn = (ct_fn_##name)ct_next_symbol(&real, #name);                 \
		if (CT_UNLIKELY(!fn))                                                         \
			return cudaErrorSymbolNotFound;                                       \
		struct ct_call c;                                                             \
		if (!ct_call_begin(&c))                                                       \
			return fn args;                                                       \
		c.api = CT_API_##name;                                                        \
		c.op = CT_OP_##op_;                                                           \
		c.kind = CT_KIND_##kind_;                                                     \
		c.layer = CT_LAYER_RUNTIME;                                                   \
		in;                                                                           \
		cudaError_t rc = fn args;                                                     \
		int saved_errno = errno;                                                      \
		c.result = (int32_t)rc;                                                       \
		if (rc == cudaSuccess) {                                                      \
			out;                                                                  \
		}                                                                             \
		ct_call_end(&c);                                                              \
		errno = saved_errno;                                                          \
		return rc;                                                                    \
	}

/* Prototypes the public header only declares under per-thread-stream builds. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

/* clang-format off */
CT_RT(cudaMalloc, ALLOC, DEVICE, (void **devPtr, size_t size), (devPtr, size),
      c.size = size, c.ptr = CT_P(*devPtr))
CT_RT(cudaFree, FREE, DEVICE, (void *devPtr), (devPtr),
      c.ptr = CT_P(devPtr), (void)0)
CT_RT(cudaMallocHost, ALLOC, HOST_PINNED, (void **ptr, size_t size), (ptr, size),
      c.size = size, c.ptr = CT_P(*ptr))
CT_RT(cudaFreeHost, FREE, HOST_PINNED, (void *ptr), (ptr),
      c.ptr = CT_P(ptr), (void)0)
CT_RT(cudaHostAlloc, ALLOC, HOST_PINNED, (void **pHost, size_t size, unsigned int flags),
      (pHost, size, flags),
      { c.size = size; c.flags = flags; }, c.ptr = CT_P(*pHost))
CT_RT(cudaHostRegister, ALLOC, HOST_REGISTERED, (void *ptr, size_t size, unsigned int flags),
      (ptr, size, flags),
      { c.ptr = CT_P(ptr); c.size = size; c.flags = flags; }, (void)0)
CT_RT(cudaHostUnregister, FREE, HOST_REGISTERED, (void *ptr), (ptr),
      c.ptr = CT_P(ptr), (void)0)
CT_RT(cudaMallocManaged, ALLOC, MANAGED, (void **devPtr, size_t size, unsigned int flags),
      (devPtr, size, flags),
      { c.size = size; c.flags = flags; }, c.ptr = CT_P(*devPtr))
CT_RT(cudaMallocPitch, ALLOC, DEVICE, (void **devPtr, size_t *pitch, size_t width, size_t height),
      (devPtr, pitch, width, height),
      c.size = (uint64_t)width * height,
      { c.ptr = CT_P(*devPtr); c.aux = *pitch; c.size = (uint64_t)*pitch * height; })
CT_RT(cudaMalloc3D, ALLOC, DEVICE, (struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent),
      (pitchedDevPtr, extent),
      c.size = (uint64_t)extent.width * extent.height * extent.depth,
      { c.ptr = CT_P(pitchedDevPtr->ptr); c.aux = pitchedDevPtr->pitch;
        c.size = (uint64_t)pitchedDevPtr->pitch * extent.height * extent.depth; })
CT_RT(cudaMallocAsync, ALLOC, DEVICE, (void **devPtr, size_t size, cudaStream_t hStream),
      (devPtr, size, hStream),
      { c.size = size; c.stream = CT_P(hStream); }, c.ptr = CT_P(*devPtr))
CT_RT(cudaMallocAsync_ptsz, ALLOC, DEVICE, (void **devPtr, size_t size, cudaStream_t hStream),
      (devPtr, size, hStream),
      { c.size = size; c.stream = CT_PTSZ(hStream); }, c.ptr = CT_P(*devPtr))
CT_RT(cudaMallocFromPoolAsync, ALLOC, DEVICE,
      (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),
      (ptr, size, memPool, stream),
      { c.size = size; c.aux = CT_P(memPool); c.stream = CT_P(stream); }, c.ptr = CT_P(*ptr))
CT_RT(cudaMallocFromPoolAsync_ptsz, ALLOC, DEVICE,
      (void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream),
      (ptr, size, memPool, stream),
      { c.size = size; c.aux = CT_P(memPool); c.stream = CT_PTSZ(stream); }, c.ptr = CT_P(*ptr))
CT_RT(cudaFreeAsync, FREE, DEVICE, (void *devPtr, cudaStream_t hStream), (devPtr, hStream),
      { c.ptr = CT_P(devPtr); c.stream = CT_P(hStream); }, (void)0)
CT_RT(cudaFreeAsync_ptsz, FREE, DEVICE, (void *devPtr, cudaStream_t hStream), (devPtr, hStream),
      { c.ptr = CT_P(devPtr); c.stream = CT_PTSZ(hStream); }, (void)0)
CT_RT(cudaMemPoolCreate, POOL_CREATE, DEVICE,
      (cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps), (memPool, poolProps),
      (void)0, c.ptr = CT_P(*memPool))
CT_RT(cudaMemPoolDestroy, POOL_DESTROY, DEVICE, (cudaMemPool_t memPool), (memPool),
      c.ptr = CT_P(memPool), (void)0)
CT_RT(cudaMemPoolTrimTo, POOL_TRIM, DEVICE, (cudaMemPool_t memPool, size_t minBytesToKeep),
      (memPool, minBytesToKeep),
      { c.ptr = CT_P(memPool); c.size = minBytesToKeep; }, (void)0)
CT_RT(cudaStreamCreate, STREAM_CREATE, NONE, (cudaStream_t *pStream), (pStream),
      (void)0, c.ptr = CT_P(*pStream))
CT_RT(cudaStreamCreateWithFlags, STREAM_CREATE, NONE, (cudaStream_t *pStream, unsigned int flags),
      (pStream, flags),
      c.flags = flags, c.ptr = CT_P(*pStream))
CT_RT(cudaStreamCreateWithPriority, STREAM_CREATE, NONE,
      (cudaStream_t *pStream, unsigned int flags, int priority), (pStream, flags, priority),
      { c.flags = flags; c.aux = (uint64_t)(int64_t)priority; }, c.ptr = CT_P(*pStream))
CT_RT(cudaStreamDestroy, STREAM_DESTROY, NONE, (cudaStream_t stream), (stream),
      c.stream = CT_P(stream), (void)0)
CT_RT(cudaStreamSynchronize, STREAM_SYNC, NONE, (cudaStream_t stream), (stream),
      c.stream = CT_P(stream), (void)0)
CT_RT(cudaStreamSynchronize_ptsz, STREAM_SYNC, NONE, (cudaStream_t stream), (stream),
      c.stream = CT_PTSZ(stream), (void)0)
CT_RT(cudaDeviceSynchronize, DEVICE_SYNC, NONE, (void), (),
      (void)0, (void)0)
CT_RT(cudaDeviceReset, DEVICE_RESET, NONE, (void), (),
      (void)0, (void)0)
CT_RT(cudaSetDevice, SET_DEVICE, NONE, (int device), (device),
      c.device = (int16_t)device,
      { ct_tls.device = (int16_t)device; ct_tls.device_set = 1; })
/* clang-format on */
