/*
 * ---- packed events (issue 15) ----
 * Filling a CT_REC_EVENTS record (include/cumtrace/format.h) in a buffer of
 * whole records: the writer's (writer.c) and scripts/gendump.c's. No
 * allocation, no lock: the caller owns the buffer and the run.
 */
#ifndef CT_OUTPUT_PACKRUN_H
#define CT_OUTPUT_PACKRUN_H

#include "../core/ct.h"
#include "cumtrace/packed.h"

/* The run being filled, if open: its header goes at buf + at when it closes. */
struct ct_packrun {
	int open;
	size_t at;
	uint32_t count, prev_py;
	struct ct_rec_event prev; /* the last event packed */
};

/* Bytes of buffer ct_packrun_put may use at most past len. */
#define CT_PACKRUN_ROOM (sizeof(struct ct_rec_events) + CT_PK_MAX + 8)

/*
 * Pack event ev (Python stack id py: the trailer's, 0 without one) at
 * buf + *len, into the open run when it is ev's thread's, else a new one
 * (the open one closed first). The caller leaves CT_PACKRUN_ROOM bytes.
 */
CT_HIDDEN void ct_packrun_put(struct ct_packrun *run, unsigned char *buf, size_t *len,
			      const struct ct_rec_event *ev, uint32_t py);
/* Close the open run, if any: its header, and zero padding to 8 bytes (at most 7 past *len). */
CT_HIDDEN void ct_packrun_close(struct ct_packrun *run, unsigned char *buf, size_t *len);
/*
 * Whether the event record r (size bytes, finished or not) packs into a run
 * exactly: 80 bytes without CT_EVENT_F_PYSTACK, or 88 with it and a trailer
 * whose reserved word is 0; *py its Python stack id then.
 */
CT_HIDDEN int ct_packrun_fits(const struct ct_rec *r, uint32_t *py);

#endif /* CT_OUTPUT_PACKRUN_H */
