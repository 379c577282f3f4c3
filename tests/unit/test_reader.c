/* Unit tests of the dump reader (analyzer/read/reader.c). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckmain.h"
#include "../../analyzer/model/model.h"
#include "../../analyzer/read/reader.h"
#include "dumpgen.h"

/* ---- a recording consumer ---------------------------------------------------------------- */

struct rec_log {
	size_t nev;
	uint64_t ts[256];
	uint32_t tid[256];
	uint64_t ptr[256];
	struct ct_rec_event last;
	size_t nstack, nmodule, nprocess, nend, ndrops, nbatch, nmark, nunknown;
	unsigned unknown_type;
	uint64_t unknown_off;
	char path[256];
	unsigned stack_depth;
	uint64_t stack_ip0;
	char kv[1024];
	size_t nsymbols;
	uint32_t sym_naddrs, sym_nframes;
	char sym_text[256]; /* "module:offset=function@file_short:line,..." of the last record */
};

static void l_event(void *ctx, const struct ct_rec_event *ev)
{
	struct rec_log *l = ctx;
	if (l->nev < 256) {
		l->ts[l->nev] = ev->ts_ns;
		l->tid[l->nev] = ev->tid;
		l->ptr[l->nev] = ev->ptr;
	}
	l->nev++;
	l->last = *ev;
}

static void l_stack(void *ctx, uint32_t id, unsigned depth, const uint64_t *ips)
{
	struct rec_log *l = ctx;
	(void)id;
	l->nstack++;
	l->stack_depth = depth;
	l->stack_ip0 = depth ? ips[0] : 0;
}

static void l_module(void *ctx, const struct ct_rec_module *m, const uint8_t *bid, const char *path,
		     size_t len)
{
	struct rec_log *l = ctx;
	(void)m;
	(void)bid;
	l->nmodule++;
	snprintf(l->path, sizeof l->path, "%.*s", (int)strnlen(path, len), path);
}

static void l_process(void *ctx, const struct ct_rec_process *p, const char *s, size_t len)
{
	struct rec_log *l = ctx;
	(void)p;
	l->nprocess++;
	size_t pos = 0, kl, vl;
	const char *k, *v;
	l->kv[0] = 0;
	while (ct_process_next_kv(s, len, &pos, &k, &kl, &v, &vl)) {
		size_t n = strlen(l->kv);
		snprintf(l->kv + n, sizeof l->kv - n, "[%.*s|%.*s]", (int)kl, k, (int)vl, v);
	}
}

static void l_end(void *ctx, const struct ct_rec_end *e)
{
	(void)e;
	((struct rec_log *)ctx)->nend++;
}

static void l_drops(void *ctx, const struct ct_rec_drops *d)
{
	(void)d;
	((struct rec_log *)ctx)->ndrops++;
}

static void l_batch(void *ctx, const struct ct_rec_batch *b)
{
	(void)b;
	((struct rec_log *)ctx)->nbatch++;
}

static void l_mark(void *ctx, const struct ct_rec_mark *m, const char *name, size_t len)
{
	(void)m;
	(void)name;
	(void)len;
	((struct rec_log *)ctx)->nmark++;
}

static void l_unknown(void *ctx, unsigned type, uint64_t off, uint32_t size)
{
	struct rec_log *l = ctx;
	(void)size;
	l->nunknown++;
	l->unknown_type = type;
	l->unknown_off = off;
}

static void l_symbols(void *ctx, const struct ct_rec_symbols *h, const struct ct_sym_addr *addrs,
		      const struct ct_sym_frame *frames, const char *strings)
{
	struct rec_log *l = ctx;
	l->nsymbols++;
	l->sym_naddrs = h->naddrs;
	l->sym_nframes = h->nframes;
	l->sym_text[0] = 0;
	uint32_t fi = 0;
	for (uint32_t i = 0; i < h->naddrs; i++)
		for (uint32_t k = 0; k < addrs[i].nframes; k++, fi++) {
			const struct ct_sym_frame *f = &frames[fi];
			size_t n = strlen(l->sym_text);
			snprintf(l->sym_text + n, sizeof l->sym_text - n, "%u:%#llx=%s@%s:%u,",
				 addrs[i].module, (unsigned long long)addrs[i].offset,
				 f->function == CT_SYM_NONE ? "-" : strings + f->function,
				 f->file_short == CT_SYM_NONE ? "-" : strings + f->file_short, f->line);
		}
}

static struct ct_reader_cb log_cb(struct rec_log *l)
{
	memset(l, 0, sizeof *l);
	struct ct_reader_cb cb = {.ctx = l,
				  .process = l_process,
				  .event = l_event,
				  .stack = l_stack,
				  .module = l_module,
				  .drops = l_drops,
				  .batch = l_batch,
				  .end = l_end,
				  .mark = l_mark,
				  .unknown = l_unknown,
				  .symbols = l_symbols};
	return cb;
}

static int read_g(const struct dg *g, size_t len, struct rec_log *l, struct ct_read_result *res,
		  size_t chunk)
{
	struct ct_reader_cb cb = log_cb(l);
	struct ct_read_opts o = {.chunk_size = chunk};
	return ct_read_mem(g->p, len, &o, &cb, res);
}

/* A small dump with one record of each kind. */
static void small_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 42, 1, 1000, (const char *[]){"version=0.1.0", "host=box", "argv=prog", "argv=a b", NULL});
	uint64_t ips[3] = {0x401000, 0x401100, 0x401200};
	dg_module(g, 0x400000, 0x400000, 0x500000, (const uint8_t *)"\x01\x02\x03\x04", 4, "/bin/prog");
	dg_stack(g, 1, 3, ips);
	dg_batch(g, 1500, 0);
	dg_alloc(g, 2000, 0x1000, 4096, 1);
	dg_alloc(g, 2100, 0x2000, 8192, 1);
	dg_mark(g, 2150, 1, "phase");
	dg_free(g, 2200, 0x1000);
	dg_drops(g, 2300, 5, 1);
	dg_end(g, 3000);
}

/* ---- tests -------------------------------------------------------------------------------- */

START_TEST(header_only)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(res.records, 0);
	ck_assert_uint_eq(l.nev, 0);
	dg_release(&g);
}
END_TEST

/* What reading small_dump (or small_dump_zstd) must deliver. */
static void expect_small_dump(const struct rec_log *lp, const struct ct_read_result *res)
{
	const struct rec_log l = *lp;
	ck_assert_uint_eq(res->records, 10);
	ck_assert_uint_eq(l.nev, 3);
	ck_assert_uint_eq(l.nprocess, 1);
	ck_assert_uint_eq(l.nmodule, 1);
	ck_assert_str_eq(l.path, "/bin/prog");
	ck_assert_uint_eq(l.nstack, 1);
	ck_assert_uint_eq(l.stack_depth, 3);
	ck_assert_uint_eq(l.stack_ip0, 0x401000);
	ck_assert_uint_eq(l.nbatch, 1);
	ck_assert_uint_eq(l.nmark, 1);
	ck_assert_uint_eq(l.ndrops, 1);
	ck_assert_uint_eq(l.nend, 1);
	ck_assert_str_eq(l.kv, "[version|0.1.0][host|box][argv|prog][argv|a b]");
	ck_assert_uint_eq(l.ts[0], 2000);
	ck_assert_uint_eq(l.ts[1], 2100);
	ck_assert_uint_eq(l.ts[2], 2200);
	ck_assert_uint_eq(l.ptr[2], 0x1000);
}

START_TEST(all_record_types)
{
	struct dg g;
	small_dump(&g);
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	expect_small_dump(&l, &res);
	dg_release(&g);
}
END_TEST

START_TEST(chunk_sizes_agree)
{
	struct dg g;
	small_dump(&g);
	static const size_t chunks[] = {1, 2, 7, 8, 13, 64, 4096, 0};
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		struct rec_log l;
		struct ct_read_result res;
		ck_assert_int_eq(read_g(&g, g.n, &l, &res, chunks[c]), CT_READ_OK);
		ck_assert_uint_eq(res.records, 10);
		ck_assert_uint_eq(l.nev, 3);
		ck_assert_uint_eq(res.file_bytes, g.n);
	}
	dg_release(&g);
}
END_TEST

START_TEST(bad_magic_and_version)
{
	struct dg g;
	struct rec_log l;
	struct ct_read_result res;
	dg_init(&g);
	dg_header(&g);
	g.p[0] = 'X';
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "bad magic"));
	dg_release(&g);

	dg_init(&g);
	dg_header_v(&g, 2, 16);
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "version 2"));
	dg_release(&g);

	dg_init(&g);
	dg_header_v(&g, 1, 8);
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "header size"));
	dg_release(&g);

	/* a longer header (a later minor version) is skipped */
	dg_init(&g);
	dg_header_v(&g, 1, 32);
	dg_alloc(&g, 10, 0x10, 16, 0);
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(l.nev, 1);
	dg_release(&g);

	/* empty */
	ck_assert_int_eq(ct_read_mem("", 0, NULL, NULL, &res), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "empty"));
}
END_TEST

/* Every prefix of a dump: an error only while the file header is incomplete. */
START_TEST(truncation_at_every_offset)
{
	struct dg g;
	small_dump(&g);
	for (size_t len = 0; len <= g.n; len++) {
		struct rec_log l;
		struct ct_read_result res;
		int st = read_g(&g, len, &l, &res, len % 2 ? 3 : 0);
		if (len < sizeof(struct ct_file_header)) {
			ck_assert_int_eq(st, CT_READ_ERROR);
			continue;
		}
		/* records complete before len */
		size_t complete = 0, boundary = len == sizeof(struct ct_file_header);
		size_t partial_off = 0;
		for (size_t r = 0; r < g.nrec; r++) {
			size_t end = r + 1 < g.nrec ? g.offs[r + 1] : g.n;
			if (end <= len)
				complete++;
			else if (g.offs[r] < len && !partial_off)
				partial_off = g.offs[r];
			if (end == len)
				boundary = 1;
		}
		if (boundary) {
			ck_assert_msg(st == CT_READ_OK, "len %zu: status %d (%s)", len, st, res.error);
		} else {
			ck_assert_msg(st == CT_READ_TRUNCATED, "len %zu: status %d (%s)", len, st,
				      res.error);
			ck_assert_uint_eq(res.truncated_offset, partial_off);
		}
		ck_assert_uint_eq(res.records, complete);

		/* the whole model must cope as well */
		struct ct_model m;
		ct_model_init(&m);
		ct_symtab_set_symbolize(m.syms, 0);
		ck_assert_int_eq(ct_model_load_mem(&m, g.p, len, NULL), st);
		ck_assert_uint_le(m.events, 3);
		ct_model_free(&m);
	}
	dg_release(&g);
}
END_TEST

static void expect_corrupt(struct dg *g, size_t off, const char *what)
{
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(g, g->n, &l, &res, 0), CT_READ_ERROR);
	char want[64];
	snprintf(want, sizeof want, "corrupt record at offset %zu:", off);
	ck_assert_msg(strstr(res.error, want), "error '%s' lacks '%s'", res.error, want);
	ck_assert_msg(strstr(res.error, what), "error '%s' lacks '%s'", res.error, what);
	ck_assert_uint_eq(res.error_offset, off);
	/* the same through the model */
	struct ct_model m;
	ct_model_init(&m);
	ck_assert_int_eq(ct_model_load_mem(&m, g->p, g->n, NULL), CT_READ_ERROR);
	ct_model_free(&m);
}

START_TEST(corrupt_sizes)
{
	struct dg g;
	size_t off;

	dg_init(&g);
	dg_header(&g);
	dg_alloc(&g, 10, 0x10, 16, 0);
	off = g.n;
	dg_raw(&g, CT_REC_EVENT, 3, NULL, 0);
	dg_zeros(&g, 64);
	expect_corrupt(&g, off, "size 3 below minimum 8");
	dg_release(&g);

	dg_init(&g);
	dg_header(&g);
	off = g.n;
	dg_raw(&g, 77, 0, NULL, 0);
	expect_corrupt(&g, off, "size 0 below minimum 8");
	dg_release(&g);

	dg_init(&g);
	dg_header(&g);
	off = g.n;
	dg_raw(&g, 77, 12, NULL, 0);
	dg_zeros(&g, 4);
	expect_corrupt(&g, off, "not a multiple of 8");
	dg_release(&g);

	/* too large: even when the file is shorter, the size itself is corrupt */
	dg_init(&g);
	dg_header(&g);
	off = g.n;
	struct ct_rec big = {.type = CT_REC_EVENT, .size = CT_REC_MAX + 8};
	dg_bytes(&g, &big, sizeof big);
	dg_zeros(&g, 100);
	expect_corrupt(&g, off, "above maximum");
	dg_release(&g);

	/* shorter than the event's fixed part */
	dg_init(&g);
	dg_header(&g);
	dg_alloc(&g, 10, 0x10, 16, 0);
	off = g.n;
	dg_raw(&g, CT_REC_EVENT, 72, NULL, 0);
	expect_corrupt(&g, off, "shorter than its fixed part (80 bytes)");
	dg_release(&g);

	dg_init(&g);
	dg_header(&g);
	off = g.n;
	dg_raw(&g, CT_REC_PROCESS, 16, NULL, 0);
	expect_corrupt(&g, off, "process record of 16 bytes");
	dg_release(&g);

	/* stack depth above CT_STACK_MAX */
	dg_init(&g);
	dg_header(&g);
	off = g.n;
	{
		struct ct_rec_stack s = {.rec = {.type = CT_REC_STACK}, .stack_id = 1, .depth = 300};
		dg_record(&g, &s, sizeof s, NULL, 0, 300 * 8);
	}
	expect_corrupt(&g, off, "stack depth 300 above maximum 256");
	dg_release(&g);

	/* stack depth inconsistent with the size */
	dg_init(&g);
	dg_header(&g);
	off = g.n;
	{
		struct ct_rec_stack s = {.rec = {.type = CT_REC_STACK}, .stack_id = 1, .depth = 4};
		uint64_t ips[2] = {1, 2};
		dg_record(&g, &s, sizeof s, ips, sizeof ips, 0);
	}
	expect_corrupt(&g, off, "stack of depth 4 needs 48 bytes, record has 32");
	dg_release(&g);

	/* module string lengths outside the record */
	dg_init(&g);
	dg_header(&g);
	dg_alloc(&g, 10, 0x10, 16, 0);
	off = g.n;
	{
		struct ct_rec_module m = {.rec = {.type = CT_REC_MODULE}, .build_id_len = 20,
					  .path_len = 100};
		dg_record(&g, &m, sizeof m, "abc", 4, 0);
	}
	expect_corrupt(&g, off, "overflow a record of 56 bytes");
	dg_release(&g);

	/* mark name outside the record */
	dg_init(&g);
	dg_header(&g);
	off = g.n;
	{
		struct ct_rec_mark m = {.rec = {.type = CT_REC_MARK}, .name_len = 9};
		dg_record(&g, &m, sizeof m, "abcd", 4, 0);
	}
	expect_corrupt(&g, off, "mark name (9 bytes)");
	dg_release(&g);
}
END_TEST

START_TEST(unknown_types_skipped)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_alloc(&g, 10, 0x10, 16, 0);
	size_t off = g.n;
	dg_raw(&g, 200, 48, "whatever payload", 16);
	dg_raw(&g, 0x7ffe, 8, NULL, 0); /* a type no version defines */
	dg_raw(&g, CT_REC_TYPE_COUNT, 16, "zzzzzzzz", 8); /* the next type a version will define */
	dg_raw(&g, CT_REC_PAD, 32, NULL, 0);
	dg_alloc(&g, 20, 0x20, 16, 0);
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(l.nev, 2);
	ck_assert_uint_eq(res.unknown_records, 3);
	ck_assert_uint_eq(res.zstd_records, 0);
	ck_assert_uint_eq(l.nunknown, 3);
	(void)off;
	dg_release(&g);
}
END_TEST

START_TEST(longer_records_accepted)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	struct dg_ev e = {.ts = 5, .ptr = 0xabc000, .size = 777, .tid = 9, .stack_id = 3,
			  .api = CT_API_cudaMallocManaged, .op = CT_OP_ALLOC,
			  .kind = CT_KIND_MANAGED, .device = 2, .extra = 40};
	dg_event(&g, &e);
	/* a stack with extra trailing fields after its ips */
	{
		struct ct_rec_stack s = {.rec = {.type = CT_REC_STACK}, .stack_id = 3, .depth = 1};
		uint64_t ip = 0x1234;
		dg_record(&g, &s, sizeof s, &ip, 8, 24);
	}
	dg_end(&g, 10);
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(l.nev, 1);
	ck_assert_uint_eq(l.last.ptr, 0xabc000);
	ck_assert_uint_eq(l.last.size, 777);
	ck_assert_uint_eq(l.last.kind, CT_KIND_MANAGED);
	ck_assert_int_eq(l.last.device, 2);
	ck_assert_uint_eq(l.stack_ip0, 0x1234);
	ck_assert_uint_eq(l.nend, 1);
	dg_release(&g);
}
END_TEST

static void ev_tid(struct dg *g, uint64_t ts, uint32_t tid)
{
	struct dg_ev e = {.ts = ts, .ptr = ts, .tid = tid, .api = CT_API_cudaStreamSynchronize,
			  .op = CT_OP_STREAM_SYNC};
	dg_event(g, &e);
}

START_TEST(reorder_across_batches)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_batch(&g, 25, 0);
	ev_tid(&g, 10, 1);
	ev_tid(&g, 30, 1);
	ev_tid(&g, 20, 2);
	dg_batch(&g, 50, 1);
	ev_tid(&g, 40, 2);
	ev_tid(&g, 45, 1);
	ev_tid(&g, 26, 3); /* in flight at the snapshot: still in order */
	dg_batch(&g, 80, 2);
	ev_tid(&g, 60, 1);
	ev_tid(&g, 55, 2);
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	static const uint64_t want[] = {10, 20, 26, 30, 40, 45, 55, 60};
	ck_assert_uint_eq(l.nev, 8);
	for (size_t i = 0; i < 8; i++)
		ck_assert_uint_eq(l.ts[i], want[i]);
	ck_assert_uint_eq(res.late_events, 0);
	ck_assert_uint_eq(res.batches, 3);

	/* equal timestamps: by tid, then file order */
	dg_release(&g);
	dg_init(&g);
	dg_header(&g);
	dg_batch(&g, 0, 0);
	ev_tid(&g, 100, 7);
	ev_tid(&g, 100, 3);
	ev_tid(&g, 100, 7);
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(l.tid[0], 3);
	ck_assert_uint_eq(l.tid[1], 7);
	ck_assert_uint_eq(l.tid[2], 7);

	/* an event older than one already released is counted as late: the
	 * window reaches 100 ms behind the previous snapshot */
	dg_release(&g);
	dg_init(&g);
	dg_header(&g);
	dg_batch(&g, 200000000, 0);
	ev_tid(&g, 190000000, 1);
	dg_batch(&g, 400000000, 1);
	dg_batch(&g, 600000000, 2); /* releases up to 300 ms */
	ev_tid(&g, 80000000, 2);
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(l.nev, 2);
	ck_assert_uint_eq(res.late_events, 1);
	dg_release(&g);
}
END_TEST

START_TEST(pending_is_bounded)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	for (int i = 0; i < 100; i++)
		ev_tid(&g, 1000 + (uint64_t)i, 1);
	struct rec_log l;
	struct ct_read_result res;
	struct ct_reader_cb cb = log_cb(&l);
	struct ct_read_opts o = {.max_pending = 8};
	ck_assert_int_eq(ct_read_mem(g.p, g.n, &o, &cb, &res), CT_READ_OK);
	ck_assert_uint_eq(l.nev, 100);
	ck_assert_uint_eq(res.max_pending_seen, 8); /* never one more: a queue's ring never outgrows it */
	ck_assert_uint_eq(res.forced_releases, 92);
	for (size_t i = 1; i < 100; i++)
		ck_assert_uint_lt(l.ts[i - 1], l.ts[i]);
	dg_release(&g);
}
END_TEST

/*
 * max_record_bytes: the reader stops before the first record past the budget,
 * counting a compressed run at its decompressed size, and says so.
 */
START_TEST(record_budget)
{
	struct dg g, z;
	dg_init(&g);
	dg_init(&z);
	dg_header(&g);
	for (int i = 0; i < 50; i++)
		ev_tid(&z, 1000 + (uint64_t)i, 1);
	dg_zstd(&g, z.p, z.n); /* 50 events, 50 * 80 bytes decompressed */
	size_t after_zstd = g.n;
	for (int i = 0; i < 50; i++)
		ev_tid(&g, 2000 + (uint64_t)i, 1);
	size_t ev_size = (g.n - after_zstd) / 50;
	struct rec_log l;
	struct ct_read_result res;
	struct ct_reader_cb cb = log_cb(&l);

	struct ct_read_opts o = {.max_record_bytes = z.n}; /* the run alone fills it */
	ck_assert_int_eq(ct_read_mem(g.p, g.n, &o, &cb, &res), CT_READ_TRUNCATED);
	ck_assert_int_eq(res.budget_stopped, 1);
	ck_assert_uint_eq(res.truncated_offset, after_zstd);
	ck_assert_uint_eq(l.nev, 50);

	o.max_record_bytes = (after_zstd - sizeof(struct ct_file_header)) + z.n + 10 * ev_size;
	cb = log_cb(&l);
	ck_assert_int_eq(ct_read_mem(g.p, g.n, &o, &cb, &res), CT_READ_TRUNCATED);
	ck_assert_int_eq(res.budget_stopped, 1);
	ck_assert_uint_eq(res.truncated_offset, after_zstd + 10 * ev_size);
	ck_assert_uint_eq(l.nev, 60);

	o.max_record_bytes = 0; /* no limit */
	cb = log_cb(&l);
	ck_assert_int_eq(ct_read_mem(g.p, g.n, &o, &cb, &res), CT_READ_OK);
	ck_assert_int_eq(res.budget_stopped, 0);
	ck_assert_uint_eq(l.nev, 100);
	dg_release(&z);
	dg_release(&g);
}
END_TEST

START_TEST(files_and_non_files)
{
	char dir[] = "/tmp/ct_reader_XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[300];
	struct ct_read_result res;

	snprintf(path, sizeof path, "%s/dump.bin", dir);
	struct dg g;
	small_dump(&g);
	ck_assert_int_eq(dg_write(&g, path), 0);
	struct rec_log l;
	struct ct_reader_cb cb = log_cb(&l);
	struct ct_read_opts o = {.chunk_size = 5};
	ck_assert_int_eq(ct_read_file(path, &o, &cb, &res), CT_READ_OK);
	ck_assert_uint_eq(l.nev, 3);
	ck_assert_uint_eq(res.file_bytes, g.n);
	/* truncated on disk */
	ck_assert_int_eq(truncate(path, (off_t)g.n - 3), 0);
	ck_assert_int_eq(ct_read_file(path, NULL, &cb, &res), CT_READ_TRUNCATED);
	ck_assert_uint_eq(res.truncated_offset, g.offs[g.nrec - 1]);
	unlink(path);
	dg_release(&g);

	ck_assert_int_eq(ct_read_file(dir, NULL, NULL, &res), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "directory"));

	snprintf(path, sizeof path, "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(ct_read_file(path, NULL, NULL, &res), CT_READ_ERROR); /* must not block */
	ck_assert_ptr_nonnull(strstr(res.error, "not a regular file"));
	unlink(path);

	snprintf(path, sizeof path, "%s/empty", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(ct_read_file(path, NULL, NULL, &res), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "empty"));
	unlink(path);

	snprintf(path, sizeof path, "%s/missing", dir);
	ck_assert_int_eq(ct_read_file(path, NULL, NULL, &res), CT_READ_ERROR);
	ck_assert_ptr_nonnull(strstr(res.error, "cannot open"));

	ck_assert_int_eq(ct_read_file("/dev/null", NULL, NULL, &res), CT_READ_ERROR);
	rmdir(dir);
}
END_TEST

START_TEST(process_strings)
{
	static const char s[] = "a=1\0\0argv=x=y\0noval\0tail=unterminated";
	size_t pos = 0, kl, vl;
	const char *k, *v;
	char out[256] = "";
	while (ct_process_next_kv(s, sizeof s - 1, &pos, &k, &kl, &v, &vl)) {
		size_t n = strlen(out);
		snprintf(out + n, sizeof out - n, "[%.*s|%.*s]", (int)kl, k, (int)vl, v);
	}
	ck_assert_str_eq(out, "[a|1][argv|x=y][noval|][tail|unterminated]");
}
END_TEST


/*
 * A CT_REC_SYMBOLS record: address 0x10 of module 0 has one frame, address
 * 0x20 an inlined frame and its caller. Strings: "f\0/src/a.c\0g\0/src/b.h\0"
 * (offsets 0, 2, 11, 13); the short names point into the file names.
 */
static const char sym_strings[] = "f\0/src/a.c\0g\0/src/b.h";
static const struct ct_sym_addr sym_addrs[2] = {{.offset = 0x10, .module = 0, .nframes = 1},
						{.offset = 0x20, .module = 0, .nframes = 2}};
static const struct ct_sym_frame sym_frames[3] = {
	{.function = 0, .file = 2, .file_short = 7, .line = 7},
	{.function = 11, .file = 13, .file_short = 18, .line = 3},
	{.function = 0, .file = 2, .file_short = CT_SYM_NONE, .line = 9}};

/* A dump whose record at *off is sym_* (possibly altered by the caller). */
static void symbols_dump(struct dg *g, size_t *off, const struct ct_sym_addr *addrs,
			 const struct ct_sym_frame *frames, const char *strings, uint32_t slen)
{
	dg_init(g);
	dg_header(g);
	dg_module(g, 0x1000, 0x1000, 0x2000, NULL, 0, "/lib/x.so");
	*off = g->n;
	dg_symbols(g, 2, addrs, 3, frames, strings, slen);
	dg_end(g, 10);
}

START_TEST(symbols_record)
{
	struct dg g;
	size_t off;
	symbols_dump(&g, &off, sym_addrs, sym_frames, sym_strings, sizeof sym_strings);
	static const size_t chunks[] = {0, 5, 64};
	for (size_t c = 0; c < 3; c++) {
		struct rec_log l;
		struct ct_read_result res;
		ck_assert_int_eq(read_g(&g, g.n, &l, &res, chunks[c]), CT_READ_OK);
		ck_assert_uint_eq(l.nsymbols, 1);
		ck_assert_uint_eq(l.sym_naddrs, 2);
		ck_assert_uint_eq(l.sym_nframes, 3);
		ck_assert_str_eq(l.sym_text, "0:0x10=f@a.c:7,0:0x20=g@b.h:3,0:0x20=f@-:9,");
		ck_assert_uint_eq(res.unknown_records, 0);
		ck_assert_uint_eq(l.nend, 1);
	}
	/* cut inside it: truncated there, nothing delivered */
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, off + 40, &l, &res, 0), CT_READ_TRUNCATED);
	ck_assert_uint_eq(res.truncated_offset, off);
	ck_assert_uint_eq(l.nsymbols, 0);
	dg_release(&g);
}
END_TEST

START_TEST(symbols_corrupt)
{
	struct dg g;
	size_t off;
	struct ct_sym_addr a[2];
	struct ct_sym_frame f[3];
	char str[sizeof sym_strings];
#define RESET() (memcpy(a, sym_addrs, sizeof a), memcpy(f, sym_frames, sizeof f), \
		 memcpy(str, sym_strings, sizeof str))

	/* more addresses than the record holds */
	RESET();
	symbols_dump(&g, &off, a, f, str, sizeof str);
	{
		uint32_t big = 100000;
		memcpy(g.p + off + 8, &big, 4);
	}
	expect_corrupt(&g, off, "symbols (100000 addresses, 3 frames, 22 bytes of strings) overflow a record of");
	dg_release(&g);

	/* strings that do not end with a NUL */
	RESET();
	symbols_dump(&g, &off, a, f, str, sizeof str - 1);
	expect_corrupt(&g, off, "symbol strings do not end with a NUL");
	dg_release(&g);

	/* an address without frames, one with too many */
	RESET();
	a[0].nframes = 0;
	symbols_dump(&g, &off, a, f, str, sizeof str);
	expect_corrupt(&g, off, "symbol address 0 has 0 frames (1..64)");
	dg_release(&g);
	RESET();
	a[1].nframes = CT_SYM_FRAMES_MAX + 1;
	symbols_dump(&g, &off, a, f, str, sizeof str);
	expect_corrupt(&g, off, "symbol address 1 has 65 frames (1..64)");
	dg_release(&g);

	/* frame counts that do not add up */
	RESET();
	a[1].nframes = 1;
	symbols_dump(&g, &off, a, f, str, sizeof str);
	expect_corrupt(&g, off, "symbol addresses use 2 frames, record has 3");
	dg_release(&g);

	/* each string offset outside the table */
	for (int which = 0; which < 3; which++) {
		RESET();
		uint32_t *field = which == 0 ? &f[2].function : which == 1 ? &f[1].file : &f[0].file_short;
		*field = sizeof str;
		symbols_dump(&g, &off, a, f, str, sizeof str);
		expect_corrupt(&g, off, "points outside its 22 bytes of strings");
		dg_release(&g);
	}

	/* shorter than its fixed part */
	dg_init(&g);
	dg_header(&g);
	off = g.n;
	dg_raw(&g, CT_REC_SYMBOLS, 16, NULL, 0);
	expect_corrupt(&g, off, "symbols record of 16 bytes is shorter than its fixed part (24 bytes)");
	dg_release(&g);
#undef RESET
}
END_TEST

/*
 * The window against a plain model of it: one list of held events, the
 * smallest (ts, tid, file order) released first, up to the previous snapshot
 * less 100 ms at each batch, when more than max_pending are held, and all at
 * the end. Five threads mostly in order, one in twenty events out of order.
 */
struct ref_ev {
	uint64_t ts;
	uint32_t tid;
	uint64_t seq;
};

static int ref_less(const struct ref_ev *a, const struct ref_ev *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->tid != b->tid)
		return a->tid < b->tid;
	return a->seq < b->seq;
}

static size_t ref_release(struct ref_ev *held, size_t *n, uint64_t upto, int all,
			  struct ref_ev *out, size_t nout)
{
	for (;;) {
		size_t best = SIZE_MAX;
		for (size_t i = 0; i < *n; i++)
			if (best == SIZE_MAX || ref_less(&held[i], &held[best]))
				best = i;
		if (best == SIZE_MAX || (!all && held[best].ts > upto))
			return nout;
		out[nout++] = held[best];
		held[best] = held[--*n];
	}
}

struct got {
	size_t n, cap;
	struct ref_ev *ev;
};

static void got_event(void *ctx, const struct ct_rec_event *ev)
{
	struct got *got = ctx;
	ck_assert_uint_lt(got->n, got->cap);
	got->ev[got->n++] = (struct ref_ev){ev->ts_ns, ev->tid, ev->ptr};
	/* the fields a packed event carries come back as they were written (see below) */
	ck_assert_uint_eq(ev->size, ev->ptr * 4097);
	ck_assert_uint_eq(ev->stream, ev->ptr % 3 ? ev->ptr * 31 : 0);
	ck_assert_uint_eq(ev->api, ev->ptr % 2 ? CT_API_cudaStreamSynchronize : CT_API_cudaDeviceSynchronize);
}

/*
 * n events, at most maxp held; a batch every 100 events. With a small maxp
 * the forced releases. With paced set, the events' times follow the batches'
 * snapshots (0.5 ms an event), so that the batches release them: each thread's
 * queue holds dozens of packed events over several of its blocks, which empty
 * and refill, and a sixth thread's one event every 200 keeps its queue at one
 * or two events, never empty, while its packed bytes move along its blocks.
 */
static void window_case(size_t n, size_t maxp, int paced)
{
	struct ref_ev *want = calloc(n, sizeof *want), *held = calloc(n + 1, sizeof *held);
	size_t nheld = 0, nwant = 0;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	uint64_t now[7] = {0}, prev_snap = 0, seq = 0, rng = 12345;
	int have_prev = 0;
	const uint64_t slack = 100000000;
	for (size_t i = 0; i < n; i++) {
		if (i % 100 == 0) {
			uint64_t snap = (uint64_t)i * (paced ? 500000 : 2000000);
			dg_batch(&g, snap, (uint64_t)i / 100);
			if (have_prev && prev_snap > slack)
				nwant = ref_release(held, &nheld, prev_snap - slack, 0, want, nwant);
			prev_snap = snap;
			have_prev = 1;
		}
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t tid = 1 + (uint32_t)((rng >> 33) % 5);
		now[tid] += 1000000 + (rng >> 40) % 3000000;
		uint64_t ts = now[tid];
		if (paced) {
			ts = (uint64_t)i * 500000 + (rng >> 44) % 400000;
			if (i % 200 == 50)
				tid = 6;
		}
		if ((rng >> 20) % 20 == 0)
			ts -= 5000000; /* behind its thread's previous event */
		if ((rng >> 24) % 50 == 0)
			ts = now[(tid % 5) + 1]; /* a tie with another thread */
		/* fields that change from event to event, so that packed events differ in length */
		struct dg_ev e = {.ts = ts, .ptr = seq, .size = seq * 4097, .stream = seq % 3 ? seq * 31 : 0,
				  .tid = tid,
				  .api = seq % 2 ? CT_API_cudaStreamSynchronize : CT_API_cudaDeviceSynchronize,
				  .op = seq % 2 ? CT_OP_STREAM_SYNC : CT_OP_DEVICE_SYNC};
		dg_event(&g, &e);
		held[nheld++] = (struct ref_ev){ts, tid, seq++};
		if (nheld > maxp) {
			/* release exactly one: the smallest */
			size_t b = 0;
			for (size_t k = 1; k < nheld; k++)
				if (ref_less(&held[k], &held[b]))
					b = k;
			want[nwant++] = held[b];
			held[b] = held[--nheld];
		}
	}
	nwant = ref_release(held, &nheld, 0, 1, want, nwant);
	ck_assert_uint_eq(nwant, n);

	struct got got = {.cap = n, .ev = calloc(n, sizeof(struct ref_ev))};
	struct ct_reader_cb cb = {.ctx = &got};
	cb.event = got_event;
	struct ct_read_opts o = {.max_pending = maxp};
	struct ct_read_result res;
	ck_assert_int_eq(ct_read_mem(g.p, g.n, &o, &cb, &res), CT_READ_OK);
	ck_assert_uint_eq(got.n, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(got.ev[i].seq == want[i].seq, "event %zu: got seq %llu, want %llu", i,
			      (unsigned long long)got.ev[i].seq, (unsigned long long)want[i].seq);
		ck_assert_uint_eq(got.ev[i].ts, want[i].ts);
		ck_assert_uint_eq(got.ev[i].tid, want[i].tid);
	}
	if (maxp < 100)
		ck_assert_uint_gt(res.forced_releases, 0);
	else
		ck_assert_uint_eq(res.forced_releases, 0);
	free(got.ev);
	free(want);
	free(held);
	dg_release(&g);
}

START_TEST(window_matches_one_heap)
{
	window_case(3000, 64, 0);
	window_case(40000, 20000, 1);
}
END_TEST

/* ---- compressed runs (CT_REC_ZSTD) --------------------------------------------------------- */

/*
 * small_dump's records with all but the PROCESS record in two compressed
 * runs of 5 and 4 records, as the shim writes them. *inner_off: the run's
 * offsets in g (2 of them).
 */
static void small_dump_zstd(struct dg *g, size_t inner_off[2])
{
	struct dg a, b;
	dg_init(g);
	dg_header(g);
	dg_process(g, 42, 1, 1000, (const char *[]){"version=0.1.0", "host=box", "argv=prog", "argv=a b", NULL});
	dg_init(&a);
	dg_init(&b);
	uint64_t ips[3] = {0x401000, 0x401100, 0x401200};
	dg_module(&a, 0x400000, 0x400000, 0x500000, (const uint8_t *)"\x01\x02\x03\x04", 4, "/bin/prog");
	dg_stack(&a, 1, 3, ips);
	dg_batch(&a, 1500, 0);
	dg_alloc(&a, 2000, 0x1000, 4096, 1);
	dg_alloc(&a, 2100, 0x2000, 8192, 1);
	dg_mark(&b, 2150, 1, "phase");
	dg_free(&b, 2200, 0x1000);
	dg_drops(&b, 2300, 5, 1);
	dg_end(&b, 3000);
	inner_off[0] = g->n;
	dg_zstd(g, a.p, a.n);
	inner_off[1] = g->n;
	dg_zstd(g, b.p, b.n);
	dg_release(&a);
	dg_release(&b);
}

START_TEST(zstd_reads_like_plain)
{
	struct dg plain, z;
	size_t zoff[2];
	small_dump(&plain);
	small_dump_zstd(&z, zoff);
	static const size_t chunks[] = {0, 3, 64};
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		struct rec_log lp, lz;
		struct ct_read_result rp, rz;
		ck_assert_int_eq(read_g(&plain, plain.n, &lp, &rp, chunks[c]), CT_READ_OK);
		ck_assert_int_eq(read_g(&z, z.n, &lz, &rz, chunks[c]), CT_READ_OK);
		expect_small_dump(&lz, &rz);
		ck_assert_uint_eq(rz.zstd_records, 2);
		ck_assert_uint_eq(rp.zstd_records, 0);
		ck_assert_uint_eq(rz.file_bytes, z.n);
		ck_assert_mem_eq(&lz.last, &lp.last, sizeof lz.last);
	}
	dg_release(&plain);
	dg_release(&z);
}
END_TEST

/* A crash inside a compressed record: the file ends in the middle of it. */
START_TEST(zstd_truncated)
{
	struct dg g;
	size_t zoff[2];
	small_dump_zstd(&g, zoff);
	for (size_t len = zoff[0]; len <= g.n; len++) {
		struct rec_log l;
		struct ct_read_result res;
		int st = read_g(&g, len, &l, &res, len % 2 ? 5 : 0);
		if (len == zoff[0] || len == zoff[1] || len == g.n) {
			ck_assert_int_eq(st, CT_READ_OK);
		} else {
			ck_assert_int_eq(st, CT_READ_TRUNCATED);
			ck_assert_uint_eq(res.truncated_offset, len < zoff[1] ? zoff[0] : zoff[1]);
		}
		/* PROCESS, then 5 records per complete run */
		ck_assert_uint_eq(res.records, len < zoff[1] ? 1 : len < g.n ? 6 : 10);
		ck_assert_uint_eq(l.nev, len < zoff[1] ? 0 : len < g.n ? 2 : 3);
	}
	dg_release(&g);
}
END_TEST

/* A corrupt compressed record: the error names its offset and, for a record
 * inside, the offset in the decompressed run. */
static void expect_zstd_corrupt(struct dg *g, size_t off, long inner, const char *what)
{
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(g, g->n, &l, &res, 0), CT_READ_ERROR);
	char want[96];
	if (inner < 0)
		snprintf(want, sizeof want, "corrupt record at offset %zu:", off);
	else
		snprintf(want, sizeof want, "corrupt record at offset %zu (decompressed byte %ld):",
			 off, inner);
	ck_assert_msg(strstr(res.error, want), "error '%s' lacks '%s'", res.error, want);
	ck_assert_msg(strstr(res.error, what), "error '%s' lacks '%s'", res.error, what);
	ck_assert_uint_eq(res.error_offset, off);
	ck_assert_int_eq(res.error_in_zstd, inner >= 0);
	ck_assert_uint_eq(res.error_zstd_pos, inner >= 0 ? (uint64_t)inner : 0);
	struct ct_model m;
	ct_model_init(&m);
	ck_assert_int_eq(ct_model_load_mem(&m, g->p, g->n, NULL), CT_READ_ERROR);
	ct_model_free(&m);
}

/* g: header, one event, then the caller's records; returns the next offset. */
static size_t zdump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_alloc(g, 10, 0x10, 16, 0);
	return g->n;
}

START_TEST(zstd_corrupt)
{
	struct dg g, in;
	size_t off, fs;
	void *frame;

	/* the inner records: two events */
	dg_init(&in);
	dg_alloc(&in, 20, 0x20, 16, 0);
	dg_free(&in, 30, 0x20);
	frame = dg_zstd_frame(in.p, in.n, &fs);

	off = zdump(&g);
	{
		struct ct_rec_zstd z = {{CT_REC_ZSTD, 0, 32}, 160, 64};
		dg_mark_record(&g);
		dg_bytes(&g, &z, sizeof z);
		dg_zeros(&g, 16);
	}
	expect_zstd_corrupt(&g, off, -1, "zstd frame of 64 bytes overflows a record of 32 bytes");
	dg_release(&g);

	off = zdump(&g);
	dg_zstd_rec(&g, (uint32_t)in.n + 4, frame, (uint32_t)fs, 0);
	expect_zstd_corrupt(&g, off, -1, "zstd record of 164 decompressed bytes");
	dg_release(&g);

	off = zdump(&g);
	dg_zstd_rec(&g, CT_ZSTD_RAW_MAX + 8, frame, (uint32_t)fs, 0);
	expect_zstd_corrupt(&g, off, -1, "(want a multiple of 8, 8 to 4194304)");
	dg_release(&g);

	off = zdump(&g);
	dg_zstd_rec(&g, 0, frame, (uint32_t)fs, 0);
	expect_zstd_corrupt(&g, off, -1, "zstd record of 0 decompressed bytes");
	dg_release(&g);

	/* the frame declares another size than the record */
	off = zdump(&g);
	dg_zstd_rec(&g, (uint32_t)in.n - 8, frame, (uint32_t)fs, 0);
	expect_zstd_corrupt(&g, off, -1, "zstd frame does not declare the record's 152 decompressed bytes");
	dg_release(&g);

	/* two frames, or a frame cut short */
	off = zdump(&g);
	{
		unsigned char two[1024];
		memcpy(two, frame, fs);
		memcpy(two + fs, frame, fs);
		dg_zstd_rec(&g, (uint32_t)in.n, two, (uint32_t)(2 * fs), 0);
	}
	expect_zstd_corrupt(&g, off, -1, "does not hold exactly one zstd frame");
	dg_release(&g);
	off = zdump(&g);
	dg_zstd_rec(&g, (uint32_t)in.n, frame, (uint32_t)fs - 3, 0);
	expect_zstd_corrupt(&g, off, -1, "does not hold exactly one zstd frame");
	dg_release(&g);

	/* damaged compressed bytes: the checksum (or the decoder) refuses them */
	off = zdump(&g);
	dg_zstd_rec(&g, (uint32_t)in.n, frame, (uint32_t)fs, 0);
	g.p[off + 16 + fs - 6] ^= 0x5a;
	expect_zstd_corrupt(&g, off, -1, "zstd frame does not decompress");
	dg_release(&g);
	free(frame);
	dg_release(&in);

	/* records inside: each error names the inner offset */
	struct {
		const char *what;
		long inner;
	} cases[] = {
		{"stack depth 300 above maximum 256", 80},
		{"size 12 is not a multiple of 8", 80},
		{"event record of 88 bytes overruns the decompressed run (80 bytes left)", 80},
		{"zstd record inside a zstd record", 80},
		{"event record of 72 bytes is shorter than its fixed part (80 bytes)", 80},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		dg_init(&in);
		dg_alloc(&in, 20, 0x20, 16, 0);
		if (c == 0) {
			struct ct_rec_stack st = {.rec = {.type = CT_REC_STACK}, .stack_id = 1, .depth = 300};
			dg_record(&in, &st, sizeof st, NULL, 0, 300 * 8);
		} else if (c == 1) {
			dg_raw(&in, CT_REC_EVENT, 12, NULL, 0);
			dg_zeros(&in, 4);
		} else if (c == 2) {
			dg_alloc(&in, 30, 0x30, 16, 0);
			memcpy(in.p + 80 + 4, &(uint32_t){88}, 4);
		} else if (c == 3) {
			dg_zstd_rec(&in, 8, "12345678", 8, 0);
		} else {
			dg_raw(&in, CT_REC_EVENT, 72, NULL, 0);
		}
		off = zdump(&g);
		dg_zstd(&g, in.p, in.n);
		expect_zstd_corrupt(&g, off, cases[c].inner, cases[c].what);
		dg_release(&g);
		dg_release(&in);
	}
}
END_TEST

/* ---- decompressing ahead (zprefetch.h) ------------------------------------------------------ */

#define PF_RUNS 10

/*
 * PF_RUNS compressed runs of 12 events from two threads each, a batch
 * first. *run_off: each run's offset in g.
 */
static void prefetch_dump(struct dg *g, size_t run_off[PF_RUNS])
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 42, 1, 1000, (const char *[]){"version=0.1.0", NULL});
	uint64_t ts = 2000;
	for (size_t r = 0; r < PF_RUNS; r++) {
		struct dg in;
		dg_init(&in);
		dg_batch(&in, ts, r);
		for (unsigned i = 0; i < 6; i++) {
			uint64_t ptr = 0x100000 * (r + 1) + 0x1000 * i;
			struct dg_ev a = {.ts = ts + 7 * i, .op = CT_OP_ALLOC, .ptr = ptr, .size = 4096,
					  .tid = 1 + i % 2, .api = CT_API_cudaMalloc};
			dg_event(&in, &a);
			struct dg_ev f = {.ts = ts + 7 * i + 3, .op = CT_OP_FREE, .ptr = ptr,
					  .tid = 1 + i % 2, .api = CT_API_cudaFree};
			dg_event(&in, &f);
		}
		ts += 1000;
		run_off[r] = g->n;
		dg_zstd(g, in.p, in.n);
		dg_release(&in);
	}
	dg_end(g, ts);
}

/* Read g[0, len) with and without the second thread: the same in every respect. */
static int read_both_agree(const struct dg *g, size_t len, size_t chunk,
			   struct ct_read_result *with)
{
	struct rec_log l1, l2;
	struct ct_read_result r2;
	struct ct_reader_cb cb1 = log_cb(&l1), cb2 = log_cb(&l2);
	struct ct_read_opts o1 = {.chunk_size = chunk}, o2 = {.chunk_size = chunk, .no_prefetch = 1};
	int s1 = ct_read_mem(g->p, len, &o1, &cb1, with);
	int s2 = ct_read_mem(g->p, len, &o2, &cb2, &r2);
	ck_assert_int_eq(s1, s2);
	ck_assert_str_eq(with->error, r2.error);
	ck_assert_uint_eq(with->error_offset, r2.error_offset);
	ck_assert_uint_eq(with->truncated_offset, r2.truncated_offset);
	ck_assert_uint_eq(with->records, r2.records);
	ck_assert_uint_eq(with->events, r2.events);
	ck_assert_uint_eq(with->zstd_records, r2.zstd_records);
	ck_assert_uint_eq(r2.zstd_prefetched, 0);
	ck_assert_uint_eq(l1.nev, l2.nev);
	size_t n = l1.nev < 256 ? l1.nev : 256;
	ck_assert_mem_eq(l1.ts, l2.ts, n * sizeof l1.ts[0]);
	ck_assert_mem_eq(l1.tid, l2.tid, n * sizeof l1.tid[0]);
	ck_assert_mem_eq(l1.ptr, l2.ptr, n * sizeof l1.ptr[0]);
	ck_assert_uint_eq(l1.nbatch, l2.nbatch);
	ck_assert_uint_eq(l1.nend, l2.nend);
	return s1;
}

START_TEST(zstd_prefetch_agrees)
{
	struct dg g;
	size_t off[PF_RUNS];
	prefetch_dump(&g, off);
	static const size_t chunks[] = {0, 3, 64, 700};
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
		struct ct_read_result res;
		ck_assert_int_eq(read_both_agree(&g, g.n, chunks[c], &res), CT_READ_OK);
		ck_assert_uint_eq(res.events, PF_RUNS * 12);
		ck_assert_uint_eq(res.zstd_records, PF_RUNS);
		/* the whole dump fits the buffer: every run after the first went ahead */
		if (chunks[c] == 0)
			ck_assert_uint_eq(res.zstd_prefetched, PF_RUNS - 1);
		ck_assert_uint_le(res.zstd_prefetched, PF_RUNS - 1);
	}
	dg_release(&g);
}
END_TEST

/*
 * A run decompressed ahead that turns out corrupt, or the file ending in the
 * middle of one: the same error, offsets and events as without the thread.
 */
START_TEST(zstd_prefetch_corrupt_and_truncated)
{
	struct dg g;
	size_t off[PF_RUNS];
	prefetch_dump(&g, off);
	struct ct_read_result res;
	for (size_t len = off[PF_RUNS - 3]; len <= g.n; len++)
		read_both_agree(&g, len, len % 3 ? 0 : 64, &res);

	/* damage the compressed bytes of run 4: its checksum fails */
	uint32_t fs;
	memcpy(&fs, g.p + off[4] + offsetof(struct ct_rec_zstd, frame_size), sizeof fs);
	g.p[off[4] + sizeof(struct ct_rec_zstd) + fs / 2] ^= 0x5a;
	ck_assert_int_eq(read_both_agree(&g, g.n, 0, &res), CT_READ_ERROR);
	ck_assert_uint_eq(res.error_offset, off[4]);
	ck_assert_uint_eq(res.zstd_prefetched, 4); /* runs 1-4: run 4 went ahead and failed */
	ck_assert_uint_eq(res.events, 4 * 12);

	/* a record that claims to be a run but is not one: checked when reached */
	dg_release(&g);
	prefetch_dump(&g, off);
	memcpy(g.p + off[6] + offsetof(struct ct_rec_zstd, frame_size), &(uint32_t){1u << 30},
	       sizeof(uint32_t)); /* frame_size past the record */
	ck_assert_int_eq(read_both_agree(&g, g.n, 0, &res), CT_READ_ERROR);
	ck_assert_uint_eq(res.error_offset, off[6]);
	ck_assert_ptr_nonnull(strstr(res.error, "overflows a record"));
	dg_release(&g);

	/* an empty frame first in line (the fuzzer's crash-22f4dcdc...: memcpy from NULL) */
	prefetch_dump(&g, off);
	memset(g.p + off[1] + offsetof(struct ct_rec_zstd, frame_size), 0, sizeof(uint32_t));
	ck_assert_int_eq(read_both_agree(&g, g.n, 0, &res), CT_READ_ERROR);
	ck_assert_uint_eq(res.error_offset, off[1]);
	ck_assert_uint_eq(res.zstd_prefetched, 0);
	dg_release(&g);
}
END_TEST

/* Random byte flips and size rewrites: never a crash, always a defined status. */
/* ---- reading on a second thread (pipe.h) ----------------------------------------------------- */

/* Every callback with every argument, folded into one hash, in call order. */
struct trace {
	uint64_t h;
	size_t calls;
};

static void tr_mix(struct trace *t, unsigned what, const void *p, size_t n)
{
	const unsigned char *b = p;
	t->h = (t->h ^ what) * 0x100000001b3ull;
	for (size_t i = 0; i < n; i++)
		t->h = (t->h ^ b[i]) * 0x100000001b3ull;
	t->h = (t->h ^ n) * 0x100000001b3ull;
}

static void tr_call(struct trace *t, unsigned what)
{
	t->calls++;
	tr_mix(t, what, NULL, 0);
}

static void tr_process(void *ctx, const struct ct_rec_process *p, const char *s, size_t len)
{
	tr_call(ctx, 1);
	tr_mix(ctx, 1, p, sizeof *p);
	tr_mix(ctx, 1, s, len);
}

static void tr_event(void *ctx, const struct ct_rec_event *ev)
{
	tr_call(ctx, 2);
	tr_mix(ctx, 2, ev, sizeof *ev);
}

static void tr_stack(void *ctx, uint32_t id, unsigned depth, const uint64_t *ips)
{
	tr_call(ctx, 3);
	tr_mix(ctx, 3, &id, sizeof id);
	tr_mix(ctx, 3, ips, 8u * depth);
}

static void tr_module(void *ctx, const struct ct_rec_module *m, const uint8_t *bid, const char *path,
		      size_t len)
{
	tr_call(ctx, 4);
	tr_mix(ctx, 4, m, sizeof *m);
	tr_mix(ctx, 4, bid, m->build_id_len);
	tr_mix(ctx, 4, path, len);
}

/* callbacks of one fixed struct, and of a fixed struct and a name */
#define TR_FIXED(fn, type, what)                                                                    \
	static void fn(void *ctx, const type *r)                                                    \
	{                                                                                           \
		tr_call(ctx, what);                                                                 \
		tr_mix(ctx, what, r, sizeof *r);                                                    \
	}
TR_FIXED(tr_drops, struct ct_rec_drops, 5)
TR_FIXED(tr_batch, struct ct_rec_batch, 6)
TR_FIXED(tr_end, struct ct_rec_end, 7)
TR_FIXED(tr_meminfo, struct ct_rec_meminfo, 9)
TR_FIXED(tr_memsample, struct ct_rec_memsample, 16)
#undef TR_FIXED
#define TR_NAMED(fn, type, what)                                                                    \
	static void fn(void *ctx, const type *r, const char *name, size_t len)                      \
	{                                                                                           \
		tr_call(ctx, what);                                                                 \
		tr_mix(ctx, what, r, sizeof *r);                                                    \
		tr_mix(ctx, what, name, len);                                                       \
	}
TR_NAMED(tr_mark, struct ct_rec_mark, 8)
TR_NAMED(tr_counter, struct ct_rec_counter, 10)
#undef TR_NAMED

static void tr_unknown(void *ctx, unsigned type, uint64_t off, uint32_t size)
{
	uint64_t v[3] = {type, off, size};
	tr_call(ctx, 11);
	tr_mix(ctx, 11, v, sizeof v);
}

static void tr_pystring(void *ctx, uint32_t id, const char *str, size_t len)
{
	tr_call(ctx, 12);
	tr_mix(ctx, 12, &id, sizeof id);
	tr_mix(ctx, 12, str, len);
}

static void tr_pystack(void *ctx, uint32_t id, unsigned depth, const struct ct_pyframe *f)
{
	tr_call(ctx, 13);
	tr_mix(ctx, 13, &id, sizeof id);
	tr_mix(ctx, 13, f, depth * sizeof *f);
}

static uint32_t tr_pycombine(void *ctx, uint32_t stack_id, uint32_t pystack_id)
{
	tr_call(ctx, 14);
	tr_mix(ctx, 14, &stack_id, sizeof stack_id);
	tr_mix(ctx, 14, &pystack_id, sizeof pystack_id);
	return stack_id * 1000 + pystack_id;
}

static void tr_symbols(void *ctx, const struct ct_rec_symbols *s, const struct ct_sym_addr *addrs,
		       const struct ct_sym_frame *frames, const char *strings)
{
	tr_call(ctx, 15);
	tr_mix(ctx, 15, s, sizeof *s);
	tr_mix(ctx, 15, addrs, s->naddrs * sizeof *addrs);
	tr_mix(ctx, 15, frames, s->nframes * sizeof *frames);
	tr_mix(ctx, 15, strings, s->strings_len);
	/* the arrays are aligned as the reader's own copies are */
	ck_assert_uint_eq((uintptr_t)addrs % 8, 0);
	ck_assert_uint_eq((uintptr_t)frames % 4, 0);
}

static struct ct_reader_cb trace_cb(struct trace *t)
{
	memset(t, 0, sizeof *t);
	t->h = 0xcbf29ce484222325ull;
	struct ct_reader_cb cb = {.ctx = t,
				  .process = tr_process,
				  .event = tr_event,
				  .stack = tr_stack,
				  .module = tr_module,
				  .drops = tr_drops,
				  .batch = tr_batch,
				  .end = tr_end,
				  .mark = tr_mark,
				  .meminfo = tr_meminfo,
				  .memsample = tr_memsample,
				  .counter = tr_counter,
				  .unknown = tr_unknown,
				  .pystring = tr_pystring,
				  .pystack = tr_pystack,
				  .pycombine = tr_pycombine,
				  .symbols = tr_symbols};
	return cb;
}

/*
 * Every record type, events of three threads out of order across batches,
 * nevents events in all (enough to fill several blocks and the queue), a
 * symbols record larger than a block, some of it in zstd runs.
 */
static void pipe_dump(struct dg *g, size_t nevents)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 42, 1, 1000, (const char *[]){"version=0.1.0", "exe=/bin/train", NULL});
	uint64_t ips[3] = {0x401000, 0x402000, 0x403000};
	dg_stack(g, 1, 3, ips);
	dg_module(g, 0x400000, 0x400000, 0x500000, (const uint8_t *)"\x01\x02\x03\x04", 4, "/bin/train");
	dg_pystring(g, 1, "train.py");
	dg_pystring(g, 2, "step");
	struct ct_pyframe pf[2] = {{1, 2, 10}, {1, 2, 20}};
	dg_pystack(g, 1, 2, pf);
	enum { NA = 12000 }; /* 12000 * (16 + 16) bytes: larger than a block */
	struct ct_sym_addr *addrs = calloc(NA, sizeof *addrs);
	struct ct_sym_frame *frames = calloc(NA, sizeof *frames);
	ck_assert_ptr_nonnull(addrs);
	ck_assert_ptr_nonnull(frames);
	for (uint32_t i = 0; i < NA; i++) {
		addrs[i] = (struct ct_sym_addr){.offset = 16u * i, .module = 0, .nframes = 1};
		frames[i] = (struct ct_sym_frame){.function = 0, .file = CT_SYM_NONE,
						  .file_short = CT_SYM_NONE, .line = i};
	}
	dg_symbols(g, NA, addrs, NA, frames, "main", 5);
	free(addrs);
	free(frames);
	uint64_t ts = 2000;
	for (size_t i = 0, seq = 0; i < nevents; i++) {
		if (i % 997 == 0)
			dg_batch(g, ts, seq++);
		uint32_t tid = 1 + (uint32_t)(i % 3);
		/* thread 3 lags: its events are written after later ones of the others */
		uint64_t t = ts - (tid == 3 ? 50 : 0);
		if (i % 5 == 0)
			dg_alloc_py(g, t, 0x100000 + 0x1000 * i, 4096, 1, 1);
		else {
			struct dg_ev e = {.ts = t, .op = i % 2 ? CT_OP_FREE : CT_OP_ALLOC,
					  .ptr = 0x100000 + 0x1000 * (i - i % 2), .size = 4096,
					  .tid = tid, .api = CT_API_cudaMalloc, .stack_id = 1};
			dg_event(g, &e);
		}
		if (i % 4001 == 0) {
			dg_mark(g, ts, tid, "step");
			dg_meminfo(g, ts, ts - 5, tid, 0, 1u << 20, 1u << 30);
			struct ct_rec_memsample ms;
			memset(&ms, 0, sizeof ms);
			ms.rec.type = CT_REC_MEMSAMPLE;
			ms.ts_ns = ts;
			ms.free_bytes = i;
			ms.total_bytes = 1u << 30;
			dg_record(g, &ms, sizeof ms, NULL, 0, 0);
			dg_drops(g, ts, 3, tid);
			dg_raw(g, 250, 16, NULL, 0); /* unknown type */
		}
		ts += 10;
	}
	dg_end(g, ts);
}

static void write_file(const char *path, const struct dg *g, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(g->p, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* Read path both ways: the same calls, in the same order, and the same result. */
static void pipe_agrees(const char *path, struct ct_read_result *with)
{
	struct trace t1, t2;
	struct ct_read_result r2;
	struct ct_reader_cb cb1 = trace_cb(&t1), cb2 = trace_cb(&t2);
	struct ct_read_opts o1 = {.pipeline = 1}, o2 = {.pipeline = -1};
	int s1 = ct_read_file(path, &o1, &cb1, with);
	int s2 = ct_read_file(path, &o2, &cb2, &r2);
	ck_assert_int_eq(with->pipelined, 1);
	ck_assert_int_eq(r2.pipelined, 0);
	ck_assert_int_eq(s1, s2);
	ck_assert_str_eq(with->error, r2.error);
	ck_assert_uint_eq(with->error_offset, r2.error_offset);
	ck_assert_uint_eq(with->truncated_offset, r2.truncated_offset);
	ck_assert_uint_eq(with->records, r2.records);
	ck_assert_uint_eq(with->events, r2.events);
	ck_assert_uint_eq(with->late_events, r2.late_events);
	ck_assert_uint_eq(t1.calls, t2.calls);
	ck_assert_uint_eq(t1.h, t2.h);
}

START_TEST(pipeline_agrees)
{
	char dir[] = "/tmp/ct-pipe-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/d.dump", dir);
	struct dg g;
	pipe_dump(&g, 30000);
	struct ct_read_result res;
	write_file(path, &g, g.n);
	pipe_agrees(path, &res);
	ck_assert_int_eq(res.status, CT_READ_OK);
	ck_assert_uint_eq(res.events, 30000);
	/* the same records in zstd runs */
	struct dg z;
	dg_init(&z);
	dg_header(&z);
	size_t hdr = z.n, step = 200000;
	for (size_t at = hdr; at < g.n;) {
		/* cut at record boundaries: walk records up to step bytes */
		size_t end = at;
		while (end < g.n && end - at < step) {
			uint32_t sz;
			memcpy(&sz, g.p + end + offsetof(struct ct_rec, size), sizeof sz);
			if (end - at + sz > CT_ZSTD_RAW_MAX)
				break;
			end += sz;
		}
		if (end == at) { /* one record larger than a run: as it is */
			uint32_t sz;
			memcpy(&sz, g.p + at + offsetof(struct ct_rec, size), sizeof sz);
			dg_bytes(&z, g.p + at, sz);
			end = at + sz;
		} else {
			dg_zstd(&z, g.p + at, end - at);
		}
		at = end;
	}
	write_file(path, &z, z.n);
	pipe_agrees(path, &res);
	ck_assert_int_eq(res.status, CT_READ_OK);
	ck_assert_uint_eq(res.events, 30000);
	ck_assert_uint_gt(res.zstd_records, 2);
	/* truncated anywhere, and corrupt: the same again */
	for (size_t cut = g.n / 3; cut < g.n; cut += g.n / 7) {
		write_file(path, &g, cut);
		pipe_agrees(path, &res);
		ck_assert_int_eq(res.status, CT_READ_TRUNCATED);
	}
	size_t bad = g.offs[g.nrec / 2];
	memcpy(g.p + bad + offsetof(struct ct_rec, size), &(uint32_t){3}, 4); /* a record of 3 bytes */
	write_file(path, &g, g.n);
	pipe_agrees(path, &res);
	ck_assert_int_eq(res.status, CT_READ_ERROR);
	ck_assert_uint_eq(res.error_offset, bad);
	dg_release(&z);
	dg_release(&g);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(random_mutations)
{
	struct dg g;
	small_dump(&g);
	unsigned char *buf = malloc(g.n);
	ck_assert_ptr_nonnull(buf);
	srand(777);
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(buf, g.p, g.n);
		int flips = 1 + rand() % 4;
		for (int k = 0; k < flips; k++) {
			size_t at = 16 + (size_t)rand() % (g.n - 16);
			if (rand() % 3 == 0) {
				/* rewrite a record's size or a length field with junk */
				size_t r = (size_t)rand() % g.nrec;
				uint32_t v = (uint32_t)rand();
				if (rand() % 2)
					v %= 256;
				memcpy(buf + g.offs[r] + 4, &v, 4);
			} else {
				buf[at] = (unsigned char)rand();
			}
		}
		size_t len = rand() % 4 ? g.n : 16 + (size_t)rand() % (g.n - 16);
		struct ct_model m;
		ct_model_init(&m);
		ct_symtab_set_symbolize(m.syms, 0);
		int st = ct_model_load_mem(&m, buf, len, NULL);
		ck_assert(st == CT_READ_OK || st == CT_READ_TRUNCATED || st == CT_READ_ERROR);
		if (st == CT_READ_ERROR)
			ck_assert_ptr_nonnull(strstr(m.read.error, "offset"));
		ct_model_free(&m);
	}
	free(buf);
	dg_release(&g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("reader");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, header_only);
	tcase_add_test(tc, all_record_types);
	tcase_add_test(tc, chunk_sizes_agree);
	tcase_add_test(tc, bad_magic_and_version);
	tcase_add_test(tc, truncation_at_every_offset);
	tcase_add_test(tc, corrupt_sizes);
	tcase_add_test(tc, unknown_types_skipped);
	tcase_add_test(tc, longer_records_accepted);
	tcase_add_test(tc, reorder_across_batches);
	tcase_add_test(tc, pending_is_bounded);
	tcase_add_test(tc, record_budget);
	tcase_add_test(tc, files_and_non_files);
	tcase_add_test(tc, process_strings);
	tcase_add_test(tc, random_mutations);
	tcase_add_test(tc, symbols_record);
	tcase_add_test(tc, symbols_corrupt);
	tcase_add_test(tc, window_matches_one_heap);
	tcase_add_test(tc, zstd_reads_like_plain);
	tcase_add_test(tc, zstd_truncated);
	tcase_add_test(tc, zstd_corrupt);
	tcase_add_test(tc, zstd_prefetch_agrees);
	tcase_add_test(tc, zstd_prefetch_corrupt_and_truncated);
	tcase_add_test(tc, pipeline_agrees);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
