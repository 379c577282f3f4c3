/*
 * Unit tests of many dumps as one job (analyzer/analyses/ranks.c): the rank of each
 * dump, sites merged by identity across processes loaded at different
 * addresses, the merged reports (golden cases ranks-*), and the progress
 * line (analyzer/render/progress.c).
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckmain.h"
#include "../../analyzer/render/progress.h"
#include "../../analyzer/analyses/ranks.h"
#include "../../analyzer/commands/commands.h"
#include "dumpgen.h"
#include "golden_dumps.h"
#include "modelload.h"

/* The models of ranks 0-3 with torchrun's variables, in the order given (a permutation). */
static void job(struct ct_model **ms, const int *order, uint64_t rank2_off)
{
	for (int i = 0; i < 4; i++) {
		int r = order[i];
		char path[32];
		struct dg g;
		rank_job_dump(&g, r, r == 2 ? rank2_off : 0x1234);
		struct ct_report_opts o = {.buckets = 10, .top = 20};
		ms[i] = tm_load(&g, ct_report_attach_all, &o);
		snprintf(path, sizeof path, "rank%d.dump", r);
		ms[i]->path = strdup(path);
		dg_release(&g);
	}
}

static void unjob(struct ct_model **ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tm_unload(ms[i]);
}

static char *render_n(struct ct_model **ms, size_t n, int cmd, int format, int per_dump)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ct_report_opts o = {.cmd = cmd, .format = format, .buckets = 10, .top = 20,
				   .tool_version = "test", .per_dump = per_dump};
	ct_report(f, &o, ms, n);
	fclose(f);
	return buf;
}

/* ---- ranks -------------------------------------------------------------------------------- */

/* A model whose PROCESS record has only the strings kv. */
static struct ct_model *env_model(const char *const *kv)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	dg_process(&g, 42, 1, 1000, kv);
	dg_end(&g, 2000);
	struct ct_model *m = tm_load(&g, NULL, NULL);
	dg_release(&g);
	return m;
}

START_TEST(rank_sources_and_order)
{
	struct ct_model *ms[6] = {
		env_model((const char *[]){"env.RANK=2", "env.SLURM_PROCID=7", NULL}),
		env_model((const char *[]){"env.SLURM_PROCID=0", "env.SLURM_LOCALID=0", "env.SLURM_NTASKS=8", NULL}),
		env_model((const char *[]){"env.RANK=abc", NULL}), /* not a number: no rank */
		env_model(NULL),				   /* an old dump: no env keys */
		env_model((const char *[]){"env.RANK=99999999999", "env.OMPI_COMM_WORLD_RANK=5", NULL}),
		env_model((const char *[]){"env.PMI_RANK=-1", NULL}),
	};
	ck_assert_int_eq(ct_launch_long(ms[0], CT_LAUNCH_RANK), 2);
	ck_assert_int_eq(ct_launch_long(ms[2], CT_LAUNCH_RANK), -1);
	ck_assert_int_eq(ct_launch_long(ms[3], CT_LAUNCH_RANK), -1);
	ck_assert_int_eq(ct_launch_long(ms[4], CT_LAUNCH_RANK), -1);
	struct ct_rank *r = ct_ranks_of(ms, 6);
	/* env: 2 (RANK wins over SLURM_PROCID), 0 (SLURM), 5 (OMPI); by position: #2 is
	 * taken (rank 2), so 6; #3 is free; #5 is taken (rank 5), so 7 */
	static const long want_rank[6] = {0, 2, 3, 5, 6, 7};
	static const size_t want_index[6] = {1, 0, 3, 4, 2, 5};
	static const int want_source[6] = {CT_RANK_FROM_SLURM, CT_RANK_FROM_RANK, CT_RANK_FROM_ORDER,
					   CT_RANK_FROM_OMPI, CT_RANK_FROM_ORDER, CT_RANK_FROM_ORDER};
	for (int i = 0; i < 6; i++) {
		ck_assert_int_eq(r[i].rank, want_rank[i]);
		ck_assert_uint_eq(r[i].index, want_index[i]);
		ck_assert_int_eq(r[i].source, want_source[i]);
	}
	ck_assert_int_eq(r[0].local_rank, 0);
	ck_assert_int_eq(r[0].world_size, 8);
	ck_assert_int_eq(r[1].world_size, -1);
	ck_assert_str_eq(ct_rank_source_name(r[0].source), "SLURM_PROCID");
	ck_assert_str_eq(ct_rank_source_name(r[2].source), "order");
	free(r);
	unjob(ms, 6);
}
END_TEST

/* Dumps without ranks, some the fork children of another's process: a tree, named by pid. */
START_TEST(process_tree)
{
	/* given as: grandchild 102, unrelated 200, child 103, parent 100, child 101 (parent of 102) */
	static const uint32_t pid[5] = {102, 200, 103, 100, 101}, ppid[5] = {101, 1, 100, 1, 100};
	struct ct_model *ms[5];
	for (int i = 0; i < 5; i++) {
		ms[i] = env_model(NULL);
		ms[i]->pid = pid[i];
		ms[i]->ppid = ppid[i];
	}
	struct ct_rank *r = ct_ranks_of(ms, 5);
	ck_assert(ct_ranks_are_processes(r, 5));
	static const uint32_t want_pid[5] = {100, 101, 102, 103, 200};
	static const unsigned want_depth[5] = {0, 1, 2, 1, 0};
	static const char *const want_name[5] = {"pid 100 (parent)", "pid 101 (child of 100)",
						  "pid 102 (child of 101)", "pid 103 (child of 100)", "pid 200"};
	char name[64];
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_eq(r[i].m->pid, want_pid[i]);
		ck_assert_int_eq(r[i].rank, i);
		ck_assert_uint_eq(r[i].depth, want_depth[i]);
		ck_assert_int_eq(r[i].source, CT_RANK_FROM_TREE);
		ck_assert_str_eq(ct_rank_name(&r[i], r, 5, name, sizeof name), want_name[i]);
	}
	ck_assert_str_eq(ct_ranks_noun(r, 5, 2), "processes");
	free(r);
	/* a dump with a rank among them: ranks, as before */
	ms[1]->launch[CT_LAUNCH_RANK] = strdup("7");
	r = ct_ranks_of(ms, 5);
	ck_assert(!ct_ranks_are_processes(r, 5));
	ck_assert_str_eq(ct_rank_name(&r[0], r, 5, name, sizeof name), "rank 0");
	free(r);
	/* no dump a child of another's process (102 and 103): numbered by position */
	struct ct_model *pair[2] = {ms[0], ms[2]};
	r = ct_ranks_of(pair, 2);
	ck_assert(!ct_ranks_are_processes(r, 2));
	ck_assert_int_eq(r[0].source, CT_RANK_FROM_ORDER);
	free(r);
	unjob(ms, 5);
}
END_TEST

START_TEST(rank_lists)
{
	char buf[64];
	ck_assert_str_eq(ct_rank_list((long[]){0, 1, 2, 3}, 4, buf, sizeof buf), "0-3");
	ck_assert_str_eq(ct_rank_list((long[]){0, 2, 5, 6, 7}, 5, buf, sizeof buf), "0,2,5-7");
	ck_assert_str_eq(ct_rank_list((long[]){1, 1, 2, 9}, 4, buf, sizeof buf), "1-2,9");
	ck_assert_str_eq(ct_rank_list((long[]){4}, 1, buf, sizeof buf), "4");
	ck_assert_str_eq(ct_rank_list(NULL, 0, buf, sizeof buf), "");
	ck_assert_str_eq(ct_rank_list((long[]){0, 2, 4, 6, 8, 10}, 6, buf, 10), "0,2,4...");
}
END_TEST

/* ---- merging ------------------------------------------------------------------------------ */

START_TEST(merge_by_identity_across_load_addresses)
{
	struct ct_model *ms[4];
	job(ms, (const int[]){2, 0, 3, 1}, 0x1234);
	/* the stacks' addresses differ from rank to rank */
	ck_assert_uint_ne(ct_symtab_stack_count(ms[0]->syms), 0);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .top = 20};
	struct ct_assessment *a = ct_assess(&o, ms, 4, NULL);
	struct ct_merge mg;
	ct_merge_init(&mg, ms, 4);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(mg.ranks[i].rank, (long)i);
		ck_assert_uint_eq(ct_merge_pos(&mg, mg.ranks[i].m), i);
	}
	ct_merge_findings(&mg, a, 0, a->nleak);
	ck_assert_uint_eq(mg.n, 2);
	ck_assert_uint_eq(mg.v[0].bytes, 4 * 64 * MiB);
	ck_assert_uint_eq(mg.v[0].count, 4);
	ck_assert_uint_eq(mg.v[0].nper, 4);
	for (size_t k = 0; k < 4; k++) {
		ck_assert_uint_eq(mg.v[0].per[k].pos, k); /* by rank */
		ck_assert_uint_eq(mg.v[0].per[k].bytes, 64 * MiB);
	}
	ck_assert_uint_eq(mg.v[1].bytes, 32 * MiB);
	ck_assert_uint_eq(mg.v[1].nper, 1);
	ck_assert_int_eq(mg.ranks[mg.v[1].per[0].pos].rank, 3);
	ck_assert_str_eq(ct_class_name(mg.v[1].finding->cls), "leaked");
	ct_merge_free(&mg);

	/* the peak: each rank at its own peak */
	ct_merge_init(&mg, ms, 4);
	ct_merge_peak(&mg);
	ck_assert_uint_eq(mg.n, 3);
	ck_assert_uint_eq(mg.v[0].bytes, 4 * 64 * MiB);
	ck_assert_uint_eq(mg.v[1].bytes, (1 + 2 + 3 + 4) * 16 * MiB);
	for (size_t k = 0; k < 4; k++)
		ck_assert_uint_eq(mg.v[1].per[k].bytes, (k + 1) * 16 * MiB);
	ck_assert_uint_eq(mg.v[2].bytes, 32 * MiB);
	ct_merge_free(&mg);
	ct_assessment_free(a);
	unjob(ms, 4);

	/* another innermost frame in rank 2: another site, the others still merge */
	job(ms, (const int[]){0, 1, 2, 3}, 0x1238);
	a = ct_assess(&o, ms, 4, NULL);
	ct_merge_init(&mg, ms, 4);
	ct_merge_findings(&mg, a, 0, a->nleak);
	ck_assert_uint_eq(mg.n, 3);
	ck_assert_uint_eq(mg.v[0].bytes, 3 * 64 * MiB);
	ck_assert_uint_eq(mg.v[1].bytes, 64 * MiB);
	ck_assert_int_eq(mg.ranks[mg.v[1].per[0].pos].rank, 2);
	ct_merge_free(&mg);
	ct_assessment_free(a);
	unjob(ms, 4);
}
END_TEST

static char *shares_text(const struct ct_merge *mg, const struct ct_merged_site *s, int growth)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ct_merged_put_shares(f, mg, s, growth);
	fclose(f);
	return buf;
}

START_TEST(merge_adds_and_groups_shares)
{
	struct ct_model *ms[4];
	job(ms, (const int[]){0, 1, 2, 3}, 0x1234);
	struct ct_merge mg;
	ct_merge_init(&mg, ms, 4);
	/* out of rank order, and twice in rank 1: shares add up per dump */
	static const struct {
		int rank;
		uint64_t bytes;
	} adds[] = {{3, 4 * MiB}, {0, 8 * MiB}, {1, 2 * MiB}, {2, 8 * MiB}, {1, 2 * MiB}};
	for (size_t i = 0; i < sizeof adds / sizeof adds[0]; i++) {
		struct ct_item it = {.m = ms[adds[i].rank], .stack_id = 1, .api = CT_API_cudaMalloc,
				     .kind = CT_KIND_DEVICE, .count = 1, .bytes = adds[i].bytes};
		ct_merge_add(&mg, 0xabc, &it, NULL);
	}
	struct ct_item other = {.m = ms[2], .stack_id = 2, .kind = CT_KIND_DEVICE, .count = 3,
				.bytes = 3 * MiB};
	ct_merge_add(&mg, 0xdef, &other, NULL);
	ct_merge_finish(&mg);
	ck_assert_uint_eq(mg.n, 2);
	const struct ct_merged_site *s = &mg.v[0];
	ck_assert_uint_eq(s->identity, 0xabc);
	ck_assert_uint_eq(s->nper, 4);
	ck_assert_uint_eq(s->bytes, 24 * MiB);
	ck_assert_uint_eq(s->count, 5);
	ck_assert_uint_eq(s->per[1].count, 2);
	/* the representative is the largest single site: rank 0's, added first */
	ck_assert_ptr_eq(s->rep.m, ms[0]);
	char *t = shares_text(&mg, s, 0);
	ck_assert_str_eq(t, "ranks 0,2: 2 x 8.0 MiB; rank 1: 1 x 4.0 MiB in 2 allocations; rank 3: 1 x 4.0 MiB");
	free(t);
	t = shares_text(&mg, &mg.v[1], 0);
	ck_assert_str_eq(t, "rank 2: 1 x 3.0 MiB in 3 allocations");
	free(t);
	t = shares_text(&mg, &mg.v[1], 1);
	ck_assert_str_eq(t, "rank 2: 1 x +3.0 MiB");
	free(t);
	ct_merge_free(&mg);
	unjob(ms, 4);
}
END_TEST

/* ---- reports ------------------------------------------------------------------------------- */

/* --per-dump of the job (the merged reports: tests/golden/cases/ranks-*) */
START_TEST(per_dump_reports)
{
	struct ct_model *ms[4];
	/* given out of order: the reports go by rank */
	job(ms, (const int[]){3, 1, 0, 2}, 0x1234);
	/* --per-dump: the sections and the document of before */
	char *out = render_n(ms, 4, CT_CMD_LEAKS, CT_FMT_TEXT, 1);
	ck_assert_ptr_nonnull(strstr(out, "cumtrace leaks: 2 allocations, 96.0 MiB (100663296 bytes) not freed in pid 1003 (train)\n"));
	ck_assert_ptr_null(strstr(out, "ranks 0-3"));
	free(out);
	out = render_n(ms, 4, CT_CMD_PEAK, CT_FMT_JSON, 1);
	ck_assert_ptr_null(strstr(out, "\"ranks\""));
	ck_assert_ptr_null(strstr(out, "\"merged\""));
	free(out);
	/* one dump: nothing merged */
	out = render_n(ms, 1, CT_CMD_LEAKS, CT_FMT_JSON, 0);
	ck_assert_ptr_null(strstr(out, "\"merged\""));
	free(out);
	unjob(ms, 4);
}
END_TEST

/* ---- progress ------------------------------------------------------------------------------- */

START_TEST(progress_line)
{
	char line[256];
	ct_progress_format(line, sizeof line, "rank3.dump", 4, 8, 1288490189ull, 2899102924ull, 12300000);
	ck_assert_str_eq(line, "reading rank3.dump (4/8): 44% (1.2 GiB / 2.7 GiB), 12.3M events");
	ct_progress_format(line, sizeof line, "a.dump", 1, 1, 512, 0, 999);
	ck_assert_str_eq(line, "reading a.dump: 512 B, 999 events");
	ct_progress_format(line, sizeof line, "a.dump", 1, 1, 10, 10, 45100);
	ck_assert_str_eq(line, "reading a.dump: 100% (10 B / 10 B), 45.1k events");

	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ct_progress p;
	/* not yet past the delay: nothing */
	ct_progress_setup(&p, f, 3600000, 0);
	ct_progress_file(&p, "/some/dir/rank\0331.dump", 1, 2);
	ct_progress_update(&p, 5, 10, 1);
	ct_progress_clear(&p);
	fflush(f);
	ck_assert_uint_eq(len, 0);
	/* at once, every update; the name's control byte is shown as '?'; a shorter
	 * line is padded over the longer one; clearing blanks it */
	ct_progress_setup(&p, f, 0, 0);
	ct_progress_file(&p, "/some/dir/rank\0331.dump", 1, 2);
	ct_progress_update(&p, 5, 10, 1000);
	ct_progress_file(&p, "r.dump", 2, 2);
	ct_progress_update(&p, 10, 10, 1);
	ct_progress_clear(&p);
	fclose(f);
	const char *l1 = "reading rank?1.dump (1/2): 50% (5 B / 10 B), 1.0k events";
	const char *l2 = "reading r.dump (2/2): 100% (10 B / 10 B), 1 events";
	char want[512];
	int w1 = (int)strlen(l1), pad = w1 - (int)strlen(l2);
	snprintf(want, sizeof want, "\r%s\r%s%*s\r%*s\r", l1, l2, pad, "", w1, "");
	ck_assert_str_eq(buf, want);
	free(buf);
	/* off: no stream */
	ct_progress_setup(&p, NULL, 0, 0);
	ct_progress_update(&p, 1, 2, 3);
	ct_progress_clear(&p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ranks");
	TCase *tc = tcase_create("ranks");
	tcase_add_test(tc, rank_sources_and_order);
	tcase_add_test(tc, process_tree);
	tcase_add_test(tc, rank_lists);
	tcase_add_test(tc, merge_by_identity_across_load_addresses);
	tcase_add_test(tc, merge_adds_and_groups_shares);
	tcase_add_test(tc, per_dump_reports);
	tcase_add_test(tc, progress_line);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
