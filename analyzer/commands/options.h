/*
 * What a command line asks for: the command (a row of commands.def), the
 * output format and the options every stage reads. Data only: analyses and
 * renderers include this, never the command table (commands.h).
 */
#ifndef CT_ANALYZER_OPTIONS_H
#define CT_ANALYZER_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

/* Output formats; a command says which it supports (commands.def). */
enum ct_fmt {
	CT_FMT_TEXT,
	CT_FMT_JSON,
	CT_FMT_CSV,
	CT_FMT_FOLDED,	   /* flamegraph.pl input: "frame;frame value" lines */
	CT_FMT_SPEEDSCOPE, /* speedscope's JSON file format */
	CT_FMT_PICKLE,	   /* a Python pickle (memviz) */
	CT_FMT_JUNIT,	   /* JUnit XML (leaks) */
	CT_FMT_SARIF,	   /* SARIF 2.1.0 (leaks) */
	CT_FMT_HTML,	   /* a self-contained HTML page (html) */
	CT_FMT_COUNT
};
/* The bit of format X in a command's FORMATS (commands.def). */
#define CT_FMTS_(x) (1u << CT_FMT_##x)
/* The formats that are not text: main.c writes them to a file or a pipe, never to a terminal. */
#define CT_FMTS_BINARY CT_FMTS_(PICKLE)

/* A command's FLAGS (commands.def). */
#define CT_CMD_JSON_ALWAYS 1u	 /* its JSON section is in every command's JSON document */
#define CT_CMD_BASELINE_FIRST 2u /* the first dump is the baseline of the others (diff) */

/*
 * The options that only some commands take, as the command line spells them;
 * a command's OPTIONS (commands.def) names those it takes, main.c refuses the
 * others. One X(ID, NAME) each, in --help's order.
 */
#define CT_SOME_OPTIONS(X)                                                                         \
	X(BUCKETS, "--buckets")                                                                    \
	X(TOP, "--top")                                                                            \
	X(FULL_STACKS, "--full-stacks")                                                            \
	X(NATIVE, "--native")                                                                      \
	X(PYTHON_ONLY, "--python-only")                                                            \
	X(OF, "--of")                                                                              \
	X(COUNTER_US, "--counter-us")                                                              \
	X(MAX_SLICES, "--max-slices")                                                              \
	X(MAX_ENTRIES, "--max-entries")                                                            \
	X(WINDOW, "--window")                                                                      \
	X(PER_DUMP, "--per-dump")                                                                  \
	X(GEN_SUPPRESSIONS, "--gen-suppressions")

enum ct_opt {
#define CT_OPT_ENUM_(id, name) CT_OPT_##id,
	CT_SOME_OPTIONS(CT_OPT_ENUM_)
#undef CT_OPT_ENUM_
	CT_OPT_COUNT
};
/* The bit of option X in a command's OPTIONS (commands.def). */
#define CT_OPTS_(x) (1u << CT_OPT_##x)

/* "--top", ... for opt (enum ct_opt); NULL when out of range. */
static inline const char *ct_opt_name(int opt)
{
	static const char *const names[CT_OPT_COUNT] = {
#define CT_OPT_NAME_(id, name) [CT_OPT_##id] = name,
		CT_SOME_OPTIONS(CT_OPT_NAME_)
#undef CT_OPT_NAME_
	};
	return opt >= 0 && opt < CT_OPT_COUNT ? names[opt] : NULL;
}

/* Commands, one per row of commands.def, in its order. */
enum ct_cmd {
#define CT_COMMAND(id, name, report, formats, deffmt, mind, maxd, flags, options, help) CT_CMD_##id,
#include "commands/commands.def"
#undef CT_COMMAND
	CT_CMD_COUNT
};

/* The name of command cmd (enum ct_cmd), "unknown" when out of range. */
static inline const char *ct_cmd_name(int cmd)
{
	static const char *const names[CT_CMD_COUNT] = {
#define CT_COMMAND(id, name, report, formats, deffmt, mind, maxd, flags, options, help) [CT_CMD_##id] = name,
#include "commands/commands.def"
#undef CT_COMMAND
	};
	return cmd >= 0 && cmd < CT_CMD_COUNT ? names[cmd] : "unknown";
}

/* The FLAGS of command cmd (CT_CMD_JSON_ALWAYS, ...), 0 when out of range. */
static inline unsigned ct_cmd_flags(int cmd)
{
	static const unsigned char flags[CT_CMD_COUNT] = {
#define CT_COMMAND(id, name, report, formats, deffmt, mind, maxd, flags, options, help) [CT_CMD_##id] = (flags),
#include "commands/commands.def"
#undef CT_COMMAND
	};
	return cmd >= 0 && cmd < CT_CMD_COUNT ? flags[cmd] : 0;
}

/* What a flame graph weighs (--of). */
enum ct_flame_of { CT_FLAME_LEAKS, CT_FLAME_PEAK, CT_FLAME_ALLOCS };

struct ct_suppressions;
struct ct_model;

#define CT_REPORT_FORMAT_VERSION 1

struct ct_report_opts {
	int cmd;	/* enum ct_cmd */
	int format;	/* enum ct_fmt */
	size_t buckets; /* timeline buckets (>= 1) */
	size_t top;	/* sites shown per list; 0 = all */
	const char *tool_version;
	const char *docs_url; /* where docs/ is published (SARIF's informationUri, helpUri); NULL = none */
	/* exporters (0 = the default where a default is stated) */
	int flame_of;	      /* enum ct_flame_of */
	uint64_t counter_us;  /* perfetto: counter samples at most one per track per N us; 0 = every change */
	size_t max_slices;    /* perfetto: allocation slices kept, the largest; 0 = CT_PERFETTO_SLICES */
	size_t max_entries;   /* memviz: trace entries kept, the latest; 0 = CT_MEMVIZ_ENTRIES */

	/* leak classes, suppressions, baselines and the gate (gate.h); zero = defaults */
	unsigned fail_classes; /* CT_CLASS_BIT set that fails the gate; 0 = leaked only */
	int fail_on_leak;      /* --fail-on-leak / --fail-on */
	int have_max_leak_bytes, have_max_peak_bytes;
	uint64_t max_leak_bytes, max_peak_bytes;
	const struct ct_suppressions *supp; /* --suppressions, NULL = none */
	struct ct_model *baseline;	    /* --baseline, NULL = none */
	int gen_suppressions;		    /* --gen-suppressions */
	unsigned growth_min, growth_window; /* --growth K/N; 0 = defaults (growth.h) */
	const char *growth_steps;	    /* --steps NAME, NULL = automatic */
	const char *window;		    /* windows: --window GLOB, NULL = every range */
	int per_dump; /* --per-dump: one section per dump, no merged report of many (ranks.h) */
};

#define CT_PERFETTO_COUNTER_US 1000 /* --counter-us default (main.c) */
#define CT_PERFETTO_SLICES 100000   /* allocation slices kept without --max-slices */
#define CT_MEMVIZ_ENTRIES 100000    /* memviz trace entries kept without --max-entries */

#endif
