/* Unit tests of the exports (analyzer/exports/): flame graphs, Perfetto, memory_viz, HTML. */
#define _GNU_SOURCE
#include <check.h>
#include <link.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckmain.h"
#include "../../analyzer/analyses/gate.h"
#include "../../analyzer/base/json.h"
#include "../../analyzer/model/marks.h"
#include "../../analyzer/model/model.h"
#include "../../analyzer/commands/commands.h"
#include "../../analyzer/model/pystack.h"
#include "../../analyzer/commands/symbolize.h"
#include "../../analyzer/analyses/suppress.h"
#include "../../analyzer/read/symbols.h"
#include "../../analyzer/base/util.h"
#include "dumpgen.h"
#include "modelload.h"
#include "golden_dumps.h"
#include "analyzer_test.h"

/* ---- exporters ------------------------------------------------------------------------------------ */

/* A model of g with every command attached under o's exporter options. */
static struct ct_model *load_attached(const struct dg *g, const struct ct_report_opts *o)
{
	struct ct_model *m = malloc(sizeof *m);
	ck_assert_ptr_nonnull(m);
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, 0);
	ct_report_attach_all(m, o);
	int st = ct_model_load_mem(m, g->p, g->n, NULL);
	ck_assert_msg(st != CT_READ_ERROR, "read error: %s", m->read.error);
	return m;
}

__attribute__((noinline)) static char *render_o(struct ct_model *const *ms, size_t n, const struct ct_report_opts *o,
		      size_t *len)
{
	char *buf = NULL;
	size_t l = 0;
	FILE *f = open_memstream(&buf, &l);
	ct_report(f, o, ms, n);
	fclose(f);
	if (len)
		*len = l;
	return buf;
}

/*
 * Python string and stack ids are the dump's: the largest accepted (2^24)
 * work like small ones and take no memory in proportion to them (a table
 * indexed by id took 256 MiB for one record: tests/fuzz/regress/oom-a9311639...).
 */
START_TEST(pystack_sparse_ids)
{
	const uint32_t big = 1u << 24;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 77, 1, 1000, (const char *[]){"argv=prog", NULL});
	pystring(&g, big - 1, "far.py");
	pystring(&g, big, "deep_step");
	pystring(&g, big + 1, "ignored_string"); /* past the limit: not kept */
	struct ct_pyframe far = {big - 1, big, 42}, near = {big - 1, big + 1, 7};
	dg_pystack(&g, big, 1, &far);
	dg_pystack(&g, 3, 1, &near); /* a small id beside it */
	alloc_py(&g, 2000, 0x10000, 4096, 1, 0, big);
	alloc_py(&g, 3000, 0x20000, 8192, 1, 0, 3);
	dg_end(&g, 4000);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .format = CT_FMT_TEXT, .top = 10,
				   .tool_version = "test"};
	struct ct_model *m = load_attached(&g, &o);
	char *out = render_o(&m, 1, &o, NULL);
	ck_assert_msg(strstr(out, "deep_step") && strstr(out, "far.py:42"), "%s", out);
	ck_assert_msg(strstr(out, "far.py:7") && !strstr(out, "ignored_string"), "%s", out);
	free(out);
	ct_model_free(m);
	free(m);
	dg_release(&g);
}
END_TEST

/* 1 when the n bytes at s are valid UTF-8. */
static int valid_utf8(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0, l; i < n; i += l)
		if (!(l = p[i] < 0x80 ? 1 : ct_utf8_seq(p + i, n - i)))
			return 0;
	return 1;
}

/*
 * Issue 14, item 10: dump strings that a spreadsheet would run as formulas,
 * and bytes that are not UTF-8, in every command and format: CSV text cells
 * get a ' and quotes, every text output (all but the pickle) is valid UTF-8.
 */
START_TEST(hostile_strings_every_format)
{
	static const char *const funcs[] = {"=HYPERLINK(\"http://x\",\"y\")", "+cmd|' /C calc'!A0",
					    "-2+3", "@SUM(A1)", "\tx", "ok\xff\xfe"};
	const size_t nf = sizeof funcs / sizeof funcs[0];
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 77, 1, 1000,
		   (const char *[]){"argv=prog\xc3(", "exe=/bin/\xff=x", "host=h\x80", NULL});
	dg_module(&g, 0x400000, 0x400000, 0x480000, NULL, 0, "/lib/=evil\xe0\x80.so");
	pystring(&g, 1, "=file\xc0\xaf.py");
	for (size_t i = 0; i < nf; i++) {
		pystring(&g, (uint32_t)(2 + i), funcs[i]);
		struct ct_pyframe fr = {1, (uint32_t)(2 + i), (int32_t)i + 1};
		dg_pystack(&g, (uint32_t)(1 + i), 1, &fr);
	}
	uint64_t ips[2] = {0x401000, 0x402000};
	dg_stack(&g, 1, 2, ips);
	dg_mark(&g, 1500, 1, "=mark\xed\xa0\x80");
	for (size_t i = 0; i < nf; i++)
		alloc_py(&g, 2000 + 100 * i, 0x10000 * (i + 1), 4096, 1, 1, (uint32_t)(1 + i));
	dg_end(&g, 4000);
	ct_frames_set_mode(CT_FRAMES_PYTHON); /* the Python function first in the stack cell */
	for (int c = 0; c < CT_CMD_COUNT; c++) {
		const struct ct_command *cmd = ct_command_get(c);
		for (int fmt = 0; fmt < CT_FMT_COUNT; fmt++) {
			if (!(cmd->formats & 1u << fmt) || fmt == CT_FMT_PICKLE)
				continue;
			struct ct_report_opts o = {.cmd = c, .format = fmt, .buckets = 8, .top = 0,
						   .tool_version = "test", .flame_of = CT_FLAME_ALLOCS};
			struct ct_model *m[2];
			m[0] = load_attached(&g, &o);
			m[1] = load_attached(&g, &o);
			size_t n = cmd->min_dumps > 1 ? 2 : 1, len;
			char *out = render_o(m, n, &o, &len);
			ck_assert_msg(valid_utf8(out, len), "%s --format %s: not UTF-8:\n%s", cmd->name,
				      ct_fmt_name(fmt), out);
			if (fmt == CT_FMT_CSV) {
				for (size_t i = 0; i < len; i++) {
					if (i && out[i - 1] != ',' && out[i - 1] != '\n')
						continue;
					const char *cell = out + i + (out[i] == '"');
					ck_assert_msg(!strchr("=+@\t", *cell) || !*cell,
						      "%s --format csv: a formula cell at %zu:\n%s", cmd->name,
						      i, out);
				}
				if (c == CT_CMD_LEAKS) {
					ck_assert_msg(strstr(out, ",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\") "),
						      "%s", out);
					ck_assert_msg(strstr(out, ",\"'+cmd|' /C calc'!A0 (") &&
							      strstr(out, ",\"'-2+3 (") &&
							      strstr(out, ",\"'@SUM(A1) (") &&
							      strstr(out, "ok\\xff\\xfe ("),
						      "%s", out);
				}
			}
			free(out);
			for (size_t k = 0; k < 2; k++) {
				ct_model_free(m[k]);
				free(m[k]);
			}
		}
	}
	dg_release(&g);
}
END_TEST

/* The exporters' dump as the model sees it (its exports: tests/golden/cases/export-*). */
START_TEST(export_dump_facts)
{
	struct dg g;
	export_dump(&g);
	struct ct_report_opts o = {.buckets = 20, .top = 20, .tool_version = "test", .counter_us = 0};
	struct ct_model *m = load_attached(&g, &o);
	ck_assert_uint_eq(m->allocations, 7);
	ck_assert_uint_eq(m->failed_calls, 1);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Sum of the values of folded lines. */
static uint64_t folded_total(const char *s)
{
	uint64_t t = 0;
	for (const char *line = s; *line;) {
		const char *nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		const char *sp = nl;
		while (sp > line && sp[-1] != ' ')
			sp--;
		ck_assert(sp > line);
		t += strtoull(sp, NULL, 10);
		line = nl + 1;
	}
	return t;
}

START_TEST(flame_totals_match_the_reports)
{
	struct dg g;
	export_dump(&g);
	struct ct_report_opts o = {.top = 0, .tool_version = "test", .cmd = CT_CMD_FLAMEGRAPH,
				   .format = CT_FMT_FOLDED};
	struct ct_model *ms[2];
	ms[0] = load_attached(&g, &o);
	dg_release(&g);
	golden_dump(&g);
	ms[1] = load_attached(&g, &o);
	dg_release(&g);
	uint64_t alloc_bytes = 0;
	for (int d = 0; d < 2; d++)
		for (unsigned k = 0; k < CT_KIND_COUNT; k++)
			alloc_bytes += ms[d]->kind_total[k].bytes_allocated;
	const uint64_t want[3] = {ms[0]->leak_bytes + ms[1]->leak_bytes,
				  ms[0]->peak_bytes + ms[1]->peak_bytes, alloc_bytes};
	/* the 8 MiB block was allocated over (not a leak); the device reset's two are */
	ck_assert_uint_eq(want[0], (16u << 10) + (1u << 20) + (512u << 10) + (64u << 10) + 11599872);
	for (int of = CT_FLAME_LEAKS; of <= CT_FLAME_ALLOCS; of++) {
		o.flame_of = of;
		for (size_t n = 1; n <= 2; n++) {
			char *out = render_o(ms, n, &o, NULL);
			uint64_t w = n == 1 ? (of == CT_FLAME_LEAKS	? ms[0]->leak_bytes
					       : of == CT_FLAME_PEAK ? ms[0]->peak_bytes
								     : 0)
					    : want[of];
			if (n == 1 && of == CT_FLAME_ALLOCS)
				for (unsigned k = 0; k < CT_KIND_COUNT; k++)
					w += ms[0]->kind_total[k].bytes_allocated;
			ck_assert_msg(folded_total(out) == w, "--of %d, %zu dumps: %llu != %llu", of, n,
				      (unsigned long long)folded_total(out), (unsigned long long)w);
			/* two dumps: every line starts at its process */
			if (n == 2)
				ck_assert(!strncmp(out, "[pid ", 5));
			free(out);
		}
	}
	unload(ms[0]);
	unload(ms[1]);
}
END_TEST

/* The counter lines ("ph":"C") of a trace, joined. */
static char *counter_lines(const char *trace)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	for (const char *l = trace; (l = strstr(l, "{\"ts\":"));) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (memmem(l, n, "\"ph\":\"C\"", 8)) {
			const char *ts = l + 6, *bytes = memmem(l, n, "\"bytes\":", 8);
			fprintf(f, "%.*s=%.*s ", (int)(strchr(ts, ',') - ts), ts,
				(int)(strchr(bytes, '}') - bytes - 8), bytes + 8);
		}
		l += n;
	}
	fclose(f);
	return buf;
}

START_TEST(perfetto_counters_keep_the_most_per_interval)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000000, (const char *[]){"argv=p", NULL});
	/* interval [2 ms, 3 ms): 100 small pairs, one 1 MiB block live for 1 us in the middle */
	for (int i = 0; i < 100; i++) {
		uint64_t t = 2000000 + (uint64_t)i * 5000;
		dg_alloc(&g, t, 0x1000, 4096, 1);
		if (i == 50) {
			dg_alloc(&g, t + 100, 0x900000, 1 << 20, 1);
			dg_free(&g, t + 1100, 0x900000);
		}
		dg_free(&g, t + 2000, 0x1000);
	}
	/* nothing until 7.5 ms: one sample for the gap, then the new interval */
	dg_alloc(&g, 7500000, 0x2000, 100, 1);
	dg_end(&g, 8000000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_PERFETTO,
				   .format = CT_FMT_JSON, .counter_us = 1000};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	char *out = render_o(one, 1, &o, NULL);
	char *c = counter_lines(out);
	/* first change at 1.000 ms after the start; max 1 MiB + 4 KiB; 0 from 3 ms; 100 at 6.5 ms */
	ck_assert_str_eq(c, "1000.000=1052672 2000.000=0 6500.000=100 ");
	free(c);
	free(out);
	unload(m);
	/* every change: 100 x (4096, 0) plus the 1 MiB block, then the last one */
	o.counter_us = 0;
	m = load_attached(&g, &o);
	one[0] = m;
	out = render_o(one, 1, &o, NULL);
	c = counter_lines(out);
	ck_assert_msg(!strncmp(c, "1000.000=4096 1002.000=0 1005.000=4096 ", 39), "%s", c);
	ck_assert_msg(strstr(c, " 1250.000=4096 1250.100=1052672 1251.100=4096 1252.000=0 1255.000=4096 ") != NULL, "%s", c);
	size_t samples = 0;
	for (const char *p = c; (p = strchr(p, '=')); p++)
		samples++;
	ck_assert_uint_eq(samples, 200 + 2 + 1);
	free(c);
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Occurrences of needle in s (memcmp: strstr in a loop is quadratic under ASan). */
static size_t count_in(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle), c = 0;
	for (size_t i = 0; i + n <= len; i++)
		if (s[i] == needle[0] && !memcmp(s + i, needle, n))
			c++;
	return c;
}

START_TEST(perfetto_keeps_the_largest_slices)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=p", NULL});
	for (int i = 1; i <= 10; i++) {
		dg_alloc(&g, 1000 + (uint64_t)i * 100, 0x1000 * (uint64_t)i, (uint64_t)i * 1000, 1);
		if (i % 2)
			dg_free(&g, 1050 + (uint64_t)i * 100, 0x1000 * (uint64_t)i);
	}
	dg_end(&g, 5000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_PERFETTO,
				   .format = CT_FMT_JSON, .max_slices = 3};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	size_t len;
	char *out = render_o(one, 1, &o, &len);
	ck_assert_uint_eq(count_in(out, len, "\"ph\":\"b\""), 3);
	ck_assert_ptr_nonnull(strstr(out, "\"size\":10000,"));
	ck_assert_ptr_nonnull(strstr(out, "\"size\":9000,"));
	ck_assert_ptr_nonnull(strstr(out, "\"size\":8000,"));
	ck_assert_ptr_null(strstr(out, "\"size\":7000,"));
	ck_assert_ptr_nonnull(strstr(out, "\"slices_max\":3,\"slices_total\":10,\"slices_dropped\":7,"
					  "\"slices_dropped_bytes\":28000"));
	/* live at the end: the even ones; 8000 and 10000 overlap 9000's lifetime, so 2 lanes */
	ck_assert_ptr_nonnull(strstr(out, "\"id\":\"0:1\""));
	ck_assert_ptr_null(strstr(out, "\"id\":\"0:2\""));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(perfetto_spool_moves_to_a_file)
{
	/* 40000 marks (about 3 MiB of spool): the temporary file, then the buffer */
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=p", NULL});
	char name[64];
	for (int i = 0; i < 40000; i++) {
		snprintf(name, sizeof name, "mark %05d", i);
		dg_mark_kind(&g, 2000 + (uint64_t)i, 1, CT_MARK_INSTANT, 0, name);
	}
	dg_alloc(&g, 50000, 0x1000, 10, 1);
	dg_end(&g, 60000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_PERFETTO,
				   .format = CT_FMT_JSON};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	for (int round = 0; round < 2; round++) { /* the spool is read again */
		size_t len;
		char *out = render_o(one, 1, &o, &len);
		ck_assert_uint_eq(count_in(out, len, "\"cat\":\"mark\""), 40000);
		const char *first = strstr(out, "\"name\":\"mark 00000\"");
		const char *last = strstr(out, "\"name\":\"mark 39999\"");
		ck_assert(first && last && first < last);
		ck_assert_ptr_nonnull(strstr(out, "\"name\":\"device 0 live\",\"args\":{\"bytes\":10}"));
		free(out);
	}
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(memviz_keeps_the_latest_entries)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 7, 1, 1000, (const char *[]){"argv=p", NULL});
	for (int i = 0; i < 3; i++) {
		dg_alloc(&g, 2000 + (uint64_t)i * 10, 0x10000 + (uint64_t)i * 0x10000, 4096, 1);
		dg_free(&g, 2005 + (uint64_t)i * 10, 0x10000 + (uint64_t)i * 0x10000);
	}
	dg_end(&g, 3000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_MEMVIZ,
				   .format = CT_FMT_PICKLE, .max_entries = 4};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	size_t len;
	char *out = render_o(one, 1, &o, &len);
	/* 15 entries, the last 4 kept: the third block's alloc and its three free entries */
	static const char overflowed[] = "trace_alloc_overflowed";
	const char *p = memmem(out, len, overflowed, sizeof overflowed - 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((unsigned char)p[sizeof overflowed - 1], 0x88); /* NEWTRUE */
	ck_assert_ptr_null(memmem(out, len, "segment_alloc", 13));
	ck_assert_ptr_nonnull(memmem(out, len, "free_completed", 14));
	/* addresses in the trace: only 0x30000 (BININT, little-endian) */
	ck_assert_ptr_nonnull(memmem(out, len, "J\x00\x00\x03\x00", 5));
	ck_assert_ptr_null(memmem(out, len, "J\x00\x00\x01\x00", 5));
	ck_assert_ptr_null(memmem(out, len, "J\x00\x00\x02\x00", 5));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* ---- html ---------------------------------------------------------------------------------------- */

static char *hex_of(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	return s;
}

START_TEST(sha256_and_base64)
{
	/* FIPS 180-4 examples, and lengths around the one- and two-block tails */
	static const struct {
		size_t len; /* of 'a' repeated, or of text when text is set */
		const char *text, *want;
	} v[] = {
		{0, "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{3, "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{56, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{55, NULL, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
		{64, NULL, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
		{119, NULL, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
		{1000, NULL, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
	};
	char *a = malloc(1000);
	memset(a, 'a', 1000);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		uint8_t d[32];
		ct_sha256(v[i].text ? v[i].text : a, v[i].len, d);
		char *h = hex_of(d, sizeof d);
		ck_assert_msg(!strcmp(h, v[i].want), "sha256 of %zu bytes: %s", v[i].len, h);
		free(h);
	}
	free(a);
	/* RFC 4648 section 10 */
	static const char *const b64[][2] = {{"", ""},		{"f", "Zg=="},	   {"fo", "Zm8="},
					     {"foo", "Zm9v"},	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
					     {"foobar", "Zm9vYmFy"}};
	for (size_t i = 0; i < sizeof b64 / sizeof b64[0]; i++) {
		char out[16];
		ct_base64((const uint8_t *)b64[i][0], strlen(b64[i][0]), out, sizeof out);
		ck_assert_str_eq(out, b64[i][1]);
	}
	char small[5];
	ck_assert_str_eq(ct_base64((const uint8_t *)"foobar", 6, small, sizeof small), "Zm9v");
}
END_TEST

static char *html_escape(const char *s, size_t n)
{
	return escaped_by(ct_html_putn, s, n);
}

START_TEST(html_escaping)
{
	static const struct {
		const char *in;
		size_t n;
		const char *want;
	} v[] = {
		{"<a href=\"x\">&'b'</a>", 20, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;b&#39;&lt;/a&gt;"},
		/* controls, C1 controls and invalid UTF-8 as visible \xNN; valid UTF-8 as it is */
		{"a\x01\n\x7f\xc2\x80\xc2\xa0\xc3\xa9\xff\xe2\x82", 13,
		 "a\\x01\\x0a\\x7f\\xc2\\x80\xc2\xa0\xc3\xa9\\xff\\xe2\\x82"},
		{"x\0y", 3, "x\\x00y"},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		char *s = html_escape(v[i].in, v[i].n);
		ck_assert_str_eq(s, v[i].want);
		free(s);
	}
}
END_TEST

/* A dump whose every string is hostile markup: argv, module path, Python files and functions, marks. */
static void hostile_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 77, 1, 1000,
		   (const char *[]){"exe=/bin/<b>x</b>", "cwd=/w\"'&", "argv=</title><script>alert(1)</script>",
				    "argv=<img src=x onerror=alert(2)>", "host=\"><svg onload=alert(3)>", NULL});
	dg_module(g, 0x400000, 0x400000, 0x480000, NULL, 0, "/opt/lib<iframe onload=x>&.so");
	uint64_t s1[2] = {0x401234, 0x401500};
	dg_stack(g, 1, 2, s1);
	dg_pystring(g, 1, "<script src=//evil.example/x.js></script>.py");
	dg_pystring(g, 2, "f\"oo<style>@import url(//e)</style>");
	struct ct_pyframe pf[1] = {{1, 2, 7}};
	dg_pystack(g, 1, 1, pf);
	dg_mark_kind(g, 1500, 1, CT_MARK_INSTANT, 0, "<a href=//e>mark</a>");
	dg_alloc_py(g, 2000, 0x10000, 4096, 1, 1);
	dg_alloc(g, 2100, 0x20000, 8192, 1);
	dg_mark_kind(g, 2200, 1, CT_MARK_INSTANT, 0, "<a href=//e>mark</a>");
	dg_end(g, 3000);
}

START_TEST(html_escapes_dump_strings)
{
	struct dg g;
	hostile_dump(&g);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_HTML, .format = CT_FMT_HTML,
				   .buckets = 10, .top = 20};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	char *out = render_o(one, 1, &o, NULL);
	/* the only markup is the page's own: no element from the dump, no quote closing an attribute */
	static const char *const never[] = {"<script", "<img", "<iframe", "<b>", "<svg onload", "<a href=/",
					    "\"><svg", "onerror=alert(2)>"};
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++)
		ck_assert_msg(strstr(out, never[i]) == NULL, "%s in the page", never[i]);
	static const char *const escaped[] = {
		"&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;",
		"/w&quot;&#39;&amp;", "/bin/&lt;b&gt;x&lt;/b&gt;",
		"&lt;script src=//evil.example/x.js&gt;&lt;/script&gt;.py:7",
		"f&quot;oo&lt;style&gt;@import url(//e)&lt;/style&gt;", "&lt;a href=//e&gt;mark&lt;/a&gt;",
		"in lib&lt;iframe onload=x&gt;&amp;.so+0x"};
	for (size_t i = 0; i < sizeof escaped / sizeof escaped[0]; i++)
		ck_assert_msg(strstr(out, escaped[i]) != NULL, "%s not in the page", escaped[i]);
	/* one <style>, one <title>, the CSP before both */
	const char *csp = strstr(out, "Content-Security-Policy");
	ck_assert_ptr_nonnull(csp);
	ck_assert(csp < strstr(out, "<style>") && csp < strstr(out, "<title>"));
	ck_assert_ptr_null(strstr(strstr(out, "<style>") + 1, "<style"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Bounded: 15 devices draw the 12 largest series; --top 2 lists two sites of 15. */
START_TEST(html_bounded)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 9, 1, 1000, (const char *[]){"argv=p", NULL});
	uint64_t s1[1] = {0x401000};
	dg_stack(&g, 1, 1, s1);
	/* an out-of-memory failure at the very start: its marker stays inside the plot */
	ev(&g, 1000, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0, 1ull << 40, 1, 1, 0, 2);
	for (int d = 0; d < 15; d++)
		for (int k = 0; k <= d; k++)
			ev(&g, 2000 + (uint64_t)(d * 16 + k) * 10, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc,
			   0x100000 * (uint64_t)(d * 16 + k + 1), 4096 * (uint64_t)(d + 1), 1, 1 + (uint32_t)k,
			   (int16_t)d, 0);
	dg_end(&g, 10000);
	struct ct_report_opts o = {.tool_version = "t", .cmd = CT_CMD_HTML, .format = CT_FMT_HTML,
				   .buckets = 5, .top = 2};
	struct ct_model *m = load_attached(&g, &o);
	struct ct_model *one[1] = {m};
	char *out = render_o(one, 1, &o, NULL);
	const char *tl = strstr(out, "<svg class=\"chart timeline\"");
	ck_assert_ptr_nonnull(tl);
	const char *tl_end = strstr(tl, "</svg>");
	size_t series = 0;
	for (const char *p = tl; (p = strstr(p, "<path class=\"s\"")) && p < tl_end; p++)
		series++;
	ck_assert_uint_eq(series, 12);
	ck_assert_ptr_nonnull(strstr(out, "3 smaller series are not drawn."));
	/* the smallest devices (0, 1, 2) are the ones left out */
	ck_assert_ptr_null(strstr(out, "device, dev 2 <span"));
	ck_assert_ptr_nonnull(strstr(out, "device, dev 3 <span"));
	/* each drawn series has 5 buckets: 10 points (a step each) */
	const char *d = strstr(tl, " d=\"M");
	size_t pts = 0;
	for (const char *p = d + 4; *p != '"'; p++)
		pts += *p == 'V' || *p == 'H';
	ck_assert_uint_eq(pts, 9); /* M is the first point */
	/* 15 devices at the peak, 2 shown */
	ck_assert_ptr_nonnull(strstr(out, "... and 13 more sites"));
	free(out);
	unload(m);
	dg_release(&g);
}
END_TEST

/* The page's style sheet hash is in its policy (the page: tests/golden/cases/html-*). */
START_TEST(html_style_hash)
{
	struct dg g;
	export_dump(&g);
	struct ct_report_opts o = {.buckets = 20, .top = 20, .tool_version = "test", .cmd = CT_CMD_HTML,
				   .format = CT_FMT_HTML};
	struct ct_model *ms[1];
	ms[0] = load_attached(&g, &o);
	dg_release(&g);
	char *out = render_o(ms, 1, &o, NULL);
	const char *st = strstr(out, "<style>") + 7;
	const char *end = strstr(st, "</style>");
	uint8_t d[32];
	char want[64];
	ct_sha256(st, (size_t)(end - st), d);
	ct_base64(d, sizeof d, want, sizeof want);
	ck_assert_ptr_nonnull(strstr(out, want));
	free(out);
	unload(ms[0]);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("exports");
	TCase *tc = tcase_create("exports");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, export_dump_facts);
	tcase_add_test(tc, flame_totals_match_the_reports);
	tcase_add_test(tc, perfetto_counters_keep_the_most_per_interval);
	tcase_add_test(tc, perfetto_keeps_the_largest_slices);
	tcase_add_test(tc, perfetto_spool_moves_to_a_file);
	tcase_add_test(tc, memviz_keeps_the_latest_entries);
	tcase_add_test(tc, sha256_and_base64);
	tcase_add_test(tc, html_escaping);
	tcase_add_test(tc, html_escapes_dump_strings);
	tcase_add_test(tc, html_style_hash);
	tcase_add_test(tc, html_bounded);
	tcase_add_test(tc, pystack_sparse_ids);
	tcase_add_test(tc, hostile_strings_every_format);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
