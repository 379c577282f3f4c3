#include "model/timeline.h"

#include <stdlib.h>
#include <string.h>

void ct_tl_init(struct ct_timeline *tl)
{
	memset(tl, 0, sizeof *tl);
	tl->width = CT_TL_WIDTH0;
}

void ct_tl_free(struct ct_timeline *tl)
{
	for (size_t i = 0; i < tl->nseries; i++)
		free(tl->series[i].b);
	free(tl->series);
	ct_imap_free(&tl->map);
	memset(tl, 0, sizeof *tl);
}

void ct_tl_start(struct ct_timeline *tl, uint64_t t0)
{
	if (tl->started)
		return;
	tl->started = 1;
	tl->t0 = t0;
	tl->t_end = t0;
	tl->end_idx = 0;
}

/*
 * Double the width k times (k >= 1) in one pass: each run of 2^k buckets
 * merges (max) into one, as k pairwise merges would leave them. A trace whose
 * first and last times are far apart needs dozens of doublings at once.
 */
__attribute__((noinline)) static void merge(struct ct_timeline *tl, unsigned k)
{
	size_t group = k < 20 ? (size_t)1 << k : (size_t)1 << 20; /* >= CT_TL_FINE: all in one */
	size_t kept = group < CT_TL_FINE ? CT_TL_FINE / group : 1;
	for (size_t s = 0; s < tl->nseries; s++) {
		struct ct_tl_series *se = &tl->series[s];
		for (size_t i = 0; i < kept; i++) {
			uint64_t m = 0;
			for (size_t j = i * group; j < (i + 1) * group && j < CT_TL_FINE; j++)
				if (se->b[j] > m)
					m = se->b[j];
			se->b[i] = m;
		}
		memset(se->b + kept, 0, (CT_TL_FINE - kept) * sizeof *se->b);
		se->last = k < 64 ? se->last >> k : 0;
	}
	tl->end_idx = k < 64 ? tl->end_idx >> k : 0;
	/* (2^64 - 1) >> 52 < CT_TL_FINE: the shift never passes 52 */
	tl->shift += k;
	tl->width = (uint64_t)CT_TL_WIDTH0 << tl->shift;
}

/*
 * The bucket of ts, doubling the width first as often as it takes to reach
 * ts. The width is a power of two: a shift, not a division (once per event).
 */
static inline size_t index_of(struct ct_timeline *tl, uint64_t ts)
{
	if (!tl->started)
		ct_tl_start(tl, ts);
	if (ts < tl->t0)
		return 0; /* late or earlier than the start: first bucket */
	uint64_t d = ts - tl->t0;
	if ((d >> tl->shift) < CT_TL_FINE)
		return (size_t)(d >> tl->shift);
	unsigned k = 1;
	while ((d >> (tl->shift + k)) >= CT_TL_FINE)
		k++;
	merge(tl, k);
	return (size_t)(d >> tl->shift);
}

/* Time advances to ts, whose bucket is idx. */
static void touch_at(struct ct_timeline *tl, uint64_t ts, size_t idx)
{
	if (ts > tl->t_end)
		tl->t_end = ts;
	if (idx > tl->end_idx)
		tl->end_idx = idx;
}

void ct_tl_touch(struct ct_timeline *tl, uint64_t ts)
{
	touch_at(tl, ts, index_of(tl, ts));
}

static void fill_to(struct ct_tl_series *se, size_t idx)
{
	for (size_t i = se->last + 1; i <= idx; i++)
		if (se->b[i] < se->cur)
			se->b[i] = se->cur;
	if (idx > se->last)
		se->last = idx;
}

static int series_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_timeline *tl = ctx;
	const struct ct_tl_series *k = key;
	return tl->series[idx].kind == k->kind && tl->series[idx].device == k->device;
}

/*
 * The series of (kind, device), made with its first write at bucket idx;
 * CT_IMAP_NONE when CT_TL_MAX_SERIES are taken. The previous answer is
 * tried first (a thread's events come in runs); it is checked against the
 * key, so it stays right when ct_tl_sort moves the series.
 */
static uint32_t series_of(struct ct_timeline *tl, uint8_t kind, int16_t device, size_t idx)
{
	if (tl->last_si < tl->nseries && tl->series[tl->last_si].kind == kind &&
	    tl->series[tl->last_si].device == device)
		return tl->last_si;
	struct ct_tl_series key = {.kind = kind, .device = device};
	uint64_t h = ct_hash2(kind, (uint16_t)device);
	uint32_t si = ct_imap_get(&tl->map, h, series_eq, tl, &key);
	if (si == CT_IMAP_NONE) {
		if (tl->nseries >= CT_TL_MAX_SERIES)
			return CT_IMAP_NONE;
		tl->series = ct_xgrow(tl->series, &tl->capseries, tl->nseries + 1,
				      sizeof *tl->series);
		si = (uint32_t)tl->nseries++;
		struct ct_tl_series *se = &tl->series[si];
		*se = key;
		se->b = ct_xcalloc(CT_TL_FINE, sizeof *se->b);
		se->last = idx; /* nothing was live before: buckets before stay 0 */
		ct_imap_put(&tl->map, h, si);
	}
	tl->last_si = si;
	return si;
}

void ct_tl_update(struct ct_timeline *tl, uint8_t kind, int16_t device, uint64_t ts,
		  uint64_t live)
{
	size_t idx = index_of(tl, ts);
	touch_at(tl, ts, idx);
	uint32_t si = series_of(tl, kind, device, idx);
	if (si == CT_IMAP_NONE) {
		tl->dropped_series++;
		return;
	}
	struct ct_tl_series *se = &tl->series[si];
	fill_to(se, idx);
	se->cur = live;
	if (se->b[idx] < live)
		se->b[idx] = live;
}

/* The fine bucket holding ts: 0 before t0, the last one used after t_end. */
static uint64_t fine_of(const struct ct_timeline *tl, uint64_t ts)
{
	if (ts <= tl->t0)
		return 0;
	uint64_t i = (ts - tl->t0) >> tl->shift;
	return i > tl->end_idx ? tl->end_idx : i;
}

/* Fine buckets per output bucket from fine bucket f0: output buckets are whole fine buckets. */
static uint64_t fine_per_bucket(const struct ct_timeline *tl, uint64_t f0, size_t n)
{
	uint64_t used = (uint64_t)tl->end_idx + 1 - f0;
	if (!n)
		n = 1;
	return used / n + (used % n ? 1 : 0);
}

uint64_t ct_tl_bucket_ns(const struct ct_timeline *tl, size_t n)
{
	return fine_per_bucket(tl, 0, n) * tl->width;
}

uint64_t ct_tl_bucket_ns_from(const struct ct_timeline *tl, uint64_t from, size_t n, uint64_t *start)
{
	uint64_t f0 = fine_of(tl, from);
	*start = tl->t0 + f0 * tl->width;
	return fine_per_bucket(tl, f0, n) * tl->width;
}

static uint64_t resample(const struct ct_timeline *tl, size_t si, uint64_t f0, size_t n, uint64_t *out)
{
	const struct ct_tl_series *se = &tl->series[si];
	uint64_t k = fine_per_bucket(tl, f0, n);
	for (size_t j = 0; j < n; j++) {
		uint64_t mx = 0;
		for (uint64_t i = f0 + j * k; i < f0 + (j + 1) * k; i++) {
			/* after the last write (and past the end) the current value holds */
			uint64_t v = i > se->last ? se->cur : se->b[i];
			if (v > mx)
				mx = v;
			if (i > se->last)
				break; /* the rest are the same */
		}
		out[j] = mx;
	}
	return k * tl->width;
}

uint64_t ct_tl_resample(const struct ct_timeline *tl, size_t si, size_t n, uint64_t *out)
{
	return resample(tl, si, 0, n, out);
}

uint64_t ct_tl_resample_from(const struct ct_timeline *tl, size_t si, uint64_t from, size_t n,
			     uint64_t *out)
{
	return resample(tl, si, fine_of(tl, from), n, out);
}

static int cmp_series(const void *a, const void *b)
{
	const struct ct_tl_series *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->device > y->device) - (x->device < y->device);
}

void ct_tl_sort(struct ct_timeline *tl)
{
	if (tl->nseries > 1)
		qsort(tl->series, tl->nseries, sizeof *tl->series, cmp_series);
	/* the index no longer matches: rebuild */
	ct_imap_free(&tl->map);
	for (size_t i = 0; i < tl->nseries; i++)
		ct_imap_put(&tl->map,
			    ct_hash2(tl->series[i].kind, (uint16_t)tl->series[i].device),
			    (uint32_t)i);
}
