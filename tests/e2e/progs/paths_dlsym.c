/*
 * Capture path: functions found with dlsym. The program links neither the
 * runtime nor the driver: it dlopen's both RTLD_LOCAL and looks names up on
 * the handles; then it promotes the runtime to RTLD_GLOBAL and looks names up
 * with RTLD_DEFAULT and RTLD_NEXT. Prints return codes and pointer identities
 * (never pointers), the same with and without the shim
 * (tests/e2e/t_paths_dlsym.sh).
 *
 * Traced calls: cuMemAlloc_v2 4, cuMemFree_v2 3 (handle on libcuda);
 * cudaMalloc 5 + 1 + 1, cudaFree 4 + 1 + 1 (handle, RTLD_DEFAULT, RTLD_NEXT);
 * cudaMallocHost 1, cudaFreeHost 1 (RTLD_DEFAULT).
 * Leaked: one 256 KiB cuMemAlloc_v2 block, one 128 KiB cudaMalloc block.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define KiB 1024ul

typedef cudaError_t (*rt_malloc_t)(void **, size_t);
typedef cudaError_t (*rt_free_t)(void *);
typedef CUresult (*init_t)(unsigned);
typedef CUresult (*devget_t)(CUdevice *, int);
typedef CUresult (*retain_t)(CUcontext *, CUdevice);
typedef CUresult (*setcur_t)(CUcontext);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);

static void *need(void *h, const char *name)
{
	void *fn = dlsym(h, name);
	if (!fn) {
		fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
		exit(3);
	}
	return fn;
}

#define SHOW(what, call) printf("%-36s rc=%d\n", what, (int)(call))

int main(void)
{
	/* The driver through a handle. */
	void *hd = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!hd)
		return 3;
	init_t init = (init_t)need(hd, "cuInit");
	devget_t devget = (devget_t)need(hd, "cuDeviceGet");
	retain_t retain = (retain_t)need(hd, "cuDevicePrimaryCtxRetain");
	setcur_t setcur = (setcur_t)need(hd, "cuCtxSetCurrent");
	alloc_t ma = (alloc_t)need(hd, "cuMemAlloc_v2");
	free_t mf = (free_t)need(hd, "cuMemFree_v2");
	CUdevice dev = -1;
	CUcontext ctx = NULL;
	SHOW("cuInit", init(0));
	SHOW("cuDeviceGet", devget(&dev, 0));
	SHOW("cuDevicePrimaryCtxRetain", retain(&ctx, dev));
	SHOW("cuCtxSetCurrent", setcur(ctx));
	CUdeviceptr d[4];
	for (int i = 0; i < 4; i++)
		SHOW("cuMemAlloc_v2 256KiB (handle)", ma(&d[i], 256 * KiB));
	for (int i = 0; i < 3; i++)
		SHOW("cuMemFree_v2 (handle)", mf(d[i]));
	printf("dlsym(libcuda, cuNoSuchFunction) null=%d\n", dlsym(hd, "cuNoSuchFunction") == NULL);

	/* The runtime through a handle. */
	void *hr = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!hr)
		return 3;
	rt_malloc_t rm = (rt_malloc_t)need(hr, "cudaMalloc");
	rt_free_t rf = (rt_free_t)need(hr, "cudaFree");
	void *p[5];
	for (int i = 0; i < 5; i++)
		SHOW("cudaMalloc 128KiB (handle)", rm(&p[i], 128 * KiB));
	for (int i = 0; i < 4; i++)
		SHOW("cudaFree (handle)", rf(p[i]));
	printf("dlsym(libcudart, cudaNoSuchFunction) null=%d\n", dlsym(hr, "cudaNoSuchFunction") == NULL);
	/* A second lookup hands out the same function. */
	printf("dlsym(libcudart, cudaMalloc) stable=%d\n", dlsym(hr, "cudaMalloc") == (void *)rm);

	/* Global now: RTLD_DEFAULT and RTLD_NEXT find working functions. */
	if (!dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
		return 3;
	rt_malloc_t dm = (rt_malloc_t)need(RTLD_DEFAULT, "cudaMalloc");
	rt_free_t df = (rt_free_t)need(RTLD_DEFAULT, "cudaFree");
	void *q = NULL;
	SHOW("cudaMalloc 4KiB (RTLD_DEFAULT)", dm(&q, 4 * KiB));
	SHOW("cudaFree (RTLD_DEFAULT)", df(q));
	rt_malloc_t nm = (rt_malloc_t)need(RTLD_NEXT, "cudaMalloc");
	rt_free_t nf = (rt_free_t)need(RTLD_NEXT, "cudaFree");
	SHOW("cudaMalloc 8KiB (RTLD_NEXT)", nm(&q, 8 * KiB));
	SHOW("cudaFree (RTLD_NEXT)", nf(q));
	printf("RTLD_DEFAULT cudaMalloc == RTLD_NEXT cudaMalloc: %d\n", dm == nm);
	/* Never looked up on a handle before. */
	rt_malloc_t dh = (rt_malloc_t)need(RTLD_DEFAULT, "cudaMallocHost");
	rt_free_t dfh = (rt_free_t)need(RTLD_DEFAULT, "cudaFreeHost");
	SHOW("cudaMallocHost 4KiB (RTLD_DEFAULT)", dh(&q, 4 * KiB));
	SHOW("cudaFreeHost (RTLD_DEFAULT)", dfh(q));
	printf("dlsym(RTLD_DEFAULT, cudaNoSuchFunction) null=%d\n",
	       dlsym(RTLD_DEFAULT, "cudaNoSuchFunction") == NULL);
	return 0;
}
