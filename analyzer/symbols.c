#define _GNU_SOURCE 1 /* dlvsym */
#include "symbols.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

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

struct stack {
	uint32_t id;
	uint32_t depth;
	uint32_t gen; /* modules seen when the stack was read */
	size_t off;   /* into ips */
};

struct symc {
	uint64_t addr;
	uint32_t mod;
	unsigned line;
	char *function;
	char *file;
	const char *file_short; /* inside file */
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
	struct symc *cache;
	size_t ncache, capcache;
	struct ct_imap cmap;
	char *exe;
	char *cwd;
	int symbolize;
};

struct ct_symtab *ct_symtab_new(void)
{
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
	for (size_t i = 0; i < st->ncache; i++) {
		free(st->cache[i].function);
		free(st->cache[i].file);
	}
	free(st->mods);
	free(st->sorted);
	free(st->prefmax);
	free(st->stacks);
	free(st->ips);
	free(st->cache);
	free(st->exe);
	free(st->cwd);
	ct_imap_free(&st->stmap);
	ct_imap_free(&st->cmap);
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

void ct_symtab_set_symbolize(struct ct_symtab *st, int on)
{
	st->symbolize = on;
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

static char *debuginfo_path_none = NULL;

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path_none,
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

struct ckey {
	uint64_t addr;
	uint32_t mod;
};

static int cache_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_symtab *st = ctx;
	const struct ckey *k = key;
	return st->cache[idx].addr == k->addr && st->cache[idx].mod == k->mod;
}

static const struct symc *lookup_symbol(struct ct_symtab *st, uint32_t mi, uint64_t addr)
{
	struct ckey k = {addr, mi};
	uint64_t h = ct_hash2(addr, mi);
	uint32_t ci = ct_imap_get(&st->cmap, h, cache_eq, st, &k);
	if (ci != CT_IMAP_NONE)
		return &st->cache[ci];
	struct module *m = &st->mods[mi];
	struct symc c = {.addr = addr, .mod = mi};
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(m->dwmod, addr, &off, &sym, NULL, NULL, NULL);
	if (name && name[0]) {
		/* drop a symbol version: "__libc_start_main@@GLIBC_2.34" */
		const char *at = strchr(name, '@');
		char *plain = ct_xstrndup(name, at && at != name ? (size_t)(at - name) : strlen(name));
		c.function = ct_demangle(plain);
		if (c.function)
			free(plain);
		else
			c.function = plain;
	}
	Dwfl_Line *line = dwfl_module_getsrc(m->dwmod, addr);
	if (line) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
		if (file && file[0]) {
			c.file = ct_xstrdup(file);
			c.line = lineno > 0 ? (unsigned)lineno : 0;
			c.file_short = c.file;
			const char *comp = dwfl_line_comp_dir(line);
			size_t cl = comp ? strlen(comp) : 0;
			if (cl && strncmp(c.file, comp, cl) == 0 && c.file[cl] == '/' && c.file[cl + 1])
				c.file_short = c.file + cl + 1;
		}
	}
	st->cache = ct_xgrow(st->cache, &st->capcache, st->ncache + 1, sizeof *st->cache);
	st->cache[st->ncache] = c;
	ct_imap_put(&st->cmap, h, (uint32_t)st->ncache);
	return &st->cache[st->ncache++];
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
		size_t mi = find_module(st, addr, s.gen);
		if (mi != SIZE_MAX) {
			struct module *m = &st->mods[mi];
			if (m->skip)
				continue;
			f.module = m->path;
			f.module_name = m->name;
			f.offset = ip - m->base;
			f.build_id = m->build_id_hex;
			if (st->symbolize) {
				if (m->state == MOD_UNOPENED)
					open_module(st, m);
				if (m->state == MOD_OK) {
					const struct symc *c = lookup_symbol(st, (uint32_t)mi, addr);
					f.function = c->function;
					f.file = c->file;
					f.file_short = c->file_short;
					f.line = c->line;
				}
				f.build_id_mismatch = m->state == MOD_MISMATCH;
				f.module_missing = m->state == MOD_MISSING;
			}
		}
		out[n++] = f;
	}
	return n;
}
