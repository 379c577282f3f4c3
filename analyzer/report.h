/* Rendering of analyzed dumps: text, JSON and CSV. */
#ifndef CT_ANALYZER_REPORT_H
#define CT_ANALYZER_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "model.h"

enum ct_cmd { CT_CMD_SUMMARY, CT_CMD_LEAKS, CT_CMD_PEAK, CT_CMD_TIMELINE, CT_CMD_COUNT };
enum ct_fmt { CT_FMT_TEXT, CT_FMT_JSON, CT_FMT_CSV };

#define CT_REPORT_FORMAT_VERSION 1

struct ct_report_opts {
	int cmd;	/* enum ct_cmd */
	int format;	/* enum ct_fmt */
	size_t buckets; /* timeline buckets (>= 1) */
	size_t top;	/* sites shown per list; 0 = all */
	const char *tool_version;
};

const char *ct_cmd_name(int cmd);
/* -1 when name is not a command */
int ct_cmd_parse(const char *name);

/* Write the report of n analyzed (finished) models. */
void ct_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *models, size_t n);

/* Total leaked allocations over the models. */
uint64_t ct_report_leak_count(struct ct_model *const *models, size_t n);

#endif
