/*
 * C++ leak sites for the symbol tests (tests/e2e/t_symbols_cxx.sh,
 * t_symbols_embed.sh), built with g++ -O2 -g: one leak from a member of a
 * namespaced class template, one from an always_inline function that the
 * compiler inlines into its caller. The lines marked SITE_* are looked up by
 * the tests. Prints "ok" when done.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

static void check(cudaError_t rc)
{
	if (rc != cudaSuccess) {
		fprintf(stderr, "symbols_cxx: CUDA call returned %d\n", (int)rc);
		exit(3);
	}
}

namespace ns {
template <typename T> struct Foo {
	size_t scale;
	/* noipa: no clone (bar.isra.0), no inlining into main */
	__attribute__((noipa)) void *bar(T n);
};

template <typename T> void *Foo<T>::bar(T n)
{
	void *p = nullptr;
	check(cudaMalloc(&p, (size_t)n * scale)); // SITE_TEMPLATE
	return p;
}
} // namespace ns

static inline __attribute__((always_inline)) void *leak_inline(size_t n)
{
	void *p = nullptr;
	check(cudaMalloc(&p, n)); // SITE_INLINE
	return p;
}

__attribute__((noipa)) void *inline_caller(size_t n)
{
	void *p = leak_inline(n + 1); // SITE_CALLER
	return p;
}

int main()
{
	ns::Foo<int> foo = {4};
	void *a = foo.bar(1024);
	void *b = inline_caller(2047);
	printf("ok %d\n", a != nullptr && b != nullptr);
	return 0;
}
