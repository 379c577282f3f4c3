/*
 * The CUPTI backend, for what interposition cannot reach: a statically linked
 * runtime, function pointers taken before the shim was loaded, a process
 * started with CUDA_INJECTION64_PATH=libcumtrace.so instead of LD_PRELOAD.
 *
 * Off unless CUMTRACE_BACKEND=cupti or the CUDA driver called
 * InitializeInjection. At tracing start (ct_ensure_started) libcupti is
 * dlopen'ed (libcumtrace.so never links against it), one subscriber is
 * registered and only the callback ids of the table below are enabled, one by
 * one: never a whole domain (whole domains cost torch about 3.4x). Once that
 * worked ct_backend_cupti is set and the interposition wrappers record
 * nothing; the callbacks record instead, with layer CT_LAYER_CUPTI and the
 * api id of the call they saw.
 *
 * One user-visible call is one event: only the outermost traced call of a
 * thread is recorded (a runtime call's nested driver call is skipped), and a
 * call an interposition wrapper is already recording on this thread
 * (ct_tls.in_hook, only during the switch-over) is not recorded again.
 *
 * If CUPTI cannot be had (no libcupti, or another subscriber such as nsys,
 * torch.profiler or compute-sanitizer holds it) one warning is printed and
 * interposition goes on as if the backend had never been asked for.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
/* cupti.h brings cupti_callbacks.h, the cbid enums and the *_params structs
 * of generated_cuda_meta.h / generated_cuda_runtime_api_meta.h (it defines
 * the obsolete _v1 types those need). Only types and constants are used:
 * every CUPTI function is looked up in the dlopen'ed libcupti. */
#include <cupti.h>

#include "cupti.h"
#include "arrays.h"
#include "hooks.h"

/* ---- the table: which callbacks, and what an event takes from their params ----------- */

/*
 * One enabled callback id for each capture row of hooks.def (its cupti
 * column). The row's in and out statements run here as in its wrapper: the
 * fill function of a row binds each name of args to the field of that name
 * in the callback's parameter struct (CBID_params, from
 * generated_cuda(_runtime_api)_meta.h) and fills a struct ct_call c. Both run
 * at API_EXIT, when the out-parameters are filled; out only when the call
 * succeeded.
 */
#define CT_DOM_RT CUPTI_CB_DOMAIN_RUNTIME_API
#define CT_DOM_DRV CUPTI_CB_DOMAIN_DRIVER_API
#define CT_CBID_RT(name) CUPTI_RUNTIME_TRACE_CBID_##name
#define CT_CBID_DRV(name) CUPTI_DRIVER_TRACE_CBID_##name

typedef void (*ct_cupti_fill_fn)(struct ct_call *c, const void *params, int ok);

struct ct_cupti_row {
	uint16_t cbid;
	uint8_t domain; /* CUpti_CallbackDomain */
	uint8_t op, kind;
	uint16_t api;
	ct_cupti_fill_fn fill;
};

/* CT_CUPTI_EACH(F, a, b, ...): F(a) F(b) ..., for up to 6 arguments, none included. */
#define CT_CUPTI_EACH(F, ...) __VA_OPT__(CT_CUPTI_EACH_N_(__VA_ARGS__, 6, 5, 4, 3, 2, 1)(F, __VA_ARGS__))
#define CT_CUPTI_EACH_N_(a, b, c, d, e, f, n, ...) CT_CUPTI_EACH_##n##_
#define CT_CUPTI_EACH_1_(F, a) F(a)
#define CT_CUPTI_EACH_2_(F, a, ...) F(a) CT_CUPTI_EACH_1_(F, __VA_ARGS__)
#define CT_CUPTI_EACH_3_(F, a, ...) F(a) CT_CUPTI_EACH_2_(F, __VA_ARGS__)
#define CT_CUPTI_EACH_4_(F, a, ...) F(a) CT_CUPTI_EACH_3_(F, __VA_ARGS__)
#define CT_CUPTI_EACH_5_(F, a, ...) F(a) CT_CUPTI_EACH_4_(F, __VA_ARGS__)
#define CT_CUPTI_EACH_6_(F, a, ...) F(a) CT_CUPTI_EACH_5_(F, __VA_ARGS__)

/* An argument of the call, read from the parameter struct ct_cupti_p_. */
#define CT_CUPTI_ARG_(arg)                                                                    \
	__typeof__(ct_cupti_p_->arg) arg = ct_cupti_p_->arg;                                  \
	(void)arg;
/* The arguments: none for calls without parameters (no CBID_params struct). */
#define CT_CUPTI_ARGS_(cbid, ...)                                                             \
	__VA_OPT__(const cbid##_params *ct_cupti_p_ = params; CT_CUPTI_EACH(CT_CUPTI_ARG_, __VA_ARGS__))

#define CT_CUPTI_FILL_(name, cbid, args, in, out)                                             \
	static void ct_cupti_fill_##name(struct ct_call *call, const void *params, int ok)    \
	{                                                                                     \
		(void)params;                                                                 \
		CT_CUPTI_ARGS_(cbid, CT_CUPTI_UNPAREN_ args)                                  \
		struct ct_call c = *call;                                                     \
		in;                                                                           \
		if (ok) {                                                                     \
			out;                                                                  \
		}                                                                             \
		*call = c;                                                                    \
	}
#define CT_CUPTI_UNPAREN_(...) __VA_ARGS__
#define CT_RT(name, ptsz, cupti, op, kind, params, args, in, out)                             \
	CT_CUPTI_FILL_(name, cupti, args, in, out)
#define CT_DRV(name, base, minver, ptsz, cupti, op, kind, params, args, in, out)              \
	CT_CUPTI_FILL_(name, cupti, args, in, out)
#include "hooks.def"

/* What each hook records, for a second callback id of the same call. */
enum {
#define CT_RT(name, ptsz, cupti, op, kind, params, args, in, out)                             \
	CT_CUPTI_OP_##name = CT_OP_##op, CT_CUPTI_KIND_##name = CT_KIND_##kind,
#define CT_DRV(name, base, minver, ptsz, cupti, op, kind, params, args, in, out)              \
	CT_CUPTI_OP_##name = CT_OP_##op, CT_CUPTI_KIND_##name = CT_KIND_##kind,
#include "hooks.def"
};

#define CT_CUPTI_ROW_(dom, name, cupti)                                                       \
	{CT_CBID_##dom(cupti), CT_DOM_##dom, CT_CUPTI_OP_##name, CT_CUPTI_KIND_##name,            \
	 CT_API_##name, ct_cupti_fill_##name},
static const struct ct_cupti_row ct_cupti_rows[] = {
#define CT_RT(name, ptsz, cupti, op, kind, params, args, in, out)                             \
	CT_CUPTI_ROW_(RT, name, cupti)
#define CT_DRV(name, base, minver, ptsz, cupti, op, kind, params, args, in, out)              \
	CT_CUPTI_ROW_(DRV, name, cupti)
#include "hooks.def"
	/* a second id of a hook's call: the pre-5.5 id of cudaStreamDestroy (the same parameter) */
	CT_CUPTI_ROW_(RT, cudaStreamDestroy, cudaStreamDestroy_v3020)
};
#define CT_CUPTI_NROWS (sizeof ct_cupti_rows / sizeof ct_cupti_rows[0])
_Static_assert(CT_CUPTI_NROWS < 255, "row index must fit the lookup maps");

/* cbid -> row index + 1 (0: not ours), filled before any callback is enabled. */
static uint8_t ct_cupti_rt_map[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static uint8_t ct_cupti_drv_map[CUPTI_DRIVER_TRACE_CBID_SIZE];

static void ct_cupti_fill_maps(void)
{
	for (size_t i = 0; i < CT_CUPTI_NROWS; i++) {
		const struct ct_cupti_row *r = &ct_cupti_rows[i];
		if (r->domain == CUPTI_CB_DOMAIN_RUNTIME_API && r->cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
			ct_cupti_rt_map[r->cbid] = (uint8_t)(i + 1);
		else if (r->domain == CUPTI_CB_DOMAIN_DRIVER_API &&
			 r->cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
			ct_cupti_drv_map[r->cbid] = (uint8_t)(i + 1);
	}
}

static const struct ct_cupti_row *ct_cupti_lookup(CUpti_CallbackDomain domain,
						  CUpti_CallbackId cbid)
{
	unsigned idx = 0;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		idx = ct_cupti_rt_map[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		idx = ct_cupti_drv_map[cbid];
	return idx ? &ct_cupti_rows[idx - 1] : NULL;
}

/* ---- the callback ------------------------------------------------------------------ */

/*
 * The traced call open on this thread: set at API_ENTER of an outermost call,
 * cleared at the API_EXIT with the same domain, cbid and correlation id (the
 * id alone is not enough: CUPTI gives a runtime call's nested driver call the
 * runtime call's correlation id).
 * Default (dynamic) TLS model: libcumtrace.so may be dlopen'ed by the driver
 * (CUDA_INJECTION64_PATH), so it takes no more static TLS than it must.
 */
struct ct_cupti_open {
	uint64_t t0;
	uint32_t corr;
	uint16_t cbid;
	uint8_t domain;
	uint8_t open;
};
static __thread struct ct_cupti_open ct_cupti_tls;

/*
 * ct_call_begin for a call seen through CUPTI: no ct_ensure_started wait (a
 * callback must never block on the start that is subscribing), no backend
 * check. Returns 1 when the call is to be recorded; ct_call_end finishes it.
 */
static int ct_call_begin_cupti(struct ct_call *call)
{
	struct ct_thread *t = &ct_tls;
	if (t->in_hook)
		return 0;
	int state = atomic_load_explicit(&ct_state, memory_order_acquire);
	if (state == CT_STATE_UNINIT) /* a fork child's first call */
		state = ct_ensure_started();
	if (state != CT_STATE_RUNNING && state != CT_STATE_FINISHED)
		return 0;
	if (atomic_load_explicit(&ct_detour, memory_order_relaxed) & CT_DETOUR_PAUSED)
		return 0;
	ct_call_start(t, call);
	call->result = 0;
	return 1;
}

static void CUPTIAPI ct_cupti_callback(void *userdata, CUpti_CallbackDomain domain,
				       CUpti_CallbackId cbid, const void *cbdata)
{
	const CUpti_CallbackData *cb = cbdata;
	const struct ct_cupti_row *row = ct_cupti_lookup(domain, cbid);
	if (!row || !cb)
		return;
	int saved_errno = errno;
	struct ct_cupti_open *o = &ct_cupti_tls;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		/* Only the outermost call: a nested one (the runtime's driver
		 * call) is part of it. A call an interposition wrapper records
		 * (in_hook) is left to the wrapper. */
		if (!o->open && !ct_tls.in_hook) {
			o->open = 1;
			o->domain = (uint8_t)domain;
			o->cbid = (uint16_t)cbid;
			o->corr = cb->correlationId;
			o->t0 = ct_ticks();
		}
	} else if (cb->callbackSite == CUPTI_API_EXIT) {
		if (o->open && o->domain == (uint8_t)domain && o->cbid == (uint16_t)cbid &&
		    o->corr == cb->correlationId) {
			o->open = 0;
			struct ct_call c;
			if (ct_call_begin_cupti(&c)) {
				c.t0 = o->t0;
				c.api = row->api;
				c.op = row->op;
				c.kind = row->kind;
				c.layer = CT_LAYER_CUPTI;
				/* cudaError_t or CUresult: both an int-sized enum */
				c.result = cb->functionReturnValue
						   ? *(const int32_t *)cb->functionReturnValue
						   : 0;
				if (cb->functionParams)
					row->fill(&c, cb->functionParams, c.result == 0);
				ct_call_end(&c, c.op);
			}
		}
		/* else: nested, or its API_ENTER came before we subscribed */
	}
	errno = saved_errno;
}

/* ---- stacks: cut the frames of CUDA's own libraries ----------------------------------- */

/*
 * A callback's stack starts inside libcupti, then the driver and the runtime
 * that called it; an interposed call's starts at the program's call. So that
 * both point at the program, the leading frames inside those libraries (and
 * inside the shim: a wrapper forwarding the call) are dropped. Ranges are
 * only ever added (a CUDA library unloaded and another loaded at the same
 * place would at worst cut a frame too many).
 */
#define CT_CUDA_RANGES 32
static struct {
	uintptr_t lo, hi;
} ct_cuda_ranges[CT_CUDA_RANGES];
static _Atomic int ct_cuda_nranges;
static _Atomic unsigned long long ct_cuda_adds = ~0ull;
static pthread_mutex_t ct_cuda_ranges_lock = PTHREAD_MUTEX_INITIALIZER;

static int ct_is_cuda_lib(const char *path)
{
	if (!path || !*path)
		return 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, "libcupti.so", 11) == 0 || strncmp(base, "libcuda.so", 10) == 0 ||
	       strncmp(base, "libcudart.so", 12) == 0;
}

static int ct_cuda_ranges_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *first = arg;
	if (*first) {
		*first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
			if (info->dlpi_adds == atomic_load(&ct_cuda_adds))
				return 1; /* nothing loaded since the last look */
			atomic_store(&ct_cuda_adds, info->dlpi_adds);
		}
	}
	if (!ct_is_cuda_lib(info->dlpi_name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		int n = atomic_load_explicit(&ct_cuda_nranges, memory_order_relaxed);
		int known = 0;
		for (int k = 0; k < n; k++)
			known |= ct_cuda_ranges[k].lo == lo && ct_cuda_ranges[k].hi == hi;
		if (known || n == CT_CUDA_RANGES)
			continue;
		ct_cuda_ranges[n].lo = lo;
		ct_cuda_ranges[n].hi = hi;
		atomic_store_explicit(&ct_cuda_nranges, n + 1, memory_order_release);
	}
	return 0;
}

static void ct_cuda_ranges_update(void)
{
	if (pthread_mutex_trylock(&ct_cuda_ranges_lock) != 0)
		return; /* another thread looks right now: use what is known */
	int first = 1;
	dl_iterate_phdr(ct_cuda_ranges_cb, &first);
	pthread_mutex_unlock(&ct_cuda_ranges_lock);
}

static int ct_in_cuda_lib(uint64_t ip)
{
	int n = atomic_load_explicit(&ct_cuda_nranges, memory_order_acquire);
	for (int k = 0; k < n; k++)
		if (ip >= ct_cuda_ranges[k].lo && ip < ct_cuda_ranges[k].hi)
			return 1;
	return 0;
}

int ct_cupti_stack_capture(uint64_t *ips, int max)
{
	uint64_t raw[CT_STACK_MAX];
	int want = max + 48 < CT_STACK_MAX ? max + 48 : CT_STACK_MAX;
	int n = ct_stack_capture(raw, want);
	ct_cuda_ranges_update();
	int i = 0;
	while (i < n && (ct_in_cuda_lib(raw[i]) || ct_is_own_address((const void *)(uintptr_t)raw[i])))
		i++;
	if (i == n) /* nothing outside CUDA (static runtime, odd unwind): keep it all */
		i = 0;
	int out = 0;
	for (; i < n && out < max; i++)
		ips[out++] = raw[i];
	return out;
}

/* ---- subscribing ---------------------------------------------------------------------- */

typedef CUptiResult (*ct_subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*ct_unsubscribe_fn)(CUpti_SubscriberHandle);
typedef CUptiResult (*ct_enable_callback_fn)(uint32_t, CUpti_SubscriberHandle,
					     CUpti_CallbackDomain, CUpti_CallbackId);
typedef CUptiResult (*ct_result_string_fn)(CUptiResult, const char **);
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
typedef CUptiResult (*ct_subscribe_v2_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
					  CUpti_SubscriberParams *);
#endif

#ifndef CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN /* CUPTI headers before cuptiSubscribe_v2 */
#define CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN 64
#endif

static _Atomic int ct_cupti_forced; /* InitializeInjection was called */
static _Atomic int ct_cupti_once;
static _Atomic int ct_warned_cupti, ct_warned_backend;
/* Kept for the life of the process: the callbacks stay on until exit. */
static void *ct_cupti_lib;
static CUpti_SubscriberHandle ct_cupti_subscriber;

/* Is the CUPTI backend asked for (CUMTRACE_BACKEND, InitializeInjection)? */
static int ct_cupti_wanted(void)
{
	const char *b = ct_option_str(CT_OPT_BACKEND);
	int want = atomic_load(&ct_cupti_forced);
	if (b && strcmp(b, "cupti") == 0)
		want = 1;
	else if (b && strcmp(b, "interpose") != 0)
		ct_warn_once(&ct_warned_backend,
			     "ignoring %s=%s (want interpose or cupti); using %s",
			     ct_option_env(CT_OPT_BACKEND), b, want ? "cupti" : "interpose");
	return want;
}

static void *ct_cupti_open_lib(const char *dir, const char *name)
{
	char path[4096];
	if (dir) {
		int n = snprintf(path, sizeof path, "%s/%s", dir, name);
		if (n < 0 || (size_t)n >= sizeof path)
			return NULL;
		name = path;
	}
	return dlopen(name, RTLD_NOW | RTLD_LOCAL);
}

/* libcupti.so.13, libcupti.so, then under $CUDA_HOME and /usr/local/cuda. */
static char ct_cupti_load_error[256];

static void *ct_cupti_load(void)
{
	static const char *const names[] = {"libcupti.so.13", "libcupti.so"};
	static const char *const subdirs[] = {"extras/CUPTI/lib64", "lib64"};
	const char *homes[] = {getenv("CUDA_HOME"), "/usr/local/cuda"};
	for (size_t i = 0; i < 2; i++) {
		void *h = ct_cupti_open_lib(NULL, names[i]);
		if (h)
			return h;
		if (i == 0) {
			const char *err = dlerror();
			snprintf(ct_cupti_load_error, sizeof ct_cupti_load_error, "%s",
				 err ? err : "not found");
		}
	}
	for (size_t hi = 0; hi < 2; hi++) {
		if (!homes[hi] || !*homes[hi])
			continue;
		for (size_t s = 0; s < 2; s++) {
			char dir[2048];
			int n = snprintf(dir, sizeof dir, "%s/%s", homes[hi], subdirs[s]);
			if (n < 0 || (size_t)n >= sizeof dir)
				continue;
			for (size_t i = 0; i < 2; i++) {
				void *h = ct_cupti_open_lib(dir, names[i]);
				if (h)
					return h;
			}
		}
	}
	return NULL;
}

static const char *ct_cupti_result_name(ct_result_string_fn fn, CUptiResult rc, char *buf,
					size_t cap)
{
	const char *s = NULL;
	if (fn && fn(rc, &s) == CUPTI_SUCCESS && s)
		return s;
	snprintf(buf, cap, "CUPTI error %d", (int)rc);
	return buf;
}

/*
 * Load libcupti, subscribe, enable the table's callback ids. Returns 0 when
 * CUPTI now records, else -1 with the warning printed.
 */
static int ct_cupti_subscribe(void)
{
	char num[64];
	void *lib = ct_cupti_load();
	if (!lib) {
		ct_warn_once(&ct_warned_cupti,
			     "CUPTI is not available (%s); tracing by interposition",
			     ct_cupti_load_error);
		return -1;
	}
	ct_subscribe_fn subscribe = (ct_subscribe_fn)dlsym(lib, "cuptiSubscribe");
	ct_unsubscribe_fn unsubscribe = (ct_unsubscribe_fn)dlsym(lib, "cuptiUnsubscribe");
	ct_enable_callback_fn enable = (ct_enable_callback_fn)dlsym(lib, "cuptiEnableCallback");
	ct_result_string_fn result_string = (ct_result_string_fn)dlsym(lib, "cuptiGetResultString");
	if (!subscribe || !enable) {
		ct_warn_once(&ct_warned_cupti,
			     "CUPTI is not available (libcupti lacks cuptiSubscribe or "
			     "cuptiEnableCallback); tracing by interposition");
		dlclose(lib);
		return -1;
	}

	CUpti_SubscriberHandle sub = NULL;
	CUptiResult rc = CUPTI_ERROR_UNKNOWN;
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1];
	holder[0] = 0;
	int tried_v2 = 0;
#ifdef CUpti_SubscriberParams_STRUCT_SIZE
	ct_subscribe_v2_fn subscribe_v2 = (ct_subscribe_v2_fn)dlsym(lib, "cuptiSubscribe_v2");
	if (subscribe_v2) {
		CUpti_SubscriberParams sp;
		memset(&sp, 0, sizeof sp);
		sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
		sp.subscriberName = "cumtrace";
		sp.oldSubscriberName = holder;
		sp.oldSubscriberSize = sizeof holder - 1;
		rc = subscribe_v2(&sub, ct_cupti_callback, NULL, &sp);
		holder[sizeof holder - 1] = 0;
		tried_v2 = rc != CUPTI_ERROR_INVALID_PARAMETER && rc != CUPTI_ERROR_NOT_SUPPORTED;
	}
#endif
	if (!tried_v2)
		rc = subscribe(&sub, ct_cupti_callback, NULL);
	if (rc != CUPTI_SUCCESS) {
		const char *what = ct_cupti_result_name(result_string, rc, num, sizeof num);
		if (rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
			ct_warn_once(&ct_warned_cupti,
				     "CUPTI is taken by another tool (%s%s%s); tracing by "
				     "interposition",
				     holder[0] ? holder : "", holder[0] ? ": " : "", what);
		else
			ct_warn_once(&ct_warned_cupti,
				     "CUPTI is not available (cuptiSubscribe: %s); tracing by "
				     "interposition",
				     what);
		/* libcupti stays loaded: another subscriber may be using it */
		return -1;
	}

	/* Only these ids, one by one: never cuptiEnableDomain. */
	ct_cupti_fill_maps();
	size_t enabled = 0;
	CUptiResult first_err = CUPTI_SUCCESS;
	for (size_t i = 0; i < CT_CUPTI_NROWS; i++) {
		const struct ct_cupti_row *r = &ct_cupti_rows[i];
		CUptiResult e = enable(1, sub, (CUpti_CallbackDomain)r->domain, r->cbid);
		if (e == CUPTI_SUCCESS)
			enabled++;
		else if (first_err == CUPTI_SUCCESS)
			first_err = e; /* an id this CUPTI does not know: go on */
	}
	if (enabled == 0) {
		if (unsubscribe)
			unsubscribe(sub);
		ct_warn_once(&ct_warned_cupti,
			     "CUPTI is not available (cuptiEnableCallback: %s); tracing by "
			     "interposition",
			     ct_cupti_result_name(result_string, first_err, num, sizeof num));
		return -1;
	}
	ct_cupti_lib = lib;
	ct_cupti_subscriber = sub;
	ct_cuda_ranges_update();
	return 0;
}

void ct_cupti_start(void)
{
	if (!ct_cupti_wanted())
		return;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&ct_cupti_once, &expect, 1))
		return; /* done (or being done) already; a fork child keeps its parent's */
	int saved_errno = errno;
	/* Whatever CUDA code CUPTI runs while it starts is not the program's. */
	uint8_t saved_hook = ct_tls.in_hook;
	ct_tls.in_hook = 1;
	if (ct_cupti_subscribe() == 0)
		atomic_fetch_or_explicit(&ct_detour, CT_DETOUR_CUPTI, memory_order_release);
	ct_tls.in_hook = saved_hook;
	errno = saved_errno;
}

const char *ct_backend_name(void)
{
	return atomic_load_explicit(&ct_detour, memory_order_relaxed) & CT_DETOUR_CUPTI ? "cupti"
											 : "interpose";
}

/*
 * CUDA_INJECTION64_PATH=/path/libcumtrace.so: the driver dlopens us in cuInit
 * and calls this. It turns the CUPTI backend on as CUMTRACE_BACKEND=cupti
 * would, starts tracing and returns 1 (success) even when CUPTI is taken:
 * failing here would fail the program's cuInit.
 */
CT_EXPORT int InitializeInjection(void);
int InitializeInjection(void)
{
	atomic_store(&ct_cupti_forced, 1);
	/* A start in progress (perhaps this very thread, inside cuptiSubscribe)
	 * reads ct_cupti_forced itself: never wait for it here. */
	if (atomic_load(&ct_state) == CT_STATE_STARTING)
		return 1;
	if (ct_ensure_started() == CT_STATE_RUNNING)
		ct_cupti_start(); /* tracing was already running: no-op otherwise */
	return 1;
}
