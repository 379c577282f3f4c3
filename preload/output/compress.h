/*
 * Compression of the writer's rounds (compress.c); scripts/gendump.c packs
 * its synthetic dumps with it too.
 */
#ifndef CT_OUTPUT_COMPRESS_H
#define CT_OUTPUT_COMPRESS_H

#include "../core/ct.h"

/* The writer's zstd level: the fastest level that keeps the ratio (docs/capture.md). */
#define CT_ZSTD_LEVEL 1

/*
 * Load libzstd.so.1 with dlopen (the shim does not link it) and make a
 * compressor at level. Returns 0, or -1 when libzstd is absent or unusable:
 * records are then written as they are. Only the first call does anything;
 * later ones return its result.
 */
CT_HIDDEN int ct_zstd_init(int level);
/*
 * Pack n bytes of whole records (n <= CT_ZSTD_RAW_MAX) into one CT_REC_ZSTD
 * record at out (cap bytes). Returns the record's size, or 0 when that would
 * not be smaller than the records themselves or not fit in cap or
 * CT_REC_MAX: the caller then writes the records as they are.
 */
CT_HIDDEN size_t ct_zstd_pack(const void *raw, size_t n, void *out, size_t cap);

#endif /* CT_OUTPUT_COMPRESS_H */
