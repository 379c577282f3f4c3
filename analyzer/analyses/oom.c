/*
 * The oom command: every allocation call that failed with out-of-memory
 * (result 2 with an allocation op: ct_op_is_allocation), with the request,
 * its stack, what the traced program had live on that device at that moment
 * by site, and the device's free/total memory the shim read right after the
 * failure (CT_REC_MEMINFO).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "model/framework.h"
#include "render/render.h"
#include "render/views.h"

#define OOM_KEEP CT_OOM_KEEP /* views.h */
#define OOM_PENDING 1024 /* CT_REC_MEMINFO records waiting for their failed event */

struct oom_site {
	uint32_t site;
	uint64_t count, bytes;
};

struct oom_fail {
	uint64_t ts, call_ts, size, stream, aux;
	uint32_t tid, stack_id;
	uint16_t api;
	uint8_t op, kind;
	int16_t device;
	int have_info;
	int16_t info_device;
	uint64_t free_bytes, total_bytes;
	uint64_t live_bytes, live_count; /* device bytes of its device at the failure */
	struct oom_site *sites;		 /* largest first, at most the --top of attach */
	size_t nsites, sites_total;
};

struct oom {
	struct oom_fail *v;
	size_t n, cap;
	uint64_t count, bytes; /* every failure */
	size_t top;
	struct ct_rec_meminfo pending[OOM_PENDING];
	uint8_t pending_used[OOM_PENDING];
	size_t next_pending;
};

static int cmp_oom_site(const void *a, const void *b)
{
	const struct oom_site *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* The device-bytes sites of device live now, largest first, at most top (0 = all). */
static void snapshot_sites(struct oom_fail *f, const struct ct_model *m, size_t top)
{
	size_t cap = 0, n = 0;
	struct oom_site *v = NULL;
	for (size_t i = 0; i < m->nsites; i++) {
		const struct ct_site *s = &m->sites[i];
		if (!ct_kind_is_device_bytes(s->kind) || s->device != f->device || !s->live_count)
			continue;
		v = ct_xgrow(v, &cap, n + 1, sizeof *v);
		v[n++] = (struct oom_site){(uint32_t)i, s->live_count, s->live_bytes};
		f->live_count += s->live_count;
	}
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_oom_site);
	f->sites_total = n;
	f->nsites = top && top < n ? top : n;
	f->sites = v;
	const struct ct_dev_peak *d = ct_model_dev_peak(m, f->device);
	f->live_bytes = d ? d->live : 0;
}

static void fill_info(struct oom_fail *f, const struct ct_rec_meminfo *mi)
{
	f->have_info = 1;
	f->info_device = mi->device;
	f->free_bytes = mi->free_bytes;
	f->total_bytes = mi->total_bytes;
}

static void oom_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	struct oom *o = ctx;
	if (ev->result != CT_RESULT_OUT_OF_MEMORY || !ct_op_is_allocation(ev->op))
		return;
	o->count++;
	o->bytes = ct_sat_add(o->bytes, ev->size);
	if (o->n == OOM_KEEP)
		return;
	o->v = ct_xgrow(o->v, &o->cap, o->n + 1, sizeof *o->v);
	struct oom_fail *f = &o->v[o->n++];
	memset(f, 0, sizeof *f);
	f->ts = ev->ts_ns;
	f->call_ts = ev->ts_ns >= ev->dur_ns ? ev->ts_ns - ev->dur_ns : 0;
	f->size = ev->size;
	f->stream = ev->stream;
	f->aux = ev->aux;
	f->tid = ev->tid;
	f->stack_id = ev->stack_id;
	f->api = ev->api;
	f->op = ev->op;
	f->kind = ev->kind;
	f->device = ev->device;
	snapshot_sites(f, m, o->top);
	for (size_t i = 0; i < OOM_PENDING; i++)
		if (o->pending_used[i] && o->pending[i].tid == f->tid &&
		    o->pending[i].call_ts_ns == f->call_ts) {
			fill_info(f, &o->pending[i]);
			o->pending_used[i] = 0;
			break;
		}
}

/* A CT_REC_MEMINFO: to its failure if that was seen already, else it waits for it. */
static void oom_meminfo(void *ctx, struct ct_model *m, const struct ct_rec_meminfo *mi)
{
	struct oom *o = ctx;
	(void)m;
	for (size_t i = o->n; i-- > 0;)
		if (!o->v[i].have_info && o->v[i].tid == mi->tid && o->v[i].call_ts == mi->call_ts_ns) {
			fill_info(&o->v[i], mi);
			return;
		}
	if (o->n == OOM_KEEP)
		return; /* its failure will not be kept */
	o->pending[o->next_pending] = *mi;
	o->pending_used[o->next_pending] = 1;
	o->next_pending = (o->next_pending + 1) % OOM_PENDING;
}

static void oom_destroy(void *ctx)
{
	struct oom *o = ctx;
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].sites);
	free(o->v);
	free(o);
}

static void *oom_attach(struct ct_model *m, const struct ct_report_opts *opts)
{
	struct oom *o = ct_xcalloc(1, sizeof *o);
	o->top = opts->top;
	return o;
}

const struct ct_analysis ct_analysis_oom = {
	.name = "oom",
	.attach = oom_attach,
	.observe = {.event = oom_event, .meminfo = oom_meminfo, .destroy = oom_destroy},
};

/* The live set of a failure as items (caller frees). */
static struct ct_item *fail_items(struct ct_model *m, const struct oom_fail *f)
{
	struct ct_item *v = ct_xcalloc(f->nsites + 1, sizeof *v);
	for (size_t i = 0; i < f->nsites; i++)
		v[i] = ct_site_item(m, &m->sites[f->sites[i].site], f->sites[i].count,
				    f->sites[i].bytes);
	return v;
}

static void text_oom(FILE *f, const struct ct_report_opts *opts, struct ct_model *m)
{
	char b1[32], b2[32];
	size_t n;
	uint64_t count, bytes;
	struct ct_oom_view *v = ct_view_ooms(m, &n, &count, &bytes);
	fputs("cumtrace oom: ", f);
	size_t fw_kept;
	uint64_t fw_total;
	ct_fw_ooms(m, &fw_kept, &fw_total);
	if (!count && fw_total) {
		fputs("no CUDA allocation failed with out-of-memory in ", f);
		ct_put_proc(f, m);
		fputs("\n", f);
		ct_text_fw_ooms(f, opts, m);
		free(v);
		return;
	}
	if (!count) {
		fputs("no allocation failed with out-of-memory in ", f);
		ct_put_proc(f, m);
		fputc('\n', f);
		ct_put_notes(f, m);
		free(v);
		return;
	}
	fprintf(f, "%" PRIu64 " allocation%s failed with out-of-memory (%s requested) in ", count,
		ct_plural_s(count), ct_fmt_bytes(bytes, b1, sizeof b1));
	ct_put_proc(f, m);
	fputc('\n', f);
	ct_put_notes(f, m);
	ct_text_fw_ooms(f, opts, m); /* the framework layer first: the tensors the program held */
	for (size_t i = 0; i < n; i++) {
		const struct ct_oom_view *x = &v[i];
		fprintf(f, "\nfailure %zu at %.3f ms: %s of %s (%" PRIu64 " bytes, kind %s) on device %d, "
			   "stream 0x%" PRIx64 ", thread %" PRIu32 "\n",
			i + 1, (double)x->time_ns / 1e6, ct_api_name(x->api),
			ct_fmt_bytes(x->size, b1, sizeof b1), x->size, ct_kind_name(x->kind), x->device,
			x->stream, x->tid);
		ct_text_stack(f, m, x->stack_id);
		if (x->have_info)
			fprintf(f, "  device %d right after: %s free of %s (%" PRIu64 " of %" PRIu64
				   " bytes)\n",
				x->info_device, ct_fmt_bytes(x->free_bytes, b1, sizeof b1),
				ct_fmt_bytes(x->total_bytes, b2, sizeof b2), x->free_bytes,
				x->total_bytes);
		else
			fputs("  free/total: not recorded (no context current, the CUPTI backend,"
			      " or an older cumtrace)\n",
			      f);
		fprintf(f, "  live on device %d then: %s (%" PRIu64 " bytes) in %" PRIu64
			   " allocation%s, by site:\n",
			x->device, ct_fmt_bytes(x->live_bytes, b1, sizeof b1), x->live_bytes,
			x->live_count, ct_plural_s(x->live_count));
		size_t ni;
		struct ct_item *items = ct_view_oom_items(m, i, &ni);
		ct_text_items(f, opts, m, items, ni);
		if (x->sites_total > ni) {
			uint64_t shown = 0;
			for (size_t k = 0; k < ni; k++)
				shown = ct_sat_add(shown, items[k].bytes);
			fprintf(f, "... and %zu more site%s: %s (--top 0 shows all)\n",
				x->sites_total - ni, ct_plural_s(x->sites_total - ni),
				ct_fmt_bytes(ct_sat_sub(x->live_bytes, shown), b1, sizeof b1));
		}
		free(items);
	}
	if (count > n)
		fprintf(f, "\n... and %" PRIu64 " more failure%s (the first %d are kept)\n",
			count - n, ct_plural_s(count - n), OOM_KEEP);
	free(v);
}

static void csv_oom(FILE *f, const struct ct_report_opts *opts, struct ct_model *const *ms,
		    size_t nm)
{
	(void)opts;
	fputs("pid,time_ns,api,kind,size,device,stream,tid,free_bytes,total_bytes,live_bytes,"
	      "label,stack\n",
	      f);
	for (size_t d = 0; d < nm; d++) {
		size_t n;
		uint64_t count, bytes;
		struct ct_oom_view *v = ct_view_ooms(ms[d], &n, &count, &bytes);
		for (size_t i = 0; i < n; i++) {
			const struct ct_oom_view *x = &v[i];
			fprintf(f, "%" PRIu32 ",%" PRIu64 ",%s,%s,%" PRIu64 ",%d,0x%" PRIx64 ",%" PRIu32 ",",
				ms[d]->pid, x->time_ns, ct_api_name(x->api), ct_kind_name(x->kind),
				x->size, x->device, x->stream, x->tid);
			if (x->have_info)
				fprintf(f, "%" PRIu64 ",%" PRIu64 ",", x->free_bytes, x->total_bytes);
			else
				fputs(",,", f);
			fprintf(f, "%" PRIu64 ",", x->live_bytes);
			ct_csv_site_label(f, ms[d], x->stack_id);
			fputc(',', f);
			ct_csv_stack(f, ms[d], x->stack_id);
			fputc('\n', f);
		}
		free(v);
	}
}

static void json_u64_or_null(struct ct_json *j, const char *key, int have, uint64_t v)
{
	ct_json_key(j, key);
	if (have)
		ct_json_u64(j, v);
	else
		ct_json_null(j);
}

/* "oom": totals and the failures (the first OOM_KEEP of each dump). */
static void json_oom(struct ct_json *j, const struct ct_report_opts *opts,
		     struct ct_model *const *ms, size_t nm)
{
	uint64_t count = 0, bytes = 0, kept = 0;
	for (size_t d = 0; d < nm; d++) {
		size_t n;
		uint64_t c, b;
		free(ct_view_ooms(ms[d], &n, &c, &b));
		count += c;
		bytes = ct_sat_add(bytes, b);
		kept += n;
	}
	ct_json_key(j, "oom");
	ct_json_obj(j);
	ct_json_kv_u64(j, "count", count);
	ct_json_kv_u64(j, "bytes_requested", bytes);
	ct_json_kv_u64(j, "failures_not_shown", count - kept);
	ct_json_fw_ooms(j, opts, ms, nm);
	ct_json_key(j, "failures");
	ct_json_arr(j);
	for (size_t d = 0; d < nm; d++) {
		struct ct_model *m = ms[d];
		size_t n;
		uint64_t c, b;
		struct ct_oom_view *v = ct_view_ooms(m, &n, &c, &b);
		for (size_t i = 0; i < n; i++) {
			const struct ct_oom_view *x = &v[i];
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", m->pid);
			ct_json_kv_u64(j, "time_ns", x->time_ns);
			ct_json_kv_str(j, "api", ct_api_name(x->api));
			ct_json_kv_str(j, "op", ct_op_name(x->op));
			ct_json_kv_str(j, "kind", ct_kind_name(x->kind));
			ct_json_kv_u64(j, "size", x->size);
			ct_json_kv_i64(j, "device", x->device);
			ct_json_kv_u64(j, "stream", x->stream);
			ct_json_kv_u64(j, "pool", x->pool);
			ct_json_kv_u64(j, "tid", x->tid);
			ct_json_kv_u64(j, "stack_id", x->stack_id);
			ct_json_site_label(j, m, x->stack_id);
			ct_json_key(j, "stack");
			ct_json_stack(j, m, x->stack_id);
			json_u64_or_null(j, "free_bytes", x->have_info, x->free_bytes);
			json_u64_or_null(j, "total_bytes", x->have_info, x->total_bytes);
			ct_json_key(j, "info_device");
			if (x->have_info)
				ct_json_i64(j, x->info_device);
			else
				ct_json_null(j);
			ct_json_kv_u64(j, "live_bytes", x->live_bytes);
			ct_json_kv_u64(j, "live_count", x->live_count);
			ct_json_kv_u64(j, "sites_total", x->sites_total);
			ct_json_key(j, "sites");
			ct_json_arr(j);
			size_t ni;
			struct ct_item *items = ct_view_oom_items(m, i, &ni);
			for (size_t k = 0; k < ni; k++)
				ct_json_item(j, &items[k]);
			free(items);
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
		free(v);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

const struct ct_report ct_report_oom = {
	.uses = CT_USES(&ct_analysis_oom),
	.text = text_oom,
	.csv = csv_oom,
	.json = json_oom,
};

/* ---- the view for other renderers (views.h) ------------------------------------------------- */

struct ct_oom_view *ct_view_ooms(const struct ct_model *m, size_t *n, uint64_t *count,
				 uint64_t *bytes)
{
	const struct oom *o = ct_model_state(m, &ct_analysis_oom);
	*n = 0;
	*count = *bytes = 0;
	if (!o)
		return NULL;
	struct ct_oom_view *out = ct_xcalloc(o->n + 1, sizeof *out);
	for (size_t i = 0; i < o->n; i++) {
		const struct oom_fail *x = &o->v[i];
		out[i] = (struct ct_oom_view){.time_ns = ct_model_since_start(m, x->ts),
					      .size = x->size,
					      .stream = x->stream,
					      .pool = x->aux,
					      .tid = x->tid,
					      .stack_id = x->stack_id,
					      .api = x->api,
					      .kind = x->kind,
					      .op = x->op,
					      .device = x->device,
					      .have_info = x->have_info,
					      .info_device = x->info_device,
					      .free_bytes = x->free_bytes,
					      .total_bytes = x->total_bytes,
					      .live_bytes = x->live_bytes,
					      .live_count = x->live_count,
					      .sites_total = x->sites_total};
	}
	*n = o->n;
	*count = o->count;
	*bytes = o->bytes;
	return out;
}

struct ct_item *ct_view_oom_items(struct ct_model *m, size_t i, size_t *n)
{
	const struct oom *o = ct_model_state(m, &ct_analysis_oom);
	*n = 0;
	if (!o || i >= o->n)
		return NULL;
	*n = o->v[i].nsites;
	return fail_items(m, &o->v[i]);
}
