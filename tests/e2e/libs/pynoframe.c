/*
 * A thread with a Python thread state and no Python frame, as torch's autograd
 * threads keep one (tests/e2e/py_noframe.py, t_python): it takes a thread state
 * (PyGILState_Ensure), lets the GIL go with the state kept (PyEval_SaveThread)
 * and makes n cudaMalloc/cudaFree pairs through the functions it is given,
 * then leaks one block of 777 bytes. No
 * Python header: the four functions are found in the process.
 * noframe_bench (scripts/bench.sh) does the same pairs with pages of a buffer
 * touched between two calls, as torch's backward pass does between its
 * allocations, and leaks nothing.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

struct job {
	malloc_fn m;
	free_fn f;
	int n, failed;
	int pages; /* noframe_bench: pages touched between two calls, with leak 0 */
	char *buf;
	int leak;
};

/* Touch one byte of each of the job's pages, a different line each time (k). */
static void touch(struct job *j, int k)
{
	for (int i = 0; i < j->pages; i++)
		j->buf[(size_t)i * 4096 + (size_t)(k * 64) % 4096] = 1;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
	void *(*save)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
	void (*restore)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
	if (!ensure || !release || !save || !restore) {
		j->failed = 1;
		return NULL;
	}
	int g = ensure();
	void *ts = save();
	for (int i = 0; i < j->n; i++) {
		void *p = NULL;
		if (j->m(&p, 512) != 0)
			j->failed = 1;
		touch(j, 2 * i);
		if (j->f(p) != 0)
			j->failed = 1;
		touch(j, 2 * i + 1);
	}
	void *leak = NULL;
	if (j->leak && j->m(&leak, 777) != 0)
		j->failed = 1;
	restore(ts);
	release(g);
	return NULL;
}

/* Job j on a thread of its own, waited for: 0 when every call succeeded, -1 when none ran. */
static int run(struct job *j)
{
	if (j->pages && !j->buf)
		return -1;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, j) != 0)
		return -1;
	pthread_join(t, NULL);
	return j->failed;
}

/* Call these two with the GIL released (ctypes.CDLL): 0 when every call succeeded. */
int noframe_worker(void *m, void *f, int n)
{
	struct job j = {(malloc_fn)m, (free_fn)f, n, 0, 0, NULL, 1};
	return run(&j);
}

/* The same without the leak, pages touched between two calls; 0 when every call succeeded. */
int noframe_bench(void *m, void *f, int n, int pages)
{
	struct job j = {(malloc_fn)m, (free_fn)f, n, 0, pages, calloc((size_t)pages + 1, 4096), 0};
	int rc = run(&j);
	free(j.buf);
	return rc;
}

/*
 * The other side (t_python): a thread of this library's own that runs Python
 * code, source, through PyRun_SimpleString: its calls' native stacks run
 * through the interpreter, so their Python frames are looked for. 0 when the
 * code ran without an exception.
 */
static void *pyrun(void *arg)
{
	const char *const *src = arg;
	int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
	void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
	int (*run_string)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT,
								     "PyRun_SimpleString");
	static int rc;
	rc = -1;
	if (ensure && release && run_string) {
		int g = ensure();
		rc = run_string(*src);
		release(g);
	}
	return &rc;
}

int pyrun_thread(const char *source)
{
	pthread_t t;
	void *rc = NULL;
	if (pthread_create(&t, NULL, pyrun, &source) != 0)
		return -1;
	pthread_join(t, &rc);
	return rc ? *(int *)rc : -1;
}

/*
 * One block of size bytes through m, depth frames of this library below the
 * caller (t_python): deeper than the shim's stack depth, its native stack is
 * cut before it reaches the interpreter that called it, so it proves nothing
 * and the caller's Python frames are still looked for. 0 on success.
 */
__attribute__((noinline)) int deep_malloc(void *m, int depth, size_t size)
{
	void *p = NULL;
	if (depth > 0) {
		volatile int rc = deep_malloc(m, depth - 1, size);
		return rc;
	}
	return ((malloc_fn)m)(&p, size);
}
