/*
 * Python frames of a dump (CT_REC_PYSTRING, CT_REC_PYSTACK and the events'
 * pystack trailer: include/cumtrace/format.h) and how they are shown.
 *
 * An event that carries a Python stack gets a combined stack id (bit 31 set)
 * standing for (native stack id, Python stack id), so sites and leaks group
 * by both; ct_frames_resolve turns any stack id into frames.
 */
#ifndef CT_ANALYZER_PYSTACK_H
#define CT_ANALYZER_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "cumtrace/format.h"
#include "read/symbols.h"

struct ct_model;
struct ct_pytab;

#define CT_PY_COMBINED 0x80000000u

struct ct_pytab *ct_pytab_new(void);
void ct_pytab_free(struct ct_pytab *t);
void ct_pytab_add_string(struct ct_pytab *t, uint32_t id, const char *s, size_t len);
void ct_pytab_add_stack(struct ct_pytab *t, uint32_t id, unsigned depth,
			const struct ct_pyframe *frames);
/* The combined id of (native stack id, Python stack id). */
uint32_t ct_pytab_combine(struct ct_pytab *t, uint32_t native_id, uint32_t py_id);

enum ct_frames_mode {
	CT_FRAMES_MIXED = 0,  /* Python frames in place of the interpreter's native frames */
	CT_FRAMES_NATIVE = 1, /* --native: native frames only */
	CT_FRAMES_PYTHON = 2, /* --python-only: Python frames only */
};
void ct_frames_set_mode(int mode);

/* 1 when stack id (native or combined) is known. */
int ct_frames_has(struct ct_model *m, uint32_t id);
/* Frames of stack id, innermost first; Python frames have python = 1. */
size_t ct_frames_resolve(struct ct_model *m, uint32_t id, struct ct_frame *out, size_t max);
/* The same in a given enum ct_frames_mode, whatever the display mode (classification, identity). */
size_t ct_frames_resolve_mode(struct ct_model *m, uint32_t id, int mode, struct ct_frame *out,
			      size_t max);

#endif
