/*
 * What the wrapper files share: the lookup-table entry of a hook and the
 * helpers the rows of hooks.def use.
 */
#ifndef CT_HOOKS_H
#define CT_HOOKS_H

#include "ct.h"

/* One row of hooks.def, as the entry-point interception sees it. */
struct ct_hook {
	const char *name;   /* exported symbol */
	const char *base;   /* name given to cuGetProcAddress */
	int minver;	    /* lowest cudaVersion that gets this variant */
	uint8_t ptsz;	    /* 1: the per-thread-default-stream variant */
	uint8_t layer;	    /* enum ct_layer */
	void *wrapper;	    /* cumtrace's function */
	void *_Atomic *real; /* the real function, once known */
};

extern const struct ct_hook ct_hooks_runtime[] CT_HIDDEN;
extern const size_t ct_hooks_runtime_count CT_HIDDEN;
extern const struct ct_hook ct_hooks_driver[] CT_HIDDEN;
extern const size_t ct_hooks_driver_count CT_HIDDEN;

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

/* dlsym(RTLD_NEXT, name) through the real dlsym, errno kept. */
CT_HIDDEN void *ct_dlsym_next(const char *name);

/* Is p inside libcumtrace.so (one of our wrappers)? */
CT_HIDDEN int ct_is_own_address(const void *p);

/*
 * After a traced allocation call failed with out-of-memory: when
 * a context is current on this thread, read the device's free and total
 * memory from the driver and record a CT_REC_MEMINFO after the call's event.
 * Does nothing for any other call. Keeps errno; records no event of its own.
 */
CT_HIDDEN void ct_meminfo_after_failure(const struct ct_call *c);

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

/*
 * One wrapper: forwards to the real function, passes its return value and
 * errno back unchanged, and records the call unless it is nested inside
 * another traced call or tracing is off. ret_t is the API's status type, ok
 * its success value, missing what to return when no real function exists.
 * The exported function only decides: a nested call (the runtime's own driver
 * call through an interposed export) is a TLS load and a tail call to the real
 * function; a call to record is a tail call to ct_traced_NAME. A call that
 * creates memory, while the framework layer still looks for PyTorch, first
 * shows its caller to ct_torch_note_caller (torch.c).
 */
#define CT_WRAP(ret_t, ok, missing, layer_, name, op_, kind_, params, args, in, out)            \
	static void *_Atomic ct_real_##name;                                                  \
	static __attribute__((noinline)) ret_t ct_traced_##name params                        \
	{                                                                                     \
		ret_t(*fn) params = (ret_t(*) params)atomic_load_explicit(                    \
			&ct_real_##name, memory_order_relaxed);                               \
		struct ct_call c;                                                             \
		if (!ct_call_begin(&c))                                                       \
			return fn args;                                                       \
		c.api = CT_API_##name;                                                        \
		c.op = CT_OP_##op_;                                                           \
		c.kind = CT_KIND_##kind_;                                                     \
		c.layer = layer_;                                                             \
		CT_CALL_FRAME(c, CT_OP_##op_);                                                \
		in;                                                                           \
		ret_t rc = fn args;                                                           \
		c.result = (int32_t)rc;                                                       \
		if (rc == ok) {                                                               \
			out;                                                                  \
		}                                                                             \
		ct_call_end(&c, CT_OP_##op_);                                                 \
		if (CT_UNLIKELY(rc != ok))                                                    \
			ct_meminfo_after_failure(&c);                                         \
		return rc;                                                                    \
	}                                                                                     \
	CT_EXPORT ret_t name params;                                                          \
	ret_t name params                                                                     \
	{                                                                                     \
		ret_t(*fn) params = (ret_t(*) params)ct_real_symbol(&ct_real_##name, #name);  \
		if (CT_UNLIKELY(!fn))                                                         \
			return missing;                                                       \
		if (ct_tls.in_hook)                                                           \
			return fn args;                                                       \
		if (ct_op_wants_stack(CT_OP_##op_))                                           \
			ct_torch_note_caller(__builtin_return_address(0));                    \
		return ct_traced_##name args;                                                 \
	}

#endif
