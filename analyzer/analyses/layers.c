/*
 * The two levels in the peak report (views.h, "layers"): device memory at
 * the CUDA layer's peak by owner, and the framework layer's peaks with the
 * blocks live at each (model/framework.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "model/classify.h"
#include "model/framework.h"
#include "render/render.h"
#include "render/views.h"

static struct ct_frame frames[CT_ANALYSIS_FRAMES];

const char *ct_owner_name(int owner)
{
	static const char *const names[] = {"PyTorch", "cuBLAS/cuDNN", "NCCL", "CuPy", "JAX", "other"};
	return owner >= 0 && owner < CT_OWNER_COUNT ? names[owner] : "other";
}

const char *ct_owner_key(int owner)
{
	static const char *const keys[] = {"pytorch", "cublas_cudnn", "nccl", "cupy", "jax", "other"};
	return owner >= 0 && owner < CT_OWNER_COUNT ? keys[owner] : "other";
}

/* The owner of a site's memory: the allocator whose frames made the call (classify.c's rules). */
static int owner_of(struct ct_model *m, uint32_t stack_id)
{
	size_t k = ct_analysis_frames(m, stack_id, frames, CT_ANALYSIS_FRAMES);
	struct ct_class_result r;
	ct_classify_frames(frames, k, 0, &r);
	const char *a = r.rule >= 0 ? ct_rule_get((size_t)r.rule)->allocator : "";
	if (!strcmp(a, "pytorch"))
		return CT_OWNER_PYTORCH;
	if (!strcmp(a, "cublas") || !strcmp(a, "cudnn"))
		return CT_OWNER_BLAS;
	if (!strcmp(a, "nccl"))
		return CT_OWNER_NCCL;
	if (!strcmp(a, "cupy"))
		return CT_OWNER_CUPY;
	if (!strcmp(a, "jax"))
		return CT_OWNER_JAX;
	return CT_OWNER_OTHER;
}

int ct_view_owners_shown(struct ct_model *m, uint64_t out[CT_OWNER_COUNT])
{
	size_t nfw;
	ct_fw_devs(m, &nfw);
	ct_view_owners(m, out);
	int named = 0;
	for (int w = 0; w < CT_OWNER_OTHER; w++)
		named |= out[w] != 0;
	return named || nfw; /* else only the program's own memory: nothing to break down */
}

void ct_view_owners(struct ct_model *m, uint64_t out[CT_OWNER_COUNT])
{
	memset(out, 0, CT_OWNER_COUNT * sizeof *out);
	struct ct_model *one[1] = {m};
	size_t n;
	struct ct_item *v = ct_peak_items(one, 1, &n);
	for (size_t i = 0; i < n; i++) {
		int o = owner_of(m, v[i].stack_id);
		out[o] = ct_sat_add(out[o], v[i].bytes);
	}
	free(v);
}

/* PyTorch's allocated bytes, all devices, at the CUDA layer's peak. */
static uint64_t torch_allocated_at_device_peak(const struct ct_model *m)
{
	size_t nd;
	const struct ct_fw_dev *d = ct_fw_devs(m, &nd);
	uint64_t b = 0;
	for (size_t i = 0; i < nd; i++)
		if (d[i].fw == CT_FW_TORCH)
			b = ct_sat_add(b, d[i].allocated_at_device_peak);
	return b;
}

static int weigh_fw_peak(void *ctx, const struct ct_model *m, const struct ct_site *s, uint64_t *count,
			 uint64_t *bytes)
{
	const struct ct_fw_dev *d = ctx;
	if (ct_fw_dev_of_site(m, s) != d)
		return 0;
	ct_fw_site_at_peak(m, s, count, bytes);
	return 1;
}

struct ct_item *ct_view_fw_peak_items(struct ct_model *m, const struct ct_fw_dev *d, size_t *n)
{
	return ct_site_items(m, weigh_fw_peak, (void *)d, n);
}

/* ---- PyTorch without its caching allocator ------------------------------------------------------ */

/*
 * With PYTORCH_NO_CUDA_MEMORY_CACHING=1 or backend:cudaMallocAsync each tensor
 * is one CUDA allocation made by PyTorch's allocator and the framework layer
 * has no blocks: its allocated bytes are the live CUDA allocations whose owner
 * is PyTorch (owner_of), per device, and their peak. A site's owner is asked
 * once (its frames resolved then). Nothing is kept for other programs.
 */
#define UNCACHED_DEVS 16

struct uncached_dev {
	int16_t device;
	uint64_t allocated, peak, peak_ts, allocs;
};

struct uncached {
	int known, on; /* the launch environment read (at the first allocation), and its verdict */
	uint8_t *owner; /* per model site: 0 not yet asked, 1 PyTorch's, 2 not */
	size_t nowner;
	struct uncached_dev devs[UNCACHED_DEVS];
	size_t ndevs;
};

static struct uncached_dev *uncached_dev(struct uncached *u, int16_t device)
{
	for (size_t i = 0; i < u->ndevs; i++)
		if (u->devs[i].device == device)
			return &u->devs[i];
	if (u->ndevs == UNCACHED_DEVS)
		return NULL;
	u->devs[u->ndevs] = (struct uncached_dev){.device = device};
	return &u->devs[u->ndevs++];
}

/* The dev of a PyTorch-owned block of device memory, NULL for every other block. */
static struct uncached_dev *uncached_block_dev(struct uncached *u, struct ct_model *m, const struct ct_block *b)
{
	if (!u->known) {
		u->known = 1;
		u->on = ct_fw_torch_uncached(m);
	}
	if (!u->on || b->site >= m->nsites)
		return NULL;
	const struct ct_site *s = &m->sites[b->site];
	if (!ct_kind_is_device_bytes(s->kind))
		return NULL;
	if (b->site >= u->nowner) {
		size_t cap = u->nowner;
		u->owner = ct_xgrow(u->owner, &cap, (size_t)b->site + 1, 1);
		memset(u->owner + u->nowner, 0, cap - u->nowner);
		u->nowner = cap;
	}
	if (!u->owner[b->site])
		u->owner[b->site] = owner_of(m, s->stack_id) == CT_OWNER_PYTORCH ? 1 : 2;
	return u->owner[b->site] == 1 ? uncached_dev(u, s->device) : NULL;
}

static void uncached_alloc(void *ctx, struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b)
{
	(void)ev;
	struct uncached_dev *d = uncached_block_dev(ctx, m, b);
	if (!d)
		return;
	d->allocs++;
	d->allocated = ct_sat_add(d->allocated, b->size);
	if (d->allocated > d->peak) {
		d->peak = d->allocated;
		d->peak_ts = b->ts;
	}
}

static void uncached_release(void *ctx, struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b,
			     int how)
{
	(void)ev;
	(void)how;
	struct uncached_dev *d = uncached_block_dev(ctx, m, b);
	if (d)
		d->allocated = ct_sat_sub(d->allocated, b->size);
}

static void uncached_destroy(void *ctx)
{
	struct uncached *u = ctx;
	free(u->owner);
	free(u);
}

static void *uncached_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	(void)o;
	struct uncached *u = ct_xcalloc(1, sizeof *u);
	ct_model_observe(m, &(struct ct_observer){.ctx = u,
						   .alloc = uncached_alloc,
						   .release = uncached_release,
						   .destroy = uncached_destroy});
	return u;
}

const struct ct_analysis ct_analysis_torch_uncached = {
	.name = "torch_uncached",
	.attach = uncached_attach,
};

/* The devices PyTorch allocated on without its cache, NULL when none (or not attached). */
static const struct uncached *uncached_of(const struct ct_model *m)
{
	const struct uncached *u = ct_model_state(m, &ct_analysis_torch_uncached);
	return u && u->on && u->ndevs ? u : NULL;
}

void ct_text_torch_uncached(FILE *f, struct ct_model *m, const char *lead)
{
	const struct uncached *u = uncached_of(m);
	if (!u)
		return;
	char b[32], t[32];
	for (size_t i = 0; i < u->ndevs; i++) {
		const struct uncached_dev *d = &u->devs[i];
		ct_fmt_dur(ct_model_since_start(m, d->peak_ts), t, sizeof t);
		fprintf(f,
			"  %sPyTorch without its caching allocator (%s: each tensor a CUDA allocation), device %d: "
			"peak allocated %s (%" PRIu64 " bytes) at %s\n",
			lead, ct_fw_torch_uncached_setting(m), d->device, ct_fmt_bytes(d->peak, b, sizeof b), d->peak, t);
	}
}

/* "NAME, device D: peak allocated X (N bytes) at T, peak reserved ..." (CuPy: "peak used ..."), no newline. */
static void put_fw_dev_peaks(FILE *f, const struct ct_model *m, const struct ct_fw_dev *d)
{
	char b1[32], b2[32], t1[32], t2[32];
	ct_fmt_dur(ct_model_since_start(m, d->peak_allocated_ts), t1, sizeof t1);
	fprintf(f, "%s, device %d: peak %s %s (%" PRIu64 " bytes) at %s", ct_fw_name(d->fw), d->device,
		d->fw == CT_FW_TORCH ? "allocated" : "used", ct_fmt_bytes(d->peak_allocated, b1, sizeof b1),
		d->peak_allocated, t1);
	if (d->fw == CT_FW_TORCH) {
		ct_fmt_dur(ct_model_since_start(m, d->peak_reserved_ts), t2, sizeof t2);
		fprintf(f, ", peak reserved %s (%" PRIu64 " bytes) at %s", ct_fmt_bytes(d->peak_reserved, b2, sizeof b2),
			d->peak_reserved, t2);
	}
}

void ct_text_layers_brief(FILE *f, struct ct_model *m, const char *lead)
{
	size_t nd;
	const struct ct_fw_dev *v = ct_fw_devs(m, &nd);
	for (size_t i = 0; i < nd; i++) {
		fprintf(f, "  %s", lead);
		put_fw_dev_peaks(f, m, &v[i]);
		fputc('\n', f);
	}
	ct_text_torch_uncached(f, m, lead);
}

int ct_layers_any(struct ct_model *m)
{
	size_t nd;
	ct_fw_devs(m, &nd);
	return nd > 0 || uncached_of(m) != NULL;
}

static void json_torch_uncached(struct ct_json *j, struct ct_model *const *ms, size_t nm)
{
	int any = 0;
	for (size_t k = 0; k < nm; k++)
		any |= uncached_of(ms[k]) != NULL;
	if (!any)
		return;
	ct_json_key(j, "pytorch_uncached");
	ct_json_arr(j);
	for (size_t k = 0; k < nm; k++) {
		const struct uncached *u = uncached_of(ms[k]);
		for (size_t i = 0; u && i < u->ndevs; i++) {
			const struct uncached_dev *d = &u->devs[i];
			ct_json_obj(j);
			ct_json_kv_str(j, "setting", ct_fw_torch_uncached_setting(ms[k]));
			ct_json_kv_u64(j, "pid", ms[k]->pid);
			ct_json_kv_i64(j, "device", d->device);
			ct_json_kv_u64(j, "peak_allocated_bytes", d->peak);
			ct_json_kv_u64(j, "peak_allocated_ns", ct_model_since_start(ms[k], d->peak_ts));
			ct_json_kv_u64(j, "allocated_at_end_bytes", d->allocated);
			ct_json_kv_u64(j, "allocations", d->allocs);
			ct_json_obj_end(j);
		}
	}
	ct_json_arr_end(j);
}

/* ---- text ------------------------------------------------------------------------------------- */

void ct_text_owners(FILE *f, struct ct_model *m)
{
	char b1[32], b2[32], b3[32];
	size_t nd;
	ct_fw_devs(m, &nd);
	uint64_t own[CT_OWNER_COUNT];
	if (!ct_view_owners_shown(m, own))
		return;
	fputs("  by owner at the peak:", f);
	int first = 1;
	for (int o = 0; o < CT_OWNER_COUNT; o++) {
		if (!own[o] && o != CT_OWNER_PYTORCH)
			continue;
		if (o == CT_OWNER_PYTORCH && !own[o] && !nd)
			continue;
		fprintf(f, "%s %s %s", first ? "" : ",", ct_owner_name(o), ct_fmt_bytes(own[o], b1, sizeof b1));
		if (o == CT_OWNER_PYTORCH && nd) {
			uint64_t t = torch_allocated_at_device_peak(m);
			fprintf(f, " (tensors %s + cached free %s)", ct_fmt_bytes(t, b2, sizeof b2),
				ct_fmt_bytes(ct_sat_sub(own[o], t), b3, sizeof b3));
		}
		first = 0;
	}
	fputc('\n', f);
}

void ct_text_layers(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b3[32];
	size_t nd;
	const struct ct_fw_dev *v = ct_fw_devs(m, &nd);
	for (size_t i = 0; i < nd; i++) {
		const struct ct_fw_dev *d = &v[i];
		fputc('\n', f);
		put_fw_dev_peaks(f, m, d);
		fputc('\n', f);
		if (d->fw == CT_FW_TORCH)
			fprintf(f, "  reserved but unallocated at the peak of allocated: %s\n",
				ct_fmt_bytes(ct_sat_sub(d->reserved_at_peak_allocated, d->peak_allocated), b3, sizeof b3));
		if (d->estimated)
			fprintf(f, "  %" PRIu64 " of %" PRIu64 " block size%s estimated (rounded request)\n", d->estimated,
				d->blocks, ct_plural_s(d->blocks));
		fprintf(f, "%s live at that peak:\n", d->fw == CT_FW_TORCH ? "tensors" : "arrays");
		size_t n;
		struct ct_item *items = ct_view_fw_peak_items(m, d, &n);
		ct_text_items(f, o, m, items, n);
		free(items);
	}
}

/* ---- JSON --------------------------------------------------------------------------------------- */

void ct_json_layers(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *const *ms, size_t nm)
{
	uint64_t total[CT_OWNER_COUNT] = {0}, tensors = 0;
	int any = 0;
	for (size_t k = 0; k < nm; k++) {
		uint64_t own[CT_OWNER_COUNT];
		ct_view_owners(ms[k], own);
		for (int w = 0; w < CT_OWNER_COUNT; w++)
			total[w] = ct_sat_add(total[w], own[w]);
		tensors = ct_sat_add(tensors, torch_allocated_at_device_peak(ms[k]));
		size_t nd;
		ct_fw_devs(ms[k], &nd);
		any |= nd > 0;
	}
	ct_json_key(j, "owners");
	ct_json_obj(j);
	for (int w = 0; w < CT_OWNER_COUNT; w++)
		ct_json_kv_u64(j, ct_owner_key(w), total[w]);
	if (any) {
		ct_json_kv_u64(j, "pytorch_tensors", tensors);
		ct_json_kv_u64(j, "pytorch_cached_free", ct_sat_sub(total[CT_OWNER_PYTORCH], tensors));
	}
	ct_json_obj_end(j);
	json_torch_uncached(j, ms, nm);
	if (!any)
		return;
	ct_json_key(j, "framework");
	ct_json_arr(j);
	for (size_t k = 0; k < nm; k++) {
		size_t nd;
		const struct ct_fw_dev *v = ct_fw_devs(ms[k], &nd);
		for (size_t i = 0; i < nd; i++) {
			const struct ct_fw_dev *d = &v[i];
			ct_json_obj(j);
			ct_fw_json_dev_head(j, ms[k], d);
			if (d->fw == CT_FW_TORCH) {
				ct_json_kv_u64(j, "peak_reserved_bytes", d->peak_reserved);
				ct_json_kv_u64(j, "peak_reserved_ns", ct_model_since_start(ms[k], d->peak_reserved_ts));
				ct_json_kv_u64(j, "reserved_unallocated_at_peak_bytes",
					       ct_sat_sub(d->reserved_at_peak_allocated, d->peak_allocated));
			}
			ct_json_kv_u64(j, "sizes_estimated", d->estimated);
			size_t n;
			struct ct_item *items = ct_view_fw_peak_items(ms[k], d, &n);
			ct_json_items(j, o, items, n);
			free(items);
			ct_json_obj_end(j);
		}
	}
	ct_json_arr_end(j);
}

/* ---- the framework's out-of-memory errors (oom report) ------------------------------------------ */

/* The live blocks by site at OOM i of m, largest first (caller frees). */
static struct ct_item *fw_oom_items(struct ct_model *m, const struct ct_fw_oom *x, size_t *n)
{
	struct ct_item *v = ct_xcalloc(x->nsites + 1, sizeof *v);
	for (size_t k = 0; k < x->nsites; k++)
		v[k] = ct_site_item(m, &m->sites[x->sites[k].site], x->sites[k].count, x->sites[k].bytes);
	*n = x->nsites;
	return v;
}

void ct_text_fw_ooms(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32], b3[32], b4[32], t[32];
	size_t kept;
	uint64_t total;
	const struct ct_fw_oom *v = ct_fw_ooms(m, &kept, &total);
	if (!total)
		return;
	fprintf(f, "PyTorch raised out-of-memory %" PRIu64 " time%s (the tensors live then, by site):\n", total,
		ct_plural_s(total));
	for (size_t i = 0; i < kept; i++) {
		const struct ct_fw_oom *x = &v[i];
		ct_fmt_dur(ct_model_since_start(m, x->ts), t, sizeof t);
		fprintf(f,
			"\nPyTorch failure %zu at %s: asked %s (%" PRIu64 " bytes) on device %d; allocated %s, "
			"reserved %s (reserved but unallocated %s), device free %s\n",
			i + 1, t, ct_fmt_bytes(x->size, b1, sizeof b1), x->size, x->device,
			ct_fmt_bytes(x->allocated, b2, sizeof b2), ct_fmt_bytes(x->reserved, b3, sizeof b3),
			ct_fmt_bytes(ct_sat_sub(x->reserved, x->allocated), b4, sizeof b4),
			ct_fmt_bytes(x->device_free, b1, sizeof b1));
		ct_text_stack(f, m, x->stack_id);
		size_t n;
		struct ct_item *items = fw_oom_items(m, x, &n);
		ct_text_items(f, o, m, items, n);
		free(items);
	}
	if (total > kept)
		fprintf(f, "\n... and %" PRIu64 " more (the first %d are kept)\n", total - kept, CT_FW_OOMS_KEPT);
	fputc('\n', f);
}

void ct_json_fw_ooms(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *const *ms, size_t nm)
{
	int any = 0;
	for (size_t d = 0; d < nm; d++)
		any |= ms[d]->fw_events > 0;
	if (!any)
		return; /* no framework layer: the report as before */
	ct_json_key(j, "framework");
	ct_json_arr(j);
	for (size_t d = 0; d < nm; d++) {
		size_t kept;
		uint64_t total;
		const struct ct_fw_oom *v = ct_fw_ooms(ms[d], &kept, &total);
		for (size_t i = 0; i < kept; i++) {
			const struct ct_fw_oom *x = &v[i];
			ct_json_obj(j);
			ct_json_kv_str(j, "framework", "pytorch");
			ct_json_kv_u64(j, "pid", ms[d]->pid);
			ct_json_kv_u64(j, "time_ns", ct_model_since_start(ms[d], x->ts));
			ct_json_kv_u64(j, "size", x->size);
			ct_json_kv_i64(j, "device", x->device);
			ct_json_kv_u64(j, "allocated_bytes", x->allocated);
			ct_json_kv_u64(j, "reserved_bytes", x->reserved);
			ct_json_kv_u64(j, "device_free_bytes", x->device_free);
			ct_json_site_label(j, ms[d], x->stack_id);
			ct_json_key(j, "stack");
			ct_json_stack(j, ms[d], x->stack_id);
			size_t n;
			struct ct_item *items = fw_oom_items(ms[d], x, &n);
			ct_json_items(j, o, items, n);
			free(items);
			ct_json_obj_end(j);
		}
	}
	ct_json_arr_end(j);
}
