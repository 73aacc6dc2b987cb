/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of per-interval counting: the interval of a TX time, the TX time rebuilt from 32 bits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ivl.h"

static uint64_t lcg_state = 20261126;

/* Fixed-seed 64-bit LCG; returns the high 32 bits. */
static uint32_t
lcg_next(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 32);
}

/* Interval boundaries: the first and last cycle of each interval, before the start, at and after the end. */
static void
test_index_edges(void)
{
	struct zl_ivl_cur c;
	const uint64_t start = 5000000000ull, len = 30000000; /* 10 ms at 3 GHz */
	uint32_t i;

	zl_ivl_init(&c, start, len, 1000);
	CHECK_EQ_U64(zl_ivl_index(&c, start), 0);
	CHECK_EQ_U64(zl_ivl_index(&c, start + len - 1), 0);
	CHECK_EQ_U64(zl_ivl_index(&c, start + len), 1);
	CHECK_EQ_U64(zl_ivl_index(&c, start + 2 * len - 1), 1);
	CHECK_EQ_U64(zl_ivl_index(&c, start + 999 * len), 999);
	CHECK_EQ_U64(zl_ivl_index(&c, start + 1000 * len - 1), 999);
	/* past the grid: n, and the cursor stays where it was */
	CHECK_EQ_U64(zl_ivl_index(&c, start + 1000 * len), 1000);
	CHECK_EQ_U64(zl_ivl_index(&c, UINT64_MAX), 1000);
	CHECK_EQ_U64(c.idx, 999);
	/* before the start (an unpaced stream sends at once): interval 0, on both sides alike */
	CHECK_EQ_U64(zl_ivl_index(&c, start - 1), 0);
	CHECK_EQ_U64(zl_ivl_index(&c, 0), 0);
	/* going back in time (a frame sent earlier arrives later) */
	CHECK_EQ_U64(zl_ivl_index(&c, start + 5 * len + 7), 5);
	for (i = 0; i < 1000; i++) {
		CHECK_EQ_U64(zl_ivl_index(&c, start + (uint64_t)i * len), i);
		CHECK_EQ_U64(zl_ivl_index(&c, start + (uint64_t)i * len + len - 1), i);
	}
	/* a one-cycle grid */
	zl_ivl_init(&c, 10, 1, 3);
	CHECK_EQ_U64(zl_ivl_index(&c, 10), 0);
	CHECK_EQ_U64(zl_ivl_index(&c, 12), 2);
	CHECK_EQ_U64(zl_ivl_index(&c, 13), 3);
}

/* The cursor never changes the answer: random TX times (mostly close together) against a plain division. */
static void
test_index_matches_division(void)
{
	struct zl_ivl_cur c;
	const uint64_t start = 123456789012ull, len = 2999999; /* not a round number of cycles */
	const uint32_t n = 4096;
	uint64_t t = start, bad = 0, outside = 0;
	uint32_t i;

	zl_ivl_init(&c, start, len, n);
	for (i = 0; i < 2000000; i++) {
		uint32_t r = lcg_next();
		uint64_t want;

		if (r % 100 == 0)
			t = start - 1000 + (uint64_t)lcg_next() * 4; /* a jump anywhere, some before the start */
		else
			t += r % 5000; /* the next frame, a little later */
		if (r % 1000 == 1 && t > 100000)
			t -= 100000; /* reordered: an earlier TX time */
		if (t < start)
			want = 0;
		else if ((t - start) / len >= n)
			want = n;
		else
			want = (t - start) / len;
		outside += want == n;
		bad += zl_ivl_index(&c, t) != want;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK(outside > 0);
}

/*
 * The 64-bit TX TSC from the frame's low 32 bits and the 64-bit RX TSC: exact
 * for any latency under 2^32 cycles, also when the low 32 bits wrapped between
 * TX and RX, and the frame lands in the interval its sender counted it in.
 */
static void
test_tx_tsc_rebuilt_across_wrap(void)
{
	const uint64_t base[] = { 0, 1000, 0xfffffff0ull, 0x100000000ull, 0x1fffffffeull,
		0x7ffffffff0000000ull, 0xfffffffeffffffffull };
	const uint64_t lat[] = { 0, 1, 17, 0xfff, 0x10000, 0x7fffffff, 0x80000000ull, 0xfffffffeull,
		0xffffffffull };
	uint64_t bad = 0;
	uint32_t i, j, k;

	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		for (j = 0; j < sizeof(lat) / sizeof(lat[0]); j++)
			for (k = 0; k < 64; k++) {
				uint64_t tx = base[i] + k * 0x3fffffffull;

				if (tx + lat[j] < tx)
					continue;
				bad += zl_ivl_tx_tsc(tx + lat[j], (uint32_t)tx) != tx;
			}
	CHECK_EQ_U64(bad, 0);
	/* sent just before the low 32 bits wrap, received just after */
	CHECK_EQ_U64(zl_ivl_tx_tsc(0x500000002ull, 0xfffffffeu), 0x4fffffffeull);
	/* a frame that took 2^32 cycles or more is placed 2^32 cycles late (the documented limit) */
	CHECK_EQ_U64(zl_ivl_tx_tsc(0x300000005ull, 0x00000001u), 0x300000001ull);
	CHECK_EQ_U64(zl_ivl_tx_tsc(0x300000005ull + 0x100000000ull, 0x00000005u), 0x400000005ull);
	/* random: TX at any time, latency under 2^32 */
	for (i = 0; i < 1000000; i++) {
		uint64_t tx = (uint64_t)lcg_next() << 32 | lcg_next(), l = lcg_next();

		if (tx + l < tx)
			continue;
		bad += zl_ivl_tx_tsc(tx + l, (uint32_t)tx) != tx;
	}
	CHECK_EQ_U64(bad, 0);
	{
		/* sender and receiver place every frame alike, across a wrap of the low 32 bits */
		struct zl_ivl_cur tx_c, rx_c;
		const uint64_t start = 0xfff00000ull, len = 1000000;
		uint64_t t, diff = 0;

		zl_ivl_init(&tx_c, start, len, 100);
		zl_ivl_init(&rx_c, start, len, 100);
		for (t = start; t < start + 100 * len; t += 997) {
			uint64_t rx = t + 50000 + lcg_next() % 3000000;

			diff += zl_ivl_index(&tx_c, t) != zl_ivl_index(&rx_c, zl_ivl_tx_tsc(rx, (uint32_t)t));
		}
		CHECK_EQ_U64(diff, 0);
	}
}

/* Intervals needed to cover a span: rounded up, at least one. */
static void
test_count(void)
{
	CHECK_EQ_U64(zl_ivl_count(0, 10), 1);
	CHECK_EQ_U64(zl_ivl_count(1, 10), 1);
	CHECK_EQ_U64(zl_ivl_count(10, 10), 1);
	CHECK_EQ_U64(zl_ivl_count(11, 10), 2);
	CHECK_EQ_U64(zl_ivl_count(30000000000ull, 30000000), 1000); /* 10 s of 10 ms at 3 GHz */
	CHECK_EQ_U64(zl_ivl_count(30000000001ull, 30000000), 1001);
}

/* Runs the interval tests and prints the summary line. */
int
main(void)
{
	test_index_edges();
	test_index_matches_division();
	test_tx_tsc_rebuilt_across_wrap();
	test_count();
	return check_report();
}
