/*
 * Device memory samples (issue 19 §6, tests/e2e/t_memsample.sh). MiB = 1,048,576; device 0;
 * run with CUMTRACE_MEMSAMPLE_MS=1 (each synchronization below comes 20 ms after the last):
 *
 *   X  cudaMalloc 4 MiB                         the first sample (the first allocation)
 *   the default pool keeps what is freed (release threshold: all);
 *   P  cudaMallocAsync 8 MiB, Q 2 MiB; P freed; R cudaMallocFromPoolAsync 4 MiB from a pool
 *      of cudaMemPoolCreate (the fake keeps what such a pool frees), freed;
 *      cudaStreamSynchronize: a sample of two pools, reserved 14 MiB, used 2 MiB
 *   G  a captured 16 MiB alloc + free, launched once; cudaDeviceSynchronize: a sample with
 *      the graph pool holding 16 MiB
 *   exit with X and Q live: the exit sample.
 * In the fake driver cudaMemGetInfo's used = what is charged: at the last sync and at exit
 * 4 + 14 + 16 = 34 MiB = allocations 6 MiB + pool reserve 12 MiB + graph pool reserve 16 MiB.
 * Prints "inuse TAG N" (cudaMemGetInfo's total - free) after each step.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common.h"

#define MIB ((size_t)1 << 20)

static void pause20(void)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

static void inuse(const char *tag)
{
	size_t f, t;
	CHECK(cudaMemGetInfo(&f, &t));
	printf("inuse %s %zu\n", tag, t - f);
}

int main(void)
{
	cudaStream_t s;
	cudaMemPool_t pool, mine;
	struct cudaMemPoolProps pp;
	cudaGraph_t g;
	cudaGraphExec_t x;
	void *a, *p, *q, *r, *gp;
	uint64_t keep = UINT64_MAX;

	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&a, 4 * MIB));
	inuse("X");
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
	CHECK(cudaMallocAsync(&p, 8 * MIB, s));
	CHECK(cudaMallocAsync(&q, 2 * MIB, s));
	CHECK(cudaFreeAsync(p, s));
	memset(&pp, 0, sizeof pp);
	pp.allocType = cudaMemAllocationTypePinned;
	pp.location.type = cudaMemLocationTypeDevice;
	pp.location.id = 0;
	CHECK(cudaMemPoolCreate(&mine, &pp));
	CHECK(cudaMallocFromPoolAsync(&r, 4 * MIB, mine, s));
	CHECK(cudaFreeAsync(r, s));
	pause20();
	CHECK(cudaStreamSynchronize(s));
	inuse("pool");
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMallocAsync(&gp, 16 * MIB, s));
	CHECK(cudaFreeAsync(gp, s));
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&x, g, 0));
	CHECK(cudaGraphLaunch(x, s));
	pause20();
	CHECK(cudaDeviceSynchronize());
	inuse("graph");
	return 0;
}
