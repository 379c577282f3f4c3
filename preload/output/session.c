/*
 * The tracing session of this process: one object (struct ct_session,
 * session.h) and its life. It starts lazily at the first traced call
 * (ct_ensure_started): the dump is created then, so a process that never
 * calls CUDA leaves no dump. It ends at exit (ct_shutdown), and a fork child
 * re-initialises it (ct_session_forked) and starts a dump of its own at its
 * first traced call. Between the two, threads take rings from its registry
 * (ct_thread_ring) and the writer (writer.c) copies them to the dump file
 * (dumpfile.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

CT_HOT_DATA _Atomic int ct_state;
struct ct_session ct_session = CT_SESSION_INIT;
struct ct_output_warnings ct_warned;

/* The rings' registry: the overflow ring is made under the lock; a thread's ring is its key's value. */
static pthread_mutex_t ct_overflow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ct_thread_key;

/* ---- rings per thread ------------------------------------------------------------ */

static uint64_t ct_ring_cap(void)
{
	uint64_t budget = (uint64_t)ct_option(CT_OPT_BUFFER_MB) << 20;
	uint64_t cap = 1u << 16;
	while (cap * 2 <= budget / 32 && cap < (4u << 20))
		cap *= 2;
	return cap;
}

/*
 * The rings of the first CT_HUGE_RINGS threads that record, and the shared
 * ring, are on huge pages (ring.c): a training loop's busy threads come first
 * (the main thread, then torch's autograd threads). A later thread's ring
 * faults page by page as it fills: a 2 MiB page cleared at its first event
 * cost a short-lived thread 0.1-3 ms on the VM. A ring freed by its thread's
 * exit goes to a later thread with its pages.
 */
#define CT_HUGE_RINGS 4

static void ct_ring_thread_exit(void *arg)
{
	struct ct_ring *r = arg;
	if (r && !r->shared)
		atomic_store(&r->state, CT_RING_DEAD);
	ct_tls.ring = NULL;
}

struct ct_ring *ct_thread_ring(void)
{
	struct ct_thread *t = &ct_tls;
	uint32_t tid = ct_current_tid();
	struct ct_ring *ring = NULL;
	for (struct ct_ring *r = atomic_load(&ct_session.rings); r; r = r->next) {
		int expect = CT_RING_FREE;
		if (atomic_compare_exchange_strong(&r->state, &expect, CT_RING_ACTIVE)) {
			ring = r;
			break;
		}
	}
	if (!ring) {
		uint64_t cap = ct_ring_cap();
		uint64_t budget = (uint64_t)ct_option(CT_OPT_BUFFER_MB) << 20;
		if (atomic_fetch_add(&ct_session.ring_bytes, cap) + cap <= budget)
			ring = ct_ring_create(cap, atomic_fetch_add(&ct_session.huge_rings, 1) <
							   CT_HUGE_RINGS);
		if (ring) {
			struct ct_ring *head = atomic_load(&ct_session.rings);
			do
				ring->next = head;
			while (!atomic_compare_exchange_weak(&ct_session.rings, &head, ring));
		}
	}
	if (!ring) {
		/* Over budget (or no memory): share one locked ring among the extra threads. */
		pthread_mutex_lock(&ct_overflow_lock);
		ring = atomic_load(&ct_session.overflow_ring);
		if (!ring && (ring = ct_ring_create(ct_ring_cap(), 1)) != NULL) {
			ring->shared = 1;
			atomic_flag_clear(&ring->lock);
			struct ct_ring *head = atomic_load(&ct_session.rings);
			do
				ring->next = head;
			while (!atomic_compare_exchange_weak(&ct_session.rings, &head, ring));
			atomic_store(&ct_session.overflow_ring, ring);
		}
		pthread_mutex_unlock(&ct_overflow_lock);
		if (!ring) {
			ct_warn_once(&ct_warned.ring,
				     "cannot map a ring buffer (%llu KiB): %s; events of threads "
				     "without one are lost, counted in the dump",
				     (unsigned long long)(ct_ring_cap() >> 10), strerror(errno));
			return NULL;
		}
	}
	if (!ring->shared) {
		atomic_store_explicit(&ring->tid, tid, memory_order_release);
		pthread_setspecific(ct_thread_key, ring);
	}
	t->ring = ring;
	return ring;
}

void ct_count_lost(void)
{
	atomic_fetch_add_explicit(&ct_session.lost, 1, memory_order_relaxed);
}

void ct_count_lost_signal(void)
{
	atomic_fetch_add_explicit(&ct_session.lost_signal, 1, memory_order_relaxed);
}

void ct_count_lost_record(void)
{
	atomic_fetch_add_explicit(&ct_session.lost_records, 1, memory_order_relaxed);
}

/* ---- start ------------------------------------------------------------------------ */

/*
 * A fatal signal with the default action ends the process without
 * destructors: copy the rings first, then die of the same signal. A round in
 * progress on the writer thread is waited for, at most CT_FATAL_WAIT_MS (the
 * writer goes on while this thread is in its handler; when the writer itself
 * crashed inside a round, or the round is stuck, the rings are not copied).
 * Skipping the copy whenever a round was in progress lost the events since
 * the last round now and then (t_hostile_crash under TSan on a busy machine:
 * 59 of 1000). A handler the program installs later replaces this one.
 */
#define CT_FATAL_WAIT_MS 200
static void ct_fatal(int sig)
{
	int saved_errno = errno;
	if (getpid() == ct_session.proc.pid) {
		int locked = pthread_mutex_trylock(&ct_round_lock) == 0;
		for (int ms = 0; !locked && ms < CT_FATAL_WAIT_MS; ms++) {
			struct timespec one_ms = {0, 1000000};
			nanosleep(&one_ms, NULL); /* async-signal-safe */
			locked = pthread_mutex_trylock(&ct_round_lock) == 0;
		}
		if (locked) {
			ct_round_ex(1);
			pthread_mutex_unlock(&ct_round_lock);
		}
	}
	errno = saved_errno;
	raise(sig); /* SA_RESETHAND: the default action now */
}

static void ct_catch_fatal(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old, sa;
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = ct_fatal;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/*
 * What starting to trace maps besides the first thread's ring: the write
 * buffer and module table (2.1 MiB), the stack table (4 MiB), the thread's
 * stack cache, libzstd and its tables (about 1.7 MiB), the writer's stack.
 */
#define CT_START_VM (9u << 20)

/*
 * Under an address-space limit (ulimit -v), tracing starts only when it
 * would take at most a quarter of the room the limit leaves, so that the
 * program keeps the rest; otherwise one warning. Returns 1 to go on.
 */
static int ct_room_to_start(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1;
	char buf[64];
	ssize_t got = -1;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	buf[got > 0 ? got : 0] = 0; /* unreadable: used is 0, the limit alone decides */
	uint64_t used = strtoull(buf, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t need = CT_START_VM + ct_ring_cap();
	uint64_t room = rl.rlim_cur > used ? rl.rlim_cur - used : 0;
	if (need <= room / 4)
		return 1;
	ct_warn_once(&ct_warned.open,
		     "the address-space limit (ulimit -v) leaves %llu MiB; tracing needs about "
		     "%llu MiB, more than a quarter of it; tracing off, the program goes on",
		     (unsigned long long)(room >> 20), (unsigned long long)(need >> 20));
	return 0;
}

/* ---- the session's methods: start, end, fork ------------------------------------------ */

/* Who the process is and when it started (at load; in a fork child, the child). */
static void ct_session_mark(struct ct_session *s)
{
	s->proc.pid = getpid();
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	s->proc.start_realtime = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	s->proc.start_monotonic = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
}

/*
 * Start tracing: options, the write buffer, the clock, the dump and its
 * PROCESS record, CUPTI, the writer thread, the fatal-signal handlers.
 * Returns the resulting state (RUNNING, or DISABLED after one warning).
 */
static int ct_session_start(struct ct_session *s, struct ct_thread *t)
{
	atomic_store(&s->starting_tid, ct_current_tid());
	/* Busy: a handler that interrupts start-up has its calls counted, not recorded. */
	uint8_t saved_hook = t->in_hook;
	t->in_hook = CT_HOOK_BUSY;
	int saved_errno = errno;
	ct_options_init();
	int final = CT_STATE_DISABLED;
	if (ct_option(CT_OPT_DISABLE))
		goto done;
	if (!ct_writer_mapped() && (!ct_room_to_start() || ct_writer_map()))
		goto done;
	ct_clock_init();
	s->compress = ct_option(CT_OPT_COMPRESS) && ct_zstd_init(CT_ZSTD_LEVEL) == 0;
	s->pack = ct_option(CT_OPT_PACK) != 0;
	if (ct_dump_open())
		goto done;
	ct_cupti_start(); /* CUMTRACE_BACKEND=cupti: before the PROCESS record names the backend */
	if (ct_dump_put_process())
		goto done; /* warned: /dev/full, a full disk */
	ct_dump_note_manifest();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&s->writer_stop, 0);
	int rc = ct_writer_spawn();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		ct_warn_once(&ct_warned.thread, "cannot start the writer thread: %s; tracing off",
			     strerror(rc));
		goto done;
	}
	atomic_store(&s->writer_joinable, 1);
	ct_catch_fatal();
	final = CT_STATE_RUNNING;
done:
	if (final == CT_STATE_DISABLED)
		ct_dump_close();
	atomic_store(&s->starting_tid, 0);
	atomic_store(&ct_state, final);
	if (final == CT_STATE_RUNNING)
		ct_pyboot_schedule(); /* running first: the main thread may run the bootstrap at once */
	t->in_hook = saved_hook;
	errno = saved_errno;
	return final;
}

int ct_ensure_started(void)
{
	struct ct_thread *t = &ct_tls;
	if (ct_in_handler(t)) /* start-up takes locks: not from a handler (record.c) */
		return atomic_load(&ct_state);
	int expect = CT_STATE_UNINIT;
	if (!atomic_compare_exchange_strong(&ct_state, &expect, CT_STATE_STARTING)) {
		if (expect == CT_STATE_STARTING &&
		    atomic_load(&ct_session.starting_tid) == ct_current_tid())
			return expect;
		while ((expect = atomic_load(&ct_state)) == CT_STATE_STARTING)
			sched_yield();
		return expect;
	}
	return ct_session_start(&ct_session, t);
}

void ct_flush_sync(void)
{
	/* A vfork child shares our memory but not our writer: leave it alone. */
	if (atomic_load(&ct_state) != CT_STATE_RUNNING || getpid() != ct_session.proc.pid)
		return;
	pthread_mutex_lock(&ct_round_lock);
	ct_round();
	pthread_mutex_unlock(&ct_round_lock);
}

/*
 * End the session at exit: stop the writer, copy what the rings still hold,
 * write CT_REC_END; records made later go straight to the file (FINISHED).
 */
static void ct_session_end(struct ct_session *s)
{
	/* A vfork child shares our memory: the writer is the parent's. */
	if (getpid() != s->proc.pid)
		return;
	int expect = CT_STATE_RUNNING;
	if (!atomic_compare_exchange_strong(&ct_state, &expect, CT_STATE_FINISHED)) {
		/* Tracing stopped on a write error: the writer left its loop; reap the thread. */
		if (expect == CT_STATE_DISABLED) {
			int saved_errno = errno;
			ct_writer_join();
			errno = saved_errno;
		}
		return;
	}
	int saved_errno = errno;
	ct_selftime_report();
	ct_writer_join();
	pthread_mutex_lock(&ct_round_lock);
	/* ct_round skips nothing in FINISHED state: it checks only DISABLED. */
	ct_round();
	pthread_mutex_unlock(&ct_round_lock);
	uint64_t dropped = atomic_load(&s->lost) + atomic_load(&s->lost_signal);
	uint64_t events = atomic_load(&ct_events_recorded);
	for (struct ct_ring *r = atomic_load(&s->rings); r; r = r->next) {
		dropped += atomic_load(&r->dropped);
		events += r->events;
	}
	struct ct_rec_end e = {{CT_REC_END, 0, sizeof e},
			       ct_now_ns(),
			       events,
			       dropped,
			       ct_stack_count()};
	ct_write_direct(&e, sizeof e);
	errno = saved_errno;
}

void ct_shutdown(void)
{
	ct_session_end(&ct_session);
}

/*
 * Forget the dump: everything but who the process is goes back to what
 * CT_SESSION_INIT gives. Set in place, neither built on the stack (the
 * forking thread's stack may be small, and the object holds two paths) nor
 * copied from a constant (12 KiB more of the shim to map would move where
 * the program's own mappings land).
 */
static void ct_session_reset(struct ct_session *s)
{
	struct ct_session_proc proc = s->proc;
	memset(s, 0, sizeof *s);
	s->proc = proc;
	atomic_init(&s->fd, -1);
	s->seen_adds = s->seen_subs = ~0ull;
}

static void ct_fork_prepare(void)
{
	ct_writer_wait_up(); /* never fork in the middle of its start (session.h) */
	pthread_mutex_lock(&ct_round_lock);
	pthread_mutex_lock(&ct_direct_lock);
	pthread_mutex_lock(&ct_overflow_lock);
}

static void ct_fork_parent(void)
{
	pthread_mutex_unlock(&ct_overflow_lock);
	pthread_mutex_unlock(&ct_direct_lock);
	pthread_mutex_unlock(&ct_round_lock);
}

/*
 * The child of a fork: the locks its parent's prepare held are made again;
 * the session becomes this process's, lets go of the parent's dump and of
 * its copies of the parent's rings, in that order, and is re-initialised;
 * the core forgets the stacks and Python frames the parent's dump defined.
 * The child starts a dump of its own at its first traced call.
 */
static void ct_session_forked(struct ct_session *s)
{
	pthread_mutex_init(&ct_round_lock, NULL);
	pthread_mutex_init(&ct_direct_lock, NULL);
	pthread_mutex_init(&ct_overflow_lock, NULL);
	int state = atomic_load(&ct_state);
	s->proc.parent_pid = (uint32_t)getppid();
	s->proc.forked = 1;
	/* the parent's cumtrace_bench_pause is its own measurement: the child's dump is whole */
	atomic_fetch_and(&ct_detour, ~CT_DETOUR_PAUSED);
	ct_session_mark(s);
	ct_dump_close();
	atomic_store(&s->writer_joinable, 0); /* the parent's writer is not in this process */
	struct ct_ring *r = atomic_exchange(&s->rings, NULL);
	while (r) {
		struct ct_ring *next = r->next;
		ct_ring_destroy(r);
		r = next;
	}
	ct_session_reset(s);
	atomic_store(&ct_events_recorded, 0);
	pthread_setspecific(ct_thread_key, NULL);
	ct_tls.ring = NULL;
	ct_tls.tid = 0;
	ct_stack_reset();
	ct_py_reset();
	if (state != CT_STATE_DISABLED || !ct_option(CT_OPT_DISABLE))
		atomic_store(&ct_state, CT_STATE_UNINIT);
}

static void ct_fork_child(void)
{
	ct_session_forked(&ct_session);
}

__attribute__((constructor)) static void ct_init(void)
{
	ct_session_mark(&ct_session);
	ct_stack_init();
	ct_py_init();
	pthread_key_create(&ct_thread_key, ct_ring_thread_exit);
	pthread_atfork(ct_fork_prepare, ct_fork_parent, ct_fork_child);
}

__attribute__((destructor)) static void ct_fini(void)
{
	ct_shutdown();
}
