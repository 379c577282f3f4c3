/*
 * NVTX through its injection interface: with NVTX_INJECTION64_PATH naming
 * libcumtrace.so, the NVTX v3 header-only code in the program dlopen's it on
 * the first NVTX call and calls InitializeInjectionNvtx2, which fills the
 * core (and domain) callback slots with the functions below. Each turns into
 * a CT_REC_MARK (kind, name, timestamp, thread) in the calling thread's ring.
 *
 * Covered: nvtxMarkA/Ex, nvtxRangePushA/Ex, nvtxRangePop, nvtxRangeStartA/Ex,
 * nvtxRangeEnd, and the nvtxDomain* forms of the same. Ex forms record the
 * message whatever its type: ASCII, wide (non-ASCII characters become '?')
 * or registered (issue 19 §5: nvtxDomainRegisterStringA/W, which NCCL's
 * ranges use, are implemented here and hand out handles that name their
 * string). nvtxDomainCreateA/W are implemented too: a mark made in a named
 * domain is named "DOMAIN/MESSAGE" (NCCL's: "NCCL/AllReduce"), one of the
 * default domain its message alone. The W (wchar_t) forms of the core calls
 * are left to NVTX (no-op).
 * The layout used here is NVTX's stable ABI (nvtxDetail/nvtxTypes.h,
 * nvtxEventAttributes_v2 in nvToolsExt.h).
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

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
	CT_NVTX_CORE2_DomainRegisterStringA = 10,
	CT_NVTX_CORE2_DomainRegisterStringW = 11,
	CT_NVTX_CORE2_DomainCreateA = 12,
	CT_NVTX_CORE2_DomainCreateW = 13,
};
enum { CT_NVTX_MESSAGE_ASCII = 1, CT_NVTX_MESSAGE_UNICODE = 2, CT_NVTX_MESSAGE_REGISTERED = 3 };

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

/* ---- registered strings and domains (issue 19 §5) --------------------------------------------- */

/*
 * A domain (nvtxDomainCreateA/W) or a registered string
 * (nvtxDomainRegisterStringA/W): the handle NVTX passes back is the
 * address of one of these, made at registration (never on the hot path)
 * and kept for the process's life (a handle stays valid as long as its
 * domain; destroyed domains are not reused). A handle without the tag is
 * not ours and names nothing.
 */
#define CT_NVTX_TAG 0x6374767873747231ull /* "ctnvxstr1" */
#define CT_NVTX_NAME_MAX 256		 /* bytes of a name kept, NUL included */
struct ct_nvtx_name {
	uint64_t tag;
	const struct ct_nvtx_name *domain; /* a registered string's domain, NULL: the default one */
	char text[];
};

/* A new name (domain or string) of text, NULL when out of memory. */
static struct ct_nvtx_name *ct_nvtx_name_new(const struct ct_nvtx_name *domain, const char *text)
{
	size_t n = text ? strnlen(text, CT_NVTX_NAME_MAX - 1) : 0;
	struct ct_nvtx_name *e = malloc(sizeof *e + n + 1);
	if (!e)
		return NULL;
	e->tag = CT_NVTX_TAG;
	e->domain = domain;
	if (n)
		memcpy(e->text, text, n);
	e->text[n] = 0;
	return e;
}

/* A wide string as ASCII ('?' for the rest) into buf of cap bytes. */
static const char *ct_nvtx_narrow(const wchar_t *w, char *buf, size_t cap)
{
	size_t i = 0;
	for (; w && w[i] && i + 1 < cap; i++)
		buf[i] = w[i] > 0 && w[i] < 0x80 ? (char)w[i] : '?';
	buf[i] = 0;
	return buf;
}

static const struct ct_nvtx_name *ct_nvtx_lookup(const void *handle)
{
	const struct ct_nvtx_name *e = handle;
	return e && e->tag == CT_NVTX_TAG ? e : NULL;
}

static void *ct_nvtx_DomainCreateA(const char *name)
{
	return ct_nvtx_name_new(NULL, name);
}

static void *ct_nvtx_DomainCreateW(const wchar_t *name)
{
	char buf[CT_NVTX_NAME_MAX];
	return ct_nvtx_name_new(NULL, ct_nvtx_narrow(name, buf, sizeof buf));
}

static void *ct_nvtx_DomainRegisterStringA(void *domain, const char *string)
{
	return ct_nvtx_name_new(ct_nvtx_lookup(domain), string);
}

static void *ct_nvtx_DomainRegisterStringW(void *domain, const wchar_t *string)
{
	char buf[CT_NVTX_NAME_MAX];
	return ct_nvtx_name_new(ct_nvtx_lookup(domain), ct_nvtx_narrow(string, buf, sizeof buf));
}

/* ---- marks ------------------------------------------------------------------------------------ */

static __thread int ct_nvtx_depth __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t ct_nvtx_next_range;

/* Marks are the same records as cumtrace_mark's (api.c). */
static void ct_nvtx_mark(enum ct_mark_kind kind, const char *name, uint64_t aux)
{
	ct_put_mark(kind, name, aux);
}

/* Bytes of a mark's name built here: "DOMAIN/MESSAGE" fits two kept names. */
#define CT_NVTX_MARK_NAME (2 * CT_NVTX_NAME_MAX)

/*
 * The name of a mark with attributes a made in domain (NULL: the default
 * one), built in buf (CT_NVTX_MARK_NAME bytes): the message of any type,
 * after "DOMAIN/" for a named domain. NULL without a message.
 */
static const char *ct_nvtx_message_in(const void *domain, const struct ct_nvtx_attr *a, char *buf)
{
	const char *msg = NULL;
	if (!a || a->size < offsetof(struct ct_nvtx_attr, message) + sizeof(void *))
		return NULL;
	if (a->message_type == CT_NVTX_MESSAGE_ASCII) {
		msg = a->message;
	} else if (a->message_type == CT_NVTX_MESSAGE_UNICODE) {
		/* into the second half of buf: the domain's name may go before it */
		msg = ct_nvtx_narrow((const wchar_t *)(const void *)a->message, buf + CT_NVTX_NAME_MAX,
				     CT_NVTX_NAME_MAX);
	} else if (a->message_type == CT_NVTX_MESSAGE_REGISTERED) {
		const struct ct_nvtx_name *r = ct_nvtx_lookup(a->message);
		msg = r ? r->text : NULL;
		if (r && !domain)
			domain = r->domain;
	}
	const struct ct_nvtx_name *d = ct_nvtx_lookup(domain);
	if (!msg || !d || !d->text[0])
		return msg;
	size_t dl = strlen(d->text), ml = strnlen(msg, CT_NVTX_NAME_MAX - 1);
	memcpy(buf, d->text, dl); /* dl < CT_NVTX_NAME_MAX: the whole fits CT_NVTX_MARK_NAME */
	buf[dl] = '/';
	memmove(buf + dl + 1, msg, ml);
	buf[dl + 1 + ml] = 0;
	return buf;
}

static const char *ct_nvtx_message(const struct ct_nvtx_attr *a, char *buf)
{
	return ct_nvtx_message_in(NULL, a, buf);
}

static void ct_nvtx_MarkA(const char *msg)
{
	ct_nvtx_mark(CT_MARK_INSTANT, msg, 0);
}

static void ct_nvtx_MarkEx(const struct ct_nvtx_attr *a)
{
	char buf[CT_NVTX_MARK_NAME];
	ct_nvtx_mark(CT_MARK_INSTANT, ct_nvtx_message(a, buf), 0);
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
	char buf[CT_NVTX_MARK_NAME];
	return ct_nvtx_start(ct_nvtx_message(a, buf));
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
	char buf[CT_NVTX_MARK_NAME];
	return ct_nvtx_push(ct_nvtx_message(a, buf));
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
	char buf[CT_NVTX_MARK_NAME];
	ct_nvtx_mark(CT_MARK_INSTANT, ct_nvtx_message_in(domain, a, buf), 0);
}

static uint64_t ct_nvtx_DomainRangeStartEx(void *domain, const struct ct_nvtx_attr *a)
{
	char buf[CT_NVTX_MARK_NAME];
	return ct_nvtx_start(ct_nvtx_message_in(domain, a, buf));
}

static void ct_nvtx_DomainRangeEnd(void *domain, uint64_t id)
{
	ct_nvtx_RangeEnd(id);
}

static int ct_nvtx_DomainRangePushEx(void *domain, const struct ct_nvtx_attr *a)
{
	char buf[CT_NVTX_MARK_NAME];
	return ct_nvtx_push(ct_nvtx_message_in(domain, a, buf));
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
		/* issue 19 §5: registered strings and domains */
		CT_NVTX_CORE2_DomainRegisterStringA, CT_NVTX_CORE2_DomainRegisterStringW,
		CT_NVTX_CORE2_DomainCreateA,	 CT_NVTX_CORE2_DomainCreateW,
	};
	ct_nvtx_fnptr const core2_fns[] = {
		CT_FN(ct_nvtx_DomainMarkEx),	   CT_FN(ct_nvtx_DomainRangeStartEx),
		CT_FN(ct_nvtx_DomainRangeEnd),	   CT_FN(ct_nvtx_DomainRangePushEx),
		CT_FN(ct_nvtx_DomainRangePop),
		CT_FN(ct_nvtx_DomainRegisterStringA), CT_FN(ct_nvtx_DomainRegisterStringW),
		CT_FN(ct_nvtx_DomainCreateA),	   CT_FN(ct_nvtx_DomainCreateW),
	};
	if (!ct_nvtx_fill(cb, CT_NVTX_MODULE_CORE, core_ids, core_fns, 8))
		return 0;
	ct_nvtx_fill(cb, CT_NVTX_MODULE_CORE2, core2_ids, core2_fns, sizeof core2_ids / sizeof core2_ids[0]);
	return 1;
}
