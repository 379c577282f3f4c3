/*
 * Driver API (libcuda) wrappers: the CT_DRV rows of hooks.def. They are
 * reached by export (programs linked against libcuda), by dlsym on a libcuda
 * handle, and through cuGetProcAddress / cudaGetDriverEntryPoint (entry.c).
 */
#define _GNU_SOURCE
#include <errno.h>

#include <cuda.h>

#include "arrays.h"
#include "hooks.h"

/* Prototypes cuda.h only declares under per-thread-stream builds. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				      CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
/* ---- CUDA graphs (issue 19 §2) ---- */
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
					   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraph, CUstream hStream);

#define CT_DRV(name, base, minver, ptsz, cupti, op, kind, params, args, in, out)                  \
	CT_WRAP(CUresult, CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND, CT_LAYER_DRIVER, name, op, kind,  \
		params, args, in, out)
#include "hooks.def"

const struct ct_hook ct_hooks_driver[] = {
#define CT_DRV(name, base, minver, ptsz, cupti, op, kind, params, args, in, out)                  \
	{#name, #base, minver, ptsz, CT_LAYER_DRIVER, (void *)name, &ct_real_##name},
#include "hooks.def"
};
const size_t ct_hooks_driver_count = sizeof ct_hooks_driver / sizeof ct_hooks_driver[0];
