/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-interval counters (start's interval_ms): which interval of a trial a
 * TX time falls in, and the full TX time of a received frame rebuilt from the
 * 32 bits it carries. Pure: no EAL, unit-tested on its own.
 */
#ifndef ZL_IVL_H
#define ZL_IVL_H

#include <stdint.h>

#define ZL_IVL_MAX (1u << 20)    /* intervals per stream, at most */
#define ZL_IVL_MAX_MS 60000      /* longest interval */
#define ZL_IVL_MAX_BYTES (1ull << 30) /* counter memory of a trial, at most */
#define ZL_IVL_PAGE 65536        /* intervals (over every stream asked) in one reply */

/*
 * A trial's interval grid, interval i = [start + i * len, start + (i + 1) * len),
 * and a cursor: the interval found last, so that a TX time in the same
 * interval as the previous one (nearly every frame) costs a subtraction and a
 * compare instead of a division. Each user (a stream's sender, a worker's
 * receiver) has its own.
 */
struct zl_ivl_cur {
	uint64_t start_tsc;      /* interval 0 starts here */
	uint64_t len_tsc;        /* interval length, > 0 */
	uint64_t lo_tsc;         /* start of interval idx */
	uint32_t idx;            /* the interval found last */
	uint32_t n;              /* intervals; index n means "not in the grid" */
};

/* Sets up a grid of n intervals of len_tsc from start_tsc, the cursor on interval 0. */
void zl_ivl_init(struct zl_ivl_cur *c, uint64_t start_tsc, uint64_t len_tsc, uint32_t n);

/* Interval of TSC value tsc, moving the cursor: before the start, 0; at or after the end, n. */
uint32_t zl_ivl_locate(struct zl_ivl_cur *c, uint64_t tsc);

/* zl_ivl_locate with the cursor's interval tested first (the hot path's call). */
static inline uint32_t
zl_ivl_index(struct zl_ivl_cur *c, uint64_t tsc)
{
	if (__builtin_expect(tsc - c->lo_tsc < c->len_tsc, 1))
		return c->idx;
	return zl_ivl_locate(c, tsc);
}

/*
 * The 64-bit TX TSC of a frame received at rx_tsc that carries the low 32
 * bits tx_tsc32: exact while the frame took less than 2^32 cycles (about
 * 1.4 s at 3 GHz); one that took longer is placed 2^32 cycles too late.
 */
static inline uint64_t
zl_ivl_tx_tsc(uint64_t rx_tsc, uint32_t tx_tsc32)
{
	return rx_tsc - (uint32_t)((uint32_t)rx_tsc - tx_tsc32);
}

/* Intervals of len_tsc needed to cover span_tsc (at least 1). */
uint64_t zl_ivl_count(uint64_t span_tsc, uint64_t len_tsc);

#endif
