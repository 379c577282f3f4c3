/*
 * A thread with a Python thread state and no Python frame, as torch's autograd
 * threads keep one (tests/e2e/py_noframe.py, t_python): it takes a thread state
 * (PyGILState_Ensure), lets the GIL go with the state kept (PyEval_SaveThread)
 * and makes n cudaMalloc/cudaFree pairs through the functions it is given,
 * then leaks one block of 777 bytes. No
 * Python header: the four functions are found in the process.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

struct job {
	malloc_fn m;
	free_fn f;
	int n, failed;
};

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
		if (j->m(&p, 512) != 0 || j->f(p) != 0)
			j->failed = 1;
	}
	void *leak = NULL;
	if (j->m(&leak, 777) != 0)
		j->failed = 1;
	restore(ts);
	release(g);
	return NULL;
}

/* Call with the GIL released (ctypes.CDLL): 0 when every call succeeded. */
int noframe_worker(void *m, void *f, int n)
{
	struct job j = {(malloc_fn)m, (free_fn)f, n, 0};
	pthread_t t;
	if (pthread_create(&t, NULL, worker, &j) != 0)
		return -1;
	pthread_join(t, NULL);
	return j.failed;
}
