/* SPDX-License-Identifier: BSD-3-Clause */
/* Trial state machine run by the control thread, and the result report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "trial.h"

static struct {
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
	/* per-interval counters of the trial (interval_ms), kept until the next start or configure */
	uint32_t ivl_ms;         /* 0: the trial has none */
	uint32_t ivl_n;          /* intervals per stream; arrays hold n + 1 (the last: outside the grid) */
	uint64_t ivl_len_tsc;
	uint64_t *ivl_tx;        /* [stream][n + 1], written by each stream's sender */
	uint64_t *ivl_rx[ZL_MAX_WORKERS]; /* [stream][n + 1] per receiving worker (NULL: it polls no queue) */
} T;

/* Counter memory and grid of a trial about to start (not installed yet). */
struct ivl_plan {
	uint32_t n;
	uint64_t len_tsc;
	uint64_t *tx;
	uint64_t *rx[ZL_MAX_WORKERS];
};

static struct zl_hist merged_hist; /* scratch for merging per-worker histograms */

enum zl_trial_state
zl_trial_state(void)
{
	return T.state;
}

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

/* Frees the interval counters and detaches them from the streams and workers (they are idle). */
static void
ivl_free(void)
{
	uint16_t i, k;

	for (i = 0; i < zl.nb_streams; i++)
		zl.streams[i].ivl_tx = NULL;
	for (i = 0; i < zl.nb_workers; i++) {
		for (k = 0; k < zl.nb_streams; k++)
			zl.workers[i].rx[k].ivl = NULL;
		free(T.ivl_rx[i]);
		T.ivl_rx[i] = NULL;
	}
	free(T.ivl_tx);
	T.ivl_tx = NULL;
	T.ivl_ms = 0;
	T.ivl_n = 0;
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
 * Sizes and allocates the interval counters of a trial: enough intervals for
 * its TX time (in frame-count mode, 1.5 times the time its rates need plus 1 s,
 * as every stream must then have a rate). Returns 0, or -1 with err set.
 */
static int
ivl_prepare(const struct zl_trial_params *tp, struct ivl_plan *p, char *err, size_t errlen)
{
	uint64_t span = 0, need, nb, bytes;
	uint16_t i, nb_rx = 0;

	memset(p, 0, sizeof(*p));
	if (tp->interval_ms == 0)
		return 0;
	p->len_tsc = zl.hz * tp->interval_ms / 1000;
	if (p->len_tsc == 0)
		p->len_tsc = 1;
	if (tp->duration_s > 0) {
		span = (uint64_t)(tp->duration_s * (double)zl.hz);
	} else {
		for (i = 0; i < zl.nb_streams; i++) {
			uint64_t pps = tp->has_rates ? tp->pps[i] : zl.streams[i].pps, t;

			if (pps == 0) {
				snprintf(err, errlen, "interval_ms with frames needs a rate for every stream (stream %u is "
					"unpaced: its duration is unknown): give rate_pps or use duration_s", i);
				return -1;
			}
			t = (uint64_t)((unsigned __int128)tp->frames * zl.hz / pps);
			if (t > span)
				span = t;
		}
	}
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
static void
ivl_install(struct ivl_plan *p, uint32_t ms, uint64_t start)
{
	uint16_t i, k;

	ivl_free();
	if (p->n == 0)
		return;
	T.ivl_ms = ms;
	T.ivl_n = p->n;
	T.ivl_len_tsc = p->len_tsc;
	T.ivl_tx = p->tx;
	for (k = 0; k < zl.nb_streams; k++) {
		zl.streams[k].ivl_tx = p->tx + (size_t)k * (p->n + 1);
		zl_ivl_init(&zl.streams[k].ivl_cur, start, p->len_tsc, p->n);
	}
	for (i = 0; i < zl.nb_workers; i++) {
		struct zl_worker *w = &zl.workers[i];

		T.ivl_rx[i] = p->rx[i];
		zl_ivl_init(&w->ivl_cur, start, p->len_tsc, p->n);
		for (k = 0; k < zl.nb_streams; k++)
			w->rx[k].ivl = p->rx[i] ? p->rx[i] + (size_t)k * (p->n + 1) : NULL;
	}
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

int
zl_trial_configure(struct zl_stream *streams, uint16_t n, char *err, size_t errlen)
{
	uint16_t i;

	if (zl_trial_active()) {
		snprintf(err, errlen, "trial %u is running: stop it or wait for its result first", T.trial_id);
		return -1;
	}
	ivl_free();
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

int
zl_trial_start(const struct zl_trial_params *tp, char *err, size_t errlen)
{
	uint64_t now, start, gap;
	struct ivl_plan plan;
	uint16_t i;
	uint32_t gen;

	if (zl_trial_active()) {
		snprintf(err, errlen, "trial %u is running: stop it or wait for its result first", T.trial_id);
		return -1;
	}
	if (zl.nb_streams == 0) {
		snprintf(err, errlen, "no streams: send configure first");
		return -1;
	}
	if (ivl_prepare(tp, &plan, err, errlen) < 0)
		return -1;
	T.params = *tp;
	T.trial_id = tp->trial_id >= 0 ? (uint16_t)tp->trial_id : (uint16_t)(T.any ? T.trial_id + 1 : 1);
	T.any = true;
	T.stopped = false;
	json_decref(T.result);
	T.result = NULL;

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

	now = rte_rdtsc();
	start = now + zl.hz / 1000; /* 1 ms: every worker starts on the same schedule */
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
	T.start_tsc = start;
	T.tx_end_tsc = 0;
	T.done_tsc = 0;
	ivl_install(&plan, tp->interval_ms, start);
	zl.sync.trial_id = T.trial_id;
	zl.sync.end_tsc = tp->duration_s > 0 ? start + (uint64_t)(tp->duration_s * (double)zl.hz) : UINT64_MAX;
	if (tp->frames && T.ivl_n)
		/* frame-count mode with intervals: transmission ends with the grid (it has room to spare) */
		zl.sync.end_tsc = start + T.ivl_n * T.ivl_len_tsc;
	gen = zl.sync.gen + 1;
	__atomic_store_n(&zl.sync.gen, gen, __ATOMIC_RELEASE);
	__atomic_store_n(&zl.sync.phase, ZL_PHASE_RUN, __ATOMIC_RELEASE);
	T.state = ZL_TRIAL_RUNNING;
	return 0;
}

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

static double
tsc_to_s(uint64_t t)
{
	return (double)t / (double)zl.hz;
}

static json_t *
latency_json(const struct zl_hist *h)
{
	return json_pack("{s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I}",
		"count", (json_int_t)h->count,
		"min", (json_int_t)(h->count ? h->min : 0),
		"mean", h->count ? (double)h->sum / (double)h->count : 0.0,
		"max", (json_int_t)h->max,
		"p50", (json_int_t)zl_hist_percentile(h, 50),
		"p90", (json_int_t)zl_hist_percentile(h, 90),
		"p99", (json_int_t)zl_hist_percentile(h, 99),
		"p99_9", (json_int_t)zl_hist_percentile(h, 99.9),
		"p99_99", (json_int_t)zl_hist_percentile(h, 99.99));
}

/*
 * The histogram's non-zero buckets as [[bucket_low_ns, count], ...], lowest first:
 * a few hundred pairs for a trial, at most ZL_HIST_BUCKETS.
 */
static json_t *
hist_json(const struct zl_hist *h)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; i < ZL_HIST_BUCKETS; i++)
		if (h->bucket[i])
			json_array_append_new(a, json_pack("[I,I]", (json_int_t)zl_hist_bucket_low(i),
				(json_int_t)h->bucket[i]));
	return a;
}

/* Frames of stream k sent in interval i (i == n: outside the grid). */
static uint64_t
ivl_tx_at(uint16_t k, uint32_t i)
{
	return ZL_READ(T.ivl_tx[(size_t)k * (T.ivl_n + 1) + i]);
}

/* Distinct frames of stream k received, sent in interval i (i == n: unplaced), over every worker. */
static uint64_t
ivl_rx_at(uint16_t k, uint32_t i)
{
	uint64_t n = 0;
	uint16_t w;

	for (w = 0; w < zl.nb_workers; w++)
		if (T.ivl_rx[w] != NULL)
			n += ZL_READ(T.ivl_rx[w][(size_t)k * (T.ivl_n + 1) + i]);
	return n;
}

/* Intervals of stream k up to the last one with a frame sent or received. */
static uint32_t
ivl_used(uint16_t k)
{
	uint32_t i;

	for (i = T.ivl_n; i > 0; i--)
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
static json_t *
ivl_json(uint16_t k, bool lists)
{
	json_t *o = json_pack("{s:i,s:I}", "ms", (int)T.ivl_ms, "rx_unplaced", (json_int_t)ivl_rx_at(k, T.ivl_n));
	uint32_t used = ivl_used(k);

	if (lists) {
		ivl_lists(o, k, 0, used);
	} else {
		json_object_set_new(o, "paged", json_true());
		json_object_set_new(o, "count", json_integer(used));
	}
	return o;
}

static json_t *
stream_json(const struct zl_stream *s, double tx_window_s, bool ivl_lists_inline)
{
	uint64_t rx = 0, bytes = 0, uniq = 0, reord = 0, dup = 0, gaps = 0, late = 0;
	uint16_t i;
	json_t *o;

	zl_hist_reset(&merged_hist);
	for (i = 0; i < zl.nb_workers; i++) {
		const struct zl_rx_stream *r = &zl.workers[i].rx[s->id];

		rx += r->pkts;
		bytes += r->bytes;
		uniq += r->seq.unique;
		reord += r->seq.reordered;
		dup += r->seq.duplicate;
		gaps += r->seq.gaps;
		late += r->late;
		zl_hist_merge(&merged_hist, &r->hist);
	}
	o = json_pack("{s:i,s:i,s:i,s:i,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"id", s->id, "port", s->port, "queue", s->queue, "rx_port", s->rx_port,
		"requested_pps", (json_int_t)s->pps,
		"achieved_pps", tx_window_s > 0 ? (double)s->tx_pkts / tx_window_s : 0.0,
		"tx_pkts", (json_int_t)s->tx_pkts, "tx_bytes", (json_int_t)s->tx_bytes,
		"tx_refused", (json_int_t)s->tx_refused, "tx_nombuf", (json_int_t)s->tx_nombuf,
		"pace_restarts", (json_int_t)s->pace.restarts, "pace_skipped", (json_int_t)s->pace.skipped,
		"flows", (json_int_t)s->tmpl.nb_flows);
	/* the sender's longest lateness (its longest stall with frames due), in ns */
	json_object_set_new(o, "pace_max_late_ns",
		json_integer((json_int_t)((unsigned __int128)s->pace.max_late * 1000000000u / zl.hz)));
	/* the most frames it had due at once and caught up without a restart (its largest burst above the schedule) */
	json_object_set_new(o, "pace_max_backlog", json_integer((json_int_t)s->pace.max_backlog));
	json_object_set_new(o, "rx_pkts", json_integer((json_int_t)rx));
	json_object_set_new(o, "rx_bytes", json_integer((json_int_t)bytes));
	json_object_set_new(o, "rx_unique", json_integer((json_int_t)uniq));
	/* lost = sent - distinct received; negative means frames we never sent */
	json_object_set_new(o, "lost", json_integer((json_int_t)s->tx_pkts - (json_int_t)uniq));
	json_object_set_new(o, "seq_gaps", json_integer((json_int_t)gaps));
	json_object_set_new(o, "reordered", json_integer((json_int_t)reord));
	json_object_set_new(o, "duplicate", json_integer((json_int_t)dup));
	json_object_set_new(o, "late", json_integer((json_int_t)late));
	json_object_set_new(o, "latency_ns", latency_json(&merged_hist));
	json_object_set_new(o, "latency_hist", hist_json(&merged_hist));
	if (T.ivl_n)
		json_object_set_new(o, "intervals", ivl_json(s->id, ivl_lists_inline));
	return o;
}

static json_t *
port_json(uint16_t pi)
{
	struct zl_port *p = &zl.ports[pi];
	struct rte_eth_stats st;
	struct zl_rx_port sum;
	uint16_t i;
	json_t *o;

	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < zl.nb_workers; i++) {
		const struct zl_rx_port *r = &zl.workers[i].rxp[pi];

		sum.pkts += r->pkts;
		sum.foreign += r->foreign;
		sum.malformed += r->malformed;
		sum.late += r->late;
		sum.outside += r->outside;
		sum.unknown_stream += r->unknown_stream;
		sum.vxlan += r->vxlan;
	}
	memset(&st, 0, sizeof(st));
	rte_eth_stats_get(p->id, &st);
	o = json_pack("{s:i,s:s,s:I,s:I,s:I,s:I,s:I,s:I}",
		"port", pi, "name", p->name,
		"rx_pkts", (json_int_t)sum.pkts, "rx_foreign", (json_int_t)sum.foreign,
		"rx_malformed", (json_int_t)sum.malformed, "rx_late", (json_int_t)sum.late,
		"rx_outside", (json_int_t)sum.outside, "rx_unknown_stream", (json_int_t)sum.unknown_stream);
	json_object_set_new(o, "rx_vxlan", json_integer((json_int_t)sum.vxlan));
	json_object_set_new(o, "ethdev", json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"ipackets", (json_int_t)(st.ipackets - p->base.ipackets),
		"opackets", (json_int_t)(st.opackets - p->base.opackets),
		"ibytes", (json_int_t)(st.ibytes - p->base.ibytes),
		"obytes", (json_int_t)(st.obytes - p->base.obytes),
		"imissed", (json_int_t)(st.imissed - p->base.imissed),
		"ierrors", (json_int_t)(st.ierrors - p->base.ierrors),
		"oerrors", (json_int_t)(st.oerrors - p->base.oerrors),
		"rx_nombuf", (json_int_t)(st.rx_nombuf - p->base.rx_nombuf)));
	return o;
}

/* Builds the result once every worker is idle (so every counter is final). */
static void
finish(void)
{
	json_t *streams = json_array(), *ports = json_array();
	uint64_t last = 0, nb_ivl = 0;
	double window;
	uint16_t i;

	for (i = 0; i < zl.nb_streams; i++)
		if (zl.streams[i].last_tsc > last)
			last = zl.streams[i].last_tsc;
	if (T.params.duration_s > 0 && !T.stopped)
		window = T.params.duration_s;
	else
		window = last > T.start_tsc ? tsc_to_s(last - T.start_tsc) : 0;
	for (i = 0; i < zl.nb_streams && T.ivl_n; i++)
		nb_ivl += ivl_used(i);
	for (i = 0; i < zl.nb_streams; i++)
		json_array_append_new(streams, stream_json(&zl.streams[i], window, nb_ivl <= ZL_IVL_PAGE));
	for (i = 0; i < zl.nb_ports; i++)
		json_array_append_new(ports, port_json(i));
	T.result = json_pack("{s:i,s:f,s:f,s:I,s:f,s:b,s:o,s:o}",
		"trial", T.trial_id,
		"tx_window_s", window,
		"tx_elapsed_s", T.tx_end_tsc > T.start_tsc ? tsc_to_s(T.tx_end_tsc - T.start_tsc) : 0.0,
		"drain_ms", (json_int_t)T.params.drain_ms,
		/* the drain it took: it ends as soon as every frame sent has arrived */
		"drained_ms", T.done_tsc > T.tx_end_tsc && T.tx_end_tsc ? tsc_to_s(T.done_tsc - T.tx_end_tsc) * 1e3 : 0.0,
		"stopped", T.stopped,
		"streams", streams, "ports", ports);
	T.state = ZL_TRIAL_DONE;
}

/*
 * Every frame sent has arrived: for each stream the distinct frames received
 * (over every worker) reach the frames the device took. Nothing is left to
 * wait for, so the drain ends (a lossy trial waits its whole drain_ms). Read
 * while the workers run: a count seen complete is complete, and finish()
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
		finish();
	}
}

static int
ms_until(uint64_t now, uint64_t tsc)
{
	uint64_t ms;

	if (tsc <= now)
		return 1;
	ms = (tsc - now) * 1000 / zl.hz + 1;
	return ms > ZL_TICK_MAX_MS ? ZL_TICK_MAX_MS : (int)ms;
}

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

static const char *
state_name(enum zl_trial_state s)
{
	switch (s) {
	case ZL_TRIAL_RUNNING: return "running";
	case ZL_TRIAL_DRAINING: return "draining";
	case ZL_TRIAL_DONE: return "done";
	default: return "idle";
	}
}

json_t *
zl_trial_status(void)
{
	json_t *o = json_pack("{s:s,s:b}", "state", state_name(T.state), "configured", zl.nb_streams > 0);
	json_t *streams;
	uint64_t now = rte_rdtsc();
	uint16_t i, k;

	if (!T.any)
		return o;
	json_object_set_new(o, "trial", json_integer(T.trial_id));
	json_object_set_new(o, "elapsed_s", json_real(now > T.start_tsc ? tsc_to_s(now - T.start_tsc) : 0));
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

json_t *
zl_trial_result(void)
{
	if (T.state != ZL_TRIAL_DONE || T.result == NULL)
		return NULL;
	return json_incref(T.result);
}

json_t *
zl_trial_intervals(int stream, uint32_t from, char *err, size_t errlen)
{
	uint16_t k, first = 0, last = zl.nb_streams;
	uint32_t final = 0, to, per;
	json_t *o, *arr;

	if (T.state == ZL_TRIAL_NONE) {
		snprintf(err, errlen, "no trial since the last configure: send start first");
		return NULL;
	}
	if (T.ivl_n == 0) {
		snprintf(err, errlen, "trial %u has no intervals: start it with interval_ms", T.trial_id);
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
	if (T.state == ZL_TRIAL_DONE) {
		for (k = first; k < last; k++)
			if (ivl_used(k) > final)
				final = ivl_used(k);
	} else {
		/* an interval is final drain_ms after its end: the wait the trial gives its last frames */
		uint64_t now = rte_rdtsc(), settle = T.start_tsc + (uint64_t)T.params.drain_ms * zl.hz / 1000;

		if (now > settle)
			final = (uint32_t)RTE_MIN((now - settle) / T.ivl_len_tsc, (uint64_t)T.ivl_n);
	}
	per = ZL_IVL_PAGE / (uint32_t)(last - first);
	to = from >= final ? from : (uint32_t)RTE_MIN((uint64_t)final, (uint64_t)from + per);
	arr = json_array();
	for (k = first; k < last; k++) {
		json_t *s = json_pack("{s:i,s:I}", "id", k, "rx_unplaced", (json_int_t)ivl_rx_at(k, T.ivl_n));

		ivl_lists(s, k, from, to);
		json_array_append_new(arr, s);
	}
	o = json_pack("{s:i,s:i,s:s,s:I,s:I,s:I}", "trial", T.trial_id, "ms", (int)T.ivl_ms,
		"state", state_name(T.state), "from", (json_int_t)from, "to", (json_int_t)to,
		"final", (json_int_t)final);
	json_object_set_new(o, "streams", arr);
	return o;
}
