#include "base/json.h"

#include <inttypes.h>
#include <string.h>

#include "base/util.h"

void ct_json_init(struct ct_json *j, FILE *f)
{
	memset(j, 0, sizeof *j);
	j->f = f;
}

static void indent(struct ct_json *j)
{
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Separator and indentation before a value (or a key). */
static void before_value(struct ct_json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0) {
		if (j->count[j->depth - 1]++)
			fputc(',', j->f);
		indent(j);
	}
}

static void open_(struct ct_json *j, char c)
{
	before_value(j);
	fputc(c, j->f);
	if (j->depth < CT_JSON_MAX_DEPTH) {
		j->count[j->depth] = 0;
		j->depth++;
	}
}

static void close_(struct ct_json *j, char c)
{
	if (j->depth > 0) {
		j->depth--;
		if (j->count[j->depth])
			indent(j);
	}
	fputc(c, j->f);
}

void ct_json_obj(struct ct_json *j)
{
	open_(j, '{');
}

void ct_json_obj_end(struct ct_json *j)
{
	if (j->depth == 1 && j->saturated) {
		j->saturated = 0;
		ct_json_kv_bool(j, "saturated", 1);
	}
	close_(j, '}');
}

void ct_json_arr(struct ct_json *j)
{
	open_(j, '[');
}

void ct_json_arr_end(struct ct_json *j)
{
	close_(j, ']');
}

void ct_json_escape(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', f);
	size_t i = 0;
	while (i < n) {
		unsigned c = p[i];
		switch (c) {
		case '"':
			fputs("\\\"", f);
			i++;
			continue;
		case '\\':
			fputs("\\\\", f);
			i++;
			continue;
		case '\n':
			fputs("\\n", f);
			i++;
			continue;
		case '\r':
			fputs("\\r", f);
			i++;
			continue;
		case '\t':
			fputs("\\t", f);
			i++;
			continue;
		case '\b':
			fputs("\\b", f);
			i++;
			continue;
		case '\f':
			fputs("\\f", f);
			i++;
			continue;
		default:
			break;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		if (c < 0x80) {
			fputc((int)c, f);
			i++;
			continue;
		}
		size_t l = ct_utf8_seq(p + i, n - i);
		if (l) {
			fwrite(p + i, 1, l, f);
			i += l;
		} else {
			fprintf(f, "\\u%04x", c);
			i++;
		}
	}
	fputc('"', f);
}

void ct_json_key(struct ct_json *j, const char *key)
{
	before_value(j);
	ct_json_escape(j->f, key, strlen(key));
	fputs(": ", j->f);
	j->after_key = 1;
}

void ct_json_strn(struct ct_json *j, const char *s, size_t n)
{
	before_value(j);
	ct_json_escape(j->f, s, n);
}

void ct_json_str(struct ct_json *j, const char *s)
{
	if (!s) {
		ct_json_null(j);
		return;
	}
	ct_json_strn(j, s, strlen(s));
}

void ct_json_u64(struct ct_json *j, uint64_t v)
{
	if (v == CT_SAT)
		j->saturated = 1;
	before_value(j);
	fprintf(j->f, "%" PRIu64, v);
}

void ct_json_i64(struct ct_json *j, int64_t v)
{
	before_value(j);
	fprintf(j->f, "%" PRId64, v);
}

void ct_json_bool(struct ct_json *j, int v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->f);
}

void ct_json_null(struct ct_json *j)
{
	before_value(j);
	fputs("null", j->f);
}

void ct_json_done(struct ct_json *j)
{
	fputc('\n', j->f);
}

void ct_json_kv_u64(struct ct_json *j, const char *key, uint64_t v)
{
	ct_json_key(j, key);
	ct_json_u64(j, v);
}

void ct_json_kv_u64s(struct ct_json *j, const struct ct_json_u64 *kv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ct_json_kv_u64(j, kv[i].key, kv[i].v);
}

void ct_json_kv_i64(struct ct_json *j, const char *key, int64_t v)
{
	ct_json_key(j, key);
	ct_json_i64(j, v);
}

void ct_json_kv_str(struct ct_json *j, const char *key, const char *s)
{
	ct_json_key(j, key);
	ct_json_str(j, s);
}

void ct_json_kv_bool(struct ct_json *j, const char *key, int v)
{
	ct_json_key(j, key);
	ct_json_bool(j, v);
}
