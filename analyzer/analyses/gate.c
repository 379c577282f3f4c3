/* Findings (classes, suppressions, baseline) and the CI gate (gate.h). */
#include "analyses/gate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/suppress.h"
#include "model/framework.h"
#include "base/util.h"

static struct ct_frame frames[CT_ANALYSIS_FRAMES];

unsigned ct_fail_classes(const struct ct_report_opts *o)
{
	return o->fail_classes ? o->fail_classes : CT_CLASS_BIT(CT_CLASS_LEAKED);
}

int ct_gate_enabled(const struct ct_report_opts *o)
{
	return o->fail_on_leak || o->have_max_leak_bytes || o->have_max_peak_bytes;
}

void ct_gate_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	if (ct_fail_classes(o) & CT_CLASS_BIT(CT_CLASS_GROWTH))
		ct_growth_attach(m, o);
}

/* A growth site as an item: bytes = its growth. */
static struct ct_item growth_item(struct ct_model *m, const struct ct_growth_site *gs)
{
	const struct ct_site *s = &m->sites[gs->site];
	return (struct ct_item){.m = m,
				.stack_id = s->stack_id,
				.api = s->api,
				.kind = s->kind,
				.device = s->device,
				.count = s->live_count,
				.bytes = gs->growth};
}

/* Class, evidence, identity and user frame of a site. */
static void judge(struct ct_finding *f)
{
	size_t k = ct_analysis_frames(f->it.m, f->it.stack_id, frames, CT_ANALYSIS_FRAMES);
	ct_classify_frames(frames, k, f->it.leak && f->it.leak->reason_op, &f->why);
	if (f->why.cls == CT_CLASS_CACHE &&
	    (ct_kind_is_framework(f->it.kind) ||
	     (f->it.leak && f->it.leak->kept && ct_fw_torch_uncached(f->it.m) &&
	      !strcmp(ct_rule_get((size_t)f->why.rule)->allocator, "pytorch")))) {
		/* a block the framework handed out is the program's (a tensor, an array), whatever
		 * allocator frames are innermost, and so is an allocation of PyTorch without its
		 * cache (one tensor each) kept from step to step: never "cache". (PyTorch's own
		 * state made once, as the cuBLAS workspaces it allocates and never frees, stays
		 * "cache".) */
		f->why = (struct ct_class_result){CT_CLASS_LEAKED, -1, -1};
	}
	f->cls = f->growth ? CT_CLASS_GROWTH : f->why.cls;
	f->identity = ct_site_identity(f->cls, f->it.api, f->it.kind, frames, k);
	f->user_frame = ct_label_frame(frames, k);
	f->supp = -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The findings of ms, judged (no suppressions, no baseline). */
static struct ct_finding *collect(struct ct_model *const *ms, size_t nm, size_t *n, size_t *nleak)
{
	size_t nl;
	struct ct_item *items = ct_leak_items(ms, nm, &nl);
	size_t total = nl;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_growth_result *g = ct_growth_get(ms[d]);
		if (g)
			total += g->nsites;
	}
	struct ct_finding *v = ct_xcalloc(total ? total : 1, sizeof *v);
	for (size_t i = 0; i < nl; i++) {
		v[i].it = items[i];
		judge(&v[i]);
	}
	free(items);
	size_t k = nl;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_growth_result *g = ct_growth_get(ms[d]);
		for (size_t i = 0; g && i < g->nsites; i++) {
			v[k].it = growth_item(ms[d], &g->sites[i]);
			v[k].growth = &g->sites[i];
			judge(&v[k]);
			k++;
		}
	}
	*n = k;
	*nleak = nl;
	return v;
}

void ct_tally_add(struct ct_tally *t, const struct ct_finding *f)
{
	t->sites++;
	t->count += f->growth ? 0 : f->it.count;
	t->bytes = ct_sat_add(t->bytes, f->it.bytes);
}

struct ct_assessment *ct_assess(const struct ct_report_opts *o, struct ct_model *const *ms, size_t n,
				struct ct_model *base)
{
	struct ct_assessment *a = ct_xcalloc(1, sizeof *a);
	a->fail_classes = ct_fail_classes(o);
	if (!base)
		base = o->baseline;
	uint64_t *ids = NULL;
	size_t nids = 0;
	if (base) {
		size_t bn, bl;
		struct ct_finding *bv = collect(&base, 1, &bn, &bl);
		ids = ct_xcalloc(bn ? bn : 1, sizeof *ids);
		for (size_t i = 0; i < bn; i++)
			ids[nids++] = bv[i].identity;
		free(bv);
		qsort(ids, nids, sizeof *ids, cmp_u64);
	}
	a->v = collect(ms, n, &a->n, &a->nleak);
	a->nsupp = ct_supp_count(o->supp);
	a->supp_used = ct_xcalloc(a->nsupp ? a->nsupp : 1, sizeof *a->supp_used);
	for (size_t i = 0; i < a->n; i++) {
		struct ct_finding *f = &a->v[i];
		if (o->supp) {
			size_t k = ct_finding_frames(f, frames);
			f->supp = ct_supp_match(o->supp, f->cls, frames, k);
		}
		f->in_baseline = base && bsearch(&f->identity, ids, nids, sizeof *ids, cmp_u64) != NULL;
		f->fails = (a->fail_classes & CT_CLASS_BIT(f->cls)) && f->supp < 0 && !f->in_baseline;
		ct_tally_add(&a->cls[f->cls], f);
		if (f->supp >= 0) {
			ct_tally_add(&a->suppressed, f);
			ct_tally_add(&a->supp_used[f->supp], f);
		} else if (f->in_baseline) {
			ct_tally_add(&a->baselined, f);
		}
		if (f->fails) {
			ct_tally_add(&a->failing, f);
			if (!f->growth)
				ct_tally_add(&a->failing_leaks, f);
		}
	}
	free(ids);
	return a;
}

void ct_assessment_free(struct ct_assessment *a)
{
	if (!a)
		return;
	free(a->v);
	free(a->supp_used);
	free(a);
}

size_t ct_finding_frames(const struct ct_finding *f, struct ct_frame *out)
{
	return ct_analysis_frames(f->it.m, f->it.stack_id, out, CT_ANALYSIS_FRAMES);
}

void ct_finding_label(const struct ct_finding *f, char *buf, size_t cap)
{
	size_t k = ct_finding_frames(f, frames);
	const struct ct_frame *fr = NULL;
	if (f->user_frame >= 0 && (size_t)f->user_frame < k && frames[f->user_frame].function)
		fr = &frames[f->user_frame];
	for (size_t i = 0; !fr && i < k; i++)
		if (frames[i].function)
			fr = &frames[i];
	if (fr)
		snprintf(buf, cap, "%s", fr->function);
	else if (k && frames[0].module_name)
		snprintf(buf, cap, "%s+0x%" PRIx64, frames[0].module_name, frames[0].offset);
	else
		snprintf(buf, cap, "%s", f->it.stack_id ? "unknown frames" : "no stack");
}

void ct_finding_message(const struct ct_finding *f, char *buf, size_t cap)
{
	char b1[32], reason[64];
	if (f->growth) {
		const struct ct_growth_result *g = ct_growth_get(f->it.m);
		snprintf(buf, cap, "%s: +%s in the last %u steps of \"%s\", grew in %u (%s, %s)",
			 ct_class_name(f->cls), ct_fmt_bytes(f->growth->growth, b1, sizeof b1),
			 f->growth->steps, g && g->have_series ? g->series.name : "?", f->growth->grew,
			 ct_kind_name(f->it.kind), ct_api_name(f->it.api));
		return;
	}
	snprintf(buf, cap, "%s: %s in %" PRIu64 " allocation%s (%s, %s, %s)", ct_class_name(f->cls),
		 ct_fmt_bytes(f->it.bytes, b1, sizeof b1), f->it.count, ct_plural_s(f->it.count),
		 ct_kind_name(f->it.kind), ct_api_name(f->it.api),
		 ct_leak_reason(f->it.leak, reason, sizeof reason));
}

/* ---- the gate ----------------------------------------------------------------------------------- */

/* Append to reason, "; "-separated. */
__attribute__((format(printf, 3, 4))) static void add_reason(char *reason, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(reason);
	if (len && len + 2 < cap) {
		memcpy(reason + len, "; ", 3);
		len += 2;
	}
	if (len >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason + len, cap - len, fmt, ap);
	va_end(ap);
}

int ct_gate_over(uint64_t v, uint64_t limit)
{
	return v == CT_SAT || v > limit;
}

static const char *sat_note(uint64_t v)
{
	return v == CT_SAT ? " (saturated)" : "";
}

int ct_gate_check(const struct ct_report_opts *o, struct ct_model *const *ms, size_t n, char *reason,
		  size_t cap)
{
	reason[0] = 0;
	if (!ct_gate_enabled(o))
		return 0;
	struct ct_model *base = NULL;
	if ((ct_cmd_flags(o->cmd) & CT_CMD_BASELINE_FIRST) && n >= 2) {
		base = ms[0];
		ms++;
		n--;
	}
	struct ct_assessment *a = ct_assess(o, ms, n, base);
	char b1[32];
	if (o->fail_on_leak && (a->fail_classes & CT_CLASS_BIT(CT_CLASS_GROWTH)))
		for (size_t d = 0; d < n; d++) {
			/* growth was asked for and cannot be judged: said, never passed silently */
			const struct ct_growth_result *g = ct_growth_get(ms[d]);
			if (!ct_growth_judged(g))
				fprintf(stderr,
					"cumtrace-report: %s: growth not judged: %s (mark steps: cumtrace.step(), "
					"NVTX ranges, --steps)\n",
					ms[d]->path ? ms[d]->path : "(memory)",
					!g || !g->have_series ? "no step boundaries" : "fewer steps than --growth needs");
		}
	if (o->fail_on_leak && a->failing.sites) {
		struct ct_tally per[CT_CLASS_COUNT];
		memset(per, 0, sizeof per);
		for (size_t i = 0; i < a->n; i++)
			if (a->v[i].fails)
				ct_tally_add(&per[a->v[i].cls], &a->v[i]);
		char what[256] = "";
		for (int k = 0; k < CT_CLASS_COUNT; k++) {
			if (!per[k].sites)
				continue;
			size_t len = strlen(what);
			snprintf(what + len, sizeof what - len, "%s%s: %" PRIu64 " site%s, %s%s", len ? ", " : "",
				 ct_class_name(k), per[k].sites, ct_plural_s(per[k].sites),
				 k == CT_CLASS_GROWTH ? "+" : "", ct_fmt_bytes(per[k].bytes, b1, sizeof b1));
		}
		add_reason(reason, cap, "%" PRIu64 " leak site%s fail%s (%s), not suppressed%s",
			   a->failing.sites, ct_plural_s(a->failing.sites),
			   ct_plural(a->failing.sites, "s", ""), what,
			   (base || o->baseline) ? " and not in the baseline" : "");
	}
	if (o->have_max_leak_bytes && ct_gate_over(a->failing_leaks.bytes, o->max_leak_bytes))
		add_reason(reason, cap,
			   "%" PRIu64 " bytes%s in failing leak sites exceed --max-leak-bytes %" PRIu64,
			   a->failing_leaks.bytes, sat_note(a->failing_leaks.bytes), o->max_leak_bytes);
	if (o->have_max_peak_bytes)
		for (size_t d = 0; d < n; d++)
			if (ct_gate_over(ms[d]->peak_bytes, o->max_peak_bytes))
				add_reason(reason, cap,
					   "peak device memory %" PRIu64 " bytes (%s) of pid %" PRIu32
					   " exceeds --max-peak-bytes %" PRIu64,
					   ms[d]->peak_bytes, ct_fmt_bytes(ms[d]->peak_bytes, b1, sizeof b1),
					   ms[d]->pid, o->max_peak_bytes);
	ct_assessment_free(a);
	return reason[0] != 0;
}
