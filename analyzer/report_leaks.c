/* The leaks command: allocations never freed, grouped by site, largest first. */
#include <inttypes.h>
#include <stdlib.h>

#include "render.h"
#include "report.h"
#include "util.h"

static void text_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32];
	struct ct_model *one[1] = {m};
	size_t n;
	struct ct_item *v = ct_leak_items(one, 1, &n);
	if (!m->leak_count) {
		fputs("cumtrace leaks: no leaks in ", f);
		ct_put_proc(f, m);
		fputc('\n', f);
	} else {
		fprintf(f, "cumtrace leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) not freed in ",
			m->leak_count, m->leak_count == 1 ? "" : "s",
			ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), m->leak_bytes);
		ct_put_proc(f, m);
		fputc('\n', f);
	}
	ct_put_notes(f, m);
	int md = ct_multi_device(m);
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		char reason[64];
		fprintf(f, "#%-3zu %s in %" PRIu64 " allocation%s (%s, %s, %s", i + 1,
			ct_fmt_bytes(v[i].bytes, b1, sizeof b1), v[i].count, v[i].count == 1 ? "" : "s",
			ct_kind_name(v[i].kind), ct_api_name(v[i].api),
			ct_leak_reason(v[i].leak, reason, sizeof reason));
		if (md)
			fprintf(f, ", device %d", v[i].device);
		fputs(")\n", f);
		ct_text_stack(f, m, v[i].stack_id);
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

static void csv_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		      size_t nm)
{
	char reason[64];
	size_t n;
	struct ct_item *v = ct_leak_items(ms, nm, &n);
	fputs("pid,count,bytes,kind,device,api,reason,stack\n", f);
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%s,%d,%s,", v[i].m->pid, v[i].count,
			v[i].bytes, ct_kind_name(v[i].kind), v[i].device, ct_api_name(v[i].api));
		ct_csv_field(f, ct_leak_reason(v[i].leak, reason, sizeof reason));
		fputc(',', f);
		ct_csv_stack(f, v[i].m, v[i].stack_id);
		fputc('\n', f);
	}
	free(v);
}

/* "leaks": totals and the leak groups. */
static void json_leaks(struct ct_json *j, const struct ct_report_opts *o,
		       struct ct_model *const *ms, size_t nm)
{
	uint64_t leak_count = 0, leak_bytes = 0;
	for (size_t d = 0; d < nm; d++) {
		leak_count += ms[d]->leak_count;
		leak_bytes += ms[d]->leak_bytes;
	}
	size_t n;
	struct ct_item *v = ct_leak_items(ms, nm, &n);
	ct_json_key(j, "leaks");
	ct_json_obj(j);
	ct_json_kv_u64(j, "count", leak_count);
	ct_json_kv_u64(j, "bytes", leak_bytes);
	ct_json_items(j, o, v, n);
	ct_json_obj_end(j);
	free(v);
}

static void render_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			 size_t n)
{
	ct_render_per_format(f, o, ms, n, text_leaks, csv_leaks);
}

const struct ct_command ct_cmd_leaks = {
	.name = "leaks",
	.help = "allocations never freed, grouped by call stack, largest first",
	.formats = 1u << CT_FMT_TEXT | 1u << CT_FMT_JSON | 1u << CT_FMT_CSV,
	.min_dumps = 1,
	.render = render_leaks,
	.json_section = json_leaks,
	.json_always = 1,
};
