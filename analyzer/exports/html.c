/*
 * The html command: one self-contained HTML page for people, per dump a
 * section with the process and dump header, live bytes over time per (kind,
 * device) as an SVG chart (the timeline's buckets), the peak and what was
 * live then, the leaks with their classes and the growing sites, the
 * out-of-memory failures, a fragmentation chart per device and the streams.
 * Every figure comes from the report that owns it (views.h, gate.h); this
 * file only lays them out.
 *
 * The page needs no network and runs no script: no external resource (no
 * src, no href but #fragments, no fonts, no url()), the style sheet inline,
 * and a Content-Security-Policy meta (default-src 'none', the style sheet
 * allowed by its SHA-256 hash) so that a browser refuses anything else even
 * if something slipped through. Every string from the dump (argv, paths,
 * frame names, mark names) is untrusted: it goes through ct_html_put.
 * Stacks are <details> (open them by clicking: no script); series and
 * markers carry <title> tooltips.
 *
 * Bounded: tables show --top rows (0 = all), the timeline --buckets points
 * of at most HTML_SERIES_MAX series (the largest), the fragmentation chart
 * the frag report's samples (at most --buckets). The output depends only on
 * the dumps and the options: no time of the analysis, no host of it.
 */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyses/analyses.h"
#include "analyses/gate.h"
#include "analyses/growth.h"
#include "base/util.h"
#include "model/classify.h"
#include "model/framework.h"
#include "model/marks.h"
#include "model/pystack.h"
#include "render/render.h"
#include "render/views.h"

#define HTML_SERIES_MAX 12 /* timeline series drawn (the largest); the page counts the rest */
#define HTML_ARGV_MAX 1000 /* bytes of the command line shown */

/* ---- the page's style sheet (its hash goes into the Content-Security-Policy) ---------------- */

static const char css[] =
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,"
	"sans-serif;color:#1d2330;background:#f3f4f7;margin:0}\n"
	"header.top{background:#1d2330;color:#fff;padding:14px 28px}\n"
	"header.top h1{font-size:20px;margin:0}\n"
	"header.top p{margin:2px 0 0;color:#b8c0cc;font-size:13px}\n"
	"main{max-width:1180px;margin:0 auto;padding:8px 28px 40px}\n"
	"section.dump{background:#fff;border:1px solid #dde1e7;border-radius:8px;"
	"padding:16px 22px;margin:16px 0}\n"
	"h2{font-size:18px;margin:0 0 6px}\n"
	"h3{font-size:15px;margin:24px 0 8px;padding-bottom:4px;border-bottom:1px solid #e3e6eb}\n"
	"h4{font-size:14px;margin:16px 0 6px}\n"
	"a{color:#2f5d9e;text-decoration:none}\n"
	"nav.toc{font-size:13px;margin:4px 0 8px}\n"
	"nav.toc a{margin-right:14px}\n"
	"code,ol.stack{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',"
	"monospace;font-size:12.5px}\n"
	"code{overflow-wrap:anywhere}\n"
	"td.nw,td.nw code{white-space:nowrap;overflow-wrap:normal}\n"
	".scroll{overflow-x:auto}\n"
	"dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 18px;margin:10px 0;"
	"font-size:13px}\n"
	"dl.facts dt{color:#5b6472}\n"
	"dl.facts dd{margin:0;overflow-wrap:anywhere}\n"
	".cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}\n"
	".card{flex:1 1 170px;border:1px solid #dde1e7;border-radius:6px;padding:8px 12px;"
	"background:#fafbfc}\n"
	".card .v{font-size:21px;font-weight:600}\n"
	".card .l{color:#5b6472;font-size:12px}\n"
	".card.bad .v{color:#b42318}\n"
	".lead{border-left:4px solid #2f5d9e;background:#f3f6fb;padding:6px 12px;margin:8px 0 10px;"
	"font-size:14.5px}\n"
	".lead p{margin:3px 0}\n"
	".warn{background:#fff4e5;border-left:4px solid #e67e22;padding:6px 10px;margin:6px 0}\n"
	".ok{color:#2e7d32}\n"
	".muted{color:#6b7380}\n"
	"table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}\n"
	"table.sites,table.leaks,table.growth,table.oom,table.streams,table.overview{width:100%}\n"
	"th,td{padding:4px 8px;border-bottom:1px solid #eceff3;text-align:left;vertical-align:top}\n"
	"th{background:#f0f2f5;font-weight:600;white-space:nowrap}\n"
	".n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	"tr.more td{color:#6b7380;font-style:italic}\n"
	"td.site{max-width:560px}\n"
	"summary{cursor:pointer}\n"
	"ol.stack{margin:4px 0;padding-left:30px}\n"
	"ol.stack li{overflow-wrap:anywhere}\n"
	"ol.stack li.own code{font-weight:700}\n"
	".loc{color:#4a5566}\n"
	".mod{color:#8a93a0}\n"
	".py{font-size:10px;font-weight:700;color:#fff;background:#3572a5;border-radius:3px;"
	"padding:0 3px}\n"
	".chip{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;font-weight:600}\n"
	".c-leaked{background:#fde2e1;color:#a61b1b}\n"
	".c-cache{background:#e3ecfa;color:#1f4e8c}\n"
	".c-teardown{background:#ececec;color:#444}\n"
	".c-growth{background:#fff0d6;color:#8a5300}\n"
	"p.tally .chip{margin-right:4px}\n"
	"p.tally span.t{margin-right:16px}\n"
	"svg.chart{width:100%;height:auto;display:block}\n"
	"svg .grid{stroke:#e8ebef}\n"
	"svg .axis{stroke:#8a93a0}\n"
	"svg text{font-size:11px;fill:#5b6472}\n"
	"svg line.peak{stroke:#b42318;stroke-dasharray:4 3}\n"
	"svg text.peak{fill:#b42318}\n"
	"svg path.oom{fill:#b42318}\n"
	"svg path.s{fill:none;stroke-width:1.6;stroke-linejoin:round}\n"
	"svg path.dash{stroke-dasharray:6 3}\n"
	"svg rect.plot{fill:#fcfcfd;stroke:#dde1e7}\n"
	"svg path.area{fill-opacity:.13;stroke:none}\n"
	"svg line.mark{stroke:#9aa3b5;stroke-dasharray:2 3}\n"
	"svg text.mark{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'DejaVu Sans Mono',"
	"monospace;font-size:10px;fill:#4a5566}\n"
	"ul.legend{list-style:none;padding:0;margin:4px 0 8px;display:flex;flex-wrap:wrap;"
	"gap:4px 20px;font-size:12.5px}\n"
	"footer{color:#6b7380;font-size:12px;text-align:center;margin:20px 0}\n";

/* Tableau 10: series colors, in order. */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
				      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define PALETTE_N (sizeof palette / sizeof palette[0])

static struct ct_frame frames[CT_FRAMES_MAX];
static struct ct_frame afr[CT_ANALYSIS_FRAMES];

/* ---- small writers ----------------------------------------------------------------------------- */

/* A table cell of bytes: human units, the exact number in data-bytes and the tooltip. */
static void td_bytes(FILE *f, uint64_t v)
{
	char b[32];
	fprintf(f, "<td class=\"n\" data-bytes=\"%" PRIu64 "\" title=\"%" PRIu64 " bytes\">%s</td>", v,
		v, ct_fmt_bytes(v, b, sizeof b));
}

static void td_u64(FILE *f, uint64_t v)
{
	fprintf(f, "<td class=\"n\">%" PRIu64 "</td>", v);
}

static void td_dur(FILE *f, uint64_t ns)
{
	char b[32];
	ct_fmt_dur(ns, b, sizeof b);
	fprintf(f, "<td class=\"n\">%s</td>", b);
}

/*
 * Open a table of class cls (in a horizontally scrolling box when wide) with
 * its header row and <tbody>: cols ends with NULL, names starting with '#'
 * are numeric columns (right-aligned).
 */
static void table_open(FILE *f, const char *cls, int wide, const char *const *cols)
{
	fprintf(f, "%s<table class=\"%s\"><thead><tr>", wide ? "<div class=\"scroll\">" : "", cls);
	for (; *cols; cols++)
		if (**cols == '#')
			fprintf(f, "<th class=\"n\">%s</th>", *cols + 1);
		else
			fprintf(f, "<th>%s</th>", *cols);
	fputs("</tr></thead><tbody>\n", f);
}

static void table_close(FILE *f, int wide)
{
	fprintf(f, "</tbody></table>%s\n", wide ? "</div>" : "");
}

/* The row that says how many rows --top left out. */
static void more_row(FILE *f, int cols, size_t left, const char *what, uint64_t bytes)
{
	char b[32];
	if (!left)
		return;
	fprintf(f, "<tr class=\"more\"><td colspan=\"%d\">... and %zu more %s", cols, left, what);
	if (bytes)
		fprintf(f, ": %s", ct_fmt_bytes(bytes, b, sizeof b));
	fputs(" (--top 0 shows all)</td></tr>\n", f);
}

/* A dump-supplied string cut to at most max bytes, at a character boundary. */
static void put_cut(FILE *f, const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max) {
		ct_html_putn(f, s, n);
		return;
	}
	while (max && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	ct_html_putn(f, s, max);
	fputs("\xe2\x80\xa6", f); /* ... */
}

/* The command line (argv joined by spaces, cut), else the executable, else "?". */
static void put_command(FILE *f, const struct ct_model *m)
{
	if (!m->argc) {
		ct_html_put(f, m->exe ? m->exe : "?");
		return;
	}
	size_t used = 0;
	for (size_t i = 0; i < m->argc; i++) {
		if (used >= HTML_ARGV_MAX) {
			fputs("\xe2\x80\xa6", f);
			return;
		}
		if (i)
			fputc(' ', f);
		put_cut(f, m->argv[i], HTML_ARGV_MAX - used);
		used += strlen(m->argv[i]) + 1;
	}
}

/* ---- stacks ------------------------------------------------------------------------------------ */

static void html_frame(FILE *f, const struct ct_frame *fr, int own)
{
	fputs(own ? "<li class=\"own\">" : "<li>", f);
	if (fr->python) {
		fputs("<span class=\"py\">py</span> <code>", f);
		ct_html_put(f, fr->function ? fr->function : "?");
		fputs("</code> <span class=\"loc\">", f);
		ct_html_put(f, fr->file ? fr->file : "?");
		fprintf(f, ":%u</span></li>\n", fr->line);
		return;
	}
	char shortname[512];
	if (fr->function && strpbrk(fr->function, "<(")) {
		/* C++: the short name, the full one on hover */
		fputs("<code title=\"", f);
		ct_html_put(f, fr->function);
		fputs("\">", f);
		ct_html_put(f, ct_short_cxx(fr->function, shortname, sizeof shortname));
	} else {
		fputs("<code>", f);
		ct_html_put(f, fr->function ? fr->function : "?");
	}
	fputs("</code>", f);
	if (fr->file) {
		fputs(" <span class=\"loc\">", f);
		ct_html_put(f, fr->file_short ? fr->file_short : fr->file);
		if (fr->line)
			fprintf(f, ":%u", fr->line);
		fputs("</span>", f);
	}
	fputs(" <span class=\"mod\">", f);
	if (fr->module) {
		fputs("in ", f);
		ct_html_put(f, fr->module_name);
		if (!fr->file)
			fprintf(f, "+0x%" PRIx64, fr->offset);
		if (fr->build_id_mismatch)
			fputs(" (build id differs from the recorded one: not symbolized)", f);
	} else {
		fprintf(f, "0x%" PRIx64, fr->ip);
	}
	if (fr->inlined)
		fputs(" (inlined)", f);
	fputs("</span></li>\n", f);
}

/*
 * A site's label as the text reports write it (render.h: ct_site_label), or,
 * for a stack without a label frame, its innermost frame. frames must hold
 * the resolved stack (ct_frames_resolve).
 */
static const char *site_label(struct ct_model *m, uint32_t stack_id, char *buf, size_t cap)
{
	if (ct_site_label(m, stack_id, buf, cap))
		return buf;
	return ct_frame_label(&frames[0], 1, buf, cap);
}

/*
 * A cell with the stack's innermost frame of the user's own code (classify.h;
 * else its innermost frame), the whole stack in a <details> with that frame
 * in bold.
 */
static void td_site(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	fputs("<td class=\"site\">", f);
	if (!stack_id) {
		fputs("<span class=\"muted\">(no stack recorded)</span></td>", f);
		return;
	}
	if (!ct_frames_has(m, stack_id)) {
		fprintf(f, "<span class=\"muted\">(stack #%" PRIu32 " is missing from the dump)</span></td>",
			stack_id);
		return;
	}
	size_t n = ct_frames_resolve(m, stack_id, frames, CT_FRAMES_MAX);
	if (!n) {
		fputs("<span class=\"muted\">(empty stack)</span></td>", f);
		return;
	}
	char label[512];
	int own = ct_label_frame(frames, n);
	fputs("<details><summary><code>", f);
	ct_html_put(f, site_label(m, stack_id, label, sizeof label));
	fprintf(f, "</code> <span class=\"muted\">%zu frame%s</span></summary><ol class=\"stack\">\n", n,
		ct_plural_s(n));
	for (size_t i = 0; i < n; i++)
		html_frame(f, &frames[i], (int)i == own);
	fputs("</ol></details></td>", f);
}

/* The kind, then "API, dev N": what a site allocated. */
static void td_what(FILE *f, unsigned kind, unsigned api, int device)
{
	fprintf(f, "<td class=\"nw\">%s<br>%s, dev %d</td>", ct_kind_name(kind), ct_api_name(api),
		device);
}

/* A table of sites (peak, a device's peak, an out-of-memory's live set): the first --top. */
static void html_items(FILE *f, const struct ct_report_opts *o, const struct ct_item *v, size_t n,
		       size_t total, uint64_t total_bytes)
{
	static const char *const cols[] = {"#", "#bytes", "#allocations", "what", "site", NULL};
	size_t k = ct_items_shown(o, n);
	uint64_t shown = 0;
	table_open(f, "sites", 0, cols);
	for (size_t i = 0; i < k; i++) {
		fprintf(f, "<tr class=\"item\"><td class=\"n\">%zu</td>", i + 1);
		td_bytes(f, v[i].bytes);
		td_u64(f, v[i].count);
		td_what(f, v[i].kind, v[i].api, v[i].device);
		td_site(f, v[i].m, v[i].stack_id);
		fputs("</tr>\n", f);
		shown = ct_sat_add(shown, v[i].bytes);
	}
	more_row(f, 5, total - k, ct_plural(total - k, "site", "sites"), ct_sat_sub(total_bytes, shown));
	table_close(f, 0);
}

/* The same for a list whose every item is at hand. */
static void html_item_list(FILE *f, const struct ct_report_opts *o, const struct ct_item *v,
			   size_t n)
{
	uint64_t all = 0;
	for (size_t i = 0; i < n; i++)
		all = ct_sat_add(all, v[i].bytes);
	html_items(f, o, v, n, n, all);
}

/* ---- SVG charts ------------------------------------------------------------------------------- */

/* Geometry of every chart (viewBox units). */
#define CH_W 960
#define CH_H 300
#define CH_L 76
#define CH_R 18
#define CH_T 16
#define CH_B 42
#define CH_PW (CH_W - CH_L - CH_R)
#define CH_PH (CH_H - CH_T - CH_B)

struct chart {
	FILE *f;
	double t0;    /* x: t0 .. t0 + tmax ns since the process start; t0 is the first record */
	double tmax;
	double ymax;  /* y: 0 .. ymax bytes (the top tick) */
	int marks;    /* mark names are written along the top: the peak's label goes lower */
};

/* x of t (ns since the process start); times before the axis's start are at its start. */
static double chart_x(const struct chart *c, double t)
{
	t -= c->t0;
	return CH_L + CH_PW * (t < 0 ? 0.0 : t > c->tmax ? 1.0 : t / c->tmax);
}

static double chart_y(const struct chart *c, double v)
{
	return CH_T + CH_PH - CH_PH * (v > c->ymax ? 1.0 : v / c->ymax);
}

/* 1, 2 or 5 times a power of ten, the smallest at least raw (raw > 0). */
static double nice_step(double raw)
{
	double p = 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

/* A tick label: v in unit (name), "%g" so that 0.5 and 200 read as such. */
static void tick_label(char *buf, size_t cap, double v, double unit, const char *name)
{
	if (v == 0)
		snprintf(buf, cap, "0");
	else
		snprintf(buf, cap, "%.4g %s", v / unit, name);
}

/*
 * The start of a dump's time axes, in ns since the process start: its first
 * record (event or mark). What came before (imports, set-up before the first
 * CUDA call) would be an empty stretch squeezing the trace to the right.
 */
static double chart_origin(struct ct_model *m)
{
	uint64_t t = m->have_ts ? m->first_ts : UINT64_MAX;
	if (m->marks_list->n) {
		ct_marks_sort(m->marks_list);
		if (m->marks_list->v[0].ts_ns < t)
			t = m->marks_list->v[0].ts_ns;
	}
	return t == UINT64_MAX ? 0 : (double)ct_model_since_start(m, t);
}

/*
 * Open a chart whose time axis runs from t0 to tend (ns since the process
 * start; labelled from 0 at t0): the <svg> (data-t0, data-t-max, data-y-max:
 * the axes' start and ends, for checkers), the plot area, the grid, the
 * ticks of both axes in human units.
 */
static void chart_open(struct chart *c, FILE *f, const char *cls, const char *label, double t0,
		       double tend, double vmax)
{
	static const char *const bnames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	char b[48];
	c->f = f;
	c->t0 = t0;
	c->tmax = tend - t0 > 0 ? tend - t0 : 1;
	c->marks = 0;
	/* y: a 1-2-5 step in the largest binary unit below the maximum, about five ticks */
	if (vmax < 1)
		vmax = 1;
	double unit = 1;
	size_t u = 0;
	while (u + 1 < sizeof bnames / sizeof bnames[0] && vmax / unit >= 1024) {
		unit *= 1024;
		u++;
	}
	double ystep = nice_step(vmax / unit / 5);
	if (u == 0 && ystep < 1)
		ystep = 1;
	ystep *= unit;
	int yticks = 1; /* the top tick above the maximum: a line at the top would hide in the border */
	while (yticks * ystep <= vmax)
		yticks++;
	c->ymax = yticks * ystep;
	fprintf(f,
		"<svg class=\"chart %s\" viewBox=\"0 0 %d %d\" "
		"width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"",
		cls, CH_W, CH_H, CH_W, CH_H);
	ct_html_put(f, label);
	fprintf(f, "\" data-t0=\"%.0f\" data-t-max=\"%.0f\" data-y-max=\"%.0f\">\n", c->t0, c->tmax,
		c->ymax);
	fprintf(f, "<rect class=\"plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", CH_L, CH_T,
		CH_PW, CH_PH);
	for (int i = 0; i <= yticks; i++) {
		double y = chart_y(c, i * ystep);
		if (i)
			fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n",
				CH_L, y, CH_L + CH_PW, y);
		tick_label(b, sizeof b, i * ystep, unit, bnames[u]);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", CH_L - 6, y + 4, b);
	}
	/* x: a 1-2-5 step of nanoseconds, about six ticks at its multiples, labelled in the unit of
	 * the end with the decimals the step needs: the page's one clock (time since the process
	 * started), whatever time the axis starts at */
	double tstep = nice_step(c->tmax / 6);
	tend = c->t0 + c->tmax;
	if (tstep < 1)
		tstep = 1;
	double tunit = tend >= 1e9 ? 1e9 : tend >= 1e6 ? 1e6 : tend >= 1e3 ? 1e3 : 1;
	const char *tname = tunit == 1e9 ? "s" : tunit == 1e6 ? "ms" : tunit == 1e3 ? "\xc2\xb5s" : "ns";
	int decimals = 0;
	for (double q = tstep / tunit; q < 0.999 && decimals < 9; q *= 10)
		decimals++;
	for (double i = ceil(c->t0 / tstep - 1e-9); i * tstep <= tend * (1 + 1e-9); i++) {
		double x = chart_x(c, i * tstep);
		fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x,
			CH_T + CH_PH, x, CH_T + CH_PH + 4);
		if (i == 0)
			snprintf(b, sizeof b, "0");
		else
			snprintf(b, sizeof b, "%.*f %s", decimals, i * tstep / tunit, tname);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x,
			CH_T + CH_PH + 17, b);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">time since the process started", CH_L + CH_PW,
		CH_H - 4);
	if (t0 >= 1) {
		ct_fmt_dur((uint64_t)t0, b, sizeof b);
		fprintf(f, "; the axis starts at the first event, %s", b);
	}
	fputs("</text>\n", f);
}

static void chart_close(struct chart *c)
{
	fputs("</svg>\n", c->f);
}

/* A vertical marker line at t, labelled (e.g. the peak). */
static void chart_marker(struct chart *c, double t, const char *text)
{
	double x = chart_x(c, t);
	int right = x > CH_L + CH_PW * 0.7;
	fprintf(c->f, "<line class=\"peak\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x, CH_T, x,
		CH_T + CH_PH);
	fprintf(c->f, "<text class=\"peak\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\">%s</text>\n",
		right ? x - 4 : x + 4, CH_T + (c->marks ? 26 : 12), right ? "end" : "start", text);
}

/*
 * A series: n values; value i holds from time t0 + i * dt (step: to the next
 * one, drawn as a staircase) or is a point at that time (line). data-max is
 * its largest value, for checkers; label (escaped) is its tooltip.
 */
static void chart_series(struct chart *c, const char *color, const char *label, const uint64_t *v,
			 size_t n, double t0, double dt, int step, int dash)
{
	uint64_t mx = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] > mx)
			mx = v[i];
	fprintf(c->f, "<path class=\"s%s\" stroke=\"%s\" data-max=\"%" PRIu64 "\" d=\"",
		dash ? " dash" : "", color, mx);
	for (size_t i = 0; i < n; i++) {
		double x = chart_x(c, t0 + dt * (double)i), y = chart_y(c, (double)v[i]);
		if (!i)
			fprintf(c->f, "M%.1f %.1f", x, y);
		else if (step)
			fprintf(c->f, "V%.1f", y);
		else
			fprintf(c->f, "L%.1f %.1f", x, y);
		if (step)
			fprintf(c->f, "H%.1f", chart_x(c, t0 + dt * (double)(i + 1)));
	}
	fputs("\"><title>", c->f);
	ct_html_put(c->f, label);
	fputs("</title></path>\n", c->f);
}

/*
 * A series of n points (t[i] ns since the process start, in time order;
 * v[i]) joined by lines; cls: more classes ("dash", "pool"). data-max is the
 * largest value, for checkers. With area, the region under the line too, as
 * its own path (class "area", not a series).
 */
static void chart_line(struct chart *c, const char *color, const char *cls, const char *label,
		       const double *t, const uint64_t *v, size_t n, int area)
{
	uint64_t mx = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i] > mx)
			mx = v[i];
	if (area && n) {
		fprintf(c->f, "<path class=\"area\" fill=\"%s\" d=\"M%.1f %d", color, chart_x(c, t[0]),
			CH_T + CH_PH);
		for (size_t i = 0; i < n; i++)
			fprintf(c->f, "L%.1f %.1f", chart_x(c, t[i]), chart_y(c, (double)v[i]));
		fprintf(c->f, "L%.1f %dZ\"/>\n", chart_x(c, t[n - 1]), CH_T + CH_PH);
	}
	fprintf(c->f, "<path class=\"s%s%s\" stroke=\"%s\" data-max=\"%" PRIu64 "\" d=\"", *cls ? " " : "",
		cls, color, mx);
	for (size_t i = 0; i < n; i++)
		fprintf(c->f, "%c%.1f %.1f", i ? 'L' : 'M', chart_x(c, t[i]), chart_y(c, (double)v[i]));
	fputs("\"><title>", c->f);
	ct_html_put(c->f, label);
	fputs("</title></path>\n", c->f);
}

/* Characters a mark name shows as (ct_html_put: a control byte as \xNN; UTF-8 continuation bytes none). */
static size_t shown_chars(const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];
		k += b < 0x20 || b == 0x7f ? 4 : (b & 0xc0) == 0x80 ? 0 : 1;
	}
	return k;
}

#define MARK_GAP 3.0	  /* ticks closer than this (viewBox units) are thinned */
#define MARK_NAME_MAX 24  /* bytes of a name written on the chart (the tooltip has it whole) */
#define MARK_CHAR_W 6.2	  /* width of a character of text.mark (10px monospace: 0.6em) and a little */
#define MARK_NAME_GAP 8.0 /* the least room between two names */

/*
 * The marks (ct_marks_entries: each range once) as ticks across the plot at
 * their start, the names along its top: a tick within MARK_GAP of the one
 * drawn before is left out, a name that would run into the one written
 * before is left out (its tick stays, the tooltip names it). *named gets the
 * names written; returns the ticks drawn.
 */
static size_t chart_marks(struct chart *c, const struct ct_model *m, const struct ct_mark_entry *e,
			  size_t n, size_t *named)
{
	char b1[32], b2[32];
	double last_tick = -1e9, last_end = -1e9;
	size_t ticks = 0;
	*named = 0;
	c->marks = n != 0;
	fputs("<g class=\"marks\">\n", c->f);
	for (size_t i = 0; i < n; i++) {
		double t = (double)ct_model_since_start(m, e[i].ts_ns), x = chart_x(c, t);
		if (x - last_tick < MARK_GAP)
			continue;
		last_tick = x;
		ticks++;
		fprintf(c->f, "<line class=\"mark\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" data-t=\"%.0f\" "
			   "data-end=\"%" PRIu64 "\" data-name=\"",
			x, CH_T, x, CH_T + CH_PH, t, ct_model_since_start(m, e[i].end_ns));
		ct_html_put(c->f, e[i].name);
		fprintf(c->f, "\"><title>%s ", ct_mark_kind_name(e[i].kind));
		ct_html_put(c->f, e[i].name);
		ct_fmt_dur((uint64_t)t, b1, sizeof b1);
		if (e[i].end_ns > e[i].ts_ns) {
			ct_fmt_dur(ct_model_since_start(m, e[i].end_ns), b2, sizeof b2);
			fprintf(c->f, ": %s to %s", b1, b2);
		} else {
			fprintf(c->f, ": at %s", b1);
		}
		if (e[i].merged)
			fprintf(c->f, " (recorded %" PRIu32 " more time%s: counted once)", e[i].merged,
				e[i].merged == 1 ? "" : "s");
		fputs("</title></line>\n", c->f);
		size_t len = strlen(e[i].name), cut = len > MARK_NAME_MAX ? MARK_NAME_MAX : len;
		while (cut < len && cut && ((unsigned char)e[i].name[cut] & 0xc0) == 0x80)
			cut--;
		double w = MARK_CHAR_W * (double)(shown_chars(e[i].name, cut) + (cut < len));
		/* after the tick, or before it near the right end */
		int before = x + 2 + w > CH_L + CH_PW;
		double lo = before ? x - 2 - w : x + 2;
		if (!len || lo < last_end + MARK_NAME_GAP || lo < CH_L)
			continue;
		last_end = lo + w;
		(*named)++;
		fprintf(c->f, "<text class=\"mark\" x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" data-w=\"%.1f\">",
			before ? x - 2 : x + 2, CH_T + 10, before ? "end" : "start", w);
		put_cut(c->f, e[i].name, cut);
		fputs("</text>\n", c->f);
	}
	fputs("</g>\n", c->f);
	return ticks;
}

/* A legend entry: a swatch, the label (escaped), a muted note. */
static void legend_item(FILE *f, const char *color, const char *label, const char *note)
{
	fprintf(f, "<li><svg width=\"14\" height=\"10\" aria-hidden=\"true\"><rect width=\"14\" "
		   "height=\"10\" rx=\"2\" fill=\"%s\"/></svg> ",
		color);
	ct_html_put(f, label);
	if (note)
		fprintf(f, " <span class=\"muted\">%s</span>", note);
	fputs("</li>\n", f);
}

/* One line of the frag chart: a field of every sample. */
struct frag_line {
	const char *label;
	size_t off; /* offsetof the field in struct ct_frag_state */
	int dash;   /* dashed: a line that often lies on another one */
};

static const struct frag_line frag_lines[] = {
	{"live outside pools", offsetof(struct ct_frag_state, bytes), 0},
	{"span of those", offsetof(struct ct_frag_state, span), 0},
	{"free inside the span", offsetof(struct ct_frag_state, free), 0},
	{"largest hole", offsetof(struct ct_frag_state, hole), 1},
	{"pool used", offsetof(struct ct_frag_state, pool_used), 0},
	{"pool reserved (estimate)", offsetof(struct ct_frag_state, pool_reserved), 1},
	{"VMM mapped", offsetof(struct ct_frag_state, vmm_mapped), 0},
	{"VMM physical", offsetof(struct ct_frag_state, vmm_physical), 0},
};
#define FRAG_LINES (sizeof frag_lines / sizeof frag_lines[0])

static uint64_t frag_field(const struct ct_frag_state *s, size_t line)
{
	uint64_t v;
	memcpy(&v, (const char *)s + frag_lines[line].off, sizeof v);
	return v;
}

/*
 * The points of frag line `line` of a device: its samples from the chart's
 * start t0 on (the last sample before t0 at t0: nothing happened in between),
 * the state at the device's peak in its place in time, so that the line
 * passes through the peak's dot however far apart the samples are (a sample
 * is the state at a moment, and a short peak falls between two), and the
 * state at the end after the last sample. t and v hold nsamples + 2 points;
 * returns the number written.
 */
static size_t frag_points(const struct ct_model *m, const struct ct_frag_view *dv, size_t line,
			  double t0, double *t, uint64_t *v)
{
	size_t n = 0;
	int peak_in = !dv->have_peak;
	for (size_t i = 0; i < dv->nsamples; i++) {
		double ti = (double)ct_view_frag_time(m, i);
		if (!peak_in && (double)dv->peak_ns < ti) {
			t[n] = (double)dv->peak_ns;
			v[n++] = frag_field(&dv->at_peak, line);
			peak_in = 1;
		}
		if (ti < t0 && i + 1 < dv->nsamples && (double)ct_view_frag_time(m, i + 1) <= t0)
			continue; /* before the axis, and not the last one before it */
		t[n] = ti < t0 ? t0 : ti;
		v[n++] = frag_field(&dv->samples[i], line);
	}
	if (!peak_in) {
		t[n] = (double)dv->peak_ns;
		v[n++] = frag_field(&dv->at_peak, line);
	}
	double end = (double)ct_model_duration_ns(m);
	if (n && t[n - 1] < end) {
		t[n] = end;
		v[n++] = frag_field(&dv->at_end, line);
	}
	return n;
}

/* ---- timeline ---------------------------------------------------------------------------------- */

struct ranked {
	uint64_t max;
	size_t idx;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->max != y->max)
		return x->max > y->max ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_ranked_idx(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A device whose stream-ordered pools held memory: its reserved bytes over time (frag.c's estimate). */
struct pool_line {
	const struct ct_frag_view *dv;
	const char *color; /* its device series' */
	double *t;
	uint64_t *v;
	size_t n;
	uint64_t max;
};

static size_t pool_lines(struct ct_model *m, const struct ct_frag_view *dv, size_t ndv, double t0,
			 struct pool_line *out)
{
	size_t line = 0, n = 0;
	while (strcmp(frag_lines[line].label, "pool reserved (estimate)"))
		line++;
	for (size_t i = 0; i < ndv && n < HTML_SERIES_MAX; i++) {
		struct pool_line p = {&dv[i], "#8a93a0", ct_xcalloc(dv[i].nsamples + 2, sizeof(double)),
				      ct_xcalloc(dv[i].nsamples + 2, sizeof(uint64_t)), 0, 0};
		p.n = frag_points(m, &dv[i], line, t0, p.t, p.v);
		for (size_t k = 0; k < p.n; k++)
			p.max = p.v[k] > p.max ? p.v[k] : p.max;
		if (p.max && p.n >= 2) {
			out[n++] = p;
			continue;
		}
		free(p.t);
		free(p.v);
	}
	return n;
}

static void html_timeline(FILE *f, const struct ct_report_opts *o, struct ct_model *m, size_t d,
			  const struct ct_oom_view *ooms, size_t nooms)
{
	char b1[32], b2[32], label[160], note[96];
	const struct ct_timeline *tl = &m->tl;
	fprintf(f, "<h3 id=\"d%zu-timeline\">Live bytes over time</h3>\n", d);
	if (!tl->started || !tl->nseries) {
		fputs("<p class=\"muted\">No allocations.</p>\n", f);
		return;
	}
	size_t nb = o->buckets ? o->buckets : 1;
	double origin = chart_origin(m);
	uint64_t start, from = ct_model_start_ns(m) + (uint64_t)origin;
	uint64_t bns = ct_tl_bucket_ns_from(tl, from, nb, &start);
	/* bucket 0's start: at most a fine bucket before the first record */
	double t0 = (double)ct_model_since_start(m, start);
	/* every series' maximum; the largest HTML_SERIES_MAX are drawn, in (kind, device) order */
	uint64_t *vals = ct_xcalloc(nb * tl->nseries, sizeof *vals);
	struct ranked *rk = ct_xcalloc(tl->nseries, sizeof *rk);
	for (size_t s = 0; s < tl->nseries; s++) {
		ct_tl_resample_from(tl, s, from, nb, vals + s * nb);
		rk[s].idx = s;
		for (size_t i = 0; i < nb; i++)
			if (vals[s * nb + i] > rk[s].max)
				rk[s].max = vals[s * nb + i];
	}
	qsort(rk, tl->nseries, sizeof *rk, cmp_ranked);
	size_t drawn = tl->nseries < HTML_SERIES_MAX ? tl->nseries : HTML_SERIES_MAX;
	qsort(rk, drawn, sizeof *rk, cmp_ranked_idx);
	uint64_t ymax = 0;
	for (size_t k = 0; k < drawn; k++)
		if (rk[k].max > ymax)
			ymax = rk[k].max;
	/* memory the stream-ordered pools hold: the device series drop when a block goes back to its
	 * pool, the memory does not */
	size_t ndv;
	struct ct_frag_view *dv = ct_view_frag(m, &ndv);
	struct pool_line pl[HTML_SERIES_MAX];
	size_t npl = pool_lines(m, dv, ndv, origin, pl);
	for (size_t i = 0; i < npl; i++)
		ymax = pl[i].max > ymax ? pl[i].max : ymax;
	ct_fmt_dur(bns, b1, sizeof b1);
	fprintf(f, "<p class=\"muted\">The most bytes live in each of %zu buckets of %s, per memory kind "
		   "and device%s.</p>\n",
		nb, b1,
		npl ? "; the shaded areas: the bytes the stream-ordered pools of a device hold (reserved, "
		      "frag's estimate, at its samples, the peak and the end), in use or not"
		    : "");
	struct chart c;
	chart_open(&c, f, "timeline", "live bytes over time per memory kind and device", origin,
		   t0 + (double)bns * (double)nb, (double)ymax);
	for (size_t i = 0; i < npl; i++) {
		for (size_t k = 0; k < drawn; k++)
			if (tl->series[rk[k].idx].kind == CT_KIND_DEVICE &&
			    tl->series[rk[k].idx].device == pl[i].dv->device)
				pl[i].color = palette[k % PALETTE_N];
		snprintf(label, sizeof label,
			 "held by stream-ordered pools, dev %d (reserved, estimate): at most %s",
			 pl[i].dv->device, ct_fmt_bytes(pl[i].max, b1, sizeof b1));
		chart_line(&c, pl[i].color, "pool dash", label, pl[i].t, pl[i].v, pl[i].n, 1);
	}
	for (size_t k = 0; k < drawn; k++) {
		const struct ct_tl_series *se = &tl->series[rk[k].idx];
		snprintf(label, sizeof label, "%s dev %d: at most %s", ct_kind_name(se->kind), se->device,
			 ct_fmt_bytes(rk[k].max, b1, sizeof b1));
		chart_series(&c, palette[k % PALETTE_N], label, vals + rk[k].idx * nb, nb, t0, (double)bns, 1,
			     0);
	}
	struct ct_mark_entry *me;
	size_t nme = ct_marks_entries(m->marks_list, m->last_ts, &me), named = 0, ticks = 0;
	if (nme)
		ticks = chart_marks(&c, m, me, nme, &named);
	if (m->peak_seen) {
		snprintf(label, sizeof label, "peak %s", ct_fmt_bytes(m->peak_bytes, b1, sizeof b1));
		chart_marker(&c, (double)ct_model_since_start(m, m->peak_ts), label);
	}
	for (size_t i = 0; i < nooms; i++) {
		double x = chart_x(&c, (double)ooms[i].time_ns), y = CH_T + CH_PH;
		x = x < CH_L + 5 ? CH_L + 5 : x > CH_L + CH_PW - 5 ? CH_L + CH_PW - 5 : x; /* inside the plot */
		ct_fmt_dur(ooms[i].time_ns, b2, sizeof b2);
		fprintf(f, "<path class=\"oom\" d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\"><title>out of memory: "
			   "%s of %s at %s</title></path>\n",
			x - 5, y, x + 5, y, x, y - 9, ct_api_name(ooms[i].api),
			ct_fmt_bytes(ooms[i].size, b1, sizeof b1), b2);
	}
	chart_close(&c);
	fputs("<ul class=\"legend\">\n", f);
	for (size_t k = 0; k < drawn; k++) {
		const struct ct_tl_series *se = &tl->series[rk[k].idx];
		snprintf(label, sizeof label, "%s, dev %d", ct_kind_name(se->kind), se->device);
		snprintf(note, sizeof note, "max %s, at end %s", ct_fmt_bytes(rk[k].max, b1, sizeof b1),
			 ct_fmt_bytes(se->cur, b2, sizeof b2));
		legend_item(f, palette[k % PALETTE_N], label, note);
	}
	for (size_t i = 0; i < npl; i++) {
		snprintf(label, sizeof label, "held by stream-ordered pools, dev %d", pl[i].dv->device);
		snprintf(note, sizeof note, "reserved (estimate): max %s, at end %s",
			 ct_fmt_bytes(pl[i].max, b1, sizeof b1),
			 ct_fmt_bytes(pl[i].dv->at_end.pool_reserved, b2, sizeof b2));
		legend_item(f, pl[i].color, label, note);
		free(pl[i].t);
		free(pl[i].v);
	}
	fputs("</ul>\n", f);
	if (nme) {
		uint64_t merged = 0;
		for (size_t i = 0; i < nme; i++)
			merged += me[i].merged;
		fprintf(f, "<p class=\"muted marks\" data-entries=\"%zu\" data-ticks=\"%zu\" "
			   "data-named=\"%zu\">Marks and ranges: %zu (each range once",
			nme, ticks, named, nme);
		if (merged)
			fprintf(f, ": %" PRIu64 " record%s of a range or mark already open counted in it",
				merged, merged == 1 ? "" : "s");
		fprintf(f, "), %zu drawn as ticks at their start, %zu named; ", ticks, named);
		fputs("ticks closer than 3 units are left out and a name that would run into the one before "
		      "is (its tooltip names it).</p>\n", f);
	}
	free(me);
	free(dv);
	if (drawn < tl->nseries)
		fprintf(f, "<p class=\"muted\">%zu smaller series %s not drawn.</p>\n", tl->nseries - drawn,
			ct_plural(tl->nseries - drawn, "is", "are"));
	if (tl->dropped_series)
		fprintf(f, "<p class=\"muted\">More than %d kind/device series: the rest were not tracked.</p>\n",
			CT_TL_MAX_SERIES);
	free(rk);
	free(vals);
}

/* ---- the lead: what to look at first ---------------------------------------------------------- */

/* A site in a line of text: its label (td_site's), or td_site's words for what stands in for it. */
static void put_site(FILE *f, struct ct_model *m, uint32_t stack_id)
{
	char label[512];
	size_t n = 0;
	if (!stack_id)
		fputs("<span class=\"site muted\">(no stack recorded)</span>", f);
	else if (!ct_frames_has(m, stack_id))
		fprintf(f, "<span class=\"site muted\">(stack #%" PRIu32 " is missing from the dump)</span>",
			stack_id);
	else if (!(n = ct_frames_resolve(m, stack_id, frames, CT_FRAMES_MAX)))
		fputs("<span class=\"site muted\">(empty stack)</span>", f);
	if (!n)
		return;
	fputs("<code class=\"site\">", f);
	ct_html_put(f, site_label(m, stack_id, label, sizeof label));
	fputs("</code>", f);
}

/*
 * Right under the dump's title, so that it is on screen without scrolling:
 * the largest leak site (the leaks table's first row) and the peak's largest
 * site (the peak table's first row), with their bytes and links to the tables.
 */
static void html_lead(FILE *f, struct ct_model *m, size_t d, const struct ct_assessment *a)
{
	char b1[32], b2[32];
	fprintf(f, "<div class=\"lead\" id=\"d%zu-lead\">\n", d);
	const struct ct_finding *top = NULL;
	for (size_t i = 0; i < a->nleak && !top; i++)
		if (a->v[i].supp < 0)
			top = &a->v[i];
	if (top) {
		fprintf(f, "<p class=\"lead-leak\" id=\"d%zu-lead-leak\" data-bytes=\"%" PRIu64
			   "\" data-count=\"%" PRIu64 "\">Largest leak: <strong>%s</strong> in %" PRIu64
			   " allocation%s (<span class=\"chip c-%s\">%s</span>) at ",
			d, top->it.bytes, top->it.count, ct_fmt_bytes(top->it.bytes, b1, sizeof b1),
			top->it.count, top->it.count == 1 ? "" : "s", ct_class_name(top->cls),
			ct_class_name(top->cls));
		put_site(f, m, top->it.stack_id);
		fprintf(f, " &#8594; <a href=\"#d%zu-leaks\">leaks</a></p>\n", d);
	} else {
		fprintf(f, "<p class=\"lead-leak ok\" id=\"d%zu-lead-leak\" data-bytes=\"0\">%s</p>\n", d,
			m->leak_count ? "No leak outside the suppressions."
				      : "No leaks: every allocation was freed.");
	}
	if (m->peak_seen) {
		struct ct_model *one[1] = {m};
		size_t n;
		struct ct_item *v = ct_peak_items(one, 1, &n);
		ct_fmt_dur(ct_model_since_start(m, m->peak_ts), b2, sizeof b2);
		fprintf(f, "<p class=\"lead-peak\" id=\"d%zu-lead-peak\" data-peak=\"%" PRIu64
			   "\" data-bytes=\"%" PRIu64 "\">Peak device memory: <strong>%s</strong> at %s",
			d, m->peak_bytes, n ? v[0].bytes : 0, ct_fmt_bytes(m->peak_bytes, b1, sizeof b1),
			b2);
		if (n) {
			fprintf(f, "; its largest site: <strong>%s</strong> in %" PRIu64 " allocation%s at ",
				ct_fmt_bytes(v[0].bytes, b1, sizeof b1), v[0].count, v[0].count == 1 ? "" : "s");
			put_site(f, v[0].m, v[0].stack_id);
		}
		fprintf(f, " &#8594; <a href=\"#d%zu-peak\">peak</a></p>\n", d);
		free(v);
	} else {
		fprintf(f, "<p class=\"lead-peak muted\" id=\"d%zu-lead-peak\" data-bytes=\"0\">No device memory "
			   "was allocated.</p>\n", d);
	}
	fputs("</div>\n", f);
}

/* ---- header ------------------------------------------------------------------------------------ */

static void fact(FILE *f, const char *name)
{
	fprintf(f, "<dt>%s</dt><dd>", name);
}

static void fact_str(FILE *f, const char *name, const char *v)
{
	if (!v)
		return;
	fact(f, name);
	ct_html_put(f, v);
	fputs("</dd>\n", f);
}

static void html_notes(FILE *f, const struct ct_model *m)
{
	if (m->read.status == CT_READ_TRUNCATED)
		fprintf(f, "<p class=\"warn\">The dump is truncated at offset %" PRIu64
			   " (the process died while writing); what came before is reported.</p>\n",
			m->read.truncated_offset);
	if (!m->end_seen)
		fputs("<p class=\"warn\">No END record: the process crashed, was killed or is still "
		      "running; &#8220;live at exit&#8221; means live at the end of the dump.</p>\n",
		      f);
	if (m->dropped > m->dropped_signal)
		fprintf(f, "<p class=\"warn\"><strong>%" PRIu64 " %s dropped</strong> (ring "
			   "buffers full): the data is incomplete.</p>\n",
			m->dropped - m->dropped_signal,
			ct_plural(m->dropped - m->dropped_signal, "event was", "events were"));
	if (m->dropped_signal)
		fprintf(f, "<p class=\"warn\"><strong>%" PRIu64 " %s not recorded</strong>: the data "
			   "is incomplete.</p>\n",
			m->dropped_signal, ct_signal_drops_text(m->dropped_signal));
	if (m->dropped_records)
		fprintf(f, "<p class=\"warn\">%" PRIu64 " %s.</p>\n", m->dropped_records,
			ct_record_drops_text(m->dropped_records));
	if (m->pauses)
		fprintf(f, "<p class=\"warn\"><strong>%s</strong>: the data is incomplete.</p>\n",
			ct_pauses_text(m));
}

static void card(FILE *f, int bad, const char *attrs, const char *value, const char *label)
{
	fprintf(f, "<div class=\"card%s\"%s><div class=\"v\">%s</div><div class=\"l\">%s</div></div>\n",
		bad ? " bad" : "", attrs, value, label);
}

static void html_header(FILE *f, struct ct_model *m, size_t d, uint64_t oom_count,
			const struct ct_assessment *a)
{
	char b1[32], b2[32], b3[160], attrs[96];
	uint64_t dur = ct_model_duration_ns(m);
	fputs("<h2>", f);
	if (m->have_process) {
		fprintf(f, "pid %" PRIu32 ": <code>", m->pid);
		put_command(f, m);
		fputs("</code>", f);
	} else {
		fputs("an unknown process (no process record)", f);
	}
	fputs("</h2>\n", f);
	html_lead(f, m, d, a);
	fprintf(f, "<nav class=\"toc\"><a href=\"#d%zu-timeline\">Timeline</a><a href=\"#d%zu-peak\">"
		   "Peak</a><a href=\"#d%zu-leaks\">Leaks</a>",
		d, d, d);
	if (oom_count)
		fprintf(f, "<a href=\"#d%zu-oom\">Out of memory</a>", d);
	fprintf(f, "<a href=\"#d%zu-frag\">Fragmentation</a><a href=\"#d%zu-streams\">Streams</a></nav>\n",
		d, d);
	html_notes(f, m);

	fputs("<div class=\"cards\">\n", f);
	if (m->peak_seen) {
		snprintf(attrs, sizeof attrs, " id=\"d%zu-peak-bytes\" data-bytes=\"%" PRIu64 "\"", d,
			 m->peak_bytes);
		ct_fmt_dur(ct_model_since_start(m, m->peak_ts), b2, sizeof b2);
		snprintf(b3, sizeof b3, "peak device memory, at %s", b2);
		card(f, 0, attrs, ct_fmt_bytes(m->peak_bytes, b1, sizeof b1), b3);
	} else {
		card(f, 0, "", "none", "no device memory allocated");
	}
	snprintf(attrs, sizeof attrs, " data-bytes=\"%" PRIu64 "\"", m->leak_bytes);
	snprintf(b3, sizeof b3, "not freed: %" PRIu64 " allocation%s in %zu site%s", m->leak_count,
		 ct_plural_s(m->leak_count), m->nleaks, ct_plural_s(m->nleaks));
	card(f, m->leak_count != 0, attrs, ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), b3);
	snprintf(b1, sizeof b1, "%" PRIu64, oom_count);
	card(f, oom_count != 0, "", b1, "allocations failed with out-of-memory");
	ct_fmt_dur(dur, b1, sizeof b1);
	snprintf(b3, sizeof b3, "traced; %" PRIu64 " allocation%s, %" PRIu64 " free%s", m->allocations,
		 ct_plural_s(m->allocations), m->frees, ct_plural_s(m->frees));
	card(f, 0, "", b1, b3);
	fputs("</div>\n", f);

	fputs("<dl class=\"facts\">\n", f);
	if (m->have_process) {
		fact(f, "process");
		fprintf(f, "pid %" PRIu32 ", ppid %" PRIu32 "%s</dd>\n", m->pid, m->ppid,
			m->forked ? " (fork child)" : "");
	}
	fact_str(f, "host", m->host);
	fact_str(f, "executable", m->exe);
	fact_str(f, "working directory", m->cwd);
	fact_str(f, "cumtrace", m->version);
	if (m->start_realtime_ns) {
		time_t secs = (time_t)(m->start_realtime_ns / 1000000000u);
		struct tm tm;
		if (gmtime_r(&secs, &tm) && strftime(b3, sizeof b3, "%Y-%m-%d %H:%M:%S UTC", &tm)) {
			fact(f, "started");
			fprintf(f, "%s</dd>\n", b3);
		}
	}
	fact(f, "duration");
	ct_fmt_dur(dur, b1, sizeof b1);
	fprintf(f, "%s</dd>\n", b1);
	fact(f, "dump");
	ct_html_put(f, m->path ? m->path : "(memory)");
	fprintf(f, " (%s): ", ct_fmt_bytes(m->read.file_bytes, b1, sizeof b1));
	if (m->read.status == CT_READ_TRUNCATED)
		fprintf(f, "<strong>truncated</strong> at offset %" PRIu64, m->read.truncated_offset);
	else
		fputs("complete", f);
	fprintf(f, ", %s</dd>\n", m->end_seen ? "clean exit" : "<strong>no END record</strong>");
	fact(f, "events");
	fprintf(f, "%" PRIu64 " (allocations %" PRIu64 ", frees %" PRIu64 ", failed calls %" PRIu64
		   ")</dd>\n",
		m->events, m->allocations, m->frees, m->failed_calls);
	fact(f, "dropped events");
	fprintf(f, "%s%" PRIu64 "%s</dd>\n", m->dropped ? "<strong>" : "", m->dropped,
		m->dropped ? "</strong>" : "");
	if (m->unmatched_frees || m->double_allocs) {
		fact(f, "inconsistencies");
		fprintf(f, "%" PRIu64 " free%s of unknown pointers, %" PRIu64
			   " allocation%s over a live block</dd>\n",
			m->unmatched_frees, ct_plural_s(m->unmatched_frees), m->double_allocs,
			ct_plural_s(m->double_allocs));
	}
	if (m->marks) {
		fact(f, "marks");
		fprintf(f, "%" PRIu64 " (%" PRIu64 " range%s, %" PRIu64 " instant%s)", m->marks,
			m->marks_list->ranges, ct_plural_s(m->marks_list->ranges), m->marks_list->instants,
			ct_plural_s(m->marks_list->instants));
		struct ct_mark_entry *me;
		size_t n = ct_marks_entries(m->marks_list, m->last_ts, &me);
		uint64_t merged = 0;
		for (size_t i = 0; i < n; i++)
			merged += me[i].merged;
		if (merged)
			fprintf(f, "; %zu marks and ranges counted once each (%" PRIu64 " recorded twice)", n,
				merged);
		free(me);
		fputs("</dd>\n", f);
	}
	fputs("</dl>\n", f);
}

/* ---- peak -------------------------------------------------------------------------------------- */

static void html_phases(FILE *f, const struct ct_report_opts *o, const struct ct_model *m)
{
	static const char *const cols[] = {"#peak", "#at", "#growth", "#count", "phase", NULL};
	char b[32];
	size_t n;
	struct ct_phase_view *v = ct_view_phases(m, &n);
	if (!n) {
		free(v);
		return;
	}
	fprintf(f, "<details class=\"phases\"><summary><strong>Phases</strong> (%zu): the most device "
		   "bytes of all devices inside each NVTX range name and each span between marks; growth "
		   "is the largest rise within one instance</summary>\n",
		n);
	table_open(f, "phases", 0, cols);
	size_t k = ct_items_shown(o, n);
	for (size_t i = 0; i < k; i++) {
		fputs("<tr>", f);
		td_bytes(f, v[i].peak_bytes);
		td_dur(f, v[i].peak_ns);
		fprintf(f, "<td class=\"n\">+%s</td>", ct_fmt_bytes(v[i].growth_bytes, b, sizeof b));
		td_u64(f, v[i].count);
		fputs("<td>", f);
		if (!strcmp(v[i].kind, "start")) {
			fputs("(before the first mark)", f);
		} else {
			fprintf(f, "%s <code>", v[i].kind);
			ct_html_put(f, v[i].name);
			fputs("</code>", f);
		}
		if (v[i].open_at_end)
			fprintf(f, " <span class=\"muted\">(%" PRIu64 " still open at the end)</span>",
				v[i].open_at_end);
		fputs("</td></tr>\n", f);
	}
	more_row(f, 5, n - k, "phases", 0);
	table_close(f, 0);
	fputs("</details>\n", f);
	free(v);
}

/* The two layers at the peak (analyses/layers.c): owners, then each framework dev's peaks and blocks. */
static void html_layers(FILE *f, const struct ct_report_opts *o, struct ct_model *m)
{
	char b1[32], b2[32], b3[32];
	size_t nfw;
	const struct ct_fw_dev *fw = ct_fw_devs(m, &nfw);
	uint64_t own[CT_OWNER_COUNT];
	if (!ct_view_owners_shown(m, own))
		return;
	fputs("<p>By owner at the peak:", f);
	for (int w = 0, first = 1; w < CT_OWNER_COUNT; w++) {
		if (!own[w] && !(w == CT_OWNER_PYTORCH && nfw))
			continue;
		fprintf(f, "%s %s <strong>%s</strong>", first ? "" : ",", ct_owner_name(w),
			ct_fmt_bytes(own[w], b1, sizeof b1));
		first = 0;
	}
	fputs("</p>\n", f);
	for (size_t i = 0; i < nfw; i++) {
		const struct ct_fw_dev *d = &fw[i];
		ct_fmt_dur(ct_model_since_start(m, d->peak_allocated_ts), b3, sizeof b3);
		if (d->fw == CT_FW_TORCH)
			fprintf(f, "<h4>%s, device %d: peak allocated %s at %s, peak reserved %s</h4>\n",
				ct_fw_name(d->fw), d->device, ct_fmt_bytes(d->peak_allocated, b1, sizeof b1), b3,
				ct_fmt_bytes(d->peak_reserved, b2, sizeof b2));
		else
			fprintf(f, "<h4>%s, device %d: peak used %s at %s</h4>\n", ct_fw_name(d->fw), d->device,
				ct_fmt_bytes(d->peak_allocated, b1, sizeof b1), b3);
		size_t n;
		struct ct_item *v = ct_view_fw_peak_items(m, d, &n);
		html_item_list(f, o, v, n);
		free(v);
	}
}

static void html_peak(FILE *f, const struct ct_report_opts *o, struct ct_model *m, size_t d)
{
	char b1[32], b2[32];
	fprintf(f, "<h3 id=\"d%zu-peak\">Peak device memory</h3>\n", d);
	if (!m->peak_seen) {
		fputs("<p class=\"muted\">No device memory was allocated.</p>\n", f);
		html_phases(f, o, m);
		return;
	}
	ct_fmt_dur(ct_model_since_start(m, m->peak_ts), b2, sizeof b2);
	fprintf(f, "<p><strong>%s</strong> (%" PRIu64 " bytes) at %s: device and VMM physical bytes of "
		   "all devices together. Live then, by site:</p>\n",
		ct_fmt_bytes(m->peak_bytes, b1, sizeof b1), m->peak_bytes, b2);
	struct ct_model *one[1] = {m};
	size_t n;
	struct ct_item *v = ct_peak_items(one, 1, &n);
	html_item_list(f, o, v, n);
	free(v);
	html_layers(f, o, m);
	size_t nd, more;
	const struct ct_dev_peak **dp = ct_view_dev_peaks(m, &nd, &more);
	if (nd > 1) {
		fputs("<h4>Each device at its own peak</h4>\n", f);
		for (size_t i = 0; i < nd; i++) {
			ct_fmt_dur(ct_model_since_start(m, dp[i]->peak_ts), b2, sizeof b2);
			fprintf(f, "<details class=\"devpeak\"><summary>device %d: <strong>%s</strong> at %s"
				   "</summary>\n",
				dp[i]->device, ct_fmt_bytes(dp[i]->peak_bytes, b1, sizeof b1), b2);
			v = ct_view_dev_peak_items(m, dp[i], &n);
			html_item_list(f, o, v, n);
			free(v);
			fputs("</details>\n", f);
		}
		if (more) {
			char line[128];
			fprintf(f, "<p class=\"muted\">%s</p>\n", ct_more_devices(more, line, sizeof line));
		}
	}
	free(dp);
	html_phases(f, o, m);
}

/* ---- leaks ------------------------------------------------------------------------------------- */

/* The class chip; its tooltip says which frame matched which rule. */
static void td_class(FILE *f, const struct ct_finding *x)
{
	fprintf(f, "<td><span class=\"chip c-%s\"", ct_class_name(x->cls));
	const struct ct_rule *r = x->why.rule >= 0 ? ct_rule_get((size_t)x->why.rule) : NULL;
	size_t k = r ? ct_finding_frames(x, afr) : 0;
	if (r && x->why.frame >= 0 && (size_t)x->why.frame < k) {
		fprintf(f, " title=\"frame #%d: ", x->why.frame);
		ct_html_put(f, ct_rule_subject(&afr[x->why.frame], r->field));
		fprintf(f, " matches %s ", ct_rule_field_name(r->field));
		ct_html_put(f, r->pattern);
		fputc('"', f);
	}
	fprintf(f, ">%s</span>", ct_class_name(x->cls));
	if (r)
		fprintf(f, " <span class=\"muted\">%s</span>", r->label);
	if (x->in_baseline)
		fputs(" <span class=\"muted\">in the baseline</span>", f);
	fputs("</td>", f);
}

static void tally_chip(FILE *f, int cls, const struct ct_tally *t)
{
	char b[32];
	fprintf(f, "<span class=\"t\"><span class=\"chip c-%s\">%s</span>", ct_class_name(cls),
		ct_class_title(cls));
	if (!t->sites)
		fputs(" none", f);
	else if (cls == CT_CLASS_GROWTH)
		fprintf(f, " %" PRIu64 " site%s, +%s", t->sites, ct_plural_s(t->sites),
			ct_fmt_bytes(t->bytes, b, sizeof b));
	else
		fprintf(f, " %" PRIu64 " site%s, %" PRIu64 " allocation%s, %s", t->sites,
			ct_plural_s(t->sites), t->count, ct_plural_s(t->count),
			ct_fmt_bytes(t->bytes, b, sizeof b));
	fputs("</span>", f);
}

static void html_growth(FILE *f, const struct ct_report_opts *o, struct ct_model *m,
			const struct ct_assessment *a)
{
	static const char *const cols[] = {"#", "#growth", "#grew in", "#live before", "#live last",
					   "class", "what", "site", NULL};
	char b[32];
	const struct ct_growth_result *g = ct_growth_get(m);
	if (!g || !g->have_series)
		return;
	uint64_t steps = g->series.boundaries ? g->series.boundaries - 1 : 0;
	if (steps < g->min_grew) {
		fprintf(f, "<p class=\"muted\">Growth across steps: the marks give too few steps (%" PRIu64
			   ") to tell.</p>\n",
			steps);
		return;
	}
	fputs("<h4>Growing sites</h4>\n<p class=\"muted\">Live bytes sampled at each step of <code>", f);
	ct_html_put(f, g->series.name);
	fprintf(f, "</code> (%s, %" PRIu64 " step%s); a site grows when its live bytes rose in at least "
		   "%u of the last %u step%s.</p>\n",
		ct_series_kind_name(g->series.kind), steps, ct_plural_s(steps), g->min_grew, g->window,
		ct_plural_s(g->window));
	size_t n = 0, shown = 0;
	for (size_t i = a->nleak; i < a->n; i++)
		n += a->v[i].supp < 0;
	if (!n) {
		fputs("<p class=\"ok\">No site grew.</p>\n", f);
		return;
	}
	size_t k = ct_items_shown(o, n);
	table_open(f, "growth", 0, cols);
	for (size_t i = a->nleak; i < a->n && shown < k; i++) {
		const struct ct_finding *x = &a->v[i];
		if (x->supp >= 0)
			continue;
		const struct ct_growth_site *gs = x->growth;
		fprintf(f, "<tr class=\"grow\" data-bytes=\"%" PRIu64 "\"><td class=\"n\">%zu</td>",
			gs->growth, ++shown);
		fprintf(f, "<td class=\"n\">+%s</td>", ct_fmt_bytes(gs->growth, b, sizeof b));
		fprintf(f, "<td class=\"n\">%u of %u</td>", gs->grew, gs->steps);
		td_bytes(f, gs->live_before);
		td_bytes(f, gs->live_last);
		td_class(f, x);
		td_what(f, x->it.kind, x->it.api, x->it.device);
		td_site(f, m, x->it.stack_id);
		fputs("</tr>\n", f);
	}
	more_row(f, 8, n - k, "growing sites", 0);
	table_close(f, 0);
}

static void html_leaks(FILE *f, const struct ct_report_opts *o, struct ct_model *m, size_t d,
		       const struct ct_assessment *a)
{
	static const char *const cols[] = {"#", "#bytes", "#allocations", "class", "reason", "what",
					   "site", NULL};
	char b1[32], reason[64];
	fprintf(f, "<h3 id=\"d%zu-leaks\">Leaks</h3>\n", d);
	/* the classes of the sites not suppressed (suppressed ones are counted apart) */
	struct ct_tally cls[CT_CLASS_COUNT], supp = {0};
	memset(cls, 0, sizeof cls);
	size_t n = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct ct_finding *x = &a->v[i];
		ct_tally_add(x->supp >= 0 ? &supp : &cls[x->cls], x);
		n += i < a->nleak && x->supp < 0;
	}
	if (!m->leak_count) {
		fputs("<p class=\"ok\">No leaks: every allocation was freed.</p>\n", f);
	} else {
		fprintf(f, "<p>%" PRIu64 " allocation%s, %s (%" PRIu64 " bytes) not freed.</p>\n",
			m->leak_count, ct_plural_s(m->leak_count),
			ct_fmt_bytes(m->leak_bytes, b1, sizeof b1), m->leak_bytes);
		fputs("<p class=\"tally\">", f);
		for (int c = 0; c < CT_CLASS_COUNT; c++)
			tally_chip(f, c, &cls[c]);
		if (o->supp && supp.sites)
			fprintf(f, "<span class=\"t\">suppressed: %" PRIu64 " site%s, %s</span>", supp.sites,
				ct_plural_s(supp.sites), ct_fmt_bytes(supp.bytes, b1, sizeof b1));
		fputs("</p>\n", f);
	}
	if (n) {
		size_t k = ct_items_shown(o, n), shown = 0;
		uint64_t rest = 0;
		table_open(f, "leaks", 0, cols);
		for (size_t i = 0; i < a->nleak; i++) {
			const struct ct_finding *x = &a->v[i];
			if (x->supp >= 0)
				continue;
			if (shown == k) {
				rest = ct_sat_add(rest, x->it.bytes);
				continue;
			}
			fprintf(f, "<tr class=\"leak\" data-class=\"%s\" data-bytes=\"%" PRIu64
				   "\" data-count=\"%" PRIu64 "\"><td class=\"n\">%zu</td>",
				ct_class_name(x->cls), x->it.bytes, x->it.count, ++shown);
			td_bytes(f, x->it.bytes);
			td_u64(f, x->it.count);
			td_class(f, x);
			fprintf(f, "<td>%s</td>", ct_leak_reason(x->it.leak, reason, sizeof reason));
			td_what(f, x->it.kind, x->it.api, x->it.device);
			td_site(f, m, x->it.stack_id);
			fputs("</tr>\n", f);
		}
		more_row(f, 7, n - k, ct_plural(n - k, "site", "sites"), rest);
		table_close(f, 0);
	}
	html_growth(f, o, m, a);
}

/* ---- out of memory ----------------------------------------------------------------------------- */

static void html_oom(FILE *f, const struct ct_report_opts *o, struct ct_model *m, size_t d,
		     const struct ct_oom_view *v, size_t n, uint64_t count, uint64_t bytes)
{
	static const char *const cols[] = {"#", "#at", "API", "#requested", "kind", "#device",
					   "#free / total then", "#live on the device", "site", NULL};
	char b1[32], b2[32];
	if (!count)
		return;
	fprintf(f, "<h3 id=\"d%zu-oom\">Out of memory</h3>\n<p>%" PRIu64 " allocation%s failed with "
		   "out-of-memory (%s requested).</p>\n",
		d, count, ct_plural_s(count), ct_fmt_bytes(bytes, b1, sizeof b1));
	size_t k = ct_items_shown(o, n);
	table_open(f, "oom", 1, cols);
	for (size_t i = 0; i < k; i++) {
		const struct ct_oom_view *x = &v[i];
		fprintf(f, "<tr class=\"oom\" data-bytes=\"%" PRIu64 "\"><td class=\"n\">%zu</td>", x->size,
			i + 1);
		td_dur(f, x->time_ns);
		fprintf(f, "<td>%s</td>", ct_api_name(x->api));
		td_bytes(f, x->size);
		fprintf(f, "<td>%s</td><td class=\"n\">%d</td>", ct_kind_name(x->kind), x->device);
		if (x->have_info)
			fprintf(f, "<td class=\"n\">%s / %s</td>", ct_fmt_bytes(x->free_bytes, b1, sizeof b1),
				ct_fmt_bytes(x->total_bytes, b2, sizeof b2));
		else
			fputs("<td class=\"n muted\">not recorded</td>", f);
		fprintf(f, "<td class=\"n\">%s in %" PRIu64 " allocation%s</td>",
			ct_fmt_bytes(x->live_bytes, b1, sizeof b1), x->live_count,
			ct_plural_s(x->live_count));
		td_site(f, m, x->stack_id);
		fputs("</tr>\n", f);
		if (!x->sites_total)
			continue;
		size_t ni;
		struct ct_item *items = ct_view_oom_items(m, i, &ni);
		fprintf(f, "<tr class=\"liveset\"><td></td><td colspan=\"8\"><details><summary>live on "
			   "device %d then, by site (%zu site%s)</summary>\n",
			x->device, x->sites_total, ct_plural_s(x->sites_total));
		html_items(f, o, items, ni, x->sites_total, x->live_bytes);
		fputs("</details></td></tr>\n", f);
		free(items);
	}
	more_row(f, 9, (size_t)count - k, "failures", 0);
	table_close(f, 1);
}

/* ---- fragmentation ----------------------------------------------------------------------------- */

/*
 * The frag report's samples of a device as lines, and the state at the
 * device's peak as dots on the peak's line, each line passing through its
 * dot (frag_points).
 */
static void frag_chart(FILE *f, struct ct_model *m, const struct ct_frag_view *dv)
{
	char b[32], label[96];
	size_t ns = dv->nsamples, np[FRAG_LINES];
	uint64_t mx[FRAG_LINES] = {0}, ymax = 0;
	if (!ns) {
		fputs("<p class=\"muted\">Nothing live at the sample times.</p>\n", f);
		return;
	}
	double origin = chart_origin(m), tend = origin;
	double *t = ct_xcalloc(FRAG_LINES * (ns + 2), sizeof *t);
	uint64_t *v = ct_xcalloc(FRAG_LINES * (ns + 2), sizeof *v);
	for (size_t l = 0; l < FRAG_LINES; l++) {
		np[l] = frag_points(m, dv, l, origin, t + l * (ns + 2), v + l * (ns + 2));
		for (size_t i = 0; i < np[l]; i++)
			mx[l] = v[l * (ns + 2) + i] > mx[l] ? v[l * (ns + 2) + i] : mx[l];
		ymax = mx[l] > ymax ? mx[l] : ymax;
		if (np[l] && t[l * (ns + 2) + np[l] - 1] > tend)
			tend = t[l * (ns + 2) + np[l] - 1];
	}
	if (!ymax || ns < 2 || np[0] < 2) { /* a line needs two points: a dump that spans no time */
		fputs(ymax ? "<p class=\"muted\">One sample time only: no chart over time.</p>\n"
			   : "<p class=\"muted\">Nothing live at the sample times.</p>\n",
		      f);
		free(t);
		free(v);
		return;
	}
	struct chart c;
	snprintf(label, sizeof label, "fragmentation of device %d over time", dv->device);
	chart_open(&c, f, "frag", label, origin, tend, (double)ymax);
	for (size_t l = 0; l < FRAG_LINES; l++) {
		if (!mx[l])
			continue;
		snprintf(label, sizeof label, "%s: at most %s at the sample times, the peak and the end",
			 frag_lines[l].label, ct_fmt_bytes(mx[l], b, sizeof b));
		chart_line(&c, palette[l % PALETTE_N], frag_lines[l].dash ? "dash" : "", label, t + l * (ns + 2),
			   v + l * (ns + 2), np[l], 0);
	}
	free(t);
	free(v);
	if (dv->have_peak) {
		double x = chart_x(&c, (double)dv->peak_ns);
		snprintf(label, sizeof label, "peak %s", ct_fmt_bytes(dv->at_peak.device_bytes, b, sizeof b));
		chart_marker(&c, (double)dv->peak_ns, label);
		for (size_t l = 0; l < FRAG_LINES; l++) {
			uint64_t val = frag_field(&dv->at_peak, l);
			if (!mx[l])
				continue;
			fprintf(f, "<circle class=\"at-peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" "
				   "data-bytes=\"%" PRIu64 "\"><title>at the peak: %s %s</title></circle>\n",
				x, chart_y(&c, (double)val), palette[l % PALETTE_N], val, frag_lines[l].label,
				ct_fmt_bytes(val, b, sizeof b));
		}
	}
	chart_close(&c);
	fputs("<ul class=\"legend\">\n", f);
	for (size_t l = 0; l < FRAG_LINES; l++)
		if (mx[l])
			legend_item(f, palette[l % PALETTE_N], frag_lines[l].label, NULL);
	fputs("</ul>\n", f);
}

/* A row of the state table: the figure at the peak (when there is one) and at the end. */
static void frag_row(FILE *f, const char *name, const struct ct_frag_view *dv, size_t line)
{
	fprintf(f, "<tr><td>%s</td>", name);
	if (dv->have_peak)
		td_bytes(f, frag_field(&dv->at_peak, line));
	td_bytes(f, frag_field(&dv->at_end, line));
	fputs("</tr>\n", f);
}

static void frag_table(FILE *f, const struct ct_frag_view *dv)
{
	char b[32];
	const struct ct_frag_state *st[2] = {&dv->at_peak, &dv->at_end};
	size_t first = dv->have_peak ? 0 : 1;
	fputs("<table class=\"fragstate\"><thead><tr><th></th>", f);
	if (dv->have_peak) {
		ct_fmt_dur(dv->peak_ns, b, sizeof b);
		fprintf(f, "<th class=\"n\">at its peak (%s)</th>", b);
	}
	fputs("<th class=\"n\">at the end</th></tr></thead><tbody>\n", f);
	fputs("<tr><td>blocks outside pools</td>", f);
	for (size_t i = first; i < 2; i++)
		td_u64(f, st[i]->blocks);
	fputs("</tr>\n", f);
	for (size_t l = 0; l < 4; l++)
		frag_row(f, frag_lines[l].label, dv, l);
	fputs("<tr><td>holes</td>", f);
	for (size_t i = first; i < 2; i++)
		td_u64(f, st[i]->holes);
	fputs("</tr>\n<tr><td>fragmentation (1 &#8722; largest hole / free)</td>", f);
	for (size_t i = first; i < 2; i++)
		fprintf(f, "<td class=\"n\">%u%%</td>", ct_frag_percent(st[i]));
	fputs("</tr>\n", f);
	for (size_t l = 4; l < FRAG_LINES; l++)
		frag_row(f, frag_lines[l].label, dv, l);
	fputs("<tr><td>VMM reserved</td>", f);
	for (size_t i = first; i < 2; i++)
		td_bytes(f, st[i]->vmm_reserved);
	fputs("</tr>\n</tbody></table>\n", f);
}

static void html_frag(FILE *f, struct ct_model *m, size_t d)
{
	fprintf(f, "<h3 id=\"d%zu-frag\">Fragmentation</h3>\n", d);
	size_t n;
	struct ct_frag_view *v = ct_view_frag(m, &n);
	if (!n) {
		fputs("<p class=\"muted\">No device memory was allocated.</p>\n", f);
		free(v);
		return;
	}
	fputs("<p class=\"muted\">Per device: the device allocations made outside stream-ordered pools, "
	      "the span from the lowest to the highest of them and the free holes inside it; the pools' "
	      "used and reserved bytes; VMM. The lines are samples (the state just before each time), "
	      "the dots the state at the device's peak.</p>\n",
	      f);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "<h4 id=\"d%zu-frag-dev%d\">Device %d</h4>\n", d, v[i].device, v[i].device);
		frag_chart(f, m, &v[i]);
		frag_table(f, &v[i]);
	}
	free(v);
}

/* ---- streams ----------------------------------------------------------------------------------- */

static void html_streams(FILE *f, const struct ct_report_opts *o, struct ct_model *m, size_t d)
{
	static const char *const cols[] = {"stream",	 "#device",   "#created", "#destroyed",
					   "#syncs",	 "#sync time", "#allocs",  "#allocated",
					   "#live end", "#peak",     "#peak at", "#async frees",
					   "#cross in", "#pending",  NULL};
	char b1[32], b2[32];
	fprintf(f, "<h3 id=\"d%zu-streams\">Streams</h3>\n", d);
	struct ct_streams_totals t;
	size_t n;
	struct ct_stream_view *v = ct_view_streams(m, &t, &n);
	if (!n && !t.device_syncs) {
		fputs("<p class=\"muted\">No stream activity.</p>\n", f);
		free(v);
		return;
	}
	ct_fmt_dur(t.sync_ns, b1, sizeof b1);
	ct_fmt_dur(t.device_sync_ns, b2, sizeof b2);
	fprintf(f, "<p>%zu stream%s: %" PRIu64 " created, %" PRIu64 " destroyed; %" PRIu64
		   " stream synchronization%s (%s), %" PRIu64 " device synchronization%s (%s). ",
		n, ct_plural_s(n), t.creates, t.destroys, t.syncs, ct_plural_s(t.syncs), b1,
		t.device_syncs, ct_plural_s(t.device_syncs), b2);
	fprintf(f, "Cross-stream frees: %" PRIu64 " (%s); frees pending at the end: %" PRIu64 " (%s).</p>\n",
		t.cross, ct_fmt_bytes(t.cross_bytes, b1, sizeof b1), t.pending,
		ct_fmt_bytes(t.pending_bytes, b2, sizeof b2));
	size_t k = ct_items_shown(o, n);
	table_open(f, "streams", 1, cols);
	for (size_t i = 0; i < k; i++) {
		const struct ct_stream_view *s = &v[i];
		fputs("<tr class=\"stream\"><td class=\"nw\"><code>", f);
		ct_html_put(f, s->name);
		fprintf(f, "</code></td><td class=\"n\">%d</td>", s->device);
		td_u64(f, s->creates);
		td_u64(f, s->destroys);
		td_u64(f, s->syncs);
		td_dur(f, s->sync_ns);
		td_u64(f, s->allocs);
		td_bytes(f, s->alloc_bytes);
		td_bytes(f, s->live);
		td_bytes(f, s->peak);
		if (s->peak)
			td_dur(f, s->peak_ns);
		else
			fputs("<td class=\"n\">-</td>", f);
		td_u64(f, s->frees);
		td_bytes(f, s->cross_in_bytes);
		td_bytes(f, s->pending_bytes);
		fputs("</tr>\n", f);
	}
	more_row(f, 14, n - k, "streams", 0);
	table_close(f, 1);
	if (t.untracked)
		fprintf(f, "<p class=\"muted\">%" PRIu64 " %s of streams beyond the limit %s not "
			   "counted.</p>\n",
			t.untracked, ct_plural(t.untracked, "event", "events"), ct_plural(t.untracked, "is", "are"));
	free(v);
}

/* ---- the page ---------------------------------------------------------------------------------- */

static void html_dump(FILE *f, const struct ct_report_opts *o, struct ct_model *m, size_t d)
{
	size_t nooms;
	uint64_t oom_count, oom_bytes;
	struct ct_oom_view *ooms = ct_view_ooms(m, &nooms, &oom_count, &oom_bytes);
	fprintf(f, "<section class=\"dump\" id=\"d%zu\" data-pid=\"%" PRIu32 "\">\n", d, m->pid);
	struct ct_assessment *a = ct_assess(o, &m, 1, NULL);
	html_header(f, m, d, oom_count, a);
	html_timeline(f, o, m, d, ooms, nooms);
	html_peak(f, o, m, d);
	html_leaks(f, o, m, d, a);
	html_oom(f, o, m, d, ooms, nooms, oom_count, oom_bytes);
	html_frag(f, m, d);
	html_streams(f, o, m, d);
	fputs("</section>\n", f);
	ct_assessment_free(a);
	free(ooms);
}

/* Several dumps: one row each, linking to its section. */
static void html_overview(FILE *f, struct ct_model *const *ms, size_t n)
{
	static const char *const cols[] = {"#", "#pid", "command", "#peak", "#not freed",
					   "#out of memory", "dump", NULL};
	fputs("<section class=\"dump\" id=\"overview\"><h2>Dumps</h2>\n", f);
	table_open(f, "overview", 0, cols);
	for (size_t i = 0; i < n; i++) {
		const struct ct_model *m = ms[i];
		size_t nooms;
		uint64_t oom_count, oom_bytes;
		free(ct_view_ooms(m, &nooms, &oom_count, &oom_bytes));
		fprintf(f, "<tr><td class=\"n\"><a href=\"#d%zu\">%zu</a></td><td class=\"n\">%" PRIu32
			   "</td><td><code>",
			i + 1, i + 1, m->pid);
		put_command(f, m);
		fputs("</code></td>", f);
		td_bytes(f, m->peak_bytes);
		td_bytes(f, m->leak_bytes);
		td_u64(f, oom_count);
		fprintf(f, "<td>%s%s</td></tr>\n",
			m->read.status == CT_READ_TRUNCATED ? "truncated" : "complete",
			m->end_seen ? "" : ", no END record");
	}
	table_close(f, 0);
	fputs("</section>\n", f);
}

static void render_html(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			size_t n)
{
	uint8_t digest[32];
	char hash[48];
	ct_sha256(css, sizeof css - 1, digest);
	ct_base64(digest, sizeof digest, hash, sizeof hash);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
	fprintf(f, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		   "style-src 'sha256-%s'; base-uri 'none'; form-action 'none'\">\n",
		hash);
	fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>cumtrace "
	      "report: ",
	      f);
	if (n == 1 && ms[0]->have_process) {
		fprintf(f, "pid %" PRIu32 " ", ms[0]->pid);
		put_cut(f, ms[0]->argc ? ms[0]->argv[0] : ms[0]->exe ? ms[0]->exe : "?", 200);
	} else {
		fprintf(f, "%zu dump%s", n, ct_plural_s(n));
	}
	fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n", css);
	fprintf(f, "<header class=\"top\"><h1>cumtrace memory report</h1><p>%zu dump%s; "
		   "cumtrace-report %s</p></header>\n<main>\n",
		n, ct_plural_s(n), o->tool_version ? o->tool_version : "?");
	if (n > 1)
		html_overview(f, ms, n);
	for (size_t i = 0; i < n; i++)
		html_dump(f, o, ms[i], i + 1);
	fputs("</main>\n<footer>Written by cumtrace-report: self-contained, no script, no network. "
	      "Stacks open with a click; series and markers have tooltips.</footer>\n</body>\n</html>\n",
	      f);
}

/* Everything the page shows is another report's analysis. */
const struct ct_report ct_report_html = {
	.uses = CT_USES(&ct_analysis_growth, &ct_analysis_phases, &ct_analysis_oom, &ct_analysis_frag,
			&ct_analysis_streams),
	.render = render_html,
};
