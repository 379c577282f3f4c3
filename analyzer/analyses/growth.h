/*
 * Growth leaks: sites whose live bytes grow step after step.
 *
 * Steps come from marks, in time order among the events (the model's mark
 * observer). A series of step boundaries is
 *   - every instant with one name (cumtrace_mark("step"), nvtxMarkA),
 *   - every end of a push/pop range with one name at one nesting depth
 *     (nvtxRangePush/Pop, cumtrace_range_push/pop; depth 0 = outermost; the
 *     ranges of every thread together),
 *   - every end of a start/end range with one name (nvtxRangeStart/End).
 * Each site's live bytes are sampled at each boundary of a series; step i is
 * the interval between boundaries i-1 and i. A site is reported when its
 * live bytes grew in at least K of the last N steps and are higher at the last
 * boundary than N steps before (N: the window, default 8; K default 6).
 *
 * Memory: per tracked series (at most CT_GROWTH_SERIES), N + 2 numbers per
 * site, filled lazily (a boundary costs the sites that changed since the
 * previous one). The report uses one series: --steps NAME, else the tracked
 * series with the most boundaries, where explicit ones win: a series of
 * optimizer steps (CT_MARK_STEP from the optimizer hook, one series per
 * optimizer class) is used only when no series of marks, NVTX ranges or
 * explicit steps has at least CT_GROWTH_EXPLICIT_MIN boundaries. Inferred
 * steps (a program without any: model.h, struct ct_infer) are the only
 * series when present.
 */
#ifndef CT_ANALYZER_GROWTH_H
#define CT_ANALYZER_GROWTH_H

#include <stddef.h>
#include <stdint.h>

struct ct_model;
struct ct_report_opts;

#define CT_GROWTH_SERIES 4	/* series tracked at once */
#define CT_GROWTH_WINDOW_MAX 32 /* largest window N */
#define CT_GROWTH_WINDOW 8	/* default N */
#define CT_GROWTH_MIN 6		/* default K */
#define CT_GROWTH_EXPLICIT_MIN 3 /* boundaries (2 steps) that make an explicit series win */

enum ct_series_kind {
	CT_SERIES_INSTANT = 0, /* instants with one name */
	CT_SERIES_RANGE = 1,   /* push/pop ranges with one name at one depth */
	CT_SERIES_STARTEND = 2, /* start/end ranges with one name */
	CT_SERIES_STEP = 3,	/* explicit step marks (cumtrace_step, cumtrace.step()) with one name */
	CT_SERIES_OPTIMIZER = 4, /* optimizer steps (the Python package's torch hook) of one optimizer class */
	CT_SERIES_INFERRED = 5	 /* each allocation of the inferred clock site (model.h, struct ct_infer) */
};

struct ct_series_info {
	const char *name;
	int kind;	 /* enum ct_series_kind */
	int depth;	 /* CT_SERIES_RANGE: nesting depth, 0 = outermost; else -1 */
	uint64_t boundaries;
};

struct ct_growth_site {
	uint32_t site;	      /* index into m->sites */
	unsigned grew;	      /* steps of the window in which its live bytes grew */
	unsigned steps;	      /* steps in the window (min(N, steps of the series)) */
	uint64_t growth;      /* live bytes at the last boundary minus N steps before */
	uint64_t live_before; /* live bytes N steps before the last boundary */
	uint64_t live_last;   /* live bytes at the last boundary */
};

struct ct_growth_result {
	int have_series;	   /* a series was chosen */
	struct ct_series_info series; /* the series the sites were measured on */
	unsigned window, min_grew; /* N and K */
	struct ct_growth_site *sites; /* largest growth first */
	size_t nsites;
	const struct ct_series_info *all; /* every series tracked at the end */
	size_t nall;
	uint64_t untracked; /* boundaries of series that could not be tracked */
	uint64_t optimizer_boundaries; /* optimizer step marks seen, used or not */
};

/* Could growth be judged: a series with at least K steps (--growth K/N)? NULL: no result. */
static inline int ct_growth_judged(const struct ct_growth_result *g)
{
	return g && g->have_series && g->series.boundaries && g->series.boundaries - 1 >= g->min_grew;
}

/* Normalized K and N from the options (defaults when 0, N capped, K <= N). */
void ct_growth_params(const struct ct_report_opts *o, unsigned *min_grew, unsigned *window);

/* Add the growth analysis to m (once; later calls do nothing). */
void ct_growth_attach(struct ct_model *m, const struct ct_report_opts *o);

/* The result of a finished model; NULL when the analysis was not attached. */
const struct ct_growth_result *ct_growth_get(const struct ct_model *m);

/* "instant", "range", "start/end", "step", "optimizer" */
const char *ct_series_kind_name(int kind);

#endif
