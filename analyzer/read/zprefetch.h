/*
 * Decompressing the next CT_REC_ZSTD record on a second thread while the
 * reader dispatches the records of the current one.
 *
 * The reader stays the only judge of a record: it posts a frame it has not
 * checked yet (a guess at what comes next), and when it reaches that offset
 * it checks the record as always and then takes the worker's output instead
 * of decompressing. Decompression is deterministic, so what the reader sees
 * (events, errors, offsets) is the same with or without the worker; a guess
 * it never reaches is dropped. One job at a time; no job is queued behind
 * another.
 */
#ifndef CT_ZPREFETCH_H
#define CT_ZPREFETCH_H

#include <stddef.h>
#include <stdint.h>

struct ct_zpre;

/* A prefetcher, its thread started at the first post; NULL when out of memory. */
struct ct_zpre *ct_zpre_new(void);

/*
 * Decompress frame (fsize bytes, copied) of the record at file offset off,
 * expected to hold raw_size bytes, in the background. Returns 0 when
 * posted, -1 when not (a job pending, no thread, an empty frame, raw_size
 * past CT_ZSTD_RAW_MAX): the reader then decompresses it itself.
 */
int ct_zpre_post(struct ct_zpre *z, uint64_t off, const void *frame, size_t fsize,
		 uint32_t raw_size);

/*
 * The result for the record at off, waiting for it: returns 1 and swaps
 * *buf (CT_ZSTD_RAW_MAX bytes, or NULL: the worker's buffer then goes to the
 * caller and the worker makes a new one) with the worker's output buffer,
 * *got being ZSTD_decompressDCtx's return value; 0 when no job for off was
 * posted (a job for another offset is waited for and dropped).
 */
int ct_zpre_take(struct ct_zpre *z, uint64_t off, unsigned char **buf, size_t *got);

/* Stop the thread (waiting for its job) and free everything; NULL is fine. */
void ct_zpre_free(struct ct_zpre *z);

#endif
