/*
 * SARIF 2.1.0 of the leak findings (exports/ci.h): one run, a rule per class
 * ("cumtrace/leaked", "cumtrace/cache", "cumtrace/teardown",
 * "cumtrace/growth"), one result per leak or growth site whose label frame
 * (classify.h: ct_label_frame, the user's Python frame, else the innermost
 * frame of the program's own code) has a file and a line: it is the result's
 * location, as a URI relative to the traced process's working directory when
 * the file lies below it, and the message ends "at LABEL" (render.h:
 * ct_site_label, the label the text reports show). GitHub code scanning
 * refuses a whole file when one result has no location, so the sites
 * without such a frame are not results: a tool execution notification
 * counts them. The whole stack is in the result's "stacks". Level "error"
 * when the site fails the gate, "note" otherwise; suppressed sites carry a
 * suppression, and with a baseline every result has a baselineState.
 *
 * Each rule has help.text (GitHub requires it: SARIF Multitool rule GH2012)
 * and, with a documentation URL (make DOCS_URL), a helpUri; the driver then
 * has an informationUri. partialFingerprints tell sites apart by their
 * identity and their device (fingerprint()).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/suppress.h"
#include "base/json.h"
#include "base/util.h"
#include "exports/ci.h"

#define SARIF_SCHEMA "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

static struct ct_frame frames[CT_ANALYSIS_FRAMES];

/* Per class: name, short and full description, what to do (help), and the section of
 * docs/report.md that explains it (helpUri). */
static const struct {
	const char *name, *brief, *full, *help, *anchor;
} rules[CT_CLASS_COUNT] = {
	[CT_CLASS_LEAKED] = {"GpuMemoryLeaked", "GPU memory allocated by the program and never freed",
			     "An allocation made by the program's own code (not by an allocator "
			     "cache) was still live when the process exited.",
			     "Free the allocation on every path (cudaFree, cuMemFree, or drop the "
			     "last reference to what owns it) before the program exits. If it is "
			     "meant to live until exit, suppress the site (cumtrace-report "
			     "--gen-suppressions prints a block for it) or compare against a "
			     "baseline (--baseline).",
			     "leak-classes"},
	[CT_CLASS_CACHE] = {"GpuMemoryHeldByAllocatorCache",
			    "GPU memory held by an allocator cache at exit",
			    "A caching allocator or library workspace (PyTorch, CuPy, JAX/XLA, "
			    "cuBLAS, cuDNN, NCCL) still held this memory at exit; caches usually "
			    "keep memory until the process ends.",
			    "Usually nothing to fix: the cache keeps memory for reuse until the "
			    "process ends. The stack shows which allocator or library holds it. "
			    "If this memory grows from step to step, see the growth rule; to give "
			    "it back earlier, empty the cache (torch.cuda.empty_cache(), CuPy's "
			    "free_all_blocks()).",
			    "leak-classes"},
	[CT_CLASS_TEARDOWN] = {"GpuMemoryFreedByContextTeardown",
			       "GPU memory still live at a context teardown",
			       "The allocation was live when cudaDeviceReset, cuCtxDestroy or "
			       "cuDevicePrimaryCtxReset destroyed its context.",
			       "The context teardown gave this memory back, but the program never "
			       "freed it: free it before resetting the device or destroying the "
			       "context, or it leaks in programs that do not tear down.",
			       "leak-classes"},
	[CT_CLASS_GROWTH] = {"GpuMemoryGrowsPerStep", "GPU memory that grows step after step",
			     "The live bytes of this allocation site grew in most of the last "
			     "steps (cumtrace marks or NVTX ranges).",
			     "Something allocated at this site in each step is kept into the next "
			     "one, such as tensors appended to a list every iteration, or results "
			     "kept with their autograd graph. Release what each step allocates, or "
			     "keep only what is needed (a number rather than a tensor, a detached "
			     "copy).",
			     "growth-leaks"},
};

/* Is path below dir? Then the rest of path (after dir and its '/'), else NULL. */
static const char *below(const char *path, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;
	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (!n || strncmp(path, dir, n) || path[n] != '/' || !path[n + 1])
		return NULL;
	return path + n + 1;
}

/* A path as URI characters: unreserved characters and '/' kept, the rest %XX. */
static char *uri_path(const char *prefix, const char *p)
{
	size_t n = strlen(p), pl = strlen(prefix);
	char *out = ct_xmalloc(pl + 3 * n + 1), *w = out;
	memcpy(w, prefix, pl);
	w += pl;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~/", c)) {
			*w++ = (char)c;
		} else {
			static const char hex[] = "0123456789ABCDEF";
			*w++ = '%';
			*w++ = hex[c >> 4];
			*w++ = hex[c & 15];
		}
	}
	*w = 0;
	return out;
}

/* {"physicalLocation": ...} for a frame with a file and a line. */
static void json_physical(struct ct_json *j, const struct ct_model *m, const struct ct_frame *fr)
{
	const char *file = fr->file;
	const char *rel = below(file, m->cwd);
	char *uri;
	int relative = 0;
	if (rel) {
		uri = uri_path("", rel);
		relative = 1;
	} else if (file[0] != '/') {
		uri = uri_path("", fr->file_short ? fr->file_short : file);
		relative = 1;
	} else {
		uri = uri_path("file://", file);
	}
	ct_json_key(j, "physicalLocation");
	ct_json_obj(j);
	ct_json_key(j, "artifactLocation");
	ct_json_obj(j);
	ct_json_kv_str(j, "uri", uri);
	if (relative)
		ct_json_kv_str(j, "uriBaseId", "%SRCROOT%");
	ct_json_obj_end(j);
	ct_json_key(j, "region");
	ct_json_obj(j);
	ct_json_kv_u64(j, "startLine", fr->line);
	ct_json_obj_end(j);
	ct_json_obj_end(j);
	free(uri);
}

static void json_stack(struct ct_json *j, const struct ct_model *m, const struct ct_frame *fr, size_t k)
{
	char text[1024];
	ct_json_key(j, "stacks");
	ct_json_arr(j);
	ct_json_obj(j);
	ct_json_key(j, "message");
	ct_json_obj(j);
	ct_json_kv_str(j, "text", "allocation stack, innermost frame first");
	ct_json_obj_end(j);
	ct_json_key(j, "frames");
	ct_json_arr(j);
	for (size_t i = 0; i < k; i++) {
		const struct ct_frame *f = &fr[i];
		ct_json_obj(j);
		ct_json_key(j, "location");
		ct_json_obj(j);
		if (f->file && f->line)
			json_physical(j, m, f);
		if (f->python)
			snprintf(text, sizeof text, "%s (Python)", f->function ? f->function : "?");
		else if (f->module_name)
			snprintf(text, sizeof text, "%s in %s+0x%" PRIx64, f->function ? f->function : "?",
				 f->module_name, f->offset);
		else
			snprintf(text, sizeof text, "? at 0x%" PRIx64, f->ip);
		ct_json_key(j, "message");
		ct_json_obj(j);
		ct_json_kv_str(j, "text", text);
		ct_json_obj_end(j);
		ct_json_obj_end(j);
		if (!f->python && f->module)
			ct_json_kv_str(j, "module", f->module);
		ct_json_obj_end(j);
	}
	ct_json_arr_end(j);
	ct_json_obj_end(j);
	ct_json_arr_end(j);
}

/*
 * partialFingerprints' "cumtraceSite/v1": the site's identity (function names,
 * never addresses: stable across runs and rebuilds), with its device mixed in
 * past device 0, so that one site on two devices is two results for GitHub
 * while a device-0 site keeps the fingerprint of earlier versions.
 */
static uint64_t fingerprint(const struct ct_finding *x)
{
	if (x->it.device == 0)
		return x->identity;
	uint64_t h = x->identity;
	uint32_t dev = (uint32_t)(int32_t)x->it.device;
	for (int i = 0; i < 4; i++) /* FNV-1a over the device's bytes: the same on every platform */
		h = (h ^ ((dev >> (8 * i)) & 0xff)) * 0x100000001b3ull;
	return h;
}

/* The result of a finding; 0 (nothing written) when it has no user frame to be its location. */
static int json_result(struct ct_json *j, const struct ct_report_opts *o, const struct ct_finding *x,
		       int have_baseline)
{
	char msg[600], id[24];
	size_t k = ct_finding_frames(x, frames);
	if (x->user_frame < 0 || (size_t)x->user_frame >= k || !frames[x->user_frame].file ||
	    !frames[x->user_frame].line)
		return 0;
	ct_finding_message(x, msg, sizeof msg);
	ct_json_obj(j);
	char rid[32];
	snprintf(rid, sizeof rid, "cumtrace/%s", ct_class_name(x->cls));
	ct_json_kv_str(j, "ruleId", rid);
	ct_json_kv_u64(j, "ruleIndex", (uint64_t)x->cls);
	ct_json_kv_str(j, "level", x->fails ? "error" : "note");
	ct_json_key(j, "message");
	ct_json_obj(j);
	if (x->why.rule >= 0) {
		size_t l = strlen(msg);
		snprintf(msg + l, sizeof msg - l, ", %s", ct_rule_get((size_t)x->why.rule)->label);
	}
	char label[512];
	if (ct_site_label(x->it.m, x->it.stack_id, label, sizeof label)) {
		size_t l = strlen(msg);
		snprintf(msg + l, sizeof msg - l, " at %s", label);
	}
	ct_json_kv_str(j, "text", msg);
	ct_json_obj_end(j);
	ct_json_key(j, "locations");
	ct_json_arr(j);
	ct_json_obj(j);
	json_physical(j, x->it.m, &frames[x->user_frame]);
	ct_json_obj_end(j);
	ct_json_arr_end(j);
	snprintf(id, sizeof id, "%016" PRIx64, fingerprint(x));
	ct_json_key(j, "partialFingerprints");
	ct_json_obj(j);
	ct_json_kv_str(j, "cumtraceSite/v1", id);
	ct_json_obj_end(j);
	if (x->supp >= 0) {
		ct_json_key(j, "suppressions");
		ct_json_arr(j);
		ct_json_obj(j);
		ct_json_kv_str(j, "kind", "external");
		ct_json_kv_str(j, "justification", ct_supp_name(o->supp, (size_t)x->supp));
		ct_json_obj_end(j);
		ct_json_arr_end(j);
	}
	if (have_baseline)
		ct_json_kv_str(j, "baselineState", x->in_baseline ? "unchanged" : "new");
	json_stack(j, x->it.m, frames, k);
	ct_json_key(j, "properties");
	ct_json_obj(j);
	ct_json_kv_u64(j, "pid", x->it.m->pid);
	ct_json_kv_u64(j, "bytes", x->it.bytes);
	ct_json_kv_u64(j, "count", x->growth ? 0 : x->it.count);
	ct_json_kv_str(j, "kind", ct_kind_name(x->it.kind));
	ct_json_kv_str(j, "api", ct_api_name(x->it.api));
	ct_json_kv_i64(j, "device", x->it.device);
	ct_json_kv_str(j, "allocator",
		       x->why.rule >= 0 ? ct_rule_get((size_t)x->why.rule)->allocator : NULL);
	ct_json_kv_bool(j, "failsGate", x->fails);
	ct_json_obj_end(j);
	ct_json_obj_end(j);
	return 1;
}

/* A toolExecutionNotification of the run: level ("note", "warning") and text. */
static void json_notification(struct ct_json *j, const char *level, const char *text)
{
	ct_json_obj(j);
	ct_json_kv_str(j, "level", level);
	ct_json_key(j, "message");
	ct_json_obj(j);
	ct_json_kv_str(j, "text", text);
	ct_json_obj_end(j);
	ct_json_obj_end(j);
}

void ct_sarif_write(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n)
{
	struct ct_assessment *a = ct_assess(o, ms, n, NULL);
	struct ct_json j;
	ct_json_init(&j, f);
	ct_json_obj(&j);
	ct_json_kv_str(&j, "$schema", SARIF_SCHEMA);
	ct_json_kv_str(&j, "version", "2.1.0");
	ct_json_key(&j, "runs");
	ct_json_arr(&j);
	ct_json_obj(&j);
	ct_json_key(&j, "tool");
	ct_json_obj(&j);
	ct_json_key(&j, "driver");
	ct_json_obj(&j);
	ct_json_kv_str(&j, "name", "cumtrace");
	ct_json_kv_str(&j, "version", o->tool_version);
	char uri[512];
	if (o->docs_url) {
		snprintf(uri, sizeof uri, "%s/report.md", o->docs_url);
		ct_json_kv_str(&j, "informationUri", uri);
	}
	ct_json_key(&j, "rules");
	ct_json_arr(&j);
	for (int c = 0; c < CT_CLASS_COUNT; c++) {
		char rid[32];
		snprintf(rid, sizeof rid, "cumtrace/%s", ct_class_name(c));
		ct_json_obj(&j);
		ct_json_kv_str(&j, "id", rid);
		ct_json_kv_str(&j, "name", rules[c].name);
		ct_json_key(&j, "shortDescription");
		ct_json_obj(&j);
		ct_json_kv_str(&j, "text", rules[c].brief);
		ct_json_obj_end(&j);
		ct_json_key(&j, "fullDescription");
		ct_json_obj(&j);
		ct_json_kv_str(&j, "text", rules[c].full);
		ct_json_obj_end(&j);
		ct_json_key(&j, "help");
		ct_json_obj(&j);
		ct_json_kv_str(&j, "text", rules[c].help);
		ct_json_obj_end(&j);
		if (o->docs_url) {
			snprintf(uri, sizeof uri, "%s/report.md#%s", o->docs_url, rules[c].anchor);
			ct_json_kv_str(&j, "helpUri", uri);
		}
		ct_json_key(&j, "defaultConfiguration");
		ct_json_obj(&j);
		ct_json_kv_str(&j, "level", a->fail_classes & CT_CLASS_BIT(c) ? "error" : "note");
		ct_json_obj_end(&j);
		ct_json_obj_end(&j);
	}
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	ct_json_obj_end(&j);
	if (n && ms[0]->cwd) {
		char *root = uri_path("file://", ms[0]->cwd);
		size_t rl = strlen(root);
		ct_json_key(&j, "originalUriBaseIds");
		ct_json_obj(&j);
		ct_json_key(&j, "%SRCROOT%");
		ct_json_obj(&j);
		if (rl && root[rl - 1] != '/') {
			char *r2 = ct_xmalloc(rl + 2);
			memcpy(r2, root, rl);
			memcpy(r2 + rl, "/", 2);
			free(root);
			root = r2;
		}
		ct_json_kv_str(&j, "uri", root);
		ct_json_obj_end(&j);
		ct_json_obj_end(&j);
		free(root);
	}
	int have_baseline = o->baseline != NULL;
	size_t unplaced = 0;
	ct_json_key(&j, "results");
	ct_json_arr(&j);
	for (size_t i = 0; i < a->n; i++)
		unplaced += !json_result(&j, o, &a->v[i], have_baseline);
	ct_json_arr_end(&j);
	ct_json_key(&j, "invocations");
	ct_json_arr(&j);
	ct_json_obj(&j);
	ct_json_kv_bool(&j, "executionSuccessful", 1);
	ct_json_key(&j, "toolExecutionNotifications");
	ct_json_arr(&j);
	if (unplaced) {
		char text[256];
		snprintf(text, sizeof text,
			 "%zu of %zu site%s %s no frame of the program's own code with a file and a line "
			 "and %s not results here (cumtrace-report leaks lists them)",
			 unplaced, a->n, ct_plural_s(a->n), ct_plural(unplaced, "has", "have"),
			 ct_plural(unplaced, "is", "are"));
		json_notification(&j, "note", text);
	}
	for (size_t d = 0; d < n; d++) { /* a dump that cumtrace_bench_pause left incomplete */
		if (!ms[d]->pauses)
			continue;
		char text[320];
		snprintf(text, sizeof text, "%s: %s: the data is incomplete",
			 ms[d]->path ? ms[d]->path : "the dump", ct_pauses_text(ms[d]));
		json_notification(&j, "warning", text);
	}
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	ct_json_arr_end(&j);
	ct_json_obj_end(&j);
	ct_json_done(&j);
	ct_assessment_free(a);
}
