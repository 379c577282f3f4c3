/*
 * cumtrace_bench_pause as tests/e2e/t_bench_pause.sh checks it: 4 MiB
 * allocated and freed traced, a 1 MiB block allocated traced and freed while
 * paused (it reads as live at exit: nothing is allocated after it, which could
 * be given its address), 2 MiB allocated while paused by this thread and 8 MiB
 * by another (neither is recorded), a CuPy pool block handed out while paused
 * (not recorded) and one handed out and given back after the resume (two
 * framework events), then a pause asked twice (one pause) and a resume. With
 * the argument "fork": paused, a child allocates and frees 16 MiB (traced:
 * a fork child starts unpaused) and exits; the parent resumes. Every call's result is checked
 * and printed as "rc NAME VALUE"; without the shim it prints "untraced".
 */
#include <cumtrace/cumtrace.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

static void *worker(void *arg)
{
	void *p;
	CHECK(cudaMalloc(&p, 8 * MiB));
	CHECK(cudaFree(p));
	return arg;
}

int main(int argc, char **argv)
{
	__typeof__(cumtrace_bench_pause) *bench_pause =
		(__typeof__(cumtrace_bench_pause) *)dlsym(RTLD_DEFAULT, "cumtrace_bench_pause");
	if (!bench_pause) {
		puts("untraced");
		return 0;
	}
	__typeof__(cumtrace_cupy_alloc) *cupy_alloc =
		(__typeof__(cumtrace_cupy_alloc) *)dlsym(RTLD_DEFAULT, "cumtrace_cupy_alloc");
	__typeof__(cumtrace_cupy_free) *cupy_free =
		(__typeof__(cumtrace_cupy_free) *)dlsym(RTLD_DEFAULT, "cumtrace_cupy_free");
	void *a, *b, *c;
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		CHECK(cudaMalloc(&a, 1 * MiB));
		printf("rc pause %d\n", bench_pause(1));
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			CHECK(cudaMalloc(&b, 16 * MiB));
			CHECK(cudaFree(b));
			_exit(0);
		}
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 5;
		printf("rc resume %d\n", bench_pause(0));
		CHECK(cudaFree(a));
		return 0;
	}
	CHECK(cudaMalloc(&c, 4 * MiB));
	CHECK(cudaFree(c));
	CHECK(cudaMalloc(&a, 1 * MiB));
	printf("rc pause %d\n", bench_pause(1));
	CHECK(cudaMalloc(&b, 2 * MiB));
	CHECK(cudaFree(a));
	pthread_t th;
	if (pthread_create(&th, NULL, worker, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 4;
	CHECK(cudaFree(b));
	cupy_alloc(0, 0x7f0000100000ull, 512, 500);
	printf("rc resume %d\n", bench_pause(0));
	cupy_alloc(0, 0x7f0000200000ull, 256, 256);
	cupy_free(0, 0x7f0000200000ull, 256);
	printf("rc again %d %d %d\n", bench_pause(1), bench_pause(1), bench_pause(0));
	printf("rc resumed %d\n", bench_pause(0));
	return 0;
}
