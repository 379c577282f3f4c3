/*
 * Many dumps of one job (one per rank of a torchrun, Slurm or MPI launch):
 * which rank each dump is, and the sites of all of them merged by site
 * identity (classify.h: symbolized frames, or module file name and offset,
 * never addresses, so the same stack in processes loaded at different
 * addresses is one site), each site with its share in every rank.
 *
 * A dump's rank comes from the launcher's environment recorded in its
 * CT_REC_PROCESS (format.h: env.RANK, else env.SLURM_PROCID,
 * env.OMPI_COMM_WORLD_RANK, env.PMI_RANK); a dump without one (written before
 * those keys existed, or by a process started by hand) is numbered by its
 * position on the command line. Dumps none of which has a rank, some of them
 * of a process whose parent (CT_REC_PROCESS: ppid, on the same host) wrote
 * another, are a process tree instead: numbered in tree order (a parent, then
 * its children by pid, each followed by its own), named by pid
 * (ct_rank_name: "pid 124 (child of 123)").
 *
 * Memory: merging works on sites, never on events. A merge holds one entry
 * per (merged site, dump) pair, at most the sites of all the dumps.
 */
#ifndef CT_ANALYZER_RANKS_H
#define CT_ANALYZER_RANKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyses/gate.h"
#include "base/json.h"
#include "commands/options.h"
#include "model/model.h"
#include "render/render.h"

/* Where a dump's rank came from. */
enum ct_rank_source {
	CT_RANK_FROM_RANK = 0,	/* env.RANK */
	CT_RANK_FROM_SLURM = 1, /* env.SLURM_PROCID */
	CT_RANK_FROM_OMPI = 2,	/* env.OMPI_COMM_WORLD_RANK */
	CT_RANK_FROM_PMI = 3,	/* env.PMI_RANK */
	CT_RANK_FROM_ORDER = 4, /* none recorded: the dump's position */
	CT_RANK_FROM_TREE = 5,	/* none recorded, a process tree: the position in tree order */
};

struct ct_rank {
	struct ct_model *m;
	size_t index; /* position of the dump among the models (command-line order) */
	long rank;    /* >= 0 */
	int source;   /* enum ct_rank_source */
	long local_rank, world_size, local_world_size, node_rank; /* -1: unknown */
	/* CT_RANK_FROM_TREE: the parent's pid when the parent's dump is among them (else 0),
	 * the depth in the tree (0: a process whose parent wrote none of the dumps) */
	uint32_t parent_pid;
	unsigned depth;
};

/*
 * 1 when the reports of n dumps are merged: more than one dump, no
 * --per-dump, and a command whose dumps are peers (not diff's baseline and
 * new run).
 */
int ct_ranks_merged(const struct ct_report_opts *o, size_t n);

/*
 * A launcher variable of m as a number: a decimal 0..INT_MAX, else -1 (unset
 * or not a number).
 */
long ct_launch_long(const struct ct_model *m, int which);

/*
 * The rank of each of the n models, sorted by rank (equal ranks by position);
 * caller frees. A dump without a rank gets its position when no other dump
 * has that rank, else the smallest number above every rank taken.
 */
struct ct_rank *ct_ranks_of(struct ct_model *const *ms, size_t n);

/* "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "order", "tree" */
const char *ct_rank_source_name(int source);

/* 1 when the n ranks of ct_ranks_of are a process tree (CT_RANK_FROM_TREE). */
int ct_ranks_are_processes(const struct ct_rank *r, size_t n);
/*
 * How reports name r, one of the n ranks of ct_ranks_of (all): "rank 3"; in a
 * process tree "pid 123 (parent)", "pid 124 (child of 123)" or "pid 125".
 * Returns buf.
 */
const char *ct_rank_name(const struct ct_rank *r, const struct ct_rank *all, size_t n, char *buf,
			 size_t cap);
/* "rank"/"ranks", or "process"/"processes" in a process tree, for count. */
const char *ct_ranks_noun(const struct ct_rank *r, size_t n, size_t count);

/*
 * Sorted ranks as a short list: "0-3", "0,2,5-7" (a repeated rank is listed
 * once). Returns buf; a list longer than cap ends in "...".
 */
const char *ct_rank_list(const long *ranks, size_t n, char *buf, size_t cap);

/* A site's count and bytes in one dump. */
struct ct_rank_share {
	size_t pos; /* index in ct_merge.ranks */
	uint64_t count, bytes;
};

struct ct_merged_site {
	uint64_t identity;
	uint64_t count, bytes;	   /* over every dump */
	struct ct_item rep;	   /* the largest share's site: its stack and kind are shown */
	const struct ct_finding *finding; /* leaks and growth: rep's finding; NULL for peak */
	struct ct_rank_share *per; /* one per dump that has the site, by rank after ct_merge_finish */
	size_t nper, capper;
};

struct ct_merge {
	struct ct_rank *ranks; /* ct_ranks_of the models */
	size_t nranks;
	struct ct_merged_site *v; /* largest first after ct_merge_finish */
	size_t n, cap;
	struct ct_imap map;    /* identity -> index in v (until ct_merge_finish sorts v) */
	struct ct_imap posmap; /* model -> index in ranks */
};

/* An empty merge over the n models (their ranks are worked out here). */
void ct_merge_init(struct ct_merge *mg, struct ct_model *const *ms, size_t n);
void ct_merge_free(struct ct_merge *mg);
/* The position of m in mg->ranks (mg->nranks when m is not one of the models). */
size_t ct_merge_pos(const struct ct_merge *mg, const struct ct_model *m);
/*
 * Add the site it of one dump under identity. finding may be NULL. Shares of
 * one dump under one identity add up.
 */
void ct_merge_add(struct ct_merge *mg, uint64_t identity, const struct ct_item *it,
		  const struct ct_finding *finding);
/* Sites largest first (bytes, count, first rank, identity); shares by rank. */
void ct_merge_finish(struct ct_merge *mg);

/*
 * The findings a->v[from..to) that no suppression matched, merged (leak
 * groups: 0..a->nleak; growth sites: a->nleak..a->n). Finished.
 */
void ct_merge_findings(struct ct_merge *mg, const struct ct_assessment *a, size_t from, size_t to);
/*
 * Every device-bytes site live at its own dump's peak, merged: each dump
 * counts at the moment of its own peak. The identity is that of a leak site
 * (ct_site_identity) with the class CT_MERGE_PEAK_CLASS. Finished.
 */
#define CT_MERGE_PEAK_CLASS (-1)
void ct_merge_peak(struct ct_merge *mg);
/*
 * The rank with the highest peak among those that allocated device memory
 * (NULL when none did); *sum is the sum of those ranks' own peaks.
 */
const struct ct_rank *ct_ranks_top_peak(const struct ct_rank *r, size_t n, uint64_t *sum);

/* ---- text --------------------------------------------------------------------------- */

/* "4 ranks (0-3, world size 4) on host NAME" or "... on 2 hosts" */
void ct_ranks_put_desc(FILE *f, const struct ct_rank *r, size_t n);
/*
 * Notes on the dumps that need one, as two-space indented lines: incomplete
 * ones (truncated, no END record), dropped events, ranks numbered by position,
 * a rank found in two dumps, dumps of different launches.
 */
void ct_ranks_put_notes(FILE *f, const struct ct_rank *r, size_t n);
/* The per-rank table: rank, pid, host, peak, leaked bytes, leak sites, events, dropped, complete. */
void ct_ranks_put_table(FILE *f, const struct ct_rank *r, size_t n);
/*
 * A site's shares by rank, grouped by equal amounts, the largest first:
 * "ranks 0-3: 4 x 64.0 MiB; rank 4: 1 x 96.0 MiB in 2 allocations"; growth:
 * bytes are growth ("+64.0 MiB", no allocation count). One line, without
 * indent or newline.
 */
void ct_merged_put_shares(FILE *f, const struct ct_merge *mg, const struct ct_merged_site *s,
			  int growth);

/* How ct_merged_put_list shows each site. */
struct ct_merged_style {
	int growth; /* bytes are growth: "+4.0 MiB", no allocation count */
	/* the rest of the head line after "(kind, api", closing it ("): leaked"); NULL: ")" */
	void (*head)(FILE *f, const struct ct_merged_site *s, void *ctx);
	/* lines after the shares, before the stack; may be NULL */
	void (*after)(FILE *f, const struct ct_merged_site *s, void *ctx);
	void *ctx;
};

/*
 * The first --top merged sites: "#1   256.0 MiB in 4 allocations in 4 ranks
 * (device, cudaMalloc)", the shares indented below, then the stack of the
 * largest share; then "... and N more sites".
 */
void ct_merged_put_list(FILE *f, const struct ct_report_opts *o, const struct ct_merge *mg,
			const struct ct_merged_style *st);

/* ---- JSON --------------------------------------------------------------------------- */

/* "ranks": one object per dump in rank order (rank, source, pid, host, totals, complete). */
void ct_ranks_json(struct ct_json *j, struct ct_model *const *ms, size_t n);

/*
 * "merged": {"ranks", "sites_total", "sites": [...]}: per site identity,
 * count, bytes, kind, api, "ranks" (how many dumps have it), "per_rank"
 * ([{rank, pid, count, bytes}]) and the stack of the largest share; extra
 * (may be NULL) adds fields of its own to each site object.
 */
void ct_merged_json(struct ct_json *j, const struct ct_report_opts *o, const struct ct_merge *mg,
		    void (*extra)(struct ct_json *j, const struct ct_report_opts *o,
				  const struct ct_merged_site *s));

#endif
