/*
 * A small streaming JSON writer: pretty-printed, keys in the order written,
 * strings escaped (control characters, quotes, backslash; bytes that are not
 * valid UTF-8 become \u00XX, i.e. they are read as Latin-1).
 */
#ifndef CT_ANALYZER_JSON_H
#define CT_ANALYZER_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CT_JSON_MAX_DEPTH 32

struct ct_json {
	FILE *f;
	int depth;
	int count[CT_JSON_MAX_DEPTH]; /* values written at each level */
	int after_key;
	int saturated; /* a value CT_SAT (util.h) was written: the root object ends with "saturated": true */
};

void ct_json_init(struct ct_json *j, FILE *f);
void ct_json_obj(struct ct_json *j);   /* { */
void ct_json_obj_end(struct ct_json *j);
void ct_json_arr(struct ct_json *j);   /* [ */
void ct_json_arr_end(struct ct_json *j);
void ct_json_key(struct ct_json *j, const char *key);
void ct_json_str(struct ct_json *j, const char *s); /* NULL -> null */
void ct_json_strn(struct ct_json *j, const char *s, size_t n);
void ct_json_u64(struct ct_json *j, uint64_t v); /* CT_SAT: also "saturated": true at the root */
void ct_json_i64(struct ct_json *j, int64_t v);
void ct_json_bool(struct ct_json *j, int v);
void ct_json_null(struct ct_json *j);
/* A key and its value in one call. */
void ct_json_kv_u64(struct ct_json *j, const char *key, uint64_t v);
/* A named number, for writing a run of them from one table (ct_json_kv_u64s). */
struct ct_json_u64 {
	const char *key;
	uint64_t v;
};
void ct_json_kv_u64s(struct ct_json *j, const struct ct_json_u64 *kv, size_t n);
void ct_json_kv_i64(struct ct_json *j, const char *key, int64_t v);
void ct_json_kv_str(struct ct_json *j, const char *key, const char *s);
void ct_json_kv_bool(struct ct_json *j, const char *key, int v);
/* Finish the document (newline). */
void ct_json_done(struct ct_json *j);

/* Write s as a JSON string literal (with quotes). */
void ct_json_escape(FILE *f, const char *s, size_t n);

#endif
