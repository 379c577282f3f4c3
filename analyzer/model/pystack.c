/* Python frames: interned strings and stacks, combined ids, merged views. */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "model/model.h"
#include "model/pystack.h"

/*
 * Strings and stacks are kept in the order they came, found by id through a
 * hash index: ids are the dump's, so an array indexed by them would let one
 * record with a large id make the analyzer allocate in proportion to the id.
 */
struct ct_pystring {
	uint32_t id;
	char *s;
};

struct ct_pystack {
	uint32_t id;
	unsigned depth;
	struct ct_pyframe *frames;
};

struct ct_combo {
	uint32_t native_id, py_id;
};

struct ct_pytab {
	struct ct_pystring *strings;
	size_t nstrings, capstrings;
	struct ct_imap stringmap;
	struct ct_pystack *stacks;
	size_t nstacks, capstacks;
	struct ct_imap stackmap;
	struct ct_combo *combos; /* combined id = CT_PY_COMBINED | (index + 1) */
	size_t ncombos, capcombos;
	struct ct_imap combomap;
};

static int ct_frames_mode_;

void ct_frames_set_mode(int mode)
{
	ct_frames_mode_ = mode;
}

struct ct_pytab *ct_pytab_new(void)
{
	return ct_xcalloc(1, sizeof(struct ct_pytab));
}

void ct_pytab_free(struct ct_pytab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i].s);
	for (size_t i = 0; i < t->nstacks; i++)
		free(t->stacks[i].frames);
	free(t->strings);
	free(t->stacks);
	free(t->combos);
	ct_imap_free(&t->stringmap);
	ct_imap_free(&t->stackmap);
	ct_imap_free(&t->combomap);
	free(t);
}

static int string_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct ct_pytab *)ctx)->strings[idx].id == *(const uint32_t *)key;
}

static int stack_eq(const void *ctx, uint32_t idx, const void *key)
{
	return ((const struct ct_pytab *)ctx)->stacks[idx].id == *(const uint32_t *)key;
}

/* The string of id, NULL when none came. */
static const char *py_string(const struct ct_pytab *t, uint32_t id)
{
	uint32_t i = ct_imap_get(&t->stringmap, ct_mix64(id), string_eq, t, &id);
	return i == CT_IMAP_NONE ? NULL : t->strings[i].s;
}

/* The stack of id, NULL when none came. */
static const struct ct_pystack *py_stack(const struct ct_pytab *t, uint32_t id)
{
	uint32_t i = ct_imap_get(&t->stackmap, ct_mix64(id), stack_eq, t, &id);
	return i == CT_IMAP_NONE ? NULL : &t->stacks[i];
}

#define CT_PY_ID_MAX (1u << 24) /* ids beyond this are taken as corrupt and ignored */

void ct_pytab_add_string(struct ct_pytab *t, uint32_t id, const char *s, size_t len)
{
	if (!id || id > CT_PY_ID_MAX || py_string(t, id))
		return;
	t->strings = ct_xgrow(t->strings, &t->capstrings, t->nstrings + 1, sizeof *t->strings);
	size_t n = len ? strnlen(s, len) : 0;
	t->strings[t->nstrings] = (struct ct_pystring){id, ct_xstrndup(s, n)};
	ct_imap_put(&t->stringmap, ct_mix64(id), (uint32_t)t->nstrings++);
}

void ct_pytab_add_stack(struct ct_pytab *t, uint32_t id, unsigned depth,
			const struct ct_pyframe *frames)
{
	if (!id || id > CT_PY_ID_MAX || !depth || py_stack(t, id))
		return;
	t->stacks = ct_xgrow(t->stacks, &t->capstacks, t->nstacks + 1, sizeof *t->stacks);
	struct ct_pystack *st = &t->stacks[t->nstacks];
	st->id = id;
	st->depth = depth;
	st->frames = ct_xmalloc(depth * sizeof *frames);
	memcpy(st->frames, frames, depth * sizeof *frames);
	ct_imap_put(&t->stackmap, ct_mix64(id), (uint32_t)t->nstacks++);
}

static int combo_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct ct_combo *a = &((const struct ct_pytab *)ctx)->combos[idx];
	const struct ct_combo *b = key;
	return a->native_id == b->native_id && a->py_id == b->py_id;
}

uint32_t ct_pytab_combine(struct ct_pytab *t, uint32_t native_id, uint32_t py_id)
{
	if (!py_id)
		return native_id;
	struct ct_combo key = {native_id, py_id};
	uint64_t h = ct_hash2(native_id, py_id);
	uint32_t idx = ct_imap_get(&t->combomap, h, combo_eq, t, &key);
	if (idx == CT_IMAP_NONE) {
		if (t->ncombos >= CT_PY_COMBINED - 2)
			return native_id;
		t->combos = ct_xgrow(t->combos, &t->capcombos, t->ncombos + 1, sizeof *t->combos);
		idx = (uint32_t)t->ncombos++;
		t->combos[idx] = key;
		ct_imap_put(&t->combomap, h, idx);
	}
	return CT_PY_COMBINED | (idx + 1);
}

static const struct ct_combo *combo_of(const struct ct_pytab *t, uint32_t id)
{
	if (!t || !(id & CT_PY_COMBINED))
		return NULL;
	uint32_t i = (id & ~CT_PY_COMBINED) - 1;
	return i < t->ncombos ? &t->combos[i] : NULL;
}

int ct_frames_has(struct ct_model *m, uint32_t id)
{
	const struct ct_combo *c = combo_of(m->py, id);
	if (!c)
		return ct_symtab_has_stack(m->syms, id);
	return py_stack(m->py, c->py_id) || (c->native_id && ct_symtab_has_stack(m->syms, c->native_id));
}

/* Frames of the interpreter itself: libpython, or a python executable's Py* code. */
static int is_interp(const struct ct_frame *f)
{
	const char *mod = f->module_name;
	if (!mod)
		return 0;
	if (!strncmp(mod, "libpython", 9))
		return 1;
	if (!strncmp(mod, "python", 6) && f->function &&
	    (!strncmp(f->function, "_Py", 3) || !strncmp(f->function, "Py", 2)))
		return 1;
	return 0;
}

static size_t py_frames(const struct ct_pytab *t, uint32_t py_id, struct ct_frame *out,
			size_t max)
{
	const struct ct_pystack *s = py_stack(t, py_id);
	if (!s)
		return 0;
	size_t n = 0;
	for (unsigned i = 0; i < s->depth && n < max; i++) {
		const struct ct_pyframe *pf = &s->frames[i];
		struct ct_frame f;
		memset(&f, 0, sizeof f);
		f.python = 1;
		f.file = py_string(t, pf->file_id);
		f.file_short = f.file;
		f.function = py_string(t, pf->func_id);
		f.line = pf->line > 0 ? (unsigned)pf->line : 0;
		out[n++] = f;
	}
	return n;
}

size_t ct_frames_resolve(struct ct_model *m, uint32_t id, struct ct_frame *out, size_t max)
{
	return ct_frames_resolve_mode(m, id, ct_frames_mode_, out, max);
}

size_t ct_frames_resolve_mode(struct ct_model *m, uint32_t id, int mode, struct ct_frame *out,
			      size_t max)
{
	const struct ct_combo *c = combo_of(m->py, id);
	if (!c)
		return ct_symtab_resolve(m->syms, id, out, max);
	if (mode == CT_FRAMES_PYTHON)
		return py_frames(m->py, c->py_id, out, max);
	size_t n = c->native_id ? ct_symtab_resolve(m->syms, c->native_id, out, max) : 0;
	if (mode == CT_FRAMES_NATIVE)
		return n;
	/* Replace the run from the innermost to the outermost interpreter frame. */
	size_t first = n, last = n;
	for (size_t i = 0; i < n; i++)
		if (is_interp(&out[i])) {
			if (first == n)
				first = i;
			last = i;
		}
	struct ct_frame pyf[CT_PYSTACK_MAX];
	size_t np = py_frames(m->py, c->py_id, pyf, CT_PYSTACK_MAX);
	size_t tail_from = first == n ? n : last + 1; /* native frames kept after the Python ones */
	size_t tail = n - tail_from;
	if (first + np > max)
		np = max - first;
	if (first + np + tail > max)
		tail = max - first - np;
	memmove(out + first + np, out + tail_from, tail * sizeof *out);
	memcpy(out + first, pyf, np * sizeof *out);
	return first + np + tail;
}
