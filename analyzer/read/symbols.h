/*
 * Modules, interned stacks and their symbolization.
 *
 * Each CT_REC_MODULE is kept in file order; a stack remembers how many
 * modules had been seen when it was read, and each frame resolves to the
 * latest such module covering it (an address range reused after dlclose
 * maps to the right object), falling back to a later one. An address has
 * one or more frames: the functions inlined at it, innermost first, then the
 * function that holds its code. They come from the dump's embedded symbols
 * (CT_REC_SYMBOLS) when it has them for that address, else from libdw (one
 * offline Dwfl per module, opened lazily), cached per address.
 */
#ifndef CT_ANALYZER_SYMBOLS_H
#define CT_ANALYZER_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "cumtrace/format.h"

struct ct_symtab;

/* Frames of one stack after inline expansion, at most (a report's buffer). */
#define CT_FRAMES_MAX (4 * CT_STACK_MAX)

/* One resolved frame; strings belong to the symtab (valid until freed). */
struct ct_frame {
	uint64_t ip;
	const char *function; /* demangled; NULL when unknown */
	const char *file;     /* source file as in the debug info, NULL when unknown */
	const char *file_short; /* file relative to its compilation directory when under it */
	unsigned line;	      /* 0 when unknown */
	const char *module;   /* path as recorded, NULL when no module covers ip */
	const char *module_name; /* basename of module */
	uint64_t offset;      /* ip - module base */
	const char *build_id; /* hex, NULL when none recorded */
	int build_id_mismatch; /* file on disk has another build id: symbols untrusted */
	int module_missing;    /* the module file could not be opened */
	int python;	       /* a Python frame (analyzer/pystack.c): file, line, function only */
	int inlined;	       /* inlined into the next frame (same ip): not a call of its own */
};

struct ct_symtab *ct_symtab_new(void);
void ct_symtab_free(struct ct_symtab *st);

/* Path used for a module recorded with an empty path (the main program). */
void ct_symtab_set_exe(struct ct_symtab *st, const char *path);
/* Directory that relative module paths are relative to (the process's cwd). */
void ct_symtab_set_cwd(struct ct_symtab *st, const char *cwd);
enum ct_symbolize {
	CT_SYMBOLIZE_OFF = 0,	   /* module+offset only (--no-symbols) */
	CT_SYMBOLIZE_ALL = 1,	   /* embedded symbols, else the files on disk (default) */
	CT_SYMBOLIZE_EMBEDDED = 2, /* embedded symbols only: never opens a file */
};
void ct_symtab_set_symbolize(struct ct_symtab *st, int mode);

void ct_symtab_add_module(struct ct_symtab *st, uint64_t base, uint64_t lo, uint64_t hi,
			  const uint8_t *build_id, size_t build_id_len, const char *path,
			  size_t path_len);
/* Later records with an id already seen are ignored; id 0 is ignored. */
void ct_symtab_add_stack(struct ct_symtab *st, uint32_t id, unsigned depth, const uint64_t *ips);

/*
 * Embedded symbols of one CT_REC_SYMBOLS record, checked as the reader
 * checks them (reader.h). Addresses already embedded are ignored.
 */
void ct_symtab_add_symbols(struct ct_symtab *st, const struct ct_rec_symbols *s,
			   const struct ct_sym_addr *addrs, const struct ct_sym_frame *frames,
			   const char *strings);
/* Addresses with embedded symbols. */
size_t ct_symtab_embedded_count(const struct ct_symtab *st);

/* 1 when stack id was recorded. */
int ct_symtab_has_stack(const struct ct_symtab *st, uint32_t id);
size_t ct_symtab_stack_count(const struct ct_symtab *st);
size_t ct_symtab_module_count(const struct ct_symtab *st);

/*
 * Resolve stack id into at most max frames (innermost first; an ip in
 * inlined code gives several). Frames of modules whose basename starts with
 * "libcumtrace" are dropped. Returns the number of frames written; 0 for an
 * unknown id.
 */
size_t ct_symtab_resolve(struct ct_symtab *st, uint32_t id, struct ct_frame *out, size_t max);

/*
 * visit is called once for every distinct code address of the stacks, in
 * (module, offset) order, with the address's frames (n of them, at most
 * CT_SYM_FRAMES_MAX). module is the index of its CT_REC_MODULE and offset is
 * ip - 1 - base (format.h, CT_REC_SYMBOLS). n is 0 when nothing is known
 * about the address; an address outside every module comes last, with module
 * UINT32_MAX, offset ip - 1 and no frames. Dropped modules are left out.
 */
typedef void (*ct_symtab_visit_fn)(void *ctx, uint32_t module, uint64_t offset,
				   const struct ct_frame *frames, size_t n);
void ct_symtab_visit_addresses(struct ct_symtab *st, ct_symtab_visit_fn visit, void *ctx);

/* Demangle a C++ name via __cxa_demangle found at run time; NULL if not. */
char *ct_demangle(const char *name);

#endif
