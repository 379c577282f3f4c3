/*
 * libcudart loaded, used, unloaded and loaded again in the middle of a run,
 * by a program that does not link it.
 * usage: hostile_dlopen same|moved [global]
 *   same   the second load may land where the first was
 *   moved  the first load's address is taken by a placeholder mapping
 *          before the second dlopen, so the library lands elsewhere (as it
 *          does when anything else was mapped in between)
 *   global RTLD_GLOBAL loads, functions looked up with RTLD_DEFAULT (as a
 *          library linked against libcudart and loaded with it binds them)
 * Traced: load 1: cudaMalloc 3, cudaFree 2; load 2: cudaMalloc 4, cudaFree 3.
 * Prints "KEY VALUE" lines; exits 0 when every call succeeded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda_runtime_api.h>

typedef cudaError_t (*malloc_t)(void **, size_t);
typedef cudaError_t (*free_t)(void *);

static int bad, global;

static void *open_rt(uintptr_t *base)
{
	void *h = dlopen("libcudart.so.13", RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		exit(3);
	}
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
		exit(3);
	*base = (uintptr_t)lm->l_addr;
	return h;
}

static void use(void *h, int allocs, int frees, size_t size)
{
	malloc_t m = (malloc_t)dlsym(global ? RTLD_DEFAULT : h, "cudaMalloc");
	free_t f = (free_t)dlsym(global ? RTLD_DEFAULT : h, "cudaFree");
	if (!m || !f)
		exit(3);
	void *p[16];
	for (int i = 0; i < allocs; i++)
		bad |= m(&p[i], size) != cudaSuccess;
	for (int i = 0; i < frees; i++)
		bad |= f(p[i]) != cudaSuccess;
}

int main(int argc, char **argv)
{
	int moved = argc > 1 && strcmp(argv[1], "moved") == 0;
	global = argc > 2 && strcmp(argv[2], "global") == 0;
	uintptr_t base1, base2;
	void *h = open_rt(&base1);
	use(h, 3, 2, 4096);
	dlclose(h);
	void *still = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
	printf("unloaded %d\n", still == NULL);
	if (still)
		dlclose(still);
	if (moved && !still) { /* nothing to hold when the library stayed */
		void *hold = mmap((void *)base1, 4096, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (hold != (void *)base1) {
			fprintf(stderr, "cannot hold the old load address %#lx: %s\n",
				(unsigned long)base1, hold == MAP_FAILED ? strerror(errno) : "moved");
			return 4;
		}
	}
	h = open_rt(&base2);
	printf("moved %d\n", base2 != base1);
	use(h, 4, 3, 8192);
	dlclose(h);
	printf("calls_ok %d\n", !bad);
	return bad ? 1 : 0;
}
