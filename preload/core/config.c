/*
 * Options: one descriptor table, read from the environment once, at the
 * first traced call (never during the dynamic loader's constructor pass).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

struct ct_option_desc {
	const char *env;
	long def, min, max;
	int is_string;
	const char *str;
};

CT_HOT_DATA long ct_option_values[CT_OPT_COUNT];

static struct ct_option_desc ct_options[CT_OPT_COUNT] = {
	[CT_OPT_OUTPUT] = {"CUMTRACE_OUTPUT", 0, 0, 0, 1, NULL},
	[CT_OPT_STACK_DEPTH] = {"CUMTRACE_STACK_DEPTH", 32, 0, CT_STACK_MAX, 0, NULL},
	[CT_OPT_BUFFER_MB] = {"CUMTRACE_BUFFER_MB", 64, 1, 65536, 0, NULL},
	[CT_OPT_DROP] = {"CUMTRACE_DROP", 0, 0, 1, 0, NULL},
	[CT_OPT_FLUSH_MS] = {"CUMTRACE_FLUSH_MS", 50, 1, 100, 0, NULL},
	[CT_OPT_DISABLE] = {"CUMTRACE_DISABLE", 0, 0, 1, 0, NULL},
	[CT_OPT_MANIFEST] = {"CUMTRACE_MANIFEST", 0, 0, 0, 1, NULL},
	[CT_OPT_QUIET] = {"CUMTRACE_QUIET", 0, 0, 1, 0, NULL},
	[CT_OPT_BACKEND] = {"CUMTRACE_BACKEND", 0, 0, 0, 1, NULL},
	[CT_OPT_COMPRESS] = {"CUMTRACE_COMPRESS", 1, 0, 1, 0, NULL},
	[CT_OPT_CLOCK] = {"CUMTRACE_CLOCK", 0, 0, 0, 1, NULL},
	[CT_OPT_STACK_CACHE] = {"CUMTRACE_STACK_CACHE", 1, 0, 1, 0, NULL},
	[CT_OPT_TORCH] = {"CUMTRACE_TORCH", 1, 0, 2, 0, NULL},
	[CT_OPT_PYTHON_BOOT] = {"CUMTRACE_PYTHON_BOOT", 1, 0, 1, 0, NULL},
	/* ---- the memory no allocation call shows (issue 19 §6) ---- */
	[CT_OPT_MEMSAMPLE_MS] = {"CUMTRACE_MEMSAMPLE_MS", 100, 0, 3600000, 0, NULL},
	/* ---- diagnostics ---- */
	[CT_OPT_SELFTIME] = {"CUMTRACE_SELFTIME", 0, 0, 1, 0, NULL},
	/* ---- packed events (issue 15) ---- */
	[CT_OPT_PACK] = {"CUMTRACE_PACK", 1, 0, 1, 0, NULL},
	/* ---- the cost of a traced call (issue 16) ---- */
	[CT_OPT_HUGE_PAGES] = {"CUMTRACE_HUGE_PAGES", 1, 0, 1, 0, NULL},
};

static _Atomic int ct_options_done;
static _Atomic int ct_warned_bad_option;

void ct_options_init(void)
{
	if (atomic_load_explicit(&ct_options_done, memory_order_acquire))
		return;
	for (int i = 0; i < CT_OPT_COUNT; i++) {
		struct ct_option_desc *d = &ct_options[i];
		const char *s = getenv(d->env);
		ct_option_values[i] = d->def;
		if (d->is_string) {
			d->str = (s && *s) ? s : NULL;
			continue;
		}
		if (!s || !*s)
			continue;
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (errno || *end || v < d->min || v > d->max) {
			ct_warn_once(&ct_warned_bad_option,
				     "ignoring %s=%s (want an integer %ld..%ld); using %ld", d->env,
				     s, d->min, d->max, d->def);
			continue;
		}
		ct_option_values[i] = v;
	}
	atomic_store_explicit(&ct_options_done, 1, memory_order_release);
}

const char *ct_option_str(enum ct_option opt)
{
	return ct_options[opt].str;
}

const char *ct_option_env(enum ct_option opt)
{
	return ct_options[opt].env;
}

/* Append n bytes of s to out[*len], keeping room for the NUL. */
static int ct_append(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > cap)
		return -1;
	memcpy(out + *len, s, n);
	*len += n;
	out[*len] = 0;
	return 0;
}

int ct_expand_template(const char *tmpl, char *out, size_t cap)
{
	size_t len = 0;
	char num[32];
	if (cap == 0)
		return -1;
	out[0] = 0;
	for (const char *p = tmpl; *p; p++) {
		if (*p != '%' || !p[1]) {
			if (ct_append(out, cap, &len, p, 1))
				return -1;
			continue;
		}
		p++;
		const char *piece = NULL;
		size_t n = 0;
		if (*p == 'p') {
			n = (size_t)snprintf(num, sizeof num, "%d", (int)getpid());
			piece = num;
		} else if (*p == 'h') {
			static char host[256];
			if (gethostname(host, sizeof host - 1) != 0)
				strcpy(host, "unknown");
			host[sizeof host - 1] = 0;
			piece = host;
			n = strlen(host);
		} else if (*p == 'q' && p[1] == '{') {
			const char *close = strchr(p + 2, '}');
			if (!close)
				return -1;
			char name[128];
			size_t nl = (size_t)(close - (p + 2));
			if (nl == 0 || nl >= sizeof name)
				return -1;
			memcpy(name, p + 2, nl);
			name[nl] = 0;
			piece = getenv(name);
			if (!piece)
				piece = "";
			n = strlen(piece);
			p = close;
		} else if (*p == '%') {
			piece = "%";
			n = 1;
		} else {
			/* Unknown escape: keep it literally. */
			if (ct_append(out, cap, &len, p - 1, 2))
				return -1;
			continue;
		}
		if (ct_append(out, cap, &len, piece, n))
			return -1;
	}
	return 0;
}

long ct_read_small_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	for (;;) {
		ssize_t k = read(fd, buf + len, cap - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	buf[len] = 0;
	return (long)len;
}

/*
 * CUMTRACE_QUIET, read on the first warning: a warning can come before the
 * options are (a bad value of an option read before it).
 */
static int ct_quiet(void)
{
	static _Atomic int quiet = -1;
	int q = atomic_load_explicit(&quiet, memory_order_relaxed);
	if (q < 0) {
		const char *s = getenv("CUMTRACE_QUIET");
		q = s && s[0] == '1' && !s[1];
		atomic_store_explicit(&quiet, q, memory_order_relaxed);
	}
	return q;
}

void ct_warn_once(_Atomic int *key, const char *fmt, ...)
{
	if (atomic_exchange(key, 1) || ct_quiet())
		return;
	int saved = errno;
	char msg[1024]; /* the CUMTRACE_SELFTIME line takes about 600 */
	int n = snprintf(msg, sizeof msg, "cumtrace: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof msg - 2)
		n = (int)sizeof msg - 2;
	msg[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
	(void)w;
	errno = saved;
}
