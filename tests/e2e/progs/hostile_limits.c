/*
 * A program under tight resource limits. It prints what each of its calls
 * returned (the same lines traced and untraced, or the shim changed it) and
 * exits 0.
 *
 * usage: hostile_limits nofile N PAIRS   set RLIMIT_NOFILE to N, then make
 *                                        PAIRS cudaMalloc/cudaFree pairs and
 *                                        open a file of its own
 *        hostile_limits vm MB PAIRS      one CUDA call, then malloc MB MiB and
 *                                        touch it, then PAIRS pairs (run it
 *                                        under ulimit -v)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"

/* PAIRS pairs; prints how many succeeded and the first failure. */
static void pairs_report(long pairs)
{
	long ok = 0;
	int first_error = 0;
	for (long i = 0; i < pairs; i++) {
		void *p = NULL;
		int rc = cudaMalloc(&p, 4096);
		if (rc == cudaSuccess)
			rc = cudaFree(p);
		if (rc == cudaSuccess)
			ok++;
		else if (!first_error)
			first_error = rc;
	}
	printf("pairs ok %ld of %ld, first error %d\n", ok, pairs, first_error);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[2]);
	long pairs = atol(argv[3]);
	if (strcmp(argv[1], "nofile") == 0) {
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = (rlim_t)n;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
			perror("setrlimit");
			return 2;
		}
		pairs_report(pairs);
		int fd = open("/dev/null", O_RDONLY);
		printf("open: %s\n", fd >= 0 ? "ok" : strerror(errno));
		return 0;
	}
	if (strcmp(argv[1], "vm") == 0) {
		void *p = NULL;
		int rc = cudaMalloc(&p, 4096);
		printf("first cudaMalloc %d\n", rc);
		size_t size = (size_t)n << 20;
		char *mem = malloc(size);
		printf("malloc %ld MiB: %s\n", n, mem ? "ok" : "failed");
		if (mem)
			memset(mem, 1, size);
		free(mem);
		pairs_report(pairs);
		return 0;
	}
	return 2;
}
