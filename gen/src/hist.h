/* SPDX-License-Identifier: BSD-3-Clause */
/* Log-linear latency histogram in nanoseconds (HdrHistogram-like buckets). */
#ifndef ZL_HIST_H
#define ZL_HIST_H

#include <stdint.h>

/*
 * Values below 2^ZL_HIST_SUB_BITS ns get one bucket each (exact). Above, each
 * power of two [2^e, 2^(e+1)) is split into 2^ZL_HIST_SUB_BITS equal buckets,
 * so a bucket is at most 1/128 (0.78 %) of its value wide. Values of 2^40 ns
 * (about 18 minutes) and more land in the last buckets.
 */
#define ZL_HIST_SUB_BITS 7
#define ZL_HIST_SUB (1u << ZL_HIST_SUB_BITS)
#define ZL_HIST_MAX_EXP 40
#define ZL_HIST_BUCKETS (ZL_HIST_SUB * (ZL_HIST_MAX_EXP - ZL_HIST_SUB_BITS + 2))

struct zl_hist {
	uint64_t count;
	uint64_t sum;       /* ns, for the mean */
	uint64_t min;
	uint64_t max;
	uint64_t bucket[ZL_HIST_BUCKETS];
};

/* Bucket index of value v (ns). */
static inline uint32_t
zl_hist_index(uint64_t v)
{
	uint32_t e;

	if (v < ZL_HIST_SUB)
		return (uint32_t)v;
	e = 63 - (uint32_t)__builtin_clzll(v);
	if (e > ZL_HIST_MAX_EXP)
		return ZL_HIST_BUCKETS - 1;
	return ZL_HIST_SUB * (e - ZL_HIST_SUB_BITS + 1) +
		(uint32_t)(v >> (e - ZL_HIST_SUB_BITS)) - ZL_HIST_SUB;
}

/* Records one value; only the owning thread calls this. */
static inline void
zl_hist_record(struct zl_hist *h, uint64_t v)
{
	h->count++;
	h->sum += v;
	if (v < h->min || h->count == 1)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->bucket[zl_hist_index(v)]++;
}

void zl_hist_reset(struct zl_hist *h);

/* Smallest value of bucket i and its width (ns). */
uint64_t zl_hist_bucket_low(uint32_t i);
uint64_t zl_hist_bucket_width(uint32_t i);

/* Adds src into dst. */
void zl_hist_merge(struct zl_hist *dst, const struct zl_hist *src);

/*
 * Value at percentile pct (0..100): the middle of the bucket holding the
 * ceil(pct/100 * count)-th smallest value, clamped to [min, max].
 * Returns 0 for an empty histogram.
 */
uint64_t zl_hist_percentile(const struct zl_hist *h, double pct);

#endif
