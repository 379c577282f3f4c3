/*
 * The flamegraph command: where the bytes of the leaks (--of leaks, the
 * default), of the peak (--of peak: device bytes live at the peak) or of all
 * allocations (--of allocs: bytes allocated) come from.
 *
 * --format folded (the default), for flamegraph.pl and its kin: one line per
 * distinct stack, "root;...;leaf BYTES", root first, sorted, equal stacks
 * summed. The leaf is a pseudo frame "[API KIND]" naming the call; with
 * several dumps the root is "[pid N (argv)]". Frame names never hold ';' or
 * control characters (replaced by ':' and '?'). The values add up to the
 * report's totals: the leaks' bytes, the peak's device bytes, or the bytes
 * allocated over every kind.
 *
 * --format speedscope: the file format of https://www.speedscope.app
 * (schema https://www.speedscope.app/file-format-schema.json, types in
 * jlfwong/speedscope src/lib/file-format-spec.ts): frames shared by every
 * profile (name, file and line: a native function is one frame per line it
 * called from, as a Python function is), one "sampled" profile per dump in
 * unit "bytes", one sample per site (frame indexes, root first) weighted by
 * its bytes, the samples in time order (speedscope's "Time Order" view draws
 * them left to right): by the first allocation of the leak (--of leaks), or
 * of the site (peak, allocs: sites are numbered as first seen).
 *
 * Nothing is kept during the pass: sites, leaks and the peak snapshot of the
 * model are enough. Memory is proportional to sites x frames.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "base/util.h"
#include "model/pystack.h"
#include "render/render.h"

static const char *const of_names[] = {"leaks", "peak", "allocs"};

static const char *of_name(int of)
{
	return of >= 0 && of <= CT_FLAME_ALLOCS ? of_names[of] : of_names[0];
}

/* Every site with bytes allocated, largest first (caller frees). */
static struct ct_item *alloc_items(struct ct_model *const *ms, size_t nm, size_t *n)
{
	size_t total = 0, k = 0;
	for (size_t d = 0; d < nm; d++)
		total += ms[d]->nsites;
	struct ct_item *v = ct_xcalloc(total ? total : 1, sizeof *v);
	for (size_t d = 0; d < nm; d++)
		for (size_t i = 0; i < ms[d]->nsites; i++) {
			const struct ct_site *s = &ms[d]->sites[i];
			v[k++] = (struct ct_item){.m = ms[d],
						  .stack_id = s->stack_id,
						  .api = s->api,
						  .kind = s->kind,
						  .device = s->device,
						  .site = (uint32_t)i,
						  .count = s->allocs,
						  .bytes = s->bytes_allocated};
		}
	ct_items_sort(v, k);
	*n = k;
	return v;
}

/* The items --of asks for (caller frees). */
static struct ct_item *flame_items(const struct ct_report_opts *o, struct ct_model *const *ms,
				   size_t nm, size_t *n)
{
	switch (o->flame_of) {
	case CT_FLAME_PEAK:
		return ct_peak_items(ms, nm, n);
	case CT_FLAME_ALLOCS:
		return alloc_items(ms, nm, n);
	default:
		return ct_leak_items(ms, nm, n);
	}
}

/* ---- the frames of an item, root first ---------------------------------------------------- */

/*
 * One frame: its name, its file and line when known. The folded output
 * shows a Python frame's line (one frame per line, as in py-spy) and not a
 * native frame's (one frame whatever line of it called on, as in
 * stackcollapse); speedscope's frames carry both's lines.
 */
struct fl_frame {
	char name[512];
	const char *file;
	unsigned line;
	int python;
};

#define FL_MAX_FRAMES (CT_STACK_MAX + 2)

static struct ct_frame resolved[CT_STACK_MAX];

/* "[pid N (argv0 ...)]" */
static void proc_frame(const struct ct_model *m, struct fl_frame *f)
{
	size_t len = (size_t)snprintf(f->name, sizeof f->name, "[pid %" PRIu32, m->pid);
	for (size_t i = 0; i < m->argc && len < 200; i++)
		len += (size_t)snprintf(f->name + len, sizeof f->name - len, "%s%s", i ? " " : " (",
					m->argv[i]);
	if (len + 3 < sizeof f->name)
		snprintf(f->name + len, sizeof f->name - len, "%s]", m->argc ? ")" : "");
	f->file = NULL;
	f->line = 0;
	f->python = 0;
}

/*
 * The frames of item it, root first, in out (FL_MAX_FRAMES): the process
 * when with_proc, the stack, then the "[API KIND]" leaf. Returns the count.
 */
static size_t item_frames(const struct ct_item *it, int with_proc, struct fl_frame *out)
{
	size_t n = 0;
	memset(out, 0, sizeof *out * FL_MAX_FRAMES);
	struct ct_model *m = it->m;
	if (with_proc)
		proc_frame(m, &out[n++]);
	size_t nf = 0;
	if (!it->stack_id) {
		snprintf(out[n++].name, sizeof out->name, "[no stack]");
	} else if (!ct_frames_has(m, it->stack_id) ||
		   !(nf = ct_frames_resolve(m, it->stack_id, resolved, CT_STACK_MAX))) {
		snprintf(out[n++].name, sizeof out->name, "[stack #%" PRIu32 " missing]", it->stack_id);
	}
	for (size_t i = nf; i-- > 0;) {
		const struct ct_frame *fr = &resolved[i];
		struct fl_frame *f = &out[n++];
		if (fr->python)
			snprintf(f->name, sizeof f->name, "%s", fr->function ? fr->function : "?");
		else
			ct_frame_label(fr, 0, f->name, sizeof f->name);
		f->file = fr->file_short ? fr->file_short : fr->file;
		f->python = fr->python;
		f->line = f->file ? fr->line : 0;
	}
	struct fl_frame *leaf = &out[n++];
	if (ct_multi_device(m))
		snprintf(leaf->name, sizeof leaf->name, "[%s %s dev %d]", ct_api_name(it->api),
			 ct_kind_name(it->kind), it->device);
	else
		snprintf(leaf->name, sizeof leaf->name, "[%s %s]", ct_api_name(it->api),
			 ct_kind_name(it->kind));
	return n;
}

/* ---- folded ------------------------------------------------------------------------------ */

struct fl_line {
	char *stack;
	uint64_t bytes;
};

/* Append a frame name to buf, without ';' (which separates frames) or control characters. */
static char *append_name(char *buf, size_t *len, size_t *cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	buf = ct_xgrow(buf, cap, *len + n + 2, 1);
	for (size_t i = 0; i < n;) {
		size_t l = p[i] >= 0x80 ? ct_utf8_seq(p + i, n - i) : 1;
		if (!l) {
			buf[(*len)++] = '?'; /* not UTF-8 */
			i++;
			continue;
		}
		if (l == 1) {
			char c = (char)p[i];
			buf[(*len)++] = c == ';' ? ':' : (p[i] < 0x20 || p[i] == 0x7f) ? '?' : c;
		} else {
			memcpy(buf + *len, p + i, l);
			*len += l;
		}
		i += l;
	}
	buf[*len] = 0;
	return buf;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct fl_line *)a)->stack, ((const struct fl_line *)b)->stack);
}

static void render_folded(FILE *f, const struct ct_item *v, size_t n, int with_proc)
{
	static struct fl_frame frames[FL_MAX_FRAMES];
	struct fl_line *lines = ct_xcalloc(n ? n : 1, sizeof *lines);
	size_t nl = 0;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].bytes)
			continue;
		size_t nf = item_frames(&v[i], with_proc, frames);
		char *buf = NULL;
		size_t len = 0, cap = 0;
		for (size_t k = 0; k < nf; k++) {
			if (k) {
				buf = ct_xgrow(buf, &cap, len + 2, 1);
				buf[len++] = ';';
			}
			if (frames[k].python) {
				char label[1100];
				snprintf(label, sizeof label, "%.511s (%.500s:%u)", frames[k].name,
					 frames[k].file ? frames[k].file : "?", frames[k].line);
				buf = append_name(buf, &len, &cap, label);
			} else {
				buf = append_name(buf, &len, &cap, frames[k].name);
			}
		}
		lines[nl++] = (struct fl_line){buf, v[i].bytes};
	}
	if (nl)
		qsort(lines, nl, sizeof *lines, cmp_line);
	for (size_t i = 0; i < nl;) {
		uint64_t bytes = 0;
		size_t j = i;
		for (; j < nl && !strcmp(lines[j].stack, lines[i].stack); j++)
			bytes = ct_sat_add(bytes, lines[j].bytes);
		fprintf(f, "%s %" PRIu64 "\n", lines[i].stack, bytes);
		i = j;
	}
	for (size_t i = 0; i < nl; i++)
		free(lines[i].stack);
	free(lines);
}

/* ---- speedscope -------------------------------------------------------------------------- */

/* Frames shared by the profiles: (name, file, line) interned. */
struct fl_shared {
	struct fl_frame *v;
	char **files; /* owned copies of v[i].file */
	size_t n, cap, capfiles;
	struct ct_imap map;
};

static uint64_t frame_hash(const struct fl_frame *f)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *s = f->name; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	h = ct_hash2(h, f->line);
	for (const char *s = f->file ? f->file : ""; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return ct_mix64(h ^ (f->file != NULL));
}

static int frame_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct fl_frame *a = &((const struct fl_shared *)ctx)->v[idx], *b = key;
	if (strcmp(a->name, b->name) || a->line != b->line || !a->file != !b->file)
		return 0;
	return !a->file || !strcmp(a->file, b->file);
}

static uint32_t frame_index(struct fl_shared *sh, const struct fl_frame *f)
{
	uint64_t h = frame_hash(f);
	uint32_t i = ct_imap_get(&sh->map, h, frame_eq, sh, f);
	if (i != CT_IMAP_NONE)
		return i;
	sh->v = ct_xgrow(sh->v, &sh->cap, sh->n + 1, sizeof *sh->v);
	sh->files = ct_xgrow(sh->files, &sh->capfiles, sh->n + 1, sizeof *sh->files);
	i = (uint32_t)sh->n++;
	sh->v[i] = *f;
	sh->files[i] = f->file ? ct_xstrdup(f->file) : NULL;
	sh->v[i].file = sh->files[i];
	ct_imap_put(&sh->map, h, i);
	return i;
}

static void put_json_str(FILE *f, const char *s)
{
	ct_json_escape(f, s, strlen(s));
}

/* Items of one dump in time order: the leak's first allocation, or the site's number (sites are
 * numbered as first seen); then as listed (largest first). */
static int cmp_time(const void *a, const void *b)
{
	const struct ct_item *x = *(const struct ct_item *const *)a, *y = *(const struct ct_item *const *)b;
	uint64_t tx = x->leak ? x->leak->first_ts : x->site, ty = y->leak ? y->leak->first_ts : y->site;
	if (tx != ty)
		return tx < ty ? -1 : 1;
	return (x > y) - (x < y);
}

static void render_speedscope(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			      size_t nm, const struct ct_item *v, size_t n)
{
	static struct fl_frame frames[FL_MAX_FRAMES];
	struct fl_shared sh = {0};
	char title[600];
	const struct ct_item **order = ct_xcalloc(n ? n : 1, sizeof *order);
	fprintf(f, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
		   "\"exporter\":\"cumtrace-report@%s\",\n\"name\":\"cumtrace %s\",\n"
		   "\"activeProfileIndex\":0,\n\"profiles\":[",
		o->tool_version ? o->tool_version : "?", of_name(o->flame_of));
	for (size_t d = 0; d < nm; d++) {
		uint64_t total = 0;
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (v[i].m == ms[d] && v[i].bytes) {
				total = ct_sat_add(total, v[i].bytes);
				order[k++] = &v[i];
			}
		if (k > 1)
			qsort(order, k, sizeof *order, cmp_time);
		proc_frame(ms[d], &frames[0]);
		snprintf(title, sizeof title, "%s %s", frames[0].name, of_name(o->flame_of));
		fprintf(f, "%s\n{\"type\":\"sampled\",\"name\":", d ? "," : "");
		put_json_str(f, title);
		fprintf(f, ",\"unit\":\"bytes\",\"startValue\":0,\"endValue\":%" PRIu64 ",\n\"samples\":[",
			total);
		for (size_t i = 0; i < k; i++) {
			size_t nf = item_frames(order[i], 0, frames);
			fputs(i ? ",\n[" : "\n[", f);
			for (size_t j = 0; j < nf; j++)
				fprintf(f, "%s%" PRIu32, j ? "," : "", frame_index(&sh, &frames[j]));
			fputc(']', f);
		}
		fputs("],\n\"weights\":[", f);
		for (size_t i = 0; i < k; i++)
			fprintf(f, "%s%" PRIu64, i ? "," : "", order[i]->bytes);
		fputs("]}", f);
	}
	fputs("],\n\"shared\":{\"frames\":[", f);
	for (size_t i = 0; i < sh.n; i++) {
		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", f);
		put_json_str(f, sh.v[i].name);
		if (sh.v[i].file) {
			fputs(",\"file\":", f);
			put_json_str(f, sh.v[i].file);
		}
		if (sh.v[i].line)
			fprintf(f, ",\"line\":%u", sh.v[i].line);
		fputc('}', f);
	}
	fputs("]}}\n", f);
	for (size_t i = 0; i < sh.n; i++)
		free(sh.files[i]);
	free(sh.files);
	free(sh.v);
	free(order);
	ct_imap_free(&sh.map);
}

static void render_flamegraph(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			      size_t nm)
{
	size_t n;
	struct ct_item *v = flame_items(o, ms, nm, &n);
	if (o->format == CT_FMT_SPEEDSCOPE)
		render_speedscope(f, o, ms, nm, v, n);
	else
		render_folded(f, v, n, nm > 1);
	free(v);
}

const struct ct_report ct_report_flamegraph = {
	.render = render_flamegraph,
};
