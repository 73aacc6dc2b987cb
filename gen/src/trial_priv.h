/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trial internals shared by trial.c and the files it calls, which call one way
 * only: trial.c -> trial_json.c -> trial_ivl.c. Each part below is defined by
 * the file it names.
 */
#ifndef ZL_TRIAL_PRIV_H
#define ZL_TRIAL_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "trial.h"

/* The trial state kept by trial.c (the control thread); the other files read it. */
struct trial_run {
	enum zl_trial_state state;
	uint16_t trial_id;
	bool any;
	struct zl_trial_params params;
	uint64_t start_tsc;
	uint64_t tx_end_tsc;
	uint64_t drain_end_tsc;
	uint64_t done_tsc;       /* when the drain ended: all frames in, or drain_ms */
	bool stopped;
	json_t *result;
};

/* Seconds of t TSC cycles. */
static inline double
trial_tsc_to_s(uint64_t t)
{
	return (double)t / (double)zl.hz;
}

/* The name of state s in status and intervals replies. */
static inline const char *
trial_state_name(enum zl_trial_state s)
{
	switch (s) {
	case ZL_TRIAL_RUNNING: return "running";
	case ZL_TRIAL_DRAINING: return "draining";
	case ZL_TRIAL_DONE: return "done";
	default: return "idle";
	}
}

/* trial_json.c: the result report. */

/* The result of the trial r, built once every worker is idle (so every counter is final). */
json_t *trial_json_result(const struct trial_run *r);

/* trial_ivl.c: the per-interval counters, kept until the next start or configure. */

/* Counter memory and grid of a trial about to start (not installed yet). */
struct trial_ivl_plan {
	uint32_t n;
	uint64_t len_tsc;
	uint64_t *tx;
	uint64_t *rx[ZL_MAX_WORKERS];
};

/* Sizes and allocates the interval counters of a trial with parameters tp; returns 0, or -1 with err set. */
int trial_ivl_prepare(const struct zl_trial_params *tp, struct trial_ivl_plan *p, char *err, size_t errlen);
/* Installs a plan's counters for a trial starting at start (workers idle), freeing the previous trial's. */
void trial_ivl_install(struct trial_ivl_plan *p, uint32_t ms, uint64_t start);
/* Frees the interval counters and detaches them from the streams and workers (they are idle). */
void trial_ivl_free(void);
/* Intervals per stream of the installed grid (0: the trial has none). */
uint32_t trial_ivl_count(void);
/* TSC cycles the installed grid spans (0: the trial has none). */
uint64_t trial_ivl_span_tsc(void);
/* Intervals of stream k up to the last one with a frame sent or received. */
uint32_t trial_ivl_used(uint16_t k);
/* A stream's intervals in the result, with its lists, or paged when lists is false. */
json_t *trial_ivl_json(uint16_t k, bool lists);
/* The final intervals of trial r from interval from of stream (-1: every stream), or NULL with err set. */
json_t *trial_ivl_page(const struct trial_run *r, int stream, uint32_t from, char *err, size_t errlen);

#endif
