/* Growth leaks: live bytes per site sampled at step boundaries (growth.h). */
#include "analyses/growth.h"

#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "commands/options.h"
#include "model/classify.h"
#include "model/marks.h"
#include "model/model.h"

#define NAMES_MAX 1024	/* distinct mark names remembered */
#define NAME_LEN_MAX 255 /* longer names are cut (and may merge) */
#define THREADS_MAX 256	/* threads whose push/pop ranges are followed */
#define DEPTH_MAX 64	/* deeper pushes are counted, not named */
#define OPEN_MAX 4096	/* open start/end ranges remembered */
#define OPEN_SLOTS 8192
#define KEYS_MAX 256	/* distinct series whose boundaries are counted */
#define NO_NAME UINT32_MAX
#define UNTOUCHED UINT64_MAX

struct tstack {
	uint32_t tid;
	unsigned depth, overflow;
	uint32_t names[DEPTH_MAX];
};

struct open_range {
	uint64_t id; /* 0 = empty slot */
	uint32_t name;
};

/* A series seen, tracked or not: how many boundaries it had. */
struct skey {
	uint32_t name;
	int kind, depth;
	uint64_t count;
};

/* One tracked series: the live bytes of every touched site at its last N+1 boundaries. */
struct gseries {
	int used;
	uint32_t key; /* index into growth.keys */
	uint64_t seq; /* creation order */
	uint64_t nb;  /* boundaries seen */
	uint64_t *ring; /* (N + 1) values per site, by boundary index modulo N + 1 */
	uint64_t *last; /* boundary index of each site's last sample, UNTOUCHED if none */
	size_t nslots, capslots;
	uint32_t *dirty; /* sites changed since the last boundary */
	size_t ndirty, capdirty;
};

struct growth {
	unsigned window, min_grew;
	char *steps; /* --steps NAME, or NULL */
	char **names;
	size_t nnames, capnames;
	struct ct_imap namemap;
	struct tstack *threads;
	size_t nthreads;
	struct open_range *open;
	size_t nopen;
	struct skey *keys;
	size_t nkeys;
	struct ct_imap keymap;
	struct gseries series[CT_GROWTH_SERIES];
	uint64_t next_seq;
	uint8_t *dirtybits; /* per site: bit k = dirty in series k */
	size_t ndirtybits;
	uint64_t untracked;
	struct ct_growth_result result;
	struct ct_series_info infos[CT_GROWTH_SERIES];
};

const char *ct_series_kind_name(int kind)
{
	static const char *const names[] = {"instant", "range", "start/end", "step", "optimizer", "inferred"};
	return kind >= 0 && kind <= CT_SERIES_INFERRED ? names[kind] : "unknown";
}

void ct_growth_params(const struct ct_report_opts *o, unsigned *min_grew, unsigned *window)
{
	unsigned w = o->growth_window ? o->growth_window : CT_GROWTH_WINDOW;
	if (w > CT_GROWTH_WINDOW_MAX)
		w = CT_GROWTH_WINDOW_MAX;
	unsigned k = o->growth_min ? o->growth_min : (o->growth_window ? (3 * w + 3) / 4 : CT_GROWTH_MIN);
	if (k > w)
		k = w;
	*min_grew = k;
	*window = w;
}

/* ---- names, threads, open ranges ----------------------------------------------------------- */

static int name_eq(const void *ctx, uint32_t idx, const void *key)
{
	return !strcmp(((const struct growth *)ctx)->names[idx], key);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;
	for (; *s; s++)
		h = ct_hash2(h, (unsigned char)*s);
	return h;
}

static uint32_t intern(struct growth *g, const char *name)
{
	char cut[NAME_LEN_MAX + 1];
	/* "step 17" and "step 18" are one series: "step #" (marks.h) */
	ct_mark_series_name(name, cut, sizeof cut);
	uint64_t h = str_hash(cut);
	uint32_t i = ct_imap_get(&g->namemap, h, name_eq, g, cut);
	if (i != CT_IMAP_NONE)
		return i;
	if (g->nnames >= NAMES_MAX)
		return NO_NAME;
	g->names = ct_xgrow(g->names, &g->capnames, g->nnames + 1, sizeof *g->names);
	i = (uint32_t)g->nnames++;
	g->names[i] = ct_xstrdup(cut);
	ct_imap_put(&g->namemap, h, i);
	return i;
}

static struct tstack *thread_of(struct growth *g, uint32_t tid, int create)
{
	for (size_t i = 0; i < g->nthreads; i++)
		if (g->threads[i].tid == tid)
			return &g->threads[i];
	if (!create || g->nthreads >= THREADS_MAX)
		return NULL;
	if (!g->threads)
		g->threads = ct_xcalloc(THREADS_MAX, sizeof *g->threads);
	struct tstack *t = &g->threads[g->nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	return t;
}

static size_t open_home(uint64_t id)
{
	return (size_t)ct_mix64(id) & (OPEN_SLOTS - 1);
}

static void open_put(struct growth *g, uint64_t id, uint32_t name)
{
	if (!id || g->nopen >= OPEN_MAX)
		return;
	if (!g->open)
		g->open = ct_xcalloc(OPEN_SLOTS, sizeof *g->open);
	size_t i = open_home(id);
	while (g->open[i].id && g->open[i].id != id)
		i = (i + 1) & (OPEN_SLOTS - 1);
	if (!g->open[i].id)
		g->nopen++;
	g->open[i] = (struct open_range){id, name};
}

/* Remove id (backward-shift deletion); its name, or NO_NAME when it is not open. */
static uint32_t open_take(struct growth *g, uint64_t id)
{
	if (!id || !g->open)
		return NO_NAME;
	size_t i = open_home(id);
	while (g->open[i].id != id) {
		if (!g->open[i].id)
			return NO_NAME;
		i = (i + 1) & (OPEN_SLOTS - 1);
	}
	uint32_t name = g->open[i].name;
	for (;;) {
		g->open[i].id = 0;
		size_t j = i;
		for (;;) {
			j = (j + 1) & (OPEN_SLOTS - 1);
			if (!g->open[j].id) {
				g->nopen--;
				return name;
			}
			size_t k = open_home(g->open[j].id);
			int stay = i <= j ? (i < k && k <= j) : (i < k || k <= j);
			if (!stay)
				break;
		}
		g->open[i] = g->open[j];
		i = j;
	}
}

/* ---- series ---------------------------------------------------------------------------------- */

static void series_reset(struct growth *g, int k)
{
	struct gseries *s = &g->series[k];
	for (size_t i = 0; i < s->ndirty; i++)
		g->dirtybits[s->dirty[i]] &= (uint8_t)~(1u << k);
	free(s->ring);
	free(s->last);
	free(s->dirty);
	memset(s, 0, sizeof *s);
}

static int key_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct skey *a = &((const struct growth *)ctx)->keys[idx], *b = key;
	return a->name == b->name && a->kind == b->kind && a->depth == b->depth;
}

/* The counted series (name, kind, depth), its count raised by one; NO_NAME when there is no room. */
static uint32_t key_count(struct growth *g, uint32_t name, int kind, int depth)
{
	struct skey k = {name, kind, depth, 0};
	uint64_t h = ct_hash2(name, ((uint64_t)(uint32_t)kind << 32) | (uint32_t)depth);
	uint32_t i = ct_imap_get(&g->keymap, h, key_eq, g, &k);
	if (i == CT_IMAP_NONE) {
		if (g->nkeys >= KEYS_MAX)
			return NO_NAME;
		if (!g->keys)
			g->keys = ct_xcalloc(KEYS_MAX, sizeof *g->keys);
		i = (uint32_t)g->nkeys++;
		g->keys[i] = k;
		ct_imap_put(&g->keymap, h, i);
	}
	g->keys[i].count++;
	return i;
}

/*
 * The slot of the series key, taking a free one, or the one of the series with
 * the fewest boundaries (the oldest among equals) when the new one has had
 * more: the most frequent series are kept, and series that alternate do not
 * push each other out. -1 when it is not tracked.
 */
static int series_of(struct growth *g, uint32_t key)
{
	int free_slot = -1, victim = -1;
	for (int k = 0; k < CT_GROWTH_SERIES; k++) {
		struct gseries *s = &g->series[k];
		if (!s->used) {
			if (free_slot < 0)
				free_slot = k;
			continue;
		}
		if (s->key == key)
			return k;
		if (victim < 0 || g->keys[s->key].count < g->keys[g->series[victim].key].count ||
		    (g->keys[s->key].count == g->keys[g->series[victim].key].count &&
		     s->seq < g->series[victim].seq))
			victim = k;
	}
	if (g->steps && strcmp(g->names[g->keys[key].name], g->steps) &&
	    !ct_glob(g->steps, g->names[g->keys[key].name], 1))
		return -1;
	int k = free_slot;
	if (k < 0 && g->keys[key].count > g->keys[g->series[victim].key].count)
		k = victim;
	if (k < 0)
		return -1;
	if (g->series[k].used)
		series_reset(g, k);
	struct gseries *s = &g->series[k];
	s->used = 1;
	s->key = key;
	s->seq = g->next_seq++;
	return k;
}

static uint64_t *ring_of(const struct growth *g, const struct gseries *s, size_t site)
{
	return &s->ring[site * (g->window + 1)];
}

/* Make room for site in s: its slot starts untouched. */
static void series_grow(struct growth *g, struct gseries *s, size_t site)
{
	if (site < s->nslots)
		return;
	size_t need = site + 1, cap = s->capslots;
	if (need > cap) {
		cap = cap ? cap : 64;
		while (cap < need)
			cap *= 2;
		s->ring = ct_xrealloc(s->ring, cap * (g->window + 1) * sizeof *s->ring);
		s->last = ct_xrealloc(s->last, cap * sizeof *s->last);
		s->capslots = cap;
	}
	for (size_t i = s->nslots; i < need; i++)
		s->last[i] = UNTOUCHED;
	s->nslots = need;
}

/* Record value cur for site at boundary b, filling the boundaries since its last sample. */
static void sample(struct growth *g, struct gseries *s, size_t site, uint64_t b, uint64_t cur)
{
	uint64_t w1 = g->window + 1, *r = ring_of(g, s, site), l = s->last[site];
	uint64_t vl = r[l % w1];
	uint64_t from = l + 1;
	if (b > g->window && b - g->window > from)
		from = b - g->window;
	for (uint64_t x = from; x < b; x++)
		r[x % w1] = vl;
	r[b % w1] = cur;
	s->last[site] = b;
}

/* A site is about to change; pre is its live bytes before the change. */
static void touch(struct growth *g, uint32_t site, uint64_t pre)
{
	if (site >= g->ndirtybits) {
		size_t cap = g->ndirtybits, need = (size_t)site + 1;
		g->dirtybits = ct_xgrow(g->dirtybits, &cap, need, 1);
		memset(g->dirtybits + g->ndirtybits, 0, cap - g->ndirtybits);
		g->ndirtybits = cap;
	}
	for (int k = 0; k < CT_GROWTH_SERIES; k++) {
		struct gseries *s = &g->series[k];
		if (!s->used || !s->nb || g->dirtybits[site] & (1u << k))
			continue;
		series_grow(g, s, site);
		if (s->last[site] == UNTOUCHED) {
			/* unchanged since the series began: pre was its value at every boundary */
			s->last[site] = 0;
			ring_of(g, s, site)[0] = pre;
			if (s->nb > 1)
				sample(g, s, site, s->nb - 1, pre);
		}
		g->dirtybits[site] |= (uint8_t)(1u << k);
		s->dirty = ct_xgrow(s->dirty, &s->capdirty, s->ndirty + 1, sizeof *s->dirty);
		s->dirty[s->ndirty++] = site;
	}
}

static void boundary(struct growth *g, struct ct_model *m, uint32_t name, int kind, int depth)
{
	uint32_t key = name == NO_NAME ? NO_NAME : key_count(g, name, kind, depth);
	if (key == NO_NAME) {
		g->untracked++;
		return;
	}
	int k = series_of(g, key);
	if (k < 0) {
		g->untracked++;
		return;
	}
	struct gseries *s = &g->series[k];
	if (s->nb) {
		for (size_t i = 0; i < s->ndirty; i++) {
			uint32_t site = s->dirty[i];
			g->dirtybits[site] &= (uint8_t)~(1u << k);
			sample(g, s, site, s->nb, site < m->nsites ? m->sites[site].live_bytes : 0);
		}
		s->ndirty = 0;
	}
	s->nb++;
}

/* ---- observer callbacks ------------------------------------------------------------------------ */

static void on_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		     const struct ct_block *b)
{
	(void)ev;
	touch(ctx, b->site, ct_sat_sub(m->sites[b->site].live_bytes, b->size));
}

static void on_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		       const struct ct_block *b, int how)
{
	(void)ev;
	(void)how;
	touch(ctx, b->site, m->sites[b->site].live_bytes);
}

static void on_mark(void *ctx, struct ct_model *m, const struct ct_mark *mk)
{
	struct growth *g = ctx;
	struct tstack *t;
	switch (mk->kind) {
	case CT_MARK_INSTANT:
		boundary(g, m, intern(g, mk->name), CT_SERIES_INSTANT, -1);
		break;
	case CT_MARK_PUSH:
		t = thread_of(g, mk->tid, 1);
		if (!t)
			break;
		if (t->depth < DEPTH_MAX && !t->overflow)
			t->names[t->depth++] = intern(g, mk->name);
		else
			t->overflow++;
		break;
	case CT_MARK_POP:
		t = thread_of(g, mk->tid, 0);
		if (!t)
			break;
		if (t->overflow) {
			t->overflow--;
			break;
		}
		if (!t->depth)
			break; /* a pop without a push */
		t->depth--;
		boundary(g, m, t->names[t->depth], CT_SERIES_RANGE, (int)t->depth);
		break;
	case CT_MARK_START:
		open_put(g, mk->aux, intern(g, mk->name));
		break;
	case CT_MARK_STOP: {
		uint32_t name = open_take(g, mk->aux);
		if (name != NO_NAME)
			boundary(g, m, name, CT_SERIES_STARTEND, -1);
		break;
	}
	case CT_MARK_STEP:
		if (mk->aux == CT_STEP_OPTIMIZER)
			g->result.optimizer_boundaries++;
		boundary(g, m, intern(g, mk->name),
			 mk->aux == CT_STEP_OPTIMIZER   ? CT_SERIES_OPTIMIZER
			 : mk->aux == CT_STEP_INFERRED ? CT_SERIES_INFERRED
						       : CT_SERIES_STEP,
			 -1);
		break;
	default:
		break;
	}
}

static int cmp_gsite(const void *a, const void *b)
{
	const struct ct_growth_site *x = a, *y = b;
	if (x->growth != y->growth)
		return x->growth > y->growth ? -1 : 1;
	if (x->live_last != y->live_last)
		return x->live_last > y->live_last ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

/* Does s win over optimizer steps (explicit marks, ranges or steps, enough of them)? */
static int series_explicit(const struct growth *g, const struct gseries *s)
{
	return g->keys[s->key].kind != CT_SERIES_OPTIMIZER && g->keys[s->key].kind != CT_SERIES_INFERRED &&
	       s->nb >= CT_GROWTH_EXPLICIT_MIN;
}

static void on_finish(void *ctx, struct ct_model *m)
{
	struct growth *g = ctx;
	struct ct_growth_result *r = &g->result;
	(void)m;
	r->window = g->window;
	r->min_grew = g->min_grew;
	r->untracked = g->untracked;
	r->all = g->infos;
	int best = -1;
	size_t best_info = 0;
	for (int k = 0; k < CT_GROWTH_SERIES; k++) {
		struct gseries *s = &g->series[k];
		if (!s->used)
			continue;
		const struct skey *key = &g->keys[s->key];
		int wins = series_explicit(g, s), best_wins = best >= 0 && series_explicit(g, &g->series[best]);
		if (best < 0 || wins > best_wins ||
		    (wins == best_wins && (s->nb > g->series[best].nb ||
					   (s->nb == g->series[best].nb && s->seq < g->series[best].seq)))) {
			best = k;
			best_info = r->nall;
		}
		g->infos[r->nall++] = (struct ct_series_info){g->names[key->name], key->kind, key->depth,
							      s->nb};
	}
	if (best < 0)
		return;
	struct gseries *s = &g->series[best];
	r->have_series = 1;
	r->series = g->infos[best_info];
	if (s->nb < 2)
		return;
	uint64_t lastb = s->nb - 1, w1 = g->window + 1;
	unsigned n = lastb < g->window ? (unsigned)lastb : g->window;
	size_t cap = 0;
	for (size_t site = 0; site < s->nslots; site++) {
		uint64_t l = s->last[site];
		if (l == UNTOUCHED)
			continue;
		const uint64_t *ring = ring_of(g, s, site);
		uint64_t vl = ring[l % w1], prev = 0;
		unsigned grew = 0;
		for (unsigned i = 0; i <= n; i++) {
			uint64_t b = lastb - n + i;
			uint64_t v = b > l ? vl : ring[b % w1];
			if (i && v > prev)
				grew++;
			prev = v;
		}
		uint64_t before = lastb - n > l ? vl : ring[(lastb - n) % w1];
		uint64_t after = lastb > l ? vl : ring[lastb % w1];
		if (grew < g->min_grew || after <= before)
			continue;
		r->sites = ct_xgrow(r->sites, &cap, r->nsites + 1, sizeof *r->sites);
		r->sites[r->nsites++] = (struct ct_growth_site){(uint32_t)site, grew, n, after - before,
								before, after};
	}
	if (r->nsites > 1)
		qsort(r->sites, r->nsites, sizeof *r->sites, cmp_gsite);
}

static void on_destroy(void *ctx)
{
	struct growth *g = ctx;
	for (int k = 0; k < CT_GROWTH_SERIES; k++) {
		free(g->series[k].ring);
		free(g->series[k].last);
		free(g->series[k].dirty);
	}
	for (size_t i = 0; i < g->nnames; i++)
		free(g->names[i]);
	free(g->names);
	ct_imap_free(&g->namemap);
	free(g->keys);
	ct_imap_free(&g->keymap);
	free(g->threads);
	free(g->open);
	free(g->dirtybits);
	free(g->steps);
	free(g->result.sites);
	free(g);
}

static void *growth_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	struct growth *g = ct_xcalloc(1, sizeof *g);
	ct_growth_params(o, &g->min_grew, &g->window);
	g->steps = o->growth_steps ? ct_xstrdup(o->growth_steps) : NULL;
	return g;
}

const struct ct_analysis ct_analysis_growth = {
	.name = "growth",
	.attach = growth_attach,
	.observe = {.alloc = on_alloc, .release = on_release, .fw_alloc = on_alloc, .fw_release = on_release,
		    .mark = on_mark, .finish = on_finish,
		    .destroy = on_destroy},
};

void ct_growth_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	ct_model_attach(m, &ct_analysis_growth, o);
}

const struct ct_growth_result *ct_growth_get(const struct ct_model *m)
{
	const struct growth *g = ct_model_state(m, &ct_analysis_growth);
	return g && m->finished ? &g->result : NULL;
}
