/*
 * Benchmark driver: PAIRS cudaMalloc/cudaFree pairs made DEPTH frames deep
 * from THREADS threads at once; prints the wall time per pair in ns.
 * usage: bench_alloc PAIRS DEPTH THREADS
 */
#include <pthread.h>
#include <time.h>

#include "common.h"

static long pairs;
static int depth;

NOINLINE static long run_at_depth(int d)
{
	if (d > 0)
		return run_at_depth(d - 1) + 1; /* not a tail call: keeps the frame */
	void *p;
	for (long i = 0; i < pairs; i++) {
		CHECK(cudaMalloc(&p, 256));
		CHECK(cudaFree(p));
	}
	return 0;
}

static void *worker(void *arg)
{
	run_at_depth(depth);
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	pairs = atol(argv[1]);
	depth = atoi(argv[2]);
	int threads = atoi(argv[3]);
	void *warm;
	CHECK(cudaMalloc(&warm, 256)); /* runtime and tracer start-up out of the timing */
	CHECK(cudaFree(warm));
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_t t[64];
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	printf("%.1f\n", ns / (double)(pairs * threads));
	return 0;
}
