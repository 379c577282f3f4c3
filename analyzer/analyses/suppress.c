/* Leak suppressions: parsing, matching and generated blocks (suppress.h). */
#define _GNU_SOURCE /* memrchr */
#include "analyses/suppress.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/classify.h"

enum pat_kind { PAT_FUN, PAT_OBJ, PAT_SRC, PAT_ANY };

struct pat {
	int kind;      /* enum pat_kind */
	char *glob;    /* fun/obj: the glob; src: the file glob */
	unsigned line; /* src: the line, 0 = any */
};

struct supp {
	char *name;
	char *origin;
	unsigned origin_line;
	int lsan;	  /* a leak:PATTERN one-liner */
	unsigned classes; /* CT_CLASS_BIT set it applies to */
	struct pat *pats;
	size_t npats;
};

struct ct_suppressions {
	struct supp *v;
	size_t n, cap;
};

struct ct_suppressions *ct_supp_new(void)
{
	return ct_xcalloc(1, sizeof(struct ct_suppressions));
}

static void supp_clear(struct supp *s)
{
	free(s->name);
	free(s->origin);
	for (size_t i = 0; i < s->npats; i++)
		free(s->pats[i].glob);
	free(s->pats);
}

void ct_supp_free(struct ct_suppressions *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		supp_clear(&s->v[i]);
	free(s->v);
	free(s);
}

size_t ct_supp_count(const struct ct_suppressions *s)
{
	return s ? s->n : 0;
}

const char *ct_supp_name(const struct ct_suppressions *s, size_t i)
{
	return i < s->n ? s->v[i].name : "?";
}

const char *ct_supp_origin(const struct ct_suppressions *s, size_t i, unsigned *line)
{
	if (i >= s->n) {
		*line = 0;
		return "?";
	}
	*line = s->v[i].origin_line;
	return s->v[i].origin;
}

/* ---- parsing --------------------------------------------------------------------------------- */

struct parser {
	struct ct_suppressions *s;
	size_t first_new; /* suppressions before it belong to earlier files */
	const char *origin;
	unsigned line;
	char *err;
	size_t cap;
};

__attribute__((format(printf, 2, 3))) static int perr(struct parser *p, const char *fmt, ...)
{
	int k = snprintf(p->err, p->cap, "%s:%u: ", p->origin, p->line);
	if (k >= 0 && (size_t)k < p->cap) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + k, p->cap - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static struct supp *supp_add(struct parser *p, const char *name, size_t len)
{
	struct ct_suppressions *s = p->s;
	s->v = ct_xgrow(s->v, &s->cap, s->n + 1, sizeof *s->v);
	struct supp *x = &s->v[s->n++];
	memset(x, 0, sizeof *x);
	x->name = ct_xstrndup(name, len);
	x->origin = ct_xstrdup(p->origin);
	x->origin_line = p->line;
	return x;
}

static void pat_add(struct supp *x, int kind, const char *glob, size_t len, unsigned line)
{
	x->pats = ct_xrealloc(x->pats, (x->npats + 1) * sizeof *x->pats);
	x->pats[x->npats++] = (struct pat){kind, glob ? ct_xstrndup(glob, len) : NULL, line};
}

static int starts(const char *s, size_t len, const char *prefix)
{
	size_t k = strlen(prefix);
	return len >= k && !memcmp(s, prefix, k);
}

/*
 * LeakSanitizer's template as a glob (matched without '?'): a substring
 * match unless '^' anchors the start or '$' the end; '*' is any run.
 */
static char *lsan_glob(const char *templ, size_t tl)
{
	int head = templ[0] == '^', tail = tl > (size_t)head && templ[tl - 1] == '$';
	size_t body = tl - (size_t)head - (size_t)tail;
	char *g = ct_xmalloc(body + 3), *w = g;
	if (!head)
		*w++ = '*';
	memcpy(w, templ + head, body);
	w += body;
	if (!tail)
		*w++ = '*';
	*w = 0;
	return g;
}

enum state { OUTSIDE, NAME, KIND, BODY, SKIP };

/* One trimmed, non-empty, non-comment line. */
static int parse_line(struct parser *p, int *st, const char *l, size_t len, unsigned *block_line)
{
	struct supp *cur = p->s->n > p->first_new ? &p->s->v[p->s->n - 1] : NULL;
	switch (*st) {
	case OUTSIDE:
		if (len == 1 && l[0] == '{') {
			*st = NAME;
			*block_line = p->line;
			return 0;
		}
		if (starts(l, len, "leak:")) {
			if (len == 5)
				return perr(p, "empty leak: pattern");
			struct supp *x = supp_add(p, l, len);
			x->lsan = 1;
			x->classes = CT_CLASS_ALL;
			pat_add(x, PAT_FUN, NULL, 0, 0);
			x->pats[0].glob = lsan_glob(l + 5, len - 5);
			return 0;
		}
		if (memchr(l, ':', len))
			return perr(p, "unknown suppression type '%.*s' (cumtrace knows leak:)",
				    (int)(strchr(l, ':') - l), l);
		return perr(p, "expected '{' or 'leak:PATTERN'");
	case NAME:
		if (len == 1 && (l[0] == '}' || l[0] == '{'))
			return perr(p, "a suppression block needs a name first");
		supp_add(p, l, len)->origin_line = *block_line;
		*st = KIND;
		return 0;
	case KIND: {
		const char *colon = memchr(l, ':', len);
		if (!colon)
			return perr(p, "expected TOOL:KIND (cumtrace:Leak or cumtrace:Growth)");
		if ((size_t)(colon - l) != 8 || memcmp(l, "cumtrace", 8)) {
			/* another tool's block (Memcheck:Leak, ...): not ours, skip it */
			supp_clear(cur);
			p->s->n--;
			*st = SKIP;
			return 0;
		}
		size_t kl = len - 9;
		if (kl == 4 && !memcmp(colon + 1, "Leak", 4))
			cur->classes = CT_CLASS_BIT(CT_CLASS_LEAKED) | CT_CLASS_BIT(CT_CLASS_CACHE) |
				       CT_CLASS_BIT(CT_CLASS_TEARDOWN);
		else if (kl == 6 && !memcmp(colon + 1, "Growth", 6))
			cur->classes = CT_CLASS_BIT(CT_CLASS_GROWTH);
		else
			return perr(p, "unknown kind '%.*s' (cumtrace:Leak or cumtrace:Growth)",
				    (int)kl, colon + 1);
		*st = BODY;
		return 0;
	}
	case BODY:
		if (len == 1 && l[0] == '}') {
			if (!cur->npats)
				return perr(p, "suppression '%s' has no fun:, obj:, src: or ... line",
					    cur->name);
			*st = OUTSIDE;
			return 0;
		}
		if (starts(l, len, "match-leak-kinds:")) {
			if (cur->npats)
				return perr(p, "match-leak-kinds: must come before the frame lines");
			if (cur->classes == CT_CLASS_BIT(CT_CLASS_GROWTH))
				return perr(p, "match-leak-kinds: belongs to cumtrace:Leak blocks");
			const char *v = l + 17;
			size_t vl = len - 17;
			while (vl && (*v == ' ' || *v == '\t')) {
				v++;
				vl--;
			}
			char *list = ct_xstrndup(v, vl), bad[80];
			unsigned set;
			int rc = ct_class_parse_list(list, &set, bad, sizeof bad);
			free(list);
			if (rc || (set & CT_CLASS_BIT(CT_CLASS_GROWTH) && set != CT_CLASS_ALL))
				return perr(p, "match-leak-kinds: unknown kind '%s' (leaked, cache, teardown, all)",
					    rc ? bad : "growth");
			cur->classes = set & ~CT_CLASS_BIT(CT_CLASS_GROWTH);
			return 0;
		}
		if (len == 3 && !memcmp(l, "...", 3)) {
			pat_add(cur, PAT_ANY, NULL, 0, 0);
			return 0;
		}
		if (starts(l, len, "fun:") || starts(l, len, "obj:")) {
			if (len == 4)
				return perr(p, "empty %.4s pattern", l);
			pat_add(cur, l[0] == 'f' ? PAT_FUN : PAT_OBJ, l + 4, len - 4, 0);
			return 0;
		}
		if (starts(l, len, "src:")) {
			const char *v = l + 4;
			size_t vl = len - 4;
			unsigned line = 0;
			const char *c = vl ? memrchr(v, ':', vl) : NULL;
			if (c && c + 1 < v + vl && strspn(c + 1, "0123456789") == (size_t)(v + vl - c - 1)) {
				unsigned long x = strtoul(c + 1, NULL, 10);
				if (!x || x > 100000000)
					return perr(p, "src: line out of range");
				line = (unsigned)x;
				vl = (size_t)(c - v);
			}
			if (!vl)
				return perr(p, "empty src: pattern");
			pat_add(cur, PAT_SRC, v, vl, line);
			return 0;
		}
		return perr(p, "expected fun:, obj:, src:, ..., match-leak-kinds: or '}'");
	case SKIP:
		if (len == 1 && l[0] == '}')
			*st = OUTSIDE;
		return 0;
	}
	return 0;
}

int ct_supp_load_text(struct ct_suppressions *s, const char *origin, const char *text, size_t len,
		      char *err, size_t cap)
{
	struct parser p = {.s = s, .first_new = s->n, .origin = origin, .err = err, .cap = cap};
	int st = OUTSIDE, rc = 0;
	unsigned block_line = 0;
	size_t pos = 0;
	while (pos < len && !rc) {
		const char *l = text + pos;
		const char *nl = memchr(l, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - l) : len - pos;
		pos += ll + (nl != NULL);
		p.line++;
		while (ll && (l[ll - 1] == ' ' || l[ll - 1] == '\t' || l[ll - 1] == '\r'))
			ll--;
		while (ll && (*l == ' ' || *l == '\t')) {
			l++;
			ll--;
		}
		if (!ll || *l == '#')
			continue;
		if (memchr(l, 0, ll)) {
			rc = perr(&p, "NUL byte in the line");
			break;
		}
		rc = parse_line(&p, &st, l, ll, &block_line);
	}
	if (!rc && st != OUTSIDE) {
		p.line = block_line;
		rc = perr(&p, "suppression block not closed with '}'");
	}
	if (rc) {
		while (s->n > p.first_new)
			supp_clear(&s->v[--s->n]);
	}
	return rc;
}

int ct_supp_load_file(struct ct_suppressions *s, const char *path, char *err, size_t cap)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, cap, "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t n = 0, bcap = 0;
	for (;;) {
		buf = ct_xgrow(buf, &bcap, n + 65536, 1);
		size_t k = fread(buf + n, 1, bcap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	int bad = ferror(f);
	fclose(f);
	int rc;
	if (bad) {
		snprintf(err, cap, "%s: read error", path);
		rc = -1;
	} else {
		rc = ct_supp_load_text(s, path, buf, n, err, cap);
	}
	free(buf);
	return rc;
}

/* ---- matching --------------------------------------------------------------------------------- */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* A path glob: against the whole path when it names a directory, else the file name. */
static int path_glob(const char *glob, const char *path)
{
	if (!path)
		path = "???";
	return ct_glob(glob, strchr(glob, '/') ? path : base_name(path), 1);
}

static int pat_frame(const struct pat *pt, const struct ct_frame *f)
{
	switch (pt->kind) {
	case PAT_FUN:
		return ct_glob(pt->glob, f->function ? f->function : "???", 1);
	case PAT_OBJ:
		return !f->python && path_glob(pt->glob, f->module);
	case PAT_SRC:
		if (!f->file || (pt->line && f->line != pt->line))
			return 0;
		return path_glob(pt->glob, f->file) ||
		       (f->file_short && f->file_short != f->file && path_glob(pt->glob, f->file_short));
	default:
		return 1;
	}
}

/* The frame lines against the stack's innermost frames; "..." spans any number of frames. */
static int block_match(const struct supp *x, const struct ct_frame *f, size_t n)
{
	size_t pi = 0, fi = 0, star_p = SIZE_MAX, star_f = 0;
	for (;;) {
		if (pi == x->npats)
			return 1; /* the rest of the stack does not matter */
		if (x->pats[pi].kind == PAT_ANY) {
			star_p = ++pi;
			star_f = fi;
			continue;
		}
		if (fi < n && pat_frame(&x->pats[pi], &f[fi])) {
			pi++;
			fi++;
			continue;
		}
		if (star_p == SIZE_MAX || star_f >= n)
			return 0;
		pi = star_p;
		fi = ++star_f;
	}
}

/* A LeakSanitizer match of a non-empty string: the glob lsan_glob made. */
static int lsan_match(const char *glob, const char *s)
{
	return s && *s && ct_glob(glob, s, 0);
}

static int lsan_frames(const struct supp *x, const struct ct_frame *f, size_t n)
{
	const char *t = x->pats[0].glob;
	for (size_t i = 0; i < n; i++)
		if (lsan_match(t, f[i].function) || lsan_match(t, f[i].file) ||
		    (!f[i].python && lsan_match(t, f[i].module)))
			return 1;
	return 0;
}

int ct_supp_match(const struct ct_suppressions *s, int cls, const struct ct_frame *f, size_t n)
{
	if (!s || cls < 0 || cls >= CT_CLASS_COUNT)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		const struct supp *x = &s->v[i];
		if (!(x->classes & CT_CLASS_BIT(cls)))
			continue;
		if (x->lsan ? lsan_frames(x, f, n) : block_match(x, f, n))
			return (int)i;
	}
	return -1;
}

/* ---- generated blocks ---------------------------------------------------------------------------- */

/* A name or path on a suppression line: unprintable bytes become '?' (which matches them). */
static void put_pattern(FILE *out, const char *s)
{
	size_t n = strlen(s);
	for (size_t i = 0; i < n;) {
		size_t k = ct_utf8_seq((const unsigned char *)s + i, n - i);
		unsigned char c = (unsigned char)s[i];
		int edge = (i == 0 || i + 1 == n) && (c == ' ' || c == '\t');
		if (!k || c < 0x20 || c == 0x7f || edge) {
			fputc('?', out);
			i++;
			continue;
		}
		fwrite(s + i, 1, k, out);
		i += k;
	}
}

int ct_supp_write_block(FILE *out, const char *indent, const char *name, int cls,
			const struct ct_frame *f, size_t n)
{
	/* the frames it names: up to the last one with a function or a module, none past main */
	size_t end = 0;
	n = ct_frames_to_main(f, n);
	for (size_t i = 0; i < n && i < CT_SUPP_GEN_FRAMES; i++)
		if (f[i].function || (!f[i].python && f[i].module))
			end = i + 1;
	if (!end) {
		fprintf(out, "%s# no frame with a function or a module: no suppression can name this site\n",
			indent);
		return -1;
	}
	fprintf(out, "%s{\n%s   ", indent, indent);
	put_pattern(out, name);
	if (cls == CT_CLASS_GROWTH)
		fprintf(out, "\n%s   cumtrace:Growth\n", indent);
	else
		fprintf(out, "\n%s   cumtrace:Leak\n%s   match-leak-kinds: %s\n", indent, indent,
			ct_class_name(cls));
	int last_any = 0;
	for (size_t i = 0; i < end; i++) {
		const char *fn = f[i].function, *obj = f[i].python ? NULL : f[i].module;
		if (!fn && !obj) {
			if (!last_any)
				fprintf(out, "%s   ...\n", indent);
			last_any = 1;
			continue;
		}
		fprintf(out, "%s   %s", indent, fn ? "fun:" : "obj:");
		put_pattern(out, fn ? fn : obj);
		fputc('\n', out);
		last_any = 0;
	}
	fprintf(out, "%s}\n", indent);
	return 0;
}
