/* SPDX-License-Identifier: BSD-3-Clause */
/* Worker lcore loop: paced transmission of its streams, receive accounting. */
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "zlgen.h"

/* Sleeps for us microseconds (the caller found nothing to do). */
static void
nap(uint64_t us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)(us * 1000) };

	nanosleep(&ts, NULL);
}

/* Builds and sends the frames of stream s that are due at now. */
static uint32_t
tx_stream(struct zl_stream *s, uint64_t now, uint64_t end_tsc, uint16_t trial_id)
{
	struct rte_mbuf *m[ZL_BURST];
	struct zl_port *p = &zl.ports[s->port];
	uint32_t n, i, sent, f, z;
	uint64_t bytes = 0;

	if (now >= end_tsc || (s->frames && s->tx_pkts >= s->frames)) {
		if (now >= end_tsc && s->frames == 0)
			zl_pace_finish(&s->pace, end_tsc);
		s->done = true;
		return 0;
	}
	n = zl_pace_due(&s->pace, now);
	if (s->frames && s->frames - s->tx_pkts < n)
		n = (uint32_t)(s->frames - s->tx_pkts);
	if (n == 0)
		return 0;
	/*
	 * Raw get plus the few field resets a fresh TX mbuf needs: mbufs in a
	 * pool already have refcnt 1, one segment and no next (as testpmd's
	 * txonly does, cheaper than rte_pktmbuf_alloc_bulk's full reset).
	 */
	if (rte_mempool_get_bulk(p->pool, (void **)m, n) != 0) {
		ZL_ADD(s->tx_nombuf, n);
		zl_pace_take(&s->pace, n);
		return 0;
	}
	f = s->flow_idx;
	z = s->size_idx;
	for (i = 0; i < n; i++) {
		uint32_t len = s->sizes[z];
		struct rte_mbuf *b = m[i];

		uint8_t *buf;

		rte_pktmbuf_reset_headroom(b);
		b->ol_flags = 0;
		b->packet_type = 0;
		b->data_len = (uint16_t)(len - ZL_FCS_LEN);
		buf = rte_pktmbuf_mtod(b, uint8_t *);
		if (s->vxlan) {
			/* a remote VTEP: outer headers, then the frame as it is sent plain */
			zl_vxlan_write(buf, &s->vx_tmpl, &s->tmpl.flows[f], len - ZL_FCS_LEN);
			b->data_len += ZL_VXLAN_LEN;
			buf += ZL_VXLAN_LEN;
		}
		b->pkt_len = b->data_len;
		zl_frame_write(buf, &s->tmpl, f, len, trial_id, s->id, s->seq + i, (uint32_t)now);
		if (++f == s->tmpl.nb_flows)
			f = 0;
		if (++z == s->nb_sizes)
			z = 0;
	}
	sent = rte_eth_tx_burst(p->id, s->queue, m, (uint16_t)n);
	zl_pace_take(&s->pace, n);
	if (unlikely(sent < n)) {
		/* the device took fewer: count them, free them, reuse their numbers */
		rte_pktmbuf_free_bulk(&m[sent], n - sent);
		ZL_ADD(s->tx_refused, n - sent);
	}
	if (sent == 0)
		return 0;
	if (s->nb_sizes == 1) {
		bytes = (uint64_t)sent * s->sizes[0];
	} else {
		for (i = 0, z = s->size_idx; i < sent; i++) {
			bytes += s->sizes[z];
			if (++z == s->nb_sizes)
				z = 0;
		}
		s->size_idx = z;
	}
	s->flow_idx = (uint32_t)((s->flow_idx + sent) % s->tmpl.nb_flows);
	s->seq += sent;
	if (s->tx_pkts == 0)
		s->first_tsc = now;
	s->last_tsc = now;
	if (s->ivl_tx != NULL) {
		uint32_t k = zl_ivl_index(&s->ivl_cur, now);

		ZL_ADD(s->ivl_tx[k], sent);
	}
	ZL_ADD(s->tx_bytes, bytes);
	ZL_ADD(s->tx_pkts, sent);
	return sent;
}

/* Accounts one received frame against the running trial (or none). */
static inline void
rx_frame(struct zl_worker *w, struct zl_rx_port *rp, struct rte_mbuf *m, uint64_t now,
		bool running, uint16_t trial_id)
{
	uint8_t copy[192];
	const uint8_t *data = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->pkt_len, off, inner_len;
	struct zl_frame_info fi;
	enum zl_frame_kind kind;
	enum zl_vxlan_kind vx = ZL_VXLAN_NONE;

	if (!running) {
		rp->outside++;
		return;
	}
	if (unlikely(m->data_len < m->pkt_len && m->data_len < sizeof(copy))) {
		/* chained mbuf with a short first segment: parse a linear copy */
		uint32_t l = RTE_MIN(m->pkt_len, (uint32_t)sizeof(copy));

		data = rte_pktmbuf_read(m, 0, l, copy);
	}
	kind = zl_frame_parse(data, len, &fi);
	if (kind == ZL_FRAME_FOREIGN && zl.nb_vxlan_ports) {
		/* a VTEP's frame: count the frame inside as if it came plain */
		vx = zl_vxlan_parse(data, len, zl.vxlan_ports, zl.nb_vxlan_ports, &off, &inner_len);
		if (vx == ZL_VXLAN_INNER) {
			rp->vxlan++;
			len = inner_len;
			kind = zl_frame_parse(data + off, len, &fi);
		} else if (vx == ZL_VXLAN_BAD) {
			kind = ZL_FRAME_MALFORMED;
		}
	}
	rp->pkts++;
	if (kind == ZL_FRAME_FOREIGN) {
		rp->foreign++;
	} else if (kind == ZL_FRAME_MALFORMED) {
		rp->malformed++;
	} else if (fi.trial_id != trial_id) {
		rp->late++;
		if (fi.stream_id < ZL_MAX_STREAMS)
			ZL_ADD(w->rx[fi.stream_id].late, 1);
	} else if (fi.stream_id >= zl.nb_streams) {
		rp->unknown_stream++;
	} else {
		struct zl_rx_stream *rs = &w->rx[fi.stream_id];
		uint32_t cyc = (uint32_t)now - fi.tx_tsc;

		if (zl_seq_record(&rs->seq, fi.seq) != ZL_SEQ_DUPLICATE && rs->ivl != NULL) {
			/* a distinct frame, placed in the interval it was sent in */
			uint32_t k = zl_ivl_index(&w->ivl_cur, zl_ivl_tx_tsc(now, fi.tx_tsc));

			ZL_ADD(rs->ivl[k], 1);
		}
		zl_hist_record(&rs->hist, (uint64_t)(((unsigned __int128)cyc * zl.ns_mult) >> 32));
		ZL_ADD(rs->bytes, len + ZL_FCS_LEN); /* the stream's frame: the inner one of a VXLAN frame */
		ZL_ADD(rs->pkts, 1);
	}
}

/* Polls every RX queue of the worker once; returns frames received. */
static uint32_t
rx_poll(struct zl_worker *w, bool running, uint16_t trial_id)
{
	struct rte_mbuf *m[ZL_BURST];
	uint32_t total = 0;
	uint16_t i, j, n;

	for (i = 0; i < w->nb_rxq; i++) {
		struct zl_port *p = &zl.ports[w->rxq[i].port];
		struct zl_rx_port *rp = &w->rxp[w->rxq[i].port];
		uint64_t now;

		n = rte_eth_rx_burst(p->id, w->rxq[i].queue, m, ZL_BURST);
		if (n == 0)
			continue;
		now = rte_rdtsc();
		for (j = 0; j < n; j++)
			rx_frame(w, rp, m[j], now, running, trial_id);
		rte_pktmbuf_free_bulk(m, n);
		total += n;
	}
	return total;
}

/*
 * Worker loop: while a trial runs, transmit due frames of the worker's
 * streams and account what arrives; between trials keep draining the RX
 * queues (counted as "outside") and sleep briefly when they are empty.
 */
int
zl_worker_main(void *arg)
{
	struct zl_worker *w = arg;
	uint32_t gen;

	while (!zl.quit) {
		uint32_t phase = __atomic_load_n(&zl.sync.phase, __ATOMIC_ACQUIRE);
		uint16_t trial_id;
		uint32_t work = 0;
		bool tx_active;

		gen = __atomic_load_n(&zl.sync.gen, __ATOMIC_ACQUIRE);
		if (phase == ZL_PHASE_IDLE) {
			if (w->idle_gen != gen)
				__atomic_store_n(&w->idle_gen, gen, __ATOMIC_RELEASE);
			if (rx_poll(w, false, 0) == 0)
				nap(zl.idle_sleep_us ? zl.idle_sleep_us : 100);
			continue;
		}
		/* a trial: run until the control thread goes back to idle */
		trial_id = zl.sync.trial_id;
		w->run_gen = gen;
		tx_active = true;
		while (!zl.quit && __atomic_load_n(&zl.sync.phase, __ATOMIC_ACQUIRE) == ZL_PHASE_RUN) {
			uint64_t now = rte_rdtsc();

			work = 0;
			if (tx_active) {
				uint64_t end = __atomic_load_n(&zl.sync.end_tsc, __ATOMIC_RELAXED);
				uint16_t k, nb_done = 0;

				for (k = 0; k < w->nb_tx; k++) {
					struct zl_stream *s = w->tx[k];

					if (!s->done)
						work += tx_stream(s, now, end, trial_id);
					nb_done += s->done;
				}
				if (nb_done == w->nb_tx) {
					tx_active = false;
					__atomic_store_n(&w->tx_done_gen, gen, __ATOMIC_RELEASE);
				}
			}
			work += rx_poll(w, true, trial_id);
			if (work == 0 && zl.idle_sleep_us) {
				uint64_t sleep_us = zl.idle_sleep_us;

				if (tx_active && w->nb_tx == 1 && w->tx[0]->pace.pps) {
					uint64_t next = zl_pace_next(&w->tx[0]->pace);
					uint64_t t = rte_rdtsc();
					uint64_t until = next > t ? (next - t) * 1000000 / zl.hz : 0;

					if (until < sleep_us)
						sleep_us = until;
				}
				if (sleep_us)
					nap(sleep_us);
			}
		}
	}
	return 0;
}
