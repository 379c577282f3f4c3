/*
 * The diff command: the leak sites of two dumps (BASE NEW) compared by their
 * identity (classify.h: class, API, kind and symbolized frames, never
 * addresses or stack ids): new sites, gone sites, and sites whose count or
 * bytes changed. Suppressed sites are left out on both sides.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "analyses/gate.h"
#include "base/util.h"
#include "render/render.h"

/* The leak groups of one dump with one identity, added up. */
struct dsite {
	uint64_t identity;
	uint64_t count, bytes;
	const struct ct_finding *rep; /* the largest group: its stack and class are shown */
};

struct dpair {
	const struct dsite *base, *now; /* either may be NULL */
	int64_t delta;			/* bytes now - base */
};

struct diff {
	struct ct_assessment *a[2];
	struct dsite *s[2];
	size_t ns[2];
	struct dpair *added, *gone, *changed;
	size_t nadded, ngone, nchanged, nsame;
};

static int cmp_dsite(const void *x, const void *y)
{
	const struct dsite *a = x, *b = y;
	return (a->identity > b->identity) - (a->identity < b->identity);
}

static struct dsite *group(const struct ct_assessment *a, size_t *n)
{
	struct dsite *v = ct_xcalloc(a->nleak ? a->nleak : 1, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < a->nleak; i++) {
		const struct ct_finding *f = &a->v[i];
		if (f->supp >= 0)
			continue;
		v[k++] = (struct dsite){f->identity, f->it.count, f->it.bytes, f};
	}
	qsort(v, k, sizeof *v, cmp_dsite);
	size_t u = 0;
	for (size_t i = 0; i < k; i++) {
		if (u && v[u - 1].identity == v[i].identity) {
			v[u - 1].count += v[i].count;
			v[u - 1].bytes = ct_sat_add(v[u - 1].bytes, v[i].bytes);
			if (v[i].rep->it.bytes > v[u - 1].rep->it.bytes)
				v[u - 1].rep = v[i].rep;
			continue;
		}
		v[u++] = v[i];
	}
	*n = u;
	return v;
}

static uint64_t mag(int64_t d)
{
	return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct dpair *a = x, *b = y;
	if (mag(a->delta) != mag(b->delta))
		return mag(a->delta) > mag(b->delta) ? -1 : 1;
	uint64_t ia = (a->now ? a->now : a->base)->identity, ib = (b->now ? b->now : b->base)->identity;
	return (ia > ib) - (ia < ib);
}

static void push(struct dpair **v, size_t *n, const struct dsite *base, const struct dsite *now)
{
	*v = ct_xrealloc(*v, (*n + 1) * sizeof **v);
	int64_t d = (int64_t)((now ? now->bytes : 0) - (base ? base->bytes : 0));
	(*v)[(*n)++] = (struct dpair){base, now, d};
}

static void diff_build(struct diff *d, const struct ct_report_opts *o, struct ct_model *const *ms)
{
	memset(d, 0, sizeof *d);
	struct ct_report_opts plain = *o;
	plain.baseline = NULL;
	for (int i = 0; i < 2; i++) {
		d->a[i] = ct_assess(&plain, &ms[i], 1, NULL);
		d->s[i] = group(d->a[i], &d->ns[i]);
	}
	size_t i = 0, k = 0;
	while (i < d->ns[0] || k < d->ns[1]) {
		const struct dsite *b = i < d->ns[0] ? &d->s[0][i] : NULL;
		const struct dsite *w = k < d->ns[1] ? &d->s[1][k] : NULL;
		if (b && (!w || b->identity < w->identity)) {
			push(&d->gone, &d->ngone, b, NULL);
			i++;
		} else if (w && (!b || w->identity < b->identity)) {
			push(&d->added, &d->nadded, NULL, w);
			k++;
		} else {
			if (b->bytes != w->bytes || b->count != w->count)
				push(&d->changed, &d->nchanged, b, w);
			else
				d->nsame++;
			i++;
			k++;
		}
	}
	if (d->nadded > 1)
		qsort(d->added, d->nadded, sizeof *d->added, cmp_pair);
	if (d->ngone > 1)
		qsort(d->gone, d->ngone, sizeof *d->gone, cmp_pair);
	if (d->nchanged > 1)
		qsort(d->changed, d->nchanged, sizeof *d->changed, cmp_pair);
}

static void diff_free(struct diff *d)
{
	for (int i = 0; i < 2; i++) {
		free(d->s[i]);
		ct_assessment_free(d->a[i]);
	}
	free(d->added);
	free(d->gone);
	free(d->changed);
}

static void text_sum(FILE *f, const char *what, const struct dpair *v, size_t n, int side)
{
	char b[32];
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes = ct_sat_add(bytes, side ? v[i].now->bytes : v[i].base->bytes);
	fprintf(f, "%s: %zu site%s", what, n, ct_plural_s(n));
	if (n)
		fprintf(f, ", %s", ct_fmt_bytes(bytes, b, sizeof b));
}

static void text_list(FILE *f, const struct ct_report_opts *o, const char *what, const struct dpair *v,
		      size_t n)
{
	char b1[32], b2[32], b3[32];
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		const struct dsite *s = v[i].now ? v[i].now : v[i].base;
		const struct ct_finding *x = s->rep;
		fprintf(f, "%s #%-3zu ", what, i + 1);
		if (v[i].base && v[i].now) {
			fprintf(f, "%s in %" PRIu64 " -> %s in %" PRIu64 " allocation%s (%s%s)",
				ct_fmt_bytes(v[i].base->bytes, b1, sizeof b1), v[i].base->count,
				ct_fmt_bytes(v[i].now->bytes, b2, sizeof b2), v[i].now->count,
				ct_plural_s(v[i].now->count),
				v[i].delta < 0 ? "-" : "+", ct_fmt_bytes(mag(v[i].delta), b3, sizeof b3));
		} else {
			fprintf(f, "%s in %" PRIu64 " allocation%s", ct_fmt_bytes(s->bytes, b1, sizeof b1),
				s->count, ct_plural_s(s->count));
		}
		fprintf(f, " (%s, %s): %s\n", ct_kind_name(x->it.kind), ct_api_name(x->it.api),
			ct_class_title(x->cls));
		ct_text_stack(f, x->it.m, x->it.stack_id);
	}
	if (k < n)
		fprintf(f, "... and %zu more %s site%s (--top 0 shows all)\n", n - k, what,
			ct_plural_s(n - k));
}

static void text_diff(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms)
{
	struct diff d;
	diff_build(&d, o, ms);
	fputs("cumtrace diff: base ", f);
	ct_put_proc(f, ms[0]);
	fputs(" -> new ", f);
	ct_put_proc(f, ms[1]);
	fputs("\n  ", f);
	text_sum(f, "new", d.added, d.nadded, 1);
	fputs("; ", f);
	text_sum(f, "gone", d.gone, d.ngone, 0);
	fprintf(f, "; changed: %zu site%s; unchanged: %zu site%s\n", d.nchanged, ct_plural_s(d.nchanged),
		d.nsame, ct_plural_s(d.nsame));
	text_list(f, o, "new", d.added, d.nadded);
	text_list(f, o, "gone", d.gone, d.ngone);
	text_list(f, o, "changed", d.changed, d.nchanged);
	diff_free(&d);
}

static void json_side(struct ct_json *j, const char *key, const struct dsite *s)
{
	ct_json_key(j, key);
	if (!s) {
		ct_json_null(j);
		return;
	}
	ct_json_obj(j);
	ct_json_kv_u64(j, "count", s->count);
	ct_json_kv_u64(j, "bytes", s->bytes);
	ct_json_obj_end(j);
}

static void json_list(struct ct_json *j, const struct ct_report_opts *o, const char *key,
		      const struct dpair *v, size_t n)
{
	char id[24];
	ct_json_key(j, key);
	ct_json_arr(j);
	for (size_t i = 0; i < ct_items_shown(o, n); i++) {
		const struct dsite *s = v[i].now ? v[i].now : v[i].base;
		const struct ct_finding *x = s->rep;
		ct_json_obj(j);
		snprintf(id, sizeof id, "%016" PRIx64, s->identity);
		ct_json_kv_str(j, "identity", id);
		ct_json_kv_str(j, "class", ct_class_name(x->cls));
		ct_json_kv_str(j, "kind", ct_kind_name(x->it.kind));
		ct_json_kv_str(j, "api", ct_api_name(x->it.api));
		json_side(j, "base", v[i].base);
		json_side(j, "new", v[i].now);
		ct_json_kv_i64(j, "delta_bytes", v[i].delta);
		ct_json_site_label(j, x->it.m, x->it.stack_id);
		ct_json_key(j, "stack");
		ct_json_stack(j, x->it.m, x->it.stack_id);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

static void json_dump_ref(struct ct_json *j, const char *key, const struct ct_model *m)
{
	ct_json_key(j, key);
	ct_json_obj(j);
	ct_json_kv_str(j, "path", m->path);
	ct_json_kv_u64(j, "pid", m->pid);
	ct_json_obj_end(j);
}

/* "diff": the two dumps, then new, gone and changed sites. */
static void json_diff(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *const *ms,
		      size_t n)
{
	if (n != 2)
		return;
	struct diff d;
	diff_build(&d, o, ms);
	ct_json_key(j, "diff");
	ct_json_obj(j);
	json_dump_ref(j, "base_dump", ms[0]);
	json_dump_ref(j, "new_dump", ms[1]);
	json_list(j, o, "new", d.added, d.nadded);
	json_list(j, o, "gone", d.gone, d.ngone);
	json_list(j, o, "changed", d.changed, d.nchanged);
	ct_json_kv_u64(j, "new_total", d.nadded);
	ct_json_kv_u64(j, "gone_total", d.ngone);
	ct_json_kv_u64(j, "changed_total", d.nchanged);
	ct_json_kv_u64(j, "unchanged", d.nsame);
	ct_json_obj_end(j);
	diff_free(&d);
}

static void render_diff(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n)
{
	if (n == 2)
		text_diff(f, o, ms);
}

const struct ct_report ct_report_diff = {
	.render = render_diff,
	.json = json_diff,
};
