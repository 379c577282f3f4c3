/* Allocates and frees everything: no leaks. */
#include "common.h"

int main(void)
{
	void *p[16];
	for (int i = 0; i < 16; i++)
		CHECK(cudaMalloc(&p[i], 4096u << (i % 8)));
	for (int i = 0; i < 16; i++)
		CHECK(cudaFree(p[i]));
	CHECK(cudaMallocHost(&p[0], 8192));
	CHECK(cudaFreeHost(p[0]));
	return 0;
}
