/*
 * The PyTorch layouts that torch.c reads, one row per torch minor version.
 *
 * What a row says about that version's libc10_cuda.so on x86-64 Linux
 * (libstdc++, GCC's Itanium C++ ABI: every Linux wheel):
 *
 *   - the vtable of the object behind c10::cuda::CUDACachingAllocator::allocator
 *     (a CUDAAllocator; the native caching allocator adds no virtual function
 *     of its own): how many virtual-function slots it has (vt_slots, the
 *     destructor's two included), and the slots of initialized(),
 *     attachAllocatorTraceTracker(AllocatorTraceTracker) and name();
 *   - struct TraceEntry, what each tracker is called with: the byte offsets
 *     of action_ (a 4-byte enum), device_ (an int8_t DeviceIndex), addr_,
 *     stream_, size_ and mempool_ (two 64-bit halves), and its size.
 *
 * The Action numbering is the same in every row (2.1 .. 2.11): enum
 * ct_torch_action below; values from action_count on are not read.
 *
 * How sure each row is (status): only CT_TORCH_MEASURED rows attach by
 * default. A CT_TORCH_HEADERS row was read from that version's headers but
 * never run; it attaches only with CUMTRACE_TORCH=2. Any other version (no
 * row, a pre-release such as 2.11.0a0 or 2.12.0.dev, or an older one) keeps
 * the framework layer off. Even a measured row attaches only when the
 * vtable counted in the running process has exactly vt_slots functions and
 * name() returns "native" (torch.c).
 *
 * Sources (issue 16's research notes, torch-tracker.md, sections 2 and 3):
 *   2.11  measured on the GPU machine (torch 2.11.0+cu130, git 70d99e99):
 *         offsetof and member-pointer slots against its installed headers,
 *         g++ -fdump-lang-class, a vtable scan and live events
 *   2.10  c10/cuda/CUDACachingAllocator.h of that release cycle (same
 *         virtual functions as 2.11; TraceEntry still in that header)
 *   2.8   the installed headers of a vendor build of 2.8.0
 *   2.3   c10/cuda/CUDACachingAllocator.h of a 2.3.0 fork
 *
 * Standalone (no shim headers): tests/fake/c10_cuda.cc, the test stand-in for
 * libc10_cuda.so, and tests/gpu/torch_offsets_probe.cc, which compares a row
 * with the real headers on a machine with torch, include it.
 */
#ifndef CT_TORCHOFFSETS_H
#define CT_TORCHOFFSETS_H

#include <stdint.h>

/* The data symbol c10::cuda::CUDACachingAllocator::allocator (a std::atomic<CUDAAllocator*>). */
#define CT_TORCH_ALLOCATOR_SYMBOL "_ZN3c104cuda20CUDACachingAllocator9allocatorE"
/* The library that defines it, as its file name starts. */
#define CT_TORCH_LIBRARY "libc10_cuda.so"

/* TraceEntry::Action of torch 2.1 .. 2.11: ALLOC = 0 .. OOM = 8, in this order. */
enum ct_torch_action {
	CT_TORCH_ALLOC,
	CT_TORCH_FREE_REQUESTED,
	CT_TORCH_FREE_COMPLETED,
	CT_TORCH_SEGMENT_ALLOC,
	CT_TORCH_SEGMENT_FREE,
	CT_TORCH_SEGMENT_MAP,  /* expandable segments (2.1+) */
	CT_TORCH_SEGMENT_UNMAP,
	CT_TORCH_SNAPSHOT,
	CT_TORCH_OOM,
	CT_TORCH_ACTION_COUNT
};

enum ct_torch_status {
	CT_TORCH_MEASURED = 1, /* checked in a process running this version */
	CT_TORCH_HEADERS = 2,  /* read from its headers only: CUMTRACE_TORCH=2 */
};

#define CT_TORCH_ABSENT 0xffffu /* a field this version does not have */

struct ct_torch_layout {
	uint8_t major, minor;
	uint8_t status;	      /* enum ct_torch_status */
	uint8_t vt_slots;     /* virtual-function slots of the allocator's vtable */
	uint8_t slot_initialized; /* bool initialized() */
	uint8_t slot_attach;  /* void attachAllocatorTraceTracker(AllocatorTraceTracker) */
	uint8_t slot_name;    /* std::string name() */
	uint8_t action_count; /* actions 0 .. action_count - 1 are enum ct_torch_action */
	/* struct TraceEntry */
	uint16_t te_size;
	uint16_t te_action, te_device, te_addr, te_stream, te_size_field;
	uint16_t te_mempool; /* CT_TORCH_ABSENT before 2.8 */
};

static const struct ct_torch_layout ct_torch_layouts[] = {
	{
		.major = 2, .minor = 3, .status = CT_TORCH_HEADERS,
		.vt_slots = 34, .slot_initialized = 10, .slot_attach = 28, .slot_name = 33,
		.action_count = CT_TORCH_ACTION_COUNT,
		.te_size = 56, .te_action = 0, .te_device = 4, .te_addr = 8, .te_stream = 32,
		.te_size_field = 40, .te_mempool = CT_TORCH_ABSENT,
	},
	{
		.major = 2, .minor = 8, .status = CT_TORCH_HEADERS,
		.vt_slots = 44, .slot_initialized = 10, .slot_attach = 38, .slot_name = 43,
		.action_count = CT_TORCH_ACTION_COUNT,
		.te_size = 104, .te_action = 0, .te_device = 4, .te_addr = 8, .te_stream = 32,
		.te_size_field = 40, .te_mempool = 48,
	},
	{
		.major = 2, .minor = 10, .status = CT_TORCH_HEADERS,
		.vt_slots = 50, .slot_initialized = 6, .slot_attach = 44, .slot_name = 49,
		.action_count = CT_TORCH_ACTION_COUNT,
		.te_size = 136, .te_action = 0, .te_device = 4, .te_addr = 8, .te_stream = 32,
		.te_size_field = 40, .te_mempool = 48,
	},
	{
		.major = 2, .minor = 11, .status = CT_TORCH_MEASURED,
		.vt_slots = 50, .slot_initialized = 6, .slot_attach = 44, .slot_name = 49,
		.action_count = CT_TORCH_ACTION_COUNT,
		.te_size = 136, .te_action = 0, .te_device = 4, .te_addr = 8, .te_stream = 32,
		.te_size_field = 40, .te_mempool = 48,
	},
};

/* The row of torch major.minor, or NULL. */
static inline const struct ct_torch_layout *ct_torch_layout_for(int major, int minor)
{
	for (unsigned i = 0; i < sizeof ct_torch_layouts / sizeof ct_torch_layouts[0]; i++)
		if (ct_torch_layouts[i].major == major && ct_torch_layouts[i].minor == minor)
			return &ct_torch_layouts[i];
	return 0;
}

#endif /* CT_TORCHOFFSETS_H */
