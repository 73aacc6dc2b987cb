/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the log-linear latency histogram. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hist.h"

static uint64_t lcg_state = 2024;

/* Fixed-seed 64-bit LCG; returns 64 bits made of two high halves. */
static uint64_t
lcg64(void)
{
	uint64_t hi, lo;

	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	hi = lcg_state >> 32;
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	lo = lcg_state >> 32;
	return hi << 32 | lo;
}

/* Floor of log2(v) for v > 0, by shifting (independent of the clz in hist.h). */
static unsigned int
ilog2(uint64_t v)
{
	unsigned int e = 0;

	while (v >>= 1)
		e++;
	return e;
}

/* Width of the bucket holding v: 1 below 256, else 2^(e - 7); values >= 2^41 share the last bucket. */
static uint64_t
ref_width(uint64_t v)
{
	unsigned int e = v ? ilog2(v) : 0;

	if (e <= 7)
		return 1;
	if (e > 40)
		e = 40;
	return (uint64_t)1 << (e - 7);
}

/* Value the histogram reports for a percentile whose rank falls on v (bucket middle). */
static uint64_t
ref_mid(uint64_t v)
{
	uint64_t w = ref_width(v);

	return (v & ~(w - 1)) + w / 2;
}

static struct zl_hist ha, hb, hc, hd;

/* Bucket geometry: contiguity, index/low agreement, widths. */
static void
test_buckets(void)
{
	uint32_t i;
	uint64_t bad_index = 0, bad_edge = 0, bad_contig = 0, bad_rel = 0, bad_ref = 0;

	CHECK_EQ_U64(ZL_HIST_BUCKETS, 4480);
	for (i = 0; i < ZL_HIST_BUCKETS; i++) {
		uint64_t lo = zl_hist_bucket_low(i), w = zl_hist_bucket_width(i);

		if (zl_hist_index(lo) != i || zl_hist_index(lo + w - 1) != i)
			bad_index++;
		if (i > 0 && zl_hist_index(lo - 1) != i - 1)
			bad_edge++;
		if (i + 1 < ZL_HIST_BUCKETS && zl_hist_bucket_low(i + 1) != lo + w)
			bad_contig++;
		if (lo >= 128 && w * 128 > lo)
			bad_rel++;
		if (w != ref_width(lo) || (lo & (w - 1)) != 0)
			bad_ref++;
	}
	CHECK_EQ_U64(bad_index, 0);
	CHECK_EQ_U64(bad_edge, 0);
	CHECK_EQ_U64(bad_contig, 0);
	CHECK_EQ_U64(bad_rel, 0);
	CHECK_EQ_U64(bad_ref, 0);

	/* exact below 128 (and up to 255, where the width is still 1) */
	for (i = 0; i < 256; i++) {
		CHECK_EQ_U64(zl_hist_index(i), i);
		CHECK_EQ_U64(zl_hist_bucket_low(i), i);
		CHECK_EQ_U64(zl_hist_bucket_width(i), 1);
	}
	/* hand-computed points */
	CHECK_EQ_U64(zl_hist_index(256), 256);
	CHECK_EQ_U64(zl_hist_index(257), 256);
	CHECK_EQ_U64(zl_hist_index(258), 257);
	CHECK_EQ_U64(zl_hist_bucket_width(256), 2);
	CHECK_EQ_U64(zl_hist_index(50000), 128 * 9 + (50000 >> 8) - 128); /* 2^15 <= v < 2^16 */
	CHECK_EQ_U64(zl_hist_bucket_low(zl_hist_index(50000)), 49920);
	CHECK_EQ_U64(zl_hist_bucket_width(zl_hist_index(50000)), 256);
	CHECK_EQ_U64(zl_hist_bucket_low(ZL_HIST_BUCKETS - 1), 255ull << 33);
	CHECK_EQ_U64(zl_hist_bucket_width(ZL_HIST_BUCKETS - 1), 1ull << 33);
	CHECK_EQ_U64(zl_hist_index((1ull << 41) - 1), ZL_HIST_BUCKETS - 1);
	CHECK_EQ_U64(zl_hist_index(1ull << 41), ZL_HIST_BUCKETS - 1);
	CHECK_EQ_U64(zl_hist_index(1ull << 45), ZL_HIST_BUCKETS - 1);
	CHECK_EQ_U64(zl_hist_index(UINT64_MAX), ZL_HIST_BUCKETS - 1);
	CHECK_EQ_U64(zl_hist_index((1ull << 40) - 1), ZL_HIST_BUCKETS - 128 - 1);

	/* random values below 2^41: in their bucket, bucket as the reference says, relative width */
	{
		uint64_t bad = 0, badrel = 0, k;

		for (k = 0; k < 1000000; k++) {
			uint64_t v = lcg64() >> (23 + k % 41); /* 0 .. 2^41 - 1, all magnitudes */
			uint32_t ix = zl_hist_index(v);
			uint64_t lo = zl_hist_bucket_low(ix), w = zl_hist_bucket_width(ix);

			if (ix >= ZL_HIST_BUCKETS || v < lo || v >= lo + w ||
					w != ref_width(v) || lo != (v & ~(w - 1)))
				bad++;
			if (v >= 128 && (double)w / (double)v > 1.0 / 128)
				badrel++;
		}
		CHECK_EQ_U64(bad, 0);
		CHECK_EQ_U64(badrel, 0);
	}
	/* monotonic across every power-of-two boundary */
	for (i = 1; i < 41; i++) {
		uint64_t p = 1ull << i;

		CHECK(zl_hist_index(p - 1) <= zl_hist_index(p));
		CHECK(zl_hist_index(p) <= zl_hist_index(p + 1));
		if (p > 128)
			CHECK_EQ_U64(zl_hist_index(p), zl_hist_index(p - 1) + 1);
	}
}

/* Percentiles of 1..100000 ns, one of each. */
static void
test_uniform(void)
{
	static const double pcts[] = { 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 99.999 };
	uint64_t v, p50, p99;
	unsigned int i;

	zl_hist_reset(&ha);
	for (v = 1; v <= 100000; v++)
		zl_hist_record(&ha, v);
	CHECK_EQ_U64(ha.count, 100000);
	CHECK_EQ_U64(ha.sum, 5000050000ull);
	CHECK_EQ_U64(ha.min, 1);
	CHECK_EQ_U64(ha.max, 100000);
	CHECK((double)ha.sum / (double)ha.count == 50000.5);
	p50 = zl_hist_percentile(&ha, 50);
	p99 = zl_hist_percentile(&ha, 99);
	CHECK(p50 >= 50000 - 400 && p50 <= 50000 + 400);
	CHECK(p99 >= 99000 - 792 && p99 <= 99000 + 792);
	CHECK_EQ_U64(p50, 50048);  /* bucket [49920, 50176) */
	CHECK_EQ_U64(p99, 99072);  /* bucket [98816, 99328) */
	CHECK_EQ_U64(zl_hist_percentile(&ha, 0), 1);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 100), 100000);
	CHECK_EQ_U64(zl_hist_percentile(&ha, -5), 1);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 250), 100000);
	/* the smallest ranks are exact */
	CHECK_EQ_U64(zl_hist_percentile(&ha, 0.001), 1);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 0.1), 100);
	for (i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++) {
		/* the value of rank r is r itself; rank = ceil(p / 100 * n) */
		uint64_t rank = (uint64_t)(pcts[i] * 1000 + 0.5); /* p * 100000 / 100, exact here */
		uint64_t want = ref_mid(rank), got = zl_hist_percentile(&ha, pcts[i]);

		if (want > 100000)
			want = 100000;
		CHECK_EQ_U64(got, want);
		CHECK(got >= rank - rank / 256 - 1 && got <= rank + rank / 256 + 1);
	}
}

/* One value, two values, empty, zeros. */
static void
test_small(void)
{
	zl_hist_reset(&ha);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50), 0);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 0), 0);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 100), 0);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 99.99), 0);

	zl_hist_record(&ha, 12345);
	CHECK_EQ_U64(ha.min, 12345);
	CHECK_EQ_U64(ha.max, 12345);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 0), 12345);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 1), 12345);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50), 12345);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 99.99), 12345);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 100), 12345);

	zl_hist_reset(&ha);
	zl_hist_record(&ha, 1000000);
	zl_hist_record(&ha, 100);
	CHECK_EQ_U64(ha.min, 100);
	CHECK_EQ_U64(ha.max, 1000000);
	CHECK_EQ_U64(ha.sum, 1000100);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 10), 100);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50), 100);      /* rank 1 */
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50.1), 1000000); /* rank 2: bucket middle clamped to max */
	CHECK_EQ_U64(zl_hist_percentile(&ha, 99), 1000000);

	/* a zero first, then larger values: min stays 0 */
	zl_hist_reset(&ha);
	zl_hist_record(&ha, 0);
	zl_hist_record(&ha, 7);
	CHECK_EQ_U64(ha.min, 0);
	CHECK_EQ_U64(ha.max, 7);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50), 0);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 51), 7);
	/* larger first, then a zero */
	zl_hist_reset(&ha);
	zl_hist_record(&ha, 7);
	zl_hist_record(&ha, 0);
	CHECK_EQ_U64(ha.min, 0);
	CHECK_EQ_U64(ha.bucket[0], 1);
	CHECK_EQ_U64(ha.bucket[7], 1);
}

/* Merging equals recording everything into one histogram. */
static void
test_merge(void)
{
	uint64_t k, diff = 0;
	uint32_t i;

	zl_hist_reset(&ha);
	zl_hist_reset(&hb);
	zl_hist_reset(&hc);
	zl_hist_reset(&hd);
	lcg_state = 99;
	for (k = 0; k < 200000; k++) {
		uint64_t v = lcg64() >> (30 + k % 30);

		if (k % 3 == 0)
			v += 5000; /* a's values are never the smallest */
		if (k % 3 == 0)
			zl_hist_record(&ha, v);
		else
			zl_hist_record(&hb, v);
		zl_hist_record(&hc, v);
	}
	/* merging an empty histogram changes nothing, merging into an empty one copies */
	zl_hist_merge(&ha, &hd);
	CHECK_EQ_U64(ha.count, 66667);
	zl_hist_merge(&hd, &ha);
	zl_hist_merge(&hd, &hb);
	CHECK_EQ_U64(hd.count, hc.count);
	CHECK_EQ_U64(hd.sum, hc.sum);
	CHECK_EQ_U64(hd.min, hc.min);
	CHECK_EQ_U64(hd.max, hc.max);
	for (i = 0; i < ZL_HIST_BUCKETS; i++)
		if (hd.bucket[i] != hc.bucket[i])
			diff++;
	CHECK_EQ_U64(diff, 0);
	CHECK_EQ_U64(zl_hist_percentile(&hd, 50), zl_hist_percentile(&hc, 50));
	CHECK_EQ_U64(zl_hist_percentile(&hd, 99.9), zl_hist_percentile(&hc, 99.9));
	/* the other order gives the same */
	zl_hist_reset(&hd);
	zl_hist_merge(&hd, &hb);
	zl_hist_merge(&hd, &ha);
	CHECK_EQ_U64(hd.min, hc.min);
	CHECK_EQ_U64(hd.max, hc.max);
	CHECK(memcmp(hd.bucket, hc.bucket, sizeof(hd.bucket)) == 0);

	/* merging into an empty histogram takes the source's min, also when it is not 0 */
	zl_hist_reset(&ha);
	zl_hist_reset(&hb);
	zl_hist_record(&hb, 500);
	zl_hist_record(&hb, 700);
	zl_hist_merge(&ha, &hb);
	CHECK_EQ_U64(ha.min, 500);
	CHECK_EQ_U64(ha.max, 700);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 1), 501); /* bucket [500, 502) */

	/* merging into a non-empty histogram whose min is a zero */
	zl_hist_reset(&ha);
	zl_hist_reset(&hb);
	zl_hist_record(&ha, 0);
	zl_hist_record(&hb, 10);
	zl_hist_record(&hb, 20);
	zl_hist_merge(&ha, &hb);
	CHECK_EQ_U64(ha.min, 0);
	CHECK_EQ_U64(ha.max, 20);
	CHECK_EQ_U64(ha.count, 3);
	CHECK_EQ_U64(ha.sum, 30);
}

/* Values past the last full power of two land in the last bucket. */
static void
test_huge(void)
{
	uint32_t i;
	uint64_t others = 0;

	zl_hist_reset(&ha);
	zl_hist_record(&ha, 1ull << 45);
	CHECK_EQ_U64(ha.bucket[ZL_HIST_BUCKETS - 1], 1);
	for (i = 0; i < ZL_HIST_BUCKETS - 1; i++)
		others += ha.bucket[i];
	CHECK_EQ_U64(others, 0);
	CHECK_EQ_U64(ha.max, 1ull << 45);
	CHECK_EQ_U64(ha.min, 1ull << 45);
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50), 1ull << 45);
	zl_hist_record(&ha, 1000);
	zl_hist_record(&ha, 1ull << 62);
	CHECK_EQ_U64(ha.bucket[ZL_HIST_BUCKETS - 1], 2);
	CHECK_EQ_U64(ha.sum, (1ull << 45) + 1000 + (1ull << 62));
	CHECK_EQ_U64(zl_hist_percentile(&ha, 100), 1ull << 62);
	/* the middle of the last bucket, inside [min, max] */
	CHECK_EQ_U64(zl_hist_percentile(&ha, 50), (255ull << 33) + (1ull << 32));
	CHECK_EQ_U64(zl_hist_percentile(&ha, 30), 1002);  /* bucket [1000, 1004) */
}

/* Runs the histogram tests and prints the summary line. */
/*
 * The scheme PROTOCOL.md gives for latency_hist, from a bucket's low value alone: exact below
 * 128 ns, else 2^(floor(log2 low) - 7) ns wide; consecutive buckets tile the values without gaps.
 */
static void
test_exported_scheme(void)
{
	uint32_t i;

	for (i = 0; i < ZL_HIST_BUCKETS; i++) {
		uint64_t low = zl_hist_bucket_low(i);
		uint64_t w = low < 128 ? 1 : (uint64_t)1 << (63 - __builtin_clzll(low) - 7);

		CHECK_EQ_U64(zl_hist_bucket_width(i), w);
		CHECK_EQ_U64(zl_hist_index(low), i);
		CHECK_EQ_U64(zl_hist_index(low + w - 1), i);
		if (i + 1 < ZL_HIST_BUCKETS)
			CHECK_EQ_U64(zl_hist_bucket_low(i + 1), low + w);
	}
}

int
main(void)
{
	test_exported_scheme();
	test_buckets();
	test_uniform();
	test_small();
	test_merge();
	test_huge();
	return check_report();
}
