/*
 * Files the analyzer writes (-o FILE of every command, symbolize's output).
 * Their paths may lie in shared directories, so (docs/report.md, "Output
 * files"):
 *   - a new file is created 0600, like the dumps, whatever the umask;
 *   - an existing regular file is replaced whole: the output goes to a
 *     temporary file next to it (mkostemp: O_EXCL, 0600), renamed over it
 *     once complete, so a failed write leaves the old file as it was and a
 *     symbolic link swapped in meanwhile is replaced, never followed;
 *   - a symbolic link to a regular file (or to nothing) is refused: a link
 *     planted in /tmp must not make the report overwrite, or create, its
 *     target;
 *   - anything else that exists (a terminal, a pipe, /dev/null, a link to
 *     one such as /dev/stdout) is written in place, never created or
 *     truncated.
 */
#ifndef CT_ANALYZER_OUTFILE_H
#define CT_ANALYZER_OUTFILE_H

#include <stdio.h>

struct ct_outfile {
	FILE *f;
	char *path; /* where the output goes */
	char *tmp;  /* the temporary file renamed over path, NULL when written in place */
};

/*
 * Open path for writing (tag names the temporary file: PATH.TAG.XXXXXX).
 * Returns 0, or -1 with one line (no newline) in err.
 */
int ct_outfile_open(struct ct_outfile *o, const char *path, const char *tag, char *err, size_t cap);
/*
 * Close o: flush, set mode (0 keeps 0600) and rename the temporary file over
 * the path; with failed, or on an error, remove it instead. Returns 0, or an
 * errno value.
 */
int ct_outfile_close(struct ct_outfile *o, int failed, unsigned mode);

#endif
