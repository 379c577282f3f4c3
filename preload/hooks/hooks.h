/*
 * What the ways in share (preload/hooks/): the lookup-table entry of a hook,
 * the helpers the rows of hooks.def use, and what the wrappers call of the
 * framework layer (torch.c) and of the public API (api.c).
 */
#ifndef CT_HOOKS_H
#define CT_HOOKS_H

#include "../core/ct.h"

/*
 * The real function behind one hooked export. fn is the one every caller
 * reaches, once known: the next definition after libcumtrace in the global
 * scope, or the first one handed out through dlsym or an entry-point lookup.
 * Until then, a caller whose own dependency tree holds the function (a
 * library loaded RTLD_LOCAL that links libcudart or libcuda, which binds to
 * cumtrace's export because the global scope is searched first) reaches the
 * definition that tree holds: one route per calling object, keyed by the
 * address range of its mappings and filled in on its first call. A route's
 * lo is published last (0: not filled in yet). Objects beyond CT_ROUTES are
 * looked up again at each call.
 */
#define CT_ROUTES 8
struct ct_route {
	_Atomic uintptr_t lo;
	uintptr_t hi;
	void *fn;
};
struct ct_real {
	void *_Atomic fn;
	_Atomic unsigned nroutes; /* routes claimed, may exceed CT_ROUTES */
	struct ct_route route[CT_ROUTES];
};

/* One row of hooks.def, as the entry-point interception sees it. */
struct ct_hook {
	const char *name;   /* exported symbol */
	const char *base;   /* name given to cuGetProcAddress */
	int minver;	    /* lowest cudaVersion that gets this variant */
	uint8_t ptsz;	    /* 1: the per-thread-default-stream variant */
	uint8_t layer;	    /* enum ct_layer */
	void *wrapper;	    /* cumtrace's function */
	struct ct_real *real; /* the real function, once known */
};

extern const struct ct_hook ct_hooks_runtime[] CT_HIDDEN;
extern const size_t ct_hooks_runtime_count CT_HIDDEN;
extern const struct ct_hook ct_hooks_driver[] CT_HIDDEN;
extern const size_t ct_hooks_driver_count CT_HIDDEN;
/* NCCL (issue 19 §5): nccl.def's rows, hooks_nccl.c */
extern const struct ct_hook ct_hooks_nccl[] CT_HIDDEN;
extern const size_t ct_hooks_nccl_count CT_HIDDEN;

/*
 * The real function of a hooked export for a call whose return address is
 * caller: real->fn, else the route of the calling object, else found as the
 * caller's own lookup would have found it (entry.c). NULL if there is none.
 * errno kept.
 */
CT_HIDDEN void *ct_real_for_caller(struct ct_real *real, const char *name, const void *caller);
static inline void *ct_real_fn(struct ct_real *real, const char *name, const void *caller)
{
	void *fn = atomic_load_explicit(&real->fn, memory_order_acquire);
	return CT_LIKELY(fn != NULL) ? fn : ct_real_for_caller(real, name, caller);
}

/*
 * After a traced allocation call failed with out-of-memory: when
 * a context is current on this thread, read the device's free and total
 * memory from the driver and record a CT_REC_MEMINFO after the call's event.
 * Does nothing for any other call. Keeps errno; records no event of its own.
 */
CT_HIDDEN void ct_meminfo_after_failure(const struct ct_call *c);

/*
 * 1 once a real driver function was handed out (cuGetProcAddress, dlsym) or
 * returned success: libcuda is loaded. Until then the driver queries above
 * (meminfo.c, graphs.c) do not look for it: dlopen of a library that is not
 * there makes an error record (malloc), which a signal handler the shim
 * cannot see (README, Limitations) must not do.
 */
extern _Atomic int ct_driver_seen CT_HIDDEN;
static inline void ct_driver_note(void)
{
	if (CT_UNLIKELY(!atomic_load_explicit(&ct_driver_seen, memory_order_relaxed)))
		atomic_store_explicit(&ct_driver_seen, 1, memory_order_relaxed);
}

/*
 * name in the driver: dlsym on lib (the loaded libcuda.so.1, opened with
 * RTLD_NOLOAD, never loaded here) when given, else the next definition after
 * libcumtrace; NULL when there is none or it is cumtrace's own (meminfo.c).
 */
CT_HIDDEN void *ct_driver_symbol(void *lib, const char *name);

/*
 * ---- CUDA graphs (issue 19 §2, graphs.c) ----
 * A stream-ordered allocation or free c (op alloc or free) succeeded on
 * c->stream: when that stream is capturing (asked of the driver with
 * cuStreamGetCaptureInfo, only on a stream that can capture: never the
 * legacy default stream, where the query would invalidate a global-mode
 * capture; only with a current context), make the event a graph node:
 * op graph_alloc / graph_free, kind graph, aux = the graph being captured.
 * Keeps errno; records nothing itself.
 */
CT_HIDDEN void ct_graph_capture_note(struct ct_call *c);

/*
 * ---- the memory no allocation call shows (issue 19 §6, meminfo.c) ----
 * Record a CT_REC_MEMSAMPLE (format.h) of the current context's device: why
 * is enum ct_memsample_why; a SYNC sample is skipped when the device (device
 * is the thread's, a hint) had one less than CUMTRACE_MEMSAMPLE_MS ago.
 * Nothing without a current context, inside another traced call or in a
 * signal handler. Keeps errno; records no event.
 */
CT_HIDDEN void ct_memsample(unsigned why, int16_t device);
/*
 * A stream-ordered pool of device was created (live 1; device -1 unknown) or
 * destroyed (live 0): samples read the live pools of their device too (at
 * most CT_MS_POOLS of them are remembered). Lock-free; any thread.
 */
CT_HIDDEN void ct_memsample_pool(uint64_t pool, int device, int live);
/* 1 once the first sample was taken (or samples are off): the wrappers' fast check. */
extern _Atomic int ct_memsample_first_done CT_HIDDEN;

/* After a traced call of op finished: the samples it may take (a constant op: one branch or none). */
static inline void ct_memsample_after(unsigned op, const struct ct_call *c)
{
	if (op == CT_OP_STREAM_SYNC || op == CT_OP_DEVICE_SYNC) {
		if (c->result == 0)
			ct_memsample(CT_MEMSAMPLE_SYNC, c->device);
	} else if (ct_op_wants_stack(op) && c->result == 0 &&
		   CT_UNLIKELY(!atomic_load_explicit(&ct_memsample_first_done, memory_order_relaxed))) {
		/* after a success only: the runtime has loaded the driver by then, so looking it
		 * up (dlopen with RTLD_NOLOAD) finds it and makes no error record (malloc), which
		 * matters in a signal handler the shim cannot see (README, Limitations) */
		ct_memsample(CT_MEMSAMPLE_FIRST, c->device);
	}
}

/*
 * Imported memory (issue 19 §4): the bytes of the allocation that starts at
 * ptr, from the driver's cuMemGetAddressRange_v2, asked only when a context
 * is current on this thread; 0 when unknown. Keeps errno; records nothing.
 */
CT_HIDDEN uint64_t ct_import_bytes(uint64_t ptr);

/* Build and append one CT_REC_MARK (name cut at 1023 bytes) from the calling thread. */
CT_HIDDEN void ct_put_mark(enum ct_mark_kind kind, const char *name, uint64_t aux);

/* ---- the framework layer (torch.c) -------------------------------------------- */

/*
 * 1 while the shim still looks for PyTorch's allocator: the exports of the
 * calls that create memory then show their return address to
 * ct_torch_note_caller (one relaxed load otherwise).
 */
extern _Atomic int ct_torch_watch CT_HIDDEN;
/* A code range known not to be libc10_cuda.so; set once, then only read. */
struct ct_torch_span {
	_Atomic uintptr_t lo, hi;
};
/* The range the last caller was found in (an empty one before any). */
extern struct ct_torch_span *_Atomic ct_torch_last CT_HIDDEN;
/*
 * A traced call that creates memory was made from ret (its return address),
 * not nested in another: when ret lies in libc10_cuda.so, attach the tracker
 * to PyTorch's caching allocator (once; CUMTRACE_TORCH, torchoffsets.h).
 */
CT_HIDDEN void ct_torch_check_caller(const void *ret);

/* ct_torch_check_caller, unless ret is where the last caller was: a few loads in the common case. */
static inline void ct_torch_note_caller(const void *ret)
{
	if (CT_LIKELY(!atomic_load_explicit(&ct_torch_watch, memory_order_relaxed)))
		return;
	const struct ct_torch_span *s = atomic_load_explicit(&ct_torch_last, memory_order_acquire);
	uintptr_t lo = atomic_load_explicit(&s->lo, memory_order_relaxed);
	if ((uintptr_t)ret - lo >= atomic_load_explicit(&s->hi, memory_order_relaxed) - lo)
		ct_torch_check_caller(ret);
}

#define CT_STREAM_PER_THREAD ((uint64_t)0x2) /* cudaStreamPerThread / CU_STREAM_PER_THREAD */
/* _ptsz variants: stream 0 means the per-thread default stream. */
#define CT_PTSZ(s) ((s) ? (uint64_t)(uintptr_t)(s) : CT_STREAM_PER_THREAD)
#define CT_P(x) ((uint64_t)(uintptr_t)(x))

/*
 * A wrapper that may want a stack keeps its own frame address in c.frame,
 * which makes the compiler give ct_traced_NAME a frame pointer (the wrapper's
 * operation is a constant: the others are left alone). Reached by a tail call
 * from the export, that frame's record holds the caller's frame pointer and
 * the return address into the caller: the stack cache's key (stackcache.c).
 */
#if defined(__x86_64__)
#define CT_CALL_FRAME(c, op)                                                                 \
	do {                                                                                 \
		if (ct_op_wants_stack(op))                                                   \
			(c).frame = __builtin_frame_address(0);                              \
	} while (0)
#else
#define CT_CALL_FRAME(c, op) ((void)0)
#endif

/* (decl, params...) and (fn, args...) for a parameter list that may be (void). */
#define CT_UNPAREN(...) __VA_ARGS__
#define CT_PARAMS_AFTER(decl, params, args) CT_PARAMS_AFTER_I(decl, params, CT_UNPAREN args)
#define CT_PARAMS_AFTER_I(decl, params, ...) (decl __VA_OPT__(, CT_UNPAREN params))
#define CT_ARGS_AFTER(first, args) CT_ARGS_AFTER_I(first, CT_UNPAREN args)
#define CT_ARGS_AFTER_I(first, ...) (first __VA_OPT__(, ) __VA_ARGS__)

/*
 * One wrapper: forwards to the real function, passes its return value and
 * errno back unchanged, and records the call unless it is nested inside
 * another traced call or tracing is off. ret_t is the API's status type, ok
 * its success value, missing what to return when no real function exists.
 * The exported function only decides: a nested call (the runtime's own driver
 * call through an interposed export) is a TLS load, a compare and a tail call
 * to the real function; a call to record is a tail call to ct_traced_NAME,
 * which is handed the real function (it depends on the caller while routes
 * are in use); a call made in a signal handler that cannot be recorded goes
 * through ct_untraced_NAME, which counts it.
 * A call that creates memory, while the framework layer still looks for
 * PyTorch, first shows its caller to ct_torch_note_caller (torch.c).
 */
#define CT_WRAP(ret_t, ok, missing, layer_, name, op_, kind_, params, args, in, out)            \
	static struct ct_real ct_real_##name;                                                 \
	typedef ret_t(*ct_fn_##name##_t) params;                                              \
	static ret_t ct_untraced_##name CT_PARAMS_AFTER(ct_fn_##name##_t fn, params, args);   \
	static __attribute__((noinline)) ret_t ct_traced_##name CT_PARAMS_AFTER(              \
		ct_fn_##name##_t fn, params, args)                                            \
	{                                                                                     \
		struct ct_call c;                                                             \
		int begin_ = ct_call_begin(&c);                                               \
		if (begin_ <= 0)                                                              \
			return CT_UNLIKELY(begin_ < 0) ? ct_untraced_##name CT_ARGS_AFTER(fn, args) \
						       : fn args;                             \
		c.api = CT_API_##name;                                                        \
		c.op = CT_OP_##op_;                                                           \
		c.kind = CT_KIND_##kind_;                                                     \
		c.layer = layer_;                                                             \
		CT_CALL_FRAME(c, CT_OP_##op_);                                                \
		in;                                                                           \
		if (ct_op_wants_stack(CT_OP_##op_))                                           \
			ct_call_prefetch(&c);                                                 \
		ret_t rc = fn args;                                                           \
		c.result = (int32_t)rc;                                                       \
		if (rc == ok) {                                                               \
			out;                                                                  \
			if (layer_ == CT_LAYER_DRIVER)                                        \
				ct_driver_note();                                             \
		}                                                                             \
		ct_call_end(&c, CT_OP_##op_);                                                 \
		if (CT_UNLIKELY(rc != ok))                                                    \
			ct_meminfo_after_failure(&c);                                         \
		ct_memsample_after(CT_OP_##op_, &c);                                          \
		return rc;                                                                    \
	}                                                                                     \
	static __attribute__((noinline, cold)) ret_t ct_untraced_##name CT_PARAMS_AFTER(      \
		ct_fn_##name##_t fn, params, args)                                            \
	{                                                                                     \
		uint8_t hook_;                                                                \
		if (!ct_signal_pass_begin(&hook_))                                            \
			return ct_traced_##name CT_ARGS_AFTER(fn, args);                      \
		ret_t rc = fn args;                                                           \
		ct_tls.in_hook = hook_;                                                       \
		return rc;                                                                    \
	}                                                                                     \
	CT_EXPORT ret_t name params;                                                          \
	ret_t name params                                                                     \
	{                                                                                     \
		ct_fn_##name##_t fn = (ct_fn_##name##_t)ct_real_fn(                           \
			&ct_real_##name, #name, __builtin_return_address(0));                 \
		if (CT_UNLIKELY(!fn))                                                         \
			return missing;                                                       \
		uint8_t hook_ = ct_tls.in_hook;                                               \
		if (hook_) {                                                                  \
			if (CT_LIKELY(hook_ != CT_HOOK_SIGNAL))                               \
				return fn args;                                               \
			return ct_untraced_##name CT_ARGS_AFTER(fn, args);                    \
		}                                                                             \
		if (ct_op_wants_stack(CT_OP_##op_))                                           \
			ct_torch_note_caller(__builtin_return_address(0));                    \
		return ct_traced_##name CT_ARGS_AFTER(fn, args);                              \
	}

#endif
