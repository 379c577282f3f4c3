/*
 * CUDA arrays, runtime and driver API (issue 19, tests/e2e/t_arrays.sh). Each array's
 * bytes = width x height x depth x element bytes, summed over mipmap levels:
 *
 *   R1 cudaMallocArray float4 256 x 128          524,288 B  freed (cudaFreeArray)
 *   R2 cudaMalloc3DArray uchar1 64 x 32 x 8        16,384 B  LEAKED
 *   R3 cudaMallocMipmappedArray float1 64 x 64,
 *      4 levels: (4096 + 1024 + 256 + 64) x 4      21,760 B  LEAKED
 *   R4 cudaMallocArray ushort2 1-D, 1000            4,000 B  freed
 *   D1 cuArrayCreate_v2 FLOAT x 2, 100 x 10         8,000 B  destroyed (cuArrayDestroy)
 *   D2 cuArray3DCreate_v2 INT8 x 4, layered
 *      16 x 16, 3 layers                            3,072 B  LEAKED
 *   D3 cuMipmappedArrayCreate HALF x 1, 32 x 32,
 *      2 levels: (1024 + 256) x 2                   2,560 B  destroyed
 * and cudaFreeArray of a handle that is no array: the error code, the same traced.
 * The driver functions come from dlsym on libcuda.so.1. Prints what each call returned and
 * "leaked 41216 in 3" (16,384 + 21,760 + 3,072); the device's free bytes fall by that much
 * between the start and the end (cudaMemGetInfo), printed as "memgetinfo delta N".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include <cuda.h>

#include "common.h"

typedef CUresult (*array_create_t)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
typedef CUresult (*array3d_create_t)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
typedef CUresult (*mip_create_t)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
typedef CUresult (*array_destroy_t)(CUarray);
typedef CUresult (*mip_destroy_t)(CUmipmappedArray);

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "arrays: no %s\n", name);
		exit(3);
	}
	return p;
}

int main(void)
{
	size_t free0, free1, total;
	CHECK(cudaSetDevice(0));
	CHECK(cudaFree(0));
	CHECK(cudaMemGetInfo(&free0, &total));

	cudaArray_t r1, r2, r4;
	cudaMipmappedArray_t r3;
	struct cudaChannelFormatDesc f4 = {32, 32, 32, 32, cudaChannelFormatKindFloat};
	struct cudaChannelFormatDesc u1 = {8, 0, 0, 0, cudaChannelFormatKindUnsigned};
	struct cudaChannelFormatDesc f1 = {32, 0, 0, 0, cudaChannelFormatKindFloat};
	struct cudaChannelFormatDesc us2 = {16, 16, 0, 0, cudaChannelFormatKindUnsigned};
	struct cudaExtent e2 = {64, 32, 8}, e3 = {64, 64, 0};
	CHECK(cudaMallocArray(&r1, &f4, 256, 128, 0));
	CHECK(cudaMalloc3DArray(&r2, &u1, e2, 0));
	CHECK(cudaMallocMipmappedArray(&r3, &f1, e3, 4, 0));
	CHECK(cudaMallocArray(&r4, &us2, 1000, 0, 0));
	printf("runtime arrays made\n");

	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "arrays: %s\n", dlerror());
		return 3;
	}
	array_create_t create = (array_create_t)sym(h, "cuArrayCreate_v2");
	array3d_create_t create3d = (array3d_create_t)sym(h, "cuArray3DCreate_v2");
	mip_create_t mipcreate = (mip_create_t)sym(h, "cuMipmappedArrayCreate");
	array_destroy_t destroy = (array_destroy_t)sym(h, "cuArrayDestroy");
	mip_destroy_t mipdestroy = (mip_destroy_t)sym(h, "cuMipmappedArrayDestroy");
	CUDA_ARRAY_DESCRIPTOR d1 = {.Width = 100, .Height = 10, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 2};
	CUDA_ARRAY3D_DESCRIPTOR d2 = {.Width = 16, .Height = 16, .Depth = 3, .Format = CU_AD_FORMAT_SIGNED_INT8,
				      .NumChannels = 4, .Flags = CUDA_ARRAY3D_LAYERED};
	CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = 32, .Height = 32, .Depth = 0, .Format = CU_AD_FORMAT_HALF,
				      .NumChannels = 1};
	CUarray a1, a2;
	CUmipmappedArray m3;
	printf("cuArrayCreate_v2 %d\n", (int)create(&a1, &d1));
	printf("cuArray3DCreate_v2 %d\n", (int)create3d(&a2, &d2));
	printf("cuMipmappedArrayCreate %d\n", (int)mipcreate(&m3, &d3, 2));
	printf("cuArrayDestroy %d\n", (int)destroy(a1));
	printf("cuMipmappedArrayDestroy %d\n", (int)mipdestroy(m3));

	CHECK(cudaFreeArray(r1));
	CHECK(cudaFreeArray(r4));
	int junk;
	printf("cudaFreeArray(not an array) %d\n", (int)cudaFreeArray((cudaArray_t)&junk));
	(void)cudaGetLastError();
	CHECK(cudaMemGetInfo(&free1, &total));
	printf("memgetinfo delta %zu\n", free0 - free1);
	printf("leaked 41216 in 3\n");
	(void)r2;
	(void)r3;
	(void)a2;
	return 0;
}
