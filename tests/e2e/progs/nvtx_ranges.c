/*
 * NVTX v3 (header-only) ranges and marks, for tests/e2e/t_nvtx.sh: run with
 * NVTX_INJECTION64_PATH=libcumtrace.so. Prints "tid N" for the main thread
 * and the worker.
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

static void *worker(void *arg)
{
	printf("worker_tid %ld\n", (long)syscall(SYS_gettid));
	nvtxRangePushA("worker");
	nvtxMarkA("worker-mark");
	nvtxRangePop();
	return NULL;
}

int main(void)
{
	printf("main_tid %ld\n", (long)syscall(SYS_gettid));
	nvtxRangePushA("outer");
	nvtxRangePushA("inner");
	void *p = NULL;
	cudaMalloc(&p, 4096);
	nvtxMarkA("allocated");
	nvtxRangePop();
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = "ex-range";
	nvtxRangeId_t id = nvtxRangeStartEx(&a);
	cudaFree(p);
	nvtxRangeEnd(id);
	nvtxRangePop();
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	return 0;
}
