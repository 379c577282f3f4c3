/*
 * A statically linked runtime, as far as cumtrace can tell: the program uses
 * no libcudart at all (it checks that none is loaded), dlopen's libcuda.so.1,
 * takes only cuGetProcAddress_v2 from dlsym and gets every driver function
 * through it, as libcudart_static does (tests/e2e/t_paths_static.sh).
 *
 * Traced calls: cuMemAlloc_v2 6 (1, 2, ..., 6 MiB), cuMemFree_v2 4 (the
 * first four), cuMemAllocHost_v2 3 (4 KiB each), cuMemFreeHost 2.
 * Leaked: 5 MiB + 6 MiB device, 4 KiB pinned host. Peak device: 21 MiB.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>

#define KiB 1024ul
#define MiB (1024ul * 1024ul)

typedef CUresult (*gpa2_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*init_t)(unsigned);
typedef CUresult (*devget_t)(CUdevice *, int);
typedef CUresult (*retain_t)(CUcontext *, CUdevice);
typedef CUresult (*setcur_t)(CUcontext);
typedef CUresult (*alloc_t)(CUdeviceptr *, size_t);
typedef CUresult (*free_t)(CUdeviceptr);
typedef CUresult (*halloc_t)(void **, size_t);
typedef CUresult (*hfree_t)(void *);

static gpa2_t gpa;

static void *get(const char *name)
{
	void *fn = NULL;
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult rc = gpa(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
	printf("cuGetProcAddress_v2(%s) rc=%d status=%d\n", name, (int)rc, (int)st);
	if (rc != CUDA_SUCCESS || !fn)
		exit(3);
	return fn;
}

#define CHECK(call)                                                                        \
	do {                                                                               \
		CUresult rc_ = (call);                                                     \
		printf("%-40s rc=%d\n", #call, (int)rc_);                                  \
		if (rc_ != CUDA_SUCCESS)                                                   \
			exit(3);                                                           \
	} while (0)

int main(void)
{
	if (dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD)) {
		fprintf(stderr, "libcudart is loaded: not a static-runtime stand-in\n");
		return 4;
	}
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 3;
	gpa = (gpa2_t)dlsym(h, "cuGetProcAddress_v2");
	if (!gpa)
		return 3;
	init_t cuInit_ = (init_t)get("cuInit");
	devget_t cuDeviceGet_ = (devget_t)get("cuDeviceGet");
	retain_t cuDevicePrimaryCtxRetain_ = (retain_t)get("cuDevicePrimaryCtxRetain");
	setcur_t cuCtxSetCurrent_ = (setcur_t)get("cuCtxSetCurrent");
	alloc_t cuMemAlloc_ = (alloc_t)get("cuMemAlloc");
	free_t cuMemFree_ = (free_t)get("cuMemFree");
	halloc_t cuMemAllocHost_ = (halloc_t)get("cuMemAllocHost");
	hfree_t cuMemFreeHost_ = (hfree_t)get("cuMemFreeHost");

	CUdevice dev = -1;
	CUcontext ctx = NULL;
	CHECK(cuInit_(0));
	CHECK(cuDeviceGet_(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain_(&ctx, dev));
	CHECK(cuCtxSetCurrent_(ctx));
	CUdeviceptr d[6];
	for (int i = 0; i < 6; i++)
		CHECK(cuMemAlloc_(&d[i], (size_t)(i + 1) * MiB));
	for (int i = 0; i < 4; i++)
		CHECK(cuMemFree_(d[i]));
	void *hp[3];
	for (int i = 0; i < 3; i++)
		CHECK(cuMemAllocHost_(&hp[i], 4 * KiB));
	for (int i = 0; i < 2; i++)
		CHECK(cuMemFreeHost_(hp[i]));
	return 0;
}
