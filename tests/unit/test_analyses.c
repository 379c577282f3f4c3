/* Unit tests of the reports (analyzer/analyses/) and the JSON writer: facts and rendering. */
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

/* ---- JSON and reports -------------------------------------------------------------------------------- */


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
			 "pid,time_ns,api,kind,size,device,stream,tid,free_bytes,total_bytes,live_bytes,label,stack\n"
			 "4242,5000000,cudaMalloc,device,1073741824,0,0x0,1,536870912,1073741824,536870912,,? in prog+0x1300\n"
			 "4242,6000000,cudaMallocAsync,device,805306368,0,0x5000,2,268435456,1073741824,536870912,,? in prog+0x1400\n"
			 "4242,700000000,cuMemCreate,vmm_physical,2147483648,1,0x0,1,,,67108864,,? in prog+0x1500\n");
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

static Suite *suite(void)
{
	Suite *s = suite_create("analyses");
	TCase *tc = tcase_create("report");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, totals_saturate);
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
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
