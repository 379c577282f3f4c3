/*
 * A stand-in for PyTorch's libtorch_cuda.so (tests/e2e/t_leak_classes.sh,
 * t_growth.sh): a caching allocator in namespace
 * c10::cuda::CUDACachingAllocator that gets blocks from cudaMalloc, keeps
 * released blocks for reuse and never frees them, as PyTorch's does.
 */
#include <cstddef>
#include <cuda_runtime_api.h>

namespace c10 {
namespace cuda {
namespace CUDACachingAllocator {

struct Block {
	void *ptr;
	size_t size;
	bool free;
};

static Block blocks[1024];
static size_t nblocks;

/* A block of at least n bytes: a free cached one, else a new one from cudaMalloc. */
__attribute__((noinline)) void *raw_alloc(size_t n)
{
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i].free && blocks[i].size >= n) {
			blocks[i].free = false;
			return blocks[i].ptr;
		}
	void *p = nullptr;
	if (nblocks == sizeof blocks / sizeof blocks[0] || cudaMalloc(&p, n) != cudaSuccess)
		return nullptr;
	blocks[nblocks++] = Block{p, n, false};
	return p;
}

/* Back to the cache; the memory stays allocated. */
__attribute__((noinline)) void raw_delete(void *p)
{
	for (size_t i = 0; i < nblocks; i++)
		if (blocks[i].ptr == p)
			blocks[i].free = true;
}

} // namespace CUDACachingAllocator
} // namespace cuda
} // namespace c10

/* For C programs and ctypes. */
extern "C" void *fake_torch_empty(size_t n)
{
	return c10::cuda::CUDACachingAllocator::raw_alloc(n);
}

extern "C" void fake_torch_release(void *p)
{
	c10::cuda::CUDACachingAllocator::raw_delete(p);
}
