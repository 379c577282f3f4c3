/*
 * The framework layer: what a framework's allocator hands the program
 * (format.h, "Framework events": PyTorch's caching allocator through its
 * trace tracker, CuPy's pool through the Python package's MemoryHook).
 *
 * The CUDA layer (the model's live set) holds what the device gave out: a
 * caching allocator's segments. This layer holds the blocks carved from them
 * (a tensor's or an array's memory), in a live set of its own, with sites of
 * their own kinds (CT_KIND_TORCH_BLOCK, CT_KIND_CUPY_BLOCK) in the model's
 * site table, so that growth, leaks, the gate and the exports read them as
 * they read CUDA sites. They are never CUDA memory: the device's peak, the
 * per-kind statistics and the CUDA leaks do not count them (that would count
 * the memory twice).
 *
 * PyTorch, per device, as torch.cuda.memory_stats() counts it:
 *   - allocated: bytes of the blocks handed out (free not yet requested),
 *     each block at its size in the allocator, not the size asked for: the
 *     request rounded up to 512 bytes, or the whole free block it was taken
 *     from when the allocator does not split it (a remainder under 512 bytes,
 *     or of at most 1 MiB in the large pool of a segment that is not
 *     expandable). The layer follows every segment's free blocks (segment
 *     alloc / map make one, a block's completed free makes one and joins its
 *     free neighbours of the same segment, unmap and segment free take them
 *     away) to know which; a block taken where no free block was followed
 *     (events lost, a layout this reading does not know) counts its rounded
 *     size and is counted as estimated;
 *   - reserved: bytes of the segments (segment alloc minus free, plus map
 *     minus unmap);
 *   - their peaks, when each was first reached, and each site's live blocks
 *     at the peak of allocated bytes.
 * CuPy: used bytes (the pool's mem_size of the blocks handed out) and their
 * peak; the pool's reserved bytes are the CUDA layer's.
 *
 * Held at exit: the blocks still handed out where the program's own code
 * ended: the CT_MARK_EXIT mark (the Python package's atexit handler, before
 * the interpreter's teardown frees every tensor a module still held), else
 * the end of the dump. Leaked: those of a site whose held blocks were made
 * across steps, kept from step to step (ct_model_spans_steps; a model's
 * weights or an optimizer's state, made once, are held, not leaked; without
 * step boundaries nothing is judged leaked here, growth and the CUDA layer
 * still are). Leaked blocks become the model's leak groups of their site, so
 * that every report sees them; m->leak_count and m->leak_bytes stay the CUDA
 * layer's.
 *
 * Memory: one entry per live block and per free block of the followed
 * segments, a few per device.
 */
#ifndef CT_ANALYZER_FRAMEWORK_H
#define CT_ANALYZER_FRAMEWORK_H

#include <stddef.h>
#include <stdio.h>

#include "base/json.h"
#include "model/model.h"

struct ct_mark;

/* Is ev a framework event (the model hands it to ct_fw_event, and nothing else sees it)? */
static inline int ct_fw_is_event(const struct ct_rec_event *ev)
{
	return ev->layer == CT_LAYER_FRAMEWORK;
}

/* Is kind a framework block's (never CUDA memory)? */
static inline int ct_kind_is_framework(unsigned kind)
{
	return kind == CT_KIND_TORCH_BLOCK || kind == CT_KIND_CUPY_BLOCK;
}

enum ct_fw_id {
	CT_FW_TORCH = 0,
	CT_FW_CUPY = 1,
	CT_FW_COUNT
};

/* "PyTorch", "CuPy" */
const char *ct_fw_name(int fw);

/* One framework on one device. */
struct ct_fw_dev {
	uint8_t fw; /* enum ct_fw_id */
	int16_t device;
	uint64_t allocated, peak_allocated, peak_allocated_ts;
	uint64_t reserved_at_peak_allocated;
	uint64_t reserved, peak_reserved, peak_reserved_ts;
	uint64_t allocated_at_device_peak, reserved_at_device_peak; /* at the CUDA layer's peak */
	uint64_t version; /* new peaks of allocated: the sites' snapshots (saved_*) */
	uint64_t blocks, estimated; /* blocks handed out; of them, sized without a followed free block */
	uint64_t exit_blocks, exit_bytes; /* handed out at the exit point */
	uint64_t leaked_blocks, leaked_bytes; /* of them, kept from step to step: leaked */
	uint64_t ooms;
};

#define CT_FW_OOM_SITES 8
#define CT_FW_OOMS_KEPT 16

/* A framework's out-of-memory (torch_oom): the request and the live blocks at it. */
struct ct_fw_oom {
	uint64_t ts, size, device_free, allocated, reserved;
	int16_t device;
	uint8_t fw;
	uint32_t stack_id;
	size_t nsites;
	struct {
		uint32_t site;
		uint64_t count, bytes;
	} sites[CT_FW_OOM_SITES]; /* largest live sites of its device, largest first */
};

struct ct_fw;

/* Apply one framework event to m. */
void ct_fw_event(struct ct_model *m, const struct ct_rec_event *ev);
/* A mark reached its time among the events (CT_MARK_EXIT is the exit point). */
void ct_fw_mark(struct ct_model *m, const struct ct_mark *mk);
/* The CUDA layer reached a new peak of device bytes (all devices): keep each dev's figures. */
void ct_fw_at_device_peak(struct ct_model *m);
/* End of the dump: the exit point, when the program did not mark one. */
void ct_fw_finish(struct ct_model *m);
void ct_fw_free(struct ct_fw *fw);

/* The devices of m's frameworks (in order of appearance), NULL and 0 when none. */
const struct ct_fw_dev *ct_fw_devs(const struct ct_model *m, size_t *n);
/* The framework dev of a site of a framework kind, NULL when none. */
const struct ct_fw_dev *ct_fw_dev_of_site(const struct ct_model *m, const struct ct_site *s);
/* The OOMs kept (at most CT_FW_OOMS_KEPT) and how many there were. */
const struct ct_fw_oom *ct_fw_ooms(const struct ct_model *m, size_t *kept, uint64_t *total);
/*
 * Did PyTorch run without its caching allocator (PYTORCH_NO_CUDA_MEMORY_CACHING=1, or
 * backend:cudaMallocAsync in PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF, as recorded at
 * start)? Then each of its CUDA allocations is one tensor's memory, never a cache's.
 */
int ct_fw_torch_uncached(const struct ct_model *m);
/* The setting that turned it off ("PYTORCH_NO_CUDA_MEMORY_CACHING=1", "backend:cudaMallocAsync"), NULL: on. */
const char *ct_fw_torch_uncached_setting(const struct ct_model *m);
/* Did the program mark its exit point (CT_MARK_EXIT)? */
int ct_fw_exit_marked(const struct ct_model *m);
/* A block of the layer: handed out, free requested (torch: still in use on a stream), or a
 * free block of a followed torch segment (site UINT32_MAX). */
enum ct_fw_block_state { CT_FW_BLOCK_ALLOCATED, CT_FW_BLOCK_PENDING, CT_FW_BLOCK_FREE };
struct ct_fw_block {
	uint64_t ptr, size, ts; /* ts: when handed out (free blocks: 0) */
	uint32_t site;
	uint8_t state, fw;
};
/* Every block of the layer now (at the exit point once it passed), in no order. */
void ct_fw_foreach_block(const struct ct_model *m, void (*fn)(void *ctx, const struct ct_fw_block *b),
			 void *ctx);
/* Blocks handed out / freed that the layer could not match (lost events). */
uint64_t ct_fw_unmatched(const struct ct_model *m);

/*
 * A site's live blocks at its framework dev's peak of allocated bytes (the
 * versioned snapshot); the live values when the site is not a framework's.
 */
void ct_fw_site_at_peak(const struct ct_model *m, const struct ct_site *s, uint64_t *count,
			uint64_t *bytes);

/*
 * Text summary: "  framework events: N (torch: alloc n, ...)", the events of
 * the n dumps together, then a line per framework dev; nothing when none.
 */
void ct_fw_put_summary(FILE *f, struct ct_model *const *ms, size_t n);

/* JSON summary: "framework": {"events": N, "by_api": {...}, "devices": [...]}; nothing when none. */
void ct_fw_json(struct ct_json *j, struct ct_model *const *ms, size_t n);
/* A framework dev's first keys: framework, pid, device, peak_allocated_bytes, peak_allocated_ns. */
void ct_fw_json_dev_head(struct ct_json *j, const struct ct_model *m, const struct ct_fw_dev *d);
/* The "devices" array of m alone (peak reports). */
void ct_fw_json_devs(struct ct_json *j, const struct ct_model *m);

#endif
