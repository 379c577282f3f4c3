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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "hooks.h"

typedef CUresult (*ct_ctx_get_current_fn)(CUcontext *ctx);
typedef CUresult (*ct_ctx_get_device_fn)(CUdevice *dev);
typedef CUresult (*ct_mem_get_info_fn)(size_t *free_bytes, size_t *total);

static void *_Atomic ct_mi_ctx_get_current;
static void *_Atomic ct_mi_ctx_get_device;
static void *_Atomic ct_mi_mem_get_info; /* set last: the other two are valid once it is */
_Atomic int ct_driver_seen;

void *ct_driver_symbol(void *lib, const char *name)
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
	if (!atomic_load_explicit(&ct_driver_seen, memory_order_relaxed))
		return 0; /* not loaded yet, as far as the shim saw (hooks.h) */
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

/* ---- the memory no allocation call shows (issue 19 §6): CT_REC_MEMSAMPLE ------------------ */

typedef CUresult (*ct_pool_attr_fn)(CUmemoryPool pool, CUmemPool_attribute attr, void *value);
typedef CUresult (*ct_dev_pool_fn)(CUmemoryPool *pool, CUdevice dev);
typedef CUresult (*ct_graph_attr_fn)(CUdevice dev, CUgraphMem_attribute attr, void *value);

_Atomic int ct_memsample_first_done;
static void *_Atomic ct_ms_pool_attr;	 /* cuMemPoolGetAttribute */
static void *_Atomic ct_ms_default_pool; /* cuDeviceGetDefaultMemPool */
static void *_Atomic ct_ms_mem_pool;	 /* cuDeviceGetMemPool */
static void *_Atomic ct_ms_graph_attr;	 /* cuDeviceGetGraphMemAttribute */
static _Atomic int ct_ms_looked;	 /* the four above were looked up (any may be NULL) */
#define CT_MS_DEVICES 64
static _Atomic uint64_t ct_ms_last_ns[CT_MS_DEVICES]; /* the device's last sample, 0 none */
static _Atomic int ct_ms_atexit_set;
static _Atomic unsigned ct_ms_first_misses; /* FIRST samples that found no driver or context */
#define CT_MS_FIRST_TRIES 64		     /* then the wrappers stop asking (no driver: nullrt) */
static pid_t ct_ms_pid; /* the process that set the exit handler (a fork child takes no sample) */

/* The pools made with cudaMemPoolCreate / cuMemPoolCreate and not destroyed: handle 0 = free slot. */
#define CT_MS_POOLS 64
#define CT_MS_CLAIMED UINT64_MAX /* a slot being filled */
static struct {
	_Atomic uint64_t handle;
	_Atomic int device;
} ct_ms_pools[CT_MS_POOLS];

void ct_memsample_pool(uint64_t pool, int device, int live)
{
	if (!pool)
		return;
	for (int i = 0; i < CT_MS_POOLS; i++) {
		uint64_t want = live ? 0 : pool;
		if (live) {
			if (!atomic_compare_exchange_strong(&ct_ms_pools[i].handle, &want, CT_MS_CLAIMED))
				continue;
			atomic_store_explicit(&ct_ms_pools[i].device, device, memory_order_relaxed);
			atomic_store_explicit(&ct_ms_pools[i].handle, pool, memory_order_release);
			return;
		}
		if (atomic_compare_exchange_strong(&ct_ms_pools[i].handle, &want, 0))
			return;
	}
}

static void ct_ms_resolve(void)
{
	if (atomic_load_explicit(&ct_ms_looked, memory_order_acquire) ||
	    !atomic_load_explicit(&ct_driver_seen, memory_order_relaxed))
		return;
	void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	if (!lib)
		return; /* not loaded yet: look again next time */
	atomic_store_explicit(&ct_ms_pool_attr, ct_driver_symbol(lib, "cuMemPoolGetAttribute"), memory_order_relaxed);
	atomic_store_explicit(&ct_ms_default_pool, ct_driver_symbol(lib, "cuDeviceGetDefaultMemPool"),
			      memory_order_relaxed);
	atomic_store_explicit(&ct_ms_mem_pool, ct_driver_symbol(lib, "cuDeviceGetMemPool"), memory_order_relaxed);
	atomic_store_explicit(&ct_ms_graph_attr, ct_driver_symbol(lib, "cuDeviceGetGraphMemAttribute"),
			      memory_order_relaxed);
	atomic_store_explicit(&ct_ms_looked, 1, memory_order_release);
}

/* Add pool's four attributes to ms; 1 when all four were read. */
static int ct_ms_pool(ct_pool_attr_fn get, CUmemoryPool pool, struct ct_rec_memsample *ms)
{
	cuuint64_t v[4];
	const CUmemPool_attribute a[4] = {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
					  CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_HIGH};
	for (int i = 0; i < 4; i++)
		if (get(pool, a[i], &v[i]) != CUDA_SUCCESS)
			return 0;
	ms->pool_reserved += v[0];
	ms->pool_reserved_high += v[1];
	ms->pool_used += v[2];
	ms->pool_used_high += v[3];
	ms->npools++;
	return 1;
}

static void ct_memsample_at_exit(void)
{
	if (getpid() == ct_ms_pid && atomic_load_explicit(&ct_state, memory_order_acquire) == CT_STATE_RUNNING)
		ct_memsample(CT_MEMSAMPLE_EXIT, ct_tls.device);
}

/* The queries, on a thread with a current context, into *ms; 1 when it holds a sample. */
static int ct_ms_take(unsigned why, int16_t hint, uint64_t now, struct ct_rec_memsample *ms_out)
{
	if (!ct_meminfo_resolve())
		return 0;
	ct_ms_resolve();
	ct_ctx_get_current_fn get_current =
		(ct_ctx_get_current_fn)atomic_load_explicit(&ct_mi_ctx_get_current, memory_order_relaxed);
	ct_ctx_get_device_fn get_device =
		(ct_ctx_get_device_fn)atomic_load_explicit(&ct_mi_ctx_get_device, memory_order_relaxed);
	ct_mem_get_info_fn get_info = (ct_mem_get_info_fn)atomic_load_explicit(&ct_mi_mem_get_info, memory_order_relaxed);
	CUcontext ctx = NULL;
	CUdevice dev = hint;
	size_t free_bytes = 0, total = 0;
	if (get_current(&ctx) != CUDA_SUCCESS || !ctx || (get_device && get_device(&dev) != CUDA_SUCCESS) ||
	    get_info(&free_bytes, &total) != CUDA_SUCCESS)
		return 0;
	struct ct_rec_memsample ms;
	memset(&ms, 0, sizeof ms);
	ms.free_bytes = free_bytes;
	ms.total_bytes = total;
	ms.device = (int16_t)dev;
	ms.why = (uint8_t)why;
	ct_pool_attr_fn pool_attr = (ct_pool_attr_fn)atomic_load_explicit(&ct_ms_pool_attr, memory_order_relaxed);
	ct_dev_pool_fn def_pool = (ct_dev_pool_fn)atomic_load_explicit(&ct_ms_default_pool, memory_order_relaxed);
	ct_dev_pool_fn cur_pool = (ct_dev_pool_fn)atomic_load_explicit(&ct_ms_mem_pool, memory_order_relaxed);
	CUmemoryPool dp = NULL, cp = NULL;
	if (pool_attr && def_pool && def_pool(&dp, dev) == CUDA_SUCCESS && dp && ct_ms_pool(pool_attr, dp, &ms)) {
		ms.flags |= CT_MEMSAMPLE_F_POOLS;
		if (cur_pool && cur_pool(&cp, dev) == CUDA_SUCCESS && cp && cp != dp)
			ct_ms_pool(pool_attr, cp, &ms);
		for (int i = 0; i < CT_MS_POOLS; i++) {
			uint64_t h = atomic_load_explicit(&ct_ms_pools[i].handle, memory_order_acquire);
			if (h && h != CT_MS_CLAIMED && h != CT_P(dp) && h != CT_P(cp) &&
			    atomic_load_explicit(&ct_ms_pools[i].device, memory_order_relaxed) == dev)
				ct_ms_pool(pool_attr, (CUmemoryPool)(uintptr_t)h, &ms);
		}
	}
	ct_graph_attr_fn graph_attr = (ct_graph_attr_fn)atomic_load_explicit(&ct_ms_graph_attr, memory_order_relaxed);
	cuuint64_t g[4];
	if (graph_attr && graph_attr(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &g[0]) == CUDA_SUCCESS &&
	    graph_attr(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &g[1]) == CUDA_SUCCESS &&
	    graph_attr(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &g[2]) == CUDA_SUCCESS &&
	    graph_attr(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &g[3]) == CUDA_SUCCESS) {
		ms.graph_used = g[0];
		ms.graph_used_high = g[1];
		ms.graph_reserved = g[2];
		ms.graph_reserved_high = g[3];
		ms.flags |= CT_MEMSAMPLE_F_GRAPH;
	}
	if (dev >= 0 && dev < CT_MS_DEVICES)
		atomic_store_explicit(&ct_ms_last_ns[dev], now, memory_order_relaxed);
	ms.rec.type = CT_REC_MEMSAMPLE;
	ms.rec.size = sizeof ms;
	ms.ts_ns = ct_ticks(); /* ticks: the writer converts (ct_rec_finish) */
	*ms_out = ms;
	return 1;
}

void ct_memsample(unsigned why, int16_t device)
{
	long every = ct_option(CT_OPT_MEMSAMPLE_MS);
	if (every <= 0) {
		atomic_store_explicit(&ct_memsample_first_done, 1, memory_order_relaxed);
		return;
	}
	struct ct_thread *t = &ct_tls;
	if (t->in_hook || ct_in_handler(t))
		return;
	uint64_t now = ct_now_ns();
	if (why == CT_MEMSAMPLE_SYNC && device >= 0 && device < CT_MS_DEVICES) {
		uint64_t last = atomic_load_explicit(&ct_ms_last_ns[device], memory_order_relaxed);
		if (last && now - last < (uint64_t)every * 1000000u)
			return;
	}
	int saved_errno = errno;
	t->in_hook = CT_HOOK_BUSY; /* whatever the driver does in here is not traced */
	struct ct_rec_memsample ms;
	int ok = ct_ms_take(why, device, now, &ms);
	t->in_hook = CT_HOOK_NONE;
	if (ok) {
		ms.tid = ct_current_tid();
		ct_record_raw(&ms, sizeof ms);
	}
	if (ok && !atomic_exchange_explicit(&ct_ms_atexit_set, 1, memory_order_relaxed)) {
		/* registered after the CUDA runtime's own handlers: it runs before they tear down */
		ct_ms_pid = getpid();
		atexit(ct_memsample_at_exit);
	}
	if (ok || (why == CT_MEMSAMPLE_FIRST &&
		   atomic_fetch_add_explicit(&ct_ms_first_misses, 1, memory_order_relaxed) + 1 >= CT_MS_FIRST_TRIES))
		atomic_store_explicit(&ct_memsample_first_done, 1, memory_order_relaxed);
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
