/*
 * Built by tests/e2e/t_python_versions.sh as a shared library for
 * py_frames.py: calls an allocation function on a thread made here, which
 * has no Python thread state.
 */
#include <pthread.h>
#include <stddef.h>

typedef int (*ct_malloc_fn)(void **, size_t);

struct job {
	ct_malloc_fn fn;
	size_t size;
	void *ptr;
	int rc;
};

static void *run(void *arg)
{
	struct job *j = arg;
	j->rc = j->fn(&j->ptr, j->size);
	return NULL;
}

int alloc_in_c_thread(void *fn, size_t size);

/* fn(&ptr, size) on a new thread; its result, or -1 when no thread could be made. */
int alloc_in_c_thread(void *fn, size_t size)
{
	struct job j = {(ct_malloc_fn)fn, size, NULL, -1};
	pthread_t t;
	if (pthread_create(&t, NULL, run, &j))
		return -1;
	pthread_join(t, NULL);
	return j.rc;
}
