/*
 * The JSON document of a command (docs/report.md has its schema): format
 * header, "dumps", "marks", the totals over the dumps, "ranks" when many
 * dumps are one job (ranks.h), then the sections it is given, in order.
 */
#ifndef CT_ANALYZER_DOCUMENT_H
#define CT_ANALYZER_DOCUMENT_H

#include <stddef.h>
#include <stdio.h>

#include "base/json.h"
#include "commands/options.h"
#include "model/model.h"

/* One section of the document: a key and its value. */
typedef void (*ct_json_section_fn)(struct ct_json *j, const struct ct_report_opts *o,
				   struct ct_model *const *ms, size_t n);

void ct_json_document(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n,
		      const ct_json_section_fn *sections, size_t nsections);

#endif
