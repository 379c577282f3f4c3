/*
 * Reading a dump on a second thread while the calling thread runs the
 * callbacks.
 *
 * The reader (reader.c) checks, decompresses and orders the records on its
 * own thread, with a stand-in set of callbacks that copy each call's
 * arguments into blocks of a bounded queue; the calling thread takes the
 * blocks in order and makes the same calls on the caller's callbacks, with
 * the same arguments, in the same order. So what the callbacks see is what
 * a read on one thread gives them; only the work is spread over two cores
 * (three with the zstd read-ahead). Pointers handed to a callback stay
 * valid for that call only, as with the reader on one thread.
 *
 * The progress callback (ct_read_opts.progress) runs on the reading thread.
 * The record callback (raw records in file order) is not supported here:
 * ct_read_file reads on one thread when it is set.
 */
#ifndef CT_ANALYZER_PIPE_H
#define CT_ANALYZER_PIPE_H

#include "read/reader.h"

/*
 * Three threads (the callbacks, the reader, the zstd read-ahead) are slower
 * than two on two CPUs: measured on a 2-core machine, the leaks report of a
 * 4M-event dump took 0.40 s instead of 0.31 s (docs/bench.md).
 */
#define CT_PIPE_MIN_CPUS 3

/* Whether ct_read_file would read on a second thread with opts and cb. */
int ct_pipe_wanted(const struct ct_read_opts *opts, const struct ct_reader_cb *cb);

/*
 * Read path as ct_read_file does (on the reading thread, with pipeline -1). Returns -1 without reading when the second thread or its
 * first blocks cannot be had (the caller then reads on one thread), else
 * the read's status.
 */
int ct_pipe_read_file(const char *path, const struct ct_read_opts *opts,
		      const struct ct_reader_cb *cb, struct ct_read_result *res);

#endif
