/* SPDX-License-Identifier: BSD-3-Clause */
/* Port set-up: mempool sizing, queues, MTU; queue-to-worker assignment. */
#include <errno.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>

#include <rte_alarm.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "zlgen.h"

#define MEMPOOL_CACHE 256

/*
 * Mbufs a port needs: every RX and TX descriptor may hold one, each worker's
 * mempool cache may hold MEMPOOL_CACHE, and each worker has up to two bursts
 * in hand. One mbuf per frame (no chains): the data room is sized to the
 * largest frame so that receive needs no scatter support from any PMD, and
 * transmit writes only the headers of each frame (the payload bytes are left
 * as they are), so jumbo frames cost no more per frame than 64 B ones.
 */
static uint32_t
pool_size(const struct zl_port_opts *o, unsigned int nb_workers)
{
	uint32_t n = (uint32_t)o->nb_rxq * o->nb_rxd + (uint32_t)o->nb_txq * o->nb_txd +
		nb_workers * (MEMPOOL_CACHE + 2 * ZL_BURST) + 1024;
	uint32_t p = 1;

	while (p - 1 < n)
		p <<= 1;
	return p - 1; /* 2^q - 1 is the mempool's most efficient size */
}

/* The MTU port p is set up with: the one wire_max needs, within the device's limits in info. */
static uint32_t
port_mtu(const struct zl_port *p, const struct rte_eth_dev_info *info, uint32_t wire_max)
{
	uint32_t mtu = wire_max - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
	uint32_t max_mtu;

	/* the largest MTU the device accepts, from its MTU and frame-length limits */
	max_mtu = info->max_mtu;
	if (info->max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN &&
			info->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN < max_mtu)
		max_mtu = info->max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN;
	if (mtu > max_mtu) {
		printf("zlgen: note: port %u (%s) reports a largest frame of %u B; set up with MTU %u instead of %u "
			"(virtual devices often carry larger frames than they report)\n",
			p->id, p->name, info->max_rx_pktlen, max_mtu, mtu);
		mtu = max_mtu;
	}
	if (mtu < RTE_ETHER_MIN_MTU)
		mtu = RTE_ETHER_MIN_MTU;
	return mtu;
}

/* Creates port p's mempool: nb_mbufs mbufs of room bytes; returns 0, or -1 after one line on stderr. */
static int
port_pool(struct zl_port *p, uint32_t nb_mbufs, uint32_t room)
{
	char pool_name[RTE_MEMPOOL_NAMESIZE];

	snprintf(pool_name, sizeof(pool_name), "zl_pool_%u", p->id);
	p->pool = rte_pktmbuf_pool_create(pool_name, nb_mbufs, MEMPOOL_CACHE, 0, (uint16_t)room, p->socket);
	if (p->pool == NULL) {
		fprintf(stderr, "zlgen: cannot create mempool of %u mbufs x %u B for port %u: %s "
			"(reserve more hugepages, or lower --max-frame, queues or descriptors)\n",
			nb_mbufs, room, p->id, rte_strerror(rte_errno));
		return -1;
	}
	printf("zlgen: port %u (%s, %s): mempool %u mbufs x %u B data room = %.1f MiB on socket %d\n",
		p->id, p->name, p->driver, nb_mbufs, room,
		(double)nb_mbufs * rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + room, 0, NULL) /
		(1024.0 * 1024.0), p->socket);
	return 0;
}

/*
 * Configures port p (MTU, RSS over its RX queues, offloads) and sets up its
 * queues with *rxd and *txd descriptors, adjusted to what the device takes;
 * returns 0, or -1 after one line on stderr.
 */
static int
port_queues(struct zl_port *p, const struct rte_eth_dev_info *info, const struct zl_port_opts *o, uint32_t mtu,
	uint16_t *rxd, uint16_t *txd)
{
	uint16_t q, port_id = p->id;
	struct rte_eth_txconf txconf;
	struct rte_eth_conf conf;
	int ret;

	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = mtu;
	/* link-state interrupts where the device has them: a virtio-user port in vhost-user server mode
	 * accepts a new connection (the switch restarted) only from its LSC interrupt handler */
	if (info->dev_flags != NULL && (*info->dev_flags & RTE_ETH_DEV_INTR_LSC))
		conf.intr_conf.lsc = 1;
	if (o->nb_rxq > 1) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info->flow_type_rss_offloads;
		if (conf.rx_adv_conf.rss_conf.rss_hf == 0)
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_NONE;
	}
	if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
	ret = rte_eth_dev_configure(port_id, o->nb_rxq, o->nb_txq, &conf);
	if (ret < 0) {
		fprintf(stderr, "zlgen: cannot configure port %u: %s\n", port_id, rte_strerror(-ret));
		return -1;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(port_id, rxd, txd);
	if (ret < 0) {
		fprintf(stderr, "zlgen: cannot adjust descriptors of port %u: %s\n", port_id, rte_strerror(-ret));
		return -1;
	}
	for (q = 0; q < o->nb_rxq; q++) {
		ret = rte_eth_rx_queue_setup(port_id, q, *rxd, (unsigned int)p->socket, NULL, p->pool);
		if (ret < 0) {
			fprintf(stderr, "zlgen: cannot set up RX queue %u of port %u: %s\n", q, port_id, rte_strerror(-ret));
			return -1;
		}
	}
	txconf = info->default_txconf;
	txconf.offloads = conf.txmode.offloads;
	for (q = 0; q < o->nb_txq; q++) {
		ret = rte_eth_tx_queue_setup(port_id, q, *txd, (unsigned int)p->socket, &txconf);
		if (ret < 0) {
			fprintf(stderr, "zlgen: cannot set up TX queue %u of port %u: %s\n", q, port_id, rte_strerror(-ret));
			return -1;
		}
	}
	return 0;
}

/* Sets up and starts port port_id into p with options o; returns 0, or -1 after one line on stderr. */
static int
port_init(struct zl_port *p, uint16_t port_id, const struct zl_port_opts *o)
{
	struct rte_eth_dev_info info;
	/*
	 * Frames up to max_frame, plain or in VXLAN (ZL_VXLAN_LEN more): a stream of
	 * max_frame sent or received through a tunnel fits one mbuf. 64 B of slack:
	 * PMDs add their own overhead to the MTU (virtio: VLAN tags and its net header).
	 */
	uint32_t wire_max = o->max_frame + ZL_VXLAN_LEN;
	uint32_t room = RTE_PKTMBUF_HEADROOM + RTE_ALIGN_CEIL(wire_max + 64, 64);
	uint32_t nb_mbufs = o->nb_mbufs ? o->nb_mbufs : pool_size(o, rte_lcore_count());
	uint16_t rxd = o->nb_rxd, txd = o->nb_txd;
	uint32_t mtu;
	int ret;

	memset(p, 0, sizeof(*p));
	p->id = port_id;
	p->socket = rte_eth_dev_socket_id(port_id);
	if (p->socket < 0)
		p->socket = (int)rte_socket_id();
	ret = rte_eth_dev_info_get(port_id, &info);
	if (ret != 0) {
		fprintf(stderr, "zlgen: cannot get info of port %u: %s\n", port_id, rte_strerror(-ret));
		return -1;
	}
	rte_eth_dev_get_name_by_port(port_id, p->name);
	snprintf(p->driver, sizeof(p->driver), "%s", info.driver_name);
	if (o->nb_rxq > info.max_rx_queues || o->nb_txq > info.max_tx_queues) {
		fprintf(stderr, "zlgen: port %u (%s) supports at most %u RX and %u TX queues, asked %u and %u\n",
			port_id, p->name, info.max_rx_queues, info.max_tx_queues, o->nb_rxq, o->nb_txq);
		return -1;
	}
	mtu = port_mtu(p, &info, wire_max);
	if (port_pool(p, nb_mbufs, room) < 0 || port_queues(p, &info, o, mtu, &rxd, &txd) < 0)
		return -1;
	ret = rte_eth_dev_start(port_id);
	if (ret < 0) {
		fprintf(stderr, "zlgen: cannot start port %u: %s\n", port_id, rte_strerror(-ret));
		return -1;
	}
	rte_eth_promiscuous_enable(port_id); /* not all PMDs support it: ignore */
	rte_eth_macaddr_get(port_id, &p->mac);
	p->nb_rxq = o->nb_rxq;
	p->nb_txq = o->nb_txq;
	p->nb_rxd = rxd;
	p->nb_txd = txd;
	p->mtu = (uint16_t)mtu;
	p->max_frame = o->max_frame;
	return 0;
}

/* Sets up the next port (zl.ports[zl.nb_ports]); -1 after printing why. */
static int
port_add(uint16_t port_id, const struct zl_port_opts *o)
{
	if (zl.nb_ports == ZL_MAX_PORTS) {
		fprintf(stderr, "zlgen: more than %u ports\n", ZL_MAX_PORTS);
		return -1;
	}
	if (port_init(&zl.ports[zl.nb_ports], port_id, o) < 0)
		return -1;
	zl.nb_ports++;
	return 0;
}

/* Whether port_id is set up already. */
static int
port_known(uint16_t port_id)
{
	uint16_t i;

	for (i = 0; i < zl.nb_ports; i++)
		if (zl.ports[i].id == port_id)
			return 1;
	return 0;
}

/*
 * Probes one --hotplug device and sets up the port(s) it created. Both ends of a
 * vhost-user wire can live in one zlgen this way: net_vhost creates its socket only
 * when its port is configured, so its virtio-user peer must be probed after that.
 */
static int
port_hotplug(const char *devargs, const struct zl_port_opts *o)
{
	uint16_t port_id;
	int ret = rte_dev_probe(devargs);

	if (ret < 0) {
		fprintf(stderr, "zlgen: cannot probe device '%s': %s\n", devargs, rte_strerror(-ret));
		return -1;
	}
	RTE_ETH_FOREACH_DEV(port_id) {
		if (!port_known(port_id) && port_add(port_id, o) < 0)
			return -1;
	}
	return 0;
}

/* Sets up every probed port, then each --hotplug device in order; returns 0 or -1 after printing why. */
int
zl_ports_init(const struct zl_port_opts *o)
{
	uint16_t port_id, i;

	zl.nb_ports = 0;
	RTE_ETH_FOREACH_DEV(port_id) {
		if (zl.nb_ports == ZL_MAX_PORTS) {
			fprintf(stderr, "zlgen: more than %u ports: only the first %u are used\n",
				ZL_MAX_PORTS, ZL_MAX_PORTS);
			break;
		}
		if (port_add(port_id, o) < 0)
			return -1;
	}
	for (i = 0; i < o->nb_hotplug; i++)
		if (port_hotplug(o->hotplug[i], o) < 0)
			return -1;
	if (zl.nb_ports == 0) {
		fprintf(stderr, "zlgen: no ports: pass devices to EAL (--vdev net_memif0,... or -a PCI_ADDRESS)\n");
		return -1;
	}
	return 0;
}

/* Stops and closes port p and frees its mempool. */
static void
port_close(struct zl_port *p)
{
	rte_eth_dev_stop(p->id);
	rte_eth_dev_close(p->id);
	rte_mempool_free(p->pool);
	p->pool = NULL;
}

/* Whether port p is a virtual device (memif, vhost, virtio-user, null: the vdev bus). */
static bool
port_virtual(const struct zl_port *p)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(p->id, &info) == 0 && info.device != NULL &&
		strcmp(rte_bus_name(rte_dev_bus(info.device)), "vdev") == 0;
}

/* Alarm callback, on the EAL interrupt thread: closes every virtual port, then posts the semaphore arg. */
static void
ports_close_virtual(void *arg)
{
	uint16_t i;

	for (i = 0; i < zl.nb_ports; i++)
		if (port_virtual(&zl.ports[i]))
			port_close(&zl.ports[i]);
	sem_post(arg);
}

/*
 * Stops and closes every port and frees its mempool; the virtual ones on the
 * EAL interrupt thread, the others (PCI) from the caller.
 *
 * Virtual devices handle their peer's control messages in callbacks on the
 * interrupt thread, and both ends of a wire may be ports of this process (two
 * memif ports on one socket, vhost and virtio-user with --hotplug). Stopping
 * one end closes its channel; the peer reads the close on the interrupt thread
 * and disconnects there (memif_disconnect frees its regions, under no lock).
 * Stopped from the main thread, the peer could be stopped, closed and freed
 * while the interrupt thread was still disconnecting it: a double free or a use
 * after free, zlgen's SIGSEGV at exit in 5 to 20 % of the runs with two memif
 * ports, the more the busier the host. The interrupt thread runs one callback at a time, so virtual ports
 * stopped and closed in one callback there cannot be disconnected by their
 * peers meanwhile, and a stopped port's channel callback is unregistered, so
 * none runs for it afterwards. PCI ports stay on the caller: a VF's driver
 * waits for its PF's replies, which its handler reads on the interrupt thread.
 * Only when the alarm cannot be set are virtual ports closed from the caller.
 * A port is open while it has its mempool.
 */
void
zl_ports_close(void)
{
	sem_t done;
	uint16_t i;
	int ret;

	if (sem_init(&done, 0, 0) == 0) {
		ret = rte_eal_alarm_set(1, ports_close_virtual, &done);
		if (ret == 0) {
			while (sem_wait(&done) != 0 && errno == EINTR)
				;
		} else {
			fprintf(stderr, "zlgen: cannot close the virtual ports on the interrupt thread: %s; "
				"closing them here\n", rte_strerror(-ret));
		}
		sem_destroy(&done);
	}
	for (i = 0; i < zl.nb_ports; i++)
		if (zl.ports[i].pool != NULL) /* still open */
			port_close(&zl.ports[i]);
}

/*
 * Spreads (port, queue) pairs over the workers round robin: the worker that
 * owns a pair polls its RX queue and is the only one to use its TX queue.
 */
void
zl_workers_assign(void)
{
	uint16_t i, q, k = 0;

	for (i = 0; i < zl.nb_workers; i++)
		zl.workers[i].nb_rxq = 0;
	for (i = 0; i < zl.nb_ports; i++) {
		struct zl_port *p = &zl.ports[i];
		uint16_t nq = RTE_MAX(p->nb_rxq, p->nb_txq);

		for (q = 0; q < nq; q++, k++) {
			struct zl_worker *w = &zl.workers[k % zl.nb_workers];

			if (q < p->nb_rxq) {
				w->rxq[w->nb_rxq].port = i;
				w->rxq[w->nb_rxq].queue = q;
				w->nb_rxq++;
			}
		}
	}
}

/* Worker that owns TX queue q of port index pi (same round robin as above). */
uint16_t
zl_queue_owner(uint16_t pi, uint16_t q)
{
	uint16_t i, k = 0;

	for (i = 0; i < pi; i++)
		k += RTE_MAX(zl.ports[i].nb_rxq, zl.ports[i].nb_txq);
	return (uint16_t)((k + q) % zl.nb_workers);
}
