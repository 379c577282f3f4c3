/* Unit tests of symbols (analyzer/read/symbols.c) and the symbolize command (analyzer/commands/symbolize.c). */
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
#include "../../analyzer/render/render.h"
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

/* ---- symbols ---------------------------------------------------------------------------------------- */

__attribute__((noinline)) int ct_test_target_fn(int x);
__attribute__((noinline)) int ct_test_target_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

struct self_mod {
	uint64_t base, lo, hi;
	int found;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_mod *sm = data;
	(void)size;
	if (sm->found)
		return 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;
	if (f >= lo && f < hi) {
		sm->base = info->dlpi_addr;
		sm->lo = lo;
		sm->hi = hi;
		sm->found = 1;
	}
	return 0;
}

/* The test binary's own module (load range of ct_test_target_fn) and its path. */
static struct self_mod self_module(char *exe, size_t cap)
{
	struct self_mod sm = {0};
	dl_iterate_phdr(phdr_cb, &sm);
	ck_assert(sm.found);
	ssize_t n = readlink("/proc/self/exe", exe, cap - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = 0;
	return sm;
}

START_TEST(symbolize_self)
{
	char exe[4096];
	struct self_mod sm = self_module(exe, sizeof exe);
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;

	struct ct_symtab *st = ct_symtab_new();
	ct_symtab_add_module(st, sm.base, sm.lo, sm.hi, NULL, 0, exe, strlen(exe) + 1);
	ct_symtab_add_module(st, 0x7000, 0x7000, 0x8000, NULL, 0, "/opt/x/libcumtrace.so",
			     sizeof "/opt/x/libcumtrace.so");
	/* innermost: the shim (dropped); then two frames in the target; then no module */
	uint64_t ips[4] = {0x7100, f + 2, f + 3, 0x10};
	ct_symtab_add_stack(st, 1, 4, ips);
	struct ct_frame fr[8];
	size_t k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 3);
	ck_assert_ptr_nonnull(fr[0].function);
	ck_assert_str_eq(fr[0].function, "ct_test_target_fn");
	ck_assert_ptr_nonnull(fr[0].file);
	ck_assert_ptr_nonnull(strstr(fr[0].file, "test_symbols.c"));
	ck_assert_uint_gt(fr[0].line, 0);
	ck_assert_uint_eq(fr[0].offset, f + 2 - sm.base);
	ck_assert_str_eq(fr[1].function, "ct_test_target_fn");
	ck_assert_ptr_null(fr[2].module);
	ck_assert_uint_eq(fr[2].ip, 0x10);
	/* cached: the same again */
	k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 3);
	ck_assert_str_eq(fr[0].function, "ct_test_target_fn");
	ct_symtab_free(st);

	/* a different build id on disk: no symbols, module+offset only */
	st = ct_symtab_new();
	ct_symtab_add_module(st, sm.base, sm.lo, sm.hi, (const uint8_t *)"\xde\xad\xbe\xef", 4, exe,
			     strlen(exe) + 1);
	ct_symtab_add_stack(st, 1, 1, &ips[1]);
	k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 1);
	ck_assert_ptr_null(fr[0].function);
	ck_assert_int_eq(fr[0].build_id_mismatch, 1);
	ck_assert_str_eq(fr[0].build_id, "deadbeef");
	ct_symtab_free(st);

	/* symbolization off, missing file, and a range reused after dlclose */
	st = ct_symtab_new();
	ct_symtab_add_module(st, 0x100000, 0x100000, 0x200000, NULL, 0, "/nonexistent/liba.so",
			     sizeof "/nonexistent/liba.so");
	uint64_t ip = 0x100123;
	ct_symtab_add_stack(st, 1, 1, &ip);
	ct_symtab_add_module(st, 0x100000, 0x100000, 0x200000, NULL, 0, "/nonexistent/libb.so",
			     sizeof "/nonexistent/libb.so");
	ct_symtab_add_stack(st, 2, 1, &ip);
	k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 1);
	ck_assert_str_eq(fr[0].module_name, "liba.so");
	ck_assert_int_eq(fr[0].module_missing, 1);
	ck_assert_uint_eq(fr[0].offset, 0x123);
	ct_symtab_set_symbolize(st, 0);
	k = ct_symtab_resolve(st, 2, fr, 8);
	ck_assert_str_eq(fr[0].module_name, "libb.so");
	ck_assert_ptr_null(fr[0].function);
	ck_assert_uint_eq(ct_symtab_resolve(st, 99, fr, 8), 0);
	ct_symtab_free(st);
}
END_TEST

/*
 * An always_inline function inlined into a host function; the helper records
 * its return address (inside the inlined code) and the two call lines.
 */
static uint64_t inl_ret;
static int inl_line, host_line;

__attribute__((noinline)) static void ct_test_note(int host, int inl)
{
	inl_ret = (uint64_t)(uintptr_t)__builtin_return_address(0);
	host_line = host;
	inl_line = inl;
	__asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void ct_test_inlined(int host)
{
	ct_test_note(host, __LINE__);
	__asm__ volatile("" ::: "memory"); /* no tail call */
}

__attribute__((noinline)) void ct_test_inline_host(void);
__attribute__((noinline)) void ct_test_inline_host(void)
{
	ct_test_inlined(__LINE__);
	__asm__ volatile("" ::: "memory");
}

START_TEST(inline_frames)
{
	ct_test_inline_host();
	char exe[4096];
	struct self_mod sm = self_module(exe, sizeof exe);
	struct ct_symtab *st = ct_symtab_new();
	ct_symtab_add_module(st, sm.base, sm.lo, sm.hi, NULL, 0, exe, strlen(exe) + 1);
	uint64_t ips[2] = {inl_ret, (uint64_t)(uintptr_t)&ct_test_target_fn + 2};
	ct_symtab_add_stack(st, 1, 2, ips);
	struct ct_frame fr[8];
	size_t k = ct_symtab_resolve(st, 1, fr, 8);
	ck_assert_uint_eq(k, 3);
	ck_assert_str_eq(fr[0].function, "ct_test_inlined");
	ck_assert_uint_eq(fr[0].line, (unsigned)inl_line);
	ck_assert_int_eq(fr[0].inlined, 1);
	ck_assert_str_eq(fr[1].function, "ct_test_inline_host");
	ck_assert_uint_eq(fr[1].line, (unsigned)host_line);
	ck_assert_int_eq(fr[1].inlined, 0);
	ck_assert_ptr_nonnull(strstr(fr[1].file, "test_symbols.c"));
	ck_assert_uint_eq(fr[0].ip, fr[1].ip);
	ck_assert_uint_eq(fr[0].offset, inl_ret - sm.base);
	ck_assert_str_eq(fr[2].function, "ct_test_target_fn");
	ck_assert_int_eq(fr[2].inlined, 0);
	/* the buffer ends inside the chain: cut there */
	ck_assert_uint_eq(ct_symtab_resolve(st, 1, fr, 1), 1);
	ck_assert_str_eq(fr[0].function, "ct_test_inlined");
	ct_symtab_free(st);
}
END_TEST

/* Module 0 is /nonexistent/libx.so at 0x100000: addresses 0x100 and 0x200 have symbols. */
static const char emb_strings[] = "inner_fn\0/src/dir/inner.h\0outer_fn(int)\0/src/dir/outer.c\0"
				  "main\0/src/dir/main.c";
enum { E_INNER = 0, E_INNER_H = 9, E_OUTER = 26, E_OUTER_C = 40, E_MAIN = 57, E_MAIN_C = 62 };
static const struct ct_sym_addr emb_addrs[2] = {{.offset = 0x100, .module = 0, .nframes = 2},
						{.offset = 0x200, .module = 0, .nframes = 1}};
static const struct ct_sym_frame emb_frames[3] = {
	{.function = E_INNER, .file = E_INNER_H, .file_short = E_INNER_H + 9, .line = 11},
	{.function = E_OUTER, .file = E_OUTER_C, .file_short = E_OUTER_C + 9, .line = 22},
	{.function = E_MAIN, .file = E_MAIN_C, .file_short = E_MAIN_C + 9, .line = 33}};

/* Leaks at a stack through two embedded addresses, one bare address of the module and none. */
static void embedded_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 77, 1, 1000, (const char *[]){"argv=prog", NULL});
	dg_module(g, 0x100000, 0x100000, 0x200000, NULL, 0, "/nonexistent/libx.so");
	uint64_t ips[4] = {0x100101, 0x100201, 0x100301, 0x300000};
	dg_stack(g, 1, 4, ips);
	dg_alloc(g, 2000, 0x1000, 4096, 1);
	dg_symbols(g, 2, emb_addrs, 3, emb_frames, emb_strings, sizeof emb_strings);
	/* a later entry for an address already embedded is ignored */
	static const struct ct_sym_addr again = {.offset = 0x200, .module = 0, .nframes = 1};
	static const struct ct_sym_frame other = {.function = 0, .file = CT_SYM_NONE,
						  .file_short = CT_SYM_NONE, .line = 1};
	dg_symbols(g, 1, &again, 1, &other, "other", 6);
	dg_end(g, 3000);
}

static struct ct_model *load_mode(const struct dg *g, int mode)
{
	struct ct_model *m = malloc(sizeof *m);
	ck_assert_ptr_nonnull(m);
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, mode);
	ck_assert_int_eq(ct_model_load_mem(m, g->p, g->n, NULL), CT_READ_OK);
	return m;
}

START_TEST(embedded_symbols)
{
	struct dg g;
	embedded_dump(&g);
	static const int modes[] = {CT_SYMBOLIZE_ALL, CT_SYMBOLIZE_EMBEDDED};
	for (int i = 0; i < 2; i++) {
		struct ct_model *m = load_mode(&g, modes[i]);
		ck_assert_uint_eq(ct_symtab_embedded_count(m->syms), 2);
		struct ct_frame fr[16];
		size_t k = ct_symtab_resolve(m->syms, 1, fr, 16);
		ck_assert_uint_eq(k, 5);
		ck_assert_str_eq(fr[0].function, "inner_fn");
		ck_assert_str_eq(fr[0].file, "/src/dir/inner.h");
		ck_assert_str_eq(fr[0].file_short, "inner.h");
		ck_assert_uint_eq(fr[0].line, 11);
		ck_assert_int_eq(fr[0].inlined, 1);
		ck_assert_int_eq(fr[0].module_missing, 0);
		ck_assert_str_eq(fr[1].function, "outer_fn(int)");
		ck_assert_uint_eq(fr[1].line, 22);
		ck_assert_int_eq(fr[1].inlined, 0);
		ck_assert_uint_eq(fr[1].ip, 0x100101);
		ck_assert_uint_eq(fr[1].offset, 0x101);
		ck_assert_str_eq(fr[2].function, "main");
		ck_assert_str_eq(fr[2].module_name, "libx.so");
		/* not embedded: the file on disk is missing (only looked for in ALL mode) */
		ck_assert_ptr_null(fr[3].function);
		ck_assert_uint_eq(fr[3].offset, 0x301);
		ck_assert_int_eq(fr[3].module_missing, modes[i] == CT_SYMBOLIZE_ALL);
		ck_assert_ptr_null(fr[4].module);
		ck_assert_uint_eq(fr[4].ip, 0x300000);

		/* text stacks stop at main; --full-stacks shows the frames outside it */
		char *out = render(m, CT_CMD_LEAKS, CT_FMT_TEXT, 20);
		ck_assert_ptr_nonnull(strstr(out, "      at inner_fn (inner.h:11)  in libx.so  (inlined)\n"
						  "      at outer_fn (outer.c:22)  in libx.so\n"
						  "      at main (main.c:33)  in libx.so\n"));
		ck_assert_ptr_null(strstr(out, "libx.so+0x301"));
		free(out);
		ct_stack_set_full(1);
		out = render(m, CT_CMD_LEAKS, CT_FMT_TEXT, 20);
		ct_stack_set_full(0);
		ck_assert_ptr_nonnull(strstr(out, "      at inner_fn (inner.h:11)  in libx.so  (inlined)\n"
						  "      at outer_fn(int) (outer.c:22)  in libx.so\n"
						  "      at main (main.c:33)  in libx.so\n"
						  "      at ?  in libx.so+0x301\n"
						  "      at ?  0x300000\n"));
		free(out);
		out = render(m, CT_CMD_LEAKS, CT_FMT_CSV, 20);
		ck_assert_ptr_nonnull(strstr(out, ",inner_fn (inner.h:11) in libx.so [inlined];"
						  "outer_fn(int) (outer.c:22) in libx.so;main (main.c:33) in "
						  "libx.so;? in libx.so+0x301;? 0x300000,"));
		free(out);
		out = render(m, CT_CMD_LEAKS, CT_FMT_JSON, 20);
		ck_assert_ptr_nonnull(strstr(out, "\"function\": \"inner_fn\",\n"));
		ck_assert_ptr_nonnull(strstr(out, "\"build_id_mismatch\": false,\n"
						  "            \"inlined\": true\n"));
		ck_assert_ptr_nonnull(strstr(out, "\"embedded_symbols\": 2\n"));
		free(out);
		unload(m);
	}
	/* --no-symbols: module+offset, embedded symbols or not */
	struct ct_model *m = load_mode(&g, CT_SYMBOLIZE_OFF);
	struct ct_frame fr[16];
	ck_assert_uint_eq(ct_symtab_resolve(m->syms, 1, fr, 16), 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_ptr_null(fr[i].function);
		ck_assert_int_eq(fr[i].inlined, 0);
	}
	unload(m);
	dg_release(&g);
}
END_TEST

/* Embedded symbols win over the file on disk; addresses without them fall back to it. */
START_TEST(embedded_preferred)
{
	char exe[4096];
	struct self_mod sm = self_module(exe, sizeof exe);
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_module(&g, sm.base, sm.lo, sm.hi, NULL, 0, exe);
	uint64_t ips[2] = {f + 2, f + 3};
	dg_stack(&g, 1, 2, ips);
	struct ct_sym_addr a = {.offset = f + 1 - sm.base, .module = 0, .nframes = 1};
	struct ct_sym_frame fr1 = {.function = 0, .file = CT_SYM_NONE, .file_short = CT_SYM_NONE};
	dg_symbols(&g, 1, &a, 1, &fr1, "embedded_name", 14);
	struct ct_model *m = load_mode(&g, CT_SYMBOLIZE_ALL);
	struct ct_frame fr[4];
	ck_assert_uint_eq(ct_symtab_resolve(m->syms, 1, fr, 4), 2);
	ck_assert_str_eq(fr[0].function, "embedded_name");
	ck_assert_ptr_null(fr[0].file);
	ck_assert_str_eq(fr[1].function, "ct_test_target_fn");
	ck_assert_ptr_nonnull(strstr(fr[1].file, "test_symbols.c"));
	unload(m);
	dg_release(&g);
}
END_TEST

/* Frames of stack 1 of the dump at path, resolved in mode, as one line each. */
static char *frames_text(const char *path, int mode)
{
	struct ct_model m;
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, mode);
	ck_assert_int_eq(ct_model_load(&m, path, NULL), CT_READ_OK);
	struct ct_frame fr[32];
	size_t k = ct_symtab_resolve(m.syms, 1, fr, 32);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	for (size_t i = 0; i < k; i++)
		fprintf(f, "%s|%s|%s|%u|%d|%llx|%d\n", fr[i].function ? fr[i].function : "-",
			fr[i].file ? fr[i].file : "-", fr[i].file_short ? fr[i].file_short : "-",
			fr[i].line, fr[i].inlined, (unsigned long long)fr[i].offset,
			fr[i].module_missing);
	fprintf(f, "embedded %zu\n", ct_symtab_embedded_count(m.syms));
	fclose(f);
	ct_model_free(&m);
	return buf;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	for (;;) {
		buf = realloc(buf, cap = cap * 2 + 65536);
		size_t k = fread(buf + *len, 1, cap - *len, f);
		*len += k;
		if (*len < cap)
			break;
	}
	fclose(f);
	return buf;
}

static int same_file(const char *a, const char *b)
{
	size_t la, lb;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = la == lb && !memcmp(x, y, la);
	free(x);
	free(y);
	return same;
}

static int symbolize(const char *in, const char *out)
{
	char *argv[] = {"symbolize", (char *)in, "-o", (char *)out, NULL};
	return ct_symbolize_main(out ? 4 : 2, argv);
}

/* A dump symbolized with the test binary on disk reads the same from its embedded symbols. */
START_TEST(symbolize_roundtrip)
{
	ct_test_inline_host();
	char exe[4096], dir[] = "/tmp/ct-symbolize-XXXXXX", in[4200], out[4200], again[4200];
	struct self_mod sm = self_module(exe, sizeof exe);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof in, "%s/in.dump", dir);
	snprintf(out, sizeof out, "%s/out.dump", dir);
	snprintf(again, sizeof again, "%s/again.dump", dir);
	uint64_t f = (uint64_t)(uintptr_t)&ct_test_target_fn;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 5, 1, 1000, (const char *[]){"argv=self", NULL});
	dg_module(&g, 0x7000, 0x7000, 0x8000, NULL, 0, "/opt/x/libcumtrace.so");
	dg_module(&g, sm.base, sm.lo, sm.hi, NULL, 0, exe);
	uint64_t ips[4] = {0x7100, f + 2, inl_ret, 0x10};
	dg_stack(&g, 1, 4, ips);
	dg_alloc(&g, 2000, 0x1000, 4096, 1);
	dg_end(&g, 3000);
	ck_assert_int_eq(dg_write(&g, in), 0);
	ck_assert_int_eq(chmod(in, 0604), 0);

	ck_assert_int_eq(symbolize(in, out), 0);
	char *local = frames_text(in, CT_SYMBOLIZE_ALL);
	char *embedded = frames_text(out, CT_SYMBOLIZE_EMBEDDED);
	/* the same frames, the inline chain included; only the count differs */
	ck_assert_ptr_nonnull(strstr(local, "ct_test_inlined|"));
	char *cut = strstr(local, "embedded 0\n");
	ck_assert_ptr_nonnull(cut);
	*cut = 0;
	cut = strstr(embedded, "embedded 2\n");
	ck_assert_ptr_nonnull(cut);
	*cut = 0;
	ck_assert_str_eq(local, embedded);
	free(local);
	free(embedded);
	/* the input as it was, then the new records */
	size_t lin, lout;
	char *a = slurp(in, &lin), *b = slurp(out, &lout);
	ck_assert_uint_gt(lout, lin);
	ck_assert_int_eq(memcmp(a, b, lin), 0);
	free(a);
	free(b);
	/* again: the same bytes; in place: the same bytes and the mode kept */
	ck_assert_int_eq(symbolize(out, again), 0);
	ck_assert(same_file(out, again));
	ck_assert_int_eq(symbolize(in, NULL), 0);
	ck_assert(same_file(out, in));
	struct stat st;
	ck_assert_int_eq(stat(in, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0604);

	/* a corrupt dump: exit 2, no output */
	g.p[g.offs[1] + 4] = 3; /* a record size below 8 */
	ck_assert_int_eq(dg_write(&g, in), 0);
	unlink(again);
	ck_assert_int_eq(symbolize(in, again), 2);
	ck_assert_int_ne(access(again, F_OK), 0);
	/* usage */
	char *none[] = {"symbolize", NULL};
	ck_assert_int_eq(ct_symbolize_main(1, none), 2);
	char *two[] = {"symbolize", in, out, NULL};
	ck_assert_int_eq(ct_symbolize_main(3, two), 2);
	char *bad[] = {"symbolize", "--what", in, NULL};
	ck_assert_int_eq(ct_symbolize_main(3, bad), 2);

	unlink(in);
	unlink(out);
	rmdir(dir);
	dg_release(&g);
}
END_TEST

struct rec_stats {
	size_t symbols, largest;
};

static void count_symbols(void *ctx, const void *rec, uint32_t size, uint64_t off)
{
	struct rec_stats *s = ctx;
	struct ct_rec h;
	memcpy(&h, rec, sizeof h);
	(void)off;
	if (h.type == CT_REC_SYMBOLS) {
		s->symbols++;
		if (size > s->largest)
			s->largest = size;
	}
}

/*
 * Symbols larger than one record are split; embedded symbols are carried
 * over without the binaries; a name longer than CT_SYM_STRING_MAX is cut.
 */
START_TEST(symbolize_splits)
{
	enum { NADDR = 600, NAME = 3000, PER_REC = 300 };
	char dir[] = "/tmp/ct-symbolize-XXXXXX", in[4200], out[4200];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(in, sizeof in, "%s/in.dump", dir);
	snprintf(out, sizeof out, "%s/out.dump", dir);
	const uint64_t base = 0x10000000;
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_module(&g, base, base, base + 0x1000000, NULL, 0, "/nonexistent/liby.so");
	uint64_t ips[NADDR / 3];
	for (uint32_t s = 0; s < 3; s++) {
		for (uint32_t i = 0; i < NADDR / 3; i++)
			ips[i] = base + 0x10 * (s * (NADDR / 3) + i + 1) + 1;
		dg_stack(&g, s + 1, NADDR / 3, ips);
	}
	/* names: NAME x 'a' then "_<i>"; address 0's name is 5000 bytes */
	char *strings = malloc(PER_REC * (NAME + 16));
	struct ct_sym_addr *addrs = calloc(PER_REC, sizeof *addrs);
	struct ct_sym_frame *frames = calloc(PER_REC, sizeof *frames);
	ck_assert(strings && addrs && frames);
	for (uint32_t r = 0; r < NADDR / PER_REC; r++) {
		uint32_t slen = 0;
		for (uint32_t k = 0; k < PER_REC; k++) {
			uint32_t i = r * PER_REC + k;
			addrs[k] = (struct ct_sym_addr){.offset = 0x10 * (i + 1), .nframes = 1};
			frames[k] = (struct ct_sym_frame){.function = slen, .file = CT_SYM_NONE,
							  .file_short = CT_SYM_NONE, .line = i};
			memset(strings + slen, 'a', NAME);
			slen += NAME + (uint32_t)sprintf(strings + slen + NAME, "_%u", i) + 1;
		}
		dg_symbols(&g, PER_REC, addrs, PER_REC, frames, strings, slen);
	}
	char *longname = malloc(5001);
	memset(longname, 'b', 5000);
	longname[5000] = 0;
	/* already listed (0x10): ignored; a new address at 0x99999 is not in any stack: dropped */
	struct ct_sym_addr la[2] = {{.offset = 0x10, .nframes = 1}, {.offset = 0x99999, .nframes = 1}};
	struct ct_sym_frame lf[2] = {{.function = 0, .file = CT_SYM_NONE, .file_short = CT_SYM_NONE},
				     {.function = 0, .file = CT_SYM_NONE, .file_short = CT_SYM_NONE}};
	dg_symbols(&g, 2, la, 2, lf, longname, 5001);
	ck_assert_int_eq(dg_write(&g, in), 0);
	ck_assert_int_eq(symbolize(in, out), 0);

	struct rec_stats rs = {0};
	struct ct_reader_cb cb = {.ctx = &rs, .record = count_symbols};
	struct ct_read_result res;
	ck_assert_int_eq(ct_read_file(out, NULL, &cb, &res), CT_READ_OK);
	ck_assert_uint_eq(rs.symbols, 2); /* ~1.8 MB of names */
	ck_assert_uint_le(rs.largest, CT_REC_MAX);

	struct ct_model m;
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, CT_SYMBOLIZE_EMBEDDED);
	ck_assert_int_eq(ct_model_load(&m, out, NULL), CT_READ_OK);
	ck_assert_uint_eq(ct_symtab_embedded_count(m.syms), NADDR);
	struct ct_frame fr[NADDR / 3];
	for (uint32_t s = 0; s < 3; s++) {
		ck_assert_uint_eq(ct_symtab_resolve(m.syms, s + 1, fr, NADDR / 3), NADDR / 3);
		for (uint32_t i = 0; i < NADDR / 3; i++) {
			uint32_t idx = s * (NADDR / 3) + i;
			char want[16];
			snprintf(want, sizeof want, "_%u", idx);
			ck_assert_uint_eq(strlen(fr[i].function), NAME + strlen(want));
			ck_assert_str_eq(fr[i].function + NAME, want);
			ck_assert_uint_eq(fr[i].line, idx);
		}
	}
	ct_model_free(&m);

	/* a dump whose only symbols are the 5000-byte name: cut to CT_SYM_STRING_MAX - 1 */
	dg_release(&g);
	dg_init(&g);
	dg_header(&g);
	dg_module(&g, base, base, base + 0x1000000, NULL, 0, "/nonexistent/liby.so");
	ips[0] = base + 0x11;
	dg_stack(&g, 1, 1, ips);
	dg_symbols(&g, 1, la, 1, lf, longname, 5001);
	ck_assert_int_eq(dg_write(&g, in), 0);
	ck_assert_int_eq(symbolize(in, out), 0);
	ct_model_init(&m);
	ct_symtab_set_symbolize(m.syms, CT_SYMBOLIZE_EMBEDDED);
	ck_assert_int_eq(ct_model_load(&m, out, NULL), CT_READ_OK);
	ck_assert_uint_eq(ct_symtab_resolve(m.syms, 1, fr, 1), 1);
	ck_assert_uint_eq(strlen(fr[0].function), CT_SYM_STRING_MAX - 1);
	ct_model_free(&m);

	free(longname);
	free(strings);
	free(addrs);
	free(frames);
	unlink(in);
	unlink(out);
	rmdir(dir);
	dg_release(&g);
}
END_TEST

/* Random damage to a dump with symbols: a defined status, and every report renders. */
START_TEST(symbols_mutations)
{
	struct dg g;
	embedded_dump(&g);
	unsigned char *buf = malloc(g.n);
	ck_assert_ptr_nonnull(buf);
	srand(4242);
	size_t sym = g.offs[g.nrec - 3]; /* the first CT_REC_SYMBOLS */
	for (int iter = 0; iter < 2000; iter++) {
		memcpy(buf, g.p, g.n);
		int flips = 1 + rand() % 3;
		for (int k = 0; k < flips; k++) {
			size_t at = sym + (size_t)rand() % (g.n - sym);
			buf[at] = rand() % 2 ? (unsigned char)rand() : buf[at] ^ (1u << (rand() % 8));
		}
		struct ct_model m;
		ct_model_init(&m);
		ct_symtab_set_symbolize(m.syms, CT_SYMBOLIZE_EMBEDDED);
		int st = ct_model_load_mem(&m, buf, g.n, NULL);
		ck_assert(st == CT_READ_OK || st == CT_READ_TRUNCATED || st == CT_READ_ERROR);
		if (st != CT_READ_ERROR)
			for (int c = 0; c < CT_CMD_COUNT; c++)
				for (int f = 0; f < 3; f++)
					free(render(&m, c, f, 0));
		else
			ck_assert_ptr_nonnull(strstr(m.read.error, "offset"));
		ct_model_free(&m);
	}
	free(buf);
	dg_release(&g);
}
END_TEST

START_TEST(demangle)
{
	char *d = ct_demangle("_ZN3foo3barEi");
	if (d) /* only when libstdc++ can be found */
		ck_assert_str_eq(d, "foo::bar(int)");
	free(d);
	ck_assert_ptr_null(ct_demangle("main"));
	ck_assert_ptr_null(ct_demangle(NULL));
}
END_TEST

/* C++ names shortened for text and HTML (render.h, ct_short_cxx). */
START_TEST(short_cxx)
{
	static const char *const cases[][2] = {
		{"inline_caller(unsigned long)", "inline_caller"},
		{"at::empty<float>(c10::ArrayRef<long>, c10::TensorOptions) const", "at::empty<...>"},
		{"c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
		 "c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&), &f>, at::Tensor, "
		 "c10::guts::typelist::typelist<at::Tensor const&> >, at::Tensor (at::Tensor const&)>::call("
		 "c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)",
		 "c10::impl::wrap_kernel_functor_unboxed_<...>::call"},
		{"(anonymous namespace)::worker(int)", "(anonymous namespace)::worker"},
		{"std::ostream::operator<<(int)", "std::ostream::operator<<"},
		{"Foo::operator()(int) const", "Foo::operator()"},
		{"std::vector<int, std::allocator<int> >::operator[](unsigned long)", "std::vector<...>::operator[]"},
		{"main", "main"},
		{"plain_c_function", "plain_c_function"},
	};
	char buf[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_str_eq(ct_short_cxx(cases[i][0], buf, sizeof buf), cases[i][1]);
	/* a name longer than the buffer is cut, never overrun: at every size, with the pieces
	 * copied whole (an operator, "(anonymous namespace)", "<...>") near the end */
	static const char *const long_names[] = {
		"abcdefghijklmnop", "a::operator<<=(int)", "(anonymous namespace)::f(int)",
		"x::y<int>::operator()(int) const"};
	for (size_t k = 0; k < sizeof long_names / sizeof long_names[0]; k++)
		for (size_t cap = 1; cap < 40; cap++) {
			char *tiny = malloc(cap); /* exactly cap bytes: ASan sees a byte past them */
			ck_assert_ptr_nonnull(tiny);
			ct_short_cxx(long_names[k], tiny, cap);
			ck_assert_uint_lt(strlen(tiny), cap);
			free(tiny);
		}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("symbols");
	TCase *tc = tcase_create("symbols");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, symbolize_self);
	tcase_add_test(tc, demangle);
	tcase_add_test(tc, inline_frames);
	tcase_add_test(tc, embedded_symbols);
	tcase_add_test(tc, embedded_preferred);
	tcase_add_test(tc, symbolize_roundtrip);
	tcase_add_test(tc, symbolize_splits);
	tcase_add_test(tc, symbols_mutations);
	tcase_add_test(tc, short_cxx);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
