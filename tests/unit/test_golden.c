/*
 * The golden cases: each tests/golden/cases/NAME.case names the dumps a report
 * is made of (generators of golden_dumps.h), how their models are built, the
 * report's options and the file of tests/golden it must equal byte for byte.
 * One Check test per case. CT_GOLDEN_UPDATE=1 writes the files instead (see
 * golden.h). A case file holds, one per line ('#' starts a comment):
 *
 *   dump NAME [PATH]       a dump made by generator NAME, shown as PATH; one
 *                          line per dump, in order
 *   baseline NAME [PATH]   the dump of --baseline, built like the others
 *   load plain             the models get no command's analyses before reading
 *   load attach ARGS       ... the analyses of ARGS's command (ct_report_attach)
 *   load attach-all ARGS   ... every command's, under ARGS's options
 *   args ARGS              the report: a command, then options
 *   expect FILE [hex]      the file of tests/golden; hex: the output as a hex dump
 *
 * ARGS are cumtrace-report's words (the command first): --format, --top,
 * --buckets, --of, --counter-us, --suppressions FILE (of the cases folder),
 * --gen-suppressions, --fail-on CLASSES, --max-peak-bytes N, --max-leak-bytes N
 * (N in bytes). Options not given are 0, except --buckets and --top (20), and
 * the tool version is "test", the documentation's URL https://docs.test/cumtrace.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckmain.h"
#include "../../analyzer/model/classify.h"
#include "../../analyzer/model/model.h"
#include "../../analyzer/commands/commands.h"
#include "../../analyzer/analyses/suppress.h"
#include "dumpgen.h"
#include "golden.h"
#include "golden_dumps.h"
#include "modelload.h"

#define GC_MAX_CASES 256
#define GC_MAX_DUMPS 4

static char *gc_names[GC_MAX_CASES]; /* the case files, sorted */
static size_t gc_count;

static char *gc_cases_dir(void)
{
	char *dir = golden_dir();
	char *out = NULL;
	if (asprintf(&out, "%s/cases", dir) < 0)
		abort();
	free(dir);
	return out;
}

static char *gc_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot read %s", path);
	char *buf = NULL;
	size_t cap = 0, n = 0;
	FILE *mem = open_memstream(&buf, &cap);
	char chunk[4096];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, k, mem);
	fclose(f);
	fclose(mem);
	n = cap;
	if (len)
		*len = n;
	return buf;
}

/* Options from cumtrace-report's words; supp (when --suppressions) is made here. */
static void gc_parse_args(char *words, struct ct_report_opts *o, struct ct_suppressions **supp,
			  const char *cases)
{
	*o = (struct ct_report_opts){
		.buckets = 20, .top = 20, .tool_version = "test", .docs_url = "https://docs.test/cumtrace"};
	char *save = NULL;
	char *w = strtok_r(words, " \t", &save);
	ck_assert_msg(w != NULL, "no command");
	o->cmd = ct_cmd_parse(w);
	ck_assert_msg(o->cmd >= 0, "unknown command %s", w);
	while ((w = strtok_r(NULL, " \t", &save))) {
		if (!strcmp(w, "--gen-suppressions")) {
			o->gen_suppressions = 1;
			continue;
		}
		char *v = strtok_r(NULL, " \t", &save);
		ck_assert_msg(v != NULL, "%s wants a value", w);
		if (!strcmp(w, "--format")) {
			o->format = ct_fmt_parse(v);
			ck_assert_msg(o->format >= 0, "unknown format %s", v);
		} else if (!strcmp(w, "--top")) {
			o->top = strtoull(v, NULL, 10);
		} else if (!strcmp(w, "--buckets")) {
			o->buckets = strtoull(v, NULL, 10);
		} else if (!strcmp(w, "--counter-us")) {
			o->counter_us = strtoull(v, NULL, 10);
		} else if (!strcmp(w, "--of")) {
			o->flame_of = !strcmp(v, "leaks") ? CT_FLAME_LEAKS
				      : !strcmp(v, "peak") ? CT_FLAME_PEAK
							   : CT_FLAME_ALLOCS;
		} else if (!strcmp(w, "--fail-on")) {
			char bad[64];
			ck_assert_int_eq(ct_class_parse_list(v, &o->fail_classes, bad, sizeof bad), 0);
			o->fail_on_leak = 1;
		} else if (!strcmp(w, "--max-peak-bytes")) {
			o->have_max_peak_bytes = 1;
			o->max_peak_bytes = strtoull(v, NULL, 10);
		} else if (!strcmp(w, "--max-leak-bytes")) {
			o->have_max_leak_bytes = 1;
			o->max_leak_bytes = strtoull(v, NULL, 10);
		} else if (!strcmp(w, "--suppressions")) {
			char *path = NULL, err[256];
			ck_assert_int_ge(asprintf(&path, "%s/%s", cases, v), 0);
			size_t len;
			char *text = gc_read(path, &len);
			*supp = ct_supp_new();
			ck_assert_msg(ct_supp_load_text(*supp, v, text, len, err, sizeof err) == 0, "%s: %s", path, err);
			o->supp = *supp;
			free(text);
			free(path);
		} else {
			ck_abort_msg("unknown option %s", w);
		}
	}
}

/* The dump of generator name, as a model built by load (plain, attach or attach-all). */
static struct ct_model *gc_model(const char *name, const char *path, const char *load,
				 const struct ct_report_opts *lo)
{
	const struct golden_dump_gen *gen = NULL;
	for (size_t i = 0; i < sizeof golden_dump_gens / sizeof golden_dump_gens[0]; i++)
		if (!strcmp(golden_dump_gens[i].name, name))
			gen = &golden_dump_gens[i];
	ck_assert_msg(gen != NULL, "no dump generator %s", name);
	struct dg g;
	gen->make(&g);
	struct ct_model *m;
	if (!strcmp(load, "plain"))
		m = tm_load(&g, NULL, NULL);
	else if (!strcmp(load, "attach"))
		m = tm_load(&g, ct_report_attach, lo);
	else
		m = tm_load(&g, ct_report_attach_all, lo);
	dg_release(&g);
	if (path)
		m->path = strdup(path);
	return m;
}

/* Bytes as lines of 16: offset, hex, printable ASCII. */
static char *gc_hexdump(const unsigned char *p, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	for (size_t i = 0; i < n; i += 16) {
		fprintf(f, "%06zx ", i);
		for (size_t k = i; k < i + 16; k++)
			if (k < n)
				fprintf(f, " %02x", p[k]);
			else
				fputs("   ", f);
		fputs("  |", f);
		for (size_t k = i; k < i + 16 && k < n; k++)
			fputc(p[k] >= 0x20 && p[k] < 0x7f ? p[k] : '.', f);
		fputs("|\n", f);
	}
	fclose(f);
	return buf;
}

START_TEST(golden_case)
{
	char *cases = gc_cases_dir(), *file = NULL;
	ck_assert_int_ge(asprintf(&file, "%s/%s", cases, gc_names[_i]), 0);
	char *text = gc_read(file, NULL);
	char *dumps[GC_MAX_DUMPS][2] = {{0}}, *base[2] = {0}, *load = NULL, *load_args = NULL,
	     *args = NULL, *expect = NULL, *expect_how = NULL;
	size_t ndumps = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *lsave = NULL, *key = strtok_r(line, " \t", &lsave), *rest = lsave;
		if (!key)
			continue;
		while (rest && (*rest == ' ' || *rest == '\t'))
			rest++;
		if (!strcmp(key, "dump") || !strcmp(key, "baseline")) {
			char **d = !strcmp(key, "dump") ? dumps[ndumps++] : base;
			ck_assert_uint_le(ndumps, GC_MAX_DUMPS);
			d[0] = strtok_r(NULL, " \t", &lsave);
			d[1] = strtok_r(NULL, " \t", &lsave);
		} else if (!strcmp(key, "load")) {
			load = strtok_r(NULL, " \t", &lsave);
			load_args = lsave && *lsave ? lsave : NULL;
		} else if (!strcmp(key, "args")) {
			args = rest;
		} else if (!strcmp(key, "expect")) {
			expect = strtok_r(NULL, " \t", &lsave);
			expect_how = strtok_r(NULL, " \t", &lsave);
		} else {
			ck_abort_msg("%s: unknown key %s", file, key);
		}
	}
	ck_assert_msg(ndumps && load && args && expect, "%s: dump, load, args and expect are needed", file);
	ck_assert_msg(!strcmp(load, "plain") || load_args, "%s: load %s needs options", file, load);

	struct ct_suppressions *supp = NULL, *load_supp = NULL;
	struct ct_report_opts o, lo = {0};
	gc_parse_args(args, &o, &supp, cases);
	if (load_args)
		gc_parse_args(load_args, &lo, &load_supp, cases);
	struct ct_model *ms[GC_MAX_DUMPS];
	for (size_t i = 0; i < ndumps; i++)
		ms[i] = gc_model(dumps[i][0], dumps[i][1], load, &lo);
	if (base[0])
		o.baseline = gc_model(base[0], base[1], load, &lo);

	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	ct_report(f, &o, ms, ndumps);
	fclose(f);
	if (expect_how && !strcmp(expect_how, "hex")) {
		char *hex = gc_hexdump((const unsigned char *)out, len);
		free(out);
		out = hex;
	}
	check_golden(expect, out);

	free(out);
	for (size_t i = 0; i < ndumps; i++)
		tm_unload(ms[i]);
	if (o.baseline)
		tm_unload(o.baseline);
	if (supp)
		ct_supp_free(supp);
	if (load_supp)
		ct_supp_free(load_supp);
	free(text);
	free(file);
	free(cases);
}
END_TEST

/* Every file of tests/golden is some case's expected output. */
START_TEST(every_golden_file_has_a_case)
{
	char *dir = golden_dir(), *cases = gc_cases_dir();
	char *all = NULL;
	size_t alen = 0;
	FILE *f = open_memstream(&all, &alen);
	for (size_t i = 0; i < gc_count; i++) {
		char *path = NULL;
		ck_assert_int_ge(asprintf(&path, "%s/%s", cases, gc_names[i]), 0);
		char *text = gc_read(path, NULL);
		fputs(text, f);
		fputc('\n', f);
		free(text);
		free(path);
	}
	fclose(f);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	size_t files = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "cases") || strstr(e->d_name, ".got"))
			continue;
		char want[600];
		snprintf(want, sizeof want, "expect %s", e->d_name);
		ck_assert_msg(strstr(all, want) != NULL, "tests/golden/%s: no case expects it", e->d_name);
		files++;
	}
	closedir(d);
	ck_assert_uint_ge(files, 1);
	free(all);
	free(dir);
	free(cases);
}
END_TEST

static int gc_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static Suite *suite(void)
{
	char *cases = gc_cases_dir();
	DIR *d = opendir(cases);
	if (d) {
		for (struct dirent *e; (e = readdir(d)) && gc_count < GC_MAX_CASES;) {
			size_t n = strlen(e->d_name);
			if (n > 5 && !strcmp(e->d_name + n - 5, ".case"))
				gc_names[gc_count++] = strdup(e->d_name);
		}
		closedir(d);
	}
	free(cases);
	qsort(gc_names, gc_count, sizeof gc_names[0], gc_cmp);
	Suite *s = suite_create("golden");
	TCase *tc = tcase_create("cases");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, golden_case, 0, (int)gc_count);
	tcase_add_test(tc, every_golden_file_has_a_case);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
