/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of per-stream sequence tracking. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "seq.h"

static uint64_t lcg_state;

/* Fixed-seed 64-bit LCG; returns the high 32 bits. */
static uint32_t
lcg_next(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(lcg_state >> 32);
}

static struct zl_seq s;

/* Frames 0..N-1 in order. */
static void
test_in_order(void)
{
	const uint32_t n = 100000;
	uint32_t i;
	uint64_t not_in_order = 0;

	zl_seq_reset(&s);
	for (i = 0; i < n; i++)
		if (zl_seq_record(&s, i) != ZL_SEQ_IN_ORDER)
			not_in_order++;
	CHECK_EQ_U64(not_in_order, 0);
	CHECK_EQ_U64(s.unique, n);
	CHECK_EQ_U64(s.next, n);
	CHECK_EQ_U64(s.gaps, 0);
	CHECK_EQ_U64(s.reordered, 0);
	CHECK_EQ_U64(s.duplicate, 0);
}

/* Losses, a late arrival, duplicates, and numbers older than the window. */
static void
test_gaps_reorder_dup_old(void)
{
	const uint32_t sent = 1000;
	uint32_t i;

	zl_seq_reset(&s);
	for (i = 0; i < sent; i++) {
		enum zl_seq_kind k;

		if (i == 10 || i == 11 || i == 500 || i == 998)
			continue;
		k = zl_seq_record(&s, i);
		if (i == 12 || i == 501 || i == 999)
			CHECK_EQ_U64(k, ZL_SEQ_AHEAD);
		else if (i == 0 || i == 100 || i == 997)
			CHECK_EQ_U64(k, ZL_SEQ_IN_ORDER);
	}
	CHECK_EQ_U64(s.unique, 996);
	CHECK_EQ_U64(s.gaps, 4);
	CHECK_EQ_U64(sent - s.unique, 4); /* lost */
	CHECK_EQ_U64(s.reordered, 0);
	CHECK_EQ_U64(s.next, 1000);

	/* 500 arrives late: fills a gap */
	CHECK_EQ_U64(zl_seq_record(&s, 500), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(s.gaps, 3);
	CHECK_EQ_U64(s.reordered, 1);
	CHECK_EQ_U64(s.unique, 997);
	CHECK_EQ_U64(s.next, 1000);
	/* and again: a duplicate, nothing else changes */
	CHECK_EQ_U64(zl_seq_record(&s, 500), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(s.duplicate, 1);
	CHECK_EQ_U64(s.gaps, 3);
	CHECK_EQ_U64(s.unique, 997);
	/* the newest number repeated, an in-order one repeated */
	CHECK_EQ_U64(zl_seq_record(&s, 999), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(zl_seq_record(&s, 0), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(zl_seq_record(&s, 997), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(s.duplicate, 4);
	CHECK_EQ_U64(s.unique, 997);
	/* 10 and 11 late, one of them twice */
	CHECK_EQ_U64(zl_seq_record(&s, 11), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(zl_seq_record(&s, 11), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(zl_seq_record(&s, 10), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(s.gaps, 1);
	CHECK_EQ_U64(s.reordered, 3);
	CHECK_EQ_U64(s.duplicate, 5);
	CHECK_EQ_U64(s.unique, 999);

	/* move on to 20000 in order: 998 is now more than the window behind */
	for (i = 1000; i < 20000; i++)
		zl_seq_record(&s, i);
	CHECK_EQ_U64(s.next, 20000);
	CHECK_EQ_U64(s.gaps, 1);
	CHECK_EQ_U64(zl_seq_record(&s, 998), ZL_SEQ_OLD);
	CHECK_EQ_U64(s.reordered, 4);
	CHECK_EQ_U64(s.unique, 20000);
	CHECK_EQ_U64(s.gaps, 0);
	CHECK_EQ_U64(s.duplicate, 5);

	/* the window edge: next - u == WIN is still checked, WIN + 1 is old */
	CHECK_EQ_U64(zl_seq_record(&s, 20000 - ZL_SEQ_WIN), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(zl_seq_record(&s, 20000 - ZL_SEQ_WIN - 1), ZL_SEQ_OLD);
	CHECK_EQ_U64(zl_seq_record(&s, 19999), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(s.duplicate, 7);
}

/* A missing number at exactly the window edge is told apart from a duplicate. */
static void
test_window_edge_missing(void)
{
	uint32_t i;

	zl_seq_reset(&s);
	for (i = 0; i < 10000; i++)
		if (i != 1808)
			zl_seq_record(&s, i);
	CHECK_EQ_U64(s.gaps, 1);
	/* next = 10000, 10000 - 1808 = 8192 = WIN: still inside */
	CHECK_EQ_U64(zl_seq_record(&s, 1808), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(s.gaps, 0);
	CHECK_EQ_U64(zl_seq_record(&s, 1808), ZL_SEQ_DUPLICATE);
}

/* Unwrapping of the 32-bit wire numbers past 2^32. */
static void
test_wrap(void)
{
	uint64_t base = (1ull << 32) - 5;
	uint32_t i;
	uint64_t bad = 0;

	zl_seq_reset(&s);
	s.next = base; /* as if 2^32 - 5 frames had been received in order */
	for (i = 0; i < 8; i++)
		if (zl_seq_record(&s, (uint32_t)(base + i)) != ZL_SEQ_IN_ORDER)
			bad++;
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(s.next, (1ull << 32) + 3);
	CHECK_EQ_U64(s.unique, 8);
	CHECK_EQ_U64(s.gaps, 0);
	/* late copies from either side of the wrap */
	CHECK_EQ_U64(zl_seq_record(&s, 0xfffffffeu), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(zl_seq_record(&s, 1), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(s.next, (1ull << 32) + 3);
	/* skip 3 and 4, then fill them */
	CHECK_EQ_U64(zl_seq_record(&s, 5), ZL_SEQ_AHEAD);
	CHECK_EQ_U64(s.next, (1ull << 32) + 6);
	CHECK_EQ_U64(s.gaps, 2);
	CHECK_EQ_U64(zl_seq_record(&s, 4), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(zl_seq_record(&s, 3), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(s.gaps, 0);
	CHECK_EQ_U64(s.unique, 11);
	CHECK_EQ_U64(s.duplicate, 2);

	/* a loss right before the wrap, filled after it */
	zl_seq_reset(&s);
	s.next = (1ull << 32) - 100;
	for (i = 0; i < 200; i++)
		if (i != 95)
			zl_seq_record(&s, (uint32_t)((1ull << 32) - 100 + i));
	CHECK_EQ_U64(s.next, (1ull << 32) + 100);
	CHECK_EQ_U64(s.gaps, 1);
	CHECK_EQ_U64(zl_seq_record(&s, 0xfffffffbu), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(s.gaps, 0);
	CHECK_EQ_U64(s.reordered, 1);

	/* a second wrap, from 2^33 - 3 */
	zl_seq_reset(&s);
	s.next = (2ull << 32) - 3;
	for (i = 0; i < 6; i++)
		CHECK_EQ_U64(zl_seq_record(&s, (uint32_t)(0xfffffffdu + i)), ZL_SEQ_IN_ORDER);
	CHECK_EQ_U64(s.next, (2ull << 32) + 3);
}

/* A jump of more than the window, then the same number again; stale bits are cleared. */
static void
test_big_jump(void)
{
	uint32_t i;

	zl_seq_reset(&s);
	for (i = 0; i < 100; i++)
		zl_seq_record(&s, i);
	CHECK_EQ_U64(zl_seq_record(&s, 50100), ZL_SEQ_AHEAD);
	CHECK_EQ_U64(s.gaps, 50000);
	CHECK_EQ_U64(s.next, 50101);
	CHECK_EQ_U64(zl_seq_record(&s, 50100), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(s.duplicate, 1);
	/* 49152 = 6 * 8192 shares its bit with 0, which was received: it is missing, not a duplicate */
	CHECK_EQ_U64(zl_seq_record(&s, 49152), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(zl_seq_record(&s, 49152 + 99), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(s.gaps, 49998);
	CHECK_EQ_U64(s.duplicate, 1);

	/* a jump shorter than the window also clears the bits it passes */
	zl_seq_reset(&s);
	for (i = 0; i < ZL_SEQ_WIN; i++)
		zl_seq_record(&s, i);
	CHECK_EQ_U64(zl_seq_record(&s, ZL_SEQ_WIN + 100), ZL_SEQ_AHEAD);
	CHECK_EQ_U64(s.gaps, 100);
	CHECK_EQ_U64(zl_seq_record(&s, ZL_SEQ_WIN + 8), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(zl_seq_record(&s, ZL_SEQ_WIN + 8), ZL_SEQ_DUPLICATE);
	CHECK_EQ_U64(zl_seq_record(&s, ZL_SEQ_WIN + 99), ZL_SEQ_REORDERED);
	CHECK_EQ_U64(zl_seq_record(&s, 150), ZL_SEQ_DUPLICATE); /* received, still in the window */
	CHECK_EQ_U64(s.gaps, 98);
}

/* An undetectable old duplicate must not drive the gap count below zero. */
static void
test_old_duplicate_gaps(void)
{
	uint32_t i;

	zl_seq_reset(&s);
	for (i = 0; i < 10000; i++)
		if (i != 9995)
			zl_seq_record(&s, i);
	CHECK_EQ_U64(s.gaps, 1);
	/* 5 was received: this copy is older than the window, so it is taken as a late frame */
	CHECK_EQ_U64(zl_seq_record(&s, 5), ZL_SEQ_OLD);
	CHECK_EQ_U64(s.gaps, 0);
	/* the genuinely missing one arrives */
	CHECK_EQ_U64(zl_seq_record(&s, 9995), ZL_SEQ_REORDERED);
	CHECK(s.gaps <= s.next);
	CHECK_EQ_U64(s.gaps, 0);
}

/* 0..99999 shuffled inside blocks of 1000. */
static void
test_shuffled(void)
{
	const uint32_t n = 100000, blk = 1000;
	uint32_t *a = malloc(n * sizeof(*a)), i, j;
	uint64_t kinds[5] = { 0 };

	if (a == NULL)
		exit(2);
	for (i = 0; i < n; i++)
		a[i] = i;
	lcg_state = 31337;
	for (i = 0; i < n; i += blk)
		for (j = blk - 1; j > 0; j--) {
			uint32_t r = lcg_next() % (j + 1), t = a[i + j];

			a[i + j] = a[i + r];
			a[i + r] = t;
		}
	zl_seq_reset(&s);
	for (i = 0; i < n; i++)
		kinds[zl_seq_record(&s, a[i])]++;
	CHECK_EQ_U64(s.unique, n);
	CHECK_EQ_U64(s.gaps, 0);
	CHECK_EQ_U64(s.duplicate, 0);
	CHECK_EQ_U64(s.next, n);
	CHECK_EQ_U64(kinds[ZL_SEQ_DUPLICATE], 0);
	CHECK_EQ_U64(kinds[ZL_SEQ_OLD], 0);
	CHECK_EQ_U64(kinds[ZL_SEQ_REORDERED], s.reordered);
	CHECK(s.reordered > n / 2);
	CHECK_EQ_U64(kinds[ZL_SEQ_IN_ORDER] + kinds[ZL_SEQ_AHEAD] + kinds[ZL_SEQ_REORDERED], n);
	/* feeding the whole sequence again: the last WIN numbers are duplicates, older ones old */
	for (i = n - ZL_SEQ_WIN; i < n; i++)
		if (zl_seq_record(&s, i) != ZL_SEQ_DUPLICATE)
			kinds[0] = UINT64_MAX;
	CHECK(kinds[0] != UINT64_MAX);
	CHECK_EQ_U64(s.duplicate, ZL_SEQ_WIN);
	free(a);
}

/*
 * Random losses, duplicates and local reordering (displacement < 600, well
 * inside the window), compared with an exact model that remembers every number.
 */
static void
test_model(void)
{
	const uint32_t n = 300000;
	uint32_t *a = malloc(2 * n * sizeof(*a)), len = 0, i, j;
	uint8_t *seen = calloc(n, 1);
	uint64_t mdup = 0, mre = 0, muniq = 0, mnext = 0, mismatch = 0;

	if (a == NULL || seen == NULL)
		exit(2);
	lcg_state = 8;
	for (i = 0; i < n; i++) {
		uint32_t r = lcg_next() % 1000;

		if (r < 20)
			continue;            /* 2 % lost */
		a[len++] = i;
		if (r >= 990)
			a[len++] = i;        /* 1 % duplicated */
	}
	for (i = 0; i + 300 <= len; i += 300)   /* shuffle blocks of 300, twice, offset */
		for (j = 299; j > 0; j--) {
			uint32_t r = lcg_next() % (j + 1), t = a[i + j];

			a[i + j] = a[i + r];
			a[i + r] = t;
		}
	for (i = 150; i + 300 <= len; i += 300)
		for (j = 299; j > 0; j--) {
			uint32_t r = lcg_next() % (j + 1), t = a[i + j];

			a[i + j] = a[i + r];
			a[i + r] = t;
		}
	zl_seq_reset(&s);
	for (i = 0; i < len; i++) {
		uint32_t v = a[i];
		enum zl_seq_kind want, got;

		if (seen[v]) {
			want = ZL_SEQ_DUPLICATE;
			mdup++;
		} else if (v == mnext) {
			want = ZL_SEQ_IN_ORDER;
		} else if (v > mnext) {
			want = ZL_SEQ_AHEAD;
		} else {
			want = ZL_SEQ_REORDERED;
			mre++;
		}
		if (!seen[v])
			muniq++;
		seen[v] = 1;
		if (v + 1 > mnext)
			mnext = v + 1;
		got = zl_seq_record(&s, v);
		if (got != want && mismatch++ < 5)
			fprintf(stderr, "  model: %u at %u: got %d, want %d\n", v, i, got, want);
		if (s.gaps != mnext - muniq && mismatch++ < 5)
			fprintf(stderr, "  model: gaps %llu, want %llu\n", (unsigned long long)s.gaps,
				(unsigned long long)(mnext - muniq));
	}
	CHECK_EQ_U64(mismatch, 0);
	CHECK_EQ_U64(s.unique, muniq);
	CHECK_EQ_U64(s.duplicate, mdup);
	CHECK_EQ_U64(s.reordered, mre);
	CHECK_EQ_U64(s.next, mnext);
	CHECK_EQ_U64(s.gaps, mnext - muniq);
	CHECK(mdup > 1000 && mre > 1000);
	free(a);
	free(seen);
}

/* Runs the sequence tracking tests and prints the summary line. */
int
main(void)
{
	test_in_order();
	test_gaps_reorder_dup_old();
	test_window_edge_missing();
	test_wrap();
	test_big_jump();
	test_old_duplicate_gaps();
	test_shuffled();
	test_model();
	return check_report();
}
