/*
 * The recording core's interface (preload/core/): options, clock, rings,
 * stacks, Python frames, the thread's hook state and the hot path. Every
 * file of the shim includes it; the core itself includes no header of the
 * other stages: what it calls in them is declared in seam.h. The ways in
 * add hooks/hooks.h, the output stage output/session.h. Functions return 0
 * (or a valid pointer) on success unless their comment says otherwise.
 *
 * Ownership: every ring, the stack table and the write buffer are mmap'ed by
 * the shim and owned by it; nothing here calls malloc, so the shim is safe to
 * use from inside any allocator and from early process start.
 */
#ifndef CT_PRELOAD_H
#define CT_PRELOAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cumtrace/format.h"

#define CT_HIDDEN __attribute__((visibility("hidden")))
#define CT_EXPORT __attribute__((visibility("default")))
#define CT_LIKELY(x) __builtin_expect(!!(x), 1)
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define CT_ALWAYS_INLINE __attribute__((always_inline))
/*
 * The globals every traced call reads, gathered in one section (the linker
 * puts every object's "ct_hot" together): 392 bytes on one page, where they
 * lay on six pages of .data and .bss, each a possible TLB miss after the
 * program's own work between two traced calls.
 */
#define CT_HOT_DATA __attribute__((section("ct_hot")))
/* The functions of a traced call's steady path: .text.hot, together (about 7.5 KB) where they lay
 * pages apart among the rest. */
#define CT_HOT __attribute__((hot))

/* ---- options (config.c) ---------------------------------------------------- */

enum ct_option {
	CT_OPT_OUTPUT,	    /* CUMTRACE_OUTPUT: path template */
	CT_OPT_STACK_DEPTH, /* CUMTRACE_STACK_DEPTH: native frames, 0 = off */
	CT_OPT_BUFFER_MB,   /* CUMTRACE_BUFFER_MB: all rings together */
	CT_OPT_DROP,	    /* CUMTRACE_DROP: 1 = drop when a ring is full */
	CT_OPT_FLUSH_MS,    /* CUMTRACE_FLUSH_MS: writer interval */
	CT_OPT_DISABLE,	    /* CUMTRACE_DISABLE: 1 = record nothing */
	CT_OPT_MANIFEST,    /* CUMTRACE_MANIFEST: file that lists every dump made */
	CT_OPT_QUIET,	    /* CUMTRACE_QUIET: 1 = no notice on stderr */
	CT_OPT_BACKEND,	    /* CUMTRACE_BACKEND: "interpose" (default) or "cupti" */
	CT_OPT_COMPRESS,    /* CUMTRACE_COMPRESS: 1 = zstd-compress writer rounds (default) */
	CT_OPT_CLOCK,	    /* CUMTRACE_CLOCK: "monotonic" = never read the CPU's counter */
	CT_OPT_STACK_CACHE, /* CUMTRACE_STACK_CACHE: 0 = unwind every stack afresh */
	CT_OPT_TORCH,	    /* CUMTRACE_TORCH: 0 = no framework layer; 2 = also unmeasured versions */
	CT_OPT_PYTHON_BOOT, /* CUMTRACE_PYTHON_BOOT: 0 = no Python bootstrap (pyboot.c) */
	/* ---- the memory no allocation call shows (issue 19 §6) ---- */
	CT_OPT_MEMSAMPLE_MS, /* CUMTRACE_MEMSAMPLE_MS: device memory samples at most this often, 0 = none */
	CT_OPT_SELFTIME,     /* CUMTRACE_SELFTIME: 1 = the shim's time per traced call, at exit */
	/* ---- packed events (issue 15) ---- */
	CT_OPT_PACK, /* CUMTRACE_PACK: 1 = events go out as CT_REC_EVENTS (default), 0 = CT_REC_EVENT */
	/* ---- the cost of a traced call (issue 16) ---- */
	CT_OPT_HUGE_PAGES, /* CUMTRACE_HUGE_PAGES: 1 = rings of 2 MiB or more ask for huge pages (default) */
	CT_OPT_COUNT
};

/* Read every option from the environment once; later calls do nothing. */
CT_HIDDEN void ct_options_init(void);
extern long ct_option_values[CT_OPT_COUNT] CT_HIDDEN;
/* Integer value of an option (after ct_options_init; 0 before). */
static inline long ct_option(enum ct_option opt)
{
	return ct_option_values[opt];
}
/* String value of an option, or NULL when unset. */
CT_HIDDEN const char *ct_option_str(enum ct_option opt);
/* Name of the environment variable behind an option. */
CT_HIDDEN const char *ct_option_env(enum ct_option opt);

/*
 * Expand an output template: %p pid, %h host name, %q{VAR} the value of VAR,
 * %% a percent sign. Writes at most cap bytes with NUL; returns 0, or -1 when
 * the result does not fit.
 */
CT_HIDDEN int ct_expand_template(const char *tmpl, char *out, size_t cap);

/*
 * Read the start of a small file (procfs, a version file) into buf: at most
 * cap - 1 bytes, NUL-terminated, no allocation. Returns the bytes read, or -1
 * when it cannot be opened.
 */
CT_HIDDEN long ct_read_small_file(const char *path, char *buf, size_t cap);

/* Print "cumtrace: <msg>" on stderr, at most once per key. */
CT_HIDDEN void ct_warn_once(_Atomic int *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- time (clock.c) ----------------------------------------------------------- */

/* CLOCK_MONOTONIC now, in ns: what the dump's timestamps are. */
static inline uint64_t ct_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Records made on the hot path are stamped in raw ticks: the CPU's constant
 * counter (x86-64 TSC, aarch64 CNTVCT_EL0) when ct_clock_tsc, else
 * CLOCK_MONOTONIC ns. The writer turns ticks into CLOCK_MONOTONIC ns as it
 * writes the records (ct_rec_finish): ring records (EVENT, MARK, MEMINFO) carry ticks,
 * every record the writer makes itself carries ns.
 */
extern int ct_clock_tsc CT_HIDDEN;

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Ticks now; no ordering with the instructions around it. */
static inline uint64_t ct_ticks(void)
{
#if defined(__x86_64__)
	if (CT_LIKELY(ct_clock_tsc))
		return __rdtsc();
#elif defined(__aarch64__)
	if (CT_LIKELY(ct_clock_tsc)) {
		uint64_t v;
		__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#endif
	return ct_now_ns();
}

/*
 * Ticks now, read only after every earlier instruction has completed (its
 * loads included): the stamp of a call's return, which must not be earlier
 * than what the call observed (format.h: a free sorts before the reuse).
 */
static inline uint64_t ct_ticks_ordered(void)
{
#if defined(__x86_64__)
	if (CT_LIKELY(ct_clock_tsc)) {
		_mm_lfence();
		return __rdtsc();
	}
#elif defined(__aarch64__)
	if (CT_LIKELY(ct_clock_tsc)) {
		uint64_t v;
		__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
		return v;
	}
#endif
	return ct_now_ns();
}

/*
 * Pick the clock (CUMTRACE_CLOCK, /proc/cpuinfo) and take the first
 * calibration points. At tracing start, before any ticks are read; again in
 * a fork child.
 */
CT_HIDDEN void ct_clock_init(void);
/*
 * x86-64: may the TSC stand for CLOCK_MONOTONIC, given /proc/cpuinfo's text
 * and the kernel's current clocksource (its sysfs file's text)? constant_tsc,
 * and nonstop_tsc or the clocksource "tsc" (clock.c says why).
 */
CT_HIDDEN int ct_clock_tsc_trusted(const char *cpuinfo, const char *clocksource);
/* "tsc" or "monotonic" (setting.clock). */
CT_HIDDEN const char *ct_clock_name(void);
/*
 * Add a calibration point (ticks and CLOCK_MONOTONIC read together). The
 * caller excludes every ct_clock_to_ns (the writer: at the start of a round,
 * holding both the round lock and the direct-write lock).
 */
CT_HIDDEN void ct_clock_knot(void);
/* Add the calibration point (t, ns) (ct_clock_knot's work; tests). */
CT_HIDDEN void ct_clock_add_knot(uint64_t t, uint64_t ns);
/* Forget the calibration and use the counter (tests) or not. */
CT_HIDDEN void ct_clock_reset(int tsc);
/*
 * Ticks to CLOCK_MONOTONIC ns: continuous, non-decreasing, piecewise linear
 * through the calibration points; past the newest one it extrapolates the
 * newest segment, and a later calibration point never changes a value already
 * handed out. Identity when the clock is CLOCK_MONOTONIC itself.
 */
CT_HIDDEN uint64_t ct_clock_to_ns(uint64_t ticks);

/* Does an event of op carry a stack (it creates something worth a call site)? */
static inline int ct_op_wants_stack(unsigned op)
{
	return ct_op_is_allocation(op);
}

/* Is op's event stamped when its call returned (what it creates exists from then on)? */
static inline int ct_op_at_return(unsigned op)
{
	return ct_op_wants_stack(op) || op == CT_OP_STREAM_CREATE;
}

/*
 * Finish a record made on the hot path for the file: an EVENT holds the
 * call's entry and return ticks in ts_ns and dur_ns and gets its final
 * ts_ns / dur_ns (format.h); a MARK's ts_ns and a MEMINFO's ts_ns and
 * call_ts_ns are converted. Other types are left alone.
 */
CT_HIDDEN void ct_rec_finish(struct ct_rec *rec);

/* ---- rings (ring.c) ---------------------------------------------------------- */

/*
 * A single-producer single-consumer byte ring. The owning thread appends
 * whole records; the writer thread copies out [tail, head). Records never
 * straddle the end: a CT_REC_PAD fills the gap before a wrap. What the
 * producer writes on every record shares one cache line, which the writer
 * reads once per round (head); read-only and writer-side fields have lines of
 * their own.
 */
struct ct_ring {
	/* written by the producer on every record */
	_Atomic uint64_t head; /* bytes ever committed */
	uint64_t cached_tail;  /* producer's last look at tail */
	uint64_t nudge_at;     /* wake the writer when head passes this */
	uint64_t pending;      /* bytes reserved, not yet committed */
	uint64_t events; /* recorded through this ring: the producer's count, read at exit */
	/* set before the ring is shared, then only read */
	_Alignas(64) uint64_t cap; /* power of two */
	unsigned char *data;
	struct ct_ring *next; /* registry list: pushed at the head, never removed */
	size_t map_size;
	int shared;	  /* the overflow ring: producers take lock */
	atomic_flag lock; /* for shared rings only */
	/* written by the writer */
	_Alignas(64) _Atomic uint64_t tail; /* bytes ever consumed */
	uint64_t dropped_reported;	    /* last CT_REC_DROPS total */
	_Atomic int state;		    /* enum ct_ring_state */
	/* the owner, stored (release) when a thread takes the ring, before any event or drop of
	 * its own; the writer reads it after a drop it saw (ring->dropped, release) */
	_Atomic uint32_t tid;
	_Alignas(64) _Atomic uint64_t dropped; /* events the producer dropped */
};

enum ct_ring_state {
	CT_RING_ACTIVE = 0, /* owned by a live thread */
	CT_RING_DEAD = 1,   /* owner exited: the writer drains, then frees it */
	CT_RING_FREE = 2,   /* drained: a new thread may take it */
};

/*
 * Map a ring with cap bytes of data (cap a power of two >= 4096); huge: on
 * huge pages when it is large enough and CUMTRACE_HUGE_PAGES allows (ring.c).
 * Returns NULL when memory cannot be mapped.
 */
CT_HIDDEN struct ct_ring *ct_ring_create(uint64_t cap, int huge);
CT_HIDDEN void ct_ring_destroy(struct ct_ring *ring);

/*
 * How far ahead of its records the producer prefetches the ring for writing:
 * the writer read those lines on another CPU a round ago, and a store that
 * has to take a line back from another CPU stalls the next locked
 * instruction (the runtime's own mutex) until it completes. Asking for the
 * line with write intent some records early hides that. Near the end of the
 * ring the address lies past it: a prefetch is only a hint and never faults.
 */
#define CT_RING_PREFETCH 1024
extern int ct_has_prefetchw CT_HIDDEN; /* x86-64: PREFETCHW exists (CPUID) */

static inline void ct_prefetch_for_write(const void *p)
{
#if defined(__x86_64__)
	if (ct_has_prefetchw)
		__asm__ __volatile__("prefetchw %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* Past nudge_at: wake the writer if the ring is over half full, move nudge_at. */
CT_HIDDEN void ct_ring_nudge_slow(struct ct_ring *ring, uint64_t head);
/* Out of room at the end or in all: ct_ring_reserve's slow half. */
CT_HIDDEN void *ct_ring_reserve_slow(struct ct_ring *ring, uint32_t len);

/*
 * Reserve len bytes (a multiple of 8, <= cap/2) for one record. Returns a
 * pointer to contiguous space, or NULL when the ring is full. Must be followed
 * by ct_ring_commit before the next reserve.
 */
static inline void *ct_ring_reserve(struct ct_ring *ring, uint32_t len)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	uint64_t pos = head & (ring->cap - 1);
	if (CT_UNLIKELY(pos + len > ring->cap || head + len - ring->cached_tail > ring->cap))
		return ct_ring_reserve_slow(ring, len);
	ring->pending = len;
	return ring->data + pos;
}

/* Publish what the last reserve handed out. */
static inline void ct_ring_commit(struct ct_ring *ring)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	atomic_store_explicit(&ring->head, head + ring->pending, memory_order_release);
}

/*
 * Writer side: the committed bytes not yet consumed as at most two spans.
 * Returns the number of spans (0, 1 or 2) and sets *end to the head seen.
 */
CT_HIDDEN int ct_ring_peek(struct ct_ring *ring, const void **p0, size_t *n0, const void **p1,
			   size_t *n1, uint64_t *end);
/* Writer side: mark everything up to end consumed. */
CT_HIDDEN void ct_ring_release(struct ct_ring *ring, uint64_t end);

/* ---- stacks (stack.c) -------------------------------------------------------- */

struct dl_phdr_info;
/* The address range [*lo, *hi) of a loaded object's PT_LOAD segments. */
CT_HIDDEN void ct_module_range(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi);
/* A loaded object that holds an address (ct_module_of). */
struct ct_module {
	uintptr_t lo, hi; /* its range (ct_module_range) */
	uintptr_t base;	  /* dlpi_addr: its link_map's l_addr */
	const char *name; /* the loader's string ("" for the program) or NULL: valid while it stays loaded */
};
/*
 * 1 and *m: the loaded object that holds p; 0: none holds it. With copy, its
 * name is also copied there (at most cap - 1 bytes, "" for none) while the
 * loader's lock holds it loaded.
 */
CT_HIDDEN int ct_module_of(const void *p, struct ct_module *m, char *copy, size_t cap);

/*
 * A lock-free interning table: 64-bit hash -> dense id (1, 2, ...), with a
 * per-entry "record written" state so that exactly one user writes the
 * record that defines an id. nslots is a power of two; the slots are mapped
 * at first use. Native stacks and Python strings and stacks each have one.
 */
struct ct_intern_slot;
struct ct_intern_table {
	struct ct_intern_slot *_Atomic slots;
	_Atomic uint32_t next_id;
	uint32_t nslots;
};
/*
 * Intern hash h: its id, or 0 when the table is full. *must_write is set (to
 * the slot) when the caller is to write the defining record; it then calls
 * ct_intern_written(slot, ok): ok = 0 when it had to drop the record, so a
 * later user writes it.
 */
CT_HIDDEN uint32_t ct_intern(struct ct_intern_table *t, uint64_t h, void **must_write);
CT_HIDDEN void ct_intern_written(void *slot, int ok);
/* Forget every entry (fork child: its dump starts empty). */
CT_HIDDEN void ct_intern_reset(struct ct_intern_table *t);

/* Record the address range of libcumtrace.so itself so its frames are cut. */
CT_HIDDEN void ct_stack_init(void);
/* Is p inside libcumtrace.so (one of our wrappers)? */
CT_HIDDEN int ct_is_own_address(const void *p);
/*
 * Capture the caller's native stack into ips (at most max frames), without
 * the shim's own frames. Returns the number of frames.
 */
CT_HIDDEN int ct_stack_capture(uint64_t *ips, int max);
/*
 * The same stack, for a traced call whose wrapper recorded its frame address
 * (struct ct_call.frame, x86-64): from the thread's stack cache when the
 * cached stack is proven still current (stackcache.c), else unwound and
 * cached. frame NULL, or the cache off: ct_stack_capture. *hash is the
 * stack's ct_stack_hash when the cache knows it, else 0. *id is the stack's
 * interned id when the cache entry holds one (ct_stack_cache_note_id) from
 * this generation of the table (ct_stack_generation), else 0; when it is set,
 * ips is NOT filled: the stack's record was written already.
 */
CT_HIDDEN int ct_stack_capture_at(uint64_t *ips, int max, const void *frame, uint64_t *hash,
				  uint32_t *id);
/*
 * The stack the calling thread's last ct_stack_capture_at returned from its
 * cache (with a nonzero *hash) was interned as id, and its record is written
 * (or another thread was the one to write it): later hits skip the table.
 */
CT_HIDDEN void ct_stack_cache_note_id(uint32_t id);
/*
 * Does the stack the calling thread's last ct_stack_capture_at returned from
 * its cache prove that the thread runs no Python now (ct_py_outside of the
 * whole stack)? 0 when it does not, or no cached stack was returned.
 */
CT_HIDDEN int ct_stack_cache_no_python(void);
/* Start loading the cache lines ct_stack_capture_at will read for frame (no effect otherwise). */
CT_HIDDEN void ct_stack_cache_prefetch(const void *frame);
/* Moves on at every ct_stack_reset: ids of an older generation are void. */
CT_HIDDEN uint32_t ct_stack_generation(void);
/*
 * A thread's own cache of stacks (the native stack cache, the Python stack
 * memo): size bytes mapped private and anonymous (mmap flags: more flags),
 * made the calling thread's value of key, whose destructor unmaps it at
 * thread exit; errno kept. NULL when it cannot be had. Not in a signal
 * handler: pthread_setspecific may allocate.
 */
CT_HIDDEN void *ct_thread_map(pthread_key_t key, size_t size, int flags);
/* Create what the stack cache needs process-wide (at load, from ct_stack_init). */
CT_HIDDEN void ct_stack_cache_init(void);
/* "on" when ct_stack_capture_at uses the cache (x86-64, CUMTRACE_STACK_CACHE=1), else "off". */
CT_HIDDEN const char *ct_stack_cache_name(void);
/*
 * Intern a stack. Returns its id (>= 1), or 0 when the table is full.
 * *must_write is set (to the table slot) when the caller is the one to emit
 * its CT_REC_STACK; it must then call ct_stack_written(slot, ok) with ok = 1
 * once the record is in its ring, or 0 when it had to drop it (a later use of
 * the stack then writes it).
 */
CT_HIDDEN uint32_t ct_stack_intern(const uint64_t *ips, int depth, void **must_write);
/* One step of the shim's hashes of 64-bit words (stacks, Python stacks, stack checks). */
static inline uint64_t ct_hash_step(uint64_t h, uint64_t v)
{
	h ^= v;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The hash ct_stack_intern keys a stack of depth >= 1 by. */
CT_HIDDEN uint64_t ct_stack_hash(const uint64_t *ips, int depth);
/* ct_stack_intern of a stack whose ct_stack_hash is known. */
CT_HIDDEN uint32_t ct_stack_intern_hash(uint64_t hash, void **must_write);
CT_HIDDEN void ct_stack_written(void *slot, int ok);
/* Forget every interned stack (fork child: its dump starts empty). */
CT_HIDDEN void ct_stack_reset(void);
/* Distinct stacks interned so far. */
CT_HIDDEN uint64_t ct_stack_count(void);

/* ---- the shim's descriptors (fd.c) ------------------------------------------ */

/* Below this RLIMIT_NOFILE the shim holds no descriptor, so it does not trace. */
#define CT_FD_MIN_LIMIT 64
/*
 * The lowest number the shim may hold now: its descriptors sit in the top 16
 * below min(RLIMIT_NOFILE, 1024), clear of the lowest numbers, which open()
 * hands to the program. -1 when the limit is below CT_FD_MIN_LIMIT.
 */
CT_HIDDEN int ct_fd_floor(void);
/*
 * Move fd to the shim's numbers (F_DUPFD_CLOEXEC from ct_fd_floor) and close
 * fd. Returns the new number, or -1 with errno set (fd closed all the same).
 */
CT_HIDDEN int ct_fd_move_high(int fd);
/*
 * Around every call into libunwind: the first one sets libunwind up, and a
 * pipe libunwind creates meanwhile (its memory checks) is moved to the
 * shim's numbers. Calls nest.
 */
CT_HIDDEN void ct_unwinder_enter(void);
CT_HIDDEN void ct_unwinder_leave(void);

/* ---- recording (record.c) ---------------------------------------------------- */

struct ct_stack_cache;

/*
 * What the thread is doing, as far as tracing goes (struct ct_thread.in_hook).
 * Any value but CT_HOOK_NONE makes the wrappers forward calls untraced: a
 * call made then is nested (the runtime's own driver call, CUDA work the shim
 * does) and is part of the call in progress, except under CT_HOOK_SIGNAL.
 * A signal handler that the shim's wrapper runs (signal.c) starts at
 * CT_HOOK_NONE when it interrupted CT_HOOK_NONE or CT_HOOK_REAL, where its
 * calls may be recorded, else at CT_HOOK_SIGNAL.
 */
enum ct_hook_state {
	CT_HOOK_NONE = 0,   /* outside any traced call */
	CT_HOOK_BUSY = 1,   /* the shim's own work: records, rings, stacks, start-up */
	CT_HOOK_REAL = 2,   /* a traced call's real function (or its arguments) */
	CT_HOOK_SIGNAL = 3, /* in a handler that interrupted CT_HOOK_BUSY: calls are counted */
};

/* Inner marks of a timed call (CUMTRACE_SELFTIME): ct_self_mark. */
enum {
	CT_SELF_MARK_SET,     /* the stack cache entry found, its checks not read */
	CT_SELF_MARK_CHECKED, /* its checks held: a hit */
	CT_SELF_MARK_PYSTATE, /* the Python thread state found */
	CT_SELF_MARK_PYWALK,  /* the Python frames walked to their memo key */
	CT_SELF_MARK_PYMEMO,  /* the key was in the memo: no frame read, no record written */
	CT_SELF_MARK_PYNONE,  /* the thread state held no frame */
	CT_SELF_MARK_PYOUT,   /* not looked for: the native stack runs no Python (ct_py_outside) */
	CT_SELF_MARKS
};

/* Per-thread state, in initial-exec TLS: a few dozen bytes. */
struct ct_thread {
	struct ct_ring *ring;
	struct ct_stack_cache *stacks; /* this thread's stack cache, mapped at first use */
	uintptr_t sig_frame;	       /* in a signal handler: the shim's wrapper's frame (signal.c) */
	uint32_t tid;
	int16_t device;	 /* from the last successful cudaSetDevice */
	uint8_t in_hook; /* enum ct_hook_state */
	uint8_t device_set;
	uint8_t sig_nostack; /* in a signal handler where no stack may be taken (signal.c) */
	uint8_t self_on;     /* CUMTRACE_SELFTIME: this call is timed (ct_self_mark) */
	uint64_t self_mark[CT_SELF_MARKS];
};

extern __thread struct ct_thread ct_tls __attribute__((tls_model("initial-exec"))) CT_HIDDEN;

/* What a hook fills in; ct_call_end turns it into a CT_REC_EVENT. */
struct ct_call {
	uint64_t t0; /* ticks at entry */
	uint64_t ptr, size, stream, aux;
	int32_t result;
	uint32_t flags;
	uint16_t api;
	uint8_t op, kind;
	uint8_t layer;
	int16_t device;
	/*
	 * The frame address of the wrapper that made the call (x86-64, calls
	 * that want a stack): the caller's frame pointer at [0], the return
	 * address into the caller at [1]; NULL when unknown.
	 */
	const void *frame;
};

/*
 * Framework events (layer CT_LAYER_FRAMEWORK) that carry stacks: those that
 * hand out memory, and the out-of-memory one (format.h, "Framework events").
 */
static inline int ct_fw_wants_stack(unsigned api)
{
	return api == CT_API_torch_alloc || api == CT_API_torch_segment_alloc ||
	       api == CT_API_torch_segment_map || api == CT_API_torch_oom || api == CT_API_cupy_alloc;
}

/* Does this call's event carry stacks (native and Python)? */
static inline int ct_call_wants_stack(const struct ct_call *call)
{
	return ct_op_wants_stack(call->op) ||
	       (call->layer == CT_LAYER_FRAMEWORK && ct_fw_wants_stack(call->api));
}

/*
 * Called before the real call of a call that takes stacks: starts loading
 * what ct_call_end will touch (the thread's stack cache set, the ring's next
 * lines), so that those misses overlap the real call instead of following it.
 * In a training loop the shim's data is out of the caches by the next call
 * (issue 16, runs 30-31); on the H200 this prefetch did not move the cost
 * beyond the run-to-run spread (run 32), so its worth there is not shown.
 */
CT_HIDDEN void ct_call_prefetch(const struct ct_call *call);

/* ct_call_begin's slow half: tracing not running yet, off, paused, or recorded by CUPTI. */
CT_HIDDEN int ct_call_begin_slow(struct ct_call *call);

/*
 * Start a traced call (ct_call_begin, at the end of this file): returns 1
 * when this call is to be recorded (the caller then must call ct_call_end), 0
 * when it is nested inside another traced call or tracing is off (then the
 * caller just forwards the call), -1 when it is made inside a signal handler
 * and tracing is not running (then the caller forwards it as
 * ct_signal_pass_begin says).
 */
static inline int ct_call_begin(struct ct_call *call) CT_ALWAYS_INLINE;
/*
 * Finish a traced call (ct_call_end, at the end of this file): timestamp,
 * stack, ring. Preserves errno (the common case never touches it; the others
 * save and restore it). op is call->op: a wrapper passes its constant.
 */
static inline void ct_call_end(struct ct_call *call, unsigned op) CT_ALWAYS_INLINE;
/* Everything but ct_call_end's common case; t1 is the call's return ticks. */
CT_HIDDEN void ct_call_end_slow(struct ct_call *call, uint64_t t1);

/* Kernel thread id of the calling thread (cached). */
CT_HIDDEN uint32_t ct_current_tid(void);

/* Append a ready-made record (e.g. a mark) from the current thread. */
CT_HIDDEN void ct_record_raw(const void *rec, uint32_t len);

/*
 * CUMTRACE_SELFTIME=1: the shim's own time in the calls that take stacks
 * (allocations and the like), from the real call's return to the end of the
 * recording, split into native stack, Python frames and the rest; printed on
 * stderr at exit by ct_selftime_report. Off, it costs one predicted branch.
 */
CT_HIDDEN void ct_selftime_report(void);

/* Inside a timed call, note when phase mark i was reached (one predicted branch otherwise). */
static inline void ct_self_mark(int i)
{
	if (CT_UNLIKELY(ct_tls.self_on))
		ct_tls.self_mark[i] = ct_ticks();
}

/* Events written outside any ring (after exit); ring events are counted per ring. */
extern _Atomic uint64_t ct_events_recorded CT_HIDDEN;

/* ---- Python frames (python.c) ------------------------------------------------ */

/* Store one ready-made record ahead of the current event; returns 1 if stored. */
typedef int (*ct_py_emit_fn)(void *ctx, const void *rec, uint32_t len);
/*
 * The calling thread's Python stack when it runs Python code of a CPython
 * interpreter, holding the GIL or not (the GIL is never taken): its
 * CT_REC_PYSTACK id (>= 1), after handing any new CT_REC_PYSTRING /
 * CT_REC_PYSTACK records to emit. 0 when there is none.
 */
CT_HIDDEN uint32_t ct_py_capture(ct_py_emit_fn emit, void *ctx);
/*
 * For a thread's whole native stack ips[0..n) (to its outermost frame): 1
 * when no frame lies in the interpreter's object, so that the thread runs no
 * Python code and ct_py_capture would find no frame; 0 when one does, or
 * there are no Python frames to take; -1 when that is not known yet (the
 * Python side not set up).
 */
CT_HIDDEN int ct_py_outside(const uint64_t *ips, int n);
/* Before the real call of a call that takes stacks: prefetch what ct_py_capture reads first. */
CT_HIDDEN void ct_py_prefetch(void);
/* Forget every interned Python string and stack (fork child). */
CT_HIDDEN void ct_py_reset(void);
CT_HIDDEN void ct_py_init(void); /* at load: the memo's thread-exit key */
/*
 * How the function at fn (one returning a thread local's value) finds the
 * variable, when its code is exactly one of the x86-64 TLS sequences
 * (python.c): CT_TLS_TP, at the thread pointer plus *tp_off; CT_TLS_GD, at
 * __tls_get_addr(*ti); CT_TLS_CALL, neither: call it.
 */
enum { CT_TLS_CALL = 0, CT_TLS_TP = 1, CT_TLS_GD = 2 };
CT_HIDDEN int ct_tls_var_code(const void *fn, long *tp_off, const void **ti);
/*
 * How the Python thread state is found (CUMTRACE_SELFTIME's line), in words,
 * then " (checked with the GIL)" once the current state's read in place was
 * checked there, else "".
 */
CT_HIDDEN const char *ct_py_tstate_how(void);
CT_HIDDEN const char *ct_py_tstate_checked(void);
/* A symbol of the interpreter, dlsym(RTLD_DEFAULT) through the real dlsym; NULL if none. */
CT_HIDDEN void *ct_py_sym(const char *name);
/*
 * With the GIL (the Python bootstrap's pending call): add a code watcher
 * (CPython 3.12+) that counts code objects freed, so that the memo of Python
 * stacks may find a stack without reading its code objects (python.c).
 * Nothing on older versions or when every watcher slot is taken.
 */
CT_HIDDEN void ct_py_watch_code(void);
/* CUMTRACE_SELFTIME: the memo's hits on code pointers alone (no code object read) so far. */
CT_HIDDEN uint64_t ct_py_quick_hits(void);

/* What the core calls in the other stages, declared by the core (seam.h). */
#include "seam.h"

/*
 * Once tracing runs in a CPython process: schedule the Python bootstrap
 * (pyboot.c) with Py_AddPendingCall. Called by the thread that started tracing
 * (output/session.c).
 */
CT_HIDDEN void ct_pyboot_schedule(void);

/* ---- signal handlers (signal.c) ---------------------------------------------- */

/*
 * Is the calling thread inside a program's signal handler (one the shim's
 * wrapper runs: installed with sigaction or signal)? There a call never
 * waits (for the writer, for start-up) and makes no ring; and when
 * t->sig_nostack is set (the handler interrupted code that may hold the
 * loader's or malloc's lock, signal.c) it takes no native or Python stack.
 * A handler left by siglongjmp is noticed here (the stack is back above the
 * wrapper's frame) and forgotten. Async-signal-safe.
 */
CT_HIDDEN int ct_in_handler_slow(struct ct_thread *t);
static inline int ct_in_handler(struct ct_thread *t)
{
	return CT_UNLIKELY(t->sig_frame != 0) && ct_in_handler_slow(t);
}

/*
 * A traced call made inside a signal handler that cannot be recorded (the
 * handler interrupted the shim's own work, CT_HOOK_SIGNAL, or tracing is not
 * running): count it (ct_count_lost_signal) and mark the thread busy, so
 * that what the real function calls is part of it; the caller forwards the
 * call, then puts *hook back. Returns 0, counting nothing, when a handler
 * left by siglongjmp was all that made in_hook CT_HOOK_SIGNAL: the call is
 * then to be traced.
 */
static inline int ct_signal_pass_begin(uint8_t *hook)
{
	struct ct_thread *t = &ct_tls;
	*hook = t->in_hook;
	if (*hook == CT_HOOK_SIGNAL && !ct_in_handler(t))
		return 0;
	ct_count_lost_signal();
	t->in_hook = CT_HOOK_BUSY;
	return 1;
}

/* ---- the hot path's inline half ----------------------------------------------- */

/*
 * A call to record starts: nested calls are off, the fields are cleared, t0 is
 * read. Until ct_call_end the thread touches none of the shim's shared state
 * (CT_HOOK_REAL): a signal handler may record its own calls meanwhile.
 */
static inline void ct_call_start(struct ct_thread *t, struct ct_call *call)
{
	t->in_hook = CT_HOOK_REAL;
	call->ptr = call->size = call->stream = call->aux = 0;
	call->flags = 0;
	call->frame = NULL;
	call->device = t->device;
	call->t0 = ct_ticks();
}

/*
 * Begin a framework event (format.h, "Framework events": layer
 * CT_LAYER_FRAMEWORK, op none, result 0) of api on the calling thread, for
 * ct_call_end_slow: tracing is started first if need be (a fork child before
 * its first traced call). Returns 0, recording nothing, when tracing is shut
 * down, off or paused (cumtrace_bench_pause), or when the thread is inside
 * the shim (then counted as lost).
 */
static inline int ct_fw_call_begin(struct ct_call *call, unsigned api)
{
	int state = atomic_load_explicit(&ct_state, memory_order_acquire);
	if (state == CT_STATE_UNINIT)
		state = ct_ensure_started();
	if (state != CT_STATE_RUNNING ||
	    (atomic_load_explicit(&ct_detour, memory_order_relaxed) & CT_DETOUR_PAUSED))
		return 0;
	struct ct_thread *t = &ct_tls;
	if (t->in_hook) {
		ct_count_lost();
		return 0;
	}
	ct_call_start(t, call);
	call->api = (uint16_t)api;
	call->op = CT_OP_NONE;
	call->layer = CT_LAYER_FRAMEWORK;
	call->result = 0;
	return 1;
}

static inline int ct_call_begin(struct ct_call *call)
{
	struct ct_thread *t = &ct_tls;
	if (t->in_hook)
		return 0;
	if (CT_UNLIKELY(atomic_load_explicit(&ct_state, memory_order_acquire) != CT_STATE_RUNNING ||
			atomic_load_explicit(&ct_detour, memory_order_relaxed)))
		return ct_call_begin_slow(call);
	ct_call_start(t, call);
	return 1;
}

/*
 * The event of a finished call as the hot path writes it: ts_ns holds the
 * entry ticks and dur_ns the return ticks until the writer finishes it
 * (ct_rec_finish).
 */
static inline void ct_fill_event(struct ct_rec_event *ev, const struct ct_call *call, uint64_t t1,
				 uint32_t tid, uint32_t stack_id)
{
	ev->rec.type = CT_REC_EVENT;
	ev->rec.flags = 0;
	ev->rec.size = sizeof *ev;
	ev->ts_ns = call->t0;
	ev->dur_ns = t1;
	ev->ptr = call->ptr;
	ev->size = call->size;
	ev->stream = call->stream;
	ev->aux = call->aux;
	ev->tid = tid;
	ev->stack_id = stack_id;
	ev->result = call->result;
	ev->flags = call->flags;
	ev->api = call->api;
	ev->op = call->op;
	ev->kind = call->kind;
	ev->device = call->device;
	ev->layer = call->layer;
	ev->reserved = 0;
}

/*
 * Wake the writer early when a ring passes half full: checked against
 * nudge_at, a position the producer keeps, so the common case reads no
 * shared line. Past it, the writer is kicked at most once per cap/16 bytes.
 */
static inline void ct_ring_nudge(struct ct_ring *ring)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	if (CT_UNLIKELY(head >= ring->nudge_at))
		ct_ring_nudge_slow(ring, head);
}

/*
 * Inline so that each wrapper's constant op decides at compile time which
 * clock read it needs and whether a stack may be wanted. The common case: no
 * stack wanted, the thread's own ring has room, tracing running; one 80-byte
 * record, no atomic read-modify-write, errno untouched.
 */
static inline void ct_call_end(struct ct_call *call, unsigned op)
{
	struct ct_thread *t = &ct_tls;
	uint64_t t1 = ct_op_at_return(op) ? ct_ticks_ordered() : ct_ticks();
	/* Before the ring is touched, in the compiler's order too: a handler
	 * that interrupts from here on must not write to it (signal.c). */
	t->in_hook = CT_HOOK_BUSY;
	atomic_signal_fence(memory_order_seq_cst);
	struct ct_ring *ring = t->ring;
	struct ct_rec_event *ev;
	if (CT_UNLIKELY(!ring || ring->shared ||
			(ct_op_wants_stack(op) && ct_option(CT_OPT_STACK_DEPTH) > 0) ||
			atomic_load_explicit(&ct_state, memory_order_acquire) ==
				CT_STATE_FINISHED ||
			(ev = (struct ct_rec_event *)ct_ring_reserve(ring, sizeof *ev)) == NULL)) {
		ct_call_end_slow(call, t1);
		return;
	}
	ct_prefetch_for_write((char *)ev + CT_RING_PREFETCH);
	ct_fill_event(ev, call, t1, t->tid, 0);
	ct_ring_commit(ring);
	ring->events++;
	ct_ring_nudge(ring);
	atomic_signal_fence(memory_order_seq_cst);
	t->in_hook = CT_HOOK_NONE;
}

#endif /* CT_PRELOAD_H */
