/*
 * The peak command: the highest device memory use and what was live then, of
 * all devices together and of each device alone, and the highest device
 * memory use reached inside each NVTX range name and each span between marks
 * ("phases").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "analyses/ranks.h"
#include "base/util.h"
#include "model/framework.h"
#include "model/marks.h"
#include "render/render.h"
#include "render/views.h"

/* ---- phases: device bytes inside NVTX ranges and between marks ---------------------- */

/*
 * Every range (NVTX push/pop per thread, start/end by range id) and every
 * span from one instant mark to the next (the first span runs from the start
 * of the trace to the first instant) is an instance of its name. An
 * instance's peak is the most device bytes (all devices, the peak's rule)
 * live at any moment from its opening to its closing; a name's row keeps the
 * highest over its instances.
 *
 * The ranges open at one moment all end "now", so their peaks so far can only
 * fall from the oldest to the newest: they are kept as segments of equal peak
 * over the open ranges in opening order. A rise of device bytes merges the
 * newest segments below it into one, so each event costs O(1) amortized;
 * closing a range costs O(open ranges), at most PHASE_OPEN_MAX.
 */
#define PHASE_OPEN_MAX CT_PHASE_OPEN_MAX /* views.h */
#define PHASE_ROWS_MAX CT_PHASE_ROWS_MAX
#define PHASE_ROW_NONE UINT32_MAX
#define PHASE_NAME_MAX 256 /* bytes of a phase's name kept (longer names are cut, and may merge) */

enum phase_kind { PHASE_START, PHASE_MARK, PHASE_RANGE };
static const char *const phase_kind_names[] = {"start", "mark", "range"};

/* How an open instance ends: CT_MARK_PUSH (pop on its thread), CT_MARK_START (its id), or: */
#define PHASE_BY_MARK 100 /* the next instant mark, or the end */

struct phase_row {
	char *name;
	uint8_t kind; /* enum phase_kind */
	uint64_t count, open_at_end;
	uint64_t peak, peak_ts, start_bytes; /* the instance with the highest peak (the first one) */
	uint64_t growth;		     /* largest peak - bytes at opening of one instance */
};

struct phase_open {
	uint64_t id;
	uint64_t start_bytes;
	uint32_t tid;
	uint32_t row; /* PHASE_ROW_NONE: its name is not tracked */
	uint16_t ends;
};

struct phase_seg {
	size_t first; /* index in open[] of its oldest range */
	uint64_t value, ts;
};

struct phases {
	struct phase_row *rows;
	size_t nrows, caprows;
	struct ct_imap rowmap;
	struct phase_open *open;
	size_t nopen, capopen;
	struct phase_seg *seg;
	size_t nseg, capseg;
	uint64_t live; /* device bytes as last seen */
	uint64_t untracked, rows_dropped, unmatched;
	int any_instant;
};

static uint64_t name_hash(const char *s, unsigned kind)
{
	uint64_t h = 0xcbf29ce484222325ull ^ kind;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return ct_mix64(h);
}

struct row_key {
	const char *name;
	unsigned kind;
};

static int row_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct phases *p = ctx;
	const struct row_key *k = key;
	return p->rows[idx].kind == k->kind && !strcmp(p->rows[idx].name, k->name);
}

static uint32_t row_of(struct phases *p, const char *mark_name, unsigned kind)
{
	char name[PHASE_NAME_MAX];
	ct_mark_series_name(mark_name, name, sizeof name); /* "step 17" -> "step #" (marks.h) */
	struct row_key k = {name, kind};
	uint64_t h = name_hash(name, kind);
	uint32_t i = ct_imap_get(&p->rowmap, h, row_eq, p, &k);
	if (i != CT_IMAP_NONE)
		return i;
	if (p->nrows == PHASE_ROWS_MAX)
		return PHASE_ROW_NONE;
	p->rows = ct_xgrow(p->rows, &p->caprows, p->nrows + 1, sizeof *p->rows);
	i = (uint32_t)p->nrows++;
	memset(&p->rows[i], 0, sizeof p->rows[i]);
	p->rows[i].name = ct_xstrdup(name);
	p->rows[i].kind = (uint8_t)kind;
	ct_imap_put(&p->rowmap, h, i);
	return i;
}

static void push_seg(struct phases *p, size_t first, uint64_t value, uint64_t ts)
{
	p->seg = ct_xgrow(p->seg, &p->capseg, p->nseg + 1, sizeof *p->seg);
	p->seg[p->nseg++] = (struct phase_seg){first, value, ts};
}

static void phase_open(struct phases *p, uint32_t row, uint16_t ends, uint32_t tid, uint64_t id,
		       uint64_t ts)
{
	if (p->nopen == PHASE_OPEN_MAX) {
		p->untracked++;
		return;
	}
	p->open = ct_xgrow(p->open, &p->capopen, p->nopen + 1, sizeof *p->open);
	size_t i = p->nopen++;
	p->open[i] = (struct phase_open){
		.id = id, .start_bytes = p->live, .tid = tid, .row = row, .ends = ends};
	push_seg(p, i, p->live, ts);
}

/* Device bytes rose to v at ts: every open range whose peak is below v gets v. */
static void phase_rise(struct phases *p, uint64_t v, uint64_t ts)
{
	size_t first = SIZE_MAX;
	while (p->nseg && p->seg[p->nseg - 1].value < v)
		first = p->seg[--p->nseg].first;
	if (first != SIZE_MAX)
		push_seg(p, first, v, ts);
}

/* Close open range k: its peak goes to its row; it leaves the open list. */
static void phase_close(struct phases *p, size_t k, int at_end)
{
	size_t lo = 0, hi = p->nseg; /* the last segment with first <= k */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->seg[mid].first <= k)
			lo = mid;
		else
			hi = mid;
	}
	const struct phase_open *o = &p->open[k];
	const struct phase_seg *s = &p->seg[lo];
	if (o->row != PHASE_ROW_NONE) {
		struct phase_row *r = &p->rows[o->row];
		if (!r->count || s->value > r->peak) {
			r->peak = s->value;
			r->peak_ts = s->ts;
			r->start_bytes = o->start_bytes;
		}
		uint64_t g = s->value >= o->start_bytes ? s->value - o->start_bytes : 0;
		if (g > r->growth)
			r->growth = g;
		r->count++;
		r->open_at_end += at_end != 0;
	} else if (o->ends != PHASE_BY_MARK || p->any_instant) {
		p->rows_dropped++;
	}
	size_t end = lo + 1 < p->nseg ? p->seg[lo + 1].first : p->nopen;
	size_t from = lo + 1;
	if (end - p->seg[lo].first == 1) {
		memmove(&p->seg[lo], &p->seg[lo + 1], (p->nseg - lo - 1) * sizeof *p->seg);
		p->nseg--;
		from = lo;
	}
	for (size_t t = from; t < p->nseg; t++)
		p->seg[t].first--;
	memmove(&p->open[k], &p->open[k + 1], (p->nopen - k - 1) * sizeof *p->open);
	p->nopen--;
}

/* The newest open range that ends as asked, SIZE_MAX if none. */
static size_t phase_find(const struct phases *p, uint16_t ends, uint32_t tid, uint64_t id)
{
	for (size_t i = p->nopen; i-- > 0;) {
		const struct phase_open *o = &p->open[i];
		if (o->ends == ends && (ends != CT_MARK_PUSH || o->tid == tid) &&
		    (ends != CT_MARK_START || o->id == id))
			return i;
	}
	return SIZE_MAX;
}

static void phases_mark(void *ctx, struct ct_model *m, const struct ct_mark *mk)
{
	struct phases *p = ctx;
	(void)m;
	size_t k;
	switch (mk->kind) {
	case CT_MARK_PUSH:
	case CT_MARK_START:
		phase_open(p, row_of(p, mk->name, PHASE_RANGE), mk->kind, mk->tid, mk->aux,
			   mk->ts_ns);
		break;
	case CT_MARK_POP:
	case CT_MARK_STOP:
		k = phase_find(p, mk->kind == CT_MARK_POP ? CT_MARK_PUSH : CT_MARK_START, mk->tid,
			       mk->aux);
		if (k == SIZE_MAX)
			p->unmatched++;
		else
			phase_close(p, k, 0);
		break;
	case CT_MARK_INSTANT:
		k = phase_find(p, PHASE_BY_MARK, 0, 0);
		if (k != SIZE_MAX) {
			/* the span before the first mark gets its row now */
			if (!p->any_instant)
				p->open[k].row = row_of(p, "", PHASE_START);
			phase_close(p, k, 0);
		}
		p->any_instant = 1;
		phase_open(p, row_of(p, mk->name, PHASE_MARK), PHASE_BY_MARK, mk->tid, 0, mk->ts_ns);
		break;
	default:
		break;
	}
}

static void phases_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	struct phases *p = ctx;
	if (m->dev_live > p->live)
		phase_rise(p, m->dev_live, ev->ts_ns);
	p->live = m->dev_live;
}

/* End of the trace: what is still open closes (the span after the last mark normally). */
static void phases_finish(void *ctx, struct ct_model *m)
{
	struct phases *p = ctx;
	(void)m;
	while (p->nopen) {
		size_t k = p->nopen - 1;
		phase_close(p, k, p->open[k].ends != PHASE_BY_MARK);
	}
}

static void phases_destroy(void *ctx)
{
	struct phases *p = ctx;
	for (size_t i = 0; i < p->nrows; i++)
		free(p->rows[i].name);
	free(p->rows);
	ct_imap_free(&p->rowmap);
	free(p->open);
	free(p->seg);
	free(p);
}

static void *phases_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	(void)o;
	struct phases *p = ct_xcalloc(1, sizeof *p);
	/* the span before the first mark; named only if a mark comes */
	phase_open(p, PHASE_ROW_NONE, PHASE_BY_MARK, 0, 0, 0);
	return p;
}

const struct ct_analysis ct_analysis_phases = {
	.name = "phases",
	.attach = phases_attach,
	.observe = {.event = phases_event, .mark = phases_mark, .finish = phases_finish,
		    .destroy = phases_destroy},
};

static int cmp_row(const void *a, const void *b)
{
	const struct phase_row *x = *(const struct phase_row *const *)a;
	const struct phase_row *y = *(const struct phase_row *const *)b;
	if (x->peak != y->peak)
		return x->peak > y->peak ? -1 : 1;
	if (x->peak_ts != y->peak_ts)
		return x->peak_ts < y->peak_ts ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The rows of a model's phases, highest peak first (caller frees); NULL when not tracked. */
static const struct phase_row **phase_rows(const struct ct_model *m, size_t *n)
{
	const struct phases *p = ct_model_state(m, &ct_analysis_phases);
	*n = 0;
	if (!p)
		return NULL;
	const struct phase_row **v = ct_xcalloc(p->nrows + 1, sizeof *v);
	for (size_t i = 0; i < p->nrows; i++)
		if (p->rows[i].count)
			v[(*n)++] = &p->rows[i];
	if (*n > 1)
		qsort(v, *n, sizeof *v, cmp_row);
	return v;
}

/* ---- per device ---------------------------------------------------------------------- */

static int cmp_dp_peak(const void *a, const void *b)
{
	const struct ct_dev_peak *x = *(const struct ct_dev_peak *const *)a;
	const struct ct_dev_peak *y = *(const struct ct_dev_peak *const *)b;
	if (x->peak_bytes != y->peak_bytes)
		return x->peak_bytes > y->peak_bytes ? -1 : 1;
	return (x->device > y->device) - (x->device < y->device);
}

static int cmp_dp_device(const void *a, const void *b)
{
	const struct ct_dev_peak *x = *(const struct ct_dev_peak *const *)a;
	const struct ct_dev_peak *y = *(const struct ct_dev_peak *const *)b;
	return (x->device > y->device) - (x->device < y->device);
}

/*
 * Device peaks of a model that saw device bytes, by device number (caller
 * frees): the CT_DEVICES_SHOWN highest, *more gets how many others there are.
 * Each shown device costs a pass over the sites.
 */
static const struct ct_dev_peak **dev_peaks(const struct ct_model *m, size_t *n, size_t *more)
{
	const struct ct_dev_peak **v = ct_xcalloc(m->ndpeaks + 1, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < m->ndpeaks; i++)
		if (m->dpeaks[i].seen)
			v[k++] = &m->dpeaks[i];
	*more = 0;
	if (k > CT_DEVICES_SHOWN) {
		qsort(v, k, sizeof *v, cmp_dp_peak);
		*more = k - CT_DEVICES_SHOWN;
		k = CT_DEVICES_SHOWN;
	}
	qsort(v, k, sizeof *v, cmp_dp_device);
	*n = k;
	return v;
}

static int weigh_at_dev_peak(void *ctx, const struct ct_model *m, const struct ct_site *s,
			     uint64_t *count, uint64_t *bytes)
{
	const struct ct_dev_peak *d = ctx;
	if (!ct_kind_is_device_bytes(s->kind) || s->device != d->device)
		return 0;
	ct_site_at_dev_peak(m, s, count, bytes);
	return 1;
}

/* ---- text ------------------------------------------------------------------------------ */

static void text_phases(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32], b3[32];
	size_t n;
	struct ct_phase_view *v = ct_view_phases(m, &n);
	if (!n) {
		free(v);
		return;
	}
	fputs("\nphases (the most device bytes of all devices inside each NVTX range name and "
	      "each span between marks):\n",
	      f);
	fprintf(f, "  %-12s %12s %12s %7s  %s\n", "peak", "at", "growth", "count", "phase");
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		const struct ct_phase_view *r = &v[i];
		ct_fmt_dur(r->peak_ns, b2, sizeof b2);
		snprintf(b3, sizeof b3, "+");
		ct_fmt_bytes(r->growth_bytes, b3 + 1, sizeof b3 - 1);
		fprintf(f, "  %-12s %12s %12s %7" PRIu64 "  ", ct_fmt_bytes(r->peak_bytes, b1, sizeof b1),
			b2, b3, r->count);
		if (!strcmp(r->kind, "start")) {
			fputs("(before the first mark)", f);
		} else {
			fprintf(f, "%s \"", r->kind);
			ct_put_safe(f, r->name);
			fputc('"', f);
		}
		if (r->open_at_end)
			fprintf(f, " (%" PRIu64 " still open at the end)", r->open_at_end);
		fputc('\n', f);
	}
	if (k < n)
		fprintf(f, "  ... and %zu more (--top 0 shows all)\n", n - k);
	struct ct_phases_totals t;
	ct_view_phases_totals(m, &t);
	if (t.untracked || t.rows_dropped)
		fprintf(f,
			"  note: %" PRIu64 " range%s beyond %d open at once and %" PRIu64
			" instance%s of names beyond %d are not shown\n",
			t.untracked, ct_plural_s(t.untracked), PHASE_OPEN_MAX, t.rows_dropped,
			ct_plural_s(t.rows_dropped), PHASE_ROWS_MAX);
	free(v);
}

/*
 * ", in step K of N (SOURCE steps)": the step boundaries the exit point and growth use
 * (explicit, else the optimizer's, else inferred ones; model.h); step K ends at the K-th
 * boundary, and a time after the last one is "after the last of N steps".
 */
static void put_step(FILE *f, const struct ct_model *m, uint64_t ts)
{
	static const char *const source[3] = {"explicit", "optimizer", "inferred"};
	int k;
	size_t n, before = 0;
	const uint64_t *v = ct_model_step_series(m, &n, &k);
	while (before < n && v[before] < ts)
		before++;
	if (!n)
		return;
	if (before == n)
		fprintf(f, ", after the last of %zu %s steps", n, source[k]);
	else
		fprintf(f, ", in step %zu of %zu (%s steps)", before + 1, n, source[k]);
}

void ct_put_peak_when(FILE *f, struct ct_model *m)
{
	put_step(f, m, m->peak_ts);
	size_t np = 0;
	struct ct_phase_view *ph = ct_view_phases(m, &np);
	/* the NVTX range and the span after a mark whose own peak is the dump's (the same moment) */
	uint64_t at = ct_model_since_start(m, m->peak_ts);
	const char *range = NULL, *mark = NULL;
	for (size_t i = 0; i < np && ph[i].peak_bytes == m->peak_bytes; i++) {
		if (ph[i].peak_ns != at)
			continue;
		if (!range && strcmp(ph[i].kind, "range") == 0)
			range = ph[i].name;
		if (!mark && strcmp(ph[i].kind, "mark") == 0)
			mark = ph[i].name;
	}
	if (range) {
		fputs(", in range \"", f);
		ct_put_safe(f, range);
		fputc('"', f);
	}
	if (mark) {
		fputs(", after mark \"", f);
		ct_put_safe(f, mark);
		fputc('"', f);
	}
	free(ph);
}

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
		text_phases(f, o, m);
		return;
	}
	fprintf(f, "cumtrace peak: %s (%" PRIu64 " bytes) of device memory at %.3f ms",
		ct_fmt_bytes(m->peak_bytes, b1, sizeof b1), m->peak_bytes,
		(double)ct_model_since_start(m, m->peak_ts) / 1e6);
	ct_put_peak_when(f, m);
	fputs(" in ", f);
	ct_put_proc(f, m);
	fputc('\n', f);
	ct_put_notes(f, m);
	ct_put_device_memory(f, m);
	ct_text_owners(f, m);
	ct_text_torch_uncached(f, m, "");
	size_t nd, more, nfw;
	const struct ct_dev_peak **dp = dev_peaks(m, &nd, &more);
	ct_fw_devs(m, &nfw);
	if (nfw) {
		/* the framework layer first: what the program held */
		ct_text_layers(f, o, m);
		fputs("\ndevice memory (CUDA layer) live at the peak:\n", f);
	}
	if (nd > 1) {
		/* per device at the peak of all devices */
		fputs("  by device:", f);
		for (size_t d = 0; d < nd; d++) {
			uint64_t b = 0;
			for (size_t i = 0; i < n; i++)
				if (v[i].device == dp[d]->device)
					b = ct_sat_add(b, v[i].bytes);
			fprintf(f, "%s %d: %s", d ? "," : "", dp[d]->device,
				ct_fmt_bytes(b, b2, sizeof b2));
		}
		fputc('\n', f);
	}
	ct_text_items(f, o, m, v, n);
	free(v);
	for (size_t d = 0; nd > 1 && d < nd; d++) {
		fprintf(f, "\ndevice %d: peak %s (%" PRIu64 " bytes) at %.3f ms\n", dp[d]->device,
			ct_fmt_bytes(dp[d]->peak_bytes, b1, sizeof b1), dp[d]->peak_bytes,
			(double)ct_model_since_start(m, dp[d]->peak_ts) / 1e6);
		v = ct_site_items(m, weigh_at_dev_peak, (void *)dp[d], &n);
		ct_text_items(f, o, m, v, n);
		free(v);
	}
	if (more) {
		char line[128];
		fprintf(f, "\n%s\n", ct_more_devices(more, line, sizeof line));
	}
	free(dp);
	text_phases(f, o, m);
}

/* 1 when m has more than the peak of all devices to show: several devices, or phases. */
static int has_details(const struct ct_model *m)
{
	size_t nd, np, more;
	free(dev_peaks(m, &nd, &more));
	free(ct_view_phases(m, &np));
	return nd > 1 || np > 0;
}

/*
 * The peaks of many dumps (the ranks of one job) as one report: the sum of
 * the ranks' own peaks, the largest, the table of ranks, and the sites live
 * at each rank's peak merged by identity with their share in each rank.
 */
/* The framework layer's peaks, a line per rank and device (--per-dump: the tensors live at each). */
static void text_merged_layers(FILE *f, const struct ct_merge *mg)
{
	int any = 0;
	for (size_t i = 0; i < mg->nranks; i++)
		any |= ct_layers_any(mg->ranks[i].m);
	if (!any)
		return;
	fprintf(f, "\nthe framework layer, each %s's peaks (the tensors live at each: --per-dump):\n",
		ct_ranks_noun(mg->ranks, mg->nranks, 1));
	for (size_t i = 0; i < mg->nranks; i++) {
		char lead[80], name[64];
		snprintf(lead, sizeof lead, "%s: ", ct_rank_name(&mg->ranks[i], mg->ranks, mg->nranks, name, sizeof name));
		ct_text_layers_brief(f, mg->ranks[i].m, lead);
	}
}

static void text_peak_merged(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			     size_t nm)
{
	char b1[32];
	struct ct_merge mg;
	ct_merge_init(&mg, ms, nm);
	ct_merge_peak(&mg);
	uint64_t sum;
	const struct ct_rank *top = ct_ranks_top_peak(mg.ranks, mg.nranks, &sum);
	int details = 0;
	for (size_t i = 0; i < mg.nranks; i++)
		details |= has_details(mg.ranks[i].m);
	if (!top) {
		fputs("cumtrace peak: no device memory was allocated in ", f);
		ct_ranks_put_desc(f, mg.ranks, mg.nranks);
		fputc('\n', f);
	} else {
		char name[64];
		fprintf(f, "cumtrace peak: %s (%" PRIu64 " bytes) of device memory, the sum of each %s's own peak, in ",
			ct_fmt_bytes(sum, b1, sizeof b1), sum, ct_ranks_noun(mg.ranks, mg.nranks, 1));
		ct_ranks_put_desc(f, mg.ranks, mg.nranks);
		fprintf(f, "\n  highest: %s, %s (%" PRIu64 " bytes) at %.3f ms\n",
			ct_rank_name(top, mg.ranks, mg.nranks, name, sizeof name),
			ct_fmt_bytes(top->m->peak_bytes, b1, sizeof b1), top->m->peak_bytes,
			(double)ct_model_since_start(top->m, top->m->peak_ts) / 1e6);
	}
	ct_ranks_put_notes(f, mg.ranks, mg.nranks);
	if (details)
		fprintf(f, "  each %s's devices and phases: --per-dump\n", ct_ranks_noun(mg.ranks, mg.nranks, 1));
	fputc('\n', f);
	ct_ranks_put_table(f, mg.ranks, mg.nranks);
	text_merged_layers(f, &mg);
	if (mg.n)
		fprintf(f, "\nsites live at each %s's peak:\n", ct_ranks_noun(mg.ranks, mg.nranks, 1));
	struct ct_merged_style st = {0};
	ct_merged_put_list(f, o, &mg, &st);
	ct_merge_free(&mg);
}

/* ---- CSV: the sites at the peak of all devices ("all") and of their own device ("device") */

static void csv_rows(FILE *f, const struct ct_report_opts *o, const struct ct_item *v, size_t n,
		     const char *peak)
{
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%s,%d,%s,", v[i].m->pid, v[i].count,
			v[i].bytes, ct_kind_name(v[i].kind), v[i].device, ct_api_name(v[i].api));
		ct_csv_site_label(f, v[i].m, v[i].stack_id);
		fputc(',', f);
		ct_csv_stack(f, v[i].m, v[i].stack_id);
		fprintf(f, ",%s\n", peak);
	}
}

static void csv_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		     size_t nm)
{
	size_t n;
	struct ct_item *v = ct_peak_items(ms, nm, &n);
	fputs("pid,count,bytes,kind,device,api,label,stack,peak\n", f);
	csv_rows(f, o, v, n, "all");
	free(v);
	for (size_t x = 0; x < nm; x++) {
		size_t nd, more;
		const struct ct_dev_peak **dp = dev_peaks(ms[x], &nd, &more);
		for (size_t d = 0; d < nd; d++) {
			v = ct_site_items(ms[x], weigh_at_dev_peak, (void *)dp[d], &n);
			csv_rows(f, o, v, n, "device");
			free(v);
		}
		free(dp);
	}
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void json_devices(struct ct_json *j, const struct ct_report_opts *o,
			 struct ct_model *const *ms, size_t nm)
{
	ct_json_key(j, "devices");
	ct_json_arr(j);
	size_t not_shown = 0;
	for (size_t x = 0; x < nm; x++) {
		size_t nd, more;
		const struct ct_dev_peak **dp = dev_peaks(ms[x], &nd, &more);
		not_shown += more;
		for (size_t d = 0; d < nd; d++) {
			size_t n;
			struct ct_item *v = ct_site_items(ms[x], weigh_at_dev_peak, (void *)dp[d], &n);
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", ms[x]->pid);
			ct_json_kv_i64(j, "device", dp[d]->device);
			ct_json_kv_u64(j, "bytes", dp[d]->peak_bytes);
			ct_json_kv_u64(j, "time_ns", ct_model_since_start(ms[x], dp[d]->peak_ts));
			ct_json_items(j, o, v, n);
			ct_json_obj_end(j);
			free(v);
		}
		free(dp);
	}
	ct_json_arr_end(j);
	if (not_shown) /* devices past CT_DEVICES_SHOWN of each dump */
		ct_json_kv_u64(j, "devices_not_shown", not_shown);
}

/* "phases": only when they were tracked (the peak command's own document). */
static void json_phases(struct ct_json *j, const struct ct_report_opts *o,
			struct ct_model *const *ms, size_t nm)
{
	int tracked = 0;
	for (size_t x = 0; x < nm; x++) {
		size_t n;
		struct ct_phase_view *v = ct_view_phases(ms[x], &n);
		tracked |= v != NULL;
		free(v);
	}
	if (!tracked)
		return;
	ct_json_key(j, "phases");
	ct_json_arr(j);
	for (size_t x = 0; x < nm; x++) {
		size_t n;
		struct ct_phase_view *v = ct_view_phases(ms[x], &n);
		for (size_t i = 0; i < ct_items_shown(o, n); i++) {
			const struct ct_phase_view *r = &v[i];
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", ms[x]->pid);
			ct_json_kv_str(j, "kind", r->kind);
			ct_json_kv_str(j, "name", r->name);
			ct_json_kv_u64(j, "count", r->count);
			ct_json_kv_u64(j, "open_at_end", r->open_at_end);
			ct_json_kv_u64(j, "peak_bytes", r->peak_bytes);
			ct_json_kv_u64(j, "peak_time_ns", r->peak_ns);
			ct_json_kv_u64(j, "start_bytes", r->start_bytes);
			ct_json_kv_u64(j, "growth_bytes", r->growth_bytes);
			ct_json_obj_end(j);
		}
		free(v);
	}
	ct_json_arr_end(j);
}

/* "peak": the sum of the dumps' peaks, the time of the largest, sites at the peak;
 * for many dumps, "merged" (ranks.h). */
static void json_peak(struct ct_json *j, const struct ct_report_opts *o,
		      struct ct_model *const *ms, size_t nm)
{
	uint64_t peak_bytes = 0, peak_time = 0, best_peak = 0;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		peak_bytes = ct_sat_add(peak_bytes, m->peak_bytes);
		if (m->peak_seen && (m->peak_bytes > best_peak || !best_peak)) {
			best_peak = m->peak_bytes;
			peak_time = ct_model_since_start(m, m->peak_ts);
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
				db[x] = ct_sat_add(db[x], v[i].bytes);
		}
		for (size_t x = 0; x < nd; x++) {
			ct_json_dev_key(j, devs[x]);
			ct_json_u64(j, db[x]);
		}
		free(db);
		free(devs);
	}
	ct_json_obj_end(j);
	ct_json_items(j, o, v, n);
	free(v);
	ct_json_layers(j, o, ms, nm);
	json_devices(j, o, ms, nm);
	json_phases(j, o, ms, nm);
	if (nm == 1)
		ct_json_device_memory(j, ms[0]);
	if (ct_ranks_merged(o, nm)) {
		struct ct_merge mg;
		ct_merge_init(&mg, ms, nm);
		ct_merge_peak(&mg);
		ct_merged_json(j, o, &mg, NULL);
		ct_merge_free(&mg);
	}
	ct_json_obj_end(j);
}

static void render_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			size_t n)
{
	if (o->format == CT_FMT_TEXT && ct_ranks_merged(o, n))
		text_peak_merged(f, o, ms, n);
	else
		ct_render_per_format(f, o, ms, n, text_peak, csv_peak);
}

const struct ct_report ct_report_peak = {
	.uses = CT_USES(&ct_analysis_phases, &ct_analysis_torch_uncached),
	.render = render_peak,
	.json = json_peak,
};

/* ---- the view for other renderers (views.h) ------------------------------------------------- */

const struct ct_dev_peak **ct_view_dev_peaks(const struct ct_model *m, size_t *n, size_t *more)
{
	return dev_peaks(m, n, more);
}

struct ct_item *ct_view_dev_peak_items(struct ct_model *m, const struct ct_dev_peak *d, size_t *n)
{
	return ct_site_items(m, weigh_at_dev_peak, (void *)d, n);
}

struct ct_phase_view *ct_view_phases(const struct ct_model *m, size_t *n)
{
	const struct phase_row **v = phase_rows(m, n);
	if (!v)
		return NULL;
	struct ct_phase_view *out = ct_xcalloc(*n + 1, sizeof *out);
	for (size_t i = 0; i < *n; i++)
		out[i] = (struct ct_phase_view){.name = v[i]->name,
						.kind = phase_kind_names[v[i]->kind],
						.count = v[i]->count,
						.open_at_end = v[i]->open_at_end,
						.peak_bytes = v[i]->peak,
						.peak_ns = ct_model_since_start(m, v[i]->peak_ts),
						.start_bytes = v[i]->start_bytes,
						.growth_bytes = v[i]->growth};
	free(v);
	return out;
}

void ct_view_phases_totals(const struct ct_model *m, struct ct_phases_totals *t)
{
	const struct phases *p = ct_model_state(m, &ct_analysis_phases);
	t->untracked = p ? p->untracked : 0;
	t->rows_dropped = p ? p->rows_dropped : 0;
}
