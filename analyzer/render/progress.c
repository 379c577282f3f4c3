/* The progress line while dumps are read (progress.h). */
#define _GNU_SOURCE
#include "render/progress.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A delay in ms from the environment: digits, at most an hour; else def. */
static uint64_t env_ms(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	if (!s || !*s || strlen(s) > 7)
		return def;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return def;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	return v <= 3600000 ? v : def;
}

void ct_progress_setup(struct ct_progress *p, FILE *out, uint64_t after_ms, uint64_t every_ms)
{
	memset(p, 0, sizeof *p);
	p->out = out;
	p->start_ns = now_ns();
	p->after_ns = after_ms * 1000000u;
	p->every_ns = every_ms * 1000000u;
}

void ct_progress_init(struct ct_progress *p)
{
	ct_progress_setup(p, isatty(STDERR_FILENO) ? stderr : NULL,
			  env_ms("CUMTRACE_REPORT_PROGRESS_AFTER_MS", CT_PROGRESS_AFTER_MS),
			  env_ms("CUMTRACE_REPORT_PROGRESS_MS", CT_PROGRESS_EVERY_MS));
}

void ct_progress_file(struct ct_progress *p, const char *path, size_t index, size_t count)
{
	const char *base = strrchr(path, '/');
	base = base && base[1] ? base + 1 : path;
	size_t n = strlen(base), skip = 0, k = 0;
	/* a long name keeps its end, where ranks and pids usually are */
	if (n > sizeof p->name - 1) {
		skip = n - (sizeof p->name - 4);
		memcpy(p->name, "...", 3);
		k = 3;
	}
	for (size_t i = skip; i < n; i++)
		p->name[k++] = base[i] >= 0x20 && base[i] < 0x7f ? base[i] : '?';
	p->name[k] = 0;
	p->index = index;
	p->count = count;
}

/* "950", "45.1k", "12.3M", "4.2G" */
static void fmt_count(uint64_t v, char *buf, size_t cap)
{
	if (v < 1000)
		snprintf(buf, cap, "%" PRIu64, v);
	else if (v < 1000000)
		snprintf(buf, cap, "%.1fk", (double)v / 1e3);
	else if (v < 1000000000)
		snprintf(buf, cap, "%.1fM", (double)v / 1e6);
	else
		snprintf(buf, cap, "%.1fG", (double)v / 1e9);
}

size_t ct_progress_format(char *buf, size_t cap, const char *name, size_t index, size_t count,
			  uint64_t bytes, uint64_t total, uint64_t events)
{
	char b1[32], b2[32], ev[32], nth[48] = "";
	fmt_count(events, ev, sizeof ev);
	if (count > 1)
		snprintf(nth, sizeof nth, " (%zu/%zu)", index, count);
	int n;
	if (total) {
		unsigned pct = bytes >= total ? 100 : (unsigned)((unsigned __int128)bytes * 100 / total);
		n = snprintf(buf, cap, "reading %s%s: %u%% (%s / %s), %s events", name, nth, pct,
			     ct_fmt_bytes(bytes, b1, sizeof b1), ct_fmt_bytes(total, b2, sizeof b2), ev);
	} else {
		n = snprintf(buf, cap, "reading %s%s: %s, %s events", name, nth,
			     ct_fmt_bytes(bytes, b1, sizeof b1), ev);
	}
	if (n < 0)
		return 0;
	return (size_t)n < cap ? (size_t)n : cap - 1;
}

void ct_progress_update(void *ctx, uint64_t bytes, uint64_t total, uint64_t events)
{
	struct ct_progress *p = ctx;
	if (!p || !p->out)
		return;
	uint64_t t = now_ns();
	if (t - p->start_ns < p->after_ns || (p->shown && t - p->last_ns < p->every_ns))
		return;
	char line[256];
	size_t n = ct_progress_format(line, sizeof line, p->name, p->index, p->count, bytes, total,
				      events);
	/* spaces over the rest of a longer line shown before */
	fprintf(p->out, "\r%s%*s", line, p->shown > n ? (int)(p->shown - n) : 0, "");
	fflush(p->out);
	if (n > p->shown)
		p->shown = n;
	p->last_ns = t;
}

void ct_progress_clear(struct ct_progress *p)
{
	if (!p->out || !p->shown)
		return;
	fprintf(p->out, "\r%*s\r", (int)p->shown, "");
	fflush(p->out);
	p->shown = 0;
}
