/*
 * CUDA graph memory on a real device (issue 19 §2; tests/gpu/graph_check.sh), host code only
 * (memory nodes and memsets, no kernel): build with gcc -x c or nvcc, link -lcudart -lcuda.
 * MiB = 1,048,576; one created stream; device 0; every size a multiple of 2 MiB.
 *
 *   X    cudaMalloc 8 MiB, held to the end
 *   Y    cudaMalloc 32 MiB, live while IN is captured, freed before IN launches
 *   IN   captured cudaMallocAsync 64 MiB + memset + cudaFreeAsync, launched twice (freed inside)
 *   OUT  captured cudaMallocAsync 32 MiB + memset, launched once, cudaFree after   (freed outside)
 *   OUTA captured cudaMallocAsync 2 MiB, launched once, cudaFreeAsync after        (freed outside)
 *   LEAK cudaGraphAddMemAllocNode 16 MiB, launched once, never freed               (LEAKED)
 *   AUTO captured cudaMallocAsync 8 MiB, auto-free-on-launch, launched 3 times; the last
 *        allocation freed by cudaFree
 *   then cudaDeviceGraphMemTrim(0).
 * After each step: "GRAPH step used=U used_high=UH reserved=R reserved_high=RH memdelta=D"
 * (cudaDeviceGetGraphMemAttribute; D = the fall of cudaMemGetInfo's free bytes since the start,
 * after a synchronize). Ends with "GROUND_TRUTH leaked_count=1 leaked_bytes=16777216
 * graph_allocs=8 graph_frees=7 graph_bytes=N peak_bytes=75497472" (graph allocations as
 * cumtrace counts them: one per alloc node per launch; the peak of traced device and graph
 * bytes: X + IN at IN's launch, Y is gone by then).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
#define CK(call)                                                                               \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "leak_graph: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(3);                                                               \
		}                                                                              \
	} while (0)

static size_t free0;

static void step(const char *name)
{
	enum cudaGraphMemAttributeType a[4] = {cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrUsedMemHigh,
					       cudaGraphMemAttrReservedMemCurrent, cudaGraphMemAttrReservedMemHigh};
	unsigned long long v[4];
	size_t f, t;
	int i;
	CK(cudaDeviceSynchronize());
	for (i = 0; i < 4; i++)
		CK(cudaDeviceGetGraphMemAttribute(0, a[i], &v[i]));
	CK(cudaMemGetInfo(&f, &t));
	printf("GRAPH %s used=%llu used_high=%llu reserved=%llu reserved_high=%llu memdelta=%lld\n", name, v[0], v[1],
	       v[2], v[3], (long long)free0 - (long long)f);
	fflush(stdout);
}

static void *capture(cudaStream_t s, size_t size, int free_inside, cudaGraph_t *g)
{
	void *p = NULL;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaMallocAsync(&p, size, s));
	CK(cudaMemsetAsync(p, 1, size, s));
	if (free_inside)
		CK(cudaFreeAsync(p, s));
	CK(cudaStreamEndCapture(s, g));
	return p;
}

int main(void)
{
	cudaStream_t s;
	cudaGraph_t gin, gout, gouta, gleak, gauto;
	cudaGraphExec_t xin, xout, xouta, xleak, xauto;
	cudaGraphNode_t node;
	struct cudaMemAllocNodeParams ap;
	void *x, *y, *out, *outa, *lk, *au;
	size_t t;
	int i;

	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaDeviceSynchronize());
	CK(cudaMemGetInfo(&free0, &t));
	CK(cudaMalloc(&x, 8 * MIB));
	CK(cudaMalloc(&y, 32 * MIB));
	capture(s, 64 * MIB, 1, &gin);
	step("captured-IN");
	CK(cudaFree(y));
	CK(cudaGraphInstantiate(&xin, gin, 0));
	CK(cudaGraphLaunch(xin, s));
	CK(cudaGraphLaunch(xin, s));
	step("IN");

	out = capture(s, 32 * MIB, 0, &gout);
	CK(cudaGraphInstantiate(&xout, gout, 0));
	CK(cudaGraphLaunch(xout, s));
	CK(cudaStreamSynchronize(s));
	step("OUT-launched");
	CK(cudaFree(out));
	step("OUT-freed");

	outa = capture(s, 2 * MIB, 0, &gouta);
	CK(cudaGraphInstantiateWithFlags(&xouta, gouta, 0));
	CK(cudaGraphLaunch(xouta, s));
	CK(cudaFreeAsync(outa, s));
	step("OUTA");

	memset(&ap, 0, sizeof ap);
	ap.poolProps.allocType = cudaMemAllocationTypePinned;
	ap.poolProps.location.type = cudaMemLocationTypeDevice;
	ap.poolProps.location.id = 0;
	ap.bytesize = 16 * MIB;
	CK(cudaGraphCreate(&gleak, 0));
	CK(cudaGraphAddMemAllocNode(&node, gleak, NULL, 0, &ap));
	lk = ap.dptr;
	CK(cudaGraphInstantiate(&xleak, gleak, 0));
	CK(cudaGraphLaunch(xleak, s));
	step("LEAK");

	au = capture(s, 8 * MIB, 0, &gauto);
	CK(cudaGraphInstantiateWithFlags(&xauto, gauto, cudaGraphInstantiateFlagAutoFreeOnLaunch));
	for (i = 0; i < 3; i++)
		CK(cudaGraphLaunch(xauto, s));
	CK(cudaStreamSynchronize(s));
	step("AUTO-launched");
	CK(cudaFree(au));
	step("AUTO-freed");

	CK(cudaGraphExecDestroy(xin));
	CK(cudaGraphExecDestroy(xout));
	CK(cudaGraphExecDestroy(xouta));
	CK(cudaGraphExecDestroy(xleak));
	CK(cudaGraphExecDestroy(xauto));
	CK(cudaGraphDestroy(gin));
	CK(cudaGraphDestroy(gout));
	CK(cudaGraphDestroy(gouta));
	CK(cudaGraphDestroy(gleak));
	CK(cudaGraphDestroy(gauto));
	step("destroyed");
	CK(cudaDeviceGraphMemTrim(0));
	step("trimmed");
	CK(cudaFree(x));
	CK(cudaStreamDestroy(s));
	step("end");
	(void)lk; /* never freed */
	printf("GROUND_TRUTH leaked_count=1 leaked_bytes=%zu graph_allocs=8 graph_frees=7 graph_bytes=%zu "
	       "peak_bytes=%zu\n",
	       16 * MIB, (2 * 64 + 32 + 2 + 16 + 3 * 8) * MIB, 72 * MIB);
	return 0;
}
