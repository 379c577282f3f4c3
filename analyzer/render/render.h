/*
 * What every report shares: the site lists (leak groups, sites at the peak),
 * the process line and notes, stacks in text, JSON and CSV, small formatting.
 * The strings these write come from an untrusted dump: text output goes
 * through ct_fput_safe, JSON through the escaping writer, CSV quoted.
 */
#ifndef CT_ANALYZER_RENDER_H
#define CT_ANALYZER_RENDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/json.h"
#include "commands/options.h"
#include "model/model.h"

/* One line of a leak or peak list: a leak group or a site at the peak. */
struct ct_item {
	struct ct_model *m;
	uint32_t stack_id;
	uint16_t api;
	uint8_t kind;
	int16_t device;
	const struct ct_leak *leak; /* NULL for peak sites */
	/* items made from a site: its index in m->sites, which numbers sites in the order they
	 * were first seen (so orders them in time); leak items have leak->first_ts instead */
	uint32_t site;
	uint64_t count, bytes;
};

/* Every leak group of the models, largest first (caller frees). */
struct ct_item *ct_leak_items(struct ct_model *const *ms, size_t nm, size_t *n);
/* Every device-bytes site live at each model's peak, largest first (caller frees). */
struct ct_item *ct_peak_items(struct ct_model *const *ms, size_t nm, size_t *n);
/* The item of site s (one of m->sites) with the given count and bytes. */
struct ct_item ct_site_item(struct ct_model *m, const struct ct_site *s, uint64_t count,
			    uint64_t bytes);
/*
 * The sites of m that weigh returns nonzero for, with the count and bytes it
 * sets (a count of 0 leaves the site out too), largest first (caller frees).
 */
typedef int (*ct_site_weigh_fn)(void *ctx, const struct ct_model *m, const struct ct_site *s,
				uint64_t *count, uint64_t *bytes);
struct ct_item *ct_site_items(struct ct_model *m, ct_site_weigh_fn weigh, void *ctx, size_t *n);
/* Sort items largest first (bytes, count, pid, first seen, stack, kind, device, api). */
void ct_items_sort(struct ct_item *v, size_t n);
/* How many of n items --top lets through. */
size_t ct_items_shown(const struct ct_report_opts *o, size_t n);

/*
 * Reports by device (each device at its own peak) show at most this many
 * devices, the highest peaks: each costs a pass over the sites, and a dump
 * may name all 65536 device numbers. frag tracks as many (FRAG_MAX_DEVICES).
 */
#define CT_DEVICES_SHOWN 64
/* "... and N more devices, not shown one by one (...)" into buf; returns buf. */
const char *ct_more_devices(size_t more, char *buf, size_t cap);

/* "123 ns", "1.5 us", "2.000 ms", "1.250 s" */
void ct_fmt_dur(uint64_t ns, char *buf, size_t cap);
/* A dump-supplied string on a terminal (NULL prints nothing). */
void ct_put_safe(FILE *f, const char *s);
/* "pid 1234 (python train.py)" */
void ct_put_proc(FILE *f, const struct ct_model *m);
/* Truncation, no clean exit, dropped events: two-space indented lines. */
void ct_put_notes(FILE *f, const struct ct_model *m);
/* Imported and shared memory, multicast (issue 19 §4): "  imported: ..." lines, none without any. */
void ct_imports_put_text(FILE *f, const struct ct_imports *im);
/* What n calls lost in signal handlers were, after the number: "call made inside a signal handler was". */
const char *ct_signal_drops_text(uint64_t n);
/* The same for n marks, counters or memory samples lost (CT_DROPS_F_RECORDS): "mark, ... was not recorded ...". */
const char *ct_record_drops_text(uint64_t n);
/* "tracing was paused N times for S s in all (...): calls made then were not recorded" */
const char *ct_pauses_text(const struct ct_model *m);
/* 1 when the model allocated on more than one device. */
int ct_multi_device(const struct ct_model *m);

/*
 * The first --top items as "#1   8.0 MiB in 2 allocations (device, cudaMalloc)"
 * lines (", device N" on a multi-device model), each with its stack, then
 * "... and N more sites: SIZE (--top 0 shows all)".
 */
void ct_text_items(FILE *f, const struct ct_report_opts *o, struct ct_model *m,
		   const struct ct_item *v, size_t n);

/*
 * One frame as a short label: a Python frame "func (file:line)"; a native one
 * "func", or "func (file:line)" with with_line when the line is known; else
 * "module+0xOFF", else "0xIP". Returns buf (truncated to cap).
 */
const char *ct_frame_label(const struct ct_frame *fr, int with_line, char *buf, size_t cap);
/* A C++ name shortened for people (text and HTML; JSON keeps the full one): template argument
 * lists as "<...>", parameter lists and a trailing " const" dropped ("(anonymous namespace)" and
 * operator names kept): "at::empty<float>(c10::IntArrayRef) const" -> "at::empty<...>". */
const char *ct_short_cxx(const char *name, char *out, size_t cap);
/*
 * A path as people are shown it (text, labels, SARIF messages; JSON keeps the
 * recorded one): normalised ("./a/../b.py" -> "b.py"), from the package on
 * when installed ("/usr/lib/python3/site-packages/torch/nn/modules/module.py"
 * -> "torch/nn/modules/module.py"), else relative to cwd (the traced process's
 * directory, NULL for none) when under it. Returns buf (truncated to cap).
 */
const char *ct_display_path(const char *path, const char *cwd, char *buf, size_t cap);
/*
 * A frame as a site's label: "FUNC (FILE:LINE)" (FILE as ct_display_path shows
 * it, a native frame's relative to its compilation directory; C++ names as
 * ct_short_cxx), "FUNC (MODULE+0xOFF)" or "MODULE+0xOFF" without a line.
 * m gives the process's directory (may be NULL). Returns buf.
 */
const char *ct_frame_site_label(const struct ct_model *m, const struct ct_frame *fr, char *buf,
				size_t cap);
/*
 * The label of a site: its label frame (classify.h: ct_label_frame, the
 * mixed view whatever --native says) as ct_frame_site_label writes it. Returns
 * that frame (valid until the next call), or NULL with buf "" when the stack
 * has none. Every report's site label comes from here.
 */
const struct ct_frame *ct_site_label(struct ct_model *m, uint32_t stack_id, char *buf, size_t cap);
/* "      site: LABEL" (nothing when there is no label); ct_text_stack starts with it. */
void ct_text_site_label(FILE *f, struct ct_model *m, uint32_t stack_id);
/* "label": "LABEL", "label_frame": {function, file (as recorded), line, python, module}; nulls without one. */
void ct_json_site_label(struct ct_json *j, struct ct_model *m, uint32_t stack_id);
/* The label as one CSV field (empty without one). */
void ct_csv_site_label(FILE *f, struct ct_model *m, uint32_t stack_id);
/* --full-stacks: text stacks show every frame (default: library runs folded, nothing outside main). */
void ct_stack_set_full(int on);
/* A stack as indented lines: "site: LABEL" (ct_text_site_label), then its frames (ct_text_frames). */
void ct_text_stack(FILE *f, struct ct_model *m, uint32_t stack_id);
/* The frames alone, "at func (file:line)  in module" lines, for a report that puts lines of its own
 * between the site line and the frames. */
void ct_text_frames(FILE *f, struct ct_model *m, uint32_t stack_id);
/* A stack as a JSON array of frame objects. */
void ct_json_stack(struct ct_json *j, struct ct_model *m, uint32_t stack_id);
/*
 * One CSV text field from a dump (names, paths, functions; never numbers),
 * quoted when needed; NULL writes nothing. A field that starts with = + - @,
 * a tab or a carriage return is quoted with a ' before it, so that no
 * spreadsheet runs it as a formula; bytes that are not valid UTF-8 are
 * written as the text \xNN.
 */
void ct_csv_field(FILE *f, const char *s);
/* A stack as one CSV field: "func (file:line) in module;..." innermost first. */
void ct_csv_stack(FILE *f, struct ct_model *m, uint32_t stack_id);
/* Sorted distinct devices of kind (of every device-bytes kind when kind is 0); caller frees. */
int16_t *ct_devices_of(struct ct_model *const *ms, size_t nm, unsigned kind, size_t *n);
/* Index of dev in the sorted devs (n when absent: check devs[i] == dev). */
size_t ct_find_dev(const int16_t *devs, size_t n, int16_t dev);
/* A device number as a JSON key ("0", "1", "-1"). */
void ct_json_dev_key(struct ct_json *j, int dev);

/* "sites_total": n and "sites": the first --top of the n items. */
void ct_json_items(struct ct_json *j, const struct ct_report_opts *o, const struct ct_item *v,
		   size_t n);
/* A leak group or peak site as a JSON object (pid, count, bytes, kind, api, stack...). */
void ct_json_item(struct ct_json *j, const struct ct_item *it);
/* Its fields alone, to add more to the object (the caller opens and closes it). */
void ct_json_item_fields(struct ct_json *j, const struct ct_item *it);

/*
 * Render a command in o->format, JSON aside (commands.c writes the JSON
 * document): csv over all models, or text as one block per model separated
 * by a blank line.
 */
void ct_render_per_format(FILE *f, const struct ct_report_opts *o, struct ct_model *const *ms,
			  size_t n,
			  void (*text)(FILE *, const struct ct_report_opts *, struct ct_model *),
			  void (*csv)(FILE *, const struct ct_report_opts *, struct ct_model *const *,
				      size_t));

struct ct_marklist;
/*
 * Summary lines for the steps and counters of one dump ("  steps: ...",
 * "  counter NAME (device D): ..."); nothing when it has none.
 */
void ct_marks_put_summary(FILE *f, const struct ct_marklist *l, const struct ct_infer *inf);
/* The same in a dump's JSON object: "steps" and "counters", only when there are any. */
void ct_marks_json(struct ct_json *j, const struct ct_marklist *l, const struct ct_infer *inf);

/*
 * ---- the memory no allocation call shows (issue 19 §6, memsample.c) ----
 * Per device with samples: "device D in use X = allocations Y + pool reserve
 * + graph pool reserve + context, driver and other Z" for its highest sample
 * and its last one; as JSON, the object "device_memory" (by device: samples,
 * highest, last). Nothing when m holds no sample.
 */
void ct_put_device_memory(FILE *f, const struct ct_model *m);
void ct_json_device_memory(struct ct_json *j, const struct ct_model *m);

#endif
