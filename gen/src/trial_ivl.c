/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Per-interval counters of a trial (start's interval_ms): sized and installed
 * before the trial starts, written by the senders and receivers, read into the
 * result and the intervals replies. Kept until the next start or configure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

#include "trial_priv.h"

static struct {
	uint32_t ms;             /* 0: the trial has none */
	uint32_t n;              /* intervals per stream; arrays hold n + 1 (the last: outside the grid) */
	uint64_t len_tsc;
	uint64_t *tx;            /* [stream][n + 1], written by each stream's sender */
	uint64_t *rx[ZL_MAX_WORKERS]; /* [stream][n + 1] per receiving worker (NULL: it polls no queue) */
} I;

/* Frees the interval counters and detaches them from the streams and workers (they are idle). */
void
trial_ivl_free(void)
{
	uint16_t i, k;

	for (i = 0; i < zl.nb_streams; i++)
		zl.streams[i].ivl_tx = NULL;
	for (i = 0; i < zl.nb_workers; i++) {
		for (k = 0; k < zl.nb_streams; k++)
			zl.workers[i].rx[k].ivl = NULL;
		free(I.rx[i]);
		I.rx[i] = NULL;
	}
	free(I.tx);
	I.tx = NULL;
	I.ms = 0;
	I.n = 0;
}

/* Zeroed counters of nb entries, every page touched now (no page fault in the hot path); NULL if out of memory. */
static uint64_t *
ivl_alloc(size_t nb)
{
	uint64_t *a = malloc(nb * sizeof(uint64_t));

	if (a != NULL)
		memset(a, 0, nb * sizeof(uint64_t));
	return a;
}

/*
 * The TX time of a trial with parameters tp into *span (TSC cycles): its
 * duration, or in frame-count mode the time the slowest stream's rate needs.
 * Returns 0, or -1 with err set when a stream is unpaced in frame-count mode.
 */
static int
ivl_span(const struct zl_trial_params *tp, uint64_t *span, char *err, size_t errlen)
{
	uint16_t i;

	*span = 0;
	if (tp->duration_s > 0) {
		*span = (uint64_t)(tp->duration_s * (double)zl.hz);
		return 0;
	}
	for (i = 0; i < zl.nb_streams; i++) {
		uint64_t pps = tp->has_rates ? tp->pps[i] : zl.streams[i].pps, t;

		if (pps == 0) {
			snprintf(err, errlen, "interval_ms with frames needs a rate for every stream (stream %u is "
				"unpaced: its duration is unknown): give rate_pps or use duration_s", i);
			return -1;
		}
		t = (uint64_t)((unsigned __int128)tp->frames * zl.hz / pps);
		if (t > *span)
			*span = t;
	}
	return 0;
}

/*
 * Sizes and allocates the interval counters of a trial: enough intervals for
 * its TX time (in frame-count mode, 1.5 times the time its rates need plus 1 s,
 * as every stream must then have a rate). Returns 0, or -1 with err set.
 */
int
trial_ivl_prepare(const struct zl_trial_params *tp, struct trial_ivl_plan *p, char *err, size_t errlen)
{
	uint64_t span, need, nb, bytes;
	uint16_t i, nb_rx = 0;

	memset(p, 0, sizeof(*p));
	if (tp->interval_ms == 0)
		return 0;
	p->len_tsc = zl.hz * tp->interval_ms / 1000;
	if (p->len_tsc == 0)
		p->len_tsc = 1;
	if (ivl_span(tp, &span, err, errlen) < 0)
		return -1;
	need = zl_ivl_count(span, p->len_tsc);
	if (need > ZL_IVL_MAX) {
		snprintf(err, errlen, "interval_ms %u needs %llu intervals for this trial, at most %u per stream: "
			"use a longer interval_ms or a shorter trial", tp->interval_ms, (unsigned long long)need,
			ZL_IVL_MAX);
		return -1;
	}
	if (tp->duration_s <= 0) {
		/* room for the sender to fall behind; it stops at the grid's end */
		need = zl_ivl_count(span + span / 2 + zl.hz, p->len_tsc);
		if (need > ZL_IVL_MAX)
			need = ZL_IVL_MAX;
	}
	p->n = (uint32_t)need;
	nb = (uint64_t)zl.nb_streams * (p->n + 1);
	for (i = 0; i < zl.nb_workers; i++)
		nb_rx += zl.workers[i].nb_rxq > 0;
	bytes = nb * sizeof(uint64_t) * (1u + nb_rx);
	if (bytes > ZL_IVL_MAX_BYTES) {
		snprintf(err, errlen, "interval_ms %u needs %llu MiB of counters (%u streams x %u intervals x %u "
			"workers), at most %llu MiB: use a longer interval_ms, a shorter trial or fewer streams",
			tp->interval_ms, (unsigned long long)(bytes >> 20), zl.nb_streams, p->n, 1u + nb_rx,
			ZL_IVL_MAX_BYTES >> 20);
		return -1;
	}
	p->tx = ivl_alloc(nb);
	for (i = 0; i < zl.nb_workers && p->tx != NULL; i++)
		if (zl.workers[i].nb_rxq > 0 && (p->rx[i] = ivl_alloc(nb)) == NULL)
			break;
	if (p->tx == NULL || i < zl.nb_workers) {
		free(p->tx);
		for (i = 0; i < zl.nb_workers; i++)
			free(p->rx[i]);
		snprintf(err, errlen, "out of memory for %llu MiB of interval counters: use a longer interval_ms",
			(unsigned long long)(bytes >> 20));
		return -1;
	}
	return 0;
}

/* Installs a plan's counters for a trial starting at start (workers idle), freeing the previous trial's. */
void
trial_ivl_install(struct trial_ivl_plan *p, uint32_t ms, uint64_t start)
{
	uint16_t i, k;

	trial_ivl_free();
	if (p->n == 0)
		return;
	I.ms = ms;
	I.n = p->n;
	I.len_tsc = p->len_tsc;
	I.tx = p->tx;
	for (k = 0; k < zl.nb_streams; k++) {
		zl.streams[k].ivl_tx = p->tx + (size_t)k * (p->n + 1);
		zl_ivl_init(&zl.streams[k].ivl_cur, start, p->len_tsc, p->n);
	}
	for (i = 0; i < zl.nb_workers; i++) {
		struct zl_worker *w = &zl.workers[i];

		I.rx[i] = p->rx[i];
		zl_ivl_init(&w->ivl_cur, start, p->len_tsc, p->n);
		for (k = 0; k < zl.nb_streams; k++)
			w->rx[k].ivl = p->rx[i] ? p->rx[i] + (size_t)k * (p->n + 1) : NULL;
	}
}

/* Intervals per stream of the installed grid (0: the trial has none). */
uint32_t
trial_ivl_count(void)
{
	return I.n;
}

/* TSC cycles the installed grid spans (0: the trial has none). */
uint64_t
trial_ivl_span_tsc(void)
{
	return I.n * I.len_tsc;
}

/* Frames of stream k sent in interval i (i == n: outside the grid). */
static uint64_t
ivl_tx_at(uint16_t k, uint32_t i)
{
	return ZL_READ(I.tx[(size_t)k * (I.n + 1) + i]);
}

/* Distinct frames of stream k received, sent in interval i (i == n: unplaced), over every worker. */
static uint64_t
ivl_rx_at(uint16_t k, uint32_t i)
{
	uint64_t n = 0;
	uint16_t w;

	for (w = 0; w < zl.nb_workers; w++)
		if (I.rx[w] != NULL)
			n += ZL_READ(I.rx[w][(size_t)k * (I.n + 1) + i]);
	return n;
}

/* Intervals of stream k up to the last one with a frame sent or received. */
uint32_t
trial_ivl_used(uint16_t k)
{
	uint32_t i;

	for (i = I.n; i > 0; i--)
		if (ivl_tx_at(k, i - 1) || ivl_rx_at(k, i - 1))
			return i;
	return 0;
}

/* Appends stream k's tx and rx counts of intervals [from, to) to o as "tx" and "rx". */
static void
ivl_lists(json_t *o, uint16_t k, uint32_t from, uint32_t to)
{
	json_t *tx = json_array(), *rx = json_array();
	uint32_t i;

	for (i = from; i < to; i++) {
		json_array_append_new(tx, json_integer((json_int_t)ivl_tx_at(k, i)));
		json_array_append_new(rx, json_integer((json_int_t)ivl_rx_at(k, i)));
	}
	json_object_set_new(o, "tx", tx);
	json_object_set_new(o, "rx", rx);
}

/*
 * A stream's intervals in the result: {ms, tx, rx, rx_unplaced}, trailing
 * empty intervals left out; {ms, paged, count, rx_unplaced} when the lists of
 * every stream would pass ZL_IVL_PAGE intervals (read them with "intervals").
 */
json_t *
trial_ivl_json(uint16_t k, bool lists)
{
	json_t *o = json_pack("{s:i,s:I}", "ms", (int)I.ms, "rx_unplaced", (json_int_t)ivl_rx_at(k, I.n));
	uint32_t used = trial_ivl_used(k);

	if (lists) {
		ivl_lists(o, k, 0, used);
	} else {
		json_object_set_new(o, "paged", json_true());
		json_object_set_new(o, "count", json_integer(used));
	}
	return o;
}

/*
 * The final intervals of trial r from interval from of stream (-1: every
 * stream), as a reply's fields (a new reference), or NULL with err set.
 */
json_t *
trial_ivl_page(const struct trial_run *r, int stream, uint32_t from, char *err, size_t errlen)
{
	uint16_t k, first = 0, last = zl.nb_streams;
	uint32_t final = 0, to, per;
	json_t *o, *arr;

	if (r->state == ZL_TRIAL_NONE) {
		snprintf(err, errlen, "no trial since the last configure: send start first");
		return NULL;
	}
	if (I.n == 0) {
		snprintf(err, errlen, "trial %u has no intervals: start it with interval_ms", r->trial_id);
		return NULL;
	}
	if (stream >= zl.nb_streams) {
		snprintf(err, errlen, "stream %d is not configured (%u streams)", stream, zl.nb_streams);
		return NULL;
	}
	if (stream >= 0) {
		first = (uint16_t)stream;
		last = (uint16_t)(stream + 1);
	}
	if (r->state == ZL_TRIAL_DONE) {
		for (k = first; k < last; k++)
			if (trial_ivl_used(k) > final)
				final = trial_ivl_used(k);
	} else {
		/* an interval is final drain_ms after its end: the wait the trial gives its last frames */
		uint64_t now = rte_rdtsc(), settle = r->start_tsc + (uint64_t)r->params.drain_ms * zl.hz / 1000;

		if (now > settle)
			final = (uint32_t)RTE_MIN((now - settle) / I.len_tsc, (uint64_t)I.n);
	}
	per = ZL_IVL_PAGE / (uint32_t)(last - first);
	to = from >= final ? from : (uint32_t)RTE_MIN((uint64_t)final, (uint64_t)from + per);
	arr = json_array();
	for (k = first; k < last; k++) {
		json_t *s = json_pack("{s:i,s:I}", "id", k, "rx_unplaced", (json_int_t)ivl_rx_at(k, I.n));

		ivl_lists(s, k, from, to);
		json_array_append_new(arr, s);
	}
	o = json_pack("{s:i,s:i,s:s,s:I,s:I,s:I}", "trial", r->trial_id, "ms", (int)I.ms,
		"state", trial_state_name(r->state), "from", (json_int_t)from, "to", (json_int_t)to,
		"final", (json_int_t)final);
	json_object_set_new(o, "streams", arr);
	return o;
}
