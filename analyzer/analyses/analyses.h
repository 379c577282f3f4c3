/*
 * Every analysis (model.h: struct ct_analysis), defined in its own file. A
 * command names the ones it reads in its struct ct_report (commands.h); the
 * model keeps their state and hands it back by these addresses.
 */
#ifndef CT_ANALYZER_ANALYSES_H
#define CT_ANALYZER_ANALYSES_H

#include "model/model.h"

extern const struct ct_analysis ct_analysis_growth;   /* analyses/growth.c: sites growing step by step */
extern const struct ct_analysis ct_analysis_phases;   /* analyses/peak.c: device bytes per NVTX range / mark phase */
extern const struct ct_analysis ct_analysis_oom;      /* analyses/oom.c: allocations failed with out-of-memory */
extern const struct ct_analysis ct_analysis_frag;     /* analyses/frag.c: fragmentation per device */
extern const struct ct_analysis ct_analysis_streams;  /* analyses/streams.c: per stream */
extern const struct ct_analysis ct_analysis_perfetto; /* exports/perfetto.c: counters, slices, NVTX */
extern const struct ct_analysis ct_analysis_memviz;   /* exports/memviz.c: the trace ring */

#endif
