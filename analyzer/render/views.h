/*
 * Read-only views of the analyses that live in their own files: what each
 * shows, computed once from its private state. Renderers read these, never
 * the state: the HTML page (exports/html.c), and the text, CSV and JSON of
 * streams, oom, frag and the peak's phases. Each analysis keeps its state
 * private; these functions hand a copy of what it shows out.
 *
 * Arrays returned here belong to the caller (free them); pointers inside a
 * view point into the model and stay valid as long as it does. A function of
 * an analysis that was not attached to the model returns nothing (n = 0).
 */
#ifndef CT_ANALYZER_VIEWS_H
#define CT_ANALYZER_VIEWS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "model/model.h"
#include "render/render.h"

/* ---- peak (analyses/peak.c) ------------------------------------------------------------------ */

/*
 * The device peaks of m that saw device bytes, by device number: the
 * CT_DEVICES_SHOWN highest (render.h), *more gets how many others there are.
 */
const struct ct_dev_peak **ct_view_dev_peaks(const struct ct_model *m, size_t *n, size_t *more);
/* The device-bytes sites of d's device live at d's own peak, largest first. */
struct ct_item *ct_view_dev_peak_items(struct ct_model *m, const struct ct_dev_peak *d, size_t *n);

/* ", in step K of N (optimizer steps)", ", in range \"NAME\"", ", after mark \"NAME\"": when m's
 * device peak came (nothing when it had no steps, ranges or marks then). */
void ct_put_peak_when(FILE *f, struct ct_model *m);

/* ---- the two layers at the peak (analyses/layers.c) ------------------------------------------- */

/* Who device memory at the CUDA layer's peak belongs to (classify.c's cache rules). */
enum ct_owner {
	CT_OWNER_PYTORCH = 0,
	CT_OWNER_BLAS = 1, /* cuBLAS and cuDNN workspaces */
	CT_OWNER_NCCL = 2,
	CT_OWNER_CUPY = 3,
	CT_OWNER_JAX = 4,
	CT_OWNER_OTHER = 5, /* the program's own calls, and everything no rule names */
	CT_OWNER_COUNT
};
const char *ct_owner_name(int owner); /* "PyTorch", "cuBLAS/cuDNN", ... */
const char *ct_owner_key(int owner);  /* "pytorch", "cublas_cudnn", ... */
/* Device bytes (all devices) live at m's peak, by owner. */
void ct_view_owners(struct ct_model *m, uint64_t out[CT_OWNER_COUNT]);
/* The same; nonzero when worth showing (an owner but "other" has bytes, or a framework layer exists). */
int ct_view_owners_shown(struct ct_model *m, uint64_t out[CT_OWNER_COUNT]);
struct ct_fw_dev;
/* The blocks of a framework dev live at its peak of allocated (used) bytes, by site, largest first. */
struct ct_item *ct_view_fw_peak_items(struct ct_model *m, const struct ct_fw_dev *d, size_t *n);
/* "  by owner at the peak: PyTorch X (tensors Y + cached free Z), ..." */
void ct_text_owners(FILE *f, struct ct_model *m);
/* "  LEADPyTorch without its caching allocator (...), device D: peak allocated ..." a line per device;
 * nothing when PyTorch ran with its cache (analyses/layers.c, ct_analysis_torch_uncached) */
void ct_text_torch_uncached(FILE *f, struct ct_model *m, const char *lead);
/* The framework layer's peaks of m, one line per framework dev (and the uncached line above), each
 * line "  LEAD..."; nothing when m has none. */
void ct_text_layers_brief(FILE *f, struct ct_model *m, const char *lead);
/* Has m a framework layer's figures (blocks, or PyTorch without its cache)? */
int ct_layers_any(struct ct_model *m);
/* Each framework dev's peaks, fragmentation and blocks live at its peak (text). */
void ct_text_layers(FILE *f, const struct ct_report_opts *o, struct ct_model *m);
/* "owners": {...} and, with a framework layer, "framework": [per dev, with its "sites"] */
void ct_json_layers(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *const *ms, size_t nm);

/* The framework's out-of-memory errors with the blocks live at each (oom report: text, JSON "framework"). */
void ct_text_fw_ooms(FILE *f, const struct ct_report_opts *o, struct ct_model *m);
void ct_json_fw_ooms(struct ct_json *j, const struct ct_report_opts *o, struct ct_model *const *ms, size_t nm);

/* One phase row of the peak report: an NVTX range name or a span between marks. */
struct ct_phase_view {
	const char *name; /* "" for the span before the first mark */
	const char *kind; /* "start" (before the first mark), "mark", "range" */
	uint64_t count, open_at_end;
	uint64_t peak_bytes, peak_ns; /* highest device bytes, and when (since the start) */
	uint64_t start_bytes, growth_bytes;
};
/* The phases of m, highest peak first; NULL when they were not tracked. */
struct ct_phase_view *ct_view_phases(const struct ct_model *m, size_t *n);

#define CT_PHASE_OPEN_MAX 1024 /* ranges open at once; more are counted, not tracked */
#define CT_PHASE_ROWS_MAX 1024 /* distinct names; instances of more are counted */
struct ct_phases_totals {
	uint64_t untracked;    /* ranges beyond CT_PHASE_OPEN_MAX open at once */
	uint64_t rows_dropped; /* instances of names beyond CT_PHASE_ROWS_MAX */
};
void ct_view_phases_totals(const struct ct_model *m, struct ct_phases_totals *t);

/* ---- oom (analyses/oom.c) -------------------------------------------------------------------- */

/* One allocation that failed with out-of-memory. */
struct ct_oom_view {
	uint64_t time_ns; /* since the start of the trace */
	uint64_t size, stream, pool; /* pool: the memory pool of a ...FromPoolAsync call, else 0 */
	uint32_t tid, stack_id;
	uint16_t api;
	uint8_t kind, op;
	int16_t device;
	int have_info; /* free and total memory were read right after the failure */
	int16_t info_device;
	uint64_t free_bytes, total_bytes;
	uint64_t live_bytes, live_count; /* device bytes of its device then */
	size_t sites_total;		 /* sites live on its device then (the kept ones: ct_view_oom_items) */
};
#define CT_OOM_KEEP 256 /* failures kept in detail (the first ones); later ones are counted */
/*
 * The failures of m kept in detail (the first ones), in time order; count and
 * bytes get every failure's number and requested bytes.
 */
struct ct_oom_view *ct_view_ooms(const struct ct_model *m, size_t *n, uint64_t *count,
				 uint64_t *bytes);
/* What was live on the device of failure i then, by site, largest first (the --top kept). */
struct ct_item *ct_view_oom_items(struct ct_model *m, size_t i, size_t *n);

/* ---- frag (analyses/frag.c) ------------------------------------------------------------------ */

/* The memory state of one device. */
struct ct_frag_state {
	uint64_t blocks, bytes, span, free, holes, hole; /* address space outside pools */
	uint64_t pool_used, pool_reserved;		 /* stream-ordered pools (reserved: estimate) */
	uint64_t vmm_reserved, vmm_mapped, vmm_physical;
	uint64_t device_bytes; /* device + vmm_physical (the peak's rule) */
};

struct ct_frag_view {
	int16_t device;
	int have_peak;
	uint64_t peak_ns; /* since the start */
	struct ct_frag_state at_peak, at_end;
	const struct ct_frag_state *samples; /* the state just before each sample time */
	size_t nsamples;
};
/* The devices of m, by device number. */
struct ct_frag_view *ct_view_frag(const struct ct_model *m, size_t *n);
/* Time of sample i (the same for every device) since the start of the trace. */
uint64_t ct_view_frag_time(const struct ct_model *m, size_t i);

/* A stream-ordered memory pool at the end of the trace. */
struct ct_frag_pool_view {
	uint64_t handle; /* 0: the device's default pool (cudaMallocAsync) */
	int16_t device;
	int created, destroyed;
	uint64_t allocations, trims;
	uint64_t used, reserved, peak_used; /* reserved: an estimate */
};
/* The pools of m, in order of appearance. */
struct ct_frag_pool_view *ct_view_frag_pools(const struct ct_model *m, size_t *n);

#define CT_FRAG_MAX_DEVICES 64 /* devices tracked; events of others are counted */
#define CT_FRAG_MAX_POOLS 1024 /* pools tracked; allocations from others are counted */
struct ct_frag_totals {
	uint64_t sample_ns; /* the time between samples */
	uint64_t untracked; /* events of devices or pools beyond the limits */
};
void ct_view_frag_totals(const struct ct_model *m, struct ct_frag_totals *t);
/* 1 - largest hole / free bytes, in percent, rounded (0 when nothing is free). */
unsigned ct_frag_percent(const struct ct_frag_state *s);

/* ---- streams (analyses/streams.c) ------------------------------------------------------------ */

struct ct_stream_view {
	char name[48]; /* "legacy default", "per-thread (tid N)", "0x..." */
	uint64_t handle;	  /* 0: the legacy default stream of its device */
	const char *default_kind; /* "legacy", "per_thread", NULL for a created stream */
	uint32_t tid;		  /* the per-thread default stream's thread, else 0 */
	int16_t device;
	uint64_t creates, destroys, syncs, sync_ns;
	uint64_t allocs, alloc_bytes, live, live_count, peak, peak_ns;
	uint64_t frees, free_bytes, cross_in, cross_in_bytes;
	uint64_t pending, pending_bytes; /* frees still pending at the end */
};

struct ct_streams_totals {
	uint64_t creates, destroys, syncs, sync_ns, device_syncs, device_sync_ns;
	uint64_t cross, cross_bytes, pending, pending_bytes;
	uint64_t untracked; /* events of streams beyond the limit (CT_STREAMS_MAX) */
};
#define CT_STREAMS_MAX 4096 /* streams tracked; events of later ones are counted in untracked */

/* The streams of m in the streams report's order (device, handle, thread); t gets the totals. */
struct ct_stream_view *ct_view_streams(const struct ct_model *m, struct ct_streams_totals *t,
				       size_t *n);

/* Device synchronizations of one device. */
struct ct_device_sync_view {
	int16_t device;
	uint64_t count, ns;
};
/* The devices of m that saw a device synchronization, reset or context destruction, in order of appearance. */
struct ct_device_sync_view *ct_view_device_syncs(const struct ct_model *m, size_t *n);
/*
 * By allocation site, largest first: the stream-ordered allocations freed on
 * another stream than their own (pending 0), or whose frees were still
 * pending at the end (pending 1).
 */
struct ct_item *ct_view_stream_sites(struct ct_model *m, int pending, size_t *n);

#endif
