/*
 * The perfetto command: a Chrome JSON trace (Trace Event Format) for
 * Perfetto's UI and trace processor (ui.perfetto.dev) and chrome://tracing.
 *
 * Per dump (pid = the traced process's pid):
 *   - counter tracks ("C") of live bytes per (memory kind, device), at most
 *     one sample per track per --counter-us: each sample is the most bytes
 *     live in its interval, so no peak is coalesced away; with a framework
 *     layer also "PyTorch allocated N", "PyTorch reserved N", "CuPy used N"
 *     per device N (model/framework.h), sampled the same way;
 *   - allocation lifetimes as async slices ("b"/"e", category "alloc.KIND")
 *     named "API SIZE", args ptr, size, stream, device, stack id, site (the
 *     innermost Python frame, else the innermost frame) and how the block
 *     ended; the framework layer's blocks the same way (category
 *     "alloc.torch_block", "alloc.cupy_block"); the --max-slices largest are kept;
 *   - NVTX push/pop as "B"/"E" slices on their thread, start/end as async
 *     slices (category "nvtx"), marks as thread instants ("i");
 *   - allocations that failed out of memory (result 2) as process instants;
 *   - process and thread names ("M").
 *
 * The pass streams: counter samples, marks, ranges and OOMs go to a spool (a
 * memory buffer moved to an unlinked temporary file past PF_SPOOL_MEM bytes),
 * slices to a heap of at most max-slices entries; render replays the spool.
 * Memory: the heap, plus one state per counter track (<= PF_MAX_TRACKS),
 * thread (<= PF_MAX_THREADS) and open NVTX start/end range (<= PF_MAX_OPEN).
 *
 * Rules followed, from Perfetto's JSON importer (google/perfetto,
 * src/trace_processor/importers/json/json_trace_tokenizer.cc and
 * json_trace_parser_impl.cc):
 *   - an outer object whose "traceEvents" is an array of event objects;
 *   - the tokenizer reads "ts" and "dur" from the top level of each event
 *     and fails on a top-level array value: "ts" comes first (older
 *     tokenizers stop at it) and no event has an array value;
 *   - "b"/"e" pair on the track (pid, hash(cat, id)) and "e" closes the
 *     open slice of the same name and category: each "e" repeats both;
 *   - each numeric arg of a "C" event is a track "NAME KEY" (ours: "bytes");
 *   - instants take "s": "t" (thread track) or "p" (process track);
 *   - ts is in microseconds; there is no displayTimeUnit (Perfetto releases
 *     before 2022 read "ns" there as the unit of ts, current ones only as
 *     the display's);
 *   - every counter has a category ("memory", "memory.pytorch",
 *     "memory.cupy"): Chrome's trace viewer filters events by category.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "model/framework.h"
#include "model/marks.h"
#include "model/pystack.h"
#include "render/render.h"

#define PF_SPOOL_MEM (1u << 20) /* spool bytes kept in memory before the temp file */
#define PF_MAX_TRACKS 256	/* counter tracks per dump, like the timeline's series */
#define PF_FW_TRACKS 32		/* more: the framework layer's (kind, device), after them */
#define PF_MAX_THREADS 65536	/* threads with names and NVTX push depth */
#define PF_MAX_OPEN 4096	/* NVTX start/end ranges open at once */
#define PF_RANGE_NAME 256	/* bytes of an open start/end range's name kept */
#define PF_PID_STRIDE 4194304u	/* above Linux's pid_max: a repeated pid moves by this */

enum pf_type { PF_COUNTER = 1, PF_INSTANT, PF_PUSH, PF_POP, PF_RANGE, PF_OOM };

/*
 * One spooled record, followed by len bytes of name. counter: ts, a = live
 * bytes, tid = (kind, device) index; instant/push/pop: ts, tid; range: ts ..
 * ts2 on tid .. tid2, a = range id, b = 1 when it was still open at the end;
 * oom: ts, tid, a = size, b = stream, stack, api, device, kind.
 */
struct pf_rec {
	uint64_t ts, ts2, a, b;
	uint32_t tid, tid2, stack, len;
	uint16_t api;
	int16_t device;
	uint8_t type, kind;
	uint8_t pad[2];
};

struct pf_spool {
	unsigned char *mem; /* grows up to PF_SPOOL_MEM */
	size_t len, cap;
	FILE *file; /* NULL until the memory buffer overflowed once */
};

/* How an allocation slice ended. */
enum pf_end { PF_FREED, PF_UNSEEN, PF_CHECKPOINT, PF_LIVE };

struct pf_slice {
	uint64_t start, end, ptr, size, stream;
	uint32_t tid, end_tid, site;
	uint32_t lane; /* assigned at render */
	uint16_t end_api;
	uint8_t how;  /* enum pf_end */
	uint8_t kind;
};

struct pf_track {
	int used, emitted;
	uint64_t cur, mx;    /* live bytes now; most in the current interval */
	uint64_t bucket, bts; /* current interval; time of its first change */
	uint64_t last;	     /* value of the last sample written */
};

struct pf_thread {
	uint32_t tid;
	uint32_t depth; /* open NVTX push ranges */
};

struct pf_open {
	uint64_t id, ts;
	uint32_t tid, len;
	char name[PF_RANGE_NAME];
};

struct pf_state {
	uint64_t width_ns; /* counter interval, >= 1 */
	size_t cap;	   /* slices kept */
	struct pf_spool spool;
	struct pf_slice *heap; /* min-heap: the smallest kept slice at [0] */
	size_t nheap, capheap;
	struct pf_track tracks[PF_MAX_TRACKS + PF_FW_TRACKS];
	struct {
		uint8_t kind;
		int16_t device;
	} fw[PF_FW_TRACKS]; /* the (kind, device) of track PF_MAX_TRACKS + i */
	size_t nfw;
	struct pf_thread *threads;
	size_t nthreads, capthreads;
	struct ct_imap threadmap;
	struct pf_open *open;
	size_t nopen, capopen;
	/* what was left out, for otherData */
	uint64_t slices, dropped, dropped_bytes;
	uint64_t unmatched_pops, unmatched_ends, lost_ranges, untracked, untracked_threads;
	uint64_t samples;
	uint64_t last_ts; /* latest event or mark: where what is still open ends */
};

/* ---- the spool -------------------------------------------------------------------------- */

__attribute__((noreturn)) static void spool_fail(const char *what)
{
	fprintf(stderr, "cumtrace-report: perfetto: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void spool_flush(struct pf_spool *s)
{
	if (!s->len)
		return;
	if (!s->file) {
		const char *dir = getenv("TMPDIR");
		char path[4096];
		snprintf(path, sizeof path, "%s/cumtrace-perfetto.XXXXXX", dir && *dir ? dir : "/tmp");
		int fd = mkstemp(path);
		if (fd < 0)
			spool_fail("cannot create a temporary file");
		unlink(path);
		s->file = fdopen(fd, "w+b");
		if (!s->file)
			spool_fail("cannot open the temporary file");
	}
	if (fwrite(s->mem, 1, s->len, s->file) != s->len)
		spool_fail("cannot write the temporary file");
	s->len = 0;
}

static void spool_put(struct pf_state *st, const struct pf_rec *r, const char *name)
{
	struct pf_spool *s = &st->spool;
	size_t n = sizeof *r + r->len;
	if (s->len + n > PF_SPOOL_MEM)
		spool_flush(s);
	s->mem = ct_xgrow(s->mem, &s->cap, s->len + n, 1);
	memcpy(s->mem + s->len, r, sizeof *r);
	if (r->len)
		memcpy(s->mem + s->len + sizeof *r, name, r->len);
	s->len += n;
}

/* Replays the spool: the temporary file (from the start), then the memory buffer. */
struct pf_reader {
	struct pf_spool *s;
	int in_mem;
	size_t off;
	char name[65536];
};

static void reader_start(struct pf_reader *rd, struct pf_spool *s)
{
	rd->s = s;
	rd->off = 0;
	rd->in_mem = !s->file;
	if (s->file && (fflush(s->file) != 0 || fseek(s->file, 0, SEEK_SET) != 0))
		spool_fail("cannot read the temporary file");
}

/* The next record and its name (NUL-terminated in rd->name); 0 at the end. */
static int reader_next(struct pf_reader *rd, struct pf_rec *r)
{
	if (!rd->in_mem) {
		if (fread(r, sizeof *r, 1, rd->s->file) == 1) {
			if (r->len && fread(rd->name, 1, r->len, rd->s->file) != r->len)
				spool_fail("short read from the temporary file");
			rd->name[r->len] = 0;
			return 1;
		}
		if (ferror(rd->s->file))
			spool_fail("cannot read the temporary file");
		/* the records written after the last flush come next */
		if (fseek(rd->s->file, 0, SEEK_END) != 0)
			spool_fail("cannot seek in the temporary file");
		rd->in_mem = 1;
	}
	if (rd->off + sizeof *r > rd->s->len)
		return 0;
	memcpy(r, rd->s->mem + rd->off, sizeof *r);
	rd->off += sizeof *r;
	memcpy(rd->name, rd->s->mem + rd->off, r->len);
	rd->name[r->len] = 0;
	rd->off += r->len;
	return 1;
}

/* ---- slices: the largest kept ------------------------------------------------------------ */

/* 1 when a ranks below b: smaller, then shorter, then later, then higher address. */
static int slice_below(const struct pf_slice *a, const struct pf_slice *b)
{
	if (a->size != b->size)
		return a->size < b->size;
	uint64_t da = a->end - a->start, db = b->end - b->start;
	if (da != db)
		return da < db;
	if (a->start != b->start)
		return a->start > b->start;
	return a->ptr > b->ptr;
}

static void heap_down(struct pf_slice *h, size_t n, size_t i)
{
	struct pf_slice x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && slice_below(&h[c + 1], &h[c]))
			c++;
		if (!slice_below(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static void add_slice(struct pf_state *st, const struct pf_slice *s)
{
	st->slices++;
	if (st->nheap < st->cap) {
		st->heap = ct_xgrow(st->heap, &st->capheap, st->nheap + 1, sizeof *st->heap);
		size_t i = st->nheap++;
		while (i && slice_below(s, &st->heap[(i - 1) / 2])) {
			st->heap[i] = st->heap[(i - 1) / 2];
			i = (i - 1) / 2;
		}
		st->heap[i] = *s;
		return;
	}
	/* full: the new slice replaces the smallest kept one if it ranks above it */
	st->dropped++;
	if (!slice_below(&st->heap[0], s)) {
		st->dropped_bytes = ct_sat_add(st->dropped_bytes, s->size);
		return;
	}
	st->dropped_bytes = ct_sat_add(st->dropped_bytes, st->heap[0].size);
	st->heap[0] = *s;
	heap_down(st->heap, st->nheap, 0);
}

/* ---- threads --------------------------------------------------------------------------- */

static int thread_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct pf_state *)ctx)->threads[idx].tid == *(const uint32_t *)key;
}

/* The thread's state, added when new; NULL past PF_MAX_THREADS. */
static struct pf_thread *thread_of(struct pf_state *st, uint32_t tid)
{
	uint64_t h = ct_mix64(tid);
	uint32_t i = ct_imap_get(&st->threadmap, h, thread_eq, st, &tid);
	if (i != CT_IMAP_NONE)
		return &st->threads[i];
	if (st->nthreads >= PF_MAX_THREADS) {
		st->untracked_threads++; /* counted once per event or mark of such a thread */
		return NULL;
	}
	st->threads = ct_xgrow(st->threads, &st->capthreads, st->nthreads + 1, sizeof *st->threads);
	i = (uint32_t)st->nthreads++;
	st->threads[i] = (struct pf_thread){.tid = tid};
	ct_imap_put(&st->threadmap, h, i);
	return &st->threads[i];
}

/* ---- counters -------------------------------------------------------------------------- */

static void track_sample(struct pf_state *st, uint32_t kd, struct pf_track *t, uint64_t ts,
			 uint64_t v)
{
	if (t->emitted && t->last == v)
		return;
	struct pf_rec r = {.type = PF_COUNTER, .ts = ts, .a = v, .tid = kd};
	spool_put(st, &r, NULL);
	t->emitted = 1;
	t->last = v;
	st->samples++;
}

/* The start of the interval after t's current one (saturating). */
static uint64_t track_next(const struct pf_state *st, const struct pf_track *t)
{
	uint64_t s = t->bucket * st->width_ns;
	return s > UINT64_MAX - st->width_ns ? UINT64_MAX : s + st->width_ns;
}

/* Close t's interval: its most bytes at its first change. */
static void track_close(struct pf_state *st, uint32_t kd, struct pf_track *t)
{
	track_sample(st, kd, t, t->bts, t->mx);
}

/*
 * (kind, device) index kd has live bytes v from ts on. An interval's samples:
 * at its first change, the most bytes live from then to its end; at its end,
 * the bytes it ended with (when they differ, and when the next interval does
 * not start with a change at that very time). So at most two samples per
 * interval with changes, none for the intervals without, and with intervals
 * of 1 ns (--counter-us 0) one sample per change at its own time.
 */
static void track_update(struct pf_state *st, uint32_t kd, uint64_t ts, uint64_t v)
{
	if (kd >= PF_MAX_TRACKS + PF_FW_TRACKS) {
		st->untracked++;
		return;
	}
	struct pf_track *t = &st->tracks[kd];
	uint64_t b = ts / st->width_ns;
	if (!t->used) {
		t->used = 1;
		t->bucket = b;
		t->bts = ts;
		t->cur = t->mx = v;
		return;
	}
	if (b > t->bucket) {
		track_close(st, kd, t);
		uint64_t end = track_next(st, t);
		if (end < ts)
			track_sample(st, kd, t, end, t->cur);
		t->bucket = b;
		t->bts = ts;
		t->mx = 0;
	}
	/* a late (older) event counts in the current interval: ts stays monotone */
	t->cur = v;
	if (v > t->mx)
		t->mx = v;
}

/* ---- observers ------------------------------------------------------------------------- */

static void ob_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		     const struct ct_block *b)
{
	struct pf_state *st = ctx;
	uint32_t kd = m->sites[b->site].kd;
	track_update(st, kd < PF_MAX_TRACKS ? kd : UINT32_MAX, ev->ts_ns, m->kd[kd].live_bytes);
}

/* The framework layer's counters: one track per (kind, device) after the CUDA layer's. */
static void ob_fw_bytes(void *ctx, struct ct_model *m, uint64_t ts, uint8_t kind, int16_t device,
			uint64_t bytes)
{
	struct pf_state *st = ctx;
	(void)m;
	size_t i = 0;
	while (i < st->nfw && (st->fw[i].kind != kind || st->fw[i].device != device))
		i++;
	if (i == st->nfw && st->nfw < PF_FW_TRACKS) {
		st->fw[i].kind = kind;
		st->fw[i].device = device;
		st->nfw++;
	}
	track_update(st, i < st->nfw ? PF_MAX_TRACKS + (uint32_t)i : UINT32_MAX, ts, bytes);
}

/* The slice of block b, from its allocation to ev (how: enum pf_end). */
static void end_slice(struct pf_state *st, const struct ct_model *m, const struct ct_rec_event *ev,
		      const struct ct_block *b, uint8_t how)
{
	struct pf_slice s = {.start = b->ts,
			     .end = ev->ts_ns > b->ts ? ev->ts_ns : b->ts,
			     .ptr = b->ptr,
			     .size = b->size,
			     .stream = b->stream,
			     .tid = b->tid,
			     .end_tid = ev->tid,
			     .site = b->site,
			     .end_api = ev->api,
			     .kind = m->sites[b->site].kind,
			     .how = how};
	add_slice(st, &s);
}

static void ob_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		       const struct ct_block *b, int how)
{
	struct pf_state *st = ctx;
	uint32_t kd = m->sites[b->site].kd;
	/* the model has not removed the block yet */
	track_update(st, kd < PF_MAX_TRACKS ? kd : UINT32_MAX, ev->ts_ns,
		     ct_sat_sub(m->kd[kd].live_bytes, b->size));
	end_slice(st, m, ev, b,
		  how == CT_END_FREE ? PF_FREED : how == CT_END_UNSEEN ? PF_UNSEEN : PF_CHECKPOINT);
}

/* A framework block (framework.h) no longer handed out: a slice of its kind, as above. */
static void ob_fw_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			  const struct ct_block *b, int how)
{
	(void)how;
	end_slice(ctx, m, ev, b, PF_FREED);
}

static int is_alloc_op(unsigned op)
{
	return op == CT_OP_ALLOC || op == CT_OP_PHYS_CREATE || op == CT_OP_VA_RESERVE ||
	       op == CT_OP_MAP;
}

static void ob_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	struct pf_state *st = ctx;
	(void)m;
	thread_of(st, ev->tid);
	if (ev->ts_ns > st->last_ts)
		st->last_ts = ev->ts_ns;
	if (ev->result != CT_RESULT_OUT_OF_MEMORY || !is_alloc_op(ev->op))
		return;
	struct pf_rec r = {.type = PF_OOM,
			   .ts = ev->ts_ns,
			   .tid = ev->tid,
			   .a = ev->size,
			   .b = ev->stream,
			   .stack = ev->stack_id,
			   .api = ev->api,
			   .device = ev->device,
			   .kind = ev->kind};
	spool_put(st, &r, NULL);
}

static void ob_mark(void *ctx, struct ct_model *m, const struct ct_mark *mk)
{
	struct pf_state *st = ctx;
	(void)m;
	size_t len = strlen(mk->name);
	if (len > 65535)
		len = 65535;
	struct pf_thread *t = thread_of(st, mk->tid);
	struct pf_rec r = {.ts = mk->ts_ns, .tid = mk->tid, .len = (uint32_t)len};
	if (mk->ts_ns > st->last_ts)
		st->last_ts = mk->ts_ns;
	switch (mk->kind) {
	case CT_MARK_INSTANT:
	case CT_MARK_STEP: /* a step boundary is an instant named after its loop */
		r.type = PF_INSTANT;
		spool_put(st, &r, mk->name);
		break;
	case CT_MARK_PUSH:
		if (!t) {
			st->lost_ranges++;
			break;
		}
		t->depth++;
		r.type = PF_PUSH;
		spool_put(st, &r, mk->name);
		break;
	case CT_MARK_POP:
		if (!t || !t->depth) {
			st->unmatched_pops++;
			break;
		}
		t->depth--;
		r.type = PF_POP;
		r.len = 0;
		spool_put(st, &r, NULL);
		break;
	case CT_MARK_START: {
		if (st->nopen >= PF_MAX_OPEN) {
			st->lost_ranges++;
			break;
		}
		st->open = ct_xgrow(st->open, &st->capopen, st->nopen + 1, sizeof *st->open);
		struct pf_open *o = &st->open[st->nopen++];
		o->id = mk->aux;
		o->ts = mk->ts_ns;
		o->tid = mk->tid;
		o->len = (uint32_t)(len < PF_RANGE_NAME ? len : PF_RANGE_NAME);
		memcpy(o->name, mk->name, o->len);
		break;
	}
	case CT_MARK_STOP: {
		size_t i = 0;
		while (i < st->nopen && st->open[i].id != mk->aux)
			i++;
		if (i == st->nopen) {
			st->unmatched_ends++;
			break;
		}
		const struct pf_open *o = &st->open[i];
		struct pf_rec rr = {.type = PF_RANGE,
				    .ts = o->ts,
				    .ts2 = mk->ts_ns > o->ts ? mk->ts_ns : o->ts,
				    .tid = o->tid,
				    .tid2 = mk->tid,
				    .a = o->id,
				    .len = o->len};
		spool_put(st, &rr, o->name);
		st->open[i] = st->open[--st->nopen];
		break;
	}
	default:
		break;
	}
}

struct live_ctx {
	struct pf_state *st;
	uint64_t end;
	const struct ct_model *m;
};

static void finish_live(void *ctx, const struct ct_model *m, const struct ct_block *b)
{
	struct live_ctx *lc = ctx;
	(void)m;
	struct pf_slice s = {.start = b->ts,
			     .end = lc->end > b->ts ? lc->end : b->ts,
			     .ptr = b->ptr,
			     .size = b->size,
			     .stream = b->stream,
			     .tid = b->tid,
			     .end_tid = b->tid,
			     .site = b->site,
			     .kind = m->sites[b->site].kind,
			     .how = PF_LIVE};
	add_slice(lc->st, &s);
}

/* A framework block still handed out (at the exit point): live to the end, as above. */
static void finish_fw_live(void *ctx, const struct ct_fw_block *b)
{
	struct live_ctx *lc = ctx;
	if (b->state != CT_FW_BLOCK_ALLOCATED)
		return;
	struct ct_block blk = {.ptr = b->ptr, .size = b->size, .ts = b->ts, .site = b->site};
	finish_live(lc, lc->m, &blk);
}

static void ob_finish(void *ctx, struct ct_model *m)
{
	struct pf_state *st = ctx;
	uint64_t end = m->have_ts && m->last_ts > st->last_ts ? m->last_ts : st->last_ts;
	struct live_ctx lc = {st, end, m};
	ct_model_foreach_live(m, finish_live, &lc);
	ct_fw_foreach_block(m, finish_fw_live, &lc);
	for (uint32_t kd = 0; kd < PF_MAX_TRACKS + PF_FW_TRACKS; kd++) {
		struct pf_track *t = &st->tracks[kd];
		if (!t->used)
			continue;
		track_close(st, kd, t);
		track_sample(st, kd, t, track_next(st, t), t->cur);
	}
	/* ranges still open end with the trace */
	for (size_t i = 0; i < st->nthreads; i++)
		for (; st->threads[i].depth; st->threads[i].depth--) {
			struct pf_rec r = {.type = PF_POP, .ts = end, .tid = st->threads[i].tid};
			spool_put(st, &r, NULL);
		}
	for (size_t i = 0; i < st->nopen; i++) {
		const struct pf_open *o = &st->open[i];
		struct pf_rec r = {.type = PF_RANGE,
				   .ts = o->ts,
				   .ts2 = end > o->ts ? end : o->ts,
				   .tid = o->tid,
				   .tid2 = o->tid,
				   .a = o->id,
				   .b = 1,
				   .len = o->len};
		spool_put(st, &r, o->name);
	}
	st->nopen = 0;
}

static void ob_destroy(void *ctx)
{
	struct pf_state *st = ctx;
	if (st->spool.file)
		fclose(st->spool.file);
	free(st->spool.mem);
	free(st->heap);
	free(st->threads);
	ct_imap_free(&st->threadmap);
	free(st->open);
	free(st);
}

static void *perfetto_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	struct pf_state *st = ct_xcalloc(1, sizeof *st);
	st->width_ns = o->counter_us ? o->counter_us * 1000 : 1;
	st->cap = o->max_slices ? o->max_slices : CT_PERFETTO_SLICES;
	return st;
}

const struct ct_analysis ct_analysis_perfetto = {
	.name = "perfetto",
	.attach = perfetto_attach,
	.observe = {.alloc = ob_alloc, .release = ob_release, .event = ob_event, .mark = ob_mark,
		    .fw_release = ob_fw_release, .fw_bytes = ob_fw_bytes, .finish = ob_finish, .destroy = ob_destroy},
};

/* ---- rendering ------------------------------------------------------------------------- */

struct pf_out {
	FILE *f;
	int first;
	uint64_t origin; /* ts 0 */
	uint32_t pid;	 /* the pid written */
	size_t dump;	 /* index of the dump: part of every async id */
};

/* Start an event: separator, then {"ts":MICROSECONDS relative to the origin. */
static void ev_start(struct pf_out *w, uint64_t ts)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = 0;
	uint64_t d = ts >= w->origin ? ts - w->origin : w->origin - ts;
	fprintf(w->f, "{\"ts\":%s%" PRIu64 ".%03" PRIu64, ts >= w->origin ? "" : "-", d / 1000,
		d % 1000);
}

static void put_str(FILE *f, const char *s)
{
	ct_json_escape(f, s, strlen(s));
}

static void put_kv_str(FILE *f, const char *key, const char *s)
{
	fprintf(f, ",\"%s\":", key);
	put_str(f, s);
}

/* "prog arg1 arg2 (pid N)" */
static void proc_name(const struct ct_model *m, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < m->argc && len + 1 < cap && len < 200; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? " " : "", m->argv[i]);
	if (!m->argc && m->exe)
		len = (size_t)snprintf(buf, cap, "%s", m->exe);
	if (len >= cap)
		len = cap - 1;
	snprintf(buf + len, cap - len, "%s(pid %" PRIu32 ")", len ? " " : "", m->pid);
}

/*
 * "func (file:line)" of a stack's innermost Python frame when it has one
 * (what a Python program's author reads), else of its innermost frame.
 */
static void stack_label(struct ct_model *m, uint32_t id, char *buf, size_t cap)
{
	static struct ct_frame fr[CT_STACK_MAX];
	size_t n = id ? ct_frames_resolve(m, id, fr, CT_STACK_MAX) : 0, k = 0;
	while (k < n && !fr[k].python)
		k++;
	if (n)
		ct_frame_label(&fr[k < n ? k : 0], 1, buf, cap);
	else
		snprintf(buf, cap, id ? "(stack #%" PRIu32 " missing)" : "(no stack)", id);
}

/* The label of a site's stack, cached per site for the render. */
static const char *site_label(struct ct_model *m, char **cache, uint32_t site)
{
	if (site >= m->nsites)
		return "?";
	if (!cache[site]) {
		char buf[512];
		stack_label(m, m->sites[site].stack_id, buf, sizeof buf);
		cache[site] = ct_xstrdup(buf);
	}
	return cache[site];
}

static void put_hex(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ",\"%s\":\"0x%" PRIx64 "\"", key, v);
}

static void render_oom(struct pf_out *w, struct ct_model *m, const struct pf_rec *r)
{
	char b[32], name[96], site[512];
	snprintf(name, sizeof name, "OOM %s %s", ct_api_name(r->api), ct_fmt_bytes(r->a, b, sizeof b));
	stack_label(m, r->stack, site, sizeof site);
	ev_start(w, r->ts);
	fprintf(w->f, ",\"ph\":\"i\",\"s\":\"p\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		      ",\"cat\":\"oom\"",
		w->pid, r->tid);
	put_kv_str(w->f, "name", name);
	fprintf(w->f, ",\"args\":{\"api\":\"%s\",\"kind\":\"%s\",\"size\":%" PRIu64 ",\"device\":%d",
		ct_api_name(r->api), ct_kind_name(r->kind), r->a, r->device);
	put_hex(w->f, "stream", r->b);
	fprintf(w->f, ",\"result\":%d,\"stack_id\":%" PRIu32, CT_RESULT_OUT_OF_MEMORY, r->stack);
	put_kv_str(w->f, "site", site);
	fputs("}}", w->f);
}

static void render_spool(struct pf_out *w, struct ct_model *m, struct pf_state *st)
{
	struct pf_reader *rd = ct_xmalloc(sizeof *rd);
	struct pf_rec r;
	reader_start(rd, &st->spool);
	while (reader_next(rd, &r)) {
		switch (r.type) {
		case PF_COUNTER:
			if (r.tid >= PF_MAX_TRACKS && r.tid - PF_MAX_TRACKS < st->nfw) {
				/* the framework layer: "PyTorch allocated 0", "PyTorch reserved 0", "CuPy used 0" */
				uint8_t k = st->fw[r.tid - PF_MAX_TRACKS].kind;
				ev_start(w, r.ts);
				fprintf(w->f, ",\"ph\":\"C\",\"pid\":%" PRIu32 ",\"cat\":\"memory.%s\""
					      ",\"name\":\"%s %s %d\",\"args\":{\"bytes\":%" PRIu64 "}}",
					w->pid, k == CT_KIND_CUPY_BLOCK ? "cupy" : "pytorch",
					k == CT_KIND_CUPY_BLOCK ? "CuPy" : "PyTorch",
					k == CT_KIND_CUPY_BLOCK	      ? "used"
					: k == CT_KIND_TORCH_SEGMENT ? "reserved"
								     : "allocated",
					st->fw[r.tid - PF_MAX_TRACKS].device, r.a);
				break;
			}
			if (r.tid >= m->nkd)
				break;
			ev_start(w, r.ts);
			fprintf(w->f, ",\"ph\":\"C\",\"pid\":%" PRIu32 ",\"cat\":\"memory\""
				      ",\"name\":\"%s %d live\",\"args\":{\"bytes\":%" PRIu64 "}}",
				w->pid, ct_kind_name(m->kd[r.tid].kind), m->kd[r.tid].device, r.a);
			break;
		case PF_INSTANT:
			ev_start(w, r.ts);
			fprintf(w->f, ",\"ph\":\"i\",\"s\":\"t\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
				      ",\"cat\":\"mark\"",
				w->pid, r.tid);
			put_kv_str(w->f, "name", rd->name);
			fputc('}', w->f);
			break;
		case PF_PUSH:
			ev_start(w, r.ts);
			fprintf(w->f, ",\"ph\":\"B\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
				      ",\"cat\":\"nvtx\"",
				w->pid, r.tid);
			put_kv_str(w->f, "name", rd->name);
			fputc('}', w->f);
			break;
		case PF_POP:
			ev_start(w, r.ts);
			fprintf(w->f, ",\"ph\":\"E\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 "}", w->pid,
				r.tid);
			break;
		case PF_RANGE:
			for (int e = 0; e < 2; e++) {
				ev_start(w, e ? r.ts2 : r.ts);
				fprintf(w->f,
					",\"ph\":\"%c\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
					",\"cat\":\"nvtx\",\"id\":\"%zu:%" PRIu64 "\"",
					e ? 'e' : 'b', w->pid, e ? r.tid2 : r.tid, w->dump, r.a);
				put_kv_str(w->f, "name", rd->name);
				if (!e)
					fprintf(w->f, ",\"args\":{\"range_id\":%" PRIu64 ",\"ended\":\"%s\"}",
						r.a, r.b ? "open at the end of the trace" : "nvtxRangeEnd");
				fputc('}', w->f);
			}
			break;
		case PF_OOM:
			render_oom(w, m, &r);
			break;
		default:
			break;
		}
	}
	free(rd);
}

static int cmp_slice_start(const void *a, const void *b)
{
	const struct pf_slice *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return (x->ptr > y->ptr) - (x->ptr < y->ptr);
}

struct lane {
	uint64_t end;
	uint32_t id;
};

static void lane_down(struct lane *h, size_t n, size_t i)
{
	struct lane x = h[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].end < h[c].end)
			c++;
		if (h[c].end >= x.end)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/*
 * Lanes (async ids) for one kind's slices, sorted by start: a slice reuses
 * the lane whose last slice ended first, if that ended strictly before it
 * starts (an "e" and a "b" at one time on one track could be read in either
 * order); otherwise it opens a new lane. The lanes are as few as the most
 * slices alive at once.
 */
static void assign_lanes(struct pf_slice *v, size_t n)
{
	struct lane *h = ct_xcalloc(n ? n : 1, sizeof *h);
	size_t nh = 0;
	uint32_t lanes = 0;
	for (size_t i = 0; i < n; i++) {
		if (nh && h[0].end < v[i].start) {
			v[i].lane = h[0].id;
			h[0].end = v[i].end;
			lane_down(h, nh, 0);
			continue;
		}
		v[i].lane = lanes++;
		size_t j = nh++;
		struct lane x = {v[i].end, v[i].lane};
		while (j && x.end < h[(j - 1) / 2].end) {
			h[j] = h[(j - 1) / 2];
			j = (j - 1) / 2;
		}
		h[j] = x;
	}
	free(h);
}

static void slice_end_text(const struct pf_slice *s, const struct ct_model *m, char *buf,
			   size_t cap)
{
	switch (s->how) {
	case PF_FREED:
		snprintf(buf, cap, "freed by %s", ct_api_name(s->end_api));
		break;
	case PF_UNSEEN:
		snprintf(buf, cap, "address allocated again (free not seen)");
		break;
	case PF_CHECKPOINT:
		snprintf(buf, cap, "live at %s", ct_api_name(s->end_api));
		break;
	default:
		snprintf(buf, cap, "%s", m->end_seen ? "live at exit" : "live at the end of the dump");
		break;
	}
}

static void render_slices(struct pf_out *w, struct ct_model *m, struct pf_state *st)
{
	size_t n = st->nheap;
	struct pf_slice *v = ct_xcalloc(n ? n : 1, sizeof *v);
	if (n)
		memcpy(v, st->heap, n * sizeof *v);
	/* by kind, then by start; each kind's slices get lanes of their own */
	if (n)
		qsort(v, n, sizeof *v, cmp_slice_start);
	for (size_t from = 0, to; from < n; from = to) {
		for (to = from + 1; to < n && v[to].kind == v[from].kind;)
			to++;
		assign_lanes(v + from, to - from);
	}
	char **labels = ct_xcalloc(m->nsites ? m->nsites : 1, sizeof *labels);
	for (size_t i = 0; i < n; i++) {
		const struct pf_slice *s = &v[i];
		const struct ct_site *site = s->site < m->nsites ? &m->sites[s->site] : NULL;
		const char *api = ct_api_name(site ? site->api : CT_API_COUNT);
		const char *kind = ct_kind_name(s->kind);
		char b[32], name[96], ended[96];
		snprintf(name, sizeof name, "%s %s", api, ct_fmt_bytes(s->size, b, sizeof b));
		slice_end_text(s, m, ended, sizeof ended);
		for (int e = 0; e < 2; e++) {
			ev_start(w, e ? s->end : s->start);
			fprintf(w->f,
				",\"ph\":\"%c\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
				",\"cat\":\"alloc.%s\",\"id\":\"%zu:%" PRIu32 "\",\"name\":\"%s\"",
				e ? 'e' : 'b', w->pid, e ? s->end_tid : s->tid, kind, w->dump, s->lane,
				name);
			if (!e) {
				fprintf(w->f, ",\"args\":{\"ptr\":\"0x%" PRIx64 "\",\"size\":%" PRIu64,
					s->ptr, s->size);
				put_hex(w->f, "stream", s->stream);
				fprintf(w->f, ",\"device\":%d,\"stack_id\":%" PRIu32, site ? site->device : -1,
					site ? site->stack_id : 0);
				put_kv_str(w->f, "site", site_label(m, labels, s->site));
				put_kv_str(w->f, "end", ended);
				fputc('}', w->f);
			}
			fputc('}', w->f);
		}
	}
	for (size_t i = 0; i < m->nsites; i++)
		free(labels[i]);
	free(labels);
	free(v);
}

static void render_meta(struct pf_out *w, const struct ct_model *m, const struct pf_state *st)
{
	char name[512];
	proc_name(m, name, sizeof name);
	ev_start(w, w->origin);
	fprintf(w->f, ",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		      ",\"name\":\"process_name\",\"args\":{\"name\":",
		w->pid, m->pid);
	put_str(w->f, name);
	fputs("}}", w->f);
	for (size_t i = 0; st && i < st->nthreads; i++) {
		uint32_t tid = st->threads[i].tid;
		ev_start(w, w->origin);
		fprintf(w->f, ",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
			      ",\"name\":\"thread_name\",\"args\":{\"name\":",
			w->pid, tid);
		if (tid == m->pid)
			fputs("\"main\"}}", w->f);
		else
			fprintf(w->f, "\"thread %" PRIu32 "\"}}", tid);
	}
}

static void render_perfetto(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			    size_t n)
{
	struct pf_out w = {.f = f, .first = 1, .origin = UINT64_MAX};
	for (size_t d = 0; d < n; d++)
		if (ms[d]->have_ts || ms[d]->have_process) {
			uint64_t s = ct_model_start_ns(ms[d]);
			if (s < w.origin)
				w.origin = s;
		}
	if (w.origin == UINT64_MAX)
		w.origin = 0;
	struct pf_state total = {0};
	uint64_t width = 0;
	size_t cap = 0;
	fputs("{\"traceEvents\":[", f);
	for (size_t d = 0; d < n; d++) {
		struct ct_model *m = ms[d];
		struct pf_state *st = ct_model_state(m, &ct_analysis_perfetto);
		w.dump = d;
		w.pid = m->pid;
		for (size_t e = 0; e < d; e++)
			if (ms[e]->pid == m->pid)
				w.pid += PF_PID_STRIDE; /* a pid already used by an earlier dump */
		render_meta(&w, m, st);
		if (!st)
			continue;
		render_spool(&w, m, st);
		render_slices(&w, m, st);
		width = st->width_ns;
		cap = st->cap;
		total.slices += st->slices;
		total.dropped += st->dropped;
		total.dropped_bytes = ct_sat_add(total.dropped_bytes, st->dropped_bytes);
		total.samples += st->samples;
		total.unmatched_pops += st->unmatched_pops;
		total.unmatched_ends += st->unmatched_ends;
		total.lost_ranges += st->lost_ranges;
		total.untracked += st->untracked;
		total.untracked_threads += st->untracked_threads;
	}
	fputs("\n],\n\"otherData\":{", f);
	fprintf(f, "\"exporter\":\"cumtrace-report %s\"", o->tool_version ? o->tool_version : "?");
	fprintf(f, ",\"counter_interval_ns\":%" PRIu64 ",\"counter_samples\":%" PRIu64, width,
		total.samples);
	fprintf(f, ",\"slices_max\":%zu,\"slices_total\":%" PRIu64 ",\"slices_dropped\":%" PRIu64
		   ",\"slices_dropped_bytes\":%" PRIu64,
		cap, total.slices, total.dropped, total.dropped_bytes);
	fprintf(f, ",\"unmatched_range_pops\":%" PRIu64 ",\"unmatched_range_ends\":%" PRIu64
		   ",\"ranges_not_tracked\":%" PRIu64 ",\"counter_updates_not_tracked\":%" PRIu64
		   ",\"events_of_untracked_threads\":%" PRIu64,
		total.unmatched_pops, total.unmatched_ends, total.lost_ranges, total.untracked,
		total.untracked_threads);
	fputs("}}\n", f);
}

const struct ct_report ct_report_perfetto = {
	.uses = CT_USES(&ct_analysis_perfetto),
	.render = render_perfetto,
};
