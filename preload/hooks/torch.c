/*
 * The framework layer: PyTorch's caching allocator events in the dump
 * (format.h, "Framework events").
 *
 * PyTorch calls every "trace tracker" attached to its CUDA caching allocator
 * with each TraceEntry it makes (block alloc, free requested and completed,
 * segment alloc / free / map / unmap, OOM), on the thread that made the
 * allocator call, with that device's allocator lock held. Its only public
 * way in is C++ (an inline header function that makes a virtual call on the
 * object behind the exported data symbol c10::cuda::CUDACachingAllocator::
 * allocator); nothing exported takes a tracker. So the shim, with no change
 * to the user's script and built against no torch:
 *
 *   1. notices PyTorch: the exports of the calls that create memory (cudaMalloc
 *      in the default mode, cuMemAddressReserve / cuMemCreate / cuMemMap with
 *      expandable segments) show their return address here while
 *      ct_torch_watch is set (ct_torch_note_caller); an address inside
 *      libc10_cuda.so means the caching allocator is asking for memory, so it
 *      exists and is initialised (init precedes any malloc). Addresses of
 *      other objects are remembered by their object's address range (a small
 *      lock-free table), so a program that never loads torch pays one
 *      dl_iterate_phdr per object that allocates, and later a few loads per
 *      call (the range of the previous caller) or, from another object, a
 *      scan of that table;
 *   2. reads the version from torch/version.py beside the library (open and
 *      read into a stack buffer: no allocation) and takes its row of
 *      torchoffsets.h; no row (or a pre-release), and it warns once and stays
 *      off: the CUDA layer goes on alone;
 *   3. checks the object: the number of leading vtable entries that point
 *      into executable segments of loaded objects must be the row's vt_slots
 *      (each entry read only where a readable segment holds it), name() must
 *      return "native" (the cudaMallocAsync backend throws from the attach
 *      call, which would abort the process), and initialized() true (a
 *      tracker attached before init is silently dropped);
 *   4. builds the std::function<void(const TraceEntry&)> by hand (libstdc++:
 *      16 bytes of functor storage, then the manager and the invoker) and
 *      calls attachAllocatorTraceTracker through the row's vtable slot,
 *      passing the by-value argument as a pointer to our temporary, which it
 *      then destroys (torch moved from it).
 *
 * Why attaching there is safe. The attach runs on the thread whose call
 * noticed PyTorch: inside the export, before the real CUDA call, so this
 * thread holds no lock of the CUDA libraries nor of the shim; it may hold its
 * device's allocator lock (a recursive mutex: PyTorch calls cudaMalloc under
 * it), which the attach takes again, and then takes the lock of every other
 * device's allocator, one at a time. A thread holding one of those never
 * waits for this one: a second thread that notices PyTorch meanwhile loses
 * the compare-and-swap and goes on without waiting (its events until the
 * attach completes are lost: the attach cannot be waited for), and
 * PyTorch takes no second device's lock under one nor the GIL under any.
 * Nothing here calls malloc or into Python, and torch is called only for
 * name(), initialized() and the attach.
 *
 * The tracker (ct_torch_invoke) runs under the allocator's lock: it copies
 * the fields its row names into one CT_REC_EVENT on the calling thread's ring,
 * with the shim's clock and, for the events that hand out memory, the
 * thread's native and Python stacks captured as for a CUDA allocation (no
 * GIL: python.c); it never calls torch. It cannot be detached (PyTorch has no
 * API for it): after the shim shuts down it records nothing. A fork child
 * inherits the attached tracker and records into its own dump.
 *
 * x86-64 only (the only ABI the table was measured on). CUMTRACE_TORCH=0
 * turns all of it off: the exports then check nothing after their first
 * call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"
#include "torchoffsets.h"

CT_HOT_DATA _Atomic int ct_torch_watch = 1;

enum ct_torch_state {
	CT_TORCH_WATCHING = 0, /* looking at callers */
	CT_TORCH_BUSY = 1,     /* one thread attaches */
	CT_TORCH_ATTACHED = 2,
	CT_TORCH_OFF = 3, /* switched off, refused or failed: for good */
};
static _Atomic int ct_torch_state;
/* The row of the version attached to, set before the attach: the tracker reads it. */
static const struct ct_torch_layout *_Atomic ct_torch_row;
static int ct_torch_retries; /* attach attempts that found the allocator not ready */
#define CT_TORCH_RETRIES 8
static _Atomic int ct_torch_warned;

/* ---- callers that are not libc10_cuda -------------------------------------------- */

#define CT_TORCH_OTHERS 128
static struct ct_torch_span ct_torch_others[CT_TORCH_OTHERS]; /* hi published last: 0 = not ready */
static _Atomic unsigned ct_torch_nothers;
CT_HOT_DATA static struct ct_torch_span ct_torch_nowhere; /* empty: holds no address */
CT_HOT_DATA struct ct_torch_span *_Atomic ct_torch_last = &ct_torch_nowhere;

/* Is a in a range known not to be libc10_cuda? That range becomes ct_torch_last. */
static int ct_torch_is_other(uintptr_t a)
{
	unsigned n = atomic_load_explicit(&ct_torch_nothers, memory_order_acquire);
	if (n > CT_TORCH_OTHERS)
		n = CT_TORCH_OTHERS;
	for (unsigned i = 0; i < n; i++) {
		struct ct_torch_span *s = &ct_torch_others[i];
		uintptr_t hi = atomic_load_explicit(&s->hi, memory_order_acquire);
		if (a < hi && a >= atomic_load_explicit(&s->lo, memory_order_relaxed)) {
			atomic_store_explicit(&ct_torch_last, s, memory_order_release);
			return 1;
		}
	}
	return 0;
}

/* Remember [lo, hi) as not libc10_cuda; past the table's size, nothing is remembered. */
static void ct_torch_add_other(uintptr_t lo, uintptr_t hi)
{
	unsigned i = atomic_fetch_add_explicit(&ct_torch_nothers, 1, memory_order_relaxed);
	if (i >= CT_TORCH_OTHERS)
		return;
	struct ct_torch_span *s = &ct_torch_others[i];
	atomic_store_explicit(&s->lo, lo, memory_order_relaxed);
	atomic_store_explicit(&s->hi, hi, memory_order_release);
	atomic_store_explicit(&ct_torch_last, s, memory_order_release);
}

static int ct_torch_is_c10(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return strncmp(base, CT_TORCH_LIBRARY, sizeof CT_TORCH_LIBRARY - 1) == 0;
}

/* ---- the version: torch/version.py beside torch/lib/libc10_cuda.so ------------------ */

/*
 * __version__ of the version.py two directories up from the library at
 * lib_path, into out (printable ASCII, at most cap - 1 bytes). 0 or -1.
 */
static int ct_torch_read_version(const char *lib_path, char *out, size_t cap)
{
	char path[PATH_MAX];
	const char *slash = strrchr(lib_path, '/');
	int n;
	if (!slash)
		n = snprintf(path, sizeof path, "../version.py");
	else
		n = snprintf(path, sizeof path, "%.*s/../version.py", (int)(slash - lib_path),
			     lib_path);
	if (n < 0 || (size_t)n >= sizeof path)
		return -1;
	char buf[4096];
	if (ct_read_small_file(path, buf, sizeof buf) < 0)
		return -1;
	/* a line "__version__ = '2.11.0+cu130'" (an annotation before '=' allowed) */
	for (char *line = buf, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			next++;
		if (strncmp(line, "__version__", 11) != 0)
			continue;
		char *p = line + 11;
		while (*p && *p != '=' && *p != '\n')
			p++;
		if (*p != '=')
			continue;
		for (p++; *p == ' ' || *p == '\t'; p++)
			;
		char quote = *p;
		if (quote != '\'' && quote != '"')
			continue;
		size_t k = 0;
		for (p++; *p && *p != quote && *p != '\n' && k + 1 < cap; p++)
			out[k++] = (*p > ' ' && *p < 127) ? *p : '?';
		out[k] = 0;
		return *p == quote && k ? 0 : -1;
	}
	return -1;
}

/* A release version "X.Y.Z" with an optional local part "+...": 0, else -1 (pre-releases too). */
static int ct_torch_parse_version(const char *v, int *major, int *minor)
{
	int part[3] = {0, 0, 0};
	const char *p = v;
	for (int i = 0; i < 3; i++) {
		if (*p < '0' || *p > '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++)
			if ((part[i] = part[i] * 10 + (*p - '0')) > 9999)
				return -1;
		if (i < 2 && *p++ != '.')
			return -1;
	}
	if (*p && *p != '+')
		return -1;
	*major = part[0];
	*minor = part[1];
	return 0;
}

/* ---- the allocator object's vtable ---------------------------------------------------- */

#define CT_TORCH_RANGES 4096
#define CT_TORCH_VT_MAX 255
struct ct_torch_range {
	uintptr_t lo, hi;
	int exec;
};
/* PT_LOAD segments of every loaded object; only the attaching thread (BUSY) uses it. */
static struct ct_torch_range ct_torch_ranges[CT_TORCH_RANGES];
static int ct_torch_nranges;

static int ct_torch_ranges_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum && ct_torch_nranges < CT_TORCH_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R))
			continue;
		struct ct_torch_range *r = &ct_torch_ranges[ct_torch_nranges++];
		r->lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr);
		r->hi = r->lo + ph->p_memsz;
		r->exec = (ph->p_flags & PF_X) != 0;
	}
	return 0;
}

/* The range holding [p, p + n), or NULL. */
static const struct ct_torch_range *ct_torch_range_of(uintptr_t p, size_t n)
{
	for (int i = 0; i < ct_torch_nranges; i++)
		if (p >= ct_torch_ranges[i].lo && p + n <= ct_torch_ranges[i].hi)
			return &ct_torch_ranges[i];
	return NULL;
}

/* Leading entries of vt that point into executable segments. */
static int ct_torch_vtable_slots(void *const *vt)
{
	ct_torch_nranges = 0;
	dl_iterate_phdr(ct_torch_ranges_cb, NULL);
	int n = 0;
	while (n < CT_TORCH_VT_MAX && ct_torch_range_of((uintptr_t)&vt[n], sizeof vt[n])) {
		const struct ct_torch_range *r = ct_torch_range_of((uintptr_t)vt[n], 1);
		if (!r || !r->exec)
			break;
		n++;
	}
	return n;
}

/* ---- std::function<void(const TraceEntry&)>, libstdc++ layout -------------------------- */

struct ct_std_function {
	void *functor[2]; /* std::_Any_data: nothing stored */
	_Bool (*manager)(void *dest, const void *src, int op);
	void (*invoker)(const void *functor, const void *entry);
};

static void *ct_torch_typeid_void; /* &typeid(void): what __get_type_info hands out */

/* std::_Manager_operation: 0 type info, 1 functor pointer, 2 clone, 3 destroy. */
static _Bool ct_torch_manager(void *dest, const void *src, int op)
{
	void **d = dest;
	if (op == 0)
		d[0] = ct_torch_typeid_void;
	else if (op == 1)
		d[0] = (void *)src;
	else if (op == 2)
		memcpy(dest, src, 2 * sizeof(void *));
	return 0;
}

static const uint16_t ct_torch_apis[CT_TORCH_ACTION_COUNT] = {
	[CT_TORCH_ALLOC] = CT_API_torch_alloc,
	[CT_TORCH_FREE_REQUESTED] = CT_API_torch_free_requested,
	[CT_TORCH_FREE_COMPLETED] = CT_API_torch_free_completed,
	[CT_TORCH_SEGMENT_ALLOC] = CT_API_torch_segment_alloc,
	[CT_TORCH_SEGMENT_FREE] = CT_API_torch_segment_free,
	[CT_TORCH_SEGMENT_MAP] = CT_API_torch_segment_map,
	[CT_TORCH_SEGMENT_UNMAP] = CT_API_torch_segment_unmap,
	[CT_TORCH_SNAPSHOT] = CT_API_none, /* a marker for memory snapshots: not recorded */
	[CT_TORCH_OOM] = CT_API_torch_oom,
};

static uint64_t ct_torch_u64(const unsigned char *e, unsigned off)
{
	uint64_t v;
	memcpy(&v, e + off, sizeof v);
	return v;
}

/*
 * The tracker: one TraceEntry in, one framework event out. Called by torch
 * under the device's allocator lock; takes no lock of its own in the common
 * case (the ring is the thread's).
 */
static __attribute__((noinline)) void ct_torch_invoke(const void *functor, const void *entry)
{
	const struct ct_torch_layout *row =
		atomic_load_explicit(&ct_torch_row, memory_order_acquire);
	const unsigned char *e = entry;
	int32_t action;
	(void)functor;
	if (!row || !e)
		return;
	memcpy(&action, e + row->te_action, sizeof action);
	if (action < 0 || action >= row->action_count || !ct_torch_apis[action])
		return;
	struct ct_call c;
	if (!ct_fw_call_begin(&c, ct_torch_apis[action]))
		return; /* shut down, or off: a no-op for good */
	c.kind = action == CT_TORCH_SEGMENT_ALLOC || action == CT_TORCH_SEGMENT_FREE ||
				 action == CT_TORCH_SEGMENT_MAP || action == CT_TORCH_SEGMENT_UNMAP
			 ? CT_KIND_TORCH_SEGMENT
			 : CT_KIND_TORCH_BLOCK;
	c.device = (int8_t)e[row->te_device];
	c.ptr = ct_torch_u64(e, row->te_addr);
	c.size = ct_torch_u64(e, row->te_size_field);
	c.stream = ct_torch_u64(e, row->te_stream);
	if (row->te_mempool != CT_TORCH_ABSENT) {
		uint64_t a = ct_torch_u64(e, row->te_mempool), b = ct_torch_u64(e, row->te_mempool + 8);
		if (a >> 32 == 0 && b >> 32 == 0) {
			c.aux = a << 32 | b;
			c.flags = CT_FW_F_POOL;
		}
	}
	/* this frame's record keys the thread's stack cache, as a wrapper's does (stackcache.c) */
	c.frame = __builtin_frame_address(0);
	ct_call_end_slow(&c, c.t0);
}

/* ---- the attach ------------------------------------------------------------------------ */

#define ct_torch_warn(...) ct_warn_once(&ct_torch_warned, __VA_ARGS__)
#define CT_TORCH_OFF_MSG "framework layer off, CUDA layer only"

/*
 * Attach to the allocator of the libc10_cuda.so at path. Returns the next
 * state: ATTACHED, OFF (with one warning, unless a version row says nothing
 * is wrong) or WATCHING (the allocator is not ready: try at a later call).
 */
static int ct_torch_attach(const char *path)
{
	char ver[48];
	int major, minor;
	if (ct_torch_read_version(path, ver, sizeof ver) != 0) {
		ct_torch_warn("no torch version found beside %s: " CT_TORCH_OFF_MSG, path);
		return CT_TORCH_OFF;
	}
	const struct ct_torch_layout *row =
		ct_torch_parse_version(ver, &major, &minor) == 0 ? ct_torch_layout_for(major, minor)
								   : NULL;
	if (!row || (row->status != CT_TORCH_MEASURED && ct_option(CT_OPT_TORCH) < 2)) {
		ct_torch_warn("torch %s not known: " CT_TORCH_OFF_MSG, ver);
		return CT_TORCH_OFF;
	}
#if !defined(__x86_64__)
	ct_torch_warn("torch %s: the framework layer is x86-64 only: " CT_TORCH_OFF_MSG, ver);
	return CT_TORCH_OFF;
#else
	void *(*real_dlsym)(void *, const char *) =
		(void *(*)(void *, const char *))ct_resolve_real_dlsym();
	void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	void *const *symbol = lib && real_dlsym ? real_dlsym(lib, CT_TORCH_ALLOCATOR_SYMBOL) : NULL;
	if (!symbol) {
		ct_torch_warn("torch %s: no allocator symbol in %s: " CT_TORCH_OFF_MSG, ver, path);
		return CT_TORCH_OFF;
	}
	void *allocator = __atomic_load_n((void *const *)symbol, __ATOMIC_ACQUIRE);
	if (!allocator)
		return CT_TORCH_WATCHING;
	if (dlopen("libc++.so.1", RTLD_NOW | RTLD_NOLOAD)) {
		ct_torch_warn("torch %s: libc++ is loaded (a std::function of another layout): " CT_TORCH_OFF_MSG,
			      ver);
		return CT_TORCH_OFF;
	}
	/* libstdc++'s typeinfo for void: the library's own dependency (torch may be RTLD_LOCAL) */
	ct_torch_typeid_void = real_dlsym(lib, "_ZTIv");
	if (!ct_torch_typeid_void) {
		ct_torch_warn("torch %s: no typeinfo for void (libstdc++): " CT_TORCH_OFF_MSG, ver);
		return CT_TORCH_OFF;
	}
	void *const *vt = *(void *const *const *)allocator;
	int slots = ct_torch_vtable_slots(vt);
	if (slots != row->vt_slots) {
		ct_torch_warn("torch %s: its allocator has %d virtual functions, %d expected: " CT_TORCH_OFF_MSG,
			      ver, slots, row->vt_slots);
		return CT_TORCH_OFF;
	}
	/* std::string name(): the result through a hidden pointer, ahead of this */
	struct {
		const char *p;
		uint64_t rest[3];
	} name = {NULL, {0, 0, 0}};
	((void (*)(void *, void *))vt[row->slot_name])(&name, allocator);
	if (!name.p || strncmp(name.p, "native", 7) != 0) {
		char backend[32];
		size_t k = 0;
		for (; name.p && name.p[k] && k + 1 < sizeof backend; k++)
			backend[k] = name.p[k] > ' ' && name.p[k] < 127 ? name.p[k] : '?';
		backend[k] = 0;
		ct_torch_warn("torch %s: the allocator backend is \"%s\", not \"native\": " CT_TORCH_OFF_MSG,
			      ver, backend);
		return CT_TORCH_OFF; /* a long name's memory is leaked: once per process */
	}
	if (!((_Bool(*)(void *))vt[row->slot_initialized])(allocator))
		return CT_TORCH_WATCHING;
	atomic_store_explicit(&ct_torch_row, row, memory_order_release);
	struct ct_std_function f = {{NULL, NULL}, ct_torch_manager, ct_torch_invoke};
	((void (*)(void *, struct ct_std_function *))vt[row->slot_attach])(allocator, &f);
	if (f.manager) /* the caller destroys the argument (torch moved from it) */
		f.manager(f.functor, f.functor, 3);
	return CT_TORCH_ATTACHED;
#endif
}

void ct_torch_check_caller(const void *ret)
{
	uintptr_t a = (uintptr_t)ret;
	if (atomic_load(&ct_torch_state) != CT_TORCH_WATCHING || ct_torch_is_other(a))
		return;
	int state = atomic_load_explicit(&ct_state, memory_order_acquire);
	if (state == CT_STATE_UNINIT || state == CT_STATE_STARTING)
		state = ct_ensure_started();
	if (state != CT_STATE_RUNNING || !ct_option(CT_OPT_TORCH)) {
		/* tracing off or over, or the layer switched off: look no more */
		atomic_store(&ct_torch_state, CT_TORCH_OFF);
		atomic_store_explicit(&ct_torch_watch, 0, memory_order_relaxed);
		return;
	}
	int saved_errno = errno;
	struct ct_module w;
	char path[PATH_MAX];
	int found = ct_module_of(ret, &w, path, sizeof path);
	if (!found || !ct_torch_is_c10(path)) {
		if (found)
			ct_torch_add_other(w.lo, w.hi);
		else
			ct_torch_add_other(a, a + 1); /* code outside any object */
		errno = saved_errno;
		return;
	}
	int expect = CT_TORCH_WATCHING;
	if (!atomic_compare_exchange_strong(&ct_torch_state, &expect, CT_TORCH_BUSY)) {
		errno = saved_errno;
		return; /* another thread attaches: never wait for it */
	}
	struct ct_thread *t = &ct_tls;
	t->in_hook = 1; /* nothing torch does meanwhile is traced */
	int next = ct_torch_attach(path);
	t->in_hook = 0;
	if (next == CT_TORCH_WATCHING && ++ct_torch_retries >= CT_TORCH_RETRIES) {
		ct_torch_warn("torch: the caching allocator was not ready at %d tries: " CT_TORCH_OFF_MSG,
			      CT_TORCH_RETRIES);
		next = CT_TORCH_OFF;
	}
	atomic_store(&ct_torch_state, next);
	if (next != CT_TORCH_WATCHING)
		atomic_store_explicit(&ct_torch_watch, 0, memory_order_relaxed);
	errno = saved_errno;
}
