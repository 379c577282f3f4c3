/*
 * libFuzzer harness: the input bytes are a dump. Each input is read by the
 * in-memory loader (the same streaming reader as files, with a small chunk so
 * refills and records straddling chunks are exercised), then every report
 * (every command of the table in report.c) is rendered in every format it
 * writes to /dev/null for the model alone, and some for two models (the
 * multi-dump paths); every other rendering uses suppressions, generated
 * suppression blocks and the model as its own baseline, and the gate is
 * evaluated with every option. Symbols come from the dump's CT_REC_SYMBOLS
 * records only: module paths in a fuzzed dump must not make the harness open arbitrary
 * files.
 *
 * Built and run by `make fuzz` (see the Makefile); crashes, leaks, timeouts
 * and out-of-memory inputs are kept in tests/fuzz/regress/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gate.h"
#include "model.h"
#include "report.h"
#include "suppress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;
static struct ct_suppressions *supp;

/* Suppressions of every kind, matched against every fuzzed stack. */
static const char supp_text[] = "leak:^lib*.so$\nleak:main\n"
				"{\n s\n cumtrace:Leak\n match-leak-kinds: cache\n ...\n obj:*/lib?*\n}\n"
				"{\n g\n cumtrace:Growth\n fun:*\n src:*.c:1\n ...\n fun:???\n}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		char err[256];
		supp = ct_supp_new();
		if (!devnull || ct_supp_load_text(supp, "fuzz", supp_text, sizeof supp_text - 1, err, sizeof err))
			abort();
	}
	struct ct_model *m = malloc(sizeof *m);
	if (!m)
		abort();
	ct_model_init(m);
	ct_symtab_set_symbolize(m->syms, CT_SYMBOLIZE_EMBEDDED);
	struct ct_read_opts opts = {.chunk_size = 4096, .max_pending = 0};
	struct ct_report_opts base = {.buckets = 60, .top = 20, .tool_version = "fuzz"};
	ct_report_attach_all(m, &base);
	int st = ct_model_load_mem(m, data, size, &opts);
	if (st != CT_READ_ERROR) {
		struct ct_model *two[2] = {m, m};
		for (int cmd = 0; cmd < CT_CMD_COUNT; cmd++) {
			const struct ct_command *c = ct_command_get(cmd);
			for (int fmt = 0; fmt < CT_FMT_COUNT; fmt++) {
				if (!(c->formats & 1u << fmt))
					continue;
				struct ct_report_opts o = base;
				o.cmd = cmd;
				o.format = fmt;
				o.top = fmt == CT_FMT_JSON ? 0 : 20;
				/* every other rendering with suppressions, generated blocks, a baseline */
				if ((cmd + fmt) & 1) {
					o.supp = supp;
					o.gen_suppressions = 1;
					o.baseline = m;
				}
				if (c->min_dumps <= 1)
					ct_report(devnull, &o, two, 1);
				/* two dumps: the reports merged over ranks (ranks.h) among them */
				if ((c->min_dumps == 2 || (cmd == CT_CMD_SUMMARY && fmt <= CT_FMT_JSON) ||
				     ((cmd == CT_CMD_LEAKS || cmd == CT_CMD_PEAK) && fmt == CT_FMT_TEXT) ||
				     cmd == CT_CMD_HTML) &&
				    (!c->max_dumps || c->max_dumps >= 2))
					ct_report(devnull, &o, two, 2);
			}
		}
		(void)ct_report_leak_count(two, 2);
		char reason[512];
		struct ct_report_opts g = base;
		g.cmd = CT_CMD_DIFF;
		g.fail_on_leak = g.have_max_leak_bytes = g.have_max_peak_bytes = 1;
		g.fail_classes = CT_CLASS_ALL;
		g.supp = supp;
		(void)ct_gate_check(&g, two, 2, reason, sizeof reason);
		fflush(devnull);
	}
	ct_model_free(m);
	free(m);
	return 0;
}
