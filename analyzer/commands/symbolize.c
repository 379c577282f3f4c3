/*
 * cumtrace-report symbolize DUMP [-o OUT]: resolve every code address of the
 * dump's stacks on this machine and embed the frames (CT_REC_SYMBOLS,
 * include/cumtrace/format.h), so that the dump can be analyzed where the
 * binaries are not. See docs/report.md.
 *
 * The output is the input's header and records in their order, without its
 * old CT_REC_SYMBOLS records, then the new ones. Symbols already embedded are
 * kept (they win over the files on disk, as in every report), so running it
 * again gives the same bytes. The output replaces DUMP (or OUT) atomically:
 * a temporary file next to it, renamed over it.
 */
#define _GNU_SOURCE 1
#include "commands/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "model/model.h"
#include "render/outfile.h"

#define PROG "cumtrace-report"

static void usage(FILE *f)
{
	fputs("usage: " PROG " symbolize DUMP [-o OUT]\n"
	      "\n"
	      "Embed the symbols (functions, inline frames, source files and lines) of every\n"
	      "stack of DUMP, resolved on this machine, into the dump, so that it can be\n"
	      "analyzed on a machine without the binaries. DUMP is replaced atomically, or\n"
	      "the result is written to OUT.\n"
	      "\n"
	      "options:\n"
	      "  -o, --output OUT   write the symbolized dump to OUT instead of replacing DUMP\n"
	      "  -h, --help         show this help and exit\n"
	      "\n"
	      "exit status: 0 ok; 2 usage error, an unreadable or corrupt dump, or a write error.\n",
	      f);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs(PROG " symbolize: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (try " PROG " symbolize --help)\n", stderr);
	return 2;
}

/* ---- CT_REC_SYMBOLS encoder ----------------------------------------------------------- */

/* The symbols of several addresses, made into records of at most CT_REC_MAX bytes. */
struct enc {
	FILE *out;
	struct ct_sym_addr *addrs;
	size_t naddrs, capaddrs;
	struct ct_sym_frame *frames;
	size_t nframes, capframes;
	char *strings; /* this record's string table */
	size_t slen, scap;
	uint32_t *soffs; /* offsets of the distinct strings, for ct_imap */
	size_t nsoffs, capsoffs;
	struct ct_imap smap;
	uint64_t records, bytes;
	uint64_t resolved, unresolved;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return ct_mix64(h);
}

/* Bytes of s stored: at most CT_SYM_STRING_MAX - 1, not cutting a UTF-8 sequence. */
static size_t stored_len(const char *s)
{
	size_t n = strnlen(s, CT_SYM_STRING_MAX);
	if (n < CT_SYM_STRING_MAX)
		return n;
	n = CT_SYM_STRING_MAX - 1;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

struct strkey {
	const char *s;
	size_t n;
};

static int str_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct enc *e = ctx;
	const struct strkey *k = key;
	const char *have = e->strings + e->soffs[idx];
	return strlen(have) == k->n && !memcmp(have, k->s, k->n);
}

/* Offset of s in this record's string table, added if new; CT_SYM_NONE for NULL. */
static uint32_t intern(struct enc *e, const char *s)
{
	if (!s)
		return CT_SYM_NONE;
	struct strkey k = {s, stored_len(s)};
	uint64_t h = hash_bytes(s, k.n);
	uint32_t i = ct_imap_get(&e->smap, h, str_eq, e, &k);
	if (i != CT_IMAP_NONE)
		return e->soffs[i];
	e->strings = ct_xgrow(e->strings, &e->scap, e->slen + k.n + 1, 1);
	memcpy(e->strings + e->slen, s, k.n);
	e->strings[e->slen + k.n] = 0;
	e->soffs = ct_xgrow(e->soffs, &e->capsoffs, e->nsoffs + 1, sizeof *e->soffs);
	e->soffs[e->nsoffs] = (uint32_t)e->slen;
	ct_imap_put(&e->smap, h, (uint32_t)e->nsoffs++);
	e->slen += k.n + 1;
	return e->soffs[e->nsoffs - 1];
}

static size_t record_size(const struct enc *e)
{
	return CT_REC_ALIGN(sizeof(struct ct_rec_symbols) + e->naddrs * sizeof *e->addrs +
			    e->nframes * sizeof *e->frames + e->slen);
}

/* Write the record being built, if any, and start an empty one. */
static void flush_record(struct enc *e)
{
	if (!e->naddrs)
		return;
	size_t size = record_size(e);
	struct ct_rec_symbols h;
	memset(&h, 0, sizeof h);
	h.rec.type = CT_REC_SYMBOLS;
	h.rec.size = (uint32_t)size;
	h.naddrs = (uint32_t)e->naddrs;
	h.nframes = (uint32_t)e->nframes;
	h.strings_len = (uint32_t)e->slen;
	static const char pad[8];
	size_t used = sizeof h + e->naddrs * sizeof *e->addrs + e->nframes * sizeof *e->frames + e->slen;
	fwrite(&h, sizeof h, 1, e->out);
	fwrite(e->addrs, sizeof *e->addrs, e->naddrs, e->out);
	fwrite(e->frames, sizeof *e->frames, e->nframes, e->out);
	fwrite(e->strings, 1, e->slen, e->out);
	fwrite(pad, 1, size - used, e->out);
	e->records++;
	e->bytes += size;
	e->naddrs = e->nframes = e->slen = e->nsoffs = 0;
	ct_imap_free(&e->smap);
}

/* Upper bound of the bytes one address adds to a record. */
static size_t entry_cost(const struct ct_frame *fr, size_t n)
{
	size_t c = sizeof(struct ct_sym_addr) + n * sizeof(struct ct_sym_frame);
	for (size_t i = 0; i < n; i++)
		c += (fr[i].function ? stored_len(fr[i].function) + 1 : 0) +
		     (fr[i].file ? stored_len(fr[i].file) + 1 : 0) +
		     (fr[i].file_short ? stored_len(fr[i].file_short) + 1 : 0);
	return c;
}

static void add_address(void *ctx, uint32_t module, uint64_t offset, const struct ct_frame *fr,
			size_t n)
{
	struct enc *e = ctx;
	if (!n) {
		e->unresolved++;
		return;
	}
	e->resolved++;
	if (n > CT_SYM_FRAMES_MAX)
		n = CT_SYM_FRAMES_MAX;
	if (e->naddrs && record_size(e) + entry_cost(fr, n) > CT_REC_MAX)
		flush_record(e);
	e->addrs = ct_xgrow(e->addrs, &e->capaddrs, e->naddrs + 1, sizeof *e->addrs);
	e->addrs[e->naddrs++] = (struct ct_sym_addr){.offset = offset, .module = module,
						     .nframes = (uint16_t)n};
	e->frames = ct_xgrow(e->frames, &e->capframes, e->nframes + n, sizeof *e->frames);
	for (size_t i = 0; i < n; i++) {
		struct ct_sym_frame *f = &e->frames[e->nframes++];
		f->function = intern(e, fr[i].function);
		f->file = intern(e, fr[i].file);
		f->line = fr[i].line;
		/* the short name is a tail of the file name: point into it */
		const char *fs = fr[i].file_short;
		size_t skip = fs && fr[i].file && fs >= fr[i].file ? (size_t)(fs - fr[i].file) : SIZE_MAX;
		if (!fs || fs == fr[i].file)
			f->file_short = CT_SYM_NONE;
		else if (skip < stored_len(fr[i].file))
			f->file_short = f->file + (uint32_t)skip;
		else
			f->file_short = intern(e, fs);
	}
}

static void enc_free(struct enc *e)
{
	free(e->addrs);
	free(e->frames);
	free(e->strings);
	free(e->soffs);
	ct_imap_free(&e->smap);
}

/* ---- copying the dump ------------------------------------------------------------------- */

struct copy {
	int in;	  /* the input, for its header bytes */
	FILE *out;
	int copied_header;
	int io_error; /* errno of the first failure */
};

/* The input's bytes [0, end): its file header (records start at end). */
static void copy_header(struct copy *c, uint64_t end)
{
	char buf[1 << 16];
	c->copied_header = 1;
	if (end > sizeof buf) { /* header_size is 16 bits: never */
		c->io_error = EINVAL;
		return;
	}
	ssize_t k = pread(c->in, buf, (size_t)end, 0);
	if (k != (ssize_t)end) {
		c->io_error = k < 0 ? errno : EIO;
		return;
	}
	fwrite(buf, 1, (size_t)end, c->out);
}

static void copy_record(void *ctx, const void *rec, uint32_t size, uint64_t offset)
{
	struct copy *c = ctx;
	if (!c->copied_header)
		copy_header(c, offset);
	struct ct_rec h;
	memcpy(&h, rec, sizeof h);
	if (h.type != CT_REC_SYMBOLS) /* replaced by the new ones */
		fwrite(rec, 1, size, c->out);
}

/*
 * The reader's callbacks: the records are copied, and the model's callbacks
 * for what symbols need (process, stacks, modules, symbols) are called with
 * the model's context. Events are not analyzed.
 */
struct both {
	struct ct_reader_cb model;
	struct copy copy;
};

static void both_process(void *ctx, const struct ct_rec_process *p, const char *s, size_t len)
{
	struct both *b = ctx;
	b->model.process(b->model.ctx, p, s, len);
}

static void both_stack(void *ctx, uint32_t id, unsigned depth, const uint64_t *ips)
{
	struct both *b = ctx;
	b->model.stack(b->model.ctx, id, depth, ips);
}

static void both_module(void *ctx, const struct ct_rec_module *mod, const uint8_t *build_id,
			const char *path, size_t path_len)
{
	struct both *b = ctx;
	b->model.module(b->model.ctx, mod, build_id, path, path_len);
}

static void both_symbols(void *ctx, const struct ct_rec_symbols *s, const struct ct_sym_addr *a,
			 const struct ct_sym_frame *f, const char *strings)
{
	struct both *b = ctx;
	b->model.symbols(b->model.ctx, s, a, f, strings);
}

static void both_record(void *ctx, const void *rec, uint32_t size, uint64_t offset)
{
	copy_record(&((struct both *)ctx)->copy, rec, size, offset);
}

/* ---- the command ------------------------------------------------------------------------- */

/*
 * Copy dump (open as in) into f with the symbols of its stacks; the counts
 * in *e. Returns 0, or -1 when the dump is unreadable (reported on stderr).
 */
static int symbolize_into(const char *dump, int in, FILE *f, struct enc *e, int *io_error)
{
	struct ct_model *m = ct_xmalloc(sizeof *m);
	ct_model_init(m);
	struct both b = {.copy = {.in = in, .out = f}};
	ct_model_callbacks(m, &b.model);
	struct ct_reader_cb cb = {.ctx = &b,
				  .process = both_process,
				  .stack = both_stack,
				  .module = both_module,
				  .symbols = both_symbols,
				  .record = both_record};
	int status = ct_read_file(dump, NULL, &cb, &m->read);
	if (status == CT_READ_ERROR) {
		fprintf(stderr, PROG ": %s: %s\n", dump, m->read.error);
	} else {
		if (!b.copy.copied_header) /* a dump without records */
			copy_header(&b.copy, status == CT_READ_TRUNCATED ? m->read.truncated_offset
									 : m->read.file_bytes);
		if (status == CT_READ_TRUNCATED)
			fprintf(stderr,
				PROG ": warning: %s: truncated at offset %" PRIu64
				" (partial record); copied the records before it\n",
				dump, m->read.truncated_offset);
		e->out = f;
		ct_symtab_visit_addresses(m->syms, add_address, e);
		flush_record(e);
	}
	*io_error = b.copy.io_error;
	ct_model_free(m);
	free(m);
	return status == CT_READ_ERROR ? -1 : 0;
}

int ct_symbolize_main(int argc, char **argv)
{
	const char *dump = NULL, *output = NULL;
	int positional_only = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (positional_only || a[0] != '-' || !strcmp(a, "-")) {
			if (dump)
				return usage_error("one dump at a time ('%s' and '%s' given)", dump, a);
			dump = a;
		} else if (!strcmp(a, "--")) {
			positional_only = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (i + 1 >= argc)
				return usage_error("%s needs a file name", a);
			output = argv[++i];
		} else if (!strncmp(a, "--output=", 9)) {
			output = a + 9;
		} else if (a[1] == 'o') {
			output = a + 2;
		} else {
			return usage_error("unknown option '%s'", a);
		}
	}
	if (!dump)
		return usage_error("no dump file given");
	if (output && !*output)
		return usage_error("-o: empty file name");

	int rc = 2;
	char *target = NULL;
	struct enc e;
	memset(&e, 0, sizeof e);
	struct stat st;
	int in = open(dump, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fstat(in, &st) < 0) {
		fprintf(stderr, PROG ": %s: cannot open: %s\n", dump, strerror(errno));
		goto out;
	}
	/* in place: replace the file a symlink points to, not the link */
	target = output ? ct_xstrdup(output) : realpath(dump, NULL);
	if (!target) {
		fprintf(stderr, PROG ": %s: %s\n", dump, strerror(errno));
		goto out;
	}
	struct ct_outfile of;
	char msg[4200];
	if (ct_outfile_open(&of, target, "symbolize", msg, sizeof msg)) {
		fprintf(stderr, PROG ": %s\n", msg);
		goto out;
	}
	int io_error = 0;
	if (symbolize_into(dump, in, of.f, &e, &io_error) < 0) {
		ct_outfile_close(&of, 1, 0);
		goto out;
	}
	/* the output keeps the dump's mode */
	int err = ct_outfile_close(&of, io_error, st.st_mode & 07777);
	if (err || io_error) {
		fprintf(stderr, PROG ": %s: write error: %s\n", target, strerror(io_error ? io_error : err));
		goto out;
	}
	printf("%s: %" PRIu64 " addresses resolved, %" PRIu64 " unresolved (%" PRIu64
	       " symbols records, %" PRIu64 " bytes)\n",
	       output ? output : dump, e.resolved, e.unresolved, e.records, e.bytes);
	rc = 0;
out:
	enc_free(&e);
	if (in >= 0)
		close(in);
	free(target);
	return rc;
}
