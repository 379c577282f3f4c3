/*
 * CUDA graphs (issue 19 §2): which stream-ordered allocations and frees are
 * captured into a graph rather than made.
 *
 * cudaMallocAsync on a capturing stream returns an address at once, but the
 * memory is the graph's, committed at launch: the event becomes an alloc
 * node (CT_OP_GRAPH_ALLOC, format.h) that the analyzer commits at each
 * launch of an exec made from the graph. The query is the driver's own
 * cuStreamGetCaptureInfo (the CUDA 12.3+ form, which names the graph),
 * legal during capture on the stream itself; it is never asked about the
 * legacy default stream (handle 0 or 1), which cannot capture and whose
 * query while another stream captures in global mode would invalidate that
 * capture. Nothing here is an event.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>

#include <cuda.h>

#include "hooks.h"

typedef CUresult (*ct_ctx_current_fn)(CUcontext *ctx);
typedef CUresult (*ct_capture_info_fn)(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
				       const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps);

static void *_Atomic ct_gr_ctx_current;
static void *_Atomic ct_gr_capture_info; /* set last */
static _Atomic int ct_gr_missing;	 /* the driver has no such query: never ask again */

static ct_capture_info_fn ct_graph_resolve(ct_ctx_current_fn *cur)
{
	void *info = atomic_load_explicit(&ct_gr_capture_info, memory_order_acquire);
	if (!info && !atomic_load_explicit(&ct_gr_missing, memory_order_relaxed)) {
		if (!atomic_load_explicit(&ct_driver_seen, memory_order_relaxed))
			return NULL; /* no driver loaded yet (hooks.h): no capture either */
		void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
		void *c = ct_driver_symbol(lib, "cuCtxGetCurrent");
		info = ct_driver_symbol(lib, "cuStreamGetCaptureInfo_v3");
		if (!c || !info) {
			if (lib) /* the driver is loaded and lacks it (older than 12.3) */
				atomic_store_explicit(&ct_gr_missing, 1, memory_order_relaxed);
			return NULL;
		}
		atomic_store_explicit(&ct_gr_ctx_current, c, memory_order_relaxed);
		atomic_store_explicit(&ct_gr_capture_info, info, memory_order_release);
	}
	*cur = (ct_ctx_current_fn)atomic_load_explicit(&ct_gr_ctx_current, memory_order_relaxed);
	return (ct_capture_info_fn)info;
}

void ct_graph_capture_note(struct ct_call *c)
{
	if (c->stream == 0 || c->stream == CT_P(CU_STREAM_LEGACY))
		return;
	int saved_errno = errno;
	ct_ctx_current_fn cur;
	ct_capture_info_fn info = ct_graph_resolve(&cur);
	CUcontext ctx = NULL;
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUgraph graph = NULL;
	if (info && cur(&ctx) == CUDA_SUCCESS && ctx &&
	    info((CUstream)(uintptr_t)c->stream, &st, NULL, &graph, NULL, NULL, NULL) == CUDA_SUCCESS &&
	    st == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
		c->op = c->op == CT_OP_FREE ? CT_OP_GRAPH_FREE : CT_OP_GRAPH_ALLOC;
		c->kind = CT_KIND_GRAPH;
		c->aux = CT_P(graph);
	}
	errno = saved_errno;
}
