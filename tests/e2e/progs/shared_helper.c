/*
 * Two leak sites that share a helper: helper() makes every cudaMalloc, and two
 * functions of the program's call it (the top frame is the same, the callers
 * differ), two more call it through one more shared function (the first
 * caller is the same too), plus a site of its own. The labels of the reports
 * must tell them apart (tests/e2e/t_labels.sh).
 */
#include "common.h"

#define MiB (1024ul * 1024ul)

NOINLINE static void *helper(size_t n)
{
	void *p;
	CHECK(cudaMalloc(&p, n)); /* HELPER_LINE */
	return p;
}

NOINLINE static void *load_weights(void)
{
	return helper(2 * MiB); /* WEIGHTS_LINE */
}

NOINLINE static void *make_buffer(void)
{
	return helper(1 * MiB); /* BUFFER_LINE */
}

NOINLINE static void *alloc_tensor(size_t n)
{
	return helper(n);
}

NOINLINE static void *step_one(void)
{
	return alloc_tensor(256 * 1024); /* STEP_ONE_LINE */
}

NOINLINE static void *step_two(void)
{
	return alloc_tensor(128 * 1024); /* STEP_TWO_LINE */
}

NOINLINE static void *own_site(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 512 * 1024)); /* OWN_LINE */
	return p;
}

int main(void)
{
	load_weights();
	make_buffer();
	own_site();
	step_one();
	step_two();
	return 0;
}
