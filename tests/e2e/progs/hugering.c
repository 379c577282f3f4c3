/*
 * Records a few events, then counts its own mappings of exactly 2 MiB that
 * asked for transparent huge pages (VmFlags "hg" in /proc/self/smaps): the
 * traced threads' rings (CUMTRACE_HUGE_PAGES). With THREADS, that many more
 * threads each make one allocation first and stay alive (each keeps its
 * ring) while it counts. Prints "advised 2 MiB mappings: N".
 * usage: hugering [THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static pthread_barrier_t called, counted;

static void *one_call(void *arg)
{
	void *p;
	CHECK(cudaMalloc(&p, 4096));
	CHECK(cudaFree(p));
	pthread_barrier_wait(&called);
	pthread_barrier_wait(&counted);
	return arg;
}

static int advised_2mib(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f) {
		perror("/proc/self/smaps");
		exit(1);
	}
	char line[512];
	int two_mib = 0, n = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long kb;
		if (sscanf(line, "Size: %lu kB", &kb) == 1)
			two_mib = kb == 2048;
		else if (strncmp(line, "VmFlags:", 8) == 0 && two_mib && strstr(line, " hg"))
			n++;
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 0;
	for (int i = 0; i < 100; i++) {
		void *p;
		CHECK(cudaMalloc(&p, 4096));
		CHECK(cudaFree(p));
	}
	pthread_t t[64];
	if (threads < 0 || threads > 64)
		return 2;
	pthread_barrier_init(&called, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&counted, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, one_call, NULL);
	if (threads)
		pthread_barrier_wait(&called);
	printf("advised 2 MiB mappings: %d\n", advised_2mib());
	if (threads)
		pthread_barrier_wait(&counted);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
