#include "model/framework.h"
#include "model/marks.h"
#include "model/model.h"
#include "model/nccl.h"
#include "model/pystack.h"

#include <stdlib.h>
#include <string.h>

unsigned ct_kind_ns(unsigned kind)
{
	switch (kind) {
	case CT_KIND_DEVICE:
	case CT_KIND_MANAGED:
	case CT_KIND_HOST_PINNED:
	case CT_KIND_VMM_MAPPED:
		return CT_NS_UVA;
	case CT_KIND_HOST_REGISTERED:
		return CT_NS_REGISTERED;
	case CT_KIND_VMM_PHYSICAL:
		return CT_NS_PHYSICAL;
	case CT_KIND_VMM_RESERVED:
		return CT_NS_RESERVED;
	case CT_KIND_ARRAY:
		return CT_NS_ARRAY;
	case CT_KIND_GRAPH:
		return CT_NS_UVA;
	case CT_KIND_IMPORTED: /* addresses; an imported handle lives in CT_NS_PHYSICAL */
		return CT_NS_UVA;
	case CT_KIND_MULTICAST:
		return CT_NS_PHYSICAL;
	default:
		return CT_NS_NONE;
	}
}

void ct_model_init(struct ct_model *m)
{
	memset(m, 0, sizeof *m);
	ct_tl_init(&m->tl);
	m->syms = ct_symtab_new();
	m->py = ct_pytab_new();
	m->marks_list = ct_marks_new();
	for (unsigned k = 0; k < CT_KIND_COUNT; k++) {
		m->kind_total[k].kind = (uint8_t)k;
		m->kind_total[k].device = -1;
	}
}

void ct_model_free(struct ct_model *m)
{
	if (m->labels_free)
		m->labels_free(m->labels);
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].destroy)
			m->obs[i].destroy(m->obs[i].ctx);
	ct_fw_free(m->fw);
	free(m->exit_kept);
	for (int k = 0; k < 3; k++)
		free(m->step_ts[k]);
	ct_markq_free(m->markq);
	ct_pytab_free(m->py);
	ct_marks_free(m->marks_list);
	free(m->version);
	free(m->host);
	free(m->exe);
	free(m->cwd);
	free(m->output);
	for (int i = 0; i < CT_LAUNCH_COUNT; i++)
		free(m->launch[i]);
	for (size_t i = 0; i < m->argc; i++)
		free(m->argv[i]);
	free(m->argv);
	free(m->path);
	free(m->kd);
	ct_imap_free(&m->kdmap);
	free(m->live);
	free(m->retired);
	free(m->sites);
	ct_imap_free(&m->sitemap);
	free(m->dpeaks);
	ct_imap_free(&m->dpmap);
	free(m->leaks);
	ct_imap_free(&m->leakmap);
	free(m->maph);
	free(m->gnodes);
	free(m->gexecs);
	free(m->gpools);
	free(m->samples);
	ct_imap_free(&m->maphmap);
	free(m->hrefs);
	ct_imap_free(&m->hrefmap);
	ct_nccl_free(m->nccl);
	ct_tl_free(&m->tl);
	ct_symtab_free(m->syms);
	memset(m, 0, sizeof *m);
}

/* ---- live set: linear probing, backward-shift deletion --------------------------- */

static size_t live_home(const struct ct_model *m, unsigned ns, uint64_t ptr)
{
	/* Fibonacci hashing: the product's top bits depend on every bit of the
	 * address (its low ones are zero: blocks are aligned) */
	return (size_t)(((ptr ^ (uint64_t)ns << 58) * 0x9e3779b97f4a7c15ull) >> m->live_shift);
}

static const struct ct_block *mapping_allocation(const struct ct_model *m, const struct ct_block *e);

static size_t live_find(const struct ct_model *m, unsigned ns, uint64_t ptr)
{
	if (!m->live_mask)
		return SIZE_MAX;
	for (size_t i = live_home(m, ns, ptr);; i = (i + 1) & m->live_mask) {
		const struct ct_block *e = &m->live[i];
		if (!e->ns)
			return SIZE_MAX;
		if (e->ns == ns && e->ptr == ptr)
			return i;
	}
}

static void live_place(struct ct_model *m, const struct ct_block *e)
{
	size_t i = live_home(m, e->ns, e->ptr);
	while (m->live[i].ns)
		i = (i + 1) & m->live_mask;
	m->live[i] = *e;
}

static void live_insert(struct ct_model *m, const struct ct_block *e)
{
	if (m->live_count >= UINT32_MAX) {
		fputs("cumtrace-report: more than 2^32 - 1 live blocks in one dump\n", stderr);
		exit(2);
	}
	if (!m->live_mask || (m->live_count + 1) * 3 > (m->live_mask + 1) * 2) {
		size_t ocap = m->live_mask ? m->live_mask + 1 : 0;
		size_t ncap = ocap ? ocap * 2 : 1024;
		struct ct_block *old = m->live;
		m->live = ct_xcalloc(ncap, sizeof *m->live);
		m->live_mask = ncap - 1;
		m->live_shift = 64u - (unsigned)__builtin_ctzll(ncap);
		for (size_t i = 0; i < ocap; i++)
			if (old[i].ns)
				live_place(m, &old[i]);
		free(old);
	}
	live_place(m, e);
	m->live_count++;
}

static void live_remove_at(struct ct_model *m, size_t i)
{
	size_t mask = m->live_mask;
	for (;;) {
		m->live[i].ns = 0;
		size_t j = i;
		for (;;) {
			j = (j + 1) & mask;
			if (!m->live[j].ns) {
				m->live_count--;
				return;
			}
			size_t k = live_home(m, m->live[j].ns, m->live[j].ptr);
			/* leave j alone when its home lies cyclically in (i, j] */
			int stay = i <= j ? (i < k && k <= j) : (i < k || k <= j);
			if (!stay)
				break;
		}
		m->live[i] = m->live[j];
		i = j;
	}
}

size_t ct_model_live_count(const struct ct_model *m)
{
	return m->live_count;
}

int ct_model_is_live(const struct ct_model *m, unsigned kind, uint64_t ptr, uint64_t *size)
{
	size_t i = live_find(m, ct_kind_ns(kind), ptr);
	if (i == SIZE_MAX)
		return 0;
	if (size)
		*size = m->live[i].size;
	return 1;
}

/* ---- (kind, device) stats, sites, leaks ---------------------------------------------- */

struct kdkey {
	uint8_t kind;
	int16_t device;
};

static int kd_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_model *m = ctx;
	const struct kdkey *k = key;
	return m->kd[idx].kind == k->kind && m->kd[idx].device == k->device;
}

static uint32_t get_kd(struct ct_model *m, uint8_t kind, int16_t device)
{
	struct kdkey k = {kind, device};
	uint64_t h = ct_hash2(kind, (uint16_t)device);
	uint32_t i = ct_imap_get(&m->kdmap, h, kd_eq, m, &k);
	if (i != CT_IMAP_NONE)
		return i;
	m->kd = ct_xgrow(m->kd, &m->capkd, m->nkd + 1, sizeof *m->kd);
	i = (uint32_t)m->nkd++;
	memset(&m->kd[i], 0, sizeof m->kd[i]);
	m->kd[i].kind = kind;
	m->kd[i].device = device;
	ct_imap_put(&m->kdmap, h, i);
	return i;
}

void ct_api_stats_add(struct ct_api_stats *dst, const struct ct_api_stats *src)
{
	dst->calls += src->calls;
	dst->failures += src->failures;
	dst->bytes = ct_sat_add(dst->bytes, src->bytes);
	dst->time_ns = ct_sat_add(dst->time_ns, src->time_ns);
}

void ct_kd_stats_add(struct ct_kd_stats *dst, const struct ct_kd_stats *src)
{
	dst->allocations += src->allocations;
	dst->frees += src->frees;
	dst->live_count += src->live_count;
	dst->bytes_allocated = ct_sat_add(dst->bytes_allocated, src->bytes_allocated);
	dst->peak_bytes = ct_sat_add(dst->peak_bytes, src->peak_bytes);
	dst->live_bytes = ct_sat_add(dst->live_bytes, src->live_bytes);
}

const struct ct_kd_stats *ct_model_kd(const struct ct_model *m, unsigned kind, int device)
{
	struct kdkey k = {(uint8_t)kind, (int16_t)device};
	uint32_t i = ct_imap_get(&m->kdmap, ct_hash2(k.kind, (uint16_t)k.device), kd_eq, m, &k);
	return i == CT_IMAP_NONE ? NULL : &m->kd[i];
}

static int dp_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_model *m = ctx;
	return m->dpeaks[idx].device == *(const int16_t *)key;
}

static uint32_t get_dp(struct ct_model *m, int16_t device)
{
	uint64_t h = ct_hash2((uint16_t)device, 0xd9);
	uint32_t i = ct_imap_get(&m->dpmap, h, dp_eq, m, &device);
	if (i != CT_IMAP_NONE)
		return i;
	m->dpeaks = ct_xgrow(m->dpeaks, &m->capdpeaks, m->ndpeaks + 1, sizeof *m->dpeaks);
	i = (uint32_t)m->ndpeaks++;
	memset(&m->dpeaks[i], 0, sizeof m->dpeaks[i]);
	m->dpeaks[i].device = device;
	ct_imap_put(&m->dpmap, h, i);
	return i;
}

const struct ct_dev_peak *ct_model_dev_peak(const struct ct_model *m, int device)
{
	int16_t d = (int16_t)device;
	if (d != device)
		return NULL;
	uint32_t i = ct_imap_get(&m->dpmap, ct_hash2((uint16_t)d, 0xd9), dp_eq, m, &d);
	return i == CT_IMAP_NONE ? NULL : &m->dpeaks[i];
}

static int site_is(const struct ct_site *s, uint32_t stack_id, uint16_t api, uint8_t kind,
		   int16_t device)
{
	return s->stack_id == stack_id && s->api == api && s->kind == kind && s->device == device;
}

static int site_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_model *m = ctx;
	const struct ct_site *b = key;
	return site_is(&m->sites[idx], b->stack_id, b->api, b->kind, b->device);
}

static uint64_t site_hash(uint32_t stack_id, uint16_t api, uint8_t kind, int16_t device)
{
	return ct_hash2(stack_id, ((uint64_t)api << 32) | ((uint64_t)kind << 16) | (uint16_t)device);
}

uint32_t ct_model_site(struct ct_model *m, uint32_t stack_id, uint16_t api, uint8_t kind,
		       int16_t device)
{
	/*
	 * The cache's slot by one multiplication (Fibonacci hashing of the key's
	 * 64 bits), the map's hash and a whole key (88 bytes, zeroed) on a miss
	 * only: the two mixing rounds of site_hash were most of a hit's time.
	 */
	uint64_t key = stack_id ^ (uint64_t)api << 32 ^ (uint64_t)kind << 48 ^
		       (uint64_t)(uint16_t)device << 56;
	uint32_t *cached = &m->site_cache[(key * 0x9e3779b97f4a7c15ull) >> (64 - CT_SITE_CACHE_BITS)];
	if (*cached && site_is(&m->sites[*cached - 1], stack_id, api, kind, device))
		return *cached - 1;
	uint64_t h = site_hash(stack_id, api, kind, device);
	struct ct_site k = {.stack_id = stack_id, .api = api, .kind = kind, .device = device};
	uint32_t i = ct_imap_get(&m->sitemap, h, site_eq, m, &k);
	if (i != CT_IMAP_NONE) {
		*cached = i + 1;
		return i;
	}
	/* framework blocks are never CUDA memory: no (kind, device) statistics */
	k.kd = ct_kind_is_framework(kind) ? CT_IMAP_NONE : get_kd(m, kind, device);
	k.saved_version = UINT64_MAX;
	k.dp = ct_kind_is_device_bytes(kind) ? get_dp(m, device) : CT_IMAP_NONE;
	k.dsaved_version = UINT64_MAX;
	if (m->nsites >= CT_MODEL_MAX_SITES) {
		fputs("cumtrace-report: more than 2^29 allocation sites in one dump\n", stderr);
		exit(2);
	}
	m->sites = ct_xgrow(m->sites, &m->capsites, m->nsites + 1, sizeof *m->sites);
	i = (uint32_t)m->nsites++;
	m->sites[i] = k;
	ct_imap_put(&m->sitemap, h, i);
	*cached = i + 1;
	if (m->infer.on && m->infer.site == UINT32_MAX && stack_id == m->infer.stack_id &&
	    api == m->infer.api && kind == m->infer.kind && device == m->infer.device)
		m->infer.site = i;
	return i;
}

/*
 * Before changing a site counted in the peak, keep its values at the last
 * peak, of all devices and of its own device.
 */
static void site_touch(struct ct_model *m, struct ct_site *s)
{
	if (s->dp == CT_IMAP_NONE)
		return;
	if (s->saved_version != m->peak_version) {
		s->saved_version = m->peak_version;
		s->saved_count = s->live_count;
		s->saved_bytes = s->live_bytes;
	}
	uint64_t dv = m->dpeaks[s->dp].version;
	if (s->dsaved_version != dv) {
		s->dsaved_version = dv;
		s->dsaved_count = s->live_count;
		s->dsaved_bytes = s->live_bytes;
	}
}

void ct_site_at_peak(const struct ct_model *m, const struct ct_site *s, uint64_t *count,
		     uint64_t *bytes)
{
	if (s->saved_version == m->peak_version) {
		*count = s->saved_count;
		*bytes = s->saved_bytes;
	} else {
		*count = s->live_count;
		*bytes = s->live_bytes;
	}
}

void ct_site_at_dev_peak(const struct ct_model *m, const struct ct_site *s, uint64_t *count,
			 uint64_t *bytes)
{
	if (s->dp != CT_IMAP_NONE && s->dsaved_version == m->dpeaks[s->dp].version) {
		*count = s->dsaved_count;
		*bytes = s->dsaved_bytes;
	} else {
		*count = s->live_count;
		*bytes = s->live_bytes;
	}
}

static int leak_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_model *m = ctx;
	const struct ct_leak *a = &m->leaks[idx], *b = key;
	return a->stack_id == b->stack_id && a->api == b->api && a->kind == b->kind &&
	       a->device == b->device && a->reason_api == b->reason_api &&
	       a->reason_op == b->reason_op;
}

/* A leak group's key in m->leakmap: site identity and reason. */
static uint64_t leak_hash(const struct ct_leak *k)
{
	return ct_hash2(ct_hash2(k->stack_id, ((uint64_t)k->api << 32) | ((uint64_t)k->kind << 16) | (uint16_t)k->device),
			((uint64_t)k->reason_op << 16) | k->reason_api);
}

/* The index of site s's leak group (reason: exit), CT_IMAP_NONE when it has none. */
static uint32_t find_leak(const struct ct_model *m, const struct ct_site *s)
{
	struct ct_leak k = {.stack_id = s->stack_id, .api = s->api, .kind = s->kind, .device = s->device};
	return ct_imap_get(&m->leakmap, leak_hash(&k), leak_eq, m, &k);
}

/* Count e in its leak group; returns the group's index. */
static uint32_t add_leak(struct ct_model *m, const struct ct_site *s, const struct ct_block *e,
			 uint8_t reason_op, uint16_t reason_api)
{
	struct ct_leak k = {.stack_id = s->stack_id,
			    .api = s->api,
			    .kind = s->kind,
			    .device = s->device,
			    .reason_api = reason_api,
			    .reason_op = reason_op};
	uint64_t h = leak_hash(&k);
	uint32_t i = ct_imap_get(&m->leakmap, h, leak_eq, m, &k);
	if (i == CT_IMAP_NONE) {
		m->leaks = ct_xgrow(m->leaks, &m->capleaks, m->nleaks + 1, sizeof *m->leaks);
		i = (uint32_t)m->nleaks++;
		k.first_ts = e->ts;
		m->leaks[i] = k;
		ct_imap_put(&m->leakmap, h, i);
	}
	struct ct_leak *l = &m->leaks[i];
	l->count++;
	l->bytes = ct_sat_add(l->bytes, e->size);
	if (e->ts < l->first_ts)
		l->first_ts = e->ts;
	m->leak_count++;
	m->leak_bytes = ct_sat_add(m->leak_bytes, e->size);
	if (reason_op) {
		m->reset_leak_count++;
		m->reset_leak_bytes = ct_sat_add(m->reset_leak_bytes, e->size);
	}
	return i;
}

void ct_model_fw_leak(struct ct_model *m, uint32_t site, uint64_t size, uint64_t ts)
{
	struct ct_block e = {.size = size, .ts = ts, .site = site};
	uint64_t count = m->leak_count, bytes = m->leak_bytes;
	uint32_t l = add_leak(m, &m->sites[site], &e, 0, 0); /* may move m->leaks */
	m->leaks[l].kept = 1;
	/* the CUDA layer's totals stay its own */
	m->leak_count = count;
	m->leak_bytes = bytes;
	m->fw_leak_count++;
	m->fw_leak_bytes = ct_sat_add(m->fw_leak_bytes, size);
}

void ct_model_notify_fw(struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b,
			int alloc)
{
	for (size_t i = 0; i < m->nobs; i++) {
		if (alloc && m->obs[i].fw_alloc)
			m->obs[i].fw_alloc(m->obs[i].ctx, m, ev, b);
		else if (!alloc && m->obs[i].fw_release)
			m->obs[i].fw_release(m->obs[i].ctx, m, ev, b, CT_END_FREE);
	}
}

const char *ct_leak_reason(const struct ct_leak *l, char *buf, size_t cap)
{
	if (!l->reason_op && l->kept) {
		snprintf(buf, cap, "kept from step to step, live at exit");
	} else if (!l->reason_op) {
		snprintf(buf, cap, "live at exit");
	} else if (l->reason_api && l->reason_api < CT_API_COUNT) {
		snprintf(buf, cap, "live at %s", ct_api_name(l->reason_api));
	} else {
		snprintf(buf, cap, "live at %s",
			 l->reason_op == CT_OP_CTX_DESTROY ? "context destroy" : "device reset");
	}
	return buf;
}

/* ---- events ------------------------------------------------------------------------ */

/* RM_LEAK_ADDRESS: a checkpoint's address space (a reservation, a mapping of an allocation live at
 * the checkpoint): never memory, counted apart (va_only_*) */
enum rm_how { RM_FREE, RM_UNSEEN, RM_LEAK, RM_LEAK_ADDRESS, RM_DROP };

static void kd_add(struct ct_kd_stats *k, uint64_t bytes, int add)
{
	if (add) {
		k->live_count++;
		k->live_bytes = ct_sat_add(k->live_bytes, bytes);
		if (k->live_bytes > k->peak_bytes)
			k->peak_bytes = k->live_bytes;
	} else {
		k->live_count--;
		k->live_bytes = ct_sat_sub(k->live_bytes, bytes);
	}
}

static void graph_released(struct ct_model *m, int16_t device, uint64_t size);

static void remove_live(struct ct_model *m, size_t slot, const struct ct_rec_event *ev,
			enum rm_how how)
{
	struct ct_block e = m->live[slot];
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].release)
			m->obs[i].release(m->obs[i].ctx, m, ev, &e,
					  how == RM_FREE     ? CT_END_FREE
					  : how == RM_UNSEEN ? CT_END_UNSEEN
							     : CT_END_CHECKPOINT);
	struct ct_site *s = &m->sites[e.site];
	site_touch(m, s);
	s->live_count--;
	s->live_bytes = ct_sat_sub(s->live_bytes, e.size);
	struct ct_kd_stats *k = &m->kd[s->kd];
	kd_add(k, e.size, 0);
	kd_add(&m->kind_total[s->kind], e.size, 0);
	if (s->kind == CT_KIND_GRAPH)
		graph_released(m, s->device, e.size);
	if (s->dp != CT_IMAP_NONE) {
		m->dev_live = ct_sat_sub(m->dev_live, e.size);
		m->dpeaks[s->dp].live = ct_sat_sub(m->dpeaks[s->dp].live, e.size);
	}
	if (how == RM_FREE && s->kind == CT_KIND_IMPORTED)
		m->imp.releases++;
	else if (how == RM_FREE && s->kind == CT_KIND_MULTICAST)
		m->imp.mc_released++;
	if (how == RM_FREE) {
		k->frees++;
		m->kind_total[s->kind].frees++;
		m->frees++;
		unsigned a = ev->api < CT_API_COUNT ? ev->api : CT_API_COUNT;
		m->api[a].bytes = ct_sat_add(m->api[a].bytes, e.size);
	} else if (how == RM_LEAK) {
		add_leak(m, s, &e, ev->op, ev->api);
	} else if (how == RM_LEAK_ADDRESS && s->kind == CT_KIND_VMM_RESERVED) {
		m->va_only_reserved++;
		m->va_only_reserved_bytes = ct_sat_add(m->va_only_reserved_bytes, e.size);
	} else if (how == RM_LEAK_ADDRESS) {
		m->va_only_mapped++;
		m->va_only_mapped_bytes = ct_sat_add(m->va_only_mapped_bytes, e.size);
	}
	ct_tl_update(&m->tl, s->kind, s->device, ev->ts_ns, k->live_bytes);
	live_remove_at(m, slot);
}

/*
 * Blocks retired by a reallocation of their address, remembered (a bounded,
 * overwriting table) so that their free, if its record arrives late, is
 * counted as a free and not as an unmatched one.
 */
#define CT_RETIRED_SLOTS 4096
struct ct_retired {
	uint64_t ptr, ts; /* ts: the latest retirement */
	uint32_t count;	  /* retirements whose free has not come yet */
	uint8_t ns;
};
static struct ct_retired *retired_slot(struct ct_model *m, unsigned ns, uint64_t ptr)
{
	if (!m->retired)
		m->retired = ct_xcalloc(CT_RETIRED_SLOTS, sizeof(struct ct_retired));
	uint64_t h = (ptr >> 8) * 0x9e3779b97f4a7c15ull + ns;
	return &((struct ct_retired *)m->retired)[h >> 52 & (CT_RETIRED_SLOTS - 1)];
}

static void retired_put(struct ct_model *m, unsigned ns, uint64_t ptr, uint64_t ts)
{
	struct ct_retired *r = retired_slot(m, ns, ptr);
	if (r->ns != ns || r->ptr != ptr) {
		r->ptr = ptr;
		r->ns = (uint8_t)ns;
		r->count = 0;
	}
	r->ts = ts;
	r->count++;
}

/* A free at ts of (ns, ptr) that predates a retirement there: take one. */
static int retired_take(struct ct_model *m, unsigned ns, uint64_t ptr, uint64_t ts)
{
	struct ct_retired *r = retired_slot(m, ns, ptr);
	if (r->ns != ns || r->ptr != ptr || !r->count || ts >= r->ts)
		return 0;
	if (--r->count == 0)
		r->ns = 0;
	return 1;
}

static unsigned ct_ns_kind_guess(const struct ct_rec_event *ev)
{
	return ev->kind < CT_KIND_COUNT ? ev->kind : CT_KIND_NONE;
}

static void do_alloc_ns(struct ct_model *m, const struct ct_rec_event *ev, uint8_t kind, unsigned ns)
{
	if (!ev->ptr) {
		m->null_allocs++;
		return;
	}
	size_t old = live_find(m, ns, ev->ptr);
	if (old != SIZE_MAX) {
		/* the previous block's free was not seen (yet: it may come late) */
		m->double_allocs++;
		retired_put(m, ns, ev->ptr, ev->ts_ns);
		remove_live(m, old, ev, RM_UNSEEN);
	}
	uint16_t api = ev->api < CT_API_COUNT ? ev->api : CT_API_COUNT;
	uint32_t si = ct_model_site(m, ev->stack_id, api, kind, ev->device);
	ct_model_clock(m, si, ev->ts_ns);
	struct ct_site *s = &m->sites[si];
	site_touch(m, s);
	s->live_count++;
	s->live_bytes = ct_sat_add(s->live_bytes, ev->size);
	s->allocs++;
	s->bytes_allocated = ct_sat_add(s->bytes_allocated, ev->size);
	struct ct_kd_stats *k = &m->kd[s->kd];
	k->allocations++;
	k->bytes_allocated = ct_sat_add(k->bytes_allocated, ev->size);
	kd_add(k, ev->size, 1);
	struct ct_kd_stats *kt = &m->kind_total[kind];
	kt->allocations++;
	kt->bytes_allocated = ct_sat_add(kt->bytes_allocated, ev->size);
	kd_add(kt, ev->size, 1);
	m->allocations++;
	m->api[api].bytes = ct_sat_add(m->api[api].bytes, ev->size);
	struct ct_block e = {.ptr = ev->ptr,
			    .size = ev->size,
			    .ts = ev->ts_ns,
			    .stream = kind == CT_KIND_ARRAY ? 0 : ev->stream, /* arrays: their extent */
			    .tid = ev->tid,
			    .site = si,
			    .ns = (uint8_t)ns};
	live_insert(m, &e);
	if (s->dp != CT_IMAP_NONE) {
		m->dev_live = ct_sat_add(m->dev_live, ev->size);
		if (m->dev_live > m->peak_bytes) {
			m->peak_bytes = m->dev_live;
			m->peak_ts = ev->ts_ns;
			m->peak_version++;
			m->peak_seen = 1;
			ct_fw_at_device_peak(m);
		}
		struct ct_dev_peak *d = &m->dpeaks[s->dp];
		d->live = ct_sat_add(d->live, ev->size);
		if (d->live > d->peak_bytes) {
			d->peak_bytes = d->live;
			d->peak_ts = ev->ts_ns;
			d->version++;
			d->seen = 1;
		}
	}
	ct_tl_update(&m->tl, kind, ev->device, ev->ts_ns, k->live_bytes);
	if (m->nccl)
		ct_nccl_alloc(m, ev, si, kind);
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].alloc)
			m->obs[i].alloc(m->obs[i].ctx, m, ev, &e);
}

static void do_alloc(struct ct_model *m, const struct ct_rec_event *ev, uint8_t kind)
{
	do_alloc_ns(m, ev, kind, ct_kind_ns(kind));
}

static void do_free(struct ct_model *m, const struct ct_rec_event *ev, unsigned ns)
{
	if (!ev->ptr)
		return; /* free(NULL) does nothing */
	size_t slot = live_find(m, ns, ev->ptr);
	if (slot == SIZE_MAX) {
		if (retired_take(m, ns, ev->ptr, ev->ts_ns)) {
			/* late free of a block a reallocation already retired */
			m->kind_total[ct_ns_kind_guess(ev)].frees++;
			m->frees++;
			if (m->double_allocs > 0)
				m->double_allocs--;
			return;
		}
		m->unmatched_frees++;
		return;
	}
	if (ev->ts_ns < m->live[slot].ts) {
		/*
		 * A free older than the live block: it freed the previous block at
		 * this address, whose event arrived after the reallocation (the
		 * freeing thread's record reached the file one batch late). The
		 * reallocation already retired that block; count the free.
		 */
		struct ct_site *s = &m->sites[m->live[slot].site];
		m->kd[s->kd].frees++;
		m->kind_total[s->kind].frees++;
		m->frees++;
		if (m->double_allocs > 0)
			m->double_allocs--;
		return;
	}
	remove_live(m, slot, ev, RM_FREE);
}

/* cuMemUnmap may cover several adjacent mappings: free them all. */
static void do_unmap(struct ct_model *m, const struct ct_rec_event *ev)
{
	if (!ev->ptr)
		return;
	uint64_t p = ev->ptr;
	uint64_t end = ev->size && ev->ptr + ev->size > ev->ptr ? ev->ptr + ev->size : ev->ptr + 1;
	int first = 1;
	while (p < end) {
		size_t slot = live_find(m, CT_NS_UVA, p);
		if (slot == SIZE_MAX) {
			if (first)
				m->unmatched_frees++;
			return;
		}
		uint64_t sz = m->live[slot].size;
		remove_live(m, slot, ev, RM_FREE);
		first = 0;
		if (!sz || p + sz <= p)
			return;
		p += sz;
	}
}

/* ---- CUDA graphs (issue 19 §2): memory from launch, not from the node ------------------ */

static struct ct_gpool *gpool_get(struct ct_model *m, int16_t device)
{
	for (size_t i = 0; i < m->ngpools; i++)
		if (m->gpools[i].device == device)
			return &m->gpools[i];
	m->gpools = ct_xgrow(m->gpools, &m->capgpools, m->ngpools + 1, sizeof *m->gpools);
	struct ct_gpool *g = &m->gpools[m->ngpools++];
	memset(g, 0, sizeof *g);
	g->device = device;
	return g;
}

const struct ct_gpool *ct_model_gpool(const struct ct_model *m, int device)
{
	for (size_t i = 0; i < m->ngpools; i++)
		if (m->gpools[i].device == device)
			return &m->gpools[i];
	return NULL;
}

const struct ct_rec_memsample *ct_model_graph_sample(const struct ct_model *m, int device)
{
	const struct ct_rec_memsample *last = NULL;
	for (size_t i = 0; i < m->nsamples; i++) {
		const struct ct_sample *x = &m->samples[i];
		if (x->done && x->s.device == device && (x->s.flags & CT_MEMSAMPLE_F_GRAPH))
			last = &x->s;
	}
	return last;
}

/* A graph allocation of device stopped being live: its memory stays in the pool's reserve. */
static void graph_released(struct ct_model *m, int16_t device, uint64_t size)
{
	struct ct_gpool *g = gpool_get(m, device);
	g->live = ct_sat_sub(g->live, size);
}

static void gnode_add(struct ct_model *m, const struct ct_gnode *n)
{
	m->gnodes = ct_xgrow(m->gnodes, &m->capgnodes, m->ngnodes + 1, sizeof *m->gnodes);
	m->gnodes[m->ngnodes++] = *n;
}

/* Forget the nodes of a graph (in_exec 0) or an exec (1) whose handle was destroyed (or reused). */
static void gnodes_drop(struct ct_model *m, uint64_t owner, uint8_t in_exec)
{
	size_t keep = 0;
	for (size_t i = 0; i < m->ngnodes; i++)
		if (m->gnodes[i].owner != owner || m->gnodes[i].in_exec != in_exec)
			m->gnodes[keep++] = m->gnodes[i];
	m->ngnodes = keep;
}

static struct ct_gexec *gexec_find(struct ct_model *m, uint64_t exec)
{
	for (size_t i = 0; i < m->ngexecs; i++)
		if (m->gexecs[i].exec == exec)
			return &m->gexecs[i];
	return NULL;
}

static void graph_instantiate(struct ct_model *m, const struct ct_rec_event *ev)
{
	if (!ev->ptr)
		return;
	gnodes_drop(m, ev->ptr, 1);
	struct ct_gexec *x = gexec_find(m, ev->ptr);
	if (!x) {
		m->gexecs = ct_xgrow(m->gexecs, &m->capgexecs, m->ngexecs + 1, sizeof *m->gexecs);
		x = &m->gexecs[m->ngexecs++];
		x->exec = ev->ptr;
	}
	x->flags = ev->flags;
	size_t n = m->ngnodes; /* the copies go after the graph's own nodes */
	for (size_t i = 0; i < n; i++) {
		if (m->gnodes[i].in_exec || m->gnodes[i].owner != ev->aux)
			continue;
		struct ct_gnode c = m->gnodes[i];
		c.owner = ev->ptr;
		c.in_exec = 1;
		gnode_add(m, &c);
	}
}

static void graph_destroy(struct ct_model *m, const struct ct_rec_event *ev)
{
	if (ev->kind != CT_KIND_GRAPH) {
		gnodes_drop(m, ev->ptr, 0);
		return;
	}
	gnodes_drop(m, ev->ptr, 1);
	struct ct_gexec *x = gexec_find(m, ev->ptr);
	if (x)
		*x = m->gexecs[--m->ngexecs];
}

/* The event of node n at the launch ev: an allocation or a free of kind graph, with the node's stack. */
static struct ct_rec_event graph_node_event(const struct ct_rec_event *ev, const struct ct_gnode *n, uint8_t op)
{
	struct ct_rec_event e = *ev;
	e.op = op;
	e.kind = CT_KIND_GRAPH;
	e.ptr = n->ptr;
	e.size = op == CT_OP_ALLOC ? n->size : 0;
	e.aux = ev->ptr;
	e.flags = 0;
	if (op == CT_OP_ALLOC) {
		e.api = n->api;
		e.stack_id = n->stack_id;
		e.tid = n->tid;
		e.device = n->device;
	}
	return e;
}

static int graph_live(const struct ct_model *m, uint64_t ptr)
{
	size_t slot = live_find(m, CT_NS_UVA, ptr);
	return slot != SIZE_MAX && m->sites[m->live[slot].site].kind == CT_KIND_GRAPH;
}

/*
 * A launch of an exec: with auto-free-on-launch, what its last launch left
 * live is freed first; then its nodes run in order, each alloc node committing
 * its allocation (the pool's reserve grows to hold what is live), each free
 * node freeing one.
 */
static void graph_launch(struct ct_model *m, const struct ct_rec_event *ev)
{
	m->graph_launches++;
	struct ct_gexec *x = gexec_find(m, ev->ptr);
	if (x && (x->flags & 1u)) { /* cudaGraphInstantiateFlagAutoFreeOnLaunch */
		for (size_t i = 0; i < m->ngnodes; i++) {
			const struct ct_gnode *n = &m->gnodes[i];
			if (n->in_exec && n->owner == ev->ptr && !n->is_free && graph_live(m, n->ptr)) {
				struct ct_rec_event e = graph_node_event(ev, n, CT_OP_FREE);
				do_free(m, &e, CT_NS_UVA);
			}
		}
	}
	for (size_t i = 0; i < m->ngnodes; i++) {
		const struct ct_gnode n = m->gnodes[i]; /* do_alloc may not move gnodes, but be plain */
		if (!n.in_exec || n.owner != ev->ptr)
			continue;
		struct ct_rec_event e = graph_node_event(ev, &n, n.is_free ? CT_OP_FREE : CT_OP_ALLOC);
		if (n.is_free) {
			if (graph_live(m, n.ptr))
				do_free(m, &e, CT_NS_UVA);
			continue;
		}
		do_alloc(m, &e, CT_KIND_GRAPH);
		m->graph_commits++;
		struct ct_gpool *g = gpool_get(m, n.device);
		g->live = ct_sat_add(g->live, n.size);
		if (g->live > g->reserved)
			g->reserved = g->live;
		if (g->reserved > g->reserved_high)
			g->reserved_high = g->reserved;
	}
}

static void graph_event(struct ct_model *m, const struct ct_rec_event *ev)
{
	switch (ev->op) {
	case CT_OP_GRAPH_ALLOC:
	case CT_OP_GRAPH_FREE: {
		struct ct_gnode n = {.owner = ev->aux, .ptr = ev->ptr, .size = ev->size, .stack_id = ev->stack_id,
				     .tid = ev->tid, .api = ev->api, .device = ev->device,
				     .is_free = ev->op == CT_OP_GRAPH_FREE};
		if (ev->aux && ev->ptr)
			gnode_add(m, &n);
		break;
	}
	case CT_OP_GRAPH_INSTANTIATE:
		graph_instantiate(m, ev);
		break;
	case CT_OP_GRAPH_LAUNCH:
		graph_launch(m, ev);
		break;
	case CT_OP_GRAPH_DESTROY:
		graph_destroy(m, ev);
		break;
	case CT_OP_GRAPH_TRIM: {
		struct ct_gpool *g = gpool_get(m, ev->device);
		g->reserved = g->live;
		break;
	}
	default:
		break;
	}
}

struct ckey {
	uint64_t ts, ptr;
	uint8_t ns;
	uint8_t address; /* a reservation, or a mapping of an allocation live at the checkpoint */
};

static int ckey_cmp(const void *a, const void *b)
{
	const struct ckey *x = a, *y = b;
	int c = (x->ts > y->ts) - (x->ts < y->ts);
	if (!c)
		c = (x->ns > y->ns) - (x->ns < y->ns);
	return c ? c : (x->ptr > y->ptr) - (x->ptr < y->ptr);
}

static void checkpoint(struct ct_model *m, const struct ct_rec_event *ev)
{
	/* nothing live on that device: no need to scan the live set */
	int any = 0;
	for (size_t i = 0; i < m->nkd && !any; i++)
		any = m->kd[i].device == ev->device && m->kd[i].live_count;
	if (!any)
		return;
	size_t n = 0, cap = 0;
	struct ckey *keys = NULL;
	for (size_t i = 0; m->live_mask && i <= m->live_mask; i++) {
		const struct ct_block *e = &m->live[i];
		if (!e->ns || m->sites[e->site].device != ev->device)
			continue;
		keys = ct_xgrow(keys, &cap, n + 1, sizeof *keys);
		keys[n].ns = e->ns;
		keys[n].ptr = e->ptr;
		keys[n].ts = e->ts;
		uint8_t kind = m->sites[e->site].kind;
		keys[n].address = kind == CT_KIND_VMM_RESERVED || (kind == CT_KIND_VMM_MAPPED && mapping_allocation(m, e));
		if (kind == CT_KIND_IMPORTED || kind == CT_KIND_MULTICAST)
			keys[n].address = 2; /* not this process's memory: gone, never a leak */
		n++;
	}
	/* in allocation order, not the hash table's: observers see the same sequence of
	 * releases whatever the table's layout */
	qsort(keys, n, sizeof *keys, ckey_cmp);
	for (size_t i = 0; i < n; i++) {
		size_t slot = live_find(m, keys[i].ns, keys[i].ptr);
		if (slot != SIZE_MAX)
			remove_live(m, slot, ev,
				    keys[i].address == 2 ? RM_DROP
				    : keys[i].address ? RM_LEAK_ADDRESS
						      : RM_LEAK);
	}
	free(keys);
}

static uint8_t alloc_kind(const struct ct_rec_event *ev)
{
	if (ev->kind > CT_KIND_NONE && ev->kind < CT_KIND_COUNT)
		return ev->kind;
	switch (ev->api) {
	case CT_API_cudaMallocHost:
	case CT_API_cudaHostAlloc:
	case CT_API_cuMemAllocHost_v2:
	case CT_API_cuMemHostAlloc:
		return CT_KIND_HOST_PINNED;
	case CT_API_cudaHostRegister:
	case CT_API_cuMemHostRegister_v2:
		return CT_KIND_HOST_REGISTERED;
	case CT_API_cudaMallocManaged:
	case CT_API_cuMemAllocManaged:
		return CT_KIND_MANAGED;
	default:
		return CT_KIND_DEVICE;
	}
}

static unsigned free_ns(const struct ct_rec_event *ev)
{
	if (ev->kind > CT_KIND_NONE && ev->kind < CT_KIND_COUNT)
		return ct_kind_ns(ev->kind);
	if (ev->api == CT_API_cudaHostUnregister || ev->api == CT_API_cuMemHostUnregister)
		return CT_NS_REGISTERED;
	return CT_NS_UVA;
}

static void see_ts(struct ct_model *m, uint64_t ts)
{
	if (!m->have_ts) {
		m->have_ts = 1;
		m->first_ts = m->last_ts = ts;
		return;
	}
	if (ts < m->first_ts)
		m->first_ts = ts;
	if (ts > m->last_ts)
		m->last_ts = ts;
}

uint64_t ct_model_start_ns(const struct ct_model *m)
{
	if (m->have_process && m->start_monotonic_ns &&
	    (!m->have_ts || m->start_monotonic_ns <= m->first_ts))
		return m->start_monotonic_ns;
	return m->have_ts ? m->first_ts : 0;
}

uint64_t ct_model_since_start(const struct ct_model *m, uint64_t ts)
{
	uint64_t s = ct_model_start_ns(m);
	return ts >= s ? ts - s : 0;
}

int ct_model_header_only(const struct ct_model *m)
{
	return m->read.status == CT_READ_OK && !m->end_seen && m->read.records <= (m->have_process ? 1u : 0u);
}

uint64_t ct_model_duration_ns(const struct ct_model *m)
{
	if (!m->have_ts)
		return 0;
	return m->last_ts - ct_model_start_ns(m);
}

/* A step boundary (CT_MARK_STEP) at ts, by its source. */
/* Was the live block e counted as leaked at the exit point? */
static int exit_kept(const struct ct_model *m, const struct ct_block *e)
{
	return m->exit_seen && e->ts <= m->exit_ts && e->site < m->exit_nsites &&
	       (m->exit_kept[e->site / 8] >> (e->site % 8) & 1);
}

static void add_step(struct ct_model *m, uint64_t source, uint64_t ts)
{
	int k = source == CT_STEP_EXPLICIT ? 0 : source == CT_STEP_OPTIMIZER ? 1 : source == CT_STEP_INFERRED ? 2 : -1;
	if (k < 0)
		return;
	m->step_ts[k] = ct_xgrow(m->step_ts[k], &m->capstep[k], m->nstep[k] + 1, sizeof *m->step_ts[k]);
	m->step_ts[k][m->nstep[k]++] = ts;
}

const uint64_t *ct_model_step_series(const struct ct_model *m, size_t *n, int *source)
{
	/* explicit steps win, as in the growth report; inferred ones only stand in for none */
	int k = m->nstep[0] >= CT_EXIT_STEPS_MIN ? 0 : m->nstep[1] >= CT_EXIT_STEPS_MIN ? 1 : 2;
	*n = m->nstep[k] >= CT_EXIT_STEPS_MIN ? m->nstep[k] : 0;
	if (source)
		*source = k;
	return *n ? m->step_ts[k] : NULL;
}

int ct_model_spans_steps(const struct ct_model *m, uint64_t first_ts, uint64_t last_ts)
{
	size_t n, lo = 0, hi;
	const uint64_t *v = ct_model_step_series(m, &n, NULL);
	if (!n)
		return 0;
	hi = n;
	while (lo < hi) { /* the first boundary after first_ts (boundaries come in time order) */
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] <= first_ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo + 1 < n && v[lo + 1] <= last_ts;
}

/* ---- address space: VMM reservations and mappings are never memory ----------------- */

static int maph_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct ct_model *)ctx)->maph[idx].ptr == *(const uint64_t *)key;
}

/* A mapping of ptr was made of the allocation handle: remember it (the latest per address). */
static void maph_put(struct ct_model *m, uint64_t ptr, uint64_t handle)
{
	uint64_t h = ct_mix64(ptr);
	uint32_t i = ct_imap_get(&m->maphmap, h, maph_eq, m, &ptr);
	if (i == CT_IMAP_NONE) {
		if (m->nmaph >= UINT32_MAX - 1)
			return;
		m->maph = ct_xgrow(m->maph, &m->capmaph, m->nmaph + 1, sizeof *m->maph);
		i = (uint32_t)m->nmaph++;
		m->maph[i].ptr = ptr;
		ct_imap_put(&m->maphmap, h, i);
	}
	m->maph[i].handle = handle;
}

/* The live allocation (cuMemCreate) a live mapping e was made of, NULL when it is gone or unknown. */
static const struct ct_block *mapping_allocation(const struct ct_model *m, const struct ct_block *e)
{
	uint64_t ptr = e->ptr;
	uint32_t i = ct_imap_get(&m->maphmap, ct_mix64(ptr), maph_eq, m, &ptr);
	if (i == CT_IMAP_NONE)
		return NULL;
	size_t at = live_find(m, CT_NS_PHYSICAL, m->maph[i].handle);
	return at == SIZE_MAX ? NULL : &m->live[at];
}

static int cmp_block_ptr(const void *a, const void *b)
{
	const struct ct_block *x = *(const struct ct_block *const *)a, *y = *(const struct ct_block *const *)b;
	return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* The reservation of v (sorted by address) holding ptr, SIZE_MAX when none. */
static size_t reservation_of(const struct ct_block *const *v, size_t n, uint64_t ptr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first reservation starting after ptr */
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid]->ptr <= ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && ptr - v[lo - 1]->ptr < v[lo - 1]->size ? lo - 1 : SIZE_MAX;
}

/*
 * Count the live blocks still held (kept: those the exit point judged kept from
 * step to step, else the others) in their leak groups, memory once:
 *   - every allocation (device, host, managed, VMM physical) is a leak;
 *   - a mapping of a live VMM allocation is that allocation's attribute
 *     (va_mapped); a mapping whose allocation handle was released (the
 *     mapping alone keeps the memory) or is unknown is memory, a leak itself;
 *   - a reservation is an attribute of the group of the first mapping inside
 *     it; one holding nothing mapped is address space only (va_only_*).
 */
static void leak_live(struct ct_model *m, int kept)
{
	const struct ct_block **resv = NULL;
	size_t nresv = 0, capresv = 0;
	for (size_t i = 0; m->live_mask && i <= m->live_mask; i++) {
		const struct ct_block *e = &m->live[i];
		if (!e->ns || exit_kept(m, e) != kept)
			continue;
		uint8_t kind = m->sites[e->site].kind;
		if (kind == CT_KIND_IMPORTED) {
			m->imp.live_at_exit++;
			m->imp.live_bytes_at_exit = ct_sat_add(m->imp.live_bytes_at_exit, e->size);
		} else if (kind == CT_KIND_MULTICAST) {
			m->imp.mc_live_at_exit++;
		} else if (kind == CT_KIND_VMM_RESERVED) {
			resv = ct_xgrow(resv, &capresv, nresv + 1, sizeof *resv);
			resv[nresv++] = e;
		} else if (kind != CT_KIND_VMM_MAPPED) {
			uint32_t l = add_leak(m, &m->sites[e->site], e, 0, 0); /* may move m->leaks */
			m->leaks[l].kept |= (uint8_t)kept;
		}
	}
	if (nresv > 1)
		qsort(resv, nresv, sizeof *resv, cmp_block_ptr);
	uint8_t *held = nresv ? ct_xcalloc(nresv, 1) : NULL;
	for (size_t i = 0; m->live_mask && i <= m->live_mask; i++) {
		const struct ct_block *e = &m->live[i];
		if (!e->ns || m->sites[e->site].kind != CT_KIND_VMM_MAPPED || exit_kept(m, e) != kept)
			continue;
		const struct ct_block *a = mapping_allocation(m, e);
		uint32_t l;
		if (a) {
			l = find_leak(m, &m->sites[a->site]);
			if (l != CT_IMAP_NONE) {
				m->leaks[l].va_mapped++;
				m->leaks[l].va_mapped_bytes = ct_sat_add(m->leaks[l].va_mapped_bytes, e->size);
			}
		} else {
			l = add_leak(m, &m->sites[e->site], e, 0, 0);
			m->leaks[l].kept |= (uint8_t)kept;
		}
		size_t r = reservation_of(resv, nresv, e->ptr);
		if (r == SIZE_MAX) {
			if (l == CT_IMAP_NONE) {
				m->va_only_mapped++;
				m->va_only_mapped_bytes = ct_sat_add(m->va_only_mapped_bytes, e->size);
			}
		} else if (!held[r] && l != CT_IMAP_NONE) {
			held[r] = 1;
			m->leaks[l].va_reserved++;
			m->leaks[l].va_reserved_bytes = ct_sat_add(m->leaks[l].va_reserved_bytes, resv[r]->size);
		}
	}
	for (size_t r = 0; r < nresv; r++)
		if (!held[r]) {
			m->va_only_reserved++;
			m->va_only_reserved_bytes = ct_sat_add(m->va_only_reserved_bytes, resv[r]->size);
		}
	free(held);
	free(resv);
}

/*
 * The program's own code ended (CT_MARK_EXIT). A site whose blocks live now
 * were made across steps (ct_model_spans_steps: kept from step to step) is
 * leaked now, whatever the interpreter's teardown frees later; the others
 * are judged at the end of the dump, as without an exit point.
 */
static void exit_point(struct ct_model *m, uint64_t ts)
{
	m->exit_seen = 1;
	m->exit_ts = ts;
	struct ct_spans *sp = ct_spans_new(m->nsites);
	for (size_t i = 0; m->live_mask && i <= m->live_mask; i++)
		if (m->live[i].ns)
			ct_spans_add(sp, m->live[i].site, m->live[i].ts);
	m->exit_nsites = m->nsites;
	m->exit_kept = ct_spans_kept(m, sp);
	leak_live(m, 1);
}

struct ct_spans {
	size_t n;
	uint64_t *first, *last;
};

struct ct_spans *ct_spans_new(size_t nsites)
{
	struct ct_spans *sp = ct_xcalloc(1, sizeof *sp);
	sp->n = nsites;
	sp->first = ct_xcalloc(nsites + 1, sizeof *sp->first);
	sp->last = ct_xcalloc(nsites + 1, sizeof *sp->last);
	for (size_t i = 0; i < nsites; i++)
		sp->first[i] = UINT64_MAX;
	return sp;
}

void ct_spans_add(struct ct_spans *sp, uint32_t site, uint64_t ts)
{
	if (site >= sp->n)
		return;
	if (ts < sp->first[site])
		sp->first[site] = ts;
	if (ts > sp->last[site])
		sp->last[site] = ts;
}

uint8_t *ct_spans_kept(const struct ct_model *m, struct ct_spans *sp)
{
	uint8_t *kept = ct_xcalloc(sp->n / 8 + 1, 1);
	for (size_t i = 0; i < sp->n; i++)
		if (sp->first[i] != UINT64_MAX && ct_model_spans_steps(m, sp->first[i], sp->last[i]))
			kept[i / 8] |= (uint8_t)(1u << (i % 8));
	free(sp->first);
	free(sp->last);
	free(sp);
	return kept;
}

static void release_marks(struct ct_model *m, uint64_t ts);

void ct_model_clock(struct ct_model *m, uint32_t si, uint64_t ts)
{
	if (!m->infer.on || si != m->infer.site)
		return;
	release_marks(m, ts);
	static char name[] = "inferred";
	struct ct_mark mk = {.ts_ns = ts, .aux = CT_STEP_INFERRED, .kind = CT_MARK_STEP, .seq = UINT64_MAX,
			     .name = name};
	m->infer.boundaries++;
	add_step(m, CT_STEP_INFERRED, ts);
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].mark)
			m->obs[i].mark(m->obs[i].ctx, m, &mk);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

int ct_model_infer_clock(const struct ct_model *m, struct ct_infer *out)
{
	const struct ct_marklist *l = m->marks_list;
	memset(out, 0, sizeof *out);
	if (!m->exit_seen && !m->fw_events)
		return 0; /* not a Python program under the bootstrap */
	if (l && (l->instants || l->ranges || l->steps[0] || l->steps[CT_STEP_EXPLICIT] || l->steps[CT_STEP_OPTIMIZER]))
		return 0; /* the program has boundaries of its own */
	uint64_t *v = ct_xcalloc(m->nsites + 1, sizeof *v);
	size_t n = 0;
	for (size_t i = 0; i < m->nsites; i++)
		if (m->sites[i].allocs >= CT_INFER_MIN)
			v[n++] = m->sites[i].allocs;
	qsort(v, n, sizeof *v, cmp_u64);
	uint64_t best = 0;
	size_t best_n = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && v[j] == v[i])
			j++;
		if (j - i > best_n) { /* ties: the smaller count (the outer loop) */
			best_n = j - i;
			best = v[i];
		}
		i = j;
	}
	free(v);
	if (best_n < 2)
		return 0;
	for (size_t i = 0; i < m->nsites; i++) {
		const struct ct_site *s = &m->sites[i];
		if (s->allocs != best)
			continue;
		*out = (struct ct_infer){.on = 1, .stack_id = s->stack_id, .api = s->api, .kind = s->kind,
					 .device = s->device, .period = best, .site = UINT32_MAX};
		return 1;
	}
	return 0;
}

void ct_model_infer(struct ct_model *m, const struct ct_infer *clock)
{
	m->infer = *clock;
	m->infer.site = UINT32_MAX;
	m->infer.boundaries = 0;
}

/* Hand the marks up to ts to the observers. */
static void release_marks(struct ct_model *m, uint64_t ts)
{
	struct ct_mark mk;
	while (m->markq && ct_markq_pop(m->markq, ts, &mk)) {
		if (mk.kind == CT_MARK_STEP)
			add_step(m, mk.aux, mk.ts_ns);
		if (mk.kind == CT_MARK_EXIT && !m->exit_seen)
			exit_point(m, mk.ts_ns);
		ct_fw_mark(m, &mk);
		for (size_t i = 0; i < m->nobs; i++)
			if (m->obs[i].mark)
				m->obs[i].mark(m->obs[i].ctx, m, &mk);
	}
}

static void apply_event(struct ct_model *m, const struct ct_rec_event *ev);

static void release_samples(struct ct_model *m, uint64_t ts);

void ct_model_event(struct ct_model *m, const struct ct_rec_event *ev)
{
	if (m->nsamples_done < m->nsamples)
		release_samples(m, ev->ts_ns);
	if (ct_fw_is_event(ev)) {
		release_marks(m, ev->ts_ns);
		ct_fw_event(m, ev);
		return;
	}
	release_marks(m, ev->ts_ns);
	apply_event(m, ev);
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].event)
			m->obs[i].event(m->obs[i].ctx, m, ev);
}

/* ---- imported and shared memory, multicast (issue 19 §4) --------------------------- */

static int href_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct ct_model *)ctx)->hrefs[idx].handle == *(const uint64_t *)key;
}

/* One more reference on allocation handle h (a retain, or an import of a handle of our own). */
static void href_add(struct ct_model *m, uint64_t h)
{
	uint64_t hh = ct_mix64(h ^ 0x5bd1e995u);
	uint32_t i = ct_imap_get(&m->hrefmap, hh, href_eq, m, &h);
	if (i == CT_IMAP_NONE) {
		if (m->nhrefs >= UINT32_MAX - 1)
			return;
		m->hrefs = ct_xgrow(m->hrefs, &m->caphrefs, m->nhrefs + 1, sizeof *m->hrefs);
		i = (uint32_t)m->nhrefs++;
		m->hrefs[i].handle = h;
		m->hrefs[i].count = 0;
		ct_imap_put(&m->hrefmap, hh, i);
	}
	m->hrefs[i].count++;
}

/* A cuMemRelease of h: 1 when it dropped a reference taken by a retain (or a self-import). */
static int href_drop(struct ct_model *m, uint64_t h)
{
	if (!m->nhrefs)
		return 0;
	uint32_t i = ct_imap_get(&m->hrefmap, ct_mix64(h ^ 0x5bd1e995u), href_eq, m, &h);
	if (i == CT_IMAP_NONE || !m->hrefs[i].count)
		return 0;
	m->hrefs[i].count--;
	m->imp.retain_releases++;
	return 1;
}

/* Is allocation handle h a live import (cuMemImportFromShareableHandle)? */
static int handle_is_imported(const struct ct_model *m, uint64_t h)
{
	if (!m->imp.imports)
		return 0;
	size_t at = live_find(m, CT_NS_PHYSICAL, h);
	return at != SIZE_MAX && m->sites[m->live[at].site].kind == CT_KIND_IMPORTED;
}

/* A cuMemMap of an imported handle maps imported memory: count it, and its kind. */
static uint8_t import_map(struct ct_model *m, const struct ct_rec_event *ev)
{
	m->imp.maps++;
	m->imp.bytes = ct_sat_add(m->imp.bytes, ev->size);
	return CT_KIND_IMPORTED;
}

/* The imports' own ops: imports, exports, retains, multicast binds. */
static void apply_import(struct ct_model *m, const struct ct_rec_event *ev)
{
	struct ct_imports *im = &m->imp;
	switch (ev->op) {
	case CT_OP_IMPORT:
		im->imports++;
		if (ev->api != CT_API_cuMemImportFromShareableHandle) { /* an address */
			im->bytes = ct_sat_add(im->bytes, ev->size);
			do_alloc(m, ev, CT_KIND_IMPORTED);
		} else if (ev->ptr && live_find(m, CT_NS_PHYSICAL, ev->ptr) != SIZE_MAX) {
			im->self_imports++; /* our own handle again: one more reference to it */
			href_add(m, ev->ptr);
		} else {
			do_alloc_ns(m, ev, CT_KIND_IMPORTED, CT_NS_PHYSICAL);
		}
		break;
	case CT_OP_EXPORT: {
		im->exports++;
		size_t at = live_find(m, CT_NS_UVA, ev->ptr);
		if (at == SIZE_MAX)
			at = live_find(m, CT_NS_PHYSICAL, ev->ptr);
		if (at != SIZE_MAX)
			im->exported_bytes = ct_sat_add(im->exported_bytes, m->live[at].size);
		break;
	}
	case CT_OP_RETAIN:
		im->retains++;
		if (ev->ptr)
			href_add(m, ev->ptr);
		break;
	case CT_OP_MC_ADD_DEVICE:
		im->mc_devices++;
		break;
	case CT_OP_MC_BIND:
		im->mc_binds++;
		im->mc_bind_bytes = ct_sat_add(im->mc_bind_bytes, ev->size);
		break;
	case CT_OP_MC_UNBIND:
		im->mc_unbinds++;
		break;
	default:
		break;
	}
}

static void apply_event(struct ct_model *m, const struct ct_rec_event *ev)
{
	m->events++;
	if (!m->tl.started)
		ct_tl_start(&m->tl, (m->have_process && m->start_monotonic_ns &&
				     m->start_monotonic_ns <= ev->ts_ns)
					    ? m->start_monotonic_ns
					    : ev->ts_ns);
	see_ts(m, ev->ts_ns);
	ct_tl_touch(&m->tl, ev->ts_ns);
	uint64_t dur = ev->dur_ns;
	if (ev->op == CT_OP_NCCL) {
		dur = ct_nccl_event(m, ev);
		if (ct_nccl_is_begin(ev))
			return; /* a call's entry: its return is the call */
	}
	unsigned a = ev->api < CT_API_COUNT ? ev->api : CT_API_COUNT;
	struct ct_api_stats *st = &m->api[a];
	st->calls++;
	st->time_ns = ct_sat_add(st->time_ns, dur);
	if (ev->result != 0) {
		/* a failed call never allocates or frees, whatever its op */
		st->failures++;
		m->failed_calls++;
		return;
	}
	switch (ev->op) {
	case CT_OP_ALLOC:
		do_alloc(m, ev, alloc_kind(ev));
		break;
	case CT_OP_PHYS_CREATE:
		if (ev->kind == CT_KIND_MULTICAST) {
			m->imp.mc_created++;
			m->imp.mc_bytes = ct_sat_add(m->imp.mc_bytes, ev->size);
		}
		do_alloc(m, ev, ev->kind == CT_KIND_MULTICAST ? CT_KIND_MULTICAST : CT_KIND_VMM_PHYSICAL);
		break;
	case CT_OP_VA_RESERVE:
		do_alloc(m, ev, CT_KIND_VMM_RESERVED);
		break;
	case CT_OP_MAP:
		do_alloc(m, ev, handle_is_imported(m, ev->aux) ? import_map(m, ev) : CT_KIND_VMM_MAPPED);
		if (ev->result == 0 && ev->ptr)
			maph_put(m, ev->ptr, ev->aux);
		break;
	case CT_OP_FREE:
		do_free(m, ev, free_ns(ev));
		break;
	case CT_OP_PHYS_RELEASE:
		if (!href_drop(m, ev->ptr))
			do_free(m, ev, CT_NS_PHYSICAL);
		break;
	case CT_OP_IMPORT:
	case CT_OP_EXPORT:
	case CT_OP_RETAIN:
	case CT_OP_MC_ADD_DEVICE:
	case CT_OP_MC_BIND:
	case CT_OP_MC_UNBIND:
		apply_import(m, ev);
		break;
	case CT_OP_VA_FREE:
		do_free(m, ev, CT_NS_RESERVED);
		break;
	case CT_OP_UNMAP:
		do_unmap(m, ev);
		break;
	case CT_OP_DEVICE_RESET:
	case CT_OP_CTX_DESTROY:
		checkpoint(m, ev);
		break;
	default:
		graph_event(m, ev);
		break;
	}
}

void ct_model_finish(struct ct_model *m)
{
	if (m->finished)
		return;
	m->finished = 1;
	if (m->paused_since && m->have_ts && m->last_ts > m->paused_since)
		m->paused_ns = ct_sat_add(m->paused_ns, m->last_ts - m->paused_since);
	/* the END record (read before the last events were released) ends the timeline */
	if (m->tl.started && m->have_ts)
		ct_tl_touch(&m->tl, m->last_ts);
	release_marks(m, UINT64_MAX);
	release_samples(m, UINT64_MAX);
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].finish)
			m->obs[i].finish(m->obs[i].ctx, m);
	ct_fw_finish(m);
	ct_nccl_finish(m);
	leak_live(m, 0); /* what the exit point counted is counted */
	ct_tl_sort(&m->tl);
}

/* ---- reader callbacks ------------------------------------------------------------- */

static char **push_str(char **v, size_t *n, size_t *cap, const char *s, size_t len)
{
	v = ct_xgrow(v, cap, *n + 1, sizeof *v);
	v[(*n)++] = ct_xstrndup(s, len);
	return v;
}

/* Where the value of key goes when it is an "env.NAME" of a launcher, else NULL. */
static char **launch_slot(struct ct_model *m, const char *k, size_t kl)
{
	size_t pl = sizeof CT_LAUNCH_KEY_PREFIX - 1;
	if (kl <= pl || memcmp(k, CT_LAUNCH_KEY_PREFIX, pl))
		return NULL;
	for (unsigned i = 0; i < CT_LAUNCH_COUNT; i++) {
		const char *name = ct_launch_env_name(i);
		if (strlen(name) == kl - pl && !memcmp(k + pl, name, kl - pl))
			return &m->launch[i];
	}
	return NULL;
}

static void on_process(void *ctx, const struct ct_rec_process *p, const char *strings, size_t len)
{
	struct ct_model *m = ctx;
	if (m->have_process)
		return; /* only the first one counts */
	m->have_process = 1;
	m->pid = p->pid;
	m->ppid = p->ppid;
	m->forked = p->forked;
	m->start_realtime_ns = p->start_realtime_ns;
	m->start_monotonic_ns = p->start_monotonic_ns;
	size_t pos = 0, kl, vl;
	const char *k, *v;
	while (ct_process_next_kv(strings, len, &pos, &k, &kl, &v, &vl)) {
		char **dst = NULL;
		if (kl == 7 && !memcmp(k, "version", 7))
			dst = &m->version;
		else if (kl == 4 && !memcmp(k, "host", 4))
			dst = &m->host;
		else if (kl == 3 && !memcmp(k, "exe", 3))
			dst = &m->exe;
		else if (kl == 3 && !memcmp(k, "cwd", 3))
			dst = &m->cwd;
		else if (kl == 6 && !memcmp(k, "output", 6))
			dst = &m->output;
		else if (kl == 4 && !memcmp(k, "argv", 4))
			m->argv = push_str(m->argv, &m->argc, &m->argv_cap, v, vl);
		else
			dst = launch_slot(m, k, kl);
		if (dst) {
			free(*dst);
			*dst = ct_xstrndup(v, vl);
		}
	}
	if (m->exe)
		ct_symtab_set_exe(m->syms, m->exe);
	if (m->cwd)
		ct_symtab_set_cwd(m->syms, m->cwd);
}

static void on_event(void *ctx, const struct ct_rec_event *ev)
{
	ct_model_event(ctx, ev);
}

static void on_stack(void *ctx, uint32_t id, unsigned depth, const uint64_t *ips)
{
	struct ct_model *m = ctx;
	ct_symtab_add_stack(m->syms, id, depth, ips);
}

static void on_module(void *ctx, const struct ct_rec_module *mod, const uint8_t *build_id,
		      const char *path, size_t path_len)
{
	struct ct_model *m = ctx;
	m->modules++;
	ct_symtab_add_module(m->syms, mod->base, mod->lo, mod->hi, build_id, mod->build_id_len,
			     path, path_len);
}

static void on_drops(void *ctx, const struct ct_rec_drops *d)
{
	struct ct_model *m = ctx;
	if (d->rec.flags & CT_DROPS_F_RECORDS) { /* not events */
		m->dropped_records = ct_sat_add(m->dropped_records, d->count);
		return;
	}
	m->dropped = ct_sat_add(m->dropped, d->count);
	if (d->rec.flags & CT_DROPS_F_SIGNAL)
		m->dropped_signal = ct_sat_add(m->dropped_signal, d->count);
}

static void on_end(void *ctx, const struct ct_rec_end *e)
{
	struct ct_model *m = ctx;
	m->end_seen = 1;
	m->end_ts = e->ts_ns;
	m->end_events = e->events;
	m->end_dropped = e->dropped;
	m->end_stacks = e->stacks;
	if (e->ts_ns)
		see_ts(m, e->ts_ns);
}

/* A CT_MARK_PAUSE: tracing paused (aux 1) or resumed; nothing else sees it. */
static void pause_mark(struct ct_model *m, const struct ct_rec_mark *mk)
{
	if (mk->aux && !m->paused_since) {
		m->pauses++;
		m->paused_since = mk->ts_ns ? mk->ts_ns : 1;
	} else if (!mk->aux && m->paused_since) {
		if (mk->ts_ns > m->paused_since)
			m->paused_ns = ct_sat_add(m->paused_ns, mk->ts_ns - m->paused_since);
		m->paused_since = 0;
	}
}

static void on_mark(void *ctx, const struct ct_rec_mark *mk, const char *name, size_t len)
{
	struct ct_model *m = ctx;
	if (mk->ts_ns && m->have_ts)
		see_ts(m, mk->ts_ns);
	if (mk->kind == CT_MARK_PAUSE) {
		pause_mark(m, mk);
		return;
	}
	m->marks++;
	ct_marks_add(m->marks_list, mk->ts_ns, mk->aux, mk->tid, mk->kind, name, len);
	/* the exit point and the steps it judges by are the model's own */
	int wanted = mk->kind == CT_MARK_EXIT || mk->kind == CT_MARK_STEP;
	for (size_t i = 0; i < m->nobs; i++)
		wanted |= m->obs[i].mark != NULL;
	if (wanted) {
		if (!m->markq)
			m->markq = ct_markq_new();
		ct_markq_push(m->markq, mk->ts_ns, mk->aux, mk->tid, mk->kind, name, len);
	}
}

static void on_counter(void *ctx, const struct ct_rec_counter *c, const char *name, size_t len)
{
	struct ct_model *m = ctx;
	ct_marks_counter(m->marks_list, name, len, c->device, c->value);
	if (c->ts_ns && m->have_ts)
		see_ts(m, c->ts_ns);
}

static void on_meminfo(void *ctx, const struct ct_rec_meminfo *mi)
{
	struct ct_model *m = ctx;
	m->meminfos++;
	for (size_t i = 0; i < m->nobs; i++)
		if (m->obs[i].meminfo)
			m->obs[i].meminfo(m->obs[i].ctx, m, mi);
}

/* ---- the memory no allocation call shows (issue 19 §6) ------------------------------- */

/* A sample waits, in time order, until the events up to its time have passed. */
static void on_memsample(void *ctx, const struct ct_rec_memsample *ms)
{
	struct ct_model *m = ctx;
	m->samples = ct_xgrow(m->samples, &m->capsamples, m->nsamples + 1, sizeof *m->samples);
	size_t i = m->nsamples++;
	while (i > m->nsamples_done && m->samples[i - 1].s.ts_ns > ms->ts_ns) {
		m->samples[i] = m->samples[i - 1];
		i--;
	}
	memset(&m->samples[i], 0, sizeof m->samples[i]);
	m->samples[i].s = *ms;
	if (ms->ts_ns && m->have_ts)
		see_ts(m, ms->ts_ns);
}

static void release_samples(struct ct_model *m, uint64_t ts)
{
	while (m->nsamples_done < m->nsamples && m->samples[m->nsamples_done].s.ts_ns <= ts) {
		struct ct_sample *x = &m->samples[m->nsamples_done++];
		for (size_t i = 0; i < m->ndpeaks; i++)
			if (m->dpeaks[i].device == x->s.device)
				x->allocations = m->dpeaks[i].live;
		const struct ct_gpool *g = ct_model_gpool(m, x->s.device);
		x->graph_live = g ? g->live : 0;
		x->done = 1;
	}
}

int ct_model_reconcile(const struct ct_model *m, int device, int last, struct ct_reconcile *out)
{
	const struct ct_sample *best = NULL;
	for (size_t i = 0; i < m->nsamples; i++) {
		const struct ct_sample *x = &m->samples[i];
		if (!x->done || (device >= 0 && x->s.device != device) || x->s.total_bytes < x->s.free_bytes)
			continue;
		if (!best || last || x->s.total_bytes - x->s.free_bytes > best->s.total_bytes - best->s.free_bytes)
			best = x;
	}
	memset(out, 0, sizeof *out);
	if (!best)
		return 0;
	out->at = best;
	out->in_use = best->s.total_bytes - best->s.free_bytes;
	out->allocations = best->allocations;
	if (best->s.flags & CT_MEMSAMPLE_F_POOLS)
		out->pool_reserve = ct_sat_sub(best->s.pool_reserved, best->s.pool_used);
	if (best->s.flags & CT_MEMSAMPLE_F_GRAPH)
		out->graph_reserve = ct_sat_sub(best->s.graph_reserved, best->graph_live);
	out->other = (int64_t)out->in_use - (int64_t)out->allocations - (int64_t)out->pool_reserve -
		     (int64_t)out->graph_reserve;
	return 1;
}

static void on_pystring(void *ctx, uint32_t id, const char *s, size_t len)
{
	ct_pytab_add_string(((struct ct_model *)ctx)->py, id, s, len);
}

static void on_pystack(void *ctx, uint32_t id, unsigned depth, const struct ct_pyframe *f)
{
	ct_pytab_add_stack(((struct ct_model *)ctx)->py, id, depth, f);
}

static void on_symbols(void *ctx, const struct ct_rec_symbols *s, const struct ct_sym_addr *addrs,
		       const struct ct_sym_frame *frames, const char *strings)
{
	ct_symtab_add_symbols(((struct ct_model *)ctx)->syms, s, addrs, frames, strings);
}

static uint32_t on_pycombine(void *ctx, uint32_t stack_id, uint32_t py_id)
{
	return ct_pytab_combine(((struct ct_model *)ctx)->py, stack_id, py_id);
}

void ct_model_callbacks(struct ct_model *m, struct ct_reader_cb *cb)
{
	memset(cb, 0, sizeof *cb);
	cb->ctx = m;
	cb->process = on_process;
	cb->event = on_event;
	cb->stack = on_stack;
	cb->module = on_module;
	cb->drops = on_drops;
	cb->end = on_end;
	cb->mark = on_mark;
	cb->meminfo = on_meminfo;
	cb->memsample = on_memsample;
	cb->counter = on_counter;
	cb->pystring = on_pystring;
	cb->pystack = on_pystack;
	cb->pycombine = on_pycombine;
	cb->symbols = on_symbols;
}

void ct_model_observe(struct ct_model *m, const struct ct_observer *o)
{
	if (m->nobs == CT_MODEL_MAX_OBSERVERS) {
		fputs("cumtrace-report: internal error: too many analyses on one dump\n", stderr);
		exit(2);
	}
	m->analysis[m->nobs] = NULL;
	m->obs[m->nobs++] = *o;
}

void *ct_model_state(const struct ct_model *m, const struct ct_analysis *a)
{
	for (size_t i = 0; i < m->nobs; i++)
		if (m->analysis[i] == a)
			return m->obs[i].ctx;
	return NULL;
}

void *ct_model_attach(struct ct_model *m, const struct ct_analysis *a, const struct ct_report_opts *o)
{
	void *st = ct_model_state(m, a);
	if (st)
		return st;
	struct ct_observer ob = a->observe;
	ob.ctx = st = a->attach(m, o);
	ct_model_observe(m, &ob);
	m->analysis[m->nobs - 1] = a;
	return st;
}

void ct_model_foreach_live(const struct ct_model *m,
			   void (*fn)(void *ctx, const struct ct_model *m, const struct ct_block *b),
			   void *ctx)
{
	for (size_t i = 0; m->live_mask && i <= m->live_mask; i++)
		if (m->live[i].ns)
			fn(ctx, m, &m->live[i]);
}

int ct_model_load(struct ct_model *m, const char *path, const struct ct_read_opts *opts)
{
	struct ct_reader_cb cb;
	ct_model_callbacks(m, &cb);
	free(m->path);
	m->path = ct_xstrdup(path);
	int st = ct_read_file(path, opts, &cb, &m->read);
	if (st != CT_READ_ERROR)
		ct_model_finish(m);
	return st;
}

int ct_model_load_mem(struct ct_model *m, const void *data, size_t len,
		      const struct ct_read_opts *opts)
{
	struct ct_reader_cb cb;
	ct_model_callbacks(m, &cb);
	int st = ct_read_mem(data, len, opts, &cb, &m->read);
	if (st != CT_READ_ERROR)
		ct_model_finish(m);
	return st;
}
