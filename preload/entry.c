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

CT_HIDDEN void *ct_resolve_real_dlsym(void);
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

/* ---- the lookup table ------------------------------------------------------ */

/* Entry-point wrappers defined below, for the CT_ENTRY rows. */
#define CT_ENTRY(name, base, minver, ptsz, layer) static void *_Atomic ct_real_##name;
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

/* Find the row for a name as dlsym sees it (exact export name). */
static const struct ct_hook *ct_find_export(const char *name)
{
	const struct ct_table tables[] = {
		{ct_hooks_runtime, ct_hooks_runtime_count},
		{ct_hooks_driver, ct_hooks_driver_count},
		{ct_hooks_entry, sizeof ct_hooks_entry / sizeof ct_hooks_entry[0]},
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
 * A runtime function whose real pointer differs from the one we already
 * forward to belongs to a second copy of libcudart: it passes through
 * unwrapped rather than be routed to the wrong copy.
 */
static void *ct_substitute(const struct ct_hook *h, void *real)
{
	if (!h || !real || ct_is_own_address(real))
		return real;
	void *expect = NULL;
	if (atomic_compare_exchange_strong(h->real, &expect, real))
		ct_pin(real);
	else if (expect != real && h->layer == CT_LAYER_RUNTIME)
		return real;
	return h->wrapper;
}

/* ---- dlsym ------------------------------------------------------------------------ */

/*
 * dlsym itself is an assembly trampoline: RTLD_NEXT lookups depend on the
 * caller's return address, so they jump straight to the real dlsym with the
 * caller's frame intact; every other lookup goes to ct_dlsym_impl.
 */
CT_HIDDEN void *ct_dlsym_impl(void *handle, const char *name);
void *ct_dlsym_impl(void *handle, const char *name)
{
	ct_dlsym_fn real = (ct_dlsym_fn)ct_resolve_real_dlsym();
	if (!real)
		return NULL;
	void *fn = real(handle, name);
	if (!fn || !name || name[0] != 'c' || name[1] != 'u')
		return fn;
	int saved = errno;
	const struct ct_hook *h = ct_find_export(name);
	void *out = ct_substitute(h, fn);
	errno = saved;
	return out;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	cmpq $-1, %rdi\n"
	"	jne ct_dlsym_impl\n"
	"	movq ct_real_dlsym(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"
	"1:	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call ct_resolve_real_dlsym\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	testq %rax, %rax\n"
	"	jz 2f\n"
	"	jmp *%rax\n"
	"2:	ret\n"
	".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, %function\n"
	"dlsym:\n"
	"	cmn x0, #1\n"
	"	b.ne ct_dlsym_impl\n"
	"	adrp x16, ct_real_dlsym\n"
	"	ldr x16, [x16, :lo12:ct_real_dlsym]\n"
	"	cbz x16, 1f\n"
	"	br x16\n"
	"1:	stp x0, x1, [sp, #-32]!\n"
	"	str x30, [sp, #16]\n"
	"	bl ct_resolve_real_dlsym\n"
	"	mov x16, x0\n"
	"	ldr x30, [sp, #16]\n"
	"	ldp x0, x1, [sp], #32\n"
	"	cbz x16, 2f\n"
	"	br x16\n"
	"2:	mov x0, #0\n"
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
	fn_t fn = (fn_t)ct_real_symbol(&ct_real_cuGetProcAddress_v2, "cuGetProcAddress_v2");
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
	fn_t fn = (fn_t)ct_real_symbol(&ct_real_cuGetProcAddress, "cuGetProcAddress");
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
		ct_entry_fn fn = (ct_entry_fn)ct_real_symbol(&ct_real_##name, #name);        \
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
		ct_entry_ver_fn fn = (ct_entry_ver_fn)ct_real_symbol(&ct_real_##name, #name); \
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
