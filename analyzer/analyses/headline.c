/*
 * The headline command: the culprit of each question on one line, for the
 * last screen of `cumtrace run` (bin/cumtrace) and anyone who reads ten
 * seconds of a report:
 *
 *   leaks: LEAKED in N sites (CACHED held by caches); largest BYTES at SITE
 *   peak: BYTES at T ms, in PHASE; top site BYTES at SITE
 *   growth: N sites grew over S steps (SERIES); largest +BYTES at SITE
 *   N allocations failed out of memory: cumtrace-report oom DUMP
 *
 * A SITE is the stack's label frame (classify.h: ct_label_frame, the program's
 * own code, Python frames first), "file:line in function". The leaks line counts the
 * sites the leaks report calls leaked (suppressions and the baseline as
 * given); the peak line is the dump's highest device memory (all devices) and
 * the NVTX range or mark phase whose peak it was; the growth line says why
 * growth was not judged when it was not. Several dumps (ranks): the leaks and
 * growth of all of them, the highest peak of any.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "analyses/gate.h"
#include "analyses/growth.h"
#include "base/util.h"
#include "model/classify.h"
#include "model/framework.h"
#include "model/pystack.h"
#include "render/render.h"
#include "render/views.h"

static struct ct_frame hl_frames[CT_ANALYSIS_FRAMES];

/* "file:line in function" of the stack's label frame (render.h: ct_site_label, the frame every
 * report labels the site with; its innermost frame when none), the file's name alone. */
static void put_site(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	char label[16];
	const struct ct_frame *fr = stack_id ? ct_site_label(m, stack_id, label, sizeof label) : NULL;
	if (!fr && ct_analysis_frames(m, stack_id, hl_frames, CT_ANALYSIS_FRAMES))
		fr = &hl_frames[0];
	if (!fr) {
		fputs("(no stack)", f);
		return;
	}
	const char *file = fr->file_short ? fr->file_short : fr->file;
	if (file) {
		const char *slash = strrchr(file, '/');
		ct_put_safe(f, slash ? slash + 1 : file);
		fprintf(f, ":%u", fr->line);
	} else {
		ct_put_safe(f, fr->module_name ? fr->module_name : "??");
	}
	char name[256];
	fputs(" in ", f);
	ct_put_safe(f, fr->python ? (fr->function ? fr->function : "?") : ct_frame_label(fr, 0, name, sizeof name));
}

static void line_leaks(FILE *f, const struct ct_assessment *a)
{
	char b1[32], b2[32], b3[32];
	const struct ct_finding *top = NULL;
	struct ct_tally shown = {0}, cached = {0};
	for (size_t i = 0; i < a->nleak; i++) {
		const struct ct_finding *x = &a->v[i];
		if (x->supp >= 0 || x->in_baseline)
			continue;
		if (x->cls == CT_CLASS_LEAKED) {
			ct_tally_add(&shown, x);
			if (!top)
				top = x; /* leak groups come largest first */
		} else if (x->cls == CT_CLASS_CACHE) {
			ct_tally_add(&cached, x);
		}
	}
	if (!top) {
		fprintf(f, "leaks: none leaked (held by allocator caches: %s)\n",
			cached.sites ? ct_fmt_bytes(cached.bytes, b1, sizeof b1) : "none");
		return;
	}
	fprintf(f, "leaks: %s leaked in %" PRIu64 " site%s (held by allocator caches: %s); largest %s at ",
		ct_fmt_bytes(shown.bytes, b1, sizeof b1), shown.sites, ct_plural_s(shown.sites),
		cached.sites ? ct_fmt_bytes(cached.bytes, b2, sizeof b2) : "none",
		ct_fmt_bytes(top->it.bytes, b3, sizeof b3));
	put_site(f, top->it.m, top->it.stack_id);
	fputc('\n', f);
}

static void line_peak(FILE *f, struct ct_model *const *ms, size_t n)
{
	char b1[32], b2[32];
	struct ct_model *m = NULL;
	for (size_t d = 0; d < n; d++)
		if (ms[d]->peak_seen && (!m || ms[d]->peak_bytes > m->peak_bytes))
			m = ms[d];
	if (!m) {
		fputs("peak: no device memory allocated\n", f);
		return;
	}
	fprintf(f, "peak: %s at %.1f ms", ct_fmt_bytes(m->peak_bytes, b1, sizeof b1),
		(double)ct_model_since_start(m, m->peak_ts) / 1e6);
	if (n > 1)
		fprintf(f, " (pid %" PRIu32 ")", m->pid);
	ct_put_peak_when(f, m);
	size_t ni = 0;
	struct ct_item *items = ct_peak_items(&m, 1, &ni);
	if (ni) {
		fprintf(f, "; top site %s at ", ct_fmt_bytes(items[0].bytes, b2, sizeof b2));
		put_site(f, m, items[0].stack_id);
	}
	free(items);
	fputc('\n', f);
}

static void line_growth(FILE *f, struct ct_model *const *ms, size_t n, const struct ct_assessment *a)
{
	char b1[32];
	const struct ct_finding *top = NULL;
	uint64_t sites = 0;
	for (size_t i = a->nleak; i < a->n; i++) {
		if (a->v[i].supp >= 0 || a->v[i].in_baseline)
			continue;
		sites++;
		if (!top || a->v[i].growth->growth > top->growth->growth)
			top = &a->v[i];
	}
	const struct ct_growth_result *g = NULL;
	for (size_t d = 0; d < n && !g; d++) {
		const struct ct_growth_result *r = ct_growth_get(ms[d]);
		if (ct_growth_judged(r))
			g = r;
	}
	if (!g) {
		fputs("growth: not judged: no step boundaries, or fewer steps than --growth needs (mark steps: "
		      "cumtrace.step(), NVTX ranges, --steps)\n", f);
		return;
	}
	fprintf(f, "growth: ");
	if (!top) {
		fprintf(f, "none over %" PRIu64 " step%s (", g->series.boundaries - 1,
			ct_plural_s(g->series.boundaries - 1));
	} else {
		fprintf(f, "%" PRIu64 " site%s grew over %" PRIu64 " step%s (", sites, ct_plural_s(sites),
			g->series.boundaries - 1, ct_plural_s(g->series.boundaries - 1));
	}
	ct_put_safe(f, g->series.name);
	fputc(')', f);
	if (top) {
		fprintf(f, "; largest +%s at ", ct_fmt_bytes(top->growth->growth, b1, sizeof b1));
		put_site(f, top->it.m, top->it.stack_id);
	}
	fputc('\n', f);
}

static void line_ooms(FILE *f, struct ct_model *const *ms, size_t n)
{
	for (size_t d = 0; d < n; d++) {
		uint64_t count = 0, bytes = 0;
		size_t kept = 0;
		free(ct_view_ooms(ms[d], &kept, &count, &bytes));
		size_t fk = 0;
		uint64_t fw = 0;
		ct_fw_ooms(ms[d], &fk, &fw);
		count += fw;
		if (!count)
			continue;
		fprintf(f, "%" PRIu64 " allocation%s failed out of memory: cumtrace-report oom '", count,
			ct_plural_s(count));
		ct_put_safe(f, ms[d]->path ? ms[d]->path : "DUMP");
		fputs("'\n", f);
	}
}

static void render_headline(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n)
{
	struct ct_assessment *a = ct_assess(o, ms, n, NULL);
	line_leaks(f, a);
	line_peak(f, ms, n);
	line_growth(f, ms, n, a);
	line_ooms(f, ms, n);
	ct_assessment_free(a);
}

const struct ct_report ct_report_headline = {
	.uses = CT_USES(&ct_analysis_growth, &ct_analysis_phases, &ct_analysis_oom),
	.render = render_headline,
};
