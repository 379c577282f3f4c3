/*
 * N cudaMalloc calls, then an immediate crash, for tests/e2e/t_hostile_crash.sh.
 * usage: hostile_crash MODE N
 *   segv     own SIGSEGV handler: prints a line, _exit(3)
 *   abort    own SIGABRT handler: prints a line and returns, so abort() kills
 *   segvdfl  no handler: the default action kills the process
 * Nothing goes through stdio before the crash (its buffer would be lost).
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

static void say(const char *s)
{
	ssize_t w = write(1, s, strlen(s));
	(void)w;
}

static void on_segv(int sig)
{
	say("hostile_crash: caught SIGSEGV\n");
	_exit(3);
}

static void on_abrt(int sig)
{
	say("hostile_crash: caught SIGABRT\n");
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[1];
	long n = atol(argv[2]);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	if (strcmp(mode, "segv") == 0) {
		sa.sa_handler = on_segv;
		sigaction(SIGSEGV, &sa, NULL);
	} else if (strcmp(mode, "abort") == 0) {
		sa.sa_handler = on_abrt;
		sigaction(SIGABRT, &sa, NULL);
	} else if (strcmp(mode, "segvdfl") != 0) {
		return 2;
	}
	void *p;
	for (long i = 0; i < n; i++)
		CHECK(cudaMalloc(&p, 4096));
	say("hostile_crash: allocations done\n");
	if (strcmp(mode, "abort") == 0)
		abort();
	*(volatile int *)((uintptr_t)argc * 16) = 1; /* argc is 3: address 48 faults */
	return 0;
}
