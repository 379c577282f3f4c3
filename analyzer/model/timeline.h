/*
 * Streaming timeline: live bytes over time per (kind, device) series.
 *
 * Every series keeps CT_TL_FINE fixed-width buckets holding the most live
 * bytes seen in each. The width starts at CT_TL_WIDTH0 ns; when time runs
 * past the last bucket, pairs of buckets merge (max) and the width doubles.
 * Memory is CT_TL_FINE * 8 bytes per series, whatever the trace length.
 */
#ifndef CT_ANALYZER_TIMELINE_H
#define CT_ANALYZER_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "base/util.h"

#define CT_TL_FINE 4096
#define CT_TL_WIDTH0 1u /* a power of two: widths stay powers of two */
#define CT_TL_MAX_SERIES 256

struct ct_tl_series {
	uint8_t kind;
	int16_t device;
	uint64_t cur;  /* live bytes now */
	size_t last;   /* last bucket written */
	uint64_t *b;   /* CT_TL_FINE buckets */
};

struct ct_timeline {
	int started;
	uint64_t t0;	 /* start of bucket 0 */
	uint64_t width;	 /* ns per fine bucket: 1 << shift */
	unsigned shift;
	uint64_t t_end;	 /* latest time seen */
	size_t end_idx;	 /* bucket of t_end */
	struct ct_tl_series *series;
	size_t nseries, capseries;
	struct ct_imap map;
	uint32_t last_si; /* the series last updated, if still below nseries (timeline.c) */
	uint64_t dropped_series; /* updates for series beyond CT_TL_MAX_SERIES */
};

void ct_tl_init(struct ct_timeline *tl);
void ct_tl_free(struct ct_timeline *tl);
/* Set the start time (before the first update); later times extend the range. */
void ct_tl_start(struct ct_timeline *tl, uint64_t t0);
/* Time advances to ts (any event). */
void ct_tl_touch(struct ct_timeline *tl, uint64_t ts);
/* Series (kind, device) has live bytes `live` from ts on. */
void ct_tl_update(struct ct_timeline *tl, uint8_t kind, int16_t device, uint64_t ts,
		  uint64_t live);

/*
 * Resample to n buckets starting at t0. Each output bucket is a whole number
 * of fine buckets (so its value is exactly the max over its own interval);
 * n buckets cover at least [t0, t_end], and buckets past t_end hold the live
 * bytes at the end. out (n values) gets the max live bytes of series si in
 * each; returns the output bucket width in ns.
 */
uint64_t ct_tl_resample(const struct ct_timeline *tl, size_t si, size_t n, uint64_t *out);
/* The output bucket width ct_tl_resample uses for n buckets. */
uint64_t ct_tl_bucket_ns(const struct ct_timeline *tl, size_t n);
/*
 * The same from the fine bucket holding `from` (clamped to [t0, t_end]) on:
 * the first output bucket starts at that fine bucket's start, *start (at most
 * one fine width before from), so that a chart can begin at the first event
 * rather than at t0 (the process start).
 */
uint64_t ct_tl_resample_from(const struct ct_timeline *tl, size_t si, uint64_t from, size_t n,
			     uint64_t *out);
uint64_t ct_tl_bucket_ns_from(const struct ct_timeline *tl, uint64_t from, size_t n, uint64_t *start);
/* Sort series by (kind, device) for stable output. */
void ct_tl_sort(struct ct_timeline *tl);

#endif
