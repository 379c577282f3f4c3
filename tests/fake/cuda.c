/*
 * Fake CUDA driver (libcuda.so.1) for cumtrace's tests.
 *
 * A test double with the soname, exported names and signatures of the real
 * driver; tests/fake/README.md says what it models and where it differs.
 * Device memory is host memory: each device owns a large MAP_NORESERVE
 * arena at a device-looking address, carved first-fit, whose pages are
 * accessible while allocated, so programs may memcpy into what they
 * allocate (and fault on whole pages they freed). Capacity, stream-ordered
 * frees, memory pools, the virtual memory management (VMM) calls and
 * cuGetProcAddress are modelled closely enough for a tracer to be tested
 * against them.
 *
 * Locking: one mutex guards all state. Each exported function that touches
 * state is a wrapper, LOCKED(impl_...(...)), around a static function that
 * runs with the lock held and the driver initialised. Static helpers assume
 * the lock is held.
 */
#define _GNU_SOURCE
#include <cuda.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* cuda.h maps cuGetProcAddress to _v2; the CUDA 11.3 name is exported too. */
#undef cuGetProcAddress

/* Exported names that cuda.h declares only in other configurations. */
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
				unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					      CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);

#define FAKE_DRIVER_VERSION 13000
#define MAX_DEVICES 16
#define DEFAULT_DEVICES 2
#define DEFAULT_CAPACITY (1ull << 30)
#define ALLOC_ALIGN ((size_t)512)	/* cuMemAlloc* and pool allocations */
#define VMM_GRAN ((size_t)2 << 20)	/* cuMemGetAllocationGranularity */
#define ARENA_LEN ((size_t)64 << 30)	/* virtual size of a device arena */
#define ARENA_MIN ((size_t)256 << 20)	/* smallest arena tried when mmap refuses */
#define ARENA_HINT 0x7e0000000000ull	/* device d at ARENA_HINT + d * ARENA_STRIDE */
#define ARENA_STRIDE 0x1000000000ull
#define VA_LEN ((size_t)1 << 40)	/* address space for cuMemAddressReserve */
#define VA_MIN ((size_t)16 << 30)
#define VA_HINT 0x7d0000000000ull
#define PAGES_CHUNK ((size_t)1 << 20)	/* arena pages are opened and closed by the MiB */
#define PRIO_GREATEST (-5)		/* stream priorities are clamped to [-5, 0] */

/* Evaluates a libc call without letting it change errno. */
#define KEEP_ERRNO(call) __extension__({ int e_ = errno; __typeof__(call) r_ = (call); errno = e_; r_; })

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* ---- ordered sets: treaps keyed by address ---------------------------------
 * A node covers [key, key + len). maxlen, the largest len in the node's
 * subtree, lets t_first_fit find the lowest node of a given length in
 * O(log n) expected time, like every other operation. */
struct tnode {
	uintptr_t key;
	size_t len;
	size_t maxlen;
	unsigned prio;
	struct tnode *l, *r;
};

static unsigned g_seed = 2463534242u;

static unsigned t_rand(void)
{
	g_seed ^= g_seed << 13;
	g_seed ^= g_seed >> 17;
	g_seed ^= g_seed << 5;
	return g_seed;
}

static size_t t_max(const struct tnode *t)
{
	return t ? t->maxlen : 0;
}

static void t_fix(struct tnode *t)
{
	size_t l = t_max(t->l), r = t_max(t->r), m = t->len;

	t->maxlen = m > l ? (m > r ? m : r) : (l > r ? l : r);
}

/* Splits t into the nodes with keys below key (*lo) and the others (*hi). */
static void t_split(struct tnode *t, uintptr_t key, struct tnode **lo, struct tnode **hi)
{
	if (!t) {
		*lo = *hi = NULL;
		return;
	}
	if (t->key < key) {
		t_split(t->r, key, &t->r, hi);
		*lo = t;
	} else {
		t_split(t->l, key, lo, &t->l);
		*hi = t;
	}
	t_fix(t);
}

/* Joins two treaps; every key of a is below every key of b. */
static struct tnode *t_merge(struct tnode *a, struct tnode *b)
{
	if (!a || !b)
		return a ? a : b;
	if (a->prio > b->prio) {
		a->r = t_merge(a->r, b);
		t_fix(a);
		return a;
	}
	b->l = t_merge(a, b->l);
	t_fix(b);
	return b;
}

/* Links n (key and len set, key not present yet) into *root. */
static void t_insert(struct tnode **root, struct tnode *n)
{
	struct tnode *lo, *hi;

	n->prio = t_rand();
	n->l = n->r = NULL;
	n->maxlen = n->len;
	t_split(*root, n->key, &lo, &hi);
	*root = t_merge(t_merge(lo, n), hi);
}

/* Unlinks the node with this key and returns it, or returns NULL. */
static struct tnode *t_remove(struct tnode **pp, uintptr_t key)
{
	struct tnode *t = *pp, *n;

	if (!t)
		return NULL;
	if (t->key == key) {
		*pp = t_merge(t->l, t->r);
		return t;
	}
	n = t_remove(key < t->key ? &t->l : &t->r, key);
	if (n)
		t_fix(t);
	return n;
}

/* The node with the greatest key <= key, or NULL. */
static struct tnode *t_floor(struct tnode *t, uintptr_t key)
{
	struct tnode *best = NULL;

	while (t) {
		if (t->key <= key) {
			best = t;
			t = t->r;
		} else {
			t = t->l;
		}
	}
	return best;
}

/* The node with the least key > key, or NULL. */
static struct tnode *t_above(struct tnode *t, uintptr_t key)
{
	struct tnode *best = NULL;

	while (t) {
		if (t->key > key) {
			best = t;
			t = t->l;
		} else {
			t = t->r;
		}
	}
	return best;
}

/* The lowest node with len >= len, or NULL. */
static struct tnode *t_first_fit(struct tnode *t, size_t len)
{
	while (t && t->maxlen >= len) {
		if (t_max(t->l) >= len)
			t = t->l;
		else if (t->len >= len)
			return t;
		else
			t = t->r;
	}
	return NULL;
}

static void t_free_all(struct tnode *t)
{
	if (t) {
		t_free_all(t->l);
		t_free_all(t->r);
		free(t);
	}
}

/* ---- extent sets: disjoint address ranges, coalesced by ext_put ---------- */
struct ext {
	uintptr_t start;
	size_t len;
};
typedef struct tnode *extset;	/* the root */

static struct tnode *ext_node(uintptr_t start, size_t len)
{
	struct tnode *n = KEEP_ERRNO(malloc(sizeof(*n)));

	if (n) {
		n->key = start;
		n->len = len;
	}
	return n;
}

/* Gives [start, start + len) back to s, merging it with its neighbours;
 * the free extent it became part of goes to *merged unless that is NULL.
 * Returns -1, and the range is lost to s, when memory is short. */
static int ext_put(extset *s, uintptr_t start, size_t len, struct ext *merged)
{
	struct tnode *prev = t_floor(*s, start), *next = t_above(*s, start), *n;

	if (prev && prev->key + prev->len != start)
		prev = NULL;
	if (next && start + len != next->key)
		next = NULL;
	if (prev) {
		n = t_remove(s, prev->key);
		n->len += len;
		if (next) {
			n->len += next->len;
			free(t_remove(s, next->key));
		}
	} else if (next) {
		n = t_remove(s, next->key);
		n->key = start;
		n->len += len;
	} else if (!(n = ext_node(start, len))) {
		return -1;
	}
	t_insert(s, n);
	if (merged)
		*merged = (struct ext){ n->key, n->len };
	return 0;
}

/* Adds [start, start + len) to s, absorbing what it overlaps or touches. */
static int ext_union(extset *s, uintptr_t start, size_t len)
{
	uintptr_t lo = start, hi = start + len;
	struct tnode *n = t_floor(*s, start), *u = ext_node(start, len);

	if (!u)
		return -1;
	if (!n || n->key + n->len < start)
		n = t_above(*s, start);
	while (n && n->key <= hi) {
		struct tnode *next = t_above(*s, n->key);

		lo = n->key < lo ? n->key : lo;
		hi = n->key + n->len > hi ? n->key + n->len : hi;
		free(t_remove(s, n->key));
		n = next;
	}
	u->key = lo;
	u->len = hi - lo;
	t_insert(s, u);
	return 0;
}

/* Inserts [start, start + len) without merging (for reservations). */
static int ext_insert(extset *s, uintptr_t start, size_t len)
{
	struct tnode *n = ext_node(start, len);

	if (!n)
		return -1;
	t_insert(s, n);
	return 0;
}

/* Removes [a, a + len), which node n of s contains, from s. Returns -1 with
 * s unchanged when splitting n needs memory that is not there. */
static int ext_carve(extset *s, struct tnode *n, uintptr_t a, size_t len)
{
	size_t head = a - n->key, tail = n->key + n->len - (a + len);
	struct tnode *t = NULL;

	if (head && tail && !(t = ext_node(a + len, tail)))
		return -1;
	t_remove(s, n->key);
	if (head) {
		n->len = head;
		t_insert(s, n);
		if (t)
			t_insert(s, t);
	} else if (tail) {
		n->key = a + len;
		n->len = tail;
		t_insert(s, n);
	} else {
		free(n);
	}
	return 0;
}

/* First fit: takes len bytes aligned to align (a power of two) from s.
 * Returns the address, or 0 when nothing fits. */
static uintptr_t ext_take(extset *s, size_t len, size_t align)
{
	for (struct tnode *n = t_first_fit(*s, len); n; n = t_above(*s, n->key)) {
		uintptr_t a = (n->key + align - 1) & ~(uintptr_t)(align - 1), end = n->key + n->len;

		if (a <= end && end - a >= len)
			return ext_carve(s, n, a, len) ? 0 : a;
	}
	return 0;
}

/* Takes exactly [a, a + len) from s if all of it is there; 0 on success. */
static int ext_take_at(extset *s, uintptr_t a, size_t len)
{
	struct tnode *n = t_floor(*s, a);

	if (!n || a + len < a || a + len > n->key + n->len)
		return -1;
	return ext_carve(s, n, a, len);
}

/* Whether s holds all of [a, a + len). */
static int ext_holds(const extset *s, uintptr_t a, size_t len)
{
	const struct tnode *n = t_floor(*s, a);

	return n && a + len <= n->key + n->len;
}

/* ---- state ----------------------------------------------------------------- */
enum kind {
	K_DEVICE,	/* cuMemAlloc, cuMemAllocPitch */
	K_MANAGED,	/* cuMemAllocManaged */
	K_POOL,		/* cuMemAllocAsync, cuMemAllocFromPoolAsync */
	K_HOST,		/* cuMemAllocHost, cuMemHostAlloc: its own host mapping */
	K_REGISTERED,	/* cuMemHostRegister: the caller's memory */
	K_VMM,		/* cuMemMap: a mapping inside a reservation */
	K_ARRAY,	/* cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate: handle = address */
	K_GRAPH,	/* a graph allocation committed by a launch (issue 19 §2) */
	/* ---- imported memory (issue 19 §4): a host mapping of its own, not charged ---- */
	K_IPC,		/* cuIpcOpenMemHandle */
	K_POOL_IMPORT,	/* cuMemPoolImportPointer: freed with cuMemFree / cuMemFreeAsync */
};

/* A live allocation (or registration or VMM mapping), a node of g_blocks
 * keyed by its address: addr is node.key. */
struct block {
	union {
		struct tnode node;
		uintptr_t addr;
	};
	size_t size;			/* bytes asked for: CU_POINTER_ATTRIBUTE_RANGE_SIZE */
	size_t span;			/* bytes held in the arena or host mapping */
	enum kind kind;
	int dev;
	struct CUctx_st *ctx;		/* owner; NULL for pool and VMM blocks */
	struct CUmemPoolHandle_st *pool; /* K_POOL */
	struct phys *phys;		/* K_VMM: the handle mapped here */
	int prot;			/* K_VMM: host protection set by cuMemSetAccess */
	unsigned long long id;		/* CU_POINTER_ATTRIBUTE_BUFFER_ID */
};

/* A free made by cuMemFreeAsync that no synchronisation has observed yet. */
struct pending {
	struct block *b;		/* out of g_blocks, owned here */
	struct CUstream_st *stream;	/* NULL: the device's default stream */
	int dev;			/* the stream's device */
};

struct CUctx_st {
	int dev;
	int primary;
	int destroyed;			/* by cuCtxDestroy; the struct is kept */
	unsigned retain;		/* primary: cuDevicePrimaryCtxRetain count */
	unsigned flags;
	struct CUctx_st *next;		/* g_ctxs */
};

struct CUstream_st {
	struct CUctx_st *ctx;
	unsigned flags;
	int priority;
	struct CUgraph_st *capture;	/* the graph being captured, NULL when not capturing */
	unsigned long long capture_id;
	struct CUstream_st *next;	/* g_streams */
};

struct CUmemPoolHandle_st {
	int dev;
	int is_default;
	int destroyed;			/* by cuMemPoolDestroy; freed once idle */
	cuuint64_t threshold;		/* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	size_t live, pending, cached;	/* bytes allocated, freed on a stream, reusable */
	size_t live_high, reserved_high;
	size_t outstanding;		/* allocations live or pending */
	extset cache;			/* reusable ranges, still charged to the device */
	struct CUmemPoolHandle_st *next; /* g_pools */
};

/* A cuMemCreate handle: the handle value is the struct's address. */
struct phys {
	int dev;
	int released;			/* cuMemRelease dropped the last handle reference */
	size_t size;
	int fd;				/* memfd that every mapping shares; -1 for multicast */
	unsigned refs;			/* handle references (hrefs) plus one per mapping */
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */
	unsigned hrefs;			/* 1 at create or import, plus one per cuMemRetainAllocationHandle */
	int imported;			/* cuMemImportFromShareableHandle: not charged to a device */
	int multicast;			/* cuMulticastCreate: no memory, never mapped here */
	unsigned mc_ndev, mc_maxdev;	/* multicast: devices added, prop->numDevices */
	size_t mc_bound;		/* multicast: bytes bound */
	struct phys *next;		/* g_phys */
};

struct device {
	uintptr_t base;
	size_t len;			/* arena [base, base + len) */
	extset arena;			/* free ranges of the arena */
	extset open;			/* pages of the arena made accessible */
	size_t capacity, used;		/* used <= capacity always */
	struct CUctx_st primary;
	struct CUmemPoolHandle_st *defpool;
	char name[64];
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CUresult g_init_rc = CUDA_ERROR_NOT_INITIALIZED;
static int g_ready;
static int g_ndev;
static size_t g_page;
static struct device g_dev[MAX_DEVICES];
static struct {
	uintptr_t base;
	size_t len;
	extset free;			/* unreserved space */
	extset resv;			/* reservations, not merged */
} g_va;
static struct tnode *g_blocks;		/* struct block nodes */
static struct {
	struct pending *v;
	size_t n, cap;
} g_pending;
static struct CUctx_st *g_ctxs;		/* made by cuCtxCreate, never freed */
static struct CUstream_st *g_streams;
static struct CUmemPoolHandle_st *g_pools;
static struct phys *g_phys;
static unsigned long long g_next_id;
static __thread struct CUctx_st *t_ctx;

/* Body of an exported function: impl, with the lock held, once cuInit worked. */
#define LOCKED(impl) do { \
	CUresult r_; \
	pthread_mutex_lock(&g_mu); \
	r_ = g_ready ? (impl) : CUDA_ERROR_NOT_INITIALIZED; \
	pthread_mutex_unlock(&g_mu); \
	return r_; \
} while (0)

/* Defines the exported function name(params) as LOCKED(call). Wrappers call
 * static functions only, never another export, so that a shim interposing
 * exported names sees each call once. */
#define DRIVER_FN(name, params, call) CUresult CUDAAPI name params { LOCKED(call); }

/* ---- initialisation ------------------------------------------------------- */

/* Parses a byte count: digits, then optionally K, M, G or T (powers of 1024)
 * and an optional "B" or "iB". Returns -1 when malformed or too large. */
static int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (*s < '0' || *s > '9')
		return -1;
	v = KEEP_ERRNO(strtoull(s, &end, 10));
	switch (*end) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	}
	if (shift) {
		end++;
		if (*end == 'i')
			end++;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v == ULLONG_MAX || v > (ULLONG_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

/* Reads an environment knob; a malformed value is reported and ignored. */
static unsigned long long env_knob(const char *name, unsigned long long def, unsigned long long max)
{
	const char *s = getenv(name);
	unsigned long long v;

	if (!s || !*s)
		return def;
	if (parse_size(s, &v) || v > max) {
		fprintf(stderr, "fake libcuda: ignoring %s=%s\n", name, s);
		return def;
	}
	return v;
}

/* Maps an inaccessible NORESERVE region of up to len bytes, at hint when
 * the kernel agrees and anywhere otherwise, halving len down to min while
 * mmap refuses. Returns 0 with the region in *out, or -1. Pages are opened
 * as they are allocated (pages_open), so that untouched address space costs
 * nothing, valgrind's leak scan included. */
static int map_region(uintptr_t hint, size_t len, size_t min, struct ext *out)
{
	for (; len >= min; len /= 2) {
		void *p = KEEP_ERRNO(mmap((void *)hint, len, PROT_NONE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));

		if (p != MAP_FAILED) {
			*out = (struct ext){ (uintptr_t)p, len };
			return 0;
		}
	}
	return -1;
}

static struct CUmemPoolHandle_st *pool_new(int dev, int is_default)
{
	struct CUmemPoolHandle_st *p = KEEP_ERRNO(calloc(1, sizeof(*p)));

	if (!p)
		return NULL;
	p->dev = dev;
	p->is_default = is_default;
	/* The default pool releases at every synchronisation (real default: a
	 * threshold of 0); explicit pools hold memory until trimmed. */
	p->threshold = is_default ? 0 : UINT64_MAX;
	p->next = g_pools;
	g_pools = p;
	return p;
}

/* pthread_once body of cuInit: reads the knobs, maps the arenas and the
 * reservation space, makes primary contexts and default pools. */
static void driver_init(void)
{
	int ndev = (int)env_knob("CUMTRACE_FAKE_DEVICES", DEFAULT_DEVICES, MAX_DEVICES);
	size_t cap = env_knob("CUMTRACE_FAKE_CAPACITY", DEFAULT_CAPACITY, SIZE_MAX / 2);
	struct ext r;

	pthread_mutex_lock(&g_mu);
	g_page = (size_t)sysconf(_SC_PAGESIZE);
	if (!ndev) {
		g_init_rc = CUDA_ERROR_NO_DEVICE;
		goto out;
	}
	if (!map_region(VA_HINT, VA_LEN, VA_MIN, &r)) {
		g_va.base = r.start;
		g_va.len = r.len;
		ext_put(&g_va.free, r.start, r.len, NULL);
	}
	for (int i = 0; i < ndev; i++) {
		struct device *d = &g_dev[i];

		if (!map_region(ARENA_HINT + (uintptr_t)i * ARENA_STRIDE, ARENA_LEN, ARENA_MIN, &r)) {
			d->base = r.start;
			d->len = r.len;
			ext_put(&d->arena, r.start, r.len, NULL);
		}
		d->capacity = cap;
		d->primary = (struct CUctx_st){ .dev = i, .primary = 1 };
		snprintf(d->name, sizeof(d->name), "cumtrace fake GPU %d", i);
		d->defpool = pool_new(i, 1);
		if (!d->defpool) {
			g_init_rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
	}
	g_ndev = ndev;
	g_ready = 1;
	g_init_rc = CUDA_SUCCESS;
out:
	pthread_mutex_unlock(&g_mu);
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_once(&g_once, driver_init);
	return g_init_rc;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = FAKE_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

/* ---- blocks --------------------------------------------------------------- */

/* The block containing addr, or NULL. */
static struct block *blk_at(uintptr_t addr)
{
	struct block *b = (struct block *)t_floor(g_blocks, addr);

	return b && addr - b->addr < b->size ? b : NULL;
}

/* The block starting at addr, or NULL. */
static struct block *blk_exact(uintptr_t addr)
{
	struct block *b = blk_at(addr);

	return b && b->addr == addr ? b : NULL;
}

/* The block after b in address order (the first one for NULL), or NULL. */
static struct block *blk_next(const struct block *b)
{
	return (struct block *)t_above(g_blocks, b ? b->addr : 0);
}

/* Whether [a, a + len) overlaps the span of any block. */
static int blk_overlaps(uintptr_t a, size_t len)
{
	const struct block *b = (struct block *)t_floor(g_blocks, a + len - 1);

	return b && b->addr + b->span > a;
}

/* Files a copy of b in the table with a fresh id. NULL when memory is short. */
static struct block *blk_add(struct block b)
{
	struct block *n = KEEP_ERRNO(malloc(sizeof(*n)));

	if (!n)
		return NULL;
	*n = b;
	n->node.key = b.addr;
	n->node.len = b.span;
	n->id = ++g_next_id;
	t_insert(&g_blocks, &n->node);
	return n;
}

/* Takes b out of the table; the caller owns it. */
static struct block *blk_unlink(struct block *b)
{
	return (struct block *)t_remove(&g_blocks, b->addr);
}

#define KIND(k) (1u << (k))
#define DEVICE_KINDS (KIND(K_DEVICE) | KIND(K_MANAGED) | KIND(K_POOL) | KIND(K_GRAPH))

/* ---- arenas and capacity ---------------------------------------------------- */

/* Makes the pages under [a, a + len) of d's arena readable and writable,
 * unless they are already: the whole PAGES_CHUNK-aligned chunks around it,
 * so that a run of small allocations costs one mprotect per chunk. */
static int pages_open(struct device *d, uintptr_t a, size_t len)
{
	uintptr_t lo = a / PAGES_CHUNK * PAGES_CHUNK, hi = round_up(a + len, PAGES_CHUNK);

	if (ext_holds(&d->open, a, len))
		return 0;
	lo = lo > d->base ? lo : d->base;
	hi = hi < d->base + d->len ? hi : d->base + d->len;
	if (KEEP_ERRNO(mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE)))
		return -1;
	ext_union(&d->open, lo, hi - lo); /* untracked on failure: opened again later */
	return 0;
}

/* [a, a + len) has just become part of the free extent *m of d's arena. A
 * run of at least PAGES_CHUNK bytes of pages under it that lies wholly
 * inside *m holds no allocation any more: it goes back to the kernel and
 * becomes inaccessible again. (Smaller runs stay open: no syscalls for the
 * churn of small allocations.) */
static void pages_close(struct device *d, uintptr_t a, size_t len, const struct ext *m)
{
	uintptr_t lo = round_up(m->start, g_page), hi = (m->start + m->len) / g_page * g_page;
	uintptr_t alo = a / g_page * g_page, ahi = round_up(a + len, g_page);

	lo = lo > alo ? lo : alo;
	hi = hi < ahi ? hi : ahi;
	if (hi > lo && hi - lo >= PAGES_CHUNK && !ext_take_at(&d->open, lo, hi - lo)) {
		KEEP_ERRNO(madvise((void *)lo, hi - lo, MADV_DONTNEED));
		KEEP_ERRNO(mprotect((void *)lo, hi - lo, PROT_NONE));
	}
}

/* Takes size bytes, rounded up to ALLOC_ALIGN, from d's arena and charges
 * them to its capacity. Returns CUDA_ERROR_OUT_OF_MEMORY, taking nothing,
 * when the capacity or the arena is exhausted. */
static CUresult arena_alloc(struct device *d, size_t size, uintptr_t *out, size_t *span)
{
	size_t sp;
	uintptr_t a;

	if (size > d->capacity - d->used)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sp = round_up(size, ALLOC_ALIGN);
	if (sp > d->capacity - d->used || !(a = ext_take(&d->arena, sp, ALLOC_ALIGN)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (pages_open(d, a, sp)) {
		ext_put(&d->arena, a, sp, NULL);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->used += sp;
	*out = a;
	*span = sp;
	return CUDA_SUCCESS;
}

static void arena_free(struct device *d, uintptr_t a, size_t span)
{
	struct ext m;

	d->used -= span;
	if (!ext_put(&d->arena, a, span, &m))
		pages_close(d, a, span, &m);
}

/* Whether addr lies in address space this driver hands out as device memory. */
static int in_fake_space(uintptr_t addr)
{
	for (int i = 0; i < g_ndev; i++)
		if (addr - g_dev[i].base < g_dev[i].len)
			return 1;
	return addr - g_va.base < g_va.len;
}

/* ---- memory pools ---------------------------------------------------------- */

static size_t pool_reserved(const struct CUmemPoolHandle_st *p)
{
	return p->live + p->pending + p->cached;
}

/* A pool handle that exists and is not destroyed, or NULL. */
static struct CUmemPoolHandle_st *pool_find(CUmemoryPool h)
{
	for (struct CUmemPoolHandle_st *p = g_pools; p; p = p->next)
		if (p == h)
			return p->destroyed ? NULL : p;
	return NULL;
}

/* Releases cached memory back to the device until at most keep bytes stay
 * reserved, never releasing below keep (cuMemPoolTrimTo's contract). */
static void pool_trim(struct CUmemPoolHandle_st *p, size_t keep)
{
	while (p->cache && pool_reserved(p) > keep) {
		size_t want = (pool_reserved(p) - keep) / ALLOC_ALIGN * ALLOC_ALIGN;
		struct tnode *e = t_floor(p->cache, UINTPTR_MAX);
		size_t take = e->len < want ? e->len : want;
		uintptr_t a = e->key + e->len - take;

		if (!take)
			break;
		ext_carve(&p->cache, e, a, take); /* a tail: cannot fail */
		p->cached -= take;
		arena_free(&g_dev[p->dev], a, take);
	}
}

/* Applies every pool's release threshold (what a synchronisation does) and
 * frees destroyed pools that have nothing outstanding. */
static void pools_settle(void)
{
	struct CUmemPoolHandle_st **pp = &g_pools;

	while (*pp) {
		struct CUmemPoolHandle_st *p = *pp;

		if (p->destroyed && !p->outstanding) {
			pool_trim(p, 0);
			*pp = p->next;
			t_free_all(p->cache);
			free(p);
			continue;
		}
		if (pool_reserved(p) > p->threshold)
			pool_trim(p, p->threshold);
		pp = &p->next;
	}
}

static void pool_note_high(struct CUmemPoolHandle_st *p)
{
	if (p->live > p->live_high)
		p->live_high = p->live;
	if (pool_reserved(p) > p->reserved_high)
		p->reserved_high = pool_reserved(p);
}

/* Allocates from p: cached memory first, else fresh memory charged to the
 * device; on exhaustion the pool's cache is released and fresh memory tried
 * once more. */
static CUresult pool_alloc(struct CUmemPoolHandle_st *p, size_t size, CUdeviceptr *dptr)
{
	struct device *d = &g_dev[p->dev];
	size_t span;
	uintptr_t a;
	CUresult r;

	if (size > d->capacity)
		return CUDA_ERROR_OUT_OF_MEMORY;
	span = round_up(size, ALLOC_ALIGN);
	a = ext_take(&p->cache, span, ALLOC_ALIGN);
	if (a) {
		p->cached -= span;
	} else {
		r = arena_alloc(d, span, &a, &span);
		if (r && p->cached) {
			pool_trim(p, 0);
			r = arena_alloc(d, span, &a, &span);
		}
		if (r)
			return r;
	}
	if (!blk_add((struct block){ .addr = a, .size = size, .span = span, .kind = K_POOL,
				     .dev = p->dev, .pool = p })) {
		arena_free(d, a, span);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->live += span;
	p->outstanding++;
	pool_note_high(p);
	*dptr = a;
	return CUDA_SUCCESS;
}

/* ---- freeing --------------------------------------------------------------- */

/* Completes a stream-ordered free: pool memory becomes reusable by its pool,
 * other device memory goes back to the arena. */
static void graph_release(const struct block *b);

static void free_complete(const struct block *b)
{
	struct CUmemPoolHandle_st *p = b->pool;

	if (b->kind == K_GRAPH) {
		graph_release(b);
		return;
	}
	if (b->kind != K_POOL) {
		arena_free(&g_dev[b->dev], b->addr, b->span);
		return;
	}
	p->pending -= b->span;
	p->outstanding--;
	if (ext_put(&p->cache, b->addr, b->span, NULL))
		arena_free(&g_dev[b->dev], b->addr, b->span);
	else
		p->cached += b->span;
}

/* Frees b, already out of the table, at once. */
static void free_now(const struct block *b)
{
	switch (b->kind) {
	case K_POOL:
		b->pool->live -= b->span;
		b->pool->pending += b->span;
		free_complete(b);
		pools_settle();
		break;
	case K_DEVICE:
	case K_MANAGED:
	case K_ARRAY:
		arena_free(&g_dev[b->dev], b->addr, b->span);
		break;
	case K_HOST:
	case K_IPC:
	case K_POOL_IMPORT:
		KEEP_ERRNO(munmap((void *)b->addr, b->span));
		break;
	case K_GRAPH:
		graph_release(b);
		break;
	case K_REGISTERED:
	case K_VMM:
		break;
	}
}

/* Unlinks b, frees what it holds and the block itself. */
static void blk_free(struct block *b)
{
	free_now(blk_unlink(b));
	free(b);
}

/* What a synchronisation waits for. */
enum scope {
	S_STREAM,	/* one created stream */
	S_DEFAULT,	/* the default stream only (per-thread semantics) */
	S_LEGACY,	/* the legacy default stream: it also waits for blocking streams */
	S_DEVICE,	/* everything on the device */
};

static int pending_in(const struct pending *p, int dev, const struct CUstream_st *s, enum scope sc)
{
	if (p->dev != dev)
		return 0;
	switch (sc) {
	case S_STREAM:
		return p->stream == s;
	case S_DEFAULT:
		return !p->stream;
	case S_LEGACY:
		return !p->stream || !(p->stream->flags & CU_STREAM_NON_BLOCKING);
	case S_DEVICE:
		return 1;
	}
	return 0;
}

/* Completes the stream-ordered frees that a synchronisation of scope sc on
 * device dev observes, then lets pools release memory above threshold. */
static void sync_scope(int dev, const struct CUstream_st *s, enum scope sc)
{
	size_t keep = 0;

	for (size_t i = 0; i < g_pending.n; i++) {
		struct pending *pe = &g_pending.v[i];

		if (!pending_in(pe, dev, s, sc)) {
			g_pending.v[keep++] = *pe;
			continue;
		}
		free_complete(pe->b);
		free(pe->b);
	}
	g_pending.n = keep;
	pools_settle();
}

/* ---- devices and contexts -------------------------------------------------- */

static CUresult check_dev(int dev)
{
	return dev >= 0 && dev < g_ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* Validates a context handle without dereferencing an unknown pointer: a
 * retained primary context or one made by cuCtxCreate and not destroyed. */
static CUresult ctx_check(const struct CUctx_st *c)
{
	if (!c)
		return CUDA_ERROR_INVALID_CONTEXT;
	for (int i = 0; i < g_ndev; i++)
		if (c == &g_dev[i].primary)
			return c->retain ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
	for (const struct CUctx_st *x = g_ctxs; x; x = x->next)
		if (x == c)
			return c->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_SUCCESS;
	return CUDA_ERROR_INVALID_CONTEXT;
}

/* The context given, or the calling thread's current one when ctx is NULL. */
static CUresult ctx_or_current(CUcontext ctx, struct CUctx_st **out)
{
	struct CUctx_st *c = ctx ? ctx : t_ctx;
	CUresult r = ctx_check(c);

	if (!r)
		*out = c;
	return r;
}

static CUresult cur_ctx(struct CUctx_st **out)
{
	return ctx_or_current(NULL, out);
}

/* Frees what c owns, as destroying or resetting it does: it synchronises the
 * device, frees c's allocations (device, managed, pinned host, host
 * registrations) and destroys its streams. Pool allocations and VMM memory
 * belong to no context and stay. */
static void ctx_release(struct CUctx_st *c)
{
	sync_scope(c->dev, NULL, S_DEVICE);
	for (struct block *b = blk_next(NULL), *next; b; b = next) {
		next = blk_next(b);
		if (b->ctx == c)
			blk_free(b);
	}
	for (struct CUstream_st **pp = &g_streams; *pp;) {
		struct CUstream_st *s = *pp;

		if (s->ctx == c) {
			*pp = s->next;
			free(s);
		} else {
			pp = &s->next;
		}
	}
}

static CUresult impl_device_get(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

static CUresult impl_device_count(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = g_ndev;
	return CUDA_SUCCESS;
}

static CUresult impl_device_name(char *name, int len, CUdevice dev)
{
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "%s", g_dev[dev].name);
	return CUDA_SUCCESS;
}

static CUresult impl_device_total(size_t *bytes, CUdevice dev)
{
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = g_dev[dev].capacity;
	return CUDA_SUCCESS;
}

static CUresult impl_primary_retain(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	g_dev[dev].primary.retain++;
	*pctx = &g_dev[dev].primary;
	return CUDA_SUCCESS;
}

/* Dropping the last reference resets the primary context, as the real
 * driver does. */
static CUresult impl_primary_release(CUdevice dev)
{
	struct CUctx_st *c;

	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	c = &g_dev[dev].primary;
	if (!c->retain)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!--c->retain)
		ctx_release(c);
	return CUDA_SUCCESS;
}

/* Frees everything the primary context owns; references stay as they were. */
static CUresult impl_primary_reset(CUdevice dev)
{
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	ctx_release(&g_dev[dev].primary);
	return CUDA_SUCCESS;
}

static CUresult impl_ctx_get_current(CUcontext *pctx)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = t_ctx;
	return CUDA_SUCCESS;
}

static CUresult impl_ctx_set_current(CUcontext ctx)
{
	CUresult r = ctx ? ctx_check(ctx) : CUDA_SUCCESS;

	if (!r)
		t_ctx = ctx;
	return r;
}

/* cuCtxCreate_v2/v3/v4: a new context, made current (no context stack). */
static CUresult impl_ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
	struct CUctx_st *c;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	c = KEEP_ERRNO(calloc(1, sizeof(*c)));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->dev = dev;
	c->flags = flags;
	c->next = g_ctxs;
	g_ctxs = c;
	t_ctx = c;
	*pctx = c;
	return CUDA_SUCCESS;
}

static CUresult impl_ctx_destroy(CUcontext ctx)
{
	CUresult r = ctx_check(ctx);

	if (r)
		return r;
	if (ctx->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_release(ctx);
	ctx->destroyed = 1;
	if (t_ctx == ctx)
		t_ctx = NULL;
	return CUDA_SUCCESS;
}

static CUresult impl_ctx_get_device(CUdevice *device, CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult r;

	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = ctx_or_current(ctx, &c)))
		return r;
	*device = c->dev;
	return CUDA_SUCCESS;
}

static CUresult impl_ctx_sync(CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult r = ctx_or_current(ctx, &c);

	if (!r)
		sync_scope(c->dev, NULL, S_DEVICE);
	return r;
}

DRIVER_FN(cuDeviceGet, (CUdevice *device, int ordinal),
	  impl_device_get(device, ordinal))

DRIVER_FN(cuDeviceGetCount, (int *count),
	  impl_device_count(count))

DRIVER_FN(cuDeviceGetName, (char *name, int len, CUdevice dev),
	  impl_device_name(name, len, dev))

DRIVER_FN(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev),
	  impl_device_total(bytes, dev))

DRIVER_FN(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev),
	  impl_primary_retain(pctx, dev))

DRIVER_FN(cuDevicePrimaryCtxRelease_v2, (CUdevice dev),
	  impl_primary_release(dev))

DRIVER_FN(cuDevicePrimaryCtxReset_v2, (CUdevice dev),
	  impl_primary_reset(dev))

DRIVER_FN(cuCtxGetCurrent, (CUcontext *pctx),
	  impl_ctx_get_current(pctx))

DRIVER_FN(cuCtxSetCurrent, (CUcontext ctx),
	  impl_ctx_set_current(ctx))

DRIVER_FN(cuCtxCreate_v2, (CUcontext *pctx, unsigned int flags, CUdevice dev),
	  impl_ctx_create(pctx, flags, dev))

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
				unsigned int flags, CUdevice dev)
{
	(void)paramsArray; /* execution affinity is not modelled */
	(void)numParams;
	LOCKED(impl_ctx_create(pctx, flags, dev));
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
				CUdevice dev)
{
	(void)ctxCreateParams; /* execution affinity and CIG are not modelled */
	LOCKED(impl_ctx_create(pctx, flags, dev));
}

DRIVER_FN(cuCtxDestroy_v2, (CUcontext ctx),
	  impl_ctx_destroy(ctx))

DRIVER_FN(cuCtxGetDevice, (CUdevice *device),
	  impl_ctx_get_device(device, NULL))

DRIVER_FN(cuCtxGetDevice_v2, (CUdevice *device, CUcontext ctx),
	  impl_ctx_get_device(device, ctx))

DRIVER_FN(cuCtxSynchronize, (void),
	  impl_ctx_sync(NULL))

DRIVER_FN(cuCtxSynchronize_v2, (CUcontext ctx),
	  impl_ctx_sync(ctx))

/* ---- streams --------------------------------------------------------------- */

static int is_special_stream(CUstream h)
{
	return !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
}

/* Resolves a stream handle to the stream and its device. The default-stream
 * handles give NULL and the current context's device. */
static CUresult stream_resolve(CUstream h, struct CUstream_st **out, int *dev)
{
	struct CUctx_st *c;
	CUresult r;

	if (is_special_stream(h)) {
		if ((r = cur_ctx(&c)))
			return r;
		*out = NULL;
		*dev = c->dev;
		return CUDA_SUCCESS;
	}
	for (struct CUstream_st *s = g_streams; s; s = s->next) {
		if (s == h) {
			*out = s;
			*dev = s->ctx->dev;
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_HANDLE;
}

static CUresult impl_stream_create(CUstream *ph, unsigned flags, int priority)
{
	struct CUstream_st *s;
	struct CUctx_st *c;
	CUresult r;

	if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = cur_ctx(&c)))
		return r;
	s = KEEP_ERRNO(calloc(1, sizeof(*s)));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->ctx = c;
	s->flags = flags;
	s->priority = priority > 0 ? 0 : priority < PRIO_GREATEST ? PRIO_GREATEST : priority;
	s->next = g_streams;
	g_streams = s;
	*ph = s;
	return CUDA_SUCCESS;
}

/* Destroying a stream completes its work, stream-ordered frees included. */
static CUresult impl_stream_destroy(CUstream h)
{
	struct CUstream_st *s;
	int dev;
	CUresult r;

	if (is_special_stream(h))
		return CUDA_ERROR_INVALID_HANDLE;
	if ((r = stream_resolve(h, &s, &dev)))
		return r;
	sync_scope(dev, s, S_STREAM);
	for (struct CUstream_st **pp = &g_streams; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	free(s);
	return CUDA_SUCCESS;
}

/* cuStreamSynchronize and cuStreamQuery (a query that finds the stream idle
 * has observed its work, so it completes the same frees). ptsz: the NULL
 * handle means the per-thread default stream rather than the legacy one. */
static CUresult impl_stream_sync(CUstream h, int ptsz)
{
	struct CUstream_st *s;
	int dev;
	CUresult r = stream_resolve(h, &s, &dev);

	if (r)
		return r;
	if (s)
		sync_scope(dev, s, S_STREAM);
	else
		sync_scope(dev, NULL, h == CU_STREAM_PER_THREAD || (!h && ptsz) ? S_DEFAULT : S_LEGACY);
	return CUDA_SUCCESS;
}

DRIVER_FN(cuStreamCreate, (CUstream *phStream, unsigned int Flags),
	  impl_stream_create(phStream, Flags, 0))

DRIVER_FN(cuStreamCreateWithPriority, (CUstream *phStream, unsigned int flags, int priority),
	  impl_stream_create(phStream, flags, priority))

DRIVER_FN(cuStreamDestroy_v2, (CUstream hStream),
	  impl_stream_destroy(hStream))

DRIVER_FN(cuStreamSynchronize, (CUstream hStream),
	  impl_stream_sync(hStream, 0))

DRIVER_FN(cuStreamSynchronize_ptsz, (CUstream hStream),
	  impl_stream_sync(hStream, 1))

DRIVER_FN(cuStreamQuery, (CUstream hStream),
	  impl_stream_sync(hStream, 0))

DRIVER_FN(cuStreamQuery_ptsz, (CUstream hStream),
	  impl_stream_sync(hStream, 1))

/* ---- CUDA graphs (issue 19 §2) ---------------------------------------------
 *
 * Graph memory as the device keeps it: an alloc node (cuGraphAddMemAllocNode,
 * or cuMemAllocAsync while its stream captures) gets its address when it is
 * made, taken from the device's arena but charged to nothing; a launch of an
 * exec holding the node commits it (a K_GRAPH block), charging the device
 * only for what the graph pool's reserve does not already cover; a free node,
 * the relaunch of an auto-free-on-launch exec, cuMemFree or cuMemFreeAsync
 * frees it back to the reserve, which stays charged until
 * cuDeviceGraphMemTrim. The graph memory attributes report that reserve as
 * both used and reserved (the physical memory graphs hold; nothing ever
 * executes here, so a trim releases all of it but the live allocations). */

struct gnode {
	int is_free;
	int dev;
	uintptr_t addr;
	size_t size, span;
};

/* A graph, or an exec made from one (a copy of its nodes): one list holds both. */
struct CUgraph_st {
	struct gnode *v;
	size_t n, cap;
	int is_exec;
	unsigned long long flags;	/* an exec's instantiate flags */
	struct CUgraph_st *next;	/* g_graphs */
};

struct CUgraphExec_st {
	struct CUgraph_st g;
};

/* What a device's graph pool holds: live = committed allocations, reserved >= live. */
static struct {
	size_t live, reserved, used_high, reserved_high;
} g_gpool[MAX_DEVICES];
static struct CUgraph_st *g_graphs;
static unsigned long long g_capture_seq;

/* The graph (is_exec 0) or exec (1) of handle h, NULL when there is none. */
static struct CUgraph_st *graph_find(const void *h, int is_exec)
{
	for (struct CUgraph_st *g = g_graphs; g; g = g->next)
		if ((const void *)g == h && g->is_exec == is_exec)
			return g;
	return NULL;
}

static CUresult graph_new(int is_exec, struct CUgraph_st **out)
{
	struct CUgraph_st *g = KEEP_ERRNO(calloc(1, is_exec ? sizeof(struct CUgraphExec_st) : sizeof(*g)));

	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->is_exec = is_exec;
	g->next = g_graphs;
	g_graphs = g;
	*out = g;
	return CUDA_SUCCESS;
}

static CUresult graph_destroy(const void *h, int is_exec)
{
	for (struct CUgraph_st **pp = &g_graphs; *pp; pp = &(*pp)->next) {
		if ((const void *)*pp == h && (*pp)->is_exec == is_exec) {
			struct CUgraph_st *g = *pp;

			*pp = g->next;
			free(g->v);
			free(g);
			return CUDA_SUCCESS;
		}
	}
	return CUDA_ERROR_INVALID_VALUE;
}

static CUresult graph_push(struct CUgraph_st *g, const struct gnode *n)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 8;
		struct gnode *v = KEEP_ERRNO(realloc(g->v, cap * sizeof(*v)));

		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = *n;
	return CUDA_SUCCESS;
}

/* An alloc node of size bytes on dev: its address now, its memory at launch. */
static CUresult graph_add_alloc(struct CUgraph_st *g, int dev, size_t size, CUdeviceptr *dptr)
{
	struct gnode n = { .dev = dev, .size = size };
	CUresult r;

	if (!size || size > g_dev[dev].capacity)
		return !size ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
	n.span = round_up(size, ALLOC_ALIGN);
	if (!(n.addr = ext_take(&g_dev[dev].arena, n.span, ALLOC_ALIGN)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((r = graph_push(g, &n))) {
		ext_put(&g_dev[dev].arena, n.addr, n.span, NULL);
		return r;
	}
	*dptr = n.addr;
	return CUDA_SUCCESS;
}

static CUresult graph_add_free(struct CUgraph_st *g, CUdeviceptr dptr)
{
	struct gnode n = { .is_free = 1, .addr = dptr };

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	return graph_push(g, &n);
}

/* A committed graph allocation was freed: its memory stays in the reserve. */
static void graph_release(const struct block *b)
{
	g_gpool[b->dev].live -= b->span;
}

/* A launch commits alloc node n: the reserve covers what it can, the device the rest. */
static CUresult graph_commit(const struct gnode *n)
{
	struct device *d = &g_dev[n->dev];
	size_t need = g_gpool[n->dev].live + n->span, extra = 0;

	if (need > g_gpool[n->dev].reserved) {
		extra = need - g_gpool[n->dev].reserved;
		if (extra > d->capacity - d->used)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (pages_open(d, n->addr, n->span))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!blk_add((struct block){ .addr = n->addr, .size = n->size, .span = n->span, .kind = K_GRAPH,
				     .dev = n->dev }))
		return CUDA_ERROR_OUT_OF_MEMORY;
	d->used += extra;
	g_gpool[n->dev].reserved += extra;
	g_gpool[n->dev].live = need;
	if (g_gpool[n->dev].reserved > g_gpool[n->dev].reserved_high)
		g_gpool[n->dev].reserved_high = g_gpool[n->dev].reserved;
	if (g_gpool[n->dev].reserved > g_gpool[n->dev].used_high)
		g_gpool[n->dev].used_high = g_gpool[n->dev].reserved;
	return CUDA_SUCCESS;
}

static CUresult impl_graph_create(CUgraph *ph, unsigned flags)
{
	struct CUgraph_st *g;
	CUresult r;

	if (!ph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = graph_new(0, &g)))
		return r;
	*ph = g;
	return CUDA_SUCCESS;
}

static CUresult impl_begin_capture(CUstream h, CUstreamCaptureMode mode)
{
	struct CUstream_st *s;
	CUgraph g;
	int dev;
	CUresult r;

	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = stream_resolve(h, &s, &dev)))
		return r;
	if (!s) /* the default streams: not capturable here (the legacy one never is) */
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (s->capture)
		return CUDA_ERROR_ILLEGAL_STATE;
	if ((r = impl_graph_create(&g, 0)))
		return r;
	s->capture = g;
	s->capture_id = ++g_capture_seq;
	return CUDA_SUCCESS;
}

static CUresult impl_end_capture(CUstream h, CUgraph *ph)
{
	struct CUstream_st *s;
	int dev;
	CUresult r;

	if (!ph)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = stream_resolve(h, &s, &dev)))
		return r;
	if (!s || !s->capture)
		return CUDA_ERROR_ILLEGAL_STATE;
	*ph = s->capture;
	s->capture = NULL;
	return CUDA_SUCCESS;
}

static CUresult impl_capture_info(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
				  const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct CUstream_st *s;
	int dev;
	CUresult r;

	if (!st)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = stream_resolve(h, &s, &dev)))
		return r;
	*st = s && s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
	if (*st != CU_STREAM_CAPTURE_STATUS_ACTIVE)
		return CUDA_SUCCESS;
	if (id)
		*id = s->capture_id;
	if (graph)
		*graph = s->capture;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	return CUDA_SUCCESS;
}

static CUresult impl_add_mem_alloc_node(CUgraphNode *ph, CUgraph h, CUDA_MEM_ALLOC_NODE_PARAMS *p)
{
	struct CUgraph_st *g = graph_find(h, 0);
	CUdeviceptr d;
	CUresult r;

	if (!ph || !g || !p || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(p->poolProps.location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	if ((r = graph_add_alloc(g, p->poolProps.location.id, p->bytesize, &d)))
		return r;
	p->dptr = d;
	*ph = (CUgraphNode)(uintptr_t)g->n; /* an opaque, non-NULL handle */
	return CUDA_SUCCESS;
}

static CUresult impl_add_mem_free_node(CUgraphNode *ph, CUgraph h, CUdeviceptr dptr)
{
	struct CUgraph_st *g = graph_find(h, 0);
	CUresult r;

	if (!ph || !g)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = graph_add_free(g, dptr)))
		return r;
	*ph = (CUgraphNode)(uintptr_t)g->n;
	return CUDA_SUCCESS;
}

static CUresult impl_instantiate(CUgraphExec *ph, CUgraph h, unsigned long long flags)
{
	struct CUgraph_st *g = graph_find(h, 0), *e;
	CUresult r;

	if (!ph || !g || (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
						       CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
						       CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = graph_new(1, &e)))
		return r;
	for (size_t i = 0; i < g->n; i++) {
		if ((r = graph_push(e, &g->v[i]))) {
			graph_destroy(e, 1);
			return r;
		}
	}
	e->flags = flags;
	*ph = (CUgraphExec)e;
	return CUDA_SUCCESS;
}

static CUresult impl_instantiate_params(CUgraphExec *ph, CUgraph h, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	CUresult r;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	r = impl_instantiate(ph, h, p->flags);
	p->hErrNode_out = NULL;
	p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
	return r;
}

/* A launch runs the exec's memory nodes in order (nothing else runs here). An
 * allocation of the exec still live from its last launch is freed first when
 * the exec frees on launch, else the launch is refused. */
static CUresult impl_graph_launch(CUgraphExec h, CUstream hs)
{
	struct CUgraph_st *e = graph_find(h, 1);
	struct CUstream_st *s;
	struct block *b;
	int dev;
	CUresult r;

	if (!e)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = stream_resolve(hs, &s, &dev)))
		return r;
	for (size_t i = 0; i < e->n; i++) {
		if (e->v[i].is_free || !(b = blk_exact(e->v[i].addr)) || b->kind != K_GRAPH)
			continue;
		if (!(e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))
			return CUDA_ERROR_INVALID_VALUE;
		blk_free(b);
	}
	for (size_t i = 0; i < e->n; i++) {
		if (!e->v[i].is_free) {
			if ((r = graph_commit(&e->v[i])))
				return r;
		} else if ((b = blk_exact(e->v[i].addr)) && b->kind == K_GRAPH) {
			blk_free(b);
		}
	}
	return CUDA_SUCCESS;
}

/* Releases the reserve that no live graph allocation holds (pending frees completed first). */
static CUresult impl_graph_mem_trim(CUdevice dev)
{
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	sync_scope(dev, NULL, S_DEVICE);
	g_dev[dev].used -= g_gpool[dev].reserved - g_gpool[dev].live;
	g_gpool[dev].reserved = g_gpool[dev].live;
	return CUDA_SUCCESS;
}

/* A high-water mark attribute (pools, graph memory): read it, or reset it to now (only 0 may be set). */
static CUresult attr_high(size_t *high, size_t now, cuuint64_t *u, int set)
{
	if (!set)
		*u = *high;
	else if (*u)
		return CUDA_ERROR_INVALID_VALUE;
	else
		*high = now;
	return CUDA_SUCCESS;
}

static CUresult impl_graph_mem_attr(CUdevice dev, CUgraphMem_attribute attr, void *value, int set)
{
	cuuint64_t *u = value;

	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
		if (set)
			return CUDA_ERROR_INVALID_VALUE;
		*u = g_gpool[dev].reserved;
		return CUDA_SUCCESS;
	case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
	case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
		return attr_high(attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH ? &g_gpool[dev].used_high
									  : &g_gpool[dev].reserved_high,
				 g_gpool[dev].reserved, u, set);
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* The per-thread forms, which cuda.h declares only in per-thread builds. */
CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus);
CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
						cuuint64_t *id_out, CUgraph *graph_out,
						const CUgraphNode **dependencies_out,
						const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out);
CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
						   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

DRIVER_FN(cuGraphCreate, (CUgraph *phGraph, unsigned int flags),
	  impl_graph_create(phGraph, flags))
DRIVER_FN(cuGraphDestroy, (CUgraph hGraph),
	  graph_destroy(hGraph, 0))
DRIVER_FN(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode),
	  impl_begin_capture(hStream, mode))
DRIVER_FN(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode),
	  impl_begin_capture(hStream ? hStream : CU_STREAM_PER_THREAD, mode))
DRIVER_FN(cuStreamEndCapture, (CUstream hStream, CUgraph *phGraph),
	  impl_end_capture(hStream, phGraph))
DRIVER_FN(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph *phGraph),
	  impl_end_capture(hStream ? hStream : CU_STREAM_PER_THREAD, phGraph))
DRIVER_FN(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
	  impl_capture_info(hStream, captureStatus, NULL, NULL, NULL, NULL, NULL))
DRIVER_FN(cuStreamIsCapturing_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus),
	  impl_capture_info(hStream ? hStream : CU_STREAM_PER_THREAD, captureStatus, NULL, NULL, NULL, NULL, NULL))
DRIVER_FN(cuStreamGetCaptureInfo_v3, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	  cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out,
	  const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
	  impl_capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
			    numDependencies_out))
DRIVER_FN(cuStreamGetCaptureInfo_v3_ptsz, (CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	  cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out,
	  const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out),
	  impl_capture_info(hStream ? hStream : CU_STREAM_PER_THREAD, captureStatus_out, id_out, graph_out,
			    dependencies_out, edgeData_out, numDependencies_out))
DRIVER_FN(cuGraphAddMemAllocNode, (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
	  size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams),
	  ((void)dependencies, (void)numDependencies, impl_add_mem_alloc_node(phGraphNode, hGraph, nodeParams)))
DRIVER_FN(cuGraphAddMemFreeNode, (CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
	  size_t numDependencies, CUdeviceptr dptr),
	  ((void)dependencies, (void)numDependencies, impl_add_mem_free_node(phGraphNode, hGraph, dptr)))
DRIVER_FN(cuGraphInstantiateWithFlags, (CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags),
	  impl_instantiate(phGraphExec, hGraph, flags))
DRIVER_FN(cuGraphInstantiateWithParams, (CUgraphExec *phGraphExec, CUgraph hGraph,
	  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
	  impl_instantiate_params(phGraphExec, hGraph, instantiateParams))
DRIVER_FN(cuGraphInstantiateWithParams_ptsz, (CUgraphExec *phGraphExec, CUgraph hGraph,
	  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams),
	  impl_instantiate_params(phGraphExec, hGraph, instantiateParams))
DRIVER_FN(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream),
	  impl_graph_launch(hGraphExec, hStream))
DRIVER_FN(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
	  impl_graph_launch(hGraphExec, hStream ? hStream : CU_STREAM_PER_THREAD))
DRIVER_FN(cuGraphExecDestroy, (CUgraphExec hGraphExec),
	  graph_destroy(hGraphExec, 1))
DRIVER_FN(cuDeviceGraphMemTrim, (CUdevice device),
	  impl_graph_mem_trim(device))
DRIVER_FN(cuDeviceGetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void *value),
	  impl_graph_mem_attr(device, attr, value, 0))
DRIVER_FN(cuDeviceSetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void *value),
	  impl_graph_mem_attr(device, attr, value, 1))

/* ---- memory ---------------------------------------------------------------- */

/* cuMemAlloc, cuMemAllocPitch, cuMemAllocManaged: a block of kind k in the
 * arena of the current context's device. */
static CUresult dev_alloc(CUdeviceptr *dptr, size_t size, enum kind k)
{
	struct CUctx_st *c;
	struct device *d;
	uintptr_t a;
	size_t span;
	CUresult r;

	if (!dptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = cur_ctx(&c)))
		return r;
	d = &g_dev[c->dev];
	if ((r = arena_alloc(d, size, &a, &span)))
		return r;
	if (!blk_add((struct block){ .addr = a, .size = size, .span = span, .kind = k,
				     .dev = c->dev, .ctx = c })) {
		arena_free(d, a, span);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*dptr = a;
	return CUDA_SUCCESS;
}

/* Rows are padded to a multiple of 512 bytes. */
static CUresult impl_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
				 unsigned elem)
{
	size_t p, total;
	CUresult r;

	if (!pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	if (width > SIZE_MAX - ALLOC_ALIGN)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = round_up(width, ALLOC_ALIGN);
	if (__builtin_mul_overflow(p, height, &total))
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = dev_alloc(dptr, total, K_DEVICE);
	if (!r)
		*pitch = p;
	return r;
}

static CUresult impl_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned flags)
{
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return dev_alloc(dptr, size, K_MANAGED);
}

/* Pinned host memory: a private mapping of its own, not charged to the
 * device's capacity. */
static CUresult impl_host_alloc(void **pp, size_t size, unsigned flags)
{
	struct CUctx_st *c;
	size_t span;
	void *p;
	CUresult r;

	if (!pp || !size || (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
						 CU_MEMHOSTALLOC_WRITECOMBINED)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = cur_ctx(&c)))
		return r;
	if (size > SIZE_MAX - g_page)
		return CUDA_ERROR_OUT_OF_MEMORY;
	span = round_up(size, g_page);
	p = KEEP_ERRNO(mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!blk_add((struct block){ .addr = (uintptr_t)p, .size = size, .span = span, .kind = K_HOST,
				     .dev = c->dev, .ctx = c })) {
		KEEP_ERRNO(munmap(p, span));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

static CUresult impl_host_register(void *p, size_t size, unsigned flags)
{
	struct CUctx_st *c;
	uintptr_t a = (uintptr_t)p;
	CUresult r;

	if (!p || !size || a + size < a ||
	    (flags & ~(unsigned)(CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				 CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = cur_ctx(&c)))
		return r;
	if (blk_overlaps(a, size))
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	if (!blk_add((struct block){ .addr = a, .size = size, .span = size, .kind = K_REGISTERED,
				     .dev = c->dev, .ctx = c }))
		return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* Frees the block starting at p if its kind is one of kinds, else returns
 * err. */
static CUresult free_matching(uintptr_t p, unsigned kinds, CUresult err)
{
	struct CUctx_st *c;
	struct block *b;
	CUresult r;

	if ((r = cur_ctx(&c)))
		return r;
	b = blk_exact(p);
	if (!b || !(KIND(b->kind) & kinds))
		return err;
	blk_free(b);
	return CUDA_SUCCESS;
}

/* cuMemFree takes any device allocation, stream-ordered ones included (they
 * go back to their pool at once); 0 is accepted and does nothing. */
static CUresult impl_free(CUdeviceptr dptr)
{
	struct CUctx_st *c;
	CUresult r = cur_ctx(&c);

	return r || !dptr ? r : free_matching(dptr, DEVICE_KINDS | KIND(K_POOL_IMPORT), CUDA_ERROR_INVALID_VALUE);
}

static CUresult impl_mem_info(size_t *free_bytes, size_t *total)
{
	struct CUctx_st *c;
	CUresult r;

	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = cur_ctx(&c)))
		return r;
	*free_bytes = g_dev[c->dev].capacity - g_dev[c->dev].used;
	*total = g_dev[c->dev].capacity;
	return CUDA_SUCCESS;
}

/* cuMemAllocAsync (pool NULL: the device's current pool, which is always its
 * default pool here) and cuMemAllocFromPoolAsync. */
static CUresult impl_alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream h)
{
	struct CUmemPoolHandle_st *p;
	struct CUstream_st *s;
	int dev;
	CUresult r;

	if (!dptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = stream_resolve(h, &s, &dev)))
		return r;
	p = pool ? pool_find(pool) : g_dev[dev].defpool;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (s && s->capture)
		return graph_add_alloc(s->capture, dev, size, dptr);
	return pool_alloc(p, size, dptr);
}

static int pending_push(const struct pending *pe)
{
	if (g_pending.n == g_pending.cap) {
		size_t cap = g_pending.cap ? g_pending.cap * 2 : 64;
		struct pending *v = KEEP_ERRNO(realloc(g_pending.v, cap * sizeof(*v)));

		if (!v)
			return -1;
		g_pending.v = v;
		g_pending.cap = cap;
	}
	g_pending.v[g_pending.n++] = *pe;
	return 0;
}

/* The pointer dies now; its memory stays charged (and unusable) until a
 * synchronisation covering stream h observes the free. */
static CUresult impl_free_async(CUdeviceptr dptr, CUstream h)
{
	struct pending pe;
	CUresult r;

	if ((r = stream_resolve(h, &pe.stream, &pe.dev)) || !dptr)
		return r;
	if (pe.stream && pe.stream->capture)
		return graph_add_free(pe.stream->capture, dptr);
	pe.b = blk_exact(dptr);
	if (pe.b && pe.b->kind == K_POOL_IMPORT) { /* another process's pool memory: unmapped now */
		blk_free(pe.b);
		return CUDA_SUCCESS;
	}
	if (!pe.b || !(KIND(pe.b->kind) & DEVICE_KINDS))
		return CUDA_ERROR_INVALID_VALUE;
	blk_unlink(pe.b);
	if (pe.b->kind == K_POOL) {
		pe.b->pool->live -= pe.b->span;
		pe.b->pool->pending += pe.b->span;
	}
	if (pending_push(&pe)) {
		free_complete(pe.b); /* no memory to defer it: complete it now */
		free(pe.b);
		pools_settle();
	}
	return CUDA_SUCCESS;
}

/* ---- arrays ------------------------------------------------------------------ */

/* Bytes of one element of fmt with ch channels (1, 2 or 4), 0 when invalid. */
static size_t array_elem(CUarray_format fmt, unsigned ch)
{
	size_t b;

	switch (fmt) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		b = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		b = 2;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		b = 4;
		break;
	default:
		return 0;
	}
	return ch == 1 || ch == 2 || ch == 4 ? b * ch : 0;
}

/* An array of w x h x d elements (h, d 0: 1) of elem bytes over levels mipmap levels, charged
 * to the device like an allocation of exactly its bytes; the handle is its address. */
static CUresult impl_array(void **handle, size_t w, size_t h, size_t d, size_t elem, unsigned levels, int layered)
{
	size_t total = 0, b;
	CUdeviceptr a;
	struct block *blk;
	CUresult r;

	if (!handle || !w || !elem || !levels || levels > 32)
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned l = 0; l < levels; l++) {
		size_t lw = w >> l ? w >> l : 1, lh = h ? (h >> l ? h >> l : 1) : 1,
		       ld = d ? (layered ? d : (d >> l ? d >> l : 1)) : 1;
		if (__builtin_mul_overflow(lw, lh, &b) || __builtin_mul_overflow(b, ld, &b) ||
		    __builtin_mul_overflow(b, elem, &b) || __builtin_add_overflow(total, b, &total))
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if ((r = dev_alloc(&a, total, K_DEVICE)))
		return r;
	blk = blk_exact(a);
	blk->kind = K_ARRAY;
	*handle = (void *)a;
	return CUDA_SUCCESS;
}

static CUresult impl_array_create(CUarray *h, const CUDA_ARRAY_DESCRIPTOR *desc)
{
	if (!desc)
		return CUDA_ERROR_INVALID_VALUE;
	return impl_array((void **)h, desc->Width, desc->Height, 0, array_elem(desc->Format, desc->NumChannels), 1, 0);
}

static CUresult impl_array3d_create(void **h, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels)
{
	if (!desc)
		return CUDA_ERROR_INVALID_VALUE;
	return impl_array(h, desc->Width, desc->Height, desc->Depth, array_elem(desc->Format, desc->NumChannels),
			  levels, (desc->Flags & CUDA_ARRAY3D_LAYERED) != 0);
}

DRIVER_FN(cuArrayCreate_v2, (CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),
	  impl_array_create(pHandle, pAllocateArray))

DRIVER_FN(cuArray3DCreate_v2, (CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),
	  impl_array3d_create((void **)pHandle, pAllocateArray, 1))

DRIVER_FN(cuMipmappedArrayCreate, (CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
	  unsigned int numMipmapLevels),
	  impl_array3d_create((void **)pHandle, pMipmappedArrayDesc, numMipmapLevels))

DRIVER_FN(cuArrayDestroy, (CUarray hArray),
	  free_matching((uintptr_t)hArray, KIND(K_ARRAY), CUDA_ERROR_INVALID_HANDLE))

DRIVER_FN(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray),
	  free_matching((uintptr_t)hMipmappedArray, KIND(K_ARRAY), CUDA_ERROR_INVALID_HANDLE))

DRIVER_FN(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize),
	  dev_alloc(dptr, bytesize, K_DEVICE))

DRIVER_FN(cuMemAllocPitch_v2, (CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
	  unsigned int ElementSizeBytes),
	  impl_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))

DRIVER_FN(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned int flags),
	  impl_alloc_managed(dptr, bytesize, flags))

DRIVER_FN(cuMemFree_v2, (CUdeviceptr dptr),
	  impl_free(dptr))

DRIVER_FN(cuMemAllocHost_v2, (void **pp, size_t bytesize),
	  impl_host_alloc(pp, bytesize, 0))

DRIVER_FN(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags),
	  impl_host_alloc(pp, bytesize, Flags))

DRIVER_FN(cuMemFreeHost, (void *p),
	  free_matching((uintptr_t)p, KIND(K_HOST), CUDA_ERROR_INVALID_VALUE))

DRIVER_FN(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags),
	  impl_host_register(p, bytesize, Flags))

DRIVER_FN(cuMemHostUnregister, (void *p),
	  p ? free_matching((uintptr_t)p, KIND(K_REGISTERED), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
		: CUDA_ERROR_INVALID_VALUE)

DRIVER_FN(cuMemGetInfo_v2, (size_t *free_bytes, size_t *total),
	  impl_mem_info(free_bytes, total))

DRIVER_FN(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
	  impl_alloc_async(dptr, bytesize, NULL, hStream))

DRIVER_FN(cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),
	  impl_alloc_async(dptr, bytesize, NULL, hStream))

DRIVER_FN(cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),
	  pool ? impl_alloc_async(dptr, bytesize, pool, hStream) : CUDA_ERROR_INVALID_VALUE)

DRIVER_FN(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
	  CUstream hStream),
	  pool ? impl_alloc_async(dptr, bytesize, pool, hStream) : CUDA_ERROR_INVALID_VALUE)

DRIVER_FN(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream),
	  impl_free_async(dptr, hStream))

DRIVER_FN(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream),
	  impl_free_async(dptr, hStream))

/* ---- pool management ------------------------------------------------------- */

static CUresult impl_pool_create(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (check_dev(props->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool = pool_new(props->location.id, 0);
	return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The pool goes when its last allocation does (see pools_settle). */
static CUresult impl_pool_destroy(CUmemoryPool pool)
{
	struct CUmemPoolHandle_st *p = pool_find(pool);

	if (!p || p->is_default)
		return CUDA_ERROR_INVALID_VALUE;
	p->destroyed = 1;
	pools_settle();
	return CUDA_SUCCESS;
}

static CUresult impl_pool_trim(CUmemoryPool pool, size_t keep)
{
	struct CUmemPoolHandle_st *p = pool_find(pool);

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pool_trim(p, keep);
	return CUDA_SUCCESS;
}

/* cuMemPoolSetAttribute (set) and cuMemPoolGetAttribute. The reuse policies
 * are accepted and read back as enabled; the high-water marks may only be
 * reset (to the current value) by setting 0. */
static CUresult impl_pool_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *value, int set)
{
	struct CUmemPoolHandle_st *p = pool_find(pool);
	cuuint64_t *u = value;

	if (!p || !value)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		if (!set)
			*(int *)value = 1;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		if (set)
			p->threshold = *u;
		else
			*u = p->threshold;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		if (set)
			return CUDA_ERROR_INVALID_VALUE;
		*u = attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ? p->live : pool_reserved(p);
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		return attr_high(attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH ? &p->live_high : &p->reserved_high,
				 attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH ? p->live : pool_reserved(p), u, set);
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult impl_default_pool(CUmemoryPool *pool, CUdevice dev)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool = g_dev[dev].defpool;
	return CUDA_SUCCESS;
}

DRIVER_FN(cuMemPoolCreate, (CUmemoryPool *pool, const CUmemPoolProps *poolProps),
	  impl_pool_create(pool, poolProps))

DRIVER_FN(cuMemPoolDestroy, (CUmemoryPool pool),
	  impl_pool_destroy(pool))

DRIVER_FN(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep),
	  impl_pool_trim(pool, minBytesToKeep))

DRIVER_FN(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
	  impl_pool_attr(pool, attr, value, 1))

DRIVER_FN(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value),
	  impl_pool_attr(pool, attr, value, 0))

DRIVER_FN(cuDeviceGetDefaultMemPool, (CUmemoryPool *pool_out, CUdevice dev),
	  impl_default_pool(pool_out, dev))

DRIVER_FN(cuDeviceGetMemPool, (CUmemoryPool *pool, CUdevice dev),
	  impl_default_pool(pool, dev))

/* ---- virtual memory management -------------------------------------------- */

/* cuMemCreate and granularity queries take pinned memory on a device. */
static CUresult prop_check(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_NOT_SUPPORTED;
	return check_dev(prop->location.id);
}

static struct phys *phys_find(CUmemGenericAllocationHandle h)
{
	for (struct phys *ph = g_phys; ph; ph = ph->next)
		if ((uintptr_t)ph == h)
			return ph->released ? NULL : ph;
	return NULL;
}

/* Drops a reference; the last one frees the memory and its capacity. */
static void phys_unref(struct phys *ph)
{
	if (--ph->refs)
		return;
	for (struct phys **pp = &g_phys; *pp; pp = &(*pp)->next) {
		if (*pp == ph) {
			*pp = ph->next;
			break;
		}
	}
	if (ph->fd >= 0)
		KEEP_ERRNO(close(ph->fd));
	if (!ph->imported && !ph->multicast)
		g_dev[ph->dev].used -= ph->size;
	free(ph);
}

/* Turns [a, a + len) back into inaccessible, unbacked reserved space. */
static void remap_none(uintptr_t a, size_t len)
{
	KEEP_ERRNO(mmap((void *)a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0));
}

/* The first VMM mapping of a run of adjacent ones covering [a, a + len), or
 * NULL. With whole set the run must start at a and end at a + len exactly. */
static struct block *vmm_cover(uintptr_t a, size_t len, int whole)
{
	struct block *b = blk_at(a), *first = b;
	uintptr_t at;

	if (!b || b->kind != K_VMM || (whole && b->addr != a))
		return NULL;
	for (at = b->addr + b->size; at < a + len; at += b->size)
		if (!(b = blk_next(b)) || b->kind != K_VMM || b->addr != at)
			return NULL;
	return whole && at != a + len ? NULL : first;
}

static int is_gran(size_t v)
{
	return v % VMM_GRAN == 0;
}

static CUresult impl_granularity(size_t *granularity, const CUmemAllocationProp *prop,
				 CUmemAllocationGranularity_flags option)
{
	CUresult r;

	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = prop_check(prop)))
		return r;
	*granularity = VMM_GRAN;
	return CUDA_SUCCESS;
}

/* addr is a hint, used when it is aligned and free. */
static CUresult impl_reserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
			     unsigned long long flags)
{
	uintptr_t a = 0;

	if (!ptr || !size || flags || !is_gran(size) || (align & (align - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (align < VMM_GRAN)
		align = VMM_GRAN;
	if (addr && addr % align == 0 && !ext_take_at(&g_va.free, addr, size))
		a = addr;
	if (!a && !(a = ext_take(&g_va.free, size, align)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (ext_insert(&g_va.resv, a, size)) {
		ext_put(&g_va.free, a, size, NULL);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ptr = a;
	return CUDA_SUCCESS;
}

/* The exact reservation is required, with nothing mapped in it. */
static CUresult impl_address_free(CUdeviceptr ptr, size_t size)
{
	const struct tnode *rv = t_floor(g_va.resv, ptr);

	if (!rv || rv->key != ptr || rv->len != size || blk_overlaps(ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	free(t_remove(&g_va.resv, ptr));
	ext_put(&g_va.free, ptr, size, NULL);
	return CUDA_SUCCESS;
}

/* Physical memory is a memfd, so that every mapping of a handle aliases. */
static CUresult impl_create(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct device *d;
	struct phys *ph;
	CUresult r;

	if (!handle || flags || !size || !is_gran(size))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = prop_check(prop)))
		return r;
	d = &g_dev[prop->location.id];
	if (size > d->capacity - d->used)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ph = KEEP_ERRNO(calloc(1, sizeof(*ph)));
	if (!ph)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ph->fd = KEEP_ERRNO(memfd_create("cumtrace-fake-vmm", MFD_CLOEXEC));
	if (ph->fd < 0 || KEEP_ERRNO(ftruncate(ph->fd, (off_t)size))) {
		if (ph->fd >= 0)
			KEEP_ERRNO(close(ph->fd));
		free(ph);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	ph->dev = prop->location.id;
	ph->size = size;
	ph->refs = 1;
	ph->hrefs = 1;
	ph->next = g_phys;
	g_phys = ph;
	d->used += size;
	*handle = (uintptr_t)ph;
	return CUDA_SUCCESS;
}

/* Released while mapped, the memory lives on until its last unmap. */
static CUresult impl_release(CUmemGenericAllocationHandle handle)
{
	struct phys *ph = phys_find(handle);

	if (!ph)
		return CUDA_ERROR_INVALID_VALUE;
	if (!--ph->hrefs)
		ph->released = 1;
	phys_unref(ph);
	return CUDA_SUCCESS;
}

/* Maps [offset, offset + size) of the handle at ptr, inside one reservation
 * and over nothing already mapped. The mapping starts inaccessible. */
static CUresult impl_map(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
			 unsigned long long flags)
{
	struct phys *ph = phys_find(handle);
	const struct tnode *rv = t_floor(g_va.resv, ptr);

	if (!ph || ph->multicast || flags || !size || !is_gran(ptr) || !is_gran(size) || !is_gran(offset) ||
	    offset > ph->size || size > ph->size - offset)
		return CUDA_ERROR_INVALID_VALUE;
	if (!rv || ptr + size < ptr || ptr + size > rv->key + rv->len || blk_overlaps(ptr, size))
		return CUDA_ERROR_INVALID_VALUE;
	if (KEEP_ERRNO(mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->fd, (off_t)offset)) ==
	    MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!blk_add((struct block){ .addr = ptr, .size = size, .span = size, .kind = K_VMM, .dev = ph->dev,
				     .phys = ph, .prot = PROT_NONE })) {
		remap_none(ptr, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	ph->refs++;
	return CUDA_SUCCESS;
}

/* The range must be whole mappings; each unmap drops a handle reference. */
static CUresult impl_unmap(CUdeviceptr ptr, size_t size)
{
	if (!size || !is_gran(ptr) || !is_gran(size) || !vmm_cover(ptr, size, 1))
		return CUDA_ERROR_INVALID_VALUE;
	remap_none(ptr, size);
	for (uintptr_t at = ptr; at < ptr + size;) {
		struct block *b = blk_exact(at);
		struct phys *ph = b->phys;

		at += b->size;
		blk_free(b);
		phys_unref(ph);
	}
	return CUDA_SUCCESS;
}

static int access_prot(CUmemAccess_flags f)
{
	switch (f) {
	case CU_MEM_ACCESS_FLAGS_PROT_NONE:
		return PROT_NONE;
	case CU_MEM_ACCESS_FLAGS_PROT_READ:
		return PROT_READ;
	case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
		return PROT_READ | PROT_WRITE;
	default:
		return -1;
	}
}

/* The host stands in for every device: the range gets the most permissive
 * protection any descriptor asks for. */
static CUresult impl_set_access(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	int prot = PROT_NONE;

	if (!desc || !count || !size || !is_gran(ptr) || !is_gran(size))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < count; i++) {
		int p = access_prot(desc[i].flags);

		if (p < 0)
			return CUDA_ERROR_INVALID_VALUE;
		if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
			if (check_dev(desc[i].location.id))
				return CUDA_ERROR_INVALID_DEVICE;
		} else if (desc[i].location.type != CU_MEM_LOCATION_TYPE_HOST &&
			   desc[i].location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA) {
			return CUDA_ERROR_INVALID_VALUE;
		}
		prot |= p;
	}
	if (!vmm_cover(ptr, size, 0) || KEEP_ERRNO(mprotect((void *)ptr, size, prot)))
		return CUDA_ERROR_INVALID_VALUE;
	for (struct block *b = blk_at(ptr); b && b->addr < ptr + size; b = blk_next(b))
		b->prot = prot;
	return CUDA_SUCCESS;
}

DRIVER_FN(cuMemGetAllocationGranularity, (size_t *granularity, const CUmemAllocationProp *prop,
	  CUmemAllocationGranularity_flags option),
	  impl_granularity(granularity, prop, option))

DRIVER_FN(cuMemAddressReserve, (CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
	  unsigned long long flags),
	  impl_reserve(ptr, size, alignment, addr, flags))

DRIVER_FN(cuMemAddressFree, (CUdeviceptr ptr, size_t size),
	  impl_address_free(ptr, size))

DRIVER_FN(cuMemCreate, (CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
	  unsigned long long flags),
	  impl_create(handle, size, prop, flags))

DRIVER_FN(cuMemRelease, (CUmemGenericAllocationHandle handle),
	  impl_release(handle))

DRIVER_FN(cuMemMap, (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
	  unsigned long long flags),
	  impl_map(ptr, size, offset, handle, flags))

DRIVER_FN(cuMemUnmap, (CUdeviceptr ptr, size_t size),
	  impl_unmap(ptr, size))

DRIVER_FN(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count),
	  impl_set_access(ptr, size, desc, count))

/* ---- imported and shared memory, multicast (issue 19 §4) -------------------- */

/*
 * IPC handles and pool export data carry what the fake needs to stand for
 * the exporter's memory: a tag, the size and the device. An opened handle
 * (or an imported pool pointer) is a host mapping of its own of that size,
 * not charged to any device and not the exporter's bytes: the fake cannot
 * share another process's anonymous arena. The real driver refuses to open
 * a handle in the process that exported it; the fake accepts it.
 */
#define FAKE_SHARE_TAG 0x6374666b73686172ull /* "ctfkshar" */
struct fake_share {
	uint64_t tag;
	uint64_t addr, size;
	int32_t dev, pid;
};
_Static_assert(sizeof(struct fake_share) <= sizeof(CUipcMemHandle), "IPC handle room");
_Static_assert(sizeof(struct fake_share) <= sizeof(CUmemPoolPtrExportData), "export data room");

static void share_fill(void *out, const struct block *b)
{
	struct fake_share sh = { FAKE_SHARE_TAG, b->addr, b->size, b->dev, (int32_t)getpid() };

	memset(out, 0, 64);
	memcpy(out, &sh, sizeof sh);
}

/* Maps the memory a share describes into this process as a block of kind k. */
static CUresult share_open(CUdeviceptr *out, const void *data, enum kind k)
{
	struct fake_share sh;
	struct CUctx_st *c;
	CUresult r;
	void *p;

	if ((r = cur_ctx(&c)))
		return r;
	memcpy(&sh, data, sizeof sh);
	if (sh.tag != FAKE_SHARE_TAG || !sh.size || check_dev(sh.dev))
		return CUDA_ERROR_INVALID_VALUE;
	p = KEEP_ERRNO(mmap(NULL, sh.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!blk_add((struct block){ .addr = (uintptr_t)p, .size = sh.size, .span = sh.size, .kind = k,
				     .dev = sh.dev, .ctx = k == K_IPC ? c : NULL })) {
		KEEP_ERRNO(munmap(p, sh.size));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = (uintptr_t)p;
	return CUDA_SUCCESS;
}

/* cudaMalloc'ed memory only (not pool, managed or VMM memory), at its start. */
static CUresult impl_ipc_get(CUipcMemHandle *h, CUdeviceptr dptr)
{
	struct CUctx_st *c;
	const struct block *b;
	CUresult r;

	if ((r = cur_ctx(&c)))
		return r;
	b = blk_exact(dptr);
	if (!h || !b || b->kind != K_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	share_fill(h, b);
	return CUDA_SUCCESS;
}

static CUresult impl_ipc_open(CUdeviceptr *pdptr, CUipcMemHandle h, unsigned int flags)
{
	if (!pdptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
		return CUDA_ERROR_INVALID_VALUE;
	return share_open(pdptr, &h, K_IPC);
}

static CUresult impl_ipc_close(CUdeviceptr dptr)
{
	return free_matching(dptr, KIND(K_IPC), CUDA_ERROR_INVALID_VALUE);
}

/* Stream-ordered (pool) allocations only. */
static CUresult impl_pool_export_ptr(CUmemPoolPtrExportData *out, CUdeviceptr ptr)
{
	const struct block *b = blk_exact(ptr);

	if (!out || !b || b->kind != K_POOL)
		return CUDA_ERROR_INVALID_VALUE;
	share_fill(out, b);
	return CUDA_SUCCESS;
}

static CUresult impl_pool_import_ptr(CUdeviceptr *out, CUmemoryPool pool, CUmemPoolPtrExportData *data)
{
	if (!out || !data || !pool_find(pool))
		return CUDA_ERROR_INVALID_VALUE;
	return share_open(out, data, K_POOL_IMPORT);
}

/* POSIX file descriptors only: a dup of the handle's memfd. */
static CUresult impl_export_shareable(void *out, CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType type, unsigned long long flags)
{
	struct phys *ph = phys_find(handle);
	int fd;

	if (!out || !ph || ph->multicast || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((fd = KEEP_ERRNO(fcntl(ph->fd, F_DUPFD_CLOEXEC, 0))) < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*(int *)out = fd;
	return CUDA_SUCCESS;
}

/* A new handle on the memory behind the descriptor (the exporter's, in any process). */
static CUresult impl_import_shareable(CUmemGenericAllocationHandle *handle, void *os_handle,
				      CUmemAllocationHandleType type)
{
	int fd = (int)(intptr_t)os_handle;
	struct stat st;
	struct phys *ph;

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (KEEP_ERRNO(fstat(fd, &st)) || st.st_size <= 0 || !is_gran((size_t)st.st_size))
		return CUDA_ERROR_INVALID_VALUE;
	if (!(ph = KEEP_ERRNO(calloc(1, sizeof(*ph)))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if ((ph->fd = KEEP_ERRNO(fcntl(fd, F_DUPFD_CLOEXEC, 0))) < 0) {
		free(ph);
		return CUDA_ERROR_INVALID_VALUE;
	}
	ph->size = (size_t)st.st_size;
	ph->refs = ph->hrefs = 1;
	ph->imported = 1;
	ph->next = g_phys;
	g_phys = ph;
	*handle = (uintptr_t)ph;
	return CUDA_SUCCESS;
}

/* The handle mapped at addr, the same value that was mapped, with one more reference. */
static CUresult impl_retain(CUmemGenericAllocationHandle *handle, void *addr)
{
	const struct block *b = blk_at((uintptr_t)addr);

	if (!handle || !b || b->kind != K_VMM || !b->phys->hrefs)
		return CUDA_ERROR_INVALID_VALUE;
	b->phys->hrefs++;
	b->phys->refs++;
	*handle = (uintptr_t)b->phys;
	return CUDA_SUCCESS;
}

static struct phys *mc_find(CUmemGenericAllocationHandle h)
{
	struct phys *ph = phys_find(h);

	return ph && ph->multicast ? ph : NULL;
}

/* No memory of its own; its size a multiple of the granularity. */
static CUresult impl_mc_create(CUmemGenericAllocationHandle *mc, const CUmulticastObjectProp *prop)
{
	struct phys *ph;

	if (!mc || !prop || !prop->numDevices || !prop->size || !is_gran(prop->size) || prop->flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!(ph = KEEP_ERRNO(calloc(1, sizeof(*ph)))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	ph->fd = -1;
	ph->size = prop->size;
	ph->refs = ph->hrefs = 1;
	ph->multicast = 1;
	ph->mc_maxdev = prop->numDevices;
	ph->next = g_phys;
	g_phys = ph;
	*mc = (uintptr_t)ph;
	return CUDA_SUCCESS;
}

static CUresult impl_mc_add_device(CUmemGenericAllocationHandle mc, CUdevice dev)
{
	struct phys *ph = mc_find(mc);

	if (!ph || ph->mc_ndev >= ph->mc_maxdev)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	ph->mc_ndev++;
	return CUDA_SUCCESS;
}

static CUresult mc_bind(struct phys *ph, size_t mc_offset, size_t size, unsigned long long flags)
{
	if (!ph || flags || !size || !is_gran(mc_offset) || !is_gran(size) || mc_offset > ph->size ||
	    size > ph->size - mc_offset || size > ph->size - ph->mc_bound)
		return CUDA_ERROR_INVALID_VALUE;
	ph->mc_bound += size;
	return CUDA_SUCCESS;
}

static CUresult impl_mc_bind_mem(CUmemGenericAllocationHandle mc, size_t mc_offset, CUmemGenericAllocationHandle mem,
				 size_t mem_offset, size_t size, unsigned long long flags)
{
	struct phys *m = phys_find(mem);

	if (!m || m->multicast || !is_gran(mem_offset) || mem_offset > m->size || size > m->size - mem_offset)
		return CUDA_ERROR_INVALID_VALUE;
	return mc_bind(mc_find(mc), mc_offset, size, flags);
}

static CUresult impl_mc_bind_addr(CUmemGenericAllocationHandle mc, size_t mc_offset, CUdeviceptr ptr, size_t size,
				  unsigned long long flags)
{
	if (!is_gran(ptr) || !size || !vmm_cover(ptr, size, 0))
		return CUDA_ERROR_INVALID_VALUE;
	return mc_bind(mc_find(mc), mc_offset, size, flags);
}

static CUresult impl_mc_unbind(CUmemGenericAllocationHandle mc, CUdevice dev, size_t mc_offset, size_t size)
{
	struct phys *ph = mc_find(mc);

	if (!ph || !size || !is_gran(mc_offset) || !is_gran(size) || size > ph->mc_bound)
		return CUDA_ERROR_INVALID_VALUE;
	if (check_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	ph->mc_bound -= size;
	return CUDA_SUCCESS;
}

DRIVER_FN(cuIpcGetMemHandle, (CUipcMemHandle *pHandle, CUdeviceptr dptr),
	  impl_ipc_get(pHandle, dptr))

DRIVER_FN(cuIpcOpenMemHandle_v2, (CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags),
	  impl_ipc_open(pdptr, handle, Flags))

DRIVER_FN(cuIpcCloseMemHandle, (CUdeviceptr dptr),
	  impl_ipc_close(dptr))

DRIVER_FN(cuMemPoolExportPointer, (CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr),
	  impl_pool_export_ptr(shareData_out, ptr))

DRIVER_FN(cuMemPoolImportPointer, (CUdeviceptr *ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData),
	  impl_pool_import_ptr(ptr_out, pool, shareData))

DRIVER_FN(cuMemExportToShareableHandle, (void *shareableHandle, CUmemGenericAllocationHandle handle,
	  CUmemAllocationHandleType handleType, unsigned long long flags),
	  impl_export_shareable(shareableHandle, handle, handleType, flags))

DRIVER_FN(cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle *handle, void *osHandle,
	  CUmemAllocationHandleType shHandleType),
	  impl_import_shareable(handle, osHandle, shHandleType))

DRIVER_FN(cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle *handle, void *addr),
	  impl_retain(handle, addr))

DRIVER_FN(cuMulticastCreate, (CUmemGenericAllocationHandle *mcHandle, const CUmulticastObjectProp *prop),
	  impl_mc_create(mcHandle, prop))

DRIVER_FN(cuMulticastAddDevice, (CUmemGenericAllocationHandle mcHandle, CUdevice dev),
	  impl_mc_add_device(mcHandle, dev))

DRIVER_FN(cuMulticastBindMem, (CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
	  CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size, unsigned long long flags),
	  impl_mc_bind_mem(mcHandle, mcOffset, memHandle, memOffset, size, flags))

DRIVER_FN(cuMulticastBindAddr, (CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUdeviceptr memptr,
	  size_t size, unsigned long long flags),
	  impl_mc_bind_addr(mcHandle, mcOffset, memptr, size, flags))

DRIVER_FN(cuMulticastUnbind, (CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size),
	  impl_mc_unbind(mcHandle, dev, mcOffset, size))

/* ---- pointers and copies ---------------------------------------------------- */

/* Booleans are written as unsigned int. VMM mappings report the mapping as
 * their range. */
static CUresult impl_pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
	const struct block *b = blk_at(ptr);
	int host = b && (b->kind == K_HOST || b->kind == K_REGISTERED);

	if (!data || !b)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = b->ctx;
		break;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		break;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!host && b->kind != K_MANAGED)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)(uintptr_t)ptr;
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = b->id;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned *)data = b->kind == K_MANAGED;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = b->dev;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(CUdeviceptr *)data = b->addr;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = b->size;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		*(unsigned *)data = 1;
		break;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = b->pool;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult impl_address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	const struct block *b = blk_at(dptr);

	if (!b)
		return CUDA_ERROR_NOT_FOUND;
	if (pbase)
		*pbase = b->addr;
	if (psize)
		*psize = b->size;
	return CUDA_SUCCESS;
}

/* Whether [a, a + len) lies in live memory the host may access with prot:
 * inside one allocation, or across adjacent VMM mappings that allow it. */
static CUresult range_ok(uintptr_t a, size_t len, int prot)
{
	struct block *b = blk_at(a);

	if (!b)
		return CUDA_ERROR_INVALID_VALUE;
	if (b->kind != K_VMM)
		return len <= b->size - (a - b->addr) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (!vmm_cover(a, len, 0))
		return CUDA_ERROR_INVALID_VALUE;
	for (; b && b->addr < a + len; b = blk_next(b))
		if ((b->prot & prot) != prot)
			return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* A unified-addressing pointer: checked when it is ours (a live allocation
 * or this driver's device address space), else taken as pageable host. */
static CUresult uva_ok(uintptr_t a, size_t len, int prot)
{
	if (blk_at(a))
		return range_ok(a, len, prot);
	return in_fake_space(a) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* All copies and sets: dst/src are checked with uva_ok when unified, with
 * range_ok when they must be device memory, not at all when host. */
enum side { HOST_SIDE, DEVICE_SIDE, UVA_SIDE };

static CUresult check_side(enum side sd, uintptr_t a, size_t len, int prot)
{
	switch (sd) {
	case DEVICE_SIDE:
		return range_ok(a, len, prot);
	case UVA_SIDE:
		return uva_ok(a, len, prot);
	case HOST_SIDE:
		break;
	}
	return a ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* memmove from src to dst (src NULL: memset with value). */
static CUresult impl_copy(uintptr_t dst, enum side dsd, uintptr_t src, enum side ssd, int value, size_t n)
{
	struct CUctx_st *c;
	CUresult r;

	if ((r = cur_ctx(&c)) || !n)
		return r;
	if ((r = check_side(dsd, dst, n, PROT_WRITE)) || (src && (r = check_side(ssd, src, n, PROT_READ))))
		return r;
	if (src)
		memmove((void *)dst, (const void *)src, n);
	else
		memset((void *)dst, value, n);
	return CUDA_SUCCESS;
}

DRIVER_FN(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr),
	  impl_pointer_attr(data, attribute, ptr))

DRIVER_FN(cuMemGetAddressRange_v2, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr),
	  impl_address_range(pbase, psize, dptr))

DRIVER_FN(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
	  srcHost ? impl_copy(dstDevice, DEVICE_SIDE, (uintptr_t)srcHost, HOST_SIDE, 0, ByteCount)
		: CUDA_ERROR_INVALID_VALUE)

DRIVER_FN(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
	  srcDevice ? impl_copy((uintptr_t)dstHost, HOST_SIDE, srcDevice, DEVICE_SIDE, 0, ByteCount)
		: CUDA_ERROR_INVALID_VALUE)

DRIVER_FN(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
	  src ? impl_copy(dst, UVA_SIDE, src, UVA_SIDE, 0, ByteCount) : CUDA_ERROR_INVALID_VALUE)

DRIVER_FN(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
	  impl_copy(dstDevice, DEVICE_SIDE, 0, HOST_SIDE, uc, N))

/* Per-thread-default-stream copies: with no asynchronous work, the same. */
DRIVER_FN(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount),
	  srcHost ? impl_copy(dstDevice, DEVICE_SIDE, (uintptr_t)srcHost, HOST_SIDE, 0, ByteCount)
		  : CUDA_ERROR_INVALID_VALUE)
DRIVER_FN(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount),
	  srcDevice ? impl_copy((uintptr_t)dstHost, HOST_SIDE, srcDevice, DEVICE_SIDE, 0, ByteCount)
		    : CUDA_ERROR_INVALID_VALUE)
DRIVER_FN(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
	  src ? impl_copy(dst, UVA_SIDE, src, UVA_SIDE, 0, ByteCount) : CUDA_ERROR_INVALID_VALUE)
DRIVER_FN(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N),
	  impl_copy(dstDevice, DEVICE_SIDE, 0, HOST_SIDE, uc, N))

/* ---- errors ---------------------------------------------------------------- */
#define E(code, text) { code, #code, text }
static const struct {
	CUresult code;
	const char *name, *text;
} g_errors[] = {
	E(CUDA_SUCCESS, "no error"),
	E(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
	E(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
	E(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
	E(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
	E(CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool"),
	E(CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized: call cudaProfilerInitialize()"),
	E(CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started"),
	E(CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped"),
	E(CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library"),
	E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "CUDA driver is too old for this call"),
	E(CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable"),
	E(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
	E(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
	E(CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license"),
	E(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
	E(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
	E(CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current"),
	E(CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed"),
	E(CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed"),
	E(CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped"),
	E(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"),
	E(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device"),
	E(CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired"),
	E(CUDA_ERROR_NOT_MAPPED, "resource not mapped"),
	E(CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array"),
	E(CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer"),
	E(CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered"),
	E(CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture"),
	E(CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread"),
	E(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices"),
	E(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
	E(CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context"),
	E(CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution"),
	E(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found"),
	E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain."),
	E(CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled"),
	E(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the provided execution affinity is not supported"),
	E(CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "unsupported devside sync"),
	E(CUDA_ERROR_CONTAINED, "contained"),
	E(CUDA_ERROR_INVALID_SOURCE, "invalid source"),
	E(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
	E(CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found"),
	E(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed"),
	E(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS"),
	E(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
	E(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state"),
	E(CUDA_ERROR_LOSSY_QUERY, "attempted introspection would be semantically lossy"),
	E(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
	E(CUDA_ERROR_NOT_READY, "device not ready"),
	E(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"),
	E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch"),
	E(CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated"),
	E(CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode"),
	E(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"),
	E(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled"),
	E(CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process"),
	E(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
	E(CUDA_ERROR_ASSERT, "device-side assert triggered"),
	E(CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted"),
	E(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped"),
	E(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"),
	E(CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error"),
	E(CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered"),
	E(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
	E(CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space"),
	E(CUDA_ERROR_INVALID_PC, "invalid program counter"),
	E(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
	E(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch"),
	E(CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory leak"),
	E(CUDA_ERROR_NOT_PERMITTED, "operation not permitted"),
	E(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
	E(CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized"),
	E(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination"),
	E(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW"),
	E(CUDA_ERROR_MPS_CONNECTION_FAILED, "mps connection failed"),
	E(CUDA_ERROR_MPS_RPC_FAILURE, "mps rpc failure"),
	E(CUDA_ERROR_MPS_SERVER_NOT_READY, "mps server not ready"),
	E(CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "mps max clients reached"),
	E(CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "mps max connections reached"),
	E(CUDA_ERROR_MPS_CLIENT_TERMINATED, "mps client terminated"),
	E(CUDA_ERROR_CDP_NOT_SUPPORTED, "cdp not supported"),
	E(CUDA_ERROR_CDP_VERSION_MISMATCH, "cdp version mismatch"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing"),
	E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture"),
	E(CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began"),
	E(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work"),
	E(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream"),
	E(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream"),
	E(CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream"),
	E(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread"),
	E(CUDA_ERROR_TIMEOUT, "wait operation timed out"),
	E(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "graph exec update failure"),
	E(CUDA_ERROR_EXTERNAL_DEVICE, "external device"),
	E(CUDA_ERROR_INVALID_CLUSTER_SIZE, "invalid cluster size"),
	E(CUDA_ERROR_FUNCTION_NOT_LOADED, "function not loaded"),
	E(CUDA_ERROR_INVALID_RESOURCE_TYPE, "invalid resource type"),
	E(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "invalid resource configuration"),
	E(CUDA_ERROR_KEY_ROTATION, "key rotation"),
	E(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef E

/* cuGetErrorName (name set) and cuGetErrorString. */
static CUresult error_text(CUresult error, const char **pStr, int name)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++) {
		if (g_errors[i].code == error) {
			*pStr = name ? g_errors[i].name : g_errors[i].text;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	return error_text(error, pStr, 0);
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	return error_text(error, pStr, 1);
}

/* ---- cuGetProcAddress -------------------------------------------------------
 * Every versioned entry point under its base name, with the CUDA version
 * that introduced it (the versions of cudaTypedefs.h's PFN_ types). The
 * pointers are to this library's own functions, not looked up by name, so
 * an LD_PRELOAD shim that interposes exported symbols is bypassed, as with
 * the real driver. Versions older than the oldest entry (the _v1 ABIs) are
 * not served. */
struct proc {
	const char *name;
	int version;
	int per_thread;		/* a _ptsz / _ptds variant */
	void *fn;
};

#define P(name, version, fn) { name, version, 0, (void *)(fn) }
#define PT(name, version, fn) { name, version, 1, (void *)(fn) }
static const struct proc g_procs[] = {
	P("cuInit", 2000, cuInit),
	P("cuDriverGetVersion", 2020, cuDriverGetVersion),
	P("cuDeviceGet", 2000, cuDeviceGet),
	P("cuDeviceGetCount", 2000, cuDeviceGetCount),
	P("cuDeviceGetName", 2000, cuDeviceGetName),
	P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
	P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
	P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
	P("cuDevicePrimaryCtxReset", 11000, cuDevicePrimaryCtxReset_v2),
	P("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
	P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
	P("cuCtxCreate", 3020, cuCtxCreate_v2),
	P("cuCtxCreate", 11040, cuCtxCreate_v3),
	P("cuCtxCreate", 12050, cuCtxCreate_v4),
	P("cuCtxDestroy", 4000, cuCtxDestroy_v2),
	P("cuCtxGetDevice", 2000, cuCtxGetDevice),
	P("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
	P("cuCtxSynchronize", 2000, cuCtxSynchronize),
	P("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
	P("cuGetErrorString", 6000, cuGetErrorString),
	P("cuGetErrorName", 6000, cuGetErrorName),
	P("cuPointerGetAttribute", 4000, cuPointerGetAttribute),
	P("cuMemGetAddressRange", 3020, cuMemGetAddressRange_v2),
	P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
	P("cuMemAlloc", 3020, cuMemAlloc_v2),
	P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
	P("cuArrayCreate", 3020, cuArrayCreate_v2),
	P("cuArray3DCreate", 3020, cuArray3DCreate_v2),
	P("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate),
	P("cuArrayDestroy", 2000, cuArrayDestroy),
	P("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy),
	P("cuMemFree", 3020, cuMemFree_v2),
	P("cuMemAllocHost", 3020, cuMemAllocHost_v2),
	P("cuMemHostAlloc", 2020, cuMemHostAlloc),
	P("cuMemFreeHost", 2000, cuMemFreeHost),
	P("cuMemHostRegister", 6050, cuMemHostRegister_v2),
	P("cuMemHostUnregister", 4000, cuMemHostUnregister),
	P("cuMemAllocManaged", 6000, cuMemAllocManaged),
	P("cuMemAllocAsync", 11020, cuMemAllocAsync),
	PT("cuMemAllocAsync", 11020, cuMemAllocAsync_ptsz),
	P("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync),
	PT("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync_ptsz),
	P("cuMemFreeAsync", 11020, cuMemFreeAsync),
	PT("cuMemFreeAsync", 11020, cuMemFreeAsync_ptsz),
	P("cuMemPoolCreate", 11020, cuMemPoolCreate),
	P("cuMemPoolDestroy", 11020, cuMemPoolDestroy),
	P("cuMemPoolTrimTo", 11020, cuMemPoolTrimTo),
	P("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
	P("cuMemPoolGetAttribute", 11020, cuMemPoolGetAttribute),
	P("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
	P("cuDeviceGetMemPool", 11020, cuDeviceGetMemPool),
	P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
	PT("cuMemcpyHtoD", 7000, cuMemcpyHtoD_v2_ptds),
	P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
	PT("cuMemcpyDtoH", 7000, cuMemcpyDtoH_v2_ptds),
	P("cuMemcpy", 4000, cuMemcpy),
	PT("cuMemcpy", 7000, cuMemcpy_ptds),
	P("cuMemsetD8", 3020, cuMemsetD8_v2),
	PT("cuMemsetD8", 7000, cuMemsetD8_v2_ptds),
	P("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
	P("cuMemAddressReserve", 10020, cuMemAddressReserve),
	P("cuMemAddressFree", 10020, cuMemAddressFree),
	P("cuMemCreate", 10020, cuMemCreate),
	P("cuMemRelease", 10020, cuMemRelease),
	P("cuMemMap", 10020, cuMemMap),
	P("cuMemUnmap", 10020, cuMemUnmap),
	P("cuMemSetAccess", 10020, cuMemSetAccess),
	P("cuStreamCreate", 2000, cuStreamCreate),
	P("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
	P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
	P("cuStreamSynchronize", 2000, cuStreamSynchronize),
	PT("cuStreamSynchronize", 7000, cuStreamSynchronize_ptsz),
	P("cuStreamQuery", 2000, cuStreamQuery),
	PT("cuStreamQuery", 7000, cuStreamQuery_ptsz),
	P("cuGetProcAddress", 11030, cuGetProcAddress),
	P("cuGetProcAddress", 12000, cuGetProcAddress_v2),
	/* ---- CUDA graphs (issue 19 §2) ---- */
	P("cuGraphCreate", 10000, cuGraphCreate),
	P("cuGraphDestroy", 10000, cuGraphDestroy),
	P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
	PT("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2_ptsz),
	P("cuStreamEndCapture", 10000, cuStreamEndCapture),
	PT("cuStreamEndCapture", 10000, cuStreamEndCapture_ptsz),
	P("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
	PT("cuStreamIsCapturing", 10000, cuStreamIsCapturing_ptsz),
	P("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3),
	PT("cuStreamGetCaptureInfo", 12030, cuStreamGetCaptureInfo_v3_ptsz),
	P("cuGraphAddMemAllocNode", 11040, cuGraphAddMemAllocNode),
	P("cuGraphAddMemFreeNode", 11040, cuGraphAddMemFreeNode),
	P("cuGraphInstantiate", 12000, cuGraphInstantiateWithFlags),
	P("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
	P("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams),
	PT("cuGraphInstantiateWithParams", 12000, cuGraphInstantiateWithParams_ptsz),
	P("cuGraphLaunch", 10000, cuGraphLaunch),
	PT("cuGraphLaunch", 10000, cuGraphLaunch_ptsz),
	P("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
	P("cuDeviceGraphMemTrim", 11040, cuDeviceGraphMemTrim),
	P("cuDeviceGetGraphMemAttribute", 11040, cuDeviceGetGraphMemAttribute),
	P("cuDeviceSetGraphMemAttribute", 11040, cuDeviceSetGraphMemAttribute),
	/* ---- imported and shared memory, multicast (issue 19 §4) ---- */
	P("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle),
	P("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
	P("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
	P("cuMemPoolExportPointer", 11020, cuMemPoolExportPointer),
	P("cuMemPoolImportPointer", 11020, cuMemPoolImportPointer),
	P("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle),
	P("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle),
	P("cuMemRetainAllocationHandle", 11000, cuMemRetainAllocationHandle),
	P("cuMulticastCreate", 12010, cuMulticastCreate),
	P("cuMulticastAddDevice", 12010, cuMulticastAddDevice),
	P("cuMulticastBindMem", 12010, cuMulticastBindMem),
	P("cuMulticastBindAddr", 12010, cuMulticastBindAddr),
	P("cuMulticastUnbind", 12010, cuMulticastUnbind),
};
#undef P
#undef PT

/* Resolves a base name the way the real driver does: the newest variant
 * introduced at or before cudaVersion, the per-thread one when the flags ask
 * for it and one exists. Unknown names give CUDA_ERROR_NOT_FOUND with
 * CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, known names with no variant old
 * enough give CUDA_ERROR_NOT_FOUND with ..._VERSION_NOT_SUFFICIENT. Needs
 * neither cuInit nor the lock. */
#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PER_THREAD CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
static CUresult get_proc_address(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				 CUdriverProcAddressQueryResult *symbolStatus)
{
	const struct proc *best[2] = { NULL, NULL }; /* [per_thread] */
	int known = 0, pt = (flags & PER_THREAD) != 0;
	const struct proc *hit;

	if (!symbol || !pfn || cudaVersion > FAKE_DRIVER_VERSION || (flags & ~(cuuint64_t)(LEGACY | PER_THREAD)))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(g_procs) / sizeof(g_procs[0]); i++) {
		const struct proc *p = &g_procs[i];

		if (strcmp(p->name, symbol))
			continue;
		known = 1;
		if (p->version <= cudaVersion && (!best[p->per_thread] || best[p->per_thread]->version < p->version))
			best[p->per_thread] = p;
	}
	hit = pt && best[1] ? best[1] : best[0];
	*pfn = hit ? hit->fn : NULL;
	if (symbolStatus)
		*symbolStatus = hit ? CU_GET_PROC_ADDRESS_SUCCESS :
			known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return hit ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
#undef LEGACY
#undef PER_THREAD

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				     CUdriverProcAddressQueryResult *symbolStatus)
{
	return get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return get_proc_address(symbol, pfn, cudaVersion, flags, NULL);
}
