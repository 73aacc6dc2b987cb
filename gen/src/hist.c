/* SPDX-License-Identifier: BSD-3-Clause */
/* Latency histogram: merging and percentiles, computed after the run. */
#include <math.h>
#include <string.h>

#include "hist.h"

void
zl_hist_reset(struct zl_hist *h)
{
	memset(h, 0, sizeof(*h));
}

uint64_t
zl_hist_bucket_low(uint32_t i)
{
	uint32_t g, sub;

	if (i < ZL_HIST_SUB)
		return i;
	g = i / ZL_HIST_SUB - 1;     /* exponent above ZL_HIST_SUB_BITS */
	sub = i % ZL_HIST_SUB;
	return (uint64_t)(ZL_HIST_SUB + sub) << g;
}

uint64_t
zl_hist_bucket_width(uint32_t i)
{
	if (i < ZL_HIST_SUB)
		return 1;
	return (uint64_t)1 << (i / ZL_HIST_SUB - 1);
}

void
zl_hist_merge(struct zl_hist *dst, const struct zl_hist *src)
{
	uint32_t i;

	if (src->count == 0)
		return;
	if (dst->count == 0 || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	for (i = 0; i < ZL_HIST_BUCKETS; i++)
		dst->bucket[i] += src->bucket[i];
}

uint64_t
zl_hist_percentile(const struct zl_hist *h, double pct)
{
	uint64_t rank, seen = 0, v;
	uint32_t i;

	if (h->count == 0)
		return 0;
	if (pct <= 0)
		return h->min;
	if (pct >= 100)
		return h->max;
	rank = (uint64_t)ceil(pct / 100.0 * (double)h->count);
	if (rank == 0)
		rank = 1;
	for (i = 0; i < ZL_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	if (i == ZL_HIST_BUCKETS)
		return h->max;
	v = zl_hist_bucket_low(i) + zl_hist_bucket_width(i) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}
