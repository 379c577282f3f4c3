/*
 * CUDA graph memory (issue 19 §2, tests/e2e/t_graphs.sh). MiB = 1,048,576 bytes; one
 * created stream s; device 0. Graph memory is committed at launch, freed by a free node,
 * the relaunch of an auto-free-on-launch exec, or cudaFree / cudaFreeAsync outside the
 * graph, and stays in the device's graph pool until cudaDeviceGraphMemTrim:
 *
 *   X  cudaMalloc 8 MiB, held to the end (ordinary device memory)
 *   Y  cudaMalloc 32 MiB live while A is captured, freed before A launches
 *   A  captured: cudaMallocAsync 64 MiB + cudaFreeAsync; launched twice  (alloc+free inside)
 *   B  captured: cudaMallocAsync 2 MiB; launched once; cudaFree after     (freed outside)
 *   C  captured: cudaMallocAsync 512 KiB; cudaGraphInstantiateWithParams; launched once;
 *      cudaFreeAsync on s after                                           (freed outside)
 *   D  driver: cuGraphAddMemAllocNode 3 MiB; launched once; never freed    (LEAK, kind graph)
 *   E  captured: cudaMallocAsync 4 MiB; auto-free-on-launch; launched 3 times, the last
 *      allocation freed by cudaFree                                       (relaunch)
 *   G  runtime nodes: cudaGraphAddMemAllocNode 1 MiB + cudaGraphAddMemFreeNode; launched once
 *   trim: cudaDeviceGraphMemTrim(0) after E's cudaFree: the pool keeps D's 3 MiB only.
 *
 * Graph allocations: 2 + 1 + 1 + 1 + 3 + 1 = 9 (152,567,808 + 1,048,576 = 153,616,384 B),
 * frees 8, 3 MiB live at exit. Peak of device bytes: X + A = 72 MiB at A's launch (not
 * 104 MiB at A's capture, where Y was live). Prints the graph memory attributes (used and
 * reserved, current and high) before and after the trim, and cudaMemGetInfo's used bytes
 * over the start: "graphattr TAG used=U used_high=UH reserved=R reserved_high=RH" and
 * "memdelta TAG N".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include <cuda.h>

#include "common.h"

#define MIB ((size_t)1 << 20)

static size_t free0;

static void show(const char *tag)
{
	cuuint64_t v[4];
	enum cudaGraphMemAttributeType a[4] = {cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrUsedMemHigh,
					       cudaGraphMemAttrReservedMemCurrent, cudaGraphMemAttrReservedMemHigh};
	for (int i = 0; i < 4; i++)
		CHECK(cudaDeviceGetGraphMemAttribute(0, a[i], &v[i]));
	size_t fr, total;
	CHECK(cudaMemGetInfo(&fr, &total));
	printf("graphattr %s used=%llu used_high=%llu reserved=%llu reserved_high=%llu\n", tag,
	       (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
	       (unsigned long long)v[3]);
	printf("memdelta %s %zu\n", tag, free0 - fr);
}

static NOINLINE void *capture_alloc(cudaStream_t s, size_t size, int free_inside, cudaGraph_t *g)
{
	void *p = NULL;
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMallocAsync(&p, size, s));
	if (free_inside)
		CHECK(cudaFreeAsync(p, s));
	CHECK(cudaStreamEndCapture(s, g));
	return p;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "graphs: no %s\n", name);
		exit(3);
	}
	return p;
}

int main(void)
{
	cudaStream_t s;
	cudaGraph_t ga, gb, gc, ge, gg;
	cudaGraphExec_t xa, xb, xc, xe, xg;
	void *x, *y, *b, *c, *e, *gp;
	size_t total;

	CHECK(cudaSetDevice(0));
	CHECK(cudaMemGetInfo(&free0, &total));
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc(&x, 8 * MIB));

	/* A: alloc + free inside the graph; Y is live while it is captured only */
	CHECK(cudaMalloc(&y, 32 * MIB));
	capture_alloc(s, 64 * MIB, 1, &ga);
	CHECK(cudaFree(y));
	CHECK(cudaGraphInstantiate(&xa, ga, 0));
	CHECK(cudaGraphLaunch(xa, s));
	CHECK(cudaGraphLaunch(xa, s));
	CHECK(cudaStreamSynchronize(s));
	show("after-A");

	/* B: freed outside with cudaFree */
	b = capture_alloc(s, 2 * MIB, 0, &gb);
	CHECK(cudaGraphInstantiateWithFlags(&xb, gb, 0));
	CHECK(cudaGraphLaunch(xb, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaFree(b));

	/* C: freed outside with cudaFreeAsync */
	c = capture_alloc(s, 512 * 1024, 0, &gc);
	cudaGraphInstantiateParams ip;
	memset(&ip, 0, sizeof ip);
	CHECK(cudaGraphInstantiateWithParams(&xc, gc, &ip));
	CHECK(cudaGraphLaunch(xc, s));
	CHECK(cudaFreeAsync(c, s));
	CHECK(cudaStreamSynchronize(s));

	/* D: the driver's explicit alloc node, never freed */
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!lib) {
		fprintf(stderr, "graphs: libcuda.so.1 not loaded\n");
		return 3;
	}
	CUresult (*graph_create)(CUgraph *, unsigned) = sym(lib, "cuGraphCreate");
	CUresult (*add_alloc)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *) =
		sym(lib, "cuGraphAddMemAllocNode");
	CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long) = sym(lib, "cuGraphInstantiateWithFlags");
	CUresult (*launch)(CUgraphExec, CUstream) = sym(lib, "cuGraphLaunch");
	CUresult (*exec_destroy)(CUgraphExec) = sym(lib, "cuGraphExecDestroy");
	CUresult (*graph_destroy)(CUgraph) = sym(lib, "cuGraphDestroy");
	CUgraph gd;
	CUgraphNode nd;
	CUgraphExec xd;
	CUDA_MEM_ALLOC_NODE_PARAMS dp;
	memset(&dp, 0, sizeof dp);
	dp.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	dp.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	dp.poolProps.location.id = 0;
	dp.bytesize = 3 * MIB;
	if (graph_create(&gd, 0) || add_alloc(&nd, gd, NULL, 0, &dp) || instantiate(&xd, gd, 0) ||
	    launch(xd, (CUstream)s)) {
		fprintf(stderr, "graphs: driver graph D failed\n");
		return 3;
	}
	CHECK(cudaStreamSynchronize(s));

	/* E: auto-free-on-launch, relaunched; the last allocation freed by cudaFree */
	e = capture_alloc(s, 4 * MIB, 0, &ge);
	CHECK(cudaGraphInstantiateWithFlags(&xe, ge, cudaGraphInstantiateFlagAutoFreeOnLaunch));
	for (int i = 0; i < 3; i++)
		CHECK(cudaGraphLaunch(xe, s));
	CHECK(cudaStreamSynchronize(s));
	show("after-E");

	/* G: the runtime's explicit alloc and free nodes */
	cudaGraphNode_t na, nf;
	struct cudaMemAllocNodeParams ap;
	memset(&ap, 0, sizeof ap);
	ap.poolProps.allocType = cudaMemAllocationTypePinned;
	ap.poolProps.location.type = cudaMemLocationTypeDevice;
	ap.poolProps.location.id = 0;
	ap.bytesize = 1 * MIB;
	CHECK(cudaGraphCreate(&gg, 0));
	CHECK(cudaGraphAddMemAllocNode(&na, gg, NULL, 0, &ap));
	gp = ap.dptr;
	CHECK(cudaGraphAddMemFreeNode(&nf, gg, &na, 1, gp));
	CHECK(cudaGraphInstantiate(&xg, gg, 0));
	CHECK(cudaGraphLaunch(xg, s));
	CHECK(cudaStreamSynchronize(s));

	CHECK(cudaFree(e));
	show("before-trim");
	CHECK(cudaDeviceGraphMemTrim(0));
	show("after-trim");

	CHECK(cudaGraphExecDestroy(xa));
	CHECK(cudaGraphExecDestroy(xb));
	CHECK(cudaGraphExecDestroy(xc));
	CHECK(cudaGraphExecDestroy(xe));
	CHECK(cudaGraphExecDestroy(xg));
	if (exec_destroy(xd) || graph_destroy(gd))
		return 3;
	CHECK(cudaGraphDestroy(ga));
	CHECK(cudaGraphDestroy(gb));
	CHECK(cudaGraphDestroy(gc));
	CHECK(cudaGraphDestroy(ge));
	CHECK(cudaGraphDestroy(gg));
	CHECK(cudaFree(x));
	CHECK(cudaStreamDestroy(s));
	show("end");
	return 0;
}
