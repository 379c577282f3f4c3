/*
 * Leak 1 MiB, then exec itself with "child", which leaks 2 MiB: tracing
 * continues in the new image, which writes a dump of its own.
 */
#include <string.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	void *p;
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		CHECK(cudaMalloc(&p, 2 << 20));
		return 0;
	}
	CHECK(cudaMalloc(&p, 1 << 20));
	char *args[] = {argv[0], "child", NULL};
	execv("/proc/self/exe", args);
	perror("execv");
	return 1;
}
