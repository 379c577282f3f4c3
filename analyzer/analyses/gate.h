/*
 * The verdict on every leak site and growth site of a set of dumps, and the
 * CI gate built on it.
 *
 * A finding is a leak group (model.h) or a growth site (growth.h) with its
 * class (classify.h), the suppression that matched it, whether its identity is
 * in the baseline, and whether it fails the gate: its class is one of the
 * failing classes (--fail-on, default "leaked"), no suppression matched it
 * and the baseline does not have it. Every format (text, JSON, CSV, JUnit,
 * SARIF) and the exit status read the same findings.
 */
#ifndef CT_ANALYZER_GATE_H
#define CT_ANALYZER_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/growth.h"
#include "commands/options.h"
#include "model/classify.h"
#include "render/render.h"

struct ct_finding {
	struct ct_item it;		    /* the site (it.leak set for leak groups) */
	const struct ct_growth_site *growth; /* growth sites: the measurement */
	int cls;			    /* enum ct_class */
	struct ct_class_result why;	    /* cache rule and frame (rule -1: none) */
	int supp;			    /* index of the suppression that matched, -1 none */
	int in_baseline;
	int fails;	      /* fails the gate */
	uint64_t identity;    /* ct_site_identity */
	int user_frame;	      /* the label frame (classify.h: ct_label_frame), -1 none */
};

struct ct_tally {
	uint64_t sites, count, bytes;
};

/* Count a finding in t: a site, its allocations (none for growth sites), its bytes. */
void ct_tally_add(struct ct_tally *t, const struct ct_finding *f);

struct ct_assessment {
	struct ct_finding *v; /* leak groups (largest first), then growth sites */
	size_t n, nleak;
	struct ct_tally cls[CT_CLASS_COUNT]; /* per class, suppressed ones included */
	struct ct_tally suppressed;	     /* every suppressed finding */
	struct ct_tally baselined;	     /* in the baseline and not suppressed */
	struct ct_tally failing;	     /* findings that fail the gate (growth: growth bytes) */
	struct ct_tally failing_leaks;	     /* of them, leak groups (for --max-leak-bytes) */
	struct ct_tally *supp_used;	     /* per suppression, in the order read */
	size_t nsupp;
	unsigned fail_classes; /* the effective failing classes */
};

/* The failing classes of o (the default when none were chosen). */
unsigned ct_fail_classes(const struct ct_report_opts *o);

/*
 * Assess the n models. Findings are in ct_leak_items order, then each
 * model's growth sites in the order growth.c reports them. The baseline is
 * o->baseline, or base when not NULL.
 */
struct ct_assessment *ct_assess(const struct ct_report_opts *o, struct ct_model *const *ms, size_t n,
				struct ct_model *base);
void ct_assessment_free(struct ct_assessment *a);

/* Resolve a finding's frames (mixed view) into out (CT_ANALYSIS_FRAMES). */
size_t ct_finding_frames(const struct ct_finding *f, struct ct_frame *out);

/* A short name for a finding (suppression names): its label frame's function, else the first named frame's. */
void ct_finding_label(const struct ct_finding *f, char *buf, size_t cap);

/*
 * One line about a finding: "leaked: 8.0 MiB in 2 allocations (device,
 * cudaMalloc, live at exit)", "growth: +4.0 MiB in the last 8 steps of
 * \"step\", grew in 8 (device, cudaMalloc)". Strings from the dump are as
 * they are (escape them for the output).
 */
void ct_finding_message(const struct ct_finding *f, char *buf, size_t cap);

/* 1 when o asks for any gate. */
int ct_gate_enabled(const struct ct_report_opts *o);

/* 1 when v is over limit (--max-*-bytes): a saturated total (CT_SAT, util.h) always is. */
int ct_gate_over(uint64_t v, uint64_t limit);

/*
 * Evaluate the gate of o over the models (o's command decides the baseline:
 * with baseline_first, the first model is the baseline of the others).
 * Returns 0 when it passes (or no gate is set), 1 when it fails, with one
 * line in reason.
 */
int ct_gate_check(const struct ct_report_opts *o, struct ct_model *const *ms, size_t n, char *reason,
		  size_t cap);

/* Add what the gate needs to a model before it is read (growth, when --fail-on has it). */
void ct_gate_attach(struct ct_model *m, const struct ct_report_opts *o);

#endif
