/*
 * Records a few events, then counts its own mappings of exactly 2 MiB that
 * asked for transparent huge pages (VmFlags "hg" in /proc/self/smaps): the
 * traced thread's ring (CUMTRACE_HUGE_PAGES). Prints "advised 2 MiB mappings: N".
 */
#include <stdio.h>
#include <string.h>

#include "common.h"

int main(void)
{
	for (int i = 0; i < 100; i++) {
		void *p;
		CHECK(cudaMalloc(&p, 4096));
		CHECK(cudaFree(p));
	}
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f) {
		perror("/proc/self/smaps");
		return 1;
	}
	char line[512];
	int two_mib = 0, n = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long kb;
		if (sscanf(line, "Size: %lu kB", &kb) == 1)
			two_mib = kb == 2048;
		else if (strncmp(line, "VmFlags:", 8) == 0 && two_mib && strstr(line, " hg"))
			n++;
	}
	fclose(f);
	printf("advised 2 MiB mappings: %d\n", n);
	return 0;
}
