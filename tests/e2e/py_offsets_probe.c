/*
 * Compiled by tests/e2e/t_python_offsets.sh against one CPython's own headers
 * (python3.X-config --includes, Py_BUILD_CORE for the internal ones): compares
 * every value of preload/core/pyoffsets.h for that version with offsetof() and
 * the like. Prints each field and exits 1 on the first version mismatch, 0
 * when all agree. Built with -DCT_PROBE_SELFTEST it checks a table whose
 * thread_id offset is off by 8, and must then fail.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#endif
#if PY_MINOR_VERSION >= 9
#include <internal/pycore_runtime.h>
#else
#include <internal/pycore_pystate.h>
#endif
#include <stdio.h>
#include <string.h>

#include "pyoffsets.h"

static int bad;

static void check(const char *what, long table, long headers)
{
	printf("%-28s table %5ld  headers %5ld%s\n", what, table, headers,
	       table == headers ? "" : "  MISMATCH");
	if (table != headers)
		bad = 1;
}

#define CHECK(field, value) check(#field, (long)o.field, (long)(value))
#define CHECK_CONST(name, value) check(#name, (long)(name), (long)(value))

/* The bit position of a one-bit-wide or the shift of a wider bit-field of PyASCIIObject.state. */
#define STATE_BIT(field, value)                                                                \
	({                                                                                     \
		PyASCIIObject a_;                                                              \
		uint32_t w_;                                                                   \
		memset(&a_, 0, sizeof a_);                                                     \
		a_.state.field = (value);                                                      \
		memcpy(&w_, (char *)&a_ + offsetof(PyASCIIObject, state), sizeof w_);          \
		__builtin_ctz(w_);                                                             \
	})

int main(void)
{
	const struct ct_py_offsets *row = ct_py_offsets_for(PY_MINOR_VERSION);
	printf("CPython %s (headers), pyoffsets.h row for 3.%d\n", PY_VERSION, PY_MINOR_VERSION);
	if (!row) {
		printf("no row for 3.%d\n", PY_MINOR_VERSION);
		return 1;
	}
	struct ct_py_offsets o = *row;
#ifdef CT_PROBE_SELFTEST
	o.ts_thread_id += 8;
#endif
	CHECK_CONST(CT_PY_OB_TYPE, offsetof(PyObject, ob_type));
	CHECK_CONST(CT_PY_OB_SIZE, offsetof(PyVarObject, ob_size));
	CHECK_CONST(CT_PY_TS_INTERP, offsetof(PyThreadState, interp));
	CHECK_CONST(CT_PY_TP_NAME, offsetof(PyTypeObject, tp_name));
	CHECK_CONST(CT_PY_TP_MEMBERS, offsetof(PyTypeObject, tp_members));
	CHECK_CONST(CT_PY_BYTES_DATA, offsetof(PyBytesObject, ob_sval));
	CHECK_CONST(CT_PY_STR_LENGTH, offsetof(PyASCIIObject, length));
	CHECK_CONST(CT_PY_STR_HASH, offsetof(PyASCIIObject, hash));
	CHECK_CONST(CT_PY_STR_STATE, offsetof(PyASCIIObject, state));
	CHECK_CONST(CT_PY_STR_KIND_SHIFT, STATE_BIT(kind, 1));
	CHECK_CONST(CT_PY_STR_COMPACT_BIT, STATE_BIT(compact, 1));
	CHECK_CONST(CT_PY_STR_ASCII_BIT, STATE_BIT(ascii, 1));
	check("sizeof(PyASCIIObject.state)", 4, sizeof(((PyASCIIObject *)0)->state));
	check("sizeof(thread_id)", sizeof(unsigned long), sizeof(((PyThreadState *)0)->thread_id));
	check("sizeof(co_firstlineno)", sizeof(int), sizeof(((PyCodeObject *)0)->co_firstlineno));

	CHECK_CONST(CT_PY_TSS_CREATED, offsetof(Py_tss_t, _is_initialized));
	CHECK_CONST(CT_PY_TSS_KEY, offsetof(Py_tss_t, _key));
	check("sizeof(Py_tss_t._is_initialized)", sizeof(int), sizeof(((Py_tss_t *)0)->_is_initialized));
	check("sizeof(Py_tss_t._key)", sizeof(pthread_key_t), sizeof(((Py_tss_t *)0)->_key));
	check("sizeof(_PyRuntime.initialized)", sizeof(int), sizeof(_PyRuntime.initialized));

	CHECK(minor, PY_MINOR_VERSION);
	CHECK(rt_initialized, offsetof(_PyRuntimeState, initialized));
#if PY_MINOR_VERSION >= 12
	CHECK(rt_auto_tss, offsetof(_PyRuntimeState, autoTSSkey));
	CHECK(rt_auto_interp, CT_PY_ABSENT);
#else
	CHECK(rt_auto_tss, offsetof(_PyRuntimeState, gilstate.autoTSSkey));
	CHECK(rt_auto_interp, offsetof(_PyRuntimeState, gilstate.autoInterpreterState));
#endif
	CHECK(ts_thread_id, offsetof(PyThreadState, thread_id));
	CHECK(co_filename, offsetof(PyCodeObject, co_filename));
	CHECK(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	CHECK(str_ascii_data, sizeof(PyASCIIObject));
	CHECK(str_utf8_length, offsetof(PyCompactUnicodeObject, utf8_length));
	CHECK(str_utf8, offsetof(PyCompactUnicodeObject, utf8));
	CHECK(str_compact_data, sizeof(PyCompactUnicodeObject));
	CHECK(str_data, offsetof(PyUnicodeObject, data));
#if PY_MINOR_VERSION <= 10
	CHECK(frame_obj, 1);
	CHECK(ts_frame, offsetof(PyThreadState, frame));
	CHECK(cframe_current, CT_PY_ABSENT);
	CHECK(fr_back, offsetof(PyFrameObject, f_back));
	CHECK(fr_code, offsetof(PyFrameObject, f_code));
	CHECK(fr_instr, offsetof(PyFrameObject, f_lasti));
	check("sizeof(f_lasti)", sizeof(int), sizeof(((PyFrameObject *)0)->f_lasti));
	CHECK(fr_owner, CT_PY_ABSENT);
	CHECK(co_name, offsetof(PyCodeObject, co_name));
	CHECK(co_code, offsetof(PyCodeObject, co_code));
	CHECK(co_firsttraceable, CT_PY_ABSENT);
#if PY_MINOR_VERSION <= 9
	CHECK(lines, CT_PY_LNOTAB);
	CHECK(co_lines, offsetof(PyCodeObject, co_lnotab));
	CHECK(lasti_scale, 1); /* PyCode_Addr2Line(f->f_code, f->f_lasti) */
#else
	CHECK(lines, CT_PY_LINETABLE);
	CHECK(co_lines, offsetof(PyCodeObject, co_linetable));
	CHECK(lasti_scale, sizeof(_Py_CODEUNIT)); /* f->f_lasti * sizeof(_Py_CODEUNIT) */
#endif
#else /* 3.11+ */
	CHECK(frame_obj, 0);
	CHECK(lines, CT_PY_LOCATIONS);
	CHECK(lasti_scale, 0);
	CHECK(co_name, offsetof(PyCodeObject, co_qualname));
	CHECK(co_lines, offsetof(PyCodeObject, co_linetable));
	CHECK(co_code, offsetof(PyCodeObject, co_code_adaptive));
	CHECK(co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
	check("sizeof(_Py_CODEUNIT)", 2, sizeof(_Py_CODEUNIT));
	check("sizeof(owner)", 1, sizeof(((_PyInterpreterFrame *)0)->owner));
	CHECK_CONST(CT_PY_OWNED_BY_GENERATOR, FRAME_OWNED_BY_GENERATOR);
	CHECK(fr_back, offsetof(_PyInterpreterFrame, previous));
	CHECK(fr_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_MINOR_VERSION <= 12
	CHECK(ts_frame, offsetof(PyThreadState, cframe));
	CHECK(cframe_current, offsetof(_PyCFrame, current_frame));
	CHECK(fr_code, offsetof(_PyInterpreterFrame, f_code));
	CHECK(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
	CHECK(ts_frame, offsetof(PyThreadState, current_frame));
	CHECK(cframe_current, CT_PY_ABSENT);
	CHECK(fr_code, offsetof(_PyInterpreterFrame, f_executable));
	CHECK(fr_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#endif
#if PY_MINOR_VERSION >= 12
	CHECK_CONST(CT_PY_OWNED_BY_CSTACK, FRAME_OWNED_BY_CSTACK);
#endif
#endif
	printf("pyoffsets.h %s CPython %s\n", bad ? "disagrees with" : "agrees with", PY_VERSION);
	return bad;
}
