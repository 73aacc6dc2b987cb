/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * zlgen: DPDK traffic generator for zero-loss measurements.
 * Usage: zlgen [EAL options] -- --ctl PATH [--rxq N] [--txq N] [--rxd N]
 *        [--txd N] [--max-frame BYTES] [--mbufs N] [--idle-sleep-us US] [--gap-us US]
 *        [--hotplug DEVARGS]...
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_malloc.h>
#include <rte_lcore.h>

#include "ctl.h"
#include "trial.h"
#include "zlgen.h"

struct zl_app zl;

static const char *ctl_path;
static int ctl_fd = -1;     /* listening control socket, opened before the ports */
static int ctl_status;      /* what zl_ctl_serve returned */

static void
usage(void)
{
	printf("usage: zlgen [EAL options] -- --ctl PATH [options]\n"
		"  --ctl PATH            control socket (Unix, mode 0600, at most 107 bytes), required\n"
		"  --rxq N               RX queues per port (default 1)\n"
		"  --txq N               TX queues per port (default 1)\n"
		"  --rxd N               RX descriptors per queue (default 1024)\n"
		"  --txd N               TX descriptors per queue (default 1024)\n"
		"  --max-frame BYTES     largest frame incl. 4 B FCS, 64..9728 (default 1518); ports\n"
		"                        also carry it in VXLAN, 50 B longer\n"
		"  --mbufs N             mbufs per port (default: from queues and descriptors)\n"
		"  --idle-sleep-us US    sleep this long when a loop found no work (default 0:\n"
		"                        busy poll; use 20..200 to share a core)\n"
		"  --gap-us US           pacing: lateness that restarts the schedule (default 50)\n"
		"  --hotplug DEVARGS     probe this device after the EAL's ports are set up (repeatable,\n"
		"                        in order): both ends of a vhost-user wire in one zlgen\n"
		"Every lcore given to EAL (-l) runs a worker; control runs in its own thread.\n");
}

static void
on_signal(int sig)
{
	(void)sig;
	zl.quit = 1;
}

static int
parse_u32(const char *name, const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long x = strtoul(v, &end, 10);

	if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
		fprintf(stderr, "zlgen: %s must be an integer %u..%u, got '%s'\n", name, lo, hi, v);
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

static int
parse_args(int argc, char **argv, struct zl_port_opts *o)
{
	static const struct option longopts[] = {
		{ "ctl", required_argument, NULL, 'c' },
		{ "rxq", required_argument, NULL, 'r' },
		{ "txq", required_argument, NULL, 't' },
		{ "rxd", required_argument, NULL, 'R' },
		{ "txd", required_argument, NULL, 'T' },
		{ "max-frame", required_argument, NULL, 'f' },
		{ "mbufs", required_argument, NULL, 'm' },
		{ "idle-sleep-us", required_argument, NULL, 's' },
		{ "gap-us", required_argument, NULL, 'g' },
		{ "hotplug", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t v, gap_us = 50;
	int c;

	o->nb_rxq = 1;
	o->nb_txq = 1;
	o->nb_rxd = 1024;
	o->nb_txd = 1024;
	o->max_frame = 1518;
	o->nb_mbufs = 0;
	o->nb_hotplug = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			ctl_path = optarg;
			break;
		case 'r':
			if (parse_u32("--rxq", optarg, 1, ZL_MAX_QUEUES, &v) < 0)
				return -1;
			o->nb_rxq = (uint16_t)v;
			break;
		case 't':
			if (parse_u32("--txq", optarg, 1, ZL_MAX_QUEUES, &v) < 0)
				return -1;
			o->nb_txq = (uint16_t)v;
			break;
		case 'R':
			if (parse_u32("--rxd", optarg, 64, 32768, &v) < 0)
				return -1;
			o->nb_rxd = (uint16_t)v;
			break;
		case 'T':
			if (parse_u32("--txd", optarg, 64, 32768, &v) < 0)
				return -1;
			o->nb_txd = (uint16_t)v;
			break;
		case 'f':
			if (parse_u32("--max-frame", optarg, ZL_MIN_FRAME, ZL_MAX_FRAME, &o->max_frame) < 0)
				return -1;
			break;
		case 'm':
			if (parse_u32("--mbufs", optarg, 1023, 16777215, &o->nb_mbufs) < 0)
				return -1;
			break;
		case 's':
			if (parse_u32("--idle-sleep-us", optarg, 0, 100000, &zl.idle_sleep_us) < 0)
				return -1;
			break;
		case 'g':
			if (parse_u32("--gap-us", optarg, 1, 1000000, &gap_us) < 0)
				return -1;
			break;
		case 'H':
			if (o->nb_hotplug == ZL_MAX_PORTS) {
				fprintf(stderr, "zlgen: at most %u --hotplug devices\n", ZL_MAX_PORTS);
				return -1;
			}
			o->hotplug[o->nb_hotplug++] = optarg;
			break;
		case 'h':
			usage();
			exit(EXIT_SUCCESS);
		default:
			usage();
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zlgen: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (ctl_path == NULL) {
		fprintf(stderr, "zlgen: --ctl PATH is required (the control socket)\n");
		return -1;
	}
	zl.gap_tsc = (uint64_t)gap_us * zl.hz / 1000000;
	return 0;
}

/* Control thread: serves the socket, then tells every worker to quit. */
static void *
ctl_main(void *arg)
{
	(void)arg;
	ctl_status = zl_ctl_serve(ctl_fd, ctl_path);
	zl_trial_abort();
	zl.quit = 1;
	return NULL;
}

int
main(int argc, char **argv)
{
	struct zl_port_opts opts;
	pthread_t ctl_tid;
	unsigned int lcore;
	uint16_t i;
	int ret, status = EXIT_SUCCESS;

	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "zlgen: EAL init failed: %s (check hugepages and EAL options)\n",
			rte_strerror(rte_errno));
	argc -= ret;
	argv += ret;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	zl.hz = rte_get_tsc_hz();
	zl.ns_mult = (uint64_t)(((unsigned __int128)1000000000 << 32) / zl.hz);
	if (parse_args(argc, argv, &opts) < 0) {
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	if (rte_lcore_count() > ZL_MAX_WORKERS) {
		fprintf(stderr, "zlgen: at most %u lcores\n", ZL_MAX_WORKERS);
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	/* the socket first: a bad --ctl path fails at once, with its reason, before any port is set up */
	ctl_fd = zl_ctl_open(ctl_path);
	if (ctl_fd < 0) {
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	zl.streams = rte_zmalloc("zl_streams", sizeof(struct zl_stream) * ZL_MAX_STREAMS, RTE_CACHE_LINE_SIZE);
	if (zl.streams == NULL || zl_ports_init(&opts) < 0) {
		zl_ctl_close(ctl_fd, ctl_path);
		zl_ports_close();
		rte_free(zl.streams);
		rte_eal_cleanup();
		return EXIT_FAILURE;
	}
	zl.nb_workers = 0;
	RTE_LCORE_FOREACH(lcore) {
		struct zl_worker *w = &zl.workers[zl.nb_workers++];

		w->lcore = lcore;
		w->rx = calloc(ZL_MAX_STREAMS, sizeof(struct zl_rx_stream));
		if (w->rx == NULL) {
			zl_ctl_close(ctl_fd, ctl_path);
			rte_exit(EXIT_FAILURE, "zlgen: out of memory for receive statistics\n");
		}
	}
	zl_workers_assign();
	for (i = 0; i < zl.nb_workers; i++)
		printf("zlgen: worker %u on lcore %u polls %u RX queue(s)\n",
			i, zl.workers[i].lcore, zl.workers[i].nb_rxq);
	printf("zlgen: TSC %.3f GHz, %u port(s)\n", (double)zl.hz / 1e9, zl.nb_ports);
	fflush(stdout);

	ret = rte_ctrl_thread_create(&ctl_tid, "zl-ctl", NULL, ctl_main, NULL);
	if (ret != 0) {
		fprintf(stderr, "zlgen: cannot start the control thread: %s\n", strerror(ret));
		zl_ctl_close(ctl_fd, ctl_path);
		zl.quit = 1;
		status = EXIT_FAILURE;
	}
	for (i = 1; i < zl.nb_workers; i++)
		rte_eal_remote_launch(zl_worker_main, &zl.workers[i], zl.workers[i].lcore);
	zl_worker_main(&zl.workers[0]);
	rte_eal_mp_wait_lcore();
	if (ret == 0)
		pthread_join(ctl_tid, NULL);
	if (ctl_status < 0)
		status = EXIT_FAILURE;

	zl_ports_close();
	for (i = 0; i < zl.nb_workers; i++)
		free(zl.workers[i].rx);
	rte_free(zl.streams);
	rte_eal_cleanup();
	printf("zlgen: stopped\n");
	return status;
}
