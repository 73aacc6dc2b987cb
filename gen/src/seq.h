/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-stream sequence tracking: in order, gaps, reordering, duplicates. */
#ifndef ZL_SEQ_H
#define ZL_SEQ_H

#include <stdbool.h>
#include <stdint.h>

/* How far back (in sequence numbers) duplicates are told apart from reordering. */
#define ZL_SEQ_WIN 8192u

enum zl_seq_kind {
	ZL_SEQ_IN_ORDER,   /* the next expected number */
	ZL_SEQ_AHEAD,      /* later than expected: the ones in between are missing (for now) */
	ZL_SEQ_REORDERED,  /* fills an earlier gap */
	ZL_SEQ_DUPLICATE,  /* seen before (within the window) */
	ZL_SEQ_OLD         /* older than the window: counted as reordered, not checked */
};

struct zl_seq {
	uint64_t next;          /* one past the highest sequence number seen */
	uint64_t unique;        /* distinct frames received */
	uint64_t reordered;     /* REORDERED + OLD */
	uint64_t duplicate;
	uint64_t gaps;          /* numbers skipped and not (yet) filled */
	uint64_t win[ZL_SEQ_WIN / 64]; /* bit s % WIN set: s was received */
};

void zl_seq_reset(struct zl_seq *s);

/* Accounts one received 32-bit sequence number (unwrapped against s->next). */
enum zl_seq_kind zl_seq_record(struct zl_seq *s, uint32_t seq32);

#endif
