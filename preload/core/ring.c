/*
 * Single-producer single-consumer byte rings. The producer is the thread that
 * owns the ring; the consumer is the writer thread. head and tail count bytes
 * ever written and consumed, so head - tail is the fill level and no index
 * ever wraps in practice (2^64 bytes).
 */
#define _GNU_SOURCE
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

struct ct_ring *ct_ring_create(uint64_t cap)
{
	if (cap < 4096 || (cap & (cap - 1)))
		return NULL;
	size_t header = (sizeof(struct ct_ring) + 4095) & ~(size_t)4095;
	size_t size = header + cap;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	struct ct_ring *ring = mem;
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
