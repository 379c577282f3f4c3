/*
 * Single-producer single-consumer byte rings. The producer is the thread that
 * owns the ring; the consumer is the writer thread. head and tail count bytes
 * ever written and consumed, so head - tail is the fill level and no index
 * ever wraps in practice (2^64 bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "ct.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

int ct_has_prefetchw;

/* Whether PREFETCHW may be used (CPUID 0x80000001 ECX bit 8). Once, before rings exist. */
__attribute__((constructor)) static void ct_ring_cpu_init(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000001, &a, &b, &c, &d))
		ct_has_prefetchw = (c >> 8) & 1;
#endif
}

/*
 * A ring of 2 MiB or more (the default is 2 MiB) created with huge set has its
 * data on 2 MiB boundaries and asks for transparent huge pages
 * (CUMTRACE_HUGE_PAGES=1, the default): the producer's stores then fault once
 * per 2 MiB instead of once per 4 KiB page on the ring's first lap, and one TLB
 * entry covers them where the traced program's own data keeps pushing the
 * shim's pages out of the TLB (issue 16: on the VM, with a loop that touches
 * 16,384 pages between calls, the record part of a traced call fell from
 * 93-176 to 42-46 ns). That first fault clears the whole 2 MiB at once, which
 * a thread that records a few events never needs: the caller asks for huge
 * pages for the rings of the first threads only (session.c). The header keeps
 * a 4 KiB page of its own below the data. The ring's memory is what it was
 * once a lap has touched every page, and the rings stay within
 * CUMTRACE_BUFFER_MB; where the kernel gives no huge pages the advice does
 * nothing. Returns the mapping (header, then data), NULL when none.
 */
#define CT_RING_HUGE ((size_t)2 << 20)
static char *ct_ring_map(size_t header, uint64_t cap, int huge)
{
	size_t size = header + cap;
	if (huge && cap >= CT_RING_HUGE && ct_option(CT_OPT_HUGE_PAGES)) {
		size_t span = size + CT_RING_HUGE;
		char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw != MAP_FAILED) {
			char *data = (char *)(((uintptr_t)raw + header + CT_RING_HUGE - 1) &
					      ~(uintptr_t)(CT_RING_HUGE - 1));
			char *start = data - header, *end = data + cap;
			if (start > raw)
				munmap(raw, (size_t)(start - raw));
			if (end < raw + span)
				munmap(end, (size_t)(raw + span - end));
			madvise(data, cap, MADV_HUGEPAGE);
			return start;
		}
		/* no room for the extra 2 MiB (an address-space limit): the plain mapping */
	}
	char *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return mem == MAP_FAILED ? NULL : mem;
}

struct ct_ring *ct_ring_create(uint64_t cap, int huge)
{
	if (cap < 4096 || (cap & (cap - 1)))
		return NULL;
	size_t header = (sizeof(struct ct_ring) + 4095) & ~(size_t)4095;
	size_t size = header + cap;
	int saved = errno;
	char *mem = ct_ring_map(header, cap, huge);
	errno = saved;
	if (!mem)
		return NULL;
	struct ct_ring *ring = (struct ct_ring *)mem;
	/* Fresh anonymous pages are zero: only the non-zero fields are set. */
	ring->cap = cap;
	ring->nudge_at = cap / 2;
	ring->data = (unsigned char *)mem + header;
	ring->map_size = size;
	return ring;
}

void ct_ring_destroy(struct ct_ring *ring)
{
	if (ring)
		munmap(ring, ring->map_size);
}

void *ct_ring_reserve_slow(struct ct_ring *ring, uint32_t len)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	uint64_t pos = head & (ring->cap - 1);
	uint64_t gap = 0;
	if (pos + len > ring->cap)
		gap = ring->cap - pos; /* pad to the end, start again at 0 */
	uint64_t need = gap + len;
	if (head + need - ring->cached_tail > ring->cap) {
		ring->cached_tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (head + need - ring->cached_tail > ring->cap)
			return NULL;
	}
	if (gap) {
		struct ct_rec *pad = (struct ct_rec *)(ring->data + pos);
		pad->type = CT_REC_PAD;
		pad->flags = 0;
		pad->size = (uint32_t)gap;
		pos = 0;
	}
	ring->pending = need;
	return ring->data + pos;
}

int ct_ring_peek(struct ct_ring *ring, const void **p0, size_t *n0, const void **p1, size_t *n1,
		 uint64_t *end)
{
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	*end = head;
	if (head == tail)
		return 0;
	uint64_t mask = ring->cap - 1;
	uint64_t start = tail & mask;
	uint64_t total = head - tail;
	*p0 = ring->data + start;
	if (start + total <= ring->cap) {
		*n0 = total;
		return 1;
	}
	*n0 = ring->cap - start;
	*p1 = ring->data;
	*n1 = total - *n0;
	return 2;
}

void ct_ring_release(struct ct_ring *ring, uint64_t end)
{
	atomic_store_explicit(&ring->tail, end, memory_order_release);
}
