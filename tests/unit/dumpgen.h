/*
 * dumpgen.h: build cumtrace dumps in memory for tests (format:
 * include/cumtrace/format.h). Header-only; every helper is static inline.
 *
 *   struct dg g; dg_init(&g); dg_header(&g);
 *   dg_process(&g, 1234, 1, 1000, (const char *[]){"argv=prog", NULL});
 *   dg_alloc(&g, 2000, 0x1000, 4096, 1);   // ts, ptr, size, stack id
 *   dg_free(&g, 3000, 0x1000);
 *   dg_end(&g, 4000);
 *   ... g.p / g.n ... dg_write(&g, path); dg_release(&g);
 *
 * Compressed runs: build the inner records in a second struct dg without a
 * file header, then dg_zstd(&g, inner.p, inner.n) appends them as one
 * CT_REC_ZSTD record (dg_zstd_rec to set every field, for corrupt ones).
 */
#ifndef CT_TEST_DUMPGEN_H
#define CT_TEST_DUMPGEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "cumtrace/format.h"

struct dg {
	unsigned char *p;
	size_t n, cap;
	size_t *offs; /* offset of every record appended (not the header) */
	size_t nrec, caprec;
};

static inline void dg_init(struct dg *g)
{
	memset(g, 0, sizeof *g);
}

static inline void dg_release(struct dg *g)
{
	free(g->p);
	free(g->offs);
	memset(g, 0, sizeof *g);
}

static inline void dg_bytes(struct dg *g, const void *data, size_t len)
{
	if (g->n + len > g->cap) {
		size_t c = g->cap ? g->cap : 256;
		while (c < g->n + len)
			c *= 2;
		g->p = realloc(g->p, c);
		if (!g->p)
			abort();
		g->cap = c;
	}
	if (len)
		memcpy(g->p + g->n, data, len);
	g->n += len;
}

static inline void dg_zeros(struct dg *g, size_t len)
{
	static const unsigned char z[64];
	while (len) {
		size_t k = len < sizeof z ? len : sizeof z;
		dg_bytes(g, z, k);
		len -= k;
	}
}

/* Start a record: remember where it begins. */
static inline void dg_mark_record(struct dg *g)
{
	if (g->nrec == g->caprec) {
		g->caprec = g->caprec ? g->caprec * 2 : 64;
		g->offs = realloc(g->offs, g->caprec * sizeof *g->offs);
		if (!g->offs)
			abort();
	}
	g->offs[g->nrec++] = g->n;
}

static inline void dg_header_v(struct dg *g, uint16_t version, uint16_t header_size)
{
	struct ct_file_header h;
	memset(&h, 0, sizeof h);
	memcpy(h.magic, CT_MAGIC, CT_MAGIC_LEN);
	h.version = version;
	h.header_size = header_size;
	dg_bytes(g, &h, sizeof h);
	if (header_size > sizeof h)
		dg_zeros(g, header_size - sizeof h);
}

static inline void dg_header(struct dg *g)
{
	dg_header_v(g, CT_FORMAT_VERSION, sizeof(struct ct_file_header));
}

/* A record with an arbitrary header and payload (payload padded to size). */
static inline void dg_raw(struct dg *g, uint16_t type, uint32_t size, const void *payload,
			  size_t payload_len)
{
	struct ct_rec r = {.type = type, .flags = 0, .size = size};
	dg_mark_record(g);
	dg_bytes(g, &r, sizeof r);
	dg_bytes(g, payload, payload_len);
	if (size > sizeof r + payload_len)
		dg_zeros(g, size - sizeof r - payload_len);
}

/* Append a record whose fixed part is rec (rec_len bytes), then tail, padded to 8. */
static inline void dg_record(struct dg *g, void *rec, size_t rec_len, const void *tail,
			     size_t tail_len, size_t extra)
{
	struct ct_rec *h = rec;
	size_t size = CT_REC_ALIGN(rec_len + tail_len + extra);
	h->size = (uint32_t)size;
	dg_mark_record(g);
	dg_bytes(g, rec, rec_len);
	dg_bytes(g, tail, tail_len);
	dg_zeros(g, size - rec_len - tail_len);
}

/* kv: NULL-terminated list of "key=value" strings (or NULL). */
static inline void dg_process(struct dg *g, uint32_t pid, uint32_t ppid, uint64_t start_mono,
			      const char *const *kv)
{
	struct ct_rec_process p;
	memset(&p, 0, sizeof p);
	p.rec.type = CT_REC_PROCESS;
	p.pid = pid;
	p.ppid = ppid;
	p.start_monotonic_ns = start_mono;
	p.start_realtime_ns = 1700000000000000000ull;
	p.clock_id = 1;
	char buf[4096];
	size_t n = 0;
	for (size_t i = 0; kv && kv[i]; i++) {
		size_t l = strlen(kv[i]) + 1;
		if (n + l > sizeof buf)
			abort();
		memcpy(buf + n, kv[i], l);
		n += l;
	}
	dg_record(g, &p, sizeof p, buf, n, 0);
}

/* Every field of an event; unset ones are 0 (device 0, layer runtime). */
struct dg_ev {
	uint64_t ts, dur, ptr, size, stream, aux;
	uint32_t tid, stack_id;
	int32_t result;
	uint32_t flags;
	uint16_t api;
	uint8_t op, kind;
	int16_t device;
	size_t extra; /* trailing bytes beyond the fixed part */
};

static inline void dg_event(struct dg *g, const struct dg_ev *e)
{
	struct ct_rec_event ev;
	memset(&ev, 0, sizeof ev);
	ev.rec.type = CT_REC_EVENT;
	ev.ts_ns = e->ts;
	ev.dur_ns = e->dur;
	ev.ptr = e->ptr;
	ev.size = e->size;
	ev.stream = e->stream;
	ev.aux = e->aux;
	ev.tid = e->tid;
	ev.stack_id = e->stack_id;
	ev.result = e->result;
	ev.flags = e->flags;
	ev.api = e->api;
	ev.op = e->op;
	ev.kind = e->kind;
	ev.device = e->device;
	ev.layer = ct_api_layer(e->api);
	unsigned char junk[64];
	memset(junk, 0xa5, sizeof junk);
	dg_record(g, &ev, sizeof ev, junk, e->extra < sizeof junk ? e->extra : sizeof junk,
		  e->extra > sizeof junk ? e->extra - sizeof junk : 0);
}

/* cudaMalloc of size at ptr on device 0, tid 1. */
static inline void dg_alloc(struct dg *g, uint64_t ts, uint64_t ptr, uint64_t size,
			    uint32_t stack_id)
{
	struct dg_ev e = {.ts = ts, .dur = 100, .ptr = ptr, .size = size, .tid = 1,
			  .stack_id = stack_id, .api = CT_API_cudaMalloc, .op = CT_OP_ALLOC,
			  .kind = CT_KIND_DEVICE};
	dg_event(g, &e);
}

/* cudaFree of ptr, tid 1. */
static inline void dg_free(struct dg *g, uint64_t ts, uint64_t ptr)
{
	struct dg_ev e = {.ts = ts, .dur = 50, .ptr = ptr, .tid = 1, .api = CT_API_cudaFree,
			  .op = CT_OP_FREE, .kind = CT_KIND_DEVICE};
	dg_event(g, &e);
}

static inline void dg_stack(struct dg *g, uint32_t id, uint16_t depth, const uint64_t *ips)
{
	struct ct_rec_stack s;
	memset(&s, 0, sizeof s);
	s.rec.type = CT_REC_STACK;
	s.stack_id = id;
	s.depth = depth;
	dg_record(g, &s, sizeof s, ips, (size_t)depth * 8, 0);
}

static inline void dg_module(struct dg *g, uint64_t base, uint64_t lo, uint64_t hi,
			     const uint8_t *build_id, uint16_t build_id_len, const char *path)
{
	struct ct_rec_module m;
	memset(&m, 0, sizeof m);
	m.rec.type = CT_REC_MODULE;
	m.base = base;
	m.lo = lo;
	m.hi = hi;
	m.build_id_len = build_id_len;
	m.path_len = (uint16_t)(strlen(path) + 1);
	unsigned char buf[4096 + 256];
	if (build_id_len + m.path_len > sizeof buf)
		abort();
	if (build_id_len)
		memcpy(buf, build_id, build_id_len);
	memcpy(buf + build_id_len, path, m.path_len);
	dg_record(g, &m, sizeof m, buf, (size_t)build_id_len + m.path_len, 0);
}

static inline void dg_batch(struct dg *g, uint64_t snapshot, uint64_t seq)
{
	struct ct_rec_batch b;
	memset(&b, 0, sizeof b);
	b.rec.type = CT_REC_BATCH;
	b.snapshot_ns = snapshot;
	b.seq = seq;
	dg_record(g, &b, sizeof b, NULL, 0, 0);
}

static inline void dg_drops(struct dg *g, uint64_t ts, uint64_t count, uint32_t tid)
{
	struct ct_rec_drops d;
	memset(&d, 0, sizeof d);
	d.rec.type = CT_REC_DROPS;
	d.ts_ns = ts;
	d.count = count;
	d.tid = tid;
	dg_record(g, &d, sizeof d, NULL, 0, 0);
}

/* Calls lost inside signal handlers (CT_DROPS_F_SIGNAL), as the shim counts them. */
static inline void dg_drops_signal(struct dg *g, uint64_t ts, uint64_t count)
{
	struct ct_rec_drops d;
	memset(&d, 0, sizeof d);
	d.rec.type = CT_REC_DROPS;
	d.rec.flags = CT_DROPS_F_SIGNAL;
	d.ts_ns = ts;
	d.count = count;
	dg_record(g, &d, sizeof d, NULL, 0, 0);
}

static inline void dg_end(struct dg *g, uint64_t ts)
{
	struct ct_rec_end e;
	memset(&e, 0, sizeof e);
	e.rec.type = CT_REC_END;
	e.ts_ns = ts;
	dg_record(g, &e, sizeof e, NULL, 0, 0);
}

/* A Python frame string (file name or function) with id >= 1. */
static inline void dg_pystring(struct dg *g, uint32_t id, const char *s)
{
	struct ct_rec_pystring r;
	memset(&r, 0, sizeof r);
	r.rec.type = CT_REC_PYSTRING;
	r.string_id = id;
	r.len = (uint32_t)(strlen(s) + 1);
	dg_record(g, &r, sizeof r, s, r.len, 0);
}

/* A Python stack of depth frames, innermost first. */
static inline void dg_pystack(struct dg *g, uint32_t id, uint16_t depth, const struct ct_pyframe *f)
{
	struct ct_rec_pystack r;
	memset(&r, 0, sizeof r);
	r.rec.type = CT_REC_PYSTACK;
	r.pystack_id = id;
	r.depth = depth;
	dg_record(g, &r, sizeof r, f, (size_t)depth * sizeof *f, 0);
}

/* cudaMalloc (as dg_alloc) made with the Python stack pystack_id. */
static inline void dg_alloc_py(struct dg *g, uint64_t ts, uint64_t ptr, uint64_t size,
			       uint32_t stack_id, uint32_t pystack_id)
{
	struct ct_rec_event ev;
	memset(&ev, 0, sizeof ev);
	ev.rec.type = CT_REC_EVENT;
	ev.rec.flags = CT_EVENT_F_PYSTACK;
	ev.ts_ns = ts;
	ev.dur_ns = 100;
	ev.ptr = ptr;
	ev.size = size;
	ev.tid = 1;
	ev.stack_id = stack_id;
	ev.api = CT_API_cudaMalloc;
	ev.op = CT_OP_ALLOC;
	ev.kind = CT_KIND_DEVICE;
	ev.layer = ct_api_layer(CT_API_cudaMalloc);
	struct ct_rec_event_py py = {.pystack_id = pystack_id};
	dg_record(g, &ev, sizeof ev, &py, sizeof py, 0);
}

/* A mark of any kind (enum ct_mark_kind); aux: the range id of start/end. */
static inline void dg_mark_kind(struct dg *g, uint64_t ts, uint32_t tid, unsigned kind, uint64_t aux,
				const char *name)
{
	struct ct_rec_mark m;
	memset(&m, 0, sizeof m);
	m.rec.type = CT_REC_MARK;
	m.ts_ns = ts;
	m.tid = tid;
	m.kind = (uint16_t)kind;
	m.aux = aux;
	m.name_len = (uint16_t)(strlen(name) + 1);
	dg_record(g, &m, sizeof m, name, m.name_len, 0);
}

/* CT_REC_SYMBOLS: the arrays and strings_len bytes of strings, as given. */
static inline void dg_symbols(struct dg *g, uint32_t naddrs, const struct ct_sym_addr *addrs,
			      uint32_t nframes, const struct ct_sym_frame *frames, const char *strings,
			      uint32_t strings_len)
{
	struct ct_rec_symbols s;
	memset(&s, 0, sizeof s);
	s.rec.type = CT_REC_SYMBOLS;
	s.naddrs = naddrs;
	s.nframes = nframes;
	s.strings_len = strings_len;
	size_t na = naddrs * sizeof *addrs, nf = nframes * sizeof *frames;
	unsigned char *tail = malloc(na + nf + strings_len + 1);
	if (!tail)
		abort();
	if (na)
		memcpy(tail, addrs, na);
	if (nf)
		memcpy(tail + na, frames, nf);
	if (strings_len)
		memcpy(tail + na + nf, strings, strings_len);
	dg_record(g, &s, sizeof s, tail, na + nf + strings_len, 0);
	free(tail);
}

/* Free/total after a failed allocation of tid whose call began at call_ts. */
static inline void dg_meminfo(struct dg *g, uint64_t ts, uint64_t call_ts, uint32_t tid,
			      int16_t device, uint64_t free_bytes, uint64_t total)
{
	struct ct_rec_meminfo mi;
	memset(&mi, 0, sizeof mi);
	mi.rec.type = CT_REC_MEMINFO;
	mi.ts_ns = ts;
	mi.call_ts_ns = call_ts;
	mi.tid = tid;
	mi.device = device;
	mi.free_bytes = free_bytes;
	mi.total_bytes = total;
	dg_record(g, &mi, sizeof mi, NULL, 0, 0);
}

/* An instant (cumtrace_mark). */
static inline void dg_mark(struct dg *g, uint64_t ts, uint32_t tid, const char *name)
{
	dg_mark_kind(g, ts, tid, CT_MARK_INSTANT, 0, name);
}

/*
 * A CT_REC_ZSTD record with these header fields around frame (frame_size
 * bytes), padded to size (0: the smallest size that holds it).
 */
static inline void dg_zstd_rec(struct dg *g, uint32_t raw_size, const void *frame,
			       uint32_t frame_size, uint32_t size)
{
	struct ct_rec_zstd z;
	memset(&z, 0, sizeof z);
	z.rec.type = CT_REC_ZSTD;
	z.rec.size = size ? size : CT_REC_ALIGN((uint32_t)sizeof z + frame_size);
	z.raw_size = raw_size;
	z.frame_size = frame_size;
	dg_mark_record(g);
	dg_bytes(g, &z, sizeof z);
	dg_bytes(g, frame, frame_size);
	if (z.rec.size > sizeof z + frame_size)
		dg_zeros(g, z.rec.size - sizeof z - frame_size);
}

/* One zstd frame (with checksum) of n bytes at raw, into a malloc'ed buffer. */
static inline void *dg_zstd_frame(const void *raw, size_t n, size_t *frame_size)
{
	size_t cap = ZSTD_compressBound(n);
	void *frame = malloc(cap);
	ZSTD_CCtx *c = ZSTD_createCCtx();
	if (!frame || !c)
		abort();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	*frame_size = ZSTD_compress2(c, frame, cap, raw, n);
	ZSTD_freeCCtx(c);
	if (ZSTD_isError(*frame_size))
		abort();
	return frame;
}

/* n bytes of whole records at raw, as the shim writes them: one CT_REC_ZSTD. */
static inline void dg_zstd(struct dg *g, const void *raw, size_t n)
{
	size_t fs;
	void *frame = dg_zstd_frame(raw, n, &fs);
	dg_zstd_rec(g, (uint32_t)n, frame, (uint32_t)fs, 0);
	free(frame);
}

/* Write the dump to path; 0 on success. */
static inline int dg_write(const struct dg *g, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(g->p, 1, g->n, f);
	return (fclose(f) == 0 && w == g->n) ? 0 : -1;
}

#endif
