/*
 * Framework events, counted apart from the CUDA calls (framework.h).
 */
#include "model/framework.h"

#include <inttypes.h>
#include <string.h>

void ct_fw_event(struct ct_model *m, const struct ct_rec_event *ev)
{
	m->fw_events++;
	m->fw_api[ev->api < CT_API_COUNT ? ev->api : CT_API_COUNT]++;
}

/* The framework events of n dumps per API (CT_API_COUNT + 1 entries); returns their total. */
static uint64_t ct_fw_totals(struct ct_model *const *ms, size_t n, uint64_t *api)
{
	uint64_t total = 0;
	memset(api, 0, (CT_API_COUNT + 1) * sizeof *api);
	for (size_t d = 0; d < n; d++) {
		total += ms[d]->fw_events;
		for (unsigned a = 0; a <= CT_API_COUNT; a++)
			api[a] += ms[d]->fw_api[a];
	}
	return total;
}

/* "torch_alloc" -> "alloc", *fw_len 5: the framework's name is said once per framework. */
static const char *ct_fw_action(unsigned a, size_t *fw_len)
{
	const char *name = a < CT_API_COUNT ? ct_api_name(a) : "unknown";
	const char *us = strchr(name, '_');
	*fw_len = us ? (size_t)(us - name) : 0;
	return us ? us + 1 : name;
}

void ct_fw_put_summary(FILE *f, struct ct_model *const *ms, size_t n)
{
	uint64_t api[CT_API_COUNT + 1];
	uint64_t total = ct_fw_totals(ms, n, api);
	if (!total)
		return;
	fprintf(f, "  framework events: %" PRIu64 " (", total);
	const char *fw = NULL;
	size_t fw_len = 0;
	for (unsigned a = 0; a <= CT_API_COUNT; a++) {
		if (!api[a])
			continue;
		size_t len;
		const char *action = ct_fw_action(a, &len);
		const char *name = len ? ct_api_name(a) : "other";
		if (!len)
			len = 5;
		if (!fw || len != fw_len || strncmp(name, fw, len))
			fprintf(f, "%s%.*s: %s %" PRIu64, fw ? "; " : "", (int)len, name, action, api[a]);
		else
			fprintf(f, ", %s %" PRIu64, action, api[a]);
		fw = name;
		fw_len = len;
	}
	fputs(")\n", f);
}

void ct_fw_json(struct ct_json *j, struct ct_model *const *ms, size_t n)
{
	uint64_t api[CT_API_COUNT + 1];
	uint64_t total = ct_fw_totals(ms, n, api);
	if (!total)
		return;
	ct_json_key(j, "framework");
	ct_json_obj(j);
	ct_json_kv_u64(j, "events", total);
	ct_json_key(j, "by_api");
	ct_json_obj(j);
	for (unsigned a = 0; a <= CT_API_COUNT; a++)
		if (api[a])
			ct_json_kv_u64(j, a < CT_API_COUNT ? ct_api_name(a) : "unknown", api[a]);
	ct_json_obj_end(j);
	ct_json_obj_end(j);
}
