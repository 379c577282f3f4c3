/*
 * Every analysis (model.h: struct ct_analysis), defined in its own file, and
 * what a report is: the analyses a command reads and how it writes them.
 * The model keeps each analysis's state and hands it back by these addresses.
 * Adding a report = its analysis, its struct ct_report, one row in
 * commands/commands.def (which names the report).
 */
#ifndef CT_ANALYZER_ANALYSES_H
#define CT_ANALYZER_ANALYSES_H

#include <stddef.h>
#include <stdio.h>

#include "base/json.h"
#include "commands/options.h"
#include "model/model.h"

extern const struct ct_analysis ct_analysis_growth;   /* analyses/growth.c: sites growing step by step */
extern const struct ct_analysis ct_analysis_phases;   /* analyses/peak.c: device bytes per NVTX range / mark phase */
extern const struct ct_analysis ct_analysis_oom;      /* analyses/oom.c: allocations failed with out-of-memory */
extern const struct ct_analysis ct_analysis_frag;     /* analyses/frag.c: fragmentation per device */
extern const struct ct_analysis ct_analysis_streams;  /* analyses/streams.c: per stream */
extern const struct ct_analysis ct_analysis_perfetto; /* exports/perfetto.c: counters, slices, NVTX */
extern const struct ct_analysis ct_analysis_memviz;   /* exports/memviz.c: the trace ring */
/* analyses/layers.c: PyTorch's allocated bytes when it ran without its caching allocator */
extern const struct ct_analysis ct_analysis_torch_uncached;

/*
 * What a command runs and writes. Every callback sees the command's options;
 * any may be NULL.
 */
struct ct_report {
	/* the analyses it reads, attached to every model before its dump is read, in this
	 * order (NULL-terminated; CT_USES) */
	const struct ct_analysis *const *uses;
	/* write the report of the n analyzed models in o->format (JSON: only when json is NULL);
	 * NULL: text, one block per model, or csv (render.h: ct_render_per_format) */
	void (*render)(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n);
	void (*text)(FILE *f, const struct ct_report_opts *o, struct ct_model *m);
	void (*csv)(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n);
	/* its part of the JSON document (a key and a value); NULL: render writes its own JSON */
	void (*json)(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *const *ms,
		     size_t n);
};

/* The analyses of a struct ct_report: CT_USES(&ct_analysis_oom, ...). */
#define CT_USES(...) ((const struct ct_analysis *const[]){__VA_ARGS__, NULL})

#endif
