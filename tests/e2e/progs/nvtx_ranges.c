/*
 * NVTX v3 (header-only) ranges and marks, for tests/e2e/t_nvtx.sh: run with
 * NVTX_INJECTION64_PATH=libcumtrace.so. Prints "tid N" for the main thread
 * and the worker. "nvtx_ranges domains" instead makes marks in named domains
 * with registered, ASCII and wide messages (issue 19 §5), on the main thread.
 */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
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

static nvtxEventAttributes_t attr(int type)
{
	nvtxEventAttributes_t a = {0};
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = type;
	return a;
}

/* Expected names: NCCL/AllReduce (push, pop), NCCL/ascii-in-domain, plain-registered, wide-?,
 * WDOM/wstr (start, end), NCCL/AllReduce (a domain's string used without its domain). */
static int domains(void)
{
	printf("main_tid %ld\n", (long)syscall(SYS_gettid));
	nvtxDomainHandle_t d = nvtxDomainCreateA("NCCL");
	nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "AllReduce");
	nvtxEventAttributes_t a = attr(NVTX_MESSAGE_TYPE_REGISTERED);
	a.message.registered = s;
	nvtxDomainRangePushEx(d, &a);
	nvtxDomainRangePop(d);
	nvtxEventAttributes_t b = attr(NVTX_MESSAGE_TYPE_ASCII);
	b.message.ascii = "ascii-in-domain";
	nvtxDomainMarkEx(d, &b);
	nvtxEventAttributes_t c = attr(NVTX_MESSAGE_TYPE_REGISTERED);
	c.message.registered = nvtxDomainRegisterStringA(NULL, "plain-registered");
	nvtxMarkEx(&c);
	nvtxEventAttributes_t w = attr(NVTX_MESSAGE_TYPE_UNICODE);
	w.message.unicode = L"wide-\u00e9";
	nvtxMarkEx(&w);
	nvtxDomainHandle_t dw = nvtxDomainCreateW(L"WDOM");
	nvtxEventAttributes_t r = attr(NVTX_MESSAGE_TYPE_REGISTERED);
	r.message.registered = nvtxDomainRegisterStringW(dw, L"wstr");
	nvtxRangeId_t id = nvtxDomainRangeStartEx(dw, &r);
	nvtxDomainRangeEnd(dw, id);
	nvtxMarkEx(&a);
	nvtxDomainDestroy(dw);
	nvtxDomainDestroy(d);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "domains"))
		return domains();
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
