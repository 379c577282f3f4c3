/*
 * The per-thread stack cache (x86-64).
 *
 * An allocation made again from the same place usually has the same native
 * stack, and unwinding it again with libunwind costs about a thousand
 * instructions (issue #6). So each thread keeps the stacks it unwound, keyed
 * by the wrapper's return address into its caller and the caller's stack
 * pointer, together with the words of stack memory that unwind depended on
 * ("checks": their places, and one weighted sum of the values they held,
 * below). A cached stack is returned only when the sum of those words is the
 * same; otherwise the stack is unwound afresh and cached in its turn.
 *
 * Why the checks prove the stack. libunwind finds frame k+1 from frame k's
 * registers and its CFI, a function of frame k's IP alone: the CFA (the
 * caller's SP) is SP+c or RBP+c (or, in a frame GCC realigned, the word at
 * RBP-8), and the return address is the word at CFA-8. Starting from the same
 * IP and SP (the key), with the same return address in every slot, the same
 * RBP in every frame whose RBP points into that frame (the only frames whose
 * CFA can rest on RBP), and the same word at RBP-8 where that word was the
 * CFA, every step reads the same words and yields the same frames; the end of
 * the stack is the same too (the depth limit, or a last step that the CFI
 * alone decides). A stack that does not fit this model is unwound but never
 * cached: one with a signal frame, a frame without unwind information (where
 * libunwind guesses from frame pointers), a return address read anywhere but
 * CFA-8, or a frame pointer kept in another register. CFI that derives a CFA
 * from other registers or memory (hand-written assembly) is outside the
 * model; compilers emit none at call sites.
 *
 * Why the reads are safe. Every checked word lies between the caller's SP and
 * the top of the thread's own stack, found once per thread in
 * /proc/self/maps, which stays mapped while the thread runs on it. A call
 * made on another stack (sigaltstack, makecontext, coroutine libraries)
 * neither reads nor fills the cache.
 *
 * The cache is the thread's own: only a traced call touches it, in the
 * shim's own work (CT_HOOK_BUSY), which no nested call enters and no signal
 * handler's call either (signal.c: those are counted, not recorded). A fork
 * child keeps the forking thread's cache, whose stack it has a copy of.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "ct.h"

#if defined(__x86_64__)

#define CT_SC_WAYS 4
#define CT_SC_MAX_SETS 256
#define CT_SC_BYTES (2048u << 10) /* a thread's cache, reserved; pages touched as used */
#define CT_SC_BYTES_LIMITED (128u << 10) /* the same under an address-space limit: 64 entries */
#define CT_SC_BOUNDS_TRIES 8	 /* reads of /proc/self/maps per thread, at most */

/*
 * Filling an entry unwinds with unw_step and asks libunwind where each frame
 * was found: about seven times the cost of the unw_backtrace it replaces, and
 * a hit saves about nine tenths of one. A thread spends credit on fills and
 * earns it back from hits; without credit a miss is a plain unw_backtrace,
 * which earns a little. So a thread fills its first 64 entries freely, and
 * later one per 8 hits; one whose stacks never repeat fills one entry every
 * CT_SC_FILL_COST misses (about 12% more than no cache).
 */
#define CT_SC_FILL_COST 64
#define CT_SC_HIT_GAIN 8
#define CT_SC_MISS_GAIN 1
#define CT_SC_CREDIT_START (64 * CT_SC_FILL_COST)
#define CT_SC_CREDIT_MAX (128 * CT_SC_FILL_COST)
/*
 * A place whose stack did not fit the model (a signal frame, a frame without
 * CFI) keeps an entry that says so: its calls unwind plainly, and only every
 * CT_SC_RETRY-th tries to fill again.
 */
#define CT_SC_RETRY 64

/*
 * Whether a cached stack's thread can have a Python frame (ct_py_outside):
 * to ask (Python not set up when the stack was unwound), out (the stack is
 * whole, to its outermost frame, and no frame of it lies in the
 * interpreter's object), in (any other: a frame there, a stack cut at the
 * depth limit, no Python).
 */
enum { CT_SC_PY_ASK = 0, CT_SC_PY_OUT = 1, CT_SC_PY_IN = 2 };

/*
 * An entry's checks are the words' places, in words from the wrapper's saved
 * frame pointer (sp0 - 16), and one weighted sum of the words they held: a
 * hit reads its entry's first lines and the stack, no table of values, and
 * adds without a branch per word. A word that changed always changes the sum
 * (odd weights); two or more could cancel only if their changes weighted by
 * the weights below summed to 0 mod 2^64, as unlikely as two stacks of one
 * 64-bit hash, which the stack table (ct_stack_intern) and the Python memo
 * take as one already.
 */
#define CT_SC_OFF_MAX 0xffffu /* words from sp0 - 16: 512 KiB of stack */
#define CT_SC_W0 0x9e3779b97f4a7c15ull /* the first check's weight; then + CT_SC_WD each */
#define CT_SC_WD 0xc2b2ae3d27d4eb4eull /* even: every weight stays odd */

struct ct_sc_entry {
	uint64_t ip0, sp0; /* the key; sp0 == 0: empty */
	uint64_t hash;	   /* ct_stack_hash of the frames */
	uint64_t sum;	   /* the checked words' weighted sum (ct_sc_sum) */
	uint32_t used;	   /* the cache's clock when last returned or filled */
	uint16_t max;	   /* the frame limit it was unwound with */
	uint16_t nips;	   /* 0: this place's stacks cannot be cached (below) */
	uint16_t nchecks;
	uint16_t skips;	   /* nips 0: plain unwinds since the last try */
	uint16_t py;	   /* CT_SC_PY_*: does the stack run Python (ct_stack_cache_no_python) */
	uint16_t reserved;
	uint32_t id, gen;  /* the stack's interned id, whose record is written, and ct_stack_gen */
	/* then cap_checks uint16_t places (rounded up to 8 bytes), then cap_ips frames: what a
	 * hit reads comes first */
};

struct ct_stack_cache {
	size_t map_size;
	uintptr_t lo, hi; /* the thread's own stack; hi == 0: not known yet */
	uint32_t bounds_tries;
	uint32_t main_thread;
	uint32_t sets; /* 0: no cache on this thread */
	uint32_t cap_ips, cap_checks;
	uint32_t clock; /* counts lookups */
	int32_t credit; /* see CT_SC_FILL_COST */
	size_t entry_size;
	struct ct_sc_entry *last; /* the entry the last capture returned, NULL: none */
};

static pthread_key_t ct_sc_key;
static int ct_sc_key_ok;
/* What a thread whose cache could not be made points at. */
static struct ct_stack_cache ct_sc_none;

static void ct_sc_thread_exit(void *arg)
{
	struct ct_stack_cache *sc = arg;
	if (ct_tls.stacks == sc)
		ct_tls.stacks = NULL;
	munmap(sc, sc->map_size);
}

void ct_stack_cache_init(void)
{
	ct_sc_key_ok = pthread_key_create(&ct_sc_key, ct_sc_thread_exit) == 0;
}

/*
 * The calling thread's cache for stacks of up to max frames, mapped now
 * (once per thread; unmapped by the key's destructor at thread exit).
 * Returns &ct_sc_none when there can be none.
 */
static struct ct_stack_cache *ct_sc_attach(int max)
{
	struct ct_stack_cache *sc = &ct_sc_none;
	size_t cap_ips = (size_t)max, cap_checks = 2 * (size_t)max + 4;
	size_t esize = sizeof(struct ct_sc_entry) + cap_ips * 8 + ((cap_checks * 2 + 7) & ~(size_t)7);
	/* under an address-space limit (ulimit -v) the program may need every byte: the
	 * small cache of before (CT_SC_BYTES_LIMITED) */
	struct rlimit rl;
	size_t room = getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? CT_SC_BYTES_LIMITED
										     : CT_SC_BYTES;
	uint32_t sets = CT_SC_MAX_SETS;
	while (sets > 1 && sets * CT_SC_WAYS * esize > room)
		sets /= 2;
	size_t size = sizeof(struct ct_stack_cache) + sets * CT_SC_WAYS * esize;
	if (ct_sc_key_ok) {
		void *mem = ct_thread_map(ct_sc_key, size, MAP_NORESERVE);
		if (mem) {
			sc = mem; /* zero-filled: every entry empty, bounds unknown */
			sc->map_size = size;
			sc->sets = sets;
			sc->cap_ips = (uint32_t)cap_ips;
			sc->cap_checks = (uint32_t)cap_checks;
			sc->entry_size = esize;
			sc->credit = CT_SC_CREDIT_START;
		}
	}
	ct_tls.stacks = sc;
	return sc;
}

static inline struct ct_sc_entry *ct_sc_entry(const struct ct_stack_cache *sc, uint32_t set,
					      unsigned way)
{
	return (struct ct_sc_entry *)((char *)(sc + 1) +
				      ((size_t)set * CT_SC_WAYS + way) * sc->entry_size);
}

static inline uint16_t *ct_sc_checks(struct ct_sc_entry *e)
{
	return (uint16_t *)(e + 1);
}

static inline uint64_t *ct_sc_ips(const struct ct_stack_cache *sc, struct ct_sc_entry *e)
{
	return (uint64_t *)((char *)ct_sc_checks(e) + ((sc->cap_checks * 2 + 7) & ~7u));
}

/*
 * The weighted sum of the n checked words of the stack whose wrapper's saved
 * frame pointer is at base (sp0 - 16). Each place was vetted when the entry
 * was made (ct_sc_add): a word of the running thread's stack above the
 * wrapper's frame, read now as another function's frame, which sanitizers
 * must not judge.
 */
__attribute__((no_sanitize_address)) static uint64_t ct_sc_sum(const uint16_t *off, int n,
							       uint64_t base)
{
	const volatile uint64_t *w = (const volatile uint64_t *)(uintptr_t)base;
	/* four words a round, four sums and four weights (each advanced by 4 * CT_SC_WD): the
	 * same total mod 2^64 as one sum in order, in fewer instructions and chains a check */
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	uint64_t k0 = CT_SC_W0, k1 = k0 + CT_SC_WD, k2 = k1 + CT_SC_WD, k3 = k2 + CT_SC_WD;
	int i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += w[off[i]] * k0;
		s1 += w[off[i + 1]] * k1;
		s2 += w[off[i + 2]] * k2;
		s3 += w[off[i + 3]] * k3;
		k0 += 4 * CT_SC_WD;
		k1 += 4 * CT_SC_WD;
		k2 += 4 * CT_SC_WD;
		k3 += 4 * CT_SC_WD;
	}
	for (; i < n; i++, k0 += CT_SC_WD)
		s0 += w[off[i]] * k0;
	return s0 + s1 + s2 + s3;
}

/* ---- the thread's stack: bounds from /proc/self/maps -------------------------------- */

static int ct_sc_hex(const char **p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;
	for (; *p < end; (*p)++, digits++) {
		char ch = **p;
		int d = ch >= '0' && ch <= '9'	 ? ch - '0'
			: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
						 : -1;
		if (d < 0)
			break;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return digits > 0 && digits <= 16;
}

/*
 * One line of /proc/self/maps ("lo-hi perms offset dev inode [path]"): does
 * its mapping hold addr? Then *lo, *hi are its bounds.
 */
static int ct_sc_maps_line(const char *s, const char *end, uintptr_t addr, uintptr_t *lo,
			   uintptr_t *hi)
{
	uint64_t a, b;
	if (!ct_sc_hex(&s, end, &a) || s >= end || *s++ != '-' || !ct_sc_hex(&s, end, &b))
		return 0;
	if (addr < a || addr >= b)
		return 0;
	*lo = (uintptr_t)a;
	*hi = (uintptr_t)b;
	return 1;
}

/*
 * The bounds of the mapping that holds addr, from /proc/self/maps read with
 * plain read(2) into a buffer on the stack: no allocation, no stdio. Returns
 * 1 when found.
 */
static int ct_sc_mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	size_t have = 0;
	int found = 0, in_long_line = 0;
	for (;;) {
		ssize_t got = read(fd, buf + have, sizeof buf - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		have += (size_t)got;
		char *line = buf, *nl;
		while (!found && (nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
			/* Only a whole line is parsed: a path can look like an address range. */
			if (!in_long_line)
				found = ct_sc_maps_line(line, nl, addr, lo, hi);
			in_long_line = 0;
			line = nl + 1;
		}
		if (found)
			break;
		have -= (size_t)(line - buf);
		if (have == sizeof buf) { /* a line longer than the buffer: skip to its end */
			in_long_line = 1;
			have = 0;
		}
		memmove(buf, line, have);
	}
	close(fd);
	return found;
}

/* Set by the dynamic loader: the top of the main thread's stack. */
extern void *__libc_stack_end;

/*
 * Is sp0 on the thread's own stack, which then holds every word from sp0 up
 * to sc->hi? The bounds are read when first needed: for the main thread, the
 * mapping that holds __libc_stack_end (as glibc's pthread_getattr_np finds
 * it; under valgrind too); for any other thread, the mapping that holds its
 * TLS, up to the TLS (glibc places a thread's TLS at the top of its stack,
 * above every frame; wherever a thread's TLS lies, the words below it in its
 * mapping stay mapped while the thread lives). The main thread's stack grows:
 * a caller below the bounds has them read again, at most CT_SC_BOUNDS_TRIES
 * reads per thread in all.
 */
static int ct_sc_on_own_stack(struct ct_stack_cache *sc, uintptr_t sp0)
{
	if (CT_LIKELY(sp0 >= sc->lo && sp0 < sc->hi))
		return 1;
	if (sc->bounds_tries >= CT_SC_BOUNDS_TRIES)
		return 0;
	if (sc->hi && (!sc->main_thread || sp0 >= sc->hi))
		return 0; /* another stack: only the main thread's own grows */
	sc->bounds_tries++;
	int saved = errno;
	sc->main_thread = (pid_t)ct_current_tid() == getpid();
	uintptr_t tls = (uintptr_t)&ct_tls, lo, hi;
	uintptr_t anchor = sc->main_thread ? (uintptr_t)__libc_stack_end : tls;
	int found = anchor && ct_sc_mapping_of(anchor, &lo, &hi);
	errno = saved;
	if (!found)
		return 0;
	sc->lo = lo;
	sc->hi = sc->main_thread ? hi : tls;
	return sp0 >= sc->lo && sp0 < sc->hi;
}

/* ---- unwinding and filling an entry --------------------------------------------- */

/*
 * May the fast path read the word at addr, for the call whose caller's stack
 * pointer is sp0? 8-byte aligned and in [sp0, hi), or the wrapper's saved
 * frame pointer at sp0 - 16 (struct ct_call.frame).
 */
static int ct_sc_readable(const struct ct_stack_cache *sc, uint64_t sp0, uint64_t addr)
{
	return !(addr & 7) && (addr == sp0 - 16 || (addr >= sp0 && addr < sc->hi));
}

/* The word at addr: another function's frame, which sanitizers must not judge. */
__attribute__((no_sanitize_address)) static uint64_t ct_sc_word(uint64_t addr)
{
	return *(const volatile uint64_t *)(uintptr_t)addr;
}

/*
 * Append the check "the word at addr holds val" to e (its place; the sum is
 * taken when the entry is complete). Returns 0 when the fast path may not
 * read addr, it lies too far up, the entry is full, or the word does not hold
 * val now: the stack is then not cached.
 */
static int ct_sc_add(const struct ct_stack_cache *sc, struct ct_sc_entry *e, uint64_t sp0,
		     uint64_t addr, uint64_t val)
{
	uint64_t off = (addr - (sp0 - 16)) / 8;
	if (!ct_sc_readable(sc, sp0, addr) || off > CT_SC_OFF_MAX || e->nchecks >= sc->cap_checks ||
	    ct_sc_word(addr) != val)
		return 0;
	uint16_t *k = ct_sc_checks(e);
	for (int i = 0; i < e->nchecks; i++)
		if (k[i] == off)
			return 1;
	k[e->nchecks++] = (uint16_t)off;
	return 1;
}

/* Frame k's registers, as the unwind saw them before stepping past it. */
struct ct_sc_frame {
	unw_word_t sp, rbp;
	unw_save_loc_t rbp_loc;
};

/*
 * After a step from frame k (f) to its caller (the cursor; r is what unw_step
 * returned, 0 for the last frame): add the checks the step depended on.
 * Returns 0 when the step does not fit the model.
 */
static int ct_sc_note_step(const struct ct_stack_cache *sc, struct ct_sc_entry *e, uint64_t sp0,
			   unw_cursor_t *c, const struct ct_sc_frame *f, int r)
{
	unw_word_t cfa, ip;
	unw_save_loc_t ip_loc, rbx_loc;
	if (unw_get_reg(c, UNW_REG_SP, &cfa) < 0 || unw_get_reg(c, UNW_REG_IP, &ip) < 0 ||
	    unw_get_save_loc(c, UNW_REG_IP, &ip_loc) < 0 ||
	    unw_get_save_loc(c, UNW_X86_64_RBX, &rbx_loc) < 0)
		return 0;
	/* libunwind's fallback for a frame without CFI forgets every register. */
	if (rbx_loc.type == UNW_SLT_NONE)
		return 0;
	/* The outermost frame: its CFI leaves the return address undefined. */
	if (r == 0 && ip_loc.type == UNW_SLT_NONE)
		return 1;
	uint64_t slot = cfa - 8;
	if (ip_loc.type != UNW_SLT_MEMORY || ip_loc.u.addr != slot ||
	    !ct_sc_readable(sc, sp0, slot) || slot < sp0 || (r > 0 && ct_sc_word(slot) != ip) ||
	    !ct_sc_add(sc, e, sp0, slot, ct_sc_word(slot)))
		return 0;
	if (f->rbp >= f->sp && f->rbp < cfa) {
		/* RBP points into frame k: its CFA may rest on it. */
		if (f->rbp_loc.type != UNW_SLT_MEMORY ||
		    !ct_sc_add(sc, e, sp0, f->rbp_loc.u.addr, f->rbp))
			return 0;
		/* GCC's realigned frames: the CFA is the word at RBP-8. */
		uint64_t below = f->rbp - 8;
		if (below >= f->sp && ct_sc_readable(sc, sp0, below) && ct_sc_word(below) == cfa &&
		    !ct_sc_add(sc, e, sp0, below, cfa))
			return 0;
	}
	return 1;
}

/*
 * Unwind the calling thread's stack (the shim's own frames cut) and fill e
 * with it when it fits the model; frame is the wrapper's frame (struct
 * ct_call.frame). For such a stack, whose every frame has standard CFI, the
 * unw_step walk yields the frames unw_backtrace yields; for any other the
 * result is ct_stack_capture's (unw_backtrace treats frames without CFI its
 * own way), and e says the place cannot be cached.
 */
static int ct_sc_unwind(struct ct_stack_cache *sc, struct ct_sc_entry *e, uint64_t *ips,
			int max, const uint64_t *frame)
{
	uint64_t sp0 = (uintptr_t)frame + 16;
	e->sp0 = 0;
	e->nchecks = 0;
	unw_context_t uc;
	unw_cursor_t c;
	unw_word_t ip, sp;
	if (unw_getcontext(&uc) < 0 || unw_init_local(&c, &uc) < 0)
		return ct_stack_capture(ips, max);
	int signal = 0; /* a signal frame was stepped through */
	for (;;) {
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
			return 0;
		if (!ct_is_own_address((const void *)(uintptr_t)ip))
			break;
		signal |= unw_is_signal_frame(&c) != 0;
		if (unw_step(&c) <= 0)
			return ct_stack_capture(ips, max);
	}
	int ok = !signal && ip == frame[1] && unw_get_reg(&c, UNW_REG_SP, &sp) == 0 && sp == sp0 &&
		 (size_t)max <= sc->cap_ips;
	int n = 0, whole = 0;
	for (;;) {
		ips[n++] = ip;
		if (n >= max)
			break;
		struct ct_sc_frame f;
		ok = ok && unw_is_signal_frame(&c) == 0 &&
		     unw_get_reg(&c, UNW_REG_SP, &f.sp) == 0 &&
		     unw_get_reg(&c, UNW_X86_64_RBP, &f.rbp) == 0 &&
		     unw_get_save_loc(&c, UNW_X86_64_RBP, &f.rbp_loc) == 0;
		int r = unw_step(&c);
		if (r < 0) {
			/* A register the CFI leaves undefined (the outermost frame). */
			ok = ok && r == -UNW_EBADREG;
			whole = 1;
			break;
		}
		ok = ok && ct_sc_note_step(sc, e, sp0, &c, &f, r);
		if (r == 0) {
			whole = 1;
			break;
		}
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0) {
			ok = 0;
			break;
		}
	}
	e->ip0 = frame[1];
	e->max = (uint16_t)max;
	e->nips = 0;
	e->skips = 0;
	e->sp0 = sp0;
	if (!ok) {
		e->nchecks = 0;
		return ct_stack_capture(ips, max);
	}
	memcpy(ct_sc_ips(sc, e), ips, (size_t)n * 8);
	e->sum = ct_sc_sum(ct_sc_checks(e), e->nchecks, sp0 - 16);
	e->hash = ct_stack_hash(ips, n);
	e->py = whole ? CT_SC_PY_ASK : CT_SC_PY_IN;
	e->nips = (uint16_t)n;
	e->id = 0;
	sc->last = e;
	return n;
}

static inline uint32_t ct_sc_set(const struct ct_stack_cache *sc, uint64_t ip0, uint64_t sp0)
{
	uint64_t h = (ip0 ^ (sp0 >> 3)) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 40) & (sc->sets - 1);
}

CT_HOT int ct_stack_capture_at(uint64_t *ips, int max, const void *frame, uint64_t *hash, uint32_t *id)
{
	struct ct_stack_cache *sc = ct_tls.stacks;
	*hash = 0;
	*id = 0;
	if (sc && sc->sets)
		sc->last = NULL;
	if (!frame || max <= 0 || !ct_option(CT_OPT_STACK_CACHE))
		return ct_stack_capture(ips, max);
	if (CT_UNLIKELY(!sc)) {
		if (ct_in_handler(&ct_tls)) /* pthread_setspecific may allocate */
			return ct_stack_capture(ips, max);
		sc = ct_sc_attach(max);
	}
	/*
	 * The key. Where the wrapper was not reached by a tail call from the
	 * export, ip0 lies in the shim: no fill ever succeeds for it (the
	 * first frame outside the shim is never ip0), so the place is marked
	 * plain on its first miss.
	 */
	const uint64_t *fr = frame;
	uint64_t ip0 = fr[1], sp0 = (uintptr_t)frame + 16;
	if (!sc->sets || (uint32_t)max > sc->cap_ips || !ct_sc_on_own_stack(sc, sp0))
		return ct_stack_capture(ips, max);
	uint32_t set = ct_sc_set(sc, ip0, sp0);
	uint32_t now = ++sc->clock;
	struct ct_sc_entry *victim = NULL, *plain = NULL;
	for (unsigned way = 0; way < CT_SC_WAYS; way++) {
		struct ct_sc_entry *e = ct_sc_entry(sc, set, way);
		if (e->ip0 == ip0 && e->sp0 == sp0 && e->max == max) {
			if (!e->nips) {
				plain = e;
			} else if ((ct_self_mark(CT_SELF_MARK_SET),
				    ct_sc_sum(ct_sc_checks(e), e->nchecks, sp0 - 16) == e->sum)) {
				ct_self_mark(CT_SELF_MARK_CHECKED);
				e->used = now;
				if (sc->credit < CT_SC_CREDIT_MAX)
					sc->credit += CT_SC_HIT_GAIN;
				*hash = e->hash;
				sc->last = e;
				if (e->id && e->gen == ct_stack_generation()) {
					*id = e->id; /* interned and written: the frames are not needed */
					return e->nips;
				}
				memcpy(ips, ct_sc_ips(sc, e), (size_t)e->nips * 8);
				return e->nips;
			}
		}
		if (!victim || (victim->sp0 && (!e->sp0 || now - e->used > now - victim->used)))
			victim = e;
	}
	if (plain && ++plain->skips < CT_SC_RETRY) {
		plain->used = now;
		return ct_stack_capture(ips, max);
	}
	if (sc->credit < CT_SC_FILL_COST) {
		sc->credit += CT_SC_MISS_GAIN;
		return ct_stack_capture(ips, max);
	}
	sc->credit -= CT_SC_FILL_COST;
	if (plain)
		victim = plain;
	victim->used = now;
	ct_unwinder_enter();
	int n = ct_sc_unwind(sc, victim, ips, max, fr);
	ct_unwinder_leave();
	if (victim->nips)
		*hash = victim->hash;
	return n;
}

CT_HOT void ct_stack_cache_prefetch(const void *frame)
{
	struct ct_stack_cache *sc = ct_tls.stacks;
	if (!sc || !frame || !sc->sets || !ct_option(CT_OPT_STACK_CACHE))
		return;
	const uint64_t *fr = frame;
	uint32_t set = ct_sc_set(sc, fr[1], (uintptr_t)frame + 16);
	for (unsigned way = 0; way < CT_SC_WAYS; way++) {
		const char *e = (const char *)ct_sc_entry(sc, set, way);
		__builtin_prefetch(e, 0, 3);	  /* the key */
		__builtin_prefetch(e + 64, 0, 3); /* the first checks */
		__builtin_prefetch(e + 128, 0, 3); /* the rest of a 32-frame stack's */
	}
}

int ct_stack_cache_no_python(void)
{
	struct ct_stack_cache *sc = ct_tls.stacks;
	struct ct_sc_entry *e = sc ? sc->last : NULL;
	if (!e)
		return 0;
	if (CT_UNLIKELY(e->py == CT_SC_PY_ASK)) {
		int out = ct_py_outside(ct_sc_ips(sc, e), e->nips);
		if (out >= 0)
			e->py = out ? CT_SC_PY_OUT : CT_SC_PY_IN;
	}
	return e->py == CT_SC_PY_OUT;
}

void ct_stack_cache_note_id(uint32_t id)
{
	struct ct_stack_cache *sc = ct_tls.stacks;
	if (sc && sc->last) {
		sc->last->id = id;
		sc->last->gen = ct_stack_generation();
	}
}

const char *ct_stack_cache_name(void)
{
	return ct_option(CT_OPT_STACK_CACHE) ? "on" : "off";
}

#else /* not x86-64: no cache, the frame is not used */

const char *ct_stack_cache_name(void)
{
	return "off";
}

void ct_stack_cache_init(void)
{
}

int ct_stack_capture_at(uint64_t *ips, int max, const void *frame, uint64_t *hash, uint32_t *id)
{
	(void)frame;
	*hash = 0;
	*id = 0;
	return ct_stack_capture(ips, max);
}

void ct_stack_cache_note_id(uint32_t id)
{
	(void)id;
}

int ct_stack_cache_no_python(void)
{
	return 0;
}

void ct_stack_cache_prefetch(const void *frame)
{
	(void)frame;
}

#endif
