#include "base/util.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void oom(void)
{
	fputs("cumtrace-report: out of memory\n", stderr);
	exit(2);
}

/* ---- the memory budget ------------------------------------------------------------------ */

static _Atomic uint64_t mem_limit;
static _Atomic uint64_t mem_since_check; /* bytes handed out since the last check */

void ct_mem_set_limit(uint64_t bytes)
{
	atomic_store(&mem_limit, bytes);
}

uint64_t ct_mem_limit(void)
{
	return atomic_load(&mem_limit);
}

uint64_t ct_mem_default_limit(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	uint64_t ram = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
	/* a container's limit (cgroup v2) is the memory there is */
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
	unsigned long long cg;
	if (f && fscanf(f, "%llu", &cg) == 1 && cg && (!ram || cg < ram))
		ram = cg;
	if (f)
		fclose(f);
	return ram / 2;
}

uint64_t ct_mem_resident(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long total, resident;
	int ok = f && fscanf(f, "%llu %llu", &total, &resident) == 2;
	if (f)
		fclose(f);
	long size = sysconf(_SC_PAGESIZE);
	return ok && size > 0 ? (uint64_t)resident * (uint64_t)size : 0;
}

/* About to allocate n bytes: check the budget every CT_MEM_CHECK_BYTES. */
static void mem_account(size_t n)
{
	uint64_t limit = atomic_load_explicit(&mem_limit, memory_order_relaxed);
	if (!limit)
		return;
	uint64_t since = atomic_fetch_add_explicit(&mem_since_check, n, memory_order_relaxed) + n;
	if (since < CT_MEM_CHECK_BYTES)
		return;
	atomic_store_explicit(&mem_since_check, 0, memory_order_relaxed);
	uint64_t rss = ct_mem_resident();
	if (rss <= limit && n <= limit - rss)
		return;
	char b1[32], b2[32], b3[32];
	fprintf(stderr,
		"cumtrace-report: memory budget exceeded: %s resident, %s more needed, the limit is %s"
		" (--max-memory or CUMTRACE_REPORT_MAX_MEMORY; 0 = none)\n",
		ct_fmt_bytes(rss, b1, sizeof b1), ct_fmt_bytes(n, b2, sizeof b2),
		ct_fmt_bytes(limit, b3, sizeof b3));
	exit(2);
}

void *ct_xmalloc(size_t n)
{
	mem_account(n);
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *ct_xcalloc(size_t n, size_t size)
{
	mem_account(size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *ct_xrealloc(void *p, size_t n)
{
	mem_account(n);
	void *q = realloc(p, n ? n : 1);
	if (!q)
		oom();
	return q;
}

void *ct_xgrow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			oom();
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		oom();
	p = ct_xrealloc(p, ncap * elem);
	*cap = ncap;
	return p;
}

char *ct_xstrdup(const char *s)
{
	return ct_xstrndup(s, strlen(s));
}

char *ct_xstrndup(const char *s, size_t n)
{
	char *p = ct_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

static void imap_insert_raw(struct ct_imap_slot *slots, size_t mask, uint32_t hash, uint32_t idx1)
{
	size_t i = hash & mask;
	while (slots[i].idx1)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].idx1 = idx1;
}

void ct_imap_put(struct ct_imap *m, uint64_t hash, uint32_t idx)
{
	if (idx >= CT_IMAP_MAX || m->count >= CT_IMAP_MAX) {
		fputs("cumtrace-report: more than 2^31 distinct stacks, sites or keys in one table\n",
		      stderr);
		exit(2);
	}
	if (!m->mask || (m->count + 1) * 4 > (m->mask + 1) * 3) {
		size_t ncap = m->mask ? (m->mask + 1) * 2 : 64;
		struct ct_imap_slot *ns = ct_xcalloc(ncap, sizeof *ns);
		if (m->mask)
			for (size_t i = 0; i <= m->mask; i++)
				if (m->slots[i].idx1)
					imap_insert_raw(ns, ncap - 1, m->slots[i].hash,
							m->slots[i].idx1);
		free(m->slots);
		m->slots = ns;
		m->mask = ncap - 1;
	}
	imap_insert_raw(m->slots, m->mask, (uint32_t)hash, idx + 1);
	m->count++;
}

void ct_imap_free(struct ct_imap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->mask = m->count = 0;
}

const char *ct_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	if (bytes == CT_SAT) {
		snprintf(buf, cap, ">= 16 EiB");
		return buf;
	}
	if (bytes < 1024) {
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	double v = (double)bytes / 1024.0;
	unsigned u = 0;
	while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	/* never print "1024.0 KiB": rounding to one decimal may reach it */
	if (v >= 1023.95 && u + 1 < sizeof units / sizeof units[0]) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}

size_t ct_utf8_seq(const unsigned char *s, size_t n)
{
	if (!n)
		return 0;
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned min;
	unsigned cp;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		min = 0x80;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		min = 0x800;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		min = 0x10000;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * Printable ASCII and valid UTF-8 as they are, everything else as \xNN; for
 * HTML also & < > " ' as character references and U+0080..U+009F (C2 80..C2
 * 9F: controls, HTML parse errors) as \xNN.
 */
static void put_escaped(FILE *f, const char *s, size_t n, int html)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		unsigned c = p[i];
		const char *ref = !html	       ? NULL
				  : c == '&'   ? "&amp;"
				  : c == '<'   ? "&lt;"
				  : c == '>'   ? "&gt;"
				  : c == '"'   ? "&quot;"
				  : c == '\'' ? "&#39;"
					       : NULL;
		if (ref) {
			fputs(ref, f);
			i++;
			continue;
		}
		if (c >= 0x20 && c < 0x7f) {
			fputc((int)c, f);
			i++;
			continue;
		}
		size_t l = c >= 0x80 ? ct_utf8_seq(p + i, n - i) : 0;
		if (html && l == 2 && c == 0xc2 && p[i + 1] < 0xa0)
			l = 0;
		if (l) {
			fwrite(p + i, 1, l, f);
			i += l;
		} else {
			fprintf(f, "\\x%02x", c);
			i++;
		}
	}
}

void ct_fput_safe(FILE *f, const char *s, size_t n)
{
	put_escaped(f, s, n, 0);
}

void ct_html_putn(FILE *f, const char *s, size_t n)
{
	put_escaped(f, s, n, 1);
}

void ct_html_put(FILE *f, const char *s)
{
	if (s)
		ct_html_putn(f, s, strlen(s));
}

/* ---- SHA-256 (FIPS 180-4), for Content-Security-Policy hashes ---------------------------- */

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2};

static uint32_t ror32(uint32_t x, unsigned r)
{
	return (x >> r) | (x << (32 - r));
}

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = k + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) +
			      sha256_k[i] + w[i];
		uint32_t t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += k;
}

void ct_sha256(const void *data, size_t n, uint8_t out[32])
{
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	const uint8_t *p = data;
	size_t i = 0;
	for (; n - i >= 64; i += 64)
		sha256_block(h, p + i);
	/* the tail, the 0x80 byte and the length in bits: one or two more blocks */
	uint8_t tail[128] = {0};
	size_t r = n - i;
	memcpy(tail, p + i, r);
	tail[r] = 0x80;
	size_t len = r + 9 <= 64 ? 64 : 128;
	uint64_t bits = (uint64_t)n * 8;
	for (int b = 0; b < 8; b++)
		tail[len - 1 - b] = (uint8_t)(bits >> (8 * b));
	for (size_t o = 0; o < len; o += 64)
		sha256_block(h, tail + o);
	for (int b = 0; b < 8; b++) {
		out[4 * b] = (uint8_t)(h[b] >> 24);
		out[4 * b + 1] = (uint8_t)(h[b] >> 16);
		out[4 * b + 2] = (uint8_t)(h[b] >> 8);
		out[4 * b + 3] = (uint8_t)h[b];
	}
}

char *ct_base64(const uint8_t *in, size_t n, char *out, size_t cap)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	if (!cap)
		return out;
	for (size_t i = 0; i < n && o + 4 < cap; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		out[o++] = a[v >> 18 & 63];
		out[o++] = a[v >> 12 & 63];
		out[o++] = i + 1 < n ? a[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? a[v & 63] : '=';
	}
	out[o] = 0;
	return out;
}
