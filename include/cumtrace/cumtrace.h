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

/* Where a step boundary comes from (cumtrace_step); format.h's enum ct_step_source. */
#define CUMTRACE_STEP_EXPLICIT 1  /* the program says so: cumtrace.step() */
#define CUMTRACE_STEP_OPTIMIZER 2 /* an optimizer's step (the Python package's torch hook) */
/*
 * Record a step (iteration) boundary. name says which loop (NULL: "step").
 * The analyzer's growth report uses explicit steps and marks when there are
 * any, optimizer steps otherwise.
 */
void cumtrace_step(int source, const char *name);
/*
 * Where the program's own code ends (the Python package calls it from an
 * atexit handler): framework blocks (tensors, CuPy arrays) still handed out
 * here are reported as leaked at exit, whatever the interpreter's teardown
 * frees later. Without it, the end of the dump is the exit point.
 */
void cumtrace_exit_point(void);
/* 1 when this process records (or will at its first CUDA call), else 0. */
int cumtrace_active(void);
/* Write everything recorded so far to the dump before returning. */
void cumtrace_flush(void);
/* Record a named value of one device (-1: none) at this moment (e.g. "jax.bytes_in_use"). */
void cumtrace_counter(const char *name, int device, unsigned long long value);
/*
 * A block of CuPy's memory pool handed out / given back (the Python
 * package's cupy.cuda.memory_hook.MemoryHook calls these): size as the pool
 * counts it, requested what the program asked for.
 */
void cumtrace_cupy_alloc(int device, unsigned long long ptr, unsigned long long size,
			 unsigned long long requested);
void cumtrace_cupy_free(int device, unsigned long long ptr, unsigned long long size);
/*
 * For measuring cumtrace's own cost, not for tracing part of a program:
 * paused (nonzero), every traced call of every thread is forwarded untraced
 * and no framework event is recorded, until cumtrace_bench_pause(0). So one
 * process can time its loop traced and untraced in turns (tests/gpu/
 * fw_overhead_pair.py). A dump with pauses is incomplete (a block allocated
 * before a pause and freed in it reads as live): the dump records each pause
 * and resume, and every report says so. A fork child starts unpaused (its
 * dump is its own). Returns 0 when tracing runs and is now paused or resumed
 * as asked, -1 when this process does not record (then nothing changes).
 */
int cumtrace_bench_pause(int paused);

#ifdef __cplusplus
}
#endif

#endif /* CUMTRACE_H */
