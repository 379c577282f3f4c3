/* Unit tests of the dump reader (analyzer/reader.c). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../analyzer/model.h"
#include "../../analyzer/reader.h"
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
				  .unknown = l_unknown};
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

START_TEST(all_record_types)
{
	struct dg g;
	small_dump(&g);
	struct rec_log l;
	struct ct_read_result res;
	ck_assert_int_eq(read_g(&g, g.n, &l, &res, 0), CT_READ_OK);
	ck_assert_uint_eq(res.records, 10);
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
	ck_assert_uint_eq(l.ts[2], 2200);
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
	dg_raw(&g, CT_REC_SYMBOLS, 16, "zzzzzzzz", 8); /* reserved, not read yet */
	dg_raw(&g, 0x7ffe, 8, NULL, 0);		     /* a type no version defines */
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
	ck_assert_uint_le(res.max_pending_seen, 9);
	ck_assert_uint_eq(res.forced_releases, 92);
	for (size_t i = 1; i < 100; i++)
		ck_assert_uint_lt(l.ts[i - 1], l.ts[i]);
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


/* Random byte flips and size rewrites: never a crash, always a defined status. */
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
	tcase_add_test(tc, files_and_non_files);
	tcase_add_test(tc, process_strings);
	tcase_add_test(tc, random_mutations);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
