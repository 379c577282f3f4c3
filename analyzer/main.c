/*
 * cumtrace-report: offline analyzer of cumtrace dumps.
 *
 *   cumtrace-report [COMMAND] [options] DUMP...   (commands: the table in report.c)
 *   cumtrace-report symbolize DUMP [-o OUT]
 *
 * See docs/report.md for the options, exit codes and the JSON schema.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "pystack.h"
#include "report.h"
#include "symbolize.h"
#include "util.h"

#ifndef CUMTRACE_VERSION
#define CUMTRACE_VERSION "0.0.0"
#endif

#define PROG "cumtrace-report"

static void usage(FILE *f)
{
	fputs("usage: " PROG " [COMMAND] [options] DUMP...\n"
	      "       " PROG " symbolize DUMP [-o OUT]   embed symbols (see symbolize --help)\n"
	      "\n"
	      "Analyze cumtrace dumps (written by libcumtrace.so).\n"
	      "\n"
	      "commands:\n",
	      f);
	for (int c = 0; c < CT_CMD_COUNT; c++) {
		const struct ct_command *cmd = ct_command_get(c);
		fprintf(f, "  %-18s %s\n", cmd->name, cmd->help);
	}
	fputs("\n"
	      "options:\n"
	      "  --format FMT       text (default), json, csv, folded, speedscope, pickle\n"
	      "                     (what the command writes; exporters have their own default)\n"
	      "  -o, --output FILE  write the report to FILE instead of standard output\n"
	      "  --fail-on-leak     exit with the error exit code when leaks were found\n"
	      "  --error-exitcode N exit code for --fail-on-leak (1..255 except 2; default 1)\n"
	      "  --buckets N        timeline buckets (1..4096; default 60)\n"
	      "  --top N            sites shown per list (default 20; 0 = all)\n"
	      "  --no-symbols       do not read debug info: show module+offset only\n"
	      "  --native           show native frames only (no Python frames)\n"
	      "  --python-only      show Python frames only, where a stack has them\n"
	      "  --of WHAT          flamegraph: leaks (default), peak or allocs\n"
	      "  --counter-us N     perfetto: at most one counter sample per track per N us\n"
	      "                     (default 1000; 0 = every change)\n"
	      "  --max-slices N     perfetto: keep the N largest allocation slices (default 100000)\n"
	      "  --max-entries N    memviz: keep the latest N trace entries (default 100000)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "exit status: 0 ok; 1 (or --error-exitcode) leaks found with --fail-on-leak;\n"
	      "2 usage error or an unreadable or corrupt dump. A truncated dump (crashed\n"
	      "process) is reported with a warning, not an error.\n",
	      f);
}

__attribute__((format(printf, 1, 2), noreturn)) static void usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try --help)\n", stderr);
	exit(2);
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		usage_error("%s: invalid value '%s' (expected an integer in %ld..%ld)", opt, s, lo, hi);
	return v;
}

/* "--opt=value" or "--opt value": the value, advancing *i as needed. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (a[n] == '=')
		return a + n + 1;
	if (*i + 1 >= argc)
		usage_error("%s needs a value", name);
	return argv[++*i];
}

static int is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(a, name, n) && (a[n] == 0 || a[n] == '=');
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "symbolize"))
		return ct_symbolize_main(argc - 1, argv + 1);
	struct ct_report_opts o = {.cmd = -1,
				   .format = -1,
				   .buckets = 60,
				   .top = 20,
				   .tool_version = CUMTRACE_VERSION,
				   .counter_us = CT_PERFETTO_COUNTER_US};
	const char *output = NULL;
	int fail_on_leak = 0, error_exitcode = 1, symbols = 1;
	char **dumps = ct_xcalloc((size_t)argc, sizeof *dumps);
	size_t ndumps = 0;
	int positional_only = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (positional_only || a[0] != '-' || !strcmp(a, "-")) {
			if (o.cmd < 0 && ndumps == 0 && ct_cmd_parse(a) >= 0 && !positional_only) {
				o.cmd = ct_cmd_parse(a);
				continue;
			}
			dumps[ndumps++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			positional_only = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			free(dumps);
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf(PROG " %s (dump format %d, report format %d)\n", CUMTRACE_VERSION,
			       CT_FORMAT_VERSION, CT_REPORT_FORMAT_VERSION);
			free(dumps);
			return 0;
		} else if (is_opt(a, "--format")) {
			const char *v = opt_value(argc, argv, &i, "--format");
			o.format = ct_fmt_parse(v);
			if (o.format < 0)
				usage_error("--format: unknown format '%s'", v);
		} else if (!strcmp(a, "-o")) {
			if (i + 1 >= argc)
				usage_error("-o needs a file name");
			output = argv[++i];
		} else if (a[1] == 'o' && a[2]) {
			output = a + 2;
		} else if (is_opt(a, "--output")) {
			output = opt_value(argc, argv, &i, "--output");
		} else if (!strcmp(a, "--fail-on-leak")) {
			fail_on_leak = 1;
		} else if (is_opt(a, "--error-exitcode")) {
			const char *v = opt_value(argc, argv, &i, "--error-exitcode");
			error_exitcode = (int)parse_num("--error-exitcode", v, 1, 255);
			if (error_exitcode == 2)
				usage_error("--error-exitcode: 2 is reserved for errors");
		} else if (is_opt(a, "--buckets")) {
			o.buckets = (size_t)parse_num("--buckets", opt_value(argc, argv, &i, "--buckets"),
						      1, CT_TL_FINE);
		} else if (is_opt(a, "--top")) {
			o.top = (size_t)parse_num("--top", opt_value(argc, argv, &i, "--top"), 0,
						  INT_MAX);
		} else if (is_opt(a, "--of")) {
			const char *v = opt_value(argc, argv, &i, "--of");
			if (!strcmp(v, "leaks"))
				o.flame_of = CT_FLAME_LEAKS;
			else if (!strcmp(v, "peak"))
				o.flame_of = CT_FLAME_PEAK;
			else if (!strcmp(v, "allocs"))
				o.flame_of = CT_FLAME_ALLOCS;
			else
				usage_error("--of: unknown value '%s' (leaks, peak or allocs)", v);
		} else if (is_opt(a, "--counter-us")) {
			o.counter_us = (uint64_t)parse_num(
				"--counter-us", opt_value(argc, argv, &i, "--counter-us"), 0, 1000000000);
		} else if (is_opt(a, "--max-slices")) {
			o.max_slices = (size_t)parse_num(
				"--max-slices", opt_value(argc, argv, &i, "--max-slices"), 1, 10000000);
		} else if (is_opt(a, "--max-entries")) {
			o.max_entries = (size_t)parse_num(
				"--max-entries", opt_value(argc, argv, &i, "--max-entries"), 1, 10000000);
		} else if (!strcmp(a, "--native")) {
			ct_frames_set_mode(CT_FRAMES_NATIVE);
		} else if (!strcmp(a, "--python-only")) {
			ct_frames_set_mode(CT_FRAMES_PYTHON);
		} else if (!strcmp(a, "--no-symbols")) {
			symbols = 0;
		} else {
			usage_error("unknown option '%s'", a);
		}
	}
	if (o.cmd < 0)
		o.cmd = CT_CMD_SUMMARY;
	const struct ct_command *cmd = ct_command_get(o.cmd);
	if (o.format < 0)
		o.format = cmd->default_format;
	if (!(cmd->formats & 1u << o.format))
		usage_error("%s: no %s output", cmd->name, ct_fmt_name(o.format));
	if (!ndumps)
		usage_error("no dump file given");
	if (ndumps < cmd->min_dumps || (cmd->max_dumps && ndumps > cmd->max_dumps)) {
		if (cmd->min_dumps == cmd->max_dumps)
			usage_error("%s needs exactly %zu dump files", cmd->name, cmd->min_dumps);
		usage_error("%s needs at least %zu dump files", cmd->name, cmd->min_dumps);
	}
	if (output && !*output)
		usage_error("-o: empty file name");

	struct ct_model **models = ct_xcalloc(ndumps, sizeof *models);
	int rc = 0;
	size_t loaded = 0;
	for (size_t d = 0; d < ndumps; d++) {
		struct ct_model *m = ct_xmalloc(sizeof *m);
		ct_model_init(m);
		ct_symtab_set_symbolize(m->syms, symbols);
		ct_report_attach(m, &o);
		models[loaded++] = m;
		int st = ct_model_load(m, dumps[d], NULL);
		if (st == CT_READ_ERROR) {
			fprintf(stderr, PROG ": %s: %s\n", dumps[d], m->read.error);
			rc = 2;
			break;
		}
		if (st == CT_READ_TRUNCATED)
			fprintf(stderr,
				PROG ": warning: %s: truncated at offset %llu (partial record); reporting what was read\n",
				dumps[d], (unsigned long long)m->read.truncated_offset);
	}

	if (!rc) {
		FILE *out = stdout;
		if (output) {
			out = fopen(output, "w");
			if (!out) {
				fprintf(stderr, PROG ": %s: cannot write: %s\n", output, strerror(errno));
				rc = 2;
			}
		}
		if (out) {
			ct_report(out, &o, models, loaded);
			int bad = fflush(out) != 0 || ferror(out);
			if (out != stdout && fclose(out) != 0)
				bad = 1;
			if (bad) {
				fprintf(stderr, PROG ": %s: write error: %s\n",
					output ? output : "standard output", strerror(errno));
				rc = 2;
			}
		}
		if (!rc && fail_on_leak && ct_report_leak_count(models, loaded))
			rc = error_exitcode;
	}

	for (size_t d = 0; d < loaded; d++) {
		ct_model_free(models[d]);
		free(models[d]);
	}
	free(models);
	free(dumps);
	return rc;
}
