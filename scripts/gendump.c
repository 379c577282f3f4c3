/*
 * gendump: write a synthetic cumtrace dump of N events, in the format the
 * shim writes (include/cumtrace/format.h): file header, PROCESS, MODULE
 * records, then writer rounds (a BATCH, then each thread's records in turn)
 * packed into CT_REC_ZSTD records by the shim's own compressor
 * (preload/output/compress.c) exactly as the writer packs its buffer, then END.
 * Events go out as the writer writes them: packed into CT_REC_EVENTS runs
 * (preload/output/packrun.c), or with -P 0 as CT_REC_EVENT records (the
 * writer's CUMTRACE_PACK=0); the same seed makes the same events either way.
 * For the analyzer benchmark (scripts/bench.sh) and for tests.
 *
 * The workload: THREADS threads each keep LIVE/THREADS device blocks live.
 * After the first LIVE allocations, each step frees one of the thread's
 * blocks (chosen at random) and allocates a new one, so the live set stays
 * LIVE blocks whatever N is. Sizes are 512 B to 64 MiB, half of the new
 * blocks reuse the address just freed (as caching allocators do), stacks
 * are STACKS distinct DEPTH-frame stacks in two fake modules, each written
 * once before its first use. Timestamps advance 200-2000 ns per event per
 * thread; a round holds 50 ms of every thread's events.
 *
 * Shapes for the analyzer's limits (docs/reliability.md, issue 14):
 *   -b BYTES    every block has this size (instead of 512 B to 64 MiB)
 *   -u          every allocation has a stack of its own (STACKS is ignored)
 *   -A          cudaMallocAsync / cudaFreeAsync on stream 0 instead of cudaMalloc / cudaFree
 *   -D DEVICES  blocks are spread over DEVICES device numbers (at most 65536: all of
 *               int16_t, 32768 and above wrap to negative numbers); default 2, by thread
 *
 * usage: gendump [-n EVENTS] [-t THREADS] [-l LIVE] [-s STACKS] [-d DEPTH]
 *                [-z 0|1] [-P 0|1] [-r SEED] [-b BYTES] [-u] [-A] [-D DEVICES] OUT
 * Prints "events N bytes B" on success.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../preload/output/compress.h"
#include "../preload/output/packrun.h"

#define ROUND_NS 50000000ull	    /* simulated writer interval */
#define MOD_BASE 0x555500000000ull /* the fake program's text */
#define MOD_SIZE 0x100000ull
#define START_NS 1000000000000ull

struct thread {
	uint32_t tid;
	uint64_t now, rng;
	uint64_t *ptr, *size; /* the live blocks: LIVE/THREADS of them */
	uint32_t *stack;
	size_t nlive, cap;
};

static int out_fd;
static unsigned char *buf, *zbuf;
static size_t buf_len;
static int compress_on = 1;
static int pack_on = 1;	     /* -P */
static struct ct_packrun run; /* the events' run being filled */
static uint64_t bytes_out, next_addr = 0x7e0000000000ull;
static unsigned char *stack_written;
static unsigned nstacks = 1000, depth = 22;
static uint64_t fixed_size;   /* -b: 0 = random sizes */
static int unique_stacks;     /* -u */
static uint32_t last_stack;   /* -u: the last stack id written */
static unsigned ndevices;     /* -D: 0 = device by thread */
static int async_apis;        /* -A */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void put_file(const void *p, size_t n)
{
	if (write(out_fd, p, n) != (ssize_t)n) {
		perror("gendump: write");
		exit(1);
	}
	bytes_out += n;
}

/* The writer's buffer: whole records, one CT_REC_ZSTD per full buffer. */
static void flush(void)
{
	ct_packrun_close(&run, buf, &buf_len);
	size_t z = compress_on ? ct_zstd_pack(buf, buf_len, zbuf, CT_REC_MAX) : 0;
	if (z)
		put_file(zbuf, z);
	else if (buf_len)
		put_file(buf, buf_len);
	buf_len = 0;
}

/* Packed, a buffer holds what the writer's does (CT_REC_MAX): its frame fits a record. */
static size_t buf_cap(void)
{
	return pack_on ? CT_REC_MAX : CT_ZSTD_RAW_MAX;
}

static void put(const void *rec, size_t n)
{
	ct_packrun_close(&run, buf, &buf_len);
	if (buf_len + n > buf_cap())
		flush();
	memcpy(buf + buf_len, rec, n);
	buf_len += n;
}

static void put_stack(uint32_t id)
{
	struct {
		struct ct_rec_stack s;
		uint64_t ips[CT_STACK_MAX];
	} r;
	memset(&r, 0, sizeof r);
	r.s.rec.type = CT_REC_STACK;
	r.s.rec.size = (uint32_t)(sizeof r.s + 8 * depth);
	r.s.stack_id = id;
	r.s.depth = (uint16_t)depth;
	uint64_t h = id * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < depth; i++) /* the outer frames are shared, as in real programs */
		r.ips[i] = MOD_BASE + (i < depth / 2 ? (rnd(&h) % MOD_SIZE) : 0x1000 + 64 * i) / 4 * 4;
	put(&r, r.s.rec.size);
}

static void put_event(struct thread *t, uint8_t op, uint64_t ptr, uint64_t size, uint32_t stack)
{
	struct ct_rec_event ev;
	memset(&ev, 0, sizeof ev);
	ev.rec.type = CT_REC_EVENT;
	ev.rec.size = sizeof ev;
	t->now += 200 + rnd(&t->rng) % 1800;
	ev.ts_ns = t->now;
	ev.dur_ns = 300 + rnd(&t->rng) % 4000;
	ev.ptr = ptr;
	ev.size = size;
	ev.tid = t->tid;
	ev.stack_id = stack;
	if (async_apis)
		ev.api = op == CT_OP_ALLOC ? CT_API_cudaMallocAsync : CT_API_cudaFreeAsync;
	else
		ev.api = op == CT_OP_ALLOC ? CT_API_cudaMalloc : CT_API_cudaFree;
	ev.op = op;
	ev.kind = CT_KIND_DEVICE;
	ev.device = (int16_t)(uint16_t)(ndevices ? rnd(&t->rng) % ndevices : t->tid % 2);
	ev.layer = CT_LAYER_RUNTIME;
	if (!pack_on) {
		put(&ev, sizeof ev);
		return;
	}
	if (buf_len + CT_PACKRUN_ROOM > buf_cap())
		flush();
	ct_packrun_put(&run, buf, &buf_len, &ev, 0);
}

static void alloc_one(struct thread *t, size_t slot, uint64_t reuse)
{
	uint64_t size = fixed_size ? fixed_size : 512ull << (rnd(&t->rng) % 18);
	uint64_t ptr = reuse;
	if (!ptr) {
		ptr = next_addr;
		next_addr += size + 512;
	}
	uint32_t stack = 1 + (uint32_t)(rnd(&t->rng) % nstacks);
	if (unique_stacks) {
		stack = ++last_stack;
		put_stack(stack);
	} else if (!stack_written[stack]) {
		stack_written[stack] = 1;
		put_stack(stack);
	}
	put_event(t, CT_OP_ALLOC, ptr, size, stack);
	t->ptr[slot] = ptr;
	t->size[slot] = size;
	t->stack[slot] = stack;
}

static void put_process(int argc, char **argv)
{
	char b[4096];
	memset(b, 0, sizeof b);
	struct ct_rec_process *p = (struct ct_rec_process *)b;
	size_t len = sizeof *p;
	p->rec.type = CT_REC_PROCESS;
	p->pid = 4242;
	p->ppid = 1;
	p->start_realtime_ns = 1800000000000000000ull;
	p->start_monotonic_ns = START_NS;
	p->clock_id = 1;
	const char *fixed[] = {"version=" CUMTRACE_VERSION, "host=gendump", "exe=/gendump/prog",
			       "setting.stack_depth=22", "setting.buffer_mb=64",
			       "setting.drop=0", "setting.flush_ms=50",
			       compress_on ? "setting.compress=zstd" : "setting.compress=off",
			       pack_on ? "setting.pack=on" : "setting.pack=off", "setting.clock=tsc"};
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		len += (size_t)snprintf(b + len, sizeof b - len - 1, "%s", fixed[i]) + 1;
	/* without -P: both layouts of one seed, written under one name, give the same reports */
	for (int i = 0; i < argc && len + 300 < sizeof b; i++) {
		if (!strncmp(argv[i], "-P", 2)) {
			i += argv[i][2] == 0;
			continue;
		}
		len += (size_t)snprintf(b + len, 256, "argv=%s", argv[i]) + 1;
	}
	p->rec.size = CT_REC_ALIGN((uint32_t)len);
	struct ct_file_header h = {.version = CT_FORMAT_VERSION, .header_size = sizeof h};
	memcpy(h.magic, CT_MAGIC, CT_MAGIC_LEN);
	put_file(&h, sizeof h);
	put_file(b, p->rec.size);
}

static void put_module(uint64_t base, const char *path)
{
	struct {
		struct ct_rec_module m;
		char path[64];
	} r;
	memset(&r, 0, sizeof r);
	r.m.rec.type = CT_REC_MODULE;
	r.m.base = base;
	r.m.lo = base;
	r.m.hi = base + MOD_SIZE;
	r.m.ts_ns = START_NS;
	r.m.path_len = (uint16_t)(strlen(path) + 1);
	memcpy(r.path, path, r.m.path_len);
	r.m.rec.size = CT_REC_ALIGN((uint32_t)(sizeof r.m + r.m.path_len));
	put(&r, r.m.rec.size);
}

int main(int argc, char **argv)
{
	uint64_t events = 1000000, live = 10000, seed = 1;
	unsigned nthreads = 4;
	int c;
	while ((c = getopt(argc, argv, "n:t:l:s:d:z:P:r:b:uAD:")) != -1) {
		switch (c) {
		case 'n': events = strtoull(optarg, NULL, 10); break;
		case 't': nthreads = (unsigned)atoi(optarg); break;
		case 'l': live = strtoull(optarg, NULL, 10); break;
		case 's': nstacks = (unsigned)atoi(optarg); break;
		case 'd': depth = (unsigned)atoi(optarg); break;
		case 'z': compress_on = atoi(optarg); break;
		case 'P': pack_on = atoi(optarg); break;
		case 'r': seed = strtoull(optarg, NULL, 10); break;
		case 'b': fixed_size = strtoull(optarg, NULL, 0); break;
		case 'u': unique_stacks = 1; break;
		case 'A': async_apis = 1; break;
		case 'D': ndevices = (unsigned)atoi(optarg); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || nthreads < 1 || nthreads > 1024 || live < nthreads ||
	    nstacks < 1 || depth < 1 || depth > CT_STACK_MAX || events < live || ndevices > 65536)
		goto usage;
	out_fd = open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	buf = malloc(CT_ZSTD_RAW_MAX);
	zbuf = malloc(CT_REC_MAX);
	stack_written = calloc(nstacks + 1, 1);
	struct thread *th = calloc(nthreads, sizeof *th);
	if (out_fd < 0 || !buf || !zbuf || !stack_written || !th) {
		perror("gendump");
		return 1;
	}
	if (compress_on && ct_zstd_init(CT_ZSTD_LEVEL) != 0) {
		fprintf(stderr, "gendump: libzstd.so.1 cannot be loaded\n");
		return 1;
	}
	put_process(argc, argv);
	put_module(MOD_BASE, "/gendump/prog");
	put_module(MOD_BASE + 0x10000000, "/gendump/libfake.so");
	flush();
	for (unsigned i = 0; i < nthreads; i++) {
		struct thread *t = &th[i];
		t->tid = 5000 + i;
		t->now = START_NS + i * 17;
		t->rng = seed * 0x9e3779b97f4a7c15ull + i + 1;
		t->cap = live / nthreads + (i < live % nthreads);
		t->ptr = calloc(t->cap, 8);
		t->size = calloc(t->cap, 8);
		t->stack = calloc(t->cap, 4);
		if (!t->ptr || !t->size || !t->stack)
			return 1;
	}
	uint64_t made = 0, seq = 0, round_end = START_NS;
	while (made < events) {
		round_end += ROUND_NS;
		struct ct_rec_batch b = {{CT_REC_BATCH, 0, sizeof b}, round_end - ROUND_NS, seq++};
		put(&b, sizeof b);
		for (unsigned i = 0; i < nthreads && made < events; i++) {
			struct thread *t = &th[i];
			while (t->now < round_end && made < events) {
				if (t->nlive < t->cap) {
					alloc_one(t, t->nlive++, 0);
					made++;
					continue;
				}
				size_t slot = rnd(&t->rng) % t->nlive;
				put_event(t, CT_OP_FREE, t->ptr[slot], 0, 0);
				made++;
				if (made < events) {
					alloc_one(t, slot, rnd(&t->rng) % 2 ? t->ptr[slot] : 0);
					made++;
				}
			}
		}
		flush();
	}
	struct ct_rec_end e = {{CT_REC_END, 0, sizeof e}, round_end, events, 0,
			       unique_stacks ? last_stack : nstacks};
	put(&e, sizeof e);
	flush();
	if (close(out_fd) != 0) {
		perror("gendump: close");
		return 1;
	}
	printf("events %llu bytes %llu\n", (unsigned long long)events,
	       (unsigned long long)bytes_out);
	return 0;
usage:
	fprintf(stderr, "usage: gendump [-n EVENTS] [-t THREADS] [-l LIVE] [-s STACKS] "
			"[-d DEPTH] [-z 0|1] [-P 0|1] [-r SEED] [-b BYTES] [-u] [-A] [-D DEVICES] OUT\n");
	return 2;
}
