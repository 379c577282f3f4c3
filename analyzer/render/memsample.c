/*
 * The memory no allocation call shows (issue 19 §6): device memory as the
 * shim's samples (CT_REC_MEMSAMPLE) saw it, reconciled with the allocations
 * the events had made live (ct_model_reconcile). Shared by the summary and
 * peak reports; nothing at all when a dump holds no sample, so the reports of
 * older dumps are unchanged.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "base/util.h"
#include "render/render.h"

/* The devices the samples of m were taken on, in order of appearance (caller frees). */
static int16_t *sample_devices(const struct ct_model *m, size_t *n)
{
	int16_t *v = ct_xcalloc(m->nsamples + 1, sizeof *v);
	*n = 0;
	for (size_t i = 0; i < m->nsamples; i++) {
		size_t k = 0;
		while (k < *n && v[k] != m->samples[i].s.device)
			k++;
		if (k == *n)
			v[(*n)++] = m->samples[i].s.device;
	}
	return v;
}

static const char *why_name(unsigned why)
{
	return why == CT_MEMSAMPLE_FIRST ? "first" : why == CT_MEMSAMPLE_SYNC ? "sync"
					       : why == CT_MEMSAMPLE_EXIT ? "exit" : "unknown";
}

static void put_one(FILE *f, const struct ct_model *m, const struct ct_reconcile *r, const char *which)
{
	char b[5][32];
	uint64_t start = ct_model_start_ns(m);
	uint64_t ts = r->at->s.ts_ns;
	uint64_t other = r->other < 0 ? (uint64_t)-r->other : (uint64_t)r->other;
	fprintf(f,
		"  device %d in use %s (cudaMemGetInfo, %s sample at %.3f ms) = allocations %s + pool reserve %s"
		" + graph pool reserve %s %s context, driver and other %s\n",
		r->at->s.device, ct_fmt_bytes(r->in_use, b[0], sizeof b[0]), which,
		(double)(ts >= start ? ts - start : 0) / 1e6, ct_fmt_bytes(r->allocations, b[1], sizeof b[1]),
		ct_fmt_bytes(r->pool_reserve, b[2], sizeof b[2]), ct_fmt_bytes(r->graph_reserve, b[3], sizeof b[3]),
		r->other < 0 ? "-" : "+", ct_fmt_bytes(other, b[4], sizeof b[4]));
}

void ct_put_device_memory(FILE *f, const struct ct_model *m)
{
	size_t n;
	int16_t *devs = sample_devices(m, &n);
	for (size_t i = 0; i < n; i++) {
		struct ct_reconcile hi, last;
		if (ct_model_reconcile(m, devs[i], 0, &hi))
			put_one(f, m, &hi, "highest");
		if (ct_model_reconcile(m, devs[i], 1, &last) && last.at != hi.at)
			put_one(f, m, &last, "last");
	}
	free(devs);
}

static void json_one(struct ct_json *j, const char *key, const struct ct_reconcile *r)
{
	const struct ct_rec_memsample *s = &r->at->s;
	const struct {
		const char *name;
		uint64_t v;
	} u[] = {{"ts_ns", s->ts_ns},
		 {"total", s->total_bytes},
		 {"in_use", r->in_use},
		 {"allocations", r->allocations},
		 {"pool_reserve", r->pool_reserve},
		 {"graph_pool_reserve", r->graph_reserve},
		 {"pools", s->npools},
		 {"pool_reserved", s->pool_reserved},
		 {"pool_reserved_high", s->pool_reserved_high},
		 {"pool_used", s->pool_used},
		 {"pool_used_high", s->pool_used_high},
		 {"graph_used", s->graph_used},
		 {"graph_used_high", s->graph_used_high},
		 {"graph_reserved", s->graph_reserved},
		 {"graph_reserved_high", s->graph_reserved_high},
		 {"graph_live", r->at->graph_live}};
	ct_json_key(j, key);
	ct_json_obj(j);
	ct_json_kv_str(j, "why", why_name(s->why));
	for (size_t i = 0; i < sizeof u / sizeof u[0]; i++)
		ct_json_kv_u64(j, u[i].name, u[i].v);
	ct_json_kv_i64(j, "other", r->other);
	ct_json_kv_bool(j, "pools_read", (s->flags & CT_MEMSAMPLE_F_POOLS) != 0);
	ct_json_kv_bool(j, "graph_read", (s->flags & CT_MEMSAMPLE_F_GRAPH) != 0);
	ct_json_obj_end(j);
}

void ct_json_device_memory(struct ct_json *j, const struct ct_model *m)
{
	if (!m->nsamples)
		return;
	size_t n;
	int16_t *devs = sample_devices(m, &n);
	ct_json_key(j, "device_memory");
	ct_json_obj(j);
	for (size_t i = 0; i < n; i++) {
		struct ct_reconcile hi, last;
		size_t count = 0;
		for (size_t k = 0; k < m->nsamples; k++)
			count += m->samples[k].s.device == devs[i];
		ct_json_dev_key(j, devs[i]);
		ct_json_obj(j);
		ct_json_kv_u64(j, "samples", count);
		if (ct_model_reconcile(m, devs[i], 0, &hi))
			json_one(j, "highest", &hi);
		if (ct_model_reconcile(m, devs[i], 1, &last))
			json_one(j, "last", &last);
		ct_json_obj_end(j);
	}
	ct_json_obj_end(j);
	free(devs);
}
