/*
 * Native stacks: captured with libunwind, interned in a lock-free open
 * addressing table keyed by a 64-bit hash of the frames. Two different stacks
 * with the same 64-bit hash would share an id; with fewer than a million
 * distinct stacks the chance of that is below 1 in 10^7.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "ct.h"

/*
 * Under ThreadSanitizer, frames are walked with unw_step instead of
 * unw_backtrace. unw_backtrace's fast path keeps a per-thread trace cache
 * freed by a pthread key destructor that takes a mutex; that destructor may
 * run after TSan has finished the exiting thread, and TSan then crashes in its
 * mutex hook (github.com/google/sanitizers/issues/943). unw_step uses no
 * thread-specific data. Other builds keep the faster unw_backtrace.
 */
#if defined(__SANITIZE_THREAD__)
#define CT_STACK_STEP 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CT_STACK_STEP 1
#endif
#endif

#define CT_STACK_SLOTS (1u << 18)
#define CT_INTERN_PROBES 64

enum { CT_INTERN_UNWRITTEN = 0, CT_INTERN_CLAIMED = 1, CT_INTERN_DONE = 2 };

struct ct_intern_slot {
	_Atomic uint64_t hash;	/* 0 = empty */
	_Atomic uint32_t id;	/* 0 until published */
	_Atomic uint32_t state; /* enum above */
};

static struct ct_intern_table ct_stacks = {NULL, 0, CT_STACK_SLOTS};
static uintptr_t ct_self_lo, ct_self_hi;

void ct_module_range(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
}

struct ct_module_find {
	uint64_t probe;
	struct ct_module *m;
	char *copy;
	size_t cap;
	int found;
};

static int ct_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct ct_module_find *f = arg;
	uint64_t lo, hi;
	ct_module_range(info, &lo, &hi);
	if (f->probe < lo || f->probe >= hi)
		return 0;
	f->m->lo = (uintptr_t)lo;
	f->m->hi = (uintptr_t)hi;
	f->m->base = (uintptr_t)info->dlpi_addr;
	f->m->name = info->dlpi_name;
	if (f->copy) {
		const char *name = info->dlpi_name ? info->dlpi_name : "";
		size_t n = strnlen(name, f->cap - 1);
		memcpy(f->copy, name, n);
		f->copy[n] = 0;
	}
	f->found = 1;
	return 1;
}

int ct_module_of(const void *p, struct ct_module *m, char *copy, size_t cap)
{
	struct ct_module_find f = {(uint64_t)(uintptr_t)p, m, cap ? copy : NULL, cap, 0};
	dl_iterate_phdr(ct_module_cb, &f);
	return f.found;
}

void ct_stack_init(void)
{
	struct ct_module self;
	if (ct_module_of((const void *)(uintptr_t)&ct_stack_init, &self, NULL, 0)) {
		ct_self_lo = self.lo;
		ct_self_hi = self.hi;
	}
	ct_stack_cache_init();
}

void *ct_thread_map(pthread_key_t key, size_t size, int flags)
{
	int saved = errno;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (mem != MAP_FAILED && pthread_setspecific(key, mem) != 0) {
		munmap(mem, size);
		mem = MAP_FAILED;
	}
	errno = saved;
	return mem == MAP_FAILED ? NULL : mem;
}

int ct_is_own_address(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	return a >= ct_self_lo && a < ct_self_hi;
}

/* Up to want return addresses of the callers of this function into raw; returns how many. */
static int ct_unwind(void **raw, int want)
{
#ifdef CT_STACK_STEP
	unw_context_t uc;
	unw_cursor_t cursor;
	int n = 0;
	if (unw_getcontext(&uc) < 0 || unw_init_local(&cursor, &uc) < 0)
		return 0;
	while (n < want && unw_step(&cursor) > 0) {
		unw_word_t ip;
		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0)
			break;
		raw[n++] = (void *)(uintptr_t)ip;
	}
	return n;
#else
	return unw_backtrace(raw, want);
#endif
}

int ct_stack_capture(uint64_t *ips, int max)
{
	void *raw[CT_STACK_MAX + 8];
	int want = max + 8;
	if (want > (int)(sizeof raw / sizeof raw[0]))
		want = (int)(sizeof raw / sizeof raw[0]);
	ct_unwinder_enter();
	int n = ct_unwind(raw, want);
	ct_unwinder_leave();
	int out = 0;
	int i = 0;
	/* The innermost frames are the shim's own: skip them. */
	while (i < n && (uintptr_t)raw[i] >= ct_self_lo && (uintptr_t)raw[i] < ct_self_hi)
		i++;
	for (; i < n && out < max; i++)
		ips[out++] = (uint64_t)(uintptr_t)raw[i];
	return out;
}

/*
 * Four independent lanes (frames i, i+4, ...) folded at the end: the
 * multiply chains overlap instead of running one after another, which a
 * 22-frame stack notices.
 */
uint64_t ct_stack_hash(const uint64_t *ips, int depth)
{
	uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ (uint64_t)depth, 0xc2b2ae3d27d4eb4full,
			 0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull};
	int i = 0;
	for (; i + 4 <= depth; i += 4)
		for (int k = 0; k < 4; k++)
			h[k] = ct_hash_step(h[k], ips[i + k]);
	for (int k = 0; i < depth; i++, k++)
		h[k] = ct_hash_step(h[k], ips[i]);
	uint64_t x = ct_hash_step(ct_hash_step(ct_hash_step(h[0], h[1]), h[2]), h[3]);
	return x ? x : 1;
}

static struct ct_intern_slot *ct_intern_slots(struct ct_intern_table *t)
{
	struct ct_intern_slot *slots = atomic_load_explicit(&t->slots, memory_order_acquire);
	if (CT_LIKELY(slots))
		return slots;
	size_t size = t->nslots * sizeof(struct ct_intern_slot);
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	struct ct_intern_slot *expected = NULL;
	if (!atomic_compare_exchange_strong(&t->slots, &expected, mem)) {
		munmap(mem, size);
		return expected;
	}
	return mem;
}

uint32_t ct_intern(struct ct_intern_table *t, uint64_t h, void **must_write)
{
	*must_write = NULL;
	struct ct_intern_slot *slots = ct_intern_slots(t);
	if (!slots)
		return 0;
	h = h ? h : 1; /* 0 marks an empty slot */
	for (uint32_t probe = 0; probe < CT_INTERN_PROBES; probe++) {
		struct ct_intern_slot *s = &slots[(h + probe) & (t->nslots - 1)];
		uint64_t cur = atomic_load_explicit(&s->hash, memory_order_acquire);
		if (cur == 0) {
			uint64_t zero = 0;
			if (atomic_compare_exchange_strong(&s->hash, &zero, h)) {
				uint32_t id = atomic_fetch_add(&t->next_id, 1) + 1;
				atomic_store_explicit(&s->state, CT_INTERN_CLAIMED, memory_order_relaxed);
				atomic_store_explicit(&s->id, id, memory_order_release);
				*must_write = s;
				return id;
			}
			cur = zero;
		}
		if (cur != h)
			continue;
		uint32_t id;
		while ((id = atomic_load_explicit(&s->id, memory_order_acquire)) == 0)
			; /* the inserting thread is between two stores */
		uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
		if (state == CT_INTERN_UNWRITTEN) {
			uint32_t expect = CT_INTERN_UNWRITTEN;
			if (atomic_compare_exchange_strong(&s->state, &expect, CT_INTERN_CLAIMED))
				*must_write = s;
		}
		return id;
	}
	return 0;
}

void ct_intern_written(void *slot, int ok)
{
	struct ct_intern_slot *s = slot;
	if (s)
		atomic_store_explicit(&s->state, ok ? CT_INTERN_DONE : CT_INTERN_UNWRITTEN,
				      memory_order_release);
}

void ct_intern_reset(struct ct_intern_table *t)
{
	struct ct_intern_slot *s = atomic_exchange(&t->slots, NULL);
	if (s)
		munmap(s, t->nslots * sizeof(struct ct_intern_slot));
	atomic_store(&t->next_id, 0);
}

uint32_t ct_stack_intern(const uint64_t *ips, int depth, void **must_write)
{
	*must_write = NULL;
	if (depth <= 0)
		return 0;
	return ct_intern(&ct_stacks, ct_stack_hash(ips, depth), must_write);
}

uint32_t ct_stack_intern_hash(uint64_t hash, void **must_write)
{
	return ct_intern(&ct_stacks, hash, must_write);
}

void ct_stack_written(void *slot, int ok)
{
	ct_intern_written(slot, ok);
}

CT_HOT_DATA static _Atomic uint32_t ct_stack_gen = 1;

void ct_stack_reset(void)
{
	atomic_fetch_add(&ct_stack_gen, 1);
	ct_intern_reset(&ct_stacks);
}

CT_HOT uint32_t ct_stack_generation(void)
{
	return atomic_load_explicit(&ct_stack_gen, memory_order_relaxed);
}

uint64_t ct_stack_count(void)
{
	return atomic_load(&ct_stacks.next_id);
}
