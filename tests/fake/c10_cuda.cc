/*
 * A stand-in for PyTorch's libc10_cuda.so: the object behind the exported
 * data symbol c10::cuda::CUDACachingAllocator::allocator, with the class
 * layout of a chosen torch version, and a small caching allocator that calls
 * the attached trace trackers the way torch's does (tests/e2e/t_torch_tracker.sh,
 * driven from Python through ctypes by tests/e2e/torch_fake.py).
 *
 * Faithful where the shim depends on it:
 *   - the classes transcribe each version's virtual functions in declaration
 *     order (Allocator, DeviceAllocator from 2.9 on, CUDAAllocator; the
 *     native allocator adds none), so the compiler lays out the vtable;
 *     name() returns a std::string and attachAllocatorTraceTracker takes a
 *     std::function<void(const TraceEntry&)> by value, as in torch;
 *   - TraceEntry transcribes each version's members (std::string,
 *     std::shared_ptr and all), so the compiler lays it out; both are checked
 *     against preload/hooks/torchoffsets.h when the library loads (it aborts on a
 *     difference: the row or the transcription is wrong);
 *   - init(device_count) makes one allocator per device, each with a
 *     recursive mutex held around its work, cudaMalloc and tracker calls
 *     included; attach copies the tracker into every device allocator that
 *     exists (none before init: such a tracker is dropped, as in torch);
 *   - the cudaMallocAsync backend's name() is "cudaMallocAsync" and its
 *     attach throws (torch: a c10::Error, the process aborts).
 *
 * Knobs (read when the library loads):
 *   CUMTRACE_FAKE_TORCH_LAYOUT  2.11 (default), 2.10, 2.8 or 2.3
 *   PYTORCH_CUDA_ALLOC_CONF     "expandable_segments:True" (segments are
 *                               cuMemCreate + cuMemMap ranges of one reserved
 *                               range per device, got through
 *                               cudaGetDriverEntryPointByVersion) and
 *                               "backend:cudaMallocAsync", as in torch
 *
 * The caching policy is torch's (CUDACachingAllocator.cpp), less what the
 * tests do not reach: sizes round up to 512 bytes; requests of up to 1 MiB
 * take the best-fitting free block of the 2 MiB segments of their stream and
 * pool, larger ones of the large segments (20 MiB for requests under 10 MiB,
 * else the request rounded up to 2 MiB); a block is split when the rest is at
 * least 512 bytes (small pool, expandable segments) or over 1 MiB (large
 * pool), else handed out whole; a completed free joins the free neighbours of
 * its segment. Expandable segments are one mapped range per segment, with a
 * gap between ranges (torch grows one range instead). allocated and reserved
 * bytes and their peaks are counted as torch.cuda.memory_stats() counts them
 * (fake_torch_stats). Frees complete at once, or at the next allocator call
 * on any thread after fake_torch_free_deferred (torch: a block still in use
 * on another stream, completed by process_events). Every event made is also
 * kept in a log that the test compares with the dump.
 */
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "torchoffsets.h"

#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#define FAKE_EXPORT __attribute__((visibility("default")))
#pragma GCC diagnostic ignored "-Wunused-parameter"

using MempoolId_t = std::pair<unsigned long long, unsigned long long>;

/* ---- what the fake reported: the test's ground truth ---- */

struct fake_torch_event {
	int32_t action, device;
	uint64_t addr, size, stream, pool0, pool1;
	uint32_t tid, reserved;
};

static std::mutex log_mutex;
static std::vector<fake_torch_event> event_log;

/* One event, as the engine hands it to the version's tracker call. */
struct Event {
	int action, device;
	uint64_t addr, size;
	void *stream;
	MempoolId_t pool;
};

/* ---- the versions' classes ---- */

struct DataPtr {};
struct Stream {};
struct CUDAStream {};
struct GatheredContext {};
union trace_time_ {
	int64_t t_;
	uint64_t approx_t_;
};
/* c10::Allocator, the same in 2.3 .. 2.11 (is_simple_data_ptr since 2.2) */
struct Allocator {
	virtual ~Allocator() = default;
	virtual DataPtr allocate(size_t n) { return {}; }
	virtual bool is_simple_data_ptr(const DataPtr &p) const { return true; }
	virtual void *raw_deleter() const { return nullptr; }
	virtual void copy_data(void *dest, const void *src, size_t count) const {}
};

enum Action { ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, SEGMENT_MAP, SEGMENT_UNMAP, SNAPSHOT, OOM };

/* The first three virtual functions of CUDAAllocator, in every version here. */
#define CUDA_ALLOCATOR_HEAD                                                                   \
	virtual void *raw_alloc(size_t nbytes) { return nullptr; }                            \
	virtual void *raw_alloc_with_stream(size_t nbytes, void *stream) { return nullptr; }  \
	virtual void raw_delete(void *ptr) {}
/* Its last six (2.2 .. 2.11): the attach is always the sixth from the end, name() the last. */
#define CUDA_ALLOCATOR_TAIL(DeviceIndex)                                                      \
	virtual void attachAllocatorTraceTracker(Tracker tracker) = 0;                        \
	virtual void enablePeerAccess(DeviceIndex dev, DeviceIndex dev_to_access) {}          \
	virtual int memcpyAsync(void *dst, int dstDevice, const void *src, int srcDevice,     \
				size_t count, void *stream, bool p2p)                         \
	{                                                                                     \
		return 0;                                                                     \
	}                                                                                     \
	virtual std::shared_ptr<void> getCheckpointState(DeviceIndex device, MempoolId_t id)  \
	{                                                                                     \
		return nullptr;                                                               \
	}                                                                                     \
	virtual int setCheckpointPoolState(DeviceIndex device, std::shared_ptr<void> pps)     \
	{                                                                                     \
		return 0;                                                                     \
	}                                                                                     \
	virtual std::string name() = 0;

/* TraceEntry of 2.8 and 2.9 (c10/cuda/CUDACachingAllocator.h) */
struct v28TraceEntry {
	int action_; /* enum Action */
	int8_t device_; /* c10::DeviceIndex */
	size_t addr_;
	std::shared_ptr<GatheredContext> context_;
	void *stream_{};
	size_t size_;
	MempoolId_t mempool_;
	trace_time_ time_{};
	std::string compile_context_;
};

/* 2.11 (and 2.10: the same virtual functions and TraceEntry members) */
namespace v211 {
/* 2.10 added user_metadata_ after 2.8's members (2.11: c10/core/CachingDeviceAllocator.h) */
struct TraceEntry : v28TraceEntry {
	std::string user_metadata_;
};
using Tracker = std::function<void(const TraceEntry &)>;

struct DeviceAllocator : ::Allocator {
	virtual bool initialized() = 0;
	virtual void emptyCache(MempoolId_t id = {0, 0}) {}
	virtual void recordStream(const DataPtr &p, Stream s) {}
	virtual int getDeviceStats(int8_t device) { return 0; }
	virtual void resetAccumulatedStats(int8_t device) {}
	virtual void resetPeakStats(int8_t device) {}
	virtual std::pair<size_t, size_t> getMemoryInfo(int8_t device) { return {0, 0}; }
};
struct CUDAAllocator : DeviceAllocator {
	CUDA_ALLOCATOR_HEAD
	virtual void init(int device_count) = 0;
	virtual double getMemoryFraction(int8_t device) { return 1; }
	virtual void setMemoryFraction(double fraction, int8_t device) {}
	virtual std::vector<int> getExpandableSegmentSizes(int8_t device) { return {}; }
	virtual void enable(bool value) {}
	virtual bool isEnabled() const { return true; }
	virtual void cacheInfo(int8_t device, size_t *largestBlock) {}
	virtual void *getBaseAllocation(void *ptr, size_t *size) { return nullptr; }
	virtual void recordStream(const DataPtr &ptr, CUDAStream stream) {}
	void recordStream(const DataPtr &ptr, Stream stream) override {}
	virtual int snapshot(MempoolId_t id = {0, 0}, bool include_traces = true) { return 0; }
	virtual void beginAllocateToPool(int8_t device, MempoolId_t id, std::function<bool(void *)> f) {}
	virtual void endAllocateToPool(int8_t device, MempoolId_t id) {}
	virtual void releasePool(int8_t device, MempoolId_t id) {}
	virtual int getPoolUseCount(int8_t device, MempoolId_t id) { return 0; }
	virtual void createOrIncrefPool(int8_t device, MempoolId_t id, std::shared_ptr<CUDAAllocator> a = nullptr) {}
	virtual void setUseOnOOM(int8_t device, MempoolId_t id, bool use) {}
	virtual void setNoSplit(int8_t device, MempoolId_t id) {}
	virtual bool checkPoolLiveAllocations(int8_t device, MempoolId_t id, const void *expected) { return true; }
	virtual int shareIpcHandle(void *ptr) { return 0; }
	virtual std::shared_ptr<void> getIpcDevPtr(std::string handle) { return nullptr; }
	virtual bool isHistoryEnabled() { return false; }
	virtual void recordHistory(bool enabled, void *recorder, size_t max, int when, bool clear, const void *skip) {}
	virtual void recordAnnotation(const void *md) {}
	virtual void pushCompileContext(std::string &md) {}
	virtual void popCompileContext() {}
	virtual void setUserMetadata(const std::string &metadata) {}
	virtual std::string getUserMetadata() { return ""; }
	virtual void attachOutOfMemoryObserver(std::function<void(int64_t, size_t, size_t, size_t)> o) {}
	CUDA_ALLOCATOR_TAIL(int8_t)
	std::pair<size_t, size_t> getMemoryInfo(int8_t device) override { return {0, 0}; }
};
} // namespace v211

/* 2.8: CUDAAllocator derives from Allocator; TraceEntry has no user_metadata_ */
namespace v28 {
using TraceEntry = v28TraceEntry;
using Tracker = std::function<void(const TraceEntry &)>;

struct CUDAAllocator : ::Allocator {
	CUDA_ALLOCATOR_HEAD
	virtual void init(int device_count) = 0;
	virtual bool initialized() = 0;
	virtual double getMemoryFraction(int8_t device) { return 1; }
	virtual void setMemoryFraction(double fraction, int8_t device) {}
	virtual void emptyCache(MempoolId_t id = {0, 0}) {}
	virtual void enable(bool value) {}
	virtual bool isEnabled() const { return true; }
	virtual void cacheInfo(int8_t device, size_t *largestBlock) {}
	virtual void *getBaseAllocation(void *ptr, size_t *size) { return nullptr; }
	virtual void recordStream(const DataPtr &ptr, CUDAStream stream) {}
	virtual int getDeviceStats(int8_t device) { return 0; }
	virtual void resetAccumulatedStats(int8_t device) {}
	virtual void resetPeakStats(int8_t device) {}
	virtual int snapshot(MempoolId_t id = {0, 0}) { return 0; }
	virtual void beginAllocateToPool(int8_t device, MempoolId_t id, std::function<bool(void *)> f) {}
	virtual void endAllocateToPool(int8_t device, MempoolId_t id) {}
	virtual void releasePool(int8_t device, MempoolId_t id) {}
	virtual int getPoolUseCount(int8_t device, MempoolId_t id) { return 0; }
	virtual void createOrIncrefPool(int8_t device, MempoolId_t id, CUDAAllocator *a = nullptr) {}
	virtual void setUseOnOOM(int8_t device, MempoolId_t id) {}
	virtual bool checkPoolLiveAllocations(int8_t device, MempoolId_t id, const void *expected) { return true; }
	virtual int shareIpcHandle(void *ptr) { return 0; }
	virtual std::shared_ptr<void> getIpcDevPtr(std::string handle) { return nullptr; }
	virtual bool isHistoryEnabled() { return false; }
	virtual void recordHistory(bool enabled, void *recorder, size_t max, int when) {}
	virtual void recordAnnotation(const void *md) {}
	virtual void pushCompileContext(std::string &md) {}
	virtual void popCompileContext() {}
	virtual void attachOutOfMemoryObserver(std::function<void(int64_t, size_t, size_t, size_t)> o) {}
	CUDA_ALLOCATOR_TAIL(int8_t)
};
} // namespace v28

/* 2.3: no pool id in TraceEntry, fewer virtual functions */
namespace v23 {
struct TraceEntry {
	int action_;
	int8_t device_;
	int64_t addr_;
	std::shared_ptr<GatheredContext> context_;
	void *stream_{};
	int64_t size_;
	trace_time_ time_{};
};
using Tracker = std::function<void(const TraceEntry &)>;

struct CUDAAllocator : ::Allocator {
	CUDA_ALLOCATOR_HEAD
	virtual void init(int device_count) = 0;
	virtual bool initialized() = 0;
	virtual void setMemoryFraction(double fraction, int device) {}
	virtual void emptyCache() {}
	virtual void cacheInfo(int device, size_t *largestBlock) {}
	virtual void *getBaseAllocation(void *ptr, size_t *size) { return nullptr; }
	virtual void recordStream(const DataPtr &ptr, CUDAStream stream) {}
	virtual int getDeviceStats(int device) { return 0; }
	virtual void resetAccumulatedStats(int device) {}
	virtual void resetPeakStats(int device) {}
	virtual int snapshot() { return 0; }
	virtual void beginAllocateToPool(int device, MempoolId_t id, std::function<bool(void *)> f) {}
	virtual void endAllocateToPool(int device, MempoolId_t id) {}
	virtual void releasePool(int device, MempoolId_t id) {}
	virtual bool checkPoolLiveAllocations(int device, MempoolId_t id, const void *expected) { return true; }
	virtual std::shared_ptr<void> getIpcDevPtr(std::string handle) { return nullptr; }
	virtual bool isHistoryEnabled() { return false; }
	virtual void recordHistory(bool enabled, void *recorder, size_t max, int when) {}
	virtual void attachOutOfMemoryObserver(std::function<void(int64_t, size_t, size_t, size_t)> o) {}
	CUDA_ALLOCATOR_TAIL(int)
};
} // namespace v23

/* ---- the caching engine (version-independent) ---- */

/* torch's kSmallSize, kSmallBuffer, kMinLargeAlloc, kLargeBuffer, kRoundLarge */
static const size_t kSmall = 1 << 20, kSmallSegment = 2 << 20, kMinLargeAlloc = 10 << 20,
		    kLargeBuffer = 20 << 20, kGranule = 2 << 20;
static bool expandable, async_backend;

typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
static reserve_fn drv_reserve;
static create_fn drv_create;
static map_fn drv_map;
static access_fn drv_access;
static unmap_fn drv_unmap;
static release_fn drv_release;

static void *driver_fn(const char *name)
{
	void *fn = nullptr;
	cudaDriverEntryPointQueryResult q;
	if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess || !fn) {
		fprintf(stderr, "fake torch: no driver function %s\n", name);
		abort();
	}
	return fn;
}

struct Segment {
	uint64_t base, size;
	void *stream;
	MempoolId_t pool;
	bool small; /* a 2 MiB segment of the small pool */
	int live;   /* blocks handed out or pending */
	std::vector<CUmemGenericAllocationHandle> handles; /* expandable: one per 2 MiB granule */
	bool gone;
};

/* A block of a segment, free or not: the blocks of a segment tile it, as in torch. */
struct Block {
	uint64_t size, requested;
	size_t segment;
	bool allocated; /* handed out, or freed but not completed (pending) */
};

/* What one version's allocator does on each event: copy it into its TraceEntry and call the trackers. */
typedef void (*emit_fn)(void *ctx, const Event &e);

struct DeviceEngine {
	int device;
	std::recursive_mutex mutex;
	std::vector<Segment> segments;
	std::map<uint64_t, Block> blocks; /* every block of every segment, by address */
	std::vector<uint64_t> pending;	  /* free requested, completion deferred */
	uint64_t va_base = 0, va_size = 0, va_next = 0; /* expandable: the reserved range */
	/* torch.cuda.memory_stats(): allocated_bytes and reserved_bytes, current and peak */
	uint64_t allocated = 0, peak_allocated = 0, reserved = 0, peak_reserved = 0;
	emit_fn emit;
	void *ctx;

	void report(int action, uint64_t addr, uint64_t size, void *stream, MempoolId_t pool)
	{
		Event e{action, device, addr, size, stream, pool};
		{
			std::lock_guard<std::mutex> g(log_mutex);
			event_log.push_back({action, device, addr, size, (uint64_t)(uintptr_t)stream, pool.first,
					     pool.second, (uint32_t)syscall(SYS_gettid), 0});
		}
		emit(ctx, e);
	}

	/* torch's free_block: the block is free again, merged with free neighbours of its segment. */
	void complete(uint64_t ptr)
	{
		auto it = blocks.find(ptr);
		Block &b = it->second;
		const Segment &s = segments[b.segment];
		report(FREE_COMPLETED, ptr, b.requested, s.stream, s.pool);
		b.allocated = false;
		segments[b.segment].live--;
		auto next = std::next(it);
		if (next != blocks.end() && !next->second.allocated && next->second.segment == b.segment) {
			b.size += next->second.size;
			blocks.erase(next);
		}
		if (it != blocks.begin()) {
			auto prev = std::prev(it);
			if (!prev->second.allocated && prev->second.segment == b.segment) {
				prev->second.size += b.size;
				blocks.erase(it);
			}
		}
	}

	void process_events()
	{
		for (uint64_t p : pending)
			complete(p);
		pending.clear();
	}

	/* A new segment of size bytes; -1 when CUDA is out of memory. */
	long new_segment(uint64_t size, void *stream, MempoolId_t pool, bool small)
	{
		Segment s{0, size, stream, pool, small, 0, {}, false};
		if (!expandable) {
			void *p = nullptr;
			if (cudaMalloc(&p, size) != cudaSuccess)
				return -1;
			s.base = (uint64_t)(uintptr_t)p;
		} else {
			if (!va_base) {
				va_size = 1ull << 36;
				CUdeviceptr base = 0;
				if (drv_reserve(&base, va_size, 0, 0, 0) != CUDA_SUCCESS)
					return -1;
				va_base = base;
			}
			CUmemAllocationProp prop = {};
			prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
			prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
			prop.location.id = device;
			if (va_next + size > va_size)
				return -1;
			s.base = va_base + va_next;
			/* as torch: a physical allocation and a mapping per granule, one SEGMENT_MAP
			 * for the range */
			for (uint64_t off = 0; off < size; off += kGranule) {
				CUmemGenericAllocationHandle h = 0;
				if (drv_create(&h, kGranule, &prop, 0) != CUDA_SUCCESS)
					return -1;
				s.handles.push_back(h);
				if (drv_map(s.base + off, kGranule, 0, h, 0) != CUDA_SUCCESS)
					return -1;
			}
			CUmemAccessDesc access = {};
			access.location = prop.location;
			access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
			drv_access(s.base, size, &access, 1);
			/* a gap after each range: ranges are never neighbours (torch grows one
			 * segment instead, and joins its free blocks across ranges) */
			va_next += size + kGranule;
		}
		segments.push_back(s);
		blocks[s.base] = Block{size, 0, segments.size() - 1, false};
		report(expandable ? SEGMENT_MAP : SEGMENT_ALLOC, s.base, size, stream, pool);
		reserved += size;
		if (reserved > peak_reserved)
			peak_reserved = reserved;
		return (long)segments.size() - 1;
	}

	void *alloc_block(size_t requested, void *stream, MempoolId_t pool)
	{
		std::lock_guard<std::recursive_mutex> g(mutex);
		process_events();
		/* torch: round_size, the pool by size, the best fit of that pool's free blocks */
		uint64_t rounded = requested < 512 ? 512 : (requested + 511) / 512 * 512;
		bool small = rounded <= kSmall;
		auto best = blocks.end();
		for (auto it = blocks.begin(); it != blocks.end(); ++it) {
			const Segment &s = segments[it->second.segment];
			if (it->second.allocated || s.gone || s.small != small || s.stream != stream || s.pool != pool ||
			    it->second.size < rounded)
				continue;
			if (best == blocks.end() || it->second.size < best->second.size)
				best = it;
		}
		if (best == blocks.end()) {
			uint64_t want = small ? kSmallSegment
				      : rounded < kMinLargeAlloc ? kLargeBuffer
				      : (rounded + kGranule - 1) / kGranule * kGranule;
			long seg = new_segment(want, stream, pool, small);
			if (seg < 0) {
				size_t free_bytes = 0, total = 0;
				cudaMemGetInfo(&free_bytes, &total);
				report(OOM, free_bytes, rounded, stream, pool);
				return nullptr;
			}
			best = blocks.find(segments[(size_t)seg].base);
		}
		uint64_t ptr = best->first;
		Block &b = best->second;
		/* torch's should_split */
		uint64_t rest = b.size - rounded;
		if (small || expandable ? rest >= 512 : rest > kSmall) {
			blocks[ptr + rounded] = Block{rest, 0, b.segment, false};
			b.size = rounded;
		}
		b.allocated = true;
		b.requested = requested;
		segments[b.segment].live++;
		allocated += b.size;
		if (allocated > peak_allocated)
			peak_allocated = allocated;
		report(ALLOC, ptr, requested, stream, pool);
		return (void *)(uintptr_t)ptr;
	}

	int free_block(void *ptr, bool defer)
	{
		std::lock_guard<std::recursive_mutex> g(mutex);
		uint64_t p = (uint64_t)(uintptr_t)ptr;
		auto it = blocks.find(p);
		if (it == blocks.end() || !it->second.allocated ||
		    std::find(pending.begin(), pending.end(), p) != pending.end())
			return -1;
		const Segment &s = segments[it->second.segment];
		report(FREE_REQUESTED, p, it->second.requested, s.stream, s.pool);
		allocated -= it->second.size;
		if (defer)
			pending.push_back(p);
		else
			complete(p);
		return 0;
	}

	/* Give every segment without a live block back to CUDA. */
	int empty_cache()
	{
		std::lock_guard<std::recursive_mutex> g(mutex);
		process_events();
		int n = 0;
		for (size_t i = 0; i < segments.size(); i++) {
			Segment &s = segments[i];
			if (s.gone || s.live)
				continue;
			if (expandable) {
				for (size_t k = 0; k < s.handles.size(); k++) {
					drv_unmap(s.base + k * kGranule, kGranule);
					drv_release(s.handles[k]);
				}
				report(SEGMENT_UNMAP, s.base, s.size, s.stream, s.pool);
			} else {
				cudaFree((void *)(uintptr_t)s.base);
				report(SEGMENT_FREE, s.base, s.size, s.stream, s.pool);
			}
			reserved -= s.size;
			s.gone = true;
			blocks.erase(s.base); /* one free block: the whole segment */
			n++;
		}
		return n;
	}
};

/* The part of an allocator the exported functions drive, whatever its version. */
struct Engine {
	std::vector<std::unique_ptr<DeviceEngine>> devices;
	bool ready = false;
};
static Engine engine;

template <class TE> static void set_pool(TE &te, MempoolId_t pool)
{
	te.mempool_ = pool;
}
static void set_pool(v23::TraceEntry &te, MempoolId_t pool) {} /* no pool ids before 2.8 */

/* torch's NativeCachingAllocator, for one version's classes (it adds no virtual function). */
template <class Base, class TE> struct Native final : Base {
	using Tracker = std::function<void(const TE &)>;
	std::vector<std::vector<Tracker>> trackers; /* per device, under that device's mutex */

	static void emit(void *ctx, const Event &e)
	{
		auto *self = static_cast<Native *>(ctx);
		TE te;
		te.action_ = e.action;
		te.device_ = (int8_t)e.device;
		te.addr_ = e.addr;
		te.stream_ = e.stream;
		te.size_ = e.size;
		te.time_.approx_t_ = 12345;
		set_pool(te, e.pool);
		for (const auto &cb : self->trackers[(size_t)e.device])
			cb(te);
	}
	void init(int device_count) override
	{
		if (engine.ready)
			return;
		trackers.resize((size_t)device_count);
		for (int i = 0; i < device_count; i++) {
			engine.devices.emplace_back(new DeviceEngine());
			engine.devices.back()->device = i;
			engine.devices.back()->emit = emit;
			engine.devices.back()->ctx = this;
		}
		engine.ready = true;
	}
	bool initialized() override { return engine.ready; }
	/* As torch: every device allocator that exists gets a copy; none before init. */
	void attachAllocatorTraceTracker(Tracker tracker) override
	{
		for (size_t d = 0; d < engine.devices.size(); d++) {
			std::lock_guard<std::recursive_mutex> g(engine.devices[d]->mutex);
			trackers[d].push_back(tracker);
		}
	}
	std::string name() override { return "native"; }
	size_t tracker_count()
	{
		size_t n = 0;
		for (auto &t : trackers)
			n += t.size();
		return n;
	}
};

/* The cudaMallocAsync backend: no caching, no trace events, and no trackers. */
template <class Base, class TE> struct Async final : Base {
	void init(int device_count) override { engine.ready = true; }
	bool initialized() override { return engine.ready; }
	void attachAllocatorTraceTracker(std::function<void(const TE &)> tracker) override
	{
		throw std::runtime_error("cudaMallocAsync does not yet support attachAllocatorTraceTracker");
	}
	std::string name() override { return "cudaMallocAsync"; }
};

/* ---- the exported symbol and the layout checks ---- */

namespace c10 {
namespace cuda {
namespace CUDACachingAllocator {
FAKE_EXPORT std::atomic<void *> allocator;
}
} // namespace cuda
} // namespace c10

template <class C, class F> static size_t slot_of(F C::*member)
{
	struct {
		size_t ptr, adj;
	} s;
	static_assert(sizeof member == sizeof s, "Itanium member pointer");
	memcpy(&s, &member, sizeof s);
	return (s.ptr - 1) / sizeof(void *);
}

static void check(bool ok, const char *what, const char *layout)
{
	if (!ok) {
		fprintf(stderr, "fake torch %s: %s disagrees with preload/hooks/torchoffsets.h\n", layout, what);
		abort();
	}
}

/* The row's TraceEntry offsets and vtable slots must be those of the transcribed classes. */
template <class A, class TE> static void check_row(const char *layout, int major, int minor, bool mempool)
{
	const ct_torch_layout *row = ct_torch_layout_for(major, minor);
	check(row != nullptr, "no row", layout);
	check(row->te_size == sizeof(TE), "sizeof(TraceEntry)", layout);
	check(row->te_action == offsetof(TE, action_), "action_", layout);
	check(row->te_device == offsetof(TE, device_), "device_", layout);
	check(row->te_addr == offsetof(TE, addr_), "addr_", layout);
	check(row->te_stream == offsetof(TE, stream_), "stream_", layout);
	check(row->te_size_field == offsetof(TE, size_), "size_", layout);
	check(row->slot_attach == slot_of(&A::attachAllocatorTraceTracker), "attach slot", layout);
	check(row->slot_name == slot_of(&A::name), "name slot", layout);
	check(row->slot_initialized == slot_of(&A::initialized), "initialized slot", layout);
	check(row->slot_name + 1 == row->vt_slots, "vt_slots (name is the last)", layout);
	check((row->te_mempool != CT_TORCH_ABSENT) == mempool, "mempool_", layout);
}

template <class TE> static size_t mempool_offset()
{
	return offsetof(TE, mempool_);
}

template <class Base, class TE> static Base *make(void)
{
	if (async_backend)
		return new Async<Base, TE>();
	return new Native<Base, TE>();
}

static v211::CUDAAllocator *the211;
static v28::CUDAAllocator *the28;
static v23::CUDAAllocator *the23;

__attribute__((constructor)) static void fake_torch_load(void)
{
	check_row<v211::CUDAAllocator, v211::TraceEntry>("2.11", 2, 11, true);
	check_row<v211::CUDAAllocator, v211::TraceEntry>("2.10", 2, 10, true);
	check_row<v28::CUDAAllocator, v28::TraceEntry>("2.8", 2, 8, true);
	check_row<v23::CUDAAllocator, v23::TraceEntry>("2.3", 2, 3, false);
	check(ct_torch_layout_for(2, 11)->te_mempool == mempool_offset<v211::TraceEntry>(), "mempool_", "2.11");
	check(ct_torch_layout_for(2, 8)->te_mempool == mempool_offset<v28::TraceEntry>(), "mempool_", "2.8");

	const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
	expandable = conf && strstr(conf, "expandable_segments:True");
	async_backend = conf && strstr(conf, "backend:cudaMallocAsync");
	const char *layout = getenv("CUMTRACE_FAKE_TORCH_LAYOUT");
	std::string l = layout && *layout ? layout : "2.11";
	void *a;
	if (l == "2.11" || l == "2.10")
		a = the211 = make<v211::CUDAAllocator, v211::TraceEntry>();
	else if (l == "2.8")
		a = the28 = make<v28::CUDAAllocator, v28::TraceEntry>();
	else if (l == "2.3")
		a = the23 = make<v23::CUDAAllocator, v23::TraceEntry>();
	else {
		fprintf(stderr, "fake torch: unknown CUMTRACE_FAKE_TORCH_LAYOUT=%s\n", l.c_str());
		abort();
	}
	c10::cuda::CUDACachingAllocator::allocator.store(a);
}

/* ---- what the Python driver calls ---- */

static thread_local int cur_device;
static thread_local MempoolId_t cur_pool;

static DeviceEngine *dev(void)
{
	if (!engine.ready || (size_t)cur_device >= engine.devices.size())
		return nullptr;
	return engine.devices[(size_t)cur_device].get();
}

extern "C" {

/* torch's lazy CUDA init: the allocator's init(device_count). 0 or -1. */
FAKE_EXPORT int fake_torch_init(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1)
		return -1;
	if (expandable && !drv_reserve) {
		drv_reserve = (reserve_fn)driver_fn("cuMemAddressReserve");
		drv_create = (create_fn)driver_fn("cuMemCreate");
		drv_map = (map_fn)driver_fn("cuMemMap");
		drv_access = (access_fn)driver_fn("cuMemSetAccess");
		drv_unmap = (unmap_fn)driver_fn("cuMemUnmap");
		drv_release = (release_fn)driver_fn("cuMemRelease");
	}
	if (the211)
		the211->init(n);
	else if (the28)
		the28->init(n);
	else
		the23->init(n);
	return 0;
}

/* Later calls of this thread use device d (cudaSetDevice too) and pool (a, b). */
FAKE_EXPORT int fake_torch_set_device(int d)
{
	cur_device = d;
	return cudaSetDevice(d) == cudaSuccess ? 0 : -1;
}

FAKE_EXPORT void fake_torch_set_pool(unsigned long long a, unsigned long long b)
{
	cur_pool = MempoolId_t(a, b);
}

/* The cudaMallocAsync backend's allocated bytes per device, current and peak, as torch's
 * memory_stats() counts them there (each request's size; reserved is the driver pool's). */
static std::mutex async_mutex;
static std::unordered_map<void *, std::pair<int, size_t>> async_live;
static unsigned long long async_allocated[64], async_peak[64];

/* A block of size bytes for stream; NULL when out of memory (torch raises then). */
FAKE_EXPORT void *fake_torch_alloc(size_t size, uintptr_t stream)
{
	if (async_backend) {
		void *p = nullptr;
		cudaSetDevice(cur_device);
		if (cudaMallocAsync(&p, size, (cudaStream_t)stream) != cudaSuccess)
			return nullptr;
		std::lock_guard<std::mutex> g(async_mutex);
		int dv = cur_device >= 0 && cur_device < 64 ? cur_device : 0;
		async_live[p] = {dv, size};
		async_allocated[dv] += size;
		if (async_allocated[dv] > async_peak[dv])
			async_peak[dv] = async_allocated[dv];
		return p;
	}
	DeviceEngine *d = dev();
	return d ? d->alloc_block(size, (void *)stream, cur_pool) : nullptr;
}

/* fake_torch_alloc through depth more native frames (as ATen's ops reach the allocator by
 * call chains of their own): a native stack of its own per depth. */
static __attribute__((noinline)) void *fake_torch_alloc_chain(size_t size, uintptr_t stream, int depth)
{
	void *p = depth > 0 ? fake_torch_alloc_chain(size, stream, depth - 1) : fake_torch_alloc(size, stream);
	__asm__ volatile("" ::: "memory"); /* not a tail call: each level keeps its frame */
	return p;
}

FAKE_EXPORT void *fake_torch_alloc_deep(size_t size, uintptr_t stream, int depth)
{
	return fake_torch_alloc_chain(size, stream, depth);
}

/* Give a block back: 0, or -1 for an unknown pointer. */
FAKE_EXPORT int fake_torch_free(void *ptr)
{
	if (async_backend) {
		if (cudaFreeAsync(ptr, 0) != cudaSuccess)
			return -1;
		std::lock_guard<std::mutex> g(async_mutex);
		auto it = async_live.find(ptr);
		if (it != async_live.end()) {
			async_allocated[it->second.first] -= it->second.second;
			async_live.erase(it);
		}
		return 0;
	}
	DeviceEngine *d = dev();
	return d ? d->free_block(ptr, false) : -1;
}

/* Give a block back that is still in use on another stream: it completes at the next call. */
FAKE_EXPORT int fake_torch_free_deferred(void *ptr)
{
	if (async_backend)
		return fake_torch_free(ptr);
	DeviceEngine *d = dev();
	return d ? d->free_block(ptr, true) : -1;
}

/* torch.cuda.empty_cache(): the number of segments given back. */
FAKE_EXPORT int fake_torch_empty_cache(void)
{
	DeviceEngine *d = dev();
	return d && !async_backend ? d->empty_cache() : 0;
}

/* torch.cuda.memory_stats(device): allocated and reserved bytes, current and peak. 0 or -1.
 * The cudaMallocAsync backend: allocated only (reserved 0: the driver pool's, not the backend's). */
FAKE_EXPORT int fake_torch_stats(int device, unsigned long long out[4])
{
	if (async_backend && device >= 0 && device < 64) {
		std::lock_guard<std::mutex> g(async_mutex);
		out[0] = async_allocated[device];
		out[1] = async_peak[device];
		out[2] = out[3] = 0;
		return 0;
	}
	if (!engine.ready || (size_t)device >= engine.devices.size() || async_backend)
		return -1;
	DeviceEngine *d = engine.devices[(size_t)device].get();
	std::lock_guard<std::recursive_mutex> g(d->mutex);
	out[0] = d->allocated;
	out[1] = d->peak_allocated;
	out[2] = d->reserved;
	out[3] = d->peak_reserved;
	return 0;
}

/* Trackers attached (to all device allocators together). */
FAKE_EXPORT long fake_torch_trackers(void)
{
	if (async_backend)
		return 0;
	if (the211)
		return (long)static_cast<Native<v211::CUDAAllocator, v211::TraceEntry> *>(the211)->tracker_count();
	if (the28)
		return (long)static_cast<Native<v28::CUDAAllocator, v28::TraceEntry> *>(the28)->tracker_count();
	return (long)static_cast<Native<v23::CUDAAllocator, v23::TraceEntry> *>(the23)->tracker_count();
}

/* The events made so far (the test's ground truth). */
FAKE_EXPORT long fake_torch_log_count(void)
{
	std::lock_guard<std::mutex> g(log_mutex);
	return (long)event_log.size();
}

/* Copy the events from the start-th on into out (max at most): how many were copied. */
FAKE_EXPORT long fake_torch_log_copy(long start, struct fake_torch_event *out, long max)
{
	std::lock_guard<std::mutex> g(log_mutex);
	long n = 0;
	for (size_t i = (size_t)start; i < event_log.size() && n < max; i++)
		out[n++] = event_log[i];
	return n;
}

} /* extern "C" */
