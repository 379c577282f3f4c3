/* Allocations live at cudaDeviceReset are leaks at that checkpoint. */
#include "common.h"

int main(void)
{
	void *p;
	CHECK(cudaMalloc(&p, 1 << 20));
	CHECK(cudaMalloc(&p, 1 << 20));
	CHECK(cudaFree(p));
	CHECK(cudaDeviceReset());
	CHECK(cudaMalloc(&p, 4096)); /* after the reset: leaked at exit */
	return 0;
}
