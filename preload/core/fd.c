/*
 * The shim's own descriptors. Programs treat descriptors as theirs: daemons
 * close every one above 2, servers dup2 over low numbers, some run with a
 * limit of a handful. So what the shim keeps open (the dump, libunwind's
 * pipe) lives at the top of the table, never among the lowest numbers that
 * open() hands out: a program that closes them is noticed before the next
 * write (output/dumpfile.c), and one that opens or dup2's low numbers never meets
 * them. Files the shim reads (/proc) are closed before the call returns.
 *
 * libunwind (1.6, Debian 12's libunwind.so.8) checks memory through a pipe:
 * it creates the pipe at its first use, on the lowest free numbers, reads a
 * byte from the one and writes a byte of the checked memory into the other
 * while unwinding, and when the read fails it closes both numbers, whatever
 * they name by then, and creates a new pipe. Every unwind the shim starts
 * runs between ct_unwinder_enter and ct_unwinder_leave, and the pipe2 export
 * below moves a pipe made meanwhile to the top of the table; a pipe2 call
 * from anyone else goes straight to the real one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "ct.h"

/* The shim's numbers: the top CT_FD_SPAN below min(limit, CT_FD_CEIL). */
#define CT_FD_SPAN 16
#define CT_FD_CEIL 1024

int ct_fd_floor(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return -1;
	rlim_t top = rl.rlim_cur < CT_FD_CEIL ? rl.rlim_cur : CT_FD_CEIL;
	if (top < CT_FD_MIN_LIMIT)
		return -1;
	return (int)top - CT_FD_SPAN;
}

int ct_fd_move_high(int fd)
{
	int floor = ct_fd_floor();
	int high = floor < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, floor);
	int err = floor < 0 ? EMFILE : errno;
	close(fd);
	errno = err;
	return high;
}

/* ---- libunwind --------------------------------------------------------------------- */

static __thread int ct_unwinding __attribute__((tls_model("initial-exec")));
static pthread_once_t ct_unwinder_once = PTHREAD_ONCE_INIT;
static _Atomic int ct_unwinder_ready; /* set once ct_unwinder_init has run: no call after that */

static void ct_unwinder_init(void)
{
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	atomic_store_explicit(&ct_unwinder_ready, 1, memory_order_release);
}

void ct_unwinder_enter(void)
{
	ct_unwinding++;
	if (CT_UNLIKELY(!atomic_load_explicit(&ct_unwinder_ready, memory_order_acquire)))
		pthread_once(&ct_unwinder_once, ct_unwinder_init);
}

void ct_unwinder_leave(void)
{
	ct_unwinding--;
}

typedef int (*ct_pipe2_fn)(int[2], int);
static void *_Atomic ct_real_pipe2;
static _Atomic int ct_warned_pipe;

/* Looked up when the library loads: pipe2 is async-signal-safe. */
__attribute__((constructor)) static void ct_fd_resolve(void)
{
	ct_real_symbol(&ct_real_pipe2, "pipe2");
}

CT_EXPORT int pipe2(int fds[2], int flags);
int pipe2(int fds[2], int flags)
{
	ct_pipe2_fn real = (ct_pipe2_fn)ct_real_symbol(&ct_real_pipe2, "pipe2");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (!ct_unwinding)
		return real(fds, flags);
	int raw[2];
	if (real(raw, flags) != 0)
		return -1;
	/* F_DUPFD_CLOEXEC keeps the file status flags (O_NONBLOCK): they belong to the pipe. */
	int r = ct_fd_move_high(raw[0]);
	int w = ct_fd_move_high(raw[1]);
	if (r < 0 || w < 0) {
		int err = errno;
		if (r >= 0)
			close(r);
		if (w >= 0)
			close(w);
		/* -1, not the closed numbers: libunwind closes these when it tries again. */
		fds[0] = fds[1] = -1;
		ct_warn_once(&ct_warned_pipe,
			     "no descriptor at the top of the table for libunwind's pipe: %s; native "
			     "stacks may be cut short",
			     strerror(err));
		errno = err;
		return -1;
	}
	fds[0] = r;
	fds[1] = w;
	return 0;
}
