/*
 * The Python bootstrap: in a CPython process, cumtrace's Python package is
 * imported once, on the main thread, without any change to the program, so
 * that it can add what only Python can reach (python/cumtrace/_boot.py):
 * torch optimizer steps as step boundaries, a CuPy memory hook, JAX's
 * memory_stats() at each step.
 *
 * How it gets in. When tracing starts (the first traced call, writer.c) in a
 * process whose global scope has Py_IsInitialized and Py_AddPendingCall
 * (looked up with the real dlsym, as python.c does) and whose interpreter is
 * an initialized CPython 3, the starting thread calls Py_AddPendingCall
 * once: CPython allows that from any thread, without the GIL, and takes only
 * its short pending-calls lock. The interpreter then runs ct_pyboot_run on its main
 * thread, with the GIL, between two bytecodes. So the shim never takes the
 * GIL, and none of its own threads (the writer) ever calls into Python. A
 * process that is not Python pays one failed lookup when tracing starts; an
 * interpreter that is not initialized yet then (an embedding program that
 * calls CUDA first) gets no bootstrap.
 *
 * What runs. ct_pyboot_run finds the package beside the shim (its own path
 * from dladdr, or /proc/self/maps when that is relative): DIR/python in the
 * build tree (build/libcumtrace.so, build/python/cumtrace), DIR/cumtrace/python
 * once installed (PREFIX/lib/libcumtrace.so, PREFIX/lib/cumtrace/python). It
 * runs a few lines of Python (CT_PYBOOT_CODE) in a dictionary of its own:
 * they load the package from that folder by file location (sys.path is never
 * touched; no sitecustomize, no .pth) and call its _bootstrap(). The package
 * is registered as "cumtrace" when no module of that name is imported or
 * importable, so that "import cumtrace" finds the same one; otherwise it is
 * loaded as "_cumtrace_shim" and the program's own cumtrace is left alone.
 * Nothing is printed; the exception state the interpreter had is put back,
 * and anything the bootstrap raises is cleared and becomes one warning on
 * stderr ("cumtrace: Python bootstrap failed (...)"), the program going on
 * unchanged. CUMTRACE_PYTHON_BOOT=0 turns it off.
 *
 * A fork child inherits the bootstrapped interpreter and the flag: it is
 * never scheduled twice in one interpreter. Python 2 is left alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static _Atomic int ct_pyboot_once;
static _Atomic int ct_pyboot_warned;

#define CT_PY_FILE_INPUT 257 /* Py_file_input, the same in every CPython 3 */

/*
 * Runs in the dictionary ct_pyboot_run makes, with _ct_dir the package's
 * folder; a failure leaves its message in _ct_err.
 */
static const char CT_PYBOOT_CODE[] =
	"def _ct_boot(d):\n"
	"    import sys, os, importlib.util\n"
	"    m = sys.modules.get('cumtrace')\n"
	"    if m is not None and getattr(m, '_bootstrap', None) is not None:\n"
	"        m._bootstrap()\n"
	"        return\n"
	"    name = 'cumtrace'\n"
	"    if m is not None or importlib.util.find_spec('cumtrace') is not None:\n"
	"        name = '_cumtrace_shim'\n"
	"    m = sys.modules.get(name)\n"
	"    if m is None:\n"
	"        pkg = os.path.join(d, 'cumtrace')\n"
	"        spec = importlib.util.spec_from_file_location(name, os.path.join(pkg, '__init__.py'),\n"
	"                                                      submodule_search_locations=[pkg])\n"
	"        if spec is None or spec.loader is None:\n"
	"            raise ImportError('no package in ' + pkg)\n"
	"        m = importlib.util.module_from_spec(spec)\n"
	"        sys.modules[name] = m\n"
	"        try:\n"
	"            spec.loader.exec_module(m)\n"
	"        except BaseException:\n"
	"            sys.modules.pop(name, None)\n"
	"            raise\n"
	"    m._bootstrap()\n"
	"try:\n"
	"    _ct_boot(_ct_dir)\n"
	"except BaseException as e:\n"
	"    _ct_err = '%s: %s' % (type(e).__name__, e)\n";

#define ct_pyboot_warn(...) ct_warn_once(&ct_pyboot_warned, __VA_ARGS__)

/* The absolute path of the object holding addr, from /proc/self/maps; 0 on success. */
static int ct_pyboot_maps_path(const void *addr, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 128];
	int rc = -1;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		int path_at = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path_at) < 2 || !path_at)
			continue;
		if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi || line[path_at] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		if (strlen(line + path_at) < cap) {
			strcpy(out, line + path_at);
			rc = 0;
		}
		break;
	}
	fclose(f);
	return rc;
}

/*
 * The folder that holds the package (a "cumtrace" folder with __init__.py)
 * beside this shim, into dir; 0 when found, else -1 with where it looked in
 * dir.
 */
static int ct_pyboot_find(char *dir, size_t cap)
{
	Dl_info info;
	char self[PATH_MAX];
	if (!dladdr((void *)ct_pyboot_find, &info) || !info.dli_fname)
		return snprintf(dir, cap, "(the shim's path is unknown)"), -1;
	if (info.dli_fname[0] == '/' && strlen(info.dli_fname) < sizeof self)
		strcpy(self, info.dli_fname);
	else if (ct_pyboot_maps_path((void *)ct_pyboot_find, self, sizeof self))
		return snprintf(dir, cap, "(the shim's path is unknown)"), -1;
	char *slash = strrchr(self, '/');
	*slash = 0;
	static const char *const where[] = {"python", "cumtrace/python"};
	for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
		char init[PATH_MAX + 64];
		snprintf(dir, cap, "%s/%s", self, where[i]);
		snprintf(init, sizeof init, "%s/cumtrace/__init__.py", dir);
		if (access(init, R_OK) == 0)
			return 0;
	}
	snprintf(dir, cap, "no package in %s/python or %s/cumtrace/python", self, self);
	return -1;
}

/* The CPython functions the bootstrap calls: all of the stable ABI of 3.8..3.13. */
static struct {
	int (*is_initialized)(void);
	void *(*run)(const char *, int, void *, void *, void *); /* PyRun_StringFlags */
	void *(*dict_new)(void);
	int (*dict_set)(void *, const char *, void *);
	void *(*dict_get)(void *, const char *);
	void *(*builtins)(void); /* PyEval_GetBuiltins */
	void *(*decode_fs)(const char *);
	const char *(*utf8)(void *);
	void (*err_fetch)(void **, void **, void **);
	void (*err_restore)(void *, void *, void *);
	void (*err_clear)(void);
	void (*decref)(void *);
} cpy;

static int ct_pyboot_resolve(void)
{
#define CT_PYBOOT_NEED(field, name)                                                            \
	do {                                                                                   \
		*(void **)&cpy.field = ct_py_sym(name);                                        \
		if (!cpy.field)                                                                \
			return -1;                                                             \
	} while (0)
	CT_PYBOOT_NEED(is_initialized, "Py_IsInitialized");
	CT_PYBOOT_NEED(run, "PyRun_StringFlags");
	CT_PYBOOT_NEED(dict_new, "PyDict_New");
	CT_PYBOOT_NEED(dict_set, "PyDict_SetItemString");
	CT_PYBOOT_NEED(dict_get, "PyDict_GetItemString");
	CT_PYBOOT_NEED(builtins, "PyEval_GetBuiltins");
	CT_PYBOOT_NEED(decode_fs, "PyUnicode_DecodeFSDefault");
	CT_PYBOOT_NEED(utf8, "PyUnicode_AsUTF8");
	CT_PYBOOT_NEED(err_fetch, "PyErr_Fetch");
	CT_PYBOOT_NEED(err_restore, "PyErr_Restore");
	CT_PYBOOT_NEED(err_clear, "PyErr_Clear");
	CT_PYBOOT_NEED(decref, "Py_DecRef");
#undef CT_PYBOOT_NEED
	return 0;
}

/* The pending call: on the main thread, with the GIL. Always returns 0 (-1 would raise). */
static int ct_pyboot_run(void *arg)
{
	(void)arg;
	char dir[PATH_MAX + 64];
	void *type, *value, *tb;
	if (ct_pyboot_resolve()) {
		ct_pyboot_warn("Python bootstrap failed (a CPython function is missing): "
			       "no automatic steps, CuPy or JAX records");
		return 0;
	}
	if (!cpy.is_initialized())
		return 0; /* finalizing */
	cpy.err_fetch(&type, &value, &tb);
	ct_py_watch_code(); /* clears what it raises */
	cpy.err_restore(type, value, tb);
	if (ct_pyboot_find(dir, sizeof dir)) {
		ct_pyboot_warn("Python bootstrap failed (%s): no automatic steps, CuPy or JAX records",
			       dir);
		return 0;
	}
	cpy.err_fetch(&type, &value, &tb);
	const char *why = NULL;
	char msg[256];
	void *globals = cpy.dict_new(), *d = NULL;
	if (!globals || cpy.dict_set(globals, "__builtins__", cpy.builtins()) ||
	    !(d = cpy.decode_fs(dir)) || cpy.dict_set(globals, "_ct_dir", d)) {
		why = "cannot set up its globals";
	} else {
		void *res = cpy.run(CT_PYBOOT_CODE, CT_PY_FILE_INPUT, globals, globals, NULL);
		if (res) {
			cpy.decref(res);
			void *err = cpy.dict_get(globals, "_ct_err");
			const char *s = err ? cpy.utf8(err) : NULL;
			if (s) {
				snprintf(msg, sizeof msg, "%s", s);
				why = msg;
			} else if (err) {
				why = "an exception";
			}
		} else {
			why = "an exception";
		}
	}
	cpy.err_clear();
	if (d)
		cpy.decref(d);
	if (globals)
		cpy.decref(globals);
	cpy.err_restore(type, value, tb);
	if (why)
		ct_pyboot_warn("Python bootstrap failed (%s): no automatic steps, CuPy or JAX records",
			       why);
	return 0;
}

void ct_pyboot_schedule(void)
{
	if (atomic_exchange(&ct_pyboot_once, 1))
		return;
	if (!ct_option(CT_OPT_PYTHON_BOOT))
		return;
	int (*is_initialized)(void) = (int (*)(void))ct_py_sym("Py_IsInitialized");
	int (*add_pending)(int (*)(void *), void *) =
		(int (*)(int (*)(void *), void *))ct_py_sym("Py_AddPendingCall");
	const char *(*get_version)(void) = (const char *(*)(void))ct_py_sym("Py_GetVersion");
	if (!is_initialized || !add_pending || !get_version || !is_initialized())
		return;
	const char *v = get_version();
	if (!v || strncmp(v, "3.", 2))
		return; /* Python 2: nothing to do there */
	if (add_pending(ct_pyboot_run, NULL) != 0)
		ct_pyboot_warn("Python bootstrap failed (Py_AddPendingCall refused): "
			       "no automatic steps, CuPy or JAX records");
}
