/* Unit tests of the analysis model, symbolization and reports. */
#define _GNU_SOURCE
#include <check.h>
#include <link.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../analyzer/gate.h"
#include "../../analyzer/json.h"
#include "../../analyzer/marks.h"
#include "../../analyzer/model.h"
#include "../../analyzer/report.h"
#include "../../analyzer/suppress.h"
#include "../../analyzer/symbols.h"
#include "dumpgen.h"
#include "modelload.h"

static struct ct_model *load(const struct dg *g)
{
	return tm_load(g, NULL, NULL);
}

static void unload(struct ct_model *m)
{
	tm_unload(m);
}

static void ev(struct dg *g, uint64_t ts, uint8_t op, uint8_t kind, uint16_t api, uint64_t ptr,
	       uint64_t size, uint32_t tid, uint32_t stack, int16_t device, int32_t result)
{
	struct dg_ev e = {.ts = ts, .dur = 10, .ptr = ptr, .size = size, .tid = tid,
			  .stack_id = stack, .api = api, .op = op, .kind = kind, .device = device,
			  .result = result};
	dg_event(g, &e);
}

static const struct ct_leak *find_leak(const struct ct_model *m, uint32_t stack, uint8_t kind,
				       int reason_op)
{
	for (size_t i = 0; i < m->nleaks; i++)
		if (m->leaks[i].stack_id == stack && m->leaks[i].kind == kind &&
		    m->leaks[i].reason_op == reason_op)
			return &m->leaks[i];
	return NULL;
}

/* ---- model ----------------------------------------------------------------------------------- */

START_TEST(counts_peak_and_leaks)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 1234, 1, 1000, (const char *[]){"argv=prog", NULL});
	dg_alloc(&g, 2000, 0x1000, 1000, 1);
	dg_alloc(&g, 3000, 0x2000, 2000, 2);
	dg_alloc(&g, 4000, 0x3000, 4000, 1); /* peak: 7000 at 4000 */
	dg_free(&g, 5000, 0x2000);
	dg_alloc(&g, 6000, 0x4000, 500, 2);
	dg_free(&g, 7000, 0x1000);
	dg_end(&g, 8000);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->allocations, 4);
	ck_assert_uint_eq(m->frees, 2);
	ck_assert_uint_eq(m->peak_bytes, 7000);
	ck_assert_uint_eq(m->peak_ts, 4000);
	ck_assert_uint_eq(m->leak_count, 2);
	ck_assert_uint_eq(m->leak_bytes, 4500);
	ck_assert_int_eq(m->end_seen, 1);
	ck_assert_uint_eq(ct_model_duration_ns(m), 7000);
	const struct ct_leak *l1 = find_leak(m, 1, CT_KIND_DEVICE, 0);
	const struct ct_leak *l2 = find_leak(m, 2, CT_KIND_DEVICE, 0);
	ck_assert_ptr_nonnull(l1);
	ck_assert_ptr_nonnull(l2);
	ck_assert_uint_eq(l1->count, 1);
	ck_assert_uint_eq(l1->bytes, 4000);
	ck_assert_uint_eq(l2->bytes, 500);
	/* the live set at the peak, by site */
	uint64_t c, b, total = 0;
	for (size_t i = 0; i < m->nsites; i++) {
		ct_site_at_peak(m, &m->sites[i], &c, &b);
		if (m->sites[i].stack_id == 1) {
			ck_assert_uint_eq(c, 2);
			ck_assert_uint_eq(b, 5000);
		} else {
			ck_assert_uint_eq(c, 1);
			ck_assert_uint_eq(b, 2000);
		}
		total += b;
	}
	ck_assert_uint_eq(total, m->peak_bytes);
	const struct ct_kd_stats *k = ct_model_kd(m, CT_KIND_DEVICE, 0);
	ck_assert_ptr_nonnull(k);
	ck_assert_uint_eq(k->allocations, 4);
	ck_assert_uint_eq(k->frees, 2);
	ck_assert_uint_eq(k->bytes_allocated, 7500);
	ck_assert_uint_eq(k->peak_bytes, 7000);
	ck_assert_uint_eq(k->live_bytes, 4500);
	ck_assert_uint_eq(m->api[CT_API_cudaMalloc].calls, 4);
	ck_assert_uint_eq(m->api[CT_API_cudaMalloc].bytes, 7500);
	ck_assert_uint_eq(m->api[CT_API_cudaMalloc].time_ns, 400);
	ck_assert_uint_eq(m->api[CT_API_cudaFree].calls, 2);
	ck_assert_uint_eq(m->api[CT_API_cudaFree].bytes, 3000);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(failed_calls_never_allocate)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	ev(&g, 10, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x1000, 1 << 20, 1, 0, 0, 2);
	ev(&g, 20, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x2000, 64, 1, 0, 0, 0);
	ev(&g, 30, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x2000, 0, 1, 0, 0, 1);
	ev(&g, 40, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x1000, 0, 1, 0, 0, 0);
	ev(&g, 50, CT_OP_DEVICE_RESET, CT_KIND_NONE, CT_API_cudaDeviceReset, 0, 0, 1, 0, 0, 3);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->allocations, 1);
	ck_assert_uint_eq(m->failed_calls, 3);
	ck_assert_uint_eq(m->api[CT_API_cudaMalloc].failures, 1);
	ck_assert_uint_eq(m->api[CT_API_cudaFree].failures, 1);
	ck_assert_uint_eq(m->api[CT_API_cudaDeviceReset].failures, 1);
	ck_assert_uint_eq(m->unmatched_frees, 1); /* the free of the failed allocation */
	ck_assert_uint_eq(m->peak_bytes, 64);
	ck_assert(ct_model_is_live(m, CT_KIND_DEVICE, 0x2000, NULL));
	ck_assert_uint_eq(m->leak_count, 1);
	ck_assert_uint_eq(m->leak_bytes, 64);
	ck_assert_int_eq(m->end_seen, 0);
	unload(m);
	dg_release(&g);
}
END_TEST

/*
 * Thread 1 frees P at t=100, thread 2 gets P again at t=105; the writer
 * copied thread 2's ring first, so the allocation comes first in the file.
 */
START_TEST(free_realloc_across_threads)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_batch(&g, 10, 0);
	ev(&g, 50, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xa000, 100, 1, 1, 0, 0);
	dg_batch(&g, 90, 1);
	ev(&g, 105, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xa000, 300, 2, 2, 0, 0);
	ev(&g, 100, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0xa000, 0, 1, 0, 0, 0);
	dg_batch(&g, 200, 2);
	ev(&g, 210, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0xa000, 0, 2, 0, 0, 0);
	ev(&g, 220, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xa000, 7, 1, 1, 0, 0);
	dg_end(&g, 300);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->allocations, 3);
	ck_assert_uint_eq(m->frees, 2);
	ck_assert_uint_eq(m->double_allocs, 0);
	ck_assert_uint_eq(m->unmatched_frees, 0);
	ck_assert_uint_eq(m->peak_bytes, 300);
	uint64_t sz;
	ck_assert(ct_model_is_live(m, CT_KIND_DEVICE, 0xa000, &sz));
	ck_assert_uint_eq(sz, 7);
	ck_assert_uint_eq(m->leak_count, 1);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(device_reset_checkpoint)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	ev(&g, 10, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x1000, 100, 1, 1, 0, 0);
	ev(&g, 11, CT_OP_ALLOC, CT_KIND_HOST_PINNED, CT_API_cudaMallocHost, 0x7000, 50, 1, 2, 0, 0);
	ev(&g, 12, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x2000, 200, 1, 1, 1, 0);
	ev(&g, 13, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x3000, 400, 1, 1, 0, 0);
	ev(&g, 20, CT_OP_DEVICE_RESET, CT_KIND_NONE, CT_API_cudaDeviceReset, 0, 0, 1, 0, 0, 0);
	ev(&g, 30, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x1000, 0, 1, 0, 0, 0);
	ev(&g, 40, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x1000, 8, 1, 3, 0, 0);
	ev(&g, 50, CT_OP_CTX_DESTROY, CT_KIND_NONE, CT_API_cuCtxDestroy_v2, 0, 0, 1, 0, 1, 0);
	dg_end(&g, 60);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->unmatched_frees, 1); /* 0x1000 died at the reset */
	ck_assert_uint_eq(m->reset_leak_count, 4);
	const struct ct_leak *l = find_leak(m, 1, CT_KIND_DEVICE, CT_OP_DEVICE_RESET);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(l->count, 2);
	ck_assert_uint_eq(l->bytes, 500);
	char buf[64];
	ck_assert_str_eq(ct_leak_reason(l, buf, sizeof buf), "live at cudaDeviceReset");
	l = find_leak(m, 2, CT_KIND_HOST_PINNED, CT_OP_DEVICE_RESET);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(l->bytes, 50);
	l = find_leak(m, 1, CT_KIND_DEVICE, CT_OP_CTX_DESTROY);
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(l->device, 1);
	ck_assert_uint_eq(l->bytes, 200);
	ck_assert_str_eq(ct_leak_reason(l, buf, sizeof buf), "live at cuCtxDestroy_v2");
	l = find_leak(m, 3, CT_KIND_DEVICE, 0);
	ck_assert_ptr_nonnull(l);
	ck_assert_uint_eq(l->bytes, 8);
	ck_assert_str_eq(ct_leak_reason(l, buf, sizeof buf), "live at exit");
	ck_assert_uint_eq(m->leak_count, 5);
	ck_assert_uint_eq(m->leak_bytes, 758);
	ck_assert_uint_eq(ct_model_live_count(m), 1);
	ck_assert_uint_eq(m->peak_bytes, 700);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(vmm_namespaces)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	const uint64_t H = 0x10000000, VA = 0x10000000, MB2 = 2 << 20;
	ev(&g, 10, CT_OP_PHYS_CREATE, CT_KIND_VMM_PHYSICAL, CT_API_cuMemCreate, H, MB2, 1, 1, 0, 0);
	ev(&g, 11, CT_OP_PHYS_CREATE, CT_KIND_VMM_PHYSICAL, CT_API_cuMemCreate, H + 1, MB2, 1, 1, 0, 0);
	ev(&g, 12, CT_OP_VA_RESERVE, CT_KIND_VMM_RESERVED, CT_API_cuMemAddressReserve, VA, 2 * MB2, 1, 2, 0, 0);
	ev(&g, 13, CT_OP_MAP, CT_KIND_VMM_MAPPED, CT_API_cuMemMap, VA, MB2, 1, 3, 0, 0);
	ev(&g, 14, CT_OP_MAP, CT_KIND_VMM_MAPPED, CT_API_cuMemMap, VA + MB2, MB2, 1, 3, 0, 0);
	/* a device allocation elsewhere in the UVA space */
	ev(&g, 15, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cuMemAlloc_v2, 0x20000000, 100, 1, 4, 0, 0);
	ck_assert(1);
	ev(&g, 20, CT_OP_UNMAP, CT_KIND_VMM_MAPPED, CT_API_cuMemUnmap, VA, 2 * MB2, 1, 0, 0, 0);
	ev(&g, 21, CT_OP_PHYS_RELEASE, CT_KIND_VMM_PHYSICAL, CT_API_cuMemRelease, H, 0, 1, 0, 0, 0);
	ev(&g, 22, CT_OP_VA_FREE, CT_KIND_VMM_RESERVED, CT_API_cuMemAddressFree, VA, 2 * MB2, 1, 0, 0, 0);
	dg_end(&g, 30);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->allocations, 6);
	ck_assert_uint_eq(m->frees, 4);
	ck_assert_uint_eq(m->unmatched_frees, 0);
	ck_assert_uint_eq(m->double_allocs, 0);
	ck_assert_uint_eq(m->peak_bytes, 2 * MB2 + 100); /* physical + device, not mapped/reserved */
	ck_assert(ct_model_is_live(m, CT_KIND_VMM_PHYSICAL, H + 1, NULL));
	ck_assert(!ct_model_is_live(m, CT_KIND_VMM_PHYSICAL, H, NULL));
	ck_assert(!ct_model_is_live(m, CT_KIND_VMM_MAPPED, VA, NULL));
	ck_assert(!ct_model_is_live(m, CT_KIND_VMM_RESERVED, VA, NULL));
	ck_assert_uint_eq(m->kind_total[CT_KIND_VMM_MAPPED].peak_bytes, 2 * MB2);
	ck_assert_uint_eq(m->kind_total[CT_KIND_VMM_MAPPED].frees, 2);
	ck_assert_uint_eq(m->leak_count, 2);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(host_register_and_kind_inference)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	ev(&g, 10, CT_OP_ALLOC, CT_KIND_HOST_REGISTERED, CT_API_cudaHostRegister, 0x5000, 4096, 1, 1, 0, 0);
	/* cudaFree cannot free registered memory */
	ev(&g, 11, CT_OP_FREE, CT_KIND_NONE, CT_API_cudaFree, 0x5000, 0, 1, 0, 0, 0);
	ev(&g, 12, CT_OP_FREE, CT_KIND_NONE, CT_API_cudaHostUnregister, 0x5000, 0, 1, 0, 0, 0);
	/* kind left 0 by the writer: inferred from the API */
	ev(&g, 13, CT_OP_ALLOC, CT_KIND_NONE, CT_API_cudaMallocHost, 0x6000, 10, 1, 1, 0, 0);
	ev(&g, 14, CT_OP_ALLOC, CT_KIND_NONE, CT_API_cuMemAllocManaged, 0x7000, 20, 1, 1, 0, 0);
	ev(&g, 15, CT_OP_ALLOC, CT_KIND_NONE, CT_API_cudaMallocAsync, 0x8000, 30, 1, 1, 0, 0);
	/* double allocation: the first block's free was never seen */
	ev(&g, 16, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x8000, 40, 1, 1, 0, 0);
	/* free(NULL) is a no-op, free of an unknown pointer is counted */
	ev(&g, 17, CT_OP_FREE, CT_KIND_NONE, CT_API_cudaFree, 0, 0, 1, 0, 0, 0);
	ev(&g, 18, CT_OP_FREE, CT_KIND_NONE, CT_API_cudaFree, 0x9999, 0, 1, 0, 0, 0);
	ev(&g, 19, CT_OP_FREE, CT_KIND_NONE, CT_API_cudaFreeHost, 0x6000, 0, 1, 0, 0, 0);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->unmatched_frees, 2);
	ck_assert_uint_eq(m->double_allocs, 1);
	ck_assert_uint_eq(m->kind_total[CT_KIND_HOST_REGISTERED].frees, 1);
	ck_assert_uint_eq(m->kind_total[CT_KIND_HOST_PINNED].allocations, 1);
	ck_assert_uint_eq(m->kind_total[CT_KIND_HOST_PINNED].frees, 1);
	ck_assert_uint_eq(m->kind_total[CT_KIND_MANAGED].allocations, 1);
	ck_assert_uint_eq(m->kind_total[CT_KIND_DEVICE].allocations, 2);
	ck_assert_uint_eq(m->kind_total[CT_KIND_DEVICE].live_bytes, 40);
	ck_assert_uint_eq(m->peak_bytes, 40);
	ck_assert_uint_eq(m->leak_count, 2); /* managed 20 + device 40 */
	ck_assert_uint_eq(m->leak_bytes, 60);
	unload(m);
	dg_release(&g);
}
END_TEST

/* The versioned snapshot against a naive copy of the live set at each new peak. */
START_TEST(peak_snapshot_random)
{
	enum { NPTR = 64, NSTACK = 5, STEPS = 20000 };
	srand(12345);
	for (int round = 0; round < 20; round++) {
		struct ct_model m;
		ct_model_init(&m);
		uint64_t live_size[NPTR] = {0};
		uint32_t live_site[NPTR];
		/* naive: bytes per (stack, kind index, device) */
		uint64_t cur[NSTACK][2][2] = {{{0}}}, at_peak[NSTACK][2][2] = {{{0}}};
		uint64_t dev = 0, peak = 0;
		static const uint8_t kinds[2] = {CT_KIND_DEVICE, CT_KIND_VMM_PHYSICAL};
		for (int s = 0; s < STEPS; s++) {
			int p = rand() % NPTR;
			struct ct_rec_event e;
			memset(&e, 0, sizeof e);
			e.ts_ns = 1000 + (uint64_t)s;
			e.tid = 1;
			if (!live_size[p]) {
				int st = rand() % NSTACK, ki = rand() % 2, d = rand() % 2;
				uint64_t sz = 1 + (uint64_t)(rand() % 1000);
				e.op = ki ? CT_OP_PHYS_CREATE : CT_OP_ALLOC;
				e.kind = kinds[ki];
				e.api = ki ? CT_API_cuMemCreate : CT_API_cudaMalloc;
				e.ptr = 0x1000 + (uint64_t)p * 0x1000;
				e.size = sz;
				e.stack_id = (uint32_t)st + 1;
				e.device = (int16_t)d;
				live_size[p] = sz;
				live_site[p] = (uint32_t)(st * 4 + ki * 2 + d);
				cur[st][ki][d] += sz;
				dev += sz;
				if (dev > peak) {
					peak = dev;
					memcpy(at_peak, cur, sizeof cur);
				}
			} else {
				uint32_t x = live_site[p];
				int st = (int)x / 4, ki = (int)(x / 2) % 2, d = (int)x % 2;
				e.op = ki ? CT_OP_PHYS_RELEASE : CT_OP_FREE;
				e.kind = kinds[ki];
				e.api = ki ? CT_API_cuMemRelease : CT_API_cudaFree;
				e.ptr = 0x1000 + (uint64_t)p * 0x1000;
				cur[st][ki][d] -= live_size[p];
				dev -= live_size[p];
				live_size[p] = 0;
			}
			ct_model_event(&m, &e);
		}
		ck_assert_uint_eq(m.peak_bytes, peak);
		uint64_t total = 0;
		for (size_t i = 0; i < m.nsites; i++) {
			const struct ct_site *si = &m.sites[i];
			uint64_t c, b;
			ct_site_at_peak(&m, si, &c, &b);
			int ki = si->kind == CT_KIND_VMM_PHYSICAL;
			ck_assert_uint_eq(b, at_peak[si->stack_id - 1][ki][si->device]);
			total += b;
		}
		ck_assert_uint_eq(total, peak);
		ct_model_finish(&m);
		ct_model_free(&m);
	}
}
END_TEST

START_TEST(many_events_bounded_memory)
{
	struct ct_model m;
	ct_model_init(&m);
	struct ct_rec_event e;
	memset(&e, 0, sizeof e);
	e.kind = CT_KIND_DEVICE;
	e.api = CT_API_cudaMalloc;
	e.stack_id = 1;
	for (uint64_t i = 0; i < 200000; i++) {
		e.ts_ns = 1000 + i * 2;
		e.op = CT_OP_ALLOC;
		e.ptr = 0x100000 + (i % 1000) * 256;
		e.size = 256;
		ct_model_event(&m, &e);
		e.ts_ns++;
		e.op = CT_OP_FREE;
		ct_model_event(&m, &e);
	}
	ck_assert_uint_eq(m.allocations, 200000);
	ck_assert_uint_eq(m.frees, 200000);
	ck_assert_uint_eq(ct_model_live_count(&m), 0);
	ck_assert_uint_eq(m.nsites, 1);
	ck_assert_uint_le(m.live_mask + 1, 1024);
	ck_assert_uint_eq(m.peak_bytes, 256);
	ct_model_finish(&m);
	ck_assert_uint_eq(m.leak_count, 0);
	ct_model_free(&m);
}
END_TEST

/* ---- timeline -------------------------------------------------------------------------------------- */

START_TEST(timeline_buckets)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	const uint64_t T0 = 1000000, MS = 1000000;
	dg_process(&g, 1, 0, T0, NULL);
	dg_alloc(&g, T0 + 15 * MS, 0x1000, 1 << 20, 1);
	dg_alloc(&g, T0 + 25 * MS, 0x2000, 1 << 20, 1);
	dg_free(&g, T0 + 35 * MS, 0x1000);
	dg_free(&g, T0 + 45 * MS, 0x2000);
	ev(&g, T0 + 52 * MS, CT_OP_ALLOC, CT_KIND_HOST_PINNED, CT_API_cudaMallocHost, 0x9000, 10, 1, 2, 0, 0);
	ev(&g, T0 + 100 * MS - 1, CT_OP_DEVICE_SYNC, 0, CT_API_cudaDeviceSynchronize, 0, 0, 1, 0, 0, 0);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->tl.nseries, 2);
	ck_assert_uint_eq(m->tl.t0, T0);
	uint64_t v[10];
	uint64_t bns = ct_tl_resample(&m->tl, 0, 10, v);
	/* whole fine buckets: a little over 10 ms each, covering the 100 ms */
	ck_assert_uint_ge(bns, 10 * MS);
	ck_assert_uint_le(bns, 10 * MS + MS / 2);
	ck_assert_uint_eq(bns % m->tl.width, 0);
	ck_assert_uint_eq(m->tl.series[0].kind, CT_KIND_DEVICE);
	static const uint64_t want[10] = {0, 1 << 20, 2 << 20, 2 << 20, 1 << 20, 0, 0, 0, 0, 0};
	for (int i = 0; i < 10; i++)
		ck_assert_msg(v[i] == want[i], "bucket %d: %llu", i, (unsigned long long)v[i]);
	ct_tl_resample(&m->tl, 1, 10, v);
	ck_assert_uint_eq(v[4], 0);
	for (int i = 5; i < 10; i++)
		ck_assert_uint_eq(v[i], 10);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Ten seconds of events: the fine buckets merge many times; values stay right. */
START_TEST(timeline_long_range)
{
	struct ct_model m;
	ct_model_init(&m);
	struct ct_rec_event e;
	memset(&e, 0, sizeof e);
	e.kind = CT_KIND_DEVICE;
	e.api = CT_API_cudaMalloc;
	const uint64_t S = 1000000000ull;
	/* 1 KiB live from 0 to 10 s, +1 MiB during [4.05 s, 4.95 s) */
	e.op = CT_OP_ALLOC;
	e.ts_ns = 0 + 1;
	e.ptr = 0x1;
	e.size = 1024;
	ct_model_event(&m, &e);
	e.ts_ns = 4 * S + S / 20;
	e.ptr = 0x2;
	e.size = 1 << 20;
	ct_model_event(&m, &e);
	e.op = CT_OP_FREE;
	e.ts_ns = 5 * S - S / 20;
	ct_model_event(&m, &e);
	e.op = CT_OP_DEVICE_SYNC;
	e.ts_ns = 10 * S;
	ct_model_event(&m, &e);
	ct_model_finish(&m);
	uint64_t v[10];
	ct_tl_resample(&m.tl, 0, 10, v);
	for (int i = 0; i < 10; i++)
		ck_assert_msg(v[i] == (i == 4 ? (1u << 20) + 1024 : 1024), "bucket %d: %llu",
			      i, (unsigned long long)v[i]);
	ck_assert_uint_ge(m.tl.width, (10 * S) / CT_TL_FINE);
	ct_model_free(&m);
}
END_TEST

/* ---- symbols ---------------------------------------------------------------------------------------- */

__attribute__((noinline)) int ct_test_target_fn(int x);
__attribute__((noinline)) int ct_test_target_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

struct self_mod {
	uint64_t base, lo, hi;
	int found;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_mod *sm = data;
	(void)size;
	if (sm->found)
		return 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;
	if (f >= lo && f < hi) {
		sm->base = info->dlpi_addr;
		sm->lo = lo;
		sm->hi = hi;
		sm->found = 1;
	}
	return 0;
}

START_TEST(symbolize_self)
{
	struct self_mod sm = {0};
	dl_iterate_phdr(phdr_cb, &sm);
	ck_assert(sm.found);
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = 0;
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;

	struct ct_symtab *st = ct_symtab_new();
	ct_symtab_add_module(st, sm.base, sm.lo, sm.hi, NULL, 0, exe, strlen(exe) + 1);
	ct_symtab_add_module(st, 0x7000, 0x7000, 0x8000, NULL, 0, "/opt/x/libcumtrace.so",
			     sizeof "/opt/x/libcumtrace.so");
	/* innermost: the shim (dropped); then two frames in the target; then no module */
	uint64_t ips[4] = {0x7100, f + 2, f + 3, 0x10};
	ct_symtab_add_stack(st, 1, 4, ips);
	struct ct_frame fr[8];
	size_t k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 3);
	ck_assert_ptr_nonnull(fr[0].function);
	ck_assert_str_eq(fr[0].function, "ct_test_target_fn");
	ck_assert_ptr_nonnull(fr[0].file);
	ck_assert_ptr_nonnull(strstr(fr[0].file, "test_analyzer.c"));
	ck_assert_uint_gt(fr[0].line, 0);
	ck_assert_uint_eq(fr[0].offset, f + 2 - sm.base);
	ck_assert_str_eq(fr[1].function, "ct_test_target_fn");
	ck_assert_ptr_null(fr[2].module);
	ck_assert_uint_eq(fr[2].ip, 0x10);
	/* cached: the same again */
	k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 3);
	ck_assert_str_eq(fr[0].function, "ct_test_target_fn");
	ct_symtab_free(st);

	/* a different build id on disk: no symbols, module+offset only */
	st = ct_symtab_new();
	ct_symtab_add_module(st, sm.base, sm.lo, sm.hi, (const uint8_t *)"\xde\xad\xbe\xef", 4, exe,
			     strlen(exe) + 1);
	ct_symtab_add_stack(st, 1, 1, &ips[1]);
	k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 1);
	ck_assert_ptr_null(fr[0].function);
	ck_assert_int_eq(fr[0].build_id_mismatch, 1);
	ck_assert_str_eq(fr[0].build_id, "deadbeef");
	ct_symtab_free(st);

	/* symbolization off, missing file, and a range reused after dlclose */
	st = ct_symtab_new();
	ct_symtab_add_module(st, 0x100000, 0x100000, 0x200000, NULL, 0, "/nonexistent/liba.so",
			     sizeof "/nonexistent/liba.so");
	uint64_t ip = 0x100123;
	ct_symtab_add_stack(st, 1, 1, &ip);
	ct_symtab_add_module(st, 0x100000, 0x100000, 0x200000, NULL, 0, "/nonexistent/libb.so",
			     sizeof "/nonexistent/libb.so");
	ct_symtab_add_stack(st, 2, 1, &ip);
	k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 1);
	ck_assert_str_eq(fr[0].module_name, "liba.so");
	ck_assert_int_eq(fr[0].module_missing, 1);
	ck_assert_uint_eq(fr[0].offset, 0x123);
	ct_symtab_set_symbolize(st, 0);
	k = ct_symtab_resolve(st, 2, fr, 8);
	ck_assert_str_eq(fr[0].module_name, "libb.so");
	ck_assert_ptr_null(fr[0].function);
	ck_assert_uint_eq(ct_symtab_resolve(st, 99, fr, 8), 0);
	ct_symtab_free(st);
}
END_TEST

START_TEST(demangle)
{
	char *d = ct_demangle("_ZN3foo3barEi");
	if (d) /* only when libstdc++ can be found */
		ck_assert_str_eq(d, "foo::bar(int)");
	free(d);
	ck_assert_ptr_null(ct_demangle("main"));
	ck_assert_ptr_null(ct_demangle(NULL));
}
END_TEST

/* ---- JSON and reports -------------------------------------------------------------------------------- */

static char *render_escape(const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ct_json_escape(f, s, n);
	fclose(f);
	return buf;
}

START_TEST(json_escaping)
{
	char *s = render_escape("a\"b\\c\n\t\x01\x7f", 9);
	ck_assert_str_eq(s, "\"a\\\"b\\\\c\\n\\t\\u0001\\u007f\"");
	free(s);
	s = render_escape("caf\xc3\xa9 \xff\xc3(", 9);
	ck_assert_str_eq(s, "\"caf\xc3\xa9 \\u00ff\\u00c3(\"");
	free(s);
	/* overlong encoding and a surrogate are not valid UTF-8 */
	s = render_escape("\xc0\xaf\xed\xa0\x80", 5);
	ck_assert_str_eq(s, "\"\\u00c0\\u00af\\u00ed\\u00a0\\u0080\"");
	free(s);
	s = render_escape("x\0y", 3);
	ck_assert_str_eq(s, "\"x\\u0000y\"");
	free(s);
}
END_TEST

/* A deterministic dump that exercises every section. */
static void golden_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 4242, 1, 1000000,
		   (const char *[]){"version=0.1.0", "host=testhost", "exe=/usr/bin/prog",
				    "cwd=/work", "argv=prog", "argv=--say \"hi\"\n", NULL});
	dg_module(g, 0x400000, 0x400000, 0x480000, (const uint8_t *)"\xab\xcd", 2, "/usr/bin/prog");
	dg_module(g, 0x7f0000000000, 0x7f0000000000, 0x7f0000200000, NULL, 0,
		  "/lib/x86_64-linux-gnu/libc.so.6");
	dg_module(g, 0x7f1000000000, 0x7f1000000000, 0x7f1000100000, NULL, 0,
		  "/opt/cumtrace/lib/libcumtrace.so");
	uint64_t s1[3] = {0x401234, 0x401500, 0x7f00000271ca};
	uint64_t s2[3] = {0x7f1000000100, 0x402000, 0x7f00000271ca};
	dg_stack(g, 1, 3, s1);
	dg_stack(g, 2, 3, s2);
	const uint64_t T = 1000000, MS = 1000000;
	dg_batch(g, T, 0);
	dg_alloc(g, T + 1 * MS, 0x10000, 8 << 20, 1);
	dg_alloc(g, T + 2 * MS, 0x20000, 4 << 20, 2);
	ev(g, T + 3 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0, 1 << 30, 1, 1, 0, 2);
	ev(g, T + 4 * MS, CT_OP_ALLOC, CT_KIND_HOST_PINNED, CT_API_cudaMallocHost, 0x900000, 1 << 16, 1, 2, 0, 0);
	dg_batch(g, T + 5 * MS, 1);
	dg_alloc(g, T + 6 * MS, 0x30000, 2 << 20, 1);
	dg_free(g, T + 8 * MS, 0x20000);
	ev(g, T + 9 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x40000, 1 << 20, 2, 2, 1, 0);
	dg_drops(g, T + 9 * MS, 3, 2);
	dg_end(g, T + 10 * MS);
}

static char *render(struct ct_model *m, int cmd, int format, size_t top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ct_report_opts o = {.cmd = cmd, .format = format, .buckets = 20, .top = top,
				   .tool_version = "test"};
	struct ct_model *ms[1] = {m};
	ct_report(f, &o, ms, 1);
	fclose(f);
	return buf;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * tests/golden: $CT_GOLDEN_DIR, else next to this source file (when run from
 * the repository root), else BUILD/tests/unit/../../../tests/golden.
 */
static char *golden_dir(void)
{
	const char *env = getenv("CT_GOLDEN_DIR");
	if (env)
		return strdup(env);
	char *out = malloc(4200);
	char *d = strdup(__FILE__);
	char *slash = strrchr(d, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(d, ".");
	snprintf(out, 4200, "%s/../golden", d);
	free(d);
	if (is_dir(out))
		return out;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		for (int i = 0; i < 4; i++) {
			slash = strrchr(exe, '/');
			if (slash)
				*slash = 0;
		}
		snprintf(out, 4200, "%s/tests/golden", exe);
	}
	return out;
}

static void check_golden(const char *name, const char *text)
{
	char *dir = golden_dir();
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	free(dir);
	if (getenv("CT_GOLDEN_UPDATE")) {
		FILE *f = fopen(path, "w");
		ck_assert_msg(f != NULL, "cannot write %s", path);
		fputs(text, f);
		fclose(f);
		return;
	}
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "missing golden file %s (CT_GOLDEN_UPDATE=1 creates it)", path);
	char *want = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			want = realloc(want, cap);
		}
		size_t k = fread(want + len, 1, 4096, f);
		len += k;
		if (k == 0)
			break;
	}
	want[len] = 0;
	fclose(f);
	if (strcmp(want, text)) {
		char got[4200];
		snprintf(got, sizeof got, "%s.got", path);
		FILE *g = fopen(got, "w");
		if (g) {
			fputs(text, g);
			fclose(g);
		}
		ck_abort_msg("%s differs from the output (written to %s)", path, got);
	}
	free(want);
}

START_TEST(golden_reports)
{
	struct dg g;
	golden_dump(&g);
	struct ct_model *m = load(&g);
	m->path = strdup("golden.bin");
	ck_assert_uint_eq(m->allocations, 5);
	ck_assert_uint_eq(m->failed_calls, 1);
	ck_assert_uint_eq(m->dropped, 3);
	ck_assert_uint_eq(m->peak_bytes, (8 << 20) + (4 << 20) + (2 << 20));
	static const struct {
		const char *name;
		int cmd, format;
		size_t top;
	} cases[] = {
		{"summary.txt", CT_CMD_SUMMARY, CT_FMT_TEXT, 20},
		{"leaks.txt", CT_CMD_LEAKS, CT_FMT_TEXT, 20},
		{"leaks-top1.txt", CT_CMD_LEAKS, CT_FMT_TEXT, 1},
		{"peak.txt", CT_CMD_PEAK, CT_FMT_TEXT, 20},
		{"timeline.txt", CT_CMD_TIMELINE, CT_FMT_TEXT, 20},
		{"leaks.json", CT_CMD_LEAKS, CT_FMT_JSON, 20},
		{"timeline.csv", CT_CMD_TIMELINE, CT_FMT_CSV, 20},
		{"leaks.csv", CT_CMD_LEAKS, CT_FMT_CSV, 20},
		{"peak.csv", CT_CMD_PEAK, CT_FMT_CSV, 20},
		{"summary.csv", CT_CMD_SUMMARY, CT_FMT_CSV, 20},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out = render(m, cases[i].cmd, cases[i].format, cases[i].top);
		check_golden(cases[i].name, out);
		free(out);
	}
	/* the libcumtrace frame is gone, the leak header is as documented */
	char *out = render(m, CT_CMD_LEAKS, CT_FMT_TEXT, 20);
	ck_assert_ptr_null(strstr(out, "libcumtrace"));
	ck_assert_ptr_nonnull(strstr(out, "cumtrace leaks: 4 allocations, 11.1 MiB (11599872 bytes) not freed in pid 4242"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(reports_of_truncated_and_empty)
{
	struct dg g;
	golden_dump(&g);
	for (size_t len = 16; len <= g.n; len += 40) {
		struct ct_model m;
		ct_model_init(&m);
		ct_symtab_set_symbolize(m.syms, 0);
		ck_assert_int_ne(ct_model_load_mem(&m, g.p, len, NULL), CT_READ_ERROR);
		for (int c = 0; c < CT_CMD_COUNT; c++)
			for (int f = 0; f < 3; f++)
				free(render(&m, c, f, 0));
		ct_model_free(&m);
	}
	dg_release(&g);
}
END_TEST


static struct ct_model *small_model(uint32_t pid, uint64_t leak_size)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, pid, 1, 1000, (const char *[]){"argv=p", NULL});
	dg_alloc(&g, 2000, 0x1000, leak_size, 1);
	dg_alloc(&g, 3000, 0x2000, 10, 1);
	dg_free(&g, 4000, 0x2000);
	dg_end(&g, 5000);
	struct ct_model *m = load(&g);
	dg_release(&g);
	return m;
}

START_TEST(multi_dump_totals)
{
	struct ct_model *ms[2] = {small_model(100, 1000), small_model(200, 3000)};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .format = CT_FMT_JSON, .buckets = 5,
				   .top = 0, .tool_version = "t"};
	ct_report(f, &o, ms, 2);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\n  \"allocations\": 4,\n  \"frees\": 2,"));
	ck_assert_ptr_nonnull(strstr(buf, "\"leaks\": {\n    \"count\": 2,\n    \"bytes\": 4000,"));
	/* the larger leak (pid 200) first */
	char *a = strstr(buf, "\"pid\": 200,\n        \"count\": 1,\n        \"bytes\": 3000");
	char *b = strstr(buf, "\"pid\": 100,\n        \"count\": 1,\n        \"bytes\": 1000");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert(a < b);
	ck_assert_uint_eq(ct_report_leak_count(ms, 2), 2);
	free(buf);
	/* text: one section per dump */
	buf = NULL;
	f = open_memstream(&buf, &len);
	o.format = CT_FMT_TEXT;
	ct_report(f, &o, ms, 2);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "not freed in pid 100 (p)"));
	ck_assert_ptr_nonnull(strstr(buf, "not freed in pid 200 (p)"));
	free(buf);
	unload(ms[0]);
	unload(ms[1]);
}
END_TEST

/* ---- leak classes, suppressions, growth, baselines: golden reports --------------------------------- */

/*
 * A dump with a leak of every class: a user leak, the caches of libraries
 * named like PyTorch's, cuBLAS's and NCCL's, an allocation live at a device
 * reset on device 1, and a site that grows by 4 KiB in each of 10 steps
 * ("step" instants); the last two have Python frames (train.py). The second
 * dump ("now") is the same program in another run: other load addresses,
 * stack and string ids and a line number changed, no user leak, a new leak
 * site and a bigger cuBLAS workspace.
 */
static void classes_dump(struct dg *g, int now)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, now ? 6262 : 5151, 1, 1000000,
		   (const char *[]){"version=0.1.0", "host=testhost", "exe=/work/prog", "cwd=/work",
				    "argv=prog", NULL});
	uint64_t pb = now ? 0x560000000000 : 0x550000000000, lb = now ? 0x7f5000000000 : 0x7f0000000000;
	dg_module(g, pb, pb, pb + 0x100000, NULL, 0, "/work/prog");
	dg_module(g, lb, lb, lb + 0x200000, NULL, 0, "/lib/x86_64-linux-gnu/libc.so.6");
	dg_module(g, lb + 0x1000000, lb + 0x1000000, lb + 0x1100000, NULL, 0,
		  "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so");
	dg_module(g, lb + 0x2000000, lb + 0x2000000, lb + 0x2100000, NULL, 0,
		  "/usr/lib/x86_64-linux-gnu/libcublas.so.13");
	dg_module(g, lb + 0x3000000, lb + 0x3000000, lb + 0x3100000, NULL, 0, "/opt/nccl/lib/libnccl.so.2");
	dg_module(g, lb + 0x4000000, lb + 0x4000000, lb + 0x4400000, NULL, 0, "/usr/lib/libpython3.12.so.1.0");
	uint64_t libc = lb + 0x271ca, interp = lb + 0x4000500;
	uint64_t s_user[3] = {pb + 0x1000, pb + 0x1500, libc};
	uint64_t s_torch[3] = {lb + 0x1000100, interp, libc};
	uint64_t s_cublas[3] = {lb + 0x2000100, pb + 0x2100, libc};
	uint64_t s_nccl[3] = {lb + 0x3000100, pb + 0x2200, libc};
	uint64_t s_reset[3] = {pb + 0x3000, pb + 0x1500, libc};
	uint64_t s_grow[3] = {pb + 0x4000, interp, libc};
	uint64_t s_new[3] = {pb + 0x5000, pb + 0x1500, libc};
	uint32_t id = now ? 100 : 1; /* stack ids differ between runs */
	dg_stack(g, id + 0, 3, s_user);
	dg_stack(g, id + 1, 3, s_torch);
	dg_stack(g, id + 2, 3, s_cublas);
	dg_stack(g, id + 3, 3, s_nccl);
	dg_stack(g, id + 4, 3, s_reset);
	dg_stack(g, id + 5, 3, s_grow);
	dg_stack(g, id + 6, 3, s_new);
	/* Python frames of the torch cache and the growing site (other string ids in each run) */
	uint32_t py = now ? 50 : 1;
	dg_pystring(g, py + 0, "/work/train.py");
	dg_pystring(g, py + 1, "forward");
	dg_pystring(g, py + 2, "train_step");
	dg_pystring(g, py + 3, "<module>");
	struct ct_pyframe fwd[2] = {{py + 0, py + 1, now ? 31 : 30}, {py + 0, py + 3, 50}};
	struct ct_pyframe stp[2] = {{py + 0, py + 2, 25}, {py + 0, py + 3, 52}};
	dg_pystack(g, py + 10, 2, fwd);
	dg_pystack(g, py + 11, 2, stp);
	const uint64_t T = 2000000, MS = 1000000;
	if (!now)
		dg_alloc(g, T + 1 * MS, 0x10000000, 3 << 20, id + 0);
	else
		dg_alloc(g, T + 1 * MS, 0x10000000, 1 << 20, id + 6);
	dg_alloc_py(g, T + 2 * MS, 0x20000000, 8 << 20, id + 1, py + 10);
	dg_alloc(g, T + 3 * MS, 0x30000000, now ? 8 << 20 : 4 << 20, id + 2);
	struct dg_ev nccl = {.ts = T + 4 * MS, .dur = 10, .ptr = 0x40000000, .size = 6 << 20, .tid = 1,
			     .stack_id = id + 3, .api = CT_API_cuMemAlloc_v2, .op = CT_OP_ALLOC,
			     .kind = CT_KIND_DEVICE};
	dg_event(g, &nccl);
	struct dg_ev dev1 = {.ts = T + 5 * MS, .dur = 10, .ptr = 0x50000000, .size = 1 << 20, .tid = 1,
			     .stack_id = id + 4, .api = CT_API_cudaMalloc, .op = CT_OP_ALLOC,
			     .kind = CT_KIND_DEVICE, .device = 1};
	dg_event(g, &dev1);
	struct dg_ev reset = {.ts = T + 6 * MS, .dur = 10, .tid = 1, .api = CT_API_cudaDeviceReset,
			      .op = CT_OP_DEVICE_RESET, .device = 1};
	dg_event(g, &reset);
	for (int s = 0; s <= 10; s++) {
		dg_mark(g, T + (10 + (uint64_t)s) * MS, 1, "step");
		if (s < 10)
			dg_alloc_py(g, T + (10 + (uint64_t)s) * MS + 100, 0x60000000 + (uint64_t)s * 0x10000,
				    4096, id + 5, py + 11);
	}
	for (int s = 0; s < 10; s++)
		dg_free(g, T + 30 * MS + (uint64_t)s, 0x60000000 + (uint64_t)s * 0x10000);
	dg_end(g, T + 40 * MS);
}

static char *render_opts(const struct ct_report_opts *o, struct ct_model **ms, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ct_report(f, o, ms, n);
	fclose(f);
	return buf;
}

static const char golden_supp[] = "# the NCCL buffers are expected\n"
				  "{\n   nccl-buffers\n   cumtrace:Leak\n   match-leak-kinds: cache\n"
				  "   obj:libnccl.so.*\n}\n"
				  "leak:never_matches_anything\n";

START_TEST(golden_leak_classes)
{
	struct dg g0, g1;
	classes_dump(&g0, 0);
	classes_dump(&g1, 1);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .format = CT_FMT_TEXT, .buckets = 20, .top = 20,
				   .tool_version = "test"};
	struct ct_model *base = tm_load(&g0, ct_report_attach, &o), *now = tm_load(&g1, ct_report_attach, &o);
	base->path = strdup("base.dump");
	now->path = strdup("now.dump");
	struct ct_suppressions *supp = ct_supp_new();
	char err[256];
	ck_assert_int_eq(ct_supp_load_text(supp, "golden.supp", golden_supp, strlen(golden_supp), err, sizeof err), 0);
	struct ct_model *one[1] = {base}, *two[2] = {base, now};
	static const struct {
		const char *name;
		int cmd, format;
		int supp, gen, baseline, gate; /* options */
		int both;		       /* both dumps */
	} cases[] = {
		{"classes.txt", CT_CMD_LEAKS, CT_FMT_TEXT, 0, 0, 0, 0, 0},
		{"classes.json", CT_CMD_LEAKS, CT_FMT_JSON, 0, 0, 0, 0, 0},
		{"classes.csv", CT_CMD_LEAKS, CT_FMT_CSV, 0, 0, 0, 0, 0},
		{"classes.junit.xml", CT_CMD_LEAKS, CT_FMT_JUNIT, 0, 0, 0, 0, 0},
		{"classes.sarif", CT_CMD_LEAKS, CT_FMT_SARIF, 0, 0, 0, 0, 0},
		{"classes-supp.txt", CT_CMD_LEAKS, CT_FMT_TEXT, 1, 1, 0, 0, 0},
		{"classes-supp.junit.xml", CT_CMD_LEAKS, CT_FMT_JUNIT, 1, 0, 0, 1, 0},
		{"classes-baseline.txt", CT_CMD_LEAKS, CT_FMT_TEXT, 0, 0, 1, 0, 0},
		{"classes-baseline.sarif", CT_CMD_LEAKS, CT_FMT_SARIF, 1, 0, 1, 1, 0},
		{"diff.txt", CT_CMD_DIFF, CT_FMT_TEXT, 0, 0, 0, 0, 1},
		{"diff.json", CT_CMD_DIFF, CT_FMT_JSON, 0, 0, 0, 0, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct ct_report_opts c = o;
		c.cmd = cases[i].cmd;
		c.format = cases[i].format;
		c.supp = cases[i].supp ? supp : NULL;
		c.gen_suppressions = cases[i].gen;
		if (cases[i].baseline) {
			/* the report of "now" with "base" as the baseline */
			c.baseline = base;
			one[0] = now;
		} else {
			one[0] = base;
		}
		if (cases[i].gate) {
			c.fail_on_leak = 1;
			c.fail_classes = CT_CLASS_ALL;
			c.have_max_peak_bytes = c.have_max_leak_bytes = 1;
			c.max_peak_bytes = 20 << 20;
			c.max_leak_bytes = 64 << 20;
		}
		char *out = render_opts(&c, cases[i].both ? two : one, cases[i].both ? 2 : 1);
		check_golden(cases[i].name, out);
		free(out);
	}
	/* the facts behind the files: "now" against "base" */
	one[0] = now;
	struct ct_assessment *a = ct_assess(&o, one, 1, base);
	ck_assert_uint_eq(a->nleak, 5);
	ck_assert_uint_eq(a->n, 6);
	ck_assert_uint_eq(a->cls[CT_CLASS_CACHE].sites, 3);
	ck_assert_uint_eq(a->cls[CT_CLASS_LEAKED].sites, 1);
	ck_assert_uint_eq(a->cls[CT_CLASS_TEARDOWN].sites, 1);
	ck_assert_uint_eq(a->cls[CT_CLASS_GROWTH].sites, 1);
	ck_assert_uint_eq(a->cls[CT_CLASS_GROWTH].bytes, 8 * 4096);
	/* in the baseline: the caches whose identity did not change, teardown, growth */
	ck_assert_uint_eq(a->baselined.sites, 5);
	ck_assert_uint_eq(a->failing.sites, 1);
	ct_assessment_free(a);
	ct_supp_free(supp);
	unload(base);
	unload(now);
	dg_release(&g0);
	dg_release(&g1);
}
END_TEST

/* ---- observers --------------------------------------------------------------------------------- */

/* What an observer saw, as one string: "a<ptr>" alloc, "f<ptr>/<how>" release, "m<name>" mark, "E" finish. */
struct obs_log {
	char s[512];
};

static void log_put(struct obs_log *l, const char *fmt, unsigned long long v, int how)
{
	size_t n = strlen(l->s);
	snprintf(l->s + n, sizeof l->s - n, fmt, v, how);
}

static void obs_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *e,
		      const struct ct_block *b)
{
	ck_assert_uint_eq(b->ptr, e->ptr);
	ck_assert(ct_model_is_live(m, e->kind, b->ptr, NULL));
	log_put(ctx, "a%llx ", b->ptr, 0);
}

static void obs_release(void *ctx, struct ct_model *m, const struct ct_rec_event *e,
			const struct ct_block *b, int how)
{
	(void)e;
	ck_assert(ct_model_is_live(m, CT_KIND_DEVICE, b->ptr, NULL)); /* not removed yet */
	log_put(ctx, "f%llx/%d ", b->ptr, how);
}

static void obs_mark(void *ctx, struct ct_model *m, const struct ct_mark *mk)
{
	struct obs_log *l = ctx;
	(void)m;
	size_t n = strlen(l->s);
	snprintf(l->s + n, sizeof l->s - n, "m%s ", mk->name);
}

static void obs_finish(void *ctx, struct ct_model *m)
{
	ck_assert_uint_eq(m->leak_count, 2); /* the reset's; live blocks are not leaks yet */
	log_put(ctx, "E%llu", (unsigned long long)ct_model_live_count(m), 0);
}

START_TEST(observers_see_the_pass_in_time_order)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=prog", NULL});
	dg_batch(&g, 1000, 0);
	/* marks are written ahead of the events around them (as the shim does) */
	dg_mark(&g, 2500, 1, "step1");
	dg_mark(&g, 1500, 2, "start");
	ev(&g, 2000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xa0, 16, 1, 0, 0, 0);
	ev(&g, 3000, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0xa0, 0, 1, 0, 0, 0);
	ev(&g, 4000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xb0, 32, 1, 0, 0, 0);
	ev(&g, 5000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xb0, 32, 1, 0, 0, 0);
	ev(&g, 6000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xc0, 8, 1, 0, 0, 0);
	ev(&g, 7000, CT_OP_DEVICE_RESET, CT_KIND_NONE, CT_API_cudaDeviceReset, 0, 0, 1, 0, 0, 0);
	dg_mark(&g, 9000, 1, "late");
	ev(&g, 8000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0xd0, 8, 1, 0, 0, 0);
	dg_batch(&g, 10000, 1);

	struct ct_model m;
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, 0);
	struct obs_log log = {""};
	struct ct_observer o = {.ctx = &log,
				.alloc = obs_alloc,
				.release = obs_release,
				.mark = obs_mark,
				.finish = obs_finish};
	ct_model_observe(&m, &o);
	ck_assert_int_ne(ct_model_load_mem(&m, g.p, g.n, NULL), CT_READ_ERROR);
	ck_assert_str_eq(log.s, "mstart aa0 mstep1 fa0/0 ab0 fb0/1 ab0 ac0 fb0/2 fc0/2 ad0 mlate E1");
	ck_assert_uint_eq(m.leak_count, 3); /* b0 and c0 at the reset, d0 at exit */
	ct_model_free(&m);
	dg_release(&g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("analyzer");
	TCase *tc = tcase_create("model");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, counts_peak_and_leaks);
	tcase_add_test(tc, failed_calls_never_allocate);
	tcase_add_test(tc, free_realloc_across_threads);
	tcase_add_test(tc, device_reset_checkpoint);
	tcase_add_test(tc, vmm_namespaces);
	tcase_add_test(tc, host_register_and_kind_inference);
	tcase_add_test(tc, peak_snapshot_random);
	tcase_add_test(tc, many_events_bounded_memory);
	tcase_add_test(tc, timeline_buckets);
	tcase_add_test(tc, timeline_long_range);
	tcase_add_test(tc, observers_see_the_pass_in_time_order);
	suite_add_tcase(s, tc);
	tc = tcase_create("symbols");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, symbolize_self);
	tcase_add_test(tc, demangle);
	suite_add_tcase(s, tc);
	tc = tcase_create("report");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, json_escaping);
	tcase_add_test(tc, golden_reports);
	tcase_add_test(tc, reports_of_truncated_and_empty);
	tcase_add_test(tc, multi_dump_totals);
	tcase_add_test(tc, golden_leak_classes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
