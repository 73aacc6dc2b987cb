/* SPDX-License-Identifier: BSD-3-Clause */
/* Trials: configure streams, start, drain, collect consistent results. */
#ifndef ZL_TRIAL_H
#define ZL_TRIAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "zlgen.h"

enum zl_trial_state {
	ZL_TRIAL_NONE,      /* no trial since start-up or since configure */
	ZL_TRIAL_RUNNING,   /* transmitting */
	ZL_TRIAL_DRAINING,  /* transmission over, still receiving */
	ZL_TRIAL_DONE       /* result available */
};

struct zl_trial_params {
	int trial_id;            /* -1: previous + 1 */
	double duration_s;       /* > 0: time mode */
	uint64_t frames;         /* > 0: count mode (per stream) */
	uint32_t drain_ms;
	uint32_t interval_ms;    /* > 0: count frames per interval of their TX time */
	uint32_t catchup_max;    /* > 0: the most frames a stream catches up after a pause (else it restarts) */
	bool has_rates;
	uint64_t pps[ZL_MAX_STREAMS]; /* rate override per stream */
};

/* Replaces the stream set; streams[] entries are taken over (flows included). */
int zl_trial_configure(struct zl_stream *streams, uint16_t n, char *err, size_t errlen);
int zl_trial_start(const struct zl_trial_params *tp, char *err, size_t errlen);
/* Moves a running trial forward; called by the control thread every tick. */
void zl_trial_tick(void);
/*
 * Milliseconds the control thread may sleep before the next tick is due (at
 * least 1, at most ZL_TICK_MAX_MS): until TX ends, then until the drain ends.
 * Waking every millisecond instead preempted whatever polls the control
 * thread's core (the DUT's forwarding core on a 2-core bench) 2000 times/s.
 */
int zl_trial_tick_ms(void);
#define ZL_TICK_MAX_MS 20
/* how often a drain looks whether every frame has arrived, ms */
#define ZL_DRAIN_LOOK_MS 2
/* Ends transmission now (the drain still happens). */
int zl_trial_stop(char *err, size_t errlen);
enum zl_trial_state zl_trial_state(void);
bool zl_trial_active(void);
json_t *zl_trial_status(void);
/*
 * The final intervals from interval from of stream (-1: every stream), as a
 * reply's fields (a new reference), or NULL with err set.
 */
json_t *zl_trial_intervals(int stream, uint32_t from, char *err, size_t errlen);
/* The last finished trial's result (a new reference) or NULL. */
json_t *zl_trial_result(void);
/* Ends any running trial at once and waits for the workers (shutdown). */
void zl_trial_abort(void);

#endif
