/*
 * Unit tests of leak classes (classify.c), suppressions (suppress.c), growth
 * leaks (growth.c) and the gate (gate.c). The rendered reports are golden
 * cases (tests/golden/cases/classes-*, run by test_golden.c).
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckmain.h"
#include "../../analyzer/model/classify.h"
#include "../../analyzer/analyses/gate.h"
#include "../../analyzer/analyses/growth.h"
#include "../../analyzer/model/model.h"
#include "../../analyzer/commands/commands.h"
#include "../../analyzer/analyses/suppress.h"
#include "../../analyzer/render/render.h"
#include "dumpgen.h"
#include "modelload.h"

/* ---- frames ------------------------------------------------------------------------------------- */

static struct ct_frame nat(const char *fn, const char *module, const char *file, unsigned line)
{
	struct ct_frame f;
	memset(&f, 0, sizeof f);
	f.function = fn;
	f.module = module;
	if (module) {
		const char *s = strrchr(module, '/');
		f.module_name = s ? s + 1 : module;
	}
	f.file = file;
	f.file_short = file;
	f.line = line;
	f.offset = 0x1234;
	f.ip = 0x7f0000001234;
	return f;
}

static struct ct_frame py(const char *fn, const char *file, unsigned line)
{
	struct ct_frame f;
	memset(&f, 0, sizeof f);
	f.python = 1;
	f.function = fn;
	f.file = file;
	f.file_short = file;
	f.line = line;
	return f;
}

START_TEST(glob_matching)
{
	static const struct {
		const char *p, *s;
		int qmark, want;
	} cases[] = {
		{"abc", "abc", 1, 1},	      {"abc", "abd", 1, 0},	   {"a*c", "abbbc", 1, 1},
		{"a*c", "ac", 1, 1},	      {"a*c", "acb", 1, 0},	   {"*", "", 1, 1},
		{"*", "anything", 1, 1},      {"", "", 1, 1},		   {"", "x", 1, 0},
		{"a?c", "abc", 1, 1},	      {"a?c", "abc", 0, 0},	   {"a?c", "a?c", 0, 1},
		{"a?c", "ac", 1, 0},	      {"*a*b*", "xxaxxbxx", 1, 1}, {"*a*b*", "xxbxxaxx", 1, 0},
		{"lib*.so*", "libnccl.so.2", 1, 1}, {"lib*.so*", "libnccl.a", 1, 0},
		{"**x", "yyx", 1, 1},	      {"a*", "a", 1, 1},	   {"*ab", "aab", 1, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(ct_glob(cases[i].p, cases[i].s, cases[i].qmark) == cases[i].want,
			      "glob '%s' on '%s'", cases[i].p, cases[i].s);
}
END_TEST

START_TEST(class_names_and_lists)
{
	unsigned set = 0;
	char bad[80];
	ck_assert_int_eq(ct_class_parse_list("leaked", &set, bad, sizeof bad), 0);
	ck_assert_uint_eq(set, CT_CLASS_BIT(CT_CLASS_LEAKED));
	ck_assert_int_eq(ct_class_parse_list("cache,teardown", &set, bad, sizeof bad), 0);
	ck_assert_uint_eq(set, CT_CLASS_BIT(CT_CLASS_CACHE) | CT_CLASS_BIT(CT_CLASS_TEARDOWN));
	ck_assert_int_eq(ct_class_parse_list("growth,leaked", &set, bad, sizeof bad), 0);
	ck_assert_uint_eq(set, CT_CLASS_BIT(CT_CLASS_GROWTH) | CT_CLASS_BIT(CT_CLASS_LEAKED));
	ck_assert_int_eq(ct_class_parse_list("all", &set, bad, sizeof bad), 0);
	ck_assert_uint_eq(set, 15);
	set = 99;
	ck_assert_int_eq(ct_class_parse_list("leaked,bogus", &set, bad, sizeof bad), -1);
	ck_assert_str_eq(bad, "bogus");
	ck_assert_uint_eq(set, 99); /* untouched on error */
	ck_assert_int_eq(ct_class_parse_list("leaked,", &set, bad, sizeof bad), -1);
	ck_assert_str_eq(bad, "");
	ck_assert_int_eq(ct_class_parse_list("", &set, bad, sizeof bad), -1);
	ck_assert_str_eq(ct_class_name(CT_CLASS_TEARDOWN), "teardown");
	ck_assert_str_eq(ct_class_title(CT_CLASS_CACHE), "held by an allocator cache");
	ck_assert_str_eq(ct_class_name(7), "unknown");
}
END_TEST

/* A subject that rule i's glob matches: '*' -> "x", '?' -> "y". */
static void subject_of(const char *pattern, char *out, size_t cap)
{
	size_t k = 0;
	for (const char *p = pattern; *p && k + 2 < cap; p++)
		out[k++] = *p == '*' ? 'x' : *p == '?' ? 'y' : *p;
	out[k] = 0;
}

/* Every rule of the table matches what it says, and decides as its action says. */
START_TEST(every_rule_matches_its_field)
{
	struct ct_frame user = nat("train", "/home/u/app", "/home/u/app.c", 12);
	for (size_t i = 0; i < ct_rule_count(); i++) {
		const struct ct_rule *r = ct_rule_get(i);
		char subj[256], path[300];
		subject_of(r->pattern, subj, sizeof subj);
		struct ct_frame f;
		switch (r->field) {
		case CT_RULE_MODULE:
			snprintf(path, sizeof path, "/opt/lib/%s", subj);
			f = nat("fn", path, NULL, 0);
			break;
		case CT_RULE_PATH:
			f = nat("fn", subj, NULL, 0);
			break;
		case CT_RULE_FUNCTION:
			f = nat(subj, "/opt/lib/libother.so", NULL, 0);
			break;
		default:
			f = py("fn", subj, 3);
			break;
		}
		struct ct_frame st[2] = {f, user};
		struct ct_class_result res;
		ct_classify_frames(st, 2, 0, &res);
		if (r->action == CT_RULE_PASS) {
			/* skipped: the user frame behind it decides */
			ck_assert_msg(res.cls == CT_CLASS_LEAKED && res.rule == -1, "pass rule %zu (%s)", i,
				      r->pattern);
		} else {
			ck_assert_msg(res.cls == CT_CLASS_CACHE && res.rule == (int)i && res.frame == 0,
				      "rule %zu (%s): class %d rule %d", i, r->pattern, res.cls, res.rule);
		}
		/* a field it does not look at does not match */
		struct ct_frame other = r->field == CT_RULE_FUNCTION ? nat("fn", subj, NULL, 0)
								     : nat(subj, "/opt/lib/libother.so", NULL, 0);
		struct ct_frame st2[1] = {other};
		ct_classify_frames(st2, 1, 0, &res);
		ck_assert_msg(res.rule != (int)i, "rule %zu matched another field", i);
	}
}
END_TEST

static int classify_one(const struct ct_frame *f, size_t n, int teardown, const char **allocator,
			int *frame)
{
	struct ct_class_result r;
	ct_classify_frames(f, n, teardown, &r);
	*allocator = r.rule >= 0 ? ct_rule_get((size_t)r.rule)->allocator : NULL;
	*frame = r.frame;
	return r.cls;
}

START_TEST(classify_real_world_stacks)
{
	const char *al;
	int fr;
	struct ct_frame cudart = nat("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.13", NULL, 0);
	struct ct_frame user = nat("main", "/home/u/prog", "/home/u/prog.c", 40);
	/* PyTorch, demangled, mangled and by module only */
	struct ct_frame t1[3] = {
		nat("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
		    "/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so", NULL, 0),
		nat("at::native::empty_cuda(...)", "/venv/torch/lib/libtorch_cuda.so", NULL, 0), user};
	ck_assert_int_eq(classify_one(t1, 3, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "pytorch");
	ck_assert_int_eq(fr, 0);
	struct ct_frame t2[2] = {nat("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocE",
				     "/x/libother.so", NULL, 0),
				 user};
	ck_assert_int_eq(classify_one(t2, 2, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "pytorch");
	struct ct_frame t3[3] = {cudart, nat(NULL, "/venv/torch/lib/libtorch_cuda_cu.so", NULL, 0), user};
	ck_assert_int_eq(classify_one(t3, 3, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_int_eq(fr, 1); /* the runtime frame is passed through */
	/* CuPy: the binding layer is passed, the pool decides; Python pool frames too */
	struct ct_frame c1[3] = {
		nat("__pyx_f_13cupy_backends_4cuda_3api_7runtime_malloc",
		    "/venv/lib/python3.12/site-packages/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so", NULL, 0),
		nat("__pyx_f_4cupy_4cuda_6memory_10MemoryPool_malloc",
		    "/venv/lib/python3.12/site-packages/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so", NULL, 0),
		user};
	ck_assert_int_eq(classify_one(c1, 3, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "cupy");
	ck_assert_int_eq(fr, 1);
	/* cupy_backends called straight from user code: the user leaked it */
	struct ct_frame c2[2] = {c1[0], py("train", "/home/u/train.py", 9)};
	ck_assert_int_eq(classify_one(c2, 2, 0, &al, &fr), CT_CLASS_LEAKED);
	ck_assert_ptr_null(al);
	struct ct_frame c3[3] = {nat(NULL, "/usr/lib/x86_64-linux-gnu/libffi.so.8", NULL, 0),
				 py("malloc", "/venv/cupy/cuda/memory.pyx", 700), py("f", "/home/u/a.py", 1)};
	ck_assert_int_eq(classify_one(c3, 3, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "cupy");
	ck_assert_int_eq(fr, 1);
	/* JAX, cuBLAS(Lt), cuDNN, NCCL */
	struct ct_frame j1[2] = {nat("tsl::BFCAllocator::AllocateRaw(unsigned long, unsigned long)",
				     "/x/libfoo.so", NULL, 0),
				 user};
	ck_assert_int_eq(classify_one(j1, 2, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "jax");
	struct ct_frame j2[1] = {nat(NULL, "/venv/lib/python3.12/site-packages/jaxlib/xla_extension.so", NULL, 0)};
	ck_assert_int_eq(classify_one(j2, 1, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "jax");
	/* the stack the H200 recorded under JAX 0.11 (frames as the report printed them) */
	struct ct_frame j3[2] = {
		nat("stream_executor::gpu::CudaDeviceAllocator::Allocate(unsigned long)",
		    "/venv/lib/python3.12/site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so", NULL, 0),
		user};
	ck_assert_int_eq(classify_one(j3, 2, 0, &al, &fr), CT_CLASS_CACHE);
	ck_assert_str_eq(al, "jax");
	static const struct {
		const char *module, *allocator;
	} libs[] = {{"/usr/lib/libcublasLt.so.13.0.1", "cublas"},
		    {"/usr/lib/libcublas.so.13", "cublas"},
		    {"/usr/lib/libcudnn_ops.so.9", "cudnn"},
		    {"/usr/lib/libcudnn.so.9", "cudnn"},
		    {"/usr/lib/libnccl.so.2", "nccl"}};
	for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
		struct ct_frame l[3] = {cudart, nat(NULL, libs[i].module, NULL, 0), user};
		ck_assert_int_eq(classify_one(l, 3, 0, &al, &fr), CT_CLASS_CACHE);
		ck_assert_str_eq(al, libs[i].allocator);
		ck_assert_int_eq(fr, 1);
	}
	/* the user frame is innermost: whatever lies outside does not matter */
	struct ct_frame u1[3] = {cudart, user, t1[1]};
	ck_assert_int_eq(classify_one(u1, 3, 0, &al, &fr), CT_CLASS_LEAKED);
	ck_assert_int_eq(fr, -1);
	/* only pass frames, or no frames at all: leaked */
	ck_assert_int_eq(classify_one(&cudart, 1, 0, &al, &fr), CT_CLASS_LEAKED);
	ck_assert_int_eq(classify_one(NULL, 0, 0, &al, &fr), CT_CLASS_LEAKED);
	/* a checkpoint makes it teardown, keeping the cache evidence */
	ck_assert_int_eq(classify_one(t1, 3, 1, &al, &fr), CT_CLASS_TEARDOWN);
	ck_assert_str_eq(al, "pytorch");
	ck_assert_int_eq(classify_one(&user, 1, 1, &al, &fr), CT_CLASS_TEARDOWN);
	ck_assert_ptr_null(al);
}
END_TEST

START_TEST(user_frames)
{
	struct ct_frame f[] = {
		nat("cudaMalloc", "/x/libcudart.so.13", "/src/cudart.c", 10),		  /* rule */
		nat("memcpy", "/lib/x86_64-linux-gnu/libc.so.6", "string/memcpy.c", 5),	  /* system module */
		nat("std::vector<int>::push_back", "/home/u/prog", "/usr/include/c++/12/bits/stl_vector.h", 1280),
		py("run", "/venv/lib/python3.12/site-packages/torch/nn/module.py", 1500), /* site-packages */
		py("<module>", "<frozen runpy>", 88),
		py("main", "/usr/lib/python3.12/runpy.py", 198), /* the standard library */
		nat("helper", "/home/u/prog", NULL, 0),		 /* no file */
		nat("helper", "/home/u/prog", "/home/u/prog.c", 0), /* no line */
		py("train", "/home/u/train.py", 42),
		nat("leaky", "/home/u/prog", "/home/u/prog.c", 17),
	};
	size_t n = sizeof f / sizeof f[0];
	for (size_t i = 0; i + 2 < n; i++)
		ck_assert_msg(!ct_frame_is_user(&f[i]), "frame %zu taken as the user's", i);
	ck_assert(ct_frame_is_user(&f[n - 2]));
	ck_assert(ct_frame_is_user(&f[n - 1]));
	ck_assert_int_eq(ct_first_user_frame(f, n), (int)n - 2);
	ck_assert_int_eq(ct_first_user_frame(f, n - 2), -1);
}
END_TEST

/* The label frame: the user's Python frame first, then the user's native frame, then a module of
 * the program's own without lines; never a folded library (libtorch, libc10, the interpreter). */
START_TEST(label_frames)
{
	struct ct_frame f[] = {
		nat("cudaMalloc", "/x/libcudart.so.13", "/src/cudart.c", 10),
		nat("at::empty", "/home/u/pytorch/build/lib/libtorch_cpu.so", "/home/u/pytorch/aten/empty.cpp", 7),
		nat("c10::alloc", "/opt/t/libc10.so", "/opt/t/c10/alloc.cpp", 3),
		nat("_PyEval_EvalFrameDefault", "/opt/py/libpython3.12.so.1.0", "/opt/py/ceval.c", 900),
		nat("leaky", "/home/u/libmine.so", "/home/u/mine.c", 17),
		py("forward", "/home/u/model.py", 30),
		py("<module>", "/home/u/train.py", 5),
	};
	size_t n = sizeof f / sizeof f[0];
	/* a source build of PyTorch (not under site-packages) is still a folded library, not the user's */
	ck_assert(ct_frame_folds(&f[1]) && !ct_frame_is_user(&f[1]));
	ck_assert(ct_frame_folds(&f[2]) && !ct_frame_is_user(&f[2]));
	ck_assert(ct_frame_folds(&f[3]) && !ct_frame_is_user(&f[3]));
	ck_assert_int_eq(ct_first_user_frame(f, n), 4);
	ck_assert_int_eq(ct_label_frame(f, n), 5); /* the Python frame */
	ck_assert_int_eq(ct_label_frame(f, 5), 4);  /* no Python frame: the user's native one */
	struct ct_frame g[] = {
		nat("cudaMalloc", "/x/libcudart.so.13", NULL, 0),
		nat(NULL, "/lib/x86_64-linux-gnu/libc.so.6", NULL, 0),
		nat(NULL, "/home/u/prog", NULL, 0),
	};
	ck_assert_int_eq(ct_first_user_frame(g, 3), -1);
	ck_assert_int_eq(ct_label_frame(g, 3), 2); /* the program's own module, no lines */
	ck_assert_int_eq(ct_label_frame(g, 2), -1);
}
END_TEST

/* Paths as shown: normalised, installed packages from the package on, the process's directory cut. */
START_TEST(display_paths)
{
	static const struct {
		const char *path, *cwd, *want;
	} cases[] = {
		{"./a/../b.py", NULL, "b.py"},
		{"a/./b//c.py", NULL, "a/b/c.py"},
		{"../x/../y.py", NULL, "../y.py"},
		{"../../y.py", NULL, "../../y.py"},
		{"/../a.py", NULL, "/a.py"},
		{"a/..", NULL, "."},
		{"/home/u/proj/./src/../train.py", "/home/u/proj", "train.py"},
		{"/home/u/proj/train.py", "/home/u/proj/", "train.py"},
		{"/home/u/projx/train.py", "/home/u/proj", "/home/u/projx/train.py"},
		{"/home/u/proj", "/home/u/proj", "/home/u/proj"},
		{"/other/train.py", "/home/u/proj", "/other/train.py"},
		{"/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", "/venv",
		 "torch/nn/modules/module.py"},
		{"/usr/lib/python3/dist-packages/numpy/core/x.py", NULL, "numpy/core/x.py"},
		{"/v/site-packages/a/site-packages/b.py", NULL, "b.py"},
		{"/v/site-packages/", NULL, "/v/site-packages"},
		{"", NULL, "."},
	};
	char buf[256];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_str_eq(ct_display_path(cases[i].path, cases[i].cwd, buf, sizeof buf), cases[i].want);
	/* truncated, always terminated */
	for (size_t cap = 1; cap < 12; cap++) {
		char small[12];
		memset(small, 'x', sizeof small);
		ct_display_path("/abc/def/ghi.py", NULL, small, cap);
		ck_assert(memchr(small, 0, cap) != NULL);
	}
	/* a label: "FUNC (FILE:LINE)", the native file relative to its compilation directory */
	struct ct_frame fr = nat("ns::f<int>(int)", "/home/u/prog", "/build/src/./f.cc", 12);
	fr.file_short = "src/./f.cc";
	ck_assert_str_eq(ct_frame_site_label(NULL, &fr, buf, sizeof buf), "ns::f<...> (src/f.cc:12)");
	struct ct_frame p = py("step", "./a/../train.py", 9);
	ck_assert_str_eq(ct_frame_site_label(NULL, &p, buf, sizeof buf), "step (train.py:9)");
	struct ct_frame m = nat(NULL, "/home/u/prog", NULL, 0);
	ck_assert_str_eq(ct_frame_site_label(NULL, &m, buf, sizeof buf), "prog+0x1234");
	m.function = "helper";
	ck_assert_str_eq(ct_frame_site_label(NULL, &m, buf, sizeof buf), "helper (prog+0x1234)");
}
END_TEST

START_TEST(identity_survives_addresses_not_functions)
{
	struct ct_frame a[3] = {nat("leaky", "/build/a/prog", "/src/prog.c", 17),
				nat(NULL, "/lib/libc.so.6", NULL, 0), py("train", "/home/u/t.py", 3)};
	struct ct_frame b[3];
	memcpy(b, a, sizeof a);
	/* another run: other addresses, other install directory, other lines */
	b[0].ip = 0x5555000;
	b[0].offset = 0x999;
	b[0].module = "/build/b/prog";
	b[0].line = 18;
	b[2].line = 4;
	b[1].ip = 0x7fff0000;
	uint64_t ia = ct_site_identity(CT_CLASS_LEAKED, 1, 1, a, 3);
	ck_assert_uint_eq(ct_site_identity(CT_CLASS_LEAKED, 1, 1, b, 3), ia);
	/* what does change it */
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_CACHE, 1, 1, a, 3), ia);
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_LEAKED, 2, 1, a, 3), ia);
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_LEAKED, 1, 2, a, 3), ia);
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_LEAKED, 1, 1, a, 2), ia);
	b[0].function = "leaky2";
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_LEAKED, 1, 1, b, 3), ia);
	b[0].function = "leaky";
	b[1].offset = 0x1235; /* an unsymbolized frame: its module offset counts */
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_LEAKED, 1, 1, b, 3), ia);
	b[1].offset = a[1].offset;
	b[2].file = "/home/u/other.py";
	ck_assert_uint_ne(ct_site_identity(CT_CLASS_LEAKED, 1, 1, b, 3), ia);
}
END_TEST

/* ---- suppressions ----------------------------------------------------------------------------- */

static struct ct_suppressions *supp_of(const char *text)
{
	struct ct_suppressions *s = ct_supp_new();
	char err[256];
	int rc = ct_supp_load_text(s, "t.supp", text, strlen(text), err, sizeof err);
	ck_assert_msg(rc == 0, "parse failed: %s", err);
	return s;
}

static void supp_error(const char *text, const char *want)
{
	struct ct_suppressions *s = ct_supp_new();
	char err[256] = "";
	ck_assert_int_eq(ct_supp_load_text(s, "t.supp", text, strlen(text), err, sizeof err), -1);
	ck_assert_str_eq(err, want);
	ck_assert_uint_eq(ct_supp_count(s), 0);
	ct_supp_free(s);
}

/* The stack of the tests below, innermost first. */
static struct ct_frame stk[5];

static void stack_init(void)
{
	stk[0] = nat("c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)",
		     "/venv/torch/lib/libtorch_cuda.so", "/src/torch/CUDACachingAllocator.cpp", 900);
	stk[1] = nat("fake_torch_empty", "/venv/torch/lib/libtorch_cuda.so", NULL, 0);
	stk[2] = nat(NULL, "/usr/lib/libffi.so.8", NULL, 0);
	stk[3] = py("train_step", "/home/u/train.py", 25);
	stk[4] = nat("main", "/home/u/prog", "/home/u/src/main.c", 7);
}

static int m1(const char *text, int cls)
{
	struct ct_suppressions *s = supp_of(text);
	int r = ct_supp_match(s, cls, stk, 5);
	ct_supp_free(s);
	return r;
}

START_TEST(suppression_frame_lines)
{
	stack_init();
	const int L = CT_CLASS_LEAKED, C = CT_CLASS_CACHE;
	/* fun: exact, '*', '?' */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:c10::cuda::*\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:c10::cuda::CUDACachingAllocator::raw_?lloc*\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:c10::cuda::CUDACachingAllocator::raw_?lloc\n}\n", C), -1);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:raw_alloc*\n}\n", C), -1); /* whole name */
	/* the lines match from the innermost frame: fun:fake_torch_empty alone is not frame 0 */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:fake_torch_empty\n}\n", C), -1);
	/* obj: file name, path glob */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n obj:libtorch_cuda.so\n obj:libtorch_cuda.so\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n obj:*/torch/lib/*\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n obj:/venv/torch/lib/libtorch_cuda.so\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n obj:libtorch_cuda.s?\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n obj:/venv/libtorch_cuda.so\n}\n", C), -1);
	/* src: file and line, file only, wrong line, directory glob */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n src:CUDACachingAllocator.cpp:900\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n src:CUDACachingAllocator.cpp\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n src:CUDACachingAllocator.cpp:901\n}\n", C), -1);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n src:/src/torch/*.cpp:900\n}\n", C), 0);
	/* ...: any number of frames, including none */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:train_step\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n src:train.py:25\n ...\n fun:main\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:c10::*\n fun:fake_torch_empty\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:main\n fun:train_step\n}\n", C), -1);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:nowhere\n}\n", C), -1);
	/* an unknown function is "???" (fun:* takes it), a Python frame has no obj */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n fun:c10*\n fun:*\n fun:???\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n obj:*\n fun:main\n}\n", C), -1);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:train_step\n obj:prog\n}\n", C), 0);
	/* more lines than frames */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:main\n fun:*\n}\n", C), -1);
	/* match-leak-kinds: and the kind line */
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n match-leak-kinds: leaked\n ...\n fun:main\n}\n", C), -1);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n match-leak-kinds: leaked,cache\n ...\n fun:main\n}\n", C), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n match-leak-kinds: all\n ...\n fun:main\n}\n", L), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:main\n}\n", CT_CLASS_TEARDOWN), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Leak\n ...\n fun:main\n}\n", CT_CLASS_GROWTH), -1);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Growth\n ...\n fun:main\n}\n", CT_CLASS_GROWTH), 0);
	ck_assert_int_eq(m1("{\n n\n cumtrace:Growth\n ...\n fun:main\n}\n", L), -1);
}
END_TEST

START_TEST(suppression_lsan_lines)
{
	stack_init();
	const int C = CT_CLASS_CACHE;
	ck_assert_int_eq(m1("leak:CUDACachingAllocator\n", C), 0);   /* a substring of a function */
	ck_assert_int_eq(m1("leak:train.py\n", C), 0);		     /* a file */
	ck_assert_int_eq(m1("leak:/venv/torch/lib/\n", C), 0);	     /* a module path */
	ck_assert_int_eq(m1("leak:^fake_torch*$\n", C), 0);	     /* anchors and '*' */
	ck_assert_int_eq(m1("leak:^torch_empty\n", C), -1);
	ck_assert_int_eq(m1("leak:fake_torch$\n", C), -1);
	ck_assert_int_eq(m1("leak:main$\n", C), 0);
	ck_assert_int_eq(m1("leak:raw_?lloc\n", C), -1); /* '?' is an ordinary character */
	ck_assert_int_eq(m1("leak:nowhere\n", C), -1);
	/* every class, growth included */
	ck_assert_int_eq(m1("leak:main\n", CT_CLASS_GROWTH), 0);
	/* the first match in file order wins; names are as read */
	struct ct_suppressions *s = supp_of("# comment\n\n  leak:nowhere\nleak:main  \r\n{\n  mine\n  cumtrace:Leak\n  fun:c10*\n}\n");
	ck_assert_uint_eq(ct_supp_count(s), 3);
	ck_assert_int_eq(ct_supp_match(s, C, stk, 5), 1);
	ck_assert_str_eq(ct_supp_name(s, 1), "leak:main");
	ck_assert_str_eq(ct_supp_name(s, 2), "mine");
	unsigned line;
	ck_assert_str_eq(ct_supp_origin(s, 2, &line), "t.supp");
	ck_assert_uint_eq(line, 5); /* its '{' */
	ck_assert_str_eq(ct_supp_origin(s, 1, &line), "t.supp");
	ck_assert_uint_eq(line, 4);
	ct_supp_free(s);
}
END_TEST

START_TEST(suppression_files_and_errors)
{
	/* another tool's blocks are skipped */
	struct ct_suppressions *s = supp_of("{\n x\n Memcheck:Leak\n match-leak-kinds: definite\n fun:malloc\n}\nleak:y\n");
	ck_assert_uint_eq(ct_supp_count(s), 1);
	ck_assert_str_eq(ct_supp_name(s, 0), "leak:y");
	ct_supp_free(s);
	supp_error("bogus\n", "t.supp:1: expected '{' or 'leak:PATTERN'");
	supp_error("\n\ncalled_from_lib:foo\n",
		   "t.supp:3: unknown suppression type 'called_from_lib' (cumtrace knows leak:)");
	supp_error("leak:\n", "t.supp:1: empty leak: pattern");
	supp_error("{\n}\n", "t.supp:2: a suppression block needs a name first");
	supp_error("{\n n\n Leak\n}\n", "t.supp:3: expected TOOL:KIND (cumtrace:Leak or cumtrace:Growth)");
	supp_error("{\n n\n cumtrace:Cond\n}\n", "t.supp:3: unknown kind 'Cond' (cumtrace:Leak or cumtrace:Growth)");
	supp_error("{\n n\n cumtrace:Leak\n}\n", "t.supp:4: suppression 'n' has no fun:, obj:, src: or ... line");
	supp_error("{\n n\n cumtrace:Leak\n fun:a\n", "t.supp:1: suppression block not closed with '}'");
	supp_error("{\n n\n cumtrace:Leak\n fn:a\n}\n",
		   "t.supp:4: expected fun:, obj:, src:, ..., match-leak-kinds: or '}'");
	supp_error("{\n n\n cumtrace:Leak\n fun:\n}\n", "t.supp:4: empty fun: pattern");
	supp_error("{\n n\n cumtrace:Leak\n src:a.c:0\n}\n", "t.supp:4: src: line out of range");
	supp_error("{\n n\n cumtrace:Leak\n match-leak-kinds: definite\n fun:a\n}\n",
		   "t.supp:4: match-leak-kinds: unknown kind 'definite' (leaked, cache, teardown, all)");
	supp_error("{\n n\n cumtrace:Leak\n fun:a\n match-leak-kinds: cache\n}\n",
		   "t.supp:5: match-leak-kinds: must come before the frame lines");
	supp_error("{\n n\n cumtrace:Growth\n match-leak-kinds: cache\n fun:a\n}\n",
		   "t.supp:4: match-leak-kinds: belongs to cumtrace:Leak blocks");
	/* a bad file keeps nothing of itself, and the earlier files' suppressions stay */
	s = supp_of("leak:first\n");
	char err[256];
	const char *bad = "leak:second\nwrong\n";
	ck_assert_int_eq(ct_supp_load_text(s, "b.supp", bad, strlen(bad), err, sizeof err), -1);
	ck_assert_str_eq(err, "b.supp:2: expected '{' or 'leak:PATTERN'");
	ck_assert_uint_eq(ct_supp_count(s), 1);
	ck_assert_int_eq(ct_supp_load_file(s, "/nonexistent/x.supp", err, sizeof err), -1);
	ck_assert_str_eq(err, "/nonexistent/x.supp: cannot read: No such file or directory");
	ct_supp_free(s);
	/* a NUL byte inside a line */
	s = ct_supp_new();
	ck_assert_int_eq(ct_supp_load_text(s, "n.supp", "leak:x\nleak:a\0b\n", 15, err, sizeof err), -1);
	ck_assert_str_eq(err, "n.supp:2: NUL byte in the line");
	ct_supp_free(s);
}
END_TEST

/* A generated block parses and matches the stack it was made from. */
START_TEST(generated_blocks_round_trip)
{
	stack_init();
	struct ct_frame weird[3] = {nat("op\x01name ", "/x/lib\nodd.so", NULL, 0), nat(NULL, NULL, NULL, 0),
				    nat("caf\xc3\xa9 \xff", "/x/prog", NULL, 0)};
	const struct {
		struct ct_frame *f;
		size_t n;
		int cls;
	} cases[] = {{stk, 5, CT_CLASS_CACHE}, {weird, 3, CT_CLASS_LEAKED}, {stk, 5, CT_CLASS_GROWTH}};
	for (size_t c = 0; c < 3; c++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		ck_assert_int_eq(ct_supp_write_block(f, "  ", "gen name", cases[c].cls, cases[c].f, cases[c].n), 0);
		fclose(f);
		struct ct_suppressions *s = supp_of(buf);
		ck_assert_uint_eq(ct_supp_count(s), 1);
		ck_assert_str_eq(ct_supp_name(s, 0), "gen name");
		ck_assert_int_eq(ct_supp_match(s, cases[c].cls, cases[c].f, cases[c].n), 0);
		/* another class is not taken */
		int other = cases[c].cls == CT_CLASS_GROWTH ? CT_CLASS_LEAKED : CT_CLASS_GROWTH;
		ck_assert_int_eq(ct_supp_match(s, other, cases[c].f, cases[c].n), -1);
		if (c == 0)
			ck_assert_str_eq(buf, "  {\n     gen name\n     cumtrace:Leak\n     match-leak-kinds: cache\n"
					      "     fun:c10::cuda::CUDACachingAllocator::raw_alloc(unsigned long)\n"
					      "     fun:fake_torch_empty\n     obj:/usr/lib/libffi.so.8\n"
					      "     fun:train_step\n     fun:main\n  }\n");
		if (c == 1)
			ck_assert_str_eq(buf, "  {\n     gen name\n     cumtrace:Leak\n     match-leak-kinds: leaked\n"
					      "     fun:op?name?\n     ...\n     fun:caf\xc3\xa9 ?\n  }\n");
		ct_supp_free(s);
		free(buf);
	}
	/* no known frame: no block (it would match everything) */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ct_frame unknown = nat(NULL, NULL, NULL, 0);
	ck_assert_int_eq(ct_supp_write_block(f, "", "x", CT_CLASS_LEAKED, &unknown, 1), -1);
	ck_assert_int_eq(ct_supp_write_block(f, "", "x", CT_CLASS_LEAKED, NULL, 0), -1);
	fclose(f);
	ck_assert_ptr_null(strchr(buf, '{'));
	free(buf);
	/* only CT_SUPP_GEN_FRAMES frames are named */
	struct ct_frame deep[20];
	for (int i = 0; i < 20; i++)
		deep[i] = nat("f", "/x/prog", NULL, 0);
	buf = NULL;
	f = open_memstream(&buf, &len);
	ct_supp_write_block(f, "", "deep", CT_CLASS_LEAKED, deep, 20);
	fclose(f);
	int lines = 0;
	for (char *p = buf; (p = strstr(p, "fun:f\n")); p++)
		lines++;
	ck_assert_int_eq(lines, CT_SUPP_GEN_FRAMES);
	free(buf);
}
END_TEST

/* ---- growth ------------------------------------------------------------------------------------ */

static struct ct_model *load_with(const struct dg *g, const struct ct_report_opts *o)
{
	return tm_load(g, ct_growth_attach, o);
}

static void unload(struct ct_model *m)
{
	tm_unload(m);
}

static void alloc_ev(struct dg *g, uint64_t ts, uint64_t ptr, uint64_t size, uint32_t stack)
{
	dg_alloc(g, ts, ptr, size, stack);
}

/* The growth site of stack id, NULL when it is not reported. */
static const struct ct_growth_site *gsite(const struct ct_model *m, uint32_t stack)
{
	const struct ct_growth_result *r = ct_growth_get(m);
	for (size_t i = 0; r && i < r->nsites; i++)
		if (m->sites[r->sites[i].site].stack_id == stack)
			return &r->sites[i];
	return NULL;
}

/*
 * 12 steps marked by instants "step": stack 1 keeps 100 bytes per step, stack 2
 * is a cache (1000 bytes in step 1, reused), stack 3 allocates and frees in
 * each step, stack 4 grows in every other step, stack 5 grows in 6 of the last
 * 8 steps and shrinks back below where it was.
 */
START_TEST(growth_instants)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	uint64_t ts = 1000, p1 = 0x100000, p4 = 0x400000, p5 = 0x500000;
	uint64_t five[16];
	size_t n5 = 0;
	for (int s = 0; s <= 12; s++) {
		dg_mark(&g, ts++, 1, "step");
		if (s == 12)
			break;
		alloc_ev(&g, ts++, p1 + (uint64_t)s * 0x1000, 100, 1);
		if (s == 0)
			alloc_ev(&g, ts++, 0x200000, 1000, 2);
		alloc_ev(&g, ts++, 0x300000, 50, 3);
		dg_free(&g, ts++, 0x300000);
		if (s % 2)
			alloc_ev(&g, ts++, p4 + (uint64_t)s * 0x1000, 10, 4);
		/* stack 5: steps 5..12 (1-based) are the window: +,+,+,-,+,+,+,-- */
		if (s >= 4 && s != 7 && s != 11) {
			five[n5] = p5 + (uint64_t)s * 0x1000;
			alloc_ev(&g, ts++, five[n5++], 7, 5);
		} else if (s == 7) {
			dg_free(&g, ts++, five[--n5]);
		} else if (s == 11) {
			while (n5)
				dg_free(&g, ts++, five[--n5]);
		}
	}
	dg_mark(&g, ts++, 1, "other"); /* one boundary of another series */
	dg_end(&g, ts++);
	struct ct_report_opts o = {0};
	struct ct_model *m = load_with(&g, &o);
	const struct ct_growth_result *r = ct_growth_get(m);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->have_series, 1);
	ck_assert_str_eq(r->series.name, "step");
	ck_assert_int_eq(r->series.kind, CT_SERIES_INSTANT);
	ck_assert_uint_eq(r->series.boundaries, 13);
	ck_assert_uint_eq(r->nall, 2);
	ck_assert_uint_eq(r->window, 8);
	ck_assert_uint_eq(r->min_grew, 6);
	ck_assert_uint_eq(r->nsites, 1);
	const struct ct_growth_site *s1 = gsite(m, 1);
	ck_assert_ptr_nonnull(s1);
	ck_assert_uint_eq(s1->grew, 8);
	ck_assert_uint_eq(s1->steps, 8);
	ck_assert_uint_eq(s1->growth, 800);
	ck_assert_uint_eq(s1->live_before, 400);
	ck_assert_uint_eq(s1->live_last, 1200);
	ck_assert_ptr_null(gsite(m, 2)); /* steady cache */
	ck_assert_ptr_null(gsite(m, 3)); /* freed in its step */
	ck_assert_ptr_null(gsite(m, 4)); /* 4 of 8 */
	ck_assert_ptr_null(gsite(m, 5)); /* 6 of 8 but lower at the end */
	unload(m);
	/* 4 of the last 8 is enough with --growth 4/8; stack 5 still is not (net loss) */
	o.growth_min = 4;
	o.growth_window = 8;
	m = load_with(&g, &o);
	ck_assert_uint_eq(ct_growth_get(m)->nsites, 2);
	ck_assert_uint_eq(gsite(m, 4)->grew, 4);
	ck_assert_uint_eq(gsite(m, 4)->growth, 40);
	ck_assert_ptr_null(gsite(m, 5));
	/* largest growth first */
	ck_assert_uint_eq(m->sites[ct_growth_get(m)->sites[0].site].stack_id, 1);
	unload(m);
	/* a window of 3: K defaults to 3/4 of N rounded up */
	o.growth_min = 0;
	o.growth_window = 3;
	unsigned k, w;
	ct_growth_params(&o, &k, &w);
	ck_assert_uint_eq(k, 3);
	ck_assert_uint_eq(w, 3);
	m = load_with(&g, &o);
	ck_assert_uint_eq(gsite(m, 1)->growth, 300);
	ck_assert_uint_eq(gsite(m, 1)->live_before, 900);
	unload(m);
	/* --steps other: one boundary, no step */
	o.growth_window = 0;
	o.growth_steps = "other";
	m = load_with(&g, &o);
	r = ct_growth_get(m);
	ck_assert_str_eq(r->series.name, "other");
	ck_assert_uint_eq(r->series.boundaries, 1);
	ck_assert_uint_eq(r->nall, 1);
	ck_assert_uint_eq(r->nsites, 0);
	unload(m);
	o.growth_steps = "missing";
	m = load_with(&g, &o);
	ck_assert_int_eq(ct_growth_get(m)->have_series, 0);
	unload(m);
	dg_release(&g);
}
END_TEST

/* Push/pop ranges: one series per name and depth; start/end ranges by id, across threads. */
START_TEST(growth_ranges)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	uint64_t ts = 1000;
	dg_mark_kind(&g, ts++, 1, CT_MARK_PUSH, 0, "epoch");
	for (int s = 0; s < 10; s++) {
		dg_mark_kind(&g, ts++, 1, CT_MARK_PUSH, 0, "iter");
		dg_mark_kind(&g, ts++, 1, CT_MARK_PUSH, 0, "fwd");
		alloc_ev(&g, ts++, 0x100000 + (uint64_t)s * 0x1000, 64, 1);
		dg_mark_kind(&g, ts++, 1, CT_MARK_POP, 0, "");
		dg_mark_kind(&g, ts++, 1, CT_MARK_POP, 0, "");
		/* another thread's start/end ranges: started here, ended on thread 3 */
		dg_mark_kind(&g, ts++, 2, CT_MARK_START, 100 + (uint64_t)s, "load");
		alloc_ev(&g, ts++, 0x900000 + (uint64_t)s * 0x1000, 8, 2);
		dg_mark_kind(&g, ts++, 3, CT_MARK_STOP, 100 + (uint64_t)s, "");
	}
	dg_mark_kind(&g, ts++, 1, CT_MARK_POP, 0, "");
	dg_mark_kind(&g, ts++, 9, CT_MARK_POP, 0, ""); /* a pop without a push: ignored */
	dg_mark_kind(&g, ts++, 3, CT_MARK_STOP, 555, ""); /* an end without a start: ignored */
	dg_end(&g, ts++);
	struct ct_report_opts o = {0};
	struct ct_model *m = load_with(&g, &o);
	const struct ct_growth_result *r = ct_growth_get(m);
	/* iter@1 and fwd@2 have 10 boundaries each, load has 10 too, epoch 1: the first seen wins */
	ck_assert_uint_eq(r->nall, 4);
	ck_assert_str_eq(r->series.name, "fwd");
	ck_assert_int_eq(r->series.kind, CT_SERIES_RANGE);
	ck_assert_int_eq(r->series.depth, 2);
	ck_assert_uint_eq(r->series.boundaries, 10);
	ck_assert_uint_eq(gsite(m, 1)->growth, 8 * 64);
	ck_assert_uint_eq(gsite(m, 1)->grew, 8);
	/* stack 2 is allocated after the fwd boundaries, between the same ones: it grows too */
	ck_assert_uint_eq(gsite(m, 2)->growth, 8 * 8);
	for (size_t i = 0; i < r->nall; i++) {
		if (!strcmp(r->all[i].name, "epoch")) {
			ck_assert_int_eq(r->all[i].depth, 0);
			ck_assert_uint_eq(r->all[i].boundaries, 1);
		} else if (!strcmp(r->all[i].name, "load")) {
			ck_assert_int_eq(r->all[i].kind, CT_SERIES_STARTEND);
			ck_assert_int_eq(r->all[i].depth, -1);
			ck_assert_uint_eq(r->all[i].boundaries, 10);
		} else if (!strcmp(r->all[i].name, "iter")) {
			ck_assert_int_eq(r->all[i].depth, 1);
		}
	}
	unload(m);
	o.growth_steps = "load";
	m = load_with(&g, &o);
	r = ct_growth_get(m);
	ck_assert_int_eq(r->series.kind, CT_SERIES_STARTEND);
	ck_assert_uint_eq(gsite(m, 2)->growth, 8 * 8);
	ck_assert_uint_eq(gsite(m, 2)->live_last, 10 * 8);
	unload(m);
	dg_release(&g);
}
END_TEST

/* More series than slots: ones with a single boundary make room, the rest are counted. */
START_TEST(growth_series_slots)
{
	struct dg g;
	dg_init(&g);
	dg_header(&g);
	uint64_t ts = 1000;
	char name[16];
	for (int i = 0; i < 10; i++) { /* ten one-off instants */
		snprintf(name, sizeof name, "once%d", i);
		dg_mark(&g, ts++, 1, name);
	}
	for (int s = 0; s <= 8; s++) {
		for (int k = 0; k < CT_GROWTH_SERIES + 1; k++) {
			snprintf(name, sizeof name, "s%d", k);
			dg_mark(&g, ts++, 1, name);
		}
		if (s < 8)
			alloc_ev(&g, ts++, 0x100000 + (uint64_t)s * 0x1000, 32, 1);
	}
	dg_end(&g, ts++);
	struct ct_report_opts o = {0};
	struct ct_model *m = load_with(&g, &o);
	const struct ct_growth_result *r = ct_growth_get(m);
	ck_assert_uint_eq(r->nall, CT_GROWTH_SERIES);
	/*
	 * once0..3 take the slots; once4..9 and the first round of s0..s4 find no
	 * series with fewer boundaries (6 + 5 untracked); in the second round
	 * s0..s3 push out once0..3, and s4, no more frequent than they, never gets
	 * in (8 more untracked).
	 */
	ck_assert_str_eq(r->series.name, "s0");
	ck_assert_uint_eq(r->series.boundaries, 8);
	ck_assert_uint_eq(r->untracked, 19);
	for (size_t i = 0; i < r->nall; i++)
		ck_assert_msg(r->all[i].name[0] == 's' && r->all[i].name[1] != '4', "tracked %s", r->all[i].name);
	ck_assert_uint_eq(gsite(m, 1)->growth, 7 * 32);
	ck_assert_uint_eq(gsite(m, 1)->grew, 7);
	unload(m);
	dg_release(&g);
}
END_TEST

/*
 * The lazy sampling against a naive one: random allocations and frees on a
 * few sites, boundaries of one series at random, every site's bytes copied at
 * every boundary.
 */
START_TEST(growth_random_against_naive)
{
	enum { NPTR = 48, NSTACK = 6, STEPS = 3000 };
	unsigned yes = 0, no = 0;
	srand(777);
	for (int round = 0; round < 30; round++) {
		struct dg g;
		dg_init(&g);
		dg_header(&g);
		uint64_t live[NPTR] = {0}, ts = 1000;
		uint32_t site_of[NPTR];
		uint64_t cur[NSTACK + 1] = {0};
		static uint64_t snap[STEPS + 1][NSTACK + 1];
		size_t nb = 0;
		unsigned w = 1 + (unsigned)(rand() % 12), k = 1 + (unsigned)(rand() % (int)w);
		int bias = rand() % 3; /* some rounds mostly allocate */
		for (int s = 0; s < STEPS; s++) {
			int r = rand() % 100;
			if (r < 4) {
				dg_mark(&g, ts++, 1, "b");
				memcpy(snap[nb++], cur, sizeof cur);
				continue;
			}
			int p = rand() % NPTR;
			if (!live[p]) {
				uint32_t st = 1 + (uint32_t)(rand() % NSTACK);
				uint64_t sz = 1 + (uint64_t)(rand() % 500);
				alloc_ev(&g, ts++, 0x10000 + (uint64_t)p * 0x1000, sz, st);
				live[p] = sz;
				site_of[p] = st;
				cur[st] += sz;
			} else if (!bias || r > 80) {
				dg_free(&g, ts++, 0x10000 + (uint64_t)p * 0x1000);
				cur[site_of[p]] -= live[p];
				live[p] = 0;
			}
		}
		dg_end(&g, ts++);
		struct ct_report_opts o = {.growth_min = k, .growth_window = w};
		struct ct_model *m = load_with(&g, &o);
		const struct ct_growth_result *res = ct_growth_get(m);
		for (uint32_t st = 1; st <= NSTACK; st++) {
			const struct ct_growth_site *gs = gsite(m, st);
			int want = 0;
			unsigned grew = 0, n = 0;
			if (nb >= 2) {
				size_t last = nb - 1;
				n = last < w ? (unsigned)last : w;
				for (size_t b = last - n + 1; b <= last; b++)
					grew += snap[b][st] > snap[b - 1][st];
				want = grew >= k && snap[last][st] > snap[last - n][st];
			}
			ck_assert_msg(want == (gs != NULL), "round %d stack %u: want %d (grew %u of %u)", round,
				      st, want, grew, n);
			yes += want;
			no += !want;
			if (gs) {
				ck_assert_uint_eq(gs->grew, grew);
				ck_assert_uint_eq(gs->steps, n);
				ck_assert_uint_eq(gs->live_last, snap[nb - 1][st]);
				ck_assert_uint_eq(gs->live_before, snap[nb - 1 - n][st]);
			}
		}
		ck_assert_uint_eq(res->have_series, nb > 0);
		unload(m);
		dg_release(&g);
	}
	/* both outcomes were exercised */
	fprintf(stderr, "growth_random_against_naive: %u sites grew, %u did not\n", yes, no);
	ck_assert_uint_ge(yes, 20);
	ck_assert_uint_ge(no, 20);
}
END_TEST

/* ---- the gate ---------------------------------------------------------------------------------- */

/*
 * Modules named like libtorch_cuda and libcublas, a user leak of 3000 bytes,
 * a cache leak of 2000, a cuBLAS workspace of 500, a teardown leak of 700 on
 * device 1, and a peak of 6200.
 */
static void gate_dump(struct dg *g, int extra)
{
	dg_init(g);
	dg_header(g);
	dg_process(g, extra ? 2 : 1, 0, 100, (const char *[]){"argv=prog", "cwd=/home/u", NULL});
	dg_module(g, extra ? 0x500000 : 0x400000, extra ? 0x500000 : 0x400000,
		  extra ? 0x580000 : 0x480000, NULL, 0, "/home/u/prog");
	dg_module(g, 0x7f0000000000, 0x7f0000000000, 0x7f0000100000, NULL, 0, "/venv/torch/lib/libtorch_cuda.so");
	dg_module(g, 0x7f2000000000, 0x7f2000000000, 0x7f2000100000, NULL, 0, "/usr/lib/libcublas.so.13");
	uint64_t base = extra ? 0x500000 : 0x400000;
	uint64_t user[2] = {base + 0x1000, base + 0x2000};
	uint64_t torch[2] = {0x7f0000000100, base + 0x2100};
	uint64_t cublas[2] = {0x7f2000000100, base + 0x2200};
	uint64_t more[2] = {base + 0x3000, base + 0x2300};
	/* other stack ids in the second dump: identities do not depend on them */
	uint32_t id = extra ? 10 : 1;
	dg_stack(g, id, 2, user);
	dg_stack(g, id + 1, 2, torch);
	dg_stack(g, id + 2, 2, cublas);
	dg_stack(g, id + 3, 2, more);
	dg_alloc(g, 1000, 0x10000, 3000, id);
	dg_alloc(g, 1001, 0x20000, 2000, id + 1);
	dg_alloc(g, 1002, 0x30000, 500, id + 2);
	struct dg_ev e = {.ts = 1003, .ptr = 0x40000, .size = 700, .tid = 1, .stack_id = id,
			  .api = CT_API_cudaMalloc, .op = CT_OP_ALLOC, .kind = CT_KIND_DEVICE, .device = 1};
	dg_event(g, &e);
	if (extra)
		dg_alloc(g, 1004, 0x50000, 64, id + 3);
	struct dg_ev r = {.ts = 1005, .tid = 1, .api = CT_API_cudaDeviceReset, .op = CT_OP_DEVICE_RESET,
			  .device = 1};
	dg_event(g, &r);
	dg_end(g, 2000);
}

static struct ct_model *load_plain(const struct dg *g)
{
	struct ct_report_opts o = {0};
	return load_with(g, &o);
}

static int gate(const struct ct_report_opts *o, struct ct_model *m, char *reason)
{
	struct ct_model *ms[1] = {m};
	return ct_gate_check(o, ms, 1, reason, 512);
}

START_TEST(gate_options)
{
	struct dg g;
	gate_dump(&g, 0);
	struct ct_model *m = load_plain(&g);
	ck_assert_uint_eq(m->peak_bytes, 6200);
	char reason[512];
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS};
	ck_assert_int_eq(gate(&o, m, reason), 0); /* no gate asked for */
	o.fail_on_leak = 1;
	ck_assert_int_eq(gate(&o, m, reason), 1);
	ck_assert_str_eq(reason, "1 leak site fails (leaked: 1 site, 2.9 KiB), not suppressed");
	o.fail_classes = CT_CLASS_BIT(CT_CLASS_CACHE) | CT_CLASS_BIT(CT_CLASS_TEARDOWN);
	ck_assert_int_eq(gate(&o, m, reason), 1);
	ck_assert_str_eq(reason, "3 leak sites fail (cache: 2 sites, 2.4 KiB, teardown: 1 site, 700 B), not suppressed");
	o.fail_classes = CT_CLASS_BIT(CT_CLASS_GROWTH);
	ck_assert_int_eq(gate(&o, m, reason), 0);
	ck_assert_str_eq(reason, "");
	/* --max-leak-bytes: the failing classes' bytes, over N fails, N itself passes */
	o.fail_on_leak = 0;
	o.fail_classes = 0;
	o.have_max_leak_bytes = 1;
	o.max_leak_bytes = 3000;
	ck_assert_int_eq(gate(&o, m, reason), 0);
	o.max_leak_bytes = 2999;
	ck_assert_int_eq(gate(&o, m, reason), 1);
	ck_assert_str_eq(reason, "3000 bytes in failing leak sites exceed --max-leak-bytes 2999");
	o.fail_classes = CT_CLASS_ALL;
	o.max_leak_bytes = 6199;
	ck_assert_int_eq(gate(&o, m, reason), 1);
	o.max_leak_bytes = 6200;
	ck_assert_int_eq(gate(&o, m, reason), 0);
	/* --max-peak-bytes */
	o.have_max_leak_bytes = 0;
	o.have_max_peak_bytes = 1;
	o.max_peak_bytes = 6200;
	ck_assert_int_eq(gate(&o, m, reason), 0);
	o.max_peak_bytes = 6199;
	ck_assert_int_eq(gate(&o, m, reason), 1);
	ck_assert_str_eq(reason, "peak device memory 6200 bytes (6.1 KiB) of pid 1 exceeds --max-peak-bytes 6199");
	/* all of them at once: one line */
	o.fail_on_leak = 1;
	o.fail_classes = 0;
	o.have_max_leak_bytes = 1;
	o.max_leak_bytes = 0;
	ck_assert_int_eq(gate(&o, m, reason), 1);
	ck_assert_str_eq(reason, "1 leak site fails (leaked: 1 site, 2.9 KiB), not suppressed; 3000 bytes in "
				 "failing leak sites exceed --max-leak-bytes 0; peak device memory 6200 bytes "
				 "(6.1 KiB) of pid 1 exceeds --max-peak-bytes 6199");
	ck_assert_ptr_null(strchr(reason, '\n'));
	/* a suppression takes the user leak out */
	o.have_max_leak_bytes = 0;
	o.have_max_peak_bytes = 0;
	struct ct_suppressions *s = supp_of("leak:prog\n");
	o.supp = s;
	ck_assert_int_eq(gate(&o, m, reason), 0);
	o.supp = NULL;
	ct_supp_free(s);
	unload(m);
	dg_release(&g);
}
END_TEST

START_TEST(gate_baseline_and_classes)
{
	struct dg g0, g1;
	gate_dump(&g0, 0);
	gate_dump(&g1, 1);
	struct ct_model *base = load_plain(&g0), *now = load_plain(&g1);
	struct ct_report_opts o = {.cmd = CT_CMD_LEAKS, .fail_on_leak = 1, .baseline = base};
	struct ct_model *ms[2] = {base, now};
	struct ct_assessment *a = ct_assess(&o, &now, 1, NULL);
	ck_assert_uint_eq(a->nleak, 5);
	ck_assert_uint_eq(a->cls[CT_CLASS_LEAKED].sites, 2);
	ck_assert_uint_eq(a->cls[CT_CLASS_LEAKED].bytes, 3064);
	ck_assert_uint_eq(a->cls[CT_CLASS_CACHE].sites, 2);
	ck_assert_uint_eq(a->cls[CT_CLASS_CACHE].bytes, 2500);
	ck_assert_uint_eq(a->cls[CT_CLASS_TEARDOWN].sites, 1);
	ck_assert_uint_eq(a->baselined.sites, 4);
	ck_assert_uint_eq(a->failing.sites, 1);
	ck_assert_uint_eq(a->failing.bytes, 64);
	for (size_t i = 0; i < a->nleak; i++) {
		const struct ct_finding *f = &a->v[i];
		ck_assert_int_eq(f->in_baseline, f->it.bytes != 64);
		if (f->cls == CT_CLASS_CACHE) {
			const char *al = ct_rule_get((size_t)f->why.rule)->allocator;
			ck_assert_str_eq(al, f->it.bytes == 2000 ? "pytorch" : "cublas");
			ck_assert_int_eq(f->why.frame, 0);
		}
	}
	ct_assessment_free(a);
	char reason[512];
	ck_assert_int_eq(gate(&o, now, reason), 1);
	ck_assert_str_eq(reason, "1 leak site fails (leaked: 1 site, 64 B), not suppressed and not in the baseline");
	/* the baseline against itself */
	ck_assert_int_eq(gate(&o, base, reason), 0);
	/* diff takes its first dump as the baseline */
	struct ct_report_opts d = {.cmd = CT_CMD_DIFF, .fail_on_leak = 1};
	ck_assert_int_eq(ct_gate_check(&d, ms, 2, reason, sizeof reason), 1);
	ck_assert_str_eq(reason, "1 leak site fails (leaked: 1 site, 64 B), not suppressed and not in the baseline");
	struct ct_model *same[2] = {now, now};
	ck_assert_int_eq(ct_gate_check(&d, same, 2, reason, sizeof reason), 0);
	unload(base);
	unload(now);
	dg_release(&g0);
	dg_release(&g1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("leaks");
	TCase *tc = tcase_create("classify");
	tcase_add_test(tc, glob_matching);
	tcase_add_test(tc, class_names_and_lists);
	tcase_add_test(tc, every_rule_matches_its_field);
	tcase_add_test(tc, classify_real_world_stacks);
	tcase_add_test(tc, user_frames);
	tcase_add_test(tc, label_frames);
	tcase_add_test(tc, display_paths);
	tcase_add_test(tc, identity_survives_addresses_not_functions);
	suite_add_tcase(s, tc);
	tc = tcase_create("suppress");
	tcase_add_test(tc, suppression_frame_lines);
	tcase_add_test(tc, suppression_lsan_lines);
	tcase_add_test(tc, suppression_files_and_errors);
	tcase_add_test(tc, generated_blocks_round_trip);
	suite_add_tcase(s, tc);
	tc = tcase_create("growth");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, growth_instants);
	tcase_add_test(tc, growth_ranges);
	tcase_add_test(tc, growth_series_slots);
	tcase_add_test(tc, growth_random_against_naive);
	suite_add_tcase(s, tc);
	tc = tcase_create("gate");
	tcase_add_test(tc, gate_options);
	tcase_add_test(tc, gate_baseline_and_classes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(suite());
}
