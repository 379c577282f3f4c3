#include "read/zprefetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "cumtrace/format.h"

enum zstate { Z_IDLE, Z_POSTED, Z_DONE };

struct ct_zpre {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	int started, broken, quit;
	enum zstate state;
	uint64_t off;
	unsigned char *in; /* the posted frame */
	size_t in_len, in_cap;
	unsigned char *out; /* CT_ZSTD_RAW_MAX bytes, or NULL until needed */
	uint32_t raw_size;
	size_t got;
	ZSTD_DCtx *dctx; /* the worker's */
};

static void *worker(void *arg)
{
	struct ct_zpre *z = arg;
	pthread_mutex_lock(&z->mu);
	for (;;) {
		while (z->state != Z_POSTED && !z->quit)
			pthread_cond_wait(&z->cv, &z->mu);
		if (z->quit)
			break;
		pthread_mutex_unlock(&z->mu);
		/* in, out and raw_size are the worker's until it says Z_DONE */
		size_t got = ZSTD_decompressDCtx(z->dctx, z->out, z->raw_size, z->in, z->in_len);
		pthread_mutex_lock(&z->mu);
		z->got = got;
		z->state = Z_DONE;
		pthread_cond_broadcast(&z->cv);
	}
	pthread_mutex_unlock(&z->mu);
	return NULL;
}

struct ct_zpre *ct_zpre_new(void)
{
	struct ct_zpre *z = calloc(1, sizeof *z);
	if (!z)
		return NULL;
	pthread_mutex_init(&z->mu, NULL);
	pthread_cond_init(&z->cv, NULL);
	return z;
}

/* The thread and its context, made once; 0 when they are there. */
static int start(struct ct_zpre *z)
{
	if (z->started)
		return 0;
	if (z->broken)
		return -1;
	z->dctx = ZSTD_createDCtx();
	if (!z->dctx || pthread_create(&z->th, NULL, worker, z) != 0) {
		ZSTD_freeDCtx(z->dctx);
		z->dctx = NULL;
		z->broken = 1;
		return -1;
	}
	z->started = 1;
	return 0;
}

int ct_zpre_post(struct ct_zpre *z, uint64_t off, const void *frame, size_t fsize,
		 uint32_t raw_size)
{
	/* no frame is empty: the reader refuses such a record when it gets there */
	if (!z || !fsize || raw_size > CT_ZSTD_RAW_MAX || start(z) < 0)
		return -1;
	/* Z_IDLE: the worker waits and touches nothing of the job */
	pthread_mutex_lock(&z->mu);
	enum zstate st = z->state;
	pthread_mutex_unlock(&z->mu);
	if (st != Z_IDLE)
		return -1;
	if (!z->out && !(z->out = malloc(CT_ZSTD_RAW_MAX)))
		return -1;
	if (fsize > z->in_cap) {
		unsigned char *in = realloc(z->in, fsize);
		if (!in)
			return -1;
		z->in = in;
		z->in_cap = fsize;
	}
	memcpy(z->in, frame, fsize);
	z->in_len = fsize;
	z->raw_size = raw_size;
	z->off = off;
	pthread_mutex_lock(&z->mu);
	z->state = Z_POSTED;
	pthread_cond_broadcast(&z->cv);
	pthread_mutex_unlock(&z->mu);
	return 0;
}

int ct_zpre_take(struct ct_zpre *z, uint64_t off, unsigned char **buf, size_t *got)
{
	if (!z)
		return 0;
	pthread_mutex_lock(&z->mu);
	if (z->state == Z_IDLE) {
		pthread_mutex_unlock(&z->mu);
		return 0;
	}
	while (z->state != Z_DONE)
		pthread_cond_wait(&z->cv, &z->mu);
	z->state = Z_IDLE;
	pthread_mutex_unlock(&z->mu);
	if (z->off != off)
		return 0;
	unsigned char *mine = *buf;
	*buf = z->out;
	z->out = mine;
	*got = z->got;
	return 1;
}

void ct_zpre_free(struct ct_zpre *z)
{
	if (!z)
		return;
	if (z->started) {
		pthread_mutex_lock(&z->mu);
		z->quit = 1;
		pthread_cond_broadcast(&z->cv);
		/* a job in flight finishes first: the worker reads quit only while waiting */
		pthread_mutex_unlock(&z->mu);
		pthread_join(z->th, NULL);
	}
	ZSTD_freeDCtx(z->dctx);
	pthread_mutex_destroy(&z->mu);
	pthread_cond_destroy(&z->cv);
	free(z->in);
	free(z->out);
	free(z);
}
