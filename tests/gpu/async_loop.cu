/*
 * The overhead benchmark of stream-ordered allocation: every step allocates
 * BLOCKS blocks with cudaMallocAsync on one stream, runs a small kernel over
 * each and frees them with cudaFreeAsync; every 64 steps the stream is
 * synchronized. It prints one line
 *
 *   ASYNC_LOOP {"steps": N, "seconds": S, "steps_per_s": R, "allocs": A}
 *
 * measured over the steps after a warm-up (scripts/gpu-validate.sh runs it
 * untraced and traced, alternately, and compares steps per second).
 *
 * usage: async_loop [STEPS] [BLOCKS]
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(call)                                                                        \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "async_loop: %s failed: %s\n", #call,           \
				cudaGetErrorString(e_));                                \
			exit(3);                                                        \
		}                                                                       \
	} while (0)

__global__ void fill(float *p, size_t n, float v)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = v;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(cudaStream_t s, int steps, int blocks, long *allocs)
{
	void *p[64];
	for (int i = 0; i < steps; i++) {
		for (int b = 0; b < blocks; b++) {
			size_t bytes = (size_t)(64 + 64 * b) << 10; /* 64 KiB .. 4 MiB */
			CK(cudaMallocAsync(&p[b], bytes, s));
			fill<<<32, 256, 0, s>>>((float *)p[b], bytes / sizeof(float), (float)i);
			(*allocs)++;
		}
		for (int b = 0; b < blocks; b++)
			CK(cudaFreeAsync(p[b], s));
		if ((i & 63) == 63)
			CK(cudaStreamSynchronize(s));
	}
	CK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 20000;
	int blocks = argc > 2 ? atoi(argv[2]) : 8;
	if (steps < 1 || blocks < 1 || blocks > 64) {
		fprintf(stderr, "usage: async_loop [STEPS] [BLOCKS 1..64]\n");
		return 2;
	}
	CK(cudaSetDevice(0));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	long allocs = 0;
	run(s, steps / 10 + 1, blocks, &allocs); /* warm-up: the pool grows to its size */
	allocs = 0;
	double t0 = now_s();
	run(s, steps, blocks, &allocs);
	double secs = now_s() - t0;
	printf("ASYNC_LOOP {\"steps\": %d, \"seconds\": %.6f, \"steps_per_s\": %.3f, \"allocs\": %ld}\n",
	       steps, secs, steps / secs, allocs);
	CK(cudaStreamDestroy(s));
	return 0;
}
