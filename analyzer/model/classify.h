/*
 * Leak classes and the rules that recognise allocator caches, frames that
 * belong to the user, and the identity of a site that survives between runs.
 *
 * A leak group is
 *   - "teardown" when it died at a checkpoint (cudaDeviceReset, cuCtxDestroy,
 *     cuDevicePrimaryCtxReset: the model's reason_op),
 *   - else "cache" when the innermost frame that is not a pass-through frame
 *     (the CUDA runtime and driver, ctypes, libffi, CuPy's bindings) matches a
 *     cache rule (PyTorch's caching allocator, CuPy's pool, XLA, cuBLAS,
 *     cuDNN, NCCL),
 *   - else "leaked": user code allocated it and never freed it.
 * "growth" is the class of the sites that growth.c finds growing step after
 * step. The rules are one table in classify.c; docs/report.md lists them.
 *
 * Frames are always resolved in the mixed view (Python frames in place of the
 * interpreter's), whatever --native or --python-only say, so that classes,
 * suppressions and identities do not depend on how a report is displayed.
 */
#ifndef CT_ANALYZER_CLASSIFY_H
#define CT_ANALYZER_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>

#include "read/symbols.h"

struct ct_model;

enum ct_class {
	CT_CLASS_LEAKED = 0,   /* allocated by user code, never freed */
	CT_CLASS_CACHE = 1,    /* held by an allocator cache */
	CT_CLASS_TEARDOWN = 2, /* freed by a context teardown (device reset, context destroy) */
	CT_CLASS_GROWTH = 3,   /* live bytes grew step after step */
	CT_CLASS_COUNT
};

#define CT_CLASS_BIT(c) (1u << (c))
#define CT_CLASS_ALL ((1u << CT_CLASS_COUNT) - 1)

/* "leaked", "cache", "teardown", "growth" */
const char *ct_class_name(int cls);
/* "leaked", "held by an allocator cache", ... */
const char *ct_class_title(int cls);
/* enum ct_class of name, -1 when unknown */
int ct_class_parse(const char *name, size_t len);
/*
 * A comma-separated list of class names ("all" for every class) into a set of
 * CT_CLASS_BIT. Returns 0, or -1 with the offending word copied into bad.
 */
int ct_class_parse_list(const char *s, unsigned *set, char *bad, size_t badcap);

/* What a rule looks at in a frame. */
enum ct_rule_field {
	CT_RULE_MODULE = 0,   /* the module's file name (basename) */
	CT_RULE_PATH = 1,     /* the module's full path as recorded */
	CT_RULE_FUNCTION = 2, /* the (demangled) function of a native frame */
	CT_RULE_PYFILE = 3,   /* the file of a Python frame */
};

enum ct_rule_action {
	CT_RULE_PASS = 0,  /* a layer calls go through: look at the next frame out */
	CT_RULE_CACHE = 1, /* an allocator that keeps memory: the leak is "cache" */
};

struct ct_rule {
	int action;	       /* enum ct_rule_action */
	const char *allocator; /* short name: "pytorch", "cupy", ...; "runtime" for pass rules */
	const char *label;     /* for people: "PyTorch caching allocator" */
	int field;	       /* enum ct_rule_field */
	const char *pattern;   /* glob: '*' any run, '?' one character */
};

size_t ct_rule_count(void);
const struct ct_rule *ct_rule_get(size_t i);
/* "module", "path", "function", "python file" */
const char *ct_rule_field_name(int field);
/* The value of field in frame f ("" when the frame has none). */
const char *ct_rule_subject(const struct ct_frame *f, int field);

/* Whole-string glob match: '*' matches any run, '?' any one character (when qmark). */
int ct_glob(const char *pattern, const char *s, int qmark);

/* Why a site got its class. */
struct ct_class_result {
	int cls;   /* enum ct_class (never growth here) */
	int rule;  /* index of the cache rule that matched, -1 if none */
	int frame; /* index (innermost 0) of the frame it matched, -1 if none */
};

/*
 * Classify a stack (frames innermost first). teardown: the group died at a
 * checkpoint. A cache rule's evidence is kept for teardown groups too.
 */
void ct_classify_frames(const struct ct_frame *f, size_t n, int teardown, struct ct_class_result *r);

/* Frames of stack_id for analysis (mixed view), innermost first, at most max. */
size_t ct_analysis_frames(struct ct_model *m, uint32_t stack_id, struct ct_frame *out, size_t max);
/* Frame buffer size enough for any stack (native + Python). */
#define CT_ANALYSIS_FRAMES 512

/*
 * A frame of the user's own code with a source position: it has a file and a
 * line >= 1, no rule matches it, and it is not in a system library, a system
 * header, Python's standard library or site-packages.
 */
int ct_frame_is_user(const struct ct_frame *f);
/* Index of the innermost user frame, -1 when there is none. */
int ct_first_user_frame(const struct ct_frame *f, size_t n);
/*
 * A frame of a framework, a CUDA library, the interpreter (and ctypes,
 * libffi) or the C and C++ runtimes, by its module's name or path: text
 * stacks fold runs of them, and they are never the user's.
 */
int ct_frame_folds(const struct ct_frame *f);
/*
 * How many of a stack's n frames (innermost first) people see: up to the
 * program's own native main (not an interpreter's: ct_frame_folds), else
 * without the C library's start-up frames (__libc_start_main, _start, ...) at
 * its outer end. Text stacks and generated suppressions stop there.
 */
size_t ct_frames_to_main(const struct ct_frame *f, size_t n);
/*
 * The site's label frame, the frame that names it for people: the innermost
 * user Python frame; else the innermost user frame; else the innermost native
 * frame of a module of the program's own (not folded, no rule, not a system
 * library) even without a line; -1 when there is none. Every report labels a
 * site with this frame (render.h: ct_site_label).
 */
int ct_label_frame(const struct ct_frame *f, size_t n);

/*
 * The identity of a site that survives between runs: a 64-bit hash of its
 * class, API, memory kind and frames, each frame as module file name and
 * function (Python: file and function), or module file name and offset when
 * the function is unknown. Addresses, stack ids, pids, devices, line numbers
 * and load addresses are not part of it.
 */
uint64_t ct_site_identity(int cls, unsigned api, unsigned kind, const struct ct_frame *f, size_t n);

#endif
