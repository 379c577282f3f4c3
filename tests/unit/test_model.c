/* Unit tests of the model (analyzer/model/): the one pass, the timeline, observers. */
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
#include "analyzer_test.h"

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

/* Resampled from a later time (a chart that starts at the first event): the same values, from there. */
START_TEST(timeline_resample_from)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	const uint64_t T0 = 1000000, MS = 1000000;
	dg_process(&g, 1, 0, T0, NULL);
	dg_alloc(&g, T0 + 50 * MS, 0x1000, 1 << 20, 1);
	dg_alloc(&g, T0 + 65 * MS, 0x2000, 1 << 20, 1);
	dg_free(&g, T0 + 85 * MS, 0x1000);
	ev(&g, T0 + 100 * MS - 1, CT_OP_DEVICE_SYNC, 0, CT_API_cudaDeviceSynchronize, 0, 0, 1, 0, 0, 0);
	struct ct_model *m = load(&g);
	ck_assert_uint_eq(m->tl.t0, T0);
	uint64_t v[5], start;
	uint64_t bns = ct_tl_bucket_ns_from(&m->tl, T0 + 50 * MS, 5, &start);
	ck_assert_uint_eq(ct_tl_resample_from(&m->tl, 0, T0 + 50 * MS, 5, v), bns);
	/* the fine bucket of the first allocation: at most one fine width before it */
	ck_assert_uint_le(start, T0 + 50 * MS);
	ck_assert_uint_gt(start + m->tl.width, T0 + 50 * MS);
	/* five buckets of a little over 10 ms cover the 50 ms left */
	ck_assert_uint_ge(bns, 10 * MS);
	ck_assert_uint_le(bns, 10 * MS + MS / 2);
	static const uint64_t want[5] = {1 << 20, 2 << 20, 2 << 20, 2 << 20, 1 << 20};
	for (int i = 0; i < 5; i++)
		ck_assert_msg(v[i] == want[i], "bucket %d: %llu", i, (unsigned long long)v[i]);
	/* from t0: ct_tl_resample */
	uint64_t a[10], b[10];
	ck_assert_uint_eq(ct_tl_resample_from(&m->tl, 0, 0, 10, a), ct_tl_resample(&m->tl, 0, 10, b));
	ck_assert(!memcmp(a, b, sizeof a));
	unload(m);
	dg_release(&g);
}
END_TEST

/* Marks as entries: each range once, however often it was recorded. */
START_TEST(marks_entries_once)
{
	struct ct_marklist *l = ct_marks_new();
	/* "train" pushed twice on thread 1 (cumtrace.range and NVTX), popped twice */
	ct_marks_add(l, 100, 0, 1, CT_MARK_PUSH, "train", 5);
	ct_marks_add(l, 101, 0, 1, CT_MARK_PUSH, "train", 5);
	/* a step range and its step mark at its start; the mark given first in the file */
	ct_marks_add(l, 300, 0, 1, CT_MARK_STEP, "step 1", 6);
	ct_marks_add(l, 300, 7, 2, CT_MARK_START, "step 1", 6);
	ct_marks_add(l, 350, 0, 1, CT_MARK_INSTANT, "step 1", 6); /* inside its own range */
	ct_marks_add(l, 400, 7, 2, CT_MARK_STOP, "", 0);
	/* "step 1" again later: another entry; an instant repeated at another time too */
	ct_marks_add(l, 500, 0, 1, CT_MARK_STEP, "step 1", 6);
	ct_marks_add(l, 600, 0, 1, CT_MARK_INSTANT, "sync", 4);
	ct_marks_add(l, 700, 0, 1, CT_MARK_INSTANT, "sync", 4);
	/* "x" on two threads at once: one range (the same name, overlapping) */
	ct_marks_add(l, 800, 0, 3, CT_MARK_PUSH, "x", 1);
	ct_marks_add(l, 850, 0, 4, CT_MARK_PUSH, "x", 1);
	ct_marks_add(l, 900, 0, 3, CT_MARK_POP, "", 0);
	ct_marks_add(l, 950, 0, 4, CT_MARK_POP, "", 0);
	ct_marks_add(l, 990, 0, 1, CT_MARK_POP, "", 0);
	ct_marks_add(l, 995, 0, 1, CT_MARK_POP, "", 0);
	struct ct_mark_entry *e;
	size_t n = ct_marks_entries(l, 1000, &e);
	ck_assert_uint_eq(n, 6);
	static const struct {
		uint64_t ts, end;
		const char *name;
		uint32_t merged;
	} want[6] = {{100, 995, "train", 1}, {300, 400, "step 1", 2}, {500, 500, "step 1", 0},
		     {600, 600, "sync", 0},  {700, 700, "sync", 0},    {800, 950, "x", 1}};
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(e[i].ts_ns, want[i].ts);
		ck_assert_uint_eq(e[i].end_ns, want[i].end);
		ck_assert_str_eq(e[i].name, want[i].name);
		ck_assert_uint_eq(e[i].merged, want[i].merged);
	}
	free(e);
	/* a range never closed ends at the end given */
	ct_marks_add(l, 2000, 0, 5, CT_MARK_PUSH, "open", 4);
	n = ct_marks_entries(l, 3000, &e);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(e[6].end_ns, 3000);
	free(e);
	ct_marks_free(l);
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
	Suite *s = suite_create("model");
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
	tcase_add_test(tc, timeline_resample_from);
	tcase_add_test(tc, marks_entries_once);
	tcase_add_test(tc, observers_see_the_pass_in_time_order);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
