/*
 * Signal handlers that call CUDA (issue 14, item 5), for
 * tests/e2e/t_hostile_sig_*.sh. Run against the null runtime
 * (tests/fake/nullrt.c: cudaMalloc and cudaFree take no lock, allocate
 * nothing and use initial-exec TLS), so that whatever a handler interrupts,
 * only the shim could make its CUDA call hang.
 *
 * usage: hostile_signal MODE [ARGS]
 *   start           the handler calls cudaFree(0) on the thread that is
 *                   inside tracing's start-up: SIGUSR1 is raised from this
 *                   program's gethostname, which the shim calls there
 *                   (exported: built with -rdynamic)
 *   dlopen N LIB    a second thread signals this one without pause while it
 *                   dlopens and dlcloses LIB N times; the handler allocates
 *                   (an allocation wants a stack) and frees
 *   nested N        the same signals while this thread makes N
 *                   cudaMalloc/cudaFree pairs; the handler makes a pair too
 * The handler blocks every signal while it runs (SIGTERM included). Prints
 * "expect calls C" (every CUDA call made, the handler's included) and
 * "expect handler_calls H" (those made by the handler).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static atomic_long handler_calls;
static atomic_int stop, armed;
static pthread_t target;

static void on_usr1(int sig)
{
	(void)sig;
	if (atomic_load(&armed) == 2) { /* start: the start-up's own thread */
		cudaFree(0);
		atomic_fetch_add(&handler_calls, 1);
		return;
	}
	void *p = NULL;
	if (cudaMalloc(&p, 256) == cudaSuccess)
		cudaFree(p);
	atomic_fetch_add(&handler_calls, 2);
}

/* The shim calls gethostname while it starts tracing (the PROCESS record). */
int gethostname(char *name, size_t len)
{
	int expect = 1;
	if (atomic_compare_exchange_strong(&armed, &expect, 2))
		raise(SIGUSR1);
	struct utsname u;
	if (uname(&u) != 0 || len == 0)
		return -1;
	size_t n = strlen(u.nodename);
	if (n >= len)
		n = len - 1;
	memcpy(name, u.nodename, n);
	name[n] = 0;
	return 0;
}

static void *pester(void *arg)
{
	struct timespec pause = {0, 20 * 1000};
	while (!atomic_load(&stop)) {
		pthread_kill(target, SIGUSR1);
		nanosleep(&pause, NULL);
	}
	return arg;
}

static void install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigfillset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) != 0) {
		perror("sigaction");
		exit(2);
	}
}

static void report(long own)
{
	long h = atomic_load(&handler_calls);
	printf("expect calls %ld\nexpect handler_calls %ld\n", own + h, h);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	install();
	if (strcmp(mode, "start") == 0) {
		void *p;
		atomic_store(&armed, 1);
		CHECK(cudaFree(0)); /* starts tracing: gethostname raises SIGUSR1 */
		CHECK(cudaMalloc(&p, 4096));
		CHECK(cudaFree(p));
		if (atomic_load(&armed) != 2) {
			fprintf(stderr, "hostile_signal: the shim never called gethostname\n");
			return 4;
		}
		report(3);
		return 0;
	}
	if (argc < 3)
		return 2;
	long n = atol(argv[2]);
	/* Look up the real functions first: a handler must not be the first caller. */
	void *p;
	CHECK(cudaMalloc(&p, 256));
	CHECK(cudaFree(p));
	long own = 2;
	target = pthread_self();
	pthread_t th;
	if (pthread_create(&th, NULL, pester, NULL) != 0)
		return 2;
	if (strcmp(mode, "dlopen") == 0 && argc >= 4) {
		for (long i = 0; i < n; i++) {
			void *h = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
			if (!h) {
				fprintf(stderr, "dlopen: %s\n", dlerror());
				return 3;
			}
			dlclose(h);
		}
	} else if (strcmp(mode, "nested") == 0) {
		for (long i = 0; i < n; i++) {
			CHECK(cudaMalloc(&p, 512));
			CHECK(cudaFree(p));
		}
		own += 2 * n;
	} else {
		return 2;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	report(own);
	return 0;
}
