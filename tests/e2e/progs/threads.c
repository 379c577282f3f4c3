/*
 * THREADS threads, each making PAIRS cudaMalloc/cudaFree pairs and leaking
 * one 1000-byte block: exact totals regardless of interleaving.
 * usage: threads [THREADS [PAIRS]]
 */
#include <pthread.h>

#include "common.h"

static int pairs = 5000;

static void *worker(void *arg)
{
	size_t size = 256 * (size_t)(1 + (long)arg);
	void *p;
	for (int i = 0; i < pairs; i++) {
		CHECK(cudaMalloc(&p, size));
		CHECK(cudaFree(p));
	}
	CHECK(cudaMalloc(&p, 1000));
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	if (argc > 2)
		pairs = atoi(argv[2]);
	pthread_t t[256];
	if (threads < 1 || threads > 256)
		return 2;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("expect allocations %ld\n", (long)threads * (pairs + 1));
	printf("expect frees %ld\n", (long)threads * pairs);
	printf("expect leak_count %d\n", threads);
	printf("expect leak_bytes %d\n", threads * 1000);
	return 0;
}
