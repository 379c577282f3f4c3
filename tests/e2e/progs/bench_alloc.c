/*
 * Benchmark driver: PAIRS allocation/free pairs made DEPTH frames deep from
 * THREADS threads at once, with cudaMalloc/cudaFree (MODE cuda, the default)
 * or malloc/free (MODE malloc: what a heap profiler such as heaptrack traces).
 * Prints "bench_alloc wall=W cpu=C thread=T" in ns per pair: W the wall time,
 * C the process's CPU time (every thread, a tracer's own included), both from
 * the start of the first thread to the end of the last, and T the CPU time of
 * the allocating threads alone (what the calls cost where they are made; on
 * a busy machine far steadier than W).
 * BENCH_PAUSED=1: tracing paused (cumtrace_bench_pause) before the timed pairs,
 * so a traced run measures what the shim's wrappers cost when they only
 * forward (exit 4 when the shim is not there or does not record).
 * usage: bench_alloc PAIRS DEPTH THREADS [cuda|malloc]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common.h"

static long pairs;
static int depth;
static int use_malloc;

NOINLINE static long run_at_depth(int d)
{
	if (d > 0)
		return run_at_depth(d - 1) + 1; /* not a tail call: keeps the frame */
	void *p;
	if (use_malloc) {
		for (long i = 0; i < pairs; i++) {
			p = malloc(256);
			__asm__ __volatile__("" : : "r"(p) : "memory"); /* keep the pair */
			free(p);
		}
		return 0;
	}
	for (long i = 0; i < pairs; i++) {
		CHECK(cudaMalloc(&p, 256));
		CHECK(cudaFree(p));
	}
	return 0;
}

static _Atomic long long thread_ns; /* summed over the workers */

static void *worker(void *arg)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	run_at_depth(depth);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	thread_ns += (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
	return arg;
}

static double cpu_ns(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	pairs = atol(argv[1]);
	depth = atoi(argv[2]);
	int threads = atoi(argv[3]);
	use_malloc = argc > 4 && strcmp(argv[4], "malloc") == 0;
	void *warm;
	CHECK(cudaMalloc(&warm, 256)); /* runtime and tracer start-up out of the timing */
	CHECK(cudaFree(warm));
	const char *paused = getenv("BENCH_PAUSED");
	if (paused && strcmp(paused, "1") == 0) {
		int (*bench_pause)(int) = (int (*)(int))dlsym(RTLD_DEFAULT, "cumtrace_bench_pause");
		if (!bench_pause || bench_pause(1) != 0)
			return 4;
	}
	struct timespec a, b;
	double c0 = cpu_ns();
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_t t[64];
	for (int i = 0; i < threads && i < 64; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads && i < 64; i++)
		pthread_join(t[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double c1 = cpu_ns();
	double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	double n = (double)pairs * threads;
	printf("bench_alloc wall=%.1f cpu=%.1f thread=%.1f\n", ns / n, (c1 - c0) / n,
	       (double)thread_ns / n);
	return 0;
}
