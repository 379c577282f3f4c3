#define _GNU_SOURCE
#include "read/pipe.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/*
 * The reading thread writes one message per callback into the current
 * block: a header (callback, payload bytes) and the payload, each of its
 * parts padded to 8 bytes so that the calling thread can hand out pointers
 * into the block, aligned as the reader's own copies are. A full block goes
 * to the queue; at most QUEUE_MAX blocks wait there, so the reading thread
 * runs at most that far ahead and memory stays bounded. A message larger
 * than a block (CT_REC_SYMBOLS, a module's path) gets a block of its own.
 */
#define BLOCK_BYTES ((size_t)256 << 10)
#define QUEUE_MAX 4

enum msg_type {
	M_PROCESS,
	M_EVENT,
	M_STACK,
	M_MODULE,
	M_DROPS,
	M_BATCH,
	M_END,
	M_MARK,
	M_MEMINFO,
	M_MEMSAMPLE,
	M_COUNTER,
	M_UNKNOWN,
	M_PYSTRING,
	M_PYSTACK,
	M_SYMBOLS,
};

struct msg {
	uint32_t type; /* enum msg_type */
	uint32_t len;  /* payload bytes after this header, a multiple of 8 */
};

struct block {
	struct block *next;
	size_t len, cap;
	_Alignas(8) unsigned char data[];
};

struct ct_pipe {
	pthread_mutex_t mu;
	pthread_cond_t filled; /* the calling thread waits for a block */
	pthread_cond_t room;   /* the reading thread waits for the queue to shrink */
	struct block *head, *tail;
	size_t queued;
	struct block *spare; /* emptied blocks of BLOCK_BYTES, for reuse */
	int done;	     /* the reading thread has queued its last block */
	/* the reading thread's own */
	struct block *cur;
	uint32_t py; /* the Python stack id of the event whose pycombine came first */
	const char *path;
	struct ct_read_opts opts;
	struct ct_read_result *res;
	struct ct_reader_cb proxy;
};

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---- the reading thread --------------------------------------------------------------- */

static struct block *block_new(size_t cap)
{
	struct block *b = ct_xmalloc(sizeof *b + cap);
	b->next = NULL;
	b->len = 0;
	b->cap = cap;
	return b;
}

/* Hand the current block, if it holds anything, to the calling thread (waiting for room in the queue). */
static void queue_cur(struct ct_pipe *p)
{
	if (!p->cur || !p->cur->len)
		return;
	pthread_mutex_lock(&p->mu);
	while (p->queued >= QUEUE_MAX)
		pthread_cond_wait(&p->room, &p->mu);
	if (p->tail)
		p->tail->next = p->cur;
	else
		p->head = p->cur;
	p->tail = p->cur;
	p->queued++;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->mu);
	p->cur = NULL;
}

/* Make the current block an empty one of at least need bytes: a spare one when it is large enough. */
static void start_block(struct ct_pipe *p, size_t need)
{
	struct block *fresh = NULL;
	if (need <= BLOCK_BYTES) {
		pthread_mutex_lock(&p->mu);
		fresh = p->spare;
		if (fresh)
			p->spare = fresh->next;
		pthread_mutex_unlock(&p->mu);
	}
	if (!fresh)
		fresh = block_new(need > BLOCK_BYTES ? need : BLOCK_BYTES);
	fresh->next = NULL;
	fresh->len = 0;
	free(p->cur); /* an empty one too small for need */
	p->cur = fresh;
}

/* Room for a message of type with len payload bytes (padded parts): its payload. */
static unsigned char *msg(struct ct_pipe *p, enum msg_type type, size_t len)
{
	size_t need = sizeof(struct msg) + len;
	if (!p->cur || p->cur->cap - p->cur->len < need) {
		queue_cur(p);
		start_block(p, need);
	}
	unsigned char *o = p->cur->data + p->cur->len;
	struct msg h = {.type = type, .len = (uint32_t)len};
	memcpy(o, &h, sizeof h);
	p->cur->len += need;
	return o + sizeof h;
}

static unsigned char *part(unsigned char *o, const void *src, size_t n)
{
	if (n)
		memcpy(o, src, n);
	return o + pad8(n);
}

static uint32_t px_pycombine(void *ctx, uint32_t stack_id, uint32_t pystack_id)
{
	struct ct_pipe *p = ctx;
	p->py = pystack_id; /* the reader calls event next: it carries the id */
	return stack_id;
}

struct ev_msg {
	struct ct_rec_event ev;
	uint32_t pystack_id; /* 0: pycombine was not called for it */
	uint32_t reserved;
};

static void px_event(void *ctx, const struct ct_rec_event *ev)
{
	struct ct_pipe *p = ctx;
	struct ev_msg *m = (struct ev_msg *)msg(p, M_EVENT, sizeof(struct ev_msg));
	memcpy(&m->ev, ev, sizeof *ev);
	m->pystack_id = p->py;
	p->py = 0;
}

struct id_msg {
	uint32_t id;
	uint32_t n;
	uint64_t len;
};

static void px_stack(void *ctx, uint32_t stack_id, unsigned depth, const uint64_t *ips)
{
	struct ct_pipe *p = ctx;
	struct id_msg h = {.id = stack_id, .n = depth};
	unsigned char *o = msg(p, M_STACK, sizeof h + pad8(8u * depth));
	part(part(o, &h, sizeof h), ips, 8u * depth);
}

static void px_module(void *ctx, const struct ct_rec_module *m, const uint8_t *build_id,
		      const char *path, size_t path_len)
{
	struct ct_pipe *p = ctx;
	struct id_msg h = {.len = path_len};
	unsigned char *o = msg(p, M_MODULE,
			       pad8(sizeof *m) + sizeof h + pad8(m->build_id_len) + pad8(path_len));
	part(part(part(part(o, m, sizeof *m), &h, sizeof h), build_id, m->build_id_len), path,
	     path_len);
}

#define PX_FIXED(fn, type, M)                                                                       \
	static void fn(void *ctx, const type *r)                                                    \
	{                                                                                           \
		part(msg(ctx, M, pad8(sizeof *r)), r, sizeof *r);                                   \
	}
PX_FIXED(px_drops, struct ct_rec_drops, M_DROPS)
PX_FIXED(px_batch, struct ct_rec_batch, M_BATCH)
PX_FIXED(px_end, struct ct_rec_end, M_END)
PX_FIXED(px_meminfo, struct ct_rec_meminfo, M_MEMINFO)
PX_FIXED(px_memsample, struct ct_rec_memsample, M_MEMSAMPLE)
#undef PX_FIXED

/* a fixed part and a name of name_len bytes: the process's strings, marks, counters */
static void px_named(struct ct_pipe *p, enum msg_type type, const void *fixed, size_t size,
		     const char *name, size_t name_len)
{
	struct id_msg h = {.len = name_len};
	unsigned char *o = msg(p, type, pad8(size) + sizeof h + pad8(name_len));
	part(part(part(o, fixed, size), &h, sizeof h), name, name_len);
}

static void px_process(void *ctx, const struct ct_rec_process *pr, const char *strings, size_t len)
{
	px_named(ctx, M_PROCESS, pr, sizeof *pr, strings, len);
}

static void px_mark(void *ctx, const struct ct_rec_mark *mk, const char *name, size_t name_len)
{
	px_named(ctx, M_MARK, mk, sizeof *mk, name, name_len);
}

static void px_counter(void *ctx, const struct ct_rec_counter *c, const char *name,
		       size_t name_len)
{
	px_named(ctx, M_COUNTER, c, sizeof *c, name, name_len);
}

static void px_unknown(void *ctx, unsigned type, uint64_t offset, uint32_t size)
{
	struct id_msg h = {.id = type, .n = size, .len = offset};
	part(msg(ctx, M_UNKNOWN, sizeof h), &h, sizeof h);
}

static void px_pystring(void *ctx, uint32_t id, const char *str, size_t len)
{
	struct id_msg h = {.id = id, .len = len};
	unsigned char *o = msg(ctx, M_PYSTRING, sizeof h + pad8(len));
	part(part(o, &h, sizeof h), str, len);
}

static void px_pystack(void *ctx, uint32_t id, unsigned depth, const struct ct_pyframe *frames)
{
	struct id_msg h = {.id = id, .n = depth};
	size_t n = (size_t)depth * sizeof *frames;
	unsigned char *o = msg(ctx, M_PYSTACK, sizeof h + pad8(n));
	part(part(o, &h, sizeof h), frames, n);
}

static void px_symbols(void *ctx, const struct ct_rec_symbols *s, const struct ct_sym_addr *addrs,
		       const struct ct_sym_frame *frames, const char *strings)
{
	size_t na = (size_t)s->naddrs * sizeof *addrs, nf = (size_t)s->nframes * sizeof *frames;
	unsigned char *o = msg(ctx, M_SYMBOLS,
			       pad8(sizeof *s) + pad8(na) + pad8(nf) + pad8(s->strings_len));
	part(part(part(part(o, s, sizeof *s), addrs, na), frames, nf), strings, s->strings_len);
}

/*
 * Every callback of struct ct_reader_cb must have its stand-in here: one the
 * pipe does not forward is silently lost on machines with CT_PIPE_MIN_CPUS
 * CPUs (a memsample callback added without one lost every device memory
 * sample there). The count below fails to compile when a member is added:
 * add its stand-in and message, then the count.
 */
_Static_assert(sizeof(struct ct_reader_cb) == 18 * sizeof(void *),
	       "struct ct_reader_cb changed: forward the new callback in pipe.c");

/* The stand-in callbacks: set where the caller's are, so the reader does the same work. */
static void proxy_init(struct ct_pipe *p, const struct ct_reader_cb *cb)
{
	struct ct_reader_cb *x = &p->proxy;
	memset(x, 0, sizeof *x);
	x->ctx = p;
#define PX_IF(field) x->field = cb->field ? px_##field : NULL
	PX_IF(process);
	PX_IF(stack);
	PX_IF(module);
	PX_IF(drops);
	PX_IF(batch);
	PX_IF(end);
	PX_IF(mark);
	PX_IF(meminfo);
	PX_IF(memsample);
	PX_IF(counter);
	PX_IF(unknown);
	PX_IF(pystring);
	PX_IF(pystack);
	PX_IF(pycombine);
	PX_IF(symbols);
#undef PX_IF
	/* the reader calls event after pycombine: the message carries both */
	x->event = cb->event || cb->pycombine ? px_event : NULL;
}

static void *reading(void *arg)
{
	struct ct_pipe *p = arg;
	struct ct_read_opts o = p->opts;
	o.pipeline = -1;
	ct_read_file(p->path, &o, &p->proxy, p->res);
	queue_cur(p);
	pthread_mutex_lock(&p->mu);
	p->done = 1;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the calling thread --------------------------------------------------------------- */

/* Reads the parts of a message back in the order they were written. */
struct rcur {
	unsigned char *at;
};

static void *take(struct rcur *c, size_t n)
{
	void *r = c->at;
	c->at += pad8(n);
	return r;
}

static void replay_one(const struct ct_reader_cb *cb, enum msg_type type, struct rcur *c)
{
	void *x = cb->ctx;
	switch (type) {
	case M_EVENT: {
		struct ev_msg *m = take(c, sizeof *m);
		if (m->pystack_id && cb->pycombine)
			m->ev.stack_id = cb->pycombine(x, m->ev.stack_id, m->pystack_id);
		if (cb->event)
			cb->event(x, &m->ev);
		return;
	}
	case M_PROCESS: {
		const struct ct_rec_process *pr = take(c, sizeof *pr);
		const struct id_msg *h = take(c, sizeof *h);
		cb->process(x, pr, take(c, h->len), h->len);
		return;
	}
	case M_STACK: {
		const struct id_msg *h = take(c, sizeof *h);
		cb->stack(x, h->id, h->n, take(c, 8u * h->n));
		return;
	}
	case M_MODULE: {
		const struct ct_rec_module *m = take(c, sizeof *m);
		const struct id_msg *h = take(c, sizeof *h);
		const uint8_t *build_id = take(c, m->build_id_len);
		cb->module(x, m, build_id, take(c, h->len), h->len);
		return;
	}
	case M_DROPS:
		cb->drops(x, take(c, sizeof(struct ct_rec_drops)));
		return;
	case M_BATCH:
		cb->batch(x, take(c, sizeof(struct ct_rec_batch)));
		return;
	case M_END:
		cb->end(x, take(c, sizeof(struct ct_rec_end)));
		return;
	case M_MEMINFO:
		cb->meminfo(x, take(c, sizeof(struct ct_rec_meminfo)));
		return;
	case M_MEMSAMPLE:
		cb->memsample(x, take(c, sizeof(struct ct_rec_memsample)));
		return;
	case M_MARK: {
		const struct ct_rec_mark *mk = take(c, sizeof *mk);
		const struct id_msg *h = take(c, sizeof *h);
		cb->mark(x, mk, take(c, h->len), h->len);
		return;
	}
	case M_COUNTER: {
		const struct ct_rec_counter *ctr = take(c, sizeof *ctr);
		const struct id_msg *h = take(c, sizeof *h);
		cb->counter(x, ctr, take(c, h->len), h->len);
		return;
	}
	case M_UNKNOWN: {
		const struct id_msg *h = take(c, sizeof *h);
		cb->unknown(x, h->id, h->len, h->n);
		return;
	}
	case M_PYSTRING: {
		const struct id_msg *h = take(c, sizeof *h);
		cb->pystring(x, h->id, take(c, h->len), h->len);
		return;
	}
	case M_PYSTACK: {
		const struct id_msg *h = take(c, sizeof *h);
		cb->pystack(x, h->id, h->n, take(c, (size_t)h->n * sizeof(struct ct_pyframe)));
		return;
	}
	case M_SYMBOLS: {
		const struct ct_rec_symbols *s = take(c, sizeof *s);
		const struct ct_sym_addr *addrs = take(c, (size_t)s->naddrs * sizeof *addrs);
		const struct ct_sym_frame *frames = take(c, (size_t)s->nframes * sizeof *frames);
		cb->symbols(x, s, addrs, frames, take(c, s->strings_len));
		return;
	}
	}
}

static void replay(const struct ct_reader_cb *cb, struct block *b)
{
	for (size_t pos = 0; pos < b->len;) {
		struct msg h;
		memcpy(&h, b->data + pos, sizeof h);
		struct rcur c = {b->data + pos + sizeof h};
		replay_one(cb, (enum msg_type)h.type, &c);
		pos += sizeof h + h.len;
	}
}

int ct_pipe_wanted(const struct ct_read_opts *opts, const struct ct_reader_cb *cb)
{
	if (!cb || !(cb->event || cb->pycombine) || cb->record)
		return 0;
	if (opts && (opts->no_prefetch || opts->pipeline < 0))
		return 0;
	if (opts && opts->pipeline > 0)
		return 1;
	cpu_set_t set;
	return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= CT_PIPE_MIN_CPUS;
}

int ct_pipe_read_file(const char *path, const struct ct_read_opts *opts,
		      const struct ct_reader_cb *cb, struct ct_read_result *res)
{
	struct ct_pipe *p = ct_xcalloc(1, sizeof *p);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->filled, NULL);
	pthread_cond_init(&p->room, NULL);
	p->path = path;
	if (opts)
		p->opts = *opts;
	p->res = res;
	proxy_init(p, cb);
	pthread_t th;
	if (pthread_create(&th, NULL, reading, p) != 0) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->filled);
		pthread_cond_destroy(&p->room);
		free(p);
		return -1;
	}
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->done)
			pthread_cond_wait(&p->filled, &p->mu);
		struct block *b = p->head;
		if (b) {
			p->head = b->next;
			if (!p->head)
				p->tail = NULL;
			p->queued--;
			pthread_cond_signal(&p->room);
		}
		pthread_mutex_unlock(&p->mu);
		if (!b)
			break;
		replay(cb, b);
		if (b->cap == BLOCK_BYTES) {
			pthread_mutex_lock(&p->mu);
			b->next = p->spare;
			p->spare = b;
			pthread_mutex_unlock(&p->mu);
		} else {
			free(b);
		}
	}
	pthread_join(th, NULL);
	res->pipelined = 1;
	while (p->spare) {
		struct block *b = p->spare;
		p->spare = b->next;
		free(b);
	}
	free(p->cur);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->filled);
	pthread_cond_destroy(&p->room);
	free(p);
	return res->status;
}
