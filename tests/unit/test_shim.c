/* Unit tests of the shim's parts: rings, output templates, stack interning. */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckmain.h"
#include "../../preload/core/ct.h"

/* Append one record of len bytes holding seq in its first payload word. */
static int put(struct ct_ring *r, uint32_t len, uint64_t seq)
{
	struct ct_rec *rec = ct_ring_reserve(r, len);
	if (!rec)
		return 0;
	rec->type = CT_REC_EVENT;
	rec->flags = 0;
	rec->size = len;
	memcpy(rec + 1, &seq, sizeof seq);
	ct_ring_commit(r);
	return 1;
}

/* Consume everything, checking record framing and sequence; returns count. */
static uint64_t drain(struct ct_ring *r, uint64_t *next_seq)
{
	const void *p[2];
	size_t n[2];
	uint64_t end, count = 0;
	int spans = ct_ring_peek(r, &p[0], &n[0], &p[1], &n[1], &end);
	for (int s = 0; s < spans; s++) {
		const unsigned char *c = p[s];
		size_t off = 0;
		while (off < n[s]) {
			const struct ct_rec *rec = (const struct ct_rec *)(c + off);
			ck_assert_uint_ge(rec->size, 8);
			ck_assert_uint_eq(rec->size % 8, 0);
			if (rec->type == CT_REC_EVENT) {
				uint64_t seq;
				memcpy(&seq, rec + 1, sizeof seq);
				ck_assert_uint_eq(seq, *next_seq);
				(*next_seq)++;
				count++;
			} else {
				ck_assert_uint_eq(rec->type, CT_REC_PAD);
			}
			off += rec->size;
		}
		ck_assert_uint_eq(off, n[s]);
	}
	ct_ring_release(r, end);
	return count;
}

START_TEST(ring_fills_and_wraps)
{
	struct ct_ring *r = ct_ring_create(4096, 0);
	ck_assert_ptr_nonnull(r);
	uint64_t seq = 0, next = 0;
	/* 80-byte records do not divide 4096: every wrap needs a pad. */
	int fit = 0;
	while (put(r, 80, seq))
		seq++, fit++;
	ck_assert_int_eq(fit, 4096 / 80);
	ck_assert_uint_eq(drain(r, &next), (uint64_t)fit);
	for (int round = 0; round < 1000; round++) {
		int k = 1 + round % 40;
		for (int i = 0; i < k; i++)
			ck_assert(put(r, 80 + 8 * (uint32_t)(i % 3), seq++));
		ck_assert_uint_eq(drain(r, &next), (uint64_t)k);
	}
	ck_assert_uint_eq(next, seq);
	ct_ring_destroy(r);
}
END_TEST

START_TEST(ring_rejects_bad_capacity)
{
	ck_assert_ptr_null(ct_ring_create(1000, 0));
	ck_assert_ptr_null(ct_ring_create(2048, 0));
}
END_TEST

struct spsc {
	struct ct_ring *r;
	uint64_t n;
};

static void *producer(void *arg)
{
	struct spsc *s = arg;
	for (uint64_t i = 0; i < s->n; i++)
		while (!put(s->r, 16 + 8 * (uint32_t)(i % 7), i))
			sched_yield();
	return NULL;
}

START_TEST(ring_spsc_threads)
{
	struct spsc s = {ct_ring_create(1 << 14, 0), 300000};
	pthread_t t;
	pthread_create(&t, NULL, producer, &s);
	uint64_t next = 0;
	while (next < s.n)
		drain(s.r, &next);
	pthread_join(t, NULL);
	ck_assert_uint_eq(next, s.n);
	ct_ring_destroy(s.r);
}
END_TEST

START_TEST(template_expansion)
{
	char out[256], want[256];
	setenv("CT_TEST_RANK", "3", 1);
	ck_assert_int_eq(ct_expand_template("r%q{CT_TEST_RANK}.%p.dump", out, sizeof out), 0);
	snprintf(want, sizeof want, "r3.%d.dump", (int)getpid());
	ck_assert_str_eq(out, want);
	ck_assert_int_eq(ct_expand_template("a%%b%q{CT_TEST_UNSET_VAR}c", out, sizeof out), 0);
	ck_assert_str_eq(out, "a%bc");
	ck_assert_int_eq(ct_expand_template("keep%zliteral", out, sizeof out), 0);
	ck_assert_str_eq(out, "keep%zliteral");
	ck_assert_int_eq(ct_expand_template("%q{UNCLOSED", out, sizeof out), -1);
	ck_assert_int_eq(ct_expand_template("0123456789", out, 5), -1);
	char host[256];
	gethostname(host, sizeof host);
	ck_assert_int_eq(ct_expand_template("%h", out, sizeof out), 0);
	ck_assert_str_eq(out, host);
}
END_TEST

START_TEST(stack_interning)
{
	uint64_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
	void *slot;
	uint32_t ia = ct_stack_intern(a, 3, &slot);
	ck_assert_uint_ge(ia, 1);
	ck_assert_ptr_nonnull(slot); /* first user writes the record */
	ct_stack_written(slot, 1);
	ck_assert_uint_eq(ct_stack_intern(a, 3, &slot), ia);
	ck_assert_ptr_null(slot);
	uint32_t ib = ct_stack_intern(b, 3, &slot);
	ck_assert_uint_ne(ib, ia);
	/* A dropped record is handed to the next user to write. */
	ct_stack_written(slot, 0);
	ck_assert_uint_eq(ct_stack_intern(b, 3, &slot), ib);
	ck_assert_ptr_nonnull(slot);
	ct_stack_written(slot, 1);
	ck_assert_uint_eq(ct_stack_count(), 2);
	ct_stack_reset();
	ck_assert_uint_eq(ct_stack_count(), 0);
	ck_assert_uint_eq(ct_stack_intern(b, 3, &slot), 1);
}
END_TEST

/* Ticks to ns through calibration points: exact at the points, linear
 * between, extrapolated past the newest, and values handed out never change. */
START_TEST(clock_conversion)
{
	ct_clock_reset(1);
	ct_clock_add_knot(1000, 5000);
	ct_clock_add_knot(2000, 6000); /* 1 ns per tick */
	ct_clock_add_knot(4000, 6500); /* 0.25 ns per tick */
	ck_assert_uint_eq(ct_clock_to_ns(1000), 5000);
	ck_assert_uint_eq(ct_clock_to_ns(1500), 5500);
	ck_assert_uint_eq(ct_clock_to_ns(2000), 6000);
	ck_assert_uint_eq(ct_clock_to_ns(3000), 6250);
	ck_assert_uint_eq(ct_clock_to_ns(4000), 6500);
	ck_assert_uint_eq(ct_clock_to_ns(500), 4500); /* before the first: its slope */
	ck_assert_uint_eq(ct_clock_to_ns(0), 4000);
	/* past the newest point: the newest slope */
	ck_assert_uint_eq(ct_clock_to_ns(4400), 6600);
	/* a point that says the clock ran slower: 4400 keeps its 6600, later
	 * ticks cannot go below it */
	ct_clock_add_knot(5000, 6550);
	ck_assert_uint_eq(ct_clock_to_ns(4400), 6600);
	ck_assert_uint_eq(ct_clock_to_ns(4200), 6550);
	ck_assert_uint_eq(ct_clock_to_ns(5000), 6600);
	ct_clock_add_knot(6000, 7600);
	ck_assert_uint_eq(ct_clock_to_ns(5500), 7100);
	ck_assert_uint_eq(ct_clock_to_ns(6000), 7600);
	/* a point not past what was converted is ignored */
	ck_assert_uint_eq(ct_clock_to_ns(9000), 10600);
	ct_clock_add_knot(8000, 9000);
	ck_assert_uint_eq(ct_clock_to_ns(9000), 10600);
	uint64_t prev = 0;
	for (uint64_t t = 0; t < 12000; t += 7) {
		uint64_t v = ct_clock_to_ns(t);
		ck_assert_uint_ge(v, prev);
		prev = v;
	}
	/* CLOCK_MONOTONIC ticks: the identity */
	ct_clock_reset(0);
	ck_assert_uint_eq(ct_clock_to_ns(123456789), 123456789);
}
END_TEST

/* More points than the history keeps: old ticks extrapolate from the oldest. */
/* The TSC stands for CLOCK_MONOTONIC with constant_tsc and nonstop_tsc, or constant_tsc with
 * the kernel's clocksource "tsc" (clock.c). */
START_TEST(clock_trust)
{
	const char *both = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\nbugs\t\t: x\n";
	const char *constant = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good\n";
	const char *nonstop = "processor\t: 0\nflags\t\t: fpu tsc nonstop_tsc\n";
	const char *neither = "processor\t: 0\nflags\t\t: fpu tsc\nbugs\t\t: constant_tsc nonstop_tsc\n";
	ck_assert_int_eq(ct_clock_tsc_trusted(both, "kvm-clock\n"), 1);
	ck_assert_int_eq(ct_clock_tsc_trusted(both, ""), 1);
	ck_assert_int_eq(ct_clock_tsc_trusted(constant, "tsc\n"), 1);
	ck_assert_int_eq(ct_clock_tsc_trusted(constant, "tsc"), 1);
	ck_assert_int_eq(ct_clock_tsc_trusted(constant, "kvm-clock\n"), 0);
	ck_assert_int_eq(ct_clock_tsc_trusted(constant, "tsc-early\n"), 0);
	ck_assert_int_eq(ct_clock_tsc_trusted(constant, ""), 0);
	ck_assert_int_eq(ct_clock_tsc_trusted(nonstop, "tsc\n"), 0);
	ck_assert_int_eq(ct_clock_tsc_trusted(neither, "tsc\n"), 0); /* only the flags line counts */
}
END_TEST

START_TEST(clock_long_history)
{
	ct_clock_reset(1);
	for (uint64_t i = 0; i < 10000; i++)
		ct_clock_add_knot(1000000 + i * 1000, 2000000 + i * 2000);
	ck_assert_uint_eq(ct_clock_to_ns(1000000 + 9999 * 1000), 2000000 + 9999 * 2000);
	ck_assert_uint_eq(ct_clock_to_ns(1000000 + 9000 * 1000 + 500), 2000000 + 9000 * 2000 + 1000);
	ck_assert_uint_eq(ct_clock_to_ns(1000000), 2000000); /* older than the history */
	ct_clock_reset(0);
}
END_TEST

/* The writer finishes hot-path events: entry/return ticks to ts and dur. */
START_TEST(event_finish)
{
	ct_clock_reset(1);
	ct_clock_add_knot(0, 1000);
	ct_clock_add_knot(1000, 3000); /* 2 ns per tick */
	struct ct_rec_event ev = {.rec = {CT_REC_EVENT, 0, sizeof ev}, .ts_ns = 100, .dur_ns = 150,
				  .op = CT_OP_ALLOC};
	struct ct_rec_event fr = ev;
	fr.op = CT_OP_FREE;
	ct_rec_finish(&ev.rec);
	ck_assert_uint_eq(ev.ts_ns, 1300); /* an allocation: when it returned */
	ck_assert_uint_eq(ev.dur_ns, 100);
	ct_rec_finish(&fr.rec);
	ck_assert_uint_eq(fr.ts_ns, 1200); /* a free: when it was entered */
	ck_assert_uint_eq(fr.dur_ns, 100);
	struct ct_rec_mark mk = {.rec = {CT_REC_MARK, 0, sizeof mk}, .ts_ns = 500};
	ct_rec_finish(&mk.rec);
	ck_assert_uint_eq(mk.ts_ns, 2000);
	struct ct_rec_drops d = {.rec = {CT_REC_DROPS, 0, sizeof d}, .ts_ns = 500};
	ct_rec_finish(&d.rec); /* the writer's own records are ns already */
	ck_assert_uint_eq(d.ts_ns, 500);
	ct_clock_reset(0);
}
END_TEST

/* A thread local read as an executable reads it (local-exec), not instrumented by any sanitizer. */
static __thread void *tls_le_var __attribute__((tls_model("local-exec")));
__attribute__((noinline, no_sanitize("address", "thread", "undefined"))) static void *tls_le_get(void)
{
	return tls_le_var;
}

/* code[] holds the bytes of one sequence; a 32-bit field at `at` points (rip-relative, from
 * `from`) at target. */
static void tls_point(uint8_t *code, int at, int from, const void *target)
{
	int32_t rel = (int32_t)((const char *)target - (const char *)(code + from));
	memcpy(code + at, &rel, 4);
}

/* ct_tls_var_code: the x86-64 ABI's sequences for a thread local, and nothing else. */
START_TEST(tls_sequences)
{
#if defined(__x86_64__)
	long off = 0;
	const void *ti = NULL;
	/* a compiled local-exec read: the thread pointer plus the offset is the variable */
	ck_assert_int_eq(ct_tls_var_code((const void *)(uintptr_t)tls_le_get, &off, &ti), CT_TLS_TP);
	char *tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	ck_assert_ptr_eq(tp + off, (void *)&tls_le_var);
	tls_le_var = &off;
	ck_assert_ptr_eq(tls_le_get(), &off);

	/* initial-exec, after an endbr64: the offset is in the GOT slot */
	static long got = -4096 + 24;
	static uint8_t ie[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x05, 0, 0, 0, 0,
			       0x64, 0x48, 0x8b, 0x00, 0xc3};
	tls_point(ie, 7, 11, &got);
	off = 0;
	ck_assert_int_eq(ct_tls_var_code(ie, &off, &ti), CT_TLS_TP);
	ck_assert_int_eq(off, -4096 + 24);

	/* general-dynamic: __tls_get_addr's argument */
	static uint64_t tls_index[2];
	static uint8_t gd[] = {0x48, 0x83, 0xec, 0x08, 0x66, 0x48, 0x8d, 0x3d, 0, 0, 0, 0, 0x66, 0x66,
			       0x48, 0xe8, 1, 2, 3, 4, 0x48, 0x8b, 0x00, 0x48, 0x83, 0xc4, 0x08, 0xc3};
	tls_point(gd, 8, 12, tls_index);
	ck_assert_int_eq(ct_tls_var_code(gd, &off, &ti), CT_TLS_GD);
	ck_assert_ptr_eq(ti, tls_index);

	/* one byte else (a mov of another register, no ret, a TLS descriptor call): call it */
	gd[22] = 0x01;
	ck_assert_int_eq(ct_tls_var_code(gd, &off, &ti), CT_TLS_CALL);
	ie[15] = 0x90;
	ck_assert_int_eq(ct_tls_var_code(ie, &off, &ti), CT_TLS_CALL);
	static const uint8_t desc[] = {0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xff, 0x10, 0x64, 0x48, 0x8b, 0x00, 0xc3};
	ck_assert_int_eq(ct_tls_var_code(desc, &off, &ti), CT_TLS_CALL);
	ck_assert_int_eq(ct_tls_var_code(NULL, &off, &ti), CT_TLS_CALL);
#endif
}
END_TEST

static Suite *shim_suite(void)
{
	Suite *s = suite_create("shim");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, ring_fills_and_wraps);
	tcase_add_test(tc, ring_rejects_bad_capacity);
	tcase_add_test(tc, ring_spsc_threads);
	tcase_add_test(tc, template_expansion);
	tcase_add_test(tc, stack_interning);
	tcase_add_test(tc, clock_conversion);
	tcase_add_test(tc, clock_trust);
	tcase_add_test(tc, clock_long_history);
	tcase_add_test(tc, event_finish);
	tcase_add_test(tc, tls_sequences);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ct_check_main(shim_suite());
}
