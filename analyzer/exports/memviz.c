/*
 * The memviz command: a pickle of the shape torch.cuda.memory._snapshot()
 * returns, for https://pytorch.org/memory_viz and torch.cuda._memory_viz
 * (trace_plot, segment_plot, stats, trace, segments, memory).
 *
 * Shape, as torch/csrc/cuda/memory_snapshot.cpp (_memory_snapshot_pickled)
 * writes it and torch/cuda/_memory_viz.py and torch/utils/viz/MemoryViz.js
 * (with process_alloc_data.js) read it:
 *   {"segments": [{"device", "address", "total_size", "allocated_size",
 *                  "active_size", "requested_size", "stream", "segment_type",
 *                  "segment_pool_id", "is_expandable", "frames",
 *                  "blocks": [{"address", "size", "requested_size", "state",
 *                              "frames"}]}],
 *    "device_traces": [one list per device of {"action", "addr" ("device_free"
 *                      for "oom"), "size", "stream", "frames", "time_us"}],
 *    "allocator_settings": {...}}
 * with frames [{"filename", "line", "name"}], innermost first.
 *
 * cumtrace sees CUDA allocations, not the caching allocator's blocks: every
 * device allocation (kinds device and vmm_mapped, size > 0) is a segment
 * holding one active block of its size. The trace has "segment_alloc" then
 * "alloc" for an allocation, and "free_requested", "free_completed",
 * "segment_free" for its end (MemoryViz merges the first two into "free"),
 * so that replaying it backwards from the segments (as the viewer's
 * "Allocator State History" does) always finds each block in a segment. An
 * allocation that failed out of memory (result 2) is an "oom" entry, with
 * device_free 0 (cumtrace does not know it). Frames are the Python frames
 * when the stack has some, else the native ones. The trace keeps the latest
 * --max-entries entries (a ring, like torch's); the segments are the device
 * allocations live at the end of the dump. A negative device counts as 0.
 *
 * The pickle is protocol 2 and uses only opcodes that both Python's
 * unpickler and MemoryViz.js's own unpickle() read: PROTO, EMPTY_DICT,
 * EMPTY_LIST, MARK, SETITEMS, APPENDS, BINUNICODE (always valid UTF-8),
 * BININT1, BININT2, BININT, LONG1, NEWTRUE, NEWFALSE, TUPLE2, BINPUT,
 * LONG_BINPUT, BINGET, LONG_BINGET, STOP. Lists are appended in batches of
 * at most 1000 items, as Python's pickler does (MemoryViz spreads a batch
 * into the arguments of one call).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "model/pystack.h"
#include "render/render.h"

#define MV_SMALL_SEGMENT (1u << 20) /* torch's small pool: blocks up to 1 MiB */
#define PK_BATCH 1000

/* ---- a pickle writer ------------------------------------------------------------------------ */

enum {
	PK_MARK = '(',
	PK_STOP = '.',
	PK_BININT = 'J',
	PK_BININT1 = 'K',
	PK_BININT2 = 'M',
	PK_BINUNICODE = 'X',
	PK_APPENDS = 'e',
	PK_BINGET = 'h',
	PK_LONG_BINGET = 'j',
	PK_EMPTY_LIST = ']',
	PK_BINPUT = 'q',
	PK_LONG_BINPUT = 'r',
	PK_SETITEMS = 'u',
	PK_EMPTY_DICT = '}',
	PK_PROTO = 0x80,
	PK_TUPLE2 = 0x86,
	PK_NEWTRUE = 0x88,
	PK_NEWFALSE = 0x89,
	PK_LONG1 = 0x8a,
};

/* The strings every snapshot repeats: memoized once, fetched with BINGET after. */
#define PK_KEYS(X)                                                                                 \
	X(segments) X(device_traces) X(allocator_settings) X(device) X(address) X(total_size)     \
	X(allocated_size) X(active_size) X(requested_size) X(stream) X(segment_type)               \
	X(segment_pool_id) X(is_expandable) X(frames) X(blocks) X(size) X(state)                   \
	X(active_allocated) X(large) X(small) X(action) X(addr) X(time_us) X(device_free) X(alloc) \
	X(free_requested) X(free_completed) X(segment_alloc) X(segment_free) X(oom) X(filename)    \
	X(line) X(name) X(compile_context) X(user_metadata) X(external_annotations)

enum pk_key {
#define PK_ENUM_(n) K_##n,
	PK_KEYS(PK_ENUM_)
#undef PK_ENUM_
	K_COUNT
};

static const char *const pk_key_names[K_COUNT] = {
#define PK_NAME_(n) #n,
	PK_KEYS(PK_NAME_)
#undef PK_NAME_
};

struct pk {
	FILE *f;
	uint32_t memo;		  /* next memo index */
	uint32_t key_memo[K_COUNT]; /* memo index + 1 of each key string; 0 = not yet */
};

static void pk_op(struct pk *p, unsigned op)
{
	fputc((int)op, p->f);
}

static void pk_u32(struct pk *p, uint32_t v)
{
	unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			      (unsigned char)(v >> 24)};
	fwrite(b, 1, 4, p->f);
}

/* Memoize the object on top of the stack; returns its memo index. */
static uint32_t pk_put(struct pk *p)
{
	uint32_t i = p->memo++;
	if (i < 256) {
		pk_op(p, PK_BINPUT);
		pk_op(p, i);
	} else {
		pk_op(p, PK_LONG_BINPUT);
		pk_u32(p, i);
	}
	return i;
}

static void pk_get(struct pk *p, uint32_t i)
{
	if (i < 256) {
		pk_op(p, PK_BINGET);
		pk_op(p, i);
	} else {
		pk_op(p, PK_LONG_BINGET);
		pk_u32(p, i);
	}
}

static void pk_uint(struct pk *p, uint64_t v)
{
	if (v < 256) {
		pk_op(p, PK_BININT1);
		pk_op(p, (unsigned)v);
	} else if (v < 65536) {
		pk_op(p, PK_BININT2);
		pk_op(p, (unsigned)(v & 0xff));
		pk_op(p, (unsigned)(v >> 8));
	} else if (v < 0x80000000u) {
		pk_op(p, PK_BININT);
		pk_u32(p, (uint32_t)v);
	} else {
		/* little-endian two's complement, with a 0 byte when the top bit is set */
		unsigned char b[9];
		unsigned n = 0;
		for (uint64_t x = v; x; x >>= 8)
			b[n++] = (unsigned char)x;
		if (b[n - 1] & 0x80)
			b[n++] = 0;
		pk_op(p, PK_LONG1);
		pk_op(p, n);
		fwrite(b, 1, n, p->f);
	}
}

static void pk_bool(struct pk *p, int v)
{
	pk_op(p, v ? PK_NEWTRUE : PK_NEWFALSE);
}

/* A str: s as UTF-8, each byte that is not part of valid UTF-8 as U+FFFD. */
static void pk_str(struct pk *p, const char *s)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)u), out = 0;
	for (size_t i = 0; i < n;) {
		size_t l = ct_utf8_seq(u + i, n - i);
		out += l ? l : 3;
		i += l ? l : 1;
	}
	pk_op(p, PK_BINUNICODE);
	pk_u32(p, (uint32_t)out);
	for (size_t i = 0; i < n;) {
		size_t l = ct_utf8_seq(u + i, n - i);
		if (l)
			fwrite(u + i, 1, l, p->f);
		else
			fwrite("\xef\xbf\xbd", 1, 3, p->f);
		i += l ? l : 1;
	}
}

static void pk_key(struct pk *p, enum pk_key k)
{
	if (p->key_memo[k]) {
		pk_get(p, p->key_memo[k] - 1);
		return;
	}
	pk_str(p, pk_key_names[k]);
	p->key_memo[k] = pk_put(p) + 1;
}

/* ---- the trace ring --------------------------------------------------------------------- */

enum mv_action { MV_SEGMENT_ALLOC, MV_ALLOC, MV_FREE_REQUESTED, MV_FREE_COMPLETED,
		 MV_SEGMENT_FREE, MV_OOM };

static const enum pk_key action_key[] = {
	[MV_SEGMENT_ALLOC] = K_segment_alloc,	  [MV_ALLOC] = K_alloc,
	[MV_FREE_REQUESTED] = K_free_requested, [MV_FREE_COMPLETED] = K_free_completed,
	[MV_SEGMENT_FREE] = K_segment_free,	  [MV_OOM] = K_oom,
};

struct mv_entry {
	uint64_t ts, addr, size, stream;
	uint32_t stack;
	int16_t device;
	uint8_t action;
};

struct mv_state {
	struct mv_entry *ring; /* grows up to cap entries, then wraps */
	size_t cap, head, n;   /* the oldest entry is at head */
	size_t alloc;
	uint64_t dropped;
};

static int mv_kind(unsigned kind)
{
	return kind == CT_KIND_DEVICE || kind == CT_KIND_VMM_MAPPED;
}

static int16_t mv_dev(int device)
{
	return (int16_t)(device < 0 ? 0 : device);
}

static void ring_push(struct mv_state *st, const struct mv_entry *e)
{
	if (st->n == st->cap) {
		st->ring[st->head] = *e;
		st->head = (st->head + 1) % st->cap;
		st->dropped++;
		return;
	}
	/* not full yet: head is 0 */
	st->ring = ct_xgrow(st->ring, &st->alloc, st->n + 1, sizeof *st->ring);
	st->ring[st->n++] = *e;
}

static void push_block(struct mv_state *st, const struct ct_model *m, const struct ct_block *b,
		       uint64_t ts, const enum mv_action *acts, size_t nacts)
{
	const struct ct_site *s = &m->sites[b->site];
	if (!mv_kind(s->kind) || !b->size)
		return;
	for (size_t i = 0; i < nacts; i++) {
		struct mv_entry e = {.ts = ts,
				     .addr = b->ptr,
				     .size = b->size,
				     .stream = b->stream,
				     .stack = s->stack_id,
				     .device = mv_dev(s->device),
				     .action = (uint8_t)acts[i]};
		ring_push(st, &e);
	}
}

static void ob_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		     const struct ct_block *b)
{
	static const enum mv_action acts[] = {MV_SEGMENT_ALLOC, MV_ALLOC};
	push_block(ctx, m, b, ev->ts_ns, acts, 2);
}

static void ob_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		       const struct ct_block *b, int how)
{
	static const enum mv_action acts[] = {MV_FREE_REQUESTED, MV_FREE_COMPLETED,
					      MV_SEGMENT_FREE};
	(void)how;
	push_block(ctx, m, b, ev->ts_ns, acts, 3);
}

static void ob_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	(void)m;
	if (ev->result != CT_RESULT_OUT_OF_MEMORY)
		return;
	if (ev->op != CT_OP_ALLOC && ev->op != CT_OP_PHYS_CREATE && ev->op != CT_OP_MAP)
		return;
	if (ev->kind != CT_KIND_NONE && ev->kind != CT_KIND_DEVICE &&
	    ev->kind != CT_KIND_VMM_PHYSICAL && ev->kind != CT_KIND_VMM_MAPPED)
		return;
	struct mv_entry e = {.ts = ev->ts_ns,
			     .size = ev->size,
			     .stream = ev->stream,
			     .stack = ev->stack_id,
			     .device = mv_dev(ev->device),
			     .action = MV_OOM};
	ring_push(ctx, &e);
}

static void ob_destroy(void *ctx)
{
	struct mv_state *st = ctx;
	free(st->ring);
	free(st);
}

static void *memviz_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	struct mv_state *st = ct_xcalloc(1, sizeof *st);
	st->cap = o->max_entries ? o->max_entries : CT_MEMVIZ_ENTRIES;
	return st;
}

const struct ct_analysis ct_analysis_memviz = {
	.name = "memviz",
	.attach = memviz_attach,
	.observe = {.alloc = ob_alloc, .release = ob_release, .event = ob_event, .destroy = ob_destroy},
};

/* ---- rendering --------------------------------------------------------------------------- */

struct frames_memo {
	uint32_t stack, memo;
};

struct mv_out {
	struct pk pk;
	struct ct_model *m;
	struct frames_memo *fm; /* frames lists already written */
	size_t nfm, capfm;
	struct ct_imap fmap;
};

static int fm_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct mv_out *)ctx)->fm[idx].stack == *(const uint32_t *)key;
}

static struct ct_frame resolved[CT_STACK_MAX];

static void write_frame(struct pk *p, const char *file, unsigned line, const char *name)
{
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_key(p, K_filename);
	pk_str(p, file);
	pk_key(p, K_line);
	pk_uint(p, line);
	pk_key(p, K_name);
	pk_str(p, name);
	pk_op(p, PK_SETITEMS);
}

/* The frames list of a stack: written once, fetched from the memo after. */
static void write_frames(struct mv_out *o, uint32_t stack)
{
	uint64_t h = ct_mix64(stack);
	uint32_t i = ct_imap_get(&o->fmap, h, fm_eq, o, &stack);
	if (i != CT_IMAP_NONE) {
		pk_get(&o->pk, o->fm[i].memo);
		return;
	}
	size_t n = stack ? ct_frames_resolve(o->m, stack, resolved, CT_STACK_MAX) : 0;
	int python = 0;
	for (size_t k = 0; k < n; k++)
		python |= resolved[k].python;
	pk_op(&o->pk, PK_EMPTY_LIST);
	size_t in_batch = 0;
	for (size_t k = 0; k < n; k++) {
		const struct ct_frame *fr = &resolved[k];
		if (python && !fr->python)
			continue;
		if (!in_batch)
			pk_op(&o->pk, PK_MARK);
		char name[512];
		if (fr->python)
			write_frame(&o->pk, fr->file ? fr->file : "?", fr->line,
				    fr->function ? fr->function : "?");
		else
			write_frame(&o->pk, fr->file ? fr->file : fr->module ? fr->module : "??",
				    fr->line, ct_frame_label(fr, 0, name, sizeof name));
		if (++in_batch == PK_BATCH) {
			pk_op(&o->pk, PK_APPENDS);
			in_batch = 0;
		}
	}
	if (in_batch)
		pk_op(&o->pk, PK_APPENDS);
	o->fm = ct_xgrow(o->fm, &o->capfm, o->nfm + 1, sizeof *o->fm);
	o->fm[o->nfm] = (struct frames_memo){stack, pk_put(&o->pk)};
	ct_imap_put(&o->fmap, h, (uint32_t)o->nfm++);
}

static uint64_t time_us(const struct ct_model *m, uint64_t ts)
{
	if (m->have_process && m->start_realtime_ns && ts >= m->start_monotonic_ns)
		return (m->start_realtime_ns + (ts - m->start_monotonic_ns)) / 1000;
	return ts / 1000;
}

static void write_entry(struct mv_out *o, const struct mv_entry *e)
{
	struct pk *p = &o->pk;
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_key(p, K_action);
	pk_key(p, action_key[e->action]);
	pk_key(p, e->action == MV_OOM ? K_device_free : K_addr);
	pk_uint(p, e->addr);
	pk_key(p, K_size);
	pk_uint(p, e->size);
	pk_key(p, K_stream);
	pk_uint(p, e->stream);
	pk_key(p, K_frames);
	write_frames(o, e->stack);
	pk_key(p, K_time_us);
	pk_uint(p, time_us(o->m, e->ts));
	/* torch >= 2.6 writes these on every entry; the values it writes when it has none */
	pk_key(p, K_compile_context);
	pk_str(p, "N/A");
	pk_key(p, K_user_metadata);
	pk_str(p, "");
	pk_op(p, PK_SETITEMS);
}

struct seg_list {
	const struct ct_block **v;
	size_t n, cap;
};

static void collect_segment(void *ctx, const struct ct_model *m, const struct ct_block *b)
{
	struct seg_list *l = ctx;
	if (!mv_kind(m->sites[b->site].kind) || !b->size)
		return;
	l->v = ct_xgrow(l->v, &l->cap, l->n + 1, sizeof *l->v);
	l->v[l->n++] = b;
}

static const struct ct_model *sort_model;

static int cmp_segment(const void *a, const void *b)
{
	const struct ct_block *x = *(const struct ct_block *const *)a;
	const struct ct_block *y = *(const struct ct_block *const *)b;
	int dx = mv_dev(sort_model->sites[x->site].device);
	int dy = mv_dev(sort_model->sites[y->site].device);
	if (dx != dy)
		return dx < dy ? -1 : 1;
	return (x->ptr > y->ptr) - (x->ptr < y->ptr);
}

static void write_segment(struct mv_out *o, const struct ct_block *b)
{
	struct pk *p = &o->pk;
	const struct ct_site *s = &o->m->sites[b->site];
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_key(p, K_device);
	pk_uint(p, (uint64_t)mv_dev(s->device));
	pk_key(p, K_address);
	pk_uint(p, b->ptr);
	static const enum pk_key sizes[] = {K_total_size, K_allocated_size, K_active_size,
					    K_requested_size};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		pk_key(p, sizes[i]);
		pk_uint(p, b->size);
	}
	pk_key(p, K_stream);
	pk_uint(p, b->stream);
	pk_key(p, K_segment_type);
	pk_key(p, b->size <= MV_SMALL_SEGMENT ? K_small : K_large);
	pk_key(p, K_segment_pool_id);
	pk_uint(p, 0);
	pk_uint(p, 0);
	pk_op(p, PK_TUPLE2);
	pk_key(p, K_is_expandable);
	pk_bool(p, 0);
	pk_key(p, K_frames);
	write_frames(o, s->stack_id);
	pk_key(p, K_blocks);
	pk_op(p, PK_EMPTY_LIST);
	pk_op(p, PK_MARK);
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_key(p, K_address);
	pk_uint(p, b->ptr);
	pk_key(p, K_size);
	pk_uint(p, b->size);
	pk_key(p, K_requested_size);
	pk_uint(p, b->size);
	pk_key(p, K_state);
	pk_key(p, K_active_allocated);
	pk_key(p, K_frames);
	write_frames(o, s->stack_id);
	pk_op(p, PK_SETITEMS);
	pk_op(p, PK_APPENDS);
	pk_op(p, PK_SETITEMS);
}

static const struct mv_state *sort_state;

/* Trace entries by device, in ring order within a device. */
static int cmp_entry(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct mv_state *st = sort_state;
	int di = st->ring[(st->head + i) % st->cap].device;
	int dj = st->ring[(st->head + j) % st->cap].device;
	if (di != dj)
		return di < dj ? -1 : 1;
	return (i > j) - (i < j);
}

static void render_memviz(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			  size_t n)
{
	static const struct mv_state none;
	struct mv_out out = {.pk = {.f = f}, .m = n ? ms[0] : NULL};
	struct pk *p = &out.pk;
	const struct mv_state *st = out.m && ct_model_state(out.m, &ct_analysis_memviz) ? ct_model_state(out.m, &ct_analysis_memviz)
									 : &none;
	struct seg_list segs = {0};
	if (out.m)
		ct_model_foreach_live(out.m, collect_segment, &segs);
	sort_model = out.m;
	if (segs.n > 1)
		qsort(segs.v, segs.n, sizeof *segs.v, cmp_segment);
	size_t *order = ct_xcalloc(st->n ? st->n : 1, sizeof *order);
	for (size_t i = 0; i < st->n; i++)
		order[i] = i;
	sort_state = st;
	if (st->n > 1)
		qsort(order, st->n, sizeof *order, cmp_entry);
	int ndev = 1;
	for (size_t i = 0; i < segs.n; i++)
		if (mv_dev(out.m->sites[segs.v[i]->site].device) + 1 > ndev)
			ndev = mv_dev(out.m->sites[segs.v[i]->site].device) + 1;
	for (size_t i = 0; i < st->n; i++)
		if (st->ring[i].device + 1 > ndev)
			ndev = st->ring[i].device + 1;

	pk_op(p, PK_PROTO);
	pk_op(p, 2);
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_key(p, K_segments);
	pk_op(p, PK_EMPTY_LIST);
	for (size_t i = 0; i < segs.n; i++) {
		if (i % PK_BATCH == 0)
			pk_op(p, PK_MARK);
		write_segment(&out, segs.v[i]);
		if (i % PK_BATCH == PK_BATCH - 1 || i + 1 == segs.n)
			pk_op(p, PK_APPENDS);
	}
	pk_key(p, K_device_traces);
	pk_op(p, PK_EMPTY_LIST);
	size_t k = 0;
	for (int d = 0; d < ndev; d++) {
		if (d % PK_BATCH == 0)
			pk_op(p, PK_MARK);
		pk_op(p, PK_EMPTY_LIST);
		size_t in_batch = 0;
		for (; k < st->n; k++) {
			const struct mv_entry *e = &st->ring[(st->head + order[k]) % st->cap];
			if (e->device != d)
				break;
			if (!in_batch)
				pk_op(p, PK_MARK);
			write_entry(&out, e);
			if (++in_batch == PK_BATCH) {
				pk_op(p, PK_APPENDS);
				in_batch = 0;
			}
		}
		if (in_batch)
			pk_op(p, PK_APPENDS);
		if (d % PK_BATCH == PK_BATCH - 1 || d + 1 == ndev)
			pk_op(p, PK_APPENDS);
	}
	pk_key(p, K_allocator_settings);
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_str(p, "cumtrace");
	char about[128];
	snprintf(about, sizeof about,
		 "cumtrace-report %s: one segment per CUDA allocation, one block per segment",
		 o->tool_version ? o->tool_version : "?");
	pk_str(p, about);
	pk_str(p, "trace_alloc_max_entries");
	pk_uint(p, st->cap);
	pk_str(p, "trace_alloc_overflowed");
	pk_bool(p, st->dropped != 0);
	pk_op(p, PK_SETITEMS);
	pk_key(p, K_external_annotations); /* torch 2.11: a list, empty without annotations */
	pk_op(p, PK_EMPTY_LIST);
	pk_op(p, PK_SETITEMS);
	pk_op(p, PK_STOP);

	free(order);
	free(segs.v);
	free(out.fm);
	ct_imap_free(&out.fmap);
}

const struct ct_report ct_report_memviz = {
	.uses = CT_USES(&ct_analysis_memviz),
	.render = render_memviz,
};
