/*
 * JUnit XML of the leak findings (exports/ci.h): <testsuites> with one
 * <testsuite> per dump, one <testcase> per leak or growth site (classname
 * "cumtrace.CLASS", or "cumtrace.dumpN.CLASS" with several dumps; name: the
 * site's label and identity, made unique), <failure> when it fails the gate,
 * <skipped> when a suppression matched it; plus "cumtrace.gate" testcases for
 * --max-leak-bytes and --max-peak-bytes. A suite that would have no testcase
 * (a clean run) has one that passes, "no leaks" (classname "cumtrace", or
 * "cumtrace.dumpN"): Jenkins and GitLab show an empty suite as no tests run.
 *
 * Elements and attributes are those the Jenkins xunit plugin's JUnit schema
 * (junit-10.xsd) allows: <testsuites> has name, tests, failures, errors and
 * time, but no skipped (tests/ci_formats.py checks that schema's rules).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/suppress.h"
#include "base/util.h"
#include "exports/ci.h"

/* Text for XML: markup escaped, characters XML cannot hold shown as \xNN. */
static void xml_put(FILE *f, const char *s)
{
	if (!s)
		return;
	size_t n = strlen(s);
	for (size_t i = 0; i < n;) {
		const unsigned char *u = (const unsigned char *)s + i;
		size_t k = ct_utf8_seq(u, n - i);
		/* U+FFFE and U+FFFF are not XML characters */
		int nonchar = k == 3 && u[0] == 0xef && u[1] == 0xbf && u[2] >= 0xbe;
		if (!k || nonchar || (u[0] < 0x20 && u[0] != '\n' && u[0] != '\t') || u[0] == 0x7f) {
			fprintf(f, "\\x%02x", u[0]);
			i++;
			continue;
		}
		switch (u[0]) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		case '\n':
			fputs("&#10;", f);
			break;
		case '\t':
			fputs("&#9;", f);
			break;
		default:
			fwrite(u, 1, k, f);
		}
		i += k;
	}
}

/* A multi-line text element body: newlines kept. */
static void xml_put_body(FILE *f, const char *s)
{
	const char *p = s;
	for (;;) {
		const char *nl = strchr(p, '\n');
		if (!nl) {
			xml_put(f, p);
			return;
		}
		char *line = ct_xstrndup(p, (size_t)(nl - p));
		xml_put(f, line);
		free(line);
		fputc('\n', f);
		p = nl + 1;
	}
}

struct tcase {
	size_t finding;	/* index into the assessment */
	size_t dump;
	char *classname, *name;
};

static int cmp_tcase(const void *a, const void *b)
{
	const struct tcase *x = a, *y = b;
	int c = strcmp(x->classname, y->classname);
	if (!c)
		c = strcmp(x->name, y->name);
	if (!c)
		c = (x->finding > y->finding) - (x->finding < y->finding);
	return c;
}

static int cmp_tcase_order(const void *a, const void *b)
{
	const struct tcase *x = a, *y = b;
	return (x->finding > y->finding) - (x->finding < y->finding);
}

__attribute__((format(printf, 1, 2))) static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = ct_xmalloc((size_t)(n > 0 ? n : 0) + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
	va_end(ap);
	return s;
}

/* The stack of a finding as report text (for the failure body). */
static char *stack_text(const struct ct_finding *x)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&buf, &len);
	if (!mf)
		return ct_xstrdup("");
	ct_text_stack(mf, x->it.m, x->it.stack_id);
	fclose(mf);
	return buf;
}

static void write_case(FILE *f, const struct ct_report_opts *o, const struct ct_finding *x,
		       const struct tcase *t)
{
	char msg[512];
	ct_finding_message(x, msg, sizeof msg);
	fputs("    <testcase classname=\"", f);
	xml_put(f, t->classname);
	fputs("\" name=\"", f);
	xml_put(f, t->name);
	fputs("\" time=\"0\">\n", f);
	char *stack = stack_text(x);
	if (x->supp >= 0) {
		fputs("      <skipped message=\"suppressed by ", f);
		xml_put(f, ct_supp_name(o->supp, (size_t)x->supp));
		fputs("\"/>\n", f);
	} else if (x->fails) {
		fputs("      <failure message=\"", f);
		xml_put(f, msg);
		fprintf(f, "\" type=\"cumtrace.%s\">", ct_class_name(x->cls));
		xml_put_body(f, stack);
		fputs("</failure>\n", f);
	} else {
		fputs("      <system-out>", f);
		xml_put(f, msg);
		fputs(x->in_baseline ? " (in the baseline)" : " (not a failing class)", f);
		fputc('\n', f);
		xml_put_body(f, stack);
		fputs("</system-out>\n", f);
	}
	free(stack);
	fputs("    </testcase>\n", f);
}

/* A gate testcase (budget options), failed when over. */
static void write_gate_case(FILE *f, const char *cls, const char *name, int failed, const char *msg)
{
	fputs("    <testcase classname=\"", f);
	xml_put(f, cls);
	fprintf(f, "\" name=\"%s\" time=\"0\">\n", name);
	if (failed) {
		fputs("      <failure message=\"", f);
		xml_put(f, msg);
		fputs("\" type=\"cumtrace.gate\"/>\n", f);
	} else {
		fputs("      <system-out>", f);
		xml_put(f, msg);
		fputs("</system-out>\n", f);
	}
	fputs("    </testcase>\n", f);
}

void ct_junit_write(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms, size_t n)
{
	struct ct_assessment *a = ct_assess(o, ms, n, NULL);
	struct tcase *tc = ct_xcalloc(a->n ? a->n : 1, sizeof *tc);
	for (size_t i = 0; i < a->n; i++) {
		const struct ct_finding *x = &a->v[i];
		size_t d = 0;
		while (d < n && ms[d] != x->it.m)
			d++;
		char label[512];
		if (!ct_site_label(x->it.m, x->it.stack_id, label, sizeof label))
			ct_finding_label(x, label, sizeof label);
		tc[i].finding = i;
		tc[i].dump = d;
		tc[i].classname = n > 1 ? xasprintf("cumtrace.dump%zu.%s", d + 1, ct_class_name(x->cls))
					: xasprintf("cumtrace.%s", ct_class_name(x->cls));
		tc[i].name = xasprintf("%s [%08" PRIx64 "]", label, x->identity >> 32);
	}
	/* the same label and identity twice (another device, another checkpoint): number them */
	qsort(tc, a->n, sizeof *tc, cmp_tcase);
	for (size_t i = 1, first = 0; i < a->n; i++) {
		if (strcmp(tc[i].classname, tc[first].classname) || strcmp(tc[i].name, tc[first].name)) {
			first = i;
			continue;
		}
		char *nn = xasprintf("%s #%zu", tc[i].name, i - first + 1);
		free(tc[i].name);
		tc[i].name = nn;
	}
	qsort(tc, a->n, sizeof *tc, cmp_tcase_order);

	/* per dump: tests, failures, skipped */
	uint64_t tt = 0, tf = 0;
	uint64_t *tests = ct_xcalloc(n ? n : 1, sizeof *tests);
	uint64_t *fails = ct_xcalloc(n ? n : 1, sizeof *fails);
	uint64_t *skips = ct_xcalloc(n ? n : 1, sizeof *skips);
	int *peak_over = ct_xcalloc(n ? n : 1, sizeof *peak_over);
	for (size_t i = 0; i < a->n; i++) {
		size_t d = tc[i].dump;
		if (d >= n)
			continue;
		tests[d]++;
		fails[d] += (uint64_t)a->v[i].fails;
		skips[d] += a->v[i].supp >= 0;
	}
	/* --max-leak-bytes is one budget over all dumps: its testcase is in the first suite */
	int leak_over = o->have_max_leak_bytes && ct_gate_over(a->failing_leaks.bytes, o->max_leak_bytes);
	for (size_t d = 0; d < n; d++) {
		if (o->have_max_peak_bytes) {
			peak_over[d] = ct_gate_over(ms[d]->peak_bytes, o->max_peak_bytes);
			tests[d]++;
			fails[d] += (uint64_t)peak_over[d];
		}
		if (!d && o->have_max_leak_bytes) {
			tests[d]++;
			fails[d] += (uint64_t)leak_over;
		}
		if (!tests[d])
			tests[d] = 1; /* the clean run's "no leaks" */
		tt += tests[d];
		tf += fails[d];
	}
	/* junit-10.xsd: <testsuites> has no skipped attribute (the suites have theirs) */
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<testsuites name=\"cumtrace leaks\" tests=\"%" PRIu64 "\" failures=\"%" PRIu64
		   "\" errors=\"0\" time=\"0\">\n",
		tt, tf);
	for (size_t d = 0; d < n; d++) {
		struct ct_model *m = ms[d];
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);
		if (mf) {
			fputs("cumtrace leaks: ", mf);
			ct_put_proc(mf, m);
			fclose(mf);
		}
		fputs("  <testsuite name=\"", f);
		xml_put(f, buf ? buf : "cumtrace leaks");
		free(buf);
		fprintf(f, "\" tests=\"%" PRIu64 "\" failures=\"%" PRIu64 "\" errors=\"0\" skipped=\"%" PRIu64
			   "\" time=\"0\" hostname=\"",
			tests[d], fails[d], skips[d]);
		xml_put(f, m->host ? m->host : "unknown");
		fputs("\">\n    <properties>\n      <property name=\"dump\" value=\"", f);
		xml_put(f, m->path ? m->path : "");
		fprintf(f, "\"/>\n      <property name=\"pid\" value=\"%" PRIu32 "\"/>\n"
			   "      <property name=\"fail_on\" value=\"",
			m->pid);
		for (int c = 0, first = 1; c < CT_CLASS_COUNT; c++)
			if (a->fail_classes & CT_CLASS_BIT(c)) {
				fprintf(f, "%s%s", first ? "" : ",", ct_class_name(c));
				first = 0;
			}
		fputs("\"/>\n", f);
		if (m->pauses) { /* a dump that cumtrace_bench_pause left incomplete */
			fputs("      <property name=\"incomplete\" value=\"", f);
			xml_put(f, ct_pauses_text(m));
			fputs("\"/>\n", f);
		}
		fputs("    </properties>\n", f);
		int cases = 0;
		for (size_t i = 0; i < a->n; i++)
			if (tc[i].dump == d) {
				write_case(f, o, &a->v[i], &tc[i]);
				cases++;
			}
		char msg[256], b1[32], gate[48];
		if (n > 1)
			snprintf(gate, sizeof gate, "cumtrace.dump%zu.gate", d + 1);
		else
			snprintf(gate, sizeof gate, "cumtrace.gate");
		if (!cases && !o->have_max_peak_bytes && !(!d && o->have_max_leak_bytes)) {
			char cls[48];
			if (n > 1)
				snprintf(cls, sizeof cls, "cumtrace.dump%zu", d + 1);
			else
				snprintf(cls, sizeof cls, "cumtrace");
			write_gate_case(f, cls, "no leaks", 0, "no leak site and no growing site");
		}
		if (o->have_max_peak_bytes) {
			snprintf(msg, sizeof msg, "peak device memory %" PRIu64 " bytes (%s), limit %" PRIu64,
				 m->peak_bytes, ct_fmt_bytes(m->peak_bytes, b1, sizeof b1),
				 o->max_peak_bytes);
			write_gate_case(f, gate, "max-peak-bytes", peak_over[d], msg);
		}
		if (!d && o->have_max_leak_bytes) {
			snprintf(msg, sizeof msg, "%" PRIu64 " bytes in failing leak sites, limit %" PRIu64,
				 a->failing_leaks.bytes, o->max_leak_bytes);
			write_gate_case(f, gate, "max-leak-bytes", leak_over, msg);
		}
		fputs("  </testsuite>\n", f);
	}
	fputs("</testsuites>\n", f);
	for (size_t i = 0; i < a->n; i++) {
		free(tc[i].classname);
		free(tc[i].name);
	}
	free(tc);
	free(tests);
	free(fails);
	free(skips);
	free(peak_over);
	ct_assessment_free(a);
}
