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
 *    "allocator_settings": {...},
 *    "external_annotations": [{"name", "stage", "device", "time_us"}]}
 * with frames [{"filename", "line", "name"}], innermost first.
 *
 * With PyTorch's allocator events (the framework layer, model/framework.h) the
 * snapshot is torch's own: its segments live at the exit point (the mapped
 * ranges of an expandable segment that touch are one segment) with the
 * layer's blocks inside them (allocated, free requested: active_pending_free,
 * free: inactive; a block's size is the allocator's, its requested_size the
 * same), and the trace is torch's actions as its tracker saw them (alloc,
 * free_requested, free_completed, segment_alloc / segment_free / segment_map /
 * segment_unmap, oom with the device's free bytes). The CUDA layer's entries
 * inside a range a PyTorch segment ever held (its cudaMalloc, the VMM mappings of
 * an expandable segment's ranges) are those segments' own
 * calls and are left out; the CUDA layer's other device allocations (cuBLAS's,
 * NCCL's, a library's cudaMalloc) are segments of one block as below.
 *
 * Without it, cumtrace sees CUDA allocations, not the caching allocator's
 * blocks: every device allocation (kinds device and vmm_mapped, size > 0) is a
 * segment holding one active block of its size. The trace has "segment_alloc"
 * then "alloc" for an allocation, and "free_requested", "free_completed",
 * "segment_free" for its end (MemoryViz merges the first two into "free"),
 * so that replaying it backwards from the segments (as the viewer's
 * "Allocator State History" does) always finds each block in a segment. An
 * allocation that failed out of memory (result 2) is an "oom" entry, with
 * device_free the free bytes the shim read right after it (CT_REC_MEMINFO; 0
 * when it could not, and for failures after the first CT_OOM_KEEP). Frames
 * are the Python frames when the stack has some, else the native ones. The
 * trace keeps the latest --max-entries entries (a ring, like torch's); the
 * segments are the device allocations live at the end of the dump. A
 * negative device counts as 0.
 *
 * NVTX ranges and marks are external_annotations, as torch records its
 * record_function ranges (torch/csrc/cuda/memory_snapshot.cpp,
 * _initRecordAnnotations: {"name", "stage": "START"} on entry, "END" on exit,
 * then the device and time_us): a push or nvtxRangeStart is a START, its pop
 * or nvtxRangeEnd an END of the same name, an instant (cumtrace_mark,
 * nvtxMark, a step boundary) a START and an END at once; ranges still open
 * at the end of the dump end there; a pop or end with nothing open is left
 * out. device: the device of the thread's latest event (0 before any),
 * time_us on the trace entries' clock. The latest --max-entries are kept
 * (torch keeps them in a ring of that size too), names cut at MV_NAME_MAX
 * bytes. MemoryViz.js does not draw them; tools that read torch's
 * snapshots for phases do.
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
#include "model/framework.h"
#include "model/marks.h"
#include "model/pystack.h"
#include "render/render.h"
#include "render/views.h"

#define MV_SMALL_SEGMENT (1u << 20) /* torch's small pool: blocks up to 1 MiB */
#define MV_NAME_MAX 256		    /* bytes of an annotation's name kept */
#define MV_MAX_OPEN 4096	    /* NVTX ranges open at once, followed for their END */
#define MV_MAX_THREADS 65536	    /* threads whose current device is followed */
#define MV_SMALL_BUFFER (2u << 20)  /* ... in segments of 2 MiB */
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
	X(line) X(name) X(compile_context) X(user_metadata) X(external_annotations)                \
	X(segment_map) X(segment_unmap) X(active_pending_free) X(inactive) X(stage) X(START) X(END)

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

static void pk_kv_uint(struct pk *p, enum pk_key k, uint64_t v)
{
	pk_key(p, k);
	pk_uint(p, v);
}

/* ---- the trace ring --------------------------------------------------------------------- */

enum mv_action { MV_SEGMENT_ALLOC, MV_ALLOC, MV_FREE_REQUESTED, MV_FREE_COMPLETED,
		 MV_SEGMENT_FREE, MV_OOM, MV_SEGMENT_MAP, MV_SEGMENT_UNMAP };

static const enum pk_key action_key[] = {
	[MV_SEGMENT_ALLOC] = K_segment_alloc,	  [MV_ALLOC] = K_alloc,
	[MV_FREE_REQUESTED] = K_free_requested, [MV_FREE_COMPLETED] = K_free_completed,
	[MV_SEGMENT_FREE] = K_segment_free,	  [MV_OOM] = K_oom,
	[MV_SEGMENT_MAP] = K_segment_map,	  [MV_SEGMENT_UNMAP] = K_segment_unmap,
};

struct mv_entry {
	uint64_t ts, addr, size, stream;
	uint32_t stack;
	int16_t device;
	uint8_t action;
	uint8_t torch; /* from PyTorch's allocator (framework events), not the CUDA layer */
	uint32_t tid;
};

/* An address range [lo, hi). */
struct mv_range {
	uint64_t lo, hi;
};

/* A PyTorch segment (torch_segment_alloc) or mapped range of an expandable segment. */
struct mv_seg {
	uint64_t ptr, end, stream;
	uint32_t stack;
	int16_t device;
	uint8_t expandable;
};

/* An external annotation: a range's START or END (name owned). */
struct mv_ann {
	uint64_t ts;
	char *name;
	int16_t device;
	uint8_t end;
};

/* A range open: pushed on a thread (by CT_MARK_PUSH) or started with an id (CT_MARK_START). */
struct mv_open {
	uint64_t id;
	uint32_t tid;
	uint16_t by;
	int16_t device;
	char *name;
};

struct mv_thread {
	uint32_t tid;
	int16_t device;
};

struct mv_state {
	struct mv_entry *ring; /* grows up to cap entries, then wraps */
	size_t cap, head, n;   /* the oldest entry is at head */
	size_t alloc;
	uint64_t dropped;
	/* external annotations: a ring of cap too, the oldest at ann_head */
	struct mv_ann *anns;
	size_t ann_head, nanns, ann_alloc;
	uint64_t anns_dropped;
	struct mv_open *open;
	size_t nopen, capopen;
	struct mv_thread *threads; /* each thread's current device, from its latest event */
	size_t nthreads, capthreads;
	struct ct_imap threadmap;
	uint64_t last_ts; /* latest event or mark: where ranges still open end */
	/* PyTorch's segments live now, and every range one held */
	struct mv_seg *segs;
	size_t nsegs, capsegs;
	struct mv_range *ranges; /* every range a PyTorch segment held (compacted now and then) */
	size_t nranges, capranges, compact_at;
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

/* ---- external annotations: NVTX ranges and marks --------------------------------------- */

static int thread_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct mv_state *)ctx)->threads[idx].tid == *(const uint32_t *)key;
}

/* Thread tid's latest event is on device. Threads never seen off device 0 are not kept. */
static void thread_seen(struct mv_state *st, uint32_t tid, int16_t device, uint64_t ts)
{
	if (ts > st->last_ts)
		st->last_ts = ts;
	if (!st->nthreads && device == 0)
		return;
	uint64_t h = ct_mix64(tid);
	uint32_t i = ct_imap_get(&st->threadmap, h, thread_eq, st, &tid);
	if (i != CT_IMAP_NONE) {
		st->threads[i].device = device;
		return;
	}
	if (device == 0 || st->nthreads >= MV_MAX_THREADS)
		return;
	st->threads = ct_xgrow(st->threads, &st->capthreads, st->nthreads + 1, sizeof *st->threads);
	st->threads[st->nthreads] = (struct mv_thread){tid, device};
	ct_imap_put(&st->threadmap, h, (uint32_t)st->nthreads++);
}

/* The device of thread tid's latest event (0 before any). */
static int16_t thread_device(const struct mv_state *st, uint32_t tid)
{
	uint32_t i = st->nthreads ? ct_imap_get(&st->threadmap, ct_mix64(tid), thread_eq, st, &tid)
				  : CT_IMAP_NONE;
	return i == CT_IMAP_NONE ? 0 : st->threads[i].device;
}

/* A copy of name cut at MV_NAME_MAX bytes, not inside a UTF-8 sequence. */
static char *name_copy(const char *name)
{
	size_t n = strlen(name);
	if (n > MV_NAME_MAX) {
		n = MV_NAME_MAX;
		while (n && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
	}
	return ct_xstrndup(name, n);
}

static void ann_push(struct mv_state *st, uint64_t ts, const char *name, int16_t device, int end)
{
	struct mv_ann a = {.ts = ts, .name = name_copy(name), .device = mv_dev(device), .end = (uint8_t)end};
	if (st->nanns == st->cap) {
		free(st->anns[st->ann_head].name);
		st->anns[st->ann_head] = a;
		st->ann_head = (st->ann_head + 1) % st->cap;
		st->anns_dropped++;
		return;
	}
	st->anns = ct_xgrow(st->anns, &st->ann_alloc, st->nanns + 1, sizeof *st->anns);
	st->anns[st->nanns++] = a;
}

static void ob_mark(void *ctx, struct ct_model *m, const struct ct_mark *mk)
{
	struct mv_state *st = ctx;
	(void)m;
	const char *name = mk->name ? mk->name : "";
	int16_t device = thread_device(st, mk->tid);
	if (mk->ts_ns > st->last_ts)
		st->last_ts = mk->ts_ns;
	switch (mk->kind) {
	case CT_MARK_INSTANT:
	case CT_MARK_STEP: /* an instant: a START and its END at one time */
		ann_push(st, mk->ts_ns, name, device, 0);
		ann_push(st, mk->ts_ns, name, device, 1);
		break;
	case CT_MARK_PUSH:
	case CT_MARK_START:
		if (st->nopen >= MV_MAX_OPEN)
			break; /* neither its START nor its END */
		st->open = ct_xgrow(st->open, &st->capopen, st->nopen + 1, sizeof *st->open);
		st->open[st->nopen++] = (struct mv_open){.id = mk->aux, .tid = mk->tid, .by = mk->kind,
							 .name = name_copy(name)};
		ann_push(st, mk->ts_ns, name, device, 0);
		break;
	case CT_MARK_POP:
	case CT_MARK_STOP: {
		/* a pop ends the innermost range its thread pushed; an end the range of its id */
		uint16_t by = mk->kind == CT_MARK_POP ? CT_MARK_PUSH : CT_MARK_START;
		for (size_t i = st->nopen; i-- > 0;) {
			struct mv_open *o = &st->open[i];
			if (o->by != by || (by == CT_MARK_PUSH ? o->tid != mk->tid : o->id != mk->aux))
				continue;
			ann_push(st, mk->ts_ns, o->name, device, 1);
			free(o->name);
			memmove(o, o + 1, (st->nopen - i - 1) * sizeof *o);
			st->nopen--;
			break;
		}
		break;
	}
	default:
		break;
	}
}

/* Ranges still open end with the dump, innermost first. */
static void ob_finish(void *ctx, struct ct_model *m)
{
	struct mv_state *st = ctx;
	uint64_t end = m->have_ts && m->last_ts > st->last_ts ? m->last_ts : st->last_ts;
	while (st->nopen) {
		struct mv_open *o = &st->open[--st->nopen];
		ann_push(st, end, o->name, thread_device(st, o->tid), 1);
		free(o->name);
	}
}

static void ob_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	(void)m;
	thread_seen(ctx, ev->tid, ev->device, ev->ts_ns);
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
			     .action = MV_OOM,
			     .tid = ev->tid};
	ring_push(ctx, &e);
}

static int cmp_range(const void *a, const void *b)
{
	const struct mv_range *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Sort the ranges and join those that overlap or touch: n ranges in, the count out. */
static size_t ranges_merge(struct mv_range *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_range);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && v[i].lo <= v[k - 1].hi) {
			if (v[i].hi > v[k - 1].hi)
				v[k - 1].hi = v[i].hi;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

/* Is addr inside one of the merged ranges v[0..n)? */
static int in_ranges(const struct mv_range *v, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].lo <= addr;
}

static void seg_add(struct mv_state *st, const struct ct_rec_event *ev, int expandable)
{
	uint64_t end = ct_sat_add(ev->ptr, ev->size);
	st->ranges = ct_xgrow(st->ranges, &st->capranges, st->nranges + 1, sizeof *st->ranges);
	st->ranges[st->nranges++] = (struct mv_range){ev->ptr, end};
	if (st->nranges >= st->compact_at) { /* bounded by the distinct ranges, not the events */
		st->nranges = ranges_merge(st->ranges, st->nranges);
		st->compact_at = st->nranges * 2 + 1024;
	}
	st->segs = ct_xgrow(st->segs, &st->capsegs, st->nsegs + 1, sizeof *st->segs);
	st->segs[st->nsegs++] = (struct mv_seg){.ptr = ev->ptr,
						.end = end,
						.stream = ev->stream,
						.stack = ev->stack_id,
						.device = mv_dev(ev->device),
						.expandable = (uint8_t)expandable};
}

/* [ptr, ptr + size) is no longer reserved: cut it out of the segments (unmaps may split one). */
static void seg_cut(struct mv_state *st, uint64_t ptr, uint64_t size)
{
	uint64_t end = ct_sat_add(ptr, size);
	for (size_t i = 0; i < st->nsegs; i++) {
		struct mv_seg *g = &st->segs[i];
		if (g->end <= ptr || g->ptr >= end)
			continue;
		if (g->ptr < ptr && g->end > end) { /* the middle: two pieces */
			struct mv_seg tail = *g;
			tail.ptr = end;
			g->end = ptr;
			st->segs = ct_xgrow(st->segs, &st->capsegs, st->nsegs + 1, sizeof *st->segs);
			st->segs[st->nsegs++] = tail;
			continue;
		}
		if (g->ptr < ptr)
			g->end = ptr;
		else if (g->end > end)
			g->ptr = end;
		else
			st->segs[i--] = st->segs[--st->nsegs];
	}
}

static void ob_fw_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	struct mv_state *st = ctx;
	enum mv_action a;
	(void)m;
	thread_seen(st, ev->tid, ev->device, ev->ts_ns);
	switch (ev->api) {
	case CT_API_torch_alloc: a = MV_ALLOC; break;
	case CT_API_torch_free_requested: a = MV_FREE_REQUESTED; break;
	case CT_API_torch_free_completed: a = MV_FREE_COMPLETED; break;
	case CT_API_torch_segment_alloc: a = MV_SEGMENT_ALLOC; seg_add(st, ev, 0); break;
	case CT_API_torch_segment_map: a = MV_SEGMENT_MAP; seg_add(st, ev, 1); break;
	case CT_API_torch_segment_free: a = MV_SEGMENT_FREE; seg_cut(st, ev->ptr, ev->size); break;
	case CT_API_torch_segment_unmap: a = MV_SEGMENT_UNMAP; seg_cut(st, ev->ptr, ev->size); break;
	case CT_API_torch_oom: a = MV_OOM; break;
	default: return;
	}
	/* torch_oom: ptr holds the device's free bytes (format.h) */
	struct mv_entry e = {.ts = ev->ts_ns,
			     .addr = ev->ptr,
			     .size = ev->size,
			     .stream = ev->stream,
			     .stack = ev->stack_id,
			     .device = mv_dev(ev->device),
			     .action = (uint8_t)a,
			     .torch = 1};
	ring_push(st, &e);
}

static void ob_destroy(void *ctx)
{
	struct mv_state *st = ctx;
	for (size_t i = 0; i < st->nanns; i++)
		free(st->anns[i].name);
	free(st->anns);
	for (size_t i = 0; i < st->nopen; i++)
		free(st->open[i].name);
	free(st->open);
	free(st->threads);
	ct_imap_free(&st->threadmap);
	free(st->ring);
	free(st->segs);
	free(st->ranges);
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
	.observe = {.alloc = ob_alloc,
		    .release = ob_release,
		    .event = ob_event,
		    .mark = ob_mark,
		    .fw_event = ob_fw_event,
		    .finish = ob_finish,
		    .destroy = ob_destroy},
};

/* ---- rendering --------------------------------------------------------------------------- */

struct frames_memo {
	uint32_t stack, memo;
};

struct mv_out {
	struct pk pk;
	struct ct_model *m;
	struct ct_oom_view *ooms; /* the CUDA layer's failures kept in detail (analyses/oom.c) */
	size_t nooms;
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
	pk_kv_uint(p, K_line, line);
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

/* A CUDA-layer failure's device free bytes, as the shim read them right after it (0 unread). */
static uint64_t oom_free(const struct mv_out *o, const struct mv_entry *e)
{
	uint64_t t = ct_model_since_start(o->m, e->ts);
	for (size_t i = 0; i < o->nooms; i++)
		if (o->ooms[i].tid == e->tid && o->ooms[i].time_ns == t && o->ooms[i].have_info)
			return o->ooms[i].free_bytes;
	return 0;
}

static void write_entry(struct mv_out *o, const struct mv_entry *e)
{
	struct pk *p = &o->pk;
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_key(p, K_action);
	pk_key(p, action_key[e->action]);
	pk_key(p, e->action == MV_OOM ? K_device_free : K_addr);
	pk_uint(p, e->action == MV_OOM && !e->torch ? oom_free(o, e) : e->addr);
	pk_kv_uint(p, K_size, e->size);
	pk_kv_uint(p, K_stream, e->stream);
	pk_key(p, K_frames);
	write_frames(o, e->stack);
	pk_kv_uint(p, K_time_us, time_us(o->m, e->ts));
	/* torch >= 2.6 writes these on every entry; the values it writes when it has none */
	pk_key(p, K_compile_context);
	pk_str(p, "N/A");
	pk_key(p, K_user_metadata);
	pk_str(p, "");
	pk_op(p, PK_SETITEMS);
}

/* A segment of the snapshot: a PyTorch segment with its blocks, or a CUDA allocation. */
struct out_seg {
	uint64_t ptr, size, stream;
	uint32_t stack;
	int16_t device;
	uint8_t expandable;
	const struct ct_fw_block *blocks; /* PyTorch's, in address order; NULL: one block, the whole */
	size_t nblocks;
};

struct seg_list {
	struct out_seg *v;
	size_t n, cap;
	const struct mv_state *st;
	const struct mv_range *torch; /* every range a PyTorch segment held, merged */
	size_t ntorch;
};

static void seg_push(struct seg_list *l, const struct out_seg *g)
{
	l->v = ct_xgrow(l->v, &l->cap, l->n + 1, sizeof *l->v);
	l->v[l->n++] = *g;
}

/* A device allocation of the CUDA layer that is not PyTorch's (its segments, or the VMM
 * mappings of an expandable segment's ranges, which may be several per range). */
static void collect_segment(void *ctx, const struct ct_model *m, const struct ct_block *b)
{
	struct seg_list *l = ctx;
	const struct ct_site *s = &m->sites[b->site];
	if (!mv_kind(s->kind) || !b->size || in_ranges(l->torch, l->ntorch, b->ptr))
		return;
	seg_push(l, &(struct out_seg){.ptr = b->ptr,
				      .size = b->size,
				      .stream = b->stream,
				      .stack = s->stack_id,
				      .device = mv_dev(s->device)});
}

struct block_list {
	struct ct_fw_block *v;
	size_t n, cap;
};

static void collect_block(void *ctx, const struct ct_fw_block *b)
{
	struct block_list *l = ctx;
	if (b->fw != CT_FW_TORCH || !b->size)
		return;
	l->v = ct_xgrow(l->v, &l->cap, l->n + 1, sizeof *l->v);
	l->v[l->n++] = *b;
}

static int cmp_block(const void *a, const void *b)
{
	uint64_t x = ((const struct ct_fw_block *)a)->ptr, y = ((const struct ct_fw_block *)b)->ptr;
	return (x > y) - (x < y);
}

static int cmp_seg_addr(const void *a, const void *b)
{
	const struct out_seg *x = a, *y = b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->ptr > y->ptr) - (x->ptr < y->ptr);
}

/*
 * PyTorch's segments now, as torch's snapshot shows them (the mapped ranges of an
 * expandable segment that touch are one segment), each with the layer's blocks inside
 * it; then the CUDA layer's other device allocations, one block each.
 */
static void collect_segments(struct seg_list *l, struct block_list *bl, const struct ct_model *m)
{
	const struct mv_state *st = l->st;
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct mv_seg *g = &st->segs[i];
		seg_push(l, &(struct out_seg){.ptr = g->ptr,
					      .size = g->end - g->ptr,
					      .stream = g->stream,
					      .stack = g->stack,
					      .device = g->device,
					      .expandable = g->expandable,
					      .blocks = bl->v});
	}
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, cmp_seg_addr);
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++) {
		struct out_seg *g = &l->v[i];
		if (k && l->v[k - 1].expandable && g->expandable && l->v[k - 1].device == g->device &&
		    l->v[k - 1].ptr + l->v[k - 1].size == g->ptr)
			l->v[k - 1].size += g->size;
		else
			l->v[k++] = *g;
	}
	l->n = k;
	ct_fw_foreach_block(m, collect_block, bl);
	if (bl->n > 1)
		qsort(bl->v, bl->n, sizeof *bl->v, cmp_block);
	/* each segment's blocks: a run of the sorted blocks (segments do not overlap) */
	for (size_t i = 0; i < l->n; i++) {
		struct out_seg *g = &l->v[i];
		size_t lo = 0, hi = bl->n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (bl->v[mid].ptr < g->ptr)
				lo = mid + 1;
			else
				hi = mid;
		}
		size_t e = lo;
		while (e < bl->n && bl->v[e].ptr - g->ptr < g->size)
			e++;
		g->blocks = bl->v + lo;
		g->nblocks = e - lo;
	}
	ct_model_foreach_live(m, collect_segment, l);
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, cmp_seg_addr);
}

static void write_block(struct mv_out *o, uint64_t ptr, uint64_t size, enum pk_key state,
			uint32_t stack)
{
	struct pk *p = &o->pk;
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_kv_uint(p, K_address, ptr);
	pk_kv_uint(p, K_size, size);
	pk_kv_uint(p, K_requested_size, size);
	pk_key(p, K_state);
	pk_key(p, state);
	pk_key(p, K_frames);
	write_frames(o, stack);
	pk_op(p, PK_SETITEMS);
}

/* Block number *written of a segment's list, opening and closing its batches of PK_BATCH. */
static void write_listed_block(struct mv_out *o, size_t *written, uint64_t ptr, uint64_t size,
			       enum pk_key state, uint32_t stack)
{
	if (*written % PK_BATCH == 0)
		pk_op(&o->pk, PK_MARK);
	write_block(o, ptr, size, state, stack);
	if (++*written % PK_BATCH == 0)
		pk_op(&o->pk, PK_APPENDS);
}

static void write_segment(struct mv_out *o, const struct out_seg *g)
{
	struct pk *p = &o->pk;
	uint64_t allocated = g->blocks ? 0 : g->size, active = allocated;
	for (size_t i = 0; i < g->nblocks; i++) {
		if (g->blocks[i].state == CT_FW_BLOCK_ALLOCATED)
			allocated += g->blocks[i].size;
		if (g->blocks[i].state != CT_FW_BLOCK_FREE)
			active += g->blocks[i].size;
	}
	pk_op(p, PK_EMPTY_DICT);
	pk_op(p, PK_MARK);
	pk_kv_uint(p, K_device, (uint64_t)g->device);
	pk_kv_uint(p, K_address, g->ptr);
	pk_kv_uint(p, K_total_size, g->size);
	pk_kv_uint(p, K_allocated_size, allocated);
	pk_kv_uint(p, K_active_size, active);
	pk_kv_uint(p, K_requested_size, allocated);
	pk_kv_uint(p, K_stream, g->stream);
	pk_key(p, K_segment_type);
	/* torch's small pool: segments of 2 MiB (kSmallBuffer); one CUDA allocation: up to 1 MiB */
	pk_key(p, g->size <= (g->blocks ? MV_SMALL_BUFFER : MV_SMALL_SEGMENT) && !g->expandable ? K_small : K_large);
	pk_kv_uint(p, K_segment_pool_id, 0);
	pk_uint(p, 0);
	pk_op(p, PK_TUPLE2);
	pk_key(p, K_is_expandable);
	pk_bool(p, g->expandable);
	pk_key(p, K_frames);
	write_frames(o, g->stack);
	pk_key(p, K_blocks);
	pk_op(p, PK_EMPTY_LIST);
	/* MemoryViz places each block at the segment's address plus the sizes before it: the
	 * blocks tile the segment, bytes the layer did not follow (lost events) as inactive */
	uint64_t at = g->ptr, end = g->ptr + g->size;
	size_t written = 0;
	if (!g->blocks) /* a CUDA allocation: one block, the whole */
		write_listed_block(o, &written, g->ptr, g->size, K_active_allocated, g->stack);
	for (size_t i = 0; g->blocks && i <= g->nblocks; i++) {
		static const enum pk_key state[] = {[CT_FW_BLOCK_ALLOCATED] = K_active_allocated,
						    [CT_FW_BLOCK_PENDING] = K_active_pending_free,
						    [CT_FW_BLOCK_FREE] = K_inactive};
		const struct ct_fw_block *b = i < g->nblocks ? &g->blocks[i] : NULL;
		if (b && b->ptr < at)
			continue; /* overlaps the one before (inconsistent events): left out */
		uint64_t gap_end = b ? b->ptr : end;
		if (gap_end > at)
			write_listed_block(o, &written, at, gap_end - at, K_inactive, 0);
		if (b) {
			write_listed_block(o, &written, b->ptr, b->size, state[b->state],
					   b->site == UINT32_MAX ? 0 : o->m->sites[b->site].stack_id);
			at = b->ptr + b->size;
		}
	}
	if (written % PK_BATCH)
		pk_op(p, PK_APPENDS);
	pk_op(p, PK_SETITEMS);
}

/* external_annotations: torch's order of keys (its metadata, then device and time_us), oldest first. */
static void write_annotations(struct mv_out *o, const struct mv_state *st)
{
	struct pk *p = &o->pk;
	pk_op(p, PK_EMPTY_LIST);
	for (size_t i = 0; i < st->nanns; i++) {
		const struct mv_ann *a = &st->anns[(st->ann_head + i) % st->cap];
		if (i % PK_BATCH == 0)
			pk_op(p, PK_MARK);
		pk_op(p, PK_EMPTY_DICT);
		pk_op(p, PK_MARK);
		pk_key(p, K_name);
		pk_str(p, a->name);
		pk_key(p, K_stage);
		pk_key(p, a->end ? K_END : K_START);
		pk_kv_uint(p, K_device, (uint64_t)a->device);
		pk_kv_uint(p, K_time_us, time_us(o->m, a->ts));
		pk_op(p, PK_SETITEMS);
		if (i % PK_BATCH == PK_BATCH - 1 || i + 1 == st->nanns)
			pk_op(p, PK_APPENDS);
	}
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
	uint64_t oom_count, oom_bytes;
	if (out.m)
		out.ooms = ct_view_ooms(out.m, &out.nooms, &oom_count, &oom_bytes);
	struct mv_range *torch = ct_xcalloc(st->nranges + 1, sizeof *torch);
	if (st->nranges)
		memcpy(torch, st->ranges, st->nranges * sizeof *torch);
	struct seg_list segs = {.st = st, .torch = torch, .ntorch = ranges_merge(torch, st->nranges)};
	struct block_list blocks = {0};
	if (out.m)
		collect_segments(&segs, &blocks, out.m);
	/* the trace: the CUDA layer's entries of PyTorch's segments are torch's own */
	size_t *order = ct_xcalloc(st->n ? st->n : 1, sizeof *order), norder = 0;
	for (size_t i = 0; i < st->n; i++) {
		const struct mv_entry *e = &st->ring[(st->head + i) % st->cap];
		if (e->torch || e->action == MV_OOM || !in_ranges(segs.torch, segs.ntorch, e->addr))
			order[norder++] = i;
	}
	sort_state = st;
	if (norder > 1)
		qsort(order, norder, sizeof *order, cmp_entry);
	int ndev = 1;
	for (size_t i = 0; i < segs.n; i++)
		if (segs.v[i].device + 1 > ndev)
			ndev = segs.v[i].device + 1;
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
		write_segment(&out, &segs.v[i]);
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
		for (; k < norder; k++) {
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
	char about[192];
	snprintf(about, sizeof about,
		 st->nranges ? "cumtrace-report %s: PyTorch's segments and blocks (its allocator's events);"
				 " other CUDA allocations: one segment, one block each"
			       : "cumtrace-report %s: one segment per CUDA allocation, one block per segment",
		 o->tool_version ? o->tool_version : "?");
	pk_str(p, about);
	pk_str(p, "trace_alloc_max_entries");
	pk_uint(p, st->cap);
	pk_str(p, "trace_alloc_overflowed");
	pk_bool(p, st->dropped != 0);
	pk_str(p, "external_annotations_overflowed"); /* cumtrace's: older STARTs may be gone */
	pk_bool(p, st->anns_dropped != 0);
	pk_op(p, PK_SETITEMS);
	pk_key(p, K_external_annotations);
	write_annotations(&out, st);
	pk_op(p, PK_SETITEMS);
	pk_op(p, PK_STOP);

	free(order);
	free(segs.v);
	free(blocks.v);
	free(out.ooms);
	free(torch);
	free(out.fm);
	ct_imap_free(&out.fmap);
}

const struct ct_report ct_report_memviz = {
	.uses = CT_USES(&ct_analysis_memviz, &ct_analysis_oom),
	.render = render_memviz,
};
