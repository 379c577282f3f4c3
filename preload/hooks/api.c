/* The public marker API (include/cumtrace/cumtrace.h). */
#define _GNU_SOURCE
#include <string.h>

#include "cumtrace/cumtrace.h"
#include "hooks.h"

#define CT_MARK_NAME_MAX 1024

void ct_put_mark(enum ct_mark_kind kind, const char *name, uint64_t aux)
{
	struct {
		struct ct_rec_mark m;
		char name[CT_MARK_NAME_MAX + 8];
	} rec;
	if (atomic_load(&ct_state) == CT_STATE_UNINIT)
		ct_ensure_started(); /* it picks the clock the stamp below is read from */
	size_t n = name ? strnlen(name, CT_MARK_NAME_MAX - 1) : 0;
	memcpy(rec.name, name ? name : "", n);
	memset(rec.name + n, 0, 8);
	uint32_t size = CT_REC_ALIGN((uint32_t)(sizeof rec.m + n + 1));
	rec.m.rec.type = CT_REC_MARK;
	rec.m.rec.flags = 0;
	rec.m.rec.size = size;
	rec.m.ts_ns = ct_ticks(); /* the writer converts (ct_rec_finish) */
	rec.m.aux = aux;
	rec.m.tid = ct_current_tid();
	rec.m.kind = (uint16_t)kind;
	rec.m.name_len = (uint16_t)(n + 1);
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
