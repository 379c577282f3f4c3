/*
 * The JSON document every command with a JSON section writes (document.h):
 * what each dump is, its marks, the totals, the ranks of many dumps.
 */
#include "render/document.h"

#include "analyses/ranks.h"
#include "base/util.h"
#include "model/marks.h"
#include "model/nccl.h"

/*
 * "imported" of a dump that has imported or shared memory or multicast
 * objects (issue 19 §4; model.h, struct ct_imports): never in its leaks or peak.
 */
static void json_imports(struct ct_json *j, const struct ct_imports *im)
{
	const struct ct_json_u64 top[] = {
		{"imports", im->imports},
		{"maps", im->maps},
		{"bytes", im->bytes},
		{"releases", im->releases},
		{"live_at_exit", im->live_at_exit},
		{"live_bytes_at_exit", im->live_bytes_at_exit},
		{"exports", im->exports},
		{"exported_bytes", im->exported_bytes},
		{"retains", im->retains},
		{"retain_releases", im->retain_releases},
		{"self_imports", im->self_imports},
	};
	const struct ct_json_u64 mc[] = {
		{"created", im->mc_created},
		{"bytes", im->mc_bytes},
		{"released", im->mc_released},
		{"live_at_exit", im->mc_live_at_exit},
		{"devices_added", im->mc_devices},
		{"binds", im->mc_binds},
		{"bind_bytes", im->mc_bind_bytes},
		{"unbinds", im->mc_unbinds},
	};
	ct_json_key(j, "imported");
	ct_json_obj(j);
	ct_json_kv_u64s(j, top, sizeof top / sizeof top[0]);
	ct_json_key(j, "multicast");
	ct_json_obj(j);
	ct_json_kv_u64s(j, mc, sizeof mc / sizeof mc[0]);
	ct_json_obj_end(j);
	ct_json_obj_end(j);
}

/* "dumps" (one object per dump), "marks" and the totals over the dumps. */
static void json_dumps(struct ct_json *j, struct ct_model *const *ms, size_t nm)
{
	uint64_t allocs = 0, frees = 0, failed = 0, dropped = 0, dropped_signal = 0, dropped_records = 0,
		 unmatched = 0, doubles = 0;
	for (size_t d = 0; d < nm; d++) {
		allocs += ms[d]->allocations;
		frees += ms[d]->frees;
		failed += ms[d]->failed_calls;
		dropped = ct_sat_add(dropped, ms[d]->dropped);
		dropped_signal = ct_sat_add(dropped_signal, ms[d]->dropped_signal);
		dropped_records = ct_sat_add(dropped_records, ms[d]->dropped_records);
		unmatched += ms[d]->unmatched_frees;
		doubles += ms[d]->double_allocs;
	}
	ct_json_key(j, "dumps");
	ct_json_arr(j);
	for (size_t d = 0; d < nm; d++) {
		const struct ct_model *m = ms[d];
		ct_json_obj(j);
		ct_json_kv_str(j, "path", m->path);
		ct_json_kv_u64(j, "pid", m->pid);
		ct_json_kv_u64(j, "ppid", m->ppid);
		ct_json_key(j, "argv");
		ct_json_arr(j);
		for (size_t i = 0; i < m->argc; i++)
			ct_json_str(j, m->argv[i]);
		ct_json_arr_end(j);
		ct_json_kv_str(j, "host", m->host);
		ct_json_kv_str(j, "exe", m->exe);
		ct_json_kv_str(j, "cwd", m->cwd);
		ct_json_kv_str(j, "cumtrace_version", m->version);
		ct_json_kv_bool(j, "forked", m->forked != 0);
		ct_json_kv_bool(j, "clean_exit", m->end_seen);
		ct_json_kv_bool(j, "truncated", m->read.status == CT_READ_TRUNCATED);
		ct_json_key(j, "truncated_offset");
		if (m->read.status == CT_READ_TRUNCATED)
			ct_json_u64(j, m->read.truncated_offset);
		else
			ct_json_null(j);
		ct_json_kv_u64(j, "dropped_events", m->dropped);
		ct_json_kv_u64(j, "dropped_in_signal_handlers", m->dropped_signal);
		ct_json_kv_u64(j, "dropped_records", m->dropped_records);
		if (m->pauses) { /* only in a dump that paused (cumtrace_bench_pause) */
			ct_json_kv_u64(j, "pauses", m->pauses);
			ct_json_kv_u64(j, "paused_ns", m->paused_ns);
		}
		ct_json_kv_u64(j, "bytes", m->read.file_bytes);
		ct_json_kv_u64(j, "records", m->read.records);
		ct_json_kv_u64(j, "events", m->events);
		ct_json_kv_u64(j, "allocations", m->allocations);
		ct_json_kv_u64(j, "frees", m->frees);
		ct_json_kv_u64(j, "failed_calls", m->failed_calls);
		ct_json_kv_u64(j, "unmatched_frees", m->unmatched_frees);
		ct_json_kv_u64(j, "double_allocations", m->double_allocs);
		ct_json_kv_u64(j, "late_events", m->read.late_events);
		ct_json_kv_u64(j, "unknown_records", m->read.unknown_records);
		ct_json_kv_u64(j, "stacks", ct_symtab_stack_count(m->syms));
		ct_json_kv_u64(j, "modules", ct_symtab_module_count(m->syms));
		ct_json_kv_u64(j, "marks", m->marks);
		ct_marks_json(j, m->marks_list, &m->infer);
		ct_json_kv_u64(j, "start_monotonic_ns", ct_model_start_ns(m));
		ct_json_kv_u64(j, "start_realtime_ns", m->start_realtime_ns);
		ct_json_kv_u64(j, "duration_ns", ct_model_duration_ns(m));
		ct_json_kv_u64(j, "leak_count", m->leak_count);
		ct_json_kv_u64(j, "leak_bytes", m->leak_bytes);
		ct_json_kv_u64(j, "peak_bytes", m->peak_bytes);
		ct_json_key(j, "peak_time_ns");
		uint64_t s = ct_model_start_ns(m);
		ct_json_u64(j, m->peak_seen && m->peak_ts >= s ? m->peak_ts - s : 0);
		ct_json_kv_u64(j, "embedded_symbols", ct_symtab_embedded_count(m->syms));
		if (ct_imports_any(&m->imp))
			json_imports(j, &m->imp);
		ct_nccl_json(j, (struct ct_model *)m);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);

	/* marks and NVTX ranges: only when there are any */
	int any_marks = 0;
	for (size_t d = 0; d < nm; d++)
		any_marks |= ms[d]->marks_list->n != 0;
	if (any_marks) {
		ct_json_key(j, "marks");
		ct_json_arr(j);
		for (size_t d = 0; d < nm; d++) {
			struct ct_marklist *l = ms[d]->marks_list;
			ct_marks_sort(l);
			for (size_t i = 0; i < l->n; i++) {
				ct_json_obj(j);
				ct_json_kv_str(j, "name", l->v[i].name);
				ct_json_kv_str(j, "kind", ct_mark_kind_name(l->v[i].kind));
				ct_json_kv_u64(j, "ts_ns", l->v[i].ts_ns);
				ct_json_kv_u64(j, "tid", l->v[i].tid);
				ct_json_kv_u64(j, "pid", ms[d]->pid);
				if (l->v[i].kind == CT_MARK_START || l->v[i].kind == CT_MARK_STOP)
					ct_json_kv_u64(j, "range_id", l->v[i].aux);
				if (l->v[i].kind == CT_MARK_STEP)
					ct_json_kv_str(j, "source", ct_step_source_name(l->v[i].aux));
				ct_json_obj_end(j);
			}
		}
		ct_json_arr_end(j);
	}

	ct_json_kv_u64(j, "allocations", allocs);
	ct_json_kv_u64(j, "frees", frees);
	ct_json_kv_u64(j, "failed_calls", failed);
	ct_json_kv_u64(j, "dropped_events", dropped);
	ct_json_kv_u64(j, "dropped_in_signal_handlers", dropped_signal);
	ct_json_kv_u64(j, "dropped_records", dropped_records);
	ct_json_kv_u64(j, "unmatched_frees", unmatched);
	ct_json_kv_u64(j, "double_allocations", doubles);
}

void ct_json_document(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t nm,
		      const ct_json_section_fn *sections, size_t nsections)
{
	struct ct_json j;
	ct_json_init(&j, f);
	ct_json_obj(&j);
	ct_json_kv_str(&j, "format", "cumtrace-report");
	ct_json_kv_u64(&j, "format_version", CT_REPORT_FORMAT_VERSION);
	ct_json_kv_str(&j, "command", ct_cmd_name(o->cmd));
	ct_json_kv_str(&j, "tool_version", o->tool_version);
	json_dumps(&j, ms, nm);
	if (ct_ranks_merged(o, nm))
		ct_ranks_json(&j, ms, nm);
	for (size_t i = 0; i < nsections; i++)
		sections[i](&j, o, ms, nm);
	ct_json_obj_end(&j);
	ct_json_done(&j);
}
