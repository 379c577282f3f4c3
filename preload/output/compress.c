/*
 * Compression of what the writer writes: each write buffer's run of records
 * becomes one CT_REC_ZSTD record (include/cumtrace/format.h) holding one zstd
 * frame. libzstd.so.1 is loaded with dlopen when tracing starts, so the shim
 * has no link-time dependency on it; without it dumps are written
 * uncompressed. Only the writer side uses this (the writer thread, the exit
 * and exec flushes under the round lock), never the hot path. libzstd's
 * working memory is mapped by the shim (ct_zstd_alloc), never malloc'ed: the
 * first malloc of the writer thread would give it an arena of its own,
 * 64 MiB of address space, which a process under `ulimit -v` may need.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem, ZSTD_createCCtx_advanced */
#include <zstd.h>

#include "compress.h"

/* Inputs below this go out as they are: a frame would not pay for itself. */
#define CT_ZSTD_MIN_INPUT 512

static struct {
	ZSTD_CCtx *(*create)(ZSTD_customMem);
	size_t (*set)(ZSTD_CCtx *, ZSTD_cParameter, int);
	size_t (*compress2)(ZSTD_CCtx *, void *, size_t, const void *, size_t);
	unsigned (*is_error)(size_t);
	ZSTD_CCtx *cctx;
} zs;

static int ct_zstd_state; /* 0 not tried, 1 ready, -1 unavailable */

/* Each allocation is a mapping of its own; its first 64 bytes keep the length. */
#define CT_ZSTD_HEADER 64

static void *ct_zstd_alloc(void *opaque, size_t size)
{
	size_t len = size + CT_ZSTD_HEADER;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	*(size_t *)m = len;
	return (unsigned char *)m + CT_ZSTD_HEADER;
}

static void ct_zstd_free(void *opaque, void *p)
{
	if (p) {
		unsigned char *m = (unsigned char *)p - CT_ZSTD_HEADER;
		munmap(m, *(size_t *)m);
	}
}

int ct_zstd_init(int level)
{
	if (ct_zstd_state)
		return ct_zstd_state > 0 ? 0 : -1;
	ct_zstd_state = -1;
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	*(void **)&zs.create = dlsym(h, "ZSTD_createCCtx_advanced");
	*(void **)&zs.set = dlsym(h, "ZSTD_CCtx_setParameter");
	*(void **)&zs.compress2 = dlsym(h, "ZSTD_compress2");
	*(void **)&zs.is_error = dlsym(h, "ZSTD_isError");
	if (!zs.create || !zs.set || !zs.compress2 || !zs.is_error)
		return -1;
	zs.cctx = zs.create((ZSTD_customMem){ct_zstd_alloc, ct_zstd_free, NULL});
	if (!zs.cctx)
		return -1;
	/* A window as large as the input: references reach across the whole
	 * buffer; a checksum lets the reader tell a damaged frame. */
	if (zs.is_error(zs.set(zs.cctx, ZSTD_c_compressionLevel, level)) ||
	    zs.is_error(zs.set(zs.cctx, ZSTD_c_windowLog, 22)) ||
	    zs.is_error(zs.set(zs.cctx, ZSTD_c_checksumFlag, 1)) ||
	    zs.is_error(zs.set(zs.cctx, ZSTD_c_contentSizeFlag, 1)))
		return -1;
	ct_zstd_state = 1;
	return 0;
}

size_t ct_zstd_pack(const void *raw, size_t n, void *out, size_t cap)
{
	struct ct_rec_zstd hdr;
	if (ct_zstd_state <= 0 || n < CT_ZSTD_MIN_INPUT || n > CT_ZSTD_RAW_MAX)
		return 0;
	if (cap > CT_REC_MAX)
		cap = CT_REC_MAX;
	if (cap < sizeof hdr + 8)
		return 0;
	/* Room for the frame: the record must end up smaller than the input. */
	size_t room = cap - sizeof hdr;
	if (room > n - sizeof hdr)
		room = n - sizeof hdr;
	size_t z = zs.compress2(zs.cctx, (unsigned char *)out + sizeof hdr, room, raw, n);
	if (zs.is_error(z))
		return 0; /* does not fit (or failed): the caller writes the records */
	size_t total = CT_REC_ALIGN(sizeof hdr + z);
	if (total > cap || total >= n)
		return 0;
	memset((unsigned char *)out + sizeof hdr + z, 0, total - sizeof hdr - z);
	hdr.rec.type = CT_REC_ZSTD;
	hdr.rec.flags = 0;
	hdr.rec.size = (uint32_t)total;
	hdr.raw_size = (uint32_t)n;
	hdr.frame_size = (uint32_t)z;
	memcpy(out, &hdr, sizeof hdr);
	return total;
}
