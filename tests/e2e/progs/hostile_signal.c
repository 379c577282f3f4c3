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
 *   api             sigaction and signal as the C library documents them
 *                   (what the program sees must not change under the shim);
 *                   then a handler allocates 8192 bytes when raise()d and
 *                   12288 bytes when sigqueue()d (interrupted inside the C
 *                   library, where the shim takes no stack); then, after a
 *                   handler sigqueue()d 64 KiB deeper is left by siglongjmp,
 *                   this thread allocates 4096 bytes
 * The handler blocks every signal while it runs (SIGTERM included). Prints
 * "expect calls C" (every CUDA call made, the handler's included) and
 * "expect handler_calls H" (those made by the handler).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
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

/* ---- api ---------------------------------------------------------------------------- */

static int api_bad;
static volatile sig_atomic_t got_sig, got_signo, got_ctx, blocked_usr1, blocked_self, depth_max;
static volatile sig_atomic_t depth;
static sigjmp_buf api_jump;

#define EXPECT(cond)                                                                    \
	do {                                                                            \
		if (!(cond)) {                                                          \
			printf("api: line %d: %s does not hold\n", __LINE__, #cond);     \
			api_bad++;                                                      \
		}                                                                       \
	} while (0)

static void note_mask(int sig)
{
	sigset_t now;
	sigprocmask(SIG_BLOCK, NULL, &now);
	blocked_usr1 = sigismember(&now, SIGUSR1);
	blocked_self = sigismember(&now, sig);
}

static void h_info(int sig, siginfo_t *info, void *uc)
{
	got_sig = sig;
	got_signo = info ? info->si_signo : -1;
	got_ctx = uc != NULL;
	note_mask(sig);
}

static void h_plain(int sig)
{
	got_sig = sig;
	note_mask(sig);
}

static void h_nodefer(int sig)
{
	depth++;
	if (depth > depth_max)
		depth_max = depth;
	if (depth < 3)
		raise(sig); /* SA_NODEFER: runs this handler again, nested */
	depth--;
}

static void h_jump(int sig)
{
	siglongjmp(api_jump, sig);
}

static size_t alloc_size;

static void h_alloc(int sig)
{
	void *p;
	CHECK(cudaMalloc(&p, alloc_size));
	CHECK(cudaFree(p));
	atomic_fetch_add(&handler_calls, 2);
}

/* SIGUSR2 to this process: delivered as sigqueue's system call returns. */
NOINLINE static void queue_deep(void)
{
	volatile char pad[64 << 10];
	pad[0] = 1;
	union sigval v = {0};
	sigqueue(getpid(), SIGUSR2, v);
	(void)pad[0];
}

static struct sigaction query(int sig)
{
	struct sigaction old;
	memset(&old, 0xa5, sizeof old);
	EXPECT(sigaction(sig, NULL, &old) == 0);
	return old;
}

static int api(void)
{
	struct sigaction a, old;
	EXPECT(query(SIGUSR2).sa_handler == SIG_DFL);

	memset(&a, 0, sizeof a);
	a.sa_sigaction = h_info;
	a.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, SIGUSR1);
	EXPECT(sigaction(SIGUSR2, &a, &old) == 0);
	EXPECT(old.sa_handler == SIG_DFL);
	old = query(SIGUSR2);
	EXPECT(old.sa_sigaction == h_info);
	EXPECT((old.sa_flags & (SA_SIGINFO | SA_RESTART)) == (SA_SIGINFO | SA_RESTART));
	EXPECT(sigismember(&old.sa_mask, SIGUSR1) == 1);
	got_sig = 0;
	raise(SIGUSR2);
	EXPECT(got_sig == SIGUSR2 && got_signo == SIGUSR2 && got_ctx);
	EXPECT(blocked_usr1 && blocked_self);

	EXPECT((void *)signal(SIGUSR2, h_plain) == (void *)h_info);
	old = query(SIGUSR2);
	EXPECT(old.sa_handler == h_plain);
	EXPECT(!(old.sa_flags & SA_SIGINFO) && (old.sa_flags & SA_RESTART));
	got_sig = 0;
	raise(SIGUSR2);
	EXPECT(got_sig == SIGUSR2 && blocked_self && !blocked_usr1);

	memset(&a, 0, sizeof a);
	a.sa_handler = h_plain;
	a.sa_flags = SA_RESETHAND;
	EXPECT(sigaction(SIGUSR2, &a, NULL) == 0);
	got_sig = 0;
	raise(SIGUSR2);
	EXPECT(got_sig == SIGUSR2);
	EXPECT(query(SIGUSR2).sa_handler == SIG_DFL);

	EXPECT(signal(SIGUSR2, SIG_IGN) == SIG_DFL);
	EXPECT(query(SIGUSR2).sa_handler == SIG_IGN);
	raise(SIGUSR2); /* ignored */

	memset(&a, 0, sizeof a);
	a.sa_handler = h_nodefer;
	a.sa_flags = SA_NODEFER;
	EXPECT(sigaction(SIGUSR2, &a, NULL) == 0);
	raise(SIGUSR2);
	EXPECT(depth_max == 3 && depth == 0);

	errno = 0;
	EXPECT(sigaction(SIGKILL, &a, NULL) == -1 && errno == EINVAL);
	errno = 0;
	EXPECT(sigaction(0, &a, NULL) == -1 && errno == EINVAL);
	errno = 0;
	EXPECT(signal(SIGSTOP, h_plain) == SIG_ERR && errno == EINVAL);

	EXPECT(signal(SIGUSR2, h_alloc) == h_nodefer);
	CHECK(cudaFree(0)); /* tracing starts: a handler would not start it */
	alloc_size = 8192;
	raise(SIGUSR2);
	alloc_size = 12288;
	union sigval v = {0};
	sigqueue(getpid(), SIGUSR2, v);

	/* A handler left by siglongjmp: what follows is outside any handler. */
	EXPECT(signal(SIGUSR2, h_jump) == h_alloc);
	if (sigsetjmp(api_jump, 1) == 0) {
		queue_deep();
		EXPECT(!"siglongjmp came back");
	}
	void *p;
	CHECK(cudaMalloc(&p, 4096));
	CHECK(cudaFree(p));
	printf("api: %s\n", api_bad ? "FAILED" : "ok");
	return api_bad ? 1 : 0;
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
	if (strcmp(mode, "api") == 0) {
		int rc = api();
		report(3);
		return rc;
	}
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
