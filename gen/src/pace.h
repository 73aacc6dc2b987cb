/* SPDX-License-Identifier: BSD-3-Clause */
/* Transmit pacing on absolute TSC deadlines. */
#ifndef ZL_PACE_H
#define ZL_PACE_H

#include <stdint.h>

/*
 * Frame n of a schedule is due at start_tsc + n * hz / pps. Each call of
 * zl_pace_due() says how many frames are due now, at most one burst. When the
 * sender falls behind by more than gap_tsc (it was descheduled, the device
 * was full), the schedule restarts instead of bursting to catch up (the
 * approach of MoonGen's rate control); the frames it skipped are counted.
 * The longest lateness seen (now minus the deadline of the first frame due)
 * is kept: the sender's longest stall while it had frames to send. So is the
 * largest backlog it caught up (frames due at once within the gap): no window
 * of the trial carried more than its rate's share plus that backlog and one
 * burst, the bound a receiver's ring must absorb (zeroloss judges a trial that
 * lost frames as a loss at the requested rate only within that bound).
 */
struct zl_pace {
	uint64_t hz;         /* TSC frequency */
	uint64_t pps;        /* 0: as fast as possible */
	uint64_t start_tsc;  /* deadline of frame n_base */
	uint64_t n_base;     /* frames scheduled before the last restart */
	uint64_t n_sched;    /* frames taken from the schedule so far */
	uint64_t gap_tsc;    /* lateness that restarts the schedule */
	uint64_t restarts;   /* how many times the schedule restarted */
	uint64_t skipped;    /* frames the restarts left out */
	uint64_t max_late;   /* longest lateness of a due frame seen (TSC ticks) */
	uint64_t max_backlog; /* most frames due at once without a restart (caught up) */
	uint32_t burst;      /* most frames handed out per call */
};

/* Sets up a schedule whose first frame is due at start_tsc. */
void zl_pace_init(struct zl_pace *p, uint64_t hz, uint64_t pps, uint64_t start_tsc,
		uint32_t burst, uint64_t gap_tsc);

/* TSC value at which frame n (counted from the last restart) is due. */
static inline uint64_t
zl_pace_deadline(const struct zl_pace *p, uint64_t n)
{
	return p->start_tsc + (uint64_t)((unsigned __int128)n * p->hz / p->pps);
}

/* Frames due at TSC now, at most one burst; the caller then calls zl_pace_take(). */
static inline uint32_t
zl_pace_due(struct zl_pace *p, uint64_t now)
{
	uint64_t n, target, late;

	if (p->pps == 0)
		return p->burst;
	if (now < p->start_tsc)
		return 0;
	n = p->n_sched - p->n_base;
	/* frames 0..target-1 (since the last restart) are due at or before now */
	target = (uint64_t)((unsigned __int128)(now - p->start_tsc) * p->pps / p->hz) + 1;
	if (target <= n)
		return 0;
	late = now - zl_pace_deadline(p, n);
	if (late > p->max_late)
		p->max_late = late;
	if (late > p->gap_tsc) {
		/* behind by more than the gap: restart, never burst to catch up */
		uint64_t last = zl_pace_deadline(p, target - 1);

		p->restarts++;
		p->skipped += target - n - 1;
		p->n_base = p->n_sched;
		/*
		 * The new schedule starts with the last frame that is due (its
		 * deadline is at most one interval before now), so the frames
		 * sent plus the frames skipped always add up to the schedule.
		 */
		p->start_tsc = last;
		return 1;
	}
	if (target - n > p->max_backlog)
		p->max_backlog = target - n;
	return target - n > p->burst ? p->burst : (uint32_t)(target - n);
}

/* Takes n frames from the schedule (sent or not: a refused frame is not resent). */
static inline void
zl_pace_take(struct zl_pace *p, uint32_t n)
{
	p->n_sched += n;
}

/*
 * Closes the schedule at end_tsc: frames due before end_tsc that were never
 * taken (the sender was held up at the very end) are counted as skipped, and
 * the first of them was late by at least end_tsc minus its deadline.
 */
static inline void
zl_pace_finish(struct zl_pace *p, uint64_t end_tsc)
{
	uint64_t n, due;

	if (p->pps == 0 || end_tsc <= p->start_tsc)
		return;
	n = p->n_sched - p->n_base;
	/* frames 0..due-1 have deadlines before end_tsc */
	due = (uint64_t)(((unsigned __int128)(end_tsc - p->start_tsc) * p->pps + p->hz - 1) / p->hz);
	if (due > n) {
		p->skipped += due - n;
		/* frame n waited at least until the end */
		if (end_tsc - zl_pace_deadline(p, n) > p->max_late)
			p->max_late = end_tsc - zl_pace_deadline(p, n);
	}
}

/* TSC at which the next frame is due (for sleeping until then). */
static inline uint64_t
zl_pace_next(const struct zl_pace *p)
{
	if (p->pps == 0)
		return 0;
	return zl_pace_deadline(p, p->n_sched - p->n_base);
}

#endif
