/* Marks and NVTX ranges of a dump. */
#include <stdlib.h>
#include <string.h>

#include <inttypes.h>

#include "base/util.h"
#include "cumtrace/format.h"
#include "model/marks.h"

struct ct_marklist *ct_marks_new(void)
{
	return ct_xcalloc(1, sizeof(struct ct_marklist));
}

void ct_marks_free(struct ct_marklist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	for (size_t i = 0; i < l->ncounters; i++)
		free(l->counters[i].name);
	free(l->counters);
	free(l);
}

void ct_marks_counter(struct ct_marklist *l, const char *name, size_t name_len, int device,
		      uint64_t value)
{
	size_t len = name ? strnlen(name, name_len) : 0;
	l->counter_samples++;
	struct ct_counter_stat *c = NULL;
	for (size_t i = 0; i < l->ncounters && !c; i++)
		if (l->counters[i].device == device && strlen(l->counters[i].name) == len &&
		    !memcmp(l->counters[i].name, name, len))
			c = &l->counters[i];
	if (!c) {
		if (l->ncounters >= CT_COUNTERS_MAX)
			return;
		l->counters = ct_xgrow(l->counters, &l->capcounters, l->ncounters + 1, sizeof *l->counters);
		c = &l->counters[l->ncounters++];
		*c = (struct ct_counter_stat){ct_xstrndup(len ? name : "", len), device, 0, 0, 0};
	}
	c->samples++;
	c->last = value;
	if (value > c->max)
		c->max = value;
}

void ct_marks_add(struct ct_marklist *l, uint64_t ts_ns, uint64_t aux, uint32_t tid,
		  unsigned kind, const char *name, size_t name_len)
{
	if (kind == CT_MARK_PUSH || kind == CT_MARK_START)
		l->ranges++;
	else if (kind == CT_MARK_INSTANT)
		l->instants++;
	else if (kind == CT_MARK_STEP)
		l->steps[aux < 3 ? aux : 0]++;
	if (l->n >= CT_MARKS_KEEP)
		return;
	l->v = ct_xgrow(l->v, &l->cap, l->n + 1, sizeof *l->v);
	struct ct_mark *mk = &l->v[l->n++];
	mk->ts_ns = ts_ns;
	mk->aux = aux;
	mk->tid = tid;
	mk->kind = (uint16_t)kind;
	mk->seq = l->n - 1;
	mk->name = ct_xstrndup(name ? name : "", name ? strnlen(name, name_len) : 0);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

const char *ct_mark_series_name(const char *name, char *out, size_t cap)
{
	const char *s = name ? name : "";
	size_t n = strlen(s), k = n;
	while (k > 0 && is_digit(s[k - 1]))
		k--;
	if (k == n) { /* no number at the end */
		snprintf(out, cap, "%s", s);
		return out;
	}
	if (k > 1 && s[k - 1] == '/' && is_digit(s[k - 2])) { /* "2/10": the number before the '/' too */
		k--;
		while (k > 0 && is_digit(s[k - 1]))
			k--;
	}
	/* a counter after a separator ("step 17", "iter_3", "step=5"), or the whole name; a number
	 * glued to a word names a thing ("layer1", "conv2"): kept */
	if (k > 0 && !strchr(" _-:=#", s[k - 1])) {
		snprintf(out, cap, "%s", s);
		return out;
	}
	snprintf(out, cap, "%.*s#", (int)k, s);
	return out;
}

const char *ct_mark_kind_name(unsigned kind)
{
	static const char *const names[] = {"instant", "push", "pop", "start", "end", "step", "exit"};
	return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

const char *ct_step_source_name(uint64_t source)
{
	return source == CT_STEP_EXPLICIT ? "explicit" : source == CT_STEP_OPTIMIZER ? "optimizer" : "unknown";
}


static int cmp_mark(const void *a, const void *b)
{
	const struct ct_mark *x = a, *y = b;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

void ct_marks_sort(struct ct_marklist *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, cmp_mark);
}

/* ---- entries: each range counted once ---------------------------------------------- */

struct entry_ref {
	const struct ct_mark_entry *e;
	size_t idx;
};

static int cmp_entry_name(const void *a, const void *b)
{
	const struct entry_ref *x = a, *y = b;
	int c = strcmp(x->e->name, y->e->name);
	if (c)
		return c;
	return (x->idx > y->idx) - (x->idx < y->idx); /* entries are in time order */
}

size_t ct_marks_entries(struct ct_marklist *l, uint64_t end_ns, struct ct_mark_entry **out)
{
	ct_marks_sort(l);
	size_t cap = l->n ? l->n : 1, n = 0, nopen = 0;
	struct ct_mark_entry *v = ct_xcalloc(cap, sizeof *v);
	size_t *open = ct_xcalloc(cap, sizeof *open); /* entries of ranges not closed yet */
	uint64_t *ids = ct_xcalloc(cap, sizeof *ids), *tids = ct_xcalloc(cap, sizeof *tids);
	for (size_t i = 0; i < l->n; i++) {
		const struct ct_mark *mk = &l->v[i];
		switch (mk->kind) {
		case CT_MARK_PUSH:
		case CT_MARK_START:
			open[nopen++] = n;
			ids[n] = mk->aux;
			tids[n] = mk->tid;
			/* open until closed: the end of the trace */
			v[n++] = (struct ct_mark_entry){mk->ts_ns, end_ns > mk->ts_ns ? end_ns : mk->ts_ns,
							mk->name, mk->kind, 0};
			break;
		case CT_MARK_INSTANT:
		case CT_MARK_STEP:
			v[n++] = (struct ct_mark_entry){mk->ts_ns, mk->ts_ns, mk->name, mk->kind, 0};
			break;
		case CT_MARK_POP:
		case CT_MARK_STOP: {
			/* the newest open range this closes: a push of the thread, a start of the id */
			uint16_t by = mk->kind == CT_MARK_POP ? CT_MARK_PUSH : CT_MARK_START;
			for (size_t k = nopen; k-- > 0;) {
				size_t e = open[k];
				int mine = by == CT_MARK_PUSH ? tids[e] == mk->tid : ids[e] == mk->aux;
				if (v[e].kind != by || !mine)
					continue;
				v[e].end_ns = mk->ts_ns;
				memmove(&open[k], &open[k + 1], (nopen - k - 1) * sizeof *open);
				nopen--;
				break;
			}
			break;
		}
		default:
			break;
		}
	}
	free(open);
	free(ids);
	free(tids);
	/* by name, each in time order: an entry opening before the first one of its run ends
	 * is that one (later entries of a name only open after the run's earlier ones did) */
	struct entry_ref *r = ct_xcalloc(n ? n : 1, sizeof *r);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct entry_ref){&v[i], i};
	qsort(r, n, sizeof *r, cmp_entry_name);
	uint8_t *gone = ct_xcalloc(n ? n : 1, 1);
	for (size_t i = 0, keep = 0; i < n; i++) {
		struct ct_mark_entry *e = &v[r[i].idx], *k = &v[keep];
		if (i && !strcmp(k->name, e->name) && e->ts_ns <= k->end_ns) {
			if (e->end_ns > k->end_ns)
				k->end_ns = e->end_ns;
			k->merged += 1 + e->merged;
			gone[r[i].idx] = 1;
			continue;
		}
		keep = r[i].idx;
	}
	free(r);
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (!gone[i])
			v[kept++] = v[i];
	free(gone);
	*out = v;
	return kept;
}

/* ---- marks in time order ------------------------------------------------------------ */

struct ct_markq {
	struct ct_mark *v;
	size_t n, cap;
	uint64_t seq;
	char *last_name; /* name of the mark popped last */
};

struct ct_markq *ct_markq_new(void)
{
	return ct_xcalloc(1, sizeof(struct ct_markq));
}

void ct_markq_free(struct ct_markq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		free(q->v[i].name);
	free(q->v);
	free(q->last_name);
	free(q);
}

static int markq_less(const struct ct_mark *a, const struct ct_mark *b)
{
	return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->seq < b->seq;
}

void ct_markq_push(struct ct_markq *q, uint64_t ts_ns, uint64_t aux, uint32_t tid,
		   unsigned kind, const char *name, size_t name_len)
{
	q->v = ct_xgrow(q->v, &q->cap, q->n + 1, sizeof *q->v);
	struct ct_mark mk = {.ts_ns = ts_ns,
			     .aux = aux,
			     .tid = tid,
			     .kind = (uint16_t)kind,
			     .seq = q->seq++,
			     .name = ct_xstrndup(name ? name : "", name ? strnlen(name, name_len) : 0)};
	size_t i = q->n++;
	while (i && markq_less(&mk, &q->v[(i - 1) / 2])) {
		q->v[i] = q->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->v[i] = mk;
}

int ct_markq_pop(struct ct_markq *q, uint64_t until, struct ct_mark *out)
{
	if (!q->n || q->v[0].ts_ns > until)
		return 0;
	free(q->last_name);
	*out = q->v[0];
	q->last_name = out->name;
	struct ct_mark last = q->v[--q->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && markq_less(&q->v[c + 1], &q->v[c]))
			c++;
		if (!markq_less(&q->v[c], &last))
			break;
		q->v[i] = q->v[c];
		i = c;
	}
	if (q->n)
		q->v[i] = last;
	return 1;
}
