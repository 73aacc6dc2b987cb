/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control protocol, version 1: one JSON object per line each way.
 * Request: {"cmd": NAME, "id": ANY?, "proto": 1?, ...}; reply: {"ok": true,
 * "id": ..., ...} or {"ok": false, "id": ..., "error": "what is wrong"}.
 * This file is the top of the protocol, a request line in and a reply line
 * out: it checks cmd and proto and runs the commands (hello, ports, configure,
 * start, status, stop, result, intervals, shutdown), one function each in a
 * table. ctl_req.c reads the requests' fields, ctl_stream.c the stream
 * objects, ctl_json.c builds the replies. See gen/PROTOCOL.md for every field.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_version.h>

#include "ctl.h"
#include "ctl_priv.h"

static struct zl_stream staging[ZL_MAX_STREAMS]; /* configure parses into this */

/* hello: versions, clock, lcores and limits of this zlgen. */
static json_t *
cmd_hello(json_t *req, int *shutdown)
{
	json_t *o = ctl_reply_ok(), *lc = json_array();
	unsigned int l;

	RTE_LCORE_FOREACH(l)
		json_array_append_new(lc, json_integer(l));
	json_object_set_new(o, "proto", json_integer(ZL_PROTO_VERSION));
	json_object_set_new(o, "zlgen", json_string(ZLGEN_VERSION));
	json_object_set_new(o, "dpdk", json_string(rte_version()));
	json_object_set_new(o, "tsc_hz", json_integer((json_int_t)zl.hz));
	json_object_set_new(o, "lcores", lc);
	json_object_set_new(o, "nb_ports", json_integer(zl.nb_ports));
	json_object_set_new(o, "max_streams", json_integer(ZL_MAX_STREAMS));
	json_object_set_new(o, "max_frame", json_integer(ZL_MAX_FRAME));
	json_object_set_new(o, "pid", json_integer(getpid()));
	return o;
}

/* ports: each port's identity, link and queue setup. */
static json_t *
cmd_ports(json_t *req, int *shutdown)
{
	json_t *o = ctl_reply_ok(), *arr = json_array();
	uint16_t i;

	for (i = 0; i < zl.nb_ports; i++) {
		struct zl_port *p = &zl.ports[i];
		struct rte_eth_link link;
		char mac[RTE_ETHER_ADDR_FMT_SIZE];

		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(p->id, &link);
		rte_ether_format_addr(mac, sizeof(mac), &p->mac);
		json_array_append_new(arr, json_pack(
			"{s:i,s:i,s:s,s:s,s:s,s:b,s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i}",
			"port", i, "port_id", p->id, "name", p->name, "driver", p->driver,
			"mac", mac, "link_up", link.link_status == RTE_ETH_LINK_UP,
			"speed_mbps", (json_int_t)link.link_speed, "mtu", p->mtu,
			"max_frame", (int)p->max_frame, "nb_rxq", p->nb_rxq, "nb_txq", p->nb_txq,
			"nb_rxd", p->nb_rxd, "nb_txd", p->nb_txd, "socket", p->socket));
	}
	json_object_set_new(o, "ports", arr);
	return o;
}

/* configure: replaces the stream set when no trial runs. */
static json_t *
cmd_configure(json_t *req, int *shutdown)
{
	char err[CTL_ERRLEN] = "";
	uint32_t idle_sleep_us = zl.idle_sleep_us;
	uint16_t n, i;
	json_t *v;

	if (zl_trial_active())
		return ctl_reply_error("a trial is running: stop it or wait for its result first");
	if (ctl_req_configure(req, staging, &n, &idle_sleep_us, err) < 0)
		return ctl_reply_error("%s", err);
	zl.idle_sleep_us = idle_sleep_us;
	if (zl_trial_configure(staging, n, err, sizeof(err)) < 0) {
		for (i = 0; i < n; i++)
			free(staging[i].flows);
		return ctl_reply_error("%s", err);
	}
	v = ctl_reply_ok();
	json_object_set_new(v, "streams", json_integer((json_int_t)n));
	return v;
}

/* start: begins a trial on the configured streams. */
static json_t *
cmd_start(json_t *req, int *shutdown)
{
	struct zl_trial_params tp;
	char err[CTL_ERRLEN] = "";
	json_t *v;

	if (ctl_req_start(req, &tp, err) < 0 || zl_trial_start(&tp, err, sizeof(err)) < 0)
		return ctl_reply_error("%s", err);
	v = ctl_reply_ok();
	json_object_set_new(v, "trial", json_integer(zl.sync.trial_id));
	return v;
}

/* status: the trial's state and counters so far. */
static json_t *
cmd_status(json_t *req, int *shutdown)
{
	json_t *o = zl_trial_status(), *st = ctl_reply_ok();

	json_object_update(st, o);
	json_decref(o);
	return st;
}

/* stop: ends transmission now (the drain still happens). */
static json_t *
cmd_stop(json_t *req, int *shutdown)
{
	char err[CTL_ERRLEN];

	if (zl_trial_stop(err, sizeof(err)) < 0)
		return ctl_reply_error("%s", err);
	return ctl_reply_ok();
}

/* result: the last finished trial's result, waiting up to wait_s for a running one. */
static json_t *
cmd_result(json_t *req, int *shutdown)
{
	char err[CTL_ERRLEN] = "";
	double wait_s;
	uint64_t deadline;
	json_t *r, *v;

	if (ctl_req_wait(req, &wait_s, err) < 0)
		return ctl_reply_error("%s", err);
	deadline = rte_rdtsc() + (uint64_t)(wait_s * (double)zl.hz);
	while (zl_trial_active() && rte_rdtsc() < deadline && !zl.quit) {
		uint64_t now = rte_rdtsc();
		uint64_t left_ms = now < deadline ? (deadline - now) * 1000 / zl.hz + 1 : 1;
		int ms = zl_trial_tick_ms();
		struct timespec ts;

		if ((uint64_t)ms > left_ms)
			ms = (int)left_ms;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)ms * 1000000;
		nanosleep(&ts, NULL);
		zl_trial_tick();
	}
	r = zl_trial_result();
	if (r == NULL) {
		if (zl_trial_active())
			return ctl_reply_error("trial %u is still running: ask again later or pass wait_s",
				zl.sync.trial_id);
		return ctl_reply_error("no finished trial: send start first");
	}
	v = ctl_reply_ok();
	json_object_set_new(v, "result", r);
	return v;
}

/* intervals: the final per-interval counters of the trial, from interval "from", one page. */
static json_t *
cmd_intervals(json_t *req, int *shutdown)
{
	char err[CTL_ERRLEN] = "";
	uint32_t from;
	int stream;
	json_t *o, *v;

	if (ctl_req_intervals(req, &stream, &from, err) < 0)
		return ctl_reply_error("%s", err);
	o = zl_trial_intervals(stream, from, err, sizeof(err));
	if (o == NULL)
		return ctl_reply_error("%s", err);
	v = ctl_reply_ok();
	json_object_update(v, o);
	json_decref(o);
	return v;
}

/* shutdown: the server replies, then stops serving and zlgen exits. */
static json_t *
cmd_shutdown(json_t *req, int *shutdown)
{
	*shutdown = 1;
	return ctl_reply_ok();
}

/* One command of the protocol. */
struct ctl_cmd {
	const char *name;
	json_t *(*run)(json_t *req, int *shutdown);
};

static const struct ctl_cmd commands[] = {
	{ "hello", cmd_hello },
	{ "ports", cmd_ports },
	{ "configure", cmd_configure },
	{ "start", cmd_start },
	{ "status", cmd_status },
	{ "stop", cmd_stop },
	{ "result", cmd_result },
	{ "intervals", cmd_intervals },
	{ "shutdown", cmd_shutdown },
};

/* Answers one request object whose command is cmd; sets *shutdown on shutdown. */
static json_t *
ctl_cmd_run(const char *cmd, json_t *req, int *shutdown)
{
	size_t i;

	for (i = 0; i < RTE_DIM(commands); i++)
		if (strcmp(cmd, commands[i].name) == 0)
			return commands[i].run(req, shutdown);
	return ctl_reply_error("unknown cmd \"%.40s\": use hello, ports, configure, start, status, stop, "
		"result, intervals, shutdown", cmd);
}

/* Checks "cmd" and "proto" of a request object; returns its command name, or NULL with *rep set. */
static const char *
cmd_of(json_t *req, json_t **rep)
{
	json_t *c = json_object_get(req, "cmd"), *p = json_object_get(req, "proto");

	if (!json_is_string(c)) {
		*rep = ctl_reply_error("request needs \"cmd\": one of hello, ports, configure, start, "
			"status, stop, result, intervals, shutdown");
		return NULL;
	}
	if (p != NULL && (!json_is_integer(p) || json_integer_value(p) != ZL_PROTO_VERSION)) {
		*rep = ctl_reply_error("protocol version mismatch: zlgen speaks proto %d", ZL_PROTO_VERSION);
		return NULL;
	}
	return json_string_value(c);
}

/* Answers one request line; returns a malloc'd reply line (no newline). */
char *
zl_ctl_handle_line(const char *line, size_t len, int *shutdown)
{
	json_error_t jerr;
	json_t *req, *rep = NULL, *id = NULL;
	const char *cmd;
	char *out;

	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL) {
		rep = ctl_reply_error("malformed JSON at column %d: %s", jerr.column, jerr.text);
	} else if (!json_is_object(req)) {
		rep = ctl_reply_error("a request must be a JSON object with a \"cmd\" field");
	} else {
		id = json_object_get(req, "id");
		cmd = cmd_of(req, &rep);
		if (cmd != NULL)
			rep = ctl_cmd_run(cmd, req, shutdown);
		if (id != NULL)
			json_object_set(rep, "id", id);
	}
	out = json_dumps(rep, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(rep);
	json_decref(req);
	return out;
}
