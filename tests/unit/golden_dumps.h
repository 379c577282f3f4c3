/*
 * golden_dumps.h: the dumps that the golden cases (tests/golden/cases, run by
 * test_golden.c) are made from, by name, and that test_analyses.c checks the
 * model against. Header-only; needs dumpgen.h.
 */
#ifndef CT_TEST_GOLDEN_DUMPS_H
#define CT_TEST_GOLDEN_DUMPS_H

#include <stdio.h>
#include <string.h>

#include "cumtrace/format.h"
#include "dumpgen.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

static void ev(struct dg *g, uint64_t ts, uint8_t op, uint8_t kind, uint16_t api, uint64_t ptr,
	       uint64_t size, uint32_t tid, uint32_t stack, int16_t device, int32_t result)
{
	struct dg_ev e = {.ts = ts, .dur = 10, .ptr = ptr, .size = size, .tid = tid,
			  .stack_id = stack, .api = api, .op = op, .kind = kind, .device = device,
			  .result = result};
	dg_event(g, &e);
}

/*
 * After the program's module: libc and libcumtrace.so, then stack 1 (the
 * program's frames) and stack 2 (innermost in libcumtrace.so, which reports
 * leave out).
 */
static void libs_and_two_stacks(struct dg *g)
{
	dg_module(g, 0x7f0000000000, 0x7f0000000000, 0x7f0000200000, NULL, 0,
		  "/lib/x86_64-linux-gnu/libc.so.6");
	dg_module(g, 0x7f1000000000, 0x7f1000000000, 0x7f1000100000, NULL, 0,
		  "/opt/cumtrace/lib/libcumtrace.so");
	uint64_t s1[3] = {0x401234, 0x401500, 0x7f00000271ca};
	uint64_t s2[3] = {0x7f1000000100, 0x402000, 0x7f00000271ca};
	dg_stack(g, 1, 3, s1);
	dg_stack(g, 2, 3, s2);
}

/* A deterministic dump that exercises every section. */
static void golden_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 4242, 1, 1000000,
		   (const char *[]){"version=0.1.0", "host=testhost", "exe=/usr/bin/prog",
				    "cwd=/work", "argv=prog", "argv=--say \"hi\"\n", NULL});
	dg_module(g, 0x400000, 0x400000, 0x480000, (const uint8_t *)"\xab\xcd", 2, "/usr/bin/prog");
	libs_and_two_stacks(g);
	const uint64_t T = 1000000, MS = 1000000;
	dg_batch(g, T, 0);
	dg_alloc(g, T + 1 * MS, 0x10000, 8 << 20, 1);
	dg_alloc(g, T + 2 * MS, 0x20000, 4 << 20, 2);
	ev(g, T + 3 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0, 1 << 30, 1, 1, 0, 2);
	ev(g, T + 4 * MS, CT_OP_ALLOC, CT_KIND_HOST_PINNED, CT_API_cudaMallocHost, 0x900000, 1 << 16, 1, 2, 0, 0);
	dg_batch(g, T + 5 * MS, 1);
	dg_alloc(g, T + 6 * MS, 0x30000, 2 << 20, 1);
	dg_free(g, T + 8 * MS, 0x20000);
	ev(g, T + 9 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x40000, 1 << 20, 2, 2, 1, 0);
	dg_drops(g, T + 9 * MS, 3, 2);
	dg_end(g, T + 10 * MS);
}

/*
 * A dump with a leak of every class: a user leak, the caches of libraries
 * named like PyTorch's, cuBLAS's and NCCL's, an allocation live at a device
 * reset on device 1, and a site that grows by 4 KiB in each of 10 steps
 * ("step" instants); the last two have Python frames (train.py). The second
 * dump ("now") is the same program in another run: other load addresses,
 * stack and string ids and a line number changed, no user leak, a new leak
 * site and a bigger cuBLAS workspace.
 */
static void classes_dump(struct dg *g, int now)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, now ? 6262 : 5151, 1, 1000000,
		   (const char *[]){"version=0.1.0", "host=testhost", "exe=/work/prog", "cwd=/work",
				    "argv=prog", NULL});
	uint64_t pb = now ? 0x560000000000 : 0x550000000000, lb = now ? 0x7f5000000000 : 0x7f0000000000;
	dg_module(g, pb, pb, pb + 0x100000, NULL, 0, "/work/prog");
	dg_module(g, lb, lb, lb + 0x200000, NULL, 0, "/lib/x86_64-linux-gnu/libc.so.6");
	dg_module(g, lb + 0x1000000, lb + 0x1000000, lb + 0x1100000, NULL, 0,
		  "/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so");
	dg_module(g, lb + 0x2000000, lb + 0x2000000, lb + 0x2100000, NULL, 0,
		  "/usr/lib/x86_64-linux-gnu/libcublas.so.13");
	dg_module(g, lb + 0x3000000, lb + 0x3000000, lb + 0x3100000, NULL, 0, "/opt/nccl/lib/libnccl.so.2");
	dg_module(g, lb + 0x4000000, lb + 0x4000000, lb + 0x4400000, NULL, 0, "/usr/lib/libpython3.12.so.1.0");
	uint64_t libc = lb + 0x271ca, interp = lb + 0x4000500;
	uint64_t s_user[3] = {pb + 0x1000, pb + 0x1500, libc};
	uint64_t s_torch[3] = {lb + 0x1000100, interp, libc};
	uint64_t s_cublas[3] = {lb + 0x2000100, pb + 0x2100, libc};
	uint64_t s_nccl[3] = {lb + 0x3000100, pb + 0x2200, libc};
	uint64_t s_reset[3] = {pb + 0x3000, pb + 0x1500, libc};
	uint64_t s_grow[3] = {pb + 0x4000, interp, libc};
	uint64_t s_new[3] = {pb + 0x5000, pb + 0x1500, libc};
	uint32_t id = now ? 100 : 1; /* stack ids differ between runs */
	dg_stack(g, id + 0, 3, s_user);
	dg_stack(g, id + 1, 3, s_torch);
	dg_stack(g, id + 2, 3, s_cublas);
	dg_stack(g, id + 3, 3, s_nccl);
	dg_stack(g, id + 4, 3, s_reset);
	dg_stack(g, id + 5, 3, s_grow);
	dg_stack(g, id + 6, 3, s_new);
	/* Python frames of the torch cache and the growing site (other string ids in each run) */
	uint32_t py = now ? 50 : 1;
	dg_pystring(g, py + 0, "/work/train.py");
	dg_pystring(g, py + 1, "forward");
	dg_pystring(g, py + 2, "train_step");
	dg_pystring(g, py + 3, "<module>");
	struct ct_pyframe fwd[2] = {{py + 0, py + 1, now ? 31 : 30}, {py + 0, py + 3, 50}};
	struct ct_pyframe stp[2] = {{py + 0, py + 2, 25}, {py + 0, py + 3, 52}};
	dg_pystack(g, py + 10, 2, fwd);
	dg_pystack(g, py + 11, 2, stp);
	const uint64_t T = 2000000, MS = 1000000;
	if (!now)
		dg_alloc(g, T + 1 * MS, 0x10000000, 3 << 20, id + 0);
	else
		dg_alloc(g, T + 1 * MS, 0x10000000, 1 << 20, id + 6);
	dg_alloc_py(g, T + 2 * MS, 0x20000000, 8 << 20, id + 1, py + 10);
	dg_alloc(g, T + 3 * MS, 0x30000000, now ? 8 << 20 : 4 << 20, id + 2);
	struct dg_ev nccl = {.ts = T + 4 * MS, .dur = 10, .ptr = 0x40000000, .size = 6 << 20, .tid = 1,
			     .stack_id = id + 3, .api = CT_API_cuMemAlloc_v2, .op = CT_OP_ALLOC,
			     .kind = CT_KIND_DEVICE};
	dg_event(g, &nccl);
	struct dg_ev dev1 = {.ts = T + 5 * MS, .dur = 10, .ptr = 0x50000000, .size = 1 << 20, .tid = 1,
			     .stack_id = id + 4, .api = CT_API_cudaMalloc, .op = CT_OP_ALLOC,
			     .kind = CT_KIND_DEVICE, .device = 1};
	dg_event(g, &dev1);
	struct dg_ev reset = {.ts = T + 6 * MS, .dur = 10, .tid = 1, .api = CT_API_cudaDeviceReset,
			      .op = CT_OP_DEVICE_RESET, .device = 1};
	dg_event(g, &reset);
	for (int s = 0; s <= 10; s++) {
		dg_mark(g, T + (10 + (uint64_t)s) * MS, 1, "step");
		if (s < 10)
			dg_alloc_py(g, T + (10 + (uint64_t)s) * MS + 100, 0x60000000 + (uint64_t)s * 0x10000,
				    4096, id + 5, py + 11);
	}
	for (int s = 0; s < 10; s++)
		dg_free(g, T + 30 * MS + (uint64_t)s, 0x60000000 + (uint64_t)s * 0x10000);
	dg_end(g, T + 40 * MS);
}

/* Process 4242 started at 1 ms, one module, stacks 1..5 of one frame each. */
static void report_prologue(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 4242, 1, 1000000, (const char *[]){"exe=/usr/bin/prog", "argv=prog", NULL});
	dg_module(g, 0x400000, 0x400000, 0x480000, NULL, 0, "/usr/bin/prog");
	for (uint32_t s = 1; s <= 5; s++) {
		uint64_t ip = 0x401000 + s * 0x100;
		dg_stack(g, s, 1, &ip);
	}
}

/*
 * Two devices, NVTX ranges and marks (times in ms after the 1 ms start):
 *   0.5 mark init            | 9 push fwd           | 15 end io
 *   1 dev0 A 4 MiB (s1)      | 10 dev0 E 1 MiB (s1) | 16 mark step
 *   2 push fwd               | 11 pop               | 17 dev0 F 512 KiB (s1)
 *   3 dev1 B 2 MiB (s2)      | 12 start io (tid 2)  | 18 end
 *   4 dev0 C 6 MiB (s2)      | 13 free A            |
 *   5 pop                    | 14 dev1 cuMemCreate 4 MiB (s3)
 *   6 free C                 |
 *   7 mark step              |
 *   8 dev1 D 3 MiB (s1)      |
 * Device bytes (all): 4, 6, 12 (4 ms: the peak), 6, 9, 10, 6, 10, 10.5 MiB.
 * dev0: 4, 10 (4 ms: its peak), 4, 5, 1, 1.5; dev1: 2, 5, 9 (14 ms: its peak).
 * Phases: fwd: 2..5 from 4 to 12 MiB at 4 ms (+8), 9..11 from 9 to 10 (+1);
 * io: 12..15 opens at 10, stays 10 (first reached at 12 ms), +0;
 * before the first mark: 0 .. 0.5, nothing; init: 0.5..7, 0 -> 12 at 4 ms;
 * step: 7..16 from 6 to 10 at 10 ms (+4), 16..end from 10 to 10.5 at 17 ms.
 */
static void devices_phases_dump(struct dg *g)
{
	const uint64_t T = 1000000, MS = 1000000;
	report_prologue(g);
	dg_mark_kind(g, T + MS / 2, 1, CT_MARK_INSTANT, 0, "init");
	ev(g, T + 1 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x1000000, 4 * MiB, 1, 1, 0, 0);
	dg_mark_kind(g, T + 2 * MS, 1, CT_MARK_PUSH, 0, "fwd");
	ev(g, T + 3 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x8000000, 2 * MiB, 1, 2, 1, 0);
	ev(g, T + 4 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x2000000, 6 * MiB, 1, 2, 0, 0);
	dg_mark_kind(g, T + 5 * MS, 1, CT_MARK_POP, 0, "");
	ev(g, T + 6 * MS, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x2000000, 0, 1, 0, 0, 0);
	dg_mark_kind(g, T + 7 * MS, 1, CT_MARK_INSTANT, 0, "step");
	ev(g, T + 8 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x9000000, 3 * MiB, 1, 1, 1, 0);
	dg_mark_kind(g, T + 9 * MS, 1, CT_MARK_PUSH, 0, "fwd");
	ev(g, T + 10 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x3000000, 1 * MiB, 1, 1, 0, 0);
	dg_mark_kind(g, T + 11 * MS, 1, CT_MARK_POP, 0, "");
	dg_mark_kind(g, T + 12 * MS, 2, CT_MARK_START, 7, "io");
	ev(g, T + 13 * MS, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x1000000, 0, 1, 0, 0, 0);
	ev(g, T + 14 * MS, CT_OP_PHYS_CREATE, CT_KIND_VMM_PHYSICAL, CT_API_cuMemCreate, 0x5000, 4 * MiB, 1, 3, 1, 0);
	dg_mark_kind(g, T + 15 * MS, 1, CT_MARK_STOP, 7, "");
	dg_mark_kind(g, T + 16 * MS, 1, CT_MARK_INSTANT, 0, "step");
	ev(g, T + 17 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x4000000, 512 * KiB, 1, 1, 0, 0);
	dg_end(g, T + 18 * MS);
}

/*
 * Out-of-memory failures. Device 0 holds 512 MiB (s2: 2 x 128 MiB, s1: 256 MiB),
 * device 1 64 MiB (s1). Then:
 *   5 ms  cudaMalloc 1 GiB on dev0, tid 1, s3: MEMINFO 512 MiB free of 1 GiB, in the
 *         same batch (read before its event is released)
 *   6 ms  cudaMallocAsync 768 MiB on stream 0x5000, tid 2, s4: its MEMINFO (256 MiB
 *         free) comes after two batches, when the event was released already
 *   700 ms cuMemCreate 2 GiB on dev1, s5: no MEMINFO
 *   701 ms cudaMalloc failing with result 1, a free failing with result 2, and a
 *         MEMINFO that matches nothing: none of them is an out-of-memory.
 * 3 failures, 1 GiB + 768 MiB + 2 GiB = 4026531840 bytes requested.
 */
static void oom_dump(struct dg *g)
{
	const uint64_t T = 1000000, MS = 1000000;
	report_prologue(g);
	dg_batch(g, T, 0);
	ev(g, T + 1 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x10000000, 256 * MiB, 1, 1, 0, 0);
	ev(g, T + 2 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x20000000, 128 * MiB, 1, 2, 0, 0);
	ev(g, T + 3 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x30000000, 128 * MiB, 1, 2, 0, 0);
	ev(g, T + 4 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x40000000, 64 * MiB, 1, 1, 1, 0);
	struct dg_ev e1 = {.ts = T + 5 * MS, .dur = 100, .size = 1ull << 30, .tid = 1, .stack_id = 3,
			   .result = 2, .api = CT_API_cudaMalloc, .op = CT_OP_ALLOC, .kind = CT_KIND_DEVICE};
	dg_event(g, &e1);
	dg_meminfo(g, T + 5 * MS + 50, T + 5 * MS - 100, 1, 0, 512 * MiB, 1ull << 30);
	struct dg_ev e2 = {.ts = T + 6 * MS, .dur = 200, .size = 768 * MiB, .stream = 0x5000, .tid = 2,
			   .stack_id = 4, .result = 2, .api = CT_API_cudaMallocAsync, .op = CT_OP_ALLOC,
			   .kind = CT_KIND_DEVICE};
	dg_event(g, &e2);
	dg_batch(g, T + 500 * MS, 1);
	dg_batch(g, T + 600 * MS, 2);
	dg_meminfo(g, T + 6 * MS + 70, T + 6 * MS - 200, 2, 0, 256 * MiB, 1ull << 30);
	struct dg_ev e3 = {.ts = T + 700 * MS, .dur = 10, .ptr = 0, .size = 2ull << 30, .tid = 1,
			   .stack_id = 5, .result = 2, .api = CT_API_cuMemCreate, .op = CT_OP_PHYS_CREATE,
			   .kind = CT_KIND_VMM_PHYSICAL, .device = 1};
	dg_event(g, &e3);
	ev(g, T + 701 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0, 1 << 20, 1, 3, 0, 1);
	ev(g, T + 702 * MS, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x10000000, 0, 1, 0, 0, 2);
	dg_meminfo(g, T + 703 * MS, 12345, 9, 0, 1, 2);
	ev(g, T + 704 * MS, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x10000000, 0, 1, 0, 0, 0);
	dg_end(g, T + 800 * MS);
}

/*
 * Fragmentation on device 0 (ms after the 1 ms start), sampled at 4 points:
 *   1 A 0x100000 4 KiB, 2 B 0x103000 4 KiB, 3 C 0x108000 8 KiB: span 40 KiB,
 *     16 KiB live, holes 8 KiB and 16 KiB (24 KiB free, the largest 16 KiB: 33%)
 *   4 cudaMallocAsync 1 MiB (default pool), 5 cudaMemPoolCreate 0xb00,
 *   5.5 cudaMallocFromPoolAsync 2 MiB from 0xb00,
 *   6 cuMemAddressReserve 8 MiB, 6.1 cuMemCreate 2 MiB (the peak: 5 MiB + 16 KiB),
 *   6.2 cuMemMap 2 MiB
 *   7 free B: one hole of 28 KiB; 8 cudaFreeAsync of the 2 MiB (0xb00: 0 used,
 *   2 MiB reserved); 9 cudaMemPoolTrimTo(0xb00, 1 MiB): 1 MiB reserved;
 *   10 free A: C alone, no hole; end at 11.
 * The trace lasts 11 ms: 4 samples need 2^22 ns (4.194304 ms) apart, 3 are filled
 * (0, 4.194304, 8.388608 ms).
 */
static void frag_dump(struct dg *g)
{
	const uint64_t T = 1000000, MS = 1000000;
	report_prologue(g);
	ev(g, T + 1 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x100000, 4 * KiB, 1, 1, 0, 0);
	ev(g, T + 2 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x103000, 4 * KiB, 1, 1, 0, 0);
	ev(g, T + 3 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x108000, 8 * KiB, 1, 2, 0, 0);
	ev(g, T + 4 * MS, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMallocAsync, 0x7000000, 1 * MiB, 1, 3, 0, 0);
	ev(g, T + 5 * MS, CT_OP_POOL_CREATE, CT_KIND_DEVICE, CT_API_cudaMemPoolCreate, 0xb00, 0, 1, 0, 0, 0);
	struct dg_ev fp = {.ts = T + 5 * MS + MS / 2, .dur = 10, .ptr = 0x7100000, .size = 2 * MiB,
			   .stream = 0x5000, .aux = 0xb00, .tid = 1, .stack_id = 3,
			   .api = CT_API_cudaMallocFromPoolAsync, .op = CT_OP_ALLOC, .kind = CT_KIND_DEVICE};
	dg_event(g, &fp);
	ev(g, T + 6 * MS, CT_OP_VA_RESERVE, CT_KIND_VMM_RESERVED, CT_API_cuMemAddressReserve, 0x8000000, 8 * MiB, 1, 4, 0, 0);
	ev(g, T + 6 * MS + MS / 10, CT_OP_PHYS_CREATE, CT_KIND_VMM_PHYSICAL, CT_API_cuMemCreate, 0x77, 2 * MiB, 1, 4, 0, 0);
	ev(g, T + 6 * MS + MS / 5, CT_OP_MAP, CT_KIND_VMM_MAPPED, CT_API_cuMemMap, 0x8000000, 2 * MiB, 1, 4, 0, 0);
	ev(g, T + 7 * MS, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x103000, 0, 1, 0, 0, 0);
	struct dg_ev ff = {.ts = T + 8 * MS, .dur = 10, .ptr = 0x7100000, .stream = 0x5000, .tid = 1,
			   .api = CT_API_cudaFreeAsync, .op = CT_OP_FREE, .kind = CT_KIND_DEVICE};
	dg_event(g, &ff);
	ev(g, T + 9 * MS, CT_OP_POOL_TRIM, CT_KIND_DEVICE, CT_API_cudaMemPoolTrimTo, 0xb00, 1 * MiB, 1, 0, 0, 0);
	ev(g, T + 10 * MS, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x100000, 0, 1, 0, 0, 0);
	dg_end(g, T + 11 * MS);
}

/*
 * Streams (ms after the start; device 0, tid 1 unless said):
 *   1 create S1 = 0xa000, 1.1 create S2 = 0xb000
 *   2 p1 1 MiB on S1 (s1), 3 p2 2 MiB on S2 (s2), 4 p3 512 KiB per-thread (tid 1, s3)
 *   5 free p1 on S2 (cross), 6 sync S2 (3 us), 7 free p2 on S1 (cross),
 *   8 free p3 per-thread of tid 2 (another stream: cross)
 *   9 p4 4 MiB on S1 (s1), 10 free p4 on S1, 11 sync S1 (5 us)
 *   12 p5 8 MiB on S1 (s2), 13 free p5 on S1: pending (no sync after)
 *   14 p6 16 KiB on the legacy stream (s3), 15 free p6 on cudaStreamLegacy: the same
 *   stream, pending; 16 cudaDeviceSynchronize on device 1 (1 us): settles nothing here
 *   17 destroy S2; end 20.
 * Cross-stream: p1, p2, p3 = 3.5 MiB. Pending: p5 (s2, 8 MiB), p3 and p6 (s3, 528 KiB).
 */
static void streams_dump(struct dg *g)
{
	const uint64_t T = 1000000, MS = 1000000;
	report_prologue(g);
	struct dg_ev e = {.dur = 10, .tid = 1};
#define SEV(t, op_, api_, ptr_, size_, stream_, tid_, stack_, dev_, dur_)                               \
	do {                                                                                           \
		e = (struct dg_ev){.ts = (t), .dur = (dur_), .ptr = (ptr_), .size = (size_),             \
				   .stream = (stream_), .tid = (tid_), .stack_id = (stack_),             \
				   .api = CT_API_##api_, .op = CT_OP_##op_,                              \
				   .kind = CT_OP_##op_ == CT_OP_ALLOC || CT_OP_##op_ == CT_OP_FREE       \
						   ? CT_KIND_DEVICE                                      \
						   : CT_KIND_NONE,                                       \
				   .device = (dev_)};                                                    \
		dg_event(g, &e);                                                                       \
	} while (0)
	SEV(T + 1 * MS, STREAM_CREATE, cudaStreamCreate, 0xa000, 0, 0, 1, 0, 0, 10);
	SEV(T + 1 * MS + MS / 10, STREAM_CREATE, cudaStreamCreate, 0xb000, 0, 0, 1, 0, 0, 10);
	SEV(T + 2 * MS, ALLOC, cudaMallocAsync, 0x1000000, 1 * MiB, 0xa000, 1, 1, 0, 10);
	SEV(T + 3 * MS, ALLOC, cudaMallocAsync, 0x1100000, 2 * MiB, 0xb000, 1, 2, 0, 10);
	SEV(T + 4 * MS, ALLOC, cudaMallocAsync_ptsz, 0x1300000, 512 * KiB, 0x2, 1, 3, 0, 10);
	SEV(T + 5 * MS, FREE, cudaFreeAsync, 0x1000000, 0, 0xb000, 1, 0, 0, 10);
	SEV(T + 6 * MS, STREAM_SYNC, cudaStreamSynchronize, 0, 0, 0xb000, 1, 0, 0, 3000);
	SEV(T + 7 * MS, FREE, cudaFreeAsync, 0x1100000, 0, 0xa000, 1, 0, 0, 10);
	SEV(T + 8 * MS, FREE, cudaFreeAsync_ptsz, 0x1300000, 0, 0x2, 2, 0, 0, 10);
	SEV(T + 9 * MS, ALLOC, cudaMallocAsync, 0x1400000, 4 * MiB, 0xa000, 1, 1, 0, 10);
	SEV(T + 10 * MS, FREE, cudaFreeAsync, 0x1400000, 0, 0xa000, 1, 0, 0, 10);
	SEV(T + 11 * MS, STREAM_SYNC, cudaStreamSynchronize, 0, 0, 0xa000, 1, 0, 0, 5000);
	SEV(T + 12 * MS, ALLOC, cudaMallocAsync, 0x1500000, 8 * MiB, 0xa000, 1, 2, 0, 10);
	SEV(T + 13 * MS, FREE, cudaFreeAsync, 0x1500000, 0, 0xa000, 1, 0, 0, 10);
	SEV(T + 14 * MS, ALLOC, cudaMallocAsync, 0x1600000, 16 * KiB, 0, 1, 3, 0, 10);
	SEV(T + 15 * MS, FREE, cudaFreeAsync, 0x1600000, 0, 0x1, 1, 0, 0, 10);
	SEV(T + 16 * MS, DEVICE_SYNC, cudaDeviceSynchronize, 0, 0, 0, 1, 0, 1, 1000);
	SEV(T + 17 * MS, STREAM_DESTROY, cudaStreamDestroy, 0, 0, 0xb000, 1, 0, 0, 10);
#undef SEV
	dg_end(g, T + 20 * MS);
}

static void pystring(struct dg *g, uint32_t id, const char *s)
{
	struct ct_rec_pystring r;
	memset(&r, 0, sizeof r);
	r.rec.type = CT_REC_PYSTRING;
	r.string_id = id;
	r.len = (uint32_t)strlen(s) + 1;
	dg_record(g, &r, sizeof r, s, r.len, 0);
}

/* An allocation that carries Python stack py_id (the event's pystack trailer). */
static void alloc_py(struct dg *g, uint64_t ts, uint64_t ptr, uint64_t size, uint32_t tid,
		     uint32_t stack, uint32_t py_id)
{
	struct {
		struct ct_rec_event ev;
		struct ct_rec_event_py py;
	} r;
	memset(&r, 0, sizeof r);
	r.ev.rec.type = CT_REC_EVENT;
	r.ev.rec.flags = CT_EVENT_F_PYSTACK;
	r.ev.ts_ns = ts;
	r.ev.dur_ns = 10;
	r.ev.ptr = ptr;
	r.ev.size = size;
	r.ev.tid = tid;
	r.ev.stack_id = stack;
	r.ev.api = CT_API_cudaMalloc;
	r.ev.op = CT_OP_ALLOC;
	r.ev.kind = CT_KIND_DEVICE;
	r.ev.layer = CT_LAYER_RUNTIME;
	r.py.pystack_id = py_id;
	dg_record(g, &r, sizeof r, NULL, 0, 0);
}

/*
 * A dump for the exporters: two devices, pinned memory, a failed (OOM)
 * allocation, an address allocated again without its free, a device reset,
 * a Python stack, NVTX push/pop (one left open), a start/end range, marks,
 * a pop and an end that match nothing, and a stack missing from the dump.
 */
static void export_dump(struct dg *g)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, 4242, 1, 1000000,
		   (const char *[]){"version=0.1.0", "exe=/usr/bin/prog", "cwd=/work", "argv=prog",
				    "argv=--train", NULL});
	dg_module(g, 0x400000, 0x400000, 0x480000, NULL, 0, "/usr/bin/prog");
	libs_and_two_stacks(g);
	uint64_t s3[2] = {0x403000, 0x7f00000271ca};
	dg_stack(g, 3, 2, s3);
	pystring(g, 1, "train.py");
	pystring(g, 2, "step");
	pystring(g, 3, "<module>");
	struct {
		struct ct_rec_pystack h;
		struct ct_pyframe f[2];
	} ps;
	memset(&ps, 0, sizeof ps);
	ps.h.rec.type = CT_REC_PYSTACK;
	ps.h.pystack_id = 1;
	ps.h.depth = 2;
	ps.f[0] = (struct ct_pyframe){1, 2, 10};
	ps.f[1] = (struct ct_pyframe){1, 3, 20};
	dg_record(g, &ps, sizeof ps, NULL, 0, 0);
	const uint64_t T = 1000000, US = 1000;
	dg_batch(g, T, 0);
	dg_mark_kind(g, T + 500 * US, 1, CT_MARK_PUSH, 0, "epoch");
	dg_mark_kind(g, T + 1500 * US, 2, CT_MARK_INSTANT, 0, "checkpoint");
	dg_mark_kind(g, T + 1600 * US, 2, CT_MARK_START, 7, "load \"data\"");
	dg_mark_kind(g, T + 1700 * US, 3, CT_MARK_POP, 0, "");
	dg_mark_kind(g, T + 1800 * US, 3, CT_MARK_STOP, 99, "");
	ev(g, T + 1000 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x10000, 8 * MiB, 1, 1, 0, 0);
	ev(g, T + 1200 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x20000, 4 * MiB, 1, 2, 0, 0);
	ev(g, T + 1300 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0, 1 << 30, 1, 3, 0, 2);
	ev(g, T + 1400 * US, CT_OP_ALLOC, CT_KIND_HOST_PINNED, CT_API_cudaMallocHost, 0x900000, 64 << 10,
	   1, 2, 0, 0);
	alloc_py(g, T + 2500 * US, 0x30000, 2 * MiB, 2, 3, 1);
	dg_batch(g, T + 2600 * US, 1);
	dg_mark_kind(g, T + 3100 * US, 1, CT_MARK_STOP, 7, "");
	dg_mark_kind(g, T + 4500 * US, 1, CT_MARK_POP, 0, "");
	dg_mark_kind(g, T + 4600 * US, 2, CT_MARK_PUSH, 0, "tail");
	ev(g, T + 3000 * US, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x20000, 0, 1, 0, 0, 0);
	ev(g, T + 3500 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x40000, 1 * MiB, 2, 1, 1, 0);
	ev(g, T + 3600 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x50000, 512 << 10, 2, 77, 1,
	   0);
	ev(g, T + 4000 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x10000, 16 << 10, 1, 2, 0, 0);
	ev(g, T + 5000 * US, CT_OP_DEVICE_RESET, CT_KIND_NONE, CT_API_cudaDeviceReset, 0, 0, 2, 0, 1, 0);
	ev(g, T + 5500 * US, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, 0x30000, 0, 2, 0, 0, 0);
	dg_end(g, T + 6000 * US);
}

/*
 * Rank r of a four-rank job (the figures of tests/e2e/progs/rank_worker.c):
 * every rank leaks 64 MiB at one site, rank 3 leaks 32 MiB more, and each
 * allocates and frees (r + 1) x 16 MiB at a third site. Each process has its
 * own load addresses; shared_off moves the first site's innermost frame (to
 * make a different site). kv: the PROCESS strings after host and argv.
 */
static void rank_dump(struct dg *g, int r, uint64_t shared_off, const char *const *kv)
{
	const char *strings[16] = {"version=0.1.0", "host=node0", "argv=train"};
	size_t n = 3;
	for (size_t i = 0; kv && kv[i] && n < 15; i++)
		strings[n++] = kv[i];
	strings[n] = NULL;
	uint64_t prog = 0x400000 + (uint64_t)r * 0x10000000, libc = 0x7f0000000000 + (uint64_t)r * 0x100000000;
	dg_init(g);
	dg_header(g);
	dg_process(g, 1000 + (uint32_t)r, 999, 1000000, strings);
	dg_module(g, prog, prog, prog + 0x80000, NULL, 0, "/opt/job/train");
	dg_module(g, libc, libc, libc + 0x200000, NULL, 0, "/lib/x86_64-linux-gnu/libc.so.6");
	uint64_t shared[3] = {prog + shared_off, prog + 0x1500, libc + 0x271ca};
	uint64_t step[3] = {prog + 0x2000, prog + 0x1500, libc + 0x271ca};
	uint64_t extra[3] = {prog + 0x3000, prog + 0x1500, libc + 0x271ca};
	dg_stack(g, 1, 3, shared);
	dg_stack(g, 2, 3, step);
	dg_stack(g, 3, 3, extra);
	const uint64_t T = 1000000, MS = 1000000;
	dg_batch(g, T, 0);
	dg_alloc(g, T + 1 * MS, 0x10000000, 64 * MiB, 1);
	if (r == 3)
		dg_alloc(g, T + 2 * MS, 0x20000000, 32 * MiB, 3);
	dg_alloc(g, T + 3 * MS + (uint64_t)r * 1000, 0x30000000, (uint64_t)(r + 1) * 16 * MiB, 2);
	dg_free(g, T + 4 * MS, 0x30000000);
	dg_end(g, T + 5 * MS);
}

/* Rank r of the job with torchrun's variables (RANK, LOCAL_RANK, sizes, run id). */
static void rank_job_dump(struct dg *g, int r, uint64_t shared_off)
{
	char rank[32], local[32];
	snprintf(rank, sizeof rank, "env.RANK=%d", r);
	snprintf(local, sizeof local, "env.LOCAL_RANK=%d", r);
	const char *kv[] = {rank, local, "env.WORLD_SIZE=4", "env.LOCAL_WORLD_SIZE=4",
			    "env.GROUP_RANK=0", "env.TORCHELASTIC_RUN_ID=job1", NULL};
	rank_dump(g, r, shared_off, kv);
}

static void rank0_dump(struct dg *g)
{
	rank_job_dump(g, 0, 0x1234);
}

static void rank1_dump(struct dg *g)
{
	rank_job_dump(g, 1, 0x1234);
}

static void rank2_dump(struct dg *g)
{
	rank_job_dump(g, 2, 0x1234);
}

static void rank3_dump(struct dg *g)
{
	rank_job_dump(g, 3, 0x1234);
}

/*
 * The html page's own dump (ms since the process start at 1 ms; tid 1):
 *   41 the first record: "train" pushed twice (cumtrace.range and NVTX: one range);
 *   41.1 cudaMalloc 8 MiB (s1), never freed: the largest leak;
 *   46.5 "epoch 1" started (id 9) and marked at the same time (one entry), ended at 71;
 *   42..91 fifty step marks "step", each with an instant "sync" 100 ns later (its tick
 *   thinned away); in each step cudaMallocAsync 4 MiB (s3, default pool) at +0.2 and
 *   cudaFreeAsync at +0.7: the pool keeps 4 MiB reserved while nothing is live in it;
 *   in step 20 (61.3 .. 61.4) cudaMalloc 32 MiB (s2): the peak, 44 MiB, between two
 *   frag samples;
 *   95 both "train" popped; end at 96.
 */
static void html_dump(struct dg *g)
{
	const uint64_t MS = 1000000, US = 1000, T = 41 * MS;
	report_prologue(g);
	dg_mark_kind(g, T, 1, CT_MARK_PUSH, 0, "train");
	dg_mark_kind(g, T + 1, 1, CT_MARK_PUSH, 0, "train");
	ev(g, T + 100 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, 0x100000, 8 * MiB, 1, 1, 0, 0);
	dg_mark_kind(g, T + 5 * MS + MS / 2, 1, CT_MARK_START, 9, "epoch 1");
	dg_mark_kind(g, T + 5 * MS + MS / 2, 1, CT_MARK_INSTANT, 0, "epoch 1");
	dg_mark_kind(g, T + 30 * MS, 1, CT_MARK_STOP, 9, "");
	for (uint64_t i = 0; i < 50; i++) {
		uint64_t t = T + (i + 1) * MS;
		dg_mark_kind(g, t, 1, CT_MARK_STEP, CT_STEP_EXPLICIT, "step");
		dg_mark_kind(g, t + 100, 1, CT_MARK_INSTANT, 0, "sync");
		struct dg_ev a = {.ts = t + 200 * US, .dur = 10, .ptr = 0x7000000, .size = 4 * MiB,
				  .stream = 0x5000, .tid = 1, .stack_id = 3,
				  .api = CT_API_cudaMallocAsync, .op = CT_OP_ALLOC, .kind = CT_KIND_DEVICE};
		dg_event(g, &a);
		if (i == 20) {
			const uint64_t p = 0x4000000;
			ev(g, t + 300 * US, CT_OP_ALLOC, CT_KIND_DEVICE, CT_API_cudaMalloc, p, 32 * MiB, 1, 2, 0, 0);
			ev(g, t + 400 * US, CT_OP_FREE, CT_KIND_DEVICE, CT_API_cudaFree, p, 0, 1, 0, 0, 0);
		}
		struct dg_ev f = {.ts = t + 700 * US, .dur = 10, .ptr = 0x7000000, .stream = 0x5000, .tid = 1,
				  .api = CT_API_cudaFreeAsync, .op = CT_OP_FREE, .kind = CT_KIND_DEVICE};
		dg_event(g, &f);
	}
	dg_mark_kind(g, T + 54 * MS, 1, CT_MARK_POP, 0, "");
	dg_mark_kind(g, T + 54 * MS + 1, 1, CT_MARK_POP, 0, "");
	dg_end(g, T + 55 * MS);
}

/* The dump generators by name, for the case files' "dump" lines. */
struct golden_dump_gen {
	const char *name;
	void (*make)(struct dg *g);
};

static void classes_base_dump(struct dg *g)
{
	classes_dump(g, 0);
}

static void classes_now_dump(struct dg *g)
{
	classes_dump(g, 1);
}

static const struct golden_dump_gen golden_dump_gens[] = {
	{"golden", golden_dump},
	{"classes-base", classes_base_dump},
	{"classes-now", classes_now_dump},
	{"devices-phases", devices_phases_dump},
	{"oom", oom_dump},
	{"frag", frag_dump},
	{"streams", streams_dump},
	{"export", export_dump},
	{"html", html_dump},
	{"rank0", rank0_dump},
	{"rank1", rank1_dump},
	{"rank2", rank2_dump},
	{"rank3", rank3_dump},
};

#endif
