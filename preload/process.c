/*
 * exec: the image about to be replaced still has events in its rings. Flush
 * them before handing over; LD_PRELOAD carries tracing into the new image,
 * which writes a dump of its own (same pid, so a ".N" suffix).
 * Only execve, execv, execvp and execvpe are wrapped: the execl* forms,
 * fexecve and posix_spawn lose at most one flush interval of events.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "ct.h"

typedef int (*ct_exec_fn)(const char *, char *const[], char *const[]);
typedef int (*ct_execv_fn)(const char *, char *const[]);

static void *ct_exec_next(const char *name)
{
	int saved = errno;
	void *fn = dlsym(RTLD_NEXT, name);
	ct_flush_sync();
	errno = saved;
	return fn;
}

CT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	ct_exec_fn fn = (ct_exec_fn)ct_exec_next("execve");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(path, argv, envp);
}

CT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	ct_exec_fn fn = (ct_exec_fn)ct_exec_next("execvpe");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(file, argv, envp);
}

CT_EXPORT int execv(const char *path, char *const argv[])
{
	ct_execv_fn fn = (ct_execv_fn)ct_exec_next("execv");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(path, argv);
}

CT_EXPORT int execvp(const char *file, char *const argv[])
{
	ct_execv_fn fn = (ct_execv_fn)ct_exec_next("execvp");
	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(file, argv);
}
