/* Leak classes, the allocator rules table, user frames and site identities (classify.h). */
#include "model/classify.h"

#include <stdio.h>
#include <string.h>

#include "model/pystack.h"

/*
 * The rules, one row each, tried in this order on every frame from the
 * innermost out. A frame matching a pass rule is skipped; the first frame that
 * matches no pass rule decides: a cache rule makes the group "cache", no rule
 * makes it "leaked". Add an allocator: add rows.
 */
static const struct ct_rule rules[] = {
	/* layers a cudaMalloc passes through on its way from the caller */
	{CT_RULE_PASS, "runtime", "CUDA runtime", CT_RULE_MODULE, "libcudart.so*"},
	{CT_RULE_PASS, "runtime", "CUDA driver", CT_RULE_MODULE, "libcuda.so*"},
	{CT_RULE_PASS, "runtime", "ctypes", CT_RULE_MODULE, "_ctypes*.so*"},
	{CT_RULE_PASS, "runtime", "libffi", CT_RULE_MODULE, "libffi.so*"},
	{CT_RULE_PASS, "runtime", "CuPy's CUDA bindings", CT_RULE_PATH, "*/cupy_backends/*"},
	/* PyTorch: the CUDA caching allocator (and expandable segments) */
	{CT_RULE_CACHE, "pytorch", "PyTorch caching allocator", CT_RULE_FUNCTION,
	 "c10::cuda::CUDACachingAllocator::*"},
	{CT_RULE_CACHE, "pytorch", "PyTorch caching allocator", CT_RULE_FUNCTION,
	 "_ZN3c104cuda20CUDACachingAllocator*"},
	{CT_RULE_CACHE, "pytorch", "PyTorch caching allocator", CT_RULE_MODULE, "libc10_cuda.so"},
	{CT_RULE_CACHE, "pytorch", "PyTorch caching allocator", CT_RULE_MODULE, "libtorch_cuda*.so"},
	/* CuPy's memory pool */
	{CT_RULE_CACHE, "cupy", "CuPy memory pool", CT_RULE_PATH, "*/cupy/cuda/memory.*"},
	{CT_RULE_CACHE, "cupy", "CuPy memory pool", CT_RULE_FUNCTION, "__pyx_*4cupy_4cuda_6memory_*"},
	{CT_RULE_CACHE, "cupy", "CuPy memory pool", CT_RULE_PYFILE, "*cupy/cuda/memory.pyx"},
	/* JAX / XLA: the BFC allocator in xla_extension or jaxlib */
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_FUNCTION, "tsl::BFCAllocator::*"},
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_MODULE, "xla_extension.so"},
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_MODULE, "libjax*.so*"},
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_PATH, "*/jaxlib/*"},
	/* JAX >= 0.5 on CUDA: the allocator's device memory comes from the PJRT plugin's
	 * stream executor (xla_cuda_plugin.so in jax_plugins/xla_cuda*), also via VMM */
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_MODULE, "xla_cuda_plugin.so"},
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_FUNCTION, "stream_executor::*"},
	{CT_RULE_CACHE, "jax", "JAX/XLA allocator", CT_RULE_PATH, "*/jax_plugins/*"},
	/* libraries that keep workspaces and buffers of their own */
	{CT_RULE_CACHE, "cublas", "cuBLAS workspace", CT_RULE_MODULE, "libcublas.so*"},
	{CT_RULE_CACHE, "cublas", "cuBLAS workspace", CT_RULE_MODULE, "libcublasLt.so*"},
	{CT_RULE_CACHE, "cudnn", "cuDNN workspace", CT_RULE_MODULE, "libcudnn*.so*"},
	{CT_RULE_CACHE, "nccl", "NCCL buffers", CT_RULE_MODULE, "libnccl*.so*"},
};

static const char *const class_names[CT_CLASS_COUNT] = {"leaked", "cache", "teardown", "growth"};
static const char *const class_titles[CT_CLASS_COUNT] = {
	"leaked", "held by an allocator cache", "freed by context teardown", "growing across steps"};

const char *ct_class_name(int cls)
{
	return cls >= 0 && cls < CT_CLASS_COUNT ? class_names[cls] : "unknown";
}

const char *ct_class_title(int cls)
{
	return cls >= 0 && cls < CT_CLASS_COUNT ? class_titles[cls] : "unknown";
}

int ct_class_parse(const char *name, size_t len)
{
	for (int i = 0; i < CT_CLASS_COUNT; i++)
		if (strlen(class_names[i]) == len && !memcmp(name, class_names[i], len))
			return i;
	return -1;
}

int ct_class_parse_list(const char *s, unsigned *set, char *bad, size_t badcap)
{
	unsigned out = 0;
	for (;;) {
		size_t len = strcspn(s, ",");
		int c = ct_class_parse(s, len);
		if (c >= 0)
			out |= CT_CLASS_BIT(c);
		else if (len == 3 && !memcmp(s, "all", 3))
			out |= CT_CLASS_ALL;
		else {
			snprintf(bad, badcap, "%.*s", (int)(len < 64 ? len : 64), s);
			return -1;
		}
		if (!s[len])
			break;
		s += len + 1;
	}
	*set = out;
	return 0;
}

size_t ct_rule_count(void)
{
	return sizeof rules / sizeof rules[0];
}

const struct ct_rule *ct_rule_get(size_t i)
{
	return i < ct_rule_count() ? &rules[i] : NULL;
}

const char *ct_rule_field_name(int field)
{
	static const char *const names[] = {"module", "path", "function", "python file"};
	return field >= 0 && field <= CT_RULE_PYFILE ? names[field] : "unknown";
}

const char *ct_rule_subject(const struct ct_frame *f, int field)
{
	const char *v = NULL;
	switch (field) {
	case CT_RULE_MODULE:
		v = f->python ? NULL : f->module_name;
		break;
	case CT_RULE_PATH:
		v = f->python ? NULL : f->module;
		break;
	case CT_RULE_FUNCTION:
		v = f->python ? NULL : f->function;
		break;
	case CT_RULE_PYFILE:
		v = f->python ? f->file : NULL;
		break;
	}
	return v ? v : "";
}

int ct_glob(const char *p, const char *s, int qmark)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*p == '*') {
			star = ++p;
			resume = s;
		} else if (*p && (*p == *s || (qmark && *p == '?'))) {
			p++;
			s++;
		} else if (star) {
			p = star;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

static int rule_matches(const struct ct_rule *r, const struct ct_frame *f)
{
	const char *v = ct_rule_subject(f, r->field);
	return *v && ct_glob(r->pattern, v, 1);
}

/* The first rule matching f, -1 when none does. */
static int frame_rule(const struct ct_frame *f)
{
	for (size_t i = 0; i < ct_rule_count(); i++)
		if (rule_matches(&rules[i], f))
			return (int)i;
	return -1;
}

void ct_classify_frames(const struct ct_frame *f, size_t n, int teardown, struct ct_class_result *r)
{
	r->cls = teardown ? CT_CLASS_TEARDOWN : CT_CLASS_LEAKED;
	r->rule = -1;
	r->frame = -1;
	for (size_t i = 0; i < n; i++) {
		int k = frame_rule(&f[i]);
		if (k >= 0 && rules[k].action == CT_RULE_PASS)
			continue;
		if (k >= 0) {
			r->rule = k;
			r->frame = (int)i;
			if (!teardown)
				r->cls = CT_CLASS_CACHE;
		}
		return;
	}
}

size_t ct_analysis_frames(struct ct_model *m, uint32_t stack_id, struct ct_frame *out, size_t max)
{
	if (!stack_id)
		return 0;
	return ct_frames_resolve_mode(m, stack_id, CT_FRAMES_MIXED, out, max);
}

/* Where system code lives: frames there are never the user's. */
static const char *const system_globs[] = {
	"/lib/*",	     "/lib64/*",	   "/lib32/*",		"/usr/lib/*",
	"/usr/lib64/*",	     "/usr/lib32/*",	   "/usr/include/*",	"/usr/local/lib/*",
	"/usr/local/include/*", "/usr/share/*",	   "/usr/bin/*",	"/bin/*",
	"*/site-packages/*", "*/dist-packages/*", "*/lib/python3.*/*", "*/lib/python2.*/*",
};

static int is_system_path(const char *p)
{
	if (!p)
		return 0;
	for (size_t i = 0; i < sizeof system_globs / sizeof system_globs[0]; i++)
		if (ct_glob(system_globs[i], p, 1))
			return 1;
	return 0;
}

/* Frames of these modules (file names) or paths are never the user's, and text stacks fold runs
 * of them: frameworks, CUDA runtimes, the interpreter and its ctypes, C and C++ runtimes. */
static const char *const fold_modules[] = {
	"libtorch*", "libc10*",	   "libcublas*", "libcudnn*", "libnccl*",   "libffi.so*",
	"_ctypes*",  "libpython*", "python*",	 "libcudart*", "libcuda.so*", "libc.so*",
	"libstdc++*", "libgcc_s*", "libcupy*",	 "libjax*",   "xla_extension*",
};
static const char *const fold_paths[] = {"*/torch/lib/*", "*/cupy/*", "*/cupy_backends/*", "*/jaxlib/*",
					 "*/nvidia/*/lib/*"};

/* A frame of the C library's start-up (__libc_start_main, _start, ...), outside main. */
static int frame_is_startup(const struct ct_frame *fr)
{
	static const char *const names[] = {"__libc_start_call_main", "__libc_start_main",
					    "__libc_start_main_impl", "__libc_start_main_alias_2", "_start"};
	for (size_t i = 0; fr->function && !fr->python && i < sizeof names / sizeof *names; i++)
		if (!strcmp(fr->function, names[i]))
			return 1;
	return 0;
}

size_t ct_frames_to_main(const struct ct_frame *f, size_t n)
{
	/* the program's own main: an interpreter's (a folded frame) is not where its program starts */
	for (size_t i = 0; i < n; i++)
		if (f[i].function && !f[i].python && !strcmp(f[i].function, "main") && !ct_frame_folds(&f[i]))
			return i + 1;
	while (n > 1 && frame_is_startup(&f[n - 1]))
		n--;
	return n;
}

int ct_frame_folds(const struct ct_frame *f)
{
	if (f->python || !f->module)
		return 0;
	for (size_t i = 0; i < sizeof fold_modules / sizeof *fold_modules; i++)
		if (f->module_name && ct_glob(fold_modules[i], f->module_name, 1))
			return 1;
	for (size_t i = 0; i < sizeof fold_paths / sizeof *fold_paths; i++)
		if (ct_glob(fold_paths[i], f->module, 1))
			return 1;
	return 0;
}

int ct_frame_is_user(const struct ct_frame *f)
{
	if (!f->file || !f->file[0] || !f->line || f->file[0] == '<')
		return 0;
	if (frame_rule(f) >= 0 || is_system_path(f->file) || ct_frame_folds(f))
		return 0;
	return f->python || !is_system_path(f->module);
}

int ct_first_user_frame(const struct ct_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ct_frame_is_user(&f[i]))
			return (int)i;
	return -1;
}

int ct_label_frame(const struct ct_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].python && ct_frame_is_user(&f[i]))
			return (int)i;
	int u = ct_first_user_frame(f, n);
	if (u >= 0)
		return u;
	/* a module of the program's own without line information */
	for (size_t i = 0; i < n; i++)
		if (!f[i].python && f[i].module && !ct_frame_folds(&f[i]) && frame_rule(&f[i]) < 0 &&
		    !is_system_path(f[i].module))
			return (int)i;
	return -1;
}

/* FNV-1a, 64 bits, with a separator after each field. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	h ^= 0xff;
	return h * 0x100000001b3ull;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	return fnv(h, s ? s : "", s ? strlen(s) : 0);
}

uint64_t ct_site_identity(int cls, unsigned api, unsigned kind, const struct ct_frame *f, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint32_t head[3] = {(uint32_t)cls, api, kind};
	h = fnv(h, head, sizeof head);
	for (size_t i = 0; i < n; i++) {
		if (f[i].python) {
			h = fnv_str(h, "py");
			h = fnv_str(h, f[i].file);
			h = fnv_str(h, f[i].function);
		} else if (f[i].function) {
			h = fnv_str(h, "fn");
			h = fnv_str(h, f[i].module_name);
			h = fnv_str(h, f[i].function);
		} else if (f[i].module) {
			h = fnv_str(h, "mo");
			h = fnv_str(h, f[i].module_name);
			h = fnv(h, &f[i].offset, sizeof f[i].offset);
		} else {
			h = fnv_str(h, "?");
		}
	}
	return h;
}
