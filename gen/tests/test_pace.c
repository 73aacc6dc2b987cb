/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of transmit pacing, driven by a simulated TSC. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "pace.h"

static uint64_t lcg_state;

/* Fixed-seed 64-bit LCG (Knuth's MMIX constants); returns the high 32 bits. */
static uint32_t
lcg_next(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 32);
}

struct sim_result {
	uint64_t taken;      /* frames handed out */
	uint64_t calls;
	uint32_t max_due;    /* largest single answer */
	uint64_t over_burst; /* answers above the burst size */
	uint64_t early;      /* frames handed out before their deadline */
};

/* Interval generator for the simulated send loop. */
typedef uint64_t (*step_fn)(void);

/* Steps of 100 ticks (100 ns at 1 GHz). */
static uint64_t
step_100(void)
{
	return 100;
}

/* Steps of 3000 ticks (3 us at 1 GHz). */
static uint64_t
step_3000(void)
{
	return 3000;
}

/* Random steps of 1..20000 ticks. */
static uint64_t
step_jitter(void)
{
	return 1 + lcg_next() % 20000;
}

/*
 * Runs a sender that polls at now = t0, t0 + step(), ... while now <= end,
 * taking whatever is due. Frame k is due at start + floor(k * hz / pps): each
 * frame handed out is checked against that deadline computed here with
 * 128-bit arithmetic.
 */
static void
simulate(struct zl_pace *p, uint64_t t0, uint64_t end, step_fn step, struct sim_result *r)
{
	uint64_t now = t0;

	memset(r, 0, sizeof(*r));
	while (now <= end) {
		uint32_t n = zl_pace_due(p, now), j;

		r->calls++;
		if (n > r->max_due)
			r->max_due = n;
		if (n > p->burst)
			r->over_burst++;
		for (j = 0; j < n; j++) {
			uint64_t k = p->n_sched - p->n_base + j;
			uint64_t due = p->start_tsc +
				(uint64_t)((unsigned __int128)k * p->hz / p->pps);

			if (due > now)
				r->early++;
		}
		zl_pace_take(p, n);
		r->taken += n;
		now += step();
	}
}

/* Frames due by time t after the start: k = 0 .. floor(t * pps / hz). */
static uint64_t
frames_due_by(uint64_t t, uint64_t pps, uint64_t hz)
{
	return (uint64_t)((unsigned __int128)t * pps / hz) + 1;
}

/* Steady 1 Mpps at 1 GHz with three polling patterns over 1 s. */
static void
test_steady(void)
{
	static const step_fn steps[] = { step_100, step_3000, step_jitter };
	const uint64_t hz = 1000000000, pps = 1000000, start = 5000;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		struct zl_pace p;
		struct sim_result r;
		uint64_t expect;

		lcg_state = 12345;
		zl_pace_init(&p, hz, pps, start, 32, 50000);
		simulate(&p, start, start + hz, steps[i], &r);
		/* frames 0..1000000 are due by start + 1 s; the last poll may be up to one step short */
		expect = frames_due_by(hz, pps, hz);
		CHECK(r.taken <= expect);
		CHECK(r.taken + 32 >= expect);
		CHECK(r.taken + 32 >= pps);
		CHECK(r.taken <= pps + 32);
		CHECK(r.max_due <= 32);
		CHECK_EQ_U64(r.over_burst, 0);
		CHECK_EQ_U64(r.early, 0);
		CHECK_EQ_U64(p.restarts, 0);
		CHECK_EQ_U64(p.skipped, 0);
		CHECK_EQ_U64(p.n_sched, r.taken);
		/* on time within one poll: the lateness never exceeds the longest step */
		CHECK(p.max_late < 20000);
		if (r.taken > expect || r.taken + 32 < expect)
			fprintf(stderr, "  pattern %u: taken %llu, expected about %llu\n", i,
				(unsigned long long)r.taken, (unsigned long long)expect);
	}
}

/* Polling every 100 ns hands out single frames exactly on schedule. */
static void
test_exact_small_steps(void)
{
	struct zl_pace p;
	uint64_t now, taken = 0, ones = 0, calls_with = 0;

	zl_pace_init(&p, 1000000000, 1000000, 0, 32, 50000);
	for (now = 0; now <= 10000000; now += 100) {
		uint32_t n = zl_pace_due(&p, now);

		if (n) {
			calls_with++;
			if (n == 1)
				ones++;
			/* frame k is due at k us exactly: it is handed out at that poll */
			CHECK_EQ_U64(now, taken * 1000);
		}
		zl_pace_take(&p, n);
		taken += n;
	}
	CHECK_EQ_U64(taken, 10001);
	CHECK_EQ_U64(ones, calls_with);
	CHECK_EQ_U64(zl_pace_next(&p), 10001ull * 1000);
}

/* A 5 ms stall restarts the schedule instead of bursting to catch up. */
static void
test_stall(void)
{
	const uint64_t hz = 1000000000, pps = 1000000, gap = 50000;
	struct zl_pace p;
	uint64_t now, taken = 0, stall_at = 300000000, stall = 5000000;
	uint64_t before, after_first = 0, expect_skip;
	uint32_t n;

	zl_pace_init(&p, hz, pps, 0, 32, gap);
	for (now = 0; now < stall_at; now += 1000) {
		n = zl_pace_due(&p, now);
		zl_pace_take(&p, n);
		taken += n;
	}
	before = taken;
	CHECK_EQ_U64(before, 300000); /* frames 0..299999 due at 0 .. 299.999 ms */
	CHECK_EQ_U64(p.restarts, 0);
	/* the next poll comes 5 ms late, half-way between two deadlines */
	now = stall_at - 1000 + stall + 500;
	n = zl_pace_due(&p, now);
	CHECK_EQ_U64(n, 1);
	after_first = n;
	zl_pace_take(&p, n);
	taken += n;
	CHECK_EQ_U64(p.restarts, 1);
	/* frame 300000 was due at 300 ms: the stall made it 4.9995 ms late, the longest lateness */
	CHECK_EQ_U64(p.max_late, now - 300000000);
	/* due by now: frames 0..floor(now/1000); handed out: 300000 + this one */
	expect_skip = now / 1000 + 1 - before - after_first;
	CHECK_EQ_U64(expect_skip, 4999);
	CHECK_EQ_U64(p.skipped, expect_skip);
	CHECK(p.skipped >= stall * pps / hz - 2 && p.skipped <= stall * pps / hz + 2);
	/* the new schedule starts at the deadline of the frame just handed out (304.999 ms) */
	CHECK_EQ_U64(p.start_tsc, now / 1000 * 1000);
	CHECK(p.start_tsc <= now && now - p.start_tsc < 1000);
	/* right after the restart: nothing more is due until the next point of the grid */
	CHECK_EQ_U64(zl_pace_due(&p, now), 0);
	CHECK_EQ_U64(zl_pace_due(&p, p.start_tsc + 999), 0);
	CHECK_EQ_U64(zl_pace_due(&p, p.start_tsc + 1000), 1);
	zl_pace_take(&p, 1);
	taken++;
	CHECK_EQ_U64(zl_pace_next(&p), p.start_tsc + 2000);
	/* continue to 1 s on the original grid */
	{
		uint64_t t;

		for (t = p.start_tsc + 2000; t <= hz; t += 1000) {
			n = zl_pace_due(&p, t);
			CHECK(n <= 1);
			zl_pace_take(&p, n);
			taken += n;
		}
	}
	CHECK_EQ_U64(p.restarts, 1);
	/* frames due in [0, 1 s] under the original schedule: 1000001, each sent or skipped */
	CHECK_EQ_U64(taken + p.skipped, 1000001);
	CHECK_EQ_U64(p.n_sched, taken);

	/* lateness at or below the gap is caught up with (bounded) bursts, no restart */
	zl_pace_init(&p, hz, pps, 0, 32, gap);
	n = zl_pace_due(&p, 0);
	zl_pace_take(&p, n);
	n = zl_pace_due(&p, gap);     /* frame 1 is 49 us late: catch up */
	CHECK_EQ_U64(n, 32);
	CHECK_EQ_U64(p.restarts, 0);
	zl_pace_take(&p, n);
	n = zl_pace_due(&p, gap);
	CHECK_EQ_U64(n, 18);         /* frames 33..50 */
	zl_pace_take(&p, n);
	CHECK_EQ_U64(p.n_sched, 51);
	CHECK_EQ_U64(zl_pace_due(&p, gap), 0);
	/* frame 51 due at 51 us, polled exactly the gap after it: caught up, no restart */
	n = zl_pace_due(&p, 51000 + gap);
	CHECK_EQ_U64(n, 32);
	CHECK_EQ_U64(p.restarts, 0);
	zl_pace_take(&p, n);
	/* frame 83 due at 83 us: a poll 1 tick more than the gap after it restarts */
	n = zl_pace_due(&p, 83000 + gap + 1);
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_U64(p.restarts, 1);
	CHECK_EQ_U64(p.skipped, (83000 + gap + 1) / 1000 + 1 - 83 - 1);
}

/* Edge cases: unlimited rate, before the start, burst 0. */
static void
test_edges(void)
{
	struct zl_pace p;
	uint64_t i;

	zl_pace_init(&p, 1000000000, 0, 1000, 32, 50000);
	for (i = 0; i < 1000; i++) {
		CHECK_EQ_U64(zl_pace_due(&p, i * 7919), 32);
		zl_pace_take(&p, 32);
	}
	CHECK_EQ_U64(zl_pace_due(&p, 0), 32);
	CHECK_EQ_U64(zl_pace_next(&p), 0);
	CHECK_EQ_U64(p.restarts, 0);

	zl_pace_init(&p, 1000000000, 1000000, 1000000, 32, 50000);
	CHECK_EQ_U64(zl_pace_due(&p, 0), 0);
	CHECK_EQ_U64(zl_pace_due(&p, 999999), 0);
	CHECK_EQ_U64(zl_pace_due(&p, 1000000), 1);
	CHECK_EQ_U64(zl_pace_next(&p), 1000000);
	CHECK_EQ_U64(p.restarts, 0);

	/* burst 0 is treated as 1 */
	zl_pace_init(&p, 1000000000, 1000000, 0, 0, UINT64_MAX);
	CHECK_EQ_U64(p.burst, 1);
	CHECK_EQ_U64(zl_pace_due(&p, 10000), 1);

	/* a fractional period: 3 pps at 10 Hz, deadlines 0, 3, 6, 10, 13, 16, 20 ... */
	zl_pace_init(&p, 10, 3, 0, 32, UINT64_MAX);
	{
		static const uint64_t at[] = { 0, 3, 6, 10, 13, 16, 20, 23, 26, 30 };

		for (i = 0; i < 10; i++)
			CHECK_EQ_U64(zl_pace_deadline(&p, i), at[i]);
	}
	CHECK_EQ_U64(zl_pace_due(&p, 9), 3);
	zl_pace_take(&p, 3);
	CHECK_EQ_U64(zl_pace_due(&p, 9), 0);
	CHECK_EQ_U64(zl_pace_due(&p, 10), 1);
}

/* zl_pace_deadline is start + n * hz / pps exactly, also where n * hz overflows 64 bits. */
static void
test_deadline(void)
{
	static const uint64_t hzs[] = { 1000000000ull, 2450000000ull, 3000000007ull, 25000000ull };
	static const uint64_t ppss[] = { 1, 14880952, 37202381, 148809523, 999999937 };
	struct zl_pace p;
	unsigned int a, b, k;

	lcg_state = 777;
	for (a = 0; a < 4; a++) {
		for (b = 0; b < 5; b++) {
			uint64_t start = (uint64_t)lcg_next() << 16;

			zl_pace_init(&p, hzs[a], ppss[b], start, 32, 50000);
			for (k = 0; k < 200; k++) {
				uint64_t n = k < 100 ? (uint64_t)lcg_next() << 24 | lcg_next() : /* to ~2^56 */
					(uint64_t)k * 1000003ull * 1000003ull;
				unsigned __int128 ref = (unsigned __int128)n * hzs[a];
				uint64_t want;

				ref /= ppss[b];
				/* skip n so large that the deadline itself does not fit */
				if (ref + start > UINT64_MAX)
					continue;
				want = start + (uint64_t)ref;
				CHECK_EQ_U64(zl_pace_deadline(&p, n), want);
			}
			/* a simple point: n = pps frames take exactly hz ticks */
			CHECK_EQ_U64(zl_pace_deadline(&p, ppss[b]), start + hzs[a]);
			CHECK_EQ_U64(zl_pace_deadline(&p, 0), start);
		}
	}
}

/* Random stalls: every frame of the schedule is either sent or counted as skipped. */
static void
test_stall_storm(void)
{
	static const uint64_t hzs[] = { 1000000000ull, 2450000000ull };
	static const uint64_t ppss[] = { 1000000ull, 37202381ull };
	unsigned int c;

	for (c = 0; c < 2; c++) {
		const uint64_t hz = hzs[c], pps = ppss[c], start = 777, end = start + hz;
		struct zl_pace p;
		uint64_t now = start, taken = 0, want, stalls = 0;
		uint32_t n;

		lcg_state = 99 + c;
		zl_pace_init(&p, hz, pps, start, 64, hz / 20000); /* gap 50 us */
		while (now < end) {
			n = zl_pace_due(&p, now);
			zl_pace_take(&p, n);
			taken += n;
			if (lcg_next() % 5000 == 0) {
				now += hz / 1000 + lcg_next() % (hz / 500); /* 1..3 ms stall */
				stalls++;
			} else {
				now += 1 + lcg_next() % (hz / 1000000); /* up to 1 us */
			}
		}
		/* the sender stops at the first poll at or after end, as the worker does */
		zl_pace_finish(&p, end);
		/* frames with deadlines before end: ceil(hz * pps / hz) = pps */
		want = pps;
		CHECK(stalls > 10);
		/* every stall restarts (but one at the very end may run past end) */
		CHECK(p.restarts + 1 >= stalls && p.restarts <= stalls);
		/* exact on an integer grid; with a fractional interval each restart may move one tick */
		if (hz % pps == 0)
			CHECK_EQ_U64(taken + p.skipped, want);
		CHECK(taken + p.skipped + p.restarts >= want && taken + p.skipped <= want + p.restarts);
		/* a stall of 1 ms or more skips at least 1 ms of frames, less the one handed out */
		CHECK(p.skipped >= p.restarts * (pps / 1000 - 1));
		/* the catch-up never exceeds what falls due within the gap (plus the frame of the gap's edge) */
		CHECK(p.max_backlog <= (hz / 20000) * pps / hz + 2);
	}
}

/* A stall shorter than the gap is caught up: its backlog is recorded, nothing is skipped. */
static void
test_backlog(void)
{
	const uint64_t hz = 1000000000ull, pps = 1000000, start = 1000;
	struct zl_pace p;
	uint64_t now = start;
	uint32_t n;
	int i;

	zl_pace_init(&p, hz, pps, start, 32, 100000); /* gap 100 us: 100 frames */
	for (i = 0; i < 1000; i++, now += 1000) { /* on time: one frame per poll */
		n = zl_pace_due(&p, now);
		zl_pace_take(&p, n);
	}
	CHECK(p.max_backlog <= 1);
	now += 40000; /* 40 us late: 40 more frames due at once, caught up in bursts of 32 */
	while ((n = zl_pace_due(&p, now)) > 0)
		zl_pace_take(&p, n);
	CHECK(p.max_backlog >= 40 && p.max_backlog <= 42);
	CHECK_EQ_U64(p.restarts, 0);
	CHECK_EQ_U64(p.skipped, 0);
	now += 500000; /* 500 us: beyond the gap, a restart, no catch-up */
	n = zl_pace_due(&p, now);
	CHECK_EQ_U64(n, 1);
	CHECK_EQ_U64(p.restarts, 1);
	CHECK(p.max_backlog <= 42);
}

/* zl_pace_finish counts the frames due before the end that were never taken. */
static void
test_finish(void)
{
	const uint64_t hz = 1000000000, pps = 1000000;
	struct zl_pace p;
	uint64_t now, taken = 0;
	uint32_t n;

	/* the sender stops taking frames at 0.5 s; the trial ends at 1 s */
	zl_pace_init(&p, hz, pps, 0, 32, 50000);
	for (now = 0; now <= hz / 2; now += 1000) {
		n = zl_pace_due(&p, now);
		zl_pace_take(&p, n);
		taken += n;
	}
	CHECK_EQ_U64(taken, 500001);
	CHECK_EQ_U64(p.max_late, 0);
	zl_pace_finish(&p, hz);
	/* frame 500001, due at 500.001 ms, was still waiting at the end */
	CHECK_EQ_U64(p.max_late, hz - 500001000ull);
	/* frames 0..999999 have deadlines before 1 s; frame 1000000 is due at the end itself */
	CHECK_EQ_U64(p.skipped, 1000000 - 500001);
	CHECK_EQ_U64(taken + p.skipped, pps);

	/* nothing is missing: no change; end before the start, or no rate: no change */
	zl_pace_init(&p, hz, pps, 1000, 32, 50000);
	CHECK_EQ_U64(zl_pace_due(&p, 1000), 1);
	zl_pace_take(&p, 1);
	zl_pace_finish(&p, 1001);
	CHECK_EQ_U64(p.skipped, 0);
	zl_pace_finish(&p, 1000);
	zl_pace_finish(&p, 10);
	CHECK_EQ_U64(p.skipped, 0);
	zl_pace_init(&p, hz, 0, 0, 32, 50000);
	zl_pace_finish(&p, hz);
	CHECK_EQ_U64(p.skipped, 0);
	/* deadline exactly at end is not due before it; one tick later it is */
	zl_pace_init(&p, hz, pps, 0, 32, 50000);
	zl_pace_take(&p, 1);
	zl_pace_finish(&p, 1000);
	CHECK_EQ_U64(p.skipped, 0);
	zl_pace_init(&p, hz, pps, 0, 32, 50000);
	zl_pace_take(&p, 1);
	zl_pace_finish(&p, 1001);
	CHECK_EQ_U64(p.skipped, 1);

	/* a worker-like sender at 37.2 Mpps, 2.45 GHz, 10 s: stops at the first poll at or after the end */
	{
		const uint64_t hz2 = 2450000000ull, pps2 = 37202381ull, start = 5, end = start + 10 * hz2;

		zl_pace_init(&p, hz2, pps2, start, 64, 122500);
		lcg_state = 4243;
		taken = 0;
		for (now = start; now < end; now += 980 + lcg_next() % 2940) {
			n = zl_pace_due(&p, now);
			zl_pace_take(&p, n);
			taken += n;
		}
		zl_pace_finish(&p, end);
		/* frames with deadlines before the end: exactly 10 * pps */
		CHECK_EQ_U64(taken + p.skipped, 10 * pps2);
		CHECK(p.skipped <= 60);  /* only what fell due after the last poll */
		CHECK_EQ_U64(p.restarts, 0);
	}
}

/* 37,202,381 pps at 2.45 GHz for 10 s: the count matches the floor-based schedule. */
static void
test_high_rate(void)
{
	const uint64_t hz = 2450000000ull, pps = 37202381ull, start = 123456789;
	const uint64_t dur = 10 * hz;
	struct zl_pace p;
	uint64_t now, taken = 0, expect;
	uint32_t maxn = 0, n;

	zl_pace_init(&p, hz, pps, start, 64, 122500);
	lcg_state = 4242;
	/* polls every 0.4 .. 1.6 us (about 15..60 frames due each) */
	for (now = start; now <= start + dur; now += 980 + lcg_next() % 2940) {
		n = zl_pace_due(&p, now);
		if (n > maxn)
			maxn = n;
		zl_pace_take(&p, n);
		taken += n;
	}
	/* drain what is due by the end instant */
	n = zl_pace_due(&p, start + dur);
	zl_pace_take(&p, n);
	taken += n;
	n = zl_pace_due(&p, start + dur);
	zl_pace_take(&p, n);
	taken += n;
	expect = (uint64_t)((unsigned __int128)dur * pps / hz) + 1; /* 372023811 */
	CHECK_EQ_U64(expect, 372023811ull);
	CHECK(taken + 1 >= expect && taken <= expect + 1);
	CHECK_EQ_U64(taken, expect);
	CHECK_EQ_U64(p.restarts, 0);
	CHECK_EQ_U64(p.skipped, 0);
	CHECK(maxn <= 64);
}

/* Runs the pacing tests and prints the summary line. */
int
main(void)
{
	test_steady();
	test_exact_small_steps();
	test_stall();
	test_edges();
	test_deadline();
	test_stall_storm();
	test_backlog();
	test_finish();
	test_high_rate();
	return check_report();
}
