#define _GNU_SOURCE 1 /* dlvsym */
#include "read/symbols.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

enum mod_state { MOD_UNOPENED, MOD_OK, MOD_MISSING, MOD_MISMATCH };

struct module {
	uint64_t base, lo, hi;
	uint8_t *build_id;
	size_t build_id_len;
	char *build_id_hex;
	char *path;
	const char *name; /* basename, inside path */
	int skip;	  /* libcumtrace*: frames dropped */
	int state;	  /* enum mod_state */
	Dwfl *dwfl;
	Dwfl_Module *dwmod;
};

/* 16 bytes: one per distinct stack of the dump */
struct stack {
	uint32_t id;
	uint32_t gen;	    /* modules seen when the stack was read */
	uint64_t off : 48;  /* into ips */
	uint64_t depth : 16; /* <= CT_STACK_MAX */
};

/* One frame of an address; strings are owned by the symtab. */
struct symframe {
	const char *function, *file, *file_short;
	unsigned line;
};

/* The frames of one address: frames[first .. first + count), count 0 = nothing known. */
struct symaddr {
	uint64_t offset; /* address looked up (ip - 1) - module base */
	uint32_t mod;
	uint32_t first, count;
};

/* Addresses keyed by (module, offset). */
struct addrtab {
	struct symaddr *v;
	size_t n, cap;
	struct ct_imap map;
};

struct ct_symtab {
	struct module *mods;
	size_t nmods, capmods;
	uint32_t *sorted;  /* module indices sorted by lo */
	uint64_t *prefmax; /* prefix max of hi over sorted */
	size_t nsorted;	   /* == nmods when the index is current */
	struct stack *stacks;
	size_t nstacks, capstacks;
	struct ct_imap stmap;
	uint64_t *ips;
	size_t nips, capips;
	struct symframe *frames; /* of both tables below */
	size_t nframes, capframes;
	struct addrtab embedded; /* CT_REC_SYMBOLS */
	struct addrtab local;	 /* from the files on disk, cached */
	char **owned;		 /* every string (block) the frames point into */
	size_t nowned, capowned;
	char *exe;
	char *cwd;
	int symbolize; /* enum ct_symbolize */
};

/*
 * Where libdw looks for a module's separate debug file (elfutils' syntax,
 * ":.debug:/usr/lib/debug" when NULL): CUMTRACE_REPORT_DEBUGINFO_PATH when
 * set. A system's debug packages (libc6-dbg: 10 MB of compressed DWARF) cost
 * every report that meets one of their frames; "-" leaves them out.
 */
static char *debuginfo_path;

struct ct_symtab *ct_symtab_new(void)
{
	debuginfo_path = getenv("CUMTRACE_REPORT_DEBUGINFO_PATH");
	struct ct_symtab *st = ct_xcalloc(1, sizeof *st);
	st->symbolize = 1;
	return st;
}

void ct_symtab_free(struct ct_symtab *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->nmods; i++) {
		struct module *m = &st->mods[i];
		if (m->dwfl)
			dwfl_end(m->dwfl);
		free(m->build_id);
		free(m->build_id_hex);
		free(m->path);
	}
	for (size_t i = 0; i < st->nowned; i++)
		free(st->owned[i]);
	free(st->owned);
	free(st->mods);
	free(st->sorted);
	free(st->prefmax);
	free(st->stacks);
	free(st->ips);
	free(st->frames);
	free(st->embedded.v);
	free(st->local.v);
	free(st->exe);
	free(st->cwd);
	ct_imap_free(&st->stmap);
	ct_imap_free(&st->embedded.map);
	ct_imap_free(&st->local.map);
	free(st);
}

void ct_symtab_set_exe(struct ct_symtab *st, const char *path)
{
	free(st->exe);
	st->exe = path ? ct_xstrdup(path) : NULL;
}

void ct_symtab_set_cwd(struct ct_symtab *st, const char *cwd)
{
	free(st->cwd);
	st->cwd = cwd && cwd[0] == '/' ? ct_xstrdup(cwd) : NULL;
}

void ct_symtab_set_symbolize(struct ct_symtab *st, int mode)
{
	st->symbolize = mode;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

void ct_symtab_add_module(struct ct_symtab *st, uint64_t base, uint64_t lo, uint64_t hi,
			  const uint8_t *build_id, size_t build_id_len, const char *path,
			  size_t path_len)
{
	st->mods = ct_xgrow(st->mods, &st->capmods, st->nmods + 1, sizeof *st->mods);
	struct module *m = &st->mods[st->nmods++];
	memset(m, 0, sizeof *m);
	m->base = base;
	m->lo = lo;
	m->hi = hi;
	/* the path is NUL-terminated in the record; stop at the first NUL anyway */
	const char *nul = memchr(path, 0, path_len);
	size_t n = nul ? (size_t)(nul - path) : path_len;
	if (n == 0 && st->exe)
		m->path = ct_xstrdup(st->exe);
	else
		m->path = ct_xstrndup(path, n);
	m->name = base_name(m->path);
	m->skip = strncmp(m->name, "libcumtrace", 11) == 0;
	if (build_id_len) {
		m->build_id = ct_xmalloc(build_id_len);
		memcpy(m->build_id, build_id, build_id_len);
		m->build_id_len = build_id_len;
		m->build_id_hex = ct_xmalloc(build_id_len * 2 + 1);
		for (size_t i = 0; i < build_id_len; i++)
			snprintf(m->build_id_hex + 2 * i, 3, "%02x", build_id[i]);
	}
	st->nsorted = 0; /* index stale */
}

static int stack_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_symtab *st = ctx;
	return st->stacks[idx].id == *(const uint32_t *)key;
}

static uint32_t find_stack(const struct ct_symtab *st, uint32_t id)
{
	return ct_imap_get(&st->stmap, ct_mix64(id), stack_eq, st, &id);
}

void ct_symtab_add_stack(struct ct_symtab *st, uint32_t id, unsigned depth, const uint64_t *ips)
{
	if (id == 0 || find_stack(st, id) != CT_IMAP_NONE)
		return;
	st->stacks = ct_xgrow(st->stacks, &st->capstacks, st->nstacks + 1, sizeof *st->stacks);
	st->ips = ct_xgrow(st->ips, &st->capips, st->nips + depth, sizeof *st->ips);
	struct stack *s = &st->stacks[st->nstacks];
	s->id = id;
	s->depth = depth;
	s->gen = (uint32_t)st->nmods;
	s->off = st->nips;
	if (depth)
		memcpy(st->ips + st->nips, ips, depth * sizeof *ips);
	st->nips += depth;
	ct_imap_put(&st->stmap, ct_mix64(id), (uint32_t)st->nstacks);
	st->nstacks++;
}

int ct_symtab_has_stack(const struct ct_symtab *st, uint32_t id)
{
	return find_stack(st, id) != CT_IMAP_NONE;
}

size_t ct_symtab_stack_count(const struct ct_symtab *st)
{
	return st->nstacks;
}

size_t ct_symtab_module_count(const struct ct_symtab *st)
{
	return st->nmods;
}

/* ---- module lookup ------------------------------------------------------------ */

static const struct ct_symtab *sort_ctx;

static int cmp_mod(const void *a, const void *b)
{
	const struct module *ma = &sort_ctx->mods[*(const uint32_t *)a];
	const struct module *mb = &sort_ctx->mods[*(const uint32_t *)b];
	if (ma->lo != mb->lo)
		return ma->lo < mb->lo ? -1 : 1;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	return ia < ib ? -1 : ia > ib;
}

static void build_index(struct ct_symtab *st)
{
	free(st->sorted);
	free(st->prefmax);
	st->sorted = ct_xcalloc(st->nmods, sizeof *st->sorted);
	st->prefmax = ct_xcalloc(st->nmods, sizeof *st->prefmax);
	for (size_t i = 0; i < st->nmods; i++)
		st->sorted[i] = (uint32_t)i;
	sort_ctx = st;
	qsort(st->sorted, st->nmods, sizeof *st->sorted, cmp_mod);
	sort_ctx = NULL;
	uint64_t mx = 0;
	for (size_t i = 0; i < st->nmods; i++) {
		uint64_t hi = st->mods[st->sorted[i]].hi;
		if (hi > mx)
			mx = hi;
		st->prefmax[i] = mx;
	}
	st->nsorted = st->nmods;
}

/*
 * The module covering addr: the latest one recorded before the stack (index
 * < gen), else the latest one at all. SIZE_MAX when none.
 */
static size_t find_module(struct ct_symtab *st, uint64_t addr, uint32_t gen)
{
	if (!st->nmods)
		return SIZE_MAX;
	if (st->nsorted != st->nmods)
		build_index(st);
	/* last sorted position with lo <= addr */
	size_t lo = 0, hi = st->nmods;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (st->mods[st->sorted[mid]].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t best_before = SIZE_MAX, best_any = SIZE_MAX;
	for (size_t j = lo; j-- > 0;) {
		if (st->prefmax[j] <= addr)
			break;
		uint32_t mi = st->sorted[j];
		const struct module *m = &st->mods[mi];
		if (m->lo <= addr && addr < m->hi) {
			if (mi < gen && (best_before == SIZE_MAX || mi > best_before))
				best_before = mi;
			if (best_any == SIZE_MAX || mi > best_any)
				best_any = mi;
		}
	}
	return best_before != SIZE_MAX ? best_before : best_any;
}

/* ---- libdw --------------------------------------------------------------------- */

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static void open_module(const struct ct_symtab *st, struct module *m)
{
	m->state = MOD_MISSING;
	/* "linux-vdso.so.1", "[vdso]": nothing on disk */
	if (!m->path[0] || m->path[0] == '[' || !strchr(m->path, '/'))
		return;
	char *file = m->path;
	if (m->path[0] != '/' && st->cwd) {
		size_t n = strlen(st->cwd) + strlen(m->path) + 2;
		file = ct_xmalloc(n);
		snprintf(file, n, "%s/%s", st->cwd, m->path);
	}
	m->dwfl = dwfl_begin(&offline_callbacks);
	if (m->dwfl) {
		dwfl_report_begin(m->dwfl);
		m->dwmod = dwfl_report_elf(m->dwfl, m->name, file, -1, m->base, false);
		dwfl_report_end(m->dwfl, NULL, NULL);
	}
	if (file != m->path)
		free(file);
	if (!m->dwfl)
		return;
	if (!m->dwmod) {
		dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return;
	}
	if (m->build_id_len) {
		const unsigned char *bits = NULL;
		GElf_Addr vaddr;
		int n = dwfl_module_build_id(m->dwmod, &bits, &vaddr);
		if (n <= 0 || (size_t)n != m->build_id_len || memcmp(bits, m->build_id, (size_t)n)) {
			m->state = MOD_MISMATCH;
			return;
		}
	}
	m->state = MOD_OK;
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

char *ct_demangle(const char *name)
{
	static int tried;
	static demangle_fn fn;
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	if (!tried) {
		tried = 1;
		/*
		 * dlvsym, not dlsym: the shim overrides dlsym, and test binaries
		 * link the shim's objects next to the analyzer's.
		 */
		void *p = dlvsym(RTLD_DEFAULT, "__cxa_demangle", "CXXABI_1.3");
		if (!p) {
			void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
			if (h)
				p = dlvsym(h, "__cxa_demangle", "CXXABI_1.3");
		}
		if (p)
			memcpy(&fn, &p, sizeof fn);
	}
	if (!fn)
		return NULL;
	int status = -1;
	char *out = fn(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* ---- frames of an address ----------------------------------------------------------- */

/* s (malloc'ed or NULL) now belongs to the symtab. */
static const char *keep(struct ct_symtab *st, char *s)
{
	if (!s)
		return NULL;
	st->owned = ct_xgrow(st->owned, &st->capowned, st->nowned + 1, sizeof *st->owned);
	st->owned[st->nowned++] = s;
	return s;
}

static const char *keep_copy(struct ct_symtab *st, const char *s)
{
	return s && s[0] ? keep(st, ct_xstrdup(s)) : NULL;
}

static int addr_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct symaddr *a = &((const struct addrtab *)ctx)->v[idx];
	const struct symaddr *k = key;
	return a->offset == k->offset && a->mod == k->mod;
}

static const struct symaddr *addrtab_find(const struct addrtab *t, uint32_t mod, uint64_t offset)
{
	struct symaddr k = {.offset = offset, .mod = mod};
	uint32_t i = ct_imap_get(&t->map, ct_hash2(offset, mod), addr_eq, t, &k);
	return i == CT_IMAP_NONE ? NULL : &t->v[i];
}

/* Add the last count frames of st->frames as the frames of (mod, offset). */
static const struct symaddr *addrtab_add(struct addrtab *t, struct ct_symtab *st, uint32_t mod,
					 uint64_t offset, size_t count)
{
	t->v = ct_xgrow(t->v, &t->cap, t->n + 1, sizeof *t->v);
	struct symaddr *a = &t->v[t->n];
	a->offset = offset;
	a->mod = mod;
	a->first = (uint32_t)(st->nframes - count);
	a->count = (uint32_t)count;
	ct_imap_put(&t->map, ct_hash2(offset, mod), (uint32_t)t->n++);
	return a;
}

static void push_frame(struct ct_symtab *st, const struct symframe *f)
{
	st->frames = ct_xgrow(st->frames, &st->capframes, st->nframes + 1, sizeof *st->frames);
	st->frames[st->nframes++] = *f;
}

/* The string at off of a NUL-terminated table of len bytes; NULL if none or empty. */
static const char *table_string(const char *table, uint32_t len, uint32_t off)
{
	return off < len && table[off] ? table + off : NULL;
}

void ct_symtab_add_symbols(struct ct_symtab *st, const struct ct_rec_symbols *s,
			   const struct ct_sym_addr *addrs, const struct ct_sym_frame *frames,
			   const char *strings)
{
	/* one copy of the string table, NUL-terminated even if the caller's is not */
	char *block = ct_xmalloc((size_t)s->strings_len + 1);
	memcpy(block, strings, s->strings_len);
	block[s->strings_len] = 0;
	keep(st, block);
	uint64_t fi = 0;
	for (uint32_t i = 0; i < s->naddrs; i++) {
		const struct ct_sym_addr *a = &addrs[i];
		/* indices are 32-bit: a dump with more symbols than that keeps the first */
		if (fi + a->nframes > s->nframes || st->nframes + a->nframes >= UINT32_MAX ||
		    st->embedded.n >= UINT32_MAX - 1)
			break;
		if (a->nframes && !addrtab_find(&st->embedded, a->module, a->offset)) {
			for (uint32_t k = 0; k < a->nframes; k++) {
				const struct ct_sym_frame *sf = &frames[fi + k];
				struct symframe f = {
					.function = table_string(block, s->strings_len, sf->function),
					.file = table_string(block, s->strings_len, sf->file),
					.file_short = table_string(block, s->strings_len, sf->file_short),
					.line = sf->line};
				push_frame(st, &f);
			}
			addrtab_add(&st->embedded, st, a->module, a->offset, a->nframes);
		}
		fi += a->nframes;
	}
}

size_t ct_symtab_embedded_count(const struct ct_symtab *st)
{
	return st->embedded.n;
}

/* file relative to the compilation directory comp when it lies below it */
static const char *short_name(const char *file, const char *comp)
{
	size_t cl = comp ? strlen(comp) : 0;
	if (file && cl && strncmp(file, comp, cl) == 0 && file[cl] == '/' && file[cl + 1])
		return file + cl + 1;
	return file;
}

/* A subprogram's or inlined subroutine's name: its linkage name demangled, else its name. */
static char *die_function(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!link)
		link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	char *d = ct_demangle(link);
	if (d)
		return d;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	if (name && name[0])
		return ct_xstrdup(name);
	return link && link[0] ? ct_xstrdup(link) : NULL;
}

/*
 * The inline chain at addr, as eu-addr2line -i finds it: from the innermost
 * inlined subroutine (at file:line, where addr's code comes from) out to the
 * function holding the code, each frame after the first at the call site
 * (DW_AT_call_file, DW_AT_call_line) of the one before. Returns the number
 * of frames written, 0 when addr is not in inlined code; *whole is 1 when the
 * last frame is the holding function (not cut by max).
 */
static size_t inline_chain(struct ct_symtab *st, Dwfl_Module *mod, uint64_t addr,
			   const char *file, unsigned line, struct symframe *out, size_t max,
			   int *whole)
{
	*whole = 0;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(mod, addr, &bias);
	if (!cudie)
		return 0;
	Dwarf_Die *scopes = NULL;
	int ns = dwarf_getscopes(cudie, addr - bias, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	/*
	 * dwarf_getscopes continues from an inlined subroutine into its abstract
	 * origin's scopes; the physical nesting (where the code was inlined) is
	 * that of the innermost scope's DIE.
	 */
	Dwarf_Die inner = scopes[0];
	free(scopes);
	scopes = NULL;
	ns = dwarf_getscopes_die(&inner, &scopes);
	int inlined = 0;
	for (int i = 0; i < ns; i++)
		inlined |= dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine;
	if (!inlined) {
		free(scopes);
		return 0;
	}
	Dwarf_Attribute a;
	const char *comp = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &a));
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		files = NULL;
	size_t n = 0;
	for (int i = 0; i < ns && n < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
		    tag != DW_TAG_entry_point)
			continue;
		struct symframe *f = &out[n++];
		f->function = keep(st, die_function(&scopes[i]));
		f->file = keep_copy(st, file);
		f->file_short = short_name(f->file, comp);
		f->line = line;
		if (tag != DW_TAG_inlined_subroutine) {
			*whole = 1;
			break;
		}
		Dwarf_Word v;
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &a), &v) == 0)
			file = dwarf_filesrc(files, v, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &a), &v) == 0)
			line = v <= UINT32_MAX ? (unsigned)v : 0;
	}
	free(scopes);
	return n;
}

/* The function symbol holding addr, without its version, demangled; NULL if none. */
static char *symbol_name(Dwfl_Module *mod, uint64_t addr)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (!name || !name[0])
		return NULL;
	/* drop a symbol version: "__libc_start_main@@GLIBC_2.34" */
	const char *at = strchr(name, '@');
	char *plain = ct_xstrndup(name, at && at != name ? (size_t)(at - name) : strlen(name));
	char *d = ct_demangle(plain);
	if (!d)
		return plain;
	free(plain);
	return d;
}

/* Frames of addr (absolute, ip - 1) in module mi from its file on disk (open, MOD_OK). */
static const struct symaddr *lookup_local(struct ct_symtab *st, uint32_t mi, uint64_t addr)
{
	struct module *m = &st->mods[mi];
	const struct symaddr *c = addrtab_find(&st->local, mi, addr - m->base);
	if (c)
		return c;
	const char *function = keep(st, symbol_name(m->dwmod, addr));
	const char *file = NULL, *comp = NULL;
	unsigned line = 0;
	Dwfl_Line *dl = dwfl_module_getsrc(m->dwmod, addr);
	if (dl) {
		int lineno = 0;
		const char *f = dwfl_lineinfo(dl, NULL, &lineno, NULL, NULL, NULL);
		if (f && f[0]) {
			file = f;
			line = lineno > 0 ? (unsigned)lineno : 0;
			comp = dwfl_line_comp_dir(dl);
		}
	}
	struct symframe fr[CT_SYM_FRAMES_MAX];
	int whole;
	size_t n = inline_chain(st, m->dwmod, addr, file, line, fr, CT_SYM_FRAMES_MAX, &whole);
	if (n) {
		if (whole && function) /* the symbol table's name, like frames without inlining */
			fr[n - 1].function = function;
	} else if (function || file) {
		fr[0].function = function;
		fr[0].file = keep_copy(st, file);
		fr[0].file_short = short_name(fr[0].file, comp);
		fr[0].line = file ? line : 0;
		n = 1;
	}
	for (size_t i = 0; i < n; i++)
		push_frame(st, &fr[i]);
	return addrtab_add(&st->local, st, mi, addr - m->base, n);
}

/*
 * Frames of addr (ip - 1) in module mi: the embedded ones if any (*embedded
 * = 1), else those of the file on disk when allowed; NULL when none.
 */
static const struct symaddr *frames_at(struct ct_symtab *st, size_t mi, uint64_t addr,
				       int *embedded)
{
	struct module *m = &st->mods[mi];
	const struct symaddr *e = addrtab_find(&st->embedded, (uint32_t)mi, addr - m->base);
	*embedded = e != NULL;
	if (e || st->symbolize != CT_SYMBOLIZE_ALL)
		return e;
	if (m->state == MOD_UNOPENED)
		open_module(st, m);
	return m->state == MOD_OK ? lookup_local(st, (uint32_t)mi, addr) : NULL;
}

/*
 * The frames of return address ip (looked up at ip - 1) in module mi
 * (SIZE_MAX: none), at most max: one unless ip is in inlined code.
 */
static size_t ip_frames(struct ct_symtab *st, uint64_t ip, size_t mi, struct ct_frame *out,
			size_t max)
{
	/*
	 * Look up ip - 1 for every frame: format.h says frames after the
	 * first are return addresses, and in practice the first is one too
	 * (the shim cuts its own frames, so frame 0 is where the program
	 * called the CUDA API). ip - 1 lies inside the call instruction, so
	 * the line is the call's, not the next statement's.
	 */
	uint64_t addr = ip > 0 ? ip - 1 : ip;
	struct ct_frame f;
	memset(&f, 0, sizeof f);
	f.ip = ip;
	f.offset = ip;
	if (!max)
		return 0;
	if (mi == SIZE_MAX) {
		out[0] = f;
		return 1;
	}
	struct module *m = &st->mods[mi];
	f.module = m->path;
	f.module_name = m->name;
	f.offset = ip - m->base;
	f.build_id = m->build_id_hex;
	const struct symaddr *sa = NULL;
	int embedded = 0;
	if (st->symbolize != CT_SYMBOLIZE_OFF) {
		sa = frames_at(st, mi, addr, &embedded);
		if (!embedded) {
			f.build_id_mismatch = m->state == MOD_MISMATCH;
			f.module_missing = m->state == MOD_MISSING;
		}
	}
	if (!sa || !sa->count) {
		out[0] = f;
		return 1;
	}
	size_t n = 0;
	for (uint32_t k = 0; k < sa->count && n < max; k++) {
		const struct symframe *sf = &st->frames[sa->first + k];
		out[n] = f;
		out[n].function = sf->function;
		out[n].file = sf->file;
		out[n].file_short = sf->file_short ? sf->file_short : sf->file;
		out[n].line = sf->line;
		out[n].inlined = k + 1 < sa->count;
		n++;
	}
	return n;
}

size_t ct_symtab_resolve(struct ct_symtab *st, uint32_t id, struct ct_frame *out, size_t max)
{
	uint32_t si = find_stack(st, id);
	if (si == CT_IMAP_NONE)
		return 0;
	const struct stack s = st->stacks[si];
	size_t n = 0;
	for (uint32_t i = 0; i < s.depth && n < max; i++) {
		uint64_t ip = st->ips[s.off + i];
		size_t mi = find_module(st, ip > 0 ? ip - 1 : ip, s.gen);
		if (mi != SIZE_MAX && st->mods[mi].skip)
			continue;
		n += ip_frames(st, ip, mi, out + n, max - n);
	}
	return n;
}

/* ---- every address, for CT_REC_SYMBOLS ---------------------------------------------- */

struct addrkey {
	uint32_t mod; /* UINT32_MAX: no module */
	uint64_t offset;
};

static int cmp_addrkey(const void *a, const void *b)
{
	const struct addrkey *x = a, *y = b;
	if (x->mod != y->mod)
		return x->mod < y->mod ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

void ct_symtab_visit_addresses(struct ct_symtab *st, ct_symtab_visit_fn visit, void *ctx)
{
	struct addrkey *keys = ct_xmalloc((st->nips ? st->nips : 1) * sizeof *keys);
	size_t nkeys = 0;
	for (size_t si = 0; si < st->nstacks; si++) {
		const struct stack *s = &st->stacks[si];
		for (uint32_t i = 0; i < s->depth; i++) {
			uint64_t ip = st->ips[s->off + i];
			uint64_t addr = ip > 0 ? ip - 1 : ip;
			size_t mi = find_module(st, addr, s->gen);
			if (mi == SIZE_MAX)
				keys[nkeys++] = (struct addrkey){UINT32_MAX, addr};
			else if (!st->mods[mi].skip)
				keys[nkeys++] = (struct addrkey){(uint32_t)mi, addr - st->mods[mi].base};
		}
	}
	qsort(keys, nkeys, sizeof *keys, cmp_addrkey);
	struct ct_frame fr[CT_SYM_FRAMES_MAX];
	for (size_t i = 0; i < nkeys; i++) {
		if (i && !cmp_addrkey(&keys[i - 1], &keys[i]))
			continue;
		if (keys[i].mod == UINT32_MAX) {
			visit(ctx, UINT32_MAX, keys[i].offset, NULL, 0);
			continue;
		}
		uint64_t ip = keys[i].offset + st->mods[keys[i].mod].base + 1;
		size_t n = ip_frames(st, ip, keys[i].mod, fr, CT_SYM_FRAMES_MAX);
		int known = 0;
		for (size_t k = 0; k < n; k++)
			known |= fr[k].function || fr[k].file;
		visit(ctx, keys[i].mod, keys[i].offset, fr, known ? n : 0);
	}
	free(keys);
}
