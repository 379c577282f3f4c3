/*
 * cumtrace public API: markers from the traced program.
 *
 * These symbols are defined by libcumtrace.so. A program that may also run
 * untraced should look them up at run time rather than link them:
 *
 *     void (*mark)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "cumtrace_mark");
 *     if (mark) mark("epoch 1");
 *
 * From Python: ctypes.CDLL(None).cumtrace_mark(b"step 10") when preloaded.
 * Every function is safe to call from any thread, does nothing when tracing
 * is off, and never fails.
 */
#ifndef CUMTRACE_H
#define CUMTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Record a named instant (an iteration boundary, a phase change). */
void cumtrace_mark(const char *name);
/* Open a named range on the calling thread; ranges nest. */
void cumtrace_range_push(const char *name);
/* Close the innermost open range of the calling thread. */
void cumtrace_range_pop(void);
/* The cumtrace version string, e.g. "0.1.0". */
const char *cumtrace_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CUMTRACE_H */
