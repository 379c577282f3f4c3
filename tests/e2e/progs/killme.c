/*
 * Allocate and free 256-byte blocks forever, publishing how many allocations
 * have returned in a shared counter file, until killed.
 * usage: killme COUNTER_FILE [THREADS]
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

static _Atomic unsigned long *counter;

static void *worker(void *arg)
{
	for (;;) {
		void *p;
		CHECK(cudaMalloc(&p, 256));
		atomic_fetch_add(counter, 1);
		CHECK(cudaFree(p));
		if ((atomic_load(counter) & 1023) == 0)
			usleep(100);
	}
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0)
		return 2;
	counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (counter == MAP_FAILED)
		return 2;
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	alarm(20); /* never outlive a broken test by long */
	pthread_t t;
	for (int i = 1; i < threads; i++)
		pthread_create(&t, NULL, worker, NULL);
	worker(NULL);
	return 0;
}
