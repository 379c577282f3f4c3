/*
 * Fake CUPTI (libcupti.so.13) for cumtrace's tests: the callback API only.
 *
 * Like the real one it takes one subscriber at a time and delivers a callback
 * only for the (domain, cbid) pairs enabled. Nothing in it fires by itself:
 * the fake CUDA libraries know nothing of CUPTI, so a test program drives it
 * with fakecupti_emit(), handing over what the real CUPTI would pass from
 * inside a CUDA call (params struct, return value, correlation id).
 *
 *   CUMTRACE_FAKE_CUPTI_TAKEN=1   cuptiSubscribe(_v2) answers
 *       CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another tool holds
 *       CUPTI, as under nsys); cuptiSubscribe_v2 names it "Nsight Systems (fake)"
 *   CUMTRACE_FAKE_CUPTI_FAIL=N    cuptiSubscribe(_v2) answers CUptiResult N
 *   cuptiEnableDomain, cuptiEnableAllDomains: whole domains are forbidden to
 *       cumtrace; calling either prints "fakecupti: FAIL ..." and exits 97.
 *
 * Test-only exports (fakecupti_*) let the program see what was enabled.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#define FC_MAX_CBID 1024

struct CUpti_Subscriber_st {
	CUpti_CallbackFunc callback;
	void *userdata;
};

static struct CUpti_Subscriber_st fc_sub;
static int fc_subscribed;
static unsigned char fc_enabled[CUPTI_CB_DOMAIN_SIZE][FC_MAX_CBID];
static CUptiResult fc_last_error = CUPTI_SUCCESS;
static unsigned fc_subscribe_calls;

/* Test hooks. */
int fakecupti_subscribed(void);
unsigned fakecupti_subscribe_calls(void);
int fakecupti_enabled(int domain, unsigned cbid);
size_t fakecupti_enabled_list(int *domains, unsigned *cbids, size_t cap);
int fakecupti_emit(int domain, unsigned cbid, int site, const void *params, void *retval,
		   uint32_t correlation_id, const char *name);

static CUptiResult fc_ret(CUptiResult rc)
{
	if (rc != CUPTI_SUCCESS)
		fc_last_error = rc;
	return rc;
}

static unsigned fc_domain_size(CUpti_CallbackDomain d)
{
	switch (d) {
	case CUPTI_CB_DOMAIN_DRIVER_API:
		return CUPTI_DRIVER_TRACE_CBID_SIZE;
	case CUPTI_CB_DOMAIN_RUNTIME_API:
		return CUPTI_RUNTIME_TRACE_CBID_SIZE;
	case CUPTI_CB_DOMAIN_RESOURCE:
		return CUPTI_CBID_RESOURCE_SIZE;
	case CUPTI_CB_DOMAIN_SYNCHRONIZE:
		return CUPTI_CBID_SYNCHRONIZE_SIZE;
	case CUPTI_CB_DOMAIN_NVTX:
		return CUPTI_CBID_NVTX_SIZE;
	case CUPTI_CB_DOMAIN_STATE:
		return CUPTI_CBID_STATE_SIZE;
	default:
		return 0;
	}
}

static CUptiResult fc_subscribe_common(CUpti_SubscriberHandle *subscriber,
				       CUpti_CallbackFunc callback, void *userdata,
				       CUpti_SubscriberParams *params)
{
	fc_subscribe_calls++;
	if (!subscriber)
		return fc_ret(CUPTI_ERROR_INVALID_PARAMETER);
	const char *taken = getenv("CUMTRACE_FAKE_CUPTI_TAKEN");
	const char *fail = getenv("CUMTRACE_FAKE_CUPTI_FAIL");
	if ((taken && strcmp(taken, "1") == 0) || fc_subscribed) {
		if (params && params->oldSubscriberName && params->oldSubscriberSize > 0)
			snprintf(params->oldSubscriberName, params->oldSubscriberSize, "%s",
				 fc_subscribed ? "an earlier subscriber" : "Nsight Systems (fake)");
		return fc_ret(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	}
	if (fail && *fail)
		return fc_ret((CUptiResult)atoi(fail));
	fc_sub.callback = callback;
	fc_sub.userdata = userdata;
	fc_subscribed = 1;
	*subscriber = &fc_sub;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
				    CUpti_CallbackFunc callback, void *userdata)
{
	return fc_subscribe_common(subscriber, callback, userdata, NULL);
}

CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
				       CUpti_CallbackFunc callback, void *userdata,
				       CUpti_SubscriberParams *pParams)
{
	if (pParams && pParams->structSize == 0)
		return fc_ret(CUPTI_ERROR_INVALID_PARAMETER);
	return fc_subscribe_common(subscriber, callback, userdata, pParams);
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	if (!fc_subscribed || subscriber != &fc_sub)
		return fc_ret(CUPTI_ERROR_INVALID_PARAMETER);
	fc_subscribed = 0;
	memset(fc_enabled, 0, sizeof fc_enabled);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
					 CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (!fc_subscribed || subscriber != &fc_sub)
		return fc_ret(CUPTI_ERROR_INVALID_PARAMETER);
	unsigned size = fc_domain_size(domain);
	if (cbid == 0 || cbid >= size || cbid >= FC_MAX_CBID)
		return fc_ret(CUPTI_ERROR_INVALID_PARAMETER);
	fc_enabled[domain][cbid] = enable ? 1 : 0;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle subscriber,
					   CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (!enable || !fc_subscribed || subscriber != &fc_sub || cbid >= fc_domain_size(domain) ||
	    cbid >= FC_MAX_CBID)
		return fc_ret(CUPTI_ERROR_INVALID_PARAMETER);
	*enable = fc_enabled[domain][cbid];
	return CUPTI_SUCCESS;
}

static void fc_forbidden(const char *what)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg,
			 "fakecupti: FAIL %s called: whole domains must never be enabled\n", what);
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
		(void)w;
	}
	_exit(97);
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
				       CUpti_CallbackDomain domain)
{
	fc_forbidden("cuptiEnableDomain");
	return CUPTI_ERROR_UNKNOWN;
}

CUptiResult CUPTIAPI cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
	fc_forbidden("cuptiEnableAllDomains");
	return CUPTI_ERROR_UNKNOWN;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	switch (result) {
	case CUPTI_SUCCESS:
		*str = "CUPTI_SUCCESS";
		break;
	case CUPTI_ERROR_INVALID_PARAMETER:
		*str = "CUPTI_ERROR_INVALID_PARAMETER";
		break;
	case CUPTI_ERROR_NOT_INITIALIZED:
		*str = "CUPTI_ERROR_NOT_INITIALIZED";
		break;
	case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
		*str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
		break;
	default:
		*str = "CUPTI_ERROR_UNKNOWN";
		break;
	}
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetLastError(void)
{
	CUptiResult rc = fc_last_error;
	fc_last_error = CUPTI_SUCCESS;
	return rc;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

/* ---- test hooks ------------------------------------------------------------------------ */

int fakecupti_subscribed(void)
{
	return fc_subscribed;
}

unsigned fakecupti_subscribe_calls(void)
{
	return fc_subscribe_calls;
}

int fakecupti_enabled(int domain, unsigned cbid)
{
	if (domain <= 0 || domain >= CUPTI_CB_DOMAIN_SIZE || cbid >= FC_MAX_CBID)
		return 0;
	return fc_enabled[domain][cbid];
}

/* Every enabled (domain, cbid), domain by domain; returns how many there are. */
size_t fakecupti_enabled_list(int *domains, unsigned *cbids, size_t cap)
{
	size_t n = 0;
	for (int d = 1; d < CUPTI_CB_DOMAIN_SIZE; d++)
		for (unsigned c = 0; c < FC_MAX_CBID; c++)
			if (fc_enabled[d][c]) {
				if (n < cap) {
					domains[n] = d;
					cbids[n] = c;
				}
				n++;
			}
	return n;
}

/*
 * Deliver one API callback as CUPTI would: site CUPTI_API_ENTER or
 * CUPTI_API_EXIT, params the function's *_params struct, retval a pointer to
 * its cudaError_t / CUresult (read at exit). Returns 1 when delivered, 0 when
 * nobody subscribed to it.
 */
int fakecupti_emit(int domain, unsigned cbid, int site, const void *params, void *retval,
		   uint32_t correlation_id, const char *name)
{
	if (!fc_subscribed || !fakecupti_enabled(domain, cbid))
		return 0;
	static __thread uint64_t correlation_data;
	CUpti_CallbackData cb;
	memset(&cb, 0, sizeof cb);
	cb.callbackSite = (CUpti_ApiCallbackSite)site;
	cb.functionName = name;
	cb.functionParams = params;
	cb.functionReturnValue = retval;
	cb.symbolName = name;
	cb.correlationId = correlation_id;
	cb.correlationData = &correlation_data;
	fc_sub.callback(fc_sub.userdata, (CUpti_CallbackDomain)domain, cbid, &cb);
	return 1;
}
