/* Unit tests of the analysis model, symbolization and reports. */
#define _GNU_SOURCE
#include <check.h>
#include <link.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckmain.h"
#include "../../analyzer/analyses/gate.h"
#include "../../analyzer/base/json.h"
#include "../../analyzer/model/marks.h"
#include "../../analyzer/model/model.h"
#include "../../analyzer/commands/commands.h"
#include "../../analyzer/model/pystack.h"
#include "../../analyzer/commands/symbolize.h"
#include "../../analyzer/analyses/suppress.h"
#include "../../analyzer/read/symbols.h"
#include "../../analyzer/base/util.h"
#include "dumpgen.h"
#include "modelload.h"
#include "golden_dumps.h"

static struct ct_model *load(const struct dg *g)
{
	return tm_load(g, NULL, NULL);
}

static void unload(struct ct_model *m)
{
	tm_unload(m);
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
		/* the same per device, at each device's own peak */
		uint64_t dlive[2] = {0}, dpeak[2] = {0}, at_dpeak[2][NSTACK][2][2];
		memset(at_dpeak, 0, sizeof at_dpeak);
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
				dlive[d] += sz;
				if (dlive[d] > dpeak[d]) {
					dpeak[d] = dlive[d];
					memcpy(at_dpeak[d], cur, sizeof cur);
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
				dlive[d] -= live_size[p];
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
			ct_site_at_dev_peak(&m, si, &c, &b);
			ck_assert_uint_eq(b, at_dpeak[si->device][si->stack_id - 1][ki][si->device]);
		}
		ck_assert_uint_eq(total, peak);
		for (int d = 0; d < 2; d++) {
			const struct ct_dev_peak *dp = ct_model_dev_peak(&m, d);
			ck_assert_ptr_nonnull(dp);
			ck_assert_uint_eq(dp->peak_bytes, dpeak[d]);
			ck_assert_uint_eq(dp->live, dlive[d]);
		}
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

/* The test binary's own module (load range of ct_test_target_fn) and its path. */
static struct self_mod self_module(char *exe, size_t cap)
{
	struct self_mod sm = {0};
	dl_iterate_phdr(phdr_cb, &sm);
	ck_assert(sm.found);
	ssize_t n = readlink("/proc/self/exe", exe, cap - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = 0;
	return sm;
}

START_TEST(symbolize_self)
{
	char exe[4096];
	struct self_mod sm = self_module(exe, sizeof exe);
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

/*
 * An always_inline function inlined into a host function; the helper records
 * its return address (inside the inlined code) and the two call lines.
 */
static uint64_t inl_ret;
static int inl_line, host_line;

__attribute__((noinline)) static void ct_test_note(int host, int inl)
{
	inl_ret = (uint64_t)(uintptr_t)__builtin_return_address(0);
	host_line = host;
	inl_line = inl;
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void ct_test_inlined(int host)
{
	ct_test_note(host, __LINE__);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

__attribute__((noinline)) void ct_test_inline_host(void);
__attribute__((noinline)) void ct_test_inline_host(void)
{
	ct_test_inlined(__LINE__);
	__asm__ volatile("" ::: "memory");
}

START_TEST(inline_frames)
{
	ct_test_inline_host();
	char exe[4096];
	struct self_mod sm = self_module(exe, sizeof exe);
	struct ct_symtab *st = ct_symtab_new();
	ct_symtab_add_module(st, sm.base, sm.lo, sm.hi, NULL, 0, exe, strlen(exe) + 1);
	uint64_t ips[2] = {inl_ret, (uint64_t)(uintptr_t)&ct_test_target_fn + 2};
	ct_symtab_add_stack(st, 1, 2, ips);
	struct ct_frame fr[8];
	size_t k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 3);
	ck_assert_str_eq(fr[0].function, "ct_test_inlined");
	ck_assert_uint_eq(fr[0].line, (unsigned)inl_line);
	ck_assert_int_eq(fr[0].inlined, 1);
	ck_assert_str_eq(fr[1].function, "ct_test_inline_host");
	ck_assert_uint_eq(fr[1].line, (unsigned)host_line);
	ck_assert_int_eq(fr[1].inlined, 0);
	ck_assert_ptr_nonnull(strstr(fr[1].file, "test_analyzer.c"));
	ck_assert_uint_eq(fr[0].ip, fr[1].ip);
	ck_assert_uint_eq(fr[0].offset, inl_ret - sm.base);
	ck_assert_str_eq(fr[2].function, "ct_test_target_fn");
	ck_assert_int_eq(fr[2].inlined, 0);
	/* the buffer ends inside the chain: cut there */
	ck_assert_uint_eq(ct_symtab_resolve(st, 1, fr, 1), 1);
	ck_assert_str_eq(fr[0].function, "ct_test_inlined");
	ct_symtab_free(st);
}
END_TEST

static char *render(struct ct_model *m, int cmd, int format, size_t top);

/* Module 0 is /nonexistent/libx.so at 0x100000: addresses 0x100 and 0x200 have symbols. */
static const char emb_strings[] = "inner_fn\0/src/dir/inner.h\0outer_fn(int)\0/src/dir/outer.c\0"
				  "main\0/src/dir/main.c";
enum { E_INNER = 0, E_INNER_H = 9, E_OUTER = 26, E_OUTER_C = 40, E_MAIN = 57, E_MAIN_C = 62 };
static const struct ct_sym_addr emb_addrs[2] = {{.offset = 0x100, .module = 0, .nframes = 2},
						{.offset = 0x200, .module = 0, .nframes = 1}};
static const struct ct_sym_frame emb_frames[3] = {
	{.function = E_INNER, .file = E_INNER_H, .file_short = E_INNER_H + 9, .line = 11},
	{.function = E_OUTER, .file = E_OUTER_C, .file_short = E_OUTER_C + 9, .line = 22},
	{.function = E_MAIN, .file = E_MAIN_C, .file_short = E_MAIN_C + 9, .line = 33}};

/* Leaks at a stack through two embedded addresses, one bare address of the module and none. */
static void embedded_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 77, 1, 1000, (const char *[]){"argv=prog", NULL});
	dg_module(g, 0x100000, 0x100000, 0x200000, NULL, 0, "/nonexistent/libx.so");
	uint64_t ips[4] = {0x100101, 0x100201, 0x100301, 0x300000};
	dg_stack(g, 1, 4, ips);
	dg_alloc(g, 2000, 0x1000, 4096, 1);
	dg_symbols(g, 2, emb_addrs, 3, emb_frames, emb_strings, sizeof emb_strings);
	/* a later entry for an address already embedded is ignored */
	static const struct ct_sym_addr again = {.offset = 0x200, .module = 0, .nframes = 1};
	static const struct ct_sym_frame other = {.function = 0, .file = CT_SYM_NONE,
						  .file_short = CT_SYM_NONE, .line = 1};
	dg_symbols(g, 1, &again, 1, &other, "other", 6);
	dg_end(g, 3000);
}

static struct ct_model *load_mode(const struct dg *g, int mode)
{
	struct ct_model *m = malloc(sizeof *m);
	ck_assert_ptr_nonnull(m);
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, mode);
	ck_assert_int_eq(ct_model_load_mem(m, g->p, g->n, NULL), CT_READ_OK);
	return m;
}

START_TEST(embedded_symbols)
{
	struct dg g;
	embedded_dump(&g);
	static const int modes[] = {CT_SYMBOLIZE_ALL, CT_SYMBOLIZE_EMBEDDED};
	for (int i = 0; i < 2; i++) {
		struct ct_model *m = load_mode(&g, modes[i]);
		ck_assert_uint_eq(ct_symtab_embedded_count(m->syms), 2);
		struct ct_frame fr[16];
		size_t k = ct_symtab_resolve(m->syms, 1, fr, 16);
		ck_assert_uint_eq(k, 5);
		ck_assert_str_eq(fr[0].function, "inner_fn");
		ck_assert_str_eq(fr[0].file, "/src/dir/inner.h");
		ck_assert_str_eq(fr[0].file_short, "inner.h");
		ck_assert_uint_eq(fr[0].line, 11);
		ck_assert_int_eq(fr[0].inlined, 1);
		ck_assert_int_eq(fr[0].module_missing, 0);
		ck_assert_str_eq(fr[1].function, "outer_fn(int)");
		ck_assert_uint_eq(fr[1].line, 22);
		ck_assert_int_eq(fr[1].inlined, 0);
		ck_assert_uint_eq(fr[1].ip, 0x100101);
		ck_assert_uint_eq(fr[1].offset, 0x101);
		ck_assert_str_eq(fr[2].function, "main");
		ck_assert_str_eq(fr[2].module_name, "libx.so");
		/* not embedded: the file on disk is missing (only looked for in ALL mode) */
		ck_assert_ptr_null(fr[3].function);
		ck_assert_uint_eq(fr[3].offset, 0x301);
		ck_assert_int_eq(fr[3].module_missing, modes[i] == CT_SYMBOLIZE_ALL);
		ck_assert_ptr_null(fr[4].module);
		ck_assert_uint_eq(fr[4].ip, 0x300000);

		char *out = render(m, CT_CMD_LEAKS, CT_FMT_TEXT, 20);
		ck_assert_ptr_nonnull(strstr(out, "      at inner_fn (inner.h:11)  in libx.so  (inlined)\n"
						  "      at outer_fn(int) (outer.c:22)  in libx.so\n"
						  "      at main (main.c:33)  in libx.so\n"
						  "      at ?  in libx.so+0x301\n"
						  "      at ?  0x300000\n"));
		free(out);
		out = render(m, CT_CMD_LEAKS, CT_FMT_CSV, 20);
		ck_assert_ptr_nonnull(strstr(out, ",inner_fn (inner.h:11) in libx.so [inlined];"
						  "outer_fn(int) (outer.c:22) in libx.so;main (main.c:33) in "
						  "libx.so;? in libx.so+0x301;? 0x300000,"));
		free(out);
		out = render(m, CT_CMD_LEAKS, CT_FMT_JSON, 20);
		ck_assert_ptr_nonnull(strstr(out, "\"function\": \"inner_fn\",\n"));
		ck_assert_ptr_nonnull(strstr(out, "\"build_id_mismatch\": false,\n"
						  "            \"inlined\": true\n"));
		ck_assert_ptr_nonnull(strstr(out, "\"embedded_symbols\": 2\n"));
		free(out);
		unload(m);
	}
	/* --no-symbols: module+offset, embedded symbols or not */
	struct ct_model *m = load_mode(&g, CT_SYMBOLIZE_OFF);
	struct ct_frame fr[16];
	ck_assert_uint_eq(ct_symtab_resolve(m->syms, 1, fr, 16), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_ptr_null(fr[i].function);
		ck_assert_int_eq(fr[i].inlined, 0);
	}
	unload(m);
	dg_release(&g);
}
END_TEST

/* Embedded symbols win over the file on disk; addresses without them fall back to it. */
START_TEST(embedded_preferred)
{
	char exe[4096];
	struct self_mod sm = self_module(exe, sizeof exe);
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_module(&g, sm.base, sm.lo, sm.hi, NULL, 0, exe);
	uint64_t ips[2] = {f + 2, f + 3};
	dg_stack(&g, 1, 2, ips);
	struct ct_sym_addr a = {.offset = f + 1 - sm.base, .module = 0, .nframes = 1};
	struct ct_sym_frame fr1 = {.function = 0, .file = CT_SYM_NONE, .file_short = CT_SYM_NONE};
	dg_symbols(&g, 1, &a, 1, &fr1, "embedded_name", 14);
	struct ct_model *m = load_mode(&g, CT_SYMBOLIZE_ALL);
	struct ct_frame fr[4];
	ck_assert_uint_eq(ct_symtab_resolve(m->syms, 1, fr, 4), 2);
	ck_assert_str_eq(fr[0].function, "embedded_name");
	ck_assert_ptr_null(fr[0].file);
	ck_assert_str_eq(fr[1].function, "ct_test_target_fn");
	ck_assert_ptr_nonnull(strstr(fr[1].file, "test_analyzer.c"));
	unload(m);
	dg_release(&g);
}
END_TEST

/* Frames of stack 1 of the dump at path, resolved in mode, as one line each. */
static char *frames_text(const char *path, int mode)
{
	struct ct_model m;
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, mode);
	ck_assert_int_eq(ct_model_load(&m, path, NULL), CT_READ_OK);
	struct ct_frame fr[32];
	size_t k = ct_symtab_resolve(m.syms, 1, fr, 32);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	for (size_t i = 0; i < k; i++)
		fprintf(f, "%s|%s|%s|%u|%d|%llx|%d\n", fr[i].function ? fr[i].function : "-",
			fr[i].file ? fr[i].file : "-", fr[i].file_short ? fr[i].file_short : "-",
			fr[i].line, fr[i].inlined, (unsigned long long)fr[i].offset,
			fr[i].module_missing);
	fprintf(f, "embedded %zu\n", ct_symtab_embedded_count(m.syms));
	fclose(f);
	ct_model_free(&m);
	return buf;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		buf = realloc(buf, cap = cap * 2 + 65536);
		size_t k = fread(buf + *len, 1, cap - *len, f);
		*len += k;
		if (*len < cap)
			break;
	}
	fclose(f);
	return buf;
}

static int same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = la == lb && !memcmp(x, y, la);
	free(x);
	free(y);
	return same;
}

static int symbolize(const char *in, const char *out)
{
	char *argv[] = {"symbolize", (char *)in, "-o", (char *)out, NULL};
	return ct_symbolize_main(out ? 4 : 2, argv);
}

/* A dump symbolized with the test binary on disk reads the same from its embedded symbols. */
START_TEST(symbolize_roundtrip)
{
	ct_test_inline_host();
	char exe[4096], dir[] = "/tmp/ct-symbolize-XXXXXX", in[4200], out[4200], again[4200];
	struct self_mod sm = self_module(exe, sizeof exe);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof in, "%s/in.dump", dir);
	snprintf(out, sizeof out, "%s/out.dump", dir);
	snprintf(again, sizeof again, "%s/again.dump", dir);
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 5, 1, 1000, (const char *[]){"argv=self", NULL});
	dg_module(&g, 0x7000, 0x7000, 0x8000, NULL, 0, "/opt/x/libcumtrace.so");
	dg_module(&g, sm.base, sm.lo, sm.hi, NULL, 0, exe);
	uint64_t ips[4] = {0x7100, f + 2, inl_ret, 0x10};
	dg_stack(&g, 1, 4, ips);
	dg_alloc(&g, 2000, 0x1000, 4096, 1);
	dg_end(&g, 3000);
	ck_assert_int_eq(dg_write(&g, in), 0);
	ck_assert_int_eq(chmod(in, 0604), 0);

	ck_assert_int_eq(symbolize(in, out), 0);
	char *local = frames_text(in, CT_SYMBOLIZE_ALL);
	char *embedded = frames_text(out, CT_SYMBOLIZE_EMBEDDED);
	/* the same frames, the inline chain included; only the count differs */
	ck_assert_ptr_nonnull(strstr(local, "ct_test_inlined|"));
	char *cut = strstr(local, "embedded 0\n");
	ck_assert_ptr_nonnull(cut);
	*cut = 0;
	cut = strstr(embedded, "embedded 2\n");
	ck_assert_ptr_nonnull(cut);
	*cut = 0;
	ck_assert_str_eq(local, embedded);
	free(local);
	free(embedded);
	/* the input as it was, then the new records */
	size_t lin, lout;
	char *a = slurp(in, &lin), *b = slurp(out, &lout);
	ck_assert_uint_gt(lout, lin);
	ck_assert_int_eq(memcmp(a, b, lin), 0);
	free(a);
	free(b);
	/* again: the same bytes; in place: the same bytes and the mode kept */
	ck_assert_int_eq(symbolize(out, again), 0);
	ck_assert(same_file(out, again));
	ck_assert_int_eq(symbolize(in, NULL), 0);
	ck_assert(same_file(out, in));
	struct stat st;
	ck_assert_int_eq(stat(in, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0604);

	/* a corrupt dump: exit 2, no output */
	g.p[g.offs[1] + 4] = 3; /* a record size below 8 */
	ck_assert_int_eq(dg_write(&g, in), 0);
	unlink(again);
	ck_assert_int_eq(symbolize(in, again), 2);
	ck_assert_int_ne(access(again, F_OK), 0);
	/* usage */
	char *none[] = {"symbolize", NULL};
	ck_assert_int_eq(ct_symbolize_main(1, none), 2);
	char *two[] = {"symbolize", in, out, NULL};
	ck_assert_int_eq(ct_symbolize_main(3, two), 2);
	char *bad[] = {"symbolize", "--what", in, NULL};
	ck_assert_int_eq(ct_symbolize_main(3, bad), 2);

	unlink(in);
	unlink(out);
	rmdir(dir);
	dg_release(&g);
}
END_TEST

struct rec_stats {
	size_t symbols, largest;
};

static void count_symbols(void *ctx, const void *rec, uint32_t size, uint64_t off)
{
	struct rec_stats *s = ctx;
	struct ct_rec h;
	memcpy(&h, rec, sizeof h);
	(void)off;
	if (h.type == CT_REC_SYMBOLS) {
		s->symbols++;
		if (size > s->largest)
			s->largest = size;
	}
}

/*
 * Symbols larger than one record are split; embedded symbols are carried
 * over without the binaries; a name longer than CT_SYM_STRING_MAX is cut.
 */
START_TEST(symbolize_splits)
{
	enum { NADDR = 600, NAME = 3000, PER_REC = 300 };
	char dir[] = "/tmp/ct-symbolize-XXXXXX", in[4200], out[4200];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof in, "%s/in.dump", dir);
	snprintf(out, sizeof out, "%s/out.dump", dir);
	const uint64_t base = 0x10000000;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_module(&g, base, base, base + 0x1000000, NULL, 0, "/nonexistent/liby.so");
	uint64_t ips[NADDR / 3];
	for (uint32_t s = 0; s < 3; s++) {
		for (uint32_t i = 0; i < NADDR / 3; i++)
			ips[i] = base + 0x10 * (s * (NADDR / 3) + i + 1) + 1;
		dg_stack(&g, s + 1, NADDR / 3, ips);
	}
	/* names: NAME x 'a' then "_<i>"; address 0's name is 5000 bytes */
	char *strings = malloc(PER_REC * (NAME + 16));
	struct ct_sym_addr *addrs = calloc(PER_REC, sizeof *addrs);
	struct ct_sym_frame *frames = calloc(PER_REC, sizeof *frames);
	ck_assert(strings && addrs && frames);
	for (uint32_t r = 0; r < NADDR / PER_REC; r++) {
		uint32_t slen = 0;
		for (uint32_t k = 0; k < PER_REC; k++) {
			uint32_t i = r * PER_REC + k;
			addrs[k] = (struct ct_sym_addr){.offset = 0x10 * (i + 1), .nframes = 1};
			frames[k] = (struct ct_sym_frame){.function = slen, .file = CT_SYM_NONE,
							  .file_short = CT_SYM_NONE, .line = i};
			memset(strings + slen, 'a', NAME);
			slen += NAME + (uint32_t)sprintf(strings + slen + NAME, "_%u", i) + 1;
		}
		dg_symbols(&g, PER_REC, addrs, PER_REC, frames, strings, slen);
	}
	char *longname = malloc(5001);
	memset(longname, 'b', 5000);
	longname[5000] = 0;
	/* already listed (0x10): ignored; a new address at 0x99999 is not in any stack: dropped */
	struct ct_sym_addr la[2] = {{.offset = 0x10, .nframes = 1}, {.offset = 0x99999, .nframes = 1}};
	struct ct_sym_frame lf[2] = {{.function = 0, .file = CT_SYM_NONE, .file_short = CT_SYM_NONE},
				     {.function = 0, .file = CT_SYM_NONE, .file_short = CT_SYM_NONE}};
	dg_symbols(&g, 2, la, 2, lf, longname, 5001);
	ck_assert_int_eq(dg_write(&g, in), 0);
	ck_assert_int_eq(symbolize(in, out), 0);

	struct rec_stats rs = {0};
	struct ct_reader_cb cb = {.ctx = &rs, .record = count_symbols};
	struct ct_read_result res;
	ck_assert_int_eq(ct_read_file(out, NULL, &cb, &res), CT_READ_OK);
	ck_assert_uint_eq(rs.symbols, 2); /* ~1.8 MB of names */
	ck_assert_uint_le(rs.largest, CT_REC_MAX);

	struct ct_model m;
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, CT_SYMBOLIZE_EMBEDDED);
	ck_assert_int_eq(ct_model_load(&m, out, NULL), CT_READ_OK);
	ck_assert_uint_eq(ct_symtab_embedded_count(m.syms), NADDR);
	struct ct_frame fr[NADDR / 3];
	for (uint32_t s = 0; s < 3; s++) {
		ck_assert_uint_eq(ct_symtab_resolve(m.syms, s + 1, fr, NADDR / 3), NADDR / 3);
		for (uint32_t i = 0; i < NADDR / 3; i++) {
			uint32_t idx = s * (NADDR / 3) + i;
			char want[16];
			snprintf(want, sizeof want, "_%u", idx);
			ck_assert_uint_eq(strlen(fr[i].function), NAME + strlen(want));
			ck_assert_str_eq(fr[i].function + NAME, want);
			ck_assert_uint_eq(fr[i].line, idx);
		}
	}
	ct_model_free(&m);

	/* a dump whose only symbols are the 5000-byte name: cut to CT_SYM_STRING_MAX - 1 */
	dg_release(&g);
	dg_init(&g);
	dg_header(&g);
	dg_module(&g, base, base, base + 0x1000000, NULL, 0, "/nonexistent/liby.so");
	ips[0] = base + 0x11;
	dg_stack(&g, 1, 1, ips);
	dg_symbols(&g, 1, la, 1, lf, longname, 5001);
	ck_assert_int_eq(dg_write(&g, in), 0);
	ck_assert_int_eq(symbolize(in, out), 0);
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, CT_SYMBOLIZE_EMBEDDED);
	ck_assert_int_eq(ct_model_load(&m, out, NULL), CT_READ_OK);
	ck_assert_uint_eq(ct_symtab_resolve(m.syms, 1, fr, 1), 1);
	ck_assert_uint_eq(strlen(fr[0].function), CT_SYM_STRING_MAX - 1);
	ct_model_free(&m);

	free(longname);
	free(strings);
	free(addrs);
	free(frames);
	unlink(in);
	unlink(out);
	rmdir(dir);
	dg_release(&g);
}
END_TEST

/* Random damage to a dump with symbols: a defined status, and every report renders. */
START_TEST(symbols_mutations)
{
	struct dg g;
	embedded_dump(&g);
	unsigned char *buf = malloc(g.n);
	ck_assert_ptr_nonnull(buf);
	srand(4242);
	size_t sym = g.offs[g.nrec - 3]; /* the first CT_REC_SYMBOLS */
	for (int iter = 0; iter < 2000; iter++) {
		memcpy(buf, g.p, g.n);
		int flips = 1 + rand() % 3;
		for (int k = 0; k < flips; k++) {
			size_t at = sym + (size_t)rand() % (g.n - sym);
			buf[at] = rand() % 2 ? (unsigned char)rand() : buf[at] ^ (1u << (rand() % 8));
		}
		struct ct_model m;
		ct_model_init(&m);
		ct_symtab_set_symbolize(m.syms, CT_SYMBOLIZE_EMBEDDED);
		int st = ct_model_load_mem(&m, buf, g.n, NULL);
		ck_assert(st == CT_READ_OK || st == CT_READ_TRUNCATED || st == CT_READ_ERROR);
		if (st != CT_READ_ERROR)
			for (int c = 0; c < CT_CMD_COUNT; c++)
				for (int f = 0; f < 3; f++)
					free(render(&m, c, f, 0));
		else
			ck_assert_ptr_nonnull(strstr(m.read.error, "offset"));
		ct_model_free(&m);
	}
	free(buf);
	dg_release(&g);
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

/* What an escaping writer makes of n bytes of s (caller frees). */
static char *escaped_by(void (*put)(FILE *, const char *, size_t), const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	put(f, s, n);
	fclose(f);
	return buf;
}

static char *render_escape(const char *s, size_t n)
{
	return escaped_by(ct_json_escape, s, n);
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

__attribute__((noinline)) static char *render(struct ct_model *m, int cmd, int format, size_t top)
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

/* Issue 14, item 8: sizes that add up past 2^64 - 1 saturate and stay saturated. */
START_TEST(totals_saturate)
{
	ck_assert_uint_eq(ct_sat_add(1, 2), 3);
	ck_assert_uint_eq(ct_sat_add(1ull << 63, 1ull << 63), CT_SAT);
	ck_assert_uint_eq(ct_sat_add(CT_SAT, 0), CT_SAT);
	ck_assert_uint_eq(ct_sat_sub(CT_SAT, 5), CT_SAT);
	ck_assert_uint_eq(ct_sat_sub(7, 5), 2);
	char b[32];
	ck_assert_str_eq(ct_fmt_bytes(CT_SAT, b, sizeof b), ">= 16 EiB");
	ck_assert_str_eq(ct_fmt_bytes(CT_SAT - 1, b, sizeof b), "16.0 EiB");
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 1234, 1, 1000, (const char *[]){"argv=prog", NULL});
	for (uint64_t i = 0; i < 8; i++)
		dg_alloc(&g, 2000 + i, 0x1000 * (i + 1), 1ull << 63, 1);
	dg_free(&g, 3000, 0x1000); /* a saturated total no longer goes down */
	dg_end(&g, 8000);
	struct ct_model *m = load(&g);
	char *buf = render(m, CT_CMD_LEAKS, CT_FMT_JSON, 20);
	ck_assert_ptr_nonnull(strstr(buf, "\"bytes\": 18446744073709551615"));
	ck_assert_ptr_nonnull(strstr(buf, "\n  \"saturated\": true\n}"));
	free(buf);
	ck_assert_uint_eq(m->leak_count, 7);
	ck_assert_uint_eq(m->leak_bytes, CT_SAT);
	ck_assert_uint_eq(m->peak_bytes, CT_SAT);
	ck_assert_uint_eq(m->sites[0].live_bytes, CT_SAT);
	ck_assert_uint_eq(m->sites[0].bytes_allocated, CT_SAT);
	ck_assert_uint_eq(m->api[CT_API_cudaMalloc].bytes, CT_SAT);
	ck_assert_uint_eq(m->api[CT_API_cudaFree].bytes, 1ull << 63);
	const struct ct_kd_stats *k = ct_model_kd(m, CT_KIND_DEVICE, 0);
	ck_assert_uint_eq(k->live_bytes, CT_SAT);
	ck_assert_uint_eq(k->peak_bytes, CT_SAT);
	ck_assert_uint_eq(m->leaks[0].bytes, CT_SAT);
	unload(m);
	dg_release(&g);
}
END_TEST

/* The golden dump as the model sees it (its reports: tests/golden/cases). */
START_TEST(golden_dump_facts)
{
	struct dg g;
	golden_dump(&g);
	struct ct_model *m = load(&g);
	m->path = strdup("golden.bin");
	ck_assert_uint_eq(m->allocations, 5);
	ck_assert_uint_eq(m->failed_calls, 1);
	ck_assert_uint_eq(m->dropped, 3);
	ck_assert_uint_eq(m->peak_bytes, (8 << 20) + (4 << 20) + (2 << 20));
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


/* Drops counted in signal handlers are dropped events, reported as what they are. */
START_TEST(drops_in_signal_handlers)
{
	for (int signal_only = 0; signal_only <= 1; signal_only++) {
		struct dg g;
		dg_init(&g);
		dg_header(&g);
		dg_process(&g, 77, 1, 1000, (const char *[]){"argv=p", NULL});
		dg_batch(&g, 1000, 0);
		dg_alloc(&g, 2000, 0x1000, 64, 1);
		if (!signal_only)
			dg_drops(&g, 2100, 3, 9);
		dg_drops_signal(&g, 2200, signal_only ? 1 : 2);
		if (!signal_only)
			dg_drops_signal(&g, 2300, 3);
		dg_end(&g, 5000);
		struct ct_model *m = load(&g);
		m->path = strdup("signal.bin");
		ck_assert_uint_eq(m->dropped, signal_only ? 1 : 8);
		ck_assert_uint_eq(m->dropped_signal, signal_only ? 1 : 5);
		char *text = render(m, CT_CMD_SUMMARY, CT_FMT_TEXT, 20);
		char *json = render(m, CT_CMD_SUMMARY, CT_FMT_JSON, 20);
		if (signal_only) {
			ck_assert_ptr_null(strstr(text, "ring buffers full"));
			ck_assert_ptr_nonnull(strstr(text, "WARNING: 1 call made inside a signal handler "
							   "was not recorded: THE DATA IS INCOMPLETE"));
			ck_assert_ptr_nonnull(strstr(json, "\"dropped_events\": 1,\n      "
							   "\"dropped_in_signal_handlers\": 1,"));
		} else {
			ck_assert_ptr_nonnull(strstr(text, "WARNING: 3 events were dropped (ring buffers "
							   "full): THE DATA IS INCOMPLETE"));
			ck_assert_ptr_nonnull(strstr(text, "WARNING: 5 calls made inside signal handlers "
							   "were not recorded: THE DATA IS INCOMPLETE"));
			ck_assert_ptr_nonnull(strstr(json, "\"dropped_events\": 8,\n      "
							   "\"dropped_in_signal_handlers\": 5,"));
			ck_assert_ptr_nonnull(strstr(json, "\n  \"dropped_events\": 8,\n  "
							   "\"dropped_in_signal_handlers\": 5,"));
		}
		free(text);
		free(json);
		unload(m);
		dg_release(&g);
	}
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
	/* text with --per-dump: one section per dump; without: one report merged
	 * over the two (numbered by position: no rank recorded) */
	o.format = CT_FMT_TEXT;
	for (o.per_dump = 1; o.per_dump >= 0; o.per_dump--) {
		buf = NULL;
		f = open_memstream(&buf, &len);
		ct_report(f, &o, ms, 2);
		fclose(f);
		int sections = o.per_dump;
		ck_assert_int_eq(strstr(buf, "not freed in pid 100 (p)") != NULL, sections);
		ck_assert_int_eq(strstr(buf, "not freed in pid 200 (p)") != NULL, sections);
		ck_assert_int_eq(strstr(buf, "cumtrace leaks: 2 allocations, 3.9 KiB (4000 bytes) not "
					     "freed in 2 ranks (0-1)\n") != NULL,
				 !sections);
		free(buf);
	}
	unload(ms[0]);
	unload(ms[1]);
}
END_TEST

/* ---- leak classes, suppressions, growth, baselines: golden reports --------------------------------- */

/* The classes of the two runs (their reports: tests/golden/cases/classes-*, diff-*). */
START_TEST(leak_classes_facts)
{
	struct dg g0, g1;
	classes_dump(&g0, 0);
	classes_dump(&g1, 1);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .format = CT_FMT_TEXT, .buckets = 20, .top = 20,
				   .tool_version = "test"};
	struct ct_model *base = tm_load(&g0, ct_report_attach, &o), *now = tm_load(&g1, ct_report_attach, &o);
	struct ct_model *one[1];
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

/* ---- per-device peaks, phases, oom, frag, streams ---------------------------------------------- */

/* A model with cmd's observers attached (as main.c does), frag sampled at `buckets` points. */
static struct ct_model *load_for(const struct dg *g, int cmd, size_t buckets)
{
	struct ct_model *m = malloc(sizeof *m);
	ck_assert_ptr_nonnull(m);
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, 0);
	struct ct_report_opts o = {.cmd = cmd, .buckets = buckets, .top = 20, .tool_version = "test"};
	ct_report_attach(m, &o);
	int st = ct_model_load_mem(m, g->p, g->n, NULL);
	ck_assert_msg(st != CT_READ_ERROR, "read error: %s", m->read.error);
	m->path = strdup("golden.bin");
	return m;
}

START_TEST(peak_per_device_and_phases)
{
	const uint64_t T = 1000000, MS = 1000000;
	struct dg g;
	devices_phases_dump(&g);
	struct ct_model *m = load_for(&g, CT_CMD_PEAK, 20);
	ck_assert_uint_eq(m->peak_bytes, 12 * MiB);
	ck_assert_uint_eq(m->peak_ts, T + 4 * MS);
	const struct ct_dev_peak *d0 = ct_model_dev_peak(m, 0), *d1 = ct_model_dev_peak(m, 1);
	ck_assert_ptr_nonnull(d0);
	ck_assert_ptr_nonnull(d1);
	ck_assert_ptr_null(ct_model_dev_peak(m, 2));
	ck_assert_uint_eq(d0->peak_bytes, 10 * MiB);
	ck_assert_uint_eq(d0->peak_ts, T + 4 * MS);
	ck_assert_uint_eq(d0->live, 1536 * KiB);
	ck_assert_uint_eq(d1->peak_bytes, 9 * MiB);
	ck_assert_uint_eq(d1->peak_ts, T + 14 * MS);
	/* the live set at each device's own peak, by site */
	uint64_t want0[4] = {0, 4 * MiB, 6 * MiB, 0}, want1[4] = {0, 3 * MiB, 2 * MiB, 4 * MiB};
	for (size_t i = 0; i < m->nsites; i++) {
		const struct ct_site *s = &m->sites[i];
		uint64_t c, b;
		ct_site_at_dev_peak(m, s, &c, &b);
		ck_assert_uint_eq(b, (s->device ? want1 : want0)[s->stack_id]);
		ck_assert_uint_eq(c, b ? 1 : 0);
	}
	char *out = render(m, CT_CMD_PEAK, CT_FMT_JSON, 20);
	/* the phase row of init: 12 MiB at 4 ms since the start */
	ck_assert_ptr_nonnull(strstr(out, "\"kind\": \"mark\",\n        \"name\": \"init\",\n        \"count\": 1,\n"
					  "        \"open_at_end\": 0,\n        \"peak_bytes\": 12582912,\n"
					  "        \"peak_time_ns\": 4000000,\n        \"start_bytes\": 0,\n"
					  "        \"growth_bytes\": 12582912\n"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(oom_failures)
{
	struct dg g;
	oom_dump(&g);
	struct ct_model *m = load_for(&g, CT_CMD_OOM, 20);
	ck_assert_uint_eq(m->meminfos, 3);
	ck_assert_uint_eq(m->failed_calls, 5);
	char *out = render(m, CT_CMD_OOM, CT_FMT_CSV, 20);
	ck_assert_str_eq(out,
			 "pid,time_ns,api,kind,size,device,stream,tid,free_bytes,total_bytes,live_bytes,stack\n"
			 "4242,5000000,cudaMalloc,device,1073741824,0,0x0,1,536870912,1073741824,536870912,? in prog+0x1300\n"
			 "4242,6000000,cudaMallocAsync,device,805306368,0,0x5000,2,268435456,1073741824,536870912,? in prog+0x1400\n"
			 "4242,700000000,cuMemCreate,vmm_physical,2147483648,1,0x0,1,,,67108864,? in prog+0x1500\n");
	free(out);
	out = render(m, CT_CMD_OOM, CT_FMT_TEXT, 20);
	ck_assert_ptr_nonnull(strstr(out, "cumtrace oom: 3 allocations failed with out-of-memory (3.8 GiB requested)"));
	ck_assert_ptr_nonnull(strstr(out, "live on device 0 then: 512.0 MiB (536870912 bytes) in 3 allocations, by site:\n"
					  "#1   256.0 MiB in 2 allocations (device, cudaMalloc, device 0)\n"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(frag_holes_pools_vmm)
{
	struct dg g;
	frag_dump(&g);
	struct ct_model *m = load_for(&g, CT_CMD_FRAG, 4);
	char *out = render(m, CT_CMD_FRAG, CT_FMT_CSV, 20);
	/* pid,device,at,time_ns,blocks,bytes,span,free,holes,largest_hole,pool_used,pool_reserved,
	 * vmm_reserved,vmm_mapped,vmm_physical,device_bytes */
	ck_assert_str_eq(out,
			 "pid,device,at,time_ns,blocks,bytes,span,free,holes,largest_hole,pool_used,"
			 "pool_reserved,vmm_reserved,vmm_mapped,vmm_physical,device_bytes\n"
			 "4242,0,peak,6100000,3,16384,40960,24576,2,16384,3145728,3145728,8388608,0,2097152,5259264\n"
			 "4242,0,end,11000000,1,8192,8192,0,0,0,1048576,2097152,8388608,2097152,2097152,3153920\n"
			 "4242,0,sample,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
			 "4242,0,sample,4194304,3,16384,40960,24576,2,16384,1048576,1048576,0,0,0,1064960\n"
			 "4242,0,sample,8388608,2,12288,40960,28672,1,28672,1048576,3145728,8388608,2097152,2097152,3158016\n");
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(streams_cross_and_pending)
{
	struct dg g;
	streams_dump(&g);
	struct ct_model *m = load_for(&g, CT_CMD_STREAMS, 20);
	char *out = render(m, CT_CMD_STREAMS, CT_FMT_CSV, 20);
	/* pid,stream,tid,device,creates,destroys,syncs,sync_time_ns,allocations,allocated_bytes,
	 * live_bytes,peak_bytes,peak_time_ns,async_frees,cross_stream_frees,
	 * cross_stream_free_bytes,pending_frees,pending_free_bytes */
	ck_assert_str_eq(out,
			 "pid,stream,tid,device,creates,destroys,syncs,sync_time_ns,allocations,allocated_bytes,"
			 "live_bytes,peak_bytes,peak_time_ns,async_frees,cross_stream_frees,"
			 "cross_stream_free_bytes,pending_frees,pending_free_bytes\n"
			 "4242,0x0,0,0,0,0,0,0,1,16384,0,16384,14000000,1,0,0,1,16384\n"
			 "4242,0x2,1,0,0,0,0,0,1,524288,0,524288,4000000,0,0,0,0,0\n"
			 "4242,0x2,2,0,0,0,0,0,0,0,0,0,0,1,1,524288,1,524288\n"
			 "4242,0xa000,0,0,1,0,1,5000,3,13631488,0,8388608,12000000,3,1,2097152,1,8388608\n"
			 "4242,0xb000,0,0,1,1,1,3000,1,2097152,0,2097152,3000000,1,1,1048576,0,0\n");
	free(out);
	out = render(m, CT_CMD_STREAMS, CT_FMT_JSON, 20);
	ck_assert_ptr_nonnull(strstr(out, "\"cross_stream_frees\": {\n      \"count\": 3,\n      \"bytes\": 3670016,"));
	ck_assert_ptr_nonnull(strstr(out, "\"pending_frees\": {\n      \"count\": 3,\n      \"bytes\": 8929280,"));
	ck_assert_ptr_nonnull(strstr(out, "\"device_syncs\": [\n      {\n        \"pid\": 4242,\n        \"device\": 1,\n"
					  "        \"count\": 1,\n        \"time_ns\": 1000\n"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Several dumps: one text block each, JSON lists carry their pid. */
START_TEST(new_reports_of_two_dumps)
{
	struct dg g1, g2;
	oom_dump(&g1);
	streams_dump(&g2);
	static const int cmds[3] = {CT_CMD_OOM, CT_CMD_FRAG, CT_CMD_STREAMS};
	for (int c = 0; c < 3; c++) {
		struct ct_model *ms[2] = {load_for(&g1, cmds[c], 8), load_for(&g2, cmds[c], 8)};
		ms[1]->pid = 4343;
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct ct_report_opts o = {.cmd = cmds[c], .format = CT_FMT_TEXT, .buckets = 8, .top = 20,
					   .tool_version = "t"};
		ct_report(f, &o, ms, 2);
		fclose(f);
		ck_assert_ptr_nonnull(strstr(buf, "pid 4242 (prog)"));
		ck_assert_ptr_nonnull(strstr(buf, "pid 4343 (prog)"));
		free(buf);
		buf = NULL;
		f = open_memstream(&buf, &len);
		o.format = CT_FMT_JSON;
		ct_report(f, &o, ms, 2);
		fclose(f);
		/* dump 1 has the failures, dump 2 the streams; both have devices */
		if (cmds[c] == CT_CMD_OOM)
			ck_assert_ptr_nonnull(strstr(buf, "\"oom\": {\n    \"count\": 3,\n    \"bytes_requested\": 4026531840,"));
		if (cmds[c] == CT_CMD_STREAMS) {
			ck_assert_ptr_nonnull(strstr(buf, "\"pid\": 4343,\n        \"stream\": 40960,"));
			ck_assert_ptr_null(strstr(buf, "\"pid\": 4242,\n        \"stream\""));
		}
		if (cmds[c] == CT_CMD_FRAG) {
			ck_assert_ptr_nonnull(strstr(buf, "\"pid\": 4242,\n        \"device\": 0,\n        \"peak_time_ns\""));
			ck_assert_ptr_nonnull(strstr(buf, "\"pid\": 4343,\n        \"device\": 0,\n        \"peak_time_ns\""));
		}
		free(buf);
		unload(ms[0]);
		unload(ms[1]);
	}
	dg_release(&g1);
	dg_release(&g2);
}
END_TEST

/* The fragmentation treap against a sorted scan of the live blocks, after random traffic. */
START_TEST(frag_random_against_naive)
{
	enum { NSLOT = 200, STEPS = 30000 };
	srand(777);
	for (int round = 0; round < 6; round++) {
		struct ct_model m;
		ct_model_init(&m);
		struct ct_report_opts o = {.cmd = CT_CMD_FRAG, .buckets = 16, .top = 20, .tool_version = "t"};
		ct_report_attach(&m, &o);
		uint64_t size[NSLOT] = {0};
		int steps = round == 5 ? 40 : STEPS; /* a small live set too */
		for (int s = 0; s < steps; s++) {
			int p = rand() % NSLOT;
			struct ct_rec_event e;
			memset(&e, 0, sizeof e);
			e.ts_ns = 1000 + (uint64_t)s * 7;
			e.tid = 1;
			e.kind = CT_KIND_DEVICE;
			e.ptr = 0x10000000 + (uint64_t)p * 0x10000;
			if (!size[p]) {
				size[p] = 1 + (uint64_t)(rand() % 0x10000); /* up to the whole slot */
				e.op = CT_OP_ALLOC;
				e.api = CT_API_cudaMalloc;
				e.size = size[p];
			} else {
				size[p] = 0;
				e.op = CT_OP_FREE;
				e.api = CT_API_cudaFree;
			}
			ct_model_event(&m, &e);
		}
		ct_model_finish(&m);
		uint64_t blocks = 0, bytes = 0, lo = 0, hi = 0, free_b = 0, holes = 0, largest = 0;
		for (int p = 0; p < NSLOT; p++) {
			if (!size[p])
				continue;
			uint64_t a = 0x10000000 + (uint64_t)p * 0x10000;
			if (blocks && a > hi) {
				free_b += a - hi;
				holes++;
				if (a - hi > largest)
					largest = a - hi;
			}
			if (!blocks)
				lo = a;
			hi = a + size[p];
			blocks++;
			bytes += size[p];
		}
		char *out = render(&m, CT_CMD_FRAG, CT_FMT_CSV, 20);
		char *line = strstr(out, ",0,end,");
		ck_assert_ptr_nonnull(line);
		unsigned long long t, v[6];
		ck_assert_int_eq(sscanf(line, ",0,end,%llu,%llu,%llu,%llu,%llu,%llu,%llu", &t, &v[0], &v[1],
					&v[2], &v[3], &v[4], &v[5]),
				 7);
		ck_assert_uint_eq(v[0], blocks);
		ck_assert_uint_eq(v[1], bytes);
		ck_assert_uint_eq(v[2], blocks ? hi - lo : 0);
		ck_assert_uint_eq(v[3], free_b);
		ck_assert_uint_eq(v[4], holes);
		ck_assert_uint_eq(v[5], largest);
		free(out);
		ct_model_free(&m);
	}
}
END_TEST

/*
 * Phase peaks against a brute force: random NVTX pushes and pops on three
 * threads, start/end ranges and instant marks, each with a name of its own,
 * among random allocations and frees. Marks at odd times, events at even ones.
 */
struct naive_phase {
	char name[16];
	unsigned kind; /* 1 mark, 2 range */
	uint64_t open_ts, close_ts, id;
	uint32_t tid;
	int closed, by_push;
	uint64_t start, peak;
};

START_TEST(phases_random_against_naive)
{
	enum { NPTR = 32, STEPS = 3000, MAXPH = 1200 };
	srand(4242);
	for (int round = 0; round < 4; round++) {
		static struct naive_phase ph[MAXPH];
		size_t nph = 0;
		struct dg g;
		dg_init(&g);
		dg_header(&g);
		uint64_t live = 0, size[NPTR] = {0};
		uint64_t next_id = 1;
		int nmarks = 0;
		for (int s = 0; s < STEPS; s++) {
			uint64_t ts = 1000 + (uint64_t)s * 2;
			int r = rand() % 10;
			if (r < 6) {
				int p = rand() % NPTR;
				if (!size[p]) {
					size[p] = 1 + (uint64_t)(rand() % 5000);
					ev(&g, ts, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc,
					   0x1000 + (uint64_t)p * 0x10000, size[p], 1, 1, 0, 0);
					live += size[p];
				} else {
					ev(&g, ts, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree,
					   0x1000 + (uint64_t)p * 0x10000, 0, 1, 0, 0, 0);
					live -= size[p];
					size[p] = 0;
				}
				for (size_t i = 0; i < nph; i++)
					if (!ph[i].closed && live > ph[i].peak)
						ph[i].peak = live;
				continue;
			}
			uint64_t mts = ts + 1;
			uint32_t tid = 1 + (uint32_t)(rand() % 3);
			struct naive_phase *x = NULL;
			if (r == 6 && nph < MAXPH) { /* push */
				x = &ph[nph++];
				memset(x, 0, sizeof *x);
				snprintf(x->name, sizeof x->name, "p%zu", nph);
				x->kind = 2;
				x->by_push = 1;
				dg_mark_kind(&g, mts, tid, CT_MARK_PUSH, 0, x->name);
			} else if (r == 7) { /* pop: the newest push of that thread */
				dg_mark_kind(&g, mts, tid, CT_MARK_POP, 0, "");
				for (size_t i = nph; i-- > 0;)
					if (!ph[i].closed && ph[i].by_push && ph[i].tid == tid && ph[i].kind == 2) {
						ph[i].closed = 1;
						ph[i].close_ts = mts;
						break;
					}
			} else if (r == 8 && nph < MAXPH) { /* start, or end of a random open one */
				size_t i = (size_t)rand() % (nph + 1);
				if (i < nph && !ph[i].closed && ph[i].kind == 2 && !ph[i].by_push) {
					dg_mark_kind(&g, mts, tid, CT_MARK_STOP, ph[i].id, "");
					ph[i].closed = 1;
					ph[i].close_ts = mts;
				} else {
					x = &ph[nph++];
					memset(x, 0, sizeof *x);
					snprintf(x->name, sizeof x->name, "s%zu", nph);
					x->kind = 2;
					x->id = next_id++;
					dg_mark_kind(&g, mts, tid, CT_MARK_START, x->id, x->name);
				}
			} else if (r == 9 && nph < MAXPH) { /* instant: ends the previous one */
				for (size_t i = 0; i < nph; i++)
					if (!ph[i].closed && ph[i].kind == 1) {
						ph[i].closed = 1;
						ph[i].close_ts = mts;
					}
				x = &ph[nph++];
				memset(x, 0, sizeof *x);
				snprintf(x->name, sizeof x->name, "i%zu", nph);
				x->kind = 1;
				dg_mark_kind(&g, mts, tid, CT_MARK_INSTANT, 0, x->name);
				nmarks++;
			}
			if (x) {
				x->open_ts = mts;
				x->tid = tid;
				x->start = x->peak = live;
			}
		}
		struct ct_model *m = load_for(&g, CT_CMD_PEAK, 20);
		char *out = render(m, CT_CMD_PEAK, CT_FMT_JSON, 0);
		for (size_t i = 0; i < nph; i++) {
			char want[512];
			snprintf(want, sizeof want,
				 "\"kind\": \"%s\",\n        \"name\": \"%.15s\",\n        \"count\": 1,\n"
				 "        \"open_at_end\": %d,\n        \"peak_bytes\": %llu,\n",
				 ph[i].kind == 1 ? "mark" : "range", ph[i].name,
				 ph[i].kind == 2 && !ph[i].closed, (unsigned long long)ph[i].peak);
			char key[64];
			snprintf(key, sizeof key, "\"name\": \"%.15s\",\n        \"count", ph[i].name);
			const char *got = strstr(out, key);
			ck_assert_msg(strstr(out, want) != NULL, "round %d phase %s: want %s got %.200s",
				      round, ph[i].name, want, got ? got : "nothing");
		}
		ck_assert_int_gt(nmarks, 0);
		free(out);
		unload(m);
		dg_release(&g);
	}
}
END_TEST

/* ---- exporters ------------------------------------------------------------------------------------ */

/* A model of g with every command attached under o's exporter options. */
static struct ct_model *load_attached(const struct dg *g, const struct ct_report_opts *o)
{
	struct ct_model *m = malloc(sizeof *m);
	ck_assert_ptr_nonnull(m);
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, 0);
	ct_report_attach_all(m, o);
	int st = ct_model_load_mem(m, g->p, g->n, NULL);
	ck_assert_msg(st != CT_READ_ERROR, "read error: %s", m->read.error);
	return m;
}

__attribute__((noinline)) static char *render_o(struct ct_model *const *ms, size_t n, const struct ct_report_opts *o,
		      size_t *len)
{
	char *buf = NULL;
	size_t l = 0;
	FILE *f = open_memstream(&buf, &l);
	ct_report(f, o, ms, n);
	fclose(f);
	if (len)
		*len = l;
	return buf;
}

/*
 * Python string and stack ids are the dump's: the largest accepted (2^24)
 * work like small ones and take no memory in proportion to them (a table
 * indexed by id took 256 MiB for one record: tests/fuzz/regress/oom-a9311639...).
 */
START_TEST(pystack_sparse_ids)
{
	const uint32_t big = 1u << 24;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 77, 1, 1000, (const char *[]){"argv=prog", NULL});
	pystring(&g, big - 1, "far.py");
	pystring(&g, big, "deep_step");
	pystring(&g, big + 1, "ignored_string"); /* past the limit: not kept */
	struct ct_pyframe far = {big - 1, big, 42}, near = {big - 1, big + 1, 7};
	dg_pystack(&g, big, 1, &far);
	dg_pystack(&g, 3, 1, &near); /* a small id beside it */
	alloc_py(&g, 2000, 0x10000, 4096, 1, 0, big);
	alloc_py(&g, 3000, 0x20000, 8192, 1, 0, 3);
	dg_end(&g, 4000);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .format = CT_FMT_TEXT, .top = 10,
				   .tool_version = "test"};
	struct ct_model *m = load_attached(&g, &o);
	char *out = render_o(&m, 1, &o, NULL);
	ck_assert_msg(strstr(out, "deep_step") && strstr(out, "far.py:42"), "%s", out);
	ck_assert_msg(strstr(out, "far.py:7") && !strstr(out, "ignored_string"), "%s", out);
	free(out);
	ct_model_free(m);
	free(m);
	dg_release(&g);
}
END_TEST

/* 1 when the n bytes at s are valid UTF-8. */
static int valid_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0, l; i < n; i += l)
		if (!(l = p[i] < 0x80 ? 1 : ct_utf8_seq(p + i, n - i)))
			return 0;
	return 1;
}

/*
 * Issue 14, item 10: dump strings that a spreadsheet would run as formulas,
 * and bytes that are not UTF-8, in every command and format: CSV text cells
 * get a ' and quotes, every text output (all but the pickle) is valid UTF-8.
 */
START_TEST(hostile_strings_every_format)
{
	static const char *const funcs[] = {"=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0",
					    "-2+3", "@SUM(A1)", "\tx", "ok\xff\xfe"};
	const size_t nf = sizeof funcs / sizeof funcs[0];
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 77, 1, 1000,
		   (const char *[]){"argv=prog\xc3(", "exe=/bin/\xff=x", "host=h\x80", NULL});
	dg_module(&g, 0x400000, 0x400000, 0x480000, NULL, 0, "/lib/=evil\xe0\x80.so");
	pystring(&g, 1, "=file\xc0\xaf.py");
	for (size_t i = 0; i < nf; i++) {
		pystring(&g, (uint32_t)(2 + i), funcs[i]);
		struct ct_pyframe fr = {1, (uint32_t)(2 + i), (int32_t)i + 1};
		dg_pystack(&g, (uint32_t)(1 + i), 1, &fr);
	}
	uint64_t ips[2] = {0x401000, 0x402000};
	dg_stack(&g, 1, 2, ips);
	dg_mark(&g, 1500, 1, "=mark\xed\xa0\x80");
	for (size_t i = 0; i < nf; i++)
		alloc_py(&g, 2000 + 100 * i, 0x10000 * (i + 1), 4096, 1, 1, (uint32_t)(1 + i));
	dg_end(&g, 4000);
	ct_frames_set_mode(CT_FRAMES_PYTHON); /* the Python function first in the stack cell */
	for (int c = 0; c < CT_CMD_COUNT; c++) {
		const struct ct_command *cmd = ct_command_get(c);
		for (int fmt = 0; fmt < CT_FMT_COUNT; fmt++) {
			if (!(cmd->formats & 1u << fmt) || fmt == CT_FMT_PICKLE)
				continue;
			struct ct_report_opts o = {.cmd = c, .format = fmt, .buckets = 8, .top = 0,
						   .tool_version = "test", .flame_of = CT_FLAME_ALLOCS};
			struct ct_model *m[2];
			m[0] = load_attached(&g, &o);
			m[1] = load_attached(&g, &o);
			size_t n = cmd->min_dumps > 1 ? 2 : 1, len;
			char *out = render_o(m, n, &o, &len);
			ck_assert_msg(valid_utf8(out, len), "%s --format %s: not UTF-8:\n%s", cmd->name,
				      ct_fmt_name(fmt), out);
			if (fmt == CT_FMT_CSV) {
				for (size_t i = 0; i < len; i++) {
					if (i && out[i - 1] != ',' && out[i - 1] != '\n')
						continue;
					const char *cell = out + i + (out[i] == '"');
					ck_assert_msg(!strchr("=+@\t", *cell) || !*cell,
						      "%s --format csv: a formula cell at %zu:\n%s", cmd->name,
						      i, out);
				}
				if (c == CT_CMD_LEAKS) {
					ck_assert_msg(strstr(out, ",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\") "),
						      "%s", out);
					ck_assert_msg(strstr(out, ",\"'+cmd|' /C calc'!A0 (") &&
							      strstr(out, ",\"'-2+3 (") &&
							      strstr(out, ",\"'@SUM(A1) (") &&
							      strstr(out, "ok\\xff\\xfe ("),
						      "%s", out);
				}
			}
			free(out);
			for (size_t k = 0; k < 2; k++) {
				ct_model_free(m[k]);
				free(m[k]);
			}
		}
	}
	dg_release(&g);
}
END_TEST

/* The exporters' dump as the model sees it (its exports: tests/golden/cases/export-*). */
START_TEST(export_dump_facts)
{
	struct dg g;
	export_dump(&g);
	struct ct_report_opts o = {.buckets = 20, .top = 20, .tool_version = "test", .counter_us = 0};
	struct ct_model *m = load_attached(&g, &o);
	ck_assert_uint_eq(m->allocations, 7);
	ck_assert_uint_eq(m->failed_calls, 1);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Sum of the values of folded lines. */
static uint64_t folded_total(const char *s)
{
	uint64_t t = 0;
	for (const char *line = s; *line;) {
		const char *nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		const char *sp = nl;
		while (sp > line && sp[-1] != ' ')
			sp--;
		ck_assert(sp > line);
		t += strtoull(sp, NULL, 10);
		line = nl + 1;
	}
	return t;
}

START_TEST(flame_totals_match_the_reports)
{
	struct dg g;
	export_dump(&g);
	struct ct_report_opts o = {.top = 0, .tool_version = "test", .cmd = CT_CMD_FLAMEGRAPH,
				   .format = CT_FMT_FOLDED};
	struct ct_model *ms[2];
	ms[0] = load_attached(&g, &o);
	dg_release(&g);
	golden_dump(&g);
	ms[1] = load_attached(&g, &o);
	dg_release(&g);
	uint64_t alloc_bytes = 0;
	for (int d = 0; d < 2; d++)
		for (unsigned k = 0; k < CT_KIND_COUNT; k++)
			alloc_bytes += ms[d]->kind_total[k].bytes_allocated;
	const uint64_t want[3] = {ms[0]->leak_bytes + ms[1]->leak_bytes,
				  ms[0]->peak_bytes + ms[1]->peak_bytes, alloc_bytes};
	/* the 8 MiB block was allocated over (not a leak); the device reset's two are */
	ck_assert_uint_eq(want[0], (16u << 10) + (1u << 20) + (512u << 10) + (64u << 10) + 11599872);
	for (int of = CT_FLAME_LEAKS; of <= CT_FLAME_ALLOCS; of++) {
		o.flame_of = of;
		for (size_t n = 1; n <= 2; n++) {
			char *out = render_o(ms, n, &o, NULL);
			uint64_t w = n == 1 ? (of == CT_FLAME_LEAKS	? ms[0]->leak_bytes
					       : of == CT_FLAME_PEAK ? ms[0]->peak_bytes
								     : 0)
					    : want[of];
			if (n == 1 && of == CT_FLAME_ALLOCS)
				for (unsigned k = 0; k < CT_KIND_COUNT; k++)
					w += ms[0]->kind_total[k].bytes_allocated;
			ck_assert_msg(folded_total(out) == w, "--of %d, %zu dumps: %llu != %llu", of, n,
				      (unsigned long long)folded_total(out), (unsigned long long)w);
			/* two dumps: every line starts at its process */
			if (n == 2)
				ck_assert(!strncmp(out, "[pid ", 5));
			free(out);
		}
	}
	unload(ms[0]);
	unload(ms[1]);
}
END_TEST

/* The counter lines ("ph":"C") of a trace, joined. */
static char *counter_lines(const char *trace)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	for (const char *l = trace; (l = strstr(l, "{\"ts\":"));) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (memmem(l, n, "\"ph\":\"C\"", 8)) {
			const char *ts = l + 6, *bytes = memmem(l, n, "\"bytes\":", 8);
			fprintf(f, "%.*s=%.*s ", (int)(strchr(ts, ',') - ts), ts,
				(int)(strchr(bytes, '}') - bytes - 8), bytes + 8);
		}
		l += n;
	}
	fclose(f);
	return buf;
}

START_TEST(perfetto_counters_keep_the_most_per_interval)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000000, (const char *[]){"argv=p", NULL});
	/* interval [2 ms, 3 ms): 100 small pairs, one 1 MiB block live for 1 us in the middle */
	for (int i = 0; i < 100; i++) {
		uint64_t t = 2000000 + (uint64_t)i * 5000;
		dg_alloc(&g, t, 0x1000, 4096, 1);
		if (i == 50) {
			dg_alloc(&g, t + 100, 0x900000, 1 << 20, 1);
			dg_free(&g, t + 1100, 0x900000);
		}
		dg_free(&g, t + 2000, 0x1000);
	}
	/* nothing until 7.5 ms: one sample for the gap, then the new interval */
	dg_alloc(&g, 7500000, 0x2000, 100, 1);
	dg_end(&g, 8000000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_PERFETTO,
				   .format = CT_FMT_JSON, .counter_us = 1000};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	char *out = render_o(one, 1, &o, NULL);
	char *c = counter_lines(out);
	/* first change at 1.000 ms after the start; max 1 MiB + 4 KiB; 0 from 3 ms; 100 at 6.5 ms */
	ck_assert_str_eq(c, "1000.000=1052672 2000.000=0 6500.000=100 ");
	free(c);
	free(out);
	unload(m);
	/* every change: 100 x (4096, 0) plus the 1 MiB block, then the last one */
	o.counter_us = 0;
	m = load_attached(&g, &o);
	one[0] = m;
	out = render_o(one, 1, &o, NULL);
	c = counter_lines(out);
	ck_assert_msg(!strncmp(c, "1000.000=4096 1002.000=0 1005.000=4096 ", 39), "%s", c);
	ck_assert_msg(strstr(c, " 1250.000=4096 1250.100=1052672 1251.100=4096 1252.000=0 1255.000=4096 ") != NULL, "%s", c);
	size_t samples = 0;
	for (const char *p = c; (p = strchr(p, '=')); p++)
		samples++;
	ck_assert_uint_eq(samples, 200 + 2 + 1);
	free(c);
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Occurrences of needle in s (memcmp: strstr in a loop is quadratic under ASan). */
static size_t count_in(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle), c = 0;
	for (size_t i = 0; i + n <= len; i++)
		if (s[i] == needle[0] && !memcmp(s + i, needle, n))
			c++;
	return c;
}

START_TEST(perfetto_keeps_the_largest_slices)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=p", NULL});
	for (int i = 1; i <= 10; i++) {
		dg_alloc(&g, 1000 + (uint64_t)i * 100, 0x1000 * (uint64_t)i, (uint64_t)i * 1000, 1);
		if (i % 2)
			dg_free(&g, 1050 + (uint64_t)i * 100, 0x1000 * (uint64_t)i);
	}
	dg_end(&g, 5000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_PERFETTO,
				   .format = CT_FMT_JSON, .max_slices = 3};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	size_t len;
	char *out = render_o(one, 1, &o, &len);
	ck_assert_uint_eq(count_in(out, len, "\"ph\":\"b\""), 3);
	ck_assert_ptr_nonnull(strstr(out, "\"size\":10000,"));
	ck_assert_ptr_nonnull(strstr(out, "\"size\":9000,"));
	ck_assert_ptr_nonnull(strstr(out, "\"size\":8000,"));
	ck_assert_ptr_null(strstr(out, "\"size\":7000,"));
	ck_assert_ptr_nonnull(strstr(out, "\"slices_max\":3,\"slices_total\":10,\"slices_dropped\":7,"
					  "\"slices_dropped_bytes\":28000"));
	/* live at the end: the even ones; 8000 and 10000 overlap 9000's lifetime, so 2 lanes */
	ck_assert_ptr_nonnull(strstr(out, "\"id\":\"0:1\""));
	ck_assert_ptr_null(strstr(out, "\"id\":\"0:2\""));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(perfetto_spool_moves_to_a_file)
{
	/* 40000 marks (about 3 MiB of spool): the temporary file, then the buffer */
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=p", NULL});
	char name[64];
	for (int i = 0; i < 40000; i++) {
		snprintf(name, sizeof name, "mark %05d", i);
		dg_mark_kind(&g, 2000 + (uint64_t)i, 1, CT_MARK_INSTANT, 0, name);
	}
	dg_alloc(&g, 50000, 0x1000, 10, 1);
	dg_end(&g, 60000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_PERFETTO,
				   .format = CT_FMT_JSON};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	for (int round = 0; round < 2; round++) { /* the spool is read again */
		size_t len;
		char *out = render_o(one, 1, &o, &len);
		ck_assert_uint_eq(count_in(out, len, "\"cat\":\"mark\""), 40000);
		const char *first = strstr(out, "\"name\":\"mark 00000\"");
		const char *last = strstr(out, "\"name\":\"mark 39999\"");
		ck_assert(first && last && first < last);
		ck_assert_ptr_nonnull(strstr(out, "\"name\":\"device 0 live\",\"args\":{\"bytes\":10}"));
		free(out);
	}
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(memviz_keeps_the_latest_entries)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=p", NULL});
	for (int i = 0; i < 3; i++) {
		dg_alloc(&g, 2000 + (uint64_t)i * 10, 0x10000 + (uint64_t)i * 0x10000, 4096, 1);
		dg_free(&g, 2005 + (uint64_t)i * 10, 0x10000 + (uint64_t)i * 0x10000);
	}
	dg_end(&g, 3000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_MEMVIZ,
				   .format = CT_FMT_PICKLE, .max_entries = 4};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	size_t len;
	char *out = render_o(one, 1, &o, &len);
	/* 15 entries, the last 4 kept: the third block's alloc and its three free entries */
	static const char overflowed[] = "trace_alloc_overflowed";
	const char *p = memmem(out, len, overflowed, sizeof overflowed - 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((unsigned char)p[sizeof overflowed - 1], 0x88); /* NEWTRUE */
	ck_assert_ptr_null(memmem(out, len, "segment_alloc", 13));
	ck_assert_ptr_nonnull(memmem(out, len, "free_completed", 14));
	/* addresses in the trace: only 0x30000 (BININT, little-endian) */
	ck_assert_ptr_nonnull(memmem(out, len, "J\x00\x00\x03\x00", 5));
	ck_assert_ptr_null(memmem(out, len, "J\x00\x00\x01\x00", 5));
	ck_assert_ptr_null(memmem(out, len, "J\x00\x00\x02\x00", 5));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* ---- html ---------------------------------------------------------------------------------------- */

static char *hex_of(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	return s;
}

START_TEST(sha256_and_base64)
{
	/* FIPS 180-4 examples, and lengths around the one- and two-block tails */
	static const struct {
		size_t len; /* of 'a' repeated, or of text when text is set */
		const char *text, *want;
	} v[] = {
		{0, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{3, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{56, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{55, NULL, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
		{64, NULL, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
		{119, NULL, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
		{1000, NULL, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
	};
	char *a = malloc(1000);
	memset(a, 'a', 1000);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		uint8_t d[32];
		ct_sha256(v[i].text ? v[i].text : a, v[i].len, d);
		char *h = hex_of(d, sizeof d);
		ck_assert_msg(!strcmp(h, v[i].want), "sha256 of %zu bytes: %s", v[i].len, h);
		free(h);
	}
	free(a);
	/* RFC 4648 section 10 */
	static const char *const b64[][2] = {{"", ""},		{"f", "Zg=="},	   {"fo", "Zm8="},
					     {"foo", "Zm9v"},	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
					     {"foobar", "Zm9vYmFy"}};
	for (size_t i = 0; i < sizeof b64 / sizeof b64[0]; i++) {
		char out[16];
		ct_base64((const uint8_t *)b64[i][0], strlen(b64[i][0]), out, sizeof out);
		ck_assert_str_eq(out, b64[i][1]);
	}
	char small[5];
	ck_assert_str_eq(ct_base64((const uint8_t *)"foobar", 6, small, sizeof small), "Zm9v");
}
END_TEST

static char *html_escape(const char *s, size_t n)
{
	return escaped_by(ct_html_putn, s, n);
}

START_TEST(html_escaping)
{
	static const struct {
		const char *in;
		size_t n;
		const char *want;
	} v[] = {
		{"<a href=\"x\">&'b'</a>", 20, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;b&#39;&lt;/a&gt;"},
		/* controls, C1 controls and invalid UTF-8 as visible \xNN; valid UTF-8 as it is */
		{"a\x01\n\x7f\xc2\x80\xc2\xa0\xc3\xa9\xff\xe2\x82", 13,
		 "a\\x01\\x0a\\x7f\\xc2\\x80\xc2\xa0\xc3\xa9\\xff\\xe2\\x82"},
		{"x\0y", 3, "x\\x00y"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char *s = html_escape(v[i].in, v[i].n);
		ck_assert_str_eq(s, v[i].want);
		free(s);
	}
}
END_TEST

/* A dump whose every string is hostile markup: argv, module path, Python files and functions, marks. */
static void hostile_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 77, 1, 1000,
		   (const char *[]){"exe=/bin/<b>x</b>", "cwd=/w\"'&", "argv=</title><script>alert(1)</script>",
				    "argv=<img src=x onerror=alert(2)>", "host=\"><svg onload=alert(3)>", NULL});
	dg_module(g, 0x400000, 0x400000, 0x480000, NULL, 0, "/opt/lib<iframe onload=x>&.so");
	uint64_t s1[2] = {0x401234, 0x401500};
	dg_stack(g, 1, 2, s1);
	dg_pystring(g, 1, "<script src=//evil.example/x.js></script>.py");
	dg_pystring(g, 2, "f\"oo<style>@import url(//e)</style>");
	struct ct_pyframe pf[1] = {{1, 2, 7}};
	dg_pystack(g, 1, 1, pf);
	dg_mark_kind(g, 1500, 1, CT_MARK_INSTANT, 0, "<a href=//e>mark</a>");
	dg_alloc_py(g, 2000, 0x10000, 4096, 1, 1);
	dg_alloc(g, 2100, 0x20000, 8192, 1);
	dg_mark_kind(g, 2200, 1, CT_MARK_INSTANT, 0, "<a href=//e>mark</a>");
	dg_end(g, 3000);
}

START_TEST(html_escapes_dump_strings)
{
	struct dg g;
	hostile_dump(&g);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_HTML, .format = CT_FMT_HTML,
				   .buckets = 10, .top = 20};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	char *out = render_o(one, 1, &o, NULL);
	/* the only markup is the page's own: no element from the dump, no quote closing an attribute */
	static const char *const never[] = {"<script", "<img", "<iframe", "<b>", "<svg onload", "<a href=/",
					    "\"><svg", "onerror=alert(2)>"};
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		ck_assert_msg(strstr(out, never[i]) == NULL, "%s in the page", never[i]);
	static const char *const escaped[] = {
		"&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;",
		"/w&quot;&#39;&amp;", "/bin/&lt;b&gt;x&lt;/b&gt;",
		"&lt;script src=//evil.example/x.js&gt;&lt;/script&gt;.py:7",
		"f&quot;oo&lt;style&gt;@import url(//e)&lt;/style&gt;", "&lt;a href=//e&gt;mark&lt;/a&gt;",
		"in lib&lt;iframe onload=x&gt;&amp;.so+0x"};
	for (size_t i = 0; i < sizeof escaped / sizeof escaped[0]; i++)
		ck_assert_msg(strstr(out, escaped[i]) != NULL, "%s not in the page", escaped[i]);
	/* one <style>, one <title>, the CSP before both */
	const char *csp = strstr(out, "Content-Security-Policy");
	ck_assert_ptr_nonnull(csp);
	ck_assert(csp < strstr(out, "<style>") && csp < strstr(out, "<title>"));
	ck_assert_ptr_null(strstr(strstr(out, "<style>") + 1, "<style"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Bounded: 15 devices draw the 12 largest series; --top 2 lists two sites of 15. */
START_TEST(html_bounded)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 9, 1, 1000, (const char *[]){"argv=p", NULL});
	uint64_t s1[1] = {0x401000};
	dg_stack(&g, 1, 1, s1);
	/* an out-of-memory failure at the very start: its marker stays inside the plot */
	ev(&g, 1000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0, 1ull << 40, 1, 1, 0, 2);
	for (int d = 0; d < 15; d++)
		for (int k = 0; k <= d; k++)
			ev(&g, 2000 + (uint64_t)(d * 16 + k) * 10, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc,
			   0x100000 * (uint64_t)(d * 16 + k + 1), 4096 * (uint64_t)(d + 1), 1, 1 + (uint32_t)k,
			   (int16_t)d, 0);
	dg_end(&g, 10000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_HTML, .format = CT_FMT_HTML,
				   .buckets = 5, .top = 2};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	char *out = render_o(one, 1, &o, NULL);
	const char *tl = strstr(out, "<svg class=\"chart timeline\"");
	ck_assert_ptr_nonnull(tl);
	const char *tl_end = strstr(tl, "</svg>");
	size_t series = 0;
	for (const char *p = tl; (p = strstr(p, "<path class=\"s\"")) && p < tl_end; p++)
		series++;
	ck_assert_uint_eq(series, 12);
	ck_assert_ptr_nonnull(strstr(out, "3 smaller series are not drawn."));
	/* the smallest devices (0, 1, 2) are the ones left out */
	ck_assert_ptr_null(strstr(out, "device, dev 2 <span"));
	ck_assert_ptr_nonnull(strstr(out, "device, dev 3 <span"));
	/* each drawn series has 5 buckets: 10 points (a step each) */
	const char *d = strstr(tl, " d=\"M");
	size_t pts = 0;
	for (const char *p = d + 4; *p != '"'; p++)
		pts += *p == 'V' || *p == 'H';
	ck_assert_uint_eq(pts, 9); /* M is the first point */
	/* 15 devices at the peak, 2 shown */
	ck_assert_ptr_nonnull(strstr(out, "... and 13 more sites"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* The page's style sheet hash is in its policy (the page: tests/golden/cases/html-*). */
START_TEST(html_style_hash)
{
	struct dg g;
	export_dump(&g);
	struct ct_report_opts o = {.buckets = 20, .top = 20, .tool_version = "test", .cmd = CT_CMD_HTML,
				   .format = CT_FMT_HTML};
	struct ct_model *ms[1];
	ms[0] = load_attached(&g, &o);
	dg_release(&g);
	char *out = render_o(ms, 1, &o, NULL);
	const char *st = strstr(out, "<style>") + 7;
	const char *end = strstr(st, "</style>");
	uint8_t d[32];
	char want[64];
	ct_sha256(st, (size_t)(end - st), d);
	ct_base64(d, sizeof d, want, sizeof want);
	ck_assert_ptr_nonnull(strstr(out, want));
	free(out);
	unload(ms[0]);
}
END_TEST


static Suite *suite(void)
{
	Suite *s = suite_create("analyzer");
	TCase *tc = tcase_create("model");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, counts_peak_and_leaks);
	tcase_add_test(tc, totals_saturate);
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
	tcase_add_test(tc, inline_frames);
	tcase_add_test(tc, embedded_symbols);
	tcase_add_test(tc, embedded_preferred);
	tcase_add_test(tc, symbolize_roundtrip);
	tcase_add_test(tc, symbolize_splits);
	tcase_add_test(tc, symbols_mutations);
	suite_add_tcase(s, tc);
	tc = tcase_create("report");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, json_escaping);
	tcase_add_test(tc, golden_dump_facts);
	tcase_add_test(tc, reports_of_truncated_and_empty);
	tcase_add_test(tc, multi_dump_totals);
	tcase_add_test(tc, drops_in_signal_handlers);
	tcase_add_test(tc, peak_per_device_and_phases);
	tcase_add_test(tc, oom_failures);
	tcase_add_test(tc, frag_holes_pools_vmm);
	tcase_add_test(tc, streams_cross_and_pending);
	tcase_add_test(tc, new_reports_of_two_dumps);
	tcase_add_test(tc, frag_random_against_naive);
	tcase_add_test(tc, phases_random_against_naive);
	tcase_add_test(tc, leak_classes_facts);
	suite_add_tcase(s, tc);
	tc = tcase_create("exports");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, export_dump_facts);
	tcase_add_test(tc, flame_totals_match_the_reports);
	tcase_add_test(tc, perfetto_counters_keep_the_most_per_interval);
	tcase_add_test(tc, perfetto_keeps_the_largest_slices);
	tcase_add_test(tc, perfetto_spool_moves_to_a_file);
	tcase_add_test(tc, memviz_keeps_the_latest_entries);
	tcase_add_test(tc, sha256_and_base64);
	tcase_add_test(tc, html_escaping);
	tcase_add_test(tc, html_escapes_dump_strings);
	tcase_add_test(tc, html_style_hash);
	tcase_add_test(tc, html_bounded);
	tcase_add_test(tc, pystack_sparse_ids);
	tcase_add_test(tc, hostile_strings_every_format);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
