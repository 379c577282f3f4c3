/*
 * The framework layer (framework.h): blocks of PyTorch's caching allocator
 * and of CuPy's pool, their sites, allocated and reserved bytes per device,
 * and the blocks leaked at the exit point.
 */
#include "model/framework.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/marks.h"

/* PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp, 2.x). */
#define TORCH_MIN_BLOCK 512u		   /* kMinBlockSize: every size rounds up to it */
#define TORCH_SMALL_SIZE (1u << 20)	   /* kSmallSize: the largest small-pool request */
#define SEG_EXPANDABLE UINT64_MAX	   /* the segment of a block of an expandable segment */
#define SEG_UNKNOWN 0		   /* a block taken where no free block was followed */
#define NODE_NONE UINT32_MAX

enum node_state {
	NODE_UNUSED = 0,
	NODE_ALLOCATED = 1, /* handed out */
	NODE_PENDING = 2,   /* free requested, not completed (still in use on a stream) */
	NODE_FREE = 3,	    /* a free block of a followed segment */
};

struct node {
	uint64_t ptr, size, ts, seg;
	uint32_t site;
	uint32_t next_free; /* free list of nodes */
	uint8_t state, fw;
};

/* u64 key -> node index, open addressing with linear probing and backward-shift deletion. */
struct pmap {
	uint64_t *keys; /* key + 1; 0 = empty */
	uint32_t *vals;
	size_t mask, n;
};

struct ct_fw {
	struct node *nodes;
	size_t nnodes, capnodes;
	uint32_t free_nodes;
	struct pmap busy;      /* allocated and pending blocks by address (torch and CuPy) */
	struct pmap hole_lo;   /* torch's free blocks by start */
	struct pmap hole_hi;   /* ... and by end */
	struct ct_fw_dev *devs;
	size_t ndevs, capdevs;
	struct ct_fw_oom ooms[CT_FW_OOMS_KEPT];
	size_t nooms;
	uint64_t ooms_total, unmatched;
	int exit_marked, exited;
};

/* ---- the map --------------------------------------------------------------------------- */

static size_t pmap_slot(uint64_t key, size_t mask)
{
	return (size_t)ct_mix64(key) & mask;
}

static uint32_t pmap_get(const struct pmap *p, uint64_t key)
{
	if (!p->mask)
		return NODE_NONE;
	for (size_t i = pmap_slot(key, p->mask);; i = (i + 1) & p->mask) {
		if (!p->keys[i])
			return NODE_NONE;
		if (p->keys[i] == key + 1)
			return p->vals[i];
	}
}

static void pmap_put(struct pmap *p, uint64_t key, uint32_t val);

static void pmap_grow(struct pmap *p)
{
	struct pmap old = *p;
	size_t cap = old.mask ? (old.mask + 1) * 2 : 64;
	p->keys = ct_xcalloc(cap, sizeof *p->keys);
	p->vals = ct_xcalloc(cap, sizeof *p->vals);
	p->mask = cap - 1;
	p->n = 0;
	for (size_t i = 0; old.mask && i <= old.mask; i++)
		if (old.keys[i])
			pmap_put(p, old.keys[i] - 1, old.vals[i]);
	free(old.keys);
	free(old.vals);
}

/* Set key to val (a key already there is overwritten). */
static void pmap_put(struct pmap *p, uint64_t key, uint32_t val)
{
	if ((p->n + 1) * 4 > (p->mask + 1) * 3 || !p->mask)
		pmap_grow(p);
	size_t i = pmap_slot(key, p->mask);
	for (; p->keys[i]; i = (i + 1) & p->mask)
		if (p->keys[i] == key + 1) {
			p->vals[i] = val;
			return;
		}
	p->keys[i] = key + 1;
	p->vals[i] = val;
	p->n++;
}

static void pmap_del(struct pmap *p, uint64_t key)
{
	if (!p->mask)
		return;
	size_t i = pmap_slot(key, p->mask);
	for (; p->keys[i] != key + 1; i = (i + 1) & p->mask)
		if (!p->keys[i])
			return;
	/* backward shift: move later entries of the run into the hole when their slot allows */
	for (size_t j = (i + 1) & p->mask; p->keys[j]; j = (j + 1) & p->mask) {
		size_t want = pmap_slot(p->keys[j] - 1, p->mask);
		if (((j - want) & p->mask) >= ((j - i) & p->mask)) {
			p->keys[i] = p->keys[j];
			p->vals[i] = p->vals[j];
			i = j;
		}
	}
	p->keys[i] = 0;
	p->n--;
}

static void pmap_free(struct pmap *p)
{
	free(p->keys);
	free(p->vals);
}

/* ---- state ------------------------------------------------------------------------------- */

static struct ct_fw *fw_of(struct ct_model *m)
{
	if (!m->fw)
		m->fw = ct_xcalloc(1, sizeof *m->fw);
	return m->fw;
}

void ct_fw_free(struct ct_fw *fw)
{
	if (!fw)
		return;
	free(fw->nodes);
	pmap_free(&fw->busy);
	pmap_free(&fw->hole_lo);
	pmap_free(&fw->hole_hi);
	free(fw->devs);
	free(fw);
}

static uint32_t node_new(struct ct_fw *fw)
{
	uint32_t i;
	if (fw->free_nodes && fw->free_nodes != NODE_NONE) {
		i = fw->free_nodes - 1;
		fw->free_nodes = fw->nodes[i].next_free;
	} else {
		if (fw->nnodes >= NODE_NONE - 1) {
			fputs("cumtrace-report: more than 2^32 live framework blocks in one dump\n", stderr);
			exit(2);
		}
		fw->nodes = ct_xgrow(fw->nodes, &fw->capnodes, fw->nnodes + 1, sizeof *fw->nodes);
		i = (uint32_t)fw->nnodes++;
	}
	memset(&fw->nodes[i], 0, sizeof fw->nodes[i]);
	return i;
}

static void node_drop(struct ct_fw *fw, uint32_t i)
{
	fw->nodes[i].state = NODE_UNUSED;
	fw->nodes[i].next_free = fw->free_nodes;
	fw->free_nodes = i + 1;
}

const char *ct_fw_name(int fw)
{
	return fw == CT_FW_TORCH ? "PyTorch" : fw == CT_FW_CUPY ? "CuPy" : "unknown";
}

static struct ct_fw_dev *dev_of(struct ct_fw *fw, int which, int16_t device)
{
	for (size_t i = 0; i < fw->ndevs; i++)
		if (fw->devs[i].fw == which && fw->devs[i].device == device)
			return &fw->devs[i];
	fw->devs = ct_xgrow(fw->devs, &fw->capdevs, fw->ndevs + 1, sizeof *fw->devs);
	struct ct_fw_dev *d = &fw->devs[fw->ndevs++];
	memset(d, 0, sizeof *d);
	d->fw = (uint8_t)which;
	d->device = device;
	return d;
}

/* ---- torch's free blocks ------------------------------------------------------------------- */

static uint64_t end_of(uint64_t ptr, uint64_t size)
{
	return ptr + size >= ptr ? ptr + size : UINT64_MAX;
}

static void hole_unlink(struct ct_fw *fw, uint32_t h)
{
	struct node *n = &fw->nodes[h];
	pmap_del(&fw->hole_lo, n->ptr);
	pmap_del(&fw->hole_hi, end_of(n->ptr, n->size));
	node_drop(fw, h);
}

/* A free block [ptr, end) of segment seg, joined with free neighbours of the same segment. */
static void hole_add(struct ct_fw *fw, uint64_t ptr, uint64_t end, uint64_t seg)
{
	if (end <= ptr || seg == SEG_UNKNOWN)
		return;
	uint32_t prev = pmap_get(&fw->hole_hi, ptr);
	if (prev != NODE_NONE && fw->nodes[prev].seg == seg) {
		ptr = fw->nodes[prev].ptr;
		hole_unlink(fw, prev);
	}
	uint32_t next = pmap_get(&fw->hole_lo, end);
	if (next != NODE_NONE && fw->nodes[next].seg == seg) {
		end = end_of(fw->nodes[next].ptr, fw->nodes[next].size);
		hole_unlink(fw, next);
	}
	/* a free block already starting or ending here (events lost): the new one replaces it */
	uint32_t old = pmap_get(&fw->hole_lo, ptr);
	if (old != NODE_NONE)
		hole_unlink(fw, old);
	old = pmap_get(&fw->hole_hi, end);
	if (old != NODE_NONE)
		hole_unlink(fw, old);
	uint32_t h = node_new(fw);
	struct node *n = &fw->nodes[h];
	n->ptr = ptr;
	n->size = end - ptr;
	n->seg = seg;
	n->state = NODE_FREE;
	pmap_put(&fw->hole_lo, ptr, h);
	pmap_put(&fw->hole_hi, end, h);
}

/* The free block holding [ptr, end), NODE_NONE when none (a scan: unmaps are rare). */
static uint32_t hole_holding(struct ct_fw *fw, uint64_t ptr, uint64_t end)
{
	uint32_t h = pmap_get(&fw->hole_lo, ptr);
	if (h != NODE_NONE)
		return h;
	for (size_t i = 0; i < fw->nnodes; i++) {
		const struct node *n = &fw->nodes[i];
		if (n->state == NODE_FREE && n->ptr <= ptr && end_of(n->ptr, n->size) >= end)
			return (uint32_t)i;
	}
	return NODE_NONE;
}

/* torch's round_size (without roundup_power2_divisions, which the dump does not say). */
static uint64_t torch_round(uint64_t size)
{
	if (size < TORCH_MIN_BLOCK)
		return TORCH_MIN_BLOCK;
	if (size > UINT64_MAX - TORCH_MIN_BLOCK)
		return size;
	return (size + TORCH_MIN_BLOCK - 1) / TORCH_MIN_BLOCK * TORCH_MIN_BLOCK;
}

/*
 * The size of the block torch hands out at ptr for a request of req bytes,
 * taking it out of the followed free block there (and leaving the remainder
 * when torch splits). *seg: that block's segment, SEG_UNKNOWN when none.
 */
static uint64_t torch_take(struct ct_fw *fw, struct ct_fw_dev *d, uint64_t ptr, uint64_t req,
			   uint64_t *seg)
{
	uint64_t r = torch_round(req);
	uint32_t h = pmap_get(&fw->hole_lo, ptr);
	*seg = SEG_UNKNOWN;
	if (h == NODE_NONE || fw->nodes[h].size < r) {
		d->estimated++;
		return r;
	}
	struct node hole = fw->nodes[h];
	uint64_t rest = hole.size - r;
	int small = r <= TORCH_SMALL_SIZE || hole.seg == SEG_EXPANDABLE;
	int split = small ? rest >= TORCH_MIN_BLOCK : rest > TORCH_SMALL_SIZE;
	hole_unlink(fw, h);
	*seg = hole.seg;
	if (!split)
		return hole.size;
	hole_add(fw, ptr + r, ptr + hole.size, hole.seg);
	return r;
}

/* ---- blocks -------------------------------------------------------------------------------- */

/* A framework dev's bytes are v from ts on: allocated (used) bytes as the block kind,
 * PyTorch's reserved bytes as torch_segment. Into the timeline, and to the observers. */
static void tl_put(struct ct_model *m, uint8_t kind, int16_t device, uint64_t ts, uint64_t v)
{
	if (!m->tl.started)
		ct_tl_start(&m->tl, ts);
	ct_tl_touch(&m->tl, ts);
	ct_tl_update(&m->tl, kind, device, ts, v);
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].fw_bytes)
			m->obs[i].fw_bytes(m->obs[i].ctx, m, ts, kind, device, v);
}

static uint8_t block_kind(int which)
{
	return which == CT_FW_TORCH ? CT_KIND_TORCH_BLOCK : CT_KIND_CUPY_BLOCK;
}

static void peak_check(struct ct_fw_dev *d, uint64_t ts)
{
	if (d->allocated > d->peak_allocated) {
		d->peak_allocated = d->allocated;
		d->peak_allocated_ts = ts;
		d->reserved_at_peak_allocated = d->reserved;
		d->version++;
	}
}

/* Before a site of d changes: keep its values at d's last peak. */
static void site_touch(struct ct_fw_dev *d, struct ct_site *s)
{
	if (s->saved_version != d->version) {
		s->saved_version = d->version;
		s->saved_count = s->live_count;
		s->saved_bytes = s->live_bytes;
	}
}

static void block_alloc(struct ct_model *m, struct ct_fw *fw, int which, const struct ct_rec_event *ev)
{
	struct ct_fw_dev *d = dev_of(fw, which, ev->device);
	uint64_t seg = SEG_UNKNOWN, size;
	if (which == CT_FW_TORCH)
		size = torch_take(fw, d, ev->ptr, ev->size, &seg);
	else
		size = ev->size;
	uint32_t old = pmap_get(&fw->busy, ev->ptr);
	if (old != NODE_NONE) {
		/* handed out again without a free seen: the old block is gone */
		struct node *o = &fw->nodes[old];
		struct ct_fw_dev *od = dev_of(fw, o->fw, m->sites[o->site].device);
		struct ct_site *os = &m->sites[o->site];
		if (o->state == NODE_ALLOCATED) {
			site_touch(od, os);
			os->live_count--;
			os->live_bytes = ct_sat_sub(os->live_bytes, o->size);
			od->allocated = ct_sat_sub(od->allocated, o->size);
		}
		fw->unmatched++;
		pmap_del(&fw->busy, ev->ptr);
		node_drop(fw, old);
	}
	uint32_t si = ct_model_site(m, ev->stack_id, ev->api,
				    which == CT_FW_TORCH ? CT_KIND_TORCH_BLOCK : CT_KIND_CUPY_BLOCK, ev->device);
	ct_model_clock(m, si, ev->ts_ns);
	struct ct_site *s = &m->sites[si];
	site_touch(d, s);
	s->live_count++;
	s->live_bytes = ct_sat_add(s->live_bytes, size);
	s->allocs++;
	s->bytes_allocated = ct_sat_add(s->bytes_allocated, size);
	d->blocks++;
	d->allocated = ct_sat_add(d->allocated, size);
	peak_check(d, ev->ts_ns);
	tl_put(m, block_kind(which), ev->device, ev->ts_ns, d->allocated);
	uint32_t i = node_new(fw);
	struct node *n = &fw->nodes[i];
	n->ptr = ev->ptr;
	n->size = size;
	n->ts = ev->ts_ns;
	n->seg = seg;
	n->site = si;
	n->state = NODE_ALLOCATED;
	n->fw = (uint8_t)which;
	pmap_put(&fw->busy, ev->ptr, i);
	struct ct_block b = {.ptr = n->ptr, .size = size, .ts = n->ts, .stream = ev->stream, .tid = ev->tid, .site = si};
	ct_model_notify_fw(m, ev, &b, 1);
}

/* The block at ptr stops being handed out (torch: free requested; CuPy: freed). */
static struct node *block_release(struct ct_model *m, struct ct_fw *fw, const struct ct_rec_event *ev)
{
	uint32_t i = pmap_get(&fw->busy, ev->ptr);
	if (i == NODE_NONE) {
		fw->unmatched++;
		return NULL;
	}
	struct node *n = &fw->nodes[i];
	if (n->state != NODE_ALLOCATED)
		return n;
	struct ct_site *s = &m->sites[n->site];
	struct ct_fw_dev *d = dev_of(fw, n->fw, s->device);
	struct ct_block b = {.ptr = n->ptr, .size = n->size, .ts = n->ts, .stream = ev->stream, .tid = ev->tid, .site = n->site};
	ct_model_notify_fw(m, ev, &b, 0);
	site_touch(d, s);
	s->live_count--;
	s->live_bytes = ct_sat_sub(s->live_bytes, n->size);
	d->allocated = ct_sat_sub(d->allocated, n->size);
	tl_put(m, block_kind(n->fw), s->device, ev->ts_ns, d->allocated);
	n->state = NODE_PENDING;
	return n;
}

/* torch: the block at ptr is free again (free completed). */
static void block_reusable(struct ct_model *m, struct ct_fw *fw, const struct ct_rec_event *ev)
{
	uint32_t i = pmap_get(&fw->busy, ev->ptr);
	if (i == NODE_NONE) {
		fw->unmatched++;
		return;
	}
	if (fw->nodes[i].state == NODE_ALLOCATED)
		block_release(m, fw, ev);
	struct node n = fw->nodes[i];
	pmap_del(&fw->busy, ev->ptr);
	node_drop(fw, i);
	hole_add(fw, n.ptr, end_of(n.ptr, n.size), n.seg);
}

static void torch_oom(struct ct_model *m, struct ct_fw *fw, const struct ct_rec_event *ev)
{
	struct ct_fw_dev *d = dev_of(fw, CT_FW_TORCH, ev->device);
	d->ooms++;
	fw->ooms_total++;
	if (fw->nooms >= CT_FW_OOMS_KEPT)
		return;
	struct ct_fw_oom *o = &fw->ooms[fw->nooms++];
	memset(o, 0, sizeof *o);
	o->ts = ev->ts_ns;
	o->size = ev->size;
	o->device_free = ev->ptr;
	o->allocated = d->allocated;
	o->reserved = d->reserved;
	o->device = ev->device;
	o->fw = CT_FW_TORCH;
	o->stack_id = ev->stack_id;
	/* the largest live sites of its device: a bounded insertion sort */
	for (size_t i = 0; i < m->nsites; i++) {
		const struct ct_site *s = &m->sites[i];
		if (s->kind != CT_KIND_TORCH_BLOCK || s->device != ev->device || !s->live_count)
			continue;
		size_t k = o->nsites < CT_FW_OOM_SITES ? o->nsites++ : CT_FW_OOM_SITES;
		if (k == CT_FW_OOM_SITES) {
			if (s->live_bytes <= o->sites[k - 1].bytes)
				continue;
			k--;
		}
		while (k > 0 && o->sites[k - 1].bytes < s->live_bytes) {
			o->sites[k] = o->sites[k - 1];
			k--;
		}
		o->sites[k].site = (uint32_t)i;
		o->sites[k].count = s->live_count;
		o->sites[k].bytes = s->live_bytes;
	}
}

static void segment(struct ct_model *m, struct ct_fw *fw, const struct ct_rec_event *ev, int add,
		    int expandable)
{
	struct ct_fw_dev *d = dev_of(fw, CT_FW_TORCH, ev->device);
	uint64_t end = end_of(ev->ptr, ev->size);
	if (add) {
		d->reserved = ct_sat_add(d->reserved, ev->size);
		tl_put(m, CT_KIND_TORCH_SEGMENT, ev->device, ev->ts_ns, d->reserved);
		if (d->reserved > d->peak_reserved) {
			d->peak_reserved = d->reserved;
			d->peak_reserved_ts = ev->ts_ns;
		}
		hole_add(fw, ev->ptr, end, expandable ? SEG_EXPANDABLE : ev->ptr);
		return;
	}
	d->reserved = ct_sat_sub(d->reserved, ev->size);
	tl_put(m, CT_KIND_TORCH_SEGMENT, ev->device, ev->ts_ns, d->reserved);
	uint32_t h = hole_holding(fw, ev->ptr, end);
	if (h == NODE_NONE)
		return;
	struct node hole = fw->nodes[h];
	hole_unlink(fw, h);
	if (expandable) { /* the free parts before and after the unmapped range stay */
		hole_add(fw, hole.ptr, ev->ptr, hole.seg);
		hole_add(fw, end, end_of(hole.ptr, hole.size), hole.seg);
	}
}

void ct_fw_event(struct ct_model *m, const struct ct_rec_event *ev)
{
	m->fw_events++;
	m->fw_api[ev->api < CT_API_COUNT ? ev->api : CT_API_COUNT]++;
	struct ct_fw *fw = fw_of(m);
	if (fw->exited)
		return; /* the program's code had ended: the interpreter's teardown */
	switch (ev->api) {
	case CT_API_torch_alloc:
		block_alloc(m, fw, CT_FW_TORCH, ev);
		break;
	case CT_API_torch_free_requested:
		block_release(m, fw, ev);
		break;
	case CT_API_torch_free_completed:
		block_reusable(m, fw, ev);
		break;
	case CT_API_torch_segment_alloc:
		segment(m, fw, ev, 1, 0);
		break;
	case CT_API_torch_segment_free:
		segment(m, fw, ev, 0, 0);
		break;
	case CT_API_torch_segment_map:
		segment(m, fw, ev, 1, 1);
		break;
	case CT_API_torch_segment_unmap:
		segment(m, fw, ev, 0, 1);
		break;
	case CT_API_torch_oom:
		torch_oom(m, fw, ev);
		break;
	case CT_API_cupy_alloc:
		block_alloc(m, fw, CT_FW_CUPY, ev);
		break;
	case CT_API_cupy_free: {
		struct node *n = block_release(m, fw, ev);
		if (n) {
			pmap_del(&fw->busy, n->ptr);
			node_drop(fw, (uint32_t)(n - fw->nodes));
		}
		break;
	}
	default:
		break;
	}
	for (size_t o = 0; o < m->nobs; o++)
		if (m->obs[o].fw_event)
			m->obs[o].fw_event(m->obs[o].ctx, m, ev);
}

/*
 * The exit point: every block still handed out is held at exit; those of a
 * site whose held blocks were made across steps (kept from step to step:
 * ct_model_spans_steps) are leaked, at their site. The others (a model's
 * weights, an optimizer's state: made once) are only counted.
 */
static void exit_point(struct ct_model *m, struct ct_fw *fw)
{
	if (fw->exited)
		return;
	fw->exited = 1;
	struct ct_spans *sp = ct_spans_new(m->nsites);
	for (size_t i = 0; i < fw->nnodes; i++)
		if (fw->nodes[i].state == NODE_ALLOCATED)
			ct_spans_add(sp, fw->nodes[i].site, fw->nodes[i].ts);
	uint8_t *kept = ct_spans_kept(m, sp);
	for (size_t i = 0; i < fw->nnodes; i++) {
		const struct node *b = &fw->nodes[i];
		if (b->state != NODE_ALLOCATED)
			continue;
		struct ct_fw_dev *d = dev_of(fw, b->fw, m->sites[b->site].device);
		d->exit_blocks++;
		d->exit_bytes = ct_sat_add(d->exit_bytes, b->size);
		if (kept[b->site / 8] >> (b->site % 8) & 1) {
			d->leaked_blocks++;
			d->leaked_bytes = ct_sat_add(d->leaked_bytes, b->size);
			ct_model_fw_leak(m, b->site, b->size, b->ts);
		}
	}
	free(kept);
}

void ct_fw_mark(struct ct_model *m, const struct ct_mark *mk)
{
	if (mk->kind != CT_MARK_EXIT)
		return;
	struct ct_fw *fw = fw_of(m);
	fw->exit_marked = 1;
	exit_point(m, fw);
}

void ct_fw_at_device_peak(struct ct_model *m)
{
	for (size_t i = 0; m->fw && i < m->fw->ndevs; i++) {
		struct ct_fw_dev *d = &m->fw->devs[i];
		d->allocated_at_device_peak = d->allocated;
		d->reserved_at_device_peak = d->reserved;
	}
}

void ct_fw_finish(struct ct_model *m)
{
	if (m->fw)
		exit_point(m, m->fw);
}

/* ---- queries -------------------------------------------------------------------------------- */

const char *ct_fw_torch_uncached_setting(const struct ct_model *m)
{
	const char *nc = m->launch[CT_LAUNCH_PYTORCH_NO_CUDA_MEMORY_CACHING];
	if (nc && (!strcmp(nc, "1") || !strcmp(nc, "true") || !strcmp(nc, "True")))
		return "PYTORCH_NO_CUDA_MEMORY_CACHING=1";
	const char *conf[2] = {m->launch[CT_LAUNCH_PYTORCH_CUDA_ALLOC_CONF],
			       m->launch[CT_LAUNCH_PYTORCH_ALLOC_CONF]};
	for (int i = 0; i < 2; i++)
		if (conf[i] && strstr(conf[i], "backend:cudaMallocAsync"))
			return "backend:cudaMallocAsync";
	return NULL;
}

int ct_fw_torch_uncached(const struct ct_model *m)
{
	return ct_fw_torch_uncached_setting(m) != NULL;
}

const struct ct_fw_dev *ct_fw_devs(const struct ct_model *m, size_t *n)
{
	*n = m->fw ? m->fw->ndevs : 0;
	return m->fw ? m->fw->devs : NULL;
}

const struct ct_fw_dev *ct_fw_dev_of_site(const struct ct_model *m, const struct ct_site *s)
{
	int which = s->kind == CT_KIND_TORCH_BLOCK ? CT_FW_TORCH : s->kind == CT_KIND_CUPY_BLOCK ? CT_FW_CUPY : -1;
	for (size_t i = 0; which >= 0 && m->fw && i < m->fw->ndevs; i++)
		if (m->fw->devs[i].fw == which && m->fw->devs[i].device == s->device)
			return &m->fw->devs[i];
	return NULL;
}

const struct ct_fw_oom *ct_fw_ooms(const struct ct_model *m, size_t *kept, uint64_t *total)
{
	*kept = m->fw ? m->fw->nooms : 0;
	*total = m->fw ? m->fw->ooms_total : 0;
	return m->fw ? m->fw->ooms : NULL;
}

int ct_fw_exit_marked(const struct ct_model *m)
{
	return m->fw && m->fw->exit_marked;
}

void ct_fw_foreach_block(const struct ct_model *m, void (*fn)(void *ctx, const struct ct_fw_block *b),
			 void *ctx)
{
	for (size_t i = 0; m->fw && i < m->fw->nnodes; i++) {
		const struct node *n = &m->fw->nodes[i];
		if (n->state == NODE_UNUSED)
			continue;
		struct ct_fw_block b = {.ptr = n->ptr,
					.size = n->size,
					.ts = n->state == NODE_FREE ? 0 : n->ts,
					.site = n->state == NODE_FREE ? UINT32_MAX : n->site,
					.state = n->state == NODE_ALLOCATED ? CT_FW_BLOCK_ALLOCATED
						 : n->state == NODE_PENDING ? CT_FW_BLOCK_PENDING
									    : CT_FW_BLOCK_FREE,
					.fw = n->fw};
		fn(ctx, &b);
	}
}

uint64_t ct_fw_unmatched(const struct ct_model *m)
{
	return m->fw ? m->fw->unmatched : 0;
}

void ct_fw_site_at_peak(const struct ct_model *m, const struct ct_site *s, uint64_t *count,
			uint64_t *bytes)
{
	const struct ct_fw_dev *d = ct_fw_dev_of_site(m, s);
	if (d && s->saved_version == d->version) {
		*count = s->saved_count;
		*bytes = s->saved_bytes;
	} else {
		*count = s->live_count;
		*bytes = s->live_bytes;
	}
}

/* ---- summary --------------------------------------------------------------------------------- */

/* The framework events of n dumps per API (CT_API_COUNT + 1 entries); returns their total. */
static uint64_t ct_fw_totals(struct ct_model *const *ms, size_t n, uint64_t *api)
{
	uint64_t total = 0;
	memset(api, 0, (CT_API_COUNT + 1) * sizeof *api);
	for (size_t d = 0; d < n; d++) {
		total += ms[d]->fw_events;
		for (unsigned a = 0; a <= CT_API_COUNT; a++)
			api[a] += ms[d]->fw_api[a];
	}
	return total;
}

/* "torch_alloc" -> "alloc", *fw_len 5: the framework's name is said once per framework. */
static const char *ct_fw_action(unsigned a, size_t *fw_len)
{
	const char *name = a < CT_API_COUNT ? ct_api_name(a) : "unknown";
	const char *us = strchr(name, '_');
	*fw_len = us ? (size_t)(us - name) : 0;
	return us ? us + 1 : name;
}

static void put_dev(FILE *f, const struct ct_model *m, const struct ct_fw_dev *d, int ndumps)
{
	char b1[32], b2[32], b3[32];
	fprintf(f, "  %s", ct_fw_name(d->fw));
	if (ndumps > 1)
		fprintf(f, " (pid %" PRIu32 ")", m->pid);
	fprintf(f, ", device %d: peak %s %s", d->device,
		d->fw == CT_FW_TORCH ? "allocated" : "used", ct_fmt_bytes(d->peak_allocated, b1, sizeof b1));
	if (d->fw == CT_FW_TORCH)
		fprintf(f, ", peak reserved %s", ct_fmt_bytes(d->peak_reserved, b2, sizeof b2));
	fprintf(f, "; held at exit %s in %" PRIu64 " block%s%s", ct_fmt_bytes(d->exit_bytes, b3, sizeof b3),
		d->exit_blocks, ct_plural_s(d->exit_blocks),
		ct_fw_exit_marked(m) ? "" : " (end of the dump: no exit point marked)");
	fprintf(f, ", of them kept from step to step (leaked) %s in %" PRIu64 "\n",
		ct_fmt_bytes(d->leaked_bytes, b3, sizeof b3), d->leaked_blocks);
	if (d->estimated)
		fprintf(f, "    %" PRIu64 " of %" PRIu64 " block size%s estimated (rounded request: no free block followed there)\n",
			d->estimated, d->blocks, ct_plural_s(d->blocks));
}

void ct_fw_put_summary(FILE *f, struct ct_model *const *ms, size_t n)
{
	uint64_t api[CT_API_COUNT + 1];
	uint64_t total = ct_fw_totals(ms, n, api);
	if (!total)
		return;
	fprintf(f, "  framework events: %" PRIu64 " (", total);
	const char *fw = NULL;
	size_t fw_len = 0;
	for (unsigned a = 0; a <= CT_API_COUNT; a++) {
		if (!api[a])
			continue;
		size_t len;
		const char *action = ct_fw_action(a, &len);
		const char *name = len ? ct_api_name(a) : "other";
		if (!len)
			len = 5;
		if (!fw || len != fw_len || strncmp(name, fw, len))
			fprintf(f, "%s%.*s: %s %" PRIu64, fw ? "; " : "", (int)len, name, action, api[a]);
		else
			fprintf(f, ", %s %" PRIu64, action, api[a]);
		fw = name;
		fw_len = len;
	}
	fputs(")\n", f);
	for (size_t d = 0; d < n; d++) {
		size_t nd;
		const struct ct_fw_dev *v = ct_fw_devs(ms[d], &nd);
		for (size_t i = 0; i < nd; i++)
			put_dev(f, ms[d], &v[i], n > 1);
	}
}

void ct_fw_json_dev_head(struct ct_json *j, const struct ct_model *m, const struct ct_fw_dev *d)
{
	ct_json_kv_str(j, "framework", d->fw == CT_FW_TORCH ? "pytorch" : "cupy");
	ct_json_kv_u64(j, "pid", m->pid);
	ct_json_kv_i64(j, "device", d->device);
	ct_json_kv_u64(j, "peak_allocated_bytes", d->peak_allocated);
	ct_json_kv_u64(j, "peak_allocated_ns", ct_model_since_start(m, d->peak_allocated_ts));
}

void ct_fw_json_devs(struct ct_json *j, const struct ct_model *m)
{
	size_t nd;
	const struct ct_fw_dev *v = ct_fw_devs(m, &nd);
	ct_json_key(j, "devices");
	ct_json_arr(j);
	for (size_t i = 0; i < nd; i++) {
		const struct ct_fw_dev *d = &v[i];
		ct_json_obj(j);
		ct_fw_json_dev_head(j, m, d);
		if (d->fw == CT_FW_TORCH) {
			ct_json_kv_u64(j, "reserved_at_peak_allocated_bytes", d->reserved_at_peak_allocated);
			ct_json_kv_u64(j, "peak_reserved_bytes", d->peak_reserved);
			ct_json_kv_u64(j, "peak_reserved_ns", ct_model_since_start(m, d->peak_reserved_ts));
		}
		ct_json_kv_u64(j, "blocks", d->blocks);
		ct_json_kv_u64(j, "sizes_estimated", d->estimated);
		ct_json_kv_u64(j, "exit_blocks", d->exit_blocks);
		ct_json_kv_u64(j, "exit_bytes", d->exit_bytes);
		ct_json_kv_u64(j, "leaked_blocks", d->leaked_blocks);
		ct_json_kv_u64(j, "leaked_bytes", d->leaked_bytes);
		ct_json_kv_bool(j, "exit_marked", ct_fw_exit_marked(m));
		ct_json_kv_u64(j, "ooms", d->ooms);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

void ct_fw_json(struct ct_json *j, struct ct_model *const *ms, size_t n)
{
	uint64_t api[CT_API_COUNT + 1];
	uint64_t total = ct_fw_totals(ms, n, api);
	if (!total)
		return;
	ct_json_key(j, "framework");
	ct_json_obj(j);
	ct_json_kv_u64(j, "events", total);
	ct_json_key(j, "by_api");
	ct_json_obj(j);
	for (unsigned a = 0; a <= CT_API_COUNT; a++)
		if (api[a])
			ct_json_kv_u64(j, a < CT_API_COUNT ? ct_api_name(a) : "unknown", api[a]);
	ct_json_obj_end(j);
	if (n == 1)
		ct_fw_json_devs(j, ms[0]);
	ct_json_obj_end(j);
}
