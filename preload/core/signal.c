/*
 * Signal handlers. A handler runs on the thread it interrupted, wherever that
 * thread was: in the shim's own work for a traced call (its ring half
 * written), in tracing's start-up, in malloc or in the dynamic loader with
 * their locks held. So the shim has to know when a traced call is made inside
 * one: it runs every handler the program installs with sigaction or signal
 * through its own, ct_sig_enter, which marks the thread for the handler's
 * duration and calls the program's handler with the kernel's arguments.
 *
 * Inside a handler (enum ct_hook_state, record.c):
 *  - when the handler interrupted the thread outside any traced call, or
 *    inside the real function of one (CT_HOOK_NONE, CT_HOOK_REAL), its calls
 *    are recorded;
 *  - when it interrupted the shim's own work (CT_HOOK_BUSY: recording,
 *    start-up), its calls are forwarded untraced and counted
 *    (ct_count_lost_signal: CT_REC_DROPS with CT_DROPS_F_SIGNAL), and so is a
 *    call that would have to start tracing, wait for it, make a ring or wait
 *    for room in one.
 *
 * Stacks. Unwinding (libunwind) takes the loader's lock (dl_iterate_phdr)
 * and, through __tls_get_addr's slow path after a dlopen or dlclose, may
 * call free(): a handler that interrupted code in the middle of taking the
 * one or holding malloc's would wait for ever (issue 14.5). So a handler's
 * calls take no stack (CT_EVENT_F_SIGNAL marks their events) when the
 * interrupted instruction lies in the code that takes those locks: the C
 * library, the dynamic loader, libunwind, or the module that provides malloc.
 * Interrupted anywhere else (the program's own code, a CUDA library, a
 * system call made by raise, pthread_kill or kill to signal the thread
 * itself), no such lock is half taken or held by this thread (the loader's,
 * held across a constructor or a dl_iterate_phdr callback, is recursive and
 * this thread's), so stacks are taken as usual. A handler nested in one that
 * may not unwind may not either.
 *
 * sigaction and signal report the program's handler and flags, never the
 * shim's. Handlers installed otherwise (the system call itself, glibc's
 * internal calls, sigset, sysv_signal, bsd_signal) are not wrapped: calls
 * made in them are treated as calls made outside a handler.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <ucontext.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "ct.h"

/*
 * How far below the wrapper's frame a handler's call may be and still count
 * as inside it: past that (or above the frame), the handler was left by
 * siglongjmp, from the thread's stack or from an alternate one.
 */
#define CT_SIG_REACH (1u << 20)

/* The program's handler for one signal: a seqlock, changed with every signal blocked. */
struct ct_sig_action {
	_Atomic uint32_t seq;	   /* odd while being changed */
	_Atomic uintptr_t handler; /* sa_handler or sa_sigaction */
	_Atomic int flags;	   /* the program's sa_flags */
};

static struct ct_sig_action ct_sig_actions[_NSIG];
static atomic_flag ct_sig_lock = ATOMIC_FLAG_INIT; /* the writers of ct_sig_actions */
static void *_Atomic ct_real_sigaction;

typedef int (*ct_sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* Where a handler may not unwind (see above): found at load, never changed. */
#define CT_SIG_MODULES_MAX 8
#define CT_SIG_SITES_MAX 4
static struct {
	uintptr_t lo, hi;
} ct_sig_modules[CT_SIG_MODULES_MAX];
static int ct_sig_nmodules;
static uintptr_t ct_sig_sites[CT_SIG_SITES_MAX]; /* where a thread's own signal interrupts it */
static int ct_sig_nsites;

/* ct_in_handler, where sig_frame is set. */
int ct_in_handler_slow(struct ct_thread *t)
{
	uintptr_t frame = t->sig_frame;
	char here;
	uintptr_t sp = (uintptr_t)&here;
	if (sp < frame && frame - sp < CT_SIG_REACH)
		return 1;
	t->sig_frame = 0; /* left by siglongjmp */
	t->sig_nostack = 0;
	if (t->in_hook == CT_HOOK_SIGNAL)
		t->in_hook = CT_HOOK_NONE;
	return 0;
}

/* The interrupted instruction of a handler's context. */
static uintptr_t ct_sig_pc(const void *uc)
{
	const ucontext_t *u = uc;
#if defined(__x86_64__)
	return (uintptr_t)u->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)u->uc_mcontext.pc;
#else
#error "signal.c: only x86-64 and aarch64 are supported"
#endif
}

/* May a handler that interrupted the thread at uc take stacks? (the rule above) */
static int ct_sig_may_unwind(const void *uc)
{
	if (!uc)
		return 0;
	uintptr_t pc = ct_sig_pc(uc);
	for (int i = 0; i < ct_sig_nsites; i++)
		if (pc == ct_sig_sites[i])
			return 1;
	for (int i = 0; i < ct_sig_nmodules; i++)
		if (pc >= ct_sig_modules[i].lo && pc < ct_sig_modules[i].hi)
			return 0;
	return 1;
}

/* ---- the program's handlers ------------------------------------------------------- */

/* Block every signal, then take the writers' lock; *saved gets the old mask. */
static void ct_sig_lock_take(sigset_t *saved)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, saved);
	while (atomic_flag_test_and_set_explicit(&ct_sig_lock, memory_order_acquire))
		;
}

static void ct_sig_lock_drop(const sigset_t *saved)
{
	atomic_flag_clear_explicit(&ct_sig_lock, memory_order_release);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* The program's handler and flags for sig, as one consistent pair. */
static void ct_sig_read(int sig, uintptr_t *handler, int *flags)
{
	struct ct_sig_action *a = &ct_sig_actions[sig];
	for (;;) {
		uint32_t seq = atomic_load_explicit(&a->seq, memory_order_acquire);
		if (seq & 1)
			continue; /* another thread, every signal blocked, is changing it */
		*handler = atomic_load_explicit(&a->handler, memory_order_relaxed);
		*flags = atomic_load_explicit(&a->flags, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&a->seq, memory_order_relaxed) == seq)
			return;
	}
}

/* Under ct_sig_lock: start (begin 1) and end a change of a. */
static void ct_sig_write(struct ct_sig_action *a, int begin)
{
	atomic_fetch_add_explicit(&a->seq, 1, begin ? memory_order_acquire : memory_order_release);
	if (begin)
		atomic_thread_fence(memory_order_release);
}

static void ct_sig_set(struct ct_sig_action *a, uintptr_t handler, int flags)
{
	atomic_store_explicit(&a->handler, handler, memory_order_relaxed);
	atomic_store_explicit(&a->flags, flags, memory_order_relaxed);
}

/* What the kernel runs in place of every handler the program installs. */
static void ct_sig_enter(int sig, siginfo_t *info, void *uc)
{
	struct ct_thread *t = &ct_tls;
	uintptr_t handler;
	int flags;
	ct_sig_read(sig, &handler, &flags);
	if (flags & SA_RESETHAND) {
		/* The kernel has put back SIG_DFL: so does the program's view. */
		int saved_errno = errno;
		sigset_t saved;
		ct_sig_lock_take(&saved);
		struct ct_sig_action *a = &ct_sig_actions[sig];
		if (atomic_load_explicit(&a->handler, memory_order_relaxed) == handler) {
			ct_sig_write(a, 1);
			ct_sig_set(a, (uintptr_t)SIG_DFL, 0);
			ct_sig_write(a, 0);
		}
		ct_sig_lock_drop(&saved);
		errno = saved_errno;
	}
	if (handler == (uintptr_t)SIG_IGN)
		return; /* changed on another thread since the kernel chose this handler */
	if (handler == (uintptr_t)SIG_DFL) {
		raise(sig); /* blocked until this returns: then the default action */
		return;
	}
	uint8_t hook = t->in_hook, nostack = t->sig_nostack;
	uintptr_t frame = t->sig_frame;
	char here;
	t->sig_frame = (uintptr_t)&here;
	t->sig_nostack = (frame && nostack) || !ct_sig_may_unwind(uc);
	t->in_hook = hook == CT_HOOK_NONE || hook == CT_HOOK_REAL ? CT_HOOK_NONE : CT_HOOK_SIGNAL;
	atomic_signal_fence(memory_order_seq_cst);
	if (flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))handler)(sig, info, uc);
	else
		((void (*)(int))handler)(sig);
	atomic_signal_fence(memory_order_seq_cst);
	t->in_hook = hook;
	t->sig_nostack = nostack;
	t->sig_frame = frame;
}

/*
 * The C library's sigaction. Found with dlsym alone, never pinned with dlopen
 * (ct_real_symbol): a sanitizer's runtime installs its handlers from the
 * loader's first round of initializers, where a dlopen would run the C
 * library's initializer early, with no environment.
 */
static ct_sigaction_fn ct_sigaction_real(void)
{
	void *fn = atomic_load_explicit(&ct_real_sigaction, memory_order_acquire);
	if (CT_UNLIKELY(!fn)) {
		fn = ct_dlsym_next("sigaction");
		atomic_store_explicit(&ct_real_sigaction, fn, memory_order_release);
	}
	return (ct_sigaction_fn)fn;
}

/* sigaction, with ct_sig_enter in the kernel in place of the program's handler. */
static int ct_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	ct_sigaction_fn real = ct_sigaction_real();
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	if (sig <= 0 || sig >= _NSIG)
		return real(sig, act, old);
	struct sigaction mine;
	uintptr_t handler = 0;
	int flags = 0;
	if (act) { /* read before the call: old may be act */
		mine = *act;
		handler = (uintptr_t)act->sa_sigaction;
		flags = act->sa_flags;
		if (act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN) {
			mine.sa_sigaction = ct_sig_enter;
			mine.sa_flags |= SA_SIGINFO;
		}
	}
	struct ct_sig_action *a = &ct_sig_actions[sig];
	sigset_t saved;
	ct_sig_lock_take(&saved);
	uintptr_t prev_handler = atomic_load_explicit(&a->handler, memory_order_relaxed);
	int prev_flags = atomic_load_explicit(&a->flags, memory_order_relaxed);
	ct_sig_write(a, 1);
	int rc = real(sig, act ? &mine : NULL, old);
	int saved_errno = errno;
	if (rc == 0 && act)
		ct_sig_set(a, handler, flags);
	ct_sig_write(a, 0);
	ct_sig_lock_drop(&saved);
	if (rc == 0 && old && old->sa_sigaction == ct_sig_enter) {
		old->sa_sigaction = (void (*)(int, siginfo_t *, void *))prev_handler;
		old->sa_flags = (old->sa_flags & ~SA_SIGINFO) | (prev_flags & SA_SIGINFO);
	}
	errno = saved_errno;
	return rc;
}

CT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old);
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return ct_sigaction(sig, act, old);
}

/* glibc's signal: BSD semantics (SA_RESTART, the signal blocked in its handler). */
CT_EXPORT sighandler_t signal(int sig, sighandler_t handler);
sighandler_t signal(int sig, sighandler_t handler)
{
	if (handler == SIG_ERR || sig <= 0 || sig >= _NSIG) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (ct_sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* ---- at load: the modules and sites of the unwinding rule ------------------------- */

/* A module holding one of the addresses (0-terminated), or the dynamic loader itself. */
static int ct_sig_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	const uintptr_t *probes = arg;
	uint64_t lo, hi;
	ct_module_range(info, &lo, &hi);
	int hit = info->dlpi_addr && info->dlpi_addr == getauxval(AT_BASE);
	for (const uintptr_t *p = probes; *p && !hit; p++)
		hit = *p >= lo && *p < hi;
	if (hit && hi && ct_sig_nmodules < CT_SIG_MODULES_MAX) {
		ct_sig_modules[ct_sig_nmodules].lo = (uintptr_t)lo;
		ct_sig_modules[ct_sig_nmodules].hi = (uintptr_t)hi;
		ct_sig_nmodules++;
	}
	return 0;
}

static _Atomic uintptr_t ct_sig_probe_pc;
static uint32_t ct_sig_probe_tid;

static void ct_sig_probe(int sig, siginfo_t *info, void *uc)
{
	if (ct_current_tid() == ct_sig_probe_tid)
		atomic_store(&ct_sig_probe_pc, ct_sig_pc(uc));
}

/*
 * Where a signal the thread sends itself interrupts it: raise (abort too),
 * pthread_kill and kill each deliver it as their system call returns, at an
 * instruction of the C library that holds no lock. Found by sending SIGURG
 * (ignored by default) to this thread with a probe installed, then putting
 * back what was there.
 */
static void ct_sig_find_sites(ct_sigaction_fn real)
{
	struct sigaction probe, old;
	memset(&probe, 0, sizeof probe);
	probe.sa_sigaction = ct_sig_probe;
	probe.sa_flags = SA_SIGINFO;
	sigemptyset(&probe.sa_mask);
	if (real(SIGURG, &probe, &old) != 0)
		return;
	sigset_t urg, saved;
	sigemptyset(&urg);
	sigaddset(&urg, SIGURG);
	pthread_sigmask(SIG_UNBLOCK, &urg, &saved);
	ct_sig_probe_tid = ct_current_tid();
	for (int way = 0; way < 3 && ct_sig_nsites < CT_SIG_SITES_MAX; way++) {
		atomic_store(&ct_sig_probe_pc, 0);
		if (way == 0)
			raise(SIGURG);
		else if (way == 1)
			pthread_kill(pthread_self(), SIGURG);
		else
			kill(getpid(), SIGURG);
		uintptr_t pc = atomic_load(&ct_sig_probe_pc);
		int seen = !pc;
		for (int i = 0; i < ct_sig_nsites && !seen; i++)
			seen = ct_sig_sites[i] == pc;
		if (!seen)
			ct_sig_sites[ct_sig_nsites++] = pc;
	}
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	real(SIGURG, &old, NULL);
}

/* Looked up when the library loads: dlsym and dl_iterate_phdr must not run in a handler. */
__attribute__((constructor)) static void ct_signal_init(void)
{
	int saved_errno = errno;
	ct_sigaction_fn real = ct_sigaction_real();
	/* The C library (libpthread and libdl too, where glibc still splits
	 * them), the allocator, libunwind; the loader is found by its base. */
	uintptr_t probes[] = {(uintptr_t)real,		     (uintptr_t)&pthread_mutex_lock,
			      (uintptr_t)&dl_iterate_phdr, (uintptr_t)&malloc,
			      (uintptr_t)&free,		     (uintptr_t)&unw_backtrace,
			      0};
	dl_iterate_phdr(ct_sig_module_cb, probes);
	if (real)
		ct_sig_find_sites(real);
	errno = saved_errno;
}
