/* The peak command: the highest device memory use and what was live then. */
#include <inttypes.h>
#include <stdlib.h>

#include "render.h"
#include "report.h"
#include "util.h"

static void text_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32];
	struct ct_model *one[1] = {m};
	size_t n;
	struct ct_item *v = ct_peak_items(one, 1, &n);
	if (!m->peak_seen) {
		fputs("cumtrace peak: no device memory was allocated in ", f);
		ct_put_proc(f, m);
		fputc('\n', f);
		ct_put_notes(f, m);
		free(v);
		return;
	}
	uint64_t start = ct_model_start_ns(m);
	uint64_t t = m->peak_ts >= start ? m->peak_ts - start : 0;
	fprintf(f, "cumtrace peak: %s (%" PRIu64 " bytes) of device memory at %.3f ms in ",
		ct_fmt_bytes(m->peak_bytes, b1, sizeof b1), m->peak_bytes, (double)t / 1e6);
	ct_put_proc(f, m);
	fputc('\n', f);
	ct_put_notes(f, m);
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
	int md = ct_multi_device(m);
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "#%-3zu %s in %" PRIu64 " allocation%s (%s, %s", i + 1,
			ct_fmt_bytes(v[i].bytes, b1, sizeof b1), v[i].count, v[i].count == 1 ? "" : "s",
			ct_kind_name(v[i].kind), ct_api_name(v[i].api));
		if (md)
			fprintf(f, ", device %d", v[i].device);
		fputs(")\n", f);
		ct_text_stack(f, m, v[i].stack_id);
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

static void csv_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		     size_t nm)
{
	size_t n;
	struct ct_item *v = ct_peak_items(ms, nm, &n);
	fputs("pid,count,bytes,kind,device,api,stack\n", f);
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%s,%d,%s,", v[i].m->pid, v[i].count,
			v[i].bytes, ct_kind_name(v[i].kind), v[i].device, ct_api_name(v[i].api));
		ct_csv_stack(f, v[i].m, v[i].stack_id);
		fputc('\n', f);
	}
	free(v);
}

/* "peak": the sum of the dumps' peaks, the time of the largest, sites at the peak. */
static void json_peak(struct ct_json *j, const struct ct_report_opts *o,
		      struct ct_model *const *ms, size_t nm)
{
	uint64_t peak_bytes = 0, peak_time = 0, best_peak = 0;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		peak_bytes += m->peak_bytes;
		if (m->peak_seen && (m->peak_bytes > best_peak || !best_peak)) {
			best_peak = m->peak_bytes;
			uint64_t s = ct_model_start_ns(m);
			peak_time = m->peak_ts >= s ? m->peak_ts - s : 0;
		}
	}
	size_t n;
	struct ct_item *v = ct_peak_items(ms, nm, &n);
	ct_json_key(j, "peak");
	ct_json_obj(j);
	ct_json_kv_u64(j, "bytes", peak_bytes);
	ct_json_kv_u64(j, "time_ns", peak_time);
	ct_json_key(j, "kinds");
	ct_json_arr(j);
	ct_json_str(j, ct_kind_name(CT_KIND_DEVICE));
	ct_json_str(j, ct_kind_name(CT_KIND_VMM_PHYSICAL));
	ct_json_arr_end(j);
	ct_json_key(j, "device_bytes");
	ct_json_obj(j);
	{
		size_t nd;
		int16_t *devs = ct_devices_of(ms, nm, 0, &nd);
		uint64_t *db = ct_xcalloc(nd, sizeof *db);
		for (size_t i = 0; i < n; i++) {
			size_t x = ct_find_dev(devs, nd, v[i].device);
			if (x < nd && devs[x] == v[i].device)
				db[x] += v[i].bytes;
		}
		for (size_t x = 0; x < nd; x++) {
			ct_json_dev_key(j, devs[x]);
			ct_json_u64(j, db[x]);
		}
		free(db);
		free(devs);
	}
	ct_json_obj_end(j);
	ct_json_kv_u64(j, "sites_total", n);
	ct_json_key(j, "sites");
	ct_json_arr(j);
	for (size_t i = 0; i < ct_items_shown(o, n); i++)
		ct_json_item(j, &v[i]);
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	free(v);
}

static void render_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			size_t n)
{
	ct_render_per_format(f, o, ms, n, text_peak, csv_peak);
}

const struct ct_command ct_cmd_peak = {
	.name = "peak",
	.help = "the highest device memory use and what was live at that moment",
	.formats = 1u << CT_FMT_TEXT | 1u << CT_FMT_JSON | 1u << CT_FMT_CSV,
	.min_dumps = 1,
	.render = render_peak,
	.json_section = json_peak,
	.json_always = 1,
};
