/*
 * Entry points: every way a program can be handed a CUDA function pointer
 * other than by linking to the export. dlsym, cuGetProcAddress(_v2) and
 * cudaGetDriverEntryPoint(ByVersion)(_ptsz) hand back cumtrace's wrapper for
 * each traced function (the variant actually asked for) and remember the real
 * function it stands for; every other name passes through untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "hooks.h"

/* cuda.h maps the name to the _v2 form; the v1 export is wrapped here too. */
#undef cuGetProcAddress
/* cudaGetDriverEntryPoint is deprecated, but programs still call it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

typedef void *(*ct_dlsym_fn)(void *, const char *);

/* The real dlsym, found through dlvsym so our own export is never hit. */
void *_Atomic ct_real_dlsym CT_HIDDEN;

void *ct_resolve_real_dlsym(void)
{
	void *fn = atomic_load(&ct_real_dlsym);
	if (fn)
		return fn;
	static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
	for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !fn; i++)
		fn = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
	atomic_store(&ct_real_dlsym, fn);
	return fn;
}

void *ct_dlsym_next(const char *name)
{
	int saved = errno;
	ct_dlsym_fn real = (ct_dlsym_fn)ct_resolve_real_dlsym();
	void *fn = real ? real(RTLD_NEXT, name) : NULL;
	errno = saved;
	return fn;
}

/*
 * Keep the library of a real function we cache loaded for good: after a
 * dlclose the cached pointer would dangle, and a later dlopen may map the
 * library elsewhere (the exported wrappers would jump into unmapped memory).
 */
static void ct_pin(const void *fn)
{
	Dl_info info;
	int saved = errno;
	if (dladdr(fn, &info) && info.dli_fname && info.dli_fname[0])
		dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	errno = saved;
}

void *ct_real_symbol_slow(void *_Atomic *cache, const char *name)
{
	void *fn = atomic_load_explicit(cache, memory_order_acquire);
	if (fn)
		return fn;
	fn = ct_dlsym_next(name);
	if (!fn || ct_is_own_address(fn))
		return NULL;
	void *expect = NULL;
	if (atomic_compare_exchange_strong(cache, &expect, fn))
		ct_pin(fn);
	else
		fn = expect;
	return fn;
}

/* ---- routes: the caller's own dependency tree ------------------------------------ */

/* The object that holds address p, other than libcumtrace; 0 if there is none. */
static int ct_object_of(const void *p, struct ct_module *o)
{
	return p && !ct_is_own_address(p) && ct_module_of(p, o, NULL, 0) && o->name;
}

/*
 * name as the object's own dependency tree defines it: the real dlsym on the
 * object's handle searches the object and its dependencies, which never
 * include libcumtrace. The handle is opened RTLD_NODELETE and kept: the object
 * stays mapped for good, so that a route keyed by its range never outlives it.
 * Not for the program (path ""), whose tree is the global scope.
 */
static void *ct_object_symbol(const struct ct_module *o, const char *name)
{
	ct_dlsym_fn real = (ct_dlsym_fn)ct_resolve_real_dlsym();
	void *h = real && o->name[0] ? dlopen(o->name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) : NULL;
	struct link_map *map = NULL;
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || !map || map->l_addr != o->base)
		return NULL; /* not found by its name (another namespace): never a wrong copy */
	void *fn = real(h, name);
	return fn && !ct_is_own_address(fn) ? fn : NULL;
}

/* The names of up to CT_SCAN_MAX loaded objects other than the program and libcumtrace. */
#define CT_SCAN_MAX 256
struct ct_scan {
	const char *path[CT_SCAN_MAX];
	int n;
};

static int ct_list_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ct_scan *s = arg;
	if (s->n < CT_SCAN_MAX && info->dlpi_name && info->dlpi_name[0] &&
	    !ct_is_own_address((const void *)(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr)))
		s->path[s->n++] = info->dlpi_name;
	return 0;
}

/*
 * The one definition of name in the whole process, when the caller's own
 * tree has none (it calls a pointer some other object took): each loaded
 * object's tree is searched (after dl_iterate_phdr, which holds a lock
 * dlopen may need); NULL when there is none, or more than one copy.
 */
static void *ct_only_definition(const char *name)
{
	ct_dlsym_fn real = (ct_dlsym_fn)ct_resolve_real_dlsym();
	struct ct_scan s;
	s.n = 0;
	if (!real)
		return NULL;
	dl_iterate_phdr(ct_list_object, &s);
	void *only = NULL;
	for (int i = 0; i < s.n; i++) {
		void *h = dlopen(s.path[i], RTLD_LAZY | RTLD_NOLOAD);
		void *fn = h ? real(h, name) : NULL;
		if (h)
			dlclose(h);
		if (!fn || ct_is_own_address(fn) || fn == only)
			continue;
		if (only)
			return NULL; /* two copies: which one the pointer stood for is not known */
		only = fn;
	}
	return only;
}

static void *ct_route_find(struct ct_real *real, const void *caller)
{
	unsigned n = atomic_load_explicit(&real->nroutes, memory_order_acquire);
	uintptr_t a = (uintptr_t)caller;
	for (unsigned i = 0; i < n && i < CT_ROUTES; i++) {
		uintptr_t lo = atomic_load_explicit(&real->route[i].lo, memory_order_acquire);
		if (lo && a - lo < real->route[i].hi - lo)
			return real->route[i].fn;
	}
	return NULL;
}

/* Does every route lead to fn? Then fn may serve every caller. */
static int ct_routes_agree(struct ct_real *real, const void *fn)
{
	unsigned n = atomic_load_explicit(&real->nroutes, memory_order_acquire);
	for (unsigned i = 0; i < n && i < CT_ROUTES; i++) {
		/* A claimed route not published yet may be another copy's. */
		if (!atomic_load_explicit(&real->route[i].lo, memory_order_acquire) ||
		    real->route[i].fn != fn)
			return 0;
	}
	return 1;
}

static void ct_route_add(struct ct_real *real, const struct ct_module *o, void *fn)
{
	unsigned i = atomic_fetch_add_explicit(&real->nroutes, 1, memory_order_acq_rel);
	if (i >= CT_ROUTES)
		return;
	real->route[i].hi = o->hi;
	real->route[i].fn = fn;
	atomic_store_explicit(&real->route[i].lo, o->lo, memory_order_release);
}

/* fn for every caller from now on, unless a route leads elsewhere; what real->fn holds then. */
static void *ct_real_settle(struct ct_real *real, void *fn)
{
	void *expect = NULL;
	if (!ct_routes_agree(real, fn))
		return NULL;
	if (atomic_compare_exchange_strong(&real->fn, &expect, fn)) {
		ct_pin(fn);
		return fn;
	}
	return expect;
}

/*
 * The caller reaches what its own symbol lookup would have reached without
 * cumtrace: the global scope first (the same function for every caller),
 * else the caller's own dependency tree, else (a pointer to the export that
 * another object took) the one copy in the process.
 */
static void *ct_real_resolve(struct ct_real *real, const char *name, const void *caller)
{
	struct ct_module o;
	void *fn = ct_dlsym_next(name);
	if (fn && !ct_is_own_address(fn)) {
		void *all = ct_real_settle(real, fn);
		if (all)
			return all;
		/* Routes lead to another copy: this caller gets a route of its own. */
		if (ct_object_of(caller, &o))
			ct_route_add(real, &o, fn);
		return fn;
	}
	int known = ct_object_of(caller, &o);
	fn = known ? ct_object_symbol(&o, name) : NULL;
	if (!fn)
		fn = ct_only_definition(name);
	if (!fn)
		return NULL;
	ct_pin(fn);
	if (known)
		ct_route_add(real, &o, fn);
	return fn;
}

void *ct_real_for_caller(struct ct_real *real, const char *name, const void *caller)
{
	void *fn = atomic_load_explicit(&real->fn, memory_order_acquire);
	if (!fn)
		fn = ct_route_find(real, caller);
	if (fn)
		return fn;
	int saved = errno;
	fn = ct_real_resolve(real, name, caller);
	errno = saved;
	return fn;
}

/* ---- the lookup table ------------------------------------------------------ */

/* Entry-point wrappers defined below, for the CT_ENTRY rows. */
#define CT_ENTRY(name, base, minver, ptsz, layer) static struct ct_real ct_real_##name;
#include "hooks.def"

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus) CT_EXPORT;
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags) CT_EXPORT;
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
				    enum cudaDriverEntryPointQueryResult *driverStatus) CT_EXPORT;
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
					 unsigned long long flags,
					 enum cudaDriverEntryPointQueryResult *driverStatus)
	CT_EXPORT;
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
					     unsigned int cudaVersion, unsigned long long flags,
					     enum cudaDriverEntryPointQueryResult *driverStatus)
	CT_EXPORT;
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
						  unsigned int cudaVersion,
						  unsigned long long flags,
						  enum cudaDriverEntryPointQueryResult *driverStatus)
	CT_EXPORT;

static const struct ct_hook ct_hooks_entry[] = {
#define CT_ENTRY(name, base, minver, ptsz, layer)                                            \
	{#name, #base, minver, ptsz, CT_LAYER_##layer, (void *)name, &ct_real_##name},
#include "hooks.def"
};

struct ct_table {
	const struct ct_hook *rows;
	size_t count;
};

/* Could name be a hooked export (cu*, cuda*, and nccl*: issue 19 §5)? One or two compares. */
static int ct_maybe_hooked(const char *name)
{
	return name && ((name[0] == 'c' && name[1] == 'u') || (name[0] == 'n' && name[1] == 'c'));
}

/* Find the row for a name as dlsym sees it (exact export name). */
static const struct ct_hook *ct_find_export(const char *name)
{
	const struct ct_table tables[] = {
		{ct_hooks_runtime, ct_hooks_runtime_count},
		{ct_hooks_driver, ct_hooks_driver_count},
		{ct_hooks_entry, sizeof ct_hooks_entry / sizeof ct_hooks_entry[0]},
		{ct_hooks_nccl, ct_hooks_nccl_count}, /* issue 19 §5 */
	};
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (size_t i = 0; i < tables[t].count; i++)
			if (strcmp(tables[t].rows[i].name, name) == 0)
				return &tables[t].rows[i];
	return NULL;
}

/*
 * Find the row cuGetProcAddress(base, version, flags) stands for: the variant
 * with the highest minver <= version, the per-thread-stream one if asked for
 * and one exists. An exact export name is accepted too.
 */
static const struct ct_hook *ct_find_proc(const char *base, int version, int ptsz)
{
	const struct ct_table tables[] = {
		{ct_hooks_driver, ct_hooks_driver_count},
		{ct_hooks_entry, sizeof ct_hooks_entry / sizeof ct_hooks_entry[0]},
	};
	const struct ct_hook *best = NULL, *exact = NULL;
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
		for (size_t i = 0; i < tables[t].count; i++) {
			const struct ct_hook *h = &tables[t].rows[i];
			if (h->layer != CT_LAYER_DRIVER)
				continue;
			/* A base name that is also an export name ("cuMemAllocAsync")
			 * still picks its variant by version and flags below. */
			if (strcmp(h->name, base) == 0)
				exact = h;
			if (strcmp(h->base, base) != 0 || h->minver > version)
				continue;
			if (h->ptsz && !ptsz)
				continue;
			if (!best || h->minver > best->minver ||
			    (h->minver == best->minver && h->ptsz > best->ptsz))
				best = h;
		}
	}
	return best ? best : exact;
}

/*
 * Hand out the wrapper of row h in place of real. Driver functions have one
 * implementation per process, so the first real pointer seen stands for all.
 * A runtime function stands for the one in the global scope when there is
 * one; a real pointer that differs from the one the wrapper already forwards
 * to (or routes some caller to) belongs to a second copy of libcudart: it
 * passes through unwrapped rather than be routed to the wrong copy.
 */
static void *ct_substitute(const struct ct_hook *h, void *real)
{
	if (!h || !real || ct_is_own_address(real))
		return real;
	if (h->layer == CT_LAYER_DRIVER)
		ct_driver_note();
	struct ct_real *r = h->real;
	void *cur = atomic_load_explicit(&r->fn, memory_order_acquire);
	if (!cur && h->layer == CT_LAYER_RUNTIME) {
		void *global = ct_dlsym_next(h->name);
		if (global && !ct_is_own_address(global))
			cur = ct_real_settle(r, global);
	}
	if (!cur)
		cur = ct_real_settle(r, real);
	if (!cur || (cur != real && h->layer == CT_LAYER_RUNTIME))
		return real;
	return h->wrapper;
}

/* ---- dlsym ------------------------------------------------------------------------ */

/*
 * A lookup found cumtrace's own export of a hooked name (RTLD_DEFAULT, the
 * program's handle, RTLD_NEXT from the program): without cumtrace it would
 * have gone on past it, to the next definition in the global scope. When there
 * is one, the export stands for it; when there is none, the lookup finds
 * nothing. Only the failing lookup made here sets dlerror() then (its
 * message names libcumtrace, not the caller). errno kept.
 */
static int ct_only_self_defines(const char *name)
{
	int saved = errno;
	void *next = ct_dlsym_next(name);
	errno = saved;
	return !next || ct_is_own_address(next);
}

/*
 * dlsym itself is an assembly trampoline: RTLD_NEXT lookups depend on the
 * caller's return address, so they jump to the real dlsym with the caller's
 * frame intact (unless ct_dlsym_next_target says they find nothing); every
 * other lookup goes to ct_dlsym_impl, reached by a jump too, so its return
 * address is the caller's.
 */
CT_HIDDEN void *ct_dlsym_impl(void *handle, const char *name);
void *ct_dlsym_impl(void *handle, const char *name)
{
	ct_dlsym_fn real = (ct_dlsym_fn)ct_resolve_real_dlsym();
	if (!real)
		return NULL;
	void *fn = real(handle, name);
	if (!fn || !ct_maybe_hooked(name))
		return fn;
	const struct ct_hook *h = ct_find_export(name);
	if (!h)
		return fn;
	if (ct_is_own_address(fn)) {
		if (!ct_only_self_defines(name))
			return fn;
		/* RTLD_DEFAULT from an object loaded RTLD_LOCAL goes on into its own tree. */
		struct ct_module o;
		void *local = NULL;
		int saved = errno;
		if (handle == RTLD_DEFAULT && ct_object_of(__builtin_return_address(0), &o))
			local = ct_object_symbol(&o, name);
		fn = local ? ct_substitute(h, local) : NULL;
		if (!fn)
			ct_dlsym_next(name); /* the failure dlerror() reports */
		errno = saved;
		return fn;
	}
	int saved = errno;
	void *out = ct_substitute(h, fn);
	errno = saved;
	return out;
}

/*
 * Is the object at caller before libcumtrace in the global scope (the
 * program, a preload listed first)? Only such a caller's RTLD_NEXT lookups
 * can find cumtrace's exports. The objects before libcumtrace in the list of
 * loaded objects were loaded before it at start-up and are never unloaded,
 * so the list is walked without the loader's lock.
 */
static int ct_before_self(const void *caller)
{
	Dl_info info;
	struct link_map *self = NULL, *map = NULL;
	if (!dladdr1((void *)ct_before_self, &info, (void **)&self, RTLD_DL_LINKMAP) || !self ||
	    !dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
		return 0;
	for (struct link_map *l = self->l_prev; l; l = l->l_prev)
		if (l == map)
			return 1;
	return 0;
}

/*
 * Where an RTLD_NEXT lookup from caller goes: the real dlsym, or NULL when
 * the lookup would find cumtrace's own export of a hooked name that nothing
 * after it defines (the trampoline then returns NULL).
 */
CT_HIDDEN void *ct_dlsym_next_target(const char *name, const void *caller);
void *ct_dlsym_next_target(const char *name, const void *caller)
{
	void *real = ct_resolve_real_dlsym();
	if (!real || !ct_maybe_hooked(name) || !ct_find_export(name))
		return real;
	int saved = errno;
	int before = ct_before_self(caller);
	errno = saved;
	return before && ct_only_self_defines(name) ? NULL : real;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	cmpq $-1, %rdi\n"
	"	jne ct_dlsym_impl\n"
	"	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	movq %rsi, %rdi\n"
	"	movq 24(%rsp), %rsi\n"
	"	call ct_dlsym_next_target\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"
	"1:	ret\n"
	".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, %function\n"
	"dlsym:\n"
	"	cmn x0, #1\n"
	"	b.ne ct_dlsym_impl\n"
	"	stp x0, x1, [sp, #-32]!\n"
	"	str x30, [sp, #16]\n"
	"	mov x0, x1\n"
	"	mov x1, x30\n"
	"	bl ct_dlsym_next_target\n"
	"	mov x16, x0\n"
	"	ldr x30, [sp, #16]\n"
	"	ldp x0, x1, [sp], #32\n"
	"	cbz x16, 1f\n"
	"	br x16\n"
	"1:	mov x0, #0\n"
	"	ret\n"
	".size dlsym, .-dlsym\n");
#else
#error "dlsym trampoline: only x86-64 and aarch64 are supported"
#endif

/* ---- cuGetProcAddress and cudaGetDriverEntryPoint ------------------------------------ */

#define CT_PTDS_FLAG 0x2 /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM == cudaEnablePerThreadDefaultStream */
#define CT_LEGACY_FLAG 0x1

/* Replace *pfn by our wrapper when symbol is traced. */
static void ct_fix_proc(const char *symbol, void **pfn, int version, int ptsz)
{
	if (!symbol || !pfn || !*pfn)
		return;
	int saved = errno;
	*pfn = ct_substitute(ct_find_proc(symbol, version, ptsz), *pfn);
	errno = saved;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	typedef CUresult (*fn_t)(const char *, void **, int, cuuint64_t,
				 CUdriverProcAddressQueryResult *);
	fn_t fn = (fn_t)ct_real_fn(&ct_real_cuGetProcAddress_v2, "cuGetProcAddress_v2",
				   __builtin_return_address(0));
	if (!fn)
		return CUDA_ERROR_NOT_FOUND;
	CUresult rc = fn(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (rc == CUDA_SUCCESS)
		ct_fix_proc(symbol, pfn, cudaVersion, (flags & CT_PTDS_FLAG) != 0);
	return rc;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	typedef CUresult (*fn_t)(const char *, void **, int, cuuint64_t);
	fn_t fn = (fn_t)ct_real_fn(&ct_real_cuGetProcAddress, "cuGetProcAddress",
				   __builtin_return_address(0));
	if (!fn)
		return CUDA_ERROR_NOT_FOUND;
	CUresult rc = fn(symbol, pfn, cudaVersion, flags);
	if (rc == CUDA_SUCCESS)
		ct_fix_proc(symbol, pfn, cudaVersion, (flags & CT_PTDS_FLAG) != 0);
	return rc;
}

/* The runtime asks the driver for the variants of its own CUDA version. */
#define CT_RUNTIME_VERSION CUDART_VERSION

typedef cudaError_t (*ct_entry_fn)(const char *, void **, unsigned long long,
				   enum cudaDriverEntryPointQueryResult *);
typedef cudaError_t (*ct_entry_ver_fn)(const char *, void **, unsigned int, unsigned long long,
				       enum cudaDriverEntryPointQueryResult *);

/* ptsz_default: the _ptsz export, where default flags mean per-thread. */
static int ct_entry_ptsz(unsigned long long flags, int ptsz_default)
{
	if (flags & CT_PTDS_FLAG)
		return 1;
	return ptsz_default && !(flags & CT_LEGACY_FLAG);
}

/* The four runtime lookups differ only in the real function and the defaults. */
#define CT_ENTRY_WRAPPER(name, ptsz_default)                                                 \
	cudaError_t name(const char *symbol, void **funcPtr, unsigned long long flags,          \
			 enum cudaDriverEntryPointQueryResult *driverStatus)                    \
	{                                                                                    \
		ct_entry_fn fn = (ct_entry_fn)ct_real_fn(&ct_real_##name, #name,                \
							 __builtin_return_address(0));       \
		if (!fn)                                                                     \
			return cudaErrorSymbolNotFound;                                      \
		cudaError_t rc = fn(symbol, funcPtr, flags, driverStatus);                   \
		if (rc == cudaSuccess)                                                       \
			ct_fix_proc(symbol, funcPtr, CT_RUNTIME_VERSION,                     \
				    ct_entry_ptsz(flags, ptsz_default));                     \
		return rc;                                                                   \
	}

#define CT_ENTRY_VER_WRAPPER(name, ptsz_default)                                             \
	cudaError_t name(const char *symbol, void **funcPtr, unsigned int cudaVersion,          \
			 unsigned long long flags,                                              \
			 enum cudaDriverEntryPointQueryResult *driverStatus)                    \
	{                                                                                    \
		ct_entry_ver_fn fn = (ct_entry_ver_fn)ct_real_fn(&ct_real_##name, #name,        \
								 __builtin_return_address(0)); \
		if (!fn)                                                                     \
			return cudaErrorSymbolNotFound;                                      \
		cudaError_t rc = fn(symbol, funcPtr, cudaVersion, flags, driverStatus);      \
		if (rc == cudaSuccess)                                                       \
			ct_fix_proc(symbol, funcPtr, (int)cudaVersion,                       \
				    ct_entry_ptsz(flags, ptsz_default));                     \
		return rc;                                                                   \
	}

CT_ENTRY_WRAPPER(cudaGetDriverEntryPoint, 0)
CT_ENTRY_WRAPPER(cudaGetDriverEntryPoint_ptsz, 1)
CT_ENTRY_VER_WRAPPER(cudaGetDriverEntryPointByVersion, 0)
CT_ENTRY_VER_WRAPPER(cudaGetDriverEntryPointByVersion_ptsz, 1)
