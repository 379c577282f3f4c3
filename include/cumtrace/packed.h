/*
 * Packed events: the one encoding of an event relative to the one before it
 * on the same thread, used by CT_REC_EVENTS in the dump (format.h) and by
 * the analyzer's reorder window (analyzer/read/reader.c), so that the
 * reader takes a run's bytes into the window nearly as they are.
 *
 * A packed event after prev: a mask byte, then LEB128 numbers (7 bits a
 * byte, low first, at most 10 bytes: the tenth byte ends a number whatever
 * its top bit): the time step ts_ns - prev's ts_ns (modulo 2^64: a step
 * back is a large number), in the window only the file-order step, then
 * each field group the mask names, in mask bit order. A field equal to
 * prev's takes no byte. The groups:
 *
 *   CT_PK_DUR     dur_ns
 *   CT_PK_PTR     ptr, as the zigzag of ptr - prev's ptr (modulo 2^64)
 *   CT_PK_SIZE    size
 *   CT_PK_STREAM  stream
 *   CT_PK_AUX     aux
 *   CT_PK_STACK   stack_id
 *   CT_PK_CALL    api, then op, kind and layer as one byte each
 *   CT_PK_REST    rec.type, rec.flags, rec.size, flags, result (as uint32),
 *                 device (as uint16), then reserved as one byte, then the
 *                 Python stack id (the CT_EVENT_F_PYSTACK trailer's, 0 none)
 *
 * tid is not packed: a run is one thread's. A number wider than its field
 * is cut to the field's width.
 */
#ifndef CUMTRACE_PACKED_H
#define CUMTRACE_PACKED_H

#include <stdint.h>

#include "format.h"

enum ct_pk_mask {
	CT_PK_DUR = 1 << 0,
	CT_PK_PTR = 1 << 1,
	CT_PK_SIZE = 1 << 2,
	CT_PK_STREAM = 1 << 3,
	CT_PK_AUX = 1 << 4,
	CT_PK_STACK = 1 << 5,
	CT_PK_CALL = 1 << 6,
	CT_PK_REST = 1 << 7,
};

/*
 * Bytes of one packed event at most, with the window's file-order step: the
 * mask, the two steps and five 64-bit fields (10 each), stack_id (5), the
 * call (3 + 3), the rest (3 + 3 + 5 + 5 + 5 + 3 + 1 + 5): 1 + 70 + 5 + 6 + 30.
 */
#define CT_PK_MAX 112

static inline unsigned char *ct_pk_put(unsigned char *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*o++ = (unsigned char)v;
	return o;
}

/*
 * Pack event e (Python stack id e_py) after prev (prev_py) into o (CT_PK_MAX
 * bytes); with_seq: the window's form, with seq_step after the time step.
 * Returns the end.
 */
static inline unsigned char *ct_pk_event(unsigned char *o, const struct ct_rec_event *prev,
					 uint32_t prev_py, const struct ct_rec_event *e,
					 uint32_t e_py, int with_seq, uint64_t seq_step)
{
	unsigned mask = 0;
	if (e->dur_ns != prev->dur_ns)
		mask |= CT_PK_DUR;
	if (e->ptr != prev->ptr)
		mask |= CT_PK_PTR;
	if (e->size != prev->size)
		mask |= CT_PK_SIZE;
	if (e->stream != prev->stream)
		mask |= CT_PK_STREAM;
	if (e->aux != prev->aux)
		mask |= CT_PK_AUX;
	if (e->stack_id != prev->stack_id)
		mask |= CT_PK_STACK;
	if (e->api != prev->api || e->op != prev->op || e->kind != prev->kind ||
	    e->layer != prev->layer)
		mask |= CT_PK_CALL;
	if (e->rec.type != prev->rec.type || e->rec.flags != prev->rec.flags ||
	    e->rec.size != prev->rec.size || e->flags != prev->flags || e->result != prev->result ||
	    e->device != prev->device || e->reserved != prev->reserved || e_py != prev_py)
		mask |= CT_PK_REST;
	*o++ = (unsigned char)mask;
	o = ct_pk_put(o, e->ts_ns - prev->ts_ns);
	if (with_seq)
		o = ct_pk_put(o, seq_step);
	if (mask & CT_PK_DUR)
		o = ct_pk_put(o, e->dur_ns);
	if (mask & CT_PK_PTR) {
		uint64_t step = e->ptr - prev->ptr;
		o = ct_pk_put(o, (step << 1) ^ (uint64_t)((int64_t)step >> 63));
	}
	if (mask & CT_PK_SIZE)
		o = ct_pk_put(o, e->size);
	if (mask & CT_PK_STREAM)
		o = ct_pk_put(o, e->stream);
	if (mask & CT_PK_AUX)
		o = ct_pk_put(o, e->aux);
	if (mask & CT_PK_STACK)
		o = ct_pk_put(o, e->stack_id);
	if (mask & CT_PK_CALL) {
		o = ct_pk_put(o, e->api);
		*o++ = e->op;
		*o++ = e->kind;
		*o++ = e->layer;
	}
	if (mask & CT_PK_REST) {
		o = ct_pk_put(o, e->rec.type);
		o = ct_pk_put(o, e->rec.flags);
		o = ct_pk_put(o, e->rec.size);
		o = ct_pk_put(o, e->flags);
		o = ct_pk_put(o, (uint32_t)e->result);
		o = ct_pk_put(o, (uint16_t)e->device);
		*o++ = e->reserved;
		o = ct_pk_put(o, e_py);
	}
	return o;
}

/* The event a run's first event is packed after: tid, an 80-byte event record, all else 0. */
static inline void ct_pk_base(struct ct_rec_event *e, uint32_t tid)
{
	*e = (struct ct_rec_event){.rec = {CT_REC_EVENT, 0, sizeof *e}, .tid = tid};
}

#endif /* CUMTRACE_PACKED_H */
