/*
 * CUDA arrays on a real device (issue 19, 3; tests/gpu/array_check.sh): large enough that the
 * device's own accounting (cudaMemGetInfo, 2 MiB pages) shows each one.
 *
 *   A1 cudaMallocArray float4 2048 x 1024            32 MiB   LEAKED
 *   A2 cudaMalloc3DArray uchar4 256 x 256 x 64       16 MiB   freed
 *   A3 cudaMallocMipmappedArray float1 4096 x 4096,
 *      3 levels: (16M + 4M + 1M) x 4 bytes          84 MiB   LEAKED
 *   A4 cuArrayCreate_v2 FLOAT x 2, 4096 x 1024       32 MiB   destroyed
 *   A5 cuArray3DCreate_v2 INT8 x 4, layered
 *      1024 x 1024, 8 layers                        32 MiB   LEAKED
 * Prints, for each: "ARRAY name bytes=N delta=D" (D: the fall of cudaMemGetInfo's free bytes
 * across its creation), and "GROUND_TRUTH leaked_count=3 leaked_bytes=N".
 * Host code only (no kernel): build with gcc -x c or nvcc; link -lcudart -lcuda.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                               \
	do {                                                                                   \
		cudaError_t e_ = (call);                                                       \
		if (e_ != cudaSuccess) {                                                       \
			fprintf(stderr, "leak_array: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(3);                                                               \
		}                                                                              \
	} while (0)
#define CKD(call)                                                                  \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS) {                                          \
			fprintf(stderr, "leak_array: %s: %d\n", #call, (int)r_); \
			exit(3);                                                   \
		}                                                                  \
	} while (0)

static size_t free_now(void)
{
	size_t f, t;
	CK(cudaDeviceSynchronize());
	CK(cudaMemGetInfo(&f, &t));
	return f;
}

static void report(const char *name, unsigned long long bytes, size_t before)
{
	size_t after = free_now();
	printf("ARRAY %s bytes=%llu delta=%lld\n", name, bytes, (long long)before - (long long)after);
}

int main(void)
{
	CK(cudaSetDevice(0));
	CK(cudaFree(0));
	size_t f;
	struct cudaChannelFormatDesc f4 = {32, 32, 32, 32, cudaChannelFormatKindFloat};
	struct cudaChannelFormatDesc u4 = {8, 8, 8, 8, cudaChannelFormatKindUnsigned};
	struct cudaChannelFormatDesc f1 = {32, 0, 0, 0, cudaChannelFormatKindFloat};
	cudaArray_t a1, a2;
	cudaMipmappedArray_t a3;
	CUarray a4, a5;

	f = free_now();
	CK(cudaMallocArray(&a1, &f4, 2048, 1024, 0));
	report("A1", 2048ull * 1024 * 16, f);
	f = free_now();
	struct cudaExtent e2 = {256, 256, 64};
	CK(cudaMalloc3DArray(&a2, &u4, e2, 0));
	report("A2", 256ull * 256 * 64 * 4, f);
	f = free_now();
	struct cudaExtent e3 = {4096, 4096, 0};
	CK(cudaMallocMipmappedArray(&a3, &f1, e3, 3, 0));
	report("A3", (4096ull * 4096 + 2048ull * 2048 + 1024ull * 1024) * 4, f);
	f = free_now();
	CUDA_ARRAY_DESCRIPTOR d4 = {4096, 1024, CU_AD_FORMAT_FLOAT, 2};
	CKD(cuArrayCreate(&a4, &d4));
	report("A4", 4096ull * 1024 * 8, f);
	f = free_now();
	CUDA_ARRAY3D_DESCRIPTOR d5 = {1024, 1024, 8, CU_AD_FORMAT_SIGNED_INT8, 4, CUDA_ARRAY3D_LAYERED};
	CKD(cuArray3DCreate(&a5, &d5));
	report("A5", 1024ull * 1024 * 8 * 4, f);

	CK(cudaFreeArray(a2));
	CKD(cuArrayDestroy(a4));
	unsigned long long leaked = 2048ull * 1024 * 16 + (4096ull * 4096 + 2048ull * 2048 + 1024ull * 1024) * 4 +
				    1024ull * 1024 * 8 * 4;
	printf("GROUND_TRUTH leaked_count=3 leaked_bytes=%llu\n", leaked);
	/* compute-sanitizer's words for the same arrays: elements, not bytes, each mipmap level apart */
	printf("SANITIZER_VIEW count=5 elements=%llu sizes=%llu,%llu,%llu,%llu,%llu\n",
	       2048ull * 1024 + 4096ull * 4096 + 2048ull * 2048 + 1024ull * 1024 + 1024ull * 1024 * 8,
	       2048ull * 1024, 4096ull * 4096, 2048ull * 2048, 1024ull * 1024, 1024ull * 1024 * 8);
	(void)a1;
	(void)a3;
	(void)a5;
	return 0;
}
