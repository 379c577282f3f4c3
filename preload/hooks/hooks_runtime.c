/*
 * Runtime API (libcudart) wrappers: the CT_RT rows of hooks.def.
 */
#define _GNU_SOURCE
#include <errno.h>

#include <cuda_runtime_api.h>

#include "arrays.h"
#include "hooks.h"

/* Prototypes the public header only declares under per-thread-stream builds. */
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
/* ---- CUDA graphs (issue 19 §2) ---- */
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						cudaGraphInstantiateParams *instantiateParams);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

#define CT_RT(name, ptsz, cupti, op, kind, params, args, in, out)                                 \
	CT_WRAP(cudaError_t, cudaSuccess, cudaErrorSymbolNotFound, CT_LAYER_RUNTIME, name, op, \
		kind, params, args, in, out)
#include "hooks.def"

const struct ct_hook ct_hooks_runtime[] = {
#define CT_RT(name, ptsz, cupti, op, kind, params, args, in, out)                                 \
	{#name, #name, 0, ptsz, CT_LAYER_RUNTIME, (void *)name, &ct_real_##name},
#include "hooks.def"
};
const size_t ct_hooks_runtime_count = sizeof ct_hooks_runtime / sizeof ct_hooks_runtime[0];
