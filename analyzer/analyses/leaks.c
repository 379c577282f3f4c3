/*
 * The leaks command: allocations never freed, grouped by site, largest
 * first, each with its class (leaked, allocator cache, context teardown), the
 * suppression that matched it and whether the baseline has it; then the sites
 * that grew step after step, and the suppressions used. JUnit and SARIF are
 * in export_ci.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/analyses.h"
#include "analyses/gate.h"
#include "analyses/growth.h"
#include "analyses/ranks.h"
#include "analyses/suppress.h"
#include "base/util.h"
#include "exports/ci.h"
#include "model/framework.h"
#include "render/render.h"

static struct ct_frame frames[CT_ANALYSIS_FRAMES];

/* "cache (PyTorch caching allocator)" and the like, for a finding's headline. */
static void put_class(FILE *f, const struct ct_finding *x)
{
	fputs(ct_class_title(x->cls), f);
	if (x->why.rule >= 0)
		fprintf(f, " (%s)", ct_rule_get((size_t)x->why.rule)->label);
	if (x->in_baseline)
		fputs(", in the baseline", f);
}

/* Where a frame is, for the evidence line: "func in module" or "func (file:line)". */
static void put_frame_short(FILE *f, const struct ct_frame *fr)
{
	ct_put_safe(f, fr->function ? fr->function : "?");
	if (fr->python) {
		fputs(" (", f);
		ct_put_safe(f, fr->file ? fr->file : "?");
		fprintf(f, ":%u)", fr->line);
	} else if (fr->module_name) {
		fputs(" in ", f);
		ct_put_safe(f, fr->module_name);
	}
}

static void text_evidence(FILE *f, const struct ct_finding *x)
{
	if (x->why.rule < 0)
		return;
	const struct ct_rule *r = ct_rule_get((size_t)x->why.rule);
	size_t k = ct_finding_frames(x, frames);
	if (x->why.frame < 0 || (size_t)x->why.frame >= k)
		return;
	fprintf(f, "      why: frame #%d ", x->why.frame);
	put_frame_short(f, &frames[x->why.frame]);
	fprintf(f, " matches %s \"%s\"\n", ct_rule_field_name(r->field), r->pattern);
}

/* A leaked VMM allocation's address space (its mappings and their reservations): attributes, not memory. */
static void text_address_space(FILE *f, const struct ct_leak *l)
{
	char b1[32], b2[32];
	if (!l || (!l->va_mapped && !l->va_reserved))
		return;
	fprintf(f, "      its address space (not memory, not counted): mapped %s in %" PRIu64 " range%s, reserved %s in %" PRIu64
		" range%s\n",
		ct_fmt_bytes(l->va_mapped_bytes, b1, sizeof b1), l->va_mapped, ct_plural_s(l->va_mapped),
		ct_fmt_bytes(l->va_reserved_bytes, b2, sizeof b2), l->va_reserved, ct_plural_s(l->va_reserved));
}

/* Address space left reserved or mapped that no leaked allocation holds. */
static void text_address_only(FILE *f, const struct ct_model *m)
{
	char b1[32], b2[32];
	if (!m->va_only_reserved && !m->va_only_mapped)
		return;
	fprintf(f,
		"  address space still reserved (%" PRIu64 " range%s, %s) or mapped (%" PRIu64 " range%s, %s) that holds no "
		"leaked allocation: not memory, not counted\n",
		m->va_only_reserved, ct_plural_s(m->va_only_reserved),
		ct_fmt_bytes(m->va_only_reserved_bytes, b1, sizeof b1), m->va_only_mapped,
		ct_plural_s(m->va_only_mapped), ct_fmt_bytes(m->va_only_mapped_bytes, b2, sizeof b2));
}

static void json_address_space(struct ct_json *j, const struct ct_leak *l)
{
	if (!l || (!l->va_mapped && !l->va_reserved))
		return;
	ct_json_key(j, "address_space");
	ct_json_obj(j);
	ct_json_kv_u64(j, "mapped", l->va_mapped);
	ct_json_kv_u64(j, "mapped_bytes", l->va_mapped_bytes);
	ct_json_kv_u64(j, "reserved", l->va_reserved);
	ct_json_kv_u64(j, "reserved_bytes", l->va_reserved_bytes);
	ct_json_obj_end(j);
}

/* A name for a generated suppression: class, label, identity. */
static void supp_name(const struct ct_finding *x, char *buf, size_t cap)
{
	char label[128];
	ct_finding_label(x, label, sizeof label);
	snprintf(buf, cap, "%s-%s-%08" PRIx64, ct_class_name(x->cls), label, x->identity >> 32);
}

static void gen_block(FILE *f, const struct ct_finding *x, const char *indent)
{
	char name[192];
	supp_name(x, name, sizeof name);
	size_t k = ct_finding_frames(x, frames);
	ct_supp_write_block(f, indent, name, x->cls, frames, k);
}

static void text_tally(FILE *f, const char *what, const struct ct_tally *t, int growth)
{
	char b[32];
	if (!t->sites) {
		fprintf(f, "%s: none", what);
		return;
	}
	fprintf(f, "%s: %" PRIu64 " site%s, ", what, t->sites, ct_plural_s(t->sites));
	if (growth)
		fprintf(f, "+%s", ct_fmt_bytes(t->bytes, b, sizeof b));
	else
		fprintf(f, "%" PRIu64 " allocation%s, %s", t->count, ct_plural_s(t->count),
			ct_fmt_bytes(t->bytes, b, sizeof b));
}

static void text_growth(FILE *f, const struct ct_report_opts *o, struct ct_model *m,
			const struct ct_assessment *a, const struct ct_tally *cls)
{
	const struct ct_growth_result *g = ct_growth_get(m);
	char b1[32], b2[32], b3[32];
	if (!g || (!m->marks && !g->have_series))
		return;
	if (!g->have_series) {
		if (o->growth_steps) {
			fputs("growth: no step marks named \"", f);
			ct_put_safe(f, o->growth_steps);
			fputs("\"\n", f);
		} else {
			fputs("growth: no step boundaries among the marks\n", f);
		}
		return;
	}
	uint64_t steps = g->series.boundaries ? g->series.boundaries - 1 : 0;
	int stepk = g->series.kind == CT_SERIES_STEP || g->series.kind == CT_SERIES_OPTIMIZER ||
		    g->series.kind == CT_SERIES_INFERRED;
	if (g->optimizer_boundaries && g->series.kind != CT_SERIES_OPTIMIZER)
		fprintf(f, "growth: %" PRIu64 " step%s from optimizer hooks not used: explicit marks win\n",
			g->optimizer_boundaries, ct_plural_s(g->optimizer_boundaries));
	fputs("growth across \"", f);
	ct_put_safe(f, g->series.name);
	fprintf(f, "\" (%s", g->series.kind == CT_SERIES_INSTANT	? "instants"
			      : g->series.kind == CT_SERIES_STEP	? "explicit steps"
			      : g->series.kind == CT_SERIES_OPTIMIZER ? "steps from optimizer hooks"
			      : g->series.kind == CT_SERIES_INFERRED
				      ? "steps inferred from the allocations: no marks, no optimizer steps"
				      : "ranges");
	if (g->series.kind == CT_SERIES_RANGE)
		fprintf(f, " at depth %d", g->series.depth);
	else if (g->series.kind == CT_SERIES_STARTEND)
		fputs(" start/end", f);
	if (stepk)
		fprintf(f, ": %" PRIu64 " boundar%s", g->series.boundaries,
			ct_plural(g->series.boundaries, "y", "ies"));
	fprintf(f, ", %" PRIu64 " step%s; growing: live bytes rose in at least %u of the last %u steps): ",
		steps, ct_plural_s(steps), g->min_grew, g->window);
	if (!g->nsites) {
		fputs(steps < g->min_grew ? "too few steps\n" : "none\n", f);
		return;
	}
	if (!cls[CT_CLASS_GROWTH].sites) {
		fputs("none that is not suppressed\n", f);
		return;
	}
	fprintf(f, "%" PRIu64 " site%s, +%s\n", cls[CT_CLASS_GROWTH].sites,
		ct_plural_s(cls[CT_CLASS_GROWTH].sites),
		ct_fmt_bytes(cls[CT_CLASS_GROWTH].bytes, b1, sizeof b1));
	size_t shown = 0;
	for (size_t i = a->nleak; i < a->n; i++) {
		const struct ct_finding *x = &a->v[i];
		if (x->it.m != m || x->supp >= 0)
			continue;
		if (o->top && shown >= o->top) {
			fprintf(f, "... and more growing sites (--top 0 shows all)\n");
			break;
		}
		const struct ct_growth_site *gs = x->growth;
		fprintf(f, "#%-3zu +%s over the last %u steps, rose in %u (%s -> %s live) (%s, %s", ++shown,
			ct_fmt_bytes(gs->growth, b1, sizeof b1), gs->steps, gs->grew,
			ct_fmt_bytes(gs->live_before, b2, sizeof b2),
			ct_fmt_bytes(gs->live_last, b3, sizeof b3), ct_kind_name(x->it.kind),
			ct_api_name(x->it.api));
		if (ct_multi_device(m))
			fprintf(f, ", device %d", x->it.device);
		fputs(")", f);
		if (x->in_baseline)
			fputs(", in the baseline", f);
		fputc('\n', f);
		ct_text_stack(f, m, x->it.stack_id);
		if (o->gen_suppressions)
			gen_block(f, x, "");
	}
}

/* The classes' tallies on one line, then the suppressed and baseline ones when asked for. */
static void text_tallies(FILE *f, const struct ct_report_opts *o, const struct ct_tally *cls,
			 const struct ct_tally *supp, const struct ct_tally *base)
{
	fputs("  ", f);
	for (int c = CT_CLASS_LEAKED; c <= CT_CLASS_TEARDOWN; c++) {
		if (c != CT_CLASS_LEAKED)
			fputs("; ", f);
		text_tally(f, ct_class_title(c), &cls[c], 0);
	}
	fputc('\n', f);
	if (o->supp) {
		fputs("  ", f);
		text_tally(f, "suppressed", supp, 0);
		fputc('\n', f);
	}
	if (o->baseline) {
		fputs("  ", f);
		text_tally(f, "in the baseline", base, 0);
		fputc('\n', f);
	}
}

/* The suppressions that matched a site of this assessment (one dump's). */
static void text_supp_table(FILE *f, const struct ct_report_opts *o, const struct ct_assessment *a)
{
	char b[32];
	if (!a->nsupp)
		return;
	if (!a->suppressed.sites) {
		fputs("suppressions used: none\n", f);
		return;
	}
	fprintf(f, "suppressions used:\n  %6s %11s %12s  %s\n", "sites", "allocations", "bytes",
		"suppression");
	for (size_t s = 0; s < a->nsupp; s++) {
		const struct ct_tally *u = &a->supp_used[s];
		if (!u->sites)
			continue;
		fprintf(f, "  %6" PRIu64 " %11" PRIu64 " %12s  ", u->sites, u->count,
			ct_fmt_bytes(u->bytes, b, sizeof b));
		ct_put_safe(f, ct_supp_name(o->supp, s));
		fputc('\n', f);
	}
}

static void text_leaks_of(FILE *f, const struct ct_report_opts *o, struct ct_model *m,
			  const struct ct_assessment *a)
{
	char b1[32];
	if (m->fw_leak_count) {
		/* the framework layer first: what the program held */
		fprintf(f, "cumtrace leaks: %" PRIu64 " framework block%s, %s (%" PRIu64 " bytes) kept from step to step, still allocated at %s",
			m->fw_leak_count, ct_plural_s(m->fw_leak_count),
			ct_fmt_bytes(m->fw_leak_bytes, b1, sizeof b1), m->fw_leak_bytes,
			ct_fw_exit_marked(m) ? "the program's exit" : "the end of the dump");
		fprintf(f, "; CUDA layer: %" PRIu64 " allocation%s, %s not freed; in ", m->leak_count,
			ct_plural_s(m->leak_count), ct_fmt_bytes(m->leak_bytes, b1, sizeof b1));
		ct_put_proc(f, m);
		fputc('\n', f);
	} else if (!m->leak_count) {
		/* a dump of its header alone is empty, not clean */
		fputs(ct_model_header_only(m) ? "cumtrace leaks: nothing recorded in " : "cumtrace leaks: no leaks in ", f);
		ct_put_proc(f, m);
		fputc('\n', f);
	} else {
		fprintf(f, "cumtrace leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) not freed in ",
			m->leak_count, ct_plural_s(m->leak_count),
			ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), m->leak_bytes);
		ct_put_proc(f, m);
		fputc('\n', f);
	}
	ct_put_notes(f, m);
	text_address_only(f, m);
	ct_imports_put_text(f, &m->imp);
	struct ct_tally cls[CT_CLASS_COUNT], supp = {0}, base = {0};
	memset(cls, 0, sizeof cls);
	size_t n = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct ct_finding *x = &a->v[i];
		if (x->it.m != m)
			continue;
		if (x->supp < 0 || !x->growth)
			ct_tally_add(x->supp >= 0 ? &supp : &cls[x->cls], x);
		if (x->in_baseline && x->supp < 0 && !x->growth)
			ct_tally_add(&base, x);
		if (i < a->nleak && x->supp < 0)
			n++;
	}
	if (m->leak_count || m->fw_leak_count)
		text_tallies(f, o, cls, &supp, &base);
	if (m->fw_leak_count && cls[CT_CLASS_CACHE].sites)
		fputs("  (the framework blocks, kinds torch_block and cupy_block, lie inside the cache's segments:\n"
		      "  the same bytes, leaked as blocks the program holds, cache as segments the device gave out)\n",
		      f);
	int md = ct_multi_device(m);
	size_t k = ct_items_shown(o, n), shown = 0;
	uint64_t rest = 0, restc = 0;
	for (size_t i = 0; i < a->nleak; i++) {
		const struct ct_finding *x = &a->v[i];
		if (x->it.m != m || x->supp >= 0)
			continue;
		if (shown >= k) {
			rest = ct_sat_add(rest, x->it.bytes);
			restc += x->it.count;
			continue;
		}
		char reason[64];
		fprintf(f, "#%-3zu %s in %" PRIu64 " allocation%s (%s, %s, %s", ++shown,
			ct_fmt_bytes(x->it.bytes, b1, sizeof b1), x->it.count, ct_plural_s(x->it.count),
			ct_kind_name(x->it.kind), ct_api_name(x->it.api),
			ct_leak_reason(x->it.leak, reason, sizeof reason));
		if (md)
			fprintf(f, ", device %d", x->it.device);
		fputs("): ", f);
		put_class(f, x);
		fputc('\n', f);
		ct_text_site_label(f, m, x->it.stack_id); /* the site's first line, before why */
		text_evidence(f, x);
		text_address_space(f, x->it.leak);
		ct_text_frames(f, m, x->it.stack_id);
		if (o->gen_suppressions)
			gen_block(f, x, "");
	}
	if (k < n)
		fprintf(f, "... and %zu more site%s: %s in %" PRIu64 " allocation%s (--top 0 shows all)\n",
			n - k, ct_plural_s(n - k), ct_fmt_bytes(rest, b1, sizeof b1), restc,
			ct_plural_s(restc));
	text_growth(f, o, m, a, cls);
	text_supp_table(f, o, a);
}

/* One dump's section (its findings are those of an assessment of it alone). */
static void text_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	struct ct_assessment *a = ct_assess(o, &m, 1, NULL);
	text_leaks_of(f, o, m, a);
	ct_assessment_free(a);
}

/* ---- many dumps merged (ranks.h) ---------------------------------------------------------- */

/* A merged leak site's head after "(kind, api": the reason, then the class. */
static void merged_leak_head(FILE *f, const struct ct_merged_site *s, void *ctx)
{
	char reason[64];
	(void)ctx;
	fprintf(f, ", %s): ", ct_leak_reason(s->finding->it.leak, reason, sizeof reason));
	put_class(f, s->finding);
}

static void merged_leak_after(FILE *f, const struct ct_merged_site *s, void *ctx)
{
	const struct ct_report_opts *o = ctx;
	text_evidence(f, s->finding);
	if (o->gen_suppressions)
		gen_block(f, s->finding, "");
}

static void merged_growth_head(FILE *f, const struct ct_merged_site *s, void *ctx)
{
	(void)ctx;
	fputs(s->finding->in_baseline ? "), in the baseline" : ")", f);
}

/* The growing sites of all dumps merged: only when a dump has a series of steps. */
static void text_growth_merged(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			       size_t nm, const struct ct_assessment *a)
{
	char b[32];
	int any = 0;
	for (size_t d = 0; d < nm; d++) {
		const struct ct_growth_result *g = ct_growth_get(ms[d]);
		any |= g && g->have_series;
	}
	if (!any)
		return;
	unsigned k, w;
	ct_growth_params(o, &k, &w);
	struct ct_merge mg;
	ct_merge_init(&mg, ms, nm);
	ct_merge_findings(&mg, a, a->nleak, a->n);
	uint64_t bytes = 0;
	for (size_t i = 0; i < mg.n; i++)
		bytes = ct_sat_add(bytes, mg.v[i].bytes);
	fprintf(f, "\ngrowth (live bytes rose in at least %u of the last %u steps of each %s): ", k, w,
		ct_ranks_noun(mg.ranks, mg.nranks, 1));
	if (!mg.n)
		fputs("none\n", f);
	else
		fprintf(f, "%zu site%s, +%s\n", mg.n, ct_plural_s(mg.n), ct_fmt_bytes(bytes, b, sizeof b));
	struct ct_merged_style st = {.growth = 1, .head = merged_growth_head};
	ct_merged_put_list(f, o, &mg, &st);
	ct_merge_free(&mg);
}

/*
 * The leaks of many dumps (the ranks of one job) as one report: totals, the
 * table of ranks, the leak sites merged by identity with their share in each
 * rank, the growing sites merged the same way, the suppressions used.
 */
static void text_leaks_merged(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			      size_t nm)
{
	char b1[32];
	struct ct_assessment *a = ct_assess(o, ms, nm, NULL);
	struct ct_merge mg;
	ct_merge_init(&mg, ms, nm);
	ct_merge_findings(&mg, a, 0, a->nleak);
	uint64_t count = 0, bytes = 0;
	for (size_t d = 0; d < nm; d++) {
		count += ms[d]->leak_count;
		bytes = ct_sat_add(bytes, ms[d]->leak_bytes);
	}
	if (count)
		fprintf(f, "cumtrace leaks: %" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) not freed in ",
			count, ct_plural_s(count), ct_fmt_bytes(bytes, b1, sizeof b1), bytes);
	else
		fputs("cumtrace leaks: no leaks in ", f);
	ct_ranks_put_desc(f, mg.ranks, mg.nranks);
	fputc('\n', f);
	ct_ranks_put_notes(f, mg.ranks, mg.nranks);
	/* classes count merged sites (one class per identity); suppressed ones count per dump */
	struct ct_tally cls[CT_CLASS_COUNT], supp = {0}, base = {0};
	memset(cls, 0, sizeof cls);
	for (size_t i = 0; i < mg.n; i++) {
		const struct ct_merged_site *s = &mg.v[i];
		struct ct_tally *t[2] = {&cls[s->finding->cls], s->finding->in_baseline ? &base : NULL};
		for (int x = 0; x < 2 && t[x]; x++) {
			t[x]->sites++;
			t[x]->count += s->count;
			t[x]->bytes = ct_sat_add(t[x]->bytes, s->bytes);
		}
	}
	for (size_t i = 0; i < a->nleak; i++)
		if (a->v[i].supp >= 0)
			ct_tally_add(&supp, &a->v[i]);
	if (count)
		text_tallies(f, o, cls, &supp, &base);
	fputc('\n', f);
	ct_ranks_put_table(f, mg.ranks, mg.nranks);
	if (mg.n)
		fputc('\n', f);
	struct ct_merged_style st = {.head = merged_leak_head, .after = merged_leak_after, .ctx = (void *)o};
	ct_merged_put_list(f, o, &mg, &st);
	text_growth_merged(f, o, ms, nm, a);
	text_supp_table(f, o, a);
	ct_merge_free(&mg);
	ct_assessment_free(a);
}

static void csv_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
		      size_t nm)
{
	char reason[64];
	struct ct_assessment *a = ct_assess(o, ms, nm, NULL);
	fputs("pid,count,bytes,kind,device,api,reason,label,stack,class,allocator,suppression,in_baseline,"
	      "fails_gate,identity\n",
	      f);
	size_t k = ct_items_shown(o, a->nleak);
	for (size_t i = 0; i < a->n; i++) {
		const struct ct_finding *x = &a->v[i];
		if (i < a->nleak && i >= k)
			continue;
		if (i >= a->nleak && o->top && i - a->nleak >= o->top)
			break;
		fprintf(f, "%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%s,%d,%s,", x->it.m->pid, x->it.count,
			x->it.bytes, ct_kind_name(x->it.kind), x->it.device, ct_api_name(x->it.api));
		if (x->growth)
			fprintf(f, "grew in %u of %u step%s", x->growth->grew, x->growth->steps,
				ct_plural_s(x->growth->steps));
		else
			ct_csv_field(f, ct_leak_reason(x->it.leak, reason, sizeof reason));
		fputc(',', f);
		ct_csv_site_label(f, x->it.m, x->it.stack_id);
		fputc(',', f);
		ct_csv_stack(f, x->it.m, x->it.stack_id);
		fprintf(f, ",%s,%s,", ct_class_name(x->cls),
			x->why.rule >= 0 ? ct_rule_get((size_t)x->why.rule)->allocator : "");
		if (x->supp >= 0)
			ct_csv_field(f, ct_supp_name(o->supp, (size_t)x->supp));
		fprintf(f, ",%d,%d,%016" PRIx64 "\n", x->in_baseline, x->fails, x->identity);
	}
	ct_assessment_free(a);
}

/* The fields every finding has in JSON after the site's own. */
static void json_verdict(struct ct_json *j, const struct ct_report_opts *o,
			 const struct ct_finding *x)
{
	char id[24];
	ct_json_kv_str(j, "class", ct_class_name(x->cls));
	const struct ct_rule *r = x->why.rule >= 0 ? ct_rule_get((size_t)x->why.rule) : NULL;
	ct_json_kv_str(j, "allocator", r ? r->allocator : NULL);
	ct_json_key(j, "evidence");
	size_t k = r ? ct_finding_frames(x, frames) : 0;
	if (r && x->why.frame >= 0 && (size_t)x->why.frame < k) {
		const struct ct_frame *fr = &frames[x->why.frame];
		ct_json_obj(j);
		ct_json_kv_u64(j, "frame", (uint64_t)x->why.frame);
		ct_json_kv_str(j, "rule", r->label);
		ct_json_kv_str(j, "field", ct_rule_field_name(r->field));
		ct_json_kv_str(j, "pattern", r->pattern);
		ct_json_kv_str(j, "value", ct_rule_subject(fr, r->field));
		ct_json_obj_end(j);
	} else {
		ct_json_null(j);
	}
	ct_json_kv_str(j, "suppression", x->supp >= 0 ? ct_supp_name(o->supp, (size_t)x->supp) : NULL);
	ct_json_kv_bool(j, "in_baseline", x->in_baseline);
	ct_json_kv_bool(j, "fails_gate", x->fails);
	snprintf(id, sizeof id, "%016" PRIx64, x->identity);
	ct_json_kv_str(j, "identity", id);
	if (o->gen_suppressions) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);
		if (mf) {
			gen_block(mf, x, "");
			fclose(mf);
			ct_json_kv_str(j, "suppression_block", buf);
			free(buf);
		}
	}
}

static void json_tally(struct ct_json *j, const char *key, const struct ct_tally *t)
{
	ct_json_key(j, key);
	ct_json_obj(j);
	ct_json_kv_u64(j, "sites", t->sites);
	ct_json_kv_u64(j, "count", t->count);
	ct_json_kv_u64(j, "bytes", t->bytes);
	ct_json_obj_end(j);
}

static void json_growth(struct ct_json *j, const struct ct_report_opts *o,
			struct ct_model *const *ms, size_t nm, const struct ct_assessment *a)
{
	int any = 0;
	for (size_t d = 0; d < nm; d++)
		any |= ct_growth_get(ms[d]) != NULL;
	if (!any)
		return;
	unsigned k, w;
	ct_growth_params(o, &k, &w);
	ct_json_key(j, "growth");
	ct_json_obj(j);
	ct_json_kv_u64(j, "window", w);
	ct_json_kv_u64(j, "min_steps", k);
	ct_json_key(j, "series");
	ct_json_arr(j);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_growth_result *g = ct_growth_get(ms[d]);
		if (!g || !g->have_series)
			continue;
		ct_json_obj(j);
		ct_json_kv_u64(j, "pid", ms[d]->pid);
		ct_json_kv_str(j, "name", g->series.name);
		ct_json_kv_str(j, "kind", ct_series_kind_name(g->series.kind));
		ct_json_kv_i64(j, "depth", g->series.depth);
		ct_json_kv_u64(j, "boundaries", g->series.boundaries);
		ct_json_kv_u64(j, "steps", g->series.boundaries ? g->series.boundaries - 1 : 0);
		ct_json_kv_u64(j, "untracked_boundaries", g->untracked);
		ct_json_kv_u64(j, "optimizer_boundaries", g->optimizer_boundaries);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_kv_u64(j, "sites_total", a->n - a->nleak);
	ct_json_key(j, "sites");
	ct_json_arr(j);
	for (size_t i = a->nleak; i < a->n && (!o->top || i - a->nleak < o->top); i++) {
		const struct ct_finding *x = &a->v[i];
		ct_json_obj(j);
		ct_json_kv_u64(j, "pid", x->it.m->pid);
		ct_json_kv_u64(j, "growth_bytes", x->growth->growth);
		ct_json_kv_u64(j, "grew_steps", x->growth->grew);
		ct_json_kv_u64(j, "window_steps", x->growth->steps);
		ct_json_kv_u64(j, "live_bytes_before", x->growth->live_before);
		ct_json_kv_u64(j, "live_bytes_last", x->growth->live_last);
		ct_json_kv_str(j, "kind", ct_kind_name(x->it.kind));
		ct_json_kv_str(j, "api", ct_api_name(x->it.api));
		ct_json_kv_i64(j, "device", x->it.device);
		ct_json_kv_u64(j, "stack_id", x->it.stack_id);
		ct_json_site_label(j, x->it.m, x->it.stack_id);
		ct_json_key(j, "stack");
		ct_json_stack(j, x->it.m, x->it.stack_id);
		json_verdict(j, o, x);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
}

/* A merged leak site's verdict: the same for every dump's share (one identity, one class). */
static void json_merged_leak(struct ct_json *j, const struct ct_report_opts *o,
			     const struct ct_merged_site *s)
{
	char reason[64];
	(void)o;
	ct_json_kv_str(j, "reason", ct_leak_reason(s->finding->it.leak, reason, sizeof reason));
	ct_json_kv_str(j, "class", ct_class_name(s->finding->cls));
	ct_json_kv_bool(j, "in_baseline", s->finding->in_baseline);
	ct_json_kv_bool(j, "fails_gate", s->finding->fails);
}

/* "leaks": totals, the leak groups with their verdicts, classes, suppressions, growth, gate;
 * for many dumps, "merged" (ranks.h). */
static void json_leaks(struct ct_json *j, const struct ct_report_opts *o,
		       struct ct_model *const *ms, size_t nm)
{
	uint64_t leak_count = 0, leak_bytes = 0;
	for (size_t d = 0; d < nm; d++) {
		leak_count += ms[d]->leak_count;
		leak_bytes = ct_sat_add(leak_bytes, ms[d]->leak_bytes);
	}
	struct ct_assessment *a = ct_assess(o, ms, nm, NULL);
	ct_json_key(j, "leaks");
	ct_json_obj(j);
	ct_json_kv_u64(j, "count", leak_count);
	ct_json_kv_u64(j, "bytes", leak_bytes);
	ct_json_kv_u64(j, "sites_total", a->nleak);
	uint64_t vr = 0, vrb = 0, vm = 0, vmb = 0;
	for (size_t d = 0; d < nm; d++) {
		vr += ms[d]->va_only_reserved;
		vrb = ct_sat_add(vrb, ms[d]->va_only_reserved_bytes);
		vm += ms[d]->va_only_mapped;
		vmb = ct_sat_add(vmb, ms[d]->va_only_mapped_bytes);
	}
	if (vr || vm) {
		/* not memory, not in count or bytes: address space no leaked allocation holds */
		ct_json_key(j, "address_space_only");
		ct_json_obj(j);
		ct_json_kv_u64(j, "reserved", vr);
		ct_json_kv_u64(j, "reserved_bytes", vrb);
		ct_json_kv_u64(j, "mapped", vm);
		ct_json_kv_u64(j, "mapped_bytes", vmb);
		ct_json_obj_end(j);
	}
	ct_json_key(j, "sites");
	ct_json_arr(j);
	for (size_t i = 0; i < ct_items_shown(o, a->nleak); i++) {
		ct_json_obj(j);
		ct_json_item_fields(j, &a->v[i].it);
		json_verdict(j, o, &a->v[i]);
		json_address_space(j, a->v[i].it.leak);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_key(j, "classes");
	ct_json_obj(j);
	for (int c = 0; c < CT_CLASS_COUNT; c++)
		json_tally(j, ct_class_name(c), &a->cls[c]);
	ct_json_obj_end(j);
	json_tally(j, "suppressed", &a->suppressed);
	json_tally(j, "in_baseline", &a->baselined);
	ct_json_key(j, "suppressions");
	ct_json_arr(j);
	for (size_t s = 0; s < a->nsupp; s++) {
		unsigned line;
		const char *origin = ct_supp_origin(o->supp, s, &line);
		ct_json_obj(j);
		ct_json_kv_str(j, "name", ct_supp_name(o->supp, s));
		ct_json_kv_str(j, "file", origin);
		ct_json_kv_u64(j, "line", line);
		ct_json_kv_u64(j, "sites", a->supp_used[s].sites);
		ct_json_kv_u64(j, "count", a->supp_used[s].count);
		ct_json_kv_u64(j, "bytes", a->supp_used[s].bytes);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	json_growth(j, o, ms, nm, a);
	ct_json_key(j, "gate");
	ct_json_obj(j);
	ct_json_key(j, "fail_on");
	ct_json_arr(j);
	for (int c = 0; c < CT_CLASS_COUNT; c++)
		if (a->fail_classes & CT_CLASS_BIT(c))
			ct_json_str(j, ct_class_name(c));
	ct_json_arr_end(j);
	ct_json_kv_u64(j, "failing_sites", a->failing.sites);
	ct_json_kv_u64(j, "failing_leak_bytes", a->failing_leaks.bytes);
	ct_json_obj_end(j);
	if (ct_ranks_merged(o, nm)) {
		struct ct_merge mg;
		ct_merge_init(&mg, ms, nm);
		ct_merge_findings(&mg, a, 0, a->nleak);
		ct_merged_json(j, o, &mg, json_merged_leak);
		ct_merge_free(&mg);
	}
	ct_json_obj_end(j);
	ct_assessment_free(a);
}

static void render_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			 size_t n)
{
	switch (o->format) {
	case CT_FMT_JUNIT:
		ct_junit_write(f, o, ms, n);
		return;
	case CT_FMT_SARIF:
		ct_sarif_write(f, o, ms, n);
		return;
	default:
		if (o->format == CT_FMT_TEXT && ct_ranks_merged(o, n))
			text_leaks_merged(f, o, ms, n);
		else
			ct_render_per_format(f, o, ms, n, text_leaks, csv_leaks);
	}
}

const struct ct_report ct_report_leaks = {
	.uses = CT_USES(&ct_analysis_growth),
	.render = render_leaks,
	.json = json_leaks,
};
