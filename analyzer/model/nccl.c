#include "model/nccl.h"

#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "render/render.h"

/* Owners of a site besides a communicator (site_owner: comm index + 1). */
#define OWN_MEM_ALLOC UINT32_MAX
#define OWN_OUTSIDE (UINT32_MAX - 1)
#define CT_NCCL_WINS_MAX 256 /* calls in progress remembered; more are not attributed */

/* An NCCL call in progress on a thread: where its CUDA allocations go. */
struct ct_nccl_win {
	uint32_t tid;
	uint16_t api;
	uint32_t owner; /* OWN_*, comm index + 1, or 0 (a call that allocates for no one) */
	uint64_t ts;	/* the entry event's */
};

/* The memory kinds (never address space, imported memory or multicast objects). */
static int memory_kind(unsigned kind)
{
	return kind == CT_KIND_DEVICE || kind == CT_KIND_HOST_PINNED || kind == CT_KIND_HOST_REGISTERED ||
	       kind == CT_KIND_MANAGED || kind == CT_KIND_VMM_PHYSICAL || kind == CT_KIND_ARRAY;
}

static int is_init(unsigned api)
{
	return api == CT_API_ncclCommInitRank || api == CT_API_ncclCommInitRankConfig ||
	       api == CT_API_ncclCommInitAll || api == CT_API_ncclCommSplit;
}

static struct ct_nccl *state(struct ct_model *m)
{
	if (!m->nccl)
		m->nccl = ct_xcalloc(1, sizeof *m->nccl);
	return m->nccl;
}

static struct ct_nccl_mem *owner_mem(struct ct_nccl *n, uint32_t owner)
{
	if (owner == OWN_MEM_ALLOC)
		return &n->mem_alloc;
	if (owner == OWN_OUTSIDE)
		return &n->outside;
	return owner && owner <= n->ncomms ? &n->comms[owner - 1].mem : NULL;
}

static void entry(struct ct_nccl *n, const struct ct_rec_event *ev)
{
	uint32_t owner = 0;
	if (is_init(ev->api)) {
		n->comms = ct_xgrow(n->comms, &n->capcomms, n->ncomms + 1, sizeof *n->comms);
		struct ct_nccl_comm *c = &n->comms[n->ncomms++];
		memset(c, 0, sizeof *c);
		c->api = ev->api;
		c->device = ev->device;
		c->rank = -1;
		owner = (uint32_t)n->ncomms;
	} else if (ev->api == CT_API_ncclMemAlloc) {
		owner = OWN_MEM_ALLOC;
	}
	if (n->nwins >= CT_NCCL_WINS_MAX)
		return;
	n->wins = ct_xgrow(n->wins, &n->capwins, n->nwins + 1, sizeof *n->wins);
	n->wins[n->nwins++] = (struct ct_nccl_win){.tid = ev->tid, .api = ev->api, .owner = owner, .ts = ev->ts_ns};
}

/* The innermost call in progress on tid of api (any api: UINT32_MAX), SIZE_MAX when none. */
static size_t find_win(const struct ct_nccl *n, uint32_t tid, unsigned api)
{
	for (size_t i = n->nwins; i-- > 0;)
		if (n->wins[i].tid == tid && (api == UINT32_MAX || n->wins[i].api == api))
			return i;
	return SIZE_MAX;
}

static struct ct_nccl_comm *comm_of(struct ct_nccl *n, uint64_t handle)
{
	for (size_t i = n->ncomms; handle && i-- > 0;)
		if (n->comms[i].comm == handle && !n->comms[i].end_api && !n->comms[i].failed)
			return &n->comms[i];
	return NULL;
}

static void ret(struct ct_nccl *n, const struct ct_rec_event *ev, uint64_t *dur)
{
	size_t w = find_win(n, ev->tid, ev->api);
	uint32_t owner = w == SIZE_MAX ? 0 : n->wins[w].owner;
	*dur = w != SIZE_MAX && ev->ts_ns > n->wins[w].ts ? ev->ts_ns - n->wins[w].ts : ev->dur_ns;
	if (w != SIZE_MAX) {
		memmove(&n->wins[w], &n->wins[w + 1], (n->nwins - w - 1) * sizeof *n->wins);
		n->nwins--;
	}
	int ok = ev->result == 0;
	if (is_init(ev->api)) {
		struct ct_nccl_comm *c = owner && owner <= n->ncomms ? &n->comms[owner - 1] : NULL;
		if (!c)
			return;
		c->failed = !ok || !ev->ptr; /* a split without a color makes no communicator */
		c->comm = ev->ptr;
		if (ev->api == CT_API_ncclCommSplit) {
			c->parent = ev->aux;
		} else {
			c->id_hash = ev->aux;
			c->rank = ev->api == CT_API_ncclCommInitAll ? 0 : (int32_t)(uint32_t)ev->stream;
			c->nranks = (int32_t)(ev->stream >> 32);
		}
		return;
	}
	if (!ok)
		return;
	switch (ev->api) {
	case CT_API_ncclCommDestroy:
	case CT_API_ncclCommAbort: {
		struct ct_nccl_comm *c = comm_of(n, ev->ptr);
		if (c)
			c->end_api = ev->api;
		break;
	}
	case CT_API_ncclMemAlloc:
		n->mem_alloc_calls++;
		n->mem_alloc_bytes += ev->size;
		break;
	case CT_API_ncclMemFree:
		n->mem_free_calls++;
		break;
	case CT_API_ncclCommRegister:
		n->registers++;
		n->register_bytes += ev->size;
		break;
	case CT_API_ncclCommDeregister:
		n->deregisters++;
		break;
	case CT_API_ncclCommWindowRegister:
		n->windows++;
		n->window_bytes += ev->size;
		break;
	case CT_API_ncclCommWindowDeregister:
		n->window_deregisters++;
		break;
	default:
		break;
	}
}

uint64_t ct_nccl_event(struct ct_model *m, const struct ct_rec_event *ev)
{
	struct ct_nccl *n = state(m);
	uint64_t dur = 0;
	if (ct_nccl_is_begin(ev))
		entry(n, ev);
	else
		ret(n, ev, &dur);
	return dur;
}

static void own_site(struct ct_nccl *n, uint32_t si, uint32_t owner)
{
	if (si >= n->nsite_owner) {
		size_t cap = n->nsite_owner;
		n->site_owner = ct_xgrow(n->site_owner, &cap, (size_t)si + 1, sizeof *n->site_owner);
		memset(n->site_owner + n->nsite_owner, 0, (cap - n->nsite_owner) * sizeof *n->site_owner);
		n->nsite_owner = cap;
	}
	if (!n->site_owner[si])
		n->site_owner[si] = owner;
}

void ct_nccl_alloc(struct ct_model *m, const struct ct_rec_event *ev, uint32_t si, uint8_t kind)
{
	struct ct_nccl *n = m->nccl;
	if (!n || !n->nwins || !memory_kind(kind))
		return;
	size_t w = find_win(n, ev->tid, UINT32_MAX);
	uint32_t owner = w == SIZE_MAX ? 0 : n->wins[w].owner;
	struct ct_nccl_mem *mem = owner_mem(n, owner);
	if (!mem)
		return;
	mem->allocations++;
	mem->bytes += ev->size;
	own_site(n, si, owner);
}

/* Does the site's stack hold a frame of libnccl? */
static int stack_holds_nccl(struct ct_model *m, uint32_t stack_id, struct ct_frame *fr)
{
	size_t k = ct_symtab_resolve(m->syms, stack_id, fr, CT_FRAMES_MAX);
	for (size_t i = 0; i < k; i++)
		if (fr[i].module_name && !strncmp(fr[i].module_name, "libnccl", 7))
			return 1;
	return 0;
}

void ct_nccl_finish(struct ct_model *m)
{
	struct ct_nccl *n = m->nccl;
	if (!n)
		return;
	size_t live = 0, only = 0;
	for (size_t i = 0; i < n->ncomms; i++)
		if (!n->comms[i].failed) {
			live++;
			only = i;
		}
	struct ct_frame *fr = NULL;
	for (uint32_t si = 0; si < m->nsites; si++) {
		const struct ct_site *s = &m->sites[si];
		uint32_t owner = si < n->nsite_owner ? n->site_owner[si] : 0;
		if (!owner && memory_kind(s->kind) && s->stack_id) {
			if (!fr)
				fr = ct_xcalloc(CT_FRAMES_MAX, sizeof *fr);
			if (stack_holds_nccl(m, s->stack_id, fr)) {
				owner = live == 1 ? (uint32_t)only + 1 : OWN_OUTSIDE;
				struct ct_nccl_mem *mem = owner_mem(n, owner);
				mem->allocations += s->allocs;
				mem->bytes += s->bytes_allocated;
				own_site(n, si, owner);
			}
		}
		struct ct_nccl_mem *mem = owner_mem(n, owner);
		if (mem)
			mem->live_bytes += s->live_bytes;
	}
	free(fr);
}

void ct_nccl_free(struct ct_nccl *n)
{
	if (!n)
		return;
	free(n->comms);
	free(n->wins);
	free(n->site_owner);
	free(n);
}

static void json_mem(struct ct_json *j, const struct ct_nccl_mem *mem)
{
	ct_json_kv_u64(j, "allocations", mem->allocations);
	ct_json_kv_u64(j, "bytes", mem->bytes);
	ct_json_kv_u64(j, "live_bytes_at_end", mem->live_bytes);
}

static void json_hex(struct ct_json *j, const char *key, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
	ct_json_kv_str(j, key, buf);
}

void ct_nccl_json(struct ct_json *j, struct ct_model *m)
{
	const struct ct_nccl *n = m->nccl;
	if (!n)
		return;
	ct_json_key(j, "nccl");
	ct_json_obj(j);
	ct_json_key(j, "communicators");
	ct_json_arr(j);
	for (size_t i = 0; i < n->ncomms; i++) {
		const struct ct_nccl_comm *c = &n->comms[i];
		if (c->failed)
			continue;
		ct_json_obj(j);
		json_hex(j, "comm", c->comm);
		ct_json_kv_str(j, "made_by", ct_api_name(c->api));
		if (c->api == CT_API_ncclCommSplit) {
			json_hex(j, "parent", c->parent);
		} else {
			json_hex(j, "id_hash", c->id_hash);
			ct_json_kv_u64(j, "rank", (uint64_t)(int64_t)c->rank);
			ct_json_kv_u64(j, "nranks", (uint64_t)(int64_t)c->nranks);
		}
		ct_json_kv_u64(j, "device", (uint64_t)(int64_t)c->device);
		ct_json_key(j, "ended_by");
		if (c->end_api)
			ct_json_str(j, ct_api_name(c->end_api));
		else
			ct_json_null(j);
		json_mem(j, &c->mem);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_key(j, "outside_init");
	ct_json_obj(j);
	json_mem(j, &n->outside);
	ct_json_obj_end(j);
	ct_json_key(j, "mem_alloc");
	ct_json_obj(j);
	ct_json_kv_u64(j, "calls", n->mem_alloc_calls);
	ct_json_kv_u64(j, "bytes_asked", n->mem_alloc_bytes);
	ct_json_kv_u64(j, "frees", n->mem_free_calls);
	json_mem(j, &n->mem_alloc);
	ct_json_obj_end(j);
	ct_json_key(j, "registered");
	ct_json_obj(j);
	ct_json_kv_u64(j, "registrations", n->registers);
	ct_json_kv_u64(j, "bytes", n->register_bytes);
	ct_json_kv_u64(j, "deregistrations", n->deregisters);
	ct_json_obj_end(j);
	ct_json_key(j, "windows");
	ct_json_obj(j);
	ct_json_kv_u64(j, "registrations", n->windows);
	ct_json_kv_u64(j, "bytes", n->window_bytes);
	ct_json_kv_u64(j, "deregistrations", n->window_deregisters);
	ct_json_obj_end(j);
	ct_json_obj_end(j);
}

void ct_nccl_put_text(FILE *f, const struct ct_model *m)
{
	const struct ct_nccl *n = m->nccl;
	char b1[32], b2[32], b3[32];
	if (!n)
		return;
	for (size_t i = 0; i < n->ncomms; i++) {
		const struct ct_nccl_comm *c = &n->comms[i];
		if (c->failed)
			continue;
		fprintf(f, "  nccl: communicator 0x%llx (%s", (unsigned long long)c->comm, ct_api_name(c->api));
		if (c->api != CT_API_ncclCommSplit)
			fprintf(f, ", rank %d of %d, id %016llx", c->rank, c->nranks, (unsigned long long)c->id_hash);
		fprintf(f, ", device %d): %s in %llu allocation%s, %s live at end%s%s\n", c->device,
			ct_fmt_bytes(c->mem.bytes, b1, sizeof b1), (unsigned long long)c->mem.allocations,
			ct_plural_s(c->mem.allocations), ct_fmt_bytes(c->mem.live_bytes, b2, sizeof b2),
			c->end_api ? "; " : "", c->end_api ? ct_api_name(c->end_api) : "");
	}
	fprintf(f, "  nccl: outside init: %s in %llu allocation%s, %s live at end; ncclMemAlloc: %llu call%s, %s\n",
		ct_fmt_bytes(n->outside.bytes, b1, sizeof b1), (unsigned long long)n->outside.allocations,
		ct_plural_s(n->outside.allocations), ct_fmt_bytes(n->outside.live_bytes, b2, sizeof b2),
		(unsigned long long)n->mem_alloc_calls, ct_plural_s(n->mem_alloc_calls),
		ct_fmt_bytes(n->mem_alloc.bytes, b3, sizeof b3));
}
