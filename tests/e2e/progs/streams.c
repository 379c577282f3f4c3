/*
 * Streams (tests/e2e/t_streams.sh): S1 = cudaStreamCreate, S2 = non-blocking.
 *
 *   a = 1 MiB on S1, freed on S2                 cross-stream
 *   b = 2 MiB on S2, freed on S2; S2 synchronized twice
 *   c = 4 MiB on S1, freed on S1                 pending (S1 is never synchronized)
 *   d = 512 KiB per-thread (_ptsz, 0), freed by another thread with
 *       cudaFreeAsync_ptsz(d, 0): its own per-thread stream   cross-stream, pending
 *   e = 8 MiB on S2, freed on S1                 cross-stream, pending
 *   S2 destroyed; no device synchronization, S1 is left alive.
 *
 * Cross-stream: a, d, e (9.5 MiB). Pending at the end: c, e on S1 and d (12.5 MiB).
 * Prints the handles ("S1 0x..", "S2 0x..") and the threads' ids.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#define KiB 1024ul
#define MiB (1024ul * 1024ul)

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);

static void *d;

static void *free_d(void *arg)
{
	printf("tid2 %ld\n", (long)syscall(SYS_gettid));
	CHECK(cudaFreeAsync_ptsz(d, 0));
	return arg;
}

NOINLINE static void *alloc_on(size_t n, cudaStream_t s)
{
	void *p;
	CHECK(cudaMallocAsync(&p, n, s));
	return p;
}

int main(void)
{
	cudaStream_t s1, s2;
	printf("tid1 %ld\n", (long)syscall(SYS_gettid));
	CHECK(cudaStreamCreate(&s1));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	printf("S1 %p\nS2 %p\n", (void *)s1, (void *)s2);
	void *a = alloc_on(1 * MiB, s1);
	CHECK(cudaFreeAsync(a, s2));
	void *b = alloc_on(2 * MiB, s2);
	CHECK(cudaFreeAsync(b, s2));
	CHECK(cudaStreamSynchronize(s2));
	CHECK(cudaStreamSynchronize(s2));
	void *c = alloc_on(4 * MiB, s1);
	CHECK(cudaFreeAsync(c, s1));
	CHECK(cudaMallocAsync_ptsz(&d, 512 * KiB, 0));
	pthread_t t;
	pthread_create(&t, NULL, free_d, NULL);
	pthread_join(t, NULL);
	void *e = alloc_on(8 * MiB, s2);
	CHECK(cudaFreeAsync(e, s1));
	CHECK(cudaStreamDestroy(s2));
	return 0;
}
