/*
 * cumtrace dump format, version 1.
 *
 * This header is the one contract between the shim (libcumtrace.so), which
 * writes dumps, and the analyzer (cumtrace-report), which reads them. Nothing
 * else defines the layout of a dump.
 *
 * Layout of a file:
 *
 *   struct ct_file_header                 16 bytes at offset 0
 *   record, record, record, ...           until end of file
 *
 * Every record starts with struct ct_rec: a 16-bit type, 16 bits of flags and
 * a 32-bit size that counts the whole record, header included. Sizes are
 * multiples of 8 and at least 8, and never larger than CT_REC_MAX. A reader
 * skips a record whose type it does not know, so newer shims may add record
 * types without breaking older analyzers; a record of a known type that is
 * longer than the struct described here carries extra trailing fields that
 * the reader ignores. A record shorter than its type's fixed part is corrupt.
 *
 * All integers are little-endian, in the byte order of the writing host (the
 * shim only runs on x86-64 and aarch64 Linux, both little-endian).
 *
 * Ordering: records from one thread appear in the order that thread made
 * them, and so do its events' timestamps (each call is stamped after the
 * thread's previous one), with one exception: a signal handler's calls made
 * while the thread was inside a traced call are recorded before that call's
 * event and stamped within its duration, so that call's event (a free,
 * stamped at entry) may carry an earlier timestamp than the records before
 * it. Records of different threads interleave in chunks: the background
 * writer copies each thread's ring in turn. Before each round of copying the
 * writer emits a CT_REC_BATCH whose snapshot time is taken before any ring is
 * read, so every event whose record was complete at that instant is in this
 * batch or an earlier one. A reader that wants global time
 * order keeps the events of the current batch in a heap and, on the next
 * CT_REC_BATCH, releases those with ts_ns <= the previous batch's snapshot
 * time. Records inside a CT_REC_ZSTD count as standing where it stands.
 *
 * Timestamps are CLOCK_MONOTONIC nanoseconds. CT_REC_PROCESS gives the
 * monotonic and realtime clocks read together at start, to convert. (The
 * shim may stamp events with the CPU's constant-rate counter and convert to
 * CLOCK_MONOTONIC as it writes them, through calibration points it takes
 * every round; the conversion is one non-decreasing function for every
 * thread, so the rules here hold for what is in the file. setting.clock in
 * CT_REC_PROCESS says which clock was read.)
 *
 * An allocation's ts_ns is the moment its call returned, a free's the moment
 * its call was entered: a block is live from ts_ns of its allocation to ts_ns
 * of its free, and a free of P always sorts before a later allocation that
 * returns P again, whatever thread makes it.
 *
 * Crash safety: the shim writes with write(2) on a regular file. What write(2)
 * accepted survives kill -9 of the process (the kernel owns the page cache),
 * so after a crash the file ends at a record boundary of the last completed
 * write or, if the process died inside write(2), in the middle of a record:
 * a reader reports a truncated tail and keeps what came before it. A
 * CT_REC_ZSTD is written whole by one write(2), so the same holds for it: a
 * compressed record cut short is a truncated tail, never a corrupt one.
 */
#ifndef CUMTRACE_FORMAT_H
#define CUMTRACE_FORMAT_H

#include <stdint.h>

#define CT_MAGIC "CUMTRACE" /* 8 bytes, no NUL in the file */
#define CT_MAGIC_LEN 8
#define CT_FORMAT_VERSION 1 /* readers refuse a major version they do not know */

/* Largest record a writer emits and a reader accepts (bytes). */
#define CT_REC_MAX (1u << 20)
/* Deepest native stack a writer records. */
#define CT_STACK_MAX 256

struct ct_file_header {
	char magic[CT_MAGIC_LEN]; /* CT_MAGIC */
	uint16_t version;	  /* CT_FORMAT_VERSION */
	uint16_t header_size;	  /* sizeof(struct ct_file_header) for v1: 16 */
	uint32_t reserved;	  /* 0 */
};

struct ct_rec {
	uint16_t type;	/* enum ct_rec_type */
	uint16_t flags; /* per type; 0 unless stated */
	uint32_t size;	/* whole record in bytes, header included, multiple of 8 */
};

/*
 * Every record type, one row each: the one table that the reader, the
 * writer, the shim's clock conversion and scripts' decoder (ctdump.py parses
 * it out of this file) take record types from. Append only, never renumber.
 *
 *   X(NAME, number, name, struct, minimum size, carries ticks)
 *
 * NAME gives CT_REC_NAME; name is what messages and tools call the type;
 * struct ct_NAME... is its fixed part, minimum size its sizeof (a record
 * shorter than that is corrupt); carries ticks is 1 for the types that the
 * shim stamps with its clock and whose timestamps it converts to
 * CLOCK_MONOTONIC nanoseconds as it writes them (see "Timestamps" above).
 */
#define CT_REC_LIST(X)                                                                              \
	X(PAD, 0, pad, ct_rec, 8, 0)		       /* filler: skip */                           \
	X(PROCESS, 1, process, ct_rec_process, 40, 0)  /* once, first record */                     \
	X(EVENT, 2, event, ct_rec_event, 80, 1)	       /* one intercepted call */                   \
	X(STACK, 3, stack, ct_rec_stack, 16, 0)	       /* an interned native stack */               \
	X(MODULE, 4, module, ct_rec_module, 48, 0)     /* a loaded ELF object */                    \
	X(DROPS, 5, drops, ct_rec_drops, 32, 0)	       /* calls made but not recorded */          \
	X(BATCH, 6, batch, ct_rec_batch, 24, 0)	       /* start of a writer round */                \
	X(END, 7, end, ct_rec_end, 40, 0)	       /* clean shutdown */                         \
	X(MARK, 8, mark, ct_rec_mark, 32, 1)	       /* user marker or NVTX range */              \
	X(ZSTD, 9, zstd, ct_rec_zstd, 16, 0)	       /* a zstd-compressed run of records */       \
	X(SYMBOLS, 10, symbols, ct_rec_symbols, 24, 0) /* embedded symbols (report symbolize) */    \
	X(PYSTACK, 11, pystack, ct_rec_pystack, 16, 0) /* an interned Python stack */               \
	X(PYSTRING, 12, pystring, ct_rec_pystring, 16, 0) /* an interned Python string */           \
	X(MEMINFO, 13, meminfo, ct_rec_meminfo, 48, 1) /* free/total after an out-of-memory */ \
	X(COUNTER, 14, counter, ct_rec_counter, 32, 1) /* a named value sampled (JAX memory_stats) */ \
	/* ---- the memory no allocation call shows (issue 19 §6) ---- */                            \
	X(MEMSAMPLE, 15, memsample, ct_rec_memsample, 112, 1) /* device memory, pools, graph pool */ \
	/* ---- packed events (issue 15) ---- */                                                      \
	X(EVENTS, 16, events, ct_rec_events, 24, 0) /* one thread's events, packed */

enum ct_rec_type {
#define CT_REC_ENUM_(NAME, number, name, type, min_size, ticks) CT_REC_##NAME = number,
	CT_REC_LIST(CT_REC_ENUM_)
#undef CT_REC_ENUM_
	CT_REC_TYPE_COUNT
};

/*
 * CT_REC_PROCESS: who wrote the dump. The fixed part is followed, up to the
 * record size, by NUL-terminated "key=value" strings (split at the first '=').
 * Keys: "version" (cumtrace version), "host", "exe", "cwd", "argv" (repeated,
 * in order), "output" (the expanded path), and "setting.NAME" for every
 * setting in force (stack_depth, buffer_mb, drop, flush_ms, backend, compress:
 * "zstd" or "off", clock: "tsc" or "monotonic"), and "env.NAME" for each
 * variable of a distributed launch (CT_LAUNCH_ENV_LIST below) that is set in
 * the process's environment when tracing starts, its value cut to
 * CT_LAUNCH_VALUE_MAX - 1 bytes. Unknown keys are ignored. Padding NULs may
 * follow the last string.
 *
 * The "env." keys were added without a version change (readers ignore keys
 * they do not know): a dump written before them, or by a process started
 * without a launcher, has none, and its rank is unknown. A reader takes the
 * rank from env.RANK (torchrun, torch.distributed.launch), else
 * env.SLURM_PROCID, env.OMPI_COMM_WORLD_RANK, env.PMI_RANK, in that order.
 */
struct ct_rec_process {
	struct ct_rec rec;
	uint32_t pid;
	uint32_t ppid;		     /* parent pid; after fork, the process that forked */
	uint64_t start_realtime_ns;  /* CLOCK_REALTIME at start */
	uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC read together with it */
	uint32_t clock_id;	     /* clock of every ts_ns: CLOCK_MONOTONIC (1) */
	uint32_t forked;	     /* 1 when this dump is a fork child's */
	/* char strings[]; */
};

/*
 * The environment variables of distributed launchers recorded as "env.NAME"
 * in CT_REC_PROCESS, append only: torchrun's (and torch.distributed.launch's)
 * rank, local rank, sizes, node rank, rendezvous address and run id, then
 * Slurm's, Open MPI's and PMI's equivalents of the rank, then PyTorch's
 * allocator settings (the analyzer reads which allocator mode ran).
 */
#define CT_LAUNCH_ENV_LIST(X)                                                  \
	X(RANK)                                                                \
	X(LOCAL_RANK)                                                          \
	X(WORLD_SIZE)                                                          \
	X(LOCAL_WORLD_SIZE)                                                    \
	X(GROUP_RANK)                                                          \
	X(NODE_RANK)                                                           \
	X(ROLE_RANK)                                                           \
	X(MASTER_ADDR)                                                         \
	X(MASTER_PORT)                                                         \
	X(TORCHELASTIC_RUN_ID)                                                 \
	X(TORCHELASTIC_RESTART_COUNT)                                          \
	X(SLURM_PROCID)                                                        \
	X(SLURM_LOCALID)                                                       \
	X(SLURM_NTASKS)                                                        \
	X(OMPI_COMM_WORLD_RANK)                                                \
	X(OMPI_COMM_WORLD_LOCAL_RANK)                                          \
	X(OMPI_COMM_WORLD_SIZE)                                                \
	X(PMI_RANK)                                                            \
	X(PMI_SIZE)                                                            \
	X(PYTORCH_CUDA_ALLOC_CONF)                                             \
	X(PYTORCH_ALLOC_CONF)                                                  \
	X(PYTORCH_NO_CUDA_MEMORY_CACHING)

enum ct_launch_env {
#define CT_LAUNCH_ENUM_(name) CT_LAUNCH_##name,
	CT_LAUNCH_ENV_LIST(CT_LAUNCH_ENUM_)
#undef CT_LAUNCH_ENUM_
	CT_LAUNCH_COUNT
};

#define CT_LAUNCH_KEY_PREFIX "env." /* the key of variable NAME is "env.NAME" */
#define CT_LAUNCH_VALUE_MAX 256	    /* bytes of a value, NUL included, at most */

/* The variable's name ("RANK"); NULL for ids out of range. */
static inline const char *ct_launch_env_name(unsigned id)
{
	static const char *const names[] = {
#define CT_LAUNCH_NAME_(name) #name,
		CT_LAUNCH_ENV_LIST(CT_LAUNCH_NAME_)
#undef CT_LAUNCH_NAME_
	};
	return id < CT_LAUNCH_COUNT ? names[id] : 0;
}

/* Which API family made a call. */
enum ct_layer {
	CT_LAYER_NONE = 0,
	CT_LAYER_RUNTIME = 1, /* cuda* (libcudart) */
	CT_LAYER_DRIVER = 2,  /* cu* (libcuda) */
	CT_LAYER_CUPTI = 3,   /* seen through a CUPTI callback */
	CT_LAYER_USER = 4,    /* cumtrace_mark and NVTX */
	CT_LAYER_FRAMEWORK = 5, /* a framework's allocator (PyTorch): see "Framework events" */
	/* ---- NCCL (issue 19 §5) ---- */
	CT_LAYER_NCCL = 6,	/* nccl* (libnccl): see CT_OP_NCCL */
};

/* What an event does to memory or streams. */
enum ct_op {
	CT_OP_NONE = 0,
	CT_OP_ALLOC = 1,	  /* ptr/size become live */
	CT_OP_FREE = 2,		  /* ptr stops being live */
	CT_OP_STREAM_CREATE = 3,  /* ptr = new stream handle, flags, aux = priority */
	CT_OP_STREAM_DESTROY = 4, /* stream = the stream */
	CT_OP_STREAM_SYNC = 5,	  /* stream = the stream, dur_ns = time blocked */
	CT_OP_DEVICE_SYNC = 6,	  /* dur_ns = time blocked */
	CT_OP_DEVICE_RESET = 7,	  /* leak checkpoint: device's allocations die */
	CT_OP_SET_DEVICE = 8,	  /* device = the new current device */
	CT_OP_POOL_CREATE = 9,	  /* ptr = pool handle */
	CT_OP_POOL_DESTROY = 10,  /* ptr = pool handle */
	CT_OP_POOL_TRIM = 11,	  /* ptr = pool handle, size = minBytesToKeep */
	CT_OP_VA_RESERVE = 12,	  /* VMM: ptr/size of reserved address range */
	CT_OP_VA_FREE = 13,	  /* VMM: reserved range released */
	CT_OP_PHYS_CREATE = 14,	  /* VMM: ptr = allocation handle, size = bytes */
	CT_OP_PHYS_RELEASE = 15,  /* VMM: ptr = allocation handle */
	CT_OP_MAP = 16,		  /* VMM: ptr/size mapped, aux = allocation handle */
	CT_OP_UNMAP = 17,	  /* VMM: ptr/size unmapped */
	CT_OP_CTX_DESTROY = 18,	  /* leak checkpoint like DEVICE_RESET */
	/*
	 * ---- CUDA graphs (issue 19 §2) ----
	 * A graph's memory exists from a launch, not from the call that adds its
	 * alloc node: readers commit each GRAPH_ALLOC node of an exec at each
	 * GRAPH_LAUNCH of it (an allocation of kind CT_KIND_GRAPH, with the
	 * node's stack), run its GRAPH_FREE nodes after, and first free what the
	 * exec's previous launch left live when it was instantiated with
	 * cudaGraphInstantiateFlagAutoFreeOnLaunch (flags bit 0). A graph
	 * allocation is also freed by an ordinary free of its address (cudaFree,
	 * cudaFreeAsync outside capture). The device keeps the memory in its graph
	 * pool until cudaDeviceGraphMemTrim (GRAPH_TRIM).
	 */
	CT_OP_GRAPH_ALLOC = 19,	      /* alloc node: ptr/size (address fixed at creation), aux = graph
				       * (0: unknown); cudaGraphAddMemAllocNode, or a stream-ordered
				       * allocation made while its stream captured (api says which) */
	CT_OP_GRAPH_FREE = 20,	      /* free node: ptr, aux = graph (0: unknown) */
	CT_OP_GRAPH_INSTANTIATE = 21, /* ptr = exec, aux = graph, flags = instantiate flags */
	CT_OP_GRAPH_LAUNCH = 22,      /* ptr = exec, stream */
	CT_OP_GRAPH_DESTROY = 23,     /* ptr = exec (kind graph) or graph (kind none): no memory change */
	CT_OP_GRAPH_TRIM = 24,	      /* device = the device whose graph pool was trimmed */
	/* ---- imported and shared memory, multicast (issue 19 §4) ----
	 * Another process's memory mapped here is kind CT_KIND_IMPORTED: shown, never
	 * this process's allocation (no leak, no peak). Its release matches its
	 * import: cudaIpcCloseMemHandle / cuIpcCloseMemHandle (CT_OP_FREE, kind
	 * imported, ptr = the address), cudaFree & co. of an imported pool pointer
	 * (CT_OP_FREE of that address), cuMemRelease of an imported handle
	 * (CT_OP_PHYS_RELEASE of the handle). A cuMemMap of an imported handle maps
	 * imported memory (the analyzer ties the map to the handle). */
	CT_OP_IMPORT = 25,	  /* ptr = address (IPC open, pool import pointer) or allocation handle
				   * (cuMemImportFromShareableHandle), size = bytes (0: unknown, see the
				   * handle's mappings, read by the shim with cuMemGetAddressRange_v2 for
				   * addresses), aux = the shareable handle (fd), the pool (pool pointer
				   * imports) or 0, flags = the IPC flags or the handle type */
	CT_OP_EXPORT = 26,	  /* ptr = the exported allocation's address or handle, aux = the
				   * shareable handle (fd) when it fits, flags = handle type; an attribute */
	CT_OP_RETAIN = 27,	  /* cuMemRetainAllocationHandle: ptr = the handle, aux = the address;
				   * a reference that one later cuMemRelease of ptr drops */
	CT_OP_MC_ADD_DEVICE = 28, /* ptr = multicast handle, device = the device added */
	CT_OP_MC_BIND = 29,	  /* ptr = multicast handle, aux = memory handle (BindMem) or address
				   * (BindAddr, flags bit 31 set), size = bytes, stream = mcOffset */
	CT_OP_MC_UNBIND = 30,	  /* ptr = multicast handle, device, size = bytes, stream = mcOffset */
	/* ---- NCCL (issue 19 §5) ----
	 * A call of libnccl (layer CT_LAYER_NCCL), stamped at entry with dur_ns its
	 * time in the call: the CUDA allocations the same thread makes inside an
	 * init call (ts_ns .. ts_ns + dur_ns) are that communicator's. Fields by api:
	 *   ncclCommInitRank, ncclCommInitRankConfig: ptr = the new communicator,
	 *     aux = the unique id's 64-bit FNV-1a hash, stream = rank | nranks << 32
	 *   ncclCommInitAll: ptr = the first communicator, stream = nranks << 32
	 *     (the others are counted with it)
	 *   ncclCommSplit: ptr = the new communicator (0: not in it), aux = the parent
	 *   ncclCommDestroy, ncclCommAbort: ptr = the communicator
	 *   ncclMemAlloc: ptr, size; ncclMemFree: ptr
	 *   ncclCommRegister: aux = comm, ptr, size = the buffer, stream = the handle;
	 *   ncclCommDeregister: aux = comm, stream = the handle
	 *   ncclCommWindowRegister: aux = comm, ptr, size = the buffer, stream = the
	 *     window, flags = winFlags; ncclCommWindowDeregister: aux = comm, stream = the window
	 * Each call is two events of its thread: one at entry with flags
	 * CT_NCCL_F_BEGIN and no other field, then, after the CUDA calls NCCL made
	 * inside it (recorded: they are what it allocates), one at return with the
	 * fields above and the result. The CUDA allocations between the two of an
	 * init or split call (same thread) are that communicator's. */
	CT_OP_NCCL = 31,
	CT_OP_COUNT
};
#define CT_NCCL_F_BEGIN 0x80000000u /* CT_OP_NCCL's flags: the event at the call's entry */
#define CT_MC_BIND_ADDR 0x80000000u /* CT_OP_MC_BIND's flags: the memory was given by address */

/*
 * Ops that create memory (a graph alloc node: the memory its launches will
 * commit): the shim stamps them at return and records their stack; a failure
 * of one with result 2 (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY)
 * is an out-of-memory (see CT_REC_MEMINFO).
 */
static inline int ct_op_is_allocation(unsigned op)
{
	return op == CT_OP_ALLOC || op == CT_OP_VA_RESERVE || op == CT_OP_PHYS_CREATE ||
	       op == CT_OP_MAP || op == CT_OP_POOL_CREATE || op == CT_OP_GRAPH_ALLOC ||
	       op == CT_OP_IMPORT;
}

/* The result of a failed allocation call that ran out of memory (both APIs). */
#define CT_RESULT_OUT_OF_MEMORY 2

/* What kind of memory an allocation is. */
enum ct_kind {
	CT_KIND_NONE = 0,
	CT_KIND_DEVICE = 1,	     /* device memory (cudaMalloc*, pools) */
	CT_KIND_HOST_PINNED = 2,     /* page-locked host memory allocated by CUDA */
	CT_KIND_HOST_REGISTERED = 3, /* user host memory page-locked by CUDA */
	CT_KIND_MANAGED = 4,	     /* unified memory */
	CT_KIND_VMM_PHYSICAL = 5,    /* cuMemCreate physical allocation */
	CT_KIND_VMM_RESERVED = 6,    /* cuMemAddressReserve range */
	CT_KIND_VMM_MAPPED = 7,	     /* cuMemMap mapping */
	/*
	 * A CUDA array (cudaMallocArray, cudaMalloc3DArray, cudaMallocMipmappedArray,
	 * cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate): ptr = the array's
	 * handle (freed by cudaFreeArray / cudaFreeMipmappedArray / cuArrayDestroy /
	 * cuMipmappedArrayDestroy with it), size = width x height x depth x element
	 * bytes summed over its mipmap levels (height, depth 0 count as 1; 0 when the
	 * element format is one the shim does not know), aux = width | height << 32,
	 * stream = depth | element bytes << 32 | levels << 48 (the extent in elements).
	 * Device memory: the device may charge more (alignment, tiling).
	 */
	CT_KIND_ARRAY = 8,
	/* ---- CUDA graphs (issue 19 §2) ----
	 * Memory of a CUDA graph's pool: the allocation of an alloc node, live
	 * from the launch that commits it to its free (CT_OP_GRAPH_ALLOC). */
	CT_KIND_GRAPH = 9,
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */
	/* Another process's memory mapped here (IPC open, pool import pointer,
	 * cuMemImportFromShareableHandle and the mappings of such a handle): listed,
	 * never this process's allocation (not in leaks or the peak). */
	CT_KIND_IMPORTED = 10,
	/* A multicast object (cuMulticastCreate): ptr = its handle, size = its size;
	 * listed, released by cuMemRelease, not memory of its own (not in leaks or the peak). */
	CT_KIND_MULTICAST = 11,
	CT_KIND_COUNT,
	/* Framework kinds: only on framework events (CT_LAYER_FRAMEWORK), never
	 * memory of the CUDA layer; CT_KIND_COUNT counts the kinds above only. */
	CT_KIND_TORCH_BLOCK = 16,   /* a block of PyTorch's caching allocator (a tensor's memory) */
	CT_KIND_TORCH_SEGMENT = 17, /* a segment it got from CUDA (cudaMalloc, or a VMM mapping) */
	CT_KIND_CUPY_BLOCK = 18,    /* a block of CuPy's memory pool (an array's memory) */
};

/*
 * Every API cumtrace knows, with stable numbers: append only, never reorder.
 * X(name, layer) for each; CT_API_NAME(id) gives the string.
 */
#define CT_API_LIST(X)                                                         \
	X(none, NONE)                                                          \
	X(cudaMalloc, RUNTIME)                                                 \
	X(cudaFree, RUNTIME)                                                   \
	X(cudaMallocHost, RUNTIME)                                             \
	X(cudaFreeHost, RUNTIME)                                               \
	X(cudaHostAlloc, RUNTIME)                                              \
	X(cudaHostRegister, RUNTIME)                                           \
	X(cudaHostUnregister, RUNTIME)                                         \
	X(cudaMallocManaged, RUNTIME)                                          \
	X(cudaMallocPitch, RUNTIME)                                            \
	X(cudaMalloc3D, RUNTIME)                                               \
	X(cudaMallocAsync, RUNTIME)                                            \
	X(cudaMallocFromPoolAsync, RUNTIME)                                    \
	X(cudaFreeAsync, RUNTIME)                                              \
	X(cudaMemPoolCreate, RUNTIME)                                          \
	X(cudaMemPoolDestroy, RUNTIME)                                         \
	X(cudaMemPoolTrimTo, RUNTIME)                                          \
	X(cudaStreamCreate, RUNTIME)                                           \
	X(cudaStreamCreateWithFlags, RUNTIME)                                  \
	X(cudaStreamCreateWithPriority, RUNTIME)                               \
	X(cudaStreamDestroy, RUNTIME)                                          \
	X(cudaStreamSynchronize, RUNTIME)                                      \
	X(cudaDeviceSynchronize, RUNTIME)                                      \
	X(cudaDeviceReset, RUNTIME)                                            \
	X(cudaSetDevice, RUNTIME)                                              \
	X(cudaMallocAsync_ptsz, RUNTIME)                                       \
	X(cudaMallocFromPoolAsync_ptsz, RUNTIME)                               \
	X(cudaFreeAsync_ptsz, RUNTIME)                                         \
	X(cudaStreamSynchronize_ptsz, RUNTIME)                                 \
	X(cuMemAlloc_v2, DRIVER)                                               \
	X(cuMemAllocPitch_v2, DRIVER)                                          \
	X(cuMemFree_v2, DRIVER)                                                \
	X(cuMemAllocHost_v2, DRIVER)                                           \
	X(cuMemHostAlloc, DRIVER)                                              \
	X(cuMemFreeHost, DRIVER)                                               \
	X(cuMemHostRegister_v2, DRIVER)                                        \
	X(cuMemHostUnregister, DRIVER)                                         \
	X(cuMemAllocManaged, DRIVER)                                           \
	X(cuMemAllocAsync, DRIVER)                                             \
	X(cuMemAllocFromPoolAsync, DRIVER)                                     \
	X(cuMemFreeAsync, DRIVER)                                              \
	X(cuMemPoolCreate, DRIVER)                                             \
	X(cuMemPoolDestroy, DRIVER)                                            \
	X(cuMemPoolTrimTo, DRIVER)                                             \
	X(cuMemCreate, DRIVER)                                                 \
	X(cuMemRelease, DRIVER)                                                \
	X(cuMemMap, DRIVER)                                                    \
	X(cuMemUnmap, DRIVER)                                                  \
	X(cuMemAddressReserve, DRIVER)                                         \
	X(cuMemAddressFree, DRIVER)                                            \
	X(cuStreamCreate, DRIVER)                                              \
	X(cuStreamDestroy_v2, DRIVER)                                          \
	X(cuStreamSynchronize, DRIVER)                                         \
	X(cuCtxDestroy_v2, DRIVER)                                             \
	X(cuDevicePrimaryCtxReset_v2, DRIVER)                                  \
	X(cuMemAllocAsync_ptsz, DRIVER)                                        \
	X(cuMemAllocFromPoolAsync_ptsz, DRIVER)                                \
	X(cuMemFreeAsync_ptsz, DRIVER)                                         \
	X(cuStreamSynchronize_ptsz, DRIVER)                                    \
	X(cuStreamCreateWithPriority, DRIVER)                                  \
	X(torch_alloc, FRAMEWORK)                                              \
	X(torch_free_requested, FRAMEWORK)                                     \
	X(torch_free_completed, FRAMEWORK)                                     \
	X(torch_segment_alloc, FRAMEWORK)                                      \
	X(torch_segment_free, FRAMEWORK)                                       \
	X(torch_segment_map, FRAMEWORK)                                        \
	X(torch_segment_unmap, FRAMEWORK)                                      \
	X(torch_oom, FRAMEWORK)                                                \
	X(cupy_alloc, FRAMEWORK)                                               \
	X(cupy_free, FRAMEWORK)                                                \
	X(cudaMallocArray, RUNTIME)                                            \
	X(cudaMalloc3DArray, RUNTIME)                                          \
	X(cudaMallocMipmappedArray, RUNTIME)                                   \
	X(cudaFreeArray, RUNTIME)                                              \
	X(cudaFreeMipmappedArray, RUNTIME)                                     \
	X(cuArrayCreate_v2, DRIVER)                                            \
	X(cuArray3DCreate_v2, DRIVER)                                          \
	X(cuMipmappedArrayCreate, DRIVER)                                      \
	X(cuArrayDestroy, DRIVER)                                              \
	X(cuMipmappedArrayDestroy, DRIVER)                                     \
	/* ---- CUDA graphs (issue 19 §2) ---- */                              \
	X(cudaStreamBeginCapture, RUNTIME)                                     \
	X(cudaStreamBeginCapture_ptsz, RUNTIME)                                \
	X(cudaStreamEndCapture, RUNTIME)                                       \
	X(cudaStreamEndCapture_ptsz, RUNTIME)                                  \
	X(cudaGraphAddMemAllocNode, RUNTIME)                                   \
	X(cudaGraphAddMemFreeNode, RUNTIME)                                    \
	X(cudaGraphInstantiate, RUNTIME)                                       \
	X(cudaGraphInstantiateWithFlags, RUNTIME)                              \
	X(cudaGraphInstantiateWithParams, RUNTIME)                             \
	X(cudaGraphInstantiateWithParams_ptsz, RUNTIME)                        \
	X(cudaGraphLaunch, RUNTIME)                                            \
	X(cudaGraphLaunch_ptsz, RUNTIME)                                       \
	X(cudaGraphExecDestroy, RUNTIME)                                       \
	X(cudaGraphDestroy, RUNTIME)                                           \
	X(cudaDeviceGraphMemTrim, RUNTIME)                                     \
	X(cuStreamBeginCapture_v2, DRIVER)                                     \
	X(cuStreamBeginCapture_v2_ptsz, DRIVER)                                \
	X(cuStreamEndCapture, DRIVER)                                          \
	X(cuStreamEndCapture_ptsz, DRIVER)                                     \
	X(cuGraphAddMemAllocNode, DRIVER)                                      \
	X(cuGraphAddMemFreeNode, DRIVER)                                       \
	X(cuGraphInstantiateWithFlags, DRIVER)                                 \
	X(cuGraphInstantiateWithParams, DRIVER)                                \
	X(cuGraphInstantiateWithParams_ptsz, DRIVER)                           \
	X(cuGraphLaunch, DRIVER)                                               \
	X(cuGraphLaunch_ptsz, DRIVER)                                          \
	X(cuGraphExecDestroy, DRIVER)                                          \
	X(cuGraphDestroy, DRIVER)                                              \
	X(cuDeviceGraphMemTrim, DRIVER)                                        \
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */ \
	X(cudaIpcGetMemHandle, RUNTIME)                                        \
	X(cudaIpcOpenMemHandle, RUNTIME)                                       \
	X(cudaIpcCloseMemHandle, RUNTIME)                                      \
	X(cudaMemPoolExportPointer, RUNTIME)                                   \
	X(cudaMemPoolImportPointer, RUNTIME)                                   \
	X(cuIpcGetMemHandle, DRIVER)                                           \
	X(cuIpcOpenMemHandle_v2, DRIVER)                                       \
	X(cuIpcCloseMemHandle, DRIVER)                                         \
	X(cuMemExportToShareableHandle, DRIVER)                                \
	X(cuMemImportFromShareableHandle, DRIVER)                              \
	X(cuMemRetainAllocationHandle, DRIVER)                                 \
	X(cuMemPoolExportPointer, DRIVER)                                      \
	X(cuMemPoolImportPointer, DRIVER)                                      \
	X(cuMulticastCreate, DRIVER)                                           \
	X(cuMulticastAddDevice, DRIVER)                                        \
	X(cuMulticastBindMem, DRIVER)                                          \
	X(cuMulticastBindAddr, DRIVER)                                         \
	X(cuMulticastUnbind, DRIVER)                                           \
	/* ---- NCCL (issue 19 §5) ---- */                                  \
	X(ncclCommInitRank, NCCL)                                              \
	X(ncclCommInitRankConfig, NCCL)                                        \
	X(ncclCommInitAll, NCCL)                                               \
	X(ncclCommSplit, NCCL)                                                 \
	X(ncclCommDestroy, NCCL)                                               \
	X(ncclCommAbort, NCCL)                                                 \
	X(ncclMemAlloc, NCCL)                                                  \
	X(ncclMemFree, NCCL)                                                   \
	X(ncclCommRegister, NCCL)                                              \
	X(ncclCommDeregister, NCCL)                                            \
	X(ncclCommWindowRegister, NCCL)                                        \
	X(ncclCommWindowDeregister, NCCL)

enum ct_api {
#define CT_API_ENUM_(name, layer) CT_API_##name,
	CT_API_LIST(CT_API_ENUM_)
#undef CT_API_ENUM_
	CT_API_COUNT
};

/*
 * CT_REC_EVENT: one intercepted call. Fields that an API does not have are 0.
 * result is the real call's return code (cudaError_t or CUresult, both 0 on
 * success); a call with result != 0 is a failure and never an allocation or
 * free, whatever its op.
 */
struct ct_rec_event {
	struct ct_rec rec;
	uint64_t ts_ns;	   /* allocations: when the call returned; else when entered */
	uint64_t dur_ns;   /* time spent in the real call */
	uint64_t ptr;	   /* address (or handle, see enum ct_op) */
	uint64_t size;	   /* bytes */
	uint64_t stream;   /* stream handle argument; 0 = legacy default stream */
	uint64_t aux;	   /* pool handle, pitch, priority, ...: see enum ct_op */
	uint32_t tid;	   /* kernel thread id */
	uint32_t stack_id; /* CT_REC_STACK id, 0 = no stack recorded */
	int32_t result;	   /* the real call's return code */
	uint32_t flags;	   /* the API's flags argument */
	uint16_t api;	   /* enum ct_api */
	uint8_t op;	   /* enum ct_op */
	uint8_t kind;	   /* enum ct_kind */
	int16_t device;	   /* current device of the calling thread, -1 unknown */
	uint8_t layer;	   /* enum ct_layer */
	uint8_t reserved;  /* 0 */
};

/*
 * Event extension: when rec.flags has CT_EVENT_F_PYSTACK, the 80-byte event
 * is followed by struct ct_rec_event_py (rec.size is then 88): the Python
 * stack of the calling thread at the call. Readers that do not know the flag
 * see a longer-than-fixed record and ignore the trailer, as for any record.
 * Only events that also want a native stack (allocations and the like) carry
 * one, and only when the calling thread was running Python code of a CPython
 * interpreter (holding the GIL or not).
 */
#define CT_EVENT_F_PYSTACK 0x0001u
/*
 * The call was made inside a signal handler: no native or Python stack was
 * taken (unwinding there can deadlock on the loader's or malloc's lock held
 * by the code the handler interrupted). Set on events that would otherwise
 * have wanted a stack (allocations and the like); other events made in
 * handlers are not marked.
 */
#define CT_EVENT_F_SIGNAL 0x0002u

struct ct_rec_event_py {
	uint32_t pystack_id; /* CT_REC_PYSTACK id, >= 1 */
	uint32_t reserved;   /* 0 */
};

/*
 * Framework events: a CT_REC_EVENT with layer CT_LAYER_FRAMEWORK is not a CUDA
 * call but one event of a framework's allocator, as the framework reported it
 * to the shim (preload/hooks/torch.c: PyTorch's caching allocator, through its trace
 * tracker hook). They were added without a version change: a reader that does
 * not know the layer sees events of unknown APIs whose op is CT_OP_NONE, so it
 * never counts them as memory (a block lies inside a segment that the CUDA
 * layer recorded already: counting both would count the memory twice).
 *
 *   ts_ns     when the framework reported the event (the shim's clock, on the
 *             reporting thread); dur_ns 0
 *   api       the action: torch_alloc (a tensor's block handed out),
 *             torch_free_requested (the block given back), torch_free_completed
 *             (the block reusable: later than the request when the block was
 *             still in use on another stream, and then possibly on another
 *             thread), torch_segment_alloc / torch_segment_free (a segment got
 *             from or given back to CUDA with cudaMalloc / cudaFree),
 *             torch_segment_map / torch_segment_unmap (expandable segments:
 *             a range of a segment mapped or unmapped with cuMemMap /
 *             cuMemUnmap), torch_oom (the allocator is about to raise an
 *             out-of-memory error)
 *   op        CT_OP_NONE
 *   kind      CT_KIND_TORCH_BLOCK (alloc, free_requested, free_completed,
 *             oom) or CT_KIND_TORCH_SEGMENT (the segment events)
 *   ptr       the block's or segment's (range's) address; for torch_oom the
 *             device's free bytes as the allocator read them
 *   size      bytes: the size requested for a block (not rounded), the
 *             segment's or range's size; for torch_oom the size asked for
 *   stream    the stream the block or segment belongs to (0 = legacy default)
 *   device    the framework's device index
 *   aux       the memory pool id when flags has CT_FW_F_POOL: PyTorch's
 *             MempoolId_t (a, b) as a << 32 | b ((0, 0): the default pools; a
 *             CUDA graph's or a torch.cuda.MemPool's otherwise); 0 without the
 *             flag (a version without pool ids, or a half of 2^32 or more)
 *   flags     CT_FW_F_POOL or 0
 *   tid       the reporting thread
 *   stack_id  and the Python trailer (CT_EVENT_F_PYSTACK): the reporting
 *             thread's native and Python stacks, captured as for a CUDA
 *             allocation, on torch_alloc, torch_segment_alloc,
 *             torch_segment_map and torch_oom; none on the others
 *   result    0
 */
#define CT_FW_F_POOL 0x1u /* aux holds the event's memory pool id */
/*
 * CuPy's memory pool (the cumtrace Python package's MemoryHook, recorded
 * through cumtrace_cupy_alloc / cumtrace_cupy_free): the same fields, with
 *   api       cupy_alloc (malloc_postprocess: a block handed out) or
 *             cupy_free (free_postprocess: the block back in the pool)
 *   kind      CT_KIND_CUPY_BLOCK
 *   ptr, size the block's address and its size as the pool counts it
 *             (mem_size: rounded up, what pool.used_bytes() adds up)
 *   aux       cupy_alloc: the size the program asked for; else 0
 *   stream    0 (CuPy's hook does not say); flags 0
 *   stack_id  and the Python trailer on cupy_alloc, as on torch_alloc: the
 *             innermost Python frame is the hook's own (cumtrace/_boot.py)
 */

/*
 * CT_REC_PYSTRING: an interned string of Python frames (a file name or a
 * function's qualified name), UTF-8, written once per dump before the first
 * CT_REC_PYSTACK of the writing thread that uses it. Ids are >= 1, unique
 * within the dump; a later record with an id already seen is ignored. As for
 * native stacks, a record made on another thread may appear later in the
 * file than a use of its id: readers resolve ids after reading the dump.
 */
struct ct_rec_pystring {
	struct ct_rec rec;
	uint32_t string_id; /* >= 1 */
	uint32_t len;	    /* bytes of str, NUL included (<= 1025) */
	/* char str[len]; */
};

/* One Python frame: 12 bytes. */
struct ct_pyframe {
	uint32_t file_id; /* CT_REC_PYSTRING id: code object's co_filename */
	uint32_t func_id; /* CT_REC_PYSTRING id: co_qualname (co_name before 3.11) */
	int32_t line;	  /* current line, 0 or negative when unknown */
};

/*
 * CT_REC_PYSTACK: an interned Python stack, written once before its first
 * use (same rules as CT_REC_STACK). A repeated stack costs one id per event:
 * the writer interns stacks by a hash of their frames and strings by a hash
 * of their bytes.
 */
#define CT_PYSTACK_MAX 256 /* deepest Python stack a reader accepts (writer: 128) */

struct ct_rec_pystack {
	struct ct_rec rec;
	uint32_t pystack_id; /* >= 1, unique within the dump */
	uint16_t depth;	     /* number of frames, <= CT_PYSTACK_MAX */
	uint16_t reserved;
	/* struct ct_pyframe frames[depth]; innermost (most recent call) first */
};

/* CT_REC_STACK: an interned native stack, written once before its first use. */
struct ct_rec_stack {
	struct ct_rec rec;
	uint32_t stack_id; /* >= 1, unique within the dump */
	uint16_t depth;	   /* number of frames, <= CT_STACK_MAX */
	uint16_t reserved;
	/* uint64_t ips[depth]; innermost first; frames after the first are
	 * return addresses (subtract 1 to find the call's line) */
};

/*
 * CT_REC_MODULE: an ELF object mapped into the process. Written for every
 * object loaded at start and for each one dlopen'ed later, before the writer
 * flushes any stack that could point into it. An address ip belongs to the
 * module with lo <= ip < hi; its file offset-based address is ip - base.
 */
struct ct_rec_module {
	struct ct_rec rec;
	uint64_t base;	       /* load bias (dl_phdr_info.dlpi_addr) */
	uint64_t lo;	       /* lowest mapped address of its PT_LOAD segments */
	uint64_t hi;	       /* one past the highest */
	uint64_t ts_ns;	       /* when the writer saw it */
	uint16_t build_id_len; /* bytes of GNU build id, 0 if none */
	uint16_t path_len;     /* bytes of path, NUL included */
	uint32_t reserved;
	/* uint8_t build_id[build_id_len]; char path[path_len]; */
};

/*
 * CT_REC_DROPS: count traced calls that were made but not recorded: events a
 * thread dropped because its ring was full (drop mode), or, with
 * CT_DROPS_F_SIGNAL in rec.flags, calls made inside signal handlers that the
 * shim could not record (the handler interrupted the shim's own work on its
 * thread, or tracing's start-up, or the call would have had to wait for the
 * writer); those records have tid 0 and count for the whole process. A
 * reader that does not know the flag counts them as dropped events, which
 * they are. With CT_DROPS_F_RECORDS instead (tid 0) they count records that
 * are not events and were not recorded: marks, counters, memory samples
 * (a full ring in drop mode, a signal handler, start-up). They are never
 * dropped events (CT_REC_END's dropped leaves them out); a reader older than
 * the flag counts them as such.
 */
struct ct_rec_drops {
	struct ct_rec rec;
	uint64_t ts_ns;
	uint64_t count; /* dropped since the previous record for the same tid and flags */
	uint32_t tid;	/* 0: not one thread's */
	uint32_t reserved;
};
#define CT_DROPS_F_SIGNAL 0x0001u
#define CT_DROPS_F_RECORDS 0x0002u

/* CT_REC_BATCH: see "Ordering" above. */
struct ct_rec_batch {
	struct ct_rec rec;
	uint64_t snapshot_ns; /* monotonic time taken before the rings were read */
	uint64_t seq;	      /* 0, 1, 2, ... */
};

/*
 * CT_REC_END: the shim shut down cleanly (exit or unload). Events made later
 * still (atexit handlers of other libraries) may follow it; a reader keeps
 * reading to the end of the file.
 */
struct ct_rec_end {
	struct ct_rec rec;
	uint64_t ts_ns;
	uint64_t events;  /* events recorded in this process */
	uint64_t dropped; /* events dropped in this process (every CT_REC_DROPS count) */
	uint64_t stacks;  /* distinct stacks interned */
};

/*
 * CT_REC_MARK: a named instant, range boundary or step boundary on one
 * thread. Written by cumtrace_mark / cumtrace_range_push / cumtrace_range_pop /
 * cumtrace_step (the Python package: cumtrace.step(), torch optimizer steps)
 * and by NVTX when
 * NVTX_INJECTION64_PATH names libcumtrace.so (InitializeInjectionNvtx2:
 * nvtxMarkA/Ex, nvtxRangePushA/Ex, nvtxRangePop, nvtxRangeStartA/Ex,
 * nvtxRangeEnd and their nvtxDomain* forms; the name is the message: ASCII,
 * wide (narrowed to ASCII, '?' for other characters) or registered with
 * nvtxDomainRegisterStringA/W, after "DOMAIN/" when the call's domain (or a
 * registered string's) was created with a name by nvtxDomainCreateA/W, e.g.
 * "NCCL/AllReduce"; empty without a message. Dumps written before issue 19
 * have empty names for wide and registered messages and no domain). PUSH/POP nest
 * per thread; START/STOP pair by aux, a range id unique within the process
 * (>= 1) and may cross threads.
 */
enum ct_mark_kind {
	CT_MARK_INSTANT = 0, /* cumtrace_mark() or nvtxMark */
	CT_MARK_PUSH = 1,    /* nvtxRangePush: opens a nested range */
	CT_MARK_POP = 2,     /* nvtxRangePop: closes the innermost (name empty) */
	CT_MARK_START = 3,   /* nvtxRangeStart: aux = range id */
	CT_MARK_STOP = 4,    /* nvtxRangeEnd: aux = range id (name empty) */
	CT_MARK_STEP = 5,    /* cumtrace_step: a step boundary; aux = enum ct_step_source */
	/* cumtrace_exit_point: the program's own code ended (the Python package's atexit
	 * handler, before the interpreter's teardown frees what modules held): framework
	 * blocks still handed out here are leaked at exit. Name "exit", aux 0. Added without
	 * a version change: an older reader counts it as a mark of an unknown kind. */
	CT_MARK_EXIT = 6,
	/* cumtrace_bench_pause: tracing paused (aux 1, name "pause") or resumed (aux 0,
	 * "resume"); calls made in between were not recorded. Added without a version
	 * change: an older reader counts it as a mark of an unknown kind. */
	CT_MARK_PAUSE = 7,
};

/*
 * Where a CT_MARK_STEP came from (its aux). Its name says which loop: "step"
 * for cumtrace.step() without a name, the optimizer's class name ("SGD") for
 * an optimizer step. Added without a version change: an older reader sees a
 * mark of an unknown kind and ignores it.
 */
enum ct_step_source {
	CT_STEP_EXPLICIT = 1,  /* cumtrace_step(CT_STEP_EXPLICIT, ...), cumtrace.step() */
	CT_STEP_OPTIMIZER = 2, /* the Python package's torch.optim global step post hook */
};

struct ct_rec_mark {
	struct ct_rec rec;
	uint64_t ts_ns;
	uint64_t aux;
	uint32_t tid;
	uint16_t kind;	   /* enum ct_mark_kind */
	uint16_t name_len; /* bytes of name, NUL included */
	/* char name[name_len]; */
};

/*
 * CT_REC_SYMBOLS: symbols embedded by `cumtrace-report symbolize` on a machine
 * that has the binaries, so that the dump can be analyzed where they are not.
 * The shim never writes it. Each record stands alone:
 *
 *   struct ct_rec_symbols
 *   struct ct_sym_addr addrs[naddrs]
 *   struct ct_sym_frame frames[nframes]
 *   char strings[strings_len]            NUL-terminated strings; the last byte is NUL
 *
 * An address entry names one code address of the dump's stacks by module
 * and offset: module is the index of a CT_REC_MODULE among the dump's module
 * records in file order (0 = the first), offset is the address looked up
 * minus that module's base, where the address looked up is ip - 1 (the call
 * instruction: see CT_REC_STACK). Each address owns the next nframes entries
 * of frames[] (the entries of all addresses follow one another in order, so
 * the nframes of the addresses sum to the record's nframes): innermost first,
 * each one but the last inlined into the next, the last the function whose
 * machine code holds the address. Strings are referenced by their byte
 * offset in strings[] (an offset may point into the middle of a string: its
 * tail is a string too), CT_SYM_NONE for unknown.
 *
 * Only addresses with a function or a file are listed. An address listed
 * again (in this record or a later one) is ignored: the first entry counts.
 * A writer splits the symbols over as many records as CT_REC_MAX requires and
 * puts every CT_REC_SYMBOLS record after all the records of the dump it
 * symbolized. Readers that do not know the type skip it, like any other.
 */
#define CT_SYM_NONE 0xffffffffu /* no string */
#define CT_SYM_FRAMES_MAX 64	/* frames per address, at most */
#define CT_SYM_STRING_MAX 4096	/* bytes per string, NUL included; writers truncate longer names */

struct ct_rec_symbols {
	struct ct_rec rec;
	uint32_t naddrs;      /* entries of addrs[] */
	uint32_t nframes;     /* entries of frames[] */
	uint32_t strings_len; /* bytes of strings[] */
	uint32_t reserved;    /* 0 */
	/* struct ct_sym_addr addrs[naddrs]; struct ct_sym_frame frames[nframes];
	 * char strings[strings_len]; */
};

struct ct_sym_addr {
	uint64_t offset;  /* address looked up (ip - 1) - module base */
	uint32_t module;  /* index of the CT_REC_MODULE, file order, from 0 */
	uint16_t nframes; /* 1..CT_SYM_FRAMES_MAX */
	uint16_t reserved;
};

struct ct_sym_frame {
	uint32_t function;   /* demangled function name, or CT_SYM_NONE */
	uint32_t file;	     /* source file as in the debug info, or CT_SYM_NONE */
	uint32_t file_short; /* file relative to its compilation directory, or CT_SYM_NONE */
	uint32_t line;	     /* source line, 0 when unknown */
};

/*
 * CT_REC_MEMINFO: the device's free and total memory, read by the shim right
 * after a traced allocation call (an op that wants a stack: alloc,
 * phys_create, va_reserve, map, pool_create) failed with out-of-memory
 * (result 2: cudaErrorMemoryAllocation or CUDA_ERROR_OUT_OF_MEMORY), on the
 * calling thread, with cuMemGetInfo_v2 of the driver and only when a context
 * was current there (cuCtxGetCurrent non-NULL; the shim never creates one).
 * Written after the failed call's CT_REC_EVENT by the same thread; not
 * written when no context was current or the query failed. The query is not
 * itself an event. The failed event is the one of the same tid whose call
 * began at call_ts_ns (its ts_ns - dur_ns: allocation calls are stamped at
 * return).
 */
struct ct_rec_meminfo {
	struct ct_rec rec;
	uint64_t ts_ns;	      /* when the query returned */
	uint64_t call_ts_ns;  /* entry time of the failed call (event ts_ns - dur_ns) */
	uint64_t free_bytes;  /* cuMemGetInfo_v2 free */
	uint64_t total_bytes; /* cuMemGetInfo_v2 total */
	uint32_t tid;
	int16_t device; /* device of the current context (cuCtxGetDevice), else the event's */
	uint16_t reserved;
};

/*
 * CT_REC_COUNTER: a named value sampled at one moment, for memory that no
 * per-allocation hook shows: the cumtrace Python package records JAX's
 * memory_stats() at every step boundary as "jax.bytes_in_use" and
 * "jax.peak_bytes_in_use" per device (cumtrace_counter). Written on the
 * sampling thread's ring after the step's CT_REC_MARK; ts_ns carries ticks
 * as a mark's does.
 */
struct ct_rec_counter {
	struct ct_rec rec;
	uint64_t ts_ns;
	uint64_t value;
	uint32_t tid;
	int16_t device;	   /* the framework's device index, -1 none */
	uint16_t name_len; /* bytes of name, NUL included */
	/* char name[name_len]; */
};

/*
 * ---- the memory no allocation call shows (issue 19 §6) ----
 * CT_REC_MEMSAMPLE: what the device holds beyond the allocations the events
 * show, read by the shim from the driver on the calling thread, only when a
 * context is current there (cuCtxGetCurrent non-NULL; the shim never creates
 * one), never in a signal handler; the queries are not events. Taken (why):
 * at the first traced allocation or synchronization of the process with a
 * context current (the context's own memory), after a synchronization
 * (cudaStreamSynchronize, cudaDeviceSynchronize, cuStreamSynchronize...: at
 * most one per device per CUMTRACE_MEMSAMPLE_MS milliseconds, default 100;
 * 0 turns samples off) and at exit (an atexit handler, on the exiting
 * thread). Written after the triggering call's event by the same thread.
 *   free_bytes, total_bytes: cuMemGetInfo_v2 of the current context's device;
 *   pool_*: CU_MEMPOOL_ATTR_{RESERVED,USED}_MEM_{CURRENT,HIGH} summed over the
 *     device's default pool, its current pool when that differs, and the
 *     device pools made with cudaMemPoolCreate / cuMemPoolCreate and not
 *     destroyed (the first 64 the process made: npools of them in all; flags
 *     CT_MEMSAMPLE_F_POOLS when the default pool was read).
 *   graph_*: cuDeviceGetGraphMemAttribute USED/RESERVED_MEM_CURRENT/HIGH
 *     (flags CT_MEMSAMPLE_F_GRAPH when read).
 * A reader reconciles: device in use (total - free) = live allocations +
 * pool reserve (pool reserved - pool used: freed memory the pools keep) +
 * graph pool reserve (graph reserved - live graph allocations) + the rest
 * (context, driver, other processes' use is not included in free: the
 * device's free memory counts every process).
 */
enum ct_memsample_why {
	CT_MEMSAMPLE_FIRST = 1, /* the first context appeared */
	CT_MEMSAMPLE_SYNC = 2,	/* after a synchronization */
	CT_MEMSAMPLE_EXIT = 3,	/* at exit */
};
#define CT_MEMSAMPLE_F_POOLS 0x0001u
#define CT_MEMSAMPLE_F_GRAPH 0x0002u

struct ct_rec_memsample {
	struct ct_rec rec;
	uint64_t ts_ns; /* when the queries returned (ticks in the ring, converted like a mark's) */
	uint64_t free_bytes, total_bytes;
	uint64_t pool_reserved, pool_reserved_high, pool_used, pool_used_high;
	uint64_t graph_used, graph_used_high, graph_reserved, graph_reserved_high;
	uint32_t tid;
	int16_t device; /* the current context's device */
	uint8_t why;	/* enum ct_memsample_why */
	uint8_t npools;
	uint32_t flags; /* CT_MEMSAMPLE_F_* */
	uint32_t reserved;
};

/*
 * CT_REC_ZSTD: a run of ordinary records, compressed. The fixed part is
 * followed by frame_size bytes holding exactly one complete zstd frame (its
 * header declares the content size), then zero padding to the record size.
 * The frame decompresses to exactly raw_size bytes: whole records, laid out
 * and read as if they stood in the file at this point, none of them a
 * CT_REC_ZSTD. raw_size is a multiple of 8, at least 8 and at most
 * CT_ZSTD_RAW_MAX, so a reader needs one buffer of that size; a record inside
 * that does not fit the run exactly, or a frame that does not decompress to
 * raw_size bytes (checksum included when the frame has one), is corruption.
 * The shim writes one per writer buffer (CUMTRACE_COMPRESS, on by default,
 * when libzstd.so.1 can be loaded) and writes the records as they are when
 * compression would not shrink them; the file header and CT_REC_PROCESS are
 * never compressed.
 */
#define CT_ZSTD_RAW_MAX (4u << 20)

struct ct_rec_zstd {
	struct ct_rec rec;
	uint32_t raw_size;   /* bytes of records the frame holds */
	uint32_t frame_size; /* bytes of the zstd frame after this header */
	/* uint8_t frame[frame_size]; zero padding to rec.size */
};

/*
 * ---- packed events (issue 15) ----
 * CT_REC_EVENTS: count consecutive events of thread tid, each packed after
 * the one before it (include/cumtrace/packed.h: a mask byte, the time step,
 * the fields that changed as LEB128 numbers), the first after ct_pk_base
 * (tid, rec {CT_REC_EVENT, 0, 80}, every other field 0). The fixed part is
 * followed by bytes bytes of packed events, then zero padding to the record
 * size. Each event decodes to exactly the CT_REC_EVENT record it stands for
 * (80 bytes, or 88 with its CT_EVENT_F_PYSTACK trailer when rec.flags has
 * the flag: the packed Python stack id, reserved 0): a reader treats it as
 * that record standing here, in order, file order included. An event that
 * does not fit its bytes, bytes that end inside an event or hold more than
 * count events, is corruption. The shim writes one per stretch of a
 * thread's ring that holds only such events (CUMTRACE_PACK, on by default;
 * CUMTRACE_PACK=0 writes CT_REC_EVENT records), and other records where
 * they stand between them; then, like any record, inside CT_REC_ZSTD. The
 * events' timestamps are nanoseconds already (ticks 0: the writer packs
 * what it converted). A reader that does not know the type skips the
 * events: a dump meant for older analyzers is written with CUMTRACE_PACK=0.
 */
struct ct_rec_events {
	struct ct_rec rec;
	uint32_t tid;
	uint32_t count;	   /* events packed, >= 1 */
	uint32_t bytes;	   /* bytes of packed events after this header */
	uint32_t reserved; /* 0 */
	/* uint8_t packed[bytes]; zero padding to rec.size */
};

/* Round a record's payload size up to the 8-byte record granularity. */
#define CT_REC_ALIGN(n) (((n) + 7u) & ~7u)

/* A record type's name ("event"); "unknown" for a type not in CT_REC_LIST. */
static inline const char *ct_rec_name(unsigned type)
{
	static const char *const names[CT_REC_TYPE_COUNT] = {
#define CT_REC_NAME_(NAME, number, name, type, min_size, ticks) [number] = #name,
		CT_REC_LIST(CT_REC_NAME_)
#undef CT_REC_NAME_
	};
	return type < CT_REC_TYPE_COUNT && names[type] ? names[type] : "unknown";
}

/* Bytes of a record type's fixed part: a shorter record is corrupt; 0 for unknown types. */
static inline uint32_t ct_rec_min_size(unsigned type)
{
	static const uint32_t sizes[CT_REC_TYPE_COUNT] = {
#define CT_REC_SIZE_(NAME, number, name, type, min_size, ticks) [number] = min_size,
		CT_REC_LIST(CT_REC_SIZE_)
#undef CT_REC_SIZE_
	};
	return type < CT_REC_TYPE_COUNT ? sizes[type] : 0;
}

/*
 * Bit N set: record type N carries ticks. The shim's conversion (ct_rec_finish)
 * asserts at compile time that it converts exactly these types.
 */
#define CT_REC_TICKS_BIT_(NAME, number, name, type, min_size, ticks) | ((uint32_t)(ticks) << (number))
#define CT_REC_TICKS_MASK (0u CT_REC_LIST(CT_REC_TICKS_BIT_))

static inline int ct_rec_carries_ticks(unsigned type)
{
	return type < 32 && ((CT_REC_TICKS_MASK >> type) & 1u);
}

/* Names for reports; NULL-safe: unknown ids give "unknown". */
static inline const char *ct_api_name(unsigned api)
{
	static const char *const names[] = {
#define CT_API_NAME_(name, layer) #name,
		CT_API_LIST(CT_API_NAME_)
#undef CT_API_NAME_
	};
	return api < CT_API_COUNT ? names[api] : "unknown";
}

static inline unsigned ct_api_layer(unsigned api)
{
	static const unsigned char layers[] = {
#define CT_API_LAYER_(name, layer) CT_LAYER_##layer,
		CT_API_LIST(CT_API_LAYER_)
#undef CT_API_LAYER_
	};
	return api < CT_API_COUNT ? layers[api] : CT_LAYER_NONE;
}

static inline const char *ct_kind_name(unsigned kind)
{
	static const char *const names[] = {"none",		"device",
					    "host_pinned",	"host_registered",
					    "managed",		"vmm_physical",
					    "vmm_reserved",	"vmm_mapped",
					    "array",		"graph"};
	if (kind == CT_KIND_TORCH_BLOCK)
		return "torch_block";
	if (kind == CT_KIND_TORCH_SEGMENT)
		return "torch_segment";
	if (kind == CT_KIND_CUPY_BLOCK)
		return "cupy_block";
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */
	if (kind == CT_KIND_IMPORTED)
		return "imported";
	if (kind == CT_KIND_MULTICAST)
		return "multicast";
	return kind < sizeof names / sizeof names[0] ? names[kind] : "unknown";
}

static inline const char *ct_op_name(unsigned op)
{
	static const char *const names[] = {
		"none",		"alloc",	"free",		 "stream_create",
		"stream_destroy", "stream_sync", "device_sync", "device_reset",
		"set_device",	"pool_create",	"pool_destroy", "pool_trim",
		"va_reserve",	"va_free",	"phys_create",	 "phys_release",
		"map",		"unmap",	"ctx_destroy",
		/* ---- CUDA graphs (issue 19 §2) ---- */
		"graph_alloc", "graph_free", "graph_instantiate", "graph_launch", "graph_destroy", "graph_trim"};
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */
	static const char *const import_names[] = {"import", "export", "retain", "mc_add_device",
						   "mc_bind", "mc_unbind", "nccl"};
	if (op >= CT_OP_IMPORT && op < CT_OP_COUNT)
		return import_names[op - CT_OP_IMPORT];
	return op < sizeof names / sizeof names[0] ? names[op] : "unknown";
}

_Static_assert(sizeof(struct ct_file_header) == 16, "file header layout");
_Static_assert(CT_REC_TYPE_COUNT <= 32, "CT_REC_TICKS_MASK has a bit per record type");
/* each record type's fixed part is the minimum size its row says */
#define CT_REC_ASSERT_(NAME, number, name, type, min_size, ticks)                                   \
	_Static_assert(sizeof(struct type) == min_size, #name " record layout");
CT_REC_LIST(CT_REC_ASSERT_)
#undef CT_REC_ASSERT_
_Static_assert(sizeof(struct ct_rec_event_py) == 8, "event trailer layout");
_Static_assert(sizeof(struct ct_pyframe) == 12, "pyframe layout");
_Static_assert(sizeof(struct ct_sym_addr) == 16, "symbol address layout");
_Static_assert(sizeof(struct ct_sym_frame) == 16, "symbol frame layout");

#endif /* CUMTRACE_FORMAT_H */
