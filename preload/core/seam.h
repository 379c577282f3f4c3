/*
 * The seam: what the recording core calls in the other stages of the shim,
 * declared here, by the core, with each contract, so that no core file
 * includes a header of preload/output/ or preload/hooks/. Each group names
 * the file that implements it. Included by ct.h, after the types it names.
 */
#ifndef CT_SEAM_H
#define CT_SEAM_H

/* ---- the session (output/session.c, output/writer.c) ------------------------------ */

enum ct_state {
	CT_STATE_UNINIT = 0,
	CT_STATE_STARTING = 1,
	CT_STATE_RUNNING = 2,
	CT_STATE_DISABLED = 3, /* off: by option, or the dump could not be written */
	CT_STATE_FINISHED = 4, /* after exit: records go straight to the file */
};

extern _Atomic int ct_state CT_HIDDEN;

/* Make sure tracing is running; returns the resulting state. */
CT_HIDDEN int ct_ensure_started(void);
/* Give the current thread a ring (registered with the writer). NULL if none. */
CT_HIDDEN struct ct_ring *ct_thread_ring(void);
/* Wake the writer now (a ring is full or a flush is wanted). */
CT_HIDDEN void ct_writer_kick(void);
/* Write one record straight to the file (FINISHED state), under a lock; events
 * and marks are finished (ticks to ns) on the way. */
CT_HIDDEN void ct_write_direct(const void *rec, uint32_t len);
/* Count an event lost outside any ring (no ring could be had). */
CT_HIDDEN void ct_count_lost(void);
/* Flush every ring to the file and wait until it is written (exec, exit, cumtrace_flush). */
CT_HIDDEN void ct_flush_sync(void);
/*
 * Count a call made inside a signal handler that was not recorded: written
 * as a CT_REC_DROPS with CT_DROPS_F_SIGNAL. Async-signal-safe.
 */
CT_HIDDEN void ct_count_lost_signal(void);
/*
 * Count a record that is not an event (a mark, counter, memory sample) and
 * was not recorded: written as a CT_REC_DROPS with CT_DROPS_F_RECORDS, never
 * counted as a dropped event. Async-signal-safe.
 */
CT_HIDDEN void ct_count_lost_record(void);

/* ---- the CUPTI backend (hooks/cupti.c) ---------------------------------------------------- */

/*
 * Why ct_call_begin takes its slow path while tracing runs (bits, 0 in the
 * common case: the fast path reads this one word for both):
 * CT_DETOUR_CUPTI once CUPTI callbacks record the traced calls (set only
 * after a successful subscribe): ct_call_begin then records nothing, so
 * nothing counts twice; CT_DETOUR_PAUSED while cumtrace_bench_pause(1) holds
 * (api.c): every call is forwarded untraced and no framework event is
 * recorded.
 */
enum { CT_DETOUR_CUPTI = 1, CT_DETOUR_PAUSED = 2 };
extern _Atomic int ct_detour CT_HIDDEN;
/*
 * ct_stack_capture for an event seen through CUPTI (layer CT_LAYER_CUPTI):
 * also drops the leading frames inside libcupti, libcuda and libcudart.
 */
CT_HIDDEN int ct_cupti_stack_capture(uint64_t *ips, int max);

/* ---- the real functions behind the shim's exports (hooks/entry.c) ------------------------- */

/*
 * Implemented beside the dlsym the shim exports, which needs them and, like
 * them, runs before sanitizer shadow memory exists (never instrumented).
 */

/* The real dlsym, found through dlvsym so the shim's own export is never hit. NULL if none. */
CT_HIDDEN void *ct_resolve_real_dlsym(void);
/* dlsym(RTLD_NEXT, name) through the real dlsym, errno kept. */
CT_HIDDEN void *ct_dlsym_next(const char *name);
/*
 * The real function behind a wrapper: the cached pointer, else the next
 * definition after libcumtrace (dlsym(RTLD_NEXT)). NULL if there is none.
 */
CT_HIDDEN void *ct_real_symbol_slow(void *_Atomic *cache, const char *name);
static inline void *ct_real_symbol(void *_Atomic *cache, const char *name)
{
	void *fn = atomic_load_explicit(cache, memory_order_acquire);
	return CT_LIKELY(fn != NULL) ? fn : ct_real_symbol_slow(cache, name);
}

#endif /* CT_SEAM_H */
