/*
 * windows: what a named range of the program leaves behind (the pytest
 * plugin's query, python/cumtrace/pytest_plugin.py: one range per test).
 *
 * A window is one range (cumtrace_range_push / pop on one thread, NVTX push /
 * pop or start / end) whose name matches --window (a glob: '*' matches any
 * run of characters; without it every range is a window). For each: the
 * allocations made inside it that are still live at its end, by site, and its
 * peak, the most bytes of such allocations live at one moment inside it.
 *
 * What counts is the device memory the program holds: framework blocks
 * (PyTorch's tensors, CuPy's arrays) and device bytes of the CUDA layer
 * (device memory, VMM physical), except the CUDA allocations an allocator
 * cache made (classify.h's cache rules: PyTorch's segments, CuPy's pool,
 * cuBLAS workspaces, NCCL buffers, ...). So a tensor still allocated is
 * counted and the free blocks a caching allocator keeps are not, with or
 * without the framework layer in the dump; PyTorch without its cache
 * (PYTORCH_NO_CUDA_MEMORY_CACHING=1, backend:cudaMallocAsync) makes one CUDA
 * allocation per tensor, which counts. Host memory (pinned, registered) and
 * managed memory are not counted, as in the peak report.
 *
 * A block counts for an open window when it became live after the window
 * opened, on any thread, and until it is freed: what was live before the
 * window never counts, and freeing it inside the window lowers nothing.
 * Windows may nest and overlap; a window still open at the end of the dump
 * (a dump read while the program runs) is reported as it stands, "open".
 *
 * Cost: the model's one pass; per allocation and free, a comparison for each
 * open window and a table lookup; a CUDA site is classified (its frames
 * resolved) once, the first time it allocates inside a window.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "model/classify.h"
#include "model/framework.h"
#include "model/marks.h"
#include "render/render.h"

/*
 * One site's blocks made inside a window: live now (at its end once it closed), and
 * at the window's last peak: a versioned snapshot, as the model keeps its sites' (the
 * values before the site's first change after that peak; the live ones when it has
 * not changed since).
 */
struct win_site {
	uint32_t site;
	uint64_t count, bytes;
	uint64_t saved_version, saved_count, saved_bytes;
};

struct window {
	char *name;
	uint32_t tid;
	uint64_t start_ts, end_ts;
	int closed;
	uint64_t allocs, alloc_bytes;	     /* counted blocks made inside it */
	uint64_t live_bytes, peak_bytes, peak_ts; /* of them, live now; the most at once, and when */
	uint64_t peak_version;		     /* new peaks so far: the sites' snapshots */
	struct win_site *sites;		     /* once closed, those live at its end or at its peak */
	size_t nsites, capsites;
	struct ct_imap sitemap; /* site -> index in sites, while open */
};

/* A range open on a thread (CT_MARK_PUSH) or by id (CT_MARK_START), a window or not. */
struct open_range {
	uint16_t opened_by;
	uint32_t tid;
	uint64_t id;
	size_t win; /* index in windows, SIZE_MAX when the name did not match */
};

struct windows {
	const char *pattern; /* NULL: every range */
	struct window *v;
	size_t n, cap;
	struct open_range *open;
	size_t nopen, capopen;
	size_t nopen_windows;
	uint8_t *verdict; /* per model site: 0 not yet asked, VERDICT_COUNTS or VERDICT_NOT */
	size_t nverdict;
};

#define VERDICT_COUNTS 1
#define VERDICT_NOT 2

static struct ct_frame frames[CT_ANALYSIS_FRAMES];

/* Does a CUDA-layer site's memory belong to the program (not to an allocator's cache)? */
static int program_memory(struct ct_model *m, const struct ct_site *s)
{
	if (!ct_kind_is_device_bytes(s->kind))
		return 0;
	size_t k = ct_analysis_frames(m, s->stack_id, frames, CT_ANALYSIS_FRAMES);
	struct ct_class_result r;
	ct_classify_frames(frames, k, 0, &r);
	if (r.cls != CT_CLASS_CACHE)
		return 1;
	/* PyTorch without its caching allocator: each of its allocations is one tensor */
	return ct_fw_torch_uncached(m) && !strcmp(ct_rule_get((size_t)r.rule)->allocator, "pytorch");
}

static int counts(struct windows *w, struct ct_model *m, uint32_t si, int framework)
{
	if (framework)
		return 1;
	if (si >= w->nverdict) {
		size_t cap = w->nverdict;
		w->verdict = ct_xgrow(w->verdict, &cap, (size_t)si + 1, 1);
		memset(w->verdict + w->nverdict, 0, cap - w->nverdict);
		w->nverdict = cap;
	}
	if (!w->verdict[si])
		w->verdict[si] = program_memory(m, &m->sites[si]) ? VERDICT_COUNTS : VERDICT_NOT;
	return w->verdict[si] == VERDICT_COUNTS;
}

static int site_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct window *)ctx)->sites[idx].site == *(const uint32_t *)key;
}

/* The entry of site in x, made when new. */
static struct win_site *window_site(struct window *x, uint32_t site)
{
	uint64_t h = ct_mix64(site);
	uint32_t i = ct_imap_get(&x->sitemap, h, site_eq, x, &site);
	if (i != CT_IMAP_NONE)
		return &x->sites[i];
	x->sites = ct_xgrow(x->sites, &x->capsites, x->nsites + 1, sizeof *x->sites);
	x->sites[x->nsites] = (struct win_site){.site = site, .saved_version = UINT64_MAX};
	ct_imap_put(&x->sitemap, h, (uint32_t)x->nsites);
	return &x->sites[x->nsites++];
}

/* The values of s at x's last peak. */
static void site_at_peak(const struct window *x, const struct win_site *s, uint64_t *count, uint64_t *bytes)
{
	int saved = s->saved_version == x->peak_version;
	*count = saved ? s->saved_count : s->count;
	*bytes = saved ? s->saved_bytes : s->bytes;
}

/* Keep s's values at x's last peak before they change. */
static void site_save(const struct window *x, struct win_site *s)
{
	if (s->saved_version != x->peak_version) {
		s->saved_version = x->peak_version;
		s->saved_count = s->count;
		s->saved_bytes = s->bytes;
	}
}

/* A block became live (alloc) or stopped being live: every open window it belongs to follows. */
static void follow(struct windows *w, struct ct_model *m, const struct ct_block *b, int alloc,
		   int framework)
{
	uint32_t site = b->site;
	int judged = 0;
	for (size_t i = 0; i < w->nopen && w->nopen_windows; i++) {
		if (w->open[i].win == SIZE_MAX)
			continue;
		struct window *x = &w->v[w->open[i].win];
		/* made after the window opened (a block of the very nanosecond it opened is not) */
		if (b->ts <= x->start_ts)
			continue;
		if (!judged++ && !counts(w, m, site, framework))
			return;
		if (!alloc) {
			uint32_t k = ct_imap_get(&x->sitemap, ct_mix64(site), site_eq, x, &site);
			if (k == CT_IMAP_NONE || !x->sites[k].count)
				continue;
			site_save(x, &x->sites[k]);
			x->sites[k].count--;
			x->sites[k].bytes = ct_sat_sub(x->sites[k].bytes, b->size);
			x->live_bytes = ct_sat_sub(x->live_bytes, b->size);
			continue;
		}
		struct win_site *s = window_site(x, site);
		site_save(x, s);
		x->allocs++;
		x->alloc_bytes = ct_sat_add(x->alloc_bytes, b->size);
		s->count++;
		s->bytes = ct_sat_add(s->bytes, b->size);
		x->live_bytes = ct_sat_add(x->live_bytes, b->size);
		if (x->live_bytes > x->peak_bytes) {
			x->peak_bytes = x->live_bytes;
			x->peak_ts = b->ts;
			x->peak_version++;
		}
	}
}

static void win_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b)
{
	follow(ctx, m, b, 1, 0);
}

static void win_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b,
			int how)
{
	follow(ctx, m, b, 0, 0);
}

static void win_fw_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b)
{
	follow(ctx, m, b, 1, 1);
}

static void win_fw_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			   const struct ct_block *b, int how)
{
	follow(ctx, m, b, 0, 1);
}

/* The window stops: its live sites are what it leaves behind. */
static void window_close(struct windows *w, size_t win, uint64_t ts, int closed)
{
	struct window *x = &w->v[win];
	x->end_ts = ts;
	x->closed = closed;
	size_t k = 0;
	for (size_t i = 0; i < x->nsites; i++) {
		uint64_t c, b;
		site_at_peak(x, &x->sites[i], &c, &b);
		if (x->sites[i].count || c)
			x->sites[k++] = x->sites[i];
	}
	x->nsites = k;
	ct_imap_free(&x->sitemap);
	w->nopen_windows--;
}

static void range_open(struct windows *w, const struct ct_mark *mk)
{
	size_t win = SIZE_MAX;
	if (!w->pattern || ct_glob(w->pattern, mk->name ? mk->name : "", 0)) {
		w->v = ct_xgrow(w->v, &w->cap, w->n + 1, sizeof *w->v);
		w->v[w->n] = (struct window){.name = ct_xstrdup(mk->name ? mk->name : ""),
					     .tid = mk->tid,
					     .start_ts = mk->ts_ns};
		win = w->n++;
		w->nopen_windows++;
	}
	w->open = ct_xgrow(w->open, &w->capopen, w->nopen + 1, sizeof *w->open);
	w->open[w->nopen++] = (struct open_range){mk->kind, mk->tid, mk->aux, win};
}

/* A pop closes the innermost range its thread pushed; an NVTX end the range of its id. */
static void range_close(struct windows *w, const struct ct_mark *mk)
{
	uint16_t by = mk->kind == CT_MARK_POP ? CT_MARK_PUSH : CT_MARK_START;
	for (size_t i = w->nopen; i-- > 0;) {
		const struct open_range *r = &w->open[i];
		if (r->opened_by != by || (by == CT_MARK_PUSH ? r->tid != mk->tid : r->id != mk->aux))
			continue;
		if (r->win != SIZE_MAX)
			window_close(w, r->win, mk->ts_ns, 1);
		memmove(&w->open[i], &w->open[i + 1], (w->nopen - i - 1) * sizeof *w->open);
		w->nopen--;
		return;
	}
}

static void win_mark(void *ctx, struct ct_model *m, const struct ct_mark *mk)
{
	if (mk->kind == CT_MARK_PUSH || mk->kind == CT_MARK_START)
		range_open(ctx, mk);
	else if (mk->kind == CT_MARK_POP || mk->kind == CT_MARK_STOP)
		range_close(ctx, mk);
}

/* End of the dump: windows still open are reported as they stand. */
static void win_finish(void *ctx, struct ct_model *m)
{
	struct windows *w = ctx;
	for (size_t i = 0; i < w->nopen; i++)
		if (w->open[i].win != SIZE_MAX)
			window_close(w, w->open[i].win, m->last_ts, 0);
	w->nopen = 0;
}

static void win_destroy(void *ctx)
{
	struct windows *w = ctx;
	for (size_t i = 0; i < w->n; i++) {
		free(w->v[i].name);
		free(w->v[i].sites);
		ct_imap_free(&w->v[i].sitemap);
	}
	free(w->v);
	free(w->open);
	free(w->verdict);
	free(w);
}

static void *win_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	struct windows *w = ct_xcalloc(1, sizeof *w);
	w->pattern = o->window;
	return w;
}

static const struct ct_analysis ct_analysis_windows = {
	.name = "windows",
	.attach = win_attach,
	.observe = {.alloc = win_alloc,
		    .release = win_release,
		    .mark = win_mark,
		    .fw_alloc = win_fw_alloc,
		    .fw_release = win_fw_release,
		    .finish = win_finish,
		    .destroy = win_destroy},
};

/* ---- rendering --------------------------------------------------------------------------------- */

/* A window's sites live at its end (at_peak: at its peak) as items, largest first (caller frees). */
static struct ct_item *window_items(struct ct_model *m, const struct window *x, int at_peak, size_t *n)
{
	struct ct_item *v = ct_xcalloc(x->nsites ? x->nsites : 1, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < x->nsites; i++) {
		uint64_t c = x->sites[i].count, b = x->sites[i].bytes;
		if (at_peak)
			site_at_peak(x, &x->sites[i], &c, &b);
		if (c)
			v[k++] = ct_site_item(m, &m->sites[x->sites[i].site], c, b);
	}
	ct_items_sort(v, k);
	*n = k;
	return v;
}

static uint64_t live_count(const struct window *x)
{
	uint64_t c = 0;
	for (size_t i = 0; i < x->nsites; i++)
		c += x->sites[i].count;
	return c;
}

/* What the peak is made of: "  at its peak:" and its sites, when any is not live at the end. */
static void text_peak_sites(FILE *f, const struct ct_report_opts *o, struct ct_model *m, const struct window *x)
{
	size_t n;
	struct ct_item *v = window_items(m, x, 1, &n);
	if (x->peak_bytes != x->live_bytes) {
		fputs("at its peak:\n", f);
		ct_text_items(f, o, m, v, n);
	}
	free(v);
}

static void text_windows(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	const struct windows *w = ct_model_state(m, &ct_analysis_windows);
	char b1[32], b2[32], b3[32];
	fputs("cumtrace windows: ", f);
	ct_put_proc(f, m);
	fprintf(f, ": %zu window%s\n", w ? w->n : 0, ct_plural_s(w ? w->n : 0));
	ct_put_notes(f, m);
	for (size_t i = 0; w && i < w->n; i++) {
		const struct window *x = &w->v[i];
		uint64_t c = live_count(x);
		fputs("\nwindow \"", f);
		ct_put_safe(f, x->name);
		fprintf(f, "\"%s: %" PRIu64 " allocation%s made inside it still live at its end, %s; peak %s; "
			   "%" PRIu64 " made in all, %s\n",
			x->closed ? "" : " (still open)", c, ct_plural_s(c),
			ct_fmt_bytes(x->live_bytes, b1, sizeof b1), ct_fmt_bytes(x->peak_bytes, b2, sizeof b2),
			x->allocs, ct_fmt_bytes(x->alloc_bytes, b3, sizeof b3));
		size_t n;
		struct ct_item *v = window_items(m, x, 0, &n);
		if (n)
			fputs("live at its end:\n", f);
		ct_text_items(f, o, m, v, n);
		free(v);
		text_peak_sites(f, o, m, x);
	}
}

/* "where": the innermost user frame of a site (classify.h), null when it has none. */
static void json_where(struct ct_json *j, struct ct_model *m, uint32_t stack_id)
{
	size_t k = ct_analysis_frames(m, stack_id, frames, CT_ANALYSIS_FRAMES);
	int u = ct_first_user_frame(frames, k);
	ct_json_key(j, "where");
	if (u < 0) {
		ct_json_null(j);
		return;
	}
	ct_json_obj(j);
	ct_json_kv_str(j, "file", frames[u].file);
	ct_json_kv_u64(j, "line", frames[u].line);
	ct_json_kv_str(j, "function", frames[u].function);
	ct_json_kv_bool(j, "python", frames[u].python);
	ct_json_obj_end(j);
}

/* The sites live at the window's end (at_peak: at its peak): how many, and the first --top. */
static void json_sites(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *m,
		       const struct window *x, int at_peak, const char *total_key, const char *key)
{
	size_t n;
	struct ct_item *v = window_items(m, x, at_peak, &n);
	ct_json_kv_u64(j, total_key, n);
	ct_json_key(j, key);
	ct_json_arr(j);
	for (size_t i = 0; i < ct_items_shown(o, n); i++) {
		ct_json_obj(j);
		ct_json_item_fields(j, &v[i]);
		json_where(j, m, v[i].stack_id);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	free(v);
}

static void json_window(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *m,
			const struct window *x)
{
	uint64_t s = ct_model_start_ns(m);
	ct_json_obj(j);
	ct_json_kv_str(j, "name", x->name);
	ct_json_kv_u64(j, "pid", m->pid);
	ct_json_kv_u64(j, "tid", x->tid);
	ct_json_kv_bool(j, "closed", x->closed);
	ct_json_kv_u64(j, "start_ns", ct_model_since_start(m, x->start_ts));
	ct_json_kv_u64(j, "end_ns", ct_model_since_start(m, x->end_ts));
	ct_json_kv_u64(j, "allocations", x->allocs);
	ct_json_kv_u64(j, "allocated_bytes", x->alloc_bytes);
	ct_json_kv_u64(j, "peak_bytes", x->peak_bytes);
	ct_json_kv_u64(j, "peak_ns", x->peak_bytes && x->peak_ts >= s ? x->peak_ts - s : 0);
	ct_json_kv_u64(j, "live_count", live_count(x));
	ct_json_kv_u64(j, "live_bytes", x->live_bytes);
	json_sites(j, o, m, x, 0, "sites_total", "sites");
	json_sites(j, o, m, x, 1, "peak_sites_total", "peak_sites");
	ct_json_obj_end(j);
}

/*
 * JSON of its own, not the document of the other commands: a query run once per
 * test reads only what it asked for (no marks list, no summary, leaks or peak).
 */
static void json_windows(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	const struct windows *w = ct_model_state(m, &ct_analysis_windows);
	struct ct_json j;
	ct_json_init(&j, f);
	ct_json_obj(&j);
	ct_json_kv_u64(&j, "format_version", CT_REPORT_FORMAT_VERSION);
	ct_json_kv_str(&j, "tool_version", o->tool_version);
	ct_json_kv_str(&j, "command", "windows");
	ct_json_kv_str(&j, "path", m->path);
	ct_json_kv_u64(&j, "pid", m->pid);
	ct_json_kv_bool(&j, "truncated", m->read.status == CT_READ_TRUNCATED);
	ct_json_kv_bool(&j, "framework_layer", ct_fw_devs(m, &(size_t){0}) != NULL);
	ct_json_kv_u64(&j, "windows_total", w ? w->n : 0);
	ct_json_key(&j, "windows");
	ct_json_arr(&j);
	for (size_t i = 0; w && i < w->n; i++)
		json_window(&j, o, m, &w->v[i]);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	ct_json_done(&j);
}

static void render_windows(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n)
{
	for (size_t d = 0; d < n; d++) /* one dump (commands.def) */
		(o->format == CT_FMT_JSON ? json_windows : text_windows)(f, o, ms[d]);
}

const struct ct_report ct_report_windows = {
	.uses = CT_USES(&ct_analysis_windows),
	.render = render_windows,
};
