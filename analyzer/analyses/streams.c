/*
 * The streams command: per stream, its stream-ordered allocations (live bytes
 * and their peak), synchronizations and the time spent in them, frees on
 * another stream than the allocation's, and frees still pending in stream
 * order at the end of the trace.
 *
 * A stream is its handle; the legacy default stream (0, or cudaStreamLegacy
 * = 0x1) is one per device; the per-thread default stream (0x2, what the
 * _ptsz calls use for 0) is one per thread and device. Only successful calls
 * count.
 *
 * A stream-ordered free (cudaFreeAsync, cuMemFreeAsync and their _ptsz forms)
 * on stream S is "pending" at the end when no later event settled it: a
 * synchronization of S (cudaStreamSynchronize / cuStreamSynchronize), the
 * destruction of S, or a cudaDeviceSynchronize, device reset or context
 * destruction on S's device. Event and query calls (cudaEventSynchronize,
 * cudaStreamQuery, cudaStreamWaitEvent) are not traced and do not settle.
 *
 * Memory: one record per stream (at most STREAMS_MAX), one per (stream,
 * allocation site) with pending frees, one per allocation site with
 * cross-stream frees: never per event.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "render/render.h"
#include "render/views.h"

#define STREAMS_MAX CT_STREAMS_MAX /* streams tracked (views.h) */
#define STREAM_DEVICES_MAX 64
#define STREAM_LEGACY ((uint64_t)0x1)
#define STREAM_PER_THREAD ((uint64_t)0x2)

struct stream {
	uint64_t handle; /* 0: the legacy default stream of device */
	uint32_t tid;	 /* the per-thread default stream's thread, else 0 */
	int16_t device;	 /* key for default streams; else from the creation or first use */
	uint64_t creates, destroys, syncs, sync_ns;
	uint64_t allocs, alloc_bytes, live, live_count, peak, peak_ts;
	uint64_t frees, free_bytes, cross_in, cross_in_bytes;
	uint64_t pending, pending_bytes, pending_since; /* valid when since > settled */
	uint64_t settled; /* event number of its last sync or destroy */
};

struct dev_sync {
	int16_t device;
	uint64_t count, ns, settled;
};

/* Pending frees of one stream from one allocation site. */
struct pending_site {
	uint32_t stream, site;
	uint64_t count, bytes, since;
};

struct site_sum {
	uint64_t count, bytes;
};

struct streams {
	struct stream *v;
	size_t n, cap;
	struct ct_imap map;
	struct dev_sync dev[STREAM_DEVICES_MAX];
	size_t ndev;
	struct pending_site *ps;
	size_t nps, capps;
	struct ct_imap psmap;
	struct site_sum *cross; /* by allocation site index */
	size_t capcross;
	uint64_t cross_count, cross_bytes;
	uint64_t untracked;
};

static int is_async_free(unsigned api)
{
	return api == CT_API_cudaFreeAsync || api == CT_API_cudaFreeAsync_ptsz ||
	       api == CT_API_cuMemFreeAsync || api == CT_API_cuMemFreeAsync_ptsz;
}

struct stream_key {
	uint64_t handle;
	uint32_t tid;
	int16_t device;
};

static struct stream_key key_of(uint64_t handle, uint32_t tid, int16_t device)
{
	if (handle == STREAM_LEGACY)
		handle = 0;
	struct stream_key k = {handle, 0, 0};
	if (handle == 0 || handle == STREAM_PER_THREAD)
		k.device = device;
	if (handle == STREAM_PER_THREAD)
		k.tid = tid;
	return k;
}

static int stream_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct streams *st = ctx;
	const struct stream_key *k = key;
	const struct stream *s = &st->v[idx];
	return s->handle == k->handle && s->tid == k->tid &&
	       (k->handle != 0 && k->handle != STREAM_PER_THREAD ? 1 : s->device == k->device);
}

/* The stream of (handle, tid, device), NULL past STREAMS_MAX. */
static struct stream *stream_of(struct streams *st, uint64_t handle, uint32_t tid, int16_t device)
{
	struct stream_key k = key_of(handle, tid, device);
	uint64_t h = ct_hash2(k.handle, ((uint64_t)k.tid << 16) | (uint16_t)k.device);
	uint32_t i = ct_imap_get(&st->map, h, stream_eq, st, &k);
	if (i != CT_IMAP_NONE)
		return &st->v[i];
	if (st->n == STREAMS_MAX) {
		st->untracked++;
		return NULL;
	}
	st->v = ct_xgrow(st->v, &st->cap, st->n + 1, sizeof *st->v);
	i = (uint32_t)st->n++;
	memset(&st->v[i], 0, sizeof st->v[i]);
	st->v[i].handle = k.handle;
	st->v[i].tid = k.tid;
	st->v[i].device = device;
	ct_imap_put(&st->map, h, i);
	return &st->v[i];
}

static struct dev_sync *dev_sync_of(struct streams *st, int16_t device)
{
	for (size_t i = 0; i < st->ndev; i++)
		if (st->dev[i].device == device)
			return &st->dev[i];
	if (st->ndev == STREAM_DEVICES_MAX)
		return NULL;
	struct dev_sync *d = &st->dev[st->ndev++];
	memset(d, 0, sizeof *d);
	d->device = device;
	return d;
}

/* Event number of the last event that settled s's frees. */
static uint64_t settled_at(const struct streams *st, const struct stream *s)
{
	uint64_t t = s->settled;
	for (size_t i = 0; i < st->ndev; i++)
		if (st->dev[i].device == s->device && st->dev[i].settled > t)
			t = st->dev[i].settled;
	return t;
}

static int ps_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct streams *st = ctx;
	const struct pending_site *k = key;
	return st->ps[idx].stream == k->stream && st->ps[idx].site == k->site;
}

/* A free of size bytes from site at event number seq, pending on stream s. */
static void add_pending(struct streams *st, struct stream *s, uint32_t site, uint64_t size,
			uint64_t seq)
{
	uint64_t settled = settled_at(st, s);
	if (s->pending && s->pending_since <= settled)
		s->pending = s->pending_bytes = 0;
	if (!s->pending)
		s->pending_since = seq;
	s->pending++;
	s->pending_bytes = ct_sat_add(s->pending_bytes, size);
	struct pending_site k = {.stream = (uint32_t)(s - st->v), .site = site};
	uint64_t h = ct_hash2(k.stream, k.site);
	uint32_t i = ct_imap_get(&st->psmap, h, ps_eq, st, &k);
	if (i == CT_IMAP_NONE) {
		st->ps = ct_xgrow(st->ps, &st->capps, st->nps + 1, sizeof *st->ps);
		i = (uint32_t)st->nps++;
		st->ps[i] = k;
		ct_imap_put(&st->psmap, h, i);
	}
	struct pending_site *p = &st->ps[i];
	if (p->count && p->since <= settled)
		p->count = p->bytes = 0;
	if (!p->count)
		p->since = seq;
	p->count++;
	p->bytes = ct_sat_add(p->bytes, size);
}

static void streams_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			  const struct ct_block *b)
{
	struct streams *st = ctx;
	const struct ct_site *site = &m->sites[b->site];
	if (!ct_api_is_stream_ordered(site->api))
		return;
	struct stream *s = stream_of(st, b->stream, b->tid, site->device);
	if (!s)
		return;
	s->allocs++;
	s->alloc_bytes = ct_sat_add(s->alloc_bytes, b->size);
	s->live = ct_sat_add(s->live, b->size);
	s->live_count++;
	if (s->live > s->peak) {
		s->peak = s->live;
		s->peak_ts = ev->ts_ns;
	}
}

static void streams_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			    const struct ct_block *b, int how)
{
	struct streams *st = ctx;
	const struct ct_site *site = &m->sites[b->site];
	struct stream *sa = NULL;
	if (ct_api_is_stream_ordered(site->api)) {
		sa = stream_of(st, b->stream, b->tid, site->device);
		if (sa) {
			sa->live = ct_sat_sub(sa->live, b->size);
			sa->live_count--;
		}
	}
	if (how != CT_END_FREE || !is_async_free(ev->api))
		return;
	struct stream *sf = stream_of(st, ev->stream, ev->tid, ev->device);
	if (!sf)
		return;
	sf->frees++;
	sf->free_bytes = ct_sat_add(sf->free_bytes, b->size);
	if (sa && sa != sf) {
		sf->cross_in++;
		sf->cross_in_bytes = ct_sat_add(sf->cross_in_bytes, b->size);
		st->cross_count++;
		st->cross_bytes = ct_sat_add(st->cross_bytes, b->size);
		if ((size_t)b->site >= st->capcross) {
			size_t old = st->capcross;
			st->cross = ct_xgrow(st->cross, &st->capcross, (size_t)b->site + 1,
					     sizeof *st->cross);
			memset(st->cross + old, 0, (st->capcross - old) * sizeof *st->cross);
		}
		st->cross[b->site].count++;
		st->cross[b->site].bytes = ct_sat_add(st->cross[b->site].bytes, b->size);
	}
	add_pending(st, sf, b->site, b->size, m->events);
}

static void streams_event(void *ctx, struct ct_model *m, const struct ct_rec_event *ev)
{
	struct streams *st = ctx;
	if (ev->result != 0)
		return;
	struct stream *s;
	struct dev_sync *d;
	switch (ev->op) {
	case CT_OP_STREAM_CREATE:
		if ((s = stream_of(st, ev->ptr, ev->tid, ev->device))) {
			s->creates++;
			s->device = ev->device;
		}
		break;
	case CT_OP_STREAM_DESTROY:
		if ((s = stream_of(st, ev->stream, ev->tid, ev->device))) {
			s->destroys++;
			s->settled = m->events;
		}
		break;
	case CT_OP_STREAM_SYNC:
		if ((s = stream_of(st, ev->stream, ev->tid, ev->device))) {
			s->syncs++;
			s->sync_ns = ct_sat_add(s->sync_ns, ev->dur_ns);
			s->settled = m->events;
		}
		break;
	case CT_OP_DEVICE_SYNC:
	case CT_OP_DEVICE_RESET:
	case CT_OP_CTX_DESTROY:
		if ((d = dev_sync_of(st, ev->device))) {
			if (ev->op == CT_OP_DEVICE_SYNC) {
				d->count++;
				d->ns = ct_sat_add(d->ns, ev->dur_ns);
			}
			d->settled = m->events;
		}
		break;
	default:
		break;
	}
}

static void streams_destroy(void *ctx)
{
	struct streams *st = ctx;
	free(st->v);
	ct_imap_free(&st->map);
	free(st->ps);
	ct_imap_free(&st->psmap);
	free(st->cross);
	free(st);
}

static void *streams_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	(void)o;
	return ct_xcalloc(1, sizeof(struct streams));
}

const struct ct_analysis ct_analysis_streams = {
	.name = "streams",
	.attach = streams_attach,
	.observe = {.alloc = streams_alloc, .release = streams_release, .event = streams_event,
		    .destroy = streams_destroy},
};

/* ---- what the renderers read ----------------------------------------------------------- */

static uint64_t pending_count(const struct streams *st, const struct stream *s, uint64_t *bytes)
{
	int valid = s->pending && s->pending_since > settled_at(st, s);
	*bytes = valid ? s->pending_bytes : 0;
	return valid ? s->pending : 0;
}

static int weigh_cross(void *ctx, const struct ct_model *m, const struct ct_site *s,
		       uint64_t *count, uint64_t *bytes)
{
	const struct streams *st = ctx;
	size_t i = (size_t)(s - m->sites);
	if (i >= st->capcross)
		return 0;
	*count = st->cross[i].count;
	*bytes = st->cross[i].bytes;
	return 1;
}

/* Pending frees by allocation site, over the streams (caller frees; nsites entries). */
static struct site_sum *pending_by_site(const struct streams *st, const struct ct_model *m)
{
	struct site_sum *v = ct_xcalloc(m->nsites + 1, sizeof *v);
	for (size_t i = 0; i < st->nps; i++) {
		const struct pending_site *p = &st->ps[i];
		if (!p->count || p->since <= settled_at(st, &st->v[p->stream]) || p->site >= m->nsites)
			continue;
		v[p->site].count += p->count;
		v[p->site].bytes = ct_sat_add(v[p->site].bytes, p->bytes);
	}
	return v;
}

static int weigh_sum(void *ctx, const struct ct_model *m, const struct ct_site *s, uint64_t *count,
		     uint64_t *bytes)
{
	const struct site_sum *v = ctx;
	size_t i = (size_t)(s - m->sites);
	*count = v[i].count;
	*bytes = v[i].bytes;
	return 1;
}

static int cmp_stream(const void *a, const void *b)
{
	const struct stream *x = *(const struct stream *const *)a;
	const struct stream *y = *(const struct stream *const *)b;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->handle != y->handle)
		return x->handle < y->handle ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static const struct stream **sorted_streams(const struct streams *st)
{
	const struct stream **v = ct_xcalloc(st->n + 1, sizeof *v);
	for (size_t i = 0; i < st->n; i++)
		v[i] = &st->v[i];
	if (st->n > 1)
		qsort(v, st->n, sizeof *v, cmp_stream);
	return v;
}

static void stream_name(const struct stream *s, char *buf, size_t cap)
{
	if (s->handle == 0)
		snprintf(buf, cap, "legacy default");
	else if (s->handle == STREAM_PER_THREAD)
		snprintf(buf, cap, "per-thread (tid %" PRIu32 ")", s->tid);
	else
		snprintf(buf, cap, "0x%" PRIx64, s->handle);
}

/* The totals over the streams and devices of st. */
static void totals_of(const struct streams *st, struct ct_streams_totals *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < st->n; i++) {
		uint64_t pb;
		t->creates += st->v[i].creates;
		t->destroys += st->v[i].destroys;
		t->syncs += st->v[i].syncs;
		t->sync_ns = ct_sat_add(t->sync_ns, st->v[i].sync_ns);
		t->pending += pending_count(st, &st->v[i], &pb);
		t->pending_bytes = ct_sat_add(t->pending_bytes, pb);
	}
	for (size_t i = 0; i < st->ndev; i++) {
		t->device_syncs += st->dev[i].count;
		t->device_sync_ns = ct_sat_add(t->device_sync_ns, st->dev[i].ns);
	}
	t->cross = st->cross_count;
	t->cross_bytes = st->cross_bytes;
	t->untracked = st->untracked;
}

/* ---- the views (views.h): everything the formats below and the HTML page show --------------- */

struct ct_stream_view *ct_view_streams(const struct ct_model *m, struct ct_streams_totals *t,
				       size_t *n)
{
	const struct streams *st = ct_model_state(m, &ct_analysis_streams);
	memset(t, 0, sizeof *t);
	*n = 0;
	if (!st)
		return NULL;
	totals_of(st, t);
	struct ct_stream_view *out = ct_xcalloc(st->n + 1, sizeof *out);
	const struct stream **v = sorted_streams(st);
	for (size_t i = 0; i < st->n; i++) {
		const struct stream *s = v[i];
		struct ct_stream_view *o = &out[i];
		stream_name(s, o->name, sizeof o->name);
		o->handle = s->handle;
		o->default_kind = s->handle == 0 ? "legacy" : s->handle == STREAM_PER_THREAD ? "per_thread" : NULL;
		o->tid = s->tid;
		o->device = s->device;
		o->creates = s->creates;
		o->destroys = s->destroys;
		o->syncs = s->syncs;
		o->sync_ns = s->sync_ns;
		o->allocs = s->allocs;
		o->alloc_bytes = s->alloc_bytes;
		o->live = s->live;
		o->live_count = s->live_count;
		o->peak = s->peak;
		o->peak_ns = s->peak ? ct_model_since_start(m, s->peak_ts) : 0;
		o->frees = s->frees;
		o->free_bytes = s->free_bytes;
		o->cross_in = s->cross_in;
		o->cross_in_bytes = s->cross_in_bytes;
		o->pending = pending_count(st, s, &o->pending_bytes);
	}
	free(v);
	*n = st->n;
	return out;
}

struct ct_device_sync_view *ct_view_device_syncs(const struct ct_model *m, size_t *n)
{
	const struct streams *st = ct_model_state(m, &ct_analysis_streams);
	*n = st ? st->ndev : 0;
	struct ct_device_sync_view *out = ct_xcalloc(*n + 1, sizeof *out);
	for (size_t i = 0; i < *n; i++)
		out[i] = (struct ct_device_sync_view){st->dev[i].device, st->dev[i].count, st->dev[i].ns};
	return out;
}

struct ct_item *ct_view_stream_sites(struct ct_model *m, int pending, size_t *n)
{
	struct streams *st = ct_model_state(m, &ct_analysis_streams);
	*n = 0;
	if (!st)
		return ct_xcalloc(1, sizeof(struct ct_item));
	if (!pending)
		return ct_site_items(m, weigh_cross, st, n);
	struct site_sum *sums = pending_by_site(st, m);
	struct ct_item *v = ct_site_items(m, weigh_sum, sums, n);
	free(sums);
	return v;
}

/* ---- text ---------------------------------------------------------------------------------- */

static void text_streams(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b[8][32];
	struct ct_streams_totals t;
	size_t ns, nd, n;
	struct ct_stream_view *v = ct_view_streams(m, &t, &ns);
	struct ct_device_sync_view *dv = ct_view_device_syncs(m, &nd);
	fputs("cumtrace streams: ", f);
	ct_put_proc(f, m);
	fputc('\n', f);
	ct_put_notes(f, m);
	if (!ns && !nd) {
		fputs("  no stream activity\n", f);
		free(v);
		free(dv);
		return;
	}
	ct_fmt_dur(t.sync_ns, b[0], sizeof b[0]);
	ct_fmt_dur(t.device_sync_ns, b[1], sizeof b[1]);
	fprintf(f,
		"  %zu stream%s: %" PRIu64 " created, %" PRIu64 " destroyed; %" PRIu64
		" stream synchronization%s (%s), %" PRIu64 " device synchronization%s (%s)\n",
		ns, ct_plural_s(ns), t.creates, t.destroys, t.syncs, ct_plural_s(t.syncs),
		b[0], t.device_syncs, ct_plural_s(t.device_syncs), b[1]);
	for (size_t i = 0; i < nd; i++)
		if (dv[i].count) {
			ct_fmt_dur(dv[i].ns, b[0], sizeof b[0]);
			fprintf(f, "  device %d: %" PRIu64 " device synchronization%s (%s)\n",
				dv[i].device, dv[i].count, ct_plural_s(dv[i].count), b[0]);
		}
	free(dv);
	fprintf(f, "\n  %-24s %6s %7s %7s %6s %10s %7s %10s %10s %10s %10s %6s %10s %10s\n", "stream",
		"device", "created", "destroy", "syncs", "sync time", "allocs", "allocated", "live end",
		"peak live", "peak at", "frees", "cross in", "pending");
	for (size_t i = 0; i < ns; i++) {
		const struct ct_stream_view *s = &v[i];
		ct_fmt_dur(s->sync_ns, b[0], sizeof b[0]);
		ct_fmt_dur(s->peak_ns, b[4], sizeof b[4]);
		fprintf(f,
			"  %-24s %6d %7" PRIu64 " %7" PRIu64 " %6" PRIu64 " %10s %7" PRIu64
			" %10s %10s %10s %10s %6" PRIu64 " %10s %10s\n",
			s->name, s->device, s->creates, s->destroys, s->syncs, b[0], s->allocs,
			ct_fmt_bytes(s->alloc_bytes, b[1], sizeof b[1]),
			ct_fmt_bytes(s->live, b[2], sizeof b[2]), ct_fmt_bytes(s->peak, b[3], sizeof b[3]),
			s->peak ? b[4] : "-", s->frees, ct_fmt_bytes(s->cross_in_bytes, b[5], sizeof b[5]),
			s->pending ? ct_fmt_bytes(s->pending_bytes, b[6], sizeof b[6]) : "-");
	}
	free(v);
	if (t.cross) {
		fprintf(f,
			"\ncross-stream frees: %" PRIu64 " (%s): stream-ordered allocations freed on "
			"another stream than their own, by allocation site:\n",
			t.cross, ct_fmt_bytes(t.cross_bytes, b[0], sizeof b[0]));
		struct ct_item *items = ct_view_stream_sites(m, 0, &n);
		ct_text_items(f, o, m, items, n);
		free(items);
	} else {
		fputs("\ncross-stream frees: none\n", f);
	}
	if (t.pending) {
		fprintf(f,
			"\nfrees pending at the end: %" PRIu64 " (%s): stream-ordered frees with no later "
			"synchronization or destruction of their stream or synchronization of its device,"
			" by allocation site:\n",
			t.pending, ct_fmt_bytes(t.pending_bytes, b[0], sizeof b[0]));
		struct ct_item *items = ct_view_stream_sites(m, 1, &n);
		ct_text_items(f, o, m, items, n);
		free(items);
	} else {
		fputs("frees pending at the end: none\n", f);
	}
	if (t.untracked)
		fprintf(f, "  note: %" PRIu64 " %s of streams beyond %d %s not counted\n",
			t.untracked, ct_plural(t.untracked, "event", "events"), STREAMS_MAX,
			ct_plural(t.untracked, "is", "are"));
}

/* ---- CSV: one row per stream ---------------------------------------------------------------- */

static void csv_streams(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			size_t nm)
{
	(void)o;
	fputs("pid,stream,tid,device,creates,destroys,syncs,sync_time_ns,allocations,allocated_bytes,"
	      "live_bytes,peak_bytes,peak_time_ns,async_frees,cross_stream_frees,"
	      "cross_stream_free_bytes,pending_frees,pending_free_bytes\n",
	      f);
	for (size_t x = 0; x < nm; x++) {
		struct ct_streams_totals t;
		size_t ns;
		struct ct_stream_view *v = ct_view_streams(ms[x], &t, &ns);
		for (size_t i = 0; i < ns; i++) {
			const struct ct_stream_view *s = &v[i];
			fprintf(f,
				"%" PRIu32 ",0x%" PRIx64 ",%" PRIu32 ",%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
				",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
				ms[x]->pid, s->handle, s->tid, s->device, s->creates, s->destroys, s->syncs,
				s->sync_ns, s->allocs, s->alloc_bytes, s->live, s->peak, s->peak_ns, s->frees,
				s->cross_in, s->cross_in_bytes, s->pending, s->pending_bytes);
		}
		free(v);
	}
}

/* ---- JSON ------------------------------------------------------------------------------------ */

/* The cross-stream (pending 0) or pending (1) sites of every model as one list, largest first. */
static void json_site_list(struct ct_json *j, const struct ct_report_opts *o,
			   struct ct_model *const *ms, size_t nm, int pending)
{
	struct ct_item *all = NULL;
	size_t cap = 0, n = 0;
	uint64_t count = 0, bytes = 0;
	for (size_t x = 0; x < nm; x++) {
		if (!ct_model_state(ms[x], &ct_analysis_streams))
			continue;
		size_t k;
		struct ct_item *v = ct_view_stream_sites(ms[x], pending, &k);
		all = ct_xgrow(all, &cap, n + k + 1, sizeof *all);
		for (size_t i = 0; i < k; i++) {
			count += v[i].count;
			bytes = ct_sat_add(bytes, v[i].bytes);
			all[n++] = v[i];
		}
		free(v);
	}
	if (!all)
		all = ct_xcalloc(1, sizeof *all);
	ct_items_sort(all, n);
	ct_json_key(j, pending ? "pending_frees" : "cross_stream_frees");
	ct_json_obj(j);
	ct_json_kv_u64(j, "count", count);
	ct_json_kv_u64(j, "bytes", bytes);
	ct_json_items(j, o, all, n);
	ct_json_obj_end(j);
	free(all);
}

/* "streams": every stream of every dump, device synchronizations, the two site lists. */
static void json_streams(struct ct_json *j, const struct ct_report_opts *o,
			 struct ct_model *const *ms, size_t nm)
{
	ct_json_key(j, "streams");
	ct_json_obj(j);
	ct_json_key(j, "streams");
	ct_json_arr(j);
	for (size_t x = 0; x < nm; x++) {
		struct ct_streams_totals t;
		size_t ns;
		struct ct_stream_view *v = ct_view_streams(ms[x], &t, &ns);
		for (size_t i = 0; i < ns; i++) {
			const struct ct_stream_view *s = &v[i];
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", ms[x]->pid);
			ct_json_kv_u64(j, "stream", s->handle);
			ct_json_kv_str(j, "default", s->default_kind);
			ct_json_kv_u64(j, "tid", s->tid);
			ct_json_kv_i64(j, "device", s->device);
			ct_json_kv_u64(j, "creates", s->creates);
			ct_json_kv_u64(j, "destroys", s->destroys);
			ct_json_kv_u64(j, "syncs", s->syncs);
			ct_json_kv_u64(j, "sync_time_ns", s->sync_ns);
			ct_json_kv_u64(j, "allocations", s->allocs);
			ct_json_kv_u64(j, "allocated_bytes", s->alloc_bytes);
			ct_json_kv_u64(j, "live_bytes", s->live);
			ct_json_kv_u64(j, "live_count", s->live_count);
			ct_json_kv_u64(j, "peak_bytes", s->peak);
			ct_json_kv_u64(j, "peak_time_ns", s->peak_ns);
			ct_json_kv_u64(j, "async_frees", s->frees);
			ct_json_kv_u64(j, "async_free_bytes", s->free_bytes);
			ct_json_kv_u64(j, "cross_stream_frees", s->cross_in);
			ct_json_kv_u64(j, "cross_stream_free_bytes", s->cross_in_bytes);
			ct_json_kv_u64(j, "pending_frees", s->pending);
			ct_json_kv_u64(j, "pending_free_bytes", s->pending_bytes);
			ct_json_obj_end(j);
		}
		free(v);
	}
	ct_json_arr_end(j);
	ct_json_key(j, "device_syncs");
	ct_json_arr(j);
	for (size_t x = 0; x < nm; x++) {
		size_t nd;
		struct ct_device_sync_view *dv = ct_view_device_syncs(ms[x], &nd);
		for (size_t i = 0; i < nd; i++) {
			ct_json_obj(j);
			ct_json_kv_u64(j, "pid", ms[x]->pid);
			ct_json_kv_i64(j, "device", dv[i].device);
			ct_json_kv_u64(j, "count", dv[i].count);
			ct_json_kv_u64(j, "time_ns", dv[i].ns);
			ct_json_obj_end(j);
		}
		free(dv);
	}
	ct_json_arr_end(j);
	for (int pending = 0; pending < 2; pending++)
		json_site_list(j, o, ms, nm, pending);
	ct_json_obj_end(j);
}

const struct ct_report ct_report_streams = {
	.uses = CT_USES(&ct_analysis_streams),
	.text = text_streams,
	.csv = csv_streams,
	.json = json_streams,
};
