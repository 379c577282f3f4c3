/*
 * golden.h: compare a test's output with a file of tests/golden, for Check
 * tests. Header-only. CT_GOLDEN_UPDATE=1 writes the files instead; on a
 * difference the output is written next to the file as NAME.got.
 */
#ifndef CT_TEST_GOLDEN_H
#define CT_TEST_GOLDEN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * tests/golden: $CT_GOLDEN_DIR, else next to this source file (when run from
 * the repository root), else BUILD/tests/unit/../../../tests/golden.
 */
static inline char *golden_dir(void)
{
	const char *env = getenv("CT_GOLDEN_DIR");
	if (env)
		return strdup(env);
	char *out = malloc(4200);
	char *d = strdup(__FILE__);
	char *slash = strrchr(d, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(d, ".");
	snprintf(out, 4200, "%s/../golden", d);
	free(d);
	if (is_dir(out))
		return out;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = 0;
		for (int i = 0; i < 4; i++) {
			slash = strrchr(exe, '/');
			if (slash)
				*slash = 0;
		}
		snprintf(out, 4200, "%s/tests/golden", exe);
	}
	return out;
}

static inline void check_golden(const char *name, const char *text)
{
	char *dir = golden_dir();
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	free(dir);
	if (getenv("CT_GOLDEN_UPDATE")) {
		FILE *f = fopen(path, "w");
		ck_assert_msg(f != NULL, "cannot write %s", path);
		fputs(text, f);
		fclose(f);
		return;
	}
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "missing golden file %s (CT_GOLDEN_UPDATE=1 creates it)", path);
	char *want = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			want = realloc(want, cap);
		}
		size_t k = fread(want + len, 1, 4096, f);
		len += k;
		if (k == 0)
			break;
	}
	want[len] = 0;
	fclose(f);
	if (strcmp(want, text)) {
		char got[4200];
		snprintf(got, sizeof got, "%s.got", path);
		FILE *g = fopen(got, "w");
		if (g) {
			fputs(text, g);
			fclose(g);
		}
		ck_abort_msg("%s differs from the output (written to %s)", path, got);
	}
	free(want);
}

#endif
