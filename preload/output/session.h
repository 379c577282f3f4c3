/*
 * The output stage's own interface (session.c, writer.c, dumpfile.c): the
 * tracing session of this process as one object, and what its files call of
 * one another. Nothing outside preload/output/ includes this file; the rest
 * of the shim sees the session through core/seam.h.
 *
 * The session lives from tracing's start (the first traced call) to exit.
 * A fork child re-initialises it (ct_session_forked) and starts a dump of its
 * own at its first traced call; what outlives one dump is kept apart, below
 * the object: the locks (made again in a fork child), the write buffer's
 * mappings, the threads' ring key, the writer's wake-up word and the
 * warnings already given.
 */
#ifndef CT_OUTPUT_SESSION_H
#define CT_OUTPUT_SESSION_H

#include <limits.h>
#include <pthread.h>
#include <sys/types.h>

#include "../core/ct.h"
#include "../hooks/cupti.h"
#include "compress.h"

struct ct_session {
	/* The process: set when the shim loads, and again in a fork child. */
	struct ct_session_proc {
		pid_t pid;
		uint32_t parent_pid; /* a fork child's parent (getppid() at the fork) */
		int forked;	     /* this process is a fork child of a traced one */
		uint64_t start_realtime, start_monotonic;
	} proc;
	/* The dump file (dumpfile.c): -1 before it is created and after it is closed. */
	_Atomic int fd;
	char path[PATH_MAX + 16];
	/* Absolute: the manifest's line, and where the dump is opened again. */
	char path_abs[2 * PATH_MAX + 16];
	dev_t dump_dev; /* the file the dump was created as */
	ino_t dump_ino;
	/* The writer thread (writer.c) and the thread starting tracing. */
	pthread_t writer_thread;
	_Atomic int writer_joinable; /* started, and nobody has joined it yet */
	_Atomic int writer_stop;
	_Atomic int writer_up; /* the writer thread runs its own code (its runtime's start is over) */
	/*
	 * The thread that is starting tracing. Another thread waits for it; the
	 * starting thread itself, re-entered (a handler the shim does not wrap
	 * calls cumtrace_mark), never does: it would wait for ever.
	 */
	_Atomic uint32_t starting_tid;
	/* The rings: a list pushed at the head, never shortened (session.c). */
	struct ct_ring *_Atomic rings;
	_Atomic uint64_t ring_bytes;
	_Atomic uint32_t huge_rings; /* rings created that may be on huge pages (session.c) */
	struct ct_ring *_Atomic overflow_ring;
	/* Events lost outside any ring, and what the rounds have reported of them. */
	_Atomic uint64_t lost;
	uint64_t lost_reported;
	_Atomic uint64_t lost_signal; /* ct_count_lost_signal */
	uint64_t lost_signal_reported;
	_Atomic uint64_t lost_records; /* ct_count_lost_record: not events */
	uint64_t lost_records_reported;
	/* The rounds (writer.c, under ct_round_lock). */
	uint64_t batch_seq;
	size_t wbuf_len;
	int compress;  /* this dump's rounds are compressed */
	int pack;      /* this dump's events go out as CT_REC_EVENTS (CUMTRACE_PACK) */
	int in_signal; /* the round in progress runs in a fatal signal's handler */
	size_t module_count;
	unsigned long long seen_adds, seen_subs;
};

/* A session before tracing starts: no dump, every module yet to be seen (and ct_session_reset). */
#define CT_SESSION_INIT {.fd = -1, .seen_adds = ~0ull, .seen_subs = ~0ull}

extern struct ct_session ct_session CT_HIDDEN;

/* ---- what outlives a dump ----------------------------------------------------------------- */

/*
 * ct_round_lock serialises consumers of the rings (the writer, an exec-time
 * flush, the exit path) and is taken around fork so the child sees no
 * half-copied round; ct_direct_lock serialises direct writes (after exit)
 * and calibration points. The hot path takes no lock.
 */
extern pthread_mutex_t ct_round_lock CT_HIDDEN;
extern pthread_mutex_t ct_direct_lock CT_HIDDEN;

/* Warnings, each given once per process (and not again in a fork child). */
struct ct_output_warnings {
	_Atomic int open, write, thread, reopen, ring;
};
extern struct ct_output_warnings ct_warned CT_HIDDEN;

/* ---- the session's ways out (session.c), for process.c ------------------------------------- */

/* ct_flush_sync (exec, exit, cumtrace_flush) is declared in core/seam.h. */
/* Stop the writer, write CT_REC_END (process exit). */
CT_HIDDEN void ct_shutdown(void);

/* ---- the dump file (dumpfile.c) ------------------------------------------------------------ */

/*
 * Create the dump (CUMTRACE_OUTPUT) and keep its descriptor, identity and
 * absolute path in the session. Returns 0, or -1 after one warning.
 */
CT_HIDDEN int ct_dump_open(void);
/* Close the dump's descriptor when it still names the dump (else it is not ours). */
CT_HIDDEN void ct_dump_close(void);
/* Write everything or fail; on failure tracing stops for good. */
CT_HIDDEN int ct_dump_write(const void *p, size_t n);
/* The file header and the PROCESS record; 0, or -1 when they could not be written. */
CT_HIDDEN int ct_dump_put_process(void);
/* Add the dump's absolute path to CUMTRACE_MANIFEST, when set. */
CT_HIDDEN void ct_dump_note_manifest(void);

/* ---- the writer (writer.c) ------------------------------------------------------------------ */

/* Are the write buffer and the module table mapped (once per process)? */
CT_HIDDEN int ct_writer_mapped(void);
/* Map them; on failure warn and return -1. */
CT_HIDDEN int ct_writer_map(void);
/* Start the writer thread (every signal blocked by the caller); 0 or an errno value. */
CT_HIDDEN int ct_writer_spawn(void);
/* Stop the writer thread and wait for it to end; the first caller does, later ones return. */
CT_HIDDEN void ct_writer_join(void);
/*
 * Before a fork: wait (at most 200 ms) until a writer thread that was just
 * created runs its own code. While it starts, its C library (and a
 * sanitizer's runtime) allocate; a fork in the middle would leave the
 * child an allocator lock held by a thread that does not exist there.
 */
CT_HIDDEN void ct_writer_wait_up(void);
/*
 * Copy every ring to the file. Caller holds ct_round_lock. in_signal = 1 in
 * a fatal signal's handler: no dl_iterate_phdr (it takes the loader's lock,
 * which the crashing thread may hold) and no compression (libzstd may
 * allocate).
 */
CT_HIDDEN void ct_round_ex(int in_signal);
CT_HIDDEN void ct_round(void);

#endif /* CT_OUTPUT_SESSION_H */
