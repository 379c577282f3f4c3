/* Shared rendering helpers of the reports (render.h). */
#include "render/render.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/classify.h"
#include "model/marks.h"
#include "model/pystack.h"


static int cmp_item(const void *a, const void *b)
{
	const struct ct_item *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (x->m->pid != y->m->pid)
		return x->m->pid < y->m->pid ? -1 : 1;
	if (x->leak && y->leak && x->leak->first_ts != y->leak->first_ts)
		return x->leak->first_ts < y->leak->first_ts ? -1 : 1;
	if (x->stack_id != y->stack_id)
		return x->stack_id < y->stack_id ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->api != y->api)
		return x->api < y->api ? -1 : 1;
	if (x->leak && y->leak) {
		if (x->leak->reason_op != y->leak->reason_op)
			return x->leak->reason_op < y->leak->reason_op ? -1 : 1;
		if (x->leak->reason_api != y->leak->reason_api)
			return x->leak->reason_api < y->leak->reason_api ? -1 : 1;
	}
	return 0;
}

void ct_items_sort(struct ct_item *v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_item);
}

struct ct_item *ct_leak_items(struct ct_model *const *ms, size_t nm, size_t *n)
{
	size_t total = 0;
	for (size_t i = 0; i < nm; i++)
		total += ms[i]->nleaks;
	struct ct_item *v = ct_xcalloc(total, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < nm; i++)
		for (size_t j = 0; j < ms[i]->nleaks; j++) {
			const struct ct_leak *l = &ms[i]->leaks[j];
			v[k++] = (struct ct_item){.m = ms[i],
					       .stack_id = l->stack_id,
					       .api = l->api,
					       .kind = l->kind,
					       .device = l->device,
					       .leak = l,
					       .count = l->count,
					       .bytes = l->bytes};
		}
	ct_items_sort(v, k);
	*n = k;
	return v;
}

struct ct_item *ct_peak_items(struct ct_model *const *ms, size_t nm, size_t *n)
{
	size_t total = 0;
	for (size_t i = 0; i < nm; i++)
		total += ms[i]->nsites;
	struct ct_item *v = ct_xcalloc(total, sizeof *v);
	size_t k = 0;
	for (size_t i = 0; i < nm; i++) {
		const struct ct_model *m = ms[i];
		if (!m->peak_seen)
			continue;
		for (size_t j = 0; j < m->nsites; j++) {
			const struct ct_site *s = &m->sites[j];
			if (!ct_kind_is_device_bytes(s->kind))
				continue;
			uint64_t c, b;
			ct_site_at_peak(m, s, &c, &b);
			if (!c)
				continue;
			v[k++] = (struct ct_item){.m = ms[i],
					       .stack_id = s->stack_id,
					       .api = s->api,
					       .kind = s->kind,
					       .device = s->device,
					       .site = (uint32_t)j,
					       .count = c,
					       .bytes = b};
		}
	}
	ct_items_sort(v, k);
	*n = k;
	return v;
}

struct ct_item ct_site_item(struct ct_model *m, const struct ct_site *s, uint64_t count,
			    uint64_t bytes)
{
	return (struct ct_item){.m = m,
				.stack_id = s->stack_id,
				.api = s->api,
				.kind = s->kind,
				.device = s->device,
				.site = (uint32_t)(s - m->sites),
				.count = count,
				.bytes = bytes};
}

struct ct_item *ct_site_items(struct ct_model *m, ct_site_weigh_fn weigh, void *ctx, size_t *n)
{
	struct ct_item *v = ct_xcalloc(m->nsites, sizeof *v);
	size_t k = 0;
	for (size_t j = 0; j < m->nsites; j++) {
		uint64_t c = 0, b = 0;
		if (weigh(ctx, m, &m->sites[j], &c, &b) && c)
			v[k++] = ct_site_item(m, &m->sites[j], c, b);
	}
	ct_items_sort(v, k);
	*n = k;
	return v;
}

size_t ct_items_shown(const struct ct_report_opts *o, size_t n)
{
	return o->top && o->top < n ? o->top : n;
}

void ct_text_items(FILE *f, const struct ct_report_opts *o, struct ct_model *m,
		   const struct ct_item *v, size_t n)
{
	char b1[32];
	int md = ct_multi_device(m);
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "#%-3zu %s in %" PRIu64 " allocation%s (%s, %s", i + 1,
			ct_fmt_bytes(v[i].bytes, b1, sizeof b1), v[i].count, ct_plural_s(v[i].count),
			ct_kind_name(v[i].kind), ct_api_name(v[i].api));
		if (md)
			fprintf(f, ", device %d", v[i].device);
		fputs(")\n", f);
		ct_text_stack(f, m, v[i].stack_id);
	}
	if (k < n) {
		uint64_t rest = 0;
		for (size_t i = k; i < n; i++)
			rest = ct_sat_add(rest, v[i].bytes);
		fprintf(f, "... and %zu more site%s: %s (--top 0 shows all)\n", n - k,
			ct_plural_s(n - k), ct_fmt_bytes(rest, b1, sizeof b1));
	}
}

/* ---- small formatting helpers -------------------------------------------------------- */

void ct_fmt_dur(uint64_t ns, char *buf, size_t cap)
{
	if (ns < 1000)
		snprintf(buf, cap, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, cap, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
}

void ct_put_safe(FILE *f, const char *s)
{
	if (s)
		ct_fput_safe(f, s, strlen(s));
}

/* "pid 1234 (python train.py)" */
void ct_put_proc(FILE *f, const struct ct_model *m)
{
	if (!m->have_process) {
		fputs("an unknown process (no process record)", f);
		return;
	}
	fprintf(f, "pid %" PRIu32 " (", m->pid);
	size_t len = 0;
	if (m->argc) {
		for (size_t i = 0; i < m->argc && len < 200; i++) {
			if (i)
				fputc(' ', f);
			size_t l = strlen(m->argv[i]);
			if (len + l > 200) {
				ct_fput_safe(f, m->argv[i], 200 - len);
				fputs("...", f);
				len = 201;
				break;
			}
			ct_fput_safe(f, m->argv[i], l);
			len += l + 1;
		}
	} else if (m->exe) {
		ct_put_safe(f, m->exe);
	} else {
		fputc('?', f);
	}
	fputc(')', f);
}

int ct_multi_device(const struct ct_model *m)
{
	int dev = 0, seen = 0;
	for (size_t i = 0; i < m->nkd; i++) {
		if (!m->kd[i].allocations)
			continue;
		if (seen && m->kd[i].device != dev)
			return 1;
		dev = m->kd[i].device;
		seen = 1;
	}
	return 0;
}

const char *ct_signal_drops_text(uint64_t n)
{
	return ct_plural(n, "call made inside a signal handler was", "calls made inside signal handlers were");
}

const char *ct_record_drops_text(uint64_t n)
{
	return ct_plural(n,
			 "mark, counter or memory sample was not recorded (ring buffers full): "
			 "steps, counters and the device memory line may miss it",
			 "marks, counters or memory samples were not recorded (ring buffers full): "
			 "steps, counters and the device memory line may miss them");
}

const char *ct_pauses_text(const struct ct_model *m)
{
	static char buf[200];
	snprintf(buf, sizeof buf,
		 "tracing was paused %" PRIu64 " time%s for %.3f s in all (cumtrace_bench_pause, a "
		 "measurement of cumtrace's own cost): calls made then were not recorded",
		 m->pauses, ct_plural_s(m->pauses), (double)m->paused_ns / 1e9);
	return buf;
}

void ct_imports_put_text(FILE *f, const struct ct_imports *im)
{
	char b1[32], b2[32], b3[32];
	if (!ct_imports_any(im))
		return;
	fprintf(f,
		"  imported (another process's memory, not this one's allocations): %" PRIu64
		" import%s, %" PRIu64 " mapping%s, %s mapped in; %" PRIu64 " released; live at exit %" PRIu64
		" (%s)\n",
		im->imports, ct_plural_s(im->imports), im->maps, ct_plural_s(im->maps),
		ct_fmt_bytes(im->bytes, b1, sizeof b1), im->releases, im->live_at_exit,
		ct_fmt_bytes(im->live_bytes_at_exit, b2, sizeof b2));
	fprintf(f, "  shared: %" PRIu64 " export%s (%s), %" PRIu64 " handle retain%s (%" PRIu64 " released)\n",
		im->exports, ct_plural_s(im->exports), ct_fmt_bytes(im->exported_bytes, b3, sizeof b3),
		im->retains, ct_plural_s(im->retains), im->retain_releases);
	if (im->mc_created || im->mc_binds || im->mc_devices || im->mc_unbinds)
		fprintf(f,
			"  multicast: %" PRIu64 " object%s (%s), %" PRIu64 " released, %" PRIu64
			" live at exit; %" PRIu64 " device%s added, %" PRIu64 " bind%s (%s), %" PRIu64
			" unbind%s\n",
			im->mc_created, ct_plural_s(im->mc_created), ct_fmt_bytes(im->mc_bytes, b1, sizeof b1),
			im->mc_released, im->mc_live_at_exit, im->mc_devices, ct_plural_s(im->mc_devices),
			im->mc_binds, ct_plural_s(im->mc_binds), ct_fmt_bytes(im->mc_bind_bytes, b2, sizeof b2),
			im->mc_unbinds, ct_plural_s(im->mc_unbinds));
}

void ct_put_notes(FILE *f, const struct ct_model *m)
{
	if (m->read.status == CT_READ_TRUNCATED)
		fprintf(f,
			"  note: the dump is truncated at offset %" PRIu64
			" (the process died while writing); what came before is reported\n",
			m->read.truncated_offset);
	if (ct_model_header_only(m)) {
		fputs("  note: ", f);
		ct_put_safe(f, m->path ? m->path : "the dump");
		fputs(" holds only its header: " CT_HEADER_ONLY_WHY "\n", f);
	} else if (!m->end_seen)
		fputs("  note: no END record: the process crashed, was killed or is still running;"
		      " \"live at exit\" means live at the end of the dump\n",
		      f);
	if (m->dropped > m->dropped_signal)
		fprintf(f,
			"  WARNING: %" PRIu64
			" %s dropped (ring buffers full): THE DATA IS INCOMPLETE\n",
			m->dropped - m->dropped_signal,
			ct_plural(m->dropped - m->dropped_signal, "event was", "events were"));
	if (m->dropped_signal)
		fprintf(f,
			"  WARNING: %" PRIu64 " %s not recorded: THE DATA IS INCOMPLETE\n",
			m->dropped_signal, ct_signal_drops_text(m->dropped_signal));
	if (m->dropped_records)
		fprintf(f, "  WARNING: %" PRIu64 " %s\n", m->dropped_records,
			ct_record_drops_text(m->dropped_records));
	if (m->pauses)
		fprintf(f, "  WARNING: %s: THE DATA IS INCOMPLETE\n", ct_pauses_text(m));
}

/* ---- stacks ---------------------------------------------------------------------------- */

static struct ct_frame frames[CT_FRAMES_MAX];

const char *ct_frame_label(const struct ct_frame *fr, int with_line, char *buf, size_t cap)
{
	if (fr->python)
		snprintf(buf, cap, "%s (%s:%u)", fr->function ? fr->function : "?",
			 fr->file ? fr->file : "?", fr->line);
	else if (fr->function && with_line && fr->file && fr->line)
		snprintf(buf, cap, "%s (%s:%u)", fr->function,
			 fr->file_short ? fr->file_short : fr->file, fr->line);
	else if (fr->function)
		snprintf(buf, cap, "%s", fr->function);
	else if (fr->module)
		snprintf(buf, cap, "%s+0x%" PRIx64, fr->module_name ? fr->module_name : fr->module,
			 fr->offset);
	else
		snprintf(buf, cap, "0x%" PRIx64, fr->ip);
	return buf;
}

/* Append n bytes of s to out[*o] when they fit before the terminator's byte; 0 when not. */
static int cxx_put(char *out, size_t *o, size_t cap, const char *s, size_t n)
{
	if (*o + n >= cap)
		return 0;
	memcpy(out + *o, s, n);
	*o += n;
	return 1;
}

const char *ct_short_cxx(const char *name, char *out, size_t cap)
{
	size_t o = 0;
	int angle = 0, paren = 0, fits = 1;
	if (!cap)
		return name;
	for (const char *p = name; *p && fits; p++) {
		if (!angle && !paren && !strncmp(p, "operator", 8)) {
			/* "operator<<", "operator()": the operator's own symbols stay */
			size_t n = 8;
			if (!strncmp(p + n, "()", 2) || !strncmp(p + n, "[]", 2))
				n += 2;
			for (int k = 0; k < 3 && p[n] && strchr("<>=!+-*/%^&|~,", p[n]); k++)
				n++;
			fits = cxx_put(out, &o, cap, p, n);
			p += n - 1;
		} else if (*p == '(' && !angle && !paren && !strncmp(p, "(anonymous namespace)", 21)) {
			fits = cxx_put(out, &o, cap, p, 21);
			p += 20;
		} else if (*p == '(' && !angle) {
			paren++;
		} else if (*p == ')' && paren) {
			paren--;
		} else if (paren) {
			continue;
		} else if (*p == '<') {
			if (!angle++)
				fits = cxx_put(out, &o, cap, "<...>", 5);
		} else if (*p == '>' && angle) {
			angle--;
		} else if (!angle) {
			fits = cxx_put(out, &o, cap, p, 1);
		}
	}
	while (o && out[o - 1] == ' ')
		o--;
	if (o >= 6 && !strncmp(out + o - 6, " const", 6))
		o -= 6;
	out[o] = 0;
	return out;
}

/* ---- text stacks: the user's frames, the libraries' folded ---------------------------------- */

static int stack_full; /* --full-stacks */

void ct_stack_set_full(int on)
{
	stack_full = on;
}

/* "      ... 24 frames in libtorch_cpu.so, libc10_cuda.so" for frames [i, j) */
static void put_folded(FILE *f, const struct ct_frame *v, size_t i, size_t j)
{
	const char *names[3];
	size_t nn = 0, more = 0;
	for (size_t k = i; k < j; k++) {
		const char *n = v[k].module_name ? v[k].module_name : "?";
		size_t x = 0;
		while (x < nn && strcmp(names[x], n))
			x++;
		if (x < nn)
			continue;
		if (nn < 3)
			names[nn++] = n;
		else
			more++;
	}
	fprintf(f, "      ... %zu frame%s in ", j - i, ct_plural_s(j - i));
	for (size_t x = 0; x < nn; x++) {
		if (x)
			fputs(", ", f);
		ct_put_safe(f, names[x]);
	}
	if (more)
		fprintf(f, " and %zu more", more);
	fprintf(f, " (--full-stacks shows %s)\n", ct_plural(j - i, "it", "them"));
}

/* ---- paths and site labels: what people are shown ------------------------------------------ */

/* p lexically normalised into out: "." components and repeated slashes dropped, "dir/.." pairs
 * removed ("/.." stays "/"), "." when nothing is left; truncated to cap. */
static void norm_path(const char *p, char *out, size_t cap)
{
	size_t o = 0, base = 0;
	if (*p == '/' && cap > 1)
		out[o++] = '/';
	base = o;
	out[o] = 0;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t l = (size_t)(e - p);
		if (!l)
			break;
		if (l == 1 && p[0] == '.') {
			p = e;
			continue;
		}
		if (l == 2 && p[0] == '.' && p[1] == '.') {
			size_t s = o;
			while (s > base && out[s - 1] != '/')
				s--;
			int up = o - s == 2 && out[s] == '.' && out[s + 1] == '.';
			if (o > base && !up) {
				o = s > base ? s - 1 : base;
				out[o] = 0;
				p = e;
				continue;
			}
			if (base) { /* "/.." is "/" */
				p = e;
				continue;
			}
		}
		if (o > base && o + 1 < cap)
			out[o++] = '/';
		size_t room = cap - 1 - o, k = l < room ? l : room;
		memcpy(out + o, p, k);
		o += k;
		out[o] = 0;
		p = e;
	}
	if (!o && cap > 1)
		snprintf(out, cap, ".");
}

const char *ct_display_path(const char *path, const char *cwd, char *buf, size_t cap)
{
	if (!cap)
		return "";
	norm_path(path ? path : "?", buf, cap);
	/* an installed package: from the package's folder on */
	const char *pkg = NULL;
	for (const char *q = buf; (q = strstr(q, "-packages/")); q++)
		if (q - buf >= 5 && (!strncmp(q - 5, "/site", 5) || !strncmp(q - 5, "/dist", 5)) && q[10])
			pkg = q + 10;
	if (pkg) {
		memmove(buf, pkg, strlen(pkg) + 1);
		return buf;
	}
	if (buf[0] == '/' && cwd && cwd[0] == '/') {
		char c[4096];
		norm_path(cwd, c, sizeof c);
		size_t l = strlen(c);
		if (l > 1 && !strncmp(buf, c, l) && buf[l] == '/' && buf[l + 1])
			memmove(buf, buf + l + 1, strlen(buf + l + 1) + 1);
	}
	return buf;
}

/* The file of fr as shown: a native frame's relative to its compilation directory when under it. */
static const char *frame_file_shown(const struct ct_model *m, const struct ct_frame *fr, char *buf, size_t cap)
{
	const char *file = !fr->python && fr->file_short ? fr->file_short : fr->file;
	return file ? ct_display_path(file, m ? m->cwd : NULL, buf, cap) : NULL;
}

const char *ct_frame_site_label(const struct ct_model *m, const struct ct_frame *fr, char *buf, size_t cap)
{
	char name[512], path[1024];
	const char *fn = fr->function ? fr->function : "?";
	if (!fr->python && fr->function && strpbrk(fr->function, "<("))
		fn = ct_short_cxx(fr->function, name, sizeof name);
	const char *file = frame_file_shown(m, fr, path, sizeof path);
	if (file && (fr->line || fr->python))
		snprintf(buf, cap, "%s (%s:%u)", fn, file, fr->line);
	else if (fr->module && fr->function)
		snprintf(buf, cap, "%s (%s+0x%" PRIx64 ")", fn, fr->module_name ? fr->module_name : fr->module,
			 fr->offset);
	else if (fr->module)
		snprintf(buf, cap, "%s+0x%" PRIx64, fr->module_name ? fr->module_name : fr->module, fr->offset);
	else
		snprintf(buf, cap, "%s", fn);
	return buf;
}

static struct ct_frame label_frames[CT_ANALYSIS_FRAMES];

/* FNV-1a of a frame's function, file and line, after h: frames with one key read the same. */
static uint64_t label_key(uint64_t h, const struct ct_frame *fr)
{
	const char *parts[2] = {fr->function ? fr->function : "", fr->file ? fr->file : fr->module_name};
	for (int i = 0; i < 2; i++)
		for (const char *c = parts[i] ? parts[i] : "";; c++) {
			h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
			if (!*c)
				break;
		}
	h = (h ^ fr->line) * 0x100000001b3ull;
	h = (h ^ (uint64_t)fr->python) * 0x100000001b3ull;
	return h ? h : 1;
}

#define LABEL_DEPTH 16 /* callers a label looks at to tell sites that share a helper apart */

/*
 * For one model: the keys of each site's label frame and of its label frame
 * with its first 1..LABEL_DEPTH user callers, and whether more than one stack
 * has each. A label frame that several stacks share (a helper called from
 * several places) is labelled with the first caller that makes its chain
 * unique. Built on the model's first label, one pass over its sites, and
 * kept in the model (m->labels).
 */
struct label_slot {
	uint64_t key;
	uint32_t stack_id;
	int shared;
};
struct label_table {
	struct label_slot *v;
	size_t mask, used;
};

static struct label_slot *label_slot(struct label_table *t, uint64_t key)
{
	size_t i = (size_t)key & t->mask;
	while (t->v[i].key && t->v[i].key != key)
		i = (i + 1) & t->mask;
	return &t->v[i];
}

static void label_add(struct label_table *t, uint64_t key, uint32_t stack_id)
{
	if (2 * (t->used + 1) > t->mask + 1) {
		struct label_table g = {.mask = 2 * t->mask + 1};
		g.v = ct_xcalloc(g.mask + 1, sizeof *g.v);
		for (size_t i = 0; i <= t->mask; i++)
			if (t->v[i].key)
				*label_slot(&g, t->v[i].key) = t->v[i];
		g.used = t->used;
		free(t->v);
		*t = g;
	}
	struct label_slot *s = label_slot(t, key);
	if (!s->key) {
		*s = (struct label_slot){.key = key, .stack_id = stack_id};
		t->used++;
	} else if (s->stack_id != stack_id) {
		s->shared = 1;
	}
}

static void label_table_free(void *p)
{
	struct label_table *t = p;
	if (t)
		free(t->v);
	free(t);
}

static struct label_table *label_table_of(struct ct_model *m)
{
	if (m->labels)
		return m->labels;
	struct label_table *t = ct_xcalloc(1, sizeof *t);
	*t = (struct label_table){.v = ct_xcalloc(64, sizeof *t->v), .mask = 63};
	m->labels = t;
	m->labels_free = label_table_free;
	for (size_t j = 0; j < m->nsites; j++) {
		uint32_t id = m->sites[j].stack_id;
		size_t n = ct_analysis_frames(m, id, label_frames, CT_ANALYSIS_FRAMES);
		int u = ct_label_frame(label_frames, n);
		if (u < 0)
			continue;
		uint64_t key = label_key(0xcbf29ce484222325ull, &label_frames[u]);
		label_add(t, key, id);
		for (size_t i = (size_t)u + 1, d = 0; i < n && d < LABEL_DEPTH; i++)
			if (ct_frame_is_user(&label_frames[i])) {
				key = label_key(key, &label_frames[i]);
				label_add(t, key, id);
				d++;
			}
	}
	return t;
}

const struct ct_frame *ct_site_label(struct ct_model *m, uint32_t stack_id, char *buf, size_t cap)
{
	struct label_table *t = label_table_of(m);
	size_t n = ct_analysis_frames(m, stack_id, label_frames, CT_ANALYSIS_FRAMES);
	int u = ct_label_frame(label_frames, n);
	if (u < 0) {
		if (cap)
			buf[0] = 0;
		return NULL;
	}
	ct_frame_site_label(m, &label_frames[u], buf, cap);
	uint64_t key = label_key(0xcbf29ce484222325ull, &label_frames[u]);
	if (!label_slot(t, key)->shared)
		return &label_frames[u];
	/* a helper: the first caller that tells this site from the others (else the first caller) */
	size_t by = 0;
	for (size_t i = (size_t)u + 1, d = 0; i < n && d < LABEL_DEPTH; i++) {
		if (!ct_frame_is_user(&label_frames[i]))
			continue;
		if (!by)
			by = i;
		key = label_key(key, &label_frames[i]);
		d++;
		if (!label_slot(t, key)->shared) {
			by = i;
			break;
		}
	}
	size_t l = strlen(buf);
	if (by && l + 7 < cap) {
		memcpy(buf + l, " from ", 7);
		ct_frame_site_label(m, &label_frames[by], buf + l + 6, cap - l - 6);
	}
	return &label_frames[u];
}

void ct_text_site_label(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	char label[1024];
	if (!ct_site_label(m, stack_id, label, sizeof label))
		return;
	fputs("      site: ", f);
	ct_put_safe(f, label);
	fputc('\n', f);
}

void ct_json_site_label(struct ct_json *j, struct ct_model *m, uint32_t stack_id)
{
	char label[1024];
	const struct ct_frame *fr = ct_site_label(m, stack_id, label, sizeof label);
	ct_json_key(j, "label");
	if (!fr) {
		ct_json_null(j);
		ct_json_key(j, "label_frame");
		ct_json_null(j);
		return;
	}
	ct_json_str(j, label);
	ct_json_key(j, "label_frame");
	ct_json_obj(j);
	ct_json_kv_str(j, "function", fr->function);
	ct_json_kv_str(j, "file", fr->file);
	ct_json_kv_u64(j, "line", fr->line);
	ct_json_kv_bool(j, "python", fr->python);
	if (!fr->python)
		ct_json_kv_str(j, "module", fr->module);
	ct_json_obj_end(j);
}

void ct_csv_site_label(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	char label[1024];
	if (ct_site_label(m, stack_id, label, sizeof label))
		ct_csv_field(f, label);
}

static void put_frame(FILE *f, const struct ct_model *m, const struct ct_frame *fr);

void ct_text_stack(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	ct_text_site_label(f, m, stack_id);
	ct_text_frames(f, m, stack_id);
}

void ct_text_frames(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	if (!stack_id) {
		fputs("      (no stack recorded)\n", f);
		return;
	}
	if (!ct_frames_has(m, stack_id)) {
		fprintf(f, "      (stack #%" PRIu32 " is missing from the dump)\n", stack_id);
		return;
	}
	size_t n = ct_frames_resolve(m, stack_id, frames, CT_FRAMES_MAX);
	if (!n)
		fputs("      (empty stack)\n", f);
	if (stack_full) {
		for (size_t i = 0; i < n; i++)
			put_frame(f, m, &frames[i]);
		return;
	}
	n = ct_frames_to_main(frames, n);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && ct_frame_folds(&frames[j]))
			j++;
		if (j - i >= 2) {
			put_folded(f, frames, i, j);
			i = j;
			continue;
		}
		put_frame(f, m, &frames[i]);
		i++;
	}
}

static void put_frame(FILE *f, const struct ct_model *m, const struct ct_frame *fr)
{
	char path[1024];
	const char *file = frame_file_shown(m, fr, path, sizeof path);
	if (fr->python) {
		fputs("      py ", f);
		ct_put_safe(f, fr->function ? fr->function : "?");
		fputs(" (", f);
		ct_put_safe(f, file ? file : "?");
		fprintf(f, ":%u)\n", fr->line);
		return;
	}
	fputs("      at ", f);
	char shortname[512];
	if (fr->function)
		ct_put_safe(f, stack_full || !strpbrk(fr->function, "<(")
				       ? fr->function
				       : ct_short_cxx(fr->function, shortname, sizeof shortname));
	else
		fputc('?', f);
	if (file) {
		fputs(" (", f);
		ct_put_safe(f, file);
		if (fr->line)
			fprintf(f, ":%u", fr->line);
		fputc(')', f);
	}
	if (fr->module) {
		fputs("  in ", f);
		ct_put_safe(f, fr->module_name);
		if (!fr->file)
			fprintf(f, "+0x%" PRIx64, fr->offset);
		if (fr->build_id_mismatch)
			fputs(" (build id differs from the recorded one: not symbolized)", f);
	} else {
		fprintf(f, "  0x%" PRIx64, fr->ip);
	}
	if (fr->inlined)
		fputs("  (inlined)", f);
	fputc('\n', f);
}

void ct_json_stack(struct ct_json *j, struct ct_model *m, uint32_t stack_id)
{
	ct_json_arr(j);
	size_t n = stack_id ? ct_frames_resolve(m, stack_id, frames, CT_FRAMES_MAX) : 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_frame *fr = &frames[i];
		ct_json_obj(j);
		if (fr->python) {
			ct_json_kv_bool(j, "python", 1);
			ct_json_kv_str(j, "function", fr->function);
			ct_json_kv_str(j, "file", fr->file);
			ct_json_kv_u64(j, "line", fr->line);
			ct_json_obj_end(j);
			continue;
		}
		ct_json_kv_str(j, "function", fr->function);
		ct_json_kv_str(j, "file", fr->file);
		ct_json_kv_u64(j, "line", fr->line);
		ct_json_kv_str(j, "module", fr->module);
		ct_json_kv_u64(j, "offset", fr->offset);
		ct_json_kv_str(j, "build_id", fr->build_id);
		ct_json_kv_u64(j, "ip", fr->ip);
		ct_json_kv_bool(j, "build_id_mismatch", fr->build_id_mismatch);
		ct_json_kv_bool(j, "inlined", fr->inlined);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}

/* One CSV field, quoted when needed. */
const char *ct_more_devices(size_t more, char *buf, size_t cap)
{
	snprintf(buf, cap, "... and %zu more device%s, not shown one by one (the %d highest peaks are)",
		 more, ct_plural_s(more), CT_DEVICES_SHOWN);
	return buf;
}

void ct_csv_field(FILE *f, const char *s)
{
	if (!s)
		return;
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	/* a spreadsheet runs a cell that starts so as a formula (OWASP "CSV injection") */
	int formula = n && strchr("=+-@\t\r", s[0]);
	int plain = !formula && !strpbrk(s, ",\"\n\r");
	for (size_t i = 0, l; plain && i < n; i += l)
		plain = (l = p[i] < 0x80 ? 1 : ct_utf8_seq(p + i, n - i)) != 0;
	if (plain) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	if (formula)
		fputc('\'', f);
	for (size_t i = 0; i < n;) {
		size_t l = p[i] < 0x80 ? 1 : ct_utf8_seq(p + i, n - i);
		if (!l) {
			fprintf(f, "\\x%02x", p[i++]); /* not UTF-8: shown as ct_fput_safe does */
			continue;
		}
		if (p[i] == '"')
			fputc('"', f);
		fwrite(p + i, 1, l, f);
		i += l;
	}
	fputc('"', f);
}

/* The stack as one field: "func (file:line) in module;..." innermost first. */
void ct_csv_stack(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	size_t n = stack_id ? ct_frames_resolve(m, stack_id, frames, CT_FRAMES_MAX) : 0;
	size_t cap = 256, len = 0;
	char *buf = ct_xmalloc(cap);
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ct_frame *fr = &frames[i];
		char one[1024];
		if (fr->python)
			snprintf(one, sizeof one, "%s%s (%s:%u) [python]", i ? ";" : "",
				 fr->function ? fr->function : "?", fr->file ? fr->file : "?",
				 fr->line);
		else if (fr->file)
			snprintf(one, sizeof one, "%s%s (%s:%u) in %s", i ? ";" : "",
				 fr->function ? fr->function : "?",
				 fr->file_short ? fr->file_short : fr->file, fr->line,
				 fr->module_name ? fr->module_name : "?");
		else if (fr->module)
			snprintf(one, sizeof one, "%s%s in %s+0x%" PRIx64, i ? ";" : "",
				 fr->function ? fr->function : "?", fr->module_name, fr->offset);
		else
			snprintf(one, sizeof one, "%s? 0x%" PRIx64, i ? ";" : "", fr->ip);
		if (fr->inlined) {
			size_t o = strlen(one);
			snprintf(one + o, sizeof one - o, " [inlined]");
		}
		size_t l = strlen(one);
		buf = ct_xgrow(buf, &cap, len + l + 1, 1);
		memcpy(buf + len, one, l + 1);
		len += l;
	}
	ct_csv_field(f, buf);
	free(buf);
}

void ct_json_item(struct ct_json *j, const struct ct_item *it)
{
	ct_json_obj(j);
	ct_json_item_fields(j, it);
	ct_json_obj_end(j);
}

void ct_json_item_fields(struct ct_json *j, const struct ct_item *it)
{
	char reason[64];
	ct_json_kv_u64(j, "pid", it->m->pid);
	ct_json_kv_u64(j, "count", it->count);
	ct_json_kv_u64(j, "bytes", it->bytes);
	ct_json_kv_str(j, "kind", ct_kind_name(it->kind));
	ct_json_kv_str(j, "api", ct_api_name(it->api));
	if (it->leak) {
		ct_json_kv_str(j, "reason", ct_leak_reason(it->leak, reason, sizeof reason));
	}
	ct_json_kv_i64(j, "device", it->device);
	ct_json_kv_u64(j, "stack_id", it->stack_id);
	ct_json_site_label(j, it->m, it->stack_id);
	ct_json_key(j, "stack");
	ct_json_stack(j, it->m, it->stack_id);
}


void ct_json_items(struct ct_json *j, const struct ct_report_opts *o, const struct ct_item *v,
		   size_t n)
{
	ct_json_kv_u64(j, "sites_total", n);
	ct_json_key(j, "sites");
	ct_json_arr(j);
	for (size_t i = 0; i < ct_items_shown(o, n); i++)
		ct_json_item(j, &v[i]);
	ct_json_arr_end(j);
}

/* ---- devices ---- */

void ct_json_dev_key(struct ct_json *j, int dev)
{
	char k[16];
	snprintf(k, sizeof k, "%d", dev);
	ct_json_key(j, k);
}


static int cmp_i16(const void *a, const void *b)
{
	int16_t x = *(const int16_t *)a, y = *(const int16_t *)b;
	return (x > y) - (x < y);
}

int16_t *ct_devices_of(struct ct_model *const *ms, size_t nm, unsigned kind, size_t *n)
{
	size_t cap = 0, k = 0;
	int16_t *v = NULL;
	for (size_t d = 0; d < nm; d++)
		for (size_t i = 0; i < ms[d]->nkd; i++) {
			const struct ct_kd_stats *s = &ms[d]->kd[i];
			if (kind ? s->kind != kind : !ct_kind_is_device_bytes(s->kind))
				continue;
			v = ct_xgrow(v, &cap, k + 1, sizeof *v);
			v[k++] = s->device;
		}
	if (k)
		qsort(v, k, sizeof *v, cmp_i16);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
	return v;
}

size_t ct_find_dev(const int16_t *devs, size_t n, int16_t dev)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (devs[mid] < dev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void ct_render_per_format(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			      size_t n,
			      void (*text)(FILE *, const struct ct_report_opts *, struct ct_model *),
			      void (*csv)(FILE *, const struct ct_report_opts *,
					  struct ct_model *const *, size_t))
{
	switch (o->format) {
	case CT_FMT_CSV:
		csv(f, o, ms, n);
		break;
	default:
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputc('\n', f);
			text(f, o, ms[i]);
		}
		break;
	}
}

void ct_marks_put_summary(FILE *f, const struct ct_marklist *l, const struct ct_infer *inf)
{
	if (inf->on)
		fprintf(f,
			"  steps: %" PRIu64 " inferred from the allocations (no marks, no optimizer steps: each"
			" allocation of the first site of the %" PRIu64 " that most sites made)\n",
			inf->boundaries, inf->period);
	else if (l->steps[0] || l->steps[CT_STEP_EXPLICIT] || l->steps[CT_STEP_OPTIMIZER]) {
		fprintf(f, "  steps: %" PRIu64 " explicit (cumtrace.step), %" PRIu64 " from optimizer hooks",
			l->steps[CT_STEP_EXPLICIT], l->steps[CT_STEP_OPTIMIZER]);
		if (l->steps[0])
			fprintf(f, ", %" PRIu64 " of an unknown source", l->steps[0]);
		fputc('\n', f);
	}
	for (size_t i = 0; i < l->ncounters; i++) {
		const struct ct_counter_stat *c = &l->counters[i];
		char b1[32], b2[32];
		fputs("  counter ", f);
		ct_put_safe(f, c->name);
		if (c->device >= 0)
			fprintf(f, " (device %d)", c->device);
		if (strstr(c->name, "bytes"))
			fprintf(f, ": %" PRIu64 " sample%s, last %s, max %s\n", c->samples,
				ct_plural_s(c->samples), ct_fmt_bytes(c->last, b1, sizeof b1),
				ct_fmt_bytes(c->max, b2, sizeof b2));
		else
			fprintf(f, ": %" PRIu64 " sample%s, last %" PRIu64 ", max %" PRIu64 "\n",
				c->samples, ct_plural_s(c->samples), c->last, c->max);
	}
	if (l->counter_samples && l->ncounters >= CT_COUNTERS_MAX)
		fprintf(f, "  counters: %" PRIu64 " sample%s, the first %d names shown\n",
			l->counter_samples, ct_plural_s(l->counter_samples), CT_COUNTERS_MAX);
}

void ct_marks_json(struct ct_json *j, const struct ct_marklist *l, const struct ct_infer *inf)
{
	if (inf->on || l->steps[0] || l->steps[CT_STEP_EXPLICIT] || l->steps[CT_STEP_OPTIMIZER]) {
		ct_json_key(j, "steps");
		ct_json_obj(j);
		ct_json_kv_u64(j, "explicit", l->steps[CT_STEP_EXPLICIT]);
		ct_json_kv_u64(j, "optimizer", l->steps[CT_STEP_OPTIMIZER]);
		ct_json_kv_u64(j, "unknown", l->steps[0]);
		ct_json_kv_u64(j, "inferred", inf->on ? inf->boundaries : 0);
		if (inf->on)
			ct_json_kv_u64(j, "inferred_period", inf->period);
		ct_json_obj_end(j);
	}
	if (!l->ncounters)
		return;
	ct_json_key(j, "counters");
	ct_json_arr(j);
	for (size_t i = 0; i < l->ncounters; i++) {
		const struct ct_counter_stat *c = &l->counters[i];
		ct_json_obj(j);
		ct_json_kv_str(j, "name", c->name);
		ct_json_kv_i64(j, "device", c->device);
		ct_json_kv_u64(j, "samples", c->samples);
		ct_json_kv_u64(j, "last", c->last);
		ct_json_kv_u64(j, "max", c->max);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
}
