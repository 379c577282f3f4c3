/*
 * One rank of a fake distributed job (tests/e2e/t_ranks.sh, started by
 * tests/e2e/fake_torchrun.sh): RANK and LOCAL_RANK come from the launcher.
 *   every rank:   leak_shared   64 MiB, never freed     (the same site everywhere)
 *   rank 3 only:  leak_extra    32 MiB, never freed
 *   every rank:   step          (RANK + 1) x 16 MiB, freed: each rank's peak
 * Peaks: 80, 96, 112 and 160 MiB for ranks 0-3; leaks: 4 x 64 MiB + 32 MiB.
 */
#include "common.h"

#define MiB (1024ul * 1024ul)

NOINLINE static void *leak_shared(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 64 * MiB));
	return p;
}

NOINLINE static void *leak_extra(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 32 * MiB));
	return p;
}

NOINLINE static void step(int rank)
{
	void *p;
	CHECK(cudaMalloc(&p, (size_t)(rank + 1) * 16 * MiB));
	CHECK(cudaFree(p));
}

int main(void)
{
	const char *r = getenv("RANK"), *l = getenv("LOCAL_RANK");
	if (!r || !l) {
		fputs("rank_worker: RANK and LOCAL_RANK must be set (run it through a launcher)\n", stderr);
		return 2;
	}
	int rank = atoi(r);
	CHECK(cudaSetDevice(atoi(l)));
	leak_shared();
	if (rank == 3)
		leak_extra();
	step(rank);
	return 0;
}
