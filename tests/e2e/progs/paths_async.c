/*
 * Stream-ordered allocation with frees on other streams, and a created pool
 * (tests/e2e/t_paths_async.sh). Prints return codes and, on the last line
 * ("handles"), the two created streams and the pool.
 *
 *   p1 = cudaMallocAsync 1 MiB on A, freed on B
 *   p2 = cudaMallocAsync 2 MiB on B, freed on A
 *   p3 = cudaMallocAsync_ptsz 512 KiB on 0 (per-thread: 0x2), freed on A
 *   q1 = cudaMallocFromPoolAsync 256 KiB on A, freed on B
 *   q2 = cudaMallocFromPoolAsync 768 KiB on B, cudaFreeAsync_ptsz on 0 (0x2)
 *   q3 = cudaMallocFromPoolAsync_ptsz 128 KiB on 0 (0x2), freed on 0 (legacy)
 * then synchronisation, cudaMemPoolTrimTo, cudaMemPoolDestroy.
 *
 * Last, which default stream the _ptsz calls really use: a free on a blocking
 * stream is observed by cudaStreamSynchronize(0) (legacy) but not by
 * cudaStreamSynchronize_ptsz(0) (tests/fake/README.md): p4 = 8 MiB on B,
 * freed on B. Nothing leaks; the peak is p4 alone (8 MiB).
 */
#include <string.h>

#include "common.h"

#define KiB 1024ul
#define MiB (1024ul * 1024ul)

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
					 cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);

#define SHOW(call)                                                                         \
	do {                                                                               \
		cudaError_t rc_ = (call);                                                  \
		printf("%-56s rc=%d\n", #call, (int)rc_);                                  \
		if (rc_ != cudaSuccess)                                                    \
			exit(3);                                                           \
	} while (0)

int main(void)
{
	cudaStream_t A, B;
	SHOW(cudaStreamCreateWithFlags(&A, cudaStreamNonBlocking));
	SHOW(cudaStreamCreate(&B)); /* blocking */
	void *p1, *p2, *p3;
	SHOW(cudaMallocAsync(&p1, 1 * MiB, A));
	SHOW(cudaFreeAsync(p1, B));
	SHOW(cudaMallocAsync(&p2, 2 * MiB, B));
	SHOW(cudaFreeAsync(p2, A));
	SHOW(cudaMallocAsync_ptsz(&p3, 512 * KiB, 0));
	SHOW(cudaFreeAsync(p3, A));

	cudaMemPool_t pool;
	struct cudaMemPoolProps props;
	memset(&props, 0, sizeof props);
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	SHOW(cudaMemPoolCreate(&pool, &props));
	void *q1, *q2, *q3;
	SHOW(cudaMallocFromPoolAsync(&q1, 256 * KiB, pool, A));
	SHOW(cudaMallocFromPoolAsync(&q2, 768 * KiB, pool, B));
	SHOW(cudaFreeAsync(q1, B));
	SHOW(cudaFreeAsync_ptsz(q2, 0));
	SHOW(cudaMallocFromPoolAsync_ptsz(&q3, 128 * KiB, pool, 0));
	SHOW(cudaFreeAsync(q3, 0));
	SHOW(cudaStreamSynchronize(A));
	SHOW(cudaStreamSynchronize(B));
	SHOW(cudaStreamSynchronize_ptsz(0));
	SHOW(cudaDeviceSynchronize());
	SHOW(cudaMemPoolTrimTo(pool, 0));
	SHOW(cudaMemPoolDestroy(pool));

	size_t free0, free1, total;
	void *p4;
	SHOW(cudaMemGetInfo(&free0, &total));
	SHOW(cudaMallocAsync(&p4, 8 * MiB, B));
	SHOW(cudaFreeAsync(p4, B));
	SHOW(cudaStreamSynchronize_ptsz(0));
	SHOW(cudaMemGetInfo(&free1, &total));
	printf("charged after cudaStreamSynchronize_ptsz(0): %zu MiB\n", (free0 - free1) / MiB);
	SHOW(cudaStreamSynchronize(0));
	SHOW(cudaMemGetInfo(&free1, &total));
	printf("charged after cudaStreamSynchronize(0): %zu MiB\n", (free0 - free1) / MiB);

	SHOW(cudaStreamDestroy(A));
	SHOW(cudaStreamDestroy(B));
	printf("handles A=%p B=%p pool=%p\n", (void *)A, (void *)B, (void *)pool);
	return 0;
}
