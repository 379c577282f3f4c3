/* Marks and NVTX ranges (CT_REC_MARK) of a dump, kept in file order. */
#ifndef CT_ANALYZER_MARKS_H
#define CT_ANALYZER_MARKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CT_MARKS_KEEP 10000 /* marks kept for the report; later ones are only counted */

struct ct_mark {
	uint64_t ts_ns, aux;
	uint32_t tid;
	uint16_t kind; /* enum ct_mark_kind */
	uint64_t seq;  /* file order */
	char *name;
};

/* One named counter of one device (CT_REC_COUNTER): its samples summed up. */
struct ct_counter_stat {
	char *name;
	int device;
	uint64_t samples, last, max;
};
#define CT_COUNTERS_MAX 256 /* distinct (name, device) kept; later ones are only counted */

struct ct_marklist {
	struct ct_mark *v;
	size_t n, cap;
	uint64_t ranges; /* PUSH + START marks */
	uint64_t instants;
	uint64_t steps[3]; /* STEP marks by source: [0] unknown, [CT_STEP_EXPLICIT], [CT_STEP_OPTIMIZER] */
	struct ct_counter_stat *counters; /* in order of appearance */
	size_t ncounters, capcounters;
	uint64_t counter_samples; /* every CT_REC_COUNTER, kept or not */
};

struct ct_marklist *ct_marks_new(void);
void ct_marks_free(struct ct_marklist *l);
void ct_marks_add(struct ct_marklist *l, uint64_t ts_ns, uint64_t aux, uint32_t tid,
		  unsigned kind, const char *name, size_t name_len);
/* Count one CT_REC_COUNTER sample. */
void ct_marks_counter(struct ct_marklist *l, const char *name, size_t name_len, int device,
		      uint64_t value);
/*
 * Marks waiting for the events of their time: the reader hands marks over in
 * file order, ahead of the (reordered) events around them; the model releases
 * each one to its observers once the events reach its time. A binary heap by
 * (ts_ns, file order); names are copied.
 */
struct ct_markq;
struct ct_markq *ct_markq_new(void);
void ct_markq_free(struct ct_markq *q);
void ct_markq_push(struct ct_markq *q, uint64_t ts_ns, uint64_t aux, uint32_t tid,
		   unsigned kind, const char *name, size_t name_len);
/*
 * Pop the earliest mark with ts_ns <= until into *out (its name stays valid
 * until the next call on q). Returns 0 when there is none.
 */
int ct_markq_pop(struct ct_markq *q, uint64_t until, struct ct_mark *out);

/* Order the kept marks by time (file order among equal times); idempotent. */
void ct_marks_sort(struct ct_marklist *l);
/*
 * A mark for people: a step or instant at its time, or a range from its push
 * or start to its pop (the same thread's) or end (the same id), end_ns when
 * it was never closed. name points into the list.
 */
struct ct_mark_entry {
	uint64_t ts_ns, end_ns; /* end_ns == ts_ns: a step or an instant */
	const char *name;
	uint16_t kind;	 /* CT_MARK_INSTANT, CT_MARK_STEP, CT_MARK_PUSH or CT_MARK_START */
	uint32_t merged; /* the other marks counted in this one */
};
/*
 * The kept marks as entries in time order, each counted once (sorts the
 * list): a mark or range that opens while a range or mark of the same name
 * is open (or at the same time as it) is the same thing recorded twice
 * (cumtrace.range and an NVTX range of one block of code, a step mark inside
 * its NVTX step range, a range pushed twice): it is merged into the first,
 * whose end becomes the later of the two. Pops and ends close entries only.
 * Returns their number; *out (to free) gets them.
 */
size_t ct_marks_entries(struct ct_marklist *l, uint64_t end_ns, struct ct_mark_entry **out);
/* "instant", "push", "pop", "start", "end", "step" */
const char *ct_mark_kind_name(unsigned kind);
/*
 * The name of the series a mark or range belongs to: its name with a counter at
 * its end replaced by '#' ("step 17" and "step 18" -> "step #", "epoch 2/10" ->
 * "epoch #", "iter_3" -> "iter_#", "42" -> "#"): a number after a space, '_',
 * '-', ':', '=' or '#', or the whole name. Other names are unchanged ("layer1",
 * "conv2": a number glued to a word names a thing). Into out (cap bytes, cut
 * when longer); returns out.
 */
const char *ct_mark_series_name(const char *name, char *out, size_t cap);
/* A step mark's source (its aux): "explicit", "optimizer", "unknown". */
const char *ct_step_source_name(uint64_t source);

#endif
