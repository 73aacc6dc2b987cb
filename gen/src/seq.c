/* SPDX-License-Identifier: BSD-3-Clause */
/* Sequence tracking with a sliding bitmap of the last ZL_SEQ_WIN numbers. */
#include <string.h>

#include "seq.h"

void
zl_seq_reset(struct zl_seq *s)
{
	memset(s, 0, sizeof(*s));
}

static inline bool
bit_test(const struct zl_seq *s, uint64_t n)
{
	return (s->win[(n % ZL_SEQ_WIN) / 64] >> (n % 64)) & 1;
}

static inline void
bit_set(struct zl_seq *s, uint64_t n)
{
	s->win[(n % ZL_SEQ_WIN) / 64] |= (uint64_t)1 << (n % 64);
}

static inline void
bit_clear(struct zl_seq *s, uint64_t n)
{
	s->win[(n % ZL_SEQ_WIN) / 64] &= ~((uint64_t)1 << (n % 64));
}

enum zl_seq_kind
zl_seq_record(struct zl_seq *s, uint32_t seq32)
{
	/* 32-bit numbers on the wire; unwrap to the value closest to next */
	int64_t n = (int64_t)s->next + (int32_t)(seq32 - (uint32_t)s->next);
	uint64_t u, i;

	if (n < 0)
		n = seq32; /* before any wrap: take the number as it is */
	u = (uint64_t)n;
	if (u >= s->next) {
		enum zl_seq_kind k = u == s->next ? ZL_SEQ_IN_ORDER : ZL_SEQ_AHEAD;

		/* the numbers skipped are missing: clear their (stale) bits */
		if (u - s->next >= ZL_SEQ_WIN)
			memset(s->win, 0, sizeof(s->win));
		else
			for (i = s->next; i < u; i++)
				bit_clear(s, i);
		s->gaps += u - s->next;
		bit_set(s, u);
		s->next = u + 1;
		s->unique++;
		return k;
	}
	if (s->next - u > ZL_SEQ_WIN) {
		s->unique++;
		s->reordered++;
		if (s->gaps)
			s->gaps--;
		return ZL_SEQ_OLD;
	}
	if (bit_test(s, u)) {
		s->duplicate++;
		return ZL_SEQ_DUPLICATE;
	}
	bit_set(s, u);
	s->unique++;
	s->reordered++;
	if (s->gaps) /* an OLD duplicate may already have taken this gap off */
		s->gaps--;
	return ZL_SEQ_REORDERED;
}
