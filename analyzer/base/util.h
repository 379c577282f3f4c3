/*
 * Small helpers shared by the analyzer: checked allocation, hashing, an
 * insert-only hash index, byte formatting.
 */
#ifndef CT_ANALYZER_UTIL_H
#define CT_ANALYZER_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The memory budget (--max-memory, CUMTRACE_REPORT_MAX_MEMORY): the
 * allocation functions below check the analyzer's resident memory each time
 * they have handed out CT_MEM_CHECK_BYTES more (and before any single
 * allocation that large); past the limit they print one line saying so and
 * exit 2, before the kernel's OOM killer would. 0 = no limit.
 */
#define CT_MEM_CHECK_BYTES (1u << 20)
void ct_mem_set_limit(uint64_t bytes);
uint64_t ct_mem_limit(void);
/* The default limit: half of the physical memory, or of a lower cgroup memory.max (0 unknown). */
uint64_t ct_mem_default_limit(void);
/* Resident memory of this process in bytes (/proc/self/statm), 0 if unknown. */
uint64_t ct_mem_resident(void);

/* Allocation that never returns NULL: on failure, print one line and exit 2. */
void *ct_xmalloc(size_t n);
void *ct_xcalloc(size_t n, size_t size);
void *ct_xrealloc(void *p, size_t n);
/* Grow an array of elem-sized items so that it holds at least need items. */
void *ct_xgrow(void *p, size_t *cap, size_t need, size_t elem);
char *ct_xstrdup(const char *s);
char *ct_xstrndup(const char *s, size_t n);

/* A 64-bit mixer (splitmix64 finalizer). */
static inline uint64_t ct_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static inline uint64_t ct_hash2(uint64_t a, uint64_t b)
{
	return ct_mix64(a ^ ct_mix64(b + 0x9e3779b97f4a7c15ull));
}

/*
 * Insert-only hash index: maps a 64-bit hash (plus a caller-side key
 * comparison) to a 32-bit index into a caller-owned dense array. A slot is 8
 * bytes (the hash's low 32 bits and the index); at most CT_IMAP_MAX entries.
 */
struct ct_imap_slot {
	uint32_t hash; /* low 32 bits of the hash */
	uint32_t idx1; /* index + 1; 0 = empty */
};

struct ct_imap {
	struct ct_imap_slot *slots;
	size_t mask; /* capacity - 1, capacity a power of two; 0 when unallocated */
	size_t count;
};

#define CT_IMAP_NONE UINT32_MAX
#define CT_IMAP_MAX (1u << 31) /* entries: the capacity stays within 32 bits of hash */

/* eq returns nonzero when element idx of ctx has the key. */
typedef int (*ct_imap_eq_fn)(const void *ctx, uint32_t idx, const void *key);

/* Inline: called once or twice per event, eq then inlines too. */
static inline uint32_t ct_imap_get(const struct ct_imap *m, uint64_t hash, ct_imap_eq_fn eq,
				   const void *ctx, const void *key)
{
	if (!m->mask)
		return CT_IMAP_NONE;
	uint32_t h = (uint32_t)hash;
	for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
		const struct ct_imap_slot *s = &m->slots[i];
		if (!s->idx1)
			return CT_IMAP_NONE;
		if (s->hash == h && eq(ctx, s->idx1 - 1, key))
			return s->idx1 - 1;
	}
}
/* Add idx under hash; the caller checked that the key is absent. */
void ct_imap_put(struct ct_imap *m, uint64_t hash, uint32_t idx);
void ct_imap_free(struct ct_imap *m);

/*
 * Totals of bytes (and of durations) read from a dump saturate: sizes are
 * untrusted, and eight blocks of 2^63 bytes would otherwise add up to 0. A
 * total that would pass 2^64 - 1 stays at CT_SAT, and once there it never
 * goes down (ct_sat_sub): the dump claimed at least that much at some point,
 * the true value is unknown. Reports show CT_SAT as ">= 16 EiB" (text,
 * HTML), as 18446744073709551615 with "saturated": true (JSON), and the
 * gate treats it as over every limit. Every sum of sizes in the analyzer
 * goes through these two.
 */
#define CT_SAT UINT64_MAX

static inline uint64_t ct_sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;
	return __builtin_add_overflow(a, b, &s) ? CT_SAT : s;
}

/* a - b for a total that had b added: a saturated total stays so (never below 0). */
static inline uint64_t ct_sat_sub(uint64_t a, uint64_t b)
{
	return a == CT_SAT ? CT_SAT : a >= b ? a - b : 0;
}

/*
 * Counted words: one when n is 1, else many ("1 site", "2 sites"; "1 event was",
 * "2 events were"). ct_plural_s: the "s" of a regular noun ("" when n is 1).
 */
static inline const char *ct_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}
static inline const char *ct_plural_s(uint64_t n)
{
	return ct_plural(n, "", "s");
}

/* "512 B", "1.5 KiB", "12.0 MiB", ... into buf (>= 32 bytes); returns buf. CT_SAT: ">= 16 EiB". */
const char *ct_fmt_bytes(uint64_t bytes, char *buf, size_t cap);

/*
 * Print a string for a terminal: bytes below 0x20, 0x7f and invalid UTF-8
 * are shown as \xNN so that a dump cannot inject escape sequences.
 */
void ct_fput_safe(FILE *f, const char *s, size_t n);

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
size_t ct_utf8_seq(const unsigned char *s, size_t n);

/*
 * Print n bytes of a dump-supplied string as HTML text or an attribute value
 * (quoted with "): & < > " ' become character references; bytes below 0x20,
 * 0x7f, C1 controls and invalid UTF-8 are shown as the text \xNN, as
 * ct_fput_safe does, so that the output is always well-formed UTF-8 HTML.
 */
void ct_html_putn(FILE *f, const char *s, size_t n);
/* The same for a NUL-terminated string (NULL prints nothing). */
void ct_html_put(FILE *f, const char *s);

/* SHA-256 of n bytes (FIPS 180-4) into out. */
void ct_sha256(const void *data, size_t n, uint8_t out[32]);
/* Standard base64 with padding of n bytes into out (cap >= 4 * ((n + 2) / 3) + 1); returns out. */
char *ct_base64(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
