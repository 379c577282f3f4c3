/*
 * The framework layer's events (format.h, "Framework events": PyTorch's
 * caching allocator, recorded by preload/hooks/torch.c). For now they are counted
 * apart, per API, and never applied to the model's memory: a tensor's block
 * lies inside a segment that the CUDA layer recorded already, so reading it
 * as an allocation would count the memory twice. Dumps without them render
 * exactly as before.
 */
#ifndef CT_ANALYZER_FRAMEWORK_H
#define CT_ANALYZER_FRAMEWORK_H

#include <stddef.h>
#include <stdio.h>

#include "base/json.h"
#include "model/model.h"

/* Is ev a framework event (the model hands it to ct_fw_event, and nothing else sees it)? */
static inline int ct_fw_is_event(const struct ct_rec_event *ev)
{
	return ev->layer == CT_LAYER_FRAMEWORK;
}

/* Count one framework event of m. */
void ct_fw_event(struct ct_model *m, const struct ct_rec_event *ev);

/*
 * Text summary: "  framework events: N (torch: alloc n, ...)", the events of
 * the n dumps together; nothing when they have none.
 */
void ct_fw_put_summary(FILE *f, struct ct_model *const *ms, size_t n);

/* JSON summary: "framework": {"events": N, "by_api": {name: count}}; nothing when none. */
void ct_fw_json(struct ct_json *j, struct ct_model *const *ms, size_t n);

#endif
