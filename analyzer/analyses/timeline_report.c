/*
 * The timeline command: live bytes over time per memory kind and device, the
 * model's series (model/timeline.h) resampled to --buckets.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "render/render.h"

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

const struct ct_report ct_report_timeline = {
	.text = text_timeline,
	.csv = csv_timeline,
	.json = json_timeline,
};
