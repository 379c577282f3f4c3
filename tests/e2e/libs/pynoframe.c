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
