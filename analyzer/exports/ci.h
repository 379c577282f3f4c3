/*
 * The leak findings (gate.h) for CI systems:
 *   JUnit XML  (exports/junit.c): one testcase per leak or growth site, a
 *              failure for the sites that fail the gate, skipped for the
 *              suppressed ones; Jenkins and GitLab read it.
 *   SARIF 2.1.0 (exports/sarif.c): one result per site, ruleId per class,
 *              locations only from the user's own frames with file:line;
 *              GitHub code scanning reads it.
 * docs/report.md describes both.
 */
#ifndef CT_ANALYZER_EXPORT_CI_H
#define CT_ANALYZER_EXPORT_CI_H

#include <stddef.h>
#include <stdio.h>

#include "analyses/gate.h"
#include "commands/options.h"

void ct_junit_write(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n);
void ct_sarif_write(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n);

#endif
