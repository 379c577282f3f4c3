/*
 * NCCL wrappers (issue 19 §5): the CT_NCCL rows of nccl.def, made by CT_WRAP
 * as the CUDA ones are. NCCL's types are its stable ABI (nccl.h): opaque
 * handles, a 128-byte unique id, int results (0 = ncclSuccess); the
 * configuration is only passed on.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "hooks.h"

typedef int ncclResult_t; /* an enum in nccl.h: ncclSuccess 0, ncclSystemError 2 */
typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct ncclConfig_v22700 ncclConfig_t; /* never read here */
#define CT_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[CT_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
#define CT_NCCL_SYSTEM_ERROR 2

/* The unique id's 64-bit FNV-1a hash: the same in every rank of a communicator. */
static uint64_t ct_nccl_id_hash(const ncclUniqueId *id)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < sizeof id->internal; i++)
		h = (h ^ (uint8_t)id->internal[i]) * 0x100000001b3ull;
	return h;
}

/*
 * One wrapper. Unlike a CUDA call's, an NCCL call is not one event with the
 * calls inside it untraced: NCCL's own CUDA calls inside it are what it
 * allocates, so they are recorded, between two events of the NCCL call: one
 * at entry (flags CT_NCCL_F_BEGIN, nothing else) and one at return (the
 * call's fields and result). Both are written in order on the calling
 * thread's ring. A call made inside the shim's work, inside a traced CUDA
 * call or inside another NCCL call (one of libnccl's API functions calling
 * another through its export) is forwarded untraced.
 */
static __thread int ct_nccl_depth __attribute__((tls_model("initial-exec")));

#define CT_NCCL(name, params, args, in, out)                                                        \
	static struct ct_real ct_real_##name;                                                     \
	typedef ncclResult_t(*ct_fn_##name##_t) params;                                           \
	CT_EXPORT ncclResult_t name params;                                                       \
	ncclResult_t name params                                                                  \
	{                                                                                         \
		ct_fn_##name##_t fn = (ct_fn_##name##_t)ct_real_fn(&ct_real_##name, #name,        \
								   __builtin_return_address(0));  \
		if (CT_UNLIKELY(!fn))                                                             \
			return CT_NCCL_SYSTEM_ERROR;                                              \
		struct ct_call c;                                                                 \
		if (ct_nccl_depth || ct_tls.in_hook || ct_call_begin(&c) <= 0)                    \
			return fn args;                                                           \
		c.api = CT_API_##name;                                                            \
		c.op = CT_OP_NCCL;                                                                \
		c.kind = CT_KIND_NONE;                                                            \
		c.layer = CT_LAYER_NCCL;                                                          \
		c.flags = CT_NCCL_F_BEGIN;                                                        \
		c.result = 0;                                                                     \
		ct_call_end(&c, CT_OP_NCCL);                                                      \
		ct_nccl_depth++;                                                                  \
		ncclResult_t rc = fn args;                                                        \
		ct_nccl_depth--;                                                                  \
		if (ct_tls.in_hook || ct_call_begin(&c) <= 0)                                     \
			return rc;                                                                \
		c.api = CT_API_##name;                                                            \
		c.op = CT_OP_NCCL;                                                                \
		c.kind = CT_KIND_NONE;                                                            \
		c.layer = CT_LAYER_NCCL;                                                          \
		in;                                                                               \
		c.flags &= ~CT_NCCL_F_BEGIN;                                                      \
		c.result = (int32_t)rc;                                                           \
		if (rc == 0) {                                                                    \
			out;                                                                      \
		}                                                                                 \
		ct_call_end(&c, CT_OP_NCCL);                                                      \
		return rc;                                                                        \
	}
#include "nccl.def"

const struct ct_hook ct_hooks_nccl[] = {
#define CT_NCCL(name, params, args, in, out)                                                        \
	{#name, #name, 0, 0, CT_LAYER_NCCL, (void *)name, &ct_real_##name},
#include "nccl.def"
};
const size_t ct_hooks_nccl_count = sizeof ct_hooks_nccl / sizeof ct_hooks_nccl[0];
