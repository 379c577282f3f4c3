/*
 * Benchmark driver shaped like a training step on the stream-ordered
 * allocator (issue #6): each step makes 8 cudaMallocAsync of 64-512 KiB and
 * frees them with cudaFreeAsync on one stream, synchronizing every 64 steps.
 * Built with -O2 and no frame pointers (Makefile), like a real program. The
 * timed loop is run(), STEPS steps after a warm-up of STEPS/10; prints
 * "async_loop ns/step=W".
 * usage: async_loop STEPS
 */
#include <time.h>

#include "common.h"

NOINLINE static void run(cudaStream_t s, int steps)
{
	void *p[8];
	for (int i = 0; i < steps; i++) {
		for (int b = 0; b < 8; b++)
			CHECK(cudaMallocAsync(&p[b], (size_t)(64 + 64 * b) << 10, s));
		for (int b = 0; b < 8; b++)
			CHECK(cudaFreeAsync(p[b], s));
		if ((i & 63) == 63)
			CHECK(cudaStreamSynchronize(s));
	}
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int steps = atoi(argv[1]);
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));
	run(s, steps / 10);
	double t0 = now();
	run(s, steps);
	printf("async_loop ns/step=%.1f\n", (now() - t0) / steps * 1e9);
	CHECK(cudaStreamSynchronize(s));
	return 0;
}
