#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "marks.h"
#include "pystack.h"
#include "util.h"

static const char *const cmd_names[CT_CMD_COUNT] = {"summary", "leaks", "peak", "timeline"};

const char *ct_cmd_name(int cmd)
{
	return cmd >= 0 && cmd < CT_CMD_COUNT ? cmd_names[cmd] : "unknown";
}

int ct_cmd_parse(const char *name)
{
	for (int i = 0; i < CT_CMD_COUNT; i++)
		if (!strcmp(name, cmd_names[i]))
			return i;
	return -1;
}

uint64_t ct_report_leak_count(struct ct_model *const *models, size_t n)
{
	uint64_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += models[i]->leak_count;
	return c;
}

/* ---- site lists -------------------------------------------------------------------- */

/* One line of a leak or peak list: a leak group or a site at the peak. */
struct item {
	struct ct_model *m;
	uint32_t stack_id;
	uint16_t api;
	uint8_t kind;
	int16_t device;
	const struct ct_leak *leak; /* NULL for peak sites */
	uint64_t count, bytes;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->m->pid != y->m->pid)
		return x->m->pid < y->m->pid ? -1 : 1;
	if (x->leak && y->leak && x->leak->first_ts != y->leak->first_ts)
		return x->leak->first_ts < y->leak->first_ts ? -1 : 1;
	if (x->stack_id != y->stack_id)
		return x->stack_id < y->stack_id ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->api != y->api)
		return x->api < y->api ? -1 : 1;
	if (x->leak && y->leak) {
		if (x->leak->reason_op != y->leak->reason_op)
			return x->leak->reason_op < y->leak->reason_op ? -1 : 1;
		if (x->leak->reason_api != y->leak->reason_api)
			return x->leak->reason_api < y->leak->reason_api ? -1 : 1;
	}
	return 0;
}

static struct item *leak_items(struct ct_model *const *ms, size_t nm, size_t *n)
{
	size_t total = 0;
	for (size_t i = 0; i < nm; i++)
		total += ms[i]->nleaks;
	struct item *v = ct_xcalloc(total, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < nm; i++)
		for (size_t j = 0; j < ms[i]->nleaks; j++) {
			const struct ct_leak *l = &ms[i]->leaks[j];
			v[k++] = (struct item){.m = ms[i],
					       .stack_id = l->stack_id,
					       .api = l->api,
					       .kind = l->kind,
					       .device = l->device,
					       .leak = l,
					       .count = l->count,
					       .bytes = l->bytes};
		}
	qsort(v, k, sizeof *v, cmp_item);
	*n = k;
	return v;
}

static struct item *peak_items(struct ct_model *const *ms, size_t nm, size_t *n)
{
	size_t total = 0;
	for (size_t i = 0; i < nm; i++)
		total += ms[i]->nsites;
	struct item *v = ct_xcalloc(total, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < nm; i++) {
		const struct ct_model *m = ms[i];
		if (!m->peak_seen)
			continue;
		for (size_t j = 0; j < m->nsites; j++) {
			const struct ct_site *s = &m->sites[j];
			if (!ct_kind_is_device_bytes(s->kind))
				continue;
			uint64_t c, b;
			ct_site_at_peak(m, s, &c, &b);
			if (!c)
				continue;
			v[k++] = (struct item){.m = ms[i],
					       .stack_id = s->stack_id,
					       .api = s->api,
					       .kind = s->kind,
					       .device = s->device,
					       .count = c,
					       .bytes = b};
		}
	}
	qsort(v, k, sizeof *v, cmp_item);
	*n = k;
	return v;
}

static size_t shown(const struct ct_report_opts *o, size_t n)
{
	return o->top && o->top < n ? o->top : n;
}

/* ---- small formatting helpers -------------------------------------------------------- */

static void fmt_dur(uint64_t ns, char *buf, size_t cap)
{
	if (ns < 1000)
		snprintf(buf, cap, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, cap, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
}

static void put_safe(FILE *f, const char *s)
{
	if (s)
		ct_fput_safe(f, s, strlen(s));
}

/* "pid 1234 (python train.py)" */
static void put_proc(FILE *f, const struct ct_model *m)
{
	if (!m->have_process) {
		fputs("an unknown process (no process record)", f);
		return;
	}
	fprintf(f, "pid %" PRIu32 " (", m->pid);
	size_t len = 0;
	if (m->argc) {
		for (size_t i = 0; i < m->argc && len < 200; i++) {
			if (i)
				fputc(' ', f);
			size_t l = strlen(m->argv[i]);
			if (len + l > 200) {
				ct_fput_safe(f, m->argv[i], 200 - len);
				fputs("...", f);
				len = 201;
				break;
			}
			ct_fput_safe(f, m->argv[i], l);
			len += l + 1;
		}
	} else if (m->exe) {
		put_safe(f, m->exe);
	} else {
		fputc('?', f);
	}
	fputc(')', f);
}

static int multi_device(const struct ct_model *m)
{
	int dev = 0, seen = 0;
	for (size_t i = 0; i < m->nkd; i++) {
		if (!m->kd[i].allocations)
			continue;
		if (seen && m->kd[i].device != dev)
			return 1;
		dev = m->kd[i].device;
		seen = 1;
	}
	return 0;
}

static void put_notes(FILE *f, const struct ct_model *m)
{
	if (m->read.status == CT_READ_TRUNCATED)
		fprintf(f,
			"  note: the dump is truncated at offset %" PRIu64
			" (the process died while writing); what came before is reported\n",
			m->read.truncated_offset);
	if (!m->end_seen)
		fputs("  note: no END record: the process crashed, was killed or is still running;"
		      " \"live at exit\" means live at the end of the dump\n",
		      f);
	if (m->dropped)
		fprintf(f,
			"  WARNING: %" PRIu64
			" events were dropped (ring buffers full): THE DATA IS INCOMPLETE\n",
			m->dropped);
}

/* ---- stacks ---------------------------------------------------------------------------- */

static struct ct_frame frames[CT_STACK_MAX];

static void text_stack(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	if (!stack_id) {
		fputs("      (no stack recorded)\n", f);
		return;
	}
	if (!ct_frames_has(m, stack_id)) {
		fprintf(f, "      (stack #%" PRIu32 " is missing from the dump)\n", stack_id);
		return;
	}
	size_t n = ct_frames_resolve(m, stack_id, frames, CT_STACK_MAX);
	if (!n)
		fputs("      (empty stack)\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct ct_frame *fr = &frames[i];
		if (fr->python) {
			fputs("      py ", f);
			put_safe(f, fr->function ? fr->function : "?");
			fputs(" (", f);
			put_safe(f, fr->file ? fr->file : "?");
			fprintf(f, ":%u)\n", fr->line);
			continue;
		}
		fputs("      at ", f);
		if (fr->function)
			put_safe(f, fr->function);
		else
			fputc('?', f);
		if (fr->file) {
			fputs(" (", f);
			put_safe(f, fr->file_short ? fr->file_short : fr->file);
			if (fr->line)
				fprintf(f, ":%u", fr->line);
			fputc(')', f);
		}
		if (fr->module) {
			fputs("  in ", f);
			put_safe(f, fr->module_name);
			if (!fr->file)
				fprintf(f, "+0x%" PRIx64, fr->offset);
			if (fr->build_id_mismatch)
				fputs(" (build id differs from the recorded one: not symbolized)", f);
		} else {
			fprintf(f, "  0x%" PRIx64, fr->ip);
		}
		fputc('\n', f);
	}
}

static void json_stack(struct ct_json *j, struct ct_model *m, uint32_t stack_id)
{
	ct_json_arr(j);
	size_t n = stack_id ? ct_frames_resolve(m, stack_id, frames, CT_STACK_MAX) : 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_frame *fr = &frames[i];
		ct_json_obj(j);
		if (fr->python) {
			ct_json_kv_bool(j, "python", 1);
			ct_json_kv_str(j, "function", fr->function);
			ct_json_kv_str(j, "file", fr->file);
			ct_json_kv_u64(j, "line", fr->line);
			ct_json_obj_end(j);
			continue;
		}
		ct_json_kv_str(j, "function", fr->function);
		ct_json_kv_str(j, "file", fr->file);
		ct_json_kv_u64(j, "line", fr->line);
		ct_json_kv_str(j, "module", fr->module);
		ct_json_kv_u64(j, "offset", fr->offset);
		ct_json_kv_str(j, "build_id", fr->build_id);
		ct_json_kv_u64(j, "ip", fr->ip);
		ct_json_kv_bool(j, "build_id_mismatch", fr->build_id_mismatch);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

/* One CSV field, quoted when needed. */
static void csv_field(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The stack as one field: "func (file:line) in module;..." innermost first. */
static void csv_stack(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	size_t n = stack_id ? ct_frames_resolve(m, stack_id, frames, CT_STACK_MAX) : 0;
	size_t cap = 256, len = 0;
	char *buf = ct_xmalloc(cap);
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_frame *fr = &frames[i];
		char one[1024];
		if (fr->python)
			snprintf(one, sizeof one, "%s%s (%s:%u) [python]", i ? ";" : "",
				 fr->function ? fr->function : "?", fr->file ? fr->file : "?",
				 fr->line);
		else if (fr->file)
			snprintf(one, sizeof one, "%s%s (%s:%u) in %s", i ? ";" : "",
				 fr->function ? fr->function : "?",
				 fr->file_short ? fr->file_short : fr->file, fr->line,
				 fr->module_name ? fr->module_name : "?");
		else if (fr->module)
			snprintf(one, sizeof one, "%s%s in %s+0x%" PRIx64, i ? ";" : "",
				 fr->function ? fr->function : "?", fr->module_name, fr->offset);
		else
			snprintf(one, sizeof one, "%s? 0x%" PRIx64, i ? ";" : "", fr->ip);
		size_t l = strlen(one);
		buf = ct_xgrow(buf, &cap, len + l + 1, 1);
		memcpy(buf + len, one, l + 1);
		len += l;
	}
	csv_field(f, buf);
	free(buf);
}

/* ---- leaks ------------------------------------------------------------------------------- */

static void text_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32];
	struct ct_model *one[1] = {m};
	size_t n;
	struct item *v = leak_items(one, 1, &n);
	if (!m->leak_count) {
		fputs("cumtrace leaks: no leaks in ", f);
		put_proc(f, m);
		fputc('\n', f);
	} else {
		fprintf(f, "cumtrace leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) not freed in ",
			m->leak_count, m->leak_count == 1 ? "" : "s",
			ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), m->leak_bytes);
		put_proc(f, m);
		fputc('\n', f);
	}
	put_notes(f, m);
	int md = multi_device(m);
	size_t k = shown(o, n);
	for (size_t i = 0; i < k; i++) {
		char reason[64];
		fprintf(f, "#%-3zu %s in %" PRIu64 " allocation%s (%s, %s, %s", i + 1,
			ct_fmt_bytes(v[i].bytes, b1, sizeof b1), v[i].count, v[i].count == 1 ? "" : "s",
			ct_kind_name(v[i].kind), ct_api_name(v[i].api),
			ct_leak_reason(v[i].leak, reason, sizeof reason));
		if (md)
			fprintf(f, ", device %d", v[i].device);
		fputs(")\n", f);
		text_stack(f, m, v[i].stack_id);
	}
	if (k < n) {
		uint64_t rest = 0, restc = 0;
		for (size_t i = k; i < n; i++) {
			rest += v[i].bytes;
			restc += v[i].count;
		}
		fprintf(f, "... and %zu more site%s: %s in %" PRIu64 " allocation%s (--top 0 shows all)\n",
			n - k, n - k == 1 ? "" : "s", ct_fmt_bytes(rest, b1, sizeof b1), restc,
			restc == 1 ? "" : "s");
	}
	free(v);
}

/* ---- peak ---------------------------------------------------------------------------------- */

static void text_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32];
	struct ct_model *one[1] = {m};
	size_t n;
	struct item *v = peak_items(one, 1, &n);
	if (!m->peak_seen) {
		fputs("cumtrace peak: no device memory was allocated in ", f);
		put_proc(f, m);
		fputc('\n', f);
		put_notes(f, m);
		free(v);
		return;
	}
	uint64_t start = ct_model_start_ns(m);
	uint64_t t = m->peak_ts >= start ? m->peak_ts - start : 0;
	fprintf(f, "cumtrace peak: %s (%" PRIu64 " bytes) of device memory at %.3f ms in ",
		ct_fmt_bytes(m->peak_bytes, b1, sizeof b1), m->peak_bytes, (double)t / 1e6);
	put_proc(f, m);
	fputc('\n', f);
	put_notes(f, m);
	/* per device at the peak */
	int16_t devs[64];
	uint64_t dbytes[64];
	size_t nd = 0;
	for (size_t i = 0; i < n; i++) {
		size_t d = 0;
		while (d < nd && devs[d] != v[i].device)
			d++;
		if (d == nd) {
			if (nd == 64)
				continue;
			devs[nd] = v[i].device;
			dbytes[nd++] = 0;
		}
		dbytes[d] += v[i].bytes;
	}
	if (nd > 1) {
		fputs("  by device:", f);
		for (size_t d = 0; d < nd; d++)
			fprintf(f, "%s %d: %s", d ? "," : "", devs[d],
				ct_fmt_bytes(dbytes[d], b2, sizeof b2));
		fputc('\n', f);
	}
	int md = multi_device(m);
	size_t k = shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "#%-3zu %s in %" PRIu64 " allocation%s (%s, %s", i + 1,
			ct_fmt_bytes(v[i].bytes, b1, sizeof b1), v[i].count, v[i].count == 1 ? "" : "s",
			ct_kind_name(v[i].kind), ct_api_name(v[i].api));
		if (md)
			fprintf(f, ", device %d", v[i].device);
		fputs(")\n", f);
		text_stack(f, m, v[i].stack_id);
	}
	if (k < n) {
		uint64_t rest = 0;
		for (size_t i = k; i < n; i++)
			rest += v[i].bytes;
		fprintf(f, "... and %zu more site%s: %s (--top 0 shows all)\n", n - k,
			n - k == 1 ? "" : "s", ct_fmt_bytes(rest, b1, sizeof b1));
	}
	free(v);
}

/* ---- summary ---------------------------------------------------------------------------------- */

static int cmp_kd(const void *a, const void *b)
{
	const struct ct_kd_stats *x = *(const struct ct_kd_stats *const *)a;
	const struct ct_kd_stats *y = *(const struct ct_kd_stats *const *)b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->device > y->device) - (x->device < y->device);
}

static void text_summary(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32], b3[32], b4[32];
	(void)o;
	fputs("cumtrace summary: ", f);
	put_proc(f, m);
	fputc('\n', f);
	if (m->have_process) {
		fprintf(f, "  ppid %" PRIu32 "%s, host ", m->ppid, m->forked ? " (fork child)" : "");
		put_safe(f, m->host ? m->host : "?");
		fputs(", cumtrace ", f);
		put_safe(f, m->version ? m->version : "?");
		fputc('\n', f);
	}
	fputs("  dump: ", f);
	put_safe(f, m->path ? m->path : "(memory)");
	fprintf(f, " (%s, %s)\n", ct_fmt_bytes(m->read.file_bytes, b1, sizeof b1),
		m->read.status == CT_READ_TRUNCATED ? "truncated" : "complete");
	fmt_dur(ct_model_duration_ns(m), b1, sizeof b1);
	fprintf(f, "  duration: %s, clean exit: %s\n", b1,
		m->end_seen ? "yes" : "NO (no END record: crashed, killed or still running)");
	fprintf(f,
		"  events: %" PRIu64 " (allocations %" PRIu64 ", frees %" PRIu64
		", failed calls %" PRIu64 ")\n",
		m->events, m->allocations, m->frees, m->failed_calls);
	if (m->unmatched_frees || m->double_allocs)
		fprintf(f,
			"  inconsistencies: %" PRIu64 " frees of unknown pointers, %" PRIu64
			" allocations over a live block\n",
			m->unmatched_frees, m->double_allocs);
	put_notes(f, m);

	int any = 0;
	for (unsigned a = 0; a <= CT_API_COUNT; a++)
		any |= m->api[a].calls != 0;
	if (any) {
		fprintf(f, "\n  %-30s %10s %9s %12s %12s\n", "API", "calls", "failures", "bytes",
			"call time");
		for (unsigned a = 0; a <= CT_API_COUNT; a++) {
			const struct ct_api_stats *s = &m->api[a];
			if (!s->calls)
				continue;
			fmt_dur(s->time_ns, b2, sizeof b2);
			fprintf(f, "  %-30s %10" PRIu64 " %9" PRIu64 " %12s %12s\n",
				a < CT_API_COUNT ? ct_api_name(a) : "unknown", s->calls, s->failures,
				ct_fmt_bytes(s->bytes, b1, sizeof b1), b2);
		}
	}
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
}

/* ---- timeline ------------------------------------------------------------------------------- */

static void text_timeline(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	static const char *const blocks[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
					      "\u2585", "\u2586", "\u2587", "\u2588"};
	char b1[32], b2[32];
	const struct ct_timeline *tl = &m->tl;
	fputs("cumtrace timeline: ", f);
	put_proc(f, m);
	if (!tl->started || !tl->nseries) {
		fputs(": no allocations\n", f);
		put_notes(f, m);
		return;
	}
	uint64_t start = ct_model_start_ns(m);
	uint64_t t0 = tl->t0 >= start ? tl->t0 - start : 0;
	uint64_t bns = ct_tl_bucket_ns(tl, o->buckets);
	char b3[32];
	fmt_dur(bns, b1, sizeof b1);
	fmt_dur(t0, b2, sizeof b2);
	fmt_dur(t0 + bns * o->buckets, b3, sizeof b3);
	fprintf(f, "\n  %s .. %s since start, %zu buckets of %s; each bar is the most bytes live in its bucket\n",
		b2, b3, o->buckets, b1);
	put_notes(f, m);
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

/* ---- CSV ---------------------------------------------------------------------------------------- */

static void csv_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		       size_t nm)
{
	char reason[64];
	switch (o->cmd) {
	case CT_CMD_TIMELINE: {
		fputs(nm > 1 ? "t_ms,kind,device,live_bytes_max,pid\n" : "t_ms,kind,device,live_bytes_max\n",
		      f);
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
						ct_kind_name(tl->series[s].kind), tl->series[s].device,
						vals[i]);
					if (nm > 1)
						fprintf(f, ",%" PRIu32, m->pid);
					fputc('\n', f);
				}
			}
		}
		free(vals);
		break;
	}
	case CT_CMD_LEAKS:
	case CT_CMD_PEAK: {
		int leaks = o->cmd == CT_CMD_LEAKS;
		size_t n;
		struct item *v = leaks ? leak_items(ms, nm, &n) : peak_items(ms, nm, &n);
		fputs(leaks ? "pid,count,bytes,kind,device,api,reason,stack\n"
			    : "pid,count,bytes,kind,device,api,stack\n",
		      f);
		size_t k = shown(o, n);
		for (size_t i = 0; i < k; i++) {
			fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%s,%d,%s,", v[i].m->pid,
				v[i].count, v[i].bytes, ct_kind_name(v[i].kind), v[i].device,
				ct_api_name(v[i].api));
			if (leaks) {
				csv_field(f, ct_leak_reason(v[i].leak, reason, sizeof reason));
				fputc(',', f);
			}
			csv_stack(f, v[i].m, v[i].stack_id);
			fputc('\n', f);
		}
		free(v);
		break;
	}
	default:
		fputs("pid,api,calls,failures,bytes,time_ns\n", f);
		for (size_t d = 0; d < nm; d++)
			for (unsigned a = 0; a <= CT_API_COUNT; a++) {
				const struct ct_api_stats *s = &ms[d]->api[a];
				if (!s->calls)
					continue;
				fprintf(f, "%" PRIu32 ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
					ms[d]->pid, a < CT_API_COUNT ? ct_api_name(a) : "unknown",
					s->calls, s->failures, s->bytes, s->time_ns);
			}
		break;
	}
}

/* ---- JSON ------------------------------------------------------------------------------------------- */

static void json_site(struct ct_json *j, const struct item *it)
{
	char reason[64];
	ct_json_obj(j);
	ct_json_kv_u64(j, "pid", it->m->pid);
	ct_json_kv_u64(j, "count", it->count);
	ct_json_kv_u64(j, "bytes", it->bytes);
	ct_json_kv_str(j, "kind", ct_kind_name(it->kind));
	ct_json_kv_str(j, "api", ct_api_name(it->api));
	if (it->leak) {
		ct_json_kv_str(j, "reason", ct_leak_reason(it->leak, reason, sizeof reason));
	}
	ct_json_kv_i64(j, "device", it->device);
	ct_json_kv_u64(j, "stack_id", it->stack_id);
	ct_json_key(j, "stack");
	json_stack(j, it->m, it->stack_id);
	ct_json_obj_end(j);
}

static void json_dev_key(struct ct_json *j, int dev)
{
	char k[16];
	snprintf(k, sizeof k, "%d", dev);
	ct_json_key(j, k);
}

static void json_kd(struct ct_json *j, const struct ct_kd_stats *s)
{
	ct_json_kv_u64(j, "allocations", s->allocations);
	ct_json_kv_u64(j, "frees", s->frees);
	ct_json_kv_u64(j, "bytes_allocated", s->bytes_allocated);
	ct_json_kv_u64(j, "peak_bytes", s->peak_bytes);
	ct_json_kv_u64(j, "live_bytes_at_end", s->live_bytes);
}

static int cmp_i16(const void *a, const void *b)
{
	int16_t x = *(const int16_t *)a, y = *(const int16_t *)b;
	return (x > y) - (x < y);
}

/* Sorted distinct devices of kind (or of every device-bytes kind when kind == 0). */
static int16_t *devices_of(struct ct_model *const *ms, size_t nm, unsigned kind, size_t *n)
{
	size_t cap = 0, k = 0;
	int16_t *v = NULL;
	for (size_t d = 0; d < nm; d++)
		for (size_t i = 0; i < ms[d]->nkd; i++) {
			const struct ct_kd_stats *s = &ms[d]->kd[i];
			if (kind ? s->kind != kind : !ct_kind_is_device_bytes(s->kind))
				continue;
			v = ct_xgrow(v, &cap, k + 1, sizeof *v);
			v[k++] = s->device;
		}
	if (k)
		qsort(v, k, sizeof *v, cmp_i16);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
	return v;
}

static size_t find_dev(const int16_t *devs, size_t n, int16_t dev)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (devs[mid] < dev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void json_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			size_t nm)
{
	struct ct_json j;
	ct_json_init(&j, f);
	uint64_t allocs = 0, frees = 0, failed = 0, dropped = 0, unmatched = 0, doubles = 0;
	uint64_t leak_count = 0, leak_bytes = 0, peak_bytes = 0, peak_time = 0, best_peak = 0;
	uint64_t tmin = UINT64_MAX, tmax = 0;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		allocs += m->allocations;
		frees += m->frees;
		failed += m->failed_calls;
		dropped += m->dropped;
		unmatched += m->unmatched_frees;
		doubles += m->double_allocs;
		leak_count += m->leak_count;
		leak_bytes += m->leak_bytes;
		peak_bytes += m->peak_bytes;
		if (m->peak_seen && (m->peak_bytes > best_peak || !best_peak)) {
			best_peak = m->peak_bytes;
			uint64_t s = ct_model_start_ns(m);
			peak_time = m->peak_ts >= s ? m->peak_ts - s : 0;
		}
		if (m->have_ts) {
			uint64_t s = ct_model_start_ns(m);
			if (s < tmin)
				tmin = s;
			if (m->last_ts > tmax)
				tmax = m->last_ts;
		}
	}

	ct_json_obj(&j);
	ct_json_kv_str(&j, "format", "cumtrace-report");
	ct_json_kv_u64(&j, "format_version", CT_REPORT_FORMAT_VERSION);
	ct_json_kv_str(&j, "command", ct_cmd_name(o->cmd));
	ct_json_kv_str(&j, "tool_version", o->tool_version);

	ct_json_key(&j, "dumps");
	ct_json_arr(&j);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		ct_json_obj(&j);
		ct_json_kv_str(&j, "path", m->path);
		ct_json_kv_u64(&j, "pid", m->pid);
		ct_json_kv_u64(&j, "ppid", m->ppid);
		ct_json_key(&j, "argv");
		ct_json_arr(&j);
		for (size_t i = 0; i < m->argc; i++)
			ct_json_str(&j, m->argv[i]);
		ct_json_arr_end(&j);
		ct_json_kv_str(&j, "host", m->host);
		ct_json_kv_str(&j, "exe", m->exe);
		ct_json_kv_str(&j, "cwd", m->cwd);
		ct_json_kv_str(&j, "cumtrace_version", m->version);
		ct_json_kv_bool(&j, "forked", m->forked != 0);
		ct_json_kv_bool(&j, "clean_exit", m->end_seen);
		ct_json_kv_bool(&j, "truncated", m->read.status == CT_READ_TRUNCATED);
		ct_json_key(&j, "truncated_offset");
		if (m->read.status == CT_READ_TRUNCATED)
			ct_json_u64(&j, m->read.truncated_offset);
		else
			ct_json_null(&j);
		ct_json_kv_u64(&j, "dropped_events", m->dropped);
		ct_json_kv_u64(&j, "bytes", m->read.file_bytes);
		ct_json_kv_u64(&j, "records", m->read.records);
		ct_json_kv_u64(&j, "events", m->events);
		ct_json_kv_u64(&j, "allocations", m->allocations);
		ct_json_kv_u64(&j, "frees", m->frees);
		ct_json_kv_u64(&j, "failed_calls", m->failed_calls);
		ct_json_kv_u64(&j, "unmatched_frees", m->unmatched_frees);
		ct_json_kv_u64(&j, "double_allocations", m->double_allocs);
		ct_json_kv_u64(&j, "late_events", m->read.late_events);
		ct_json_kv_u64(&j, "unknown_records", m->read.unknown_records);
		ct_json_kv_u64(&j, "stacks", ct_symtab_stack_count(m->syms));
		ct_json_kv_u64(&j, "modules", ct_symtab_module_count(m->syms));
		ct_json_kv_u64(&j, "marks", m->marks);
		ct_json_kv_u64(&j, "start_monotonic_ns", ct_model_start_ns(m));
		ct_json_kv_u64(&j, "start_realtime_ns", m->start_realtime_ns);
		ct_json_kv_u64(&j, "duration_ns", ct_model_duration_ns(m));
		ct_json_kv_u64(&j, "leak_count", m->leak_count);
		ct_json_kv_u64(&j, "leak_bytes", m->leak_bytes);
		ct_json_kv_u64(&j, "peak_bytes", m->peak_bytes);
		ct_json_key(&j, "peak_time_ns");
		uint64_t s = ct_model_start_ns(m);
		ct_json_u64(&j, m->peak_seen && m->peak_ts >= s ? m->peak_ts - s : 0);
		ct_json_obj_end(&j);
	}
	ct_json_arr_end(&j);

	/* marks and NVTX ranges: only when there are any */
	int any_marks = 0;
	for (size_t d = 0; d < nm; d++)
		any_marks |= ms[d]->marks_list->n != 0;
	if (any_marks) {
		ct_json_key(&j, "marks");
		ct_json_arr(&j);
		for (size_t d = 0; d < nm; d++) {
			struct ct_marklist *l = ms[d]->marks_list;
			ct_marks_sort(l);
			for (size_t i = 0; i < l->n; i++) {
				ct_json_obj(&j);
				ct_json_kv_str(&j, "name", l->v[i].name);
				ct_json_kv_str(&j, "kind", ct_mark_kind_name(l->v[i].kind));
				ct_json_kv_u64(&j, "ts_ns", l->v[i].ts_ns);
				ct_json_kv_u64(&j, "tid", l->v[i].tid);
				ct_json_kv_u64(&j, "pid", ms[d]->pid);
				if (l->v[i].kind == CT_MARK_START || l->v[i].kind == CT_MARK_STOP)
					ct_json_kv_u64(&j, "range_id", l->v[i].aux);
				ct_json_obj_end(&j);
			}
		}
		ct_json_arr_end(&j);
	}

	ct_json_kv_u64(&j, "allocations", allocs);
	ct_json_kv_u64(&j, "frees", frees);
	ct_json_kv_u64(&j, "failed_calls", failed);
	ct_json_kv_u64(&j, "dropped_events", dropped);
	ct_json_kv_u64(&j, "unmatched_frees", unmatched);
	ct_json_kv_u64(&j, "double_allocations", doubles);

	/* leaks */
	size_t n;
	struct item *v = leak_items(ms, nm, &n);
	ct_json_key(&j, "leaks");
	ct_json_obj(&j);
	ct_json_kv_u64(&j, "count", leak_count);
	ct_json_kv_u64(&j, "bytes", leak_bytes);
	ct_json_kv_u64(&j, "sites_total", n);
	ct_json_key(&j, "sites");
	ct_json_arr(&j);
	for (size_t i = 0; i < shown(o, n); i++)
		json_site(&j, &v[i]);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	free(v);

	/* peak */
	v = peak_items(ms, nm, &n);
	ct_json_key(&j, "peak");
	ct_json_obj(&j);
	ct_json_kv_u64(&j, "bytes", peak_bytes);
	ct_json_kv_u64(&j, "time_ns", peak_time);
	ct_json_key(&j, "kinds");
	ct_json_arr(&j);
	ct_json_str(&j, ct_kind_name(CT_KIND_DEVICE));
	ct_json_str(&j, ct_kind_name(CT_KIND_VMM_PHYSICAL));
	ct_json_arr_end(&j);
	ct_json_key(&j, "device_bytes");
	ct_json_obj(&j);
	{
		size_t nd;
		int16_t *devs = devices_of(ms, nm, 0, &nd);
		uint64_t *db = ct_xcalloc(nd, sizeof *db);
		for (size_t i = 0; i < n; i++) {
			size_t x = find_dev(devs, nd, v[i].device);
			if (x < nd && devs[x] == v[i].device)
				db[x] += v[i].bytes;
		}
		for (size_t x = 0; x < nd; x++) {
			json_dev_key(&j, devs[x]);
			ct_json_u64(&j, db[x]);
		}
		free(db);
		free(devs);
	}
	ct_json_obj_end(&j);
	ct_json_kv_u64(&j, "sites_total", n);
	ct_json_key(&j, "sites");
	ct_json_arr(&j);
	for (size_t i = 0; i < shown(o, n); i++)
		json_site(&j, &v[i]);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	free(v);

	/* summary */
	ct_json_key(&j, "summary");
	ct_json_obj(&j);
	ct_json_key(&j, "apis");
	ct_json_obj(&j);
	for (unsigned a = 0; a <= CT_API_COUNT; a++) {
		struct ct_api_stats t = {0};
		for (size_t d = 0; d < nm; d++) {
			t.calls += ms[d]->api[a].calls;
			t.failures += ms[d]->api[a].failures;
			t.bytes += ms[d]->api[a].bytes;
			t.time_ns += ms[d]->api[a].time_ns;
		}
		if (!t.calls)
			continue;
		ct_json_key(&j, a < CT_API_COUNT ? ct_api_name(a) : "unknown");
		ct_json_obj(&j);
		ct_json_kv_u64(&j, "calls", t.calls);
		ct_json_kv_u64(&j, "failures", t.failures);
		ct_json_kv_u64(&j, "bytes", t.bytes);
		ct_json_kv_u64(&j, "time_ns", t.time_ns);
		ct_json_obj_end(&j);
	}
	ct_json_obj_end(&j);
	ct_json_key(&j, "kinds");
	ct_json_obj(&j);
	for (unsigned k = 1; k < CT_KIND_COUNT; k++) {
		struct ct_kd_stats t = {0};
		for (size_t d = 0; d < nm; d++) {
			const struct ct_kd_stats *s = &ms[d]->kind_total[k];
			t.allocations += s->allocations;
			t.frees += s->frees;
			t.bytes_allocated += s->bytes_allocated;
			t.peak_bytes += s->peak_bytes;
			t.live_bytes += s->live_bytes;
		}
		ct_json_key(&j, ct_kind_name(k));
		ct_json_obj(&j);
		json_kd(&j, &t);
		ct_json_key(&j, "devices");
		ct_json_obj(&j);
		size_t nd;
		int16_t *devs = devices_of(ms, nm, k, &nd);
		for (size_t x = 0; x < nd; x++) {
			struct ct_kd_stats u = {0};
			for (size_t d = 0; d < nm; d++) {
				const struct ct_kd_stats *s = ct_model_kd(ms[d], k, devs[x]);
				if (!s)
					continue;
				u.allocations += s->allocations;
				u.frees += s->frees;
				u.bytes_allocated += s->bytes_allocated;
				u.peak_bytes += s->peak_bytes;
				u.live_bytes += s->live_bytes;
			}
			json_dev_key(&j, devs[x]);
			ct_json_obj(&j);
			json_kd(&j, &u);
			ct_json_obj_end(&j);
		}
		free(devs);
		ct_json_obj_end(&j);
		ct_json_obj_end(&j);
	}
	ct_json_obj_end(&j);
	ct_json_kv_u64(&j, "duration_ns", tmin == UINT64_MAX ? 0 : tmax - tmin);
	ct_json_obj_end(&j);

	/* timeline */
	ct_json_key(&j, "timeline");
	ct_json_obj(&j);
	uint64_t first_bns = 0;
	for (size_t d = 0; d < nm && !first_bns; d++)
		if (ms[d]->tl.started)
			first_bns = ct_tl_bucket_ns(&ms[d]->tl, o->buckets);
	ct_json_kv_u64(&j, "bucket_ns", first_bns);
	ct_json_kv_u64(&j, "buckets", o->buckets);
	ct_json_key(&j, "series");
	ct_json_arr(&j);
	uint64_t *vals = ct_xcalloc(o->buckets, sizeof *vals);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		const struct ct_timeline *tl = &m->tl;
		if (!tl->started)
			continue;
		uint64_t s = ct_model_start_ns(m);
		for (size_t si = 0; si < tl->nseries; si++) {
			uint64_t bns = ct_tl_resample(tl, si, o->buckets, vals);
			ct_json_obj(&j);
			ct_json_kv_u64(&j, "pid", m->pid);
			ct_json_kv_str(&j, "kind", ct_kind_name(tl->series[si].kind));
			ct_json_kv_i64(&j, "device", tl->series[si].device);
			ct_json_kv_u64(&j, "bucket_ns", bns);
			ct_json_kv_u64(&j, "start_ns", tl->t0 >= s ? tl->t0 - s : 0);
			ct_json_key(&j, "live_bytes_max");
			ct_json_arr(&j);
			for (size_t i = 0; i < o->buckets; i++)
				ct_json_u64(&j, vals[i]);
			ct_json_arr_end(&j);
			ct_json_obj_end(&j);
		}
	}
	free(vals);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);

	ct_json_obj_end(&j);
	ct_json_done(&j);
}

void ct_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *models, size_t n)
{
	if (o->format == CT_FMT_JSON) {
		json_report(f, o, models, n);
		return;
	}
	if (o->format == CT_FMT_CSV) {
		csv_report(f, o, models, n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc('\n', f);
		switch (o->cmd) {
		case CT_CMD_LEAKS:
			text_leaks(f, o, models[i]);
			break;
		case CT_CMD_PEAK:
			text_peak(f, o, models[i]);
			break;
		case CT_CMD_TIMELINE:
			text_timeline(f, o, models[i]);
			break;
		default:
			text_summary(f, o, models[i]);
			break;
		}
	}
}
