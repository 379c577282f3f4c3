/*
 * The hot path: turn one intercepted call into records in the calling
 * thread's ring. No locks, no allocation, no CUDA calls. When the ring is full
 * the thread waits for the writer (lossless, the default) or counts a drop
 * (CUMTRACE_DROP=1).
 *
 * Inside a signal handler (ct_in_handler) a call never waits: what it cannot
 * do without waiting (start tracing, get a ring, find room) it counts as a
 * call lost in a signal handler instead; and it takes no stack where the
 * handler interrupted code that may hold the loader's or malloc's lock
 * (signal.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ct.h"

__thread struct ct_thread ct_tls __attribute__((tls_model("initial-exec")));

_Atomic uint64_t ct_events_recorded;

CT_HOT_DATA _Atomic int ct_detour;

/* ---- CUMTRACE_SELFTIME (ct.h) ---------------------------------------------------- */

enum {
	CT_SELF_CALLS,
	CT_SELF_STACK,
	CT_SELF_PYTHON,
	CT_SELF_RECORD,
	CT_SELF_REAL,
	CT_SELF_KNOWN,  /* stack id from the thread's stack cache */
	CT_SELF_UNWOUND, /* stack unwound, not from the cache */
	CT_SELF_HITS,	 /* calls whose stack was a cache hit, then its two parts (ct_self_split): */
	CT_SELF_LOOKUP,	 /* real call's return to the entry found */
	CT_SELF_CHECKS,	 /* its checks read */
	CT_SELF_WALKS,	 /* calls whose Python frames were walked, then its two parts: */
	CT_SELF_PYSTATE, /* the native stack's end to the thread state found */
	CT_SELF_PYWALK,	 /* the frames walked to their memo key */
	CT_SELF_PYMEMO,	 /* walks whose key was in the memo */
	CT_SELF_PYNONE,	 /* walks that found no frame */
	CT_SELF_PYOUT,	 /* calls not walked: their native stack runs no Python */
	CT_SELF_STEADY,	 /* calls that met only known stacks (below), then their three phases: */
	CT_SELF_STEADY_STACK,
	CT_SELF_STEADY_PYTHON,
	CT_SELF_STEADY_RECORD,
	CT_SELF_FRAMED,	 /* steady calls whose Python stack came from the memo, then their phases: */
	CT_SELF_FRAMED_STACK,
	CT_SELF_FRAMED_PYTHON,
	CT_SELF_FRAMED_RECORD,
	CT_SELF_N
};
_Static_assert(CT_SELF_RECORD == CT_SELF_STACK + 2 && CT_SELF_STEADY_RECORD == CT_SELF_STEADY_STACK + 2 &&
		       CT_SELF_FRAMED_RECORD == CT_SELF_FRAMED_STACK + 2,
	       "ct_self_phases: three counters in a row");
static _Atomic uint64_t ct_self[CT_SELF_N];
static _Atomic uint64_t ct_self_first_ticks, ct_self_first_ns;

/*
 * A phase in two parts, from start to mark mid and from there to mark end:
 * counted in ct_self[n], its parts in the two counters after it, when both
 * marks were reached (nonzero).
 */
static void ct_self_split(int n, uint64_t start, uint64_t mid, uint64_t end)
{
	if (!mid || !end)
		return;
	atomic_fetch_add_explicit(&ct_self[n], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[n + 1], mid - start, memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[n + 2], end - mid, memory_order_relaxed);
}

/* The three phases of a call (stack, Python, record) into counters n, n + 1, n + 2. */
static void ct_self_phases(int n, uint64_t stack, uint64_t python, uint64_t record)
{
	atomic_fetch_add_explicit(&ct_self[n], stack, memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[n + 1], python, memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[n + 2], record, memory_order_relaxed);
}

/*
 * Add one call's phases: t0 entry, t1 the real call's return, then the ends of
 * stack, Python, record; known: its stack id came from the stack cache;
 * unwound: its stack was not from the cache; mark: the inner marks
 * (ct_self_mark), 0 where not reached.
 */
static void ct_selftime_add(uint64_t t0, uint64_t t1, uint64_t ts, uint64_t tp, uint64_t te,
			    int known, int unwound, const uint64_t *mark)
{
	uint64_t zero = 0;
	if (!atomic_load_explicit(&ct_self_first_ticks, memory_order_relaxed) &&
	    atomic_compare_exchange_strong(&ct_self_first_ticks, &zero, t0))
		atomic_store(&ct_self_first_ns, ct_now_ns());
	atomic_fetch_add_explicit(&ct_self[CT_SELF_CALLS], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[CT_SELF_REAL], t1 - t0, memory_order_relaxed);
	ct_self_phases(CT_SELF_STACK, ts - t1, tp - ts, te - tp);
	atomic_fetch_add_explicit(&ct_self[CT_SELF_KNOWN], (uint64_t)known, memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[CT_SELF_UNWOUND], (uint64_t)unwound, memory_order_relaxed);
	ct_self_split(CT_SELF_HITS, t1, mark[CT_SELF_MARK_SET], mark[CT_SELF_MARK_CHECKED]);
	ct_self_split(CT_SELF_WALKS, ts, mark[CT_SELF_MARK_PYSTATE], mark[CT_SELF_MARK_PYWALK]);
	atomic_fetch_add_explicit(&ct_self[CT_SELF_PYMEMO], mark[CT_SELF_MARK_PYMEMO] != 0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[CT_SELF_PYNONE], mark[CT_SELF_MARK_PYNONE] != 0,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&ct_self[CT_SELF_PYOUT], mark[CT_SELF_MARK_PYOUT] != 0,
				  memory_order_relaxed);
	/*
	 * The steady state of a loop: the native stack's id from the stack
	 * cache, the Python stack's (if the thread runs Python code now) from
	 * the memo, so nothing was unwound, interned or written but the event. The
	 * other calls (a place's first calls, a cache's fills, new strings)
	 * are paid once and would weigh on the means above in a short run.
	 */
	if (known && (!mark[CT_SELF_MARK_PYSTATE] || mark[CT_SELF_MARK_PYMEMO] ||
		      mark[CT_SELF_MARK_PYNONE])) {
		atomic_fetch_add_explicit(&ct_self[CT_SELF_STEADY], 1, memory_order_relaxed);
		ct_self_phases(CT_SELF_STEADY_STACK, ts - t1, tp - ts, te - tp);
		/*
		 * Apart: those with Python frames (the memo's), against the rest (no
		 * thread state, or one without frames: torch's autograd thread,
		 * whose calls are half a training step's and on its critical path).
		 */
		if (mark[CT_SELF_MARK_PYMEMO]) {
			atomic_fetch_add_explicit(&ct_self[CT_SELF_FRAMED], 1, memory_order_relaxed);
			ct_self_phases(CT_SELF_FRAMED_STACK, ts - t1, tp - ts, te - tp);
		}
	}
}

/* The mean of counter sum over counter n, in ns (tick_ns: ns per tick), 0 when n is 0. */
static double ct_self_mean(int sum, int n, double tick_ns)
{
	uint64_t k = atomic_load(&ct_self[n]);
	return k ? (double)atomic_load(&ct_self[sum]) * tick_ns / (double)k : 0.0;
}

/*
 * What one of the marks' clock reads costs (ct_ticks), in ns: the mean of a
 * thousand back to back. Every part of a timed call ends with one, so the
 * figures include them: a steady call's about eight (the stack's end, the
 * cache's two marks, the Python walk's three, the Python part's end, the
 * record's end). Back to back the counter's and vDSO's lines are warm; in a
 * call after the program's own work they may not be, so this is a floor.
 */
static double ct_self_read_ns(double tick_ns)
{
	uint64_t a = ct_ticks(), b = a;
	for (int i = 0; i < 1000; i++)
		b = ct_ticks();
	return (double)(b - a) * tick_ns / 1000.0;
}

void ct_selftime_report(void)
{
	static _Atomic int said;
	uint64_t calls = atomic_load(&ct_self[CT_SELF_CALLS]);
	uint64_t t0 = atomic_load(&ct_self_first_ticks), ns0 = atomic_load(&ct_self_first_ns);
	uint64_t t = ct_ticks(), ns = ct_now_ns();
	if (!ct_option(CT_OPT_SELFTIME) || !calls || t <= t0 || ns <= ns0)
		return;
	double tick_ns = (double)(ns - ns0) / (double)(t - t0);
	double per = tick_ns / (double)calls; /* ns per tick per call */
	double st = (double)atomic_load(&ct_self[CT_SELF_STACK]) * per;
	double py = (double)atomic_load(&ct_self[CT_SELF_PYTHON]) * per;
	double rec = (double)atomic_load(&ct_self[CT_SELF_RECORD]) * per;
	double real = (double)atomic_load(&ct_self[CT_SELF_REAL]) * per;
	double sst = ct_self_mean(CT_SELF_STEADY_STACK, CT_SELF_STEADY, tick_ns);
	double spy = ct_self_mean(CT_SELF_STEADY_PYTHON, CT_SELF_STEADY, tick_ns);
	double srec = ct_self_mean(CT_SELF_STEADY_RECORD, CT_SELF_STEADY, tick_ns);
	/* the steady calls without Python frames: the steady sums less the framed ones' */
	uint64_t sn = atomic_load(&ct_self[CT_SELF_STEADY]), fn = atomic_load(&ct_self[CT_SELF_FRAMED]);
	double fst = ct_self_mean(CT_SELF_FRAMED_STACK, CT_SELF_FRAMED, tick_ns);
	double fpy = ct_self_mean(CT_SELF_FRAMED_PYTHON, CT_SELF_FRAMED, tick_ns);
	double frec = ct_self_mean(CT_SELF_FRAMED_RECORD, CT_SELF_FRAMED, tick_ns);
	double bare[3] = {0, 0, 0};
	for (int i = 0; i < 3 && sn > fn; i++)
		bare[i] = (double)(atomic_load(&ct_self[CT_SELF_STEADY_STACK + i]) -
				   atomic_load(&ct_self[CT_SELF_FRAMED_STACK + i])) *
			  tick_ns / (double)(sn - fn);
	ct_warn_once(&said,
		     "self time: %llu calls with stacks, per call %.0f ns in the shim after the real "
		     "call (native stack %.0f, Python frames %.0f, record %.0f), real call %.0f ns; "
		     "stacks: %llu unwound, %llu known to the stack cache; Python thread state %s%s; "
		     "clock reads (%s) %.0f ns each, about eight in a steady call's figures; "
		     "parts: %llu cache hits "
		     "(lookup %.0f ns, checks %.0f ns), %llu Python walks (thread state %.0f ns, "
		     "frames to their key %.0f ns), %llu with no frame, %llu found by code pointers "
		     "alone, %llu found in the memo, %llu not walked (a whole native stack outside the "
		     "interpreter); "
		     "steady with Python frames: %llu calls, per call %.0f ns (native stack %.0f, "
		     "Python frames %.0f, record %.0f), without: %llu calls, per call %.0f ns (native "
		     "stack %.0f, Python %.0f, record %.0f); "
		     "steady (stacks known, "
		     "nothing new written): %llu calls, per call %.0f ns (native stack %.0f, Python "
		     "frames %.0f, record %.0f)",
		     (unsigned long long)calls, st + py + rec, st, py, rec, real,
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_UNWOUND]),
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_KNOWN]), ct_py_tstate_how(),
		     ct_py_tstate_checked(),
		     ct_clock_tsc ? "the CPU's counter" : "clock_gettime", ct_self_read_ns(tick_ns),
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_HITS]),
		     ct_self_mean(CT_SELF_LOOKUP, CT_SELF_HITS, tick_ns),
		     ct_self_mean(CT_SELF_CHECKS, CT_SELF_HITS, tick_ns),
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_WALKS]),
		     ct_self_mean(CT_SELF_PYSTATE, CT_SELF_WALKS, tick_ns),
		     ct_self_mean(CT_SELF_PYWALK, CT_SELF_WALKS, tick_ns),
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_PYNONE]),
		     (unsigned long long)ct_py_quick_hits(),
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_PYMEMO]),
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_PYOUT]),
		     (unsigned long long)fn, fst + fpy + frec, fst, fpy, frec,
		     (unsigned long long)(sn - fn), bare[0] + bare[1] + bare[2], bare[0], bare[1], bare[2],
		     (unsigned long long)atomic_load(&ct_self[CT_SELF_STEADY]),
		     sst + spy + srec, sst, spy, srec);
}

static uint32_t ct_thread_tid(struct ct_thread *t)
{
	if (CT_UNLIKELY(t->tid == 0))
		t->tid = (uint32_t)syscall(SYS_gettid);
	return t->tid;
}

uint32_t ct_current_tid(void)
{
	return ct_thread_tid(&ct_tls);
}

int ct_call_begin_slow(struct ct_call *call)
{
	struct ct_thread *t = &ct_tls;
	int state = atomic_load_explicit(&ct_state, memory_order_acquire);
	if (CT_UNLIKELY(state != CT_STATE_RUNNING && state != CT_STATE_FINISHED)) {
		if (state == CT_STATE_DISABLED)
			return 0;
		if (ct_in_handler(t))
			return -1; /* never start (or wait for) tracing in a handler */
		state = ct_ensure_started();
		if (state != CT_STATE_RUNNING && state != CT_STATE_FINISHED)
			return 0;
	}
	if (CT_UNLIKELY(atomic_load_explicit(&ct_detour, memory_order_relaxed)))
		return 0; /* CUPTI callbacks record this call (cupti.c), or tracing is paused */
	ct_call_start(t, call);
	return 1;
}

/* The overflow ring is shared by the threads past the memory budget. */
static void ct_ring_lock(struct ct_ring *ring)
{
	if (CT_UNLIKELY(ring->shared))
		while (atomic_flag_test_and_set_explicit(&ring->lock, memory_order_acquire))
			sched_yield();
}

static void ct_ring_unlock(struct ct_ring *ring)
{
	if (CT_UNLIKELY(ring->shared))
		atomic_flag_clear_explicit(&ring->lock, memory_order_release);
}

void ct_ring_nudge_slow(struct ct_ring *ring, uint64_t head)
{
	ring->cached_tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	if (head - ring->cached_tail > ring->cap / 2) {
		int saved_errno = errno;
		ct_writer_kick();
		errno = saved_errno;
		ring->nudge_at = head + ring->cap / 16;
	} else {
		ring->nudge_at = ring->cached_tail + ring->cap / 2;
	}
}

/*
 * Reserve len bytes in ring, waiting for the writer when it is full unless
 * drop mode is on or in_signal (a handler must not wait: the writer may need
 * a lock the interrupted code holds). Returns NULL when the record must be
 * dropped.
 */
static void *ct_reserve_or_wait(struct ct_ring *ring, uint32_t len, int in_signal)
{
	void *p = ct_ring_reserve(ring, len);
	if (CT_LIKELY(p != NULL))
		return p;
	if (ct_option(CT_OPT_DROP) || in_signal)
		return NULL;
	for (unsigned spins = 0;; spins++) {
		ct_writer_kick();
		if (atomic_load_explicit(&ct_state, memory_order_acquire) != CT_STATE_RUNNING)
			return NULL; /* the writer is gone: nobody will make room */
		if (spins < 16) {
			sched_yield();
		} else {
			struct timespec ts = {0, 50 * 1000};
			nanosleep(&ts, NULL);
		}
		p = ct_ring_reserve(ring, len);
		if (p)
			return p;
	}
}

/* Turn a filled event into one with the Python stack trailer. */
static void ct_event_add_py(struct ct_rec_event *ev, uint32_t py_id)
{
	if (!py_id)
		return;
	ev->rec.flags |= CT_EVENT_F_PYSTACK;
	ev->rec.size = sizeof *ev + sizeof(struct ct_rec_event_py);
	struct ct_rec_event_py *x = (struct ct_rec_event_py *)(ev + 1);
	x->pystack_id = py_id;
	x->reserved = 0;
}

/* Records made after the writer stopped go straight to the file. */
static void ct_call_end_direct(const struct ct_call *call, uint64_t t1, uint32_t tid, int depth,
			       const uint64_t *ips, uint32_t known_id, uint32_t py_id,
			       uint16_t rec_flags)
{
	struct {
		struct ct_rec_event ev;
		struct ct_rec_event_py py;
	} evx;
	struct ct_rec_event *evp = &evx.ev;
	uint32_t stack_id = known_id;
	if (depth > 0 && !known_id) {
		void *slot;
		stack_id = ct_stack_intern(ips, depth, &slot);
		if (slot) {
			struct {
				struct ct_rec_stack hdr;
				uint64_t ips[CT_STACK_MAX];
			} st;
			st.hdr.rec.type = CT_REC_STACK;
			st.hdr.rec.flags = 0;
			st.hdr.rec.size = (uint32_t)(sizeof st.hdr + (size_t)depth * 8);
			st.hdr.stack_id = stack_id;
			st.hdr.depth = (uint16_t)depth;
			st.hdr.reserved = 0;
			memcpy(st.ips, ips, (size_t)depth * 8);
			ct_write_direct(&st, st.hdr.rec.size);
			ct_stack_written(slot, 1);
		}
	}
	ct_fill_event(evp, call, t1, tid, stack_id);
	ct_event_add_py(evp, py_id);
	evp->rec.flags |= rec_flags;
	ct_write_direct(evp, evp->rec.size);
	atomic_fetch_add_explicit(&ct_events_recorded, 1, memory_order_relaxed);
}

/* ct_py_emit_fn: a record ahead of the event, to the ring or (FINISHED) the file. */
static int ct_py_emit(void *ctx, const void *rec, uint32_t len)
{
	struct ct_thread *t = ctx;
	if (atomic_load_explicit(&ct_state, memory_order_acquire) == CT_STATE_FINISHED) {
		ct_write_direct(rec, len);
		return 1;
	}
	int in_signal = ct_in_handler(t);
	struct ct_ring *ring = t->ring ? t->ring : in_signal ? NULL : ct_thread_ring();
	if (!ring)
		return 0;
	ct_ring_lock(ring);
	void *p = ct_reserve_or_wait(ring, len, in_signal);
	if (p) {
		memcpy(p, rec, len);
		ct_ring_commit(ring);
	}
	ct_ring_unlock(ring);
	return p != NULL;
}

/*
 * Everything but the common case: stacks, Python frames, the shared ring, a
 * full ring, the file. In a signal handler that may not unwind (signal.c) no
 * stack is taken: the event is marked CT_EVENT_F_SIGNAL instead.
 */
static CT_ALWAYS_INLINE inline void ct_call_end_full(struct ct_call *call, uint64_t t1)
{
	struct ct_thread *t = &ct_tls;
	uint32_t tid = ct_thread_tid(t);
	uint64_t ips[CT_STACK_MAX];
	uint64_t hash = 0;
	uint32_t known_id = 0; /* from the stack cache: then ips is not filled */
	int depth = 0;
	int in_signal = ct_in_handler(t);
	long want = ct_option(CT_OPT_STACK_DEPTH);
	int stacks = want > 0 && ct_call_wants_stack(call);
	uint16_t rec_flags = 0;
	if (stacks && in_signal && t->sig_nostack) {
		stacks = 0;
		rec_flags = CT_EVENT_F_SIGNAL;
	}
	int timed = CT_UNLIKELY(ct_option(CT_OPT_SELFTIME)) && stacks;
	if (timed) {
		memset(t->self_mark, 0, sizeof t->self_mark);
		t->self_on = 1;
	}
	if (stacks)
		depth = call->layer == CT_LAYER_CUPTI
				? ct_cupti_stack_capture(ips, (int)want)
				: ct_stack_capture_at(ips, (int)want, call->frame, &hash, &known_id);
	uint64_t t_stack = timed ? ct_ticks() : 0;
	uint32_t py_id = 0;
	if (stacks && call->layer != CT_LAYER_CUPTI) {
		/* a whole stack outside the interpreter's object: no Python frame to look for */
		if (!ct_stack_cache_no_python())
			py_id = ct_py_capture(ct_py_emit, t);
		else
			ct_self_mark(CT_SELF_MARK_PYOUT);
	}
	uint64_t t_py = 0;
	if (timed) {
		t_py = ct_ticks();
		t->self_on = 0;
	}

	if (CT_UNLIKELY(atomic_load_explicit(&ct_state, memory_order_acquire) ==
			CT_STATE_FINISHED)) {
		ct_call_end_direct(call, t1, tid, depth, ips, known_id, py_id, rec_flags);
		return;
	}
	struct ct_ring *ring = t->ring;
	if (CT_UNLIKELY(!ring)) {
		if (in_signal) { /* making a ring takes locks */
			ct_count_lost_signal();
			return;
		}
		ring = ct_thread_ring();
		if (!ring) {
			ct_count_lost();
			return;
		}
	}

	uint32_t stack_id = known_id;
	void *slot = NULL;
	if (depth > 0 && !known_id)
		stack_id = hash ? ct_stack_intern_hash(hash, &slot)
				: ct_stack_intern(ips, depth, &slot);
	ct_ring_lock(ring);
	if (slot) {
		uint32_t len = (uint32_t)(sizeof(struct ct_rec_stack) + (size_t)depth * 8);
		struct ct_rec_stack *st = ct_reserve_or_wait(ring, len, in_signal);
		if (st) {
			st->rec.type = CT_REC_STACK;
			st->rec.flags = 0;
			st->rec.size = len;
			st->stack_id = stack_id;
			st->depth = (uint16_t)depth;
			st->reserved = 0;
			memcpy(st + 1, ips, (size_t)depth * 8);
			ct_ring_commit(ring);
		}
		ct_stack_written(slot, st != NULL);
		if (st && hash)
			ct_stack_cache_note_id(stack_id);
	} else if (hash && stack_id && !known_id) {
		ct_stack_cache_note_id(stack_id); /* written, or being written by another thread */
	}
	struct ct_rec_event *ev = ct_reserve_or_wait(
		ring, (uint32_t)(sizeof *ev + (py_id ? sizeof(struct ct_rec_event_py) : 0)),
		in_signal);
	if (ev) {
		/* the lines a later event will take (ct.h): an event with a Python stack spans two */
		ct_prefetch_for_write((char *)ev + CT_RING_PREFETCH);
		ct_prefetch_for_write((char *)ev + CT_RING_PREFETCH + 64);
		ct_fill_event(ev, call, t1, tid, stack_id);
		ct_event_add_py(ev, py_id);
		ev->rec.flags |= rec_flags;
		ct_ring_commit(ring);
		ring->events++; /* the owner's (or, shared, the lock holder's) counter */
	} else if (in_signal) {
		ct_count_lost_signal();
	} else {
		/* release: the writer that sees this drop sees the ring's tid (ct_thread_ring) */
		atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_release);
	}
	ct_ring_nudge(ring); /* under the lock: cached_tail is the producer's */
	ct_ring_unlock(ring);
	if (timed)
		ct_selftime_add(call->t0, t1, t_stack, t_py, ct_ticks(), known_id != 0,
				depth > 0 && !hash, t->self_mark);
}

CT_HOT void ct_call_prefetch(const struct ct_call *call)
{
	if (ct_option(CT_OPT_STACK_DEPTH) <= 0)
		return;
	ct_stack_cache_prefetch(call->frame);
	if (call->layer != CT_LAYER_CUPTI)
		ct_py_prefetch();
	struct ct_ring *ring = ct_tls.ring;
	if (ring) {
		uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
		const unsigned char *p = ring->data + (head & (ring->cap - 1));
		ct_prefetch_for_write(p); /* a prefetch past the end is only a hint */
		ct_prefetch_for_write(p + 64);
	}
}

CT_HOT void ct_call_end_slow(struct ct_call *call, uint64_t t1)
{
	struct ct_thread *t = &ct_tls;
	int saved_errno = errno;
	ct_call_end_full(call, t1);
	atomic_signal_fence(memory_order_seq_cst);
	t->in_hook = CT_HOOK_NONE;
	errno = saved_errno;
}

void ct_record_raw(const void *rec, uint32_t len)
{
	struct ct_thread *t = &ct_tls;
	if (t->in_hook == CT_HOOK_SIGNAL && ct_in_handler(t)) {
		ct_count_lost_record();
		return;
	}
	if (t->in_hook)
		return;
	int in_signal = ct_in_handler(t);
	int state = atomic_load_explicit(&ct_state, memory_order_acquire);
	if (state != CT_STATE_RUNNING && state != CT_STATE_FINISHED) {
		if (in_signal && state != CT_STATE_DISABLED) {
			ct_count_lost_record();
			return;
		}
		state = ct_ensure_started();
	}
	if (state == CT_STATE_FINISHED) {
		ct_write_direct(rec, len);
		return;
	}
	if (state != CT_STATE_RUNNING)
		return;
	int saved_errno = errno;
	t->in_hook = CT_HOOK_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	struct ct_ring *ring = t->ring ? t->ring : in_signal ? NULL : ct_thread_ring();
	void *p = NULL;
	if (ring) {
		ct_ring_lock(ring);
		p = ct_reserve_or_wait(ring, len, in_signal);
		if (p) {
			memcpy(p, rec, len);
			ct_ring_commit(ring);
		}
		ct_ring_unlock(ring);
	}
	if (!p) /* not an event: never counted as a dropped one */
		ct_count_lost_record();
	atomic_signal_fence(memory_order_seq_cst);
	t->in_hook = CT_HOOK_NONE;
	errno = saved_errno;
}
