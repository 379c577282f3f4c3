/*
 * The reports of cumtrace-report. Each command (summary, leaks, peak, ...)
 * is one struct ct_command, defined in its own file and listed once in the
 * table in report.c; main.c knows nothing of any particular command.
 */
#ifndef CT_ANALYZER_REPORT_H
#define CT_ANALYZER_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"
#include "render/json.h"

/* Commands, in the order of the table in report.c (add one: a name here, a row there). */
enum ct_cmd {
	CT_CMD_SUMMARY,
	CT_CMD_LEAKS,
	CT_CMD_PEAK,
	CT_CMD_TIMELINE,
	CT_CMD_OOM,
	CT_CMD_FRAG,
	CT_CMD_STREAMS,
	CT_CMD_PERFETTO,
	CT_CMD_FLAMEGRAPH,
	CT_CMD_MEMVIZ,
	CT_CMD_DIFF,
	CT_CMD_HTML,
	CT_CMD_COUNT
};
/* Output formats; a command says which it supports. */
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

/* What a flame graph weighs (--of). */
enum ct_flame_of { CT_FLAME_LEAKS, CT_FLAME_PEAK, CT_FLAME_ALLOCS };

struct ct_suppressions;

#define CT_REPORT_FORMAT_VERSION 1

struct ct_report_opts {
	int cmd;	/* enum ct_cmd */
	int format;	/* enum ct_fmt */
	size_t buckets; /* timeline buckets (>= 1) */
	size_t top;	/* sites shown per list; 0 = all */
	const char *tool_version;
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
	int per_dump; /* --per-dump: one section per dump, no merged report of many (ranks.h) */
};

#define CT_PERFETTO_COUNTER_US 1000 /* --counter-us default (main.c) */
#define CT_PERFETTO_SLICES 100000   /* allocation slices kept without --max-slices */
#define CT_MEMVIZ_ENTRIES 100000    /* memviz trace entries kept without --max-entries */

/*
 * One command. attach runs on every model before its dump is read (to add
 * observers, ct_model_observe); render writes the report of the n analyzed
 * models. Both see the same options.
 */
struct ct_command {
	const char *name;
	const char *help;     /* one line for --help */
	unsigned formats;     /* bit (1u << enum ct_fmt) for each format it writes */
	size_t min_dumps;     /* dumps it needs (>= 1) */
	size_t max_dumps;     /* 0 = any number */
	int default_format;   /* enum ct_fmt written without --format */
	void (*attach)(struct ct_model *m, const struct ct_report_opts *o); /* may be NULL */
	void (*render)(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		       size_t n);
	/* its part of the JSON document (a key and a value); may be NULL */
	void (*json_section)(struct ct_json *j, const struct ct_report_opts *o,
			     struct ct_model *const *ms, size_t n);
	int json_always; /* 1: its section is in every command's JSON document */
	int baseline_first; /* 1: the first dump is the baseline of the others (gate) */
};

/* The command with number cmd (enum ct_cmd), NULL when out of range. */
const struct ct_command *ct_command_get(int cmd);
const char *ct_cmd_name(int cmd);
/* -1 when name is not a command */
int ct_cmd_parse(const char *name);
/* "text", "json", ...; -1 when name is not a format */
int ct_fmt_parse(const char *name);
const char *ct_fmt_name(int fmt);

/* Prepare a model for o's command (before ct_model_load). */
void ct_report_attach(struct ct_model *m, const struct ct_report_opts *o);
/* Prepare a model for every command at once (tests, fuzzing). */
void ct_report_attach_all(struct ct_model *m, const struct ct_report_opts *o);

/* Write the report of n analyzed (finished) models. */
void ct_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *models, size_t n);

/* Total leaked allocations over the models. */
uint64_t ct_report_leak_count(struct ct_model *const *models, size_t n);

/*
 * The JSON document of a command: format header, "dumps", "marks", totals,
 * then the sections of the json_always commands in table order (leaks, peak,
 * summary, timeline) and the command's own section when it is not one of them.
 */
void ct_json_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		    size_t n);

#endif
