/*
 * Timestamps against the program's own CLOCK_MONOTONIC: THREADS threads each
 * make ROUNDS cudaMalloc/cudaFree pairs, 30 ms apart (so that they span
 * several writer rounds and calibration points), and print for each call
 * "call TID PTR OP BEFORE AFTER": the clock read just before and just after
 * it. tests/e2e/t_clock.sh checks that every event's ts_ns lies in between.
 * usage: clock_bracket THREADS ROUNDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static int rounds;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	long tid = syscall(SYS_gettid);
	for (int i = 0; i < rounds; i++) {
		void *p;
		uint64_t a = now_ns();
		CHECK(cudaMalloc(&p, 4096));
		uint64_t b = now_ns();
		struct timespec nap = {0, 30 * 1000 * 1000};
		nanosleep(&nap, NULL);
		uint64_t c = now_ns();
		CHECK(cudaFree(p));
		uint64_t d = now_ns();
		pthread_mutex_lock(&out_lock);
		printf("call %ld %p alloc %llu %llu\n", tid, p, (unsigned long long)a,
		       (unsigned long long)b);
		printf("call %ld %p free %llu %llu\n", tid, p, (unsigned long long)c,
		       (unsigned long long)d);
		pthread_mutex_unlock(&out_lock);
		nanosleep(&nap, NULL);
	}
	return arg;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int threads = atoi(argv[1]);
	rounds = atoi(argv[2]);
	pthread_t t[16];
	for (int i = 0; i < threads && i < 16; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads && i < 16; i++)
		pthread_join(t[i], NULL);
	return 0;
}
