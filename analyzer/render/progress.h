/*
 * A progress line on standard error while dumps are read, for dumps that
 * take a while: "reading rank3.dump (4/8): 45% (1.2 GiB / 2.7 GiB), 12.3M
 * events", rewritten in place ('\r') at most every CUMTRACE_REPORT_PROGRESS_MS
 * (default 200) once reading has taken CUMTRACE_REPORT_PROGRESS_AFTER_MS
 * (default 1000), and erased when reading ends. Only when standard error is
 * a terminal: nothing is ever written otherwise.
 */
#ifndef CT_ANALYZER_PROGRESS_H
#define CT_ANALYZER_PROGRESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct ct_progress {
	FILE *out;	   /* NULL: off */
	uint64_t start_ns; /* when reading began */
	uint64_t after_ns, every_ns;
	uint64_t last_ns;  /* when the line was last written */
	char name[64];	   /* the dump being read (its base name, printable) */
	size_t index, count;
	size_t shown; /* characters of the line on the terminal, 0 when none */
};

#define CT_PROGRESS_AFTER_MS 1000
#define CT_PROGRESS_EVERY_MS 200

/* Start: on when standard error is a terminal; the delays from the environment. */
void ct_progress_init(struct ct_progress *p);
/* Start with explicit settings (tests): out NULL = off. */
void ct_progress_setup(struct ct_progress *p, FILE *out, uint64_t after_ms, uint64_t every_ms);
/* The next dump to be read: path, its number (from 1) of count. */
void ct_progress_file(struct ct_progress *p, const char *path, size_t index, size_t count);
/* The reader's progress callback (struct ct_read_opts.progress); ctx is the ct_progress. */
void ct_progress_update(void *ctx, uint64_t bytes, uint64_t total, uint64_t events);
/* Erase the line, if one is shown (before any other output on standard error). */
void ct_progress_clear(struct ct_progress *p);

/*
 * The line's text into buf: "reading NAME[ (I/N)]: P% (BYTES / TOTAL), E
 * events" (without a known total: "reading NAME: BYTES, E events"). Returns its length.
 */
size_t ct_progress_format(char *buf, size_t cap, const char *name, size_t index, size_t count,
			  uint64_t bytes, uint64_t total, uint64_t events);

#endif
