/*
 * Timestamps: the hot path reads raw ticks (ct_ticks in ct.h), the writer
 * turns them into CLOCK_MONOTONIC ns as it writes records.
 *
 * Ticks are the CPU's constant-rate counter when it can be trusted: on
 * x86-64 the TSC when /proc/cpuinfo lists constant_tsc (same rate at every
 * frequency) and either nonstop_tsc (keeps counting in deep idle states) or
 * the kernel keeps CLOCK_MONOTONIC on the TSC itself (its current
 * clocksource is "tsc", which the kernel leaves when its watchdog finds the
 * TSC unstable; a virtual machine whose hypervisor does not pass the
 * invariant-TSC bit through lists no nonstop_tsc); on aarch64 the generic
 * timer's virtual count. CUMTRACE_CLOCK=tsc takes the counter wherever it
 * moves; CUMTRACE_CLOCK=monotonic never. Otherwise ticks are
 * CLOCK_MONOTONIC ns already and the conversion is the identity. Reading the
 * counter costs a fraction of a clock_gettime on a paravirtual clock
 * (kvm-clock).
 *
 * The conversion is piecewise linear through calibration points ("knots":
 * ticks and CLOCK_MONOTONIC read together), one added by the writer at the
 * start of every round, so it follows whatever rate CLOCK_MONOTONIC keeps
 * (NTP slews it). One function serves every thread, so it is consistent
 * across threads, and it is non-decreasing: a knot's value is never below
 * its predecessor's, a segment's slope is rounded down so that it never
 * overshoots the next knot, and a knot is never placed below a tick that was
 * already converted past the newest knot (those were extrapolated along the
 * newest segment; the new knot first pins that segment at the largest such
 * tick, so values already written stay what they were).
 *
 * The knots are a ring of CT_KNOTS; a tick older than the oldest kept knot
 * (a call that blocked for longer than that many rounds) is extrapolated
 * backwards from it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

CT_HOT_DATA int ct_clock_tsc;

#define CT_KNOTS 4096
#define CT_ONE (1ull << 32) /* 1 ns per tick in 32.32 fixed point */

struct ct_knot {
	uint64_t t;    /* ticks */
	uint64_t ns;   /* CLOCK_MONOTONIC ns at t */
	uint64_t mult; /* ns per tick (32.32) of the segment that ends here */
};

static struct ct_knot ct_knots[CT_KNOTS];
static uint64_t ct_nknots; /* knots ever added; the newest is ct_nknots - 1 */
/* The largest tick converted past the newest knot (extrapolated). */
static _Atomic uint64_t ct_clock_tmax;
static _Atomic int ct_warned_clock;

static uint64_t ct_scale(uint64_t ticks, uint64_t mult)
{
	return (uint64_t)(((unsigned __int128)ticks * mult) >> 32);
}

static const struct ct_knot *ct_knot_at(uint64_t i)
{
	return &ct_knots[i % CT_KNOTS];
}

void ct_clock_reset(int tsc)
{
	ct_clock_tsc = tsc;
	ct_nknots = 0;
	atomic_store(&ct_clock_tmax, 0);
}

void ct_clock_add_knot(uint64_t t, uint64_t ns)
{
	if (ct_nknots == 0) {
		ct_knots[0] = (struct ct_knot){t, ns, CT_ONE};
		ct_nknots = 1;
		return;
	}
	struct ct_knot last = *ct_knot_at(ct_nknots - 1);
	uint64_t tmax = atomic_load(&ct_clock_tmax);
	if (t <= last.t || t <= tmax)
		return; /* the counter went back, or not past what was converted */
	if (tmax > last.t) {
		/* Pin the newest segment where extrapolation stopped. */
		last = (struct ct_knot){tmax, last.ns + ct_scale(tmax - last.t, last.mult), last.mult};
		ct_knots[ct_nknots % CT_KNOTS] = last;
		ct_nknots++;
	}
	if (ns < last.ns)
		ns = last.ns;
	uint64_t mult = (uint64_t)(((unsigned __int128)(ns - last.ns) << 32) / (t - last.t));
	ct_knots[ct_nknots % CT_KNOTS] = (struct ct_knot){t, ns, mult};
	if (ct_nknots == 1)
		ct_knots[0].mult = mult; /* before the first knot: the first slope */
	ct_nknots++;
}

/* Ticks and CLOCK_MONOTONIC read together: the tightest of three brackets. */
static void ct_clock_sample(uint64_t *t, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 3; i++) {
		uint64_t a = ct_ticks_ordered();
		uint64_t m = ct_now_ns();
		uint64_t b = ct_ticks_ordered();
		if (b >= a && b - a < best) {
			best = b - a;
			*t = a + (b - a) / 2;
			*ns = m;
		}
	}
	if (best == UINT64_MAX) {
		*t = ct_ticks_ordered();
		*ns = ct_now_ns();
	}
}

void ct_clock_knot(void)
{
	if (!ct_clock_tsc)
		return;
	uint64_t t, ns;
	ct_clock_sample(&t, &ns);
	ct_clock_add_knot(t, ns);
}

uint64_t ct_clock_to_ns(uint64_t t)
{
	if (!ct_clock_tsc)
		return t;
	uint64_t n = ct_nknots;
	if (n == 0)
		return 0;
	const struct ct_knot *k = ct_knot_at(n - 1);
	if (t >= k->t) {
		uint64_t m = atomic_load_explicit(&ct_clock_tmax, memory_order_relaxed);
		while (t > m && !atomic_compare_exchange_weak(&ct_clock_tmax, &m, t))
			;
		return k->ns + ct_scale(t - k->t, k->mult);
	}
	uint64_t oldest = n > CT_KNOTS ? n - CT_KNOTS : 0;
	if (t < ct_knot_at(oldest)->t) {
		k = ct_knot_at(oldest);
		uint64_t back = ct_scale(k->t - t, k->mult);
		return back < k->ns ? k->ns - back : 0;
	}
	/* The segment [lo, hi] holding t: knot lo <= t < knot hi. */
	uint64_t lo = oldest, hi = n - 1;
	if (t >= ct_knot_at(n - 2)->t) /* the usual case: the last segment */
		lo = n - 2;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (t >= ct_knot_at(mid)->t)
			lo = mid;
		else
			hi = mid;
	}
	const struct ct_knot *a = ct_knot_at(lo), *b = ct_knot_at(hi);
	uint64_t v = a->ns + ct_scale(t - a->t, b->mult);
	return v < b->ns ? v : b->ns;
}

_Static_assert(CT_REC_TICKS_MASK == (1u << CT_REC_EVENT | 1u << CT_REC_MARK | 1u << CT_REC_MEMINFO |
				     1u << CT_REC_COUNTER | 1u << CT_REC_MEMSAMPLE),
	       "ct_rec_finish converts every record type that format.h says carries ticks");

void ct_rec_finish(struct ct_rec *rec)
{
	if (rec->type == CT_REC_EVENT) {
		struct ct_rec_event *ev = (struct ct_rec_event *)rec;
		uint64_t entry = ct_clock_to_ns(ev->ts_ns), ret = ct_clock_to_ns(ev->dur_ns);
		if (ret < entry)
			ret = entry;
		ev->ts_ns = ct_op_at_return(ev->op) ? ret : entry;
		ev->dur_ns = ret - entry;
	} else if (rec->type == CT_REC_MARK) {
		struct ct_rec_mark *m = (struct ct_rec_mark *)rec;
		m->ts_ns = ct_clock_to_ns(m->ts_ns);
	} else if (rec->type == CT_REC_MEMINFO) {
		struct ct_rec_meminfo *mi = (struct ct_rec_meminfo *)rec;
		mi->ts_ns = ct_clock_to_ns(mi->ts_ns);
		mi->call_ts_ns = ct_clock_to_ns(mi->call_ts_ns);
	} else if (rec->type == CT_REC_COUNTER) {
		struct ct_rec_counter *c = (struct ct_rec_counter *)rec;
		c->ts_ns = ct_clock_to_ns(c->ts_ns);
	} else if (rec->type == CT_REC_MEMSAMPLE) {
		struct ct_rec_memsample *ms = (struct ct_rec_memsample *)rec;
		ms->ts_ns = ct_clock_to_ns(ms->ts_ns);
	}
}

/* Does the first "flags" line of cpuinfo (/proc/cpuinfo's text) list every word of want? */
static int ct_cpu_has_flags(const char *cpuinfo, const char *const *want, int nwant)
{
	const char *line = strstr(cpuinfo, "\nflags");
	if (!line)
		return 0;
	const char *colon = strchr(line + 1, ':');
	const char *eol = strchr(line + 1, '\n');
	if (!colon || !eol || colon > eol)
		return 0;
	for (int i = 0; i < nwant; i++) {
		size_t wl = strlen(want[i]);
		int found = 0;
		for (const char *p = colon + 1; p < eol && !found;) {
			while (p < eol && *p == ' ')
				p++;
			const char *w = p;
			while (p < eol && *p != ' ')
				p++;
			found = (size_t)(p - w) == wl && memcmp(w, want[i], wl) == 0;
		}
		if (!found)
			return 0;
	}
	return 1;
}

int ct_clock_tsc_trusted(const char *cpuinfo, const char *clocksource)
{
	static const char *const constant[] = {"constant_tsc"}, *const nonstop[] = {"nonstop_tsc"};
	if (!ct_cpu_has_flags(cpuinfo, constant, 1))
		return 0;
	size_t n = strcspn(clocksource, "\n");
	return ct_cpu_has_flags(cpuinfo, nonstop, 1) || (n == 3 && memcmp(clocksource, "tsc", 3) == 0);
}

/* May the hot path read the CPU's counter? */
static int ct_clock_pick(void)
{
	const char *opt = ct_option_str(CT_OPT_CLOCK);
	if (opt && strcmp(opt, "monotonic") == 0)
		return 0;
	if (opt && strcmp(opt, "tsc") == 0) {
#if defined(__x86_64__) || defined(__aarch64__)
		return 1; /* ct_clock_init still checks that it moves */
#else
		ct_warn_once(&ct_warned_clock, "%s=tsc: no counter read on this CPU; using monotonic",
			     ct_option_env(CT_OPT_CLOCK));
		return 0;
#endif
	}
	if (opt && strcmp(opt, "auto") != 0)
		ct_warn_once(&ct_warned_clock, "ignoring %s=%s (want auto, tsc or monotonic)",
			     ct_option_env(CT_OPT_CLOCK), opt);
#if defined(__x86_64__)
	static char cpuinfo[16384];
	char source[64];
	if (ct_read_small_file("/proc/cpuinfo", cpuinfo, sizeof cpuinfo) < 0)
		return 0;
	if (ct_read_small_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", source,
			       sizeof source) < 0)
		source[0] = 0;
	return ct_clock_tsc_trusted(cpuinfo, source);
#elif defined(__aarch64__)
	return 1; /* the generic timer counts at a constant rate by definition */
#else
	return 0;
#endif
}

void ct_clock_init(void)
{
	ct_clock_reset(ct_clock_pick());
	if (!ct_clock_tsc)
		return;
	/* Two knots 200 us apart give the first slope; every round refines it. */
	uint64_t t, ns, t2, ns2;
	ct_clock_sample(&t, &ns);
	ct_clock_add_knot(t, ns);
	for (int i = 0; i < 100000; i++) {
		ct_clock_sample(&t2, &ns2);
		if (ns2 >= ns + 200000)
			break;
	}
	ct_clock_add_knot(t2, ns2);
	if (ct_nknots < 2)
		ct_clock_reset(0); /* the counter did not move: do not trust it */
}

const char *ct_clock_name(void)
{
	return ct_clock_tsc ? "tsc" : "monotonic";
}
