/*
 * libFuzzer harness: an input is a selector of CT_FUZZ_SEL bytes followed by
 * a dump. The selector picks ONE rendering (a command, one of its formats and
 * its options, below); the dump is read by the in-memory loader (the same
 * streaming reader as files, with a chunk size the selector picks, so that
 * refills and records straddling chunks are exercised) and that one report is
 * written to /dev/null, then the gate is evaluated when the selector asks.
 * Rendering one report per input instead of all of them is what makes the
 * fuzzer fast: every command stays reachable through the selector's first
 * byte, and libFuzzer mutates the selector like any other byte.
 *
 * An input that starts with the dump's magic (CT_MAGIC) has no selector: it is
 * a dump, rendered as by selector 0 (summary, text). This keeps a bare dump
 * dropped into tests/fuzz/corpus/ valid; tests/fuzz/seed.sh prefixes one.
 *
 * Selector bytes:
 *   s[0]  command: s[0] % CT_CMD_COUNT (enum ct_cmd)
 *   s[1]  bits 0-3: format, the (n % count)-th of those the command writes
 *         bit 4: suppressions (supp_text)   bit 5: --gen-suppressions (text, json)
 *         bit 6: the model as its own --baseline   bit 7: two dumps (the model twice)
 *   s[2]  bits 0-1: read chunk (4096, default 1 MiB, 61, 3 bytes)
 *         bits 2-3: flame graph --of (leaks, peak, allocs)
 *         bit 4: evaluate the gate (--fail-on-leak, --max-leak-bytes, --max-peak-bytes)
 *         bit 5: exporter limits from N (--counter-us N*100, --max-slices/--max-entries N+1)
 *         bit 6: --growth K/W and --steps from s[3]   bit 7: reorder queue of at most N+1 events
 *   s[3]  bits 0-4: N, the number behind --buckets (0 = 60), --top (0 = all) and the limits
 *         bits 5-7: K of --growth; bit 7 also fails the gate on every leak class
 * Commands and formats are taken modulo their counts, so that a command added
 * to the table is fuzzed without a change here. Option combinations that
 * main.c refuses (usage errors) are never made.
 *
 * Symbols come from the dump's CT_REC_SYMBOLS records only: module paths in a
 * fuzzed dump must not make the harness open arbitrary files.
 *
 * Built and run by `make fuzz` (see the Makefile) and scripts/fuzz-long.sh;
 * crashes, leaks, timeouts and out-of-memory inputs are kept in
 * tests/fuzz/regress/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cumtrace/format.h"
#include "analyses/gate.h"
#include "analyses/growth.h"
#include "model/model.h"
#include "commands/commands.h"
#include "analyses/suppress.h"

#define CT_FUZZ_SEL 4 /* selector bytes before the dump (tests/e2e/t_fuzz_regress.sh knows it) */
/*
 * The reader stops after this many bytes of records (decompressed ones
 * counted as such): a 64 KiB input of compressed runs can declare some 70M
 * events, whose analysis takes as long as any dump of 70M events (over 30 s
 * here under ASan), which is not a defect. The analyzer's memory on such a
 * "zstd bomb" is bounded by tests/e2e/t_bomb.sh instead. 1 MiB is four
 * times the largest seed (241 KiB of records); the reader checks the budget
 * before each record, so one more compressed run (CT_ZSTD_RAW_MAX) may pass it.
 */
#define CT_FUZZ_RECORD_BUDGET (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FNV-1a over the events delivered, in delivery order. */
static void hash_event(void *ctx, const struct ct_rec_event *ev)
{
	uint64_t *h = ctx;
	const unsigned char *p = (const unsigned char *)ev;
	for (size_t i = 0; i < sizeof *ev; i++)
		*h = (*h ^ p[i]) * 0x100000001b3ull;
}

/*
 * Read the dump with and without decompressing ahead on a second thread
 * (reader.h, no_prefetch): both must deliver the same events and end the
 * same way; abort() (a finding) when they do not.
 */
static void prefetch_differential(const uint8_t *data, size_t size, const struct ct_read_opts *ro)
{
	uint64_t h[2] = {0xcbf29ce484222325ull, 0xcbf29ce484222325ull};
	struct ct_read_result res[2];
	for (int i = 0; i < 2; i++) {
		struct ct_reader_cb cb = {.ctx = &h[i], .event = hash_event};
		struct ct_read_opts o = *ro;
		o.no_prefetch = i;
		ct_read_mem(data, size, &o, &cb, &res[i]);
		if (res[0].zstd_records == 0)
			return; /* no compressed record: nothing was read ahead, or looked at for it */
	}
	if (h[0] != h[1] || res[0].status != res[1].status || res[0].events != res[1].events ||
	    res[0].records != res[1].records || res[0].error_offset != res[1].error_offset ||
	    res[0].truncated_offset != res[1].truncated_offset ||
	    strcmp(res[0].error, res[1].error) != 0 || res[1].zstd_prefetched != 0) {
		fprintf(stderr, "fuzz: reading ahead changed what the reader delivers\n");
		abort();
	}
}

static FILE *devnull;
static struct ct_suppressions *supp;

/* Suppressions of every kind, matched against every fuzzed stack. */
static const char supp_text[] = "leak:^lib*.so$\nleak:main\n"
				"{\n s\n cumtrace:Leak\n match-leak-kinds: cache\n ...\n obj:*/lib?*\n}\n"
				"{\n g\n cumtrace:Growth\n fun:*\n src:*.c:1\n ...\n fun:???\n}\n";

/* The (n % count)-th format that command c writes (it writes at least one). */
static int nth_format(const struct ct_command *c, unsigned n)
{
	unsigned count = 0;
	for (int fmt = 0; fmt < CT_FMT_COUNT; fmt++)
		count += (c->formats >> fmt) & 1u;
	n %= count;
	for (int fmt = 0; fmt < CT_FMT_COUNT; fmt++)
		if ((c->formats & 1u << fmt) && n-- == 0)
			return fmt;
	abort(); /* unreachable: count > 0 */
}

/*
 * The options of selector s (CT_FUZZ_SEL bytes) for model m: the report
 * options, the reader options, the number of dumps and whether to evaluate
 * the gate.
 */
static void select_opts(const uint8_t *s, struct ct_model *m, struct ct_report_opts *o,
			struct ct_read_opts *r, size_t *ndumps, int *gate)
{
	static const size_t chunks[4] = {4096, 0, 61, 3};
	const struct ct_command *c = ct_command_get(s[0] % CT_CMD_COUNT);
	unsigned n = s[3] & 31u, k = s[3] >> 5;

	*o = (struct ct_report_opts){.cmd = s[0] % CT_CMD_COUNT, .tool_version = "fuzz"};
	o->format = nth_format(c, s[1] & 15u);
	o->buckets = n ? n : 60;
	o->top = n;
	if (s[1] & 0x10)
		o->supp = supp;
	if ((s[1] & 0x20) && (o->format == CT_FMT_TEXT || o->format == CT_FMT_JSON))
		o->gen_suppressions = 1;
	if ((s[1] & 0x40) && !(c->flags & CT_CMD_BASELINE_FIRST))
		o->baseline = m;
	*ndumps = c->min_dumps;
	if ((s[1] & 0x80) && (!c->max_dumps || c->max_dumps >= 2) && *ndumps < 2)
		*ndumps = 2;

	*r = (struct ct_read_opts){.chunk_size = chunks[s[2] & 3u],
				   .max_record_bytes = CT_FUZZ_RECORD_BUDGET};
	o->flame_of = (s[2] >> 2 & 3u) % 3;
	*gate = (s[2] & 0x10) != 0;
	if (*gate) {
		o->fail_on_leak = o->have_max_leak_bytes = o->have_max_peak_bytes = 1;
		o->max_leak_bytes = (uint64_t)n << 20;
		o->max_peak_bytes = (uint64_t)n << 30;
		o->fail_classes = k & 4u ? CT_CLASS_ALL : 0;
	}
	if (s[2] & 0x20) {
		o->counter_us = (uint64_t)n * 100;
		o->max_slices = o->max_entries = n + 1;
	} else {
		o->counter_us = CT_PERFETTO_COUNTER_US;
	}
	if (s[2] & 0x40) {
		o->growth_window = 1 + n % CT_GROWTH_WINDOW_MAX;
		o->growth_min = 1 + k % o->growth_window;
		o->growth_steps = k & 1u ? "step" : "train";
	}
	if (s[2] & 0x80)
		r->max_pending = n + 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		char err[256];
		supp = ct_supp_new();
		if (!devnull || ct_supp_load_text(supp, "fuzz", supp_text, sizeof supp_text - 1, err, sizeof err))
			abort();
	}
	uint8_t sel[CT_FUZZ_SEL] = {0};
	if (size < CT_MAGIC_LEN || memcmp(data, CT_MAGIC, CT_MAGIC_LEN)) {
		size_t n = size < CT_FUZZ_SEL ? size : CT_FUZZ_SEL;
		memcpy(sel, data, n);
		data += n;
		size -= n;
	}
	struct ct_model *m = malloc(sizeof *m);
	if (!m)
		abort();
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, CT_SYMBOLIZE_EMBEDDED);
	struct ct_report_opts o;
	struct ct_read_opts ro;
	size_t ndumps;
	int gate;
	select_opts(sel, m, &o, &ro, &ndumps, &gate);
	/* as main.c does: the command's observers and the gate's, then the dump */
	ct_report_attach(m, &o);
	ct_gate_attach(m, &o);
	prefetch_differential(data, size, &ro);
	if (ct_model_load_mem(m, data, size, &ro) != CT_READ_ERROR) {
		struct ct_model *two[2] = {m, m};
		ct_report(devnull, &o, two, ndumps);
		(void)ct_report_leak_count(two, ndumps);
		if (gate) {
			char reason[512];
			(void)ct_gate_check(&o, two, ndumps, reason, sizeof reason);
		}
		fflush(devnull);
	}
	ct_model_free(m);
	free(m);
	return 0;
}
