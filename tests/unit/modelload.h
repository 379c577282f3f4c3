/*
 * modelload.h: a dump built with dumpgen.h, analyzed, for Check tests.
 * Header-only; needs check.h and the analyzer's model.h and commands.h.
 */
#ifndef CT_TEST_MODELLOAD_H
#define CT_TEST_MODELLOAD_H

#include <stdlib.h>

#include "../../analyzer/model/model.h"
#include "../../analyzer/commands/commands.h"
#include "dumpgen.h"

/*
 * A model of the dump in g, symbolization off; attach (may be NULL) adds its
 * analyses with options o first. Fails the test when the dump is unreadable.
 */
static inline struct ct_model *tm_load(const struct dg *g,
				       void (*attach)(struct ct_model *, const struct ct_report_opts *),
				       const struct ct_report_opts *o)
{
	struct ct_model *m = malloc(sizeof *m);
	ck_assert_ptr_nonnull(m);
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, 0);
	if (attach)
		attach(m, o);
	int st = ct_model_load_mem(m, g->p, g->n, NULL);
	ck_assert_msg(st != CT_READ_ERROR, "read error: %s", m->read.error);
	return m;
}

static inline void tm_unload(struct ct_model *m)
{
	ct_model_free(m);
	free(m);
}

#endif
