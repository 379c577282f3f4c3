/*
 * The background writer: one thread wakes every CUMTRACE_FLUSH_MS (or when a
 * ring fills up), copies every ring of the session into a write buffer and
 * hands it to write(2). What write(2) took survives kill -9, which is the
 * crash-safety guarantee: an event is on disk at most one flush interval
 * (plus one round) after it was recorded. A round also notes the modules
 * loaded since the last one and the events lost outside the rings.
 *
 * Locks (session.h): ct_round_lock around every round, ct_direct_lock around
 * direct writes and calibration points. The hot path takes no lock.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "session.h"
#include "packrun.h"

pthread_mutex_t ct_round_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t ct_direct_lock = PTHREAD_MUTEX_INITIALIZER;
/* The writer's wake-up word: what it holds at a fork carries over to the child. */
static _Atomic int ct_kick_word;
static _Atomic int ct_writer_sleeping;

/* ---- the write buffer (writer side only, under ct_round_lock) ---------------- */

/*
 * Whole records only: a full buffer goes out as one CT_REC_ZSTD record when
 * compression is on and shrinks it, else as it is. 1 MiB, not the 4 MiB a
 * compressed record may hold (CT_ZSTD_RAW_MAX): with the compressed copy
 * that is 2 MiB of address space instead of 5, for the same ratio within a
 * few percent (docs/reliability.md, issue 14). It holds any one record
 * (CT_REC_MAX). Mapped once per process: a fork child's dump reuses it.
 */
#define CT_WBUF_SIZE CT_REC_MAX
static unsigned char *ct_wbuf;
static unsigned char *ct_zbuf; /* CT_REC_MAX bytes: one CT_REC_ZSTD record */

/* The CT_REC_EVENTS being filled (CUMTRACE_PACK); closed before anything else goes in. */
static struct ct_packrun ct_run;

/* Compressed unless in a fatal signal's handler, where libzstd (malloc) must not run. */
static void ct_wbuf_flush(void)
{
	ct_packrun_close(&ct_run, ct_wbuf, &ct_session.wbuf_len);
	if (ct_session.wbuf_len && atomic_load(&ct_session.fd) >= 0 &&
	    atomic_load(&ct_state) != CT_STATE_DISABLED) {
		size_t z = ct_session.compress && !ct_session.in_signal
				   ? ct_zstd_pack(ct_wbuf, ct_session.wbuf_len, ct_zbuf, CT_REC_MAX)
				   : 0;
		if (z)
			ct_dump_write(ct_zbuf, z);
		else
			ct_dump_write(ct_wbuf, ct_session.wbuf_len);
	}
	ct_session.wbuf_len = 0;
}

/* Append one whole record the writer made (its timestamps are ns already). */
static void ct_wbuf_put(const void *p, size_t n)
{
	ct_packrun_close(&ct_run, ct_wbuf, &ct_session.wbuf_len);
	if (ct_session.wbuf_len + n > CT_WBUF_SIZE)
		ct_wbuf_flush();
	memcpy(ct_wbuf + ct_session.wbuf_len, p, n);
	ct_session.wbuf_len += n;
}

/*
 * Append a span of whole records copied from a ring, finishing each for the
 * file (ticks to ns, ct_rec_finish). Pads are dropped.
 */
static void ct_wbuf_put_ring(const unsigned char *p, size_t n)
{
	size_t off = 0;
	while (off < n) {
		size_t room = CT_WBUF_SIZE - ct_session.wbuf_len, run = 0;
		while (off + run < n) {
			const struct ct_rec *r = (const struct ct_rec *)(p + off + run);
			if (r->type == CT_REC_PAD || r->size < sizeof *r || run + r->size > room)
				break;
			run += r->size;
		}
		if (run) {
			unsigned char *dst = ct_wbuf + ct_session.wbuf_len;
			memcpy(dst, p + off, run);
			for (size_t i = 0; i < run; i += ((struct ct_rec *)(dst + i))->size)
				ct_rec_finish((struct ct_rec *)(dst + i));
			ct_session.wbuf_len += run;
			off += run;
			continue;
		}
		const struct ct_rec *r = (const struct ct_rec *)(p + off);
		if (r->size < sizeof *r)
			return; /* cannot happen: the shim wrote it */
		if (r->type == CT_REC_PAD)
			off += r->size;
		else
			ct_wbuf_flush();
	}
}

/*
 * CUMTRACE_PACK: a span of a ring with its events packed into CT_REC_EVENTS
 * (the ones that decode to exactly the record: 80 bytes, or 88 with a
 * Python stack trailer whose reserved word is 0) and its other records
 * copied as ct_wbuf_put_ring copies them, each where it stands.
 */
static void ct_wbuf_put_ring_packed(const unsigned char *p, size_t n)
{
	size_t off = 0, other = 0; /* records [off, off + other) wait to be copied */
	while (off + other < n) {
		const struct ct_rec *r = (const struct ct_rec *)(p + off + other);
		uint32_t py;
		if (r->size < sizeof *r)
			break; /* cannot happen: the shim wrote it */
		if (!ct_packrun_fits(r, &py)) {
			other += r->size;
			continue;
		}
		if (other) {
			ct_packrun_close(&ct_run, ct_wbuf, &ct_session.wbuf_len);
			ct_wbuf_put_ring(p + off, other);
			off += other;
			other = 0;
		}
		struct ct_rec_event ev;
		memcpy(&ev, r, sizeof ev);
		ct_rec_finish(&ev.rec);
		if (ct_session.wbuf_len + CT_PACKRUN_ROOM > CT_WBUF_SIZE)
			ct_wbuf_flush();
		ct_packrun_put(&ct_run, ct_wbuf, &ct_session.wbuf_len, &ev, py);
		off += r->size;
	}
	ct_packrun_close(&ct_run, ct_wbuf, &ct_session.wbuf_len);
	if (other)
		ct_wbuf_put_ring(p + off, other);
}

/* ---- modules ----------------------------------------------------------------- */

#define CT_MAX_MODULES 8192
struct ct_module_seen {
	uint64_t base;
	uint64_t name_hash;
};
/* Mapped once per process; which modules this dump has seen is the session's. */
static struct ct_module_seen *ct_modules;

static uint64_t ct_hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Copy the GNU build id note of a loaded object into out; returns its length. */
static size_t ct_build_id(const struct dl_phdr_info *info, unsigned char *out, size_t cap)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		const unsigned char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name_sz = (nh->n_namesz + 3) & ~3u;
			size_t desc_sz = (nh->n_descsz + 3) & ~3u;
			const unsigned char *name = p + sizeof *nh;
			const unsigned char *desc = name + name_sz;
			if (desc + desc_sz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				size_t n = nh->n_descsz < cap ? nh->n_descsz : cap;
				memcpy(out, desc, n);
				return n;
			}
			p = desc + desc_sz;
		}
	}
	return 0;
}

/*
 * Copy a loaded object's name into out (cap bytes, NUL included); returns its
 * length, 0 for none. dl_iterate_phdr holds the loader's lock, which orders
 * this after the dlopen that wrote the name; ThreadSanitizer cannot see that
 * lock, and its dl_iterate_phdr forgives the name's bytes but not the
 * terminating NUL: so this copy, plain loads, is not instrumented.
 */
__attribute__((no_sanitize("thread"))) static size_t ct_module_name(const char *name, char *out,
								     size_t cap)
{
	size_t n = 0;
	while (name && n + 1 < cap && name[n])
		out[n] = name[n], n++;
	out[n] = 0;
	return n;
}

static int ct_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *first = arg;
	if (*first) {
		*first = 0;
		if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
			if (info->dlpi_adds == ct_session.seen_adds &&
			    info->dlpi_subs == ct_session.seen_subs)
				return 1; /* nothing loaded or unloaded since the last scan */
			ct_session.seen_adds = info->dlpi_adds;
			ct_session.seen_subs = info->dlpi_subs;
		}
	}
	char path[PATH_MAX];
	if (!ct_module_name(info->dlpi_name, path, sizeof path)) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		path[n > 0 ? n : 0] = 0;
	}
	uint64_t h = ct_hash_str(path);
	for (size_t i = 0; i < ct_session.module_count; i++)
		if (ct_modules[i].base == info->dlpi_addr && ct_modules[i].name_hash == h)
			return 0;
	if (ct_session.module_count == CT_MAX_MODULES)
		return 0;
	uint64_t lo, hi;
	ct_module_range(info, &lo, &hi);
	if (hi == 0)
		return 0;
	ct_modules[ct_session.module_count].base = info->dlpi_addr;
	ct_modules[ct_session.module_count].name_hash = h;
	ct_session.module_count++;

	struct {
		struct ct_rec_module m;
		unsigned char tail[64 + PATH_MAX + 8];
	} rec;
	size_t plen = strlen(path) + 1;
	if (plen > PATH_MAX)
		plen = PATH_MAX;
	size_t blen = ct_build_id(info, rec.tail, 64);
	memcpy(rec.tail + blen, path, plen);
	rec.tail[blen + plen - 1] = 0;
	uint32_t total = CT_REC_ALIGN((uint32_t)(sizeof rec.m + blen + plen));
	memset(rec.tail + blen + plen, 0, total - (sizeof rec.m + blen + plen));
	rec.m.rec.type = CT_REC_MODULE;
	rec.m.rec.flags = 0;
	rec.m.rec.size = total;
	rec.m.base = info->dlpi_addr;
	rec.m.lo = lo;
	rec.m.hi = hi;
	rec.m.ts_ns = ct_now_ns();
	rec.m.build_id_len = (uint16_t)blen;
	rec.m.path_len = (uint16_t)plen;
	rec.m.reserved = 0;
	ct_wbuf_put(&rec, total);
	return 0;
}

static void ct_scan_modules(void)
{
	int first = 1;
	dl_iterate_phdr(ct_module_cb, &first);
}

/* ---- one round of copying ------------------------------------------------------ */

static void ct_put_drops(uint32_t tid, uint64_t count, uint16_t flags)
{
	struct ct_rec_drops d = {{CT_REC_DROPS, flags, sizeof d}, ct_now_ns(), count, tid, 0};
	ct_wbuf_put(&d, sizeof d);
}

/* A CT_REC_DROPS (tid 0) for what *lost counts beyond *reported, when live. */
static void ct_put_lost(_Atomic uint64_t *lost, uint64_t *reported, uint16_t flags, int live)
{
	uint64_t n = atomic_load(lost);
	if (live && n != *reported)
		ct_put_drops(0, n - *reported, flags);
	*reported = n;
}

/*
 * Copy every ring to the file. Caller holds ct_round_lock. in_signal = 1 in
 * a fatal signal's handler: no dl_iterate_phdr (it takes the loader's lock,
 * which the crashing thread may hold) and no compression (libzstd may
 * allocate).
 */
void ct_round_ex(int in_signal)
{
	if (atomic_load(&ct_session.fd) < 0)
		return;
	int live = atomic_load(&ct_state) != CT_STATE_DISABLED;
	/* A calibration point before any ring is read: every tick converted
	 * this round is either below it or extrapolated past it. Direct writes
	 * convert too, so they are kept out meanwhile. */
	if (pthread_mutex_trylock(&ct_direct_lock) == 0) {
		ct_clock_knot();
		pthread_mutex_unlock(&ct_direct_lock);
	}
	ct_session.in_signal = in_signal;
	struct ct_rec_batch b = {{CT_REC_BATCH, 0, sizeof b}, ct_now_ns(), ct_session.batch_seq++};
	if (live) {
		ct_wbuf_put(&b, sizeof b);
		if (!in_signal)
			ct_scan_modules();
	}
	for (struct ct_ring *r = atomic_load(&ct_session.rings); r; r = r->next) {
		int dead = atomic_load(&r->state) == CT_RING_DEAD;
		const void *p0 = NULL, *p1 = NULL;
		size_t n0 = 0, n1 = 0;
		uint64_t end;
		int spans = ct_ring_peek(r, &p0, &n0, &p1, &n1, &end);
		void (*put)(const unsigned char *, size_t) =
			ct_session.pack ? ct_wbuf_put_ring_packed : ct_wbuf_put_ring;
		if (live && spans >= 1)
			put(p0, n0);
		if (live && spans == 2)
			put(p1, n1);
		if (spans)
			ct_ring_release(r, end);
		uint64_t dropped = atomic_load(&r->dropped);
		if (live && dropped != r->dropped_reported)
			ct_put_drops(atomic_load_explicit(&r->tid, memory_order_relaxed),
				     dropped - r->dropped_reported, 0);
		r->dropped_reported = dropped;
		if (dead && atomic_load(&r->head) == end)
			atomic_store(&r->state, CT_RING_FREE);
	}
	ct_put_lost(&ct_session.lost, &ct_session.lost_reported, 0, live);
	ct_put_lost(&ct_session.lost_signal, &ct_session.lost_signal_reported, CT_DROPS_F_SIGNAL,
		    live);
	ct_put_lost(&ct_session.lost_records, &ct_session.lost_records_reported,
		    CT_DROPS_F_RECORDS, live);
	ct_wbuf_flush();
	ct_session.in_signal = 0;
}

void ct_round(void)
{
	ct_round_ex(0);
}

static void ct_futex(_Atomic int *addr, int op, int val, const struct timespec *ts)
{
	syscall(SYS_futex, (int *)addr, op, val, ts, NULL, 0);
}

static void *ct_writer_main(void *arg)
{
	long ms = ct_option(CT_OPT_FLUSH_MS);
	struct timespec interval = {ms / 1000, (ms % 1000) * 1000000L};
	ct_tls.in_hook = 1; /* nothing this thread does is traced */
	atomic_store(&ct_session.writer_up, 1);
	while (!atomic_load(&ct_session.writer_stop)) {
		if (atomic_exchange(&ct_kick_word, 0) == 0) {
			atomic_store(&ct_writer_sleeping, 1);
			ct_futex(&ct_kick_word, FUTEX_WAIT_PRIVATE, 0, &interval);
			atomic_store(&ct_writer_sleeping, 0);
			atomic_store(&ct_kick_word, 0);
		}
		pthread_mutex_lock(&ct_round_lock);
		ct_round();
		pthread_mutex_unlock(&ct_round_lock);
		if (atomic_load(&ct_state) == CT_STATE_DISABLED)
			break;
	}
	return arg;
}

void ct_writer_kick(void)
{
	if (atomic_load_explicit(&ct_kick_word, memory_order_relaxed))
		return;
	atomic_store(&ct_kick_word, 1);
	if (atomic_load(&ct_writer_sleeping))
		ct_futex(&ct_kick_word, FUTEX_WAKE_PRIVATE, 1, NULL);
}

/* ---- mapping, starting and stopping the writer ------------------------------------------ */

int ct_writer_mapped(void)
{
	return ct_wbuf != NULL;
}

/* Map the write buffer and the module table; on failure warn and return -1. */
int ct_writer_map(void)
{
	size_t wsize = CT_WBUF_SIZE + CT_REC_MAX;
	size_t msize = CT_MAX_MODULES * sizeof(struct ct_module_seen);
	void *m = mmap(NULL, wsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *mods = mmap(NULL, msize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mods == MAP_FAILED) {
		int err = errno;
		if (m != MAP_FAILED)
			munmap(m, wsize);
		if (mods != MAP_FAILED)
			munmap(mods, msize);
		ct_warn_once(&ct_warned.open,
			     "cannot map the write buffer (%zu KiB): %s; tracing off, the program "
			     "goes on",
			     (wsize + msize) >> 10, strerror(err));
		return -1;
	}
	ct_wbuf = m;
	ct_zbuf = ct_wbuf + CT_WBUF_SIZE;
	ct_modules = mods;
	return 0;
}

/*
 * The writer's stack. Its deepest path is a module record (two PATH_MAX
 * buffers) inside dl_iterate_phdr, or one zstd call: far below glibc's
 * default of RLIMIT_STACK, 8 MiB of address space. A program whose static
 * TLS does not fit beside it (EINVAL) gets the default.
 */
#define CT_WRITER_STACK (256u << 10)

int ct_writer_spawn(void)
{
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc == 0) {
		rc = pthread_attr_setstacksize(&attr, CT_WRITER_STACK);
		if (rc == 0)
			rc = pthread_create(&ct_session.writer_thread, &attr, ct_writer_main, NULL);
		pthread_attr_destroy(&attr);
	}
	if (rc == EINVAL)
		rc = pthread_create(&ct_session.writer_thread, NULL, ct_writer_main, NULL);
	return rc;
}

void ct_writer_wait_up(void)
{
	for (int i = 0; i < 2000 && atomic_load(&ct_session.writer_joinable) &&
			!atomic_load(&ct_session.writer_up);
	     i++) {
		struct timespec ts = {0, 100000}; /* 100 us */
		nanosleep(&ts, NULL);
	}
}

/* Stop the writer thread and wait for it to end; the first caller does, later ones return. */
void ct_writer_join(void)
{
	if (!atomic_exchange(&ct_session.writer_joinable, 0))
		return;
	atomic_store(&ct_session.writer_stop, 1);
	atomic_store(&ct_kick_word, 1);
	ct_futex(&ct_kick_word, FUTEX_WAKE_PRIVATE, 1, NULL);
	pthread_join(ct_session.writer_thread, NULL);
}

/* ---- after exit: records straight to the file ---------------------------------------- */

void ct_write_direct(const void *rec, uint32_t len)
{
	/* Records that carry ticks (format.h's CT_REC_LIST): finish a copy (all are small). */
	union {
		struct ct_rec rec;
		unsigned char bytes[2048];
	} copy;
	unsigned type = ((const struct ct_rec *)rec)->type;
	int finish = ct_rec_carries_ticks(type) && len <= sizeof copy;
	if (finish)
		memcpy(&copy, rec, len);
	pthread_mutex_lock(&ct_direct_lock);
	if (finish)
		ct_rec_finish(&copy.rec);
	if (atomic_load(&ct_session.fd) >= 0 && atomic_load(&ct_state) == CT_STATE_FINISHED)
		ct_dump_write(finish ? (const void *)&copy : rec, len);
	pthread_mutex_unlock(&ct_direct_lock);
}
