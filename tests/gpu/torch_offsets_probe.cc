/*
 * preload/hooks/torchoffsets.h against the installed torch's own headers
 * (tests/gpu/torch_tracker_check.py compiles it with g++, -I torch/include,
 * -DTORCH_MAJOR=2 -DTORCH_MINOR=11 from torch.__version__ and the wheel's
 * _GLIBCXX_USE_CXX11_ABI). One line per value: PASS or FAIL, then what the
 * table says and what the compiler says; SKIP when the table has no row.
 * Exit status 1 when any value differs.
 *
 * Checked: sizeof(TraceEntry) and the offsets of action_, device_, addr_,
 * stream_, size_ (and mempool_ where the header has one), the size of
 * device_, the vtable slots of initialized(), attachAllocatorTraceTracker and
 * name() (from member-function pointers: Itanium ABI, 1 + the byte offset),
 * that name() is the last virtual function the header declares (vt_slots),
 * and the Action numbers.
 */
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "torchoffsets.h"

#pragma GCC diagnostic ignored "-Winvalid-offsetof"

namespace CA = c10::cuda::CUDACachingAllocator;
using TE = CA::TraceEntry;

static int failures;

static void check(const char *what, long table, long compiler)
{
	printf("%s probe: %s: table %ld, headers %ld\n", table == compiler ? "PASS" : "FAIL", what,
	       table, compiler);
	failures += table != compiler;
}

template <class F> static long slot_of(F member)
{
	struct {
		size_t ptr, adj;
	} s;
	static_assert(sizeof member == sizeof s, "Itanium member pointer");
	memcpy(&s, &member, sizeof s);
	return (long)((s.ptr - 1) / sizeof(void *));
}

template <class T, class = void> struct has_mempool : std::false_type {};
template <class T> struct has_mempool<T, decltype((void)&T::mempool_)> : std::true_type {};

template <class T> static long mempool_offset(std::true_type)
{
	return (long)offsetof(T, mempool_);
}
template <class T> static long mempool_offset(std::false_type)
{
	return CT_TORCH_ABSENT;
}

int main()
{
	const ct_torch_layout *row = ct_torch_layout_for(TORCH_MAJOR, TORCH_MINOR);
	if (!row) {
		printf("SKIP probe: torchoffsets.h has no row for torch %d.%d\n", TORCH_MAJOR, TORCH_MINOR);
		return 0;
	}
	check("sizeof(TraceEntry)", row->te_size, sizeof(TE));
	check("offsetof(action_)", row->te_action, offsetof(TE, action_));
	check("offsetof(device_)", row->te_device, offsetof(TE, device_));
	check("sizeof(device_) (1: int8 DeviceIndex)", 1, sizeof(((TE *)0)->device_));
	check("offsetof(addr_)", row->te_addr, offsetof(TE, addr_));
	check("offsetof(stream_)", row->te_stream, offsetof(TE, stream_));
	check("offsetof(size_)", row->te_size_field, offsetof(TE, size_));
	check("offsetof(mempool_)", row->te_mempool, mempool_offset<TE>(has_mempool<TE>()));
	check("slot of initialized()", row->slot_initialized, slot_of(&CA::CUDAAllocator::initialized));
	check("slot of attachAllocatorTraceTracker", row->slot_attach,
	      slot_of(&CA::CUDAAllocator::attachAllocatorTraceTracker));
	check("slot of name()", row->slot_name, slot_of(&CA::CUDAAllocator::name));
	check("vtable slots (name() is the last)", row->vt_slots, slot_of(&CA::CUDAAllocator::name) + 1);
	check("Action ALLOC", CT_TORCH_ALLOC, TE::ALLOC);
	check("Action FREE_REQUESTED", CT_TORCH_FREE_REQUESTED, TE::FREE_REQUESTED);
	check("Action FREE_COMPLETED", CT_TORCH_FREE_COMPLETED, TE::FREE_COMPLETED);
	check("Action SEGMENT_ALLOC", CT_TORCH_SEGMENT_ALLOC, TE::SEGMENT_ALLOC);
	check("Action SEGMENT_FREE", CT_TORCH_SEGMENT_FREE, TE::SEGMENT_FREE);
	check("Action SEGMENT_MAP", CT_TORCH_SEGMENT_MAP, TE::SEGMENT_MAP);
	check("Action SEGMENT_UNMAP", CT_TORCH_SEGMENT_UNMAP, TE::SEGMENT_UNMAP);
	check("Action SNAPSHOT", CT_TORCH_SNAPSHOT, TE::SNAPSHOT);
	check("Action OOM (the last the table reads)", CT_TORCH_OOM, TE::OOM);
	check("sizeof(AllocatorTraceTracker) (a libstdc++ std::function)", 32,
	      sizeof(CA::AllocatorTraceTracker));
	return failures ? 1 : 0;
}
