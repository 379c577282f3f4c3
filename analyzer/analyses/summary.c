/*
 * The summary command: calls per API, memory per kind and device, process
 * information; over many dumps, the ranks of one job (ranks.h). It reads the
 * model's own counters: no analysis of its own.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "analyses/gate.h"
#include "analyses/ranks.h"
#include "base/util.h"
#include "model/framework.h"
#include "model/marks.h"
#include "model/nccl.h"
#include "render/render.h"

static int cmp_kd(const void *a, const void *b)
{
	const struct ct_kd_stats *x = *(const struct ct_kd_stats *const *)a;
	const struct ct_kd_stats *y = *(const struct ct_kd_stats *const *)b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->device > y->device) - (x->device < y->device);
}

/* The table of calls per API (api: CT_API_COUNT + 1 entries), after a blank line; nothing when no calls. */
static void text_apis(FILE *f, const struct ct_api_stats *api)
{
	char b1[32], b2[32];
	int any = 0;
	for (unsigned a = 0; a <= CT_API_COUNT; a++)
		any |= api[a].calls != 0;
	if (!any)
		return;
	fprintf(f, "\n  %-30s %10s %9s %12s %12s\n", "API", "calls", "failures", "bytes",
		"call time");
	for (unsigned a = 0; a <= CT_API_COUNT; a++) {
		const struct ct_api_stats *s = &api[a];
		if (!s->calls)
			continue;
		ct_fmt_dur(s->time_ns, b2, sizeof b2);
		fprintf(f, "  %-30s %10" PRIu64 " %9" PRIu64 " %12s %12s\n",
			a < CT_API_COUNT ? ct_api_name(a) : "unknown", s->calls, s->failures,
			ct_fmt_bytes(s->bytes, b1, sizeof b1), b2);
	}
}

/*
 * ---- CUDA graphs (issue 19 §2) ----
 * Each device's graph pool at the end: what graph allocations hold live, what
 * the pool keeps reserved (freed graph memory stays until
 * cudaDeviceGraphMemTrim) and its high mark, as cudaDeviceGetGraphMemAttribute
 * reports them. Nothing when no graph memory was committed.
 */
static void text_graph_pools(FILE *f, const struct ct_model *m)
{
	char b1[32], b2[32], b3[32], b4[32];
	for (size_t i = 0; i < m->ngpools; i++) {
		const struct ct_gpool *g = &m->gpools[i];
		fprintf(f, "  graph pool of device %d: %s reserved at the end (high %s), %s of it in live graph"
			   " allocations\n",
			g->device, ct_fmt_bytes(g->reserved, b1, sizeof b1), ct_fmt_bytes(g->reserved_high, b2, sizeof b2),
			ct_fmt_bytes(g->live, b3, sizeof b3));
		const struct ct_rec_memsample *ms = ct_model_graph_sample(m, g->device);
		if (ms)
			fprintf(f, "    the device's own counters (last sample): %s reserved (high %s), %s used (high %s)\n",
				ct_fmt_bytes(ms->graph_reserved, b1, sizeof b1),
				ct_fmt_bytes(ms->graph_reserved_high, b2, sizeof b2),
				ct_fmt_bytes(ms->graph_used, b3, sizeof b3),
				ct_fmt_bytes(ms->graph_used_high, b4, sizeof b4));
	}
}

static void json_graph_pools(struct ct_json *j, struct ct_model *const *ms, size_t nm)
{
	size_t any = 0;
	for (size_t d = 0; d < nm; d++)
		any += ms[d]->ngpools;
	if (!any)
		return;
	ct_json_key(j, "graph_pools");
	ct_json_obj(j);
	for (size_t d = 0; d < nm; d++) {
		for (size_t i = 0; i < ms[d]->ngpools; i++) {
			int16_t dev = ms[d]->gpools[i].device;
			int seen = 0; /* several dumps: one entry per device, summed */
			for (size_t e = 0; e < d && !seen; e++)
				seen = ct_model_gpool(ms[e], dev) != NULL;
			if (seen)
				continue;
			struct ct_gpool t = {.device = dev};
			uint64_t dv[4] = {0};
			size_t nsampled = 0;
			for (size_t e = d; e < nm; e++) {
				const struct ct_gpool *g = ct_model_gpool(ms[e], dev);
				if (g) {
					t.live += g->live;
					t.reserved += g->reserved;
					t.reserved_high += g->reserved_high;
				}
				const struct ct_rec_memsample *s = ct_model_graph_sample(ms[e], dev);
				if (s) {
					dv[0] += s->graph_reserved;
					dv[1] += s->graph_reserved_high;
					dv[2] += s->graph_used;
					dv[3] += s->graph_used_high;
					nsampled++;
				}
			}
			ct_json_dev_key(j, dev);
			ct_json_obj(j);
			ct_json_kv_u64(j, "live", t.live);
			ct_json_kv_u64(j, "reserved", t.reserved);
			ct_json_kv_u64(j, "reserved_high", t.reserved_high);
			if (nsampled) { /* the device's own counters, from each dump's last sample */
				const struct ct_json_u64 kv[] = {{"reserved", dv[0]},
								 {"reserved_high", dv[1]},
								 {"used", dv[2]},
								 {"used_high", dv[3]}};
				ct_json_key(j, "device_counters");
				ct_json_obj(j);
				ct_json_kv_u64s(j, kv, sizeof kv / sizeof kv[0]);
				ct_json_obj_end(j);
			}
			ct_json_obj_end(j);
		}
	}
	ct_json_obj_end(j);
}

static void text_summary(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32], b3[32], b4[32];
	(void)o;
	fputs("cumtrace summary: ", f);
	ct_put_proc(f, m);
	fputc('\n', f);
	if (m->have_process) {
		fprintf(f, "  ppid %" PRIu32 "%s, host ", m->ppid, m->forked ? " (fork child)" : "");
		ct_put_safe(f, m->host ? m->host : "?");
		fputs(", cumtrace ", f);
		ct_put_safe(f, m->version ? m->version : "?");
		fputc('\n', f);
	}
	fputs("  dump: ", f);
	ct_put_safe(f, m->path ? m->path : "(memory)");
	fprintf(f, " (%s, %s)\n", ct_fmt_bytes(m->read.file_bytes, b1, sizeof b1),
		m->read.status == CT_READ_TRUNCATED ? "truncated"
		: ct_model_header_only(m)	    ? "header only"
						    : "complete");
	ct_fmt_dur(ct_model_duration_ns(m), b1, sizeof b1);
	fprintf(f, "  duration: %s, clean exit: %s\n", b1,
		m->end_seen ? "yes" : "NO (no END record: crashed, killed or still running)");
	fprintf(f,
		"  events: %" PRIu64 " (allocations %" PRIu64 ", frees %" PRIu64
		", failed calls %" PRIu64 ")\n",
		m->events, m->allocations, m->frees, m->failed_calls);
	ct_fw_put_summary(f, &m, 1);
	if (m->unmatched_frees || m->double_allocs)
		fprintf(f,
			"  inconsistencies: %" PRIu64 " free%s of unknown pointers, %" PRIu64
			" allocation%s over a live block\n",
			m->unmatched_frees, ct_plural_s(m->unmatched_frees), m->double_allocs,
			ct_plural_s(m->double_allocs));
	ct_put_notes(f, m);

	text_apis(f, m->api);
	if (m->nkd) {
		fprintf(f, "\n  %-16s %6s %9s %9s %12s %12s %12s\n", "kind", "device", "allocs",
			"frees", "allocated", "peak", "live at end");
		const struct ct_kd_stats **rows = ct_xcalloc(m->nkd, sizeof *rows);
		for (size_t i = 0; i < m->nkd; i++)
			rows[i] = &m->kd[i];
		qsort(rows, m->nkd, sizeof *rows, cmp_kd);
		for (size_t i = 0; i < m->nkd; i++) {
			const struct ct_kd_stats *s = rows[i];
			fprintf(f, "  %-16s %6d %9" PRIu64 " %9" PRIu64 " %12s %12s %12s\n",
				ct_kind_name(s->kind), s->device, s->allocations, s->frees,
				ct_fmt_bytes(s->bytes_allocated, b1, sizeof b1),
				ct_fmt_bytes(s->peak_bytes, b2, sizeof b2),
				ct_fmt_bytes(s->live_bytes, b3, sizeof b3));
		}
		free(rows);
	}
	fputc('\n', f);
	if (m->peak_seen) {
		uint64_t start = ct_model_start_ns(m);
		fprintf(f, "  peak device memory: %s (%" PRIu64 " bytes) at %.3f ms\n",
			ct_fmt_bytes(m->peak_bytes, b4, sizeof b4), m->peak_bytes,
			(double)(m->peak_ts >= start ? m->peak_ts - start : 0) / 1e6);
	} else {
		fputs("  peak device memory: none allocated\n", f);
	}
	text_graph_pools(f, m);
	ct_put_device_memory(f, m);
	if (m->leak_count)
		fprintf(f, "  leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) in %zu site%s"
			   " (cumtrace-report leaks shows where)\n",
			m->leak_count, ct_plural_s(m->leak_count),
			ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), m->leak_bytes, m->nleaks,
			ct_plural_s(m->nleaks));
	else
		fputs("  leaks: none\n", f);
	ct_imports_put_text(f, &m->imp);
	ct_nccl_put_text(f, m);
	if (m->marks)
		fprintf(f, "  marks: %" PRIu64 " (%" PRIu64 " range%s, %" PRIu64 " instant%s)\n", m->marks,
			m->marks_list->ranges, ct_plural_s(m->marks_list->ranges), m->marks_list->instants,
			ct_plural_s(m->marks_list->instants));
	ct_marks_put_summary(f, m->marks_list, &m->infer);
}

/*
 * The summary of many dumps (the ranks of one job): totals, the table of
 * ranks, calls per API over all of them, the sum of the ranks' peaks and the
 * leaks merged by site identity (ranks.h).
 */
static void text_summary_merged(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
				size_t nm)
{
	char b1[32];
	struct ct_api_stats api[CT_API_COUNT + 1];
	uint64_t events = 0, allocs = 0, frees = 0, failed = 0, unmatched = 0, doubles = 0, bytes = 0;
	uint64_t peak, leak_count = 0, leak_bytes = 0, marks = 0;
	memset(api, 0, sizeof api);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		events += m->events;
		allocs += m->allocations;
		frees += m->frees;
		failed += m->failed_calls;
		unmatched += m->unmatched_frees;
		doubles += m->double_allocs;
		bytes = ct_sat_add(bytes, m->read.file_bytes);
		leak_count += m->leak_count;
		leak_bytes = ct_sat_add(leak_bytes, m->leak_bytes);
		marks += m->marks;
		for (unsigned a = 0; a <= CT_API_COUNT; a++)
			ct_api_stats_add(&api[a], &m->api[a]);
	}
	struct ct_assessment *a = ct_assess(o, ms, nm, NULL);
	struct ct_merge mg;
	ct_merge_init(&mg, ms, nm);
	ct_merge_findings(&mg, a, 0, a->nleak);
	fputs("cumtrace summary: ", f);
	ct_ranks_put_desc(f, mg.ranks, mg.nranks);
	fprintf(f, "\n  dumps: %zu, %s in all\n", nm, ct_fmt_bytes(bytes, b1, sizeof b1));
	fprintf(f,
		"  events: %" PRIu64 " (allocations %" PRIu64 ", frees %" PRIu64
		", failed calls %" PRIu64 ")\n",
		events, allocs, frees, failed);
	ct_fw_put_summary(f, ms, nm);
	if (unmatched || doubles)
		fprintf(f,
			"  inconsistencies: %" PRIu64 " free%s of unknown pointers, %" PRIu64
			" allocation%s over a live block\n",
			unmatched, ct_plural_s(unmatched), doubles, ct_plural_s(doubles));
	ct_ranks_put_notes(f, mg.ranks, mg.nranks);
	fputc('\n', f);
	ct_ranks_put_table(f, mg.ranks, mg.nranks);
	text_apis(f, api);
	fputc('\n', f);
	const struct ct_rank *top = ct_ranks_top_peak(mg.ranks, mg.nranks, &peak);
	if (top) {
		char name[64];
		fprintf(f, "  peak device memory: %s (%" PRIu64 " bytes), the sum of each %s's own peak; ",
			ct_fmt_bytes(peak, b1, sizeof b1), peak, ct_ranks_noun(mg.ranks, mg.nranks, 1));
		fprintf(f, "highest: %s, %s\n", ct_rank_name(top, mg.ranks, mg.nranks, name, sizeof name),
			ct_fmt_bytes(top->m->peak_bytes, b1, sizeof b1));
	} else {
		fputs("  peak device memory: none allocated\n", f);
	}
	if (leak_count)
		fprintf(f, "  leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) in %zu site%s across the %s"
			   " (cumtrace-report leaks shows where)\n",
			leak_count, ct_plural_s(leak_count), ct_fmt_bytes(leak_bytes, b1, sizeof b1),
			leak_bytes, mg.n, ct_plural_s(mg.n), ct_ranks_noun(mg.ranks, mg.nranks, 2));
	else
		fputs("  leaks: none\n", f);
	if (marks)
		fprintf(f, "  marks: %" PRIu64 "\n", marks);
	ct_merge_free(&mg);
	ct_assessment_free(a);
}

static void csv_summary(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			size_t nm)
{
	(void)o;
	fputs("pid,api,calls,failures,bytes,time_ns\n", f);
	for (size_t d = 0; d < nm; d++)
		for (unsigned a = 0; a <= CT_API_COUNT; a++) {
			const struct ct_api_stats *s = &ms[d]->api[a];
			if (!s->calls)
				continue;
			fprintf(f, "%" PRIu32 ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
				ms[d]->pid, a < CT_API_COUNT ? ct_api_name(a) : "unknown", s->calls,
				s->failures, s->bytes, s->time_ns);
		}
}

static void json_kd(struct ct_json *j, const struct ct_kd_stats *s)
{
	ct_json_kv_u64(j, "allocations", s->allocations);
	ct_json_kv_u64(j, "frees", s->frees);
	ct_json_kv_u64(j, "bytes_allocated", s->bytes_allocated);
	ct_json_kv_u64(j, "peak_bytes", s->peak_bytes);
	ct_json_kv_u64(j, "live_bytes_at_end", s->live_bytes);
}

/* "summary": calls per API, memory per kind and device, the trace's duration. */
static void json_summary(struct ct_json *j, const struct ct_report_opts *o,
			 struct ct_model *const *ms, size_t nm)
{
	(void)o;
	uint64_t tmin = UINT64_MAX, tmax = 0;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		if (m->have_ts) {
			uint64_t s = ct_model_start_ns(m);
			if (s < tmin)
				tmin = s;
			if (m->last_ts > tmax)
				tmax = m->last_ts;
		}
	}
	ct_json_key(j, "summary");
	ct_json_obj(j);
	ct_json_key(j, "apis");
	ct_json_obj(j);
	for (unsigned a = 0; a <= CT_API_COUNT; a++) {
		struct ct_api_stats t = {0};
		for (size_t d = 0; d < nm; d++)
			ct_api_stats_add(&t, &ms[d]->api[a]);
		if (!t.calls)
			continue;
		ct_json_key(j, a < CT_API_COUNT ? ct_api_name(a) : "unknown");
		ct_json_obj(j);
		ct_json_kv_u64(j, "calls", t.calls);
		ct_json_kv_u64(j, "failures", t.failures);
		ct_json_kv_u64(j, "bytes", t.bytes);
		ct_json_kv_u64(j, "time_ns", t.time_ns);
		ct_json_obj_end(j);
	}
	ct_json_obj_end(j);
	ct_json_key(j, "kinds");
	ct_json_obj(j);
	for (unsigned k = 1; k < CT_KIND_COUNT; k++) {
		struct ct_kd_stats t = {0};
		for (size_t d = 0; d < nm; d++)
			ct_kd_stats_add(&t, &ms[d]->kind_total[k]);
		/* kinds added after arrays (issue 19) are listed only where a dump has them */
		if (k > CT_KIND_ARRAY && !t.allocations && !t.frees)
			continue;
		ct_json_key(j, ct_kind_name(k));
		ct_json_obj(j);
		json_kd(j, &t);
		ct_json_key(j, "devices");
		ct_json_obj(j);
		size_t nd;
		int16_t *devs = ct_devices_of(ms, nm, k, &nd);
		for (size_t x = 0; x < nd; x++) {
			struct ct_kd_stats u = {0};
			for (size_t d = 0; d < nm; d++) {
				const struct ct_kd_stats *s = ct_model_kd(ms[d], k, devs[x]);
				if (s)
					ct_kd_stats_add(&u, s);
			}
			ct_json_dev_key(j, devs[x]);
			ct_json_obj(j);
			json_kd(j, &u);
			ct_json_obj_end(j);
		}
		free(devs);
		ct_json_obj_end(j);
		ct_json_obj_end(j);
	}
	ct_json_obj_end(j);
	json_graph_pools(j, ms, nm);
	if (nm == 1)
		ct_json_device_memory(j, ms[0]);
	ct_json_kv_u64(j, "duration_ns", tmin == UINT64_MAX ? 0 : tmax - tmin);
	ct_fw_json(j, ms, nm);
	ct_json_obj_end(j);

}

static void render_summary(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			   size_t n)
{
	if (o->format == CT_FMT_TEXT && ct_ranks_merged(o, n))
		text_summary_merged(f, o, ms, n);
	else
		ct_render_per_format(f, o, ms, n, text_summary, csv_summary);
}

const struct ct_report ct_report_summary = {
	.render = render_summary,
	.json = json_summary,
};
