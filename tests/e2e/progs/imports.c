/*
 * Imported and shared memory, multicast (issue 19 §4; tests/e2e/t_imports.sh):
 * every path once, in one process, against the fake runtime (linked) and the
 * fake driver (dlopen + dlsym). The fake maps an opened IPC handle or an
 * imported pool pointer as memory of its own (the real driver refuses a
 * handle of the same process), and an imported shareable handle as a new
 * handle on the same memory.
 *
 *   L   cudaMalloc 1 MiB, leaked                          (the one leak)
 *   B   cudaMalloc 8 MiB; cudaIpcGetMemHandle(B)          export 1 (8 MiB)
 *       cudaIpcCloseMemHandle(B) fails (not opened)       (a failed call)
 *       open the handle twice: I1, I2                     imports 1, 2 (8 MiB each)
 *       close I1; I2 stays open at exit                   release 1; live at exit 1
 *       cudaFree(B)
 *   P   cudaMallocAsync 1 MiB; cudaMemPoolExportPointer   export 2 (1 MiB)
 *       cudaMemPoolImportPointer -> Q; cudaFree(Q)         import 3 (1 MiB), release 2
 *       cudaFreeAsync(P), synchronize
 *   H1  cuMemCreate 2 MiB; export as a file descriptor   export 3 (2 MiB)
 *       import it -> H2; map H2 at V1 (2 MiB)             import 4 (handle), 1 mapping (2 MiB)
 *       cuMemRelease(H2); cuMemUnmap(V1)                   releases 3, 4
 *       cuMemAddressFree(V1); cuMemRelease(H1)
 *   H3  cuMemCreate 4 MiB, mapped at V2; retain twice, release twice (NCCL's
 *       ncclCuMemFree: retain, release, unmap, release); unmap; release H3;
 *       free V2                                           retains 2, released 2
 *   MC  cuMulticastCreate (2 devices, 2 MiB); add devices 0 and 1;
 *       H4 = cuMemCreate 2 MiB; bind H4 (BindMem); unbind on device 0;
 *       map H4 at V3; bind V3 (BindAddr); unbind on device 1; unmap;
 *       release H4; release MC                             multicast 1, released
 *       MC2 = cuMulticastCreate (1 device, 2 MiB), never released: live at exit
 *
 * Imports: 4 (IPC 2, pool pointer 1, shareable handle 1), mappings 1, bytes
 * 8 + 8 + 1 + 2 MiB = 19 MiB; releases 4; live at exit 1 (8 MiB); exports 3
 * (8 + 1 + 2 = 11 MiB); retains 2 (released 2); multicast objects 2 (4 MiB),
 * released 1, live at exit 1, devices added 2, binds 2 (4 MiB), unbinds 2.
 * Leaks: 1, 1 MiB. No free is unmatched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "common.h"

#define MiB (1024ul * 1024ul)

static void *libcuda;

static void *drv(const char *name)
{
	void *fn = dlsym(libcuda, name);
	if (!fn) {
		fprintf(stderr, "no %s\n", name);
		exit(3);
	}
	return fn;
}

#define DRV(name) ((__typeof__(&name))drv(#name))
#define DCHECK(call)                                                                       \
	do {                                                                               \
		CUresult dcheck_rc_ = (call);                                              \
		if (dcheck_rc_ != CUDA_SUCCESS) {                                          \
			fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, \
				(int)dcheck_rc_);                                          \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

static CUmemAllocationProp vmm_prop(int dev)
{
	CUmemAllocationProp p;
	memset(&p, 0, sizeof p);
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	return p;
}

static NOINLINE void ipc_paths(void)
{
	void *b, *i1, *i2;
	cudaIpcMemHandle_t h;
	CHECK(cudaMalloc(&b, 8 * MiB));
	CHECK(cudaIpcGetMemHandle(&h, b));
	printf("close of a pointer never opened: %d\n", (int)cudaIpcCloseMemHandle(b));
	CHECK(cudaIpcOpenMemHandle(&i1, h, cudaIpcMemLazyEnablePeerAccess));
	CHECK(cudaIpcOpenMemHandle(&i2, h, cudaIpcMemLazyEnablePeerAccess));
	memset(i2, 0x5a, 4096);
	CHECK(cudaIpcCloseMemHandle(i1));
	CHECK(cudaFree(b));
	printf("ipc: opened twice, closed once\n");
}

static NOINLINE void pool_paths(void)
{
	void *p, *q;
	cudaMemPool_t pool;
	struct cudaMemPoolPtrExportData ed;
	CHECK(cudaMallocAsync(&p, 1 * MiB, 0));
	CHECK(cudaMemPoolExportPointer(&ed, p));
	CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
	CHECK(cudaMemPoolImportPointer(&q, pool, &ed));
	CHECK(cudaFree(q));
	CHECK(cudaFreeAsync(p, 0));
	CHECK(cudaStreamSynchronize(0));
	printf("pool: pointer exported, imported, freed\n");
}

static NOINLINE void shareable_paths(void)
{
	CUmemAllocationProp prop = vmm_prop(0);
	CUmemGenericAllocationHandle h1, h2;
	CUdeviceptr v1;
	int fd = -1;
	DCHECK(DRV(cuMemCreate)(&h1, 2 * MiB, &prop, 0));
	DCHECK(DRV(cuMemExportToShareableHandle)(&fd, h1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	DCHECK(DRV(cuMemImportFromShareableHandle)(&h2, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	close(fd);
	DCHECK(DRV(cuMemAddressReserve)(&v1, 2 * MiB, 0, 0, 0));
	DCHECK(DRV(cuMemMap)(v1, 2 * MiB, 0, h2, 0));
	DCHECK(DRV(cuMemRelease)(h2));
	DCHECK(DRV(cuMemUnmap)(v1, 2 * MiB));
	DCHECK(DRV(cuMemAddressFree)(v1, 2 * MiB));
	DCHECK(DRV(cuMemRelease)(h1));
	printf("shareable: exported, imported, mapped, released\n");
}

static NOINLINE void retain_paths(void)
{
	CUmemAllocationProp prop = vmm_prop(0);
	CUmemGenericAllocationHandle h3, r1, r2;
	CUdeviceptr v2;
	DCHECK(DRV(cuMemAddressReserve)(&v2, 4 * MiB, 0, 0, 0));
	DCHECK(DRV(cuMemCreate)(&h3, 4 * MiB, &prop, 0));
	DCHECK(DRV(cuMemMap)(v2, 4 * MiB, 0, h3, 0));
	DCHECK(DRV(cuMemRetainAllocationHandle)(&r1, (void *)v2));
	DCHECK(DRV(cuMemRelease)(r1));
	DCHECK(DRV(cuMemRetainAllocationHandle)(&r2, (void *)v2));
	DCHECK(DRV(cuMemRelease)(r2));
	DCHECK(DRV(cuMemUnmap)(v2, 4 * MiB));
	DCHECK(DRV(cuMemRelease)(h3));
	DCHECK(DRV(cuMemAddressFree)(v2, 4 * MiB));
	printf("retain: the same handle: %d\n", r1 == h3 && r2 == h3);
}

static NOINLINE void multicast_paths(void)
{
	CUmemAllocationProp prop = vmm_prop(0);
	CUmulticastObjectProp mp;
	CUmemGenericAllocationHandle mc, mc2, h4;
	CUdeviceptr v3;
	memset(&mp, 0, sizeof mp);
	mp.numDevices = 2;
	mp.size = 2 * MiB;
	mp.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	DCHECK(DRV(cuMulticastCreate)(&mc, &mp));
	DCHECK(DRV(cuMulticastAddDevice)(mc, 0));
	DCHECK(DRV(cuMulticastAddDevice)(mc, 1));
	DCHECK(DRV(cuMemCreate)(&h4, 2 * MiB, &prop, 0));
	DCHECK(DRV(cuMulticastBindMem)(mc, 0, h4, 0, 2 * MiB, 0));
	DCHECK(DRV(cuMulticastUnbind)(mc, 0, 0, 2 * MiB));
	DCHECK(DRV(cuMemAddressReserve)(&v3, 2 * MiB, 0, 0, 0));
	DCHECK(DRV(cuMemMap)(v3, 2 * MiB, 0, h4, 0));
	DCHECK(DRV(cuMulticastBindAddr)(mc, 0, v3, 2 * MiB, 0));
	DCHECK(DRV(cuMulticastUnbind)(mc, 1, 0, 2 * MiB));
	DCHECK(DRV(cuMemUnmap)(v3, 2 * MiB));
	DCHECK(DRV(cuMemAddressFree)(v3, 2 * MiB));
	DCHECK(DRV(cuMemRelease)(h4));
	DCHECK(DRV(cuMemRelease)(mc));
	mp.numDevices = 1;
	DCHECK(DRV(cuMulticastCreate)(&mc2, &mp));
	printf("multicast: bound, unbound, released; one left\n");
}

int main(void)
{
	void *leak;
	CHECK(cudaSetDevice(0));
	CHECK(cudaMalloc(&leak, 1 * MiB));
	libcuda = dlopen("libcuda.so.1", RTLD_NOW);
	if (!libcuda) {
		fprintf(stderr, "no libcuda.so.1\n");
		return 3;
	}
	ipc_paths();
	pool_paths();
	shareable_paths();
	retain_paths();
	multicast_paths();
	return 0;
}
