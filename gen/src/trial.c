/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Trial state machine run by the control thread: configure, start (each
 * stream's pacer on one schedule), the drain, stop, status. The result report
 * is built by trial_json.c, the per-interval counters are kept by trial_ivl.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "trial_priv.h"

static struct trial_run T;

/* The trial's state. */
enum zl_trial_state
zl_trial_state(void)
{
	return T.state;
}

/* A trial is transmitting or draining. */
bool
zl_trial_active(void)
{
	return T.state == ZL_TRIAL_RUNNING || T.state == ZL_TRIAL_DRAINING;
}

/* Waits until every worker has acknowledged going idle after generation gen. */
static void
wait_workers_idle(uint32_t gen)
{
	uint16_t i;

	for (i = 0; i < zl.nb_workers; i++)
		while (__atomic_load_n(&zl.workers[i].idle_gen, __ATOMIC_ACQUIRE) != gen && !zl.quit)
			rte_pause();
}

/* Frees the flows of every configured stream and forgets the streams. */
static void
free_streams(void)
{
	uint16_t i;

	for (i = 0; i < zl.nb_streams; i++) {
		free(zl.streams[i].flows);
		zl.streams[i].flows = NULL;
	}
	zl.nb_streams = 0;
}

/* Adds a UDP port that received VXLAN frames are decapsulated from, once. */
static void
add_vxlan_port(uint16_t port)
{
	uint16_t i;

	for (i = 0; i < zl.nb_vxlan_ports; i++)
		if (zl.vxlan_ports[i] == port)
			return;
	zl.vxlan_ports[zl.nb_vxlan_ports++] = port;
}

/* Replaces the stream set; streams[] entries are taken over (flows included). */
int
zl_trial_configure(struct zl_stream *streams, uint16_t n, char *err, size_t errlen)
{
	uint16_t i;

	if (zl_trial_active()) {
		snprintf(err, errlen, "trial %u is running: stop it or wait for its result first", T.trial_id);
		return -1;
	}
	trial_ivl_free();
	free_streams();
	for (i = 0; i < zl.nb_workers; i++)
		zl.workers[i].nb_tx = 0;
	zl.nb_vxlan_ports = 0;
	add_vxlan_port(ZL_VXLAN_PORT);
	for (i = 0; i < n; i++) {
		struct zl_stream *s = &zl.streams[i];
		struct zl_worker *w;

		*s = streams[i];
		s->id = i;
		zl_frame_tmpl_init(&s->tmpl, &s->spec, s->flows);
		if (s->vxlan) {
			zl_vxlan_tmpl_init(&s->vx_tmpl, &s->vx_spec);
			add_vxlan_port(s->vx_spec.udp_port);
		}
		w = &zl.workers[zl_queue_owner(s->port, s->queue)];
		w->tx[w->nb_tx++] = s;
	}
	zl.nb_streams = n;
	T.state = ZL_TRIAL_NONE;
	json_decref(T.result);
	T.result = NULL;
	return 0;
}

/* Zeroes every worker's receive counters and takes each port's ethdev counters as the base (workers idle). */
static void
reset_counters(void)
{
	uint16_t i;

	/* workers are idle: they touch neither the streams nor the rx stats now */
	for (i = 0; i < zl.nb_workers; i++) {
		struct zl_worker *w = &zl.workers[i];
		uint16_t k;

		memset(w->rxp, 0, sizeof(w->rxp));
		for (k = 0; k < zl.nb_streams; k++) {
			zl_seq_reset(&w->rx[k].seq);
			zl_hist_reset(&w->rx[k].hist);
			w->rx[k].pkts = w->rx[k].bytes = w->rx[k].late = 0;
		}
	}
	for (i = 0; i < zl.nb_ports; i++)
		rte_eth_stats_get(zl.ports[i].id, &zl.ports[i].base);
}

/* Sets each stream's pacer on the schedule that starts at start, its counters zeroed. */
static void
pace_streams(const struct zl_trial_params *tp, uint64_t start)
{
	uint64_t gap;
	uint16_t i;

	for (i = 0; i < zl.nb_streams; i++) {
		struct zl_stream *s = &zl.streams[i];

		if (tp->has_rates)
			s->pps = tp->pps[i];
		s->frames = tp->frames;
		/* restart after lateness of the gap or ZL_CATCHUP_FRAMES frames, whichever is longer */
		gap = zl.gap_tsc;
		if (s->pps && gap < ZL_CATCHUP_FRAMES * zl.hz / s->pps)
			gap = ZL_CATCHUP_FRAMES * zl.hz / s->pps;
		/* the receiver's ring takes no more than catchup_max frames of catch-up: restart beyond that */
		if (s->pps && tp->catchup_max && gap > (uint64_t)tp->catchup_max * zl.hz / s->pps)
			gap = (uint64_t)tp->catchup_max * zl.hz / s->pps;
		zl_pace_init(&s->pace, zl.hz, s->pps, start, ZL_BURST, gap);
		s->seq = 0;
		s->flow_idx = 0;
		s->size_idx = 0;
		s->done = false;
		s->tx_pkts = s->tx_bytes = s->tx_refused = s->tx_nombuf = 0;
		s->first_tsc = s->last_tsc = 0;
	}
}

/* Begins a trial on the configured streams; returns 0, or -1 with err set. */
int
zl_trial_start(const struct zl_trial_params *tp, char *err, size_t errlen)
{
	struct trial_ivl_plan plan;
	uint64_t now, start;
	uint32_t gen;

	if (zl_trial_active()) {
		snprintf(err, errlen, "trial %u is running: stop it or wait for its result first", T.trial_id);
		return -1;
	}
	if (zl.nb_streams == 0) {
		snprintf(err, errlen, "no streams: send configure first");
		return -1;
	}
	if (trial_ivl_prepare(tp, &plan, err, errlen) < 0)
		return -1;
	T.params = *tp;
	T.trial_id = tp->trial_id >= 0 ? (uint16_t)tp->trial_id : (uint16_t)(T.any ? T.trial_id + 1 : 1);
	T.any = true;
	T.stopped = false;
	json_decref(T.result);
	T.result = NULL;
	reset_counters();

	now = rte_rdtsc();
	start = now + zl.hz / 1000; /* 1 ms: every worker starts on the same schedule */
	pace_streams(tp, start);
	T.start_tsc = start;
	T.tx_end_tsc = 0;
	T.done_tsc = 0;
	trial_ivl_install(&plan, tp->interval_ms, start);
	zl.sync.trial_id = T.trial_id;
	zl.sync.end_tsc = tp->duration_s > 0 ? start + (uint64_t)(tp->duration_s * (double)zl.hz) : UINT64_MAX;
	if (tp->frames && trial_ivl_count())
		/* frame-count mode with intervals: transmission ends with the grid (it has room to spare) */
		zl.sync.end_tsc = start + trial_ivl_span_tsc();
	gen = zl.sync.gen + 1;
	__atomic_store_n(&zl.sync.gen, gen, __ATOMIC_RELEASE);
	__atomic_store_n(&zl.sync.phase, ZL_PHASE_RUN, __ATOMIC_RELEASE);
	T.state = ZL_TRIAL_RUNNING;
	return 0;
}

/* Ends transmission now (the drain still happens); returns 0, or -1 with err set. */
int
zl_trial_stop(char *err, size_t errlen)
{
	if (T.state != ZL_TRIAL_RUNNING) {
		snprintf(err, errlen, "no trial is transmitting");
		return -1;
	}
	T.stopped = true;
	__atomic_store_n(&zl.sync.end_tsc, rte_rdtsc(), __ATOMIC_RELAXED);
	return 0;
}

/*
 * Every frame sent has arrived: for each stream the distinct frames received
 * (over every worker) reach the frames the device took. Nothing is left to
 * wait for, so the drain ends (a lossy trial waits its whole drain_ms). Read
 * while the workers run: a count seen complete is complete, and the result
 * reads the final counters once they are idle.
 */
static bool
all_arrived(void)
{
	uint16_t i, k;

	for (i = 0; i < zl.nb_streams; i++) {
		uint64_t uniq = 0;

		for (k = 0; k < zl.nb_workers; k++)
			uniq += ZL_READ(zl.workers[k].rx[i].seq.unique);
		if (uniq < ZL_READ(zl.streams[i].tx_pkts))
			return false;
	}
	return true;
}

/* Moves a running trial forward: TX over, then the drain over (every frame in, or drain_ms). */
void
zl_trial_tick(void)
{
	uint64_t now = rte_rdtsc();
	uint32_t gen = zl.sync.gen;
	uint16_t i;

	if (T.state == ZL_TRIAL_RUNNING) {
		for (i = 0; i < zl.nb_workers; i++)
			if (__atomic_load_n(&zl.workers[i].tx_done_gen, __ATOMIC_ACQUIRE) != gen)
				return;
		T.tx_end_tsc = now;
		T.drain_end_tsc = now + (uint64_t)T.params.drain_ms * zl.hz / 1000;
		T.state = ZL_TRIAL_DRAINING;
	}
	if (T.state == ZL_TRIAL_DRAINING && (now >= T.drain_end_tsc || all_arrived())) {
		T.done_tsc = now;
		__atomic_store_n(&zl.sync.phase, ZL_PHASE_IDLE, __ATOMIC_RELEASE);
		wait_workers_idle(gen);
		T.result = trial_json_result(&T);
		T.state = ZL_TRIAL_DONE;
	}
}

/* Milliseconds from now until tsc, at least 1 and at most ZL_TICK_MAX_MS. */
static int
ms_until(uint64_t now, uint64_t tsc)
{
	uint64_t ms;

	if (tsc <= now)
		return 1;
	ms = (tsc - now) * 1000 / zl.hz + 1;
	return ms > ZL_TICK_MAX_MS ? ZL_TICK_MAX_MS : (int)ms;
}

/* Milliseconds the control thread may sleep before the next tick is due. */
int
zl_trial_tick_ms(void)
{
	uint64_t now = rte_rdtsc(), end = __atomic_load_n(&zl.sync.end_tsc, __ATOMIC_RELAXED);

	if (T.state == ZL_TRIAL_RUNNING)
		/* a frame-count trial ends when its last frame is sent: look often */
		return end == UINT64_MAX || T.params.frames ? 2 : ms_until(now, end);
	if (T.state == ZL_TRIAL_DRAINING)
		/* look often: the drain ends when every frame has arrived */
		return RTE_MIN(ms_until(now, T.drain_end_tsc), ZL_DRAIN_LOOK_MS);
	return 100;
}

/* Ends any running trial at once and waits for the workers (shutdown). */
void
zl_trial_abort(void)
{
	if (!zl_trial_active())
		return;
	__atomic_store_n(&zl.sync.end_tsc, rte_rdtsc(), __ATOMIC_RELAXED);
	__atomic_store_n(&zl.sync.phase, ZL_PHASE_IDLE, __ATOMIC_RELEASE);
	wait_workers_idle(zl.sync.gen);
	T.state = ZL_TRIAL_NONE;
}

/* The trial's state and counters so far. */
json_t *
zl_trial_status(void)
{
	json_t *o = json_pack("{s:s,s:b}", "state", trial_state_name(T.state), "configured", zl.nb_streams > 0);
	json_t *streams;
	uint64_t now = rte_rdtsc();
	uint16_t i, k;

	if (!T.any)
		return o;
	json_object_set_new(o, "trial", json_integer(T.trial_id));
	json_object_set_new(o, "elapsed_s", json_real(now > T.start_tsc ? trial_tsc_to_s(now - T.start_tsc) : 0));
	streams = json_array();
	for (i = 0; i < zl.nb_streams; i++) {
		const struct zl_stream *s = &zl.streams[i];
		uint64_t rx = 0;

		for (k = 0; k < zl.nb_workers; k++)
			rx += ZL_READ(zl.workers[k].rx[i].pkts);
		json_array_append_new(streams, json_pack("{s:i,s:I,s:I,s:I}", "id", i,
			"tx_pkts", (json_int_t)ZL_READ(s->tx_pkts), "rx_pkts", (json_int_t)rx,
			"tx_refused", (json_int_t)ZL_READ(s->tx_refused)));
	}
	json_object_set_new(o, "streams", streams);
	return o;
}

/* The last finished trial's result (a new reference) or NULL. */
json_t *
zl_trial_result(void)
{
	if (T.state != ZL_TRIAL_DONE || T.result == NULL)
		return NULL;
	return json_incref(T.result);
}

/* The final intervals from interval from of stream (-1: every stream), or NULL with err set. */
json_t *
zl_trial_intervals(int stream, uint32_t from, char *err, size_t errlen)
{
	return trial_ivl_page(&T, stream, from, err, errlen);
}
