/*
 * A program that uses cumtrace's C API as include/cumtrace/cumtrace.h says:
 * built with `pkg-config --cflags --libs cumtrace` (tests/e2e/t_install.sh),
 * it looks the functions up at run time, so that it runs traced and untraced.
 * Prints "traced VERSION active N" under the shim, "untraced" without it.
 */
#include <cumtrace/cumtrace.h>
#include <dlfcn.h>
#include <stdio.h>

/* FN looked up, typed by the header's own declaration */
#define LOOKUP(fn) ((__typeof__(fn) *)dlsym(RTLD_DEFAULT, #fn))

int main(void)
{
	__typeof__(cumtrace_version) *version = LOOKUP(cumtrace_version);
	__typeof__(cumtrace_mark) *mark = LOOKUP(cumtrace_mark);
	__typeof__(cumtrace_active) *active = LOOKUP(cumtrace_active);
	if (!version || !mark || !active) {
		puts("untraced");
		return 0;
	}
	mark("pc_api");
	printf("traced %s active %d step %d\n", version(), active(), CUMTRACE_STEP_EXPLICIT);
	return 0;
}
