#include "util.h"

#include <stdlib.h>
#include <string.h>

static void oom(void)
{
	fputs("cumtrace-report: out of memory\n", stderr);
	exit(2);
}

void *ct_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *ct_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *ct_xrealloc(void *p, size_t n)
{
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

uint32_t ct_imap_get(const struct ct_imap *m, uint64_t hash, ct_imap_eq_fn eq, const void *ctx,
		     const void *key)
{
	if (!m->mask)
		return CT_IMAP_NONE;
	for (size_t i = hash & m->mask;; i = (i + 1) & m->mask) {
		const struct ct_imap_slot *s = &m->slots[i];
		if (!s->idx1)
			return CT_IMAP_NONE;
		if (s->hash == hash && eq(ctx, s->idx1 - 1, key))
			return s->idx1 - 1;
	}
}

static void imap_insert_raw(struct ct_imap_slot *slots, size_t mask, uint64_t hash, uint32_t idx1)
{
	size_t i = hash & mask;
	while (slots[i].idx1)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].idx1 = idx1;
}

void ct_imap_put(struct ct_imap *m, uint64_t hash, uint32_t idx)
{
	if (idx >= UINT32_MAX - 1)
		oom();
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
	imap_insert_raw(m->slots, m->mask, hash, idx + 1);
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

void ct_fput_safe(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		unsigned c = p[i];
		if (c >= 0x20 && c < 0x7f) {
			fputc((int)c, f);
			i++;
			continue;
		}
		size_t l = c >= 0x80 ? ct_utf8_seq(p + i, n - i) : 0;
		if (l) {
			fwrite(p + i, 1, l, f);
			i += l;
		} else {
			fprintf(f, "\\x%02x", c);
			i++;
		}
	}
}
