/*
 * The analysis model of one dump: live set, sites, statistics, peak, leaks
 * and timeline, built in one pass over the (time-ordered) events.
 *
 * Memory is proportional to live allocations + distinct sites/stacks, never
 * to the number of events.
 */
#ifndef CT_ANALYZER_MODEL_H
#define CT_ANALYZER_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/util.h"
#include "cumtrace/format.h"
#include "model/timeline.h"
#include "read/reader.h"
#include "read/symbols.h"

/* Address namespaces of the live set. */
enum ct_ns {
	CT_NS_NONE = 0,
	CT_NS_UVA = 1,	      /* device, managed, host pinned, VMM mapped */
	CT_NS_REGISTERED = 2, /* cudaHostRegister'ed user memory */
	CT_NS_PHYSICAL = 3,   /* cuMemCreate handles */
	CT_NS_RESERVED = 4,   /* cuMemAddressReserve ranges */
	CT_NS_ARRAY = 5,      /* CUDA array handles */
};

/* Kinds counted as "device bytes" for the peak: device memory, VMM physical and arrays. */
static inline int ct_kind_is_device_bytes(unsigned kind)
{
	return kind == CT_KIND_DEVICE || kind == CT_KIND_VMM_PHYSICAL || kind == CT_KIND_ARRAY ||
	       kind == CT_KIND_GRAPH;
}

/* Stream-ordered allocations (from a memory pool, on a stream). */
static inline int ct_api_is_stream_ordered(unsigned api)
{
	switch (api) {
	case CT_API_cudaMallocAsync:
	case CT_API_cudaMallocAsync_ptsz:
	case CT_API_cudaMallocFromPoolAsync:
	case CT_API_cudaMallocFromPoolAsync_ptsz:
	case CT_API_cuMemAllocAsync:
	case CT_API_cuMemAllocAsync_ptsz:
	case CT_API_cuMemAllocFromPoolAsync:
	case CT_API_cuMemAllocFromPoolAsync_ptsz:
		return 1;
	default:
		return 0;
	}
}

/*
 * Where allocations come from: (stack, api, kind, device). 88 bytes, one per
 * distinct stack of a dump at least: counts of live blocks are 32-bit (the
 * live set holds fewer than 2^32 blocks, model.c).
 */
struct ct_site {
	uint32_t stack_id;
	uint32_t kd; /* index of its (kind, device) stats */
	/* device-bytes sites: index of their device's ct_dev_peak (CT_IMAP_NONE otherwise) */
	uint32_t dp;
	uint16_t api;
	int16_t device;
	uint8_t kind;
	uint32_t live_count;
	/* live_count at the last peak of all devices and at the last peak of its own device */
	uint32_t saved_count, dsaved_count;
	uint64_t live_bytes;
	uint64_t allocs, bytes_allocated;
	/* versioned snapshot of the values at the last peak, and at its device's last peak
	 * (device-bytes sites) */
	uint64_t saved_version, saved_bytes;
	uint64_t dsaved_version, dsaved_bytes;
};

/*
 * Device bytes (ct_kind_is_device_bytes) of one device: live now, and the
 * first moment they reached their maximum. version counts new peaks.
 */
struct ct_dev_peak {
	int16_t device;
	int seen;
	uint64_t live, peak_bytes, peak_ts, version;
};

/* A leak group: allocations of one site that died unfreed for one reason. */
struct ct_leak {
	uint32_t stack_id;
	uint16_t api;
	uint8_t kind;
	int16_t device;
	uint16_t reason_api; /* API of the checkpoint; CT_API_none = live at exit */
	uint8_t reason_op;   /* CT_OP_DEVICE_RESET, CT_OP_CTX_DESTROY, or 0 (exit) */
	uint8_t kept;	     /* judged at the exit point: kept from step to step (model.c) */
	uint64_t count, bytes;
	uint64_t first_ts; /* earliest allocation */
	/*
	 * Address space, never memory (issue 19): the mappings of this group's VMM
	 * allocations still live with them (cuMemMap of a live handle), and the
	 * reservations holding its mappings (cuMemAddressReserve): attributes of the
	 * allocation, not leaks of their own.
	 */
	uint64_t va_mapped, va_mapped_bytes, va_reserved, va_reserved_bytes;
};

/*
 * Imported and shared memory and multicast objects (issue 19 §4): another
 * process's memory mapped here (kind imported) and multicast objects are
 * listed, never counted as this process's allocations in leaks or the peak.
 */
struct ct_imports {
	uint64_t imports;		/* IPC opens, pool pointer imports, shareable handle imports */
	uint64_t maps, bytes;		/* mappings of imported handles; bytes mapped in (IPC, pool, maps) */
	uint64_t releases;		/* imported memory released: closed, freed, released, unmapped */
	uint64_t live_at_exit, live_bytes_at_exit;
	uint64_t exports, exported_bytes; /* exports of this process's memory (an attribute) */
	uint64_t retains, retain_releases;
	uint64_t self_imports;		/* imports of a handle of this process's own: a reference */
	uint64_t mc_created, mc_bytes, mc_released, mc_live_at_exit;
	uint64_t mc_devices, mc_binds, mc_bind_bytes, mc_unbinds;
};

/* 1 when the dump had any event of imported or shared memory or multicast. */
static inline int ct_imports_any(const struct ct_imports *i)
{
	return i->imports || i->exports || i->retains || i->mc_created || i->mc_binds || i->mc_devices ||
	       i->mc_unbinds;
}

struct ct_api_stats {
	uint64_t calls, failures, bytes, time_ns;
};

struct ct_kd_stats {
	uint8_t kind;
	int16_t device;
	uint64_t allocations, frees, bytes_allocated;
	uint64_t live_count, live_bytes, peak_bytes;
};

/*
 * A live block. ts: when it became live; site: index into ct_model.sites;
 * ns: enum ct_ns (never 0 for a live block).
 */
struct ct_block {
	uint64_t ptr, size, ts, stream;
	uint32_t tid;
	uint32_t site : 29; /* at most CT_MODEL_MAX_SITES */
	uint32_t ns : 3;
};

/* 40 bytes a live block (the namespace shares the site's word): sites stay below 2^29. */
#define CT_MODEL_MAX_SITES (1u << 29)

/* Why a block stops being live (struct ct_observer.release). */
enum ct_end {
	CT_END_FREE = 0,       /* freed (free, unmap, phys_release, va_free) */
	CT_END_UNSEEN = 1,     /* its address was allocated again: the free was not seen */
	CT_END_CHECKPOINT = 2, /* cudaDeviceReset / context destroy with the block live */
};

struct ct_mark;
struct ct_model;

/*
 * An analysis riding on the model's one pass (OOM, fragmentation, streams,
 * exports, ...). The model calls every observer in the order they were added;
 * any callback may be NULL. Blocks and events are valid only during a call.
 */
struct ct_observer {
	void *ctx;
	/* a block became live (the model has counted it: sites, peak, stats) */
	void (*alloc)(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
		      const struct ct_block *b);
	/* a block stops being live (the model has not removed it yet); how: enum ct_end */
	void (*release)(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			const struct ct_block *b, int how);
	/* every event, after the model applied it (failed calls included) */
	void (*event)(void *ctx, struct ct_model *m, const struct ct_rec_event *ev);
	/* a mark or NVTX range boundary, in time order among the events */
	void (*mark)(void *ctx, struct ct_model *m, const struct ct_mark *mk);
	/* a CT_REC_MEMINFO, in file order: before or after its failed event */
	void (*meminfo)(void *ctx, struct ct_model *m, const struct ct_rec_meminfo *mi);
	/* a framework block (framework.h) handed out, or no longer (free requested); b->site is
	 * its framework site, b->ns 0: the CUDA layer's callbacks above never see these */
	void (*fw_alloc)(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			 const struct ct_block *b);
	void (*fw_release)(void *ctx, struct ct_model *m, const struct ct_rec_event *ev,
			   const struct ct_block *b, int how);
	/* a framework event the layer applied (framework.h; not those after the exit point) */
	void (*fw_event)(void *ctx, struct ct_model *m, const struct ct_rec_event *ev);
	/* a framework dev's bytes changed (framework.h): kind CT_KIND_TORCH_BLOCK = PyTorch's
	 * allocated, CT_KIND_TORCH_SEGMENT = its reserved, CT_KIND_CUPY_BLOCK = CuPy's used */
	void (*fw_bytes)(void *ctx, struct ct_model *m, uint64_t ts, uint8_t kind, int16_t device,
			 uint64_t bytes);
	/* end of the dump, before the blocks still live become "live at exit" leaks */
	void (*finish)(void *ctx, struct ct_model *m);
	/* free ctx (ct_model_free) */
	void (*destroy)(void *ctx);
};

#define CT_MODEL_MAX_OBSERVERS 16

struct ct_report_opts;

/*
 * An analysis: state of its own that rides on the model's one pass (peak
 * phases, OOM, fragmentation, streams, growth, exports). Defined once, in its
 * own file, as a const struct ct_analysis (analyses/analyses.h lists them); a
 * report names the analyses it reads (struct ct_report). The model keeps each
 * one's state under the analysis's address and hands it back to whoever asks
 * with it (ct_model_state): the model never names its analyses. What an
 * analysis shows renderers is its views (render/views.h), computed from that
 * state.
 */
struct ct_analysis {
	const char *name;
	/* a new state for m, before its dump is read; o: the command's options */
	void *(*attach)(struct ct_model *m, const struct ct_report_opts *o);
	/* the callbacks of the one pass, finish and destroy among them (ctx: the state) */
	struct ct_observer observe;
};

struct ct_retired;
struct ct_fw;

/*
 * Steps inferred from the allocation stream, for a program that marks none:
 * each allocation of one site (the clock) is a step boundary. The clock is
 * chosen after a first reading (ct_model_infer_clock): of the sites that
 * allocated at least CT_INFER_MIN times, the allocation count most of them
 * share (a loop's iterations: each of its sites allocates once per
 * iteration), shared by at least two sites, and of those the site seen
 * first. The dump is then read again with it (commands/main.c).
 */
#define CT_INFER_MIN 4
#define CT_STEP_INFERRED 3 /* the source of an inferred boundary (never in a dump) */
struct ct_infer {
	int on;
	uint32_t stack_id;
	uint16_t api;
	uint8_t kind;
	int16_t device;
	uint64_t period;     /* the clock's allocation count in the first reading */
	uint32_t site;	     /* the clock's site in this reading, UINT32_MAX until seen */
	uint64_t boundaries; /* inferred boundaries made */
};

/* Sites remembered by ct_model_site: allocations in a loop repeat a few. */
#define CT_SITE_CACHE_BITS 6
#define CT_SITE_CACHE (1u << CT_SITE_CACHE_BITS)

struct ct_model {
	/* process */
	int have_process;
	uint32_t pid, ppid, forked;
	uint64_t start_realtime_ns, start_monotonic_ns;
	char *version, *host, *exe, *cwd, *output;
	char **argv;
	size_t argc, argv_cap;
	char *launch[CT_LAUNCH_COUNT]; /* "env.NAME" values (enum ct_launch_env), NULL unset */

	/* what the reader said */
	struct ct_read_result read;
	char *path;

	/* counters */
	uint64_t events, allocations, frees, failed_calls;
	uint64_t unmatched_frees, double_allocs, null_allocs;
	uint64_t dropped;	 /* sum of CT_REC_DROPS */
	uint64_t dropped_signal; /* the part of it made inside signal handlers (CT_DROPS_F_SIGNAL) */
	uint64_t dropped_records; /* marks, counters, samples not recorded (CT_DROPS_F_RECORDS) */
	uint64_t marks, modules;
	/* cumtrace_bench_pause (CT_MARK_PAUSE, not counted in marks): pauses, the time they
	 * held (one still open at the end runs to the last record), the open one's start */
	uint64_t pauses, paused_ns, paused_since;
	int end_seen;
	/* the program's exit point (CT_MARK_EXIT) and the sites whose blocks live there were kept
	 * from step to step (a bit per site: leaked there) */
	int exit_seen;
	uint64_t exit_ts;
	uint8_t *exit_kept;
	size_t exit_nsites;
	/* step boundaries (CT_MARK_STEP) in time order: [0] explicit, [1] optimizer, [2] inferred */
	uint64_t *step_ts[3];
	size_t nstep[3], capstep[3];
	/* steps inferred from the allocation stream (set before the dump is read: ct_model_infer) */
	struct ct_infer infer;
	uint64_t end_ts, end_events, end_dropped, end_stacks;
	int have_ts;
	uint64_t first_ts, last_ts;

	struct ct_api_stats api[CT_API_COUNT + 1]; /* [CT_API_COUNT]: unknown ids */
	/* framework events and their layer (framework.h): never CUDA memory */
	uint64_t fw_events, fw_api[CT_API_COUNT + 1];
	struct ct_fw *fw;			 /* NULL until the first framework event or mark */
	uint64_t fw_leak_count, fw_leak_bytes; /* framework blocks leaked at the exit point */
	struct ct_kd_stats kind_total[CT_KIND_COUNT];
	struct ct_kd_stats *kd;
	size_t nkd, capkd;
	struct ct_imap kdmap;

	/* live set: open addressing keyed by (namespace, ptr) */
	struct ct_block *live;
	void *retired; /* recently retired blocks, model.c */
	size_t live_mask, live_count;
	unsigned live_shift; /* 64 - log2(live_mask + 1) */

	struct ct_site *sites;
	size_t nsites, capsites;
	struct ct_imap sitemap;
	/* the sites last looked up, by hash: index + 1, 0 = none (ct_model_site) */
	uint32_t site_cache[CT_SITE_CACHE];

	/* peak of device bytes (ct_kind_is_device_bytes), all devices together */
	uint64_t dev_live, peak_bytes, peak_ts, peak_version;
	int peak_seen;
	/* the same per device (sorted by nothing: in order of appearance) */
	struct ct_dev_peak *dpeaks;
	size_t ndpeaks, capdpeaks;
	struct ct_imap dpmap;
	uint64_t meminfos; /* CT_REC_MEMINFO records */

	struct ct_leak *leaks;
	size_t nleaks, capleaks;
	struct ct_imap leakmap;
	uint64_t leak_count, leak_bytes;
	uint64_t reset_leak_count, reset_leak_bytes;
	/*
	 * Address space still reserved or mapped at the end that no leaked
	 * allocation holds (a reservation with nothing of it mapped, a mapping
	 * inside no reservation...: never memory, never a leak), and the
	 * mappings' allocation handles (ptr -> handle, the latest map of each
	 * address) that tie a mapping to its cuMemCreate allocation.
	 */
	uint64_t va_only_reserved, va_only_reserved_bytes, va_only_mapped, va_only_mapped_bytes;
	struct ct_maph {
		uint64_t ptr, handle;
	} *maph;
	size_t nmaph, capmaph;
	struct ct_imap maphmap;

	/*
	 * ---- CUDA graphs (issue 19 §2) ----
	 * The memory nodes of each graph and of each exec made from one (owner:
	 * the handle; an exec's are a copy taken at instantiation), the execs'
	 * instantiate flags, and per device what the graph pool holds: live =
	 * bytes of graph allocations live now, reserved = what the pool keeps
	 * (>= live, until cudaDeviceGraphMemTrim), its high mark.
	 */
	struct ct_gnode {
		uint64_t owner, ptr, size;
		uint32_t stack_id, tid;
		uint16_t api;
		int16_t device;
		uint8_t is_free, in_exec;
	} *gnodes;
	size_t ngnodes, capgnodes;
	struct ct_gexec {
		uint64_t exec, flags;
	} *gexecs;
	size_t ngexecs, capgexecs;
	struct ct_gpool {
		int16_t device;
		uint64_t live, reserved, reserved_high;
	} *gpools;
	size_t ngpools, capgpools;
	uint64_t graph_launches, graph_commits;

	/*
	 * ---- the memory no allocation call shows (issue 19 §6) ----
	 * CT_REC_MEMSAMPLE records in time order, each with what the events had
	 * made live on its device when it was taken (filled as the events pass
	 * its time: done).
	 */
	struct ct_sample {
		struct ct_rec_memsample s;
		uint64_t allocations; /* device bytes (ct_kind_is_device_bytes) live on the device */
		uint64_t graph_live;  /* of which graph allocations */
		int done;
	} *samples;
	size_t nsamples, capsamples, nsamples_done;
	/* ---- imported and shared memory, multicast (issue 19 §4): model.c, "imports" ---- */
	struct ct_imports imp;
	/* extra references on allocation handles (cuMemRetainAllocationHandle, an import of a
	 * handle of this process's own): the next cuMemRelease of the handle drops one */
	struct ct_href {
		uint64_t handle;
		uint64_t count;
	} *hrefs;
	size_t nhrefs, caphrefs;
	struct ct_imap hrefmap;
	/* NCCL's communicators and their memory (issue 19 §5; nccl.h): NULL without NCCL events */
	struct ct_nccl *nccl;

	struct ct_timeline tl;
	struct ct_symtab *syms;
	struct ct_pytab *py;	   /* Python frames (pystack.h) */
	struct ct_marklist *marks_list; /* marks in file order (marks.h) */
	struct ct_markq *markq;		/* marks waiting for their time among the events */
	int finished;
	/* what the renderers label this dump's sites with (render.c: ct_site_label), built from the
	 * finished model on first use; freed with the model by labels_free */
	void *labels;
	void (*labels_free)(void *labels);

	struct ct_observer obs[CT_MODEL_MAX_OBSERVERS];
	size_t nobs;
	/* the analysis each observer serves (NULL: added with ct_model_observe) */
	const struct ct_analysis *analysis[CT_MODEL_MAX_OBSERVERS];
};

void ct_model_init(struct ct_model *m);
void ct_model_free(struct ct_model *m);

/* Add an observer (before the dump is read). Exits (2) past CT_MODEL_MAX_OBSERVERS. */
void ct_model_observe(struct ct_model *m, const struct ct_observer *o);
/*
 * Attach analysis a to m (before the dump is read), once: a second call
 * returns the state of the first. Returns a's state.
 */
void *ct_model_attach(struct ct_model *m, const struct ct_analysis *a, const struct ct_report_opts *o);
/* The state of analysis a on m, NULL when a was not attached. */
void *ct_model_state(const struct ct_model *m, const struct ct_analysis *a);
/* Call fn for every live block, in no particular order; fn must not change the model. */
void ct_model_foreach_live(const struct ct_model *m,
			   void (*fn)(void *ctx, const struct ct_model *m, const struct ct_block *b),
			   void *ctx);

/* Reader callbacks feeding the model. */
void ct_model_callbacks(struct ct_model *m, struct ct_reader_cb *cb);
/* Feed one event directly (tests); events must come in time order. */
void ct_model_event(struct ct_model *m, const struct ct_rec_event *ev);
/* End of dump: everything still live becomes a "live at exit" leak. */
void ct_model_finish(struct ct_model *m);

/*
 * Read and analyze a dump file: the result is in m->read (status, error).
 * Calls ct_model_finish unless the dump is unreadable.
 */
int ct_model_load(struct ct_model *m, const char *path, const struct ct_read_opts *opts);
/* The same for a dump in memory (tests). */
int ct_model_load_mem(struct ct_model *m, const void *data, size_t len,
		      const struct ct_read_opts *opts);

/*
 * 1 when a dump read whole holds its header (the file header and at most the
 * process record) and nothing else: the shim started, then the process died
 * before its writer's first round (killed at once). Its reports are empty, not
 * clean; they say so (render.h: ct_put_notes, main.c). A truncated dump is not
 * header-only: its own warning says what was read.
 */
int ct_model_header_only(const struct ct_model *m);
/* Why a dump holds only its header, as its notes say it. */
#define CT_HEADER_ONLY_WHY "the process wrote no events (killed before its first writer round?)"

/* Start of the trace: the process start if known and not after the first event. */
uint64_t ct_model_start_ns(const struct ct_model *m);
uint64_t ct_model_duration_ns(const struct ct_model *m);
/* ts in nanoseconds since the start of the trace (0 for times before it). */
uint64_t ct_model_since_start(const struct ct_model *m, uint64_t ts);

/* A site's count and bytes at the last peak (the versioned snapshot). */
void ct_site_at_peak(const struct ct_model *m, const struct ct_site *s, uint64_t *count,
		     uint64_t *bytes);

/* A site's count and bytes at the last peak of its own device (device-bytes sites). */
void ct_site_at_dev_peak(const struct ct_model *m, const struct ct_site *s, uint64_t *count,
			 uint64_t *bytes);
/* The peak record of device, NULL when it never had device bytes. */
const struct ct_dev_peak *ct_model_dev_peak(const struct ct_model *m, int device);

/*
 * Were blocks made at first_ts and at last_ts made in different steps, with at
 * least one whole step between them (two boundaries in (first_ts, last_ts])?
 * The boundaries are the explicit steps when there are CT_EXIT_STEPS_MIN of
 * them, else the optimizer's, else the inferred ones; 0 with fewer than CT_EXIT_STEPS_MIN.
 */
#define CT_EXIT_STEPS_MIN 3
int ct_model_spans_steps(const struct ct_model *m, uint64_t first_ts, uint64_t last_ts);
/* Those boundaries (times, in order) and how many (*n 0 and NULL with fewer than
 * CT_EXIT_STEPS_MIN); *source, when not NULL: 0 explicit, 1 optimizer, 2 inferred. */
const uint64_t *ct_model_step_series(const struct ct_model *m, size_t *n, int *source);
/* Sites whose blocks held now were made across steps (ct_model_spans_steps): add each held
 * block's (site, ts), then ct_spans_kept frees sp and returns a bitmap by site (free it). */
struct ct_spans;
struct ct_spans *ct_spans_new(size_t nsites);
void ct_spans_add(struct ct_spans *sp, uint32_t site, uint64_t ts);
uint8_t *ct_spans_kept(const struct ct_model *m, struct ct_spans *sp);
/*
 * After a reading of a dump without step boundaries (no step marks, NVTX
 * ranges or instants), of a Python program (an exit point or framework
 * events): the clock for inferred steps into out (out->on set); 0 when the
 * allocations show no period.
 */
int ct_model_infer_clock(const struct ct_model *m, struct ct_infer *out);
/* Read the dump with inferred steps (before ct_model_load): clock from ct_model_infer_clock. */
void ct_model_infer(struct ct_model *m, const struct ct_infer *clock);
/* An allocation of site si at ts: a step boundary before it when si is the inferred clock. */
void ct_model_clock(struct ct_model *m, uint32_t si, uint64_t ts);
/* The site (stack, api, kind, device), made when new. */
uint32_t ct_model_site(struct ct_model *m, uint32_t stack_id, uint16_t api, uint8_t kind,
		       int16_t device);
/* The framework layer: a block leaked at the exit point (a leak group of its site, counted
 * in fw_leak_*), and its blocks handed to the observers' fw_alloc / fw_release. */
void ct_model_fw_leak(struct ct_model *m, uint32_t site, uint64_t size, uint64_t ts);
void ct_model_notify_fw(struct ct_model *m, const struct ct_rec_event *ev, const struct ct_block *b,
			int alloc);

/* Reason text of a leak group: "live at exit", "live at cudaDeviceReset", ... */
const char *ct_leak_reason(const struct ct_leak *l, char *buf, size_t cap);

/* Add src to dst (totals over dumps): bytes and times saturate (util.h). */
void ct_api_stats_add(struct ct_api_stats *dst, const struct ct_api_stats *src);
void ct_kd_stats_add(struct ct_kd_stats *dst, const struct ct_kd_stats *src);

/* Stats of (kind, device), NULL if none. */
const struct ct_kd_stats *ct_model_kd(const struct ct_model *m, unsigned kind, int device);

/*
 * Device memory at a sample, reconciled (issue 19 §6): in_use = total - free
 * = allocations + pool_reserve + graph_reserve + other, where pool_reserve is
 * what the sampled stream-ordered pools keep beyond their live allocations,
 * graph_reserve what the graph pool keeps beyond live graph allocations, and
 * other (signed) the rest: contexts, the driver, other processes.
 */
struct ct_reconcile {
	const struct ct_sample *at;
	uint64_t in_use, allocations, pool_reserve, graph_reserve;
	int64_t other;
};
/* The sample of the highest in_use (of device, -1 any), the last one (last = 1); 0 when none. */
int ct_model_reconcile(const struct ct_model *m, int device, int last, struct ct_reconcile *out);

/* The graph pool of device (issue 19 §2), NULL when no graph memory was committed there. */
const struct ct_gpool *ct_model_gpool(const struct ct_model *m, int device);
/*
 * The last device memory sample of device that read the graph memory
 * attributes (issue 19 §6), NULL when none: the device's own figures for the
 * graph pool, which keeps memory in chunks larger than the allocations (on
 * the H200, 32 MiB stayed reserved after a trim around one 16 MiB allocation).
 */
const struct ct_rec_memsample *ct_model_graph_sample(const struct ct_model *m, int device);

/* Live-set queries (tests). */
size_t ct_model_live_count(const struct ct_model *m);
int ct_model_is_live(const struct ct_model *m, unsigned kind, uint64_t ptr, uint64_t *size);

/* The namespace of kind (0 for invalid kinds). */
unsigned ct_kind_ns(unsigned kind);

#endif
