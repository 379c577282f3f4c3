/*
 * Python frames: when the thread making a traced call holds the GIL of a
 * CPython 3.8..3.13 interpreter, its Python stack (file, function, line per
 * frame) is recorded next to the native one (CT_REC_PYSTRING, CT_REC_PYSTACK
 * and the event's pystack trailer: include/cumtrace/format.h).
 *
 * The CPython API is looked up once, at the first call that wants a stack,
 * with the real dlsym(RTLD_DEFAULT): a process without Python symbols turns
 * the feature off for good (one relaxed load per call afterwards). A
 * libpython dlopen'ed RTLD_LOCAL later is not seen. CUMTRACE_PYTHON=0 turns
 * it off.
 *
 * Safety: the GIL is never taken. Frames are read only when Py_IsInitialized,
 * PyGILState_Check and the unchecked current thread state all say that this
 * thread holds it. No Python code can run and no Python object is allocated
 * on 3.8..3.10, where the walk reads the frame chain directly
 * (PyEval_GetFrame is a borrowed tstate->frame there; f_back and f_code are
 * at the fixed offsets 24 and 32 of PyFrameObject in all three versions;
 * PyFrame_GetLineNumber only reads the line table). On 3.11+ frame objects
 * are created lazily, so PyEval_GetFrame / PyFrame_GetBack may allocate one:
 * the walk runs with the cyclic GC disabled (PyGC_Disable, 3.10+, so the
 * allocation cannot start a collection that would run finalizers, i.e.
 * Python code) and with the error indicator saved and restored around it.
 * Code objects' co_filename and co_qualname (co_name before 3.11) are read at
 * the offsets that PyCode_Type's own member table (tp_members) gives, and
 * the str objects are decoded to UTF-8 here from their in-memory layout
 * (PyASCIIObject / PyCompactUnicodeObject, sizes per version) without
 * PyUnicode_AsUTF8, which would allocate. Debug (Py_TRACE_REFS) builds are
 * recognised by a layout check and left alone.
 *
 * Interning: strings by a 64-bit hash of their bytes, stacks by a hash of
 * their (file id, function id, line) triples, in lock-free tables like the
 * native stack table (stack.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ct.h"

CT_HIDDEN void *ct_resolve_real_dlsym(void);

#define CT_PY_DEPTH 128	   /* deepest Python stack written */
#define CT_PY_STR_MAX 1024 /* longest string kept (bytes, NUL excluded) */

enum { CT_PY_UNKNOWN = 0, CT_PY_ON = 1, CT_PY_OFF = 2, CT_PY_INIT = 3 };
static _Atomic int ct_py_state;

static struct {
	int minor;
	int (*is_initialized)(void);
	int (*gil_check)(void);
	void *(*tstate_unchecked)(void);
	void *(*get_frame)(void);
	int (*get_line)(void *);
	void *(*get_back)(void *); /* 3.11+ */
	void *(*get_code)(void *); /* 3.11+ */
	void (*decref)(void *);
	int (*gc_disable)(void);
	int (*gc_enable)(void);
	void (*err_fetch)(void **, void **, void **);
	void (*err_restore)(void *, void *, void *);
	void *unicode_type;
	size_t off_filename, off_name;
	size_t ascii_size, compact_size;
} py;

static void *ct_py_sym(const char *name)
{
	void *(*real)(void *, const char *) = (void *(*)(void *, const char *))ct_resolve_real_dlsym();
	return real ? real(RTLD_DEFAULT, name) : NULL;
}

/* PyMemberDef as in every CPython 3.x. */
struct ct_py_member {
	const char *name;
	int type;
	long offset;
	int flags;
	const char *doc;
};

static int ct_py_setup(void)
{
	const char *env = getenv("CUMTRACE_PYTHON");
	if (env && env[0] == '0')
		return 0;
	const char *(*get_version)(void) = (const char *(*)(void))ct_py_sym("Py_GetVersion");
	char *code_type = ct_py_sym("PyCode_Type");
	if (!get_version || !code_type)
		return 0;
	const char *v = get_version();
	if (!v || v[0] != '3' || v[1] != '.' || strstr(v, "free-threading"))
		return 0; /* free-threaded builds have no GIL to rely on */
	int minor = atoi(v + 2);
	if (minor < 8 || minor > 13)
		return 0;
	py.minor = minor;
#define CT_PY_NEED(field, name)                                                                \
	do {                                                                                   \
		*(void **)&py.field = ct_py_sym(name);                                         \
		if (!py.field)                                                                 \
			return 0;                                                              \
	} while (0)
	CT_PY_NEED(is_initialized, "Py_IsInitialized");
	CT_PY_NEED(gil_check, "PyGILState_Check");
	CT_PY_NEED(tstate_unchecked,
		   minor >= 13 ? "PyThreadState_GetUnchecked" : "_PyThreadState_UncheckedGet");
	CT_PY_NEED(get_frame, "PyEval_GetFrame");
	CT_PY_NEED(get_line, "PyFrame_GetLineNumber");
	CT_PY_NEED(decref, "Py_DecRef");
	CT_PY_NEED(err_fetch, "PyErr_Fetch");
	CT_PY_NEED(err_restore, "PyErr_Restore");
	CT_PY_NEED(unicode_type, "PyUnicode_Type");
	if (minor >= 11) {
		CT_PY_NEED(get_back, "PyFrame_GetBack");
		CT_PY_NEED(get_code, "PyFrame_GetCode");
		CT_PY_NEED(gc_disable, "PyGC_Disable");
		CT_PY_NEED(gc_enable, "PyGC_Enable");
	}
#undef CT_PY_NEED
	/* PyTypeObject: tp_name at 24, tp_members at 240 (release builds, 3.8..3.13). */
	const char *tp_name = *(const char **)(code_type + 24);
	if (!tp_name || strcmp(tp_name, "code") != 0)
		return 0;
	const struct ct_py_member *mem = *(const struct ct_py_member **)(code_type + 240);
	const char *want_name = minor >= 11 ? "co_qualname" : "co_name";
	for (; mem && mem->name; mem++) {
		if (!strcmp(mem->name, "co_filename"))
			py.off_filename = (size_t)mem->offset;
		else if (!strcmp(mem->name, want_name))
			py.off_name = (size_t)mem->offset;
	}
	if (!py.off_filename || !py.off_name)
		return 0;
	py.ascii_size = minor >= 12 ? 40 : 48;
	py.compact_size = minor >= 12 ? 56 : 72;
	return 1;
}

static int ct_py_enabled(void)
{
	int s = atomic_load_explicit(&ct_py_state, memory_order_acquire);
	if (CT_LIKELY(s == CT_PY_ON || s == CT_PY_OFF || s == CT_PY_INIT))
		return s == CT_PY_ON;
	int expect = CT_PY_UNKNOWN;
	if (!atomic_compare_exchange_strong(&ct_py_state, &expect, CT_PY_INIT))
		return 0; /* another thread is looking: skip this one call */
	int on = ct_py_setup();
	atomic_store_explicit(&ct_py_state, on ? CT_PY_ON : CT_PY_OFF, memory_order_release);
	return on;
}

/* ---- strings ------------------------------------------------------------------------------ */

static size_t ct_utf8_put(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A str object as UTF-8 into out (CT_PY_STR_MAX + 1 bytes); returns its length. */
static size_t ct_py_str(const char *o, char *out)
{
	static const char unknown[] = "?";
	if (!o || *(void *const *)(o + 8) != py.unicode_type) {
		memcpy(out, unknown, sizeof unknown);
		return 1;
	}
	int64_t length = *(const int64_t *)(o + 16);
	uint32_t state = *(const uint32_t *)(o + 32);
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	const void *data;
	if (compact && ascii) {
		data = o + py.ascii_size;
		kind = 1;
	} else if (compact) {
		const char *utf8 = *(const char *const *)(o + py.ascii_size + 8);
		if (utf8) {
			size_t n = (size_t)*(const int64_t *)(o + py.ascii_size);
			if (n > CT_PY_STR_MAX)
				n = CT_PY_STR_MAX;
			memcpy(out, utf8, n);
			out[n] = 0;
			return n;
		}
		data = o + py.compact_size;
	} else {
		data = *(const void *const *)(o + py.compact_size);
	}
	if (!data || length < 0 || (kind != 1 && kind != 2 && kind != 4)) {
		memcpy(out, unknown, sizeof unknown);
		return 1;
	}
	size_t n = 0;
	for (int64_t i = 0; i < length && n + 4 <= CT_PY_STR_MAX; i++) {
		uint32_t c = kind == 1   ? ((const uint8_t *)data)[i]
			     : kind == 2 ? ((const uint16_t *)data)[i]
					 : ((const uint32_t *)data)[i];
		n += ct_utf8_put(out + n, c);
	}
	out[n] = 0;
	return n;
}

/* ---- interning ---------------------------------------------------------------------------- */

#define CT_PY_SLOTS (1u << 16)

static struct ct_intern_table ct_py_strings = {NULL, 0, CT_PY_SLOTS};
static struct ct_intern_table ct_py_stacks = {NULL, 0, CT_PY_SLOTS};

/*
 * Code object -> string ids, direct-mapped. An entry is keyed by the code
 * object and its two str objects (address, length and cached hash, which is
 * -1 while never computed), so a code object freed and another made at its
 * address hits only when its strings lie where the old ones did with the
 * same length and hash. Taken with a try-lock: a thread that finds it busy goes the slow way.
 */
#define CT_PY_CACHE 4096
struct ct_py_cache_ent {
	const void *code, *file, *name;
	int64_t file_hash, name_hash;
	uint32_t file_id, func_id;
};
static struct ct_py_cache_ent ct_py_cache[CT_PY_CACHE];
static atomic_flag ct_py_cache_lock = ATOMIC_FLAG_INIT;


static uint64_t ct_py_hash(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	return h ? h : 1;
}

void ct_py_reset(void)
{
	memset(ct_py_cache, 0, sizeof ct_py_cache);
	ct_intern_reset(&ct_py_strings);
	ct_intern_reset(&ct_py_stacks);
}

/* Intern one string, emitting its CT_REC_PYSTRING when new. 0 = table full. */
static uint32_t ct_py_string_id(const char *s, size_t n, ct_py_emit_fn emit, void *ctx)
{
	void *slot;
	uint32_t id = ct_intern(&ct_py_strings, ct_py_hash(s, n, n), &slot);
	if (slot) {
		struct {
			struct ct_rec_pystring h;
			char s[CT_PY_STR_MAX + 8];
		} r;
		uint32_t size = CT_REC_ALIGN((uint32_t)(sizeof r.h + n + 1));
		memset((char *)&r + size - 8, 0, 8);
		r.h.rec.type = CT_REC_PYSTRING;
		r.h.rec.flags = 0;
		r.h.rec.size = size;
		r.h.string_id = id;
		r.h.len = (uint32_t)(n + 1);
		memcpy(r.s, s, n + 1);
		ct_intern_written(slot, emit(ctx, &r, size));
	}
	return id;
}

/* ---- capture ------------------------------------------------------------------------------ */

static int ct_py_frame(const char *frame, int line, struct ct_pyframe *out, ct_py_emit_fn emit,
		       void *ctx, const char *code)
{
	char buf[CT_PY_STR_MAX + 1];
	if (!code)
		return 0;
	out->line = line;
	const char *fo = *(const char *const *)(code + py.off_filename);
	const char *no = *(const char *const *)(code + py.off_name);
	/* length (offset 16) and hash (24) of each str, mixed into one key word */
	int64_t fh = fo ? *(const int64_t *)(fo + 24) ^ (*(const int64_t *)(fo + 16) << 48) : 0;
	int64_t nh = no ? *(const int64_t *)(no + 24) ^ (*(const int64_t *)(no + 16) << 48) : 0;
	struct ct_py_cache_ent *e =
		&ct_py_cache[((uintptr_t)code >> 4) * 0x9e3779b1u % CT_PY_CACHE];
	int locked = !atomic_flag_test_and_set_explicit(&ct_py_cache_lock, memory_order_acquire);
	if (locked && e->code == code && e->file == fo && e->name == no && e->file_hash == fh &&
	    e->name_hash == nh) {
		out->file_id = e->file_id;
		out->func_id = e->func_id;
		atomic_flag_clear_explicit(&ct_py_cache_lock, memory_order_release);
		return 1;
	}
	if (locked)
		atomic_flag_clear_explicit(&ct_py_cache_lock, memory_order_release);
	size_t n = ct_py_str(*(const char *const *)(code + py.off_filename), buf);
	out->file_id = ct_py_string_id(buf, n, emit, ctx);
	n = ct_py_str(*(const char *const *)(code + py.off_name), buf);
	out->func_id = ct_py_string_id(buf, n, emit, ctx);
	if (!out->file_id || !out->func_id)
		return 0;
	if (!atomic_flag_test_and_set_explicit(&ct_py_cache_lock, memory_order_acquire)) {
		*e = (struct ct_py_cache_ent){code, fo, no, fh, nh, out->file_id, out->func_id};
		atomic_flag_clear_explicit(&ct_py_cache_lock, memory_order_release);
	}
	return 1;
}

uint32_t ct_py_capture(ct_py_emit_fn emit, void *ctx)
{
	if (CT_LIKELY(!ct_py_enabled()))
		return 0;
	if (!py.is_initialized() || py.gil_check() != 1 || !py.tstate_unchecked())
		return 0;
	struct ct_pyframe frames[CT_PY_DEPTH];
	int depth = 0, ok = 1;
	if (py.minor <= 10) {
		for (const char *f = py.get_frame(); f && depth < CT_PY_DEPTH;
		     f = *(const char *const *)(f + 24)) {
			ok &= ct_py_frame(f, py.get_line((void *)f), &frames[depth], emit, ctx,
					  *(const char *const *)(f + 32));
			depth++;
		}
	} else {
		void *et, *ev, *etb;
		py.err_fetch(&et, &ev, &etb);
		int gc_was_on = py.gc_disable();
		char *f = py.get_frame(); /* borrowed */
		int owned = 0;
		while (f && depth < CT_PY_DEPTH) {
			char *code = py.get_code(f);
			ok &= ct_py_frame(f, py.get_line(f), &frames[depth], emit, ctx, code);
			if (code)
				py.decref(code);
			depth++;
			char *back = py.get_back(f); /* new reference */
			if (owned)
				py.decref(f);
			f = back;
			owned = 1;
		}
		if (f && owned)
			py.decref(f);
		if (gc_was_on)
			py.gc_enable();
		py.err_restore(et, ev, etb);
	}
	if (!depth || !ok)
		return 0;
	void *slot;
	uint32_t id = ct_intern(&ct_py_stacks,
				   ct_py_hash(frames, (size_t)depth * sizeof frames[0], 0x5079u),
				   &slot);
	if (slot) {
		struct {
			struct ct_rec_pystack h;
			struct ct_pyframe f[CT_PY_DEPTH + 1];
		} r;
		uint32_t size =
			CT_REC_ALIGN((uint32_t)(sizeof r.h + (size_t)depth * sizeof frames[0]));
		memset((char *)&r + size - 8, 0, 8);
		r.h.rec.type = CT_REC_PYSTACK;
		r.h.rec.flags = 0;
		r.h.rec.size = size;
		r.h.pystack_id = id;
		r.h.depth = (uint16_t)depth;
		r.h.reserved = 0;
		memcpy(r.f, frames, (size_t)depth * sizeof frames[0]);
		ct_intern_written(slot, emit(ctx, &r, size));
	}
	return id;
}
