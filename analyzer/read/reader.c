#include "read/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "base/util.h"
#include "cumtrace/packed.h"
#include "read/pipe.h"
#include "read/zprefetch.h"

#define DEFAULT_CHUNK (1u << 20)
#define DEFAULT_MAX_PENDING ((size_t)1 << 20)
#define MAX_PENDING_LIMIT ((size_t)2 << 20) /* at most 96 B each: 192 MiB */

struct pending {
	struct ct_rec_event ev;
	uint64_t seq;	     /* file order */
	uint32_t pystack_id; /* from the CT_EVENT_F_PYSTACK trailer, 0 = none */
};

struct src {
	int fd; /* -1: memory */
	const unsigned char *mem;
	size_t mem_len, mem_pos;
};

struct rd {
	struct src src;
	unsigned char *buf;
	size_t cap, start, end;
	uint64_t buf_off; /* file offset of buf[0] */
	int eof;
	size_t chunk, max_pending;
	int explicit_pending; /* max_pending given by the caller */
	/* The reorder window (see "the reorder window" below). */
	struct tq *tq;	    /* one queue per thread id, at most MAX_QUEUES */
	size_t ntq, tq_cap, last_tq;
	uint32_t *tq_map;   /* open addressing: tid -> queue index + 1 */
	size_t tq_map_cap;  /* a power of two, or 0 */
	struct mkey *mheap; /* the non-empty queues, a min-heap by their first event */
	size_t mheap_n, mheap_cap;
	struct pblock *spare; /* emptied blocks kept for reuse (block_done) */
	size_t nspare;
	unsigned char **slabs; /* the mapped slabs (slab_block) */
	size_t nslabs, slabs_cap;
	unsigned char *slab_at; /* the last slab's bytes not yet carved */
	size_t slab_left;
	int slab_off; /* a mapping was refused: blocks come from malloc */
	struct pending *heap; /* events out of their thread's order: a min-heap */
	size_t heap_n, heap_cap;
	size_t pending_n; /* events held in all */
	uint64_t seq;
	uint64_t prev_snapshot;
	int have_prev;
	uint64_t last_released_ts;
	int released_any;
	const struct ct_reader_cb *cb;
	struct ct_read_result *res;
	uint64_t *scratch; /* CT_REC_MAX bytes, aligned: CT_REC_SYMBOLS */
	/* CT_REC_ZSTD: made at the first one, CT_ZSTD_RAW_MAX bytes */
	ZSTD_DCtx *dctx;
	unsigned char *zbuf;
	struct ct_zpre *zpre; /* decompresses the next CT_REC_ZSTD meanwhile */
	int zpre_off;	      /* none: out of memory, or the caller said so */
	int peeking;	      /* fill() for a prefetch: a read error is not yet one */
	int in_zstd;	   /* dispatching the records of a CT_REC_ZSTD */
	uint64_t zstd_pos; /* ... this one, at this offset of its decompressed run */
	const struct ct_read_opts *opts; /* progress callback, record budget, or NULL */
	uint64_t record_bytes;		 /* bytes of records read, decompressed ones included */
	uint64_t total;			 /* size of the input, 0 unknown */
};

__attribute__((format(printf, 3, 4))) static void set_error(struct rd *r, uint64_t off,
							     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->res->error, sizeof r->res->error, fmt, ap);
	va_end(ap);
	r->res->status = CT_READ_ERROR;
	r->res->error_offset = off;
}

/*
 * A corrupt record at file offset off: "corrupt record at offset OFF: ...",
 * or, for a record inside a CT_REC_ZSTD (off is then the CT_REC_ZSTD's),
 * "corrupt record at offset OFF (decompressed byte POS): ...".
 */
__attribute__((format(printf, 3, 4))) static void corrupt(struct rd *r, uint64_t off,
							   const char *fmt, ...)
{
	char what[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (r->in_zstd)
		set_error(r, off, "corrupt record at offset %llu (decompressed byte %llu): %s",
			  (unsigned long long)off, (unsigned long long)r->zstd_pos, what);
	else
		set_error(r, off, "corrupt record at offset %llu: %s", (unsigned long long)off, what);
	r->res->error_in_zstd = r->in_zstd;
	r->res->error_zstd_pos = r->in_zstd ? r->zstd_pos : 0;
}

static ssize_t src_read(struct src *s, void *buf, size_t n)
{
	if (s->fd < 0) {
		size_t left = s->mem_len - s->mem_pos;
		if (n > left)
			n = left;
		if (n)
			memcpy(buf, s->mem + s->mem_pos, n);
		s->mem_pos += n;
		return (ssize_t)n;
	}
	for (;;) {
		ssize_t k = read(s->fd, buf, n);
		if (k >= 0 || errno != EINTR)
			return k;
	}
}

/* Make at least need bytes available at buf[start], unless the file ends. */
static int fill(struct rd *r, size_t need)
{
	if (r->end - r->start >= need)
		return 0;
	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->buf_off += r->start;
		r->end -= r->start;
		r->start = 0;
	}
	while (r->end < need && !r->eof) {
		size_t want = r->cap - r->end;
		if (want > r->chunk)
			want = r->chunk;
		ssize_t k = src_read(&r->src, r->buf + r->end, want);
		if (k < 0) {
			if (r->peeking)
				return -1; /* the reader meets it again when it gets there */
			set_error(r, r->buf_off + r->end, "read error at offset %llu: %s",
				  (unsigned long long)(r->buf_off + r->end), strerror(errno));
			return -1;
		}
		if (k == 0)
			r->eof = 1;
		r->end += (size_t)k;
		r->res->file_bytes += (uint64_t)k;
		if (r->opts && r->opts->progress)
			r->opts->progress(r->opts->progress_ctx, r->res->file_bytes, r->total,
					  r->res->events);
	}
	return 0;
}

/*
 * ---- the reorder window ------------------------------------------------------
 *
 * Events wait here until they are released in (ts_ns, tid, file order)
 * order. One thread's events come in that order already (each call is
 * stamped after the thread's previous one), so each thread id has a FIFO
 * queue and a small heap over the queues' first events merges them: a
 * release costs O(log threads). An event that would break its queue's order
 * (a corrupt dump, a counter that stepped back), and the events of thread ids
 * past MAX_QUEUES, wait in a heap of their own; a release takes the smaller of
 * the two minima, so the order is exactly that of one heap over all events.
 */
#define MAX_QUEUES 65536
/* The heap of out-of-order events gives memory back above this many. */
#define KEEP_QUEUE 1024
/* A block of packed events: data[head, tail) not yet taken. */
struct pblock {
	struct pblock *next;
	uint32_t cap, head, tail;
	uint32_t in_slab; /* carved from a slab (slab_block), not malloc's */
	unsigned char data[];
};

/* A queue's blocks: the first PBLOCK_MIN bytes, each next one twice its
 * predecessor's, at most PBLOCK_MAX (a block of PBLOCK_BYTES with its
 * header). An emptied queue keeps its one block while there are at most
 * KEEP_QUEUE queues. */
#define PBLOCK_MIN ((uint32_t)512)
#define PBLOCK_BYTES ((uint32_t)64 << 10)
#define PBLOCK_MAX (PBLOCK_BYTES - (uint32_t)sizeof(struct pblock))

/*
 * A thread's queue holds its first event decoded (first) and the others
 * packed, each relative to the one before it, in a list of blocks (taken
 * from the front, filled at the back, a block given back when emptied: the
 * queue holds its packed bytes and at most two partly used blocks). The
 * window holds the events of a writer round and more, and a packed event
 * takes about a sixth of the 96 bytes of struct pending (docs/bench.md).
 * enc_prev is the last event pushed, the reference of the next packing;
 * unpacking walks the same chain from first.
 */
struct tq {
	uint32_t tid;
	size_t n; /* events held: first and n - 1 packed */
	struct pending first, enc_prev;
	struct pblock *front, *back;
};

/* A non-empty queue in the merge heap, with its first event's order key. */
struct mkey {
	uint64_t ts, seq;
	uint32_t tid, q;
};

/* The release order: (time, thread id, file order). */
static int order_less(uint64_t ts_a, uint32_t tid_a, uint64_t seq_a, uint64_t ts_b, uint32_t tid_b,
		      uint64_t seq_b)
{
	if (ts_a != ts_b)
		return ts_a < ts_b;
	return tid_a != tid_b ? tid_a < tid_b : seq_a < seq_b;
}

static int pend_less(const struct pending *a, const struct pending *b)
{
	return order_less(a->ev.ts_ns, a->ev.tid, a->seq, b->ev.ts_ns, b->ev.tid, b->seq);
}

static void heap_push(struct rd *r, const struct pending *p)
{
	r->heap = ct_xgrow(r->heap, &r->heap_cap, r->heap_n + 1, sizeof *r->heap);
	size_t i = r->heap_n++;
	while (i) {
		size_t parent = (i - 1) / 2;
		if (!pend_less(p, &r->heap[parent]))
			break;
		r->heap[i] = r->heap[parent];
		i = parent;
	}
	r->heap[i] = *p;
}

static void heap_pop(struct rd *r, struct pending *out)
{
	*out = r->heap[0];
	struct pending last = r->heap[--r->heap_n];
	size_t n = r->heap_n, i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && pend_less(&r->heap[c + 1], &r->heap[c]))
			c++;
		if (!pend_less(&r->heap[c], &last))
			break;
		r->heap[i] = r->heap[c];
		i = c;
	}
	if (n)
		r->heap[i] = last;
	/* give back what a burst of out-of-order events took */
	if (r->heap_cap > KEEP_QUEUE && n < r->heap_cap / 4) {
		r->heap_cap /= 2;
		r->heap = ct_xrealloc(r->heap, r->heap_cap * sizeof *r->heap);
	}
}

/*
 * ---- packed events -------------------------------------------------------------
 *
 * A queue packs each event after the one pushed before it, in the form of
 * include/cumtrace/packed.h with the file-order step (the event is not
 * before prev in the release order, so neither step goes back). A
 * CT_REC_EVENTS run of the dump holds the same form without that step: an
 * event of a run pushed right after the run's event before it is copied
 * into its queue as it is, the step put in (see pending_push).
 */

/*
 * Inlined where called: with end NULL (the window's own bytes, packed by
 * this reader) the compiler drops the bounds checks.
 */
#define PK_INLINE static inline __attribute__((always_inline))

/* A LEB128 number within [i, end) (end NULL: unchecked); NULL when it runs past end. */
PK_INLINE const unsigned char *get_u(const unsigned char *i, const unsigned char *end, uint64_t *v)
{
	if ((!end || i < end) && *i < 0x80) { /* most numbers: one byte */
		*v = *i;
		return i + 1;
	}
	uint64_t x = 0;
	for (unsigned shift = 0; !end || i < end; shift += 7) {
		unsigned char b = *i++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80) || shift >= 63) {
			*v = x;
			return i;
		}
	}
	return NULL;
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

#define GET_(dst)                                  \
	do {                                       \
		if (!(i = get_u(i, end, &v)))      \
			return NULL;               \
		dst;                               \
	} while (0)
#define BYTE_(dst)                                 \
	do {                                       \
		if (end && i >= end)               \
			return NULL;               \
		dst = *i++;                        \
	} while (0)

/* The fields of a packed event whose mask is mask, at i (see unpack). */
PK_INLINE const unsigned char *unpack_fields(const unsigned char *i, const unsigned char *end,
					  struct pending *p, unsigned mask)
{
	struct ct_rec_event *e = &p->ev;
	uint64_t v = 0;
	if (mask & CT_PK_DUR)
		GET_(e->dur_ns = v);
	if (mask & CT_PK_PTR)
		GET_(e->ptr += (uint64_t)unzigzag(v));
	if (mask & CT_PK_SIZE)
		GET_(e->size = v);
	if (mask & CT_PK_STREAM)
		GET_(e->stream = v);
	if (mask & CT_PK_AUX)
		GET_(e->aux = v);
	if (mask & CT_PK_STACK)
		GET_(e->stack_id = (uint32_t)v);
	if (mask & CT_PK_CALL) {
		GET_(e->api = (uint16_t)v);
		BYTE_(e->op);
		BYTE_(e->kind);
		BYTE_(e->layer);
	}
	if (mask & CT_PK_REST) {
		GET_(e->rec.type = (uint16_t)v);
		GET_(e->rec.flags = (uint16_t)v);
		GET_(e->rec.size = (uint32_t)v);
		GET_(e->flags = (uint32_t)v);
		GET_(e->result = (int32_t)(uint32_t)v);
		GET_(e->device = (int16_t)(uint16_t)v);
		BYTE_(e->reserved);
		GET_(p->pystack_id = (uint32_t)v);
	}
	return i;
}

/*
 * Unpack the event packed at i (within [i, end)) after *p, in place of *p;
 * with_seq: the window's form. Returns the end, NULL when the event runs
 * past end (*p is then partly changed); *fields: where its fields start,
 * after the steps.
 */
PK_INLINE const unsigned char *unpack(const unsigned char *i, const unsigned char *end,
				   struct pending *p, int with_seq, const unsigned char **fields)
{
	uint64_t v = 0;
	if (end && i >= end)
		return NULL;
	unsigned mask = *i++;
	GET_(p->ev.ts_ns += v);
	if (with_seq)
		GET_(p->seq += v);
	*fields = i;
	return unpack_fields(i, end, p, mask);
}
#undef GET_
#undef BYTE_

/*
 * Room for one packed event in a queue: what ct_pk_event writes (CT_PK_MAX),
 * or an event of a CT_REC_EVENTS run copied in as it is, which may spend up
 * to 10 bytes on each of its 15 numbers: 15 * 10 + 4 bytes + the step.
 */
#define ROOM_MAX 160

/*
 * Blocks of PBLOCK_MAX bytes are carved from slabs of SLAB_BYTES, mapped at
 * a SLAB_BYTES boundary and marked for transparent huge pages: the window of
 * the 4M-event benchmark fills 12 MiB of blocks, and with 4 KiB pages their
 * first touches were 2,800 page faults, 5% of the leaks report's time on the
 * development VM; a huge page takes one fault. (Where the kernel gives no
 * huge page the slab faults page by page, as malloc's memory did.) A slab
 * block, once emptied, waits in r->spare: a slab is mapped only while none
 * waits, so the slabs hold at most the most the window held at once, and one
 * slab more. They are unmapped when the read ends.
 */
#define SLAB_BYTES ((size_t)2 << 20)

/* SLAB_BYTES mapped at a SLAB_BYTES boundary; NULL when refused. */
static unsigned char *slab_map(void)
{
	size_t len = 2 * SLAB_BYTES; /* holds an aligned range: the ends are given back */
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	unsigned char *s = p + (-(uintptr_t)p & (SLAB_BYTES - 1));
	if (s > p)
		munmap(p, (size_t)(s - p));
	munmap(s + SLAB_BYTES, (size_t)(p + len - (s + SLAB_BYTES)));
#ifdef MADV_HUGEPAGE
	(void)madvise(s, SLAB_BYTES, MADV_HUGEPAGE); /* a hint: refused, pages stay small */
#endif
	return s;
}

/* A block of PBLOCK_MAX bytes from the slabs; NULL when no slab can be mapped. */
static struct pblock *slab_block(struct rd *r)
{
	if (r->slab_left < PBLOCK_BYTES) {
		unsigned char *s = r->slab_off ? NULL : slab_map();
		if (!s) {
			r->slab_off = 1;
			return NULL;
		}
		r->slabs = ct_xgrow(r->slabs, &r->slabs_cap, r->nslabs + 1, sizeof *r->slabs);
		r->slabs[r->nslabs++] = s;
		r->slab_at = s;
		r->slab_left = SLAB_BYTES;
	}
	struct pblock *b = (struct pblock *)(void *)r->slab_at;
	r->slab_at += PBLOCK_BYTES;
	r->slab_left -= PBLOCK_BYTES;
	b->in_slab = 1;
	return b;
}

/* A new back block for t (tq_room's slow path). */
static __attribute__((noinline)) struct pblock *tq_grow(struct rd *r, struct tq *t)
{
	struct pblock *b = t->back;
	{
		uint32_t cap = b ? b->cap * 2 : PBLOCK_MIN;
		if (cap > PBLOCK_MAX)
			cap = PBLOCK_MAX;
		struct pblock *nb = r->spare;
		if (cap == PBLOCK_MAX && nb) {
			r->spare = nb->next;
			r->nspare -= !nb->in_slab;
		} else if (cap != PBLOCK_MAX || !(nb = slab_block(r))) {
			nb = ct_xmalloc(sizeof *nb + cap);
			nb->in_slab = 0;
		}
		nb->next = NULL;
		nb->cap = cap;
		nb->head = nb->tail = 0;
		if (b)
			b->next = nb;
		else
			t->front = nb;
		t->back = b = nb;
	}
	return b;
}

/* Where the next packed event goes: ROOM_MAX bytes at the back block's tail. */
static inline unsigned char *tq_room(struct rd *r, struct tq *t)
{
	struct pblock *b = t->back;
	if (!b || b->cap - b->tail < ROOM_MAX)
		b = tq_grow(r, t);
	return b->data + b->tail;
}

/*
 * An emptied block: kept for the next queue that needs one of PBLOCK_MAX
 * bytes (a slab's always; of malloc's, up to SPARE_BLOCKS: a block given
 * back to malloc and taken again costs its pages' faults each time), else
 * given back.
 */
#define SPARE_BLOCKS 4
static void block_done(struct rd *r, struct pblock *b)
{
	if (b->in_slab || (b->cap == PBLOCK_MAX && r->nspare < SPARE_BLOCKS)) {
		b->next = r->spare;
		r->spare = b;
		r->nspare += !b->in_slab;
	} else {
		free(b);
	}
}

/* Give back a queue's blocks (block_done). */
static void tq_free_blocks(struct rd *r, struct tq *t)
{
	for (struct pblock *b = t->front, *next; b; b = next) {
		next = b->next;
		block_done(r, b);
	}
	t->front = t->back = NULL;
}

static int mkey_less(const struct mkey *a, const struct mkey *b)
{
	return order_less(a->ts, a->tid, a->seq, b->ts, b->tid, b->seq);
}

static void mkey_set(struct mkey *k, const struct pending *p, uint32_t q)
{
	k->ts = p->ev.ts_ns;
	k->seq = p->seq;
	k->tid = p->ev.tid;
	k->q = q;
}

static void mheap_up(struct rd *r, size_t i)
{
	struct mkey k = r->mheap[i];
	while (i && mkey_less(&k, &r->mheap[(i - 1) / 2])) {
		r->mheap[i] = r->mheap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	r->mheap[i] = k;
}

static void mheap_down(struct rd *r, size_t i)
{
	struct mkey k = r->mheap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= r->mheap_n)
			break;
		if (c + 1 < r->mheap_n && mkey_less(&r->mheap[c + 1], &r->mheap[c]))
			c++;
		if (!mkey_less(&r->mheap[c], &k))
			break;
		r->mheap[i] = r->mheap[c];
		i = c;
	}
	r->mheap[i] = k;
}

/* The queue of thread tid, made on first sight; NULL past MAX_QUEUES. */
static struct tq *tq_of(struct rd *r, uint32_t tid)
{
	if (r->ntq && r->tq[r->last_tq].tid == tid) /* a thread's events come in runs */
		return &r->tq[r->last_tq];
	if (r->ntq * 2 >= r->tq_map_cap) {
		if (r->ntq == MAX_QUEUES)
			goto lookup_only;
		size_t cap = r->tq_map_cap ? r->tq_map_cap * 2 : 64;
		uint32_t *map = ct_xcalloc(cap, sizeof *map);
		for (size_t i = 0; i < r->ntq; i++) {
			size_t h = ct_mix64(r->tq[i].tid) & (cap - 1);
			while (map[h])
				h = (h + 1) & (cap - 1);
			map[h] = (uint32_t)i + 1;
		}
		free(r->tq_map);
		r->tq_map = map;
		r->tq_map_cap = cap;
	}
lookup_only:;
	size_t h = ct_mix64(tid) & (r->tq_map_cap - 1);
	for (; r->tq_map[h]; h = (h + 1) & (r->tq_map_cap - 1))
		if (r->tq[r->tq_map[h] - 1].tid == tid) {
			r->last_tq = r->tq_map[h] - 1;
			return &r->tq[r->last_tq];
		}
	if (r->ntq == MAX_QUEUES)
		return NULL;
	r->tq = ct_xgrow(r->tq, &r->tq_cap, r->ntq + 1, sizeof *r->tq);
	r->mheap = ct_xgrow(r->mheap, &r->mheap_cap, r->ntq + 1, sizeof *r->mheap);
	struct tq *t = &r->tq[r->ntq];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	r->last_tq = r->ntq;
	r->tq_map[h] = (uint32_t)++r->ntq;
	return t;
}

/*
 * Push p into the window: into its thread's queue, packed after the event
 * pushed there before it, when it does not go before that one; else into
 * the heap. Returns 1 when p went into its queue.
 */
static int pending_push(struct rd *r, const struct pending *p)
{
	struct tq *t = tq_of(r, p->ev.tid);
	int queued = 1;
	if (t && t->n == 0) {
		t->first = *p;
		t->enc_prev = *p;
		t->n = 1;
		mkey_set(&r->mheap[r->mheap_n], p, (uint32_t)(t - r->tq));
		mheap_up(r, r->mheap_n++);
	} else if (t && !pend_less(p, &t->enc_prev)) {
		unsigned char *at = tq_room(r, t);
		t->back->tail += (uint32_t)(ct_pk_event(at, &t->enc_prev.ev, t->enc_prev.pystack_id,
							&p->ev, p->pystack_id, 1,
							p->seq - t->enc_prev.seq) -
					    at);
		t->enc_prev = *p;
		t->n++;
	} else {
		heap_push(r, p);
		queued = 0;
	}
	r->pending_n++;
	if (r->pending_n > r->res->max_pending_seen)
		r->res->max_pending_seen = r->pending_n;
	return queued;
}

/* The smallest held event: from a queue (*from_queue = 1) or the heap. */
static const struct pending *pending_min(const struct rd *r, int *from_queue)
{
	const struct pending *a = r->mheap_n ? &r->tq[r->mheap[0].q].first : NULL;
	const struct pending *b = r->heap_n ? &r->heap[0] : NULL;
	*from_queue = a && (!b || pend_less(a, b));
	return *from_queue ? a : b;
}

/* How far behind the newest writer round the reorder window reaches. */
#define CT_REORDER_SLACK_NS (100u * 1000u * 1000u)

/* Hand event p, the oldest not yet handed out, to the callbacks. */
static void deliver(struct rd *r, struct pending *p)
{
	r->last_released_ts = p->ev.ts_ns;
	r->released_any = 1;
	if (p->pystack_id && r->cb->pycombine)
		p->ev.stack_id = r->cb->pycombine(r->cb->ctx, p->ev.stack_id, p->pystack_id);
	if (r->cb->event)
		r->cb->event(r->cb->ctx, &p->ev);
}

/* Hand the smallest held event to the callbacks and take it out of the window. */
static void release_one(struct rd *r)
{
	int from_queue;
	pending_min(r, &from_queue);
	r->pending_n--;
	if (!from_queue) {
		struct pending p;
		heap_pop(r, &p);
		deliver(r, &p);
		return;
	}
	struct tq *t = &r->tq[r->mheap[0].q];
	/* handed out where it is (no copy): the next one unpacks after it as it was pushed */
	uint32_t stack_id = t->first.ev.stack_id;
	deliver(r, &t->first);
	t->first.ev.stack_id = stack_id;
	if (--t->n == 0) {
		/* every packed byte is taken: one block left, empty */
		if (r->ntq > KEEP_QUEUE)
			tq_free_blocks(r, t);
		else if (t->front)
			t->front->head = t->front->tail = 0;
		r->mheap[0] = r->mheap[--r->mheap_n];
	} else {
		struct pblock *b = t->front;
		const unsigned char *fields;
		b->head += (uint32_t)(unpack(b->data + b->head, NULL, &t->first, 1, &fields) -
				      (b->data + b->head));
		/* an emptied block: the next one is the front, or the last one starts over
		 * (a packed event is always in the front block) */
		if (b->head == b->tail) {
			if (b->next) {
				t->front = b->next;
				block_done(r, b);
			} else {
				b->head = b->tail = 0;
			}
		}
		mkey_set(&r->mheap[0], &t->first, r->mheap[0].q);
	}
	if (r->mheap_n > 1)
		mheap_down(r, 0);
}

static void release_upto(struct rd *r, uint64_t ts)
{
	int from_queue;
	while (r->pending_n && pending_min(r, &from_queue)->ev.ts_ns <= ts)
		release_one(r);
}

static void release_all(struct rd *r)
{
	while (r->pending_n)
		release_one(r);
}

static void pending_free(struct rd *r)
{
	for (size_t i = 0; i < r->ntq; i++)
		tq_free_blocks(r, &r->tq[i]);
	for (struct pblock *b = r->spare, *next; b; b = next) {
		next = b->next;
		if (!b->in_slab)
			free(b);
	}
	r->spare = NULL;
	r->nspare = 0;
	for (size_t i = 0; i < r->nslabs; i++)
		munmap(r->slabs[i], SLAB_BYTES);
	free(r->slabs);
	r->slabs = NULL;
	r->nslabs = r->slabs_cap = 0;
	r->slab_at = NULL;
	r->slab_left = 0;
	free(r->tq);
	free(r->tq_map);
	free(r->mheap);
	free(r->heap);
	r->tq = NULL;
	r->tq_map = NULL;
	r->mheap = NULL;
	r->heap = NULL;
}

/* ---- records ------------------------------------------------------------------ */

/*
 * One writer round holds at most what the rings hold, and the window holds a
 * round and the next one's events until the next CT_REC_BATCH releases them:
 * size it from setting.buffer_mb (events are 80 bytes in a ring), two rounds'
 * worth, within limits. (One round's worth made a capture that keeps the
 * rings full, such as the 4M-event benchmark, release early at the cap: 14%
 * of the leaks report's time there.)
 */
static void size_pending(struct rd *r, const char *strings, size_t len)
{
	size_t pos = 0, kl, vl;
	const char *k, *v;
	while (ct_process_next_kv(strings, len, &pos, &k, &kl, &v, &vl)) {
		if (kl != 17 || memcmp(k, "setting.buffer_mb", 17) || !vl || vl > 9)
			continue;
		size_t mb = 0;
		for (size_t i = 0; i < vl; i++) {
			if (v[i] < '0' || v[i] > '9')
				return;
			mb = mb * 10 + (size_t)(v[i] - '0');
		}
		size_t want = 2 * mb * ((1u << 20) / sizeof(struct ct_rec_event)) + 4096;
		if (want > MAX_PENDING_LIMIT)
			want = MAX_PENDING_LIMIT;
		if (want > r->max_pending)
			r->max_pending = want;
	}
}

/*
 * CT_REC_SYMBOLS: check the layout (format.h) completely, then hand out
 * aligned copies of its arrays.
 */
static int read_symbols(struct rd *r, const unsigned char *p, uint32_t size, uint64_t off)
{
	struct ct_rec_symbols h;
	memcpy(&h, p, sizeof h);
	uint64_t need = (uint64_t)sizeof h + (uint64_t)h.naddrs * sizeof(struct ct_sym_addr) +
			(uint64_t)h.nframes * sizeof(struct ct_sym_frame) + h.strings_len;
	if (need > size) {
		set_error(r, off,
			  "corrupt record at offset %llu: symbols (%u addresses, %u frames, %u bytes of strings) overflow a record of %u bytes",
			  (unsigned long long)off, h.naddrs, h.nframes, h.strings_len, size);
		return -1;
	}
	if (!r->scratch)
		r->scratch = ct_xmalloc(CT_REC_MAX);
	memcpy(r->scratch, p, (size_t)need);
	const struct ct_sym_addr *addrs = (const void *)((const char *)r->scratch + sizeof h);
	const struct ct_sym_frame *frames = (const void *)(addrs + h.naddrs);
	const char *strings = (const char *)(frames + h.nframes);
	if (h.strings_len && strings[h.strings_len - 1]) {
		set_error(r, off, "corrupt record at offset %llu: symbol strings do not end with a NUL",
			  (unsigned long long)off);
		return -1;
	}
	uint64_t sum = 0;
	for (uint32_t i = 0; i < h.naddrs; i++) {
		if (addrs[i].nframes < 1 || addrs[i].nframes > CT_SYM_FRAMES_MAX) {
			set_error(r, off,
				  "corrupt record at offset %llu: symbol address %u has %u frames (1..%u)",
				  (unsigned long long)off, i, addrs[i].nframes, CT_SYM_FRAMES_MAX);
			return -1;
		}
		sum += addrs[i].nframes;
	}
	if (sum != h.nframes) {
		set_error(r, off,
			  "corrupt record at offset %llu: symbol addresses use %llu frames, record has %u",
			  (unsigned long long)off, (unsigned long long)sum, h.nframes);
		return -1;
	}
	for (uint32_t i = 0; i < h.nframes; i++) {
		const struct ct_sym_frame *f = &frames[i];
		if ((f->function != CT_SYM_NONE && f->function >= h.strings_len) ||
		    (f->file != CT_SYM_NONE && f->file >= h.strings_len) ||
		    (f->file_short != CT_SYM_NONE && f->file_short >= h.strings_len)) {
			set_error(r, off,
				  "corrupt record at offset %llu: symbol frame %u points outside its %u bytes of strings",
				  (unsigned long long)off, i, h.strings_len);
			return -1;
		}
	}
	if (r->cb->symbols)
		r->cb->symbols(r->cb->ctx, &h, addrs, frames, strings);
	return 0;
}

/* Does a tail of len bytes after a fixed part of fixed bytes fit in the record? Else corrupt. */
static int tail_fits(struct rd *r, uint64_t off, uint32_t size, size_t fixed, uint32_t len,
		     const char *what)
{
	if ((uint64_t)fixed + len <= size)
		return 1;
	corrupt(r, off, "%s (%u bytes) overflows a record of %u bytes", what, len, size);
	return 0;
}

/*
 * Take event pe (its seq not yet set) as the next record of the file: into
 * the reorder window, or straight out when the window is full and pe is the
 * oldest. Returns 1 when pe went into its thread's queue.
 */
static int take_event(struct rd *r, const struct pending *pe_in)
{
	struct pending pe = *pe_in; /* deliver() may change it */
	pe.seq = r->seq++;
	r->res->events++;
	if (!r->cb->event && !r->cb->pycombine)
		return 0; /* nobody wants them in order: hold nothing */
	if (r->released_any && pe.ev.ts_ns < r->last_released_ts)
		r->res->late_events++;
	if (r->pending_n >= r->max_pending) {
		/*
		 * Full: hand out the oldest of the window and this event
		 * before pushing, so that the window (and each queue's
		 * ring) never holds more than max_pending events.
		 */
		int from_queue;
		r->res->forced_releases++;
		if (pend_less(&pe, pending_min(r, &from_queue))) {
			deliver(r, &pe);
			return 0;
		}
		release_one(r);
	}
	return pending_push(r, &pe);
}

/*
 * ---- packed events (issue 15) ----
 * A CT_REC_EVENTS at off: each event unpacked, checked to be one the shim
 * packs (an event record of 80 bytes, or 88 with CT_EVENT_F_PYSTACK; a
 * Python stack id only then), and taken as that CT_REC_EVENT standing here.
 * While the run's events follow one another into their queue (in order, the
 * window not full), each is copied in as the run packs it, its file-order
 * step (1) put in: the queue's last event is the run's previous one, the
 * event the run packs it after.
 */
static int read_events(struct rd *r, const unsigned char *p, uint32_t size, uint64_t off)
{
	struct ct_rec_events h;
	memcpy(&h, p, sizeof h);
	if (h.bytes > size - sizeof h || h.count == 0) {
		corrupt(r, off, "packed events: %u events in %u bytes do not fit a record of %u bytes",
			h.count, h.bytes, size);
		return -1;
	}
	const unsigned char *i = p + sizeof h, *end = i + h.bytes;
	struct pending cur = {.pystack_id = 0};
	ct_pk_base(&cur.ev, h.tid);
	struct tq *t = NULL; /* the queue whose last event is cur, if any */
	for (uint32_t k = 0; k < h.count; k++) {
		const unsigned char *at = i, *fields = NULL;
		uint64_t step;
		/* in order after cur, the queue's last event, and room for it: copied in */
		int copy = t && r->pending_n < r->max_pending && i < end &&
			   (fields = get_u(i + 1, end, &step)) && cur.ev.ts_ns + step >= cur.ev.ts_ns;
		if (copy) {
			cur.ev.ts_ns += step;
			i = unpack_fields(fields, end, &cur, *at);
		} else {
			if (t)
				t->enc_prev = cur; /* the slow path packs after it */
			i = unpack(i, end, &cur, 0, &fields);
		}
		const struct ct_rec_event *e = &cur.ev;
		int py = (e->rec.flags & CT_EVENT_F_PYSTACK) != 0;
		const char *bad = !i ? "runs past the end of the run"
				  : e->rec.type != CT_REC_EVENT || e->rec.size != (py ? 88u : 80u)
				      ? "is not an event record of 80 bytes, or 88 with a Python stack"
				  : !py && cur.pystack_id ? "has a Python stack id without the flag"
							  : NULL;
		if (bad) {
			corrupt(r, off, "packed event %u of %u (run byte %zu of %u) %s", k + 1, h.count,
				(size_t)(at - (p + sizeof h)), h.bytes, bad);
			return -1;
		}
		if (!copy) {
			cur.seq = r->seq; /* take_event's, for t->enc_prev */
			t = take_event(r, &cur) ? tq_of(r, h.tid) : NULL;
			continue;
		}
		/* take_event's work for an event that goes into its queue */
		cur.seq = r->seq++;
		r->res->events++;
		if (r->released_any && e->ts_ns < r->last_released_ts)
			r->res->late_events++;
		unsigned char *o = tq_room(r, t);
		size_t head = (size_t)(fields - at), len = (size_t)(i - fields);
		if (len <= 32 && (size_t)(end - fields) >= 32) {
			/*
			 * Most events: copies of fixed sizes, which take bytes of the
			 * run past the event (never past the run) into the room after
			 * it. The mask and the time step are at most 11 bytes.
			 */
			memcpy(o, at, 16);
			o[head] = 1; /* the file-order step */
			memcpy(o + head + 1, fields, 32);
		} else {
			memcpy(o, at, head);
			o[head] = 1;
			memcpy(o + head + 1, fields, len);
		}
		t->back->tail += (uint32_t)(head + 1 + len);
		t->n++;
		if (++r->pending_n > r->res->max_pending_seen)
			r->res->max_pending_seen = r->pending_n;
	}
	if (t)
		t->enc_prev = cur;
	if (i != end) {
		corrupt(r, off, "packed events: %zu bytes left after the run's %u events",
			(size_t)(end - i), h.count);
		return -1;
	}
	r->res->records += h.count - 1; /* one each, as CT_REC_EVENT records count */
	r->record_bytes += (uint64_t)h.count * sizeof(struct ct_rec_event);
	return 0;
}

static int dispatch(struct rd *r, const unsigned char *p, unsigned type, uint32_t size,
		    uint64_t off)
{
	const struct ct_reader_cb *cb = r->cb;
	switch (type) {
	case CT_REC_PAD:
		return 0;
	case CT_REC_PROCESS: {
		struct ct_rec_process pr;
		memcpy(&pr, p, sizeof pr);
		if (!r->explicit_pending)
			size_pending(r, (const char *)p + sizeof pr, size - sizeof pr);
		if (cb->process)
			cb->process(cb->ctx, &pr, (const char *)p + sizeof pr, size - sizeof pr);
		return 0;
	}
	case CT_REC_EVENT: {
		struct pending pe;
		memcpy(&pe.ev, p, sizeof pe.ev);
		pe.pystack_id = 0;
		if ((pe.ev.rec.flags & CT_EVENT_F_PYSTACK) &&
		    size >= sizeof pe.ev + sizeof(struct ct_rec_event_py)) {
			struct ct_rec_event_py x;
			memcpy(&x, p + sizeof pe.ev, sizeof x);
			pe.pystack_id = x.pystack_id;
		}
		take_event(r, &pe);
		return 0;
	}
	case CT_REC_EVENTS: /* issue 15 */
		return read_events(r, p, size, off);
	case CT_REC_STACK: {
		struct ct_rec_stack st;
		uint64_t ips[CT_STACK_MAX];
		memcpy(&st, p, sizeof st);
		if (st.depth > CT_STACK_MAX) {
			corrupt(r, off, "stack depth %u above maximum %u", st.depth, CT_STACK_MAX);
			return -1;
		}
		uint32_t need = (uint32_t)sizeof st + 8u * st.depth;
		if (need > size) {
			corrupt(r, off, "stack of depth %u needs %u bytes, record has %u", st.depth, need, size);
			return -1;
		}
		memcpy(ips, p + sizeof st, 8u * st.depth);
		if (cb->stack)
			cb->stack(cb->ctx, st.stack_id, st.depth, ips);
		return 0;
	}
	case CT_REC_MODULE: {
		struct ct_rec_module m;
		memcpy(&m, p, sizeof m);
		uint64_t need = (uint64_t)sizeof m + m.build_id_len + m.path_len;
		if (need > size) {
			corrupt(r, off, "module build id (%u bytes) and path (%u bytes) overflow a record of %u bytes", m.build_id_len, m.path_len, size);
			return -1;
		}
		if (cb->module)
			cb->module(cb->ctx, &m, p + sizeof m,
				   (const char *)p + sizeof m + m.build_id_len, m.path_len);
		return 0;
	}
	case CT_REC_DROPS: {
		struct ct_rec_drops d;
		memcpy(&d, p, sizeof d);
		if (cb->drops)
			cb->drops(cb->ctx, &d);
		return 0;
	}
	case CT_REC_BATCH: {
		struct ct_rec_batch b;
		memcpy(&b, p, sizeof b);
		r->res->batches++;
		/*
		 * Release what is older than the previous snapshot by a slack of
		 * CT_REORDER_SLACK_NS: an event stamped that long before a round
		 * and not yet in the file had its thread stalled between its
		 * timestamp and its commit for longer than that (a free's stamp is
		 * its entry, so a free that blocks long is the usual case). Events
		 * later still are counted as late; the model places late frees by
		 * address.
		 */
		if (r->have_prev && r->prev_snapshot > CT_REORDER_SLACK_NS)
			release_upto(r, r->prev_snapshot - CT_REORDER_SLACK_NS);
		r->prev_snapshot = b.snapshot_ns;
		r->have_prev = 1;
		if (cb->batch)
			cb->batch(cb->ctx, &b);
		return 0;
	}
	case CT_REC_END: {
		struct ct_rec_end e;
		memcpy(&e, p, sizeof e);
		if (cb->end)
			cb->end(cb->ctx, &e);
		return 0;
	}
	case CT_REC_MARK: {
		struct ct_rec_mark mk;
		memcpy(&mk, p, sizeof mk);
		if (!tail_fits(r, off, size, sizeof mk, mk.name_len, "mark name"))
			return -1;
		if (cb->mark)
			cb->mark(cb->ctx, &mk, (const char *)p + sizeof mk, mk.name_len);
		return 0;
	}
	case CT_REC_COUNTER: {
		struct ct_rec_counter c;
		memcpy(&c, p, sizeof c);
		if (!tail_fits(r, off, size, sizeof c, c.name_len, "counter name"))
			return -1;
		if (cb->counter)
			cb->counter(cb->ctx, &c, (const char *)p + sizeof c, c.name_len);
		return 0;
	}
	case CT_REC_MEMINFO: {
		struct ct_rec_meminfo mi;
		memcpy(&mi, p, sizeof mi);
		if (cb->meminfo)
			cb->meminfo(cb->ctx, &mi);
		return 0;
	}
	case CT_REC_MEMSAMPLE: { /* issue 19 §6 */
		struct ct_rec_memsample ms;
		memcpy(&ms, p, sizeof ms);
		if (cb->memsample)
			cb->memsample(cb->ctx, &ms);
		return 0;
	}
	case CT_REC_PYSTRING: {
		struct ct_rec_pystring ps;
		memcpy(&ps, p, sizeof ps);
		if (!tail_fits(r, off, size, sizeof ps, ps.len, "Python string"))
			return -1;
		if (cb->pystring)
			cb->pystring(cb->ctx, ps.string_id, (const char *)p + sizeof ps, ps.len);
		return 0;
	}
	case CT_REC_PYSTACK: {
		struct ct_rec_pystack st;
		struct ct_pyframe pf[CT_PYSTACK_MAX];
		memcpy(&st, p, sizeof st);
		uint64_t need = (uint64_t)sizeof st + (uint64_t)st.depth * sizeof pf[0];
		if (st.depth > CT_PYSTACK_MAX || need > size) {
			corrupt(r, off, "Python stack of depth %u does not fit a record of %u bytes", st.depth, size);
			return -1;
		}
		memcpy(pf, p + sizeof st, st.depth * sizeof pf[0]);
		if (cb->pystack)
			cb->pystack(cb->ctx, st.pystack_id, st.depth, pf);
		return 0;
	}
	case CT_REC_SYMBOLS:
		return read_symbols(r, p, size, off);
	default:
		r->res->unknown_records++;
		if (cb->unknown)
			cb->unknown(cb->ctx, type, off, size);
		return 0;
	}
}

static int read_header(struct rd *r)
{
	struct ct_file_header h;
	if (fill(r, sizeof h) < 0)
		return -1;
	size_t avail = r->end - r->start;
	if (avail == 0) {
		set_error(r, 0, "empty file (not a cumtrace dump)");
		return -1;
	}
	size_t cmp = avail < CT_MAGIC_LEN ? avail : CT_MAGIC_LEN;
	if (memcmp(r->buf + r->start, CT_MAGIC, cmp) != 0) {
		set_error(r, 0, "not a cumtrace dump: bad magic at offset 0");
		return -1;
	}
	if (avail < sizeof h) {
		set_error(r, 0, "truncated file header (%zu of %zu bytes)", avail, sizeof h);
		return -1;
	}
	memcpy(&h, r->buf + r->start, sizeof h);
	r->res->version = h.version;
	if (h.version != CT_FORMAT_VERSION) {
		set_error(r, 8, "unsupported dump format version %u at offset 8 (this cumtrace-report reads version %u)",
			  h.version, CT_FORMAT_VERSION);
		return -1;
	}
	if (h.header_size < sizeof h) {
		set_error(r, 10, "corrupt file header at offset 10: header size %u below %zu", h.header_size,
			  sizeof h);
		return -1;
	}
	/* a longer header (future minor versions) is skipped */
	if (fill(r, h.header_size) < 0)
		return -1;
	if (r->end - r->start < h.header_size) {
		set_error(r, 0, "truncated file header (%zu of %u bytes)", r->end - r->start,
			  h.header_size);
		return -1;
	}
	r->start += h.header_size;
	return 0;
}

/* The checks every record header gets, in the file or inside a CT_REC_ZSTD. */
static int check_header(struct rd *r, const struct ct_rec *h, uint64_t off)
{
	if (h->size < sizeof *h) {
		corrupt(r, off, "size %u below minimum %zu", h->size, sizeof *h);
		return -1;
	}
	if (h->size % 8) {
		corrupt(r, off, "size %u is not a multiple of 8", h->size);
		return -1;
	}
	if (h->size > CT_REC_MAX) {
		corrupt(r, off, "size %u above maximum %u", h->size, CT_REC_MAX);
		return -1;
	}
	uint32_t fixed = ct_rec_min_size(h->type);
	if (h->size < fixed) {
		corrupt(r, off, "%s record of %u bytes is shorter than its fixed part (%u bytes)",
			ct_rec_name(h->type), h->size, fixed);
		return -1;
	}
	return 0;
}

/*
 * Make at least need bytes available at buf[start] for a look ahead: 0 when
 * they are; a read error is left for the reader to meet in its turn.
 */
static int peek(struct rd *r, size_t need)
{
	if (need > r->cap)
		return -1;
	r->peeking = 1;
	int rc = fill(r, need);
	r->peeking = 0;
	return rc < 0 || r->end - r->start < need ? -1 : 0;
}

/*
 * The CT_REC_ZSTD of size bytes at off (at buf[start]) is decompressed: hand
 * the next one to the worker (zprefetch.h: the reader still checks it when it
 * gets there). The writer puts a round's batch record (and other small plain
 * records) between two CT_REC_ZSTD: look past up to PREFETCH_SKIP of them.
 */
#define PREFETCH_SKIP 16
static void prefetch_next(struct rd *r, uint64_t off, uint32_t size)
{
	if (r->zpre_off)
		return;
	if (!r->zpre && !(r->zpre = ct_zpre_new())) {
		r->zpre_off = 1;
		return;
	}
	size_t at = size; /* from buf[start] */
	for (int skip = 0; skip <= PREFETCH_SKIP; skip++) {
		struct ct_rec_zstd z;
		if (peek(r, at + sizeof z) < 0)
			return;
		memcpy(&z, r->buf + r->start + at, sizeof z);
		if (z.rec.size < sizeof(struct ct_rec) || z.rec.size % 8 || z.rec.size > CT_REC_MAX)
			return; /* the reader says what is wrong when it gets there */
		if (z.rec.type != CT_REC_ZSTD) {
			at += z.rec.size;
			continue;
		}
		if (z.rec.size < sizeof z || z.frame_size > z.rec.size - sizeof z ||
		    peek(r, at + z.rec.size) < 0)
			return;
		(void)ct_zpre_post(r->zpre, off + at, r->buf + r->start + at + sizeof z, z.frame_size,
				   z.raw_size);
		return;
	}
}

/*
 * A CT_REC_ZSTD at off: check the frame, decompress it into the one buffer
 * and dispatch the records it holds as if they stood in the file here.
 */
static int read_zstd(struct rd *r, const unsigned char *p, uint32_t size, uint64_t off)
{
	struct ct_rec_zstd z;
	memcpy(&z, p, sizeof z);
	r->res->zstd_records++;
	if (z.frame_size > size - sizeof z) {
		corrupt(r, off, "zstd frame of %u bytes overflows a record of %u bytes", z.frame_size,
			size);
		return -1;
	}
	if (z.raw_size < sizeof(struct ct_rec) || z.raw_size % 8 || z.raw_size > CT_ZSTD_RAW_MAX) {
		corrupt(r, off, "zstd record of %u decompressed bytes (want a multiple of 8, 8 to %u)",
			z.raw_size, CT_ZSTD_RAW_MAX);
		return -1;
	}
	const unsigned char *frame = p + sizeof z;
	size_t fsize = ZSTD_findFrameCompressedSize(frame, z.frame_size);
	if (ZSTD_isError(fsize) || fsize != z.frame_size) {
		corrupt(r, off, "zstd record does not hold exactly one zstd frame of %u bytes",
			z.frame_size);
		return -1;
	}
	unsigned long long content = ZSTD_getFrameContentSize(frame, z.frame_size);
	if (content != z.raw_size) {
		corrupt(r, off, "zstd frame does not declare the record's %u decompressed bytes",
			z.raw_size);
		return -1;
	}
	if (!r->zbuf) {
		r->zbuf = ct_xmalloc(CT_ZSTD_RAW_MAX);
		r->dctx = ZSTD_createDCtx();
		if (!r->dctx) {
			set_error(r, off, "out of memory for zstd decompression at offset %llu",
				  (unsigned long long)off);
			return -1;
		}
	}
	size_t got;
	if (ct_zpre_take(r->zpre, off, &r->zbuf, &got))
		r->res->zstd_prefetched++;
	else
		got = ZSTD_decompressDCtx(r->dctx, r->zbuf, z.raw_size, frame, z.frame_size);
	if (ZSTD_isError(got) || got != z.raw_size) {
		corrupt(r, off, "zstd frame does not decompress: %s",
			ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
		return -1;
	}
	prefetch_next(r, off, size);
	r->record_bytes += z.raw_size;
	r->in_zstd = 1;
	for (size_t pos = 0; pos < z.raw_size;) {
		struct ct_rec h;
		r->zstd_pos = pos;
		memcpy(&h, r->zbuf + pos, sizeof h);
		if (check_header(r, &h, off) < 0)
			return -1;
		if (h.size > z.raw_size - pos) {
			corrupt(r, off, "%s record of %u bytes overruns the decompressed run (%zu bytes left)",
				ct_rec_name(h.type), h.size, z.raw_size - pos);
			return -1;
		}
		if (h.type == CT_REC_ZSTD) {
			corrupt(r, off, "zstd record inside a zstd record");
			return -1;
		}
		if (dispatch(r, r->zbuf + pos, h.type, h.size, off) < 0)
			return -1;
		r->res->records++;
		pos += h.size;
	}
	r->in_zstd = 0;
	return 0;
}

static int run(struct rd *r)
{
	r->res->status = CT_READ_OK;
	r->cap = r->chunk + CT_REC_MAX;
	r->buf = ct_xmalloc(r->cap);
	if (read_header(r) < 0)
		goto out;
	for (;;) {
		uint64_t off = r->buf_off + r->start;
		if (fill(r, sizeof(struct ct_rec)) < 0)
			goto out;
		size_t avail = r->end - r->start;
		if (avail == 0)
			break;
		if (avail < sizeof(struct ct_rec)) {
			r->res->status = CT_READ_TRUNCATED;
			r->res->truncated_offset = off;
			break;
		}
		if (r->opts && r->opts->max_record_bytes && r->record_bytes >= r->opts->max_record_bytes) {
			r->res->status = CT_READ_TRUNCATED;
			r->res->truncated_offset = off;
			r->res->budget_stopped = 1;
			break;
		}
		struct ct_rec h;
		memcpy(&h, r->buf + r->start, sizeof h);
		if (check_header(r, &h, off) < 0)
			goto out;
		if (fill(r, h.size) < 0)
			goto out;
		if (r->end - r->start < h.size) {
			r->res->status = CT_READ_TRUNCATED;
			r->res->truncated_offset = off;
			break;
		}
		r->record_bytes += h.size;
		if (h.type == CT_REC_ZSTD) {
			if (read_zstd(r, r->buf + r->start, h.size, off) < 0)
				goto out;
		} else {
			if (dispatch(r, r->buf + r->start, h.type, h.size, off) < 0)
				goto out;
			r->res->records++;
		}
		if (r->cb->record)
			r->cb->record(r->cb->ctx, r->buf + r->start, h.size, off);
		r->start += h.size;
	}
	release_all(r);
out:
	free(r->buf);
	pending_free(r);
	free(r->scratch);
	ct_zpre_free(r->zpre);
	r->zpre = NULL;
	free(r->zbuf);
	ZSTD_freeDCtx(r->dctx);
	r->buf = NULL;
	r->scratch = NULL;
	r->zbuf = NULL;
	r->dctx = NULL;
	return r->res->status;
}

static void rd_init(struct rd *r, const struct ct_read_opts *opts, const struct ct_reader_cb *cb,
		    struct ct_read_result *res)
{
	static const struct ct_reader_cb no_cb;
	memset(r, 0, sizeof *r);
	memset(res, 0, sizeof *res);
	r->cb = cb ? cb : &no_cb;
	r->res = res;
	r->chunk = opts && opts->chunk_size ? opts->chunk_size : DEFAULT_CHUNK;
	r->max_pending = opts && opts->max_pending ? opts->max_pending : DEFAULT_MAX_PENDING;
	r->explicit_pending = opts && opts->max_pending;
	r->opts = opts;
	r->src.fd = -1;
	r->zpre_off = opts && opts->no_prefetch;
}

int ct_read_mem(const void *data, size_t len, const struct ct_read_opts *opts,
		const struct ct_reader_cb *cb, struct ct_read_result *res)
{
	struct rd r;
	rd_init(&r, opts, cb, res);
	r.src.mem = data;
	r.src.mem_len = len;
	r.total = len;
	return run(&r);
}

int ct_read_file(const char *path, const struct ct_read_opts *opts, const struct ct_reader_cb *cb,
		 struct ct_read_result *res)
{
	if (ct_pipe_wanted(opts, cb)) {
		int st = ct_pipe_read_file(path, opts, cb, res);
		if (st >= 0)
			return st;
	}
	struct rd r;
	rd_init(&r, opts, cb, res);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(res->error, sizeof res->error, "cannot open: %s", strerror(errno));
		res->status = CT_READ_ERROR;
		return res->status;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		snprintf(res->error, sizeof res->error, "cannot stat: %s", strerror(errno));
		res->status = CT_READ_ERROR;
		close(fd);
		return res->status;
	}
	if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
		snprintf(res->error, sizeof res->error, "%s",
			 S_ISDIR(st.st_mode) ? "is a directory, not a dump file"
					     : "not a regular file (pipes and devices are not supported)");
		res->status = CT_READ_ERROR;
		close(fd);
		return res->status;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
#ifdef POSIX_FADV_SEQUENTIAL
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	r.src.fd = fd;
	r.total = (uint64_t)st.st_size;
	run(&r);
	close(fd);
	return res->status;
}

int ct_process_next_kv(const char *strings, size_t len, size_t *pos, const char **key,
		       size_t *key_len, const char **val, size_t *val_len)
{
	while (*pos < len) {
		const char *s = strings + *pos;
		size_t left = len - *pos;
		const char *nul = memchr(s, 0, left);
		size_t n = nul ? (size_t)(nul - s) : left;
		*pos += n + (nul ? 1 : 0);
		if (n == 0)
			continue;
		const char *eq = memchr(s, '=', n);
		*key = s;
		if (eq) {
			*key_len = (size_t)(eq - s);
			*val = eq + 1;
			*val_len = n - *key_len - 1;
		} else {
			*key_len = n;
			*val = s + n;
			*val_len = 0;
		}
		return 1;
	}
	return 0;
}
