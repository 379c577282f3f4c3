/*
 * The dump file and the background writer.
 *
 * Tracing starts lazily at the first traced call: the dump is created then,
 * so a process that never calls CUDA leaves no dump. One writer thread wakes
 * every CUMTRACE_FLUSH_MS (or when a ring fills up), copies every ring into a
 * write buffer and hands it to write(2). What write(2) took survives kill -9,
 * which is the crash-safety guarantee: an event is on disk at most one flush
 * interval (plus one round) after it was recorded.
 *
 * Locks: ct_round_lock serialises consumers of the rings (the writer, an
 * exec-time flush, the exit path) and is taken around fork so the child sees
 * no half-copied round. The hot path takes no lock.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ct.h"

_Atomic int ct_state;

static _Atomic int ct_fd = -1;
static char ct_path[PATH_MAX + 16];
/* Absolute: the manifest's line, and where the dump is opened again. */
static char ct_path_abs[2 * PATH_MAX + 16];
static dev_t ct_dump_dev; /* the file the dump was created as */
static ino_t ct_dump_ino;
static pid_t ct_pid;
static uint64_t ct_start_realtime, ct_start_monotonic;
static uint32_t ct_parent_pid;
static int ct_is_fork_child;

static pthread_mutex_t ct_round_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ct_direct_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t ct_writer_thread;
static _Atomic int ct_writer_joinable; /* started, and nobody has joined it yet */
static _Atomic int ct_writer_stop;
static _Atomic int ct_kick_word;
static _Atomic int ct_writer_sleeping;

static struct ct_ring *_Atomic ct_rings;
static _Atomic uint64_t ct_ring_bytes;
static struct ct_ring *_Atomic ct_overflow_ring;
static pthread_mutex_t ct_overflow_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t ct_thread_key;
static _Atomic uint64_t ct_lost;
static uint64_t ct_lost_reported;
static _Atomic uint64_t ct_lost_signal; /* ct_count_lost_signal */
static uint64_t ct_lost_signal_reported;
static uint64_t ct_batch_seq;

static _Atomic int ct_warned_open, ct_warned_write, ct_warned_thread, ct_warned_reopen,
	ct_warned_ring;

/* ---- the write buffer (writer side only, under ct_round_lock) ---------------- */

/*
 * Whole records only: a full buffer goes out as one CT_REC_ZSTD record when
 * compression is on and shrinks it, else as it is. 1 MiB, not the 4 MiB a
 * compressed record may hold (CT_ZSTD_RAW_MAX): with the compressed copy
 * that is 2 MiB of address space instead of 5, for the same ratio within a
 * few percent (docs/reliability.md, issue 14). It holds any one record
 * (CT_REC_MAX).
 */
#define CT_WBUF_SIZE CT_REC_MAX
static unsigned char *ct_wbuf;
static size_t ct_wbuf_len;
static unsigned char *ct_zbuf; /* CT_REC_MAX bytes: one CT_REC_ZSTD record */
static int ct_compress;	       /* this dump's rounds are compressed */

/* ---- the dump's descriptor ----------------------------------------------------- */

/* Does fd name the dump (the file it was created as)? */
static int ct_fd_is_dump(int fd)
{
	struct stat st;
	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == ct_dump_dev &&
	       st.st_ino == ct_dump_ino;
}

/* Open an existing path to append to it: never created, never through a
 * symlink, never waiting (a FIFO). Returns the descriptor or -1. */
static int ct_open_append(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 && fcntl(fd, F_SETFL, O_APPEND) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Close the dump's descriptor when it still names the dump (else it is not ours). */
static void ct_dump_close(void)
{
	int fd = atomic_exchange(&ct_fd, -1);
	if (ct_fd_is_dump(fd))
		close(fd);
}

/*
 * The dump's descriptor, checked before every write: the program may have
 * closed it, or closed it and opened a file of its own that got its number.
 * Then the dump is opened again by its absolute path when that still names
 * the same file (one warning), else tracing stops (one warning) and -1 is
 * returned. The old number is never closed or written: it is not the
 * shim's any more. What remains is a window of a few hundred nanoseconds
 * between the check and the write, in which a thread of the program would
 * have to close that number and get it back from open (it sits at the top
 * of the table, above what open hands out first) or dup2 onto it.
 */
static int ct_dump_fd(void)
{
	for (;;) {
		int fd = atomic_load(&ct_fd);
		if (fd < 0 || ct_fd_is_dump(fd))
			return fd;
		int again = ct_open_append(ct_path_abs);
		if (again >= 0 && !ct_fd_is_dump(again)) {
			close(again);
			again = -1;
			errno = ESTALE;
		}
		if (again >= 0)
			again = ct_fd_move_high(again);
		if (again < 0) {
			ct_warn_once(&ct_warned_write,
				     "descriptor %d no longer names %s (the program closed or "
				     "replaced it) and the dump cannot be opened again: %s; tracing "
				     "stopped, the program goes on",
				     fd, ct_path, strerror(errno));
			atomic_store(&ct_state, CT_STATE_DISABLED);
			return -1;
		}
		if (atomic_compare_exchange_strong(&ct_fd, &fd, again)) {
			ct_warn_once(&ct_warned_reopen,
				     "descriptor %d no longer names %s (the program closed or "
				     "replaced it); opened it again as descriptor %d",
				     fd, ct_path, again);
			return again;
		}
		close(again); /* another thread opened it again first */
	}
}

/* Write everything or fail; on failure tracing stops for good. */
static int ct_write_all(const void *p, size_t n)
{
	const unsigned char *c = p;
	int fd = ct_dump_fd();
	if (fd < 0)
		return -1;
	while (n > 0) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ct_warn_once(&ct_warned_write,
				     "cannot write %s: %s; tracing stopped, the program goes on",
				     ct_path, w < 0 ? strerror(errno) : "short write");
			atomic_store(&ct_state, CT_STATE_DISABLED);
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int ct_in_signal; /* the round in progress runs in a fatal signal's handler */

/* Compressed unless in a fatal signal's handler, where libzstd (malloc) must not run. */
static void ct_wbuf_flush(void)
{
	if (ct_wbuf_len && atomic_load(&ct_fd) >= 0 && atomic_load(&ct_state) != CT_STATE_DISABLED) {
		size_t z = ct_compress && !ct_in_signal
				   ? ct_zstd_pack(ct_wbuf, ct_wbuf_len, ct_zbuf, CT_REC_MAX)
				   : 0;
		if (z)
			ct_write_all(ct_zbuf, z);
		else
			ct_write_all(ct_wbuf, ct_wbuf_len);
	}
	ct_wbuf_len = 0;
}

/* Append one whole record the writer made (its timestamps are ns already). */
static void ct_wbuf_put(const void *p, size_t n)
{
	if (ct_wbuf_len + n > CT_WBUF_SIZE)
		ct_wbuf_flush();
	memcpy(ct_wbuf + ct_wbuf_len, p, n);
	ct_wbuf_len += n;
}

/*
 * Append a span of whole records copied from a ring, finishing each for the
 * file (ticks to ns, ct_rec_finish). Pads are dropped.
 */
static void ct_wbuf_put_ring(const unsigned char *p, size_t n)
{
	size_t off = 0;
	while (off < n) {
		size_t room = CT_WBUF_SIZE - ct_wbuf_len, run = 0;
		while (off + run < n) {
			const struct ct_rec *r = (const struct ct_rec *)(p + off + run);
			if (r->type == CT_REC_PAD || r->size < sizeof *r || run + r->size > room)
				break;
			run += r->size;
		}
		if (run) {
			unsigned char *dst = ct_wbuf + ct_wbuf_len;
			memcpy(dst, p + off, run);
			for (size_t i = 0; i < run; i += ((struct ct_rec *)(dst + i))->size)
				ct_rec_finish((struct ct_rec *)(dst + i));
			ct_wbuf_len += run;
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

/* ---- modules ----------------------------------------------------------------- */

#define CT_MAX_MODULES 8192
struct ct_module_seen {
	uint64_t base;
	uint64_t name_hash;
};
static struct ct_module_seen *ct_modules;
static size_t ct_module_count;
static unsigned long long ct_seen_adds = ~0ull, ct_seen_subs = ~0ull;

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
			if (info->dlpi_adds == ct_seen_adds && info->dlpi_subs == ct_seen_subs)
				return 1; /* nothing loaded or unloaded since the last scan */
			ct_seen_adds = info->dlpi_adds;
			ct_seen_subs = info->dlpi_subs;
		}
	}
	char path[PATH_MAX];
	if (!ct_module_name(info->dlpi_name, path, sizeof path)) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		path[n > 0 ? n : 0] = 0;
	}
	uint64_t h = ct_hash_str(path);
	for (size_t i = 0; i < ct_module_count; i++)
		if (ct_modules[i].base == info->dlpi_addr && ct_modules[i].name_hash == h)
			return 0;
	if (ct_module_count == CT_MAX_MODULES)
		return 0;
	uint64_t lo, hi;
	ct_module_range(info, &lo, &hi);
	if (hi == 0)
		return 0;
	ct_modules[ct_module_count].base = info->dlpi_addr;
	ct_modules[ct_module_count].name_hash = h;
	ct_module_count++;

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

/*
 * Copy every ring to the file. Caller holds ct_round_lock. in_signal = 1 in
 * a fatal signal's handler: no dl_iterate_phdr (it takes the loader's lock,
 * which the crashing thread may hold) and no compression (libzstd may
 * allocate).
 */
static void ct_round_ex(int in_signal)
{
	if (atomic_load(&ct_fd) < 0)
		return;
	int live = atomic_load(&ct_state) != CT_STATE_DISABLED;
	/* A calibration point before any ring is read: every tick converted
	 * this round is either below it or extrapolated past it. Direct writes
	 * convert too, so they are kept out meanwhile. */
	if (pthread_mutex_trylock(&ct_direct_lock) == 0) {
		ct_clock_knot();
		pthread_mutex_unlock(&ct_direct_lock);
	}
	ct_in_signal = in_signal;
	struct ct_rec_batch b = {{CT_REC_BATCH, 0, sizeof b}, ct_now_ns(), ct_batch_seq++};
	if (live) {
		ct_wbuf_put(&b, sizeof b);
		if (!in_signal)
			ct_scan_modules();
	}
	for (struct ct_ring *r = atomic_load(&ct_rings); r; r = r->next) {
		int dead = atomic_load(&r->state) == CT_RING_DEAD;
		const void *p0 = NULL, *p1 = NULL;
		size_t n0 = 0, n1 = 0;
		uint64_t end;
		int spans = ct_ring_peek(r, &p0, &n0, &p1, &n1, &end);
		if (live && spans >= 1)
			ct_wbuf_put_ring(p0, n0);
		if (live && spans == 2)
			ct_wbuf_put_ring(p1, n1);
		if (spans)
			ct_ring_release(r, end);
		uint64_t dropped = atomic_load(&r->dropped);
		if (live && dropped != r->dropped_reported)
			ct_put_drops(r->tid, dropped - r->dropped_reported, 0);
		r->dropped_reported = dropped;
		if (dead && atomic_load(&r->head) == end)
			atomic_store(&r->state, CT_RING_FREE);
	}
	uint64_t lost = atomic_load(&ct_lost);
	if (live && lost != ct_lost_reported)
		ct_put_drops(0, lost - ct_lost_reported, 0);
	ct_lost_reported = lost;
	lost = atomic_load(&ct_lost_signal);
	if (live && lost != ct_lost_signal_reported)
		ct_put_drops(0, lost - ct_lost_signal_reported, CT_DROPS_F_SIGNAL);
	ct_lost_signal_reported = lost;
	ct_wbuf_flush();
	ct_in_signal = 0;
}

static void ct_round(void)
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
	while (!atomic_load(&ct_writer_stop)) {
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

void ct_count_lost(void)
{
	atomic_fetch_add_explicit(&ct_lost, 1, memory_order_relaxed);
}

void ct_count_lost_signal(void)
{
	atomic_fetch_add_explicit(&ct_lost_signal, 1, memory_order_relaxed);
}

/* ---- rings per thread ------------------------------------------------------------ */

static uint64_t ct_ring_cap(void)
{
	uint64_t budget = (uint64_t)ct_option(CT_OPT_BUFFER_MB) << 20;
	uint64_t cap = 1u << 16;
	while (cap * 2 <= budget / 32 && cap < (4u << 20))
		cap *= 2;
	return cap;
}

static void ct_ring_thread_exit(void *arg)
{
	struct ct_ring *r = arg;
	if (r && !r->shared)
		atomic_store(&r->state, CT_RING_DEAD);
	ct_tls.ring = NULL;
}

struct ct_ring *ct_thread_ring(void)
{
	struct ct_thread *t = &ct_tls;
	uint32_t tid = ct_current_tid();
	struct ct_ring *ring = NULL;
	for (struct ct_ring *r = atomic_load(&ct_rings); r; r = r->next) {
		int expect = CT_RING_FREE;
		if (atomic_compare_exchange_strong(&r->state, &expect, CT_RING_ACTIVE)) {
			ring = r;
			break;
		}
	}
	if (!ring) {
		uint64_t cap = ct_ring_cap();
		uint64_t budget = (uint64_t)ct_option(CT_OPT_BUFFER_MB) << 20;
		if (atomic_fetch_add(&ct_ring_bytes, cap) + cap <= budget)
			ring = ct_ring_create(cap);
		if (ring) {
			struct ct_ring *head = atomic_load(&ct_rings);
			do
				ring->next = head;
			while (!atomic_compare_exchange_weak(&ct_rings, &head, ring));
		}
	}
	if (!ring) {
		/* Over budget (or no memory): share one locked ring among the extra threads. */
		pthread_mutex_lock(&ct_overflow_lock);
		ring = atomic_load(&ct_overflow_ring);
		if (!ring && (ring = ct_ring_create(ct_ring_cap())) != NULL) {
			ring->shared = 1;
			atomic_flag_clear(&ring->lock);
			struct ct_ring *head = atomic_load(&ct_rings);
			do
				ring->next = head;
			while (!atomic_compare_exchange_weak(&ct_rings, &head, ring));
			atomic_store(&ct_overflow_ring, ring);
		}
		pthread_mutex_unlock(&ct_overflow_lock);
		if (!ring) {
			ct_warn_once(&ct_warned_ring,
				     "cannot map a ring buffer (%llu KiB): %s; events of threads "
				     "without one are lost, counted in the dump",
				     (unsigned long long)(ct_ring_cap() >> 10), strerror(errno));
			return NULL;
		}
	}
	if (!ring->shared) {
		ring->tid = tid;
		pthread_setspecific(ct_thread_key, ring);
	}
	t->ring = ring;
	return ring;
}

/* ---- the dump file ------------------------------------------------------------------ */

/* Append the NUL-terminated "key=value" string to buf at *len. */
static void ct_kv(char *buf, size_t cap, size_t *len, const char *key, const char *val)
{
	int n = snprintf(buf + *len, cap - *len, "%s=%s", key, val ? val : "");
	if (n < 0 || (size_t)n + 1 > cap - *len)
		return;
	*len += (size_t)n + 1;
}

/*
 * The distributed launcher's variables ("env.RANK=3", ...: format.h). Read
 * here, at the first traced call like the options (config.c), never in a
 * constructor; getenv and snprintf into static buffers allocate nothing.
 */
static void ct_put_launch_env(char *buf, size_t cap, size_t *len)
{
	static char key[64], val[CT_LAUNCH_VALUE_MAX];
	for (unsigned i = 0; i < CT_LAUNCH_COUNT; i++) {
		const char *name = ct_launch_env_name(i);
		const char *v = getenv(name);
		if (!v)
			continue;
		snprintf(key, sizeof key, CT_LAUNCH_KEY_PREFIX "%s", name);
		snprintf(val, sizeof val, "%s", v);
		ct_kv(buf, cap, len, key, val);
	}
}

/* The file header and the PROCESS record; 0, or -1 when they could not be written. */
static int ct_put_process(void)
{
	static char buf[16384];
	struct ct_rec_process *p = (struct ct_rec_process *)buf;
	size_t len = sizeof *p;
	size_t cap = sizeof buf - 8;
	char tmp[PATH_MAX];
	memset(buf, 0, sizeof buf);
	p->rec.type = CT_REC_PROCESS;
	p->pid = (uint32_t)getpid();
	p->ppid = ct_is_fork_child ? ct_parent_pid : (uint32_t)getppid();
	p->start_realtime_ns = ct_start_realtime;
	p->start_monotonic_ns = ct_start_monotonic;
	p->clock_id = CLOCK_MONOTONIC;
	p->forked = (uint32_t)ct_is_fork_child;
	ct_kv(buf, cap, &len, "version", CUMTRACE_VERSION);
	if (gethostname(tmp, sizeof tmp - 1) != 0)
		strcpy(tmp, "unknown");
	tmp[sizeof tmp - 1] = 0;
	ct_kv(buf, cap, &len, "host", tmp);
	/* before the long strings (exe, cwd, argv), which may fill the record */
	ct_put_launch_env(buf, cap, &len);
	ssize_t n = readlink("/proc/self/exe", tmp, sizeof tmp - 1);
	tmp[n > 0 ? n : 0] = 0;
	ct_kv(buf, cap, &len, "exe", tmp);
	if (!getcwd(tmp, sizeof tmp))
		tmp[0] = 0;
	ct_kv(buf, cap, &len, "cwd", tmp);
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		static char cmd[8192];
		ssize_t got = read(fd, cmd, sizeof cmd - 1);
		close(fd);
		if (got > 0) {
			cmd[got] = 0;
			for (char *a = cmd; a < cmd + got; a += strlen(a) + 1)
				ct_kv(buf, cap, &len, "argv", a);
		}
	}
	ct_kv(buf, cap, &len, "output", ct_path);
	static const struct {
		const char *key;
		enum ct_option opt;
	} settings[] = {{"setting.stack_depth", CT_OPT_STACK_DEPTH},
			{"setting.buffer_mb", CT_OPT_BUFFER_MB},
			{"setting.drop", CT_OPT_DROP},
			{"setting.flush_ms", CT_OPT_FLUSH_MS}};
	for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
		snprintf(tmp, sizeof tmp, "%ld", ct_option(settings[i].opt));
		ct_kv(buf, cap, &len, settings[i].key, tmp);
	}
	ct_kv(buf, cap, &len, "setting.backend", ct_backend_name());
	ct_kv(buf, cap, &len, "setting.compress", ct_compress ? "zstd" : "off");
	ct_kv(buf, cap, &len, "setting.clock", ct_clock_name());
	ct_kv(buf, cap, &len, "setting.stack_cache", ct_stack_cache_name());
	p->rec.size = CT_REC_ALIGN((uint32_t)len);
	struct ct_file_header fh;
	memcpy(fh.magic, CT_MAGIC, CT_MAGIC_LEN);
	fh.version = CT_FORMAT_VERSION;
	fh.header_size = sizeof fh;
	fh.reserved = 0;
	if (ct_write_all(&fh, sizeof fh) != 0)
		return -1;
	return ct_write_all(buf, p->rec.size);
}

static void ct_note_manifest(void)
{
	const char *manifest = ct_option_str(CT_OPT_MANIFEST);
	if (!manifest)
		return;
	char line[sizeof ct_path_abs + 1];
	int n = snprintf(line, sizeof line, "%s\n", ct_path_abs);
	int fd = open(manifest, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (n > 0 && (size_t)n < sizeof line) {
		ssize_t w = write(fd, line, (size_t)n);
		(void)w;
	}
	close(fd);
}

/*
 * Create the dump: O_EXCL, never through a symlink; after exec the pid is the
 * same, so a taken name gets a ".N" suffix. A character device at the path
 * (/dev/null, a terminal) is written as it is instead: a ".1" beside it would
 * be a file in /dev. The descriptor goes to the top of the table (fd.c), and
 * the file's identity and absolute path are kept for ct_dump_fd. Returns 0
 * on success.
 */
static int ct_open_dump(void)
{
	const char *tmpl = ct_option_str(CT_OPT_OUTPUT);
	char base[PATH_MAX];
	struct stat st;
	int fd = -1, device = 0;
	if (ct_expand_template(tmpl ? tmpl : "cumtrace.%p.dump", base, sizeof base - 8)) {
		ct_warn_once(&ct_warned_open, "output template too long; tracing off");
		return -1;
	}
	/* Not even tried: a program run with so few descriptors needs them all. */
	if (ct_fd_floor() < 0) {
		ct_warn_once(&ct_warned_open,
			     "the descriptor limit (RLIMIT_NOFILE) is below %d, too low for the "
			     "dump's descriptor beside the program's; tracing off, the program goes on",
			     CT_FD_MIN_LIMIT);
		return -1;
	}
	if (lstat(base, &st) == 0 && S_ISCHR(st.st_mode)) {
		device = 1;
		snprintf(ct_path, sizeof ct_path, "%s", base);
		fd = ct_open_append(ct_path);
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode))) {
			close(fd); /* replaced since the lstat */
			fd = -1;
			errno = ENODEV;
		}
	}
	for (int attempt = 0; !device && attempt < 100; attempt++) {
		if (attempt == 0)
			snprintf(ct_path, sizeof ct_path, "%s", base);
		else
			snprintf(ct_path, sizeof ct_path, "%s.%d", base, attempt);
		fd = open(ct_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND,
			  0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		ct_warn_once(&ct_warned_open, "cannot %s %s: %s; tracing off, the program goes on",
			     device ? "open" : "create", ct_path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || (fd = ct_fd_move_high(fd)) < 0) {
		int err = errno;
		if (!device)
			unlink(ct_path); /* ours: created just now, empty */
		ct_warn_once(&ct_warned_open,
			     "no descriptor for %s at the top of the table: %s; tracing off, the "
			     "program goes on",
			     ct_path, strerror(err));
		return -1;
	}
	ct_dump_dev = st.st_dev;
	ct_dump_ino = st.st_ino;
	char cwd[PATH_MAX];
	if (ct_path[0] == '/' || !getcwd(cwd, sizeof cwd))
		snprintf(ct_path_abs, sizeof ct_path_abs, "%s", ct_path);
	else
		snprintf(ct_path_abs, sizeof ct_path_abs, "%s/%s", cwd, ct_path);
	atomic_store(&ct_fd, fd);
	return 0;
}

/*
 * A fatal signal with the default action ends the process without
 * destructors: copy the rings first (best effort: skipped if a round is in
 * progress), then die of the same signal. A handler the program installs
 * later replaces this one.
 */
static void ct_fatal(int sig)
{
	int saved_errno = errno;
	if (getpid() == ct_pid && pthread_mutex_trylock(&ct_round_lock) == 0) {
		ct_round_ex(1);
		pthread_mutex_unlock(&ct_round_lock);
	}
	errno = saved_errno;
	raise(sig); /* SA_RESETHAND: the default action now */
}

static void ct_catch_fatal(void)
{
	static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		struct sigaction old, sa;
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = ct_fatal;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
}

/*
 * What starting to trace maps besides the first thread's ring: the write
 * buffer and module table (2.1 MiB), the stack table (4 MiB), the thread's
 * stack cache, libzstd and its tables (about 1.7 MiB), the writer's stack.
 */
#define CT_START_VM (9u << 20)

/*
 * Under an address-space limit (ulimit -v), tracing starts only when it
 * would take at most a quarter of the room the limit leaves, so that the
 * program keeps the rest; otherwise one warning. Returns 1 to go on.
 */
static int ct_room_to_start(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1;
	char buf[64];
	ssize_t got = -1;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	buf[got > 0 ? got : 0] = 0; /* unreadable: used is 0, the limit alone decides */
	uint64_t used = strtoull(buf, NULL, 10) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t need = CT_START_VM + ct_ring_cap();
	uint64_t room = rl.rlim_cur > used ? rl.rlim_cur - used : 0;
	if (need <= room / 4)
		return 1;
	ct_warn_once(&ct_warned_open,
		     "the address-space limit (ulimit -v) leaves %llu MiB; tracing needs about "
		     "%llu MiB, more than a quarter of it; tracing off, the program goes on",
		     (unsigned long long)(room >> 20), (unsigned long long)(need >> 20));
	return 0;
}

/* When there is room for tracing (ct_room_to_start), map the write buffer and the
 * module table (once); on failure warn and return -1. */
static int ct_wbuf_map(void)
{
	if (!ct_room_to_start())
		return -1;
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
		ct_warn_once(&ct_warned_open,
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

static int ct_writer_spawn(void)
{
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc == 0) {
		rc = pthread_attr_setstacksize(&attr, CT_WRITER_STACK);
		if (rc == 0)
			rc = pthread_create(&ct_writer_thread, &attr, ct_writer_main, NULL);
		pthread_attr_destroy(&attr);
	}
	if (rc == EINVAL)
		rc = pthread_create(&ct_writer_thread, NULL, ct_writer_main, NULL);
	return rc;
}

/*
 * The thread that is starting tracing. Another thread waits for it; the
 * starting thread itself, re-entered (a handler the shim does not wrap calls
 * cumtrace_mark), never does: it would wait for ever.
 */
static _Atomic uint32_t ct_starting_tid;

int ct_ensure_started(void)
{
	struct ct_thread *t = &ct_tls;
	if (ct_in_handler(t)) /* start-up takes locks: not from a handler (record.c) */
		return atomic_load(&ct_state);
	int expect = CT_STATE_UNINIT;
	if (!atomic_compare_exchange_strong(&ct_state, &expect, CT_STATE_STARTING)) {
		if (expect == CT_STATE_STARTING && atomic_load(&ct_starting_tid) == ct_current_tid())
			return expect;
		while ((expect = atomic_load(&ct_state)) == CT_STATE_STARTING)
			sched_yield();
		return expect;
	}
	atomic_store(&ct_starting_tid, ct_current_tid());
	/* Busy: a handler that interrupts start-up has its calls counted, not recorded. */
	uint8_t saved_hook = t->in_hook;
	t->in_hook = CT_HOOK_BUSY;
	int saved_errno = errno;
	ct_options_init();
	int final = CT_STATE_DISABLED;
	if (ct_option(CT_OPT_DISABLE))
		goto done;
	if (!ct_wbuf && ct_wbuf_map())
		goto done;
	ct_clock_init();
	ct_compress = ct_option(CT_OPT_COMPRESS) && ct_zstd_init(CT_ZSTD_LEVEL) == 0;
	if (ct_open_dump())
		goto done;
	ct_cupti_start(); /* CUMTRACE_BACKEND=cupti: before the PROCESS record names the backend */
	if (ct_put_process())
		goto done; /* warned: /dev/full, a full disk */
	ct_note_manifest();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&ct_writer_stop, 0);
	int rc = ct_writer_spawn();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		ct_warn_once(&ct_warned_thread, "cannot start the writer thread: %s; tracing off",
			     strerror(rc));
		goto done;
	}
	atomic_store(&ct_writer_joinable, 1);
	ct_catch_fatal();
	final = CT_STATE_RUNNING;
done:
	if (final == CT_STATE_DISABLED)
		ct_dump_close();
	atomic_store(&ct_starting_tid, 0);
	atomic_store(&ct_state, final);
	if (final == CT_STATE_RUNNING)
		ct_pyboot_schedule(); /* running first: the main thread may run the bootstrap at once */
	t->in_hook = saved_hook;
	errno = saved_errno;
	return final;
}

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
	if (atomic_load(&ct_fd) >= 0 && atomic_load(&ct_state) == CT_STATE_FINISHED)
		ct_write_all(finish ? (const void *)&copy : rec, len);
	pthread_mutex_unlock(&ct_direct_lock);
}

void ct_flush_sync(void)
{
	/* A vfork child shares our memory but not our writer: leave it alone. */
	if (atomic_load(&ct_state) != CT_STATE_RUNNING || getpid() != ct_pid)
		return;
	pthread_mutex_lock(&ct_round_lock);
	ct_round();
	pthread_mutex_unlock(&ct_round_lock);
}

/* Stop the writer thread and wait for it to end; the first caller does, later ones return. */
static void ct_writer_join(void)
{
	if (!atomic_exchange(&ct_writer_joinable, 0))
		return;
	atomic_store(&ct_writer_stop, 1);
	atomic_store(&ct_kick_word, 1);
	ct_futex(&ct_kick_word, FUTEX_WAKE_PRIVATE, 1, NULL);
	pthread_join(ct_writer_thread, NULL);
}

void ct_shutdown(void)
{
	/* A vfork child shares our memory: the writer is the parent's. */
	if (getpid() != ct_pid)
		return;
	int expect = CT_STATE_RUNNING;
	if (!atomic_compare_exchange_strong(&ct_state, &expect, CT_STATE_FINISHED)) {
		/* Tracing stopped on a write error: the writer left its loop; reap the thread. */
		if (expect == CT_STATE_DISABLED) {
			int saved_errno = errno;
			ct_writer_join();
			errno = saved_errno;
		}
		return;
	}
	int saved_errno = errno;
	ct_writer_join();
	pthread_mutex_lock(&ct_round_lock);
	/* ct_round skips nothing in FINISHED state: it checks only DISABLED. */
	ct_round();
	pthread_mutex_unlock(&ct_round_lock);
	uint64_t dropped = atomic_load(&ct_lost) + atomic_load(&ct_lost_signal);
	uint64_t events = atomic_load(&ct_events_recorded);
	for (struct ct_ring *r = atomic_load(&ct_rings); r; r = r->next) {
		dropped += atomic_load(&r->dropped);
		events += r->events;
	}
	struct ct_rec_end e = {{CT_REC_END, 0, sizeof e},
			       ct_now_ns(),
			       events,
			       dropped,
			       ct_stack_count()};
	ct_write_direct(&e, sizeof e);
	errno = saved_errno;
}

/* ---- process life: start, fork, exit --------------------------------------------------- */

static void ct_mark_start(void)
{
	ct_pid = getpid();
	struct timespec rt, mono;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	ct_start_realtime = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	ct_start_monotonic = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
}

static void ct_fork_prepare(void)
{
	pthread_mutex_lock(&ct_round_lock);
	pthread_mutex_lock(&ct_direct_lock);
	pthread_mutex_lock(&ct_overflow_lock);
}

static void ct_fork_parent(void)
{
	pthread_mutex_unlock(&ct_overflow_lock);
	pthread_mutex_unlock(&ct_direct_lock);
	pthread_mutex_unlock(&ct_round_lock);
}

/* The child starts a dump of its own at its first traced call. */
static void ct_fork_child(void)
{
	pthread_mutex_init(&ct_round_lock, NULL);
	pthread_mutex_init(&ct_direct_lock, NULL);
	pthread_mutex_init(&ct_overflow_lock, NULL);
	int state = atomic_load(&ct_state);
	ct_parent_pid = (uint32_t)getppid();
	ct_is_fork_child = 1;
	ct_mark_start();
	ct_dump_close();
	atomic_store(&ct_writer_joinable, 0); /* the parent's writer is not in this process */
	struct ct_ring *r = atomic_exchange(&ct_rings, NULL);
	while (r) {
		struct ct_ring *next = r->next;
		ct_ring_destroy(r);
		r = next;
	}
	atomic_store(&ct_overflow_ring, NULL);
	atomic_store(&ct_ring_bytes, 0);
	atomic_store(&ct_lost, 0);
	ct_lost_reported = 0;
	atomic_store(&ct_lost_signal, 0);
	ct_lost_signal_reported = 0;
	ct_batch_seq = 0;
	atomic_store(&ct_events_recorded, 0);
	ct_module_count = 0;
	ct_seen_adds = ct_seen_subs = ~0ull;
	ct_wbuf_len = 0;
	pthread_setspecific(ct_thread_key, NULL);
	ct_tls.ring = NULL;
	ct_tls.tid = 0;
	ct_stack_reset();
	ct_py_reset();
	if (state != CT_STATE_DISABLED || !ct_option(CT_OPT_DISABLE))
		atomic_store(&ct_state, CT_STATE_UNINIT);
}

__attribute__((constructor)) static void ct_init(void)
{
	ct_mark_start();
	ct_stack_init();
	pthread_key_create(&ct_thread_key, ct_ring_thread_exit);
	pthread_atfork(ct_fork_prepare, ct_fork_parent, ct_fork_child);
}

__attribute__((destructor)) static void ct_fini(void)
{
	ct_shutdown();
}
