/*
 * The command table, the common JSON document and the two commands that
 * need no analysis of their own: summary and timeline.
 */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "framework.h"
#include "gate.h"
#include "json.h"
#include "marks.h"
#include "ranks.h"
#include "render.h"
#include "util.h"

extern const struct ct_command ct_cmd_summary, ct_cmd_leaks, ct_cmd_peak, ct_cmd_timeline,
	ct_cmd_oom, ct_cmd_frag, ct_cmd_streams, ct_cmd_perfetto, ct_cmd_flamegraph, ct_cmd_memviz, ct_cmd_diff,
	ct_cmd_html;

/* Indexed by enum ct_cmd. */
static const struct ct_command *const commands[CT_CMD_COUNT] = {
	[CT_CMD_SUMMARY] = &ct_cmd_summary,
	[CT_CMD_LEAKS] = &ct_cmd_leaks,
	[CT_CMD_PEAK] = &ct_cmd_peak,
	[CT_CMD_TIMELINE] = &ct_cmd_timeline,
	[CT_CMD_OOM] = &ct_cmd_oom,
	[CT_CMD_FRAG] = &ct_cmd_frag,
	[CT_CMD_STREAMS] = &ct_cmd_streams,
	[CT_CMD_PERFETTO] = &ct_cmd_perfetto,
	[CT_CMD_FLAMEGRAPH] = &ct_cmd_flamegraph,
	[CT_CMD_MEMVIZ] = &ct_cmd_memviz,
	[CT_CMD_DIFF] = &ct_cmd_diff,
	[CT_CMD_HTML] = &ct_cmd_html,
};

static const char *const fmt_names[CT_FMT_COUNT] = {
	[CT_FMT_TEXT] = "text",
	[CT_FMT_JSON] = "json",
	[CT_FMT_CSV] = "csv",
	[CT_FMT_FOLDED] = "folded",
	[CT_FMT_SPEEDSCOPE] = "speedscope",
	[CT_FMT_PICKLE] = "pickle",
	[CT_FMT_JUNIT] = "junit",
	[CT_FMT_SARIF] = "sarif",
	[CT_FMT_HTML] = "html",
};

const struct ct_command *ct_command_get(int cmd)
{
	return cmd >= 0 && cmd < CT_CMD_COUNT ? commands[cmd] : NULL;
}

const char *ct_cmd_name(int cmd)
{
	const struct ct_command *c = ct_command_get(cmd);
	return c ? c->name : "unknown";
}

int ct_cmd_parse(const char *name)
{
	for (int i = 0; i < CT_CMD_COUNT; i++)
		if (!strcmp(name, commands[i]->name))
			return i;
	return -1;
}

int ct_fmt_parse(const char *name)
{
	for (int i = 0; i < CT_FMT_COUNT; i++)
		if (fmt_names[i] && !strcmp(name, fmt_names[i]))
			return i;
	return -1;
}

const char *ct_fmt_name(int fmt)
{
	return fmt >= 0 && fmt < CT_FMT_COUNT && fmt_names[fmt] ? fmt_names[fmt] : "unknown";
}

void ct_report_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	const struct ct_command *c = ct_command_get(o->cmd);
	if (c && c->attach)
		c->attach(m, o);
}

void ct_report_attach_all(struct ct_model *m, const struct ct_report_opts *o)
{
	for (int i = 0; i < CT_CMD_COUNT; i++)
		if (commands[i]->attach)
			commands[i]->attach(m, o);
}

void ct_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *models, size_t n)
{
	const struct ct_command *c = ct_command_get(o->cmd);
	if (c)
		c->render(f, o, models, n);
}

uint64_t ct_report_leak_count(struct ct_model *const *models, size_t n)
{
	uint64_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += models[i]->leak_count;
	return c;
}

/* ---- the JSON document -------------------------------------------------------------------- */

/* "dumps" (one object per dump), "marks" and the totals over the dumps. */
static void json_dumps(struct ct_json *j, struct ct_model *const *ms, size_t nm)
{
	uint64_t allocs = 0, frees = 0, failed = 0, dropped = 0, dropped_signal = 0, unmatched = 0,
		 doubles = 0;
	for (size_t d = 0; d < nm; d++) {
		allocs += ms[d]->allocations;
		frees += ms[d]->frees;
		failed += ms[d]->failed_calls;
		dropped = ct_sat_add(dropped, ms[d]->dropped);
		dropped_signal = ct_sat_add(dropped_signal, ms[d]->dropped_signal);
		unmatched += ms[d]->unmatched_frees;
		doubles += ms[d]->double_allocs;
	}
	ct_json_key(j, "dumps");
	ct_json_arr(j);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		ct_json_obj(j);
		ct_json_kv_str(j, "path", m->path);
		ct_json_kv_u64(j, "pid", m->pid);
		ct_json_kv_u64(j, "ppid", m->ppid);
		ct_json_key(j, "argv");
		ct_json_arr(j);
		for (size_t i = 0; i < m->argc; i++)
			ct_json_str(j, m->argv[i]);
		ct_json_arr_end(j);
		ct_json_kv_str(j, "host", m->host);
		ct_json_kv_str(j, "exe", m->exe);
		ct_json_kv_str(j, "cwd", m->cwd);
		ct_json_kv_str(j, "cumtrace_version", m->version);
		ct_json_kv_bool(j, "forked", m->forked != 0);
		ct_json_kv_bool(j, "clean_exit", m->end_seen);
		ct_json_kv_bool(j, "truncated", m->read.status == CT_READ_TRUNCATED);
		ct_json_key(j, "truncated_offset");
		if (m->read.status == CT_READ_TRUNCATED)
			ct_json_u64(j, m->read.truncated_offset);
		else
			ct_json_null(j);
		ct_json_kv_u64(j, "dropped_events", m->dropped);
		ct_json_kv_u64(j, "dropped_in_signal_handlers", m->dropped_signal);
		ct_json_kv_u64(j, "bytes", m->read.file_bytes);
		ct_json_kv_u64(j, "records", m->read.records);
		ct_json_kv_u64(j, "events", m->events);
		ct_json_kv_u64(j, "allocations", m->allocations);
		ct_json_kv_u64(j, "frees", m->frees);
		ct_json_kv_u64(j, "failed_calls", m->failed_calls);
		ct_json_kv_u64(j, "unmatched_frees", m->unmatched_frees);
		ct_json_kv_u64(j, "double_allocations", m->double_allocs);
		ct_json_kv_u64(j, "late_events", m->read.late_events);
		ct_json_kv_u64(j, "unknown_records", m->read.unknown_records);
		ct_json_kv_u64(j, "stacks", ct_symtab_stack_count(m->syms));
		ct_json_kv_u64(j, "modules", ct_symtab_module_count(m->syms));
		ct_json_kv_u64(j, "marks", m->marks);
		ct_marks_json(j, m->marks_list);
		ct_json_kv_u64(j, "start_monotonic_ns", ct_model_start_ns(m));
		ct_json_kv_u64(j, "start_realtime_ns", m->start_realtime_ns);
		ct_json_kv_u64(j, "duration_ns", ct_model_duration_ns(m));
		ct_json_kv_u64(j, "leak_count", m->leak_count);
		ct_json_kv_u64(j, "leak_bytes", m->leak_bytes);
		ct_json_kv_u64(j, "peak_bytes", m->peak_bytes);
		ct_json_key(j, "peak_time_ns");
		uint64_t s = ct_model_start_ns(m);
		ct_json_u64(j, m->peak_seen && m->peak_ts >= s ? m->peak_ts - s : 0);
		ct_json_kv_u64(j, "embedded_symbols", ct_symtab_embedded_count(m->syms));
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);

	/* marks and NVTX ranges: only when there are any */
	int any_marks = 0;
	for (size_t d = 0; d < nm; d++)
		any_marks |= ms[d]->marks_list->n != 0;
	if (any_marks) {
		ct_json_key(j, "marks");
		ct_json_arr(j);
		for (size_t d = 0; d < nm; d++) {
			struct ct_marklist *l = ms[d]->marks_list;
			ct_marks_sort(l);
			for (size_t i = 0; i < l->n; i++) {
				ct_json_obj(j);
				ct_json_kv_str(j, "name", l->v[i].name);
				ct_json_kv_str(j, "kind", ct_mark_kind_name(l->v[i].kind));
				ct_json_kv_u64(j, "ts_ns", l->v[i].ts_ns);
				ct_json_kv_u64(j, "tid", l->v[i].tid);
				ct_json_kv_u64(j, "pid", ms[d]->pid);
				if (l->v[i].kind == CT_MARK_START || l->v[i].kind == CT_MARK_STOP)
					ct_json_kv_u64(j, "range_id", l->v[i].aux);
				if (l->v[i].kind == CT_MARK_STEP)
					ct_json_kv_str(j, "source", ct_step_source_name(l->v[i].aux));
				ct_json_obj_end(j);
			}
		}
		ct_json_arr_end(j);
	}

	ct_json_kv_u64(j, "allocations", allocs);
	ct_json_kv_u64(j, "frees", frees);
	ct_json_kv_u64(j, "failed_calls", failed);
	ct_json_kv_u64(j, "dropped_events", dropped);
	ct_json_kv_u64(j, "dropped_in_signal_handlers", dropped_signal);
	ct_json_kv_u64(j, "unmatched_frees", unmatched);
	ct_json_kv_u64(j, "double_allocations", doubles);
}

void ct_json_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t nm)
{
	struct ct_json j;
	ct_json_init(&j, f);
	ct_json_obj(&j);
	ct_json_kv_str(&j, "format", "cumtrace-report");
	ct_json_kv_u64(&j, "format_version", CT_REPORT_FORMAT_VERSION);
	ct_json_kv_str(&j, "command", ct_cmd_name(o->cmd));
	ct_json_kv_str(&j, "tool_version", o->tool_version);
	json_dumps(&j, ms, nm);
	if (ct_ranks_merged(o, nm))
		ct_ranks_json(&j, ms, nm);
	for (int i = 0; i < CT_CMD_COUNT; i++) {
		const struct ct_command *c = commands[i];
		if (c->json_section && (c->json_always || i == o->cmd))
			c->json_section(&j, o, ms, nm);
	}
	ct_json_obj_end(&j);
	ct_json_done(&j);
}

/* ---- summary ------------------------------------------------------------------------------- */

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
		m->read.status == CT_READ_TRUNCATED ? "truncated" : "complete");
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
			"  inconsistencies: %" PRIu64 " frees of unknown pointers, %" PRIu64
			" allocations over a live block\n",
			m->unmatched_frees, m->double_allocs);
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
	if (m->leak_count)
		fprintf(f, "  leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) in %zu site%s"
			   " (cumtrace-report leaks shows where)\n",
			m->leak_count, m->leak_count == 1 ? "" : "s",
			ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), m->leak_bytes, m->nleaks,
			m->nleaks == 1 ? "" : "s");
	else
		fputs("  leaks: none\n", f);
	if (m->marks)
		fprintf(f, "  marks: %" PRIu64 " (%" PRIu64 " ranges, %" PRIu64 " instants)\n",
			m->marks, m->marks_list->ranges, m->marks_list->instants);
	ct_marks_put_summary(f, m->marks_list);
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
			"  inconsistencies: %" PRIu64 " frees of unknown pointers, %" PRIu64
			" allocations over a live block\n",
			unmatched, doubles);
	ct_ranks_put_notes(f, mg.ranks, mg.nranks);
	fputc('\n', f);
	ct_ranks_put_table(f, mg.ranks, mg.nranks);
	text_apis(f, api);
	fputc('\n', f);
	const struct ct_rank *top = ct_ranks_top_peak(mg.ranks, mg.nranks, &peak);
	if (top) {
		fprintf(f, "  peak device memory: %s (%" PRIu64 " bytes), the sum of each rank's own peak; ",
			ct_fmt_bytes(peak, b1, sizeof b1), peak);
		fprintf(f, "highest: rank %ld, %s\n", top->rank,
			ct_fmt_bytes(top->m->peak_bytes, b1, sizeof b1));
	} else {
		fputs("  peak device memory: none allocated\n", f);
	}
	if (leak_count)
		fprintf(f, "  leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) in %zu site%s across the ranks"
			   " (cumtrace-report leaks shows where)\n",
			leak_count, leak_count == 1 ? "" : "s", ct_fmt_bytes(leak_bytes, b1, sizeof b1),
			leak_bytes, mg.n, mg.n == 1 ? "" : "s");
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

const struct ct_command ct_cmd_summary = {
	.name = "summary",
	.help = "calls per API, memory per kind and device, process info (default)",
	.formats = 1u << CT_FMT_TEXT | 1u << CT_FMT_JSON | 1u << CT_FMT_CSV,
	.min_dumps = 1,
	.render = render_summary,
	.json_section = json_summary,
	.json_always = 1,
};

/* ---- timeline ------------------------------------------------------------------------------- */

static void text_timeline(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588"};
	char b1[32], b2[32];
	const struct ct_timeline *tl = &m->tl;
	fputs("cumtrace timeline: ", f);
	ct_put_proc(f, m);
	if (!tl->started || !tl->nseries) {
		fputs(": no allocations\n", f);
		ct_put_notes(f, m);
		return;
	}
	uint64_t start = ct_model_start_ns(m);
	uint64_t t0 = tl->t0 >= start ? tl->t0 - start : 0;
	uint64_t bns = ct_tl_bucket_ns(tl, o->buckets);
	char b3[32];
	ct_fmt_dur(bns, b1, sizeof b1);
	ct_fmt_dur(t0, b2, sizeof b2);
	ct_fmt_dur(t0 + bns * o->buckets, b3, sizeof b3);
	fprintf(f, "\n  %s .. %s since start, %zu buckets of %s; each bar is the most bytes live in its bucket\n",
		b2, b3, o->buckets, b1);
	ct_put_notes(f, m);
	uint64_t *vals = ct_xcalloc(o->buckets, sizeof *vals);
	for (size_t s = 0; s < tl->nseries; s++) {
		const struct ct_tl_series *se = &tl->series[s];
		ct_tl_resample(tl, s, o->buckets, vals);
		uint64_t mx = 0;
		for (size_t i = 0; i < o->buckets; i++)
			if (vals[i] > mx)
				mx = vals[i];
		char label[48];
		snprintf(label, sizeof label, "%s dev %d", ct_kind_name(se->kind), se->device);
		fprintf(f, "  %-22s |", label);
		for (size_t i = 0; i < o->buckets; i++) {
			if (!vals[i] || !mx) {
				fputc(' ', f);
				continue;
			}
			unsigned __int128 lv = ((unsigned __int128)vals[i] * 8 + mx - 1) / mx;
			unsigned idx = lv ? (unsigned)lv - 1 : 0;
			if (idx > 7)
				idx = 7;
			fputs(blocks[idx], f);
		}
		fprintf(f, "| max %s, at end %s\n", ct_fmt_bytes(mx, b1, sizeof b1),
			ct_fmt_bytes(se->cur, b2, sizeof b2));
	}
	if (tl->dropped_series)
		fprintf(f, "  note: more than %d kind/device series: the rest are not shown\n",
			CT_TL_MAX_SERIES);
	free(vals);
}

static void csv_timeline(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			 size_t nm)
{
	fputs(nm > 1 ? "t_ms,kind,device,live_bytes_max,pid\n" : "t_ms,kind,device,live_bytes_max\n", f);
	uint64_t *vals = ct_xcalloc(o->buckets, sizeof *vals);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		const struct ct_timeline *tl = &m->tl;
		if (!tl->started)
			continue;
		uint64_t start = ct_model_start_ns(m);
		uint64_t t0 = tl->t0 >= start ? tl->t0 - start : 0;
		for (size_t s = 0; s < tl->nseries; s++) {
			uint64_t bns = ct_tl_resample(tl, s, o->buckets, vals);
			for (size_t i = 0; i < o->buckets; i++) {
				fprintf(f, "%.3f,%s,%d,%" PRIu64, (double)(t0 + i * bns) / 1e6,
					ct_kind_name(tl->series[s].kind), tl->series[s].device, vals[i]);
				if (nm > 1)
					fprintf(f, ",%" PRIu32, m->pid);
				fputc('\n', f);
			}
		}
	}
	free(vals);
}

/* "timeline": every (kind, device) series of every dump, resampled to --buckets. */
static void json_timeline(struct ct_json *j, const struct ct_report_opts *o,
			  struct ct_model *const *ms, size_t nm)
{
	ct_json_key(j, "timeline");
	ct_json_obj(j);
	uint64_t first_bns = 0;
	for (size_t d = 0; d < nm && !first_bns; d++)
		if (ms[d]->tl.started)
			first_bns = ct_tl_bucket_ns(&ms[d]->tl, o->buckets);
	ct_json_kv_u64(j, "bucket_ns", first_bns);
	ct_json_kv_u64(j, "buckets", o->buckets);
	ct_json_key(j, "series");
	ct_json_arr(j);
	uint64_t *vals = ct_xcalloc(o->buckets, sizeof *vals);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		const struct ct_timeline *tl = &m->tl;
		if (!tl->started)
			continue;
		uint64_t s = ct_model_start_ns(m);
		for (size_t si = 0; si < tl->nseries; si++) {
			uint64_t bns = ct_tl_resample(tl, si, o->buckets, vals);
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", m->pid);
			ct_json_kv_str(j, "kind", ct_kind_name(tl->series[si].kind));
			ct_json_kv_i64(j, "device", tl->series[si].device);
			ct_json_kv_u64(j, "bucket_ns", bns);
			ct_json_kv_u64(j, "start_ns", tl->t0 >= s ? tl->t0 - s : 0);
			ct_json_key(j, "live_bytes_max");
			ct_json_arr(j);
			for (size_t i = 0; i < o->buckets; i++)
				ct_json_u64(j, vals[i]);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
	}
	free(vals);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

static void render_timeline(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			    size_t n)
{
	ct_render_per_format(f, o, ms, n, text_timeline, csv_timeline);
}

const struct ct_command ct_cmd_timeline = {
	.name = "timeline",
	.help = "live bytes over time per memory kind and device",
	.formats = 1u << CT_FMT_TEXT | 1u << CT_FMT_JSON | 1u << CT_FMT_CSV,
	.min_dumps = 1,
	.render = render_timeline,
	.json_section = json_timeline,
	.json_always = 1,
};
