/* Ranks of many dumps and sites merged across them (ranks.h). */
#include "analyses/ranks.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/classify.h"

static struct ct_frame frames[CT_ANALYSIS_FRAMES];

int ct_ranks_merged(const struct ct_report_opts *o, size_t n)
{
	/* diff's dumps are a baseline and a new run, not ranks of one job */
	return n > 1 && !o->per_dump && !(ct_cmd_flags(o->cmd) & CT_CMD_BASELINE_FIRST);
}

long ct_launch_long(const struct ct_model *m, int which)
{
	const char *s = which >= 0 && which < CT_LAUNCH_COUNT ? m->launch[which] : NULL;
	if (!s || !*s || strlen(s) > 10)
		return -1;
	long long v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= INT_MAX ? (long)v : -1;
}

/* The first of the launcher variables vars (n of them) that m has as a number, else -1. */
static long first_long(const struct ct_model *m, const int *vars, size_t n, int *which)
{
	for (size_t i = 0; i < n; i++) {
		long v = ct_launch_long(m, vars[i]);
		if (v >= 0) {
			if (which)
				*which = (int)i;
			return v;
		}
	}
	return -1;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct ct_rank *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* 1 when a dump other than r[skip] has rank v from its environment or already assigned. */
static int rank_taken(const struct ct_rank *r, size_t n, size_t skip, long v)
{
	for (size_t i = 0; i < n; i++)
		if (i != skip && r[i].rank == v)
			return 1;
	return 0;
}

/* Is a's parent the process of dump b (its ppid, on the same host)? */
static int parent_of(const struct ct_model *a, const struct ct_model *b)
{
	if (a == b || !a->have_process || !b->have_process || a->ppid != b->pid || a->pid == b->pid)
		return 0;
	return (!a->host && !b->host) || (a->host && b->host && !strcmp(a->host, b->host));
}

/* The unvisited dump of smallest pid whose parent index is p (-1: no parent among them). */
static long next_in_tree(const struct ct_rank *r, size_t n, const long *parent, const unsigned char *done,
			 long p)
{
	long best = -1;
	for (size_t i = 0; i < n; i++)
		if (!done[i] && parent[i] == p && (best < 0 || r[i].m->pid < r[best].m->pid))
			best = (long)i;
	return best;
}

/*
 * Dumps none of which has a rank, one at least of them a child of another's
 * process: ranks in tree order (depth first, siblings by pid), source
 * CT_RANK_FROM_TREE (ranks.h). Otherwise r is left as it is.
 */
static void fork_tree(struct ct_rank *r, size_t n)
{
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		if (r[i].source != CT_RANK_FROM_ORDER)
			return;
	long *parent = ct_xcalloc(n, sizeof *parent);
	int any = 0;
	for (size_t i = 0; i < n; i++) {
		parent[i] = -1;
		for (size_t j = 0; j < n && parent[i] < 0; j++)
			if (parent_of(r[i].m, r[j].m))
				parent[i] = (long)j;
		any |= parent[i] >= 0;
	}
	if (!any) {
		free(parent);
		return;
	}
	unsigned char *done = ct_xcalloc(n, 1);
	size_t *stack = ct_xcalloc(n, sizeof *stack), sp = 0;
	long pos = 0;
	while (pos < (long)n) {
		long c = next_in_tree(r, n, parent, done, -1);
		for (size_t i = 0; c < 0 && i < n; i++) /* a cycle of pids (reused): any one starts it */
			if (!done[i])
				c = (long)i;
		for (; c >= 0; c = sp ? next_in_tree(r, n, parent, done, (long)stack[sp - 1]) : -1) {
			done[c] = 1;
			r[c].rank = pos++;
			r[c].source = CT_RANK_FROM_TREE;
			r[c].parent_pid = parent[c] >= 0 && done[parent[c]] ? r[parent[c]].m->pid : 0;
			r[c].depth = sp;
			stack[sp++] = (size_t)c;
			/* back up to the nearest process with a child left */
			while (sp && next_in_tree(r, n, parent, done, (long)stack[sp - 1]) < 0)
				sp--;
		}
	}
	free(stack);
	free(done);
	free(parent);
}

int ct_ranks_are_processes(const struct ct_rank *r, size_t n)
{
	return n && r[0].source == CT_RANK_FROM_TREE;
}

const char *ct_rank_name(const struct ct_rank *r, const struct ct_rank *all, size_t n, char *buf,
			 size_t cap)
{
	if (r->source != CT_RANK_FROM_TREE) {
		snprintf(buf, cap, "rank %ld", r->rank);
		return buf;
	}
	int parent = 0;
	for (size_t i = 0; i < n && !parent; i++)
		parent = all[i].parent_pid == r->m->pid && &all[i] != r;
	if (r->parent_pid)
		snprintf(buf, cap, "pid %" PRIu32 " (child of %" PRIu32 ")", r->m->pid, r->parent_pid);
	else
		snprintf(buf, cap, "pid %" PRIu32 "%s", r->m->pid, parent ? " (parent)" : "");
	return buf;
}

const char *ct_ranks_noun(const struct ct_rank *r, size_t n, size_t count)
{
	if (ct_ranks_are_processes(r, n))
		return ct_plural(count, "process", "processes");
	return ct_plural(count, "rank", "ranks");
}

struct ct_rank *ct_ranks_of(struct ct_model *const *ms, size_t n)
{
	/* in the order of enum ct_rank_source */
	static const int rank_vars[] = {CT_LAUNCH_RANK, CT_LAUNCH_SLURM_PROCID,
					CT_LAUNCH_OMPI_COMM_WORLD_RANK, CT_LAUNCH_PMI_RANK};
	static const int local_vars[] = {CT_LAUNCH_LOCAL_RANK, CT_LAUNCH_SLURM_LOCALID,
					 CT_LAUNCH_OMPI_COMM_WORLD_LOCAL_RANK};
	static const int world_vars[] = {CT_LAUNCH_WORLD_SIZE, CT_LAUNCH_SLURM_NTASKS,
					 CT_LAUNCH_OMPI_COMM_WORLD_SIZE, CT_LAUNCH_PMI_SIZE};
	static const int node_vars[] = {CT_LAUNCH_GROUP_RANK, CT_LAUNCH_NODE_RANK};
	struct ct_rank *r = ct_xcalloc(n ? n : 1, sizeof *r);
	long top = -1;
	for (size_t i = 0; i < n; i++) {
		const struct ct_model *m = ms[i];
		r[i].m = ms[i];
		r[i].index = i;
		r[i].source = CT_RANK_FROM_ORDER;
		r[i].rank = first_long(m, rank_vars, sizeof rank_vars / sizeof *rank_vars,
				       &r[i].source);
		r[i].local_rank = first_long(m, local_vars, sizeof local_vars / sizeof *local_vars, NULL);
		r[i].world_size = first_long(m, world_vars, sizeof world_vars / sizeof *world_vars, NULL);
		r[i].local_world_size = ct_launch_long(m, CT_LAUNCH_LOCAL_WORLD_SIZE);
		r[i].node_rank = first_long(m, node_vars, sizeof node_vars / sizeof *node_vars, NULL);
		if (r[i].rank > top)
			top = r[i].rank;
	}
	/* the dumps without a rank, in order: their position, or past every rank taken */
	for (size_t i = 0; i < n; i++) {
		if (r[i].rank >= 0)
			continue;
		if (!rank_taken(r, n, i, (long)i) && (long)i <= INT_MAX)
			r[i].rank = (long)i;
		else
			r[i].rank = top + 1;
		if (r[i].rank > top)
			top = r[i].rank;
	}
	fork_tree(r, n);
	if (n > 1)
		qsort(r, n, sizeof *r, cmp_rank);
	return r;
}

const char *ct_rank_source_name(int source)
{
	static const char *const names[] = {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
					    "PMI_RANK", "order", "tree"};
	return source >= 0 && source <= CT_RANK_FROM_TREE ? names[source] : "unknown";
}

const char *ct_rank_list(const long *ranks, size_t n, char *buf, size_t cap)
{
	size_t len = 0;
	if (cap)
		buf[0] = 0;
	if (cap < 4)
		return buf;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		/* a run of consecutive ranks, repeated ones inside it */
		while (j + 1 < n && (ranks[j + 1] == ranks[j] || ranks[j + 1] == ranks[j] + 1))
			j++;
		char piece[48];
		if (ranks[j] == ranks[i])
			snprintf(piece, sizeof piece, "%s%ld", len ? "," : "", ranks[i]);
		else
			snprintf(piece, sizeof piece, "%s%ld-%ld", len ? "," : "", ranks[i], ranks[j]);
		size_t pl = strlen(piece);
		/* room is kept for "..." after every piece */
		if (len + pl + 4 > cap) {
			memcpy(buf + len, "...", 4);
			return buf;
		}
		memcpy(buf + len, piece, pl + 1);
		len += pl;
		i = j + 1;
	}
	return buf;
}

/* ---- merging ---------------------------------------------------------------------------- */

static uint64_t model_key(const struct ct_model *m)
{
	return ct_mix64((uint64_t)(uintptr_t)m);
}

static int eq_model(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_merge *mg = ctx;
	return mg->ranks[idx].m == key;
}

static int eq_identity(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_merge *mg = ctx;
	return mg->v[idx].identity == *(const uint64_t *)key;
}

void ct_merge_init(struct ct_merge *mg, struct ct_model *const *ms, size_t n)
{
	memset(mg, 0, sizeof *mg);
	mg->ranks = ct_ranks_of(ms, n);
	mg->nranks = n;
	for (size_t i = 0; i < n; i++)
		if (ct_imap_get(&mg->posmap, model_key(mg->ranks[i].m), eq_model, mg,
				mg->ranks[i].m) == CT_IMAP_NONE)
			ct_imap_put(&mg->posmap, model_key(mg->ranks[i].m), (uint32_t)i);
}

void ct_merge_free(struct ct_merge *mg)
{
	for (size_t i = 0; i < mg->n; i++)
		free(mg->v[i].per);
	free(mg->v);
	free(mg->ranks);
	ct_imap_free(&mg->map);
	ct_imap_free(&mg->posmap);
	memset(mg, 0, sizeof *mg);
}

size_t ct_merge_pos(const struct ct_merge *mg, const struct ct_model *m)
{
	uint32_t i = ct_imap_get(&mg->posmap, model_key(m), eq_model, mg, m);
	return i == CT_IMAP_NONE ? mg->nranks : i;
}

void ct_merge_add(struct ct_merge *mg, uint64_t identity, const struct ct_item *it,
		  const struct ct_finding *finding)
{
	size_t pos = ct_merge_pos(mg, it->m);
	if (pos == mg->nranks)
		return; /* not one of the models: cannot happen */
	uint64_t h = ct_mix64(identity);
	uint32_t i = ct_imap_get(&mg->map, h, eq_identity, mg, &identity);
	if (i == CT_IMAP_NONE) {
		mg->v = ct_xgrow(mg->v, &mg->cap, mg->n + 1, sizeof *mg->v);
		i = (uint32_t)mg->n++;
		memset(&mg->v[i], 0, sizeof mg->v[i]);
		mg->v[i].identity = identity;
		mg->v[i].rep = *it;
		mg->v[i].finding = finding;
		ct_imap_put(&mg->map, h, i);
	} else if (it->bytes > mg->v[i].rep.bytes) {
		mg->v[i].rep = *it;
		mg->v[i].finding = finding;
	}
	struct ct_merged_site *s = &mg->v[i];
	s->count += it->count;
	s->bytes = ct_sat_add(s->bytes, it->bytes);
	/* Callers add dump by dump: the share of this dump, if any, is the last
	 * one; out of order, look for it. */
	struct ct_rank_share *sh = NULL;
	if (s->nper && s->per[s->nper - 1].pos == pos)
		sh = &s->per[s->nper - 1];
	for (size_t k = 0; !sh && s->nper && s->per[s->nper - 1].pos > pos && k < s->nper; k++)
		if (s->per[k].pos == pos)
			sh = &s->per[k];
	if (!sh) {
		s->per = ct_xgrow(s->per, &s->capper, s->nper + 1, sizeof *s->per);
		sh = &s->per[s->nper++];
		*sh = (struct ct_rank_share){.pos = pos};
	}
	sh->count += it->count;
	sh->bytes = ct_sat_add(sh->bytes, it->bytes);
}

static int cmp_share(const void *a, const void *b)
{
	const struct ct_rank_share *x = a, *y = b;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_merged(const void *a, const void *b)
{
	const struct ct_merged_site *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->per[0].pos != y->per[0].pos)
		return x->per[0].pos < y->per[0].pos ? -1 : 1;
	return (x->identity > y->identity) - (x->identity < y->identity);
}

void ct_merge_finish(struct ct_merge *mg)
{
	for (size_t i = 0; i < mg->n; i++)
		if (mg->v[i].nper > 1)
			qsort(mg->v[i].per, mg->v[i].nper, sizeof *mg->v[i].per, cmp_share);
	if (mg->n > 1)
		qsort(mg->v, mg->n, sizeof *mg->v, cmp_merged);
	/* the index no longer matches the sorted sites */
	ct_imap_free(&mg->map);
	memset(&mg->map, 0, sizeof mg->map);
}

/* Findings to merge, in the order they are added: dump by dump, each in the assessment's order. */
struct pick {
	size_t pos, i;
};

static int cmp_pick(const void *a, const void *b)
{
	const struct pick *x = a, *y = b;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

void ct_merge_findings(struct ct_merge *mg, const struct ct_assessment *a, size_t from, size_t to)
{
	struct pick *p = ct_xcalloc(to > from ? to - from : 1, sizeof *p);
	size_t k = 0;
	for (size_t i = from; i < to && i < a->n; i++)
		if (a->v[i].supp < 0)
			p[k++] = (struct pick){ct_merge_pos(mg, a->v[i].it.m), i};
	if (k > 1)
		qsort(p, k, sizeof *p, cmp_pick);
	for (size_t x = 0; x < k; x++) {
		const struct ct_finding *f = &a->v[p[x].i];
		ct_merge_add(mg, f->identity, &f->it, f);
	}
	free(p);
	ct_merge_finish(mg);
}

void ct_merge_peak(struct ct_merge *mg)
{
	for (size_t pos = 0; pos < mg->nranks; pos++) {
		struct ct_model *m = mg->ranks[pos].m;
		size_t n;
		struct ct_item *v = ct_peak_items(&m, 1, &n);
		for (size_t i = 0; i < n; i++) {
			size_t k = ct_analysis_frames(m, v[i].stack_id, frames, CT_ANALYSIS_FRAMES);
			uint64_t id = ct_site_identity(CT_MERGE_PEAK_CLASS, v[i].api, v[i].kind, frames, k);
			ct_merge_add(mg, id, &v[i], NULL);
		}
		free(v);
	}
	ct_merge_finish(mg);
}

/* ---- text ------------------------------------------------------------------------------ */

/* The distinct ranks of the dumps that pred accepts (r is sorted by rank); caller frees. */
static long *ranks_where(const struct ct_rank *r, size_t n, int (*pred)(const struct ct_rank *),
			 size_t *k)
{
	long *v = ct_xcalloc(n ? n : 1, sizeof *v);
	*k = 0;
	for (size_t i = 0; i < n; i++)
		if (!pred || pred(&r[i]))
			v[(*k)++] = r[i].rank;
	return v;
}

/* How many distinct values of the sorted v[0..n). */
static size_t distinct(const long *v, size_t n)
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++)
		d += !i || v[i] != v[i - 1];
	return d;
}

/* The one world size the dumps that know one agree on, -1 when none or they differ. */
static long world_size(const struct ct_rank *r, size_t n, int *differ)
{
	long w = -1;
	*differ = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].world_size < 0)
			continue;
		if (w >= 0 && r[i].world_size != w)
			*differ = 1;
		w = r[i].world_size;
	}
	return *differ ? -1 : w;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* How many distinct values of the string field of each dump's model (NULL counts as one). */
static size_t distinct_strings(const struct ct_rank *r, size_t n,
			       const char *(*field)(const struct ct_model *))
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < i && !str_eq(field(r[j].m), field(r[i].m)))
			j++;
		d += j == i;
	}
	return d;
}

static const char *host_of(const struct ct_model *m)
{
	return m->host;
}

static const char *run_id_of(const struct ct_model *m)
{
	return m->launch[CT_LAUNCH_TORCHELASTIC_RUN_ID];
}

const struct ct_rank *ct_ranks_top_peak(const struct ct_rank *r, size_t n, uint64_t *sum)
{
	const struct ct_rank *top = NULL;
	*sum = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_model *m = r[i].m;
		if (!m->peak_seen)
			continue;
		*sum = ct_sat_add(*sum, m->peak_bytes);
		if (!top || m->peak_bytes > top->m->peak_bytes)
			top = &r[i];
	}
	return top;
}

void ct_ranks_put_desc(FILE *f, const struct ct_rank *r, size_t n)
{
	char list[256];
	size_t k;
	int differ;
	long *v = ranks_where(r, n, NULL, &k);
	size_t d = distinct(v, k);
	if (ct_ranks_are_processes(r, n)) {
		size_t roots = 0;
		for (size_t i = 0; i < n; i++)
			roots += !r[i].parent_pid;
		if (roots == 1)
			fprintf(f, "%zu processes (pid %" PRIu32 " and its children)", n, r[0].m->pid);
		else
			fprintf(f, "%zu processes (%zu process trees)", n, roots);
	} else {
		if (d != n)
			fprintf(f, "%zu dumps of ", n);
		fprintf(f, "%zu rank%s (%s", d, ct_plural_s(d), ct_rank_list(v, k, list, sizeof list));
		long w = world_size(r, n, &differ);
		if (w >= 0)
			fprintf(f, ", world size %ld", w);
		fputc(')', f);
	}
	size_t hosts = distinct_strings(r, n, host_of);
	if (hosts == 1 && n && r[0].m->host) {
		fputs(" on host ", f);
		ct_put_safe(f, r[0].m->host);
	} else if (hosts > 1) {
		fprintf(f, " on %zu hosts", hosts);
	}
	free(v);
}

static int is_truncated(const struct ct_rank *r)
{
	return r->m->read.status == CT_READ_TRUNCATED;
}

static int no_end(const struct ct_rank *r)
{
	return !r->m->end_seen && !ct_model_header_only(r->m);
}

static int header_only(const struct ct_rank *r)
{
	return ct_model_header_only(r->m);
}

static int dropped(const struct ct_rank *r)
{
	return r->m->dropped > r->m->dropped_signal;
}

static int dropped_signal(const struct ct_rank *r)
{
	return r->m->dropped_signal != 0;
}

static int by_order(const struct ct_rank *r)
{
	return r->source == CT_RANK_FROM_ORDER;
}

#define NAMES_MAX 8 /* processes named in one list; the rest counted */

/* The names (ct_rank_name) of r[pos[0..k)], ", " between them; at most NAMES_MAX, then "and N more". */
static void put_names(FILE *f, const struct ct_rank *r, size_t n, const size_t *pos, size_t k)
{
	char name[64];
	for (size_t i = 0; i < k && i < NAMES_MAX; i++)
		fprintf(f, "%s%s", i ? ", " : "", ct_rank_name(&r[pos[i]], r, n, name, sizeof name));
	if (k > NAMES_MAX)
		fprintf(f, " and %zu more", k - NAMES_MAX);
}

/* "  PREFIX rank 2SUFFIX" / "ranks 1,3" ("pid 124 (child of 123)" in a process tree) for the
 * dumps pred accepts; nothing when none. */
static void note_ranks(FILE *f, const struct ct_rank *r, size_t n, int (*pred)(const struct ct_rank *),
		       const char *prefix, const char *suffix)
{
	char list[256];
	size_t k;
	if (ct_ranks_are_processes(r, n)) {
		size_t *pos = ct_xcalloc(n, sizeof *pos);
		k = 0;
		for (size_t i = 0; i < n; i++)
			if (pred(&r[i]))
				pos[k++] = i;
		if (k) {
			fprintf(f, "  %s ", prefix);
			put_names(f, r, n, pos, k);
			fprintf(f, "%s\n", suffix);
		}
		free(pos);
		return;
	}
	long *v = ranks_where(r, n, pred, &k);
	if (k)
		fprintf(f, "  %s rank%s %s%s\n", prefix, ct_plural_s(distinct(v, k)),
			ct_rank_list(v, k, list, sizeof list), suffix);
	free(v);
}

void ct_ranks_put_notes(FILE *f, const struct ct_rank *r, size_t n)
{
	char list[256];
	note_ranks(f, r, n, is_truncated, "note: truncated dumps (the process died while writing):",
		   "; what came before is reported");
	note_ranks(f, r, n, header_only,
		   "note: dumps holding only their header (no events: killed before the first writer round?):",
		   "");
	note_ranks(f, r, n, no_end, "note: no END record (crashed, killed or still running):",
		   "; \"live at exit\" means live at the end of the dump");
	note_ranks(f, r, n, dropped, "WARNING: events were dropped (ring buffers full) in",
		   ": THE DATA IS INCOMPLETE");
	note_ranks(f, r, n, dropped_signal,
		   "WARNING: calls made inside signal handlers were not recorded in",
		   ": THE DATA IS INCOMPLETE");
	note_ranks(f, r, n, by_order, "note: * no rank in the dump's environment: numbered by position:",
		   "");
	size_t k;
	long *v = ranks_where(r, n, NULL, &k);
	/* ranks found in more than one dump */
	long *dup = ct_xcalloc(k ? k : 1, sizeof *dup);
	size_t nd = 0;
	for (size_t i = 1; i < k; i++)
		if (v[i] == v[i - 1] && (!nd || dup[nd - 1] != v[i]))
			dup[nd++] = v[i];
	if (nd)
		fprintf(f, "  note: more than one dump of rank%s %s (restarts, or separate jobs)\n",
			ct_plural_s(nd), ct_rank_list(dup, nd, list, sizeof list));
	free(dup);
	int differ;
	long w = world_size(r, n, &differ);
	if (differ)
		fputs("  note: the dumps do not agree on the world size\n", f);
	if (w > 0 && w <= 1000000) {
		/* ranks of the world with no dump among these */
		long *miss = ct_xcalloc((size_t)w, sizeof *miss);
		size_t nm = 0, x = 0;
		for (long q = 0; q < w; q++) {
			while (x < k && v[x] < q)
				x++;
			if (x == k || v[x] != q)
				miss[nm++] = q;
		}
		if (nm)
			fprintf(f, "  note: %zu of %ld ranks have no dump here: rank%s %s\n", nm, w,
				ct_plural_s(nm), ct_rank_list(miss, nm, list, sizeof list));
		free(miss);
	}
	size_t runs = distinct_strings(r, n, run_id_of);
	if (runs > 1)
		fprintf(f, "  note: the dumps come from %zu launches (TORCHELASTIC_RUN_ID differs)\n", runs);
	free(v);
}

/* A dump-supplied string in a table column: printable ASCII, at most width bytes. */
static const char *column(const char *s, char *buf, size_t width)
{
	size_t i = 0;
	for (; s && s[i] && i < width; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (!i)
		buf[i++] = '?';
	buf[i] = 0;
	return buf;
}

static const char *completeness(const struct ct_model *m)
{
	if (m->read.status == CT_READ_TRUNCATED)
		return "truncated";
	if (ct_model_header_only(m))
		return "header only";
	return m->end_seen ? "yes" : "no END";
}

void ct_ranks_put_table(FILE *f, const struct ct_rank *r, size_t n)
{
	char host[17], b1[32], b2[32], name[64];
	int tree = ct_ranks_are_processes(r, n);
	if (tree)
		fprintf(f, "  %-32s  %-16s %11s %11s %6s %10s %8s  %s\n", "process", "host", "peak", "leaked",
			"sites", "events", "dropped", "complete");
	else
		fprintf(f, "  %6s %8s  %-16s %11s %11s %6s %10s %8s  %s\n", "rank", "pid", "host", "peak",
			"leaked", "sites", "events", "dropped", "complete");
	for (size_t i = 0; i < n; i++) {
		const struct ct_model *m = r[i].m;
		if (tree) {
			/* the tree drawn by indent: two spaces a level (at most 8 levels) */
			unsigned in = r[i].depth < 8 ? r[i].depth : 8;
			fprintf(f, "  %*s%-*s  %-16s %11s %11s %6zu %10" PRIu64 " %8" PRIu64 "  %s\n", (int)(2 * in), "",
				(int)(32 - 2 * in), ct_rank_name(&r[i], r, n, name, sizeof name),
				column(m->host, host, 16), ct_fmt_bytes(m->peak_bytes, b1, sizeof b1),
				ct_fmt_bytes(m->leak_bytes, b2, sizeof b2), m->nleaks, m->events, m->dropped,
				completeness(m));
			continue;
		}
		fprintf(f, "  %5ld%c %8" PRIu32 "  %-16s %11s %11s %6zu %10" PRIu64 " %8" PRIu64 "  %s\n",
			r[i].rank, r[i].source == CT_RANK_FROM_ORDER ? '*' : ' ', m->pid,
			column(m->host, host, 16), ct_fmt_bytes(m->peak_bytes, b1, sizeof b1),
			ct_fmt_bytes(m->leak_bytes, b2, sizeof b2), m->nleaks, m->events, m->dropped,
			completeness(m));
	}
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

static int cmp_share_amount(const void *a, const void *b)
{
	const struct ct_rank_share *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

#define SHARE_GROUPS_MAX 8 /* groups of equal amounts shown per site */

void ct_merged_put_shares(FILE *f, const struct ct_merge *mg, const struct ct_merged_site *s,
			  int growth)
{
	char list[256], b[32];
	struct ct_rank_share *v = ct_xcalloc(s->nper ? s->nper : 1, sizeof *v);
	long *ranks = ct_xcalloc(s->nper ? s->nper : 1, sizeof *ranks);
	memcpy(v, s->per, s->nper * sizeof *v);
	qsort(v, s->nper, sizeof *v, cmp_share_amount);
	size_t groups = 0;
	for (size_t i = 0; i < s->nper;) {
		size_t j = i;
		while (j < s->nper && v[j].bytes == v[i].bytes && v[j].count == v[i].count)
			j++;
		if (groups == SHARE_GROUPS_MAX) {
			fprintf(f, "; ... and %zu more", s->nper - i);
			break;
		}
		/* positions are in rank order: sorted positions give sorted ranks */
		size_t k = j - i;
		for (size_t x = 0; x < k; x++)
			ranks[x] = (long)v[i + x].pos;
		qsort(ranks, k, sizeof *ranks, cmp_long);
		if (ct_ranks_are_processes(mg->ranks, mg->nranks)) {
			size_t *pos = ct_xcalloc(k, sizeof *pos);
			for (size_t x = 0; x < k; x++)
				pos[x] = (size_t)ranks[x];
			fputs(groups ? "; " : "", f);
			put_names(f, mg->ranks, mg->nranks, pos, k);
			free(pos);
		} else {
			for (size_t x = 0; x < k; x++)
				ranks[x] = mg->ranks[ranks[x]].rank;
			fprintf(f, "%s%s %s", groups ? "; " : "", ct_plural(distinct(ranks, k), "rank", "ranks"),
				ct_rank_list(ranks, k, list, sizeof list));
		}
		fprintf(f, ": %zu x %s%s", k, growth ? "+" : "", ct_fmt_bytes(v[i].bytes, b, sizeof b));
		if (!growth && v[i].count != 1)
			fprintf(f, " in %" PRIu64 " allocations%s", v[i].count, k > 1 ? " each" : "");
		groups++;
		i = j;
	}
	free(ranks);
	free(v);
}

void ct_merged_put_list(FILE *f, const struct ct_report_opts *o, const struct ct_merge *mg,
			const struct ct_merged_style *st)
{
	char b[32];
	size_t k = ct_items_shown(o, mg->n);
	for (size_t i = 0; i < k; i++) {
		const struct ct_merged_site *s = &mg->v[i];
		fprintf(f, "#%-3zu ", i + 1);
		if (st->growth)
			fprintf(f, "+%s", ct_fmt_bytes(s->bytes, b, sizeof b));
		else
			fprintf(f, "%s in %" PRIu64 " allocation%s", ct_fmt_bytes(s->bytes, b, sizeof b),
				s->count, ct_plural_s(s->count));
		fprintf(f, " in %zu %s (%s, %s", s->nper, ct_ranks_noun(mg->ranks, mg->nranks, s->nper),
			ct_kind_name(s->rep.kind), ct_api_name(s->rep.api));
		if (st->head)
			st->head(f, s, st->ctx);
		else
			fputc(')', f);
		fputs("\n      ", f);
		ct_merged_put_shares(f, mg, s, st->growth);
		fputc('\n', f);
		if (st->after)
			st->after(f, s, st->ctx);
		ct_text_stack(f, s->rep.m, s->rep.stack_id);
	}
	if (k < mg->n) {
		uint64_t rest = 0, restc = 0;
		for (size_t i = k; i < mg->n; i++) {
			rest = ct_sat_add(rest, mg->v[i].bytes);
			restc += mg->v[i].count;
		}
		fprintf(f, "... and %zu more site%s: %s%s", mg->n - k, ct_plural_s(mg->n - k),
			st->growth ? "+" : "", ct_fmt_bytes(rest, b, sizeof b));
		if (!st->growth)
			fprintf(f, " in %" PRIu64 " allocation%s", restc, ct_plural_s(restc));
		fputs(" (--top 0 shows all)\n", f);
	}
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* A number that may be unknown (-1: null). */
static void kv_known(struct ct_json *j, const char *key, long v)
{
	ct_json_key(j, key);
	if (v < 0)
		ct_json_null(j);
	else
		ct_json_i64(j, v);
}

void ct_ranks_json(struct ct_json *j, struct ct_model *const *ms, size_t n)
{
	struct ct_rank *r = ct_ranks_of(ms, n);
	ct_json_key(j, "ranks");
	ct_json_arr(j);
	for (size_t i = 0; i < n; i++) {
		const struct ct_model *m = r[i].m;
		ct_json_obj(j);
		ct_json_kv_i64(j, "rank", r[i].rank);
		ct_json_kv_str(j, "rank_source", ct_rank_source_name(r[i].source));
		ct_json_kv_u64(j, "dump_index", r[i].index);
		ct_json_kv_str(j, "path", m->path);
		ct_json_kv_u64(j, "pid", m->pid);
		if (r[i].source == CT_RANK_FROM_TREE) /* null: the process tree's root */
			kv_known(j, "parent_pid", r[i].parent_pid ? (long)r[i].parent_pid : -1);
		ct_json_kv_str(j, "host", m->host);
		kv_known(j, "local_rank", r[i].local_rank);
		kv_known(j, "world_size", r[i].world_size);
		kv_known(j, "local_world_size", r[i].local_world_size);
		kv_known(j, "node_rank", r[i].node_rank);
		ct_json_kv_str(j, "run_id", m->launch[CT_LAUNCH_TORCHELASTIC_RUN_ID]);
		ct_json_kv_str(j, "master_addr", m->launch[CT_LAUNCH_MASTER_ADDR]);
		ct_json_kv_u64(j, "peak_bytes", m->peak_bytes);
		ct_json_kv_u64(j, "leak_count", m->leak_count);
		ct_json_kv_u64(j, "leak_bytes", m->leak_bytes);
		ct_json_kv_u64(j, "leak_sites", m->nleaks);
		ct_json_kv_u64(j, "events", m->events);
		ct_json_kv_u64(j, "dropped_events", m->dropped);
		ct_json_kv_bool(j, "clean_exit", m->end_seen);
		ct_json_kv_bool(j, "truncated", m->read.status == CT_READ_TRUNCATED);
		ct_json_kv_bool(j, "complete", m->end_seen && m->read.status == CT_READ_OK);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	free(r);
}

void ct_merged_json(struct ct_json *j, const struct ct_report_opts *o, const struct ct_merge *mg,
		    void (*extra)(struct ct_json *j, const struct ct_report_opts *o,
				  const struct ct_merged_site *s))
{
	char id[24];
	ct_json_key(j, "merged");
	ct_json_obj(j);
	ct_json_kv_u64(j, "dumps", mg->nranks);
	ct_json_kv_u64(j, "sites_total", mg->n);
	ct_json_key(j, "sites");
	ct_json_arr(j);
	for (size_t i = 0; i < ct_items_shown(o, mg->n); i++) {
		const struct ct_merged_site *s = &mg->v[i];
		ct_json_obj(j);
		snprintf(id, sizeof id, "%016" PRIx64, s->identity);
		ct_json_kv_str(j, "identity", id);
		ct_json_kv_u64(j, "count", s->count);
		ct_json_kv_u64(j, "bytes", s->bytes);
		ct_json_kv_str(j, "kind", ct_kind_name(s->rep.kind));
		ct_json_kv_str(j, "api", ct_api_name(s->rep.api));
		ct_json_kv_u64(j, "ranks", s->nper);
		ct_json_key(j, "per_rank");
		ct_json_arr(j);
		for (size_t k = 0; k < s->nper; k++) {
			const struct ct_rank *r = &mg->ranks[s->per[k].pos];
			ct_json_obj(j);
			ct_json_kv_i64(j, "rank", r->rank);
			ct_json_kv_u64(j, "pid", r->m->pid);
			ct_json_kv_u64(j, "count", s->per[k].count);
			ct_json_kv_u64(j, "bytes", s->per[k].bytes);
			ct_json_obj_end(j);
		}
		ct_json_arr_end(j);
		if (extra)
			extra(j, o, s);
		ct_json_kv_u64(j, "stack_pid", s->rep.m->pid);
		ct_json_kv_u64(j, "stack_id", s->rep.stack_id);
		ct_json_site_label(j, s->rep.m, s->rep.stack_id);
		ct_json_key(j, "stack");
		ct_json_stack(j, s->rep.m, s->rep.stack_id);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}
