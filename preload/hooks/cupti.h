/*
 * The CUPTI backend (cupti.c) as the session sees it: started with tracing,
 * named in the PROCESS record. What the recording core needs of it is in
 * core/seam.h.
 */
#ifndef CT_HOOKS_CUPTI_H
#define CT_HOOKS_CUPTI_H

#include "../core/ct.h"

/*
 * At tracing start (ct_ensure_started, before the PROCESS record): when
 * CUMTRACE_BACKEND=cupti or InitializeInjection asked for it, dlopen libcupti,
 * subscribe and enable the memory and stream callback ids. If CUPTI cannot be
 * had, warn once and leave interposition on. Only the first call does anything.
 */
CT_HIDDEN void ct_cupti_start(void);
/* "cupti" while the CUPTI backend records, else "interpose" (setting.backend). */
CT_HIDDEN const char *ct_backend_name(void);

#endif /* CT_HOOKS_CUPTI_H */
