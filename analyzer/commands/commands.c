/* The command table, generated from commands.def, and what runs a command (commands.h). */
#include "commands/commands.h"

#include <string.h>

#include "render/document.h"
#include "render/render.h"

#define CT_COMMAND(id, name, report, formats, deffmt, mind, maxd, flags, options, help) \
	extern const struct ct_report report;
#include "commands/commands.def"
#undef CT_COMMAND

/* Indexed by enum ct_cmd. */
static const struct ct_command commands[CT_CMD_COUNT] = {
#define CT_COMMAND(id, nm, rep, fmts, deffmt, mind, maxd, fl, opts, hl)                                \
	[CT_CMD_##id] = {.name = nm,                                                                   \
			 .help = hl,                                                                   \
			 .report = &rep,                                                               \
			 .formats = fmts,                                                              \
			 .default_format = CT_FMT_##deffmt,                                            \
			 .min_dumps = mind,                                                            \
			 .max_dumps = maxd,                                                            \
			 .flags = fl,                                                                  \
			 .options = opts},
#include "commands/commands.def"
#undef CT_COMMAND
};

static const char *const fmt_names[CT_FMT_COUNT] = {
	[CT_FMT_TEXT] = "text",
	[CT_FMT_JSON] = "json",
	[CT_FMT_CSV] = "csv",
	[CT_FMT_FOLDED] = "folded",
	[CT_FMT_SPEEDSCOPE] = "speedscope",
	[CT_FMT_PICKLE] = "pickle",
	[CT_FMT_JUNIT] = "junit",
	[CT_FMT_SARIF] = "sarif",
	[CT_FMT_HTML] = "html",
};

const struct ct_command *ct_command_get(int cmd)
{
	return cmd >= 0 && cmd < CT_CMD_COUNT ? &commands[cmd] : NULL;
}

int ct_cmd_parse(const char *name)
{
	for (int i = 0; i < CT_CMD_COUNT; i++)
		if (!strcmp(name, commands[i].name))
			return i;
	return -1;
}

int ct_fmt_parse(const char *name)
{
	for (int i = 0; i < CT_FMT_COUNT; i++)
		if (fmt_names[i] && !strcmp(name, fmt_names[i]))
			return i;
	return -1;
}

const char *ct_fmt_name(int fmt)
{
	return fmt >= 0 && fmt < CT_FMT_COUNT && fmt_names[fmt] ? fmt_names[fmt] : "unknown";
}

void ct_commands_help(FILE *f)
{
	for (int c = 0; c < CT_CMD_COUNT; c++) {
		fprintf(f, "  %-18s %s\n", commands[c].name, commands[c].help);
		const char *sep = "                     [";
		for (int k = 0; k < CT_OPT_COUNT; k++)
			if (commands[c].options & 1u << k) {
				fprintf(f, "%s%s", sep, ct_opt_name(k));
				sep = " ";
			}
		if (commands[c].options)
			fputs("]\n", f);
	}
}

unsigned ct_command_options(int cmd, int format)
{
	const struct ct_command *c = ct_command_get(cmd);
	if (!c)
		return 0;
	unsigned opts = c->options;
	/* a JSON document holds the sections of the CT_CMD_JSON_ALWAYS commands (ct_report) */
	if (format == CT_FMT_JSON && c->report->json)
		for (int i = 0; i < CT_CMD_COUNT; i++)
			if (commands[i].flags & CT_CMD_JSON_ALWAYS)
				opts |= commands[i].options;
	return opts;
}

const char *ct_opt_commands(int opt, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (int c = 0; c < CT_CMD_COUNT && len < cap; c++)
		if (commands[c].options & 1u << opt) {
			int k = snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", commands[c].name);
			len += k > 0 ? (size_t)k : 0;
		}
	return buf;
}

static void attach(struct ct_model *m, const struct ct_report *r, const struct ct_report_opts *o)
{
	for (const struct ct_analysis *const *a = r->uses; a && *a; a++)
		ct_model_attach(m, *a, o);
}

void ct_report_attach(struct ct_model *m, const struct ct_report_opts *o)
{
	const struct ct_command *c = ct_command_get(o->cmd);
	if (c)
		attach(m, c->report, o);
}

void ct_report_attach_all(struct ct_model *m, const struct ct_report_opts *o)
{
	for (int i = 0; i < CT_CMD_COUNT; i++)
		attach(m, commands[i].report, o);
}

void ct_report(FILE *f, const struct ct_report_opts *o, struct ct_model *const *models, size_t n)
{
	const struct ct_command *c = ct_command_get(o->cmd);
	if (!c)
		return;
	const struct ct_report *r = c->report;
	if (o->format != CT_FMT_JSON || !r->json) {
		if (r->render)
			r->render(f, o, models, n);
		else
			ct_render_per_format(f, o, models, n, r->text, r->csv);
		return;
	}
	ct_json_section_fn sections[CT_CMD_COUNT];
	size_t ns = 0;
	for (int i = 0; i < CT_CMD_COUNT; i++) {
		const struct ct_report *ri = commands[i].report;
		if (ri->json && ((commands[i].flags & CT_CMD_JSON_ALWAYS) || i == o->cmd))
			sections[ns++] = ri->json;
	}
	ct_json_document(f, o, models, n, sections, ns);
}

uint64_t ct_report_leak_count(struct ct_model *const *models, size_t n)
{
	uint64_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += models[i]->leak_count;
	return c;
}
