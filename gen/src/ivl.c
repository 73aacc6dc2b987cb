/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-interval counters: the interval grid of a trial. */
#include "ivl.h"

void
zl_ivl_init(struct zl_ivl_cur *c, uint64_t start_tsc, uint64_t len_tsc, uint32_t n)
{
	c->start_tsc = start_tsc;
	c->len_tsc = len_tsc ? len_tsc : 1;
	c->lo_tsc = start_tsc;
	c->idx = 0;
	c->n = n;
}

uint32_t
zl_ivl_locate(struct zl_ivl_cur *c, uint64_t tsc)
{
	uint64_t q;

	if (tsc < c->start_tsc)
		return 0; /* sent before the trial's first deadline (an unpaced stream starts at once) */
	q = (tsc - c->start_tsc) / c->len_tsc;
	if (q >= c->n)
		return c->n;
	c->idx = (uint32_t)q;
	c->lo_tsc = c->start_tsc + q * c->len_tsc;
	return c->idx;
}

uint64_t
zl_ivl_count(uint64_t span_tsc, uint64_t len_tsc)
{
	uint64_t n = span_tsc / len_tsc + (span_tsc % len_tsc != 0);

	return n ? n : 1;
}
