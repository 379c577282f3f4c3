/*
 * The frag command: fragmentation per device, at the device's peak, at the
 * end and over time.
 *
 * - Address space: the live device allocations made outside stream-ordered
 *   pools (cudaMalloc, cuMemAlloc, pitched, 3D) of a device, ordered by
 *   address in a treap whose subtrees carry their lowest start, highest end,
 *   the bytes in the gaps between their blocks, the number of gaps and the
 *   largest one. The root gives the span (lowest start .. highest end), the
 *   free bytes inside it, the holes and the largest hole in O(1); an
 *   allocation or free costs O(log live blocks).
 * - Stream-ordered pools: per pool, "used" = bytes of its live allocations
 *   (cudaMallocAsync: the device's default pool; *FromPoolAsync: the pool
 *   named), "reserved" = an estimate of what the pool holds: its highest used
 *   since it was created or last trimmed; a trim to K leaves
 *   max(used, min(reserved, K)); a destroyed pool holds only what is still
 *   used. The release threshold (an attribute, not traced) can make CUDA
 *   return memory sooner.
 * - VMM: live bytes of reserved ranges, mappings and physical allocations.
 *
 * "Over time": the state just before each of K times t0, t0 + w, t0 + 2w, ...
 * (K = --buckets, t0 = the start of the trace), w the smallest power of two
 * nanoseconds for which K points reach the end of the trace: sampled in the
 * one pass by halving the samples kept (every other one) and doubling w
 * whenever the trace outruns them, so between K/2 and K points cover the
 * trace. "At the peak": exactly after the allocation that made the device's
 * peak (the peak's rule: device + vmm_physical bytes).
 *
 * Memory: one treap node per live device allocation, K samples per device.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "render/render.h"
#include "render/views.h"

#define FRAG_MAX_DEVICES CT_FRAG_MAX_DEVICES /* views.h */
#define FRAG_MAX_POOLS CT_FRAG_MAX_POOLS
#define FRAG_NONE UINT32_MAX

/* ---- an ordered set of address ranges with gap aggregates (treap) ------------------ */

struct fnode {
	uint64_t ptr, end;	/* the block [ptr, end) */
	uint64_t lo, hi;	/* subtree: lowest start, highest end */
	uint64_t free, holes, hole; /* subtree: bytes in gaps, number of gaps, largest gap */
	uint32_t left, right, prio, tag;
};

struct fnodes {
	struct fnode *v; /* v[0] unused: index 0 is "none" */
	size_t n, cap;
	uint32_t free_list;
	uint64_t rng;
};

static uint32_t node_new(struct fnodes *t, uint64_t ptr, uint64_t size, uint32_t tag)
{
	uint32_t i;
	if (t->free_list) {
		i = t->free_list;
		t->free_list = t->v[i].left;
	} else {
		if (!t->n)
			t->n = 1;
		t->v = ct_xgrow(t->v, &t->cap, t->n + 1, sizeof *t->v);
		i = (uint32_t)t->n++;
	}
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	uint64_t end = ptr + size >= ptr ? ptr + size : UINT64_MAX;
	t->v[i] = (struct fnode){.ptr = ptr,
				 .end = end,
				 .lo = ptr,
				 .hi = end,
				 .prio = (uint32_t)(t->rng >> 32),
				 .tag = tag};
	return i;
}

static void node_free(struct fnodes *t, uint32_t i)
{
	t->v[i].left = t->free_list;
	t->free_list = i;
}

/* Recompute node i's subtree aggregates from its children. */
static void pull(struct fnodes *t, uint32_t i)
{
	struct fnode *x = &t->v[i];
	const struct fnode *l = x->left ? &t->v[x->left] : NULL;
	const struct fnode *r = x->right ? &t->v[x->right] : NULL;
	uint64_t g1 = l && x->ptr > l->hi ? x->ptr - l->hi : 0;
	uint64_t hi = l && l->hi > x->end ? l->hi : x->end;
	uint64_t g2 = r && r->lo > hi ? r->lo - hi : 0;
	x->lo = l ? l->lo : x->ptr;
	x->hi = r && r->hi > hi ? r->hi : hi;
	x->free = (l ? l->free : 0) + g1 + g2 + (r ? r->free : 0);
	x->holes = (l ? l->holes : 0) + (g1 != 0) + (g2 != 0) + (r ? r->holes : 0);
	uint64_t h = g1 > g2 ? g1 : g2;
	if (l && l->hole > h)
		h = l->hole;
	if (r && r->hole > h)
		h = r->hole;
	x->hole = h;
}

/* Split subtree i into keys < key (*a) and keys >= key (*b). */
static void split(struct fnodes *t, uint32_t i, uint64_t key, uint32_t *a, uint32_t *b)
{
	if (!i) {
		*a = *b = 0;
		return;
	}
	if (t->v[i].ptr < key) {
		split(t, t->v[i].right, key, &t->v[i].right, b);
		*a = i;
	} else {
		split(t, t->v[i].left, key, a, &t->v[i].left);
		*b = i;
	}
	pull(t, i);
}

/* Join subtrees a and b, every key of a below every key of b. */
static uint32_t merge(struct fnodes *t, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (t->v[a].prio > t->v[b].prio) {
		t->v[a].right = merge(t, t->v[a].right, b);
		pull(t, a);
		return a;
	}
	t->v[b].left = merge(t, a, t->v[b].left);
	pull(t, b);
	return b;
}

static uint32_t tree_find(const struct fnodes *t, uint32_t i, uint64_t key)
{
	while (i && t->v[i].ptr != key)
		i = key < t->v[i].ptr ? t->v[i].left : t->v[i].right;
	return i;
}

/* Insert [ptr, ptr + size) under tag unless ptr is there already. */
static void tree_insert(struct fnodes *t, uint32_t *root, uint64_t ptr, uint64_t size,
			uint32_t tag)
{
	if (tree_find(t, *root, ptr))
		return;
	uint32_t a, b;
	split(t, *root, ptr, &a, &b);
	*root = merge(t, merge(t, a, node_new(t, ptr, size, tag)), b);
}

static uint32_t erase_at(struct fnodes *t, uint32_t i, uint64_t ptr, uint32_t *tag)
{
	if (!i)
		return 0;
	if (t->v[i].ptr == ptr) {
		*tag = t->v[i].tag;
		uint32_t rest = merge(t, t->v[i].left, t->v[i].right);
		node_free(t, i);
		return rest;
	}
	if (ptr < t->v[i].ptr)
		t->v[i].left = erase_at(t, t->v[i].left, ptr, tag);
	else
		t->v[i].right = erase_at(t, t->v[i].right, ptr, tag);
	pull(t, i);
	return i;
}

/* Remove ptr; its tag, or FRAG_NONE when it was not there. */
static uint32_t tree_erase(struct fnodes *t, uint32_t *root, uint64_t ptr)
{
	uint32_t tag = FRAG_NONE;
	if (tree_find(t, *root, ptr))
		*root = erase_at(t, *root, ptr, &tag);
	return tag;
}

/* ---- the analysis --------------------------------------------------------------------- */

struct frag_dev {
	int16_t device;
	uint32_t root;
	struct ct_frag_state cur; /* span, free, holes, hole: read from the root when needed */
	struct ct_frag_state at_peak;
	uint64_t peak_ts, peak_version;
	int have_peak;
	struct ct_frag_state *samples; /* K */
};

struct frag {
	struct fnodes nodes;
	uint32_t pool_root; /* live stream-ordered allocations: tag = pool index */
	struct frag_dev dev[FRAG_MAX_DEVICES];
	size_t ndev;
	struct ct_frag_pool_view *pools; /* a pool's state is its view (views.h) */
	size_t npools, cappools;
	struct ct_imap poolmap;
	size_t k;	      /* samples over time */
	int started;
	uint64_t t0, width;   /* sample i is the state just before t0 + i * width */
	size_t nsamples;      /* filled */
	uint64_t untracked;   /* events of devices or pools beyond the limits */
};

static struct frag_dev *dev_of(struct frag *fr, int16_t device)
{
	for (size_t i = 0; i < fr->ndev; i++)
		if (fr->dev[i].device == device)
			return &fr->dev[i];
	if (fr->ndev == FRAG_MAX_DEVICES) {
		fr->untracked++;
		return NULL;
	}
	struct frag_dev *d = &fr->dev[fr->ndev++];
	memset(d, 0, sizeof *d);
	d->device = device;
	d->samples = ct_xcalloc(fr->k, sizeof *d->samples);
	return d;
}

struct pool_key {
	uint64_t handle;
	int16_t device;
};

static int pool_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct frag *fr = ctx;
	const struct pool_key *k = key;
	return fr->pools[idx].handle == k->handle && (k->handle || fr->pools[idx].device == k->device);
}

/* The pool of handle (0: device's default pool; others are known by handle alone). */
static struct ct_frag_pool_view *pool_of(struct frag *fr, uint64_t handle, int16_t device)
{
	struct pool_key k = {handle, handle ? 0 : device};
	uint64_t h = ct_hash2(handle, (uint16_t)k.device);
	uint32_t i = ct_imap_get(&fr->poolmap, h, pool_eq, fr, &k);
	if (i != CT_IMAP_NONE)
		return &fr->pools[i];
	if (fr->npools == FRAG_MAX_POOLS) {
		fr->untracked++;
		return NULL;
	}
	fr->pools = ct_xgrow(fr->pools, &fr->cappools, fr->npools + 1, sizeof *fr->pools);
	i = (uint32_t)fr->npools++;
	memset(&fr->pools[i], 0, sizeof fr->pools[i]);
	fr->pools[i].handle = handle;
	fr->pools[i].device = device; /* a created pool: the device of its first event */
	ct_imap_put(&fr->poolmap, h, i);
	return &fr->pools[i];
}

/* The current state of device d (address-space figures from its treap). */
static struct ct_frag_state dev_stats(const struct frag *fr, const struct frag_dev *d)
{
	struct ct_frag_state s = d->cur;
	if (d->root) {
		const struct fnode *r = &fr->nodes.v[d->root];
		s.span = r->hi - r->lo;
		s.free = r->free;
		s.holes = r->holes;
		s.hole = r->hole;
	}
	return s;
}

/* Fill the samples of every time up to ts with the state now (before ts's changes). */
static void sample_upto(struct frag *fr, const struct ct_model *m, uint64_t ts)
{
	if (!fr->started) {
		fr->started = 1;
		fr->t0 = ct_model_start_ns(m);
		fr->width = 1;
	}
	if (ts < fr->t0 || !fr->width)
		return;
	uint64_t d = ts - fr->t0;
	while (d / fr->width >= fr->nsamples) {
		if (fr->nsamples == fr->k) {
			if (fr->width > UINT64_MAX / 2) {
				fr->width = 0; /* the end of time: no more samples */
				return;
			}
			size_t keep = (fr->k + 1) / 2;
			for (size_t i = 0; i < fr->ndev; i++)
				for (size_t j = 0; j < keep; j++)
					fr->dev[i].samples[j] = fr->dev[i].samples[2 * j];
			fr->nsamples = keep;
			fr->width *= 2;
			continue;
		}
		for (size_t i = 0; i < fr->ndev; i++)
			fr->dev[i].samples[fr->nsamples] = dev_stats(fr, &fr->dev[i]);
		fr->nsamples++;
	}
}

/* Device memory and VMM: what this report follows. */
static int is_frag_kind(unsigned kind)
{
	return kind == CT_KIND_DEVICE || kind == CT_KIND_VMM_PHYSICAL ||
	       kind == CT_KIND_VMM_RESERVED || kind == CT_KIND_VMM_MAPPED;
}

static void vmm_add(struct ct_frag_state *s, unsigned kind, uint64_t size, int sign)
{
	uint64_t *v = kind == CT_KIND_VMM_RESERVED ? &s->vmm_reserved
		      : kind == CT_KIND_VMM_MAPPED ? &s->vmm_mapped
		      : kind == CT_KIND_VMM_PHYSICAL ? &s->vmm_physical
						       : NULL;
	if (v)
		*v = sign > 0 ? ct_sat_add(*v, size) : ct_sat_sub(*v, size);
	if (ct_kind_is_device_bytes(kind))
		s->device_bytes = sign > 0 ? ct_sat_add(s->device_bytes, size)
					   : ct_sat_sub(s->device_bytes, size);
}

/* Used bytes of a pool change by +size / -size; reserved follows the estimate. */
static void pool_use(struct frag *fr, struct ct_frag_pool_view *p, uint64_t size, int sign)
{
	struct frag_dev *d = dev_of(fr, p->device);
	uint64_t old_reserved = p->reserved;
	if (sign > 0) {
		p->used = ct_sat_add(p->used, size);
		p->allocations++;
		if (p->used > p->peak_used)
			p->peak_used = p->used;
		if (p->used > p->reserved)
			p->reserved = p->used;
	} else {
		p->used = ct_sat_sub(p->used, size);
		if (p->destroyed)
			p->reserved = p->used;
	}
	if (d) {
		d->cur.pool_used = sign > 0 ? ct_sat_add(d->cur.pool_used, size)
					    : ct_sat_sub(d->cur.pool_used, size);
		d->cur.pool_reserved =
			ct_sat_add(ct_sat_sub(d->cur.pool_reserved, old_reserved), p->reserved);
	}
}

static void pool_set_reserved(struct frag *fr, struct ct_frag_pool_view *p, uint64_t reserved)
{
	struct frag_dev *d = dev_of(fr, p->device);
	if (d)
		d->cur.pool_reserved =
			ct_sat_add(ct_sat_sub(d->cur.pool_reserved, p->reserved), reserved);
	p->reserved = reserved;
}

static void frag_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		       const struct ct_block *b)
{
	struct frag *fr = ctx;
	sample_upto(fr, m, ev->ts_ns);
	const struct ct_site *s = &m->sites[b->site];
	struct frag_dev *d = is_frag_kind(s->kind) ? dev_of(fr, s->device) : NULL;
	if (!d)
		return;
	if (s->kind == CT_KIND_DEVICE && ct_api_is_stream_ordered(s->api)) {
		struct ct_frag_pool_view *p = pool_of(fr, ev->aux, s->device);
		if (p) {
			tree_insert(&fr->nodes, &fr->pool_root, b->ptr, b->size,
				    (uint32_t)(p - fr->pools));
			pool_use(fr, p, b->size, 1);
		}
	} else if (s->kind == CT_KIND_DEVICE) {
		tree_insert(&fr->nodes, &d->root, b->ptr, b->size, 0);
		d->cur.blocks++;
		d->cur.bytes = ct_sat_add(d->cur.bytes, b->size);
	}
	vmm_add(&d->cur, s->kind, b->size, 1);
	/* the allocation that made this device's peak: the state right after it */
	if (s->dp != CT_IMAP_NONE && m->dpeaks[s->dp].version != d->peak_version) {
		d->peak_version = m->dpeaks[s->dp].version;
		d->peak_ts = ev->ts_ns;
		d->at_peak = dev_stats(fr, d);
		d->have_peak = 1;
	}
}

static void frag_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			 const struct ct_block *b, int how)
{
	struct frag *fr = ctx;
	(void)how;
	sample_upto(fr, m, ev->ts_ns);
	const struct ct_site *s = &m->sites[b->site];
	struct frag_dev *d = is_frag_kind(s->kind) ? dev_of(fr, s->device) : NULL;
	if (!d)
		return;
	if (s->kind == CT_KIND_DEVICE && ct_api_is_stream_ordered(s->api)) {
		uint32_t tag = tree_erase(&fr->nodes, &fr->pool_root, b->ptr);
		if (tag != FRAG_NONE)
			pool_use(fr, &fr->pools[tag], b->size, -1);
	} else if (s->kind == CT_KIND_DEVICE) {
		if (tree_erase(&fr->nodes, &d->root, b->ptr) != FRAG_NONE) {
			d->cur.blocks--;
			d->cur.bytes = ct_sat_sub(d->cur.bytes, b->size);
		}
	}
	vmm_add(&d->cur, s->kind, b->size, -1);
}

/* Pool create, trim and destroy. */
static void frag_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	struct frag *fr = ctx;
	if (ev->result != 0 ||
	    (ev->op != CT_OP_POOL_CREATE && ev->op != CT_OP_POOL_TRIM && ev->op != CT_OP_POOL_DESTROY))
		return;
	sample_upto(fr, m, ev->ts_ns);
	if (!ev->ptr)
		return;
	struct ct_frag_pool_view *p = pool_of(fr, ev->ptr, ev->device);
	if (!p)
		return;
	if (ev->op == CT_OP_POOL_CREATE) {
		p->created = 1;
		p->destroyed = 0;
		pool_set_reserved(fr, p, p->used);
	} else if (ev->op == CT_OP_POOL_TRIM) {
		p->trims++;
		uint64_t keep = p->reserved < ev->size ? p->reserved : ev->size;
		pool_set_reserved(fr, p, keep > p->used ? keep : p->used);
	} else {
		p->destroyed = 1;
		pool_set_reserved(fr, p, p->used);
	}
}

static void frag_finish(void *ctx, struct ct_model *m)
{
	struct frag *fr = ctx;
	sample_upto(fr, m, m->last_ts);
}

static void frag_destroy(void *ctx)
{
	struct frag *fr = ctx;
	for (size_t i = 0; i < fr->ndev; i++)
		free(fr->dev[i].samples);
	free(fr->nodes.v);
	free(fr->pools);
	ct_imap_free(&fr->poolmap);
	free(fr);
}

static void *frag_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	struct frag *fr = ct_xcalloc(1, sizeof *fr);
	fr->k = o->buckets ? o->buckets : 1;
	fr->nodes.rng = 0x9e3779b97f4a7c15ull;
	return fr;
}

const struct ct_analysis ct_analysis_frag = {
	.name = "frag",
	.attach = frag_attach,
	.observe = {.alloc = frag_alloc, .release = frag_release, .event = frag_event,
		    .finish = frag_finish, .destroy = frag_destroy},
};

/* ---- rendering -------------------------------------------------------------------------- */

/* Time of sample i since the start of the trace. */
static uint64_t sample_time(const struct ct_model *m, const struct frag *fr, size_t i)
{
	return ct_model_since_start(m, fr->t0 + (uint64_t)i * fr->width);
}

unsigned ct_frag_percent(const struct ct_frag_state *s)
{
	if (!s->free || s->hole >= s->free)
		return 0;
	unsigned __int128 rest = s->free - s->hole;
	return (unsigned)((rest * 200 + s->free) / ((unsigned __int128)s->free * 2));
}

/* Devices in order of their number (caller frees). */
static const struct frag_dev **sorted_devs(const struct frag *fr)
{
	const struct frag_dev **v = ct_xcalloc(fr->ndev + 1, sizeof *v);
	for (size_t i = 0; i < fr->ndev; i++) {
		size_t j = i;
		while (j && v[j - 1]->device > fr->dev[i].device) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = &fr->dev[i];
	}
	return v;
}

static void text_state(FILE *f, const struct ct_frag_state *s)
{
	char b[6][32];
	fprintf(f,
		"  address space (allocations outside pools): %" PRIu64 " block%s, %s in a span of %s;"
		" %s free inside in %" PRIu64 " hole%s, the largest %s (fragmentation %u%%)\n",
		s->blocks, ct_plural_s(s->blocks), ct_fmt_bytes(s->bytes, b[0], sizeof b[0]),
		ct_fmt_bytes(s->span, b[1], sizeof b[1]), ct_fmt_bytes(s->free, b[2], sizeof b[2]),
		s->holes, ct_plural_s(s->holes), ct_fmt_bytes(s->hole, b[3], sizeof b[3]),
		ct_frag_percent(s));
	fprintf(f, "  stream-ordered pools: %s used of %s reserved (estimate)\n",
		ct_fmt_bytes(s->pool_used, b[0], sizeof b[0]),
		ct_fmt_bytes(s->pool_reserved, b[1], sizeof b[1]));
	fprintf(f, "  VMM: %s reserved, %s mapped, %s physical\n",
		ct_fmt_bytes(s->vmm_reserved, b[0], sizeof b[0]),
		ct_fmt_bytes(s->vmm_mapped, b[1], sizeof b[1]),
		ct_fmt_bytes(s->vmm_physical, b[2], sizeof b[2]));
}

static void text_frag(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b[10][32];
	(void)o;
	size_t nd, np;
	struct ct_frag_view *dv = ct_view_frag(m, &nd);
	fputs("cumtrace frag: ", f);
	ct_put_proc(f, m);
	fputc('\n', f);
	ct_put_notes(f, m);
	ct_put_device_memory(f, m); /* issue 19 §6: what the pools and the driver hold besides */
	if (!nd) {
		fputs("  no device memory was allocated\n", f);
		free(dv);
		return;
	}
	struct ct_frag_totals t;
	ct_view_frag_totals(m, &t);
	for (size_t x = 0; x < nd; x++) {
		const struct ct_frag_view *d = &dv[x];
		if (d->have_peak) {
			fprintf(f, "\ndevice %d at its peak (%s at %.3f ms):\n", d->device,
				ct_fmt_bytes(d->at_peak.device_bytes, b[0], sizeof b[0]),
				(double)d->peak_ns / 1e6);
			text_state(f, &d->at_peak);
		} else {
			fprintf(f, "\ndevice %d (no device bytes, no peak):\n", d->device);
		}
		fprintf(f, "device %d at the end:\n", d->device);
		text_state(f, &d->at_end);
		ct_fmt_dur(t.sample_ns, b[0], sizeof b[0]);
		fprintf(f, "device %d over time (the state just before each time; every %s):\n",
			d->device, b[0]);
		fprintf(f, "  %12s %10s %10s %10s %10s %5s %10s %10s %10s %10s %10s\n", "time", "live",
			"span", "free", "largest", "frag", "pool used", "pool rsvd", "vmm rsvd",
			"vmm mapped", "vmm phys");
		for (size_t i = 0; i < d->nsamples; i++) {
			const struct ct_frag_state *s = &d->samples[i];
			ct_fmt_dur(ct_view_frag_time(m, i), b[0], sizeof b[0]);
			fprintf(f, "  %12s %10s %10s %10s %10s %4u%% %10s %10s %10s %10s %10s\n", b[0],
				ct_fmt_bytes(s->bytes, b[1], sizeof b[1]),
				ct_fmt_bytes(s->span, b[2], sizeof b[2]),
				ct_fmt_bytes(s->free, b[3], sizeof b[3]),
				ct_fmt_bytes(s->hole, b[4], sizeof b[4]), ct_frag_percent(s),
				ct_fmt_bytes(s->pool_used, b[5], sizeof b[5]),
				ct_fmt_bytes(s->pool_reserved, b[6], sizeof b[6]),
				ct_fmt_bytes(s->vmm_reserved, b[7], sizeof b[7]),
				ct_fmt_bytes(s->vmm_mapped, b[8], sizeof b[8]),
				ct_fmt_bytes(s->vmm_physical, b[9], sizeof b[9]));
		}
	}
	free(dv);
	struct ct_frag_pool_view *pv = ct_view_frag_pools(m, &np);
	if (np) {
		fputs("\npools (at the end; reserved is an estimate):\n", f);
		fprintf(f, "  %6s %-18s %8s %10s %10s %12s %6s  %s\n", "device", "pool", "allocs",
			"used", "reserved", "highest used", "trims", "state");
		for (size_t i = 0; i < np; i++) {
			const struct ct_frag_pool_view *p = &pv[i];
			char h[32];
			if (p->handle)
				snprintf(h, sizeof h, "0x%" PRIx64, p->handle);
			else
				snprintf(h, sizeof h, "default");
			fprintf(f, "  %6d %-18s %8" PRIu64 " %10s %10s %12s %6" PRIu64 "  %s\n",
				p->device, h, p->allocations, ct_fmt_bytes(p->used, b[0], sizeof b[0]),
				ct_fmt_bytes(p->reserved, b[1], sizeof b[1]),
				ct_fmt_bytes(p->peak_used, b[2], sizeof b[2]), p->trims,
				p->destroyed ? "destroyed"
				: p->created ? "created"
					     : "not seen created");
		}
	}
	free(pv);
	if (t.untracked)
		fprintf(f, "  note: %" PRIu64 " %s of devices beyond %d or pools beyond %d %s not counted\n",
			t.untracked, ct_plural(t.untracked, "event", "events"), FRAG_MAX_DEVICES, FRAG_MAX_POOLS,
			ct_plural(t.untracked, "is", "are"));
}

static void csv_state(FILE *f, const struct ct_model *m, int device, const char *at,
		      uint64_t time_ns, const struct ct_frag_state *s)
{
	fprintf(f,
		"%" PRIu32 ",%d,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
		m->pid, device, at, time_ns, s->blocks, s->bytes, s->span, s->free, s->holes,
		s->hole, s->pool_used, s->pool_reserved, s->vmm_reserved, s->vmm_mapped,
		s->vmm_physical, s->device_bytes);
}

static void csv_frag(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		     size_t nm)
{
	(void)o;
	fputs("pid,device,at,time_ns,blocks,bytes,span,free,holes,largest_hole,pool_used,"
	      "pool_reserved,vmm_reserved,vmm_mapped,vmm_physical,device_bytes\n",
	      f);
	for (size_t x = 0; x < nm; x++) {
		const struct ct_model *m = ms[x];
		size_t nd;
		struct ct_frag_view *dv = ct_view_frag(m, &nd);
		for (size_t k = 0; k < nd; k++) {
			const struct ct_frag_view *d = &dv[k];
			if (d->have_peak)
				csv_state(f, m, d->device, "peak", d->peak_ns, &d->at_peak);
			csv_state(f, m, d->device, "end", ct_model_since_start(m, m->last_ts), &d->at_end);
			for (size_t i = 0; i < d->nsamples; i++)
				csv_state(f, m, d->device, "sample", ct_view_frag_time(m, i), &d->samples[i]);
		}
		free(dv);
	}
}

static void json_state(struct ct_json *j, const char *key, const struct ct_frag_state *s)
{
	if (key)
		ct_json_key(j, key);
	ct_json_obj(j);
	ct_json_kv_u64(j, "blocks", s->blocks);
	ct_json_kv_u64(j, "bytes", s->bytes);
	ct_json_kv_u64(j, "span_bytes", s->span);
	ct_json_kv_u64(j, "free_bytes", s->free);
	ct_json_kv_u64(j, "holes", s->holes);
	ct_json_kv_u64(j, "largest_hole_bytes", s->hole);
	ct_json_kv_u64(j, "pool_used_bytes", s->pool_used);
	ct_json_kv_u64(j, "pool_reserved_bytes", s->pool_reserved);
	ct_json_kv_u64(j, "vmm_reserved_bytes", s->vmm_reserved);
	ct_json_kv_u64(j, "vmm_mapped_bytes", s->vmm_mapped);
	ct_json_kv_u64(j, "vmm_physical_bytes", s->vmm_physical);
	ct_json_kv_u64(j, "device_bytes", s->device_bytes);
	ct_json_obj_end(j);
}

/* "frag": per dump and device, the state at its peak, at the end and over time; the pools. */
static void json_frag(struct ct_json *j, const struct ct_report_opts *o,
		      struct ct_model *const *ms, size_t nm)
{
	(void)o;
	ct_json_key(j, "frag");
	ct_json_obj(j);
	ct_json_key(j, "devices");
	ct_json_arr(j);
	for (size_t x = 0; x < nm; x++) {
		const struct ct_model *m = ms[x];
		size_t nd;
		struct ct_frag_view *dv = ct_view_frag(m, &nd);
		struct ct_frag_totals t;
		ct_view_frag_totals(m, &t);
		for (size_t k = 0; k < nd; k++) {
			const struct ct_frag_view *d = &dv[k];
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", m->pid);
			ct_json_kv_i64(j, "device", d->device);
			ct_json_key(j, "peak_time_ns");
			if (d->have_peak)
				ct_json_u64(j, d->peak_ns);
			else
				ct_json_null(j);
			if (d->have_peak)
				json_state(j, "at_peak", &d->at_peak);
			else {
				ct_json_key(j, "at_peak");
				ct_json_null(j);
			}
			json_state(j, "at_end", &d->at_end);
			ct_json_kv_u64(j, "sample_ns", t.sample_ns);
			ct_json_key(j, "samples");
			ct_json_arr(j);
			for (size_t i = 0; i < d->nsamples; i++) {
				ct_json_obj(j);
				ct_json_kv_u64(j, "time_ns", ct_view_frag_time(m, i));
				json_state(j, "state", &d->samples[i]);
				ct_json_obj_end(j);
			}
			ct_json_arr_end(j);
			ct_json_obj_end(j);
		}
		free(dv);
	}
	ct_json_arr_end(j);
	if (nm == 1)
		ct_json_device_memory(j, ms[0]); /* issue 19 §6 */
	ct_json_key(j, "pools");
	ct_json_arr(j);
	for (size_t x = 0; x < nm; x++) {
		size_t np;
		struct ct_frag_pool_view *pv = ct_view_frag_pools(ms[x], &np);
		for (size_t i = 0; i < np; i++) {
			const struct ct_frag_pool_view *p = &pv[i];
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", ms[x]->pid);
			ct_json_kv_i64(j, "device", p->device);
			ct_json_kv_u64(j, "pool", p->handle);
			ct_json_kv_bool(j, "created", p->created);
			ct_json_kv_bool(j, "destroyed", p->destroyed);
			ct_json_kv_u64(j, "allocations", p->allocations);
			ct_json_kv_u64(j, "trims", p->trims);
			ct_json_kv_u64(j, "used_bytes", p->used);
			ct_json_kv_u64(j, "reserved_bytes", p->reserved);
			ct_json_kv_u64(j, "peak_used_bytes", p->peak_used);
			ct_json_obj_end(j);
		}
		free(pv);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

const struct ct_report ct_report_frag = {
	.uses = CT_USES(&ct_analysis_frag),
	.text = text_frag,
	.csv = csv_frag,
	.json = json_frag,
};

/* ---- the view for other renderers (views.h) ------------------------------------------------- */

struct ct_frag_view *ct_view_frag(const struct ct_model *m, size_t *n)
{
	const struct frag *fr = ct_model_state(m, &ct_analysis_frag);
	*n = 0;
	if (!fr)
		return NULL;
	struct ct_frag_view *out = ct_xcalloc(fr->ndev + 1, sizeof *out);
	const struct frag_dev **dv = sorted_devs(fr);
	for (size_t i = 0; i < fr->ndev; i++) {
		const struct frag_dev *d = dv[i];
		out[i] = (struct ct_frag_view){.device = d->device,
					       .have_peak = d->have_peak,
					       .peak_ns = d->have_peak ? ct_model_since_start(m, d->peak_ts) : 0,
					       .at_peak = d->at_peak,
					       .at_end = dev_stats(fr, d),
					       .samples = d->samples,
					       .nsamples = fr->nsamples};
	}
	free(dv);
	*n = fr->ndev;
	return out;
}

uint64_t ct_view_frag_time(const struct ct_model *m, size_t i)
{
	const struct frag *fr = ct_model_state(m, &ct_analysis_frag);
	return fr ? sample_time(m, fr, i) : 0;
}

struct ct_frag_pool_view *ct_view_frag_pools(const struct ct_model *m, size_t *n)
{
	const struct frag *fr = ct_model_state(m, &ct_analysis_frag);
	*n = fr ? fr->npools : 0;
	struct ct_frag_pool_view *out = ct_xcalloc(*n + 1, sizeof *out);
	if (*n)
		memcpy(out, fr->pools, *n * sizeof *out);
	return out;
}

void ct_view_frag_totals(const struct ct_model *m, struct ct_frag_totals *t)
{
	const struct frag *fr = ct_model_state(m, &ct_analysis_frag);
	t->sample_ns = fr ? fr->width : 0;
	t->untracked = fr ? fr->untracked : 0;
}
