/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The result report of a finished trial: per stream (counters, pacing,
 * latency, intervals) and per port (zlgen's counters and the ethdev's), read
 * once every worker is idle so every counter is final.
 */
#include <string.h>

#include <rte_ethdev.h>

#include "trial_priv.h"

static struct zl_hist merged_hist; /* scratch for merging per-worker histograms */

/* A latency histogram's summary in ns: count, min, mean, max and percentiles. */
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

/* Stream s's result: what it sent, received, lost and reordered, its pacing, latency and intervals. */
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
	if (trial_ivl_count())
		json_object_set_new(o, "intervals", trial_ivl_json(s->id, ivl_lists_inline));
	return o;
}

/* Port pi's result: zlgen's receive counters over every worker and the ethdev's since the start. */
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

/* The result of the trial r, built once every worker is idle (so every counter is final). */
json_t *
trial_json_result(const struct trial_run *r)
{
	json_t *streams = json_array(), *ports = json_array();
	uint64_t last = 0, nb_ivl = 0;
	double window;
	uint16_t i;

	for (i = 0; i < zl.nb_streams; i++)
		if (zl.streams[i].last_tsc > last)
			last = zl.streams[i].last_tsc;
	if (r->params.duration_s > 0 && !r->stopped)
		window = r->params.duration_s;
	else
		window = last > r->start_tsc ? trial_tsc_to_s(last - r->start_tsc) : 0;
	for (i = 0; i < zl.nb_streams && trial_ivl_count(); i++)
		nb_ivl += trial_ivl_used(i);
	for (i = 0; i < zl.nb_streams; i++)
		json_array_append_new(streams, stream_json(&zl.streams[i], window, nb_ivl <= ZL_IVL_PAGE));
	for (i = 0; i < zl.nb_ports; i++)
		json_array_append_new(ports, port_json(i));
	return json_pack("{s:i,s:f,s:f,s:I,s:f,s:b,s:o,s:o}",
		"trial", r->trial_id,
		"tx_window_s", window,
		"tx_elapsed_s", r->tx_end_tsc > r->start_tsc ? trial_tsc_to_s(r->tx_end_tsc - r->start_tsc) : 0.0,
		"drain_ms", (json_int_t)r->params.drain_ms,
		/* the drain it took: it ends as soon as every frame sent has arrived */
		"drained_ms", r->done_tsc > r->tx_end_tsc && r->tx_end_tsc ?
			trial_tsc_to_s(r->done_tsc - r->tx_end_tsc) * 1e3 : 0.0,
		"stopped", r->stopped,
		"streams", streams, "ports", ports);
}
