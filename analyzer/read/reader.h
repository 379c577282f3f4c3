/*
 * Streaming reader for cumtrace dumps (format: include/cumtrace/format.h).
 *
 * The reader validates every record against the format, treats the file as
 * untrusted, and calls back once per record. Events (CT_REC_EVENT) are
 * delivered in global time order: the events of the current batch wait in a
 * min-heap keyed by (ts_ns, tid, file order) and are released, on each
 * CT_REC_BATCH, up to the previous batch's snapshot time; the rest at end of
 * file. All other records are delivered in file order as they are read.
 *
 * CT_REC_ZSTD records are decompressed (libzstd) and the records inside are
 * validated and delivered exactly as if they stood in the file; an error in
 * one names the CT_REC_ZSTD's offset and the offset inside its run.
 *
 * Memory: one read buffer (chunk + CT_REC_MAX bytes), one decompression
 * buffer (CT_ZSTD_RAW_MAX) once a CT_REC_ZSTD is seen, plus the pending events
 * of one batch (bounded by max_pending: past it, the oldest is released),
 * and one record-sized buffer once a CT_REC_SYMBOLS record is read.
 */
#ifndef CT_ANALYZER_READER_H
#define CT_ANALYZER_READER_H

#include <stddef.h>
#include <stdint.h>

#include "cumtrace/format.h"

/*
 * Callbacks; any may be NULL. Pointers passed in are valid only during the
 * call. Records are copied into properly aligned structs first, so fields
 * can be read directly; a record longer than its fixed part has its extra
 * trailing bytes ignored.
 */
struct ct_reader_cb {
	void *ctx;
	/* strings: the NUL-separated "key=value" area after the fixed part */
	void (*process)(void *ctx, const struct ct_rec_process *p, const char *strings,
			size_t len);
	/* in global time order (without event and pycombine, events are only counted) */
	void (*event)(void *ctx, const struct ct_rec_event *ev);
	/* ips: depth frames, innermost first */
	void (*stack)(void *ctx, uint32_t stack_id, unsigned depth, const uint64_t *ips);
	/* path: path_len bytes, not necessarily NUL-terminated (use path_len) */
	void (*module)(void *ctx, const struct ct_rec_module *m, const uint8_t *build_id,
		       const char *path, size_t path_len);
	void (*drops)(void *ctx, const struct ct_rec_drops *d);
	void (*batch)(void *ctx, const struct ct_rec_batch *b);
	void (*end)(void *ctx, const struct ct_rec_end *e);
	void (*mark)(void *ctx, const struct ct_rec_mark *m, const char *name, size_t name_len);
	/* CT_REC_MEMINFO, in file order (before or after its failed event) */
	void (*meminfo)(void *ctx, const struct ct_rec_meminfo *mi);
	/* CT_REC_MEMSAMPLE (issue 19 §6), in file order */
	void (*memsample)(void *ctx, const struct ct_rec_memsample *ms);
	/* CT_REC_COUNTER: name has name_len bytes (NUL included, not guaranteed) */
	void (*counter)(void *ctx, const struct ct_rec_counter *c, const char *name, size_t name_len);
	/* a record of a type this reader does not interpret (skipped) */
	void (*unknown)(void *ctx, unsigned type, uint64_t offset, uint32_t size);
	/* CT_REC_PYSTRING: str has len bytes (NUL included, not guaranteed) */
	void (*pystring)(void *ctx, uint32_t id, const char *str, size_t len);
	/* CT_REC_PYSTACK: depth frames, innermost first */
	void (*pystack)(void *ctx, uint32_t id, unsigned depth, const struct ct_pyframe *frames);
	/*
	 * An event with a Python stack (CT_EVENT_F_PYSTACK): called before event,
	 * it returns the stack id that event then carries (e.g. a combined id).
	 */
	uint32_t (*pycombine)(void *ctx, uint32_t stack_id, uint32_t pystack_id);
	/*
	 * CT_REC_SYMBOLS, checked: addrs and frames are aligned arrays of
	 * s->naddrs and s->nframes entries; each address has 1..CT_SYM_FRAMES_MAX
	 * frames and their counts sum to s->nframes; every string offset is
	 * CT_SYM_NONE or inside strings, whose last byte is NUL.
	 */
	void (*symbols)(void *ctx, const struct ct_rec_symbols *s, const struct ct_sym_addr *addrs,
			const struct ct_sym_frame *frames, const char *strings);
	/* every complete record that was read without error, raw, in file order */
	void (*record)(void *ctx, const void *rec, uint32_t size, uint64_t offset);
};

struct ct_read_opts {
	size_t chunk_size;  /* bytes per read(2); 0 = 1 MiB */
	size_t max_pending; /* events held for reordering; 0 = 1 Mi events, or up to
			     * 2 Mi (192 MiB) when the dump says its rings are larger
			     * (setting.buffer_mb) */
	/*
	 * Stop before the next record once this many bytes of records were
	 * read, those decompressed from CT_REC_ZSTD counted at their
	 * decompressed size; 0 = no limit. The result is then
	 * CT_READ_TRUNCATED at that record, with budget_stopped set. The
	 * fuzzer's budget: a 64 KiB input can decompress to gigabytes of
	 * events (tests/fuzz/fuzz_dump.c).
	 */
	uint64_t max_record_bytes;
	/*
	 * Decompress every CT_REC_ZSTD on the calling thread. By default the
	 * next one is decompressed on a second thread while the current one's
	 * records are dispatched (zprefetch.h); what the reader delivers is the
	 * same either way.
	 */
	int no_prefetch;
	/*
	 * ct_read_file: run the callbacks on the calling thread while the
	 * records are read on a second one (pipe.h). 0: when this process may
	 * run on at least CT_PIPE_MIN_CPUS CPUs (sched_getaffinity); 1: always;
	 * -1: never. Never with no_prefetch, without an event or pycombine
	 * callback (nothing worth the thread), or with a record callback. The
	 * callbacks see the same calls either way.
	 */
	int pipeline;
	/*
	 * Called after every read(2) (and once at end of file) with the bytes
	 * read so far, the size of the file (0 when unknown) and the events
	 * read so far; NULL = not called. For progress lines (progress.h).
	 */
	void (*progress)(void *ctx, uint64_t bytes, uint64_t total, uint64_t events);
	void *progress_ctx;
};

enum ct_read_status {
	CT_READ_OK = 0,	       /* whole file read */
	CT_READ_TRUNCATED = 1, /* file ends inside a record: what came before was read */
	CT_READ_ERROR = 2,     /* unreadable or corrupt: see error */
};

struct ct_read_result {
	int status;		   /* enum ct_read_status */
	char error[512];	   /* CT_READ_ERROR: one line, no file name, no newline */
	uint64_t error_offset;	   /* CT_READ_ERROR on a record: its offset */
	uint64_t truncated_offset; /* CT_READ_TRUNCATED: offset of the partial record */
	int budget_stopped;	   /* CT_READ_TRUNCATED by max_record_bytes, not the file */
	uint64_t file_bytes;	   /* bytes read */
	unsigned version;	   /* file header version */
	uint64_t records;	   /* complete records read, those inside CT_REC_ZSTD included */
	uint64_t events;	   /* CT_REC_EVENT records */
	uint64_t batches;	   /* CT_REC_BATCH records */
	uint64_t unknown_records;  /* records skipped (unknown or reserved type) */
	uint64_t zstd_records;	   /* CT_REC_ZSTD records (decompressed and read) */
	uint64_t zstd_prefetched;  /* ... of them decompressed ahead on the second thread */
	int error_in_zstd;	   /* CT_READ_ERROR in a record inside a CT_REC_ZSTD ... */
	uint64_t error_zstd_pos;   /* ... at this offset of its decompressed run */
	uint64_t late_events;	   /* events older than one already released */
	uint64_t forced_releases;  /* events released early because max_pending was hit */
	uint64_t max_pending_seen; /* the most events held at once */
	int pipelined;		   /* read on a second thread (pipe.h) */
};

/*
 * Read a dump file. Refuses directories, FIFOs and other non-regular files
 * (opened non-blocking, so it never waits for a writer). Returns res->status.
 */
int ct_read_file(const char *path, const struct ct_read_opts *opts, const struct ct_reader_cb *cb,
		 struct ct_read_result *res);

/* Read a dump held in memory (tests), with the same streaming code path. */
int ct_read_mem(const void *data, size_t len, const struct ct_read_opts *opts,
		const struct ct_reader_cb *cb, struct ct_read_result *res);

/*
 * Iterate the "key=value" strings of a CT_REC_PROCESS. *pos starts at 0.
 * Returns 1 with key/value set (not NUL-terminated: use the lengths; a string
 * without '=' has an empty value), 0 at the end. Empty strings (padding) are
 * skipped.
 */
int ct_process_next_kv(const char *strings, size_t len, size_t *pos, const char **key,
		       size_t *key_len, const char **val, size_t *val_len);

#endif
