/*
 * NCCL's memory per communicator (issue 19 §5): the model's view of the
 * CT_OP_NCCL events (format.h). The CUDA allocations a thread makes between
 * the entry and return events of an init or split call are that
 * communicator's; those made inside ncclMemAlloc are the program's buffers
 * (ncclMemAlloc's); the other allocations whose stack holds libnccl
 * (resolved at the end) are NCCL's outside any init: the communicator's when
 * the dump has one, else "outside init". Counted: memory kinds only (never
 * address reservations or mappings, imported memory or multicast objects).
 */
#ifndef CT_ANALYZER_NCCL_H
#define CT_ANALYZER_NCCL_H

#include <stdint.h>
#include <stdio.h>

#include "base/json.h"
#include "cumtrace/format.h"

struct ct_model;

/* NCCL memory of one owner: allocations and bytes made, bytes live at the end. */
struct ct_nccl_mem {
	uint64_t allocations, bytes, live_bytes;
};

struct ct_nccl_comm {
	uint64_t comm, id_hash, parent; /* handle, unique id hash (init), parent (split) */
	int32_t rank, nranks;
	int16_t device;
	uint16_t api, end_api; /* the call that made it; ncclCommDestroy / ncclCommAbort, 0: live */
	int failed;	       /* its init call failed: not listed */
	struct ct_nccl_mem mem;
};

struct ct_nccl_win; /* nccl.c */

struct ct_nccl {
	struct ct_nccl_comm *comms;
	size_t ncomms, capcomms;
	struct ct_nccl_win *wins; /* calls in progress (entry seen, return not yet) */
	size_t nwins, capwins;
	uint32_t *site_owner; /* by site: 0 none, else an owner (nccl.c) */
	size_t nsite_owner;
	struct ct_nccl_mem outside, mem_alloc;
	uint64_t mem_alloc_calls, mem_alloc_bytes, mem_free_calls;
	uint64_t registers, register_bytes, deregisters;
	uint64_t windows, window_bytes, window_deregisters;
};

/* 1 for the entry event of an NCCL call (never counted as a call). */
static inline int ct_nccl_is_begin(const struct ct_rec_event *ev)
{
	return ev->op == CT_OP_NCCL && (ev->flags & CT_NCCL_F_BEGIN);
}

/* An NCCL event (entry or return), in time order; returns a return's time in the call (from its entry). */
uint64_t ct_nccl_event(struct ct_model *m, const struct ct_rec_event *ev);
/* A CUDA allocation of site si became live (the model counted it). */
void ct_nccl_alloc(struct ct_model *m, const struct ct_rec_event *ev, uint32_t si, uint8_t kind);
/* End of the dump, before leaks: stack-attributed sites, live bytes. */
void ct_nccl_finish(struct ct_model *m);
void ct_nccl_free(struct ct_nccl *n);
/* "nccl" of one dump (JSON), and its text lines ("  nccl: ..."); nothing without NCCL events. */
void ct_nccl_json(struct ct_json *j, struct ct_model *m);
void ct_nccl_put_text(FILE *f, const struct ct_model *m);

#endif
