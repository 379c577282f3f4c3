/*
 * A fake libnccl.so.2 (issue 19 §5), for the tests of cumtrace's NCCL hooks:
 * single-process communicators (nranks 1; more is ncclInvalidUsage, where
 * the real one would wait for its peers) whose memory comes from the fake
 * driver the way NCCL's cuMem path gets it (src/include/alloc.h):
 * ncclCuMemAlloc = cuMemCreate + cuMemAddressReserve + cuMemMap +
 * cuMemSetAccess, ncclCuMemFree = cuMemRetainAllocationHandle, cuMemRelease,
 * cuMemUnmap, cuMemRelease, cuMemAddressFree.
 *
 *   init (InitRank, InitRankConfig, InitAll: each communicator)  4 MiB
 *   ncclCommSplit: the new communicator                            2 MiB
 *   the first ncclAllReduce of a communicator (NCCL connects lazily) 2 MiB
 *   ncclMemAlloc(size)   size rounded up to 2 MiB
 * Destroy and abort free what the communicator holds. Register and window
 * register keep a record of their own (host memory). ncclAllReduce of one
 * rank copies sendbuff to recvbuff.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

#define MiB ((size_t)1 << 20)
#define GRAN (2 * MiB)

struct ncclComm {
	int dev, rank, nranks;
	CUdeviceptr buf, conn;
	size_t buf_size;
};

struct reg {
	struct ncclComm *comm;
	void *buff;
	size_t size;
};

static ncclResult_t cu(CUresult r)
{
	return r == CUDA_SUCCESS ? ncclSuccess : ncclUnhandledCudaError;
}

#define CK(call)                                                                                   \
	do {                                                                                       \
		ncclResult_t ck_ = cu(call);                                                       \
		if (ck_)                                                                           \
			return ck_;                                                                \
	} while (0)

static ncclResult_t cumem_alloc(CUdeviceptr *ptr, size_t size, int dev)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h;
	memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	size = (size + GRAN - 1) / GRAN * GRAN;
	CK(cuMemCreate(&h, size, &prop, 0));
	CK(cuMemAddressReserve(ptr, size, GRAN, 0, 0));
	CK(cuMemMap(*ptr, size, 0, h, 0));
	memset(&acc, 0, sizeof acc);
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemSetAccess(*ptr, size, &acc, 1));
	return ncclSuccess;
}

static ncclResult_t cumem_free(CUdeviceptr ptr)
{
	CUmemGenericAllocationHandle h;
	size_t size = 0;
	if (!ptr)
		return ncclSuccess;
	CK(cuMemRetainAllocationHandle(&h, (void *)ptr));
	CK(cuMemRelease(h));
	CK(cuMemGetAddressRange(NULL, &size, ptr));
	CK(cuMemUnmap(ptr, size));
	CK(cuMemRelease(h));
	CK(cuMemAddressFree(ptr, size));
	return ncclSuccess;
}

static int current_dev(void)
{
	CUdevice d = 0;
	return cuCtxGetDevice(&d) == CUDA_SUCCESS ? (int)d : 0;
}

static ncclResult_t comm_new(ncclComm_t *out, int dev, int rank, int nranks, size_t bytes)
{
	struct ncclComm *c;
	ncclResult_t r;
	if (!out || nranks != 1 || rank != 0)
		return out ? ncclInvalidUsage : ncclInvalidArgument;
	if (!(c = calloc(1, sizeof *c)))
		return ncclSystemError;
	c->dev = dev;
	c->rank = rank;
	c->nranks = nranks;
	c->buf_size = bytes;
	if ((r = cumem_alloc(&c->buf, bytes, dev))) {
		free(c);
		return r;
	}
	*out = c;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	static unsigned long long next = 0x5eed;
	if (!id)
		return ncclInvalidArgument;
	memset(id, 0, sizeof *id);
	next = next * 6364136223846793005ull + 1442695040888963407ull;
	memcpy(id->internal, &next, sizeof next);
	return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	(void)commId;
	return comm_new(comm, current_dev(), rank, nranks, 4 * MiB);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	(void)config;
	return ncclCommInitRank(comm, nranks, commId, rank);
}

/* One communicator per device of one process: each of them rank 0 of 1 here. */
ncclResult_t ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	if (!comm || ndev < 1)
		return ncclInvalidArgument;
	for (int i = 0; i < ndev; i++) {
		ncclResult_t r = comm_new(&comm[i], devlist ? devlist[i] : i, 0, 1, 4 * MiB);
		if (r)
			return r;
	}
	return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
	(void)key;
	(void)config;
	if (!comm || !newcomm)
		return ncclInvalidArgument;
	if (color == NCCL_SPLIT_NOCOLOR) {
		*newcomm = NULL;
		return ncclSuccess;
	}
	return comm_new(newcomm, comm->dev, 0, 1, 2 * MiB);
}

static ncclResult_t comm_end(ncclComm_t comm)
{
	ncclResult_t r;
	if (!comm)
		return ncclInvalidArgument;
	if ((r = cumem_free(comm->conn)) || (r = cumem_free(comm->buf)))
		return r;
	free(comm);
	return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	return comm_end(comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return comm_end(comm);
}

ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
	CUdeviceptr d = 0;
	ncclResult_t r;
	if (!ptr || !size)
		return ncclInvalidArgument;
	if ((r = cumem_alloc(&d, size, current_dev())))
		return r;
	*ptr = (void *)d;
	return ncclSuccess;
}

ncclResult_t ncclMemFree(void *ptr)
{
	return cumem_free((CUdeviceptr)ptr);
}

static ncclResult_t reg_new(ncclComm_t comm, void *buff, size_t size, void **out)
{
	struct reg *g;
	if (!comm || !buff || !size || !out)
		return ncclInvalidArgument;
	if (!(g = malloc(sizeof *g)))
		return ncclSystemError;
	g->comm = comm;
	g->buff = buff;
	g->size = size;
	*out = g;
	return ncclSuccess;
}

static ncclResult_t reg_end(ncclComm_t comm, void *h)
{
	struct reg *g = h;
	if (!g || g->comm != comm)
		return ncclInvalidArgument;
	free(g);
	return ncclSuccess;
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
	return reg_new(comm, buff, size, handle);
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
	return reg_end(comm, handle);
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags)
{
	(void)winFlags;
	return reg_new(comm, buff, size, (void **)win);
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
	return reg_end(comm, win);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
			   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	size_t elem = datatype == ncclInt8 ? 1 : datatype == ncclInt32 || datatype == ncclFloat32 ? 4 : 0;
	ncclResult_t r;
	(void)stream;
	if (!comm || !elem || op != ncclSum)
		return ncclInvalidArgument;
	if (!comm->conn && (r = cumem_alloc(&comm->conn, 2 * MiB, comm->dev)))
		return r;
	if (sendbuff != recvbuff)
		memmove(recvbuff, sendbuff, count * elem);
	return ncclSuccess;
}
