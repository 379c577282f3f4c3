/* Shared by the end-to-end test programs. */
#ifndef CT_TEST_COMMON_H
#define CT_TEST_COMMON_H
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

/* Abort the test program (exit 3) when a CUDA call that must work fails. */
#define CHECK(call)                                                                        \
	do {                                                                               \
		cudaError_t check_rc_ = (call);                                            \
		if (check_rc_ != cudaSuccess) {                                            \
			fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, \
				(int)check_rc_);                                           \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

#define NOINLINE __attribute__((noinline))
#endif
