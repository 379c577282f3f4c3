/*
 * exec: the image about to be replaced still has events in its rings. Flush
 * them before handing over; LD_PRELOAD carries tracing into the new image,
 * which writes a dump of its own (same pid, so a ".N" suffix).
 * Only execve, execv, execvp and execvpe are wrapped: the execl* forms,
 * fexecve and posix_spawn lose at most one flush interval of events.
 *
 * _exit and _Exit skip destructors, and fork children (Python's
 * multiprocessing workers among them) often leave through them: they finish
 * the dump first, as exit would.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "session.h"

typedef int (*ct_exec_fn)(const char *, char *const[], char *const[]);
typedef int (*ct_execv_fn)(const char *, char *const[]);

static void *ct_exec_next(const char *name)
{
	int saved = errno;
	void *fn = ct_dlsym_next(name);
	ct_flush_sync();
	errno = saved;
	return fn;
}

/* Flush, then hand over to the real function (ENOSYS if there is none). */
#define CT_EXEC_WRAPPER(name, fn_t, params, args)                                             \
	CT_EXPORT int name params                                                             \
	{                                                                                     \
		fn_t fn = (fn_t)ct_exec_next(#name);                                          \
		if (!fn) {                                                                    \
			errno = ENOSYS;                                                       \
			return -1;                                                            \
		}                                                                             \
		return fn args;                                                               \
	}

CT_EXEC_WRAPPER(execve, ct_exec_fn, (const char *path, char *const argv[], char *const envp[]),
		(path, argv, envp))
CT_EXEC_WRAPPER(execvpe, ct_exec_fn, (const char *file, char *const argv[], char *const envp[]),
		(file, argv, envp))
CT_EXEC_WRAPPER(execv, ct_execv_fn, (const char *path, char *const argv[]), (path, argv))
CT_EXEC_WRAPPER(execvp, ct_execv_fn, (const char *file, char *const argv[]), (file, argv))

typedef void (*ct_exit_fn)(int);

/*
 * _exit, _Exit and abort are async-signal-safe, and programs call them from
 * signal handlers: their real functions are looked up when the library loads,
 * since dlsym takes the loader's lock and may allocate (a handler that
 * interrupted malloc would deadlock).
 */
static void *_Atomic ct_real_exit, *_Atomic ct_real_Exit, *_Atomic ct_real_abort;

__attribute__((constructor)) static void ct_process_resolve(void)
{
	ct_real_symbol(&ct_real_exit, "_exit");
	ct_real_symbol(&ct_real_Exit, "_Exit");
	ct_real_symbol(&ct_real_abort, "abort");
}

/* Finish the dump, then leave through the real function. */
__attribute__((noreturn)) static void ct_exit_through(void *_Atomic *cache, const char *name,
						       int status)
{
	ct_exit_fn fn = (ct_exit_fn)ct_real_symbol(cache, name);
	ct_shutdown();
	if (fn)
		fn(status);
	for (;;)
		; /* unreachable: the real _exit does not return */
}

CT_EXPORT void _exit(int status)
{
	ct_exit_through(&ct_real_exit, "_exit", status);
}

CT_EXPORT void _Exit(int status)
{
	ct_exit_through(&ct_real_Exit, "_Exit", status);
}

typedef void (*ct_abort_fn)(void);

/* abort() (and a failed assert) ends the process without destructors: copy
 * the rings to the file first, so the dump is complete up to the abort. */
CT_EXPORT void abort(void);
void abort(void)
{
	ct_abort_fn fn = (ct_abort_fn)ct_real_symbol(&ct_real_abort, "abort");
	ct_flush_sync();
	if (fn)
		fn();
	for (;;)
		; /* unreachable: the real abort does not return */
}
