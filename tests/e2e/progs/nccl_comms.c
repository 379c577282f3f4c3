/*
 * NCCL communicators and their memory (issue 19 §5; tests/e2e/t_nccl_comms.sh),
 * against the fake libnccl (tests/fake/nccl.c: init 4 MiB, split 2 MiB, a
 * communicator's first all-reduce 2 MiB, all through NCCL's cuMem path).
 *
 *   A = ncclCommInitRank (4 MiB), B = ncclCommInitRankConfig (4 MiB)
 *   P = ncclMemAlloc 3 MiB (4 MiB of device memory); register P with A,
 *       window-register P with B; an all-reduce on A: its connection buffer
 *       (2 MiB, made by libnccl outside any init); deregister both; free P
 *   destroy A and B
 *   C = ncclCommInitRank (4 MiB), D = ncclCommSplit(C) (2 MiB); abort D;
 *   a split with NCCL_SPLIT_NOCOLOR (no communicator); C is never destroyed:
 *   its 4 MiB is the program's one leak
 */
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "nccl.h"

#define MiB (1024ul * 1024ul)
#define NCHECK(call)                                                                       \
	do {                                                                               \
		ncclResult_t nc_ = (call);                                                 \
		if (nc_ != ncclSuccess) {                                                  \
			fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, \
				(int)nc_);                                                 \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

static NOINLINE ncclComm_t init_a(void)
{
	ncclUniqueId id;
	ncclComm_t c;
	NCHECK(ncclGetUniqueId(&id));
	NCHECK(ncclCommInitRank(&c, 1, id, 0));
	return c;
}

static NOINLINE ncclComm_t init_b(void)
{
	ncclUniqueId id;
	ncclComm_t c;
	NCHECK(ncclGetUniqueId(&id));
	NCHECK(ncclCommInitRankConfig(&c, 1, id, 0, NULL));
	return c;
}

static NOINLINE void buffers(ncclComm_t a, ncclComm_t b)
{
	void *p, *h;
	ncclWindow_t w;
	NCHECK(ncclMemAlloc(&p, 3 * MiB));
	NCHECK(ncclCommRegister(a, p, 3 * MiB, &h));
	NCHECK(ncclCommWindowRegister(b, p, 3 * MiB, &w, 1));
	NCHECK(ncclAllReduce(p, p, 1024, ncclFloat, ncclSum, a, 0));
	NCHECK(ncclCommWindowDeregister(b, w));
	NCHECK(ncclCommDeregister(a, h));
	NCHECK(ncclMemFree(p));
}

static NOINLINE void split(void)
{
	ncclUniqueId id;
	ncclComm_t c, d, none;
	NCHECK(ncclGetUniqueId(&id));
	NCHECK(ncclCommInitRank(&c, 1, id, 0));
	NCHECK(ncclCommSplit(c, 0, 0, &d, NULL));
	NCHECK(ncclCommSplit(c, NCCL_SPLIT_NOCOLOR, 0, &none, NULL));
	NCHECK(ncclCommAbort(d));
	printf("split: no communicator for no color: %d\n", none == NULL);
}

int main(void)
{
	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(0));
	ncclComm_t a = init_a(), b = init_b();
	buffers(a, b);
	NCHECK(ncclCommDestroy(a));
	NCHECK(ncclCommDestroy(b));
	split();
	printf("nccl: done\n");
	return 0;
}
