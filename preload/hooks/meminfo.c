/*
 * Device memory after an out-of-memory failure (CT_REC_MEMINFO): what the
 * device had free when a traced allocation call ran out of memory.
 *
 * Off the hot path: this runs only after a traced allocation call returned
 * out-of-memory, on the calling thread. It asks the driver itself
 * (cuCtxGetCurrent, cuCtxGetDevice, cuMemGetInfo_v2 of the loaded
 * libcuda.so.1, never cumtrace's own exports), only when a context is current
 * on the thread, so it never creates a context; the driver call does not
 * touch the runtime's last error. None of it is recorded as an event.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <cuda.h>

#include "hooks.h"

typedef CUresult (*ct_ctx_get_current_fn)(CUcontext *ctx);
typedef CUresult (*ct_ctx_get_device_fn)(CUdevice *dev);
typedef CUresult (*ct_mem_get_info_fn)(size_t *free_bytes, size_t *total);

static void *_Atomic ct_mi_ctx_get_current;
static void *_Atomic ct_mi_ctx_get_device;
static void *_Atomic ct_mi_mem_get_info; /* set last: the other two are valid once it is */

/* name in the driver: the loaded libcuda.so.1 (never loaded here), else the next definition. */
static void *ct_driver_symbol(void *lib, const char *name)
{
	void *(*real_dlsym)(void *, const char *) =
		(void *(*)(void *, const char *))ct_resolve_real_dlsym();
	void *fn = lib && real_dlsym ? real_dlsym(lib, name) : NULL;
	if (!fn)
		fn = ct_dlsym_next(name);
	return fn && !ct_is_own_address(fn) ? fn : NULL;
}

/* Find the three driver functions once; 0 when the driver is not there (yet). */
static int ct_meminfo_resolve(void)
{
	if (atomic_load_explicit(&ct_mi_mem_get_info, memory_order_acquire))
		return 1;
	/* RTLD_NODELETE: the cached pointers stay valid for good (like ct_pin) */
	void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	void *cur = ct_driver_symbol(lib, "cuCtxGetCurrent");
	void *dev = ct_driver_symbol(lib, "cuCtxGetDevice");
	void *info = ct_driver_symbol(lib, "cuMemGetInfo_v2");
	if (!cur || !info)
		return 0;
	atomic_store_explicit(&ct_mi_ctx_get_current, cur, memory_order_relaxed);
	atomic_store_explicit(&ct_mi_ctx_get_device, dev, memory_order_relaxed);
	atomic_store_explicit(&ct_mi_mem_get_info, info, memory_order_release);
	return 1;
}

void ct_meminfo_after_failure(const struct ct_call *c)
{
	if (CT_LIKELY(c->result != CT_RESULT_OUT_OF_MEMORY || !ct_op_is_allocation(c->op)))
		return;
	struct ct_thread *t = &ct_tls;
	if (t->in_hook)
		return;
	int saved_errno = errno;
	t->in_hook = 1; /* whatever the driver does in here is not traced */
	struct ct_rec_meminfo mi;
	memset(&mi, 0, sizeof mi);
	int ok = 0;
	if (ct_meminfo_resolve()) {
		ct_ctx_get_current_fn get_current = (ct_ctx_get_current_fn)atomic_load_explicit(
			&ct_mi_ctx_get_current, memory_order_relaxed);
		ct_ctx_get_device_fn get_device = (ct_ctx_get_device_fn)atomic_load_explicit(
			&ct_mi_ctx_get_device, memory_order_relaxed);
		ct_mem_get_info_fn get_info = (ct_mem_get_info_fn)atomic_load_explicit(
			&ct_mi_mem_get_info, memory_order_relaxed);
		CUcontext ctx = NULL;
		size_t free_bytes = 0, total = 0;
		if (get_current(&ctx) == CUDA_SUCCESS && ctx &&
		    get_info(&free_bytes, &total) == CUDA_SUCCESS) {
			CUdevice dev;
			mi.device = c->device;
			if (get_device && get_device(&dev) == CUDA_SUCCESS)
				mi.device = (int16_t)dev;
			mi.free_bytes = free_bytes;
			mi.total_bytes = total;
			ok = 1;
		}
	}
	mi.ts_ns = ct_ticks(); /* ticks, like call_ts_ns: the writer converts (ct_rec_finish) */
	t->in_hook = 0;
	if (ok) {
		mi.rec.type = CT_REC_MEMINFO;
		mi.rec.size = sizeof mi;
		mi.call_ts_ns = c->t0;
		mi.tid = ct_current_tid();
		ct_record_raw(&mi, sizeof mi);
	}
	errno = saved_errno;
}

/* ---- imported and shared memory (issue 19 §4) ---- */

typedef CUresult (*ct_address_range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
static void *_Atomic ct_mi_address_range;

uint64_t ct_import_bytes(uint64_t ptr)
{
	if (!ptr || !ct_meminfo_resolve())
		return 0;
	int saved_errno = errno;
	struct ct_thread *t = &ct_tls;
	uint8_t hook = t->in_hook;
	t->in_hook = hook ? hook : CT_HOOK_BUSY; /* the driver's calls in here are not traced */
	void *fn = atomic_load_explicit(&ct_mi_address_range, memory_order_acquire);
	if (!fn) {
		void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
		fn = ct_driver_symbol(lib, "cuMemGetAddressRange_v2");
		atomic_store_explicit(&ct_mi_address_range, fn, memory_order_release);
	}
	ct_ctx_get_current_fn get_current =
		(ct_ctx_get_current_fn)atomic_load_explicit(&ct_mi_ctx_get_current, memory_order_relaxed);
	CUcontext ctx = NULL;
	CUdeviceptr base = 0;
	size_t size = 0;
	if (!fn || get_current(&ctx) != CUDA_SUCCESS || !ctx ||
	    ((ct_address_range_fn)fn)(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS || base != ptr)
		size = 0;
	t->in_hook = hook;
	errno = saved_errno;
	return size;
}
