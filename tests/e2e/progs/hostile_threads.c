/*
 * THREADS threads released at once by a barrier, each making PAIRS
 * cudaMalloc/cudaFree pairs and leaking one block, in WAVES successive waves
 * (each wave's threads exit before the next starts, so rings are reused);
 * with MARK_EVERY, each thread also calls cumtrace_mark (when preloaded)
 * after every MARK_EVERY pairs. Prints "expect KEY VALUE" lines.
 * usage: hostile_threads THREADS PAIRS [WAVES [MARK_EVERY]]
 */
#include <dlfcn.h>
#include <pthread.h>

#include "common.h"

static long pairs, mark_every;
static void (*mark)(const char *);
static pthread_barrier_t start;

static void *worker(void *arg)
{
	size_t size = 512 * (size_t)(1 + (long)arg % 7);
	void *p;
	pthread_barrier_wait(&start);
	for (long i = 0; i < pairs; i++) {
		CHECK(cudaMalloc(&p, size));
		CHECK(cudaFree(p));
		if (mark && (i + 1) % mark_every == 0)
			mark("tick");
	}
	CHECK(cudaMalloc(&p, 1000));
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int threads = atoi(argv[1]);
	pairs = atol(argv[2]);
	int waves = argc > 3 ? atoi(argv[3]) : 1;
	mark_every = argc > 4 ? atol(argv[4]) : 0;
	if (threads < 1 || threads > 256 || waves < 1 || mark_every < 0)
		return 2;
	if (mark_every)
		mark = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cumtrace_mark");
	pthread_t t[256];
	for (int w = 0; w < waves; w++) {
		pthread_barrier_init(&start, NULL, (unsigned)threads);
		for (long i = 0; i < threads; i++)
			if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
				return 4;
		for (int i = 0; i < threads; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&start);
	}
	long n = (long)threads * waves;
	printf("expect allocations %ld\n", n * (pairs + 1));
	printf("expect frees %ld\n", n * pairs);
	printf("expect events %ld\n", n * (2 * pairs + 1));
	printf("expect leak_count %ld\n", n);
	printf("expect leak_bytes %ld\n", n * 1000);
	printf("expect marks %ld\n", mark ? n * (pairs / mark_every) : 0);
	return 0;
}
