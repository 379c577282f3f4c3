/* The public marker API (include/cumtrace/cumtrace.h). */
#define _GNU_SOURCE
#include <string.h>

#include "cumtrace/cumtrace.h"
#include "hooks.h"

#define CT_MARK_NAME_MAX 1024

/*
 * Start a record of type, a fixed part of fixed bytes at hdr and a name (a
 * mark, a counter): tracing started first (it picks the clock the record's
 * stamp is read from), the name (cut to CT_MARK_NAME_MAX - 1 bytes) copied to
 * name_at with its NUL and zero padding, the header filled in. Returns the
 * record's size; *name_len is the name's bytes.
 */
static uint32_t ct_named_rec(struct ct_rec *hdr, unsigned type, size_t fixed, char *name_at,
			     const char *name, uint16_t *name_len)
{
	if (atomic_load(&ct_state) == CT_STATE_UNINIT)
		ct_ensure_started();
	size_t n = name ? strnlen(name, CT_MARK_NAME_MAX - 1) : 0;
	memcpy(name_at, name ? name : "", n);
	memset(name_at + n, 0, 8);
	*name_len = (uint16_t)(n + 1);
	hdr->type = (uint16_t)type;
	hdr->flags = 0;
	hdr->size = CT_REC_ALIGN((uint32_t)(fixed + n + 1));
	return hdr->size;
}

void ct_put_mark(enum ct_mark_kind kind, const char *name, uint64_t aux)
{
	struct {
		struct ct_rec_mark m;
		char name[CT_MARK_NAME_MAX + 8];
	} rec;
	uint32_t size = ct_named_rec(&rec.m.rec, CT_REC_MARK, sizeof rec.m, rec.name, name,
				     &rec.m.name_len);
	rec.m.ts_ns = ct_ticks(); /* the writer converts (ct_rec_finish) */
	rec.m.aux = aux;
	rec.m.tid = ct_current_tid();
	rec.m.kind = (uint16_t)kind;
	ct_record_raw(&rec, size);
}

CT_EXPORT void cumtrace_mark(const char *name)
{
	ct_put_mark(CT_MARK_INSTANT, name, 0);
}

CT_EXPORT void cumtrace_range_push(const char *name)
{
	ct_put_mark(CT_MARK_PUSH, name, 0);
}

CT_EXPORT void cumtrace_range_pop(void)
{
	ct_put_mark(CT_MARK_POP, NULL, 0);
}

CT_EXPORT const char *cumtrace_version(void)
{
	return CUMTRACE_VERSION;
}

_Static_assert(CUMTRACE_STEP_EXPLICIT == CT_STEP_EXPLICIT && CUMTRACE_STEP_OPTIMIZER == CT_STEP_OPTIMIZER,
	       "cumtrace.h's step sources are format.h's");

CT_EXPORT void cumtrace_step(int source, const char *name)
{
	ct_put_mark(CT_MARK_STEP, name && *name ? name : "step", (uint64_t)(unsigned)source);
}

CT_EXPORT void cumtrace_exit_point(void)
{
	ct_put_mark(CT_MARK_EXIT, "exit", 0);
}

CT_EXPORT int cumtrace_active(void)
{
	int state = atomic_load(&ct_state);
	if (state == CT_STATE_UNINIT) {
		ct_options_init();
		return !ct_option(CT_OPT_DISABLE);
	}
	return state == CT_STATE_STARTING || state == CT_STATE_RUNNING;
}

CT_EXPORT int cumtrace_bench_pause(int paused)
{
	if (atomic_load(&ct_state) == CT_STATE_UNINIT)
		ct_ensure_started();
	if (atomic_load(&ct_state) != CT_STATE_RUNNING)
		return -1;
	int was = paused ? atomic_fetch_or(&ct_detour, CT_DETOUR_PAUSED)
			 : atomic_fetch_and(&ct_detour, ~CT_DETOUR_PAUSED);
	if (!(was & CT_DETOUR_PAUSED) != !paused)
		ct_put_mark(CT_MARK_PAUSE, paused ? "pause" : "resume", paused != 0);
	return 0;
}

CT_EXPORT void cumtrace_flush(void)
{
	ct_flush_sync();
}

CT_EXPORT void cumtrace_counter(const char *name, int device, unsigned long long value)
{
	struct {
		struct ct_rec_counter c;
		char name[CT_MARK_NAME_MAX + 8];
	} rec;
	uint32_t size = ct_named_rec(&rec.c.rec, CT_REC_COUNTER, sizeof rec.c, rec.name, name,
				     &rec.c.name_len);
	rec.c.ts_ns = ct_ticks(); /* the writer converts (ct_rec_finish) */
	rec.c.value = value;
	rec.c.tid = ct_current_tid();
	rec.c.device = device < INT16_MIN || device > INT16_MAX ? -1 : (int16_t)device;
	ct_record_raw(&rec, size);
}

/*
 * One CuPy pool event, recorded as a framework event (format.h) on the
 * calling thread's ring, with its stacks on an allocation, as the torch
 * tracker records one (torch.c).
 */
static __attribute__((noinline)) void ct_cupy_event(unsigned api, int device, uint64_t ptr,
						     uint64_t size, uint64_t aux)
{
	struct ct_call c;
	if (!ct_fw_call_begin(&c, api))
		return;
	c.kind = CT_KIND_CUPY_BLOCK;
	c.device = device < INT16_MIN || device > INT16_MAX ? -1 : (int16_t)device;
	c.ptr = ptr;
	c.size = size;
	c.aux = aux;
	c.frame = __builtin_frame_address(0);
	ct_call_end_slow(&c, c.t0);
}

CT_EXPORT void cumtrace_cupy_alloc(int device, unsigned long long ptr, unsigned long long size,
				   unsigned long long requested)
{
	ct_cupy_event(CT_API_cupy_alloc, device, ptr, size, requested);
}

CT_EXPORT void cumtrace_cupy_free(int device, unsigned long long ptr, unsigned long long size)
{
	ct_cupy_event(CT_API_cupy_free, device, ptr, size, 0);
}
