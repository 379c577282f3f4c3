/*
 * The CPython layouts that python.c reads, one row per minor version.
 *
 * Release builds with the GIL (not Py_DEBUG / Py_TRACE_REFS, not
 * free-threaded) on LP64 Linux: x86-64 and aarch64 lay these structs out the
 * same way. Values are byte offsets into the named structs. Every value here,
 * the per-version rows and the constants shared by all versions, is checked
 * against each installed interpreter's own headers by
 * tests/e2e/t_python_offsets.sh (tests/e2e/py_offsets_probe.c includes this
 * file next to Python.h and compares with offsetof). At run time python.c
 * also compares the fields that CPython publishes in its types' member tables
 * (co_filename, f_back, ...) with this table and stays off on a mismatch.
 *
 * The header stands alone (no CPython or shim headers) so that the probe can
 * include it.
 */
#ifndef CT_PYOFFSETS_H
#define CT_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

/* Shared by 3.8..3.13. */
enum {
	CT_PY_OB_TYPE = 8,	   /* PyObject.ob_type */
	CT_PY_OB_SIZE = 16,	   /* PyVarObject.ob_size */
	CT_PY_TS_INTERP = 16,	   /* PyThreadState.interp */
	CT_PY_TP_NAME = 24,	   /* PyTypeObject.tp_name */
	CT_PY_TP_MEMBERS = 240,	   /* PyTypeObject.tp_members */
	CT_PY_BYTES_DATA = 32,	   /* PyBytesObject.ob_sval */
	CT_PY_STR_LENGTH = 16,	   /* PyASCIIObject.length */
	CT_PY_STR_HASH = 24,	   /* PyASCIIObject.hash */
	CT_PY_STR_STATE = 32,	   /* PyASCIIObject.state, a 32-bit bit-field word: */
	CT_PY_STR_KIND_SHIFT = 2,  /*   kind (3 bits: 1, 2 or 4 bytes per character) */
	CT_PY_STR_COMPACT_BIT = 5, /*   compact */
	CT_PY_STR_ASCII_BIT = 6,   /*   ascii */
	CT_PY_OWNED_BY_GENERATOR = 1, /* _PyInterpreterFrame.owner (3.11+) */
	CT_PY_OWNED_BY_CSTACK = 3,    /* 3.12+: the C entry ("shim") frame, not Python code */
	CT_PY_TSS_CREATED = 0,	      /* Py_tss_t._is_initialized (int) */
	CT_PY_TSS_KEY = 4,	      /* Py_tss_t._key (pthread_key_t) */
};

/* How a code object maps instruction offsets to lines. */
enum ct_py_lines {
	CT_PY_LNOTAB = 1,    /* 3.8, 3.9: co_lnotab, (address, line) increment pairs */
	CT_PY_LINETABLE = 2, /* 3.10: co_linetable, (length, line delta) pairs */
	CT_PY_LOCATIONS = 3, /* 3.11+: co_linetable, the location table (varint entries) */
};

#define CT_PY_ABSENT 0xffffu /* a field this version does not have */

struct ct_py_offsets {
	uint8_t minor;
	uint8_t lines;	     /* enum ct_py_lines */
	uint8_t frame_obj;   /* 1: PyFrameObject chain (3.8-3.10), 0: _PyInterpreterFrame */
	uint8_t lasti_scale; /* 3.8-3.10: bytes per unit of f_lasti (1, 1, 2) */
	/* PyThreadState */
	uint16_t ts_thread_id;	 /* unsigned long thread_id: pthread_self() of its thread */
	uint16_t ts_frame;	 /* 3.8-3.10 frame; 3.11-3.12 cframe; 3.13 current_frame */
	uint16_t cframe_current; /* 3.11-3.12: _PyCFrame.current_frame */
	/* PyFrameObject (3.8-3.10) or _PyInterpreterFrame (3.11+) */
	uint16_t fr_back;  /* f_back; previous */
	uint16_t fr_code;  /* f_code; f_executable in 3.13 */
	uint16_t fr_instr; /* int f_lasti; _Py_CODEUNIT *prev_instr (3.11, 3.12), *instr_ptr */
	uint16_t fr_owner; /* char owner (3.11+) */
	/* PyCodeObject */
	uint16_t co_filename;
	uint16_t co_name;	 /* co_name (3.8-3.10), co_qualname (3.11+) */
	uint16_t co_firstlineno; /* int */
	uint16_t co_lines;	 /* bytes: co_lnotab (3.8, 3.9), co_linetable (3.10+) */
	uint16_t co_code;	 /* bytes co_code (3.8-3.10); co_code_adaptive[] (3.11+) */
	uint16_t co_firsttraceable; /* int _co_firsttraceable, in code units (3.11+) */
	/* str */
	uint16_t str_ascii_data;   /* sizeof(PyASCIIObject): data of a compact ASCII str */
	uint16_t str_utf8_length;  /* PyCompactUnicodeObject.utf8_length */
	uint16_t str_utf8;	   /* PyCompactUnicodeObject.utf8 */
	uint16_t str_compact_data; /* sizeof(PyCompactUnicodeObject): data of a compact str */
	uint16_t str_data;	   /* PyUnicodeObject.data: data of a legacy str */
	/* _PyRuntimeState: what Py_IsInitialized and PyGILState_GetThisThreadState read */
	uint16_t rt_initialized;  /* int initialized */
	uint16_t rt_auto_tss;	  /* Py_tss_t autoTSSkey (gilstate.autoTSSkey before 3.12) */
	uint16_t rt_auto_interp;  /* 3.8-3.11: gilstate.autoInterpreterState; NULL: no thread state */
};

#define CT_PY_MINOR_FIRST 8
#define CT_PY_MINOR_LAST 13

static const struct ct_py_offsets ct_py_offsets_table[] = {
	{
		.minor = 8, .lines = CT_PY_LNOTAB, .frame_obj = 1, .lasti_scale = 1,
		.ts_thread_id = 176, .ts_frame = 24, .cframe_current = CT_PY_ABSENT,
		.fr_back = 24, .fr_code = 32, .fr_instr = 104, .fr_owner = CT_PY_ABSENT,
		.co_filename = 104, .co_name = 112, .co_firstlineno = 40, .co_lines = 120,
		.co_code = 48, .co_firsttraceable = CT_PY_ABSENT,
		.str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56,
		.str_compact_data = 72, .str_data = 72,
		.rt_initialized = 12, .rt_auto_tss = 1392, .rt_auto_interp = 1384,
	},
	{
		.minor = 9, .lines = CT_PY_LNOTAB, .frame_obj = 1, .lasti_scale = 1,
		.ts_thread_id = 176, .ts_frame = 24, .cframe_current = CT_PY_ABSENT,
		.fr_back = 24, .fr_code = 32, .fr_instr = 104, .fr_owner = CT_PY_ABSENT,
		.co_filename = 104, .co_name = 112, .co_firstlineno = 40, .co_lines = 120,
		.co_code = 48, .co_firsttraceable = CT_PY_ABSENT,
		.str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56,
		.str_compact_data = 72, .str_data = 72,
		.rt_initialized = 12, .rt_auto_tss = 584, .rt_auto_interp = 576,
	},
	{
		.minor = 10, .lines = CT_PY_LINETABLE, .frame_obj = 1, .lasti_scale = 2,
		.ts_thread_id = 176, .ts_frame = 24, .cframe_current = CT_PY_ABSENT,
		.fr_back = 24, .fr_code = 32, .fr_instr = 96, .fr_owner = CT_PY_ABSENT,
		.co_filename = 104, .co_name = 112, .co_firstlineno = 40, .co_lines = 120,
		.co_code = 48, .co_firsttraceable = CT_PY_ABSENT,
		.str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56,
		.str_compact_data = 72, .str_data = 72,
		.rt_initialized = 12, .rt_auto_tss = 584, .rt_auto_interp = 576,
	},
	{
		.minor = 11, .lines = CT_PY_LOCATIONS, .frame_obj = 0, .lasti_scale = 0,
		.ts_thread_id = 152, .ts_frame = 56, .cframe_current = 8,
		.fr_back = 48, .fr_code = 32, .fr_instr = 56, .fr_owner = 69,
		.co_filename = 112, .co_name = 128, .co_firstlineno = 72, .co_lines = 136,
		.co_code = 184, .co_firsttraceable = 168,
		.str_ascii_data = 48, .str_utf8_length = 48, .str_utf8 = 56,
		.str_compact_data = 72, .str_data = 72,
		.rt_initialized = 16, .rt_auto_tss = 592, .rt_auto_interp = 584,
	},
	{
		.minor = 12, .lines = CT_PY_LOCATIONS, .frame_obj = 0, .lasti_scale = 0,
		.ts_thread_id = 136, .ts_frame = 56, .cframe_current = 0,
		.fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
		.co_filename = 112, .co_name = 128, .co_firstlineno = 68, .co_lines = 136,
		.co_code = 192, .co_firsttraceable = 176,
		.str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48,
		.str_compact_data = 56, .str_data = 56,
		.rt_initialized = 16, .rt_auto_tss = 1544, .rt_auto_interp = CT_PY_ABSENT,
	},
	{
		.minor = 13, .lines = CT_PY_LOCATIONS, .frame_obj = 0, .lasti_scale = 0,
		.ts_thread_id = 152, .ts_frame = 72, .cframe_current = CT_PY_ABSENT,
		.fr_back = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
		.co_filename = 112, .co_name = 128, .co_firstlineno = 68, .co_lines = 136,
		.co_code = 200, .co_firsttraceable = 184,
		.str_ascii_data = 40, .str_utf8_length = 40, .str_utf8 = 48,
		.str_compact_data = 56, .str_data = 56,
		.rt_initialized = 600, .rt_auto_tss = 2160, .rt_auto_interp = CT_PY_ABSENT,
	},
};

/* The row for CPython 3.minor, or NULL. */
static inline const struct ct_py_offsets *ct_py_offsets_for(int minor)
{
	if (minor < CT_PY_MINOR_FIRST || minor > CT_PY_MINOR_LAST)
		return NULL;
	const struct ct_py_offsets *o = &ct_py_offsets_table[minor - CT_PY_MINOR_FIRST];
	return o->minor == minor ? o : NULL;
}

#endif /* CT_PYOFFSETS_H */
