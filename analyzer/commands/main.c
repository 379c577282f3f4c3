/*
 * cumtrace-report: offline analyzer of cumtrace dumps.
 *
 *   cumtrace-report [COMMAND] [options] DUMP...   (commands: commands.def)
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
#include <sys/stat.h>
#include <unistd.h>

#include "analyses/gate.h"
#include "analyses/growth.h"
#include "analyses/suppress.h"
#include "base/util.h"
#include "commands/commands.h"
#include "commands/symbolize.h"
#include "model/classify.h"
#include "model/model.h"
#include "model/pystack.h"
#include "render/outfile.h"
#include "render/progress.h"

#ifndef CUMTRACE_VERSION
#define CUMTRACE_VERSION "0.0.0"
#endif
#ifndef CUMTRACE_DOCS_URL
#define CUMTRACE_DOCS_URL NULL
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
	ct_commands_help(f);
	fputs("\n"
	      "options (those in a command's [...] above are for the commands that list them and\n"
	      "for a --format json document; the rest are for every command):\n"
	      "  --format FMT       text (default), json, csv, junit, sarif, folded, speedscope,\n"
	      "                     pickle, html (what the command writes; exporters have their own\n"
	      "                     default)\n"
	      "  -o, --output FILE  write the report to FILE instead of standard output: a new\n"
	      "                     file is created 0600, an existing one replaced whole; a\n"
	      "                     symbolic link to a regular file is refused\n"
	      "  --buckets N        timeline buckets (1..4096; default 60)\n"
	      "  --top N            sites shown per list (default 20; 0 = all)\n"
	      "  --no-symbols       do not read debug info: show module+offset only\n"
	      "  --full-stacks      every frame in text stacks (default: runs of frames in\n"
	      "                     framework, runtime and interpreter libraries folded to one\n"
	      "                     line, nothing outside main)\n"
	      "  --native           show native frames only (no Python frames)\n"
	      "  --python-only      show Python frames only, where a stack has them\n"
	      "  --of WHAT          flamegraph: leaks (default), peak or allocs\n"
	      "  --counter-us N     perfetto: at most one counter sample per track per N us\n"
	      "                     (default 1000; 0 = every change)\n"
	      "  --max-slices N     perfetto: keep the N largest allocation slices (default 100000)\n"
	      "  --max-entries N    memviz: keep the latest N trace entries (default 100000)\n"
	      "  --max-memory SIZE  stop with an error (exit 2) when the analyzer's resident\n"
	      "                     memory would pass SIZE (default: half of the physical\n"
	      "                     memory, or of the cgroup's memory.max; also\n"
	      "                     CUMTRACE_REPORT_MAX_MEMORY; 0 = no limit)\n"
	      "  --window GLOB      windows: the ranges whose name matches GLOB ('*': any run of\n"
	      "                     characters; default: every range)\n"
	      "  --per-dump         several dumps: one section per dump instead of one report\n"
	      "                     merged over the ranks (summary, leaks, peak)\n"
	      "  -h, --help         show this help and exit\n"
	      "  -V, --version      show the version and exit\n"
	      "\n"
	      "leaks and the gate (any command):\n"
	      "  --fail-on-leak     exit with the error exit code when a leak site fails\n"
	      "  --fail-on CLASSES  classes that fail: leaked (default), cache, teardown,\n"
	      "                     growth, all; comma-separated; implies --fail-on-leak\n"
	      "  --max-leak-bytes N fail when failing leak sites hold more than N bytes\n"
	      "  --max-peak-bytes N fail when a dump's peak device memory exceeds N bytes\n"
	      "                     (N: bytes, or with K, M, G, T (1024-based), KB, MB, GB)\n"
	      "  --error-exitcode N exit code of a failed gate (1..255 except 2, 77, 99; default 1)\n"
	      "  --suppressions FILE  suppressions (valgrind blocks, leak:PATTERN); repeatable\n"
	      "  --gen-suppressions print a ready suppression block for each site (text, json)\n"
	      "  --baseline DUMP    only leak sites not in DUMP fail the gate\n"
	      "  --growth K/N       growth: grew in at least K of the last N steps (default 6/8)\n"
	      "  --steps NAME       growth: the series NAME (or matching the glob NAME) are the\n"
	      "                     steps; \"step 17\", \"step 18\" are one series \"step #\"\n"
	      "\n"
	      "exit status: 0 ok; 1 (or --error-exitcode) the gate failed (one line on\n"
	      "stderr says why); 2 usage error or an unreadable or corrupt dump. A truncated\n"
	      "dump (crashed process), or one that holds only its header (killed at once), is\n"
	      "reported with a warning, not an error.\n",
	      f);
}

/* Does PATH name anything (a dump, a FIFO, /dev/stdin)? */
static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* A bare word of letters, digits, '-' and '_' (no '/', no '.'): a mistyped command, not a path. */
static int looks_like_command(const char *a)
{
	if (!*a)
		return 0;
	for (const char *p = a; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_'))
			return 0;
	return 1;
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

/* A byte count: digits, optionally K, M, G, T (powers of 1024), KB/KiB, MB/MiB, ... */
static uint64_t parse_bytes(const char *opt, const char *s)
{
	static const char units[] = "KMGT";
	char *end;
	errno = 0;
	if (*s < '0' || *s > '9')
		usage_error("%s: invalid size '%s' (bytes, or a number with K, M, G or T)", opt, s);
	unsigned long long v = strtoull(s, &end, 10);
	const char *u = end;
	unsigned shift = 0;
	if (*u) {
		const char *p = strchr(units, *u >= 'a' ? *u - 32 : *u);
		if (!p || !*p)
			usage_error("%s: invalid size '%s' (bytes, or a number with K, M, G or T)", opt, s);
		shift = 10 * (unsigned)(p - units + 1);
		u++;
		if (!strcmp(u, "iB") || !strcmp(u, "B") || !strcmp(u, "b"))
			u += strlen(u);
	}
	if (errno || *u || (shift && v > (UINT64_MAX >> shift)))
		usage_error("%s: invalid size '%s' (bytes, or a number with K, M, G or T)", opt, s);
	return (uint64_t)v << shift;
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
	const char *env_mem = getenv("CUMTRACE_REPORT_MAX_MEMORY");
	uint64_t max_memory = env_mem && *env_mem ? parse_bytes("CUMTRACE_REPORT_MAX_MEMORY", env_mem)
						  : ct_mem_default_limit();
	ct_mem_set_limit(max_memory);
	if (argc > 1 && !strcmp(argv[1], "symbolize"))
		return ct_symbolize_main(argc - 1, argv + 1);
	struct ct_report_opts o = {.cmd = -1,
				   .format = -1,
				   .buckets = 60,
				   .top = 20,
				   .tool_version = CUMTRACE_VERSION,
				   .docs_url = CUMTRACE_DOCS_URL,
				   .counter_us = CT_PERFETTO_COUNTER_US};
	const char *output = NULL, *baseline = NULL;
	int error_exitcode = 1, symbols = 1;
	struct ct_suppressions *supp = NULL;
	char **dumps = ct_xcalloc((size_t)argc, sizeof *dumps);
	size_t ndumps = 0;
	int positional_only = 0;
	const char *frames_opt = NULL; /* --native or --python-only, whichever came */
	unsigned some_opts = 0;	       /* the CT_SOME_OPTIONS given (enum ct_opt bits) */

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (positional_only || a[0] != '-' || !strcmp(a, "-")) {
			if (o.cmd < 0 && ndumps == 0 && ct_cmd_parse(a) >= 0 && !positional_only) {
				o.cmd = ct_cmd_parse(a);
				continue;
			}
			if (!positional_only && !file_exists(a)) {
				/* a word that names no file where a command or a dump goes */
				if (ct_cmd_parse(a) >= 0 && o.cmd >= 0)
					usage_error("two commands: '%s' and '%s' (one command, then dumps)",
						    ct_command_get(o.cmd)->name, a);
				if (ct_cmd_parse(a) >= 0)
					usage_error("command '%s' after a dump: the command goes first", a);
				if (o.cmd < 0 && ndumps == 0 && looks_like_command(a))
					usage_error("unknown command '%s'", a);
			}
			dumps[ndumps++] = argv[i];
			continue;
		}
		for (int k = 0; k < CT_OPT_COUNT; k++)
			if (is_opt(a, ct_opt_name(k)))
				some_opts |= 1u << k;
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
			o.fail_on_leak = 1;
		} else if (is_opt(a, "--fail-on")) {
			const char *v = opt_value(argc, argv, &i, "--fail-on");
			char bad[80];
			if (ct_class_parse_list(v, &o.fail_classes, bad, sizeof bad))
				usage_error("--fail-on: unknown class '%s' (leaked, cache, teardown, growth, all)",
					    bad);
			o.fail_on_leak = 1;
		} else if (is_opt(a, "--max-leak-bytes")) {
			o.max_leak_bytes = parse_bytes("--max-leak-bytes",
						       opt_value(argc, argv, &i, "--max-leak-bytes"));
			o.have_max_leak_bytes = 1;
		} else if (is_opt(a, "--max-peak-bytes")) {
			o.max_peak_bytes = parse_bytes("--max-peak-bytes",
						       opt_value(argc, argv, &i, "--max-peak-bytes"));
			o.have_max_peak_bytes = 1;
		} else if (is_opt(a, "--error-exitcode")) {
			const char *v = opt_value(argc, argv, &i, "--error-exitcode");
			error_exitcode = (int)parse_num("--error-exitcode", v, 1, 255);
			if (error_exitcode == 2 || error_exitcode == 77 || error_exitcode == 99)
				usage_error("--error-exitcode: %d is reserved (2: errors, 77: skipped test, "
					    "99: hard error)",
					    error_exitcode);
		} else if (is_opt(a, "--suppressions")) {
			const char *v = opt_value(argc, argv, &i, "--suppressions");
			char err[512];
			if (!supp)
				supp = ct_supp_new();
			if (ct_supp_load_file(supp, v, err, sizeof err)) {
				fprintf(stderr, PROG ": %s\n", err);
				ct_supp_free(supp);
				free(dumps);
				return 2;
			}
		} else if (!strcmp(a, "--gen-suppressions")) {
			o.gen_suppressions = 1;
		} else if (is_opt(a, "--baseline")) {
			baseline = opt_value(argc, argv, &i, "--baseline");
		} else if (is_opt(a, "--growth")) {
			const char *v = opt_value(argc, argv, &i, "--growth");
			char *end;
			errno = 0;
			unsigned long k = strtoul(v, &end, 10), w = 0;
			if (*end == '/' && end != v && end[1] >= '0' && end[1] <= '9')
				w = strtoul(end + 1, &end, 10);
			if (errno || *end || !k || !w || k > w || w > CT_GROWTH_WINDOW_MAX)
				usage_error("--growth: invalid value '%s' (K/N with 1 <= K <= N <= %d)", v,
					    CT_GROWTH_WINDOW_MAX);
			o.growth_min = (unsigned)k;
			o.growth_window = (unsigned)w;
		} else if (is_opt(a, "--steps")) {
			o.growth_steps = opt_value(argc, argv, &i, "--steps");
			if (!*o.growth_steps)
				usage_error("--steps: empty name");
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
		} else if (is_opt(a, "--max-memory")) {
			max_memory = parse_bytes("--max-memory", opt_value(argc, argv, &i, "--max-memory"));
		} else if (is_opt(a, "--window")) {
			o.window = opt_value(argc, argv, &i, "--window");
		} else if (!strcmp(a, "--per-dump")) {
			o.per_dump = 1;
		} else if (!strcmp(a, "--native")) {
			if (frames_opt && strcmp(frames_opt, a))
				usage_error("--native and --python-only: choose one");
			frames_opt = "--native";
			ct_frames_set_mode(CT_FRAMES_NATIVE);
		} else if (!strcmp(a, "--python-only")) {
			if (frames_opt && strcmp(frames_opt, a))
				usage_error("--native and --python-only: choose one");
			frames_opt = "--python-only";
			ct_frames_set_mode(CT_FRAMES_PYTHON);
		} else if (!strcmp(a, "--full-stacks")) {
			ct_stack_set_full(1);
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
	for (int k = 0; k < CT_OPT_COUNT; k++) {
		char takers[256];
		if (some_opts & ~ct_command_options(o.cmd, o.format) & 1u << k)
			usage_error("%s does not take %s (it is for %s)", cmd->name, ct_opt_name(k),
				    ct_opt_commands(k, takers, sizeof takers));
	}
	if (!ndumps)
		usage_error("no dump file given");
	if (ndumps < cmd->min_dumps || (cmd->max_dumps && ndumps > cmd->max_dumps)) {
		const char *files = ct_plural(cmd->min_dumps, "dump file", "dump files");
		if (cmd->min_dumps == cmd->max_dumps)
			usage_error("%s needs exactly %zu %s", cmd->name, cmd->min_dumps, files);
		usage_error("%s needs at least %zu %s", cmd->name, cmd->min_dumps, files);
	}
	/* one process, one dump: the same file twice (another name for it too) would count it twice
	 * (diff compares a dump with itself, if asked) */
	for (size_t d = 1; d < ndumps && !(cmd->flags & CT_CMD_BASELINE_FIRST); d++) {
		struct stat a;
		if (stat(dumps[d], &a) != 0)
			continue;
		for (size_t k = 0; k < d; k++) {
			struct stat b;
			if (stat(dumps[k], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
				usage_error("%s is given twice (also as %s): each dump once", dumps[d], dumps[k]);
		}
	}
	if (output && !*output)
		usage_error("-o: empty file name");
	if (!output && (CT_FMTS_BINARY & 1u << o.format) && isatty(STDOUT_FILENO))
		usage_error("%s: %s output is binary: not written to a terminal (-o FILE, or redirect it)",
			    cmd->name, ct_fmt_name(o.format));
	if (o.gen_suppressions && o.format != CT_FMT_TEXT && o.format != CT_FMT_JSON)
		usage_error("--gen-suppressions: only with --format text or json");
	if (baseline && (cmd->flags & CT_CMD_BASELINE_FIRST))
		usage_error("--baseline: %s takes its baseline from its first dump", cmd->name);
	o.supp = supp;
	ct_mem_set_limit(max_memory);

	/* a progress line on a terminal while reading takes long (progress.h) */
	struct ct_progress progress;
	ct_progress_init(&progress);
	struct ct_read_opts ropts = {.progress = ct_progress_update, .progress_ctx = &progress};
	/* reading on a second thread (read/pipe.h): 1 always, 0 never, unset: by the CPUs */
	const char *env_pipe = getenv("CUMTRACE_REPORT_PIPELINE");
	if (env_pipe && *env_pipe) {
		if (strcmp(env_pipe, "0") && strcmp(env_pipe, "1"))
			usage_error("CUMTRACE_REPORT_PIPELINE: '%s' is not 0 or 1", env_pipe);
		ropts.pipeline = *env_pipe == '1' ? 1 : -1;
	}
	struct ct_model *base = NULL;
	if (baseline) {
		base = ct_xmalloc(sizeof *base);
		ct_model_init(base);
		ct_symtab_set_symbolize(base->syms, symbols);
		ct_report_attach(base, &o);
		ct_gate_attach(base, &o);
		ct_progress_file(&progress, baseline, 1, 1);
		int st = ct_model_load(base, baseline, &ropts);
		ct_progress_clear(&progress);
		if (st == CT_READ_ERROR) {
			fprintf(stderr, PROG ": %s: %s\n", baseline, base->read.error);
			ct_model_free(base);
			free(base);
			ct_supp_free(supp);
			free(dumps);
			return 2;
		}
		o.baseline = base;
	}

	struct ct_model **models = ct_xcalloc(ndumps, sizeof *models);
	int rc = 0;
	size_t loaded = 0;
	for (size_t d = 0; d < ndumps; d++) {
		struct ct_model *m = ct_xmalloc(sizeof *m);
		ct_model_init(m);
		ct_symtab_set_symbolize(m->syms, symbols);
		ct_report_attach(m, &o);
		ct_gate_attach(m, &o);
		models[loaded++] = m;
		ct_progress_file(&progress, dumps[d], d + 1, ndumps);
		int st = ct_model_load(m, dumps[d], &ropts);
		if (st != CT_READ_OK)
			ct_progress_clear(&progress); /* before the message */
		if (st == CT_READ_ERROR) {
			fprintf(stderr, PROG ": %s: %s\n", dumps[d], m->read.error);
			rc = 2;
			break;
		}
		struct ct_infer clock;
		if (st != CT_READ_ERROR && ct_model_infer_clock(m, &clock)) {
			/* no step boundaries of its own: read it again with inferred ones */
			ct_model_free(m);
			ct_model_init(m);
			ct_symtab_set_symbolize(m->syms, symbols);
			ct_model_infer(m, &clock);
			ct_report_attach(m, &o);
			ct_gate_attach(m, &o);
			st = ct_model_load(m, dumps[d], &ropts);
			if (st == CT_READ_ERROR) {
				fprintf(stderr, PROG ": %s: %s\n", dumps[d], m->read.error);
				rc = 2;
				break;
			}
		}
		if (ct_model_header_only(m)) {
			ct_progress_clear(&progress);
			fprintf(stderr, PROG ": note: %s holds only its header: " CT_HEADER_ONLY_WHY "\n", dumps[d]);
		}
		if (st == CT_READ_TRUNCATED)
			fprintf(stderr,
				PROG ": warning: %s: truncated at offset %llu (partial record); reporting what was read\n",
				dumps[d], (unsigned long long)m->read.truncated_offset);
	}

	ct_progress_clear(&progress);
	if (!rc) {
		FILE *out = stdout;
		struct ct_outfile of = {0};
		char msg[4200];
		if (output) {
			out = NULL;
			if (ct_outfile_open(&of, output, "tmp", msg, sizeof msg)) {
				fprintf(stderr, PROG ": %s\n", msg);
				rc = 2;
			} else {
				out = of.f;
			}
		}
		if (out) {
			ct_report(out, &o, models, loaded);
			int err = 0;
			if (output)
				err = ct_outfile_close(&of, 0, 0);
			else if (fflush(out) != 0 || ferror(out))
				err = errno ? errno : EIO;
			if (err) {
				fprintf(stderr, PROG ": %s: write error: %s\n",
					output ? output : "standard output", strerror(err));
				rc = 2;
			}
		}
		char reason[1024];
		if (!rc && ct_gate_check(&o, models, loaded, reason, sizeof reason)) {
			fprintf(stderr, PROG ": gate failed: %s\n", reason);
			rc = error_exitcode;
		}
	}

	for (size_t d = 0; d < loaded; d++) {
		ct_model_free(models[d]);
		free(models[d]);
	}
	free(models);
	if (base) {
		ct_model_free(base);
		free(base);
	}
	ct_supp_free(supp);
	free(dumps);
	return rc;
}
