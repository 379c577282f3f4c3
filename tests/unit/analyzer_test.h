/*
 * What the analyzer's unit tests (test_model.c, test_symbols.c,
 * test_analyses.c, test_exports.c: one per stage of analyzer/) share: loading
 * a dump made in memory, rendering a command, escaping. Header-only.
 */
#ifndef CT_TESTS_ANALYZER_TEST_H
#define CT_TESTS_ANALYZER_TEST_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../analyzer/commands/commands.h"
#include "../../analyzer/model/model.h"
#include "dumpgen.h"
#include "modelload.h"

__attribute__((unused)) static struct ct_model *load(const struct dg *g)
{
	return tm_load(g, NULL, NULL);
}

__attribute__((unused)) static void unload(struct ct_model *m)
{
	tm_unload(m);
}

__attribute__((unused)) static const struct ct_leak *find_leak(const struct ct_model *m, uint32_t stack, uint8_t kind,
				       int reason_op)
{
	for (size_t i = 0; i < m->nleaks; i++)
		if (m->leaks[i].stack_id == stack && m->leaks[i].kind == kind &&
		    m->leaks[i].reason_op == reason_op)
			return &m->leaks[i];
	return NULL;
}

/* What an escaping writer makes of n bytes of s (caller frees). */
__attribute__((unused)) static char *escaped_by(void (*put)(FILE *, const char *, size_t), const char *s, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	put(f, s, n);
	fclose(f);
	return buf;
}

__attribute__((noinline, unused)) static char *render(struct ct_model *m, int cmd, int format, size_t top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ct_report_opts o = {.cmd = cmd, .format = format, .buckets = 20, .top = top,
				   .tool_version = "test"};
	struct ct_model *ms[1] = {m};
	ct_report(f, &o, ms, 1);
	fclose(f);
	return buf;
}


#endif
