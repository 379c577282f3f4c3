/*
 * killme, throttled, for tests/e2e/t_hostile_kill.sh: THREADS threads
 * allocate and free blocks of assorted sizes, resting 200 us every 16
 * allocations (so 400 ms make a dump the analyzer reads in well under a
 * second), and publish how many allocations have returned in a shared
 * counter file, until killed.
 * usage: hostile_kill COUNTER_FILE THREADS
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
	size_t size = 256 << ((long)arg % 4);
	for (unsigned long i = 1;; i++) {
		void *p;
		CHECK(cudaMalloc(&p, size));
		atomic_fetch_add(counter, 1);
		CHECK(cudaFree(p));
		if ((i & 15) == 0)
			usleep(200);
	}
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0)
		return 2;
	counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (counter == MAP_FAILED)
		return 2;
	int threads = atoi(argv[2]);
	alarm(20); /* never outlive a broken test by long */
	pthread_t t;
	for (long i = 1; i < threads; i++)
		pthread_create(&t, NULL, worker, (void *)i);
	worker(NULL);
	return 0;
}
