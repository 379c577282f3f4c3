/*
 * A write(2) interposer for t_hostile_dumpfd, preloaded after the shim: the
 * Nth write (CLOSEWRITE_AT, default 2) to a descriptor that names a file
 * whose name ends in ".dump" closes that descriptor first, as a program
 * thread that closes every descriptor between the shim's check of its dump's
 * descriptor and its write would (the write then fails with EBADF). Writes
 * to any other file pass untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic int dump_writes;

static int names_dump(int fd)
{
	char link[64], path[4096];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path);
	return n > 5 && n < (ssize_t)sizeof path && memcmp(path + n - 5, ".dump", 5) == 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	static ssize_t (*real)(int, const void *, size_t);
	if (!real)
		real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (fd >= 3 && names_dump(fd)) {
		const char *at = getenv("CLOSEWRITE_AT");
		if (atomic_fetch_add(&dump_writes, 1) + 1 == (at ? atoi(at) : 2))
			close(fd);
	}
	return real(fd, buf, n);
}
