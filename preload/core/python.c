/*
 * Python frames: the Python stack (file, function, line per frame) of the
 * thread making a traced call in a CPython 3.8..3.13 process, recorded next
 * to the native one (CT_REC_PYSTRING, CT_REC_PYSTACK and the event's pystack
 * trailer: include/cumtrace/format.h), whether or not that thread holds the
 * GIL: PyTorch, CuPy and ctypes.CDLL release it before they allocate.
 *
 * Set-up: the CPython symbols are looked up once, at the first call that
 * wants a stack, with the real dlsym(RTLD_DEFAULT); a process without them
 * turns the feature off for good (one relaxed load per call afterwards). A
 * libpython dlopen'ed RTLD_LOCAL later is not seen. CUMTRACE_PYTHON=0 turns
 * it off, and so do free-threaded builds, versions outside 3.8..3.13 and any
 * build whose layout is not the one in pyoffsets.h (debug builds, patched
 * ones): the members that PyCode_Type and PyFrame_Type publish (co_filename,
 * f_back, ...) must sit at the table's offsets.
 *
 * Which thread state: the calling thread's own, never another thread's.
 * PyGILState_GetThisThreadState reads the thread's TSS slot (no GIL needed);
 * it is NULL for a thread that has no Python state (a thread made by C code
 * that never entered Python). On 3.12+ the current thread state is a thread
 * local, set while the thread holds the GIL, and takes precedence (a thread
 * that switched to a sub-interpreter's state); on 3.8..3.11 it is a global
 * naming whichever thread holds the GIL, so it is not read. The state's
 * thread_id must be pthread_self().
 *
 * Why the walk is safe without the GIL: a thread's frames are pushed, popped
 * and updated only by that thread, and this thread is inside the hook, so its
 * frame chain neither changes nor is freed while it is walked; the frames
 * keep their code objects alive, and a code object's strings and line table
 * are immutable. Other threads may change reference counts, or a str's lazily
 * computed hash, of the same objects at the same time: those words are never
 * relied on (the hash is only part of a cache key). No CPython function is
 * called but Py_IsInitialized, PyGILState_GetThisThreadState and (3.12+) the
 * unchecked current thread state, which only read thread-local or global
 * state: no reference count is touched, nothing is allocated and no Python
 * code can run. Everything is read at the offsets of pyoffsets.h (proven
 * against each version's headers by tests/e2e/t_python_offsets.sh).
 *
 * Validation: every frame's type (3.8..3.10) and code object's type must be
 * the interpreter's own (PyFrame_Type, PyCode_Type), the instruction offset
 * must lie inside the code, line tables must be bytes objects, lines must be
 * plausible, the chain must end within CT_PY_WALK_MAX frames and have no
 * cycle. Anything else and the event gets no Python frames at all.
 *
 * Frames skipped, as CPython's own tracebacks skip them: 3.12+ frames owned
 * by the C stack (the interpreter's entry frames) and 3.11+ "incomplete"
 * frames (pushed, not yet at their first traceable instruction).
 *
 * Lines: decoded here from the code object's line table (co_lnotab 3.8/3.9,
 * co_linetable 3.10 and the location table of 3.11+) exactly as
 * PyCode_Addr2Line does, for the offset PyFrame_GetLineNumber would use. The
 * result per (code object, offset) is cached with the frame's string ids.
 *
 * Not covered: while the interpreter finalizes (Py_IsInitialized is 0 from
 * its start) nothing is walked, but a daemon thread that passed that check
 * an instant earlier can still meet its thread state being freed under it
 * by the finalizing thread (CPython frees daemon threads' states at exit).
 * A traced call from a signal handler that interrupted the interpreter while
 * it was pushing a frame may meet a half-made one: validated, not guaranteed.
 *
 * Interning: strings by a 64-bit hash of their bytes, stacks by a hash of
 * their (file id, function id, line) triples, in the lock-free tables of
 * stack.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ct.h"
#include "pyoffsets.h"

#define CT_PY_DEPTH 128			  /* deepest Python stack written */
#define CT_PY_WALK_MAX (4 * CT_PY_DEPTH) /* frames looked at, skipped ones included */
#define CT_PY_STR_MAX 1024		  /* longest string kept (bytes, NUL excluded) */
#define CT_PY_LINE_MAX (1 << 24)	  /* a larger line number means a misread */
#define CT_PY_BAD_LINE INT_MIN

/* The value of type T at byte offset OFF of object P. */
#define CT_PY_AT(T, p, off) (*(const T *)((const char *)(p) + (off)))

enum { CT_PY_UNKNOWN = 0, CT_PY_ON = 1, CT_PY_OFF = 2, CT_PY_INIT = 3 };
CT_HOT_DATA static _Atomic int ct_py_state;

CT_HOT_DATA static struct {
	const struct ct_py_offsets *o;
	int (*is_initialized)(void);
	const char *(*this_tstate)(void);    /* PyGILState_GetThisThreadState */
	const char *(*current_tstate)(void); /* 3.12+: the thread-local current state */
	const void *code_type, *frame_type, *bytes_type, *unicode_type;
	/* _PyRuntime, read as the first two functions read it (ct_py_initialized,
	 * ct_py_this_tstate) once rt_state is CT_PY_RT_OK */
	const char *runtime;
	_Atomic int rt_state;
	/* how ct_py_current_at finds the current state's thread local: CT_TLS_* (ct.h); set
	 * to CT_TLS_CALL for good when ct_py_check_current finds it wrong */
	_Atomic int cur_tls;
	long cur_tp_off;		   /* CT_TLS_TP: its offset from the thread pointer */
	void *(*tls_get_addr)(const void *); /* CT_TLS_GD: __tls_get_addr, and its argument */
	const void *cur_ti;
	/* the object that holds the interpreter (Py_IsInitialized's), for ct_py_outside;
	 * interp_hi 0: not found */
	uintptr_t interp_lo, interp_hi;
} py;

void *ct_py_sym(const char *name)
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

/* Does the type object publish member name at offset want? */
static int ct_py_member_at(const void *type, const char *name, unsigned want)
{
	const struct ct_py_member *m =
		CT_PY_AT(const struct ct_py_member *, type, CT_PY_TP_MEMBERS);
	for (; m && m->name; m++)
		if (!strcmp(m->name, name))
			return m->offset == (long)want;
	return 0;
}

/* Is type a type object named name (a release build's PyTypeObject)? */
static int ct_py_type_named(const void *type, const char *name)
{
	const char *tp_name = type ? CT_PY_AT(const char *, type, CT_PY_TP_NAME) : NULL;
	return tp_name && !strcmp(tp_name, name);
}

/*
 * Py_IsInitialized and PyGILState_GetThisThreadState without calling them.
 * In a shared libpython the second is four calls through the PLT (it, then
 * PyThread_tss_is_created, PyThread_tss_get, pthread_getspecific), each on
 * its own page of code, which a training step's work between two traced
 * calls can push out of the caches and the TLB: finding the thread state
 * took 89-115 ns of a steady call on the H200 host (runs 35-36) against
 * 18-37 ns on the VM. The functions read _PyRuntime: initialized, and the
 * autoTSSkey (a Py_tss_t: whether it is created, then the pthread key) whose
 * value on this thread is its auto thread state; 3.8..3.11 first require
 * gilstate.autoInterpreterState. The same reads here, at the offsets of
 * pyoffsets.h (checked against each version's internal headers). _PyRuntime
 * is internal, and a bugfix release could move its fields: the reads are
 * used only once they gave the functions' own results on a thread that has
 * a thread state (CT_PY_RT_OK; until then the functions are called, and a
 * disagreement keeps calling them). Before that check nothing they yield is
 * dereferenced.
 */
enum { CT_PY_RT_UNCHECKED = 0, CT_PY_RT_OK = 1, CT_PY_RT_BAD = 2 };

CT_HOT static const char *ct_py_rt_this_tstate(void)
{
	const char *rt = py.runtime;
	const struct ct_py_offsets *o = py.o;
	if (o->rt_auto_interp != CT_PY_ABSENT ? !CT_PY_AT(const void *, rt, o->rt_auto_interp)
					      : !CT_PY_AT(int, rt, o->rt_auto_tss + CT_PY_TSS_CREATED))
		return NULL;
	return pthread_getspecific(CT_PY_AT(pthread_key_t, rt, o->rt_auto_tss + CT_PY_TSS_KEY));
}

CT_HOT static int ct_py_initialized(void)
{
	if (CT_LIKELY(atomic_load_explicit(&py.rt_state, memory_order_relaxed) == CT_PY_RT_OK))
		return CT_PY_AT(int, py.runtime, py.o->rt_initialized);
	return py.is_initialized();
}

CT_HOT static const char *ct_py_this_tstate(void)
{
	int st = atomic_load_explicit(&py.rt_state, memory_order_relaxed);
	if (CT_LIKELY(st == CT_PY_RT_OK))
		return ct_py_rt_this_tstate();
	const char *ts = py.this_tstate();
	if (st == CT_PY_RT_UNCHECKED && ts) {
		int ok = ct_py_rt_this_tstate() == ts &&
			 CT_PY_AT(int, py.runtime, py.o->rt_initialized) == py.is_initialized();
		int expect = CT_PY_RT_UNCHECKED;
		atomic_compare_exchange_strong(&py.rt_state, &expect, ok ? CT_PY_RT_OK : CT_PY_RT_BAD);
	}
	return ts;
}

/*
 * The current thread state of 3.12+ is the thread local _Py_tss_tstate, which
 * no symbol names; _PyThreadState_UncheckedGet (PyThreadState_GetUnchecked
 * in 3.13) returns it, through __tls_get_addr in a shared libpython. Where
 * that function's code is one of the x86-64 ABI's three sequences for a
 * thread local's address, exactly (an endbr64 before it allowed), the
 * address is found as the sequence finds it: the thread pointer plus an
 * offset (local-exec: an executable; initial-exec: the offset in the GOT),
 * or __tls_get_addr of its GOT argument (general-dynamic), once per thread,
 * the variable's address staying put while the thread lives. Any other code
 * (TLS descriptors, another compiler's choices, another architecture): the
 * function is called.
 */
static inline const char *ct_thread_pointer(void)
{
#if defined(__x86_64__)
	const char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
#else
	return NULL;
#endif
}

#if defined(__x86_64__)
/* Does the code at p start with n bytes matching want (0x100: any byte)? Stops at the first difference. */
static int ct_py_code_is(const uint8_t *p, const uint16_t *want, int n)
{
	for (int i = 0; i < n; i++)
		if (want[i] != 0x100 && p[i] != want[i])
			return 0;
	return 1;
}

static int32_t ct_py_rel32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

#endif

int ct_tls_var_code(const void *fn, long *tp_off, const void **ti)
{
#if defined(__x86_64__)
#define X 0x100
	static const uint16_t endbr[] = {0xf3, 0x0f, 0x1e, 0xfa};
	/* mov %fs:disp32, %rax; ret */
	static const uint16_t le[] = {0x64, 0x48, 0x8b, 0x04, 0x25, X, X, X, X, 0xc3};
	/* mov off@gottpoff(%rip), %rax; mov %fs:(%rax), %rax; ret */
	static const uint16_t ie[] = {0x48, 0x8b, 0x05, X, X, X, X, 0x64, 0x48, 0x8b, 0x00, 0xc3};
	/* sub $8, %rsp; data16 lea ti(%rip), %rdi; data16 data16 rex.W call __tls_get_addr;
	 * mov (%rax), %rax; add $8, %rsp; ret */
	static const uint16_t gd[] = {0x48, 0x83, 0xec, 0x08, 0x66, 0x48, 0x8d, 0x3d, X,    X,
				      X,    X,	  0x66, 0x66, 0x48, 0xe8, X,    X,    X,    X,
				      0x48, 0x8b, 0x00, 0x48, 0x83, 0xc4, 0x08, 0xc3};
#undef X
	const uint8_t *c = fn;
	if (!c)
		return CT_TLS_CALL;
	if (ct_py_code_is(c, endbr, 4))
		c += 4;
	if (ct_py_code_is(c, le, (int)(sizeof le / sizeof le[0]))) {
		*tp_off = ct_py_rel32(c + 5);
		return CT_TLS_TP;
	}
	if (ct_py_code_is(c, ie, (int)(sizeof ie / sizeof ie[0]))) {
		*tp_off = *(const long *)(c + 7 + ct_py_rel32(c + 3));
		return CT_TLS_TP;
	}
	if (ct_py_code_is(c, gd, (int)(sizeof gd / sizeof gd[0]))) {
		*ti = c + 12 + ct_py_rel32(c + 8);
		return CT_TLS_GD;
	}
#else
	(void)fn;
	(void)tp_off;
	(void)ti;
#endif
	return CT_TLS_CALL;
}

static void ct_py_find_current(void)
{
	py.cur_tls = ct_tls_var_code((const void *)(uintptr_t)py.current_tstate, &py.cur_tp_off,
				     &py.cur_ti);
	if (py.cur_tls == CT_TLS_GD &&
	    !(py.tls_get_addr = (void *(*)(const void *))ct_py_sym("__tls_get_addr")))
		py.cur_tls = CT_TLS_CALL;
}

/* This thread's _Py_tss_tstate, found once (ct_py_find_current); NULL: call the function. */
static __thread const char *const *ct_py_cur_at __attribute__((tls_model("initial-exec")));

static const char *const *ct_py_current_at(int how)
{
	const char *const *at = ct_py_cur_at;
	if (CT_LIKELY(at))
		return at;
	if (how == CT_TLS_TP)
		at = (const char *const *)(ct_thread_pointer() + py.cur_tp_off);
	else if (!ct_in_handler(&ct_tls)) /* __tls_get_addr may allocate the thread's block */
		at = py.tls_get_addr(py.cur_ti);
	ct_py_cur_at = at;
	return at;
}

CT_HOT static const char *ct_py_current_tstate(void)
{
	int how = atomic_load_explicit(&py.cur_tls, memory_order_relaxed);
	const char *const *at = how != CT_TLS_CALL ? ct_py_current_at(how) : NULL;
	return at ? *at : py.current_tstate();
}

/*
 * Before a traced call's real call (ct_call_prefetch): start loading the
 * first lines ct_py_capture reads once the call returns, _PyRuntime's fields
 * and the calling thread's state's thread id and frame, so that their misses
 * overlap the real call (microseconds in a training step) instead of
 * following it. Only where both are read in place (CT_PY_RT_OK, and the
 * current state's thread local found on this thread). The state is the
 * current one (the thread local's value), else the thread's own through the
 * auto-state key, as ct_py_tstate finds it: a thread that let the GIL go
 * keeps it there (torch's autograd thread, which makes half a training
 * step's allocations with a state and no frame: run 42). Where the state
 * names a _PyCFrame (3.12: 3.11 has no such thread local and stops above),
 * that is read too and its current frame's line asked for: the one load here
 * that waits, on a line just asked for. A
 * prefetch never faults, and what it names is read again, and checked, after
 * the call. On the H200 the second part (the state that is not current) did
 * not make the autograd thread's calls cheaper beyond the runs' spread (run
 * 43, where the VM had shown about 50 ns): its worth there is not shown.
 */
CT_HOT void ct_py_prefetch(void)
{
	if (atomic_load_explicit(&ct_py_state, memory_order_relaxed) != CT_PY_ON ||
	    atomic_load_explicit(&py.rt_state, memory_order_relaxed) != CT_PY_RT_OK)
		return;
	const struct ct_py_offsets *o = py.o;
	__builtin_prefetch(py.runtime + o->rt_initialized, 0, 3);
	__builtin_prefetch(py.runtime + o->rt_auto_tss, 0, 3);
	const char *const *at = ct_py_cur_at;
	if (!at || atomic_load_explicit(&py.cur_tls, memory_order_relaxed) == CT_TLS_CALL)
		return;
	const char *ts = *at;
	if (!ts)
		ts = ct_py_rt_this_tstate();
	if (ts && !((uintptr_t)ts & 7)) {
		__builtin_prefetch(ts + o->ts_thread_id, 0, 3);
		__builtin_prefetch(ts + o->ts_frame, 0, 3);
		if (o->cframe_current != CT_PY_ABSENT) {
			const char *cf = CT_PY_AT(const char *, ts, o->ts_frame);
			if (cf)
				__builtin_prefetch(cf + o->cframe_current, 0, 3);
		}
	}
}

/* ct_py_check_current found the thread local where the function finds it, with the GIL held. */
static _Atomic int ct_py_current_checked;

/*
 * _PyRuntime's reads wait for their check (ct_py_this_tstate); the current
 * state's thread local is used where it gives what the function gives on
 * this thread (the one that sets up, holding the GIL or not: often NULL
 * both), its address coming from the function's own code, and it is checked
 * again with the GIL (ct_py_check_current).
 */
static void ct_py_setup_direct(void)
{
	py.runtime = ct_py_sym("_PyRuntime");
	py.rt_state = py.runtime ? CT_PY_RT_UNCHECKED : CT_PY_RT_BAD;
	if (!py.current_tstate)
		return;
	ct_py_find_current();
	if (py.cur_tls == CT_TLS_CALL)
		return;
	const char *const *at = ct_py_current_at(py.cur_tls);
	if (!at || *at != py.current_tstate()) {
		py.cur_tls = CT_TLS_CALL;
		ct_py_cur_at = NULL;
	}
}

/*
 * With the GIL held (the bootstrap's pending call), where the current state is
 * not NULL: the thread local read in place must be the function's result, or
 * the function is called from now on (warned once).
 */
static void ct_py_check_current(const char *ts)
{
	int how = atomic_load_explicit(&py.cur_tls, memory_order_relaxed);
	if (how == CT_TLS_CALL || atomic_load(&ct_py_current_checked))
		return;
	const char *cur = py.current_tstate();
	const char *const *at = ct_py_current_at(how);
	if (cur && cur == ts && at && *at == cur) {
		atomic_store(&ct_py_current_checked, 1);
		return;
	}
	atomic_store_explicit(&py.cur_tls, CT_TLS_CALL, memory_order_relaxed);
	static _Atomic int warned;
	ct_warn_once(&warned,
		     "the Python thread state's thread local, read in place, is not what "
		     "the interpreter's own function returns: that function is called instead");
}

const char *ct_py_tstate_how(void)
{
	if (atomic_load(&ct_py_state) != CT_PY_ON)
		return "none read";
	int rt = atomic_load(&py.rt_state) == CT_PY_RT_OK;
	if (!py.current_tstate)
		return rt ? "read in place" : "by calls";
	static const char *how[2][3] = {
		{"by calls", "by a call, then the current one in place",
		 "by a call, then the current one through __tls_get_addr once a thread"},
		{"read in place, the current one by a call", "read in place",
		 "read in place, the current one through __tls_get_addr once a thread"}};
	return how[rt][atomic_load(&py.cur_tls)];
}

const char *ct_py_tstate_checked(void)
{
	return atomic_load(&ct_py_current_checked) ? " (checked with the GIL)" : "";
}

static int ct_py_setup(void)
{
	const char *env = getenv("CUMTRACE_PYTHON");
	if (env && env[0] == '0')
		return 0;
	const char *(*get_version)(void) = (const char *(*)(void))ct_py_sym("Py_GetVersion");
	if (!get_version)
		return 0;
	const char *v = get_version();
	if (!v || v[0] != '3' || v[1] != '.' || strstr(v, "free-threading"))
		return 0; /* free-threaded builds lay objects out differently */
	const struct ct_py_offsets *o = ct_py_offsets_for(atoi(v + 2));
	if (!o)
		return 0;
#define CT_PY_NEED(field, name)                                                                \
	do {                                                                                   \
		*(void **)&py.field = ct_py_sym(name);                                         \
		if (!py.field)                                                                 \
			return 0;                                                              \
	} while (0)
	CT_PY_NEED(is_initialized, "Py_IsInitialized");
	CT_PY_NEED(this_tstate, "PyGILState_GetThisThreadState");
	if (o->minor >= 12)
		CT_PY_NEED(current_tstate, o->minor >= 13 ? "PyThreadState_GetUnchecked"
							  : "_PyThreadState_UncheckedGet");
	CT_PY_NEED(code_type, "PyCode_Type");
	CT_PY_NEED(frame_type, "PyFrame_Type");
	CT_PY_NEED(bytes_type, "PyBytes_Type");
	CT_PY_NEED(unicode_type, "PyUnicode_Type");
#undef CT_PY_NEED
	/* tp_name where a release build has it (Py_TRACE_REFS moves it), then the layout. */
	if (!ct_py_type_named(py.code_type, "code") || !ct_py_type_named(py.frame_type, "frame") ||
	    !ct_py_type_named(py.bytes_type, "bytes") || !ct_py_type_named(py.unicode_type, "str"))
		return 0;
	int lnotab = o->lines == CT_PY_LNOTAB;
	if (!ct_py_member_at(py.code_type, "co_filename", o->co_filename) ||
	    !ct_py_member_at(py.code_type, o->minor >= 11 ? "co_qualname" : "co_name",
			     o->co_name) ||
	    !ct_py_member_at(py.code_type, "co_firstlineno", o->co_firstlineno) ||
	    !ct_py_member_at(py.code_type, lnotab ? "co_lnotab" : "co_linetable", o->co_lines))
		return 0;
	if (o->frame_obj && (!ct_py_member_at(py.code_type, "co_code", o->co_code) ||
			     !ct_py_member_at(py.frame_type, "f_back", o->fr_back) ||
			     !ct_py_member_at(py.frame_type, "f_code", o->fr_code) ||
			     (lnotab && !ct_py_member_at(py.frame_type, "f_lasti", o->fr_instr))))
		return 0;
	py.o = o;
	ct_py_setup_direct();
	struct ct_module interp;
	if (ct_module_of((const void *)(uintptr_t)py.is_initialized, &interp, NULL, 0)) {
		py.interp_lo = interp.lo;
		py.interp_hi = interp.hi;
	} else {
		py.interp_hi = 0;
	}
	return 1;
}

/*
 * Python code runs only in the interpreter's evaluation loop, and a thread
 * state's current frame is set only while that loop runs on the thread: it
 * pushes the frame on entry and pops it when it returns to C (3.11 and
 * 3.12: its _PyCFrame's current frame; 3.8-3.10 and 3.13: the state's). A frame evaluator of
 * another object (PEP 523) is itself called from the interpreter's object,
 * and a thread the interpreter started begins there. So a thread whose whole
 * native stack, to its outermost frame, has no frame in that object holds no
 * current frame: torch's autograd thread (a std::thread in libtorch that
 * keeps a thread state with the GIL let go) makes half a training step's
 * allocations so, and its capture would read the state only to find none.
 */
int ct_py_outside(const uint64_t *ips, int n)
{
	int s = atomic_load_explicit(&ct_py_state, memory_order_acquire);
	if (s != CT_PY_ON)
		return s == CT_PY_OFF ? 0 : -1;
	if (!py.interp_hi || n <= 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (ips[i] >= py.interp_lo && ips[i] < py.interp_hi)
			return 0;
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

/* Is o a non-NULL object of exactly this type? */
static int ct_py_is(const void *o, const void *type)
{
	return o && !((uintptr_t)o & 7) && CT_PY_AT(const void *, o, CT_PY_OB_TYPE) == type;
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
	const struct ct_py_offsets *L = py.o;
	if (!ct_py_is(o, py.unicode_type)) {
		memcpy(out, unknown, sizeof unknown);
		return 1;
	}
	int64_t length = CT_PY_AT(int64_t, o, CT_PY_STR_LENGTH);
	uint32_t state = CT_PY_AT(uint32_t, o, CT_PY_STR_STATE);
	unsigned kind = (state >> CT_PY_STR_KIND_SHIFT) & 7;
	unsigned compact = (state >> CT_PY_STR_COMPACT_BIT) & 1;
	unsigned ascii = (state >> CT_PY_STR_ASCII_BIT) & 1;
	const void *data;
	if (compact && ascii) {
		data = o + L->str_ascii_data;
		kind = 1;
	} else if (compact) {
		const char *utf8 = CT_PY_AT(const char *, o, L->str_utf8);
		if (utf8) {
			int64_t n = CT_PY_AT(int64_t, o, L->str_utf8_length);
			if (n < 0)
				n = 0;
			if (n > CT_PY_STR_MAX)
				n = CT_PY_STR_MAX;
			memcpy(out, utf8, (size_t)n);
			out[n] = 0;
			return (size_t)n;
		}
		data = o + L->str_compact_data;
	} else {
		data = CT_PY_AT(const void *, o, L->str_data);
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

/*
 * Intern one string, emitting its CT_REC_PYSTRING when new. 0 = table full.
 * *lost is set when the record could not be stored (a full ring in drop mode):
 * a later ct_intern of the string writes it, so the caller must not cache the id.
 */
static uint32_t ct_py_string_id(const char *s, size_t n, ct_py_emit_fn emit, void *ctx, int *lost)
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
		int ok = emit(ctx, &r, size);
		ct_intern_written(slot, ok);
		*lost |= !ok;
	}
	return id;
}

/* ---- line numbers ------------------------------------------------------------------------- */

/* 3.11+ location table varints: 6 bits per byte, bit 6 = more; reads stop at end. */
static unsigned ct_py_varint(const uint8_t **p, const uint8_t *end)
{
	unsigned val = 0, shift = 0, b;
	do {
		if (*p >= end || shift > 24)
			return 0;
		b = *(*p)++;
		val |= (b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return val;
}

/*
 * The line of byte offset addr of a code object, as PyCode_Addr2Line computes
 * it: co_firstlineno for addr < 0, -1 where the table says "no line",
 * CT_PY_BAD_LINE when the table cannot be read.
 */
static int ct_py_line(const char *code, int addr)
{
	int line = CT_PY_AT(int, code, py.o->co_firstlineno);
	if (addr < 0)
		return line;
	const char *tab = CT_PY_AT(const char *, code, py.o->co_lines);
	if (!ct_py_is(tab, py.bytes_type))
		return CT_PY_BAD_LINE;
	int64_t n = CT_PY_AT(int64_t, tab, CT_PY_OB_SIZE);
	if (n < 0 || n > INT_MAX)
		return CT_PY_BAD_LINE;
	const uint8_t *p = (const uint8_t *)tab + CT_PY_BYTES_DATA, *end = p + n;
	long end_addr = 0, ar_line = -1, cur = line;
	switch (py.o->lines) {
	case CT_PY_LNOTAB: /* (address increment, signed line increment) pairs */
		for (; p + 2 <= end; p += 2) {
			end_addr += p[0];
			if (end_addr > addr)
				break;
			cur += (int8_t)p[1];
		}
		return (int)cur;
	case CT_PY_LINETABLE: /* (range length, line delta or -128 = no line) pairs */
		while (end_addr <= addr) {
			if (p + 2 > end)
				return -1;
			end_addr += p[0];
			if ((int8_t)p[1] == -128) {
				ar_line = -1;
			} else {
				cur += (int8_t)p[1];
				ar_line = cur;
			}
			p += 2;
		}
		return (int)ar_line;
	default: /* location entries: a first byte 1cccclll (code, length - 1), then operands */
		while (end_addr <= addr) {
			if (p >= end || !(*p & 0x80))
				return p >= end ? -1 : CT_PY_BAD_LINE;
			unsigned first = *p, kind = (first >> 3) & 15;
			const uint8_t *q = p + 1;
			if (kind == 13 || kind == 14) { /* NO_COLUMNS, LONG: signed varint delta */
				unsigned u = ct_py_varint(&q, end);
				cur += (u & 1) ? -(long)(u >> 1) : (long)(u >> 1);
			} else if (kind >= 10 && kind <= 12) { /* ONE_LINE0..2 */
				cur += kind - 10;
			}
			ar_line = kind == 15 ? -1 : cur; /* 15: NONE, no location */
			end_addr += ((first & 7) + 1) * 2;
			do
				p++;
			while (p < end && !(*p & 0x80));
		}
		return (int)ar_line;
	}
}

/*
 * The frame (string ids and line) of a code object at an instruction offset:
 * decoding a long function's line table costs microseconds, at every frame
 * of every allocation. Two-way sets chosen by both; a new entry goes to a
 * slot of an older generation first. An entry is keyed by the code object, the offset,
 * its first line, line table and two str objects (address, and length mixed
 * with the cached hash, -1 while never computed), so a code object freed and
 * another made at its address hits only when its strings and table lie where
 * the old ones did, alike. Entries are seqlocked (readers never write; a
 * writer that finds one busy leaves it), and ct_py_reset retires them all at
 * once by moving the generation on.
 */
#define CT_PY_SET_BITS 12
#define CT_PY_SITES (2u << CT_PY_SET_BITS) /* entries, in sets of two */
struct ct_py_site_key {
	const void *code, *file, *name, *lines;
	int64_t file_key, name_key;
	int32_t addr, first;
	uint32_t gen, pad;
};
_Static_assert(sizeof(struct ct_py_site_key) == 64, "no padding: keys are compared with memcmp");
struct ct_py_site {
	_Atomic uint32_t seq; /* odd while a writer fills the entry */
	struct ct_py_site_key key;
	struct ct_pyframe frame;
};
static struct ct_py_site ct_py_sites[CT_PY_SITES];
CT_HOT_DATA static _Atomic uint32_t ct_py_gen = 1;

static int ct_py_site_get(struct ct_py_site *e, const struct ct_py_site_key *k,
			  struct ct_pyframe *out)
{
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_acquire);
	if (s & 1)
		return 0;
	struct ct_py_site_key got;
	struct ct_pyframe f;
	memcpy(&got, &e->key, sizeof got);
	memcpy(&f, &e->frame, sizeof f);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s || memcmp(&got, k, sizeof got))
		return 0;
	*out = f;
	return 1;
}

static void ct_py_site_put(struct ct_py_site *e, const struct ct_py_site_key *k,
			   const struct ct_pyframe *f)
{
	uint32_t s = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if ((s & 1) || !atomic_compare_exchange_strong_explicit(&e->seq, &s, s + 1,
								  memory_order_acquire,
								  memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	e->key = *k;
	e->frame = *f;
	atomic_store_explicit(&e->seq, s + 2, memory_order_release);
}

/* A str's address-independent cache key: its length and cached hash. */
static int64_t ct_py_str_key(const char *o)
{
	if (!ct_py_is(o, py.unicode_type))
		return 0;
	return (int64_t)(CT_PY_AT(uint64_t, o, CT_PY_STR_HASH) ^
			 CT_PY_AT(uint64_t, o, CT_PY_STR_LENGTH) << 48);
}

/*
 * Fill out for code object code at byte offset addr; 0 when something looks
 * wrong, 2 when a string's record could not be written (a later use writes it).
 */
static int ct_py_frame(const char *code, int addr, struct ct_pyframe *out, ct_py_emit_fn emit,
		       void *ctx)
{
	const struct ct_py_offsets *o = py.o;
	struct ct_py_site_key k;
	k.code = code;
	k.file = CT_PY_AT(const char *, code, o->co_filename);
	k.name = CT_PY_AT(const char *, code, o->co_name);
	k.lines = CT_PY_AT(const char *, code, o->co_lines);
	k.file_key = ct_py_str_key(k.file);
	k.name_key = ct_py_str_key(k.name);
	k.addr = addr;
	k.first = CT_PY_AT(int, code, o->co_firstlineno);
	k.gen = atomic_load_explicit(&ct_py_gen, memory_order_relaxed);
	k.pad = 0;
	uint64_t h = ((uint64_t)(uintptr_t)code >> 4) * 0x9e3779b97f4a7c15ull ^ (uint64_t)addr;
	h *= 0x9e3779b97f4a7c15ull;
	struct ct_py_site *set = &ct_py_sites[(h >> (64 - CT_PY_SET_BITS)) * 2];
	if (ct_py_site_get(&set[0], &k, out) || ct_py_site_get(&set[1], &k, out))
		return 1;
	int line = ct_py_line(code, addr);
	if (line < -1 || line > CT_PY_LINE_MAX)
		return 0;
	char buf[CT_PY_STR_MAX + 1];
	int lost = 0;
	size_t n = ct_py_str(k.file, buf);
	out->file_id = ct_py_string_id(buf, n, emit, ctx, &lost);
	n = ct_py_str(k.name, buf);
	out->func_id = ct_py_string_id(buf, n, emit, ctx, &lost);
	out->line = line;
	if (!out->file_id || !out->func_id)
		return 0;
	if (lost)
		return 2; /* a string's record was dropped: nothing may remember this frame */
	/* a racy look at the generations: at worst a live entry is replaced */
	unsigned way = set[0].key.gen != k.gen	 ? 0
		       : set[1].key.gen != k.gen ? 1
						 : (h >> (63 - CT_PY_SET_BITS)) & 1;
	ct_py_site_put(&set[way], &k, out);
	return 1;
}

/* ---- the walk ----------------------------------------------------------------------------- */

/* The calling thread's own PyThreadState, or NULL. */
CT_HOT static const char *ct_py_tstate(void)
{
	const char *ts = ct_py_this_tstate();
	if (!ts)
		return NULL; /* no Python state here (then never touch the thread local) */
	if (py.current_tstate) {
		const char *cur = ct_py_current_tstate();
		if (cur)
			ts = cur;
	}
	if ((uintptr_t)ts & 7 ||
	    CT_PY_AT(unsigned long, ts, py.o->ts_thread_id) != (unsigned long)pthread_self())
		return NULL;
	return ts;
}

/* The innermost frame of thread state ts. */
CT_HOT static const char *ct_py_top(const char *ts)
{
	const struct ct_py_offsets *o = py.o;
	const char *f = CT_PY_AT(const char *, ts, o->ts_frame);
	if (o->cframe_current != CT_PY_ABSENT && f) /* 3.11, 3.12: through the _PyCFrame */
		f = (uintptr_t)f & 7 ? NULL : CT_PY_AT(const char *, f, o->cframe_current);
	return f;
}

enum { CT_PY_BAD = -1, CT_PY_SKIP = 0, CT_PY_FRAME = 1 };

/* Frame f's code object and byte offset (what PyFrame_GetLineNumber uses), or SKIP / BAD. */
static int ct_py_where(const char *f, const char **code, int *addr)
{
	const struct ct_py_offsets *o = py.o;
	if ((uintptr_t)f & 7)
		return CT_PY_BAD;
	/* 3.8..3.10: PyFrameObject, whose int f_lasti is -1 before the first instruction */
	if (o->frame_obj) {
		if (!ct_py_is(f, py.frame_type))
			return CT_PY_BAD;
		const char *co = CT_PY_AT(const char *, f, o->fr_code);
		if (!ct_py_is(co, py.code_type))
			return CT_PY_BAD;
		const char *bytecode = CT_PY_AT(const char *, co, o->co_code);
		int lasti = CT_PY_AT(int, f, o->fr_instr);
		if (!ct_py_is(bytecode, py.bytes_type) || lasti < -1 ||
		    (int64_t)lasti * o->lasti_scale >= CT_PY_AT(int64_t, bytecode, CT_PY_OB_SIZE))
			return CT_PY_BAD;
		*code = co;
		*addr = lasti * o->lasti_scale;
		return CT_PY_FRAME;
	}
	/* 3.11+: _PyInterpreterFrame, a pointer into the code's co_code_adaptive */
	char owner = CT_PY_AT(char, f, o->fr_owner);
	if (o->minor >= 12 && owner == CT_PY_OWNED_BY_CSTACK)
		return CT_PY_SKIP;
	const char *co = CT_PY_AT(const char *, f, o->fr_code);
	if (!ct_py_is(co, py.code_type))
		return CT_PY_BAD;
	/* byte offset of the code unit, -2 for 3.11/3.12's "before the first" */
	intptr_t off =
		(intptr_t)(CT_PY_AT(uintptr_t, f, o->fr_instr) - ((uintptr_t)co + o->co_code));
	if (off < -2 || off >= CT_PY_AT(int64_t, co, CT_PY_OB_SIZE) * 2 || (off & 1))
		return CT_PY_BAD;
	if (owner != CT_PY_OWNED_BY_GENERATOR && off < CT_PY_AT(int, co, o->co_firsttraceable) * 2)
		return CT_PY_SKIP; /* incomplete */
	*code = co;
	*addr = (int)off;
	return CT_PY_FRAME;
}

/*
 * Brent's cycle check along a frame chain: the mark moves to the frame
 * reached after 1, 2, 4, ... steps; a chain that comes back to it loops.
 */
struct ct_py_cycle {
	const char *mark;
	unsigned lap, since;
};

/* The chain's next frame is f: 1 when it closes a loop. */
static inline int ct_py_loops(struct ct_py_cycle *c, const char *f)
{
	if (f == c->mark)
		return 1;
	if (++c->since == c->lap) {
		c->mark = f;
		c->lap *= 2;
		c->since = 0;
	}
	return 0;
}

/*
 * The Python frames of thread state ts, innermost first, into frames (at most
 * CT_PY_DEPTH); returns how many, 0 when there are none (a thread that runs no
 * Python code now, such as torch's autograd threads, keeps a thread state
 * without frames), -1 when the chain looks wrong. frames may be NULL (nothing
 * filled). With key, it also sets *key: a hash of each frame's code object,
 * offset, first line, file and name str and line table (the site cache's key
 * without the strings' contents: the memo below), in four lanes of one
 * multiply per frame each, which overlap (a lane of two in a row made the
 * chain longer). With frames, *dropped is set to 1 if a string's record was
 * dropped (the stack's record then names a string no record defines yet).
 */
static int ct_py_walk(const char *ts, struct ct_pyframe *frames, ct_py_emit_fn emit, void *ctx,
		      uint64_t *key, int *dropped)
{
	const struct ct_py_offsets *o = py.o;
	const char *f = ct_py_top(ts);
	struct ct_py_cycle cyc = {f, 1, 0};
	int depth = 0;
	uint64_t lane[4] = {0x5079u, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull};
	unsigned steps = 0;
	while (f && depth < CT_PY_DEPTH) {
		if (++steps > CT_PY_WALK_MAX)
			return -1;
		const char *code;
		int addr;
		int r = ct_py_where(f, &code, &addr);
		if (r == CT_PY_BAD)
			return -1;
		if (r == CT_PY_FRAME) {
			if (frames) {
				int got = ct_py_frame(code, addr, &frames[depth], emit, ctx);
				if (!got)
					return -1;
				if (got == 2)
					*dropped = 1;
			}
			if (key) {
				/* name and line table in one word: two str/bytes objects' addresses, rotated apart */
				uint64_t first = (uint32_t)CT_PY_AT(int, code, o->co_firstlineno);
				uint64_t name = CT_PY_AT(uint64_t, code, o->co_name);
				uint64_t lines = CT_PY_AT(uint64_t, code, o->co_lines);
				lane[0] = ct_hash_step(lane[0], (uint64_t)(uintptr_t)code);
				lane[1] = ct_hash_step(lane[1], (uint64_t)(uint32_t)addr << 32 | first);
				lane[2] = ct_hash_step(lane[2], CT_PY_AT(uint64_t, code, o->co_filename));
				lane[3] = ct_hash_step(lane[3], name ^ (lines << 29 | lines >> 35));
			}
			depth++;
		}
		f = CT_PY_AT(const char *, f, py.o->fr_back);
		if (ct_py_loops(&cyc, f))
			return -1;
	}
	if (key)
		*key = ct_hash_step(
			ct_hash_step(ct_hash_step(lane[0], lane[1]) ^ (uint64_t)depth, lane[2]),
			lane[3]);
	return depth;
}

/*
 * Code objects that died, counted by a code watcher (CPython 3.12+), which
 * the Python bootstrap (pyboot.c) adds on the main thread with the GIL:
 * CPython calls it before it frees a code object. While the count stands
 * still, no code object was freed, so none was made again at a freed one's
 * address: a frame's code pointer and instruction pointer then name the same
 * code as when the memo entry was made (below).
 */
CT_HOT_DATA static _Atomic uint32_t ct_py_code_deaths;
CT_HOT_DATA static _Atomic int ct_py_watching; /* 1: the watcher is in */
/* The interpreter it watches (watchers are per interpreter): the quick key is for its threads only. */
CT_HOT_DATA static const void *_Atomic ct_py_watched;
/* Memo hits on the quick key alone, in timed calls (CUMTRACE_SELFTIME: ct_py_quick_hits). */
static _Atomic uint64_t ct_py_quick;

uint64_t ct_py_quick_hits(void)
{
	return atomic_load(&ct_py_quick);
}

#define CT_PY_CODE_EVENT_DESTROY 1 /* PY_CODE_EVENT_DESTROY, 3.12 and 3.13 */

/* The PyCode_WatchCallback: with the GIL, on the thread that frees the code object. */
static int ct_py_code_event(int event, void *code)
{
	(void)code;
	if (event == CT_PY_CODE_EVENT_DESTROY)
		atomic_fetch_add_explicit(&ct_py_code_deaths, 1, memory_order_release);
	return 0;
}

void ct_py_watch_code(void)
{
	if (!ct_py_enabled() || py.o->minor < 12 || atomic_load(&ct_py_watching))
		return;
	const char *ts = ct_py_tstate();
	if (!ts)
		return;
	ct_py_check_current(ts);
	int (*add)(int (*)(int, void *)) = (int (*)(int (*)(int, void *)))ct_py_sym("PyCode_AddWatcher");
	void (*clear)(void) = (void (*)(void))ct_py_sym("PyErr_Clear");
	if (!add || !clear)
		return;
	if (add(ct_py_code_event) < 0) {
		clear(); /* every watcher slot taken: each memo hit reads the code objects */
		return;
	}
	atomic_store_explicit(&ct_py_watched, CT_PY_AT(const void *, ts, CT_PY_TS_INTERP),
			      memory_order_relaxed);
	atomic_store_explicit(&ct_py_watching, 1, memory_order_release);
}

/*
 * The memo's quick key, with the watcher in: each frame's code pointer and
 * instruction pointer as they stand, no code object read (3.11+ frames).
 * Looks at the first CT_PY_WALK_MAX frames, all that ct_py_walk may; returns
 * how many, 0 for none, -1 when the chain looks wrong.
 *
 * No loop check here (it was a sixth of a memo hit's instructions, 170 of
 * about 930 on the 18-place loop, though not its time: the walk waits on
 * each frame's address): the walk ends within CT_PY_WALK_MAX frames anyway,
 * and a key is put in the memo only after ct_py_walk, which does check, took
 * the same chain whole; a chain that closes a loop finds no entry of its own
 * and goes on to ct_py_walk, which rejects it, as before.
 */
CT_HOT static int ct_py_walk_quick(const char *ts, uint64_t *key)
{
	const struct ct_py_offsets *o = py.o;
	const char *f = ct_py_top(ts);
	uint64_t a = 0x5079u, b = 0x9e3779b97f4a7c15ull;
	int depth = 0;
	while (f && depth < CT_PY_WALK_MAX) {
		if ((uintptr_t)f & 7)
			return -1;
		a = ct_hash_step(a, CT_PY_AT(uint64_t, f, o->fr_code));
		b = ct_hash_step(b, CT_PY_AT(uint64_t, f, o->fr_instr));
		depth++;
		f = CT_PY_AT(const char *, f, o->fr_back);
	}
	*key = ct_hash_step(ct_hash_step(a, b), (uint64_t)depth);
	return depth;
}

/*
 * The thread's memo of whole stacks: walk key -> CT_REC_PYSTACK id, for a
 * stack seen before whose record is written. Each entry holds two keys: the
 * full one (ct_py_walk), which reads each frame's code object, and the one it
 * is found by: the quick one (ct_py_walk_quick) while the code watcher is in,
 * else the full one again. A hit on the quick key stands when no code object
 * died since the entry was made; after one did, the full key decides, and
 * the entry takes the new count. Like the site cache, the full key holds for
 * a code object freed and another made at its address only when its strings
 * and line table lie where the old ones did; a generation (ct_py_reset)
 * retires every entry. A hit costs the walk and the key, none of the site
 * cache's lookups, string reads or interning. Only the owning thread touches
 * it, in the shim's own work, which no signal handler's call enters (a traced
 * call in a handler finds the thread busy and is not recorded).
 *
 * 256 entries in sets of four, two pages mapped at the thread's first capture
 * and unmapped at its exit: a training step's few dozen allocating lines stay
 * in it (64 direct-mapped entries in TLS evicted each other: a loop over 24
 * lines found 57-82% of its walks there, now 98%, t_python). Each key may
 * stand in either of two sets (ct_py_memo_put): with one, five stacks of a
 * loop that fell on one set of four evicted each other on every call, all
 * five missing every round (one run in a few hundred of t_python's 24 lines;
 * a training step's 74 in about four runs of ten). A thread whose pages
 * cannot be mapped has no memo.
 */
#define CT_PY_MEMO_WAYS 4
#define CT_PY_MEMO_SET_BITS 6
#define CT_PY_MEMO_BYTES 8192
struct ct_py_memo {
	uint64_t key, full;
	uint32_t id, gen;
	uint32_t deaths, pad; /* ct_py_code_deaths when made or last confirmed */
};
_Static_assert(sizeof(struct ct_py_memo) << (CT_PY_MEMO_SET_BITS + 2) == CT_PY_MEMO_BYTES,
	       "the memo's pages");
static __thread struct ct_py_memo *ct_py_memo_tab __attribute__((tls_model("initial-exec")));
static pthread_key_t ct_py_memo_key;
static int ct_py_memo_key_ok;
static struct ct_py_memo ct_py_memo_none[CT_PY_MEMO_WAYS]; /* no page: never written */

static void ct_py_memo_exit(void *tab)
{
	if (ct_py_memo_tab == tab)
		ct_py_memo_tab = NULL;
	munmap(tab, CT_PY_MEMO_BYTES);
}

void ct_py_init(void)
{
	ct_py_memo_key_ok = pthread_key_create(&ct_py_memo_key, ct_py_memo_exit) == 0;
}

/*
 * The calling thread's memo, its pages mapped now if need be (not in a signal
 * handler); NULL: none.
 */
static struct ct_py_memo *ct_py_memo_table(void)
{
	struct ct_py_memo *tab = ct_py_memo_tab;
	if (CT_UNLIKELY(!tab)) {
		if (ct_in_handler(&ct_tls))
			return NULL; /* pthread_setspecific may allocate: mapped by a later call */
		tab = ct_py_memo_key_ok ? ct_thread_map(ct_py_memo_key, CT_PY_MEMO_BYTES, 0) : NULL;
		if (!tab)
			tab = ct_py_memo_none;
		ct_py_memo_tab = tab;
	}
	return tab == ct_py_memo_none ? NULL : tab;
}

/* key's first (second 0) or second set in tab: two products of it, which few keys share both of. */
static struct ct_py_memo *ct_py_memo_in(struct ct_py_memo *tab, uint64_t key, int second)
{
	uint64_t mul = second ? 0xc2b2ae3d27d4eb4full : 0x9e3779b97f4a7c15ull;
	return tab + ((key * mul) >> (64 - CT_PY_MEMO_SET_BITS)) * CT_PY_MEMO_WAYS;
}

/* key's entry in tab (may be NULL), NULL when none of this generation: its first set, then its second. */
CT_HOT static struct ct_py_memo *ct_py_memo_get(struct ct_py_memo *tab, uint64_t key, uint32_t gen)
{
	for (int s = 0; tab && s < 2; s++) {
		struct ct_py_memo *set = ct_py_memo_in(tab, key, s);
		for (int w = 0; w < CT_PY_MEMO_WAYS; w++)
			if (set[w].key == key && set[w].gen == gen && set[w].id)
				return &set[w];
	}
	return NULL;
}

/*
 * A new entry goes to a free way (empty, or of an older generation) of key's
 * first set, else of its second; when both are full, in front of its first
 * set, whose last entry leaves.
 */
static void ct_py_memo_put(struct ct_py_memo *tab, uint64_t key, uint64_t full, uint32_t id,
			   uint32_t gen, uint32_t deaths)
{
	struct ct_py_memo e = {key, full, id, gen, deaths, 0};
	for (int s = 0; s < 2; s++) {
		struct ct_py_memo *set = ct_py_memo_in(tab, key, s);
		for (int w = 0; w < CT_PY_MEMO_WAYS; w++)
			if (!set[w].id || set[w].gen != gen) {
				set[w] = e;
				return;
			}
	}
	struct ct_py_memo *set = ct_py_memo_in(tab, key, 0);
	memmove(set + 1, set, (CT_PY_MEMO_WAYS - 1) * sizeof *set);
	set[0] = e;
}

/* The full key of ts's frames (ct_py_walk), 0 when the chain looks wrong or holds none. */
static uint64_t ct_py_full_key(const char *ts)
{
	uint64_t key = 0;
	return ct_py_walk(ts, NULL, NULL, NULL, &key, NULL) > 0 && key ? key : 0;
}

void ct_py_reset(void)
{
	atomic_fetch_add_explicit(&ct_py_gen, 1, memory_order_relaxed);
	ct_intern_reset(&ct_py_strings);
	ct_intern_reset(&ct_py_stacks);
}

/*
 * A Python stack's interning hash: a word per frame in two lanes (the ids, the
 * lines), whose multiply chains overlap. (Byte by byte, the stack of a deep
 * call took about 20 multiplies in a row per frame: issue 16's cost figures.)
 */
static uint64_t ct_py_stack_hash(const struct ct_pyframe *f, int depth)
{
	uint64_t a = 0x5079u ^ (uint64_t)depth, b = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < depth; i++) {
		a = ct_hash_step(a, (uint64_t)f[i].file_id << 32 | f[i].func_id);
		b = ct_hash_step(b, (uint64_t)(uint32_t)f[i].line);
	}
	uint64_t h = ct_hash_step(a, b);
	return h ? h : 1;
}

CT_HOT uint32_t ct_py_capture(ct_py_emit_fn emit, void *ctx)
{
	if (CT_LIKELY(!ct_py_enabled()))
		return 0;
	if (!ct_py_initialized())
		return 0;
	const char *ts = ct_py_tstate();
	if (!ts)
		return 0;
	ct_self_mark(CT_SELF_MARK_PYSTATE);
	uint64_t key = 0, full = 0;
	uint32_t gen = atomic_load_explicit(&ct_py_gen, memory_order_relaxed);
	/* read before the walk: a code object that dies during it counts after */
	int quick = atomic_load_explicit(&ct_py_watching, memory_order_acquire) &&
		    CT_PY_AT(const void *, ts, CT_PY_TS_INTERP) ==
			    atomic_load_explicit(&ct_py_watched, memory_order_relaxed);
	uint32_t deaths = atomic_load_explicit(&ct_py_code_deaths, memory_order_acquire);
	struct ct_py_memo *m = NULL;
	int walked = quick ? ct_py_walk_quick(ts, &key) : ct_py_walk(ts, NULL, NULL, NULL, &key, NULL);
	ct_self_mark(CT_SELF_MARK_PYWALK);
	if (walked == 0) {
		ct_self_mark(CT_SELF_MARK_PYNONE);
		return 0; /* no frame: nothing to record, nothing to walk again */
	}
	if (walked > 0) {
		if (!quick)
			full = key;
		m = ct_py_memo_table();
		struct ct_py_memo *e = ct_py_memo_get(m, key, gen);
		if (e && !full && e->deaths != deaths)
			full = ct_py_full_key(ts); /* code objects died since: the full key decides */
		if (e && (e->deaths == deaths || (full && e->full == full))) {
			if (CT_UNLIKELY(ct_tls.self_on) && quick && !full)
				atomic_fetch_add_explicit(&ct_py_quick, 1, memory_order_relaxed);
			e->deaths = deaths;
			ct_self_mark(CT_SELF_MARK_PYMEMO);
			return e->id;
		}
	}
	struct ct_pyframe frames[CT_PY_DEPTH];
	int dropped = 0;
	/* the full key too, for the memo, unless the lookup above already had it */
	int depth = ct_py_walk(ts, frames, emit, ctx, full ? NULL : &full, &dropped);
	if (depth <= 0)
		return 0;
	if (dropped)
		m = NULL; /* a string's record is missing: the next capture must write it */
	void *slot;
	uint32_t id = ct_intern(&ct_py_stacks, ct_py_stack_hash(frames, depth), &slot);
	int written = id && !slot;
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
		written = emit(ctx, &r, size);
		ct_intern_written(slot, written);
	}
	if (m && written && full)
		ct_py_memo_put(m, key, full, id, gen, deaths);
	return id;
}
