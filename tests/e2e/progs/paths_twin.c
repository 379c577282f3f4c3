/*
 * Every way in, next to its untraced twin (tests/e2e/t_paths_twin.sh): the
 * same calls, traced and untraced, must print the same lines (return codes,
 * out-parameters, errno). This program links no CUDA library; the runtime
 * and the driver are reached, in order:
 *   1. lookups of every traced name with RTLD_DEFAULT, RTLD_NEXT and the
 *      global handle while no CUDA library is global: all must find nothing;
 *   2. by export from libcttwin.so (argv[1]), loaded RTLD_LOCAL, which links
 *      libcudart and libcuda, and its lookups by base name through exports;
 *      the library's addresses of the exports, called from here;
 *   3. dlsym on RTLD_LOCAL handles of libcudart.so.13 and libcuda.so.1;
 *   4. cuGetProcAddress_v2 and cuGetProcAddress from that handle, with flags
 *      0, legacy and per-thread, and the cuGetProcAddress that
 *      cuGetProcAddress_v2 hands out for itself;
 *   5. cudaGetDriverEntryPoint(ByVersion)(_ptsz) from the runtime handle,
 *      with each flag;
 *   6. the libraries made global (dlopen RTLD_GLOBAL | RTLD_NOLOAD): the
 *      lookups of 1 find everything, dlsym with RTLD_DEFAULT, RTLD_NEXT, the
 *      global handle and a handle opened RTLD_GLOBAL; pointer identities; by
 *      export from the library again.
 * "paths_twin LIBCTTWIN copies LIBCTTWIN12": two libraries loaded RTLD_LOCAL,
 * one linked against libcudart.so.13, the other against a second copy,
 * libcudart.so.12: each makes every traced call by export, and a failing call
 * from each sets the last error of its own copy only.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "twin_calls.h"

#undef cuGetProcAddress

static void *twin_get_dlsym(const struct twin_way *w, const char *name, const char **event)
{
	return dlsym(w->ctx, name);
}

/* ctx: the library's twin_addr */
static void *twin_get_addr(const struct twin_way *w, const char *name, const char **event)
{
	return ((void *(*)(const char *))w->ctx)(name);
}

static void *twin_get_next(const struct twin_way *w, const char *name, const char **event)
{
	return dlsym(RTLD_NEXT, name);
}

static void *need_handle(const char *name, int mode)
{
	void *h = dlopen(name, mode);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", name, dlerror());
		exit(3);
	}
	return h;
}

/* 1 and 6: what lookups of every traced name find, and dlerror when nothing. */
static void probe(const char *when, void *global)
{
	printf("== probe %s\n", when);
	for (size_t i = 0; i < TWIN_TRACED_COUNT; i++) {
		const char *name = twin_traced_names[i];
		void *const handles[] = {RTLD_DEFAULT, RTLD_NEXT, global};
		static const char *const labels[] = {"default", "next", "global"};
		printf("  %s", name);
		for (int k = 0; k < 3; k++) {
			dlerror();
			errno = TWIN_ERRNO;
			void *p = dlsym(handles[k], name);
			int e = errno;
			printf(" %s=%s/%s/%d", labels[k], twin_ptr(p), dlerror() ? "error" : "-", e);
		}
		printf("\n");
	}
}

static void run_lookups(const char *label, const struct twin_lookup_fn *l)
{
	static const int flags[] = {0, TWIN_LEGACY, TWIN_PT};
	for (int k = 0; k < 3; k++) {
		char name[96];
		snprintf(name, sizeof name, "%s flags=%d", label, flags[k]);
		struct twin_way w = {name, twin_get_lookup, (void *)l, flags[k]};
		twin_driver(&w);
	}
}

struct twin_lib {
	void (*run)(const char *);
	void (*free_bad)(void);
	void (*last_error)(const char *);
};

static struct twin_lib open_lib(const char *path)
{
	void *h = need_handle(path, RTLD_NOW | RTLD_LOCAL);
	struct twin_lib l = {(void (*)(const char *))dlsym(h, "twin_export"),
			     (void (*)(void))dlsym(h, "twin_free_bad"),
			     (void (*)(const char *))dlsym(h, "twin_last_error")};
	if (!l.run || !l.free_bad || !l.last_error)
		exit(3);
	return l;
}

static int copies(const char *path13, const char *path12)
{
	struct twin_lib a = open_lib(path13), b = open_lib(path12);
	a.run("copy 13");
	b.run("copy 12");
	a.run("copy 13 again");
	printf("== last errors\n");
	a.last_error("13");
	b.last_error("12");
	a.free_bad();
	b.last_error("12");
	a.last_error("13");
	b.free_bad();
	a.last_error("13");
	b.last_error("12");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: paths_twin LIBCTTWIN [copies LIBCTTWIN12]\n");
		return 2;
	}
	if (argc > 3 && strcmp(argv[2], "copies") == 0)
		return copies(argv[1], argv[3]);
	void *global = need_handle(NULL, RTLD_NOW);
	probe("nothing global", global);

	void *lib = need_handle(argv[1], RTLD_NOW | RTLD_LOCAL);
	void (*twin_export)(const char *) = (void (*)(const char *))dlsym(lib, "twin_export");
	void *(*twin_addr)(const char *) = (void *(*)(const char *))dlsym(lib, "twin_addr");
	if (!twin_export || !twin_addr)
		return 3;
	twin_export("export from RTLD_LOCAL library");
	struct twin_way way_addr = {"library's export addresses, called here", twin_get_addr,
				    (void *)twin_addr, 0};
	twin_runtime(&way_addr);
	twin_driver(&way_addr);

	void *rt = need_handle("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	void *cu = need_handle("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	struct twin_way way_rt = {"dlsym(RTLD_LOCAL libcudart)", twin_get_dlsym, rt, 0};
	struct twin_way way_cu = {"dlsym(RTLD_LOCAL libcuda)", twin_get_dlsym, cu, 0};
	twin_runtime(&way_rt);
	twin_driver(&way_cu);

	struct twin_lookup_fn gpa2 = {TWIN_GPA2, dlsym(cu, "cuGetProcAddress_v2"), 0};
	struct twin_lookup_fn gpa1 = {TWIN_GPA1, dlsym(cu, "cuGetProcAddress"), 0};
	printf("lookups: v2=%s legacy=%s\n", twin_ptr(gpa2.fn), twin_ptr(gpa1.fn));
	if (!gpa2.fn || !gpa1.fn)
		return 3;
	run_lookups("cuGetProcAddress_v2", &gpa2);
	run_lookups("cuGetProcAddress", &gpa1);
	const char *ev;
	struct twin_lookup_fn self = {TWIN_GPA2, twin_lookup(&gpa2, 0, "cuGetProcAddress", &ev), 0};
	if (!self.fn)
		return 3;
	run_lookups("cuGetProcAddress_v2 from itself", &self);

	static const char *const entries[] = {"cudaGetDriverEntryPoint", "cudaGetDriverEntryPoint_ptsz",
					      "cudaGetDriverEntryPointByVersion",
					      "cudaGetDriverEntryPointByVersion_ptsz"};
	for (int i = 0; i < 4; i++) {
		struct twin_lookup_fn l = {i < 2 ? TWIN_ENTRY : TWIN_ENTRY_VER, dlsym(rt, entries[i]),
					   i % 2};
		printf("lookup %s=%s\n", entries[i], twin_ptr(l.fn));
		if (!l.fn)
			return 3;
		run_lookups(entries[i], &l);
	}

	/* 6: the same libraries, now in the global scope. */
	need_handle("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
	need_handle("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
	probe("runtime and driver global", global);
	struct twin_way way_default = {"dlsym(RTLD_DEFAULT)", twin_get_dlsym, RTLD_DEFAULT, 0};
	struct twin_way way_next = {"dlsym(RTLD_NEXT)", twin_get_next, NULL, 0};
	struct twin_way way_global = {"dlsym(dlopen(NULL))", twin_get_dlsym, global, 0};
	void *rt_global = need_handle("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
	struct twin_way way_rt_global = {"dlsym(RTLD_GLOBAL libcudart)", twin_get_dlsym, rt_global, 0};
	twin_runtime(&way_default);
	twin_driver(&way_default);
	twin_runtime(&way_next);
	twin_driver(&way_next);
	twin_runtime(&way_global);
	twin_runtime(&way_rt_global);
	for (size_t i = 0; i < TWIN_TRACED_COUNT; i++) {
		const char *name = twin_traced_names[i];
		void *local = dlsym(name[2] == 'd' ? rt : cu, name);
		printf("identity %s: local==default %d local==next %d local==library %d\n", name,
		       local == dlsym(RTLD_DEFAULT, name), local == dlsym(RTLD_NEXT, name),
		       local == twin_addr(name));
	}
	twin_export("export from RTLD_LOCAL library, runtime global");
	return 0;
}
