/*
 * NVTX through its injection interface: with NVTX_INJECTION64_PATH naming
 * libcumtrace.so, the NVTX v3 header-only code in the program dlopen's it on
 * the first NVTX call and calls InitializeInjectionNvtx2, which fills the
 * core (and domain) callback slots with the functions below. Each turns into
 * a CT_REC_MARK (kind, name, timestamp, thread) in the calling thread's ring.
 *
 * Covered: nvtxMarkA/Ex, nvtxRangePushA/Ex, nvtxRangePop, nvtxRangeStartA/Ex,
 * nvtxRangeEnd, and the nvtxDomain* forms of the same (domain not recorded).
 * Ex forms record the message when its type is ASCII; a wide or registered
 * message gives an empty name. The W (wchar_t) forms are left to NVTX (no-op).
 * The layout used here is NVTX's stable ABI (nvtxDetail/nvtxTypes.h,
 * nvtxEventAttributes_v2 in nvToolsExt.h).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>

#include "hooks.h"


/* ---- NVTX ABI (NVTX v3) -------------------------------------------------------------------- */

typedef void (*ct_nvtx_fnptr)(void);
typedef const void *(*ct_nvtx_get_export_table)(uint32_t id);

enum { CT_NVTX_ETID_CALLBACKS = 1 };
enum { CT_NVTX_MODULE_CORE = 1, CT_NVTX_MODULE_CORE2 = 5 };
enum {
	CT_NVTX_CORE_MarkEx = 1,
	CT_NVTX_CORE_MarkA = 2,
	CT_NVTX_CORE_RangeStartEx = 4,
	CT_NVTX_CORE_RangeStartA = 5,
	CT_NVTX_CORE_RangeEnd = 7,
	CT_NVTX_CORE_RangePushEx = 8,
	CT_NVTX_CORE_RangePushA = 9,
	CT_NVTX_CORE_RangePop = 11,
};
enum {
	CT_NVTX_CORE2_DomainMarkEx = 1,
	CT_NVTX_CORE2_DomainRangeStartEx = 2,
	CT_NVTX_CORE2_DomainRangeEnd = 3,
	CT_NVTX_CORE2_DomainRangePushEx = 4,
	CT_NVTX_CORE2_DomainRangePop = 5,
};
enum { CT_NVTX_MESSAGE_ASCII = 1 };

struct ct_nvtx_export_callbacks {
	size_t struct_size;
	int (*get_module_function_table)(int module, ct_nvtx_fnptr ***out_table,
					 unsigned int *out_size);
};

struct ct_nvtx_attr { /* nvtxEventAttributes_v2 */
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	uint64_t payload;
	int32_t message_type;
	const char *message; /* union: ascii / wchar_t* / registered handle */
};
_Static_assert(offsetof(struct ct_nvtx_attr, message_type) == 32, "nvtx attributes");
_Static_assert(offsetof(struct ct_nvtx_attr, message) == 40, "nvtx attributes");

/* ---- marks ------------------------------------------------------------------------------------ */

static __thread int ct_nvtx_depth __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t ct_nvtx_next_range;

/* Marks are the same records as cumtrace_mark's (api.c). */
static void ct_nvtx_mark(enum ct_mark_kind kind, const char *name, uint64_t aux)
{
	ct_put_mark(kind, name, aux);
}

static const char *ct_nvtx_message(const struct ct_nvtx_attr *a)
{
	if (!a || a->size < offsetof(struct ct_nvtx_attr, message) + sizeof(void *) ||
	    a->message_type != CT_NVTX_MESSAGE_ASCII)
		return NULL;
	return a->message;
}

static void ct_nvtx_MarkA(const char *msg)
{
	ct_nvtx_mark(CT_MARK_INSTANT, msg, 0);
}

static void ct_nvtx_MarkEx(const struct ct_nvtx_attr *a)
{
	ct_nvtx_mark(CT_MARK_INSTANT, ct_nvtx_message(a), 0);
}

static uint64_t ct_nvtx_start(const char *msg)
{
	uint64_t id = atomic_fetch_add(&ct_nvtx_next_range, 1) + 1;
	ct_nvtx_mark(CT_MARK_START, msg, id);
	return id;
}

static uint64_t ct_nvtx_RangeStartA(const char *msg)
{
	return ct_nvtx_start(msg);
}

static uint64_t ct_nvtx_RangeStartEx(const struct ct_nvtx_attr *a)
{
	return ct_nvtx_start(ct_nvtx_message(a));
}

static void ct_nvtx_RangeEnd(uint64_t id)
{
	ct_nvtx_mark(CT_MARK_STOP, NULL, id);
}

static int ct_nvtx_push(const char *msg)
{
	ct_nvtx_mark(CT_MARK_PUSH, msg, 0);
	return ct_nvtx_depth++;
}

static int ct_nvtx_RangePushA(const char *msg)
{
	return ct_nvtx_push(msg);
}

static int ct_nvtx_RangePushEx(const struct ct_nvtx_attr *a)
{
	return ct_nvtx_push(ct_nvtx_message(a));
}

static int ct_nvtx_RangePop(void)
{
	ct_nvtx_mark(CT_MARK_POP, NULL, 0);
	if (ct_nvtx_depth <= 0)
		return -1;
	return --ct_nvtx_depth;
}

static void ct_nvtx_DomainMarkEx(void *domain, const struct ct_nvtx_attr *a)
{
	ct_nvtx_MarkEx(a);
}

static uint64_t ct_nvtx_DomainRangeStartEx(void *domain, const struct ct_nvtx_attr *a)
{
	return ct_nvtx_RangeStartEx(a);
}

static void ct_nvtx_DomainRangeEnd(void *domain, uint64_t id)
{
	ct_nvtx_RangeEnd(id);
}

static int ct_nvtx_DomainRangePushEx(void *domain, const struct ct_nvtx_attr *a)
{
	return ct_nvtx_RangePushEx(a);
}

static int ct_nvtx_DomainRangePop(void *domain)
{
	return ct_nvtx_RangePop();
}

/* ---- injection entry point -------------------------------------------------------------------- */

static int ct_nvtx_fill(const struct ct_nvtx_export_callbacks *cb, int module,
			const unsigned *ids, ct_nvtx_fnptr const *fns, size_t n)
{
	ct_nvtx_fnptr **table = NULL;
	unsigned int size = 0;
	if (!cb->get_module_function_table(module, &table, &size) || !table)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (ids[i] < size && table[ids[i]])
			*table[ids[i]] = fns[i];
	return 1;
}

#define CT_FN(f) ((ct_nvtx_fnptr)(void *)(f))

CT_EXPORT int InitializeInjectionNvtx2(ct_nvtx_get_export_table get_export_table);
int InitializeInjectionNvtx2(ct_nvtx_get_export_table get_export_table)
{
	if (!get_export_table)
		return 0;
	const struct ct_nvtx_export_callbacks *cb = get_export_table(CT_NVTX_ETID_CALLBACKS);
	if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_function_table)
		return 0;
	static const unsigned core_ids[] = {
		CT_NVTX_CORE_MarkEx,	   CT_NVTX_CORE_MarkA,	   CT_NVTX_CORE_RangeStartEx,
		CT_NVTX_CORE_RangeStartA,  CT_NVTX_CORE_RangeEnd,  CT_NVTX_CORE_RangePushEx,
		CT_NVTX_CORE_RangePushA,   CT_NVTX_CORE_RangePop,
	};
	ct_nvtx_fnptr const core_fns[] = {
		CT_FN(ct_nvtx_MarkEx),	     CT_FN(ct_nvtx_MarkA),    CT_FN(ct_nvtx_RangeStartEx),
		CT_FN(ct_nvtx_RangeStartA),  CT_FN(ct_nvtx_RangeEnd), CT_FN(ct_nvtx_RangePushEx),
		CT_FN(ct_nvtx_RangePushA),   CT_FN(ct_nvtx_RangePop),
	};
	static const unsigned core2_ids[] = {
		CT_NVTX_CORE2_DomainMarkEx,	 CT_NVTX_CORE2_DomainRangeStartEx,
		CT_NVTX_CORE2_DomainRangeEnd,	 CT_NVTX_CORE2_DomainRangePushEx,
		CT_NVTX_CORE2_DomainRangePop,
	};
	ct_nvtx_fnptr const core2_fns[] = {
		CT_FN(ct_nvtx_DomainMarkEx),	   CT_FN(ct_nvtx_DomainRangeStartEx),
		CT_FN(ct_nvtx_DomainRangeEnd),	   CT_FN(ct_nvtx_DomainRangePushEx),
		CT_FN(ct_nvtx_DomainRangePop),
	};
	if (!ct_nvtx_fill(cb, CT_NVTX_MODULE_CORE, core_ids, core_fns, 8))
		return 0;
	ct_nvtx_fill(cb, CT_NVTX_MODULE_CORE2, core2_ids, core2_fns, 5);
	return 1;
}
