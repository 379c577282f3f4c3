/*
 * The commands of cumtrace-report (summary, leaks, peak, ...): one row each
 * in commands.def, which names the struct ct_report that runs it
 * (analyses/analyses.h). main.c knows nothing of any particular command.
 */
#ifndef CT_ANALYZER_COMMANDS_H
#define CT_ANALYZER_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyses/analyses.h"
#include "commands/options.h"
#include "model/model.h"

/* One row of commands.def. */
struct ct_command {
	const char *name;
	const char *help;     /* one line for --help */
	const struct ct_report *report;
	unsigned formats;     /* bit (1u << enum ct_fmt) for each format it writes */
	int default_format;   /* enum ct_fmt written without --format */
	size_t min_dumps;     /* dumps it needs (>= 1) */
	size_t max_dumps;     /* 0 = any number */
	unsigned flags;	      /* CT_CMD_JSON_ALWAYS, CT_CMD_BASELINE_FIRST (options.h) */
	unsigned options;     /* bit (1u << enum ct_opt) for each option of CT_SOME_OPTIONS it takes */
};

/* The command with number cmd (enum ct_cmd), NULL when out of range. */
const struct ct_command *ct_command_get(int cmd);
/* -1 when name is not a command */
int ct_cmd_parse(const char *name);
/* "text", "json", ...; -1 when name is not a format */
int ct_fmt_parse(const char *name);
const char *ct_fmt_name(int fmt);
/*
 * The "commands:" lines of --help: one per command, then "[--top ...]", the
 * options of CT_SOME_OPTIONS it takes, when it takes any.
 */
void ct_commands_help(FILE *f);
/*
 * The CT_SOME_OPTIONS that command cmd takes writing format (enum ct_fmt): its
 * OPTIONS, and in a JSON document those of the sections every such document
 * holds (CT_CMD_JSON_ALWAYS). 0 when cmd is out of range.
 */
unsigned ct_command_options(int cmd, int format);
/* "leaks, peak, oom": the commands that take option opt (enum ct_opt), in buf (cap > 0). */
const char *ct_opt_commands(int opt, char *buf, size_t cap);

/* Prepare a model for o's command (before ct_model_load): attach the analyses it uses. */
void ct_report_attach(struct ct_model *m, const struct ct_report_opts *o);
/* Prepare a model for every command at once (tests, fuzzing). */
void ct_report_attach_all(struct ct_model *m, const struct ct_report_opts *o);

/*
 * Write the report of n analyzed (finished) models: in JSON, the document
 * (render/document.h) with the sections of the CT_CMD_JSON_ALWAYS commands in
 * table order (leaks, peak, summary, timeline... as commands.def lists them)
 * and the command's own section.
 */
void ct_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *models, size_t n);

/* Total leaked allocations over the models. */
uint64_t ct_report_leak_count(struct ct_model *const *models, size_t n);

#endif
