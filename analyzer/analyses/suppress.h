/*
 * Leak suppressions: valgrind-style blocks and LeakSanitizer one-liners, read
 * from --suppressions files (docs/report.md, "Suppressions").
 *
 *   {
 *      name
 *      cumtrace:Leak                 (or cumtrace:Growth; other tools' blocks are skipped)
 *      match-leak-kinds: leaked,cache   (optional: leaked, cache, teardown, all)
 *      fun:c10::cuda::*              the innermost frame's function, a glob ('*', '?')
 *      obj:*libfoo.so*               its module (path glob with '/', else file name)
 *      src:train.py:42               its source file (and line)
 *      ...                           any number of frames
 *   }
 *   leak:pattern                     any frame's function, file or module path
 *                                    contains pattern ('*' wildcard, '^' '$' anchors)
 *
 * Frame lines match the stack from the innermost frame out; the frames past
 * the last line do not matter. '#' starts a comment line.
 */
#ifndef CT_ANALYZER_SUPPRESS_H
#define CT_ANALYZER_SUPPRESS_H

#include <stddef.h>
#include <stdio.h>

#include "read/symbols.h"

struct ct_suppressions;

struct ct_suppressions *ct_supp_new(void);
void ct_supp_free(struct ct_suppressions *s);

/*
 * Add the suppressions of a file. Returns 0, or -1 with one line in err
 * ("FILE:LINE: what is wrong"); nothing of a bad file is kept.
 */
int ct_supp_load_file(struct ct_suppressions *s, const char *path, char *err, size_t cap);
/* The same for text in memory; origin names it in messages. */
int ct_supp_load_text(struct ct_suppressions *s, const char *origin, const char *text, size_t len,
		      char *err, size_t cap);

size_t ct_supp_count(const struct ct_suppressions *s);
/* The block's name, or "leak:PATTERN" for a one-liner. */
const char *ct_supp_name(const struct ct_suppressions *s, size_t i);
/* Where it was read from: the file and the line of its '{' (of the line for leak:). */
const char *ct_supp_origin(const struct ct_suppressions *s, size_t i, unsigned *line);

/*
 * Index of the first suppression (in the order read) that matches a site of
 * class cls (enum ct_class) with these frames (innermost first, the mixed
 * view), -1 when none does.
 */
int ct_supp_match(const struct ct_suppressions *s, int cls, const struct ct_frame *f, size_t n);

/* Frames a generated block names (valgrind's default --num-callers). */
#define CT_SUPP_GEN_FRAMES 12

/*
 * A ready block for a site of class cls with these frames: the name, a
 * cumtrace:Leak or cumtrace:Growth line, match-leak-kinds for leaks, then,
 * for the first CT_SUPP_GEN_FRAMES frames up to the last known one, fun: for
 * a frame with a function, obj: for one with a module only, "..." for
 * unknown frames. Characters a line cannot hold become '?' (which matches
 * them). Each line is prefixed with indent. A stack with no known frame gets a
 * comment line instead, and -1 (a block would match every stack).
 */
int ct_supp_write_block(FILE *out, const char *indent, const char *name, int cls,
			const struct ct_frame *f, size_t n);

#endif
