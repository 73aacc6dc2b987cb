/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control protocol, version 1: one JSON object per line each way.
 * Request: {"cmd": NAME, "id": ANY?, "proto": 1?, ...}; reply: {"ok": true,
 * "id": ..., ...} or {"ok": false, "id": ..., "error": "what is wrong"}.
 * Commands: hello, ports, configure, start, status, stop, result, shutdown.
 * See gen/PROTOCOL.md for every field.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_version.h>

#include "ctl.h"
#include "trial.h"

#define ERRLEN 256

static struct zl_stream staging[ZL_MAX_STREAMS]; /* configure parses into this */

static json_t *
reply_error(const char *fmt, ...)
{
	char buf[ERRLEN];
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* text from the request, cut by a length limit, may end mid UTF-8 sequence: keep ASCII */
	for (i = 0; buf[i] != '\0'; i++)
		if ((unsigned char)buf[i] >= 0x80)
			buf[i] = '?';
	return json_pack("{s:b,s:s}", "ok", 0, "error", buf);
}

static json_t *
reply_ok(void)
{
	return json_pack("{s:b}", "ok", 1);
}

static json_t *
cmd_hello(void)
{
	json_t *o = reply_ok(), *lc = json_array();
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

static json_t *
cmd_ports(void)
{
	json_t *o = reply_ok(), *arr = json_array();
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

/* Reads an optional integer in [lo, hi]; returns 0, or -1 with err set. */
static int
get_int(json_t *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err, const char *ctx)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL)
		return 0;
	/* the range test first: casting a double outside int64_t is undefined */
	if (json_is_real(v) && json_real_value(v) > -9.2e18 && json_real_value(v) < 9.2e18 &&
			json_real_value(v) == (double)(int64_t)json_real_value(v)) {
		*out = (int64_t)json_real_value(v);
	} else if (json_is_integer(v)) {
		*out = json_integer_value(v);
	} else {
		snprintf(err, ERRLEN, "%s%s must be an integer", ctx, key);
		return -1;
	}
	if (*out < lo || *out > hi) {
		snprintf(err, ERRLEN, "%s%s must be %lld..%lld, got %lld", ctx, key,
			(long long)lo, (long long)hi, (long long)*out);
		return -1;
	}
	return 0;
}

static int
get_mac(json_t *obj, const char *key, uint8_t mac[6], char *err, const char *ctx)
{
	json_t *v = json_object_get(obj, key);
	struct rte_ether_addr a;

	if (v == NULL)
		return 0;
	if (!json_is_string(v) || rte_ether_unformat_addr(json_string_value(v), &a) != 0) {
		snprintf(err, ERRLEN, "%s%s must be a MAC address like 02:00:00:00:00:01", ctx, key);
		return -1;
	}
	memcpy(mac, a.addr_bytes, 6);
	return 0;
}

static int
get_ip(json_t *obj, const char *key, uint32_t *ip, char *err, const char *ctx)
{
	json_t *v = json_object_get(obj, key);
	unsigned int b[4];
	char tail;

	if (v == NULL)
		return 0;
	if (!json_is_string(v) ||
			sscanf(json_string_value(v), "%u.%u.%u.%u%c", &b[0], &b[1], &b[2], &b[3], &tail) != 4 ||
			b[0] > 255 || b[1] > 255 || b[2] > 255 || b[3] > 255) {
		snprintf(err, ERRLEN, "%s%s must be an IPv4 address like 198.18.0.1", ctx, key);
		return -1;
	}
	*ip = b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
	return 0;
}

/* Expands (size, weight) pairs into an interleaved pattern (smooth weighted round robin). */
static int
expand_imix(json_t *v, struct zl_stream *s, char *err, const char *ctx)
{
	int64_t size[16], weight[16], cur[16] = { 0 }, total = 0;
	size_t i, n = json_array_size(v);
	uint32_t k;

	if (!json_is_array(v) || n == 0 || n > 16) {
		snprintf(err, ERRLEN, "%simix must be a list of 1..16 [frame_size, weight] pairs", ctx);
		return -1;
	}
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);

		if (!json_is_array(e) || json_array_size(e) != 2 ||
				!json_is_integer(json_array_get(e, 0)) || !json_is_integer(json_array_get(e, 1))) {
			snprintf(err, ERRLEN, "%simix[%zu] must be [frame_size, weight], e.g. [64, 7]", ctx, i);
			return -1;
		}
		size[i] = json_integer_value(json_array_get(e, 0));
		weight[i] = json_integer_value(json_array_get(e, 1));
		if (size[i] < ZL_MIN_FRAME || size[i] > ZL_MAX_FRAME || weight[i] < 1 || weight[i] > ZL_MAX_PATTERN) {
			snprintf(err, ERRLEN, "%simix[%zu]: frame size must be %u..%u and weight 1..%u", ctx, i,
				ZL_MIN_FRAME, ZL_MAX_FRAME, ZL_MAX_PATTERN);
			return -1;
		}
		total += weight[i];
	}
	if (total > ZL_MAX_PATTERN) {
		snprintf(err, ERRLEN, "%simix weights add up to %lld: at most %u", ctx, (long long)total, ZL_MAX_PATTERN);
		return -1;
	}
	for (k = 0; k < total; k++) {
		size_t best = 0;

		for (i = 0; i < n; i++) {
			cur[i] += weight[i];
			if (cur[i] > cur[best])
				best = i;
		}
		cur[best] -= total;
		s->sizes[k] = (uint16_t)size[best];
	}
	s->nb_sizes = (uint32_t)total;
	return 0;
}

static const char *const stream_keys[] = {
	"port", "queue", "rx_port", "rate_pps", "frame_size", "imix", "flows", "flow_fields",
	"src_mac", "dst_mac", "src_ip", "dst_ip", "src_port", "dst_port", "vlan", "vlan_pcp", NULL
};

/* Parses one stream object into s (defaults filled in); returns 0 or -1 with err. */
static int
parse_stream(json_t *o, uint16_t idx, struct zl_stream *s, char *err)
{
	char ctx[32];
	const char *key;
	json_t *v;
	int64_t x;
	uint32_t i, min_len, max_len = 0;
	const char *msg;

	snprintf(ctx, sizeof(ctx), "streams[%u].", idx);
	if (!json_is_object(o)) {
		snprintf(err, ERRLEN, "streams[%u] must be an object", idx);
		return -1;
	}
	json_object_foreach(o, key, v) {
		const char *const *k;

		for (k = stream_keys; *k && strcmp(*k, key) != 0; k++)
			;
		if (*k == NULL) {
			snprintf(err, ERRLEN, "%s%s is not a stream field", ctx, key);
			return -1;
		}
	}
	memset(s, 0, sizeof(*s));
	if (json_object_get(o, "port") == NULL) {
		snprintf(err, ERRLEN, "%sport is required", ctx);
		return -1;
	}
	x = 0;
	if (get_int(o, "port", 0, zl.nb_ports - 1, &x, err, ctx) < 0)
		return -1;
	s->port = (uint16_t)x;
	s->rx_port = zl.nb_ports > 1 ? s->port ^ 1 : s->port;
	if (s->rx_port >= zl.nb_ports)
		s->rx_port = s->port;
	x = 0;
	if (get_int(o, "queue", 0, zl.ports[s->port].nb_txq - 1, &x, err, ctx) < 0)
		return -1;
	s->queue = (uint16_t)x;
	x = s->rx_port;
	if (get_int(o, "rx_port", 0, zl.nb_ports - 1, &x, err, ctx) < 0)
		return -1;
	s->rx_port = (uint16_t)x;
	v = json_object_get(o, "rate_pps");
	if (v != NULL) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e12) {
			snprintf(err, ERRLEN, "%srate_pps must be a number of frames per second >= 0 (0 = maximum)", ctx);
			return -1;
		}
		s->pps = (uint64_t)(json_number_value(v) + 0.5);
	}
	if (json_object_get(o, "imix") != NULL) {
		if (json_object_get(o, "frame_size") != NULL) {
			snprintf(err, ERRLEN, "%sgive frame_size or imix, not both", ctx);
			return -1;
		}
		if (expand_imix(json_object_get(o, "imix"), s, err, ctx) < 0)
			return -1;
	} else {
		x = 64;
		if (get_int(o, "frame_size", ZL_MIN_FRAME, ZL_MAX_FRAME, &x, err, ctx) < 0)
			return -1;
		s->sizes[0] = (uint16_t)x;
		s->nb_sizes = 1;
	}

	/* addresses: from the port's MAC to its peer's, RFC 2544 benchmark IPs (198.18.0.0/15) */
	memcpy(s->spec.src_mac, zl.ports[s->port].mac.addr_bytes, 6);
	memcpy(s->spec.dst_mac, zl.ports[s->rx_port].mac.addr_bytes, 6);
	s->spec.vlan = -1;
	s->spec.src_ip = (198u << 24 | 18u << 16) + ((uint32_t)s->port << 8) + 1;
	s->spec.dst_ip = (198u << 24 | 19u << 16) + ((uint32_t)s->rx_port << 8) + 1;
	s->spec.src_port = 1024;
	s->spec.dst_port = 1024;
	s->spec.nb_flows = 1;
	s->spec.flow_mask = ZL_FLOW_SRC_IP | ZL_FLOW_DST_IP;
	if (get_mac(o, "src_mac", s->spec.src_mac, err, ctx) < 0 ||
			get_mac(o, "dst_mac", s->spec.dst_mac, err, ctx) < 0 ||
			get_ip(o, "src_ip", &s->spec.src_ip, err, ctx) < 0 ||
			get_ip(o, "dst_ip", &s->spec.dst_ip, err, ctx) < 0)
		return -1;
	x = s->spec.src_port;
	if (get_int(o, "src_port", 0, 65535, &x, err, ctx) < 0)
		return -1;
	s->spec.src_port = (uint16_t)x;
	x = s->spec.dst_port;
	if (get_int(o, "dst_port", 0, 65535, &x, err, ctx) < 0)
		return -1;
	s->spec.dst_port = (uint16_t)x;
	x = -1;
	if (get_int(o, "vlan", -1, 4095, &x, err, ctx) < 0)
		return -1;
	s->spec.vlan = (int)x;
	x = 0;
	if (get_int(o, "vlan_pcp", 0, 7, &x, err, ctx) < 0)
		return -1;
	s->spec.vlan_pcp = (uint8_t)x;
	x = 1;
	if (get_int(o, "flows", 1, ZL_MAX_FLOWS, &x, err, ctx) < 0)
		return -1;
	s->spec.nb_flows = (uint32_t)x;
	v = json_object_get(o, "flow_fields");
	if (v != NULL) {
		size_t j;
		json_t *f;

		if (!json_is_array(v)) {
			snprintf(err, ERRLEN, "%sflow_fields must be a list of src_ip, dst_ip, src_port, dst_port", ctx);
			return -1;
		}
		s->spec.flow_mask = 0;
		json_array_foreach(v, j, f) {
			const char *n = json_is_string(f) ? json_string_value(f) : "";

			if (strcmp(n, "src_ip") == 0)
				s->spec.flow_mask |= ZL_FLOW_SRC_IP;
			else if (strcmp(n, "dst_ip") == 0)
				s->spec.flow_mask |= ZL_FLOW_DST_IP;
			else if (strcmp(n, "src_port") == 0)
				s->spec.flow_mask |= ZL_FLOW_SRC_PORT;
			else if (strcmp(n, "dst_port") == 0)
				s->spec.flow_mask |= ZL_FLOW_DST_PORT;
			else {
				snprintf(err, ERRLEN, "%sflow_fields[%zu] must be src_ip, dst_ip, src_port or dst_port", ctx, j);
				return -1;
			}
		}
	}
	min_len = UINT32_MAX;
	for (i = 0; i < s->nb_sizes; i++) {
		min_len = RTE_MIN(min_len, (uint32_t)s->sizes[i]);
		max_len = RTE_MAX(max_len, (uint32_t)s->sizes[i]);
	}
	msg = zl_frame_spec_check(&s->spec, min_len);
	if (msg != NULL) {
		snprintf(err, ERRLEN, "streams[%u]: %s", idx, msg);
		return -1;
	}
	if (max_len > zl.ports[s->port].max_frame) {
		snprintf(err, ERRLEN, "%sframe size %u B is above port %u's largest frame %u B (zlgen --max-frame)",
			ctx, max_len, s->port, zl.ports[s->port].max_frame);
		return -1;
	}
	s->flows = calloc(s->spec.nb_flows, sizeof(struct zl_flow));
	if (s->flows == NULL) {
		snprintf(err, ERRLEN, "%sout of memory for %u flows", ctx, s->spec.nb_flows);
		return -1;
	}
	return 0;
}

static json_t *
cmd_configure(json_t *req)
{
	char err[ERRLEN] = "";
	json_t *arr = json_object_get(req, "streams"), *v;
	size_t n, i;
	int64_t x;

	if (zl_trial_active())
		return reply_error("a trial is running: stop it or wait for its result first");
	if (!json_is_array(arr) || json_array_size(arr) == 0)
		return reply_error("configure needs streams: a non-empty list of stream objects");
	n = json_array_size(arr);
	if (n > ZL_MAX_STREAMS)
		return reply_error("at most %u streams, got %zu", ZL_MAX_STREAMS, n);
	for (i = 0; i < n; i++) {
		if (parse_stream(json_array_get(arr, i), (uint16_t)i, &staging[i], err) < 0) {
			while (i-- > 0)
				free(staging[i].flows);
			return reply_error("%s", err);
		}
	}
	v = json_object_get(req, "idle_sleep_us");
	x = zl.idle_sleep_us;
	if (v != NULL && get_int(req, "idle_sleep_us", 0, 100000, &x, err, "") < 0) {
		for (i = 0; i < n; i++)
			free(staging[i].flows);
		return reply_error("%s", err);
	}
	zl.idle_sleep_us = (uint32_t)x;
	if (zl_trial_configure(staging, (uint16_t)n, err, sizeof(err)) < 0) {
		for (i = 0; i < n; i++)
			free(staging[i].flows);
		return reply_error("%s", err);
	}
	v = reply_ok();
	json_object_set_new(v, "streams", json_integer((json_int_t)n));
	return v;
}

static json_t *
cmd_start(json_t *req)
{
	struct zl_trial_params tp;
	char err[ERRLEN] = "";
	json_t *v;
	int64_t x;

	memset(&tp, 0, sizeof(tp));
	tp.trial_id = -1;
	tp.drain_ms = 500;
	x = -1;
	if (get_int(req, "trial", 0, 65535, &x, err, "") < 0)
		return reply_error("%s", err);
	tp.trial_id = (int)x;
	v = json_object_get(req, "duration_s");
	if (v != NULL) {
		if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 86400)
			return reply_error("duration_s must be a number of seconds in (0, 86400]");
		tp.duration_s = json_number_value(v);
	}
	x = 0;
	if (get_int(req, "frames", 1, INT64_MAX, &x, err, "") < 0)
		return reply_error("%s", err);
	tp.frames = (uint64_t)x;
	if ((tp.duration_s > 0) == (tp.frames > 0))
		return reply_error("start needs exactly one of duration_s (seconds) or frames (per stream)");
	x = 500;
	if (get_int(req, "drain_ms", 0, 60000, &x, err, "") < 0)
		return reply_error("%s", err);
	tp.drain_ms = (uint32_t)x;
	v = json_object_get(req, "rate_pps");
	if (v != NULL) {
		uint16_t i;

		if (json_is_number(v)) {
			if (json_number_value(v) < 0 || json_number_value(v) > 1e12)
				return reply_error("rate_pps must be >= 0 frames per second (0 = maximum)");
			for (i = 0; i < zl.nb_streams; i++)
				tp.pps[i] = (uint64_t)(json_number_value(v) + 0.5);
		} else if (json_is_array(v) && json_array_size(v) == zl.nb_streams) {
			for (i = 0; i < zl.nb_streams; i++) {
				json_t *e = json_array_get(v, i);

				if (!json_is_number(e) || json_number_value(e) < 0 || json_number_value(e) > 1e12)
					return reply_error("rate_pps[%u] must be >= 0 frames per second", i);
				tp.pps[i] = (uint64_t)(json_number_value(e) + 0.5);
			}
		} else {
			return reply_error("rate_pps must be a number or a list with one rate per stream (%u)",
				zl.nb_streams);
		}
		tp.has_rates = true;
	}
	if (zl_trial_start(&tp, err, sizeof(err)) < 0)
		return reply_error("%s", err);
	v = reply_ok();
	json_object_set_new(v, "trial", json_integer(zl.sync.trial_id));
	return v;
}

static json_t *
cmd_result(json_t *req)
{
	json_t *r, *v = json_object_get(req, "wait_s");
	double wait_s = 0;
	uint64_t deadline;

	if (v != NULL) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 86400)
			return reply_error("wait_s must be a number of seconds in [0, 86400]");
		wait_s = json_number_value(v);
	}
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
			return reply_error("trial %u is still running: ask again later or pass wait_s",
				zl.sync.trial_id);
		return reply_error("no finished trial: send start first");
	}
	v = reply_ok();
	json_object_set_new(v, "result", r);
	return v;
}

/* Dispatches one parsed request. */
static json_t *
dispatch(json_t *req, int *shutdown)
{
	json_t *c = json_object_get(req, "cmd"), *p = json_object_get(req, "proto"), *st;
	const char *cmd;
	char err[ERRLEN];

	if (!json_is_string(c))
		return reply_error("request needs \"cmd\": one of hello, ports, configure, start, status, stop, result, shutdown");
	if (p != NULL && (!json_is_integer(p) || json_integer_value(p) != ZL_PROTO_VERSION))
		return reply_error("protocol version mismatch: zlgen speaks proto %d", ZL_PROTO_VERSION);
	cmd = json_string_value(c);
	if (strcmp(cmd, "hello") == 0)
		return cmd_hello();
	if (strcmp(cmd, "ports") == 0)
		return cmd_ports();
	if (strcmp(cmd, "configure") == 0)
		return cmd_configure(req);
	if (strcmp(cmd, "start") == 0)
		return cmd_start(req);
	if (strcmp(cmd, "status") == 0) {
		json_t *o = zl_trial_status();

		st = reply_ok();
		json_object_update(st, o);
		json_decref(o);
		return st;
	}
	if (strcmp(cmd, "stop") == 0) {
		if (zl_trial_stop(err, sizeof(err)) < 0)
			return reply_error("%s", err);
		return reply_ok();
	}
	if (strcmp(cmd, "result") == 0)
		return cmd_result(req);
	if (strcmp(cmd, "shutdown") == 0) {
		*shutdown = 1;
		return reply_ok();
	}
	return reply_error("unknown cmd \"%.40s\": use hello, ports, configure, start, status, stop, result, shutdown", cmd);
}

char *
zl_ctl_handle_line(const char *line, size_t len, int *shutdown)
{
	json_error_t jerr;
	json_t *req, *rep, *id = NULL;
	char *out;

	req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL) {
		rep = reply_error("malformed JSON at column %d: %s", jerr.column, jerr.text);
	} else if (!json_is_object(req)) {
		rep = reply_error("a request must be a JSON object with a \"cmd\" field");
	} else {
		id = json_object_get(req, "id");
		rep = dispatch(req, shutdown);
		if (id != NULL)
			json_object_set(rep, "id", id);
	}
	out = json_dumps(rep, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(rep);
	json_decref(req);
	return out;
}

/* Output buffers above this are freed once sent: a burst of large replies pins no memory. */
#define OUT_KEEP (64 * 1024)

/*
 * One connected client. Replies wait in out until the socket takes them
 * (never blocking): a client that does not read must not stall the others.
 */
struct client {
	int fd;
	int overflow;  /* discarding the rest of a line longer than ZL_CTL_MAX_LINE */
	int eof;       /* the client sent its last byte: close once out is sent */
	size_t len;    /* bytes in in */
	char *in;      /* ZL_CTL_MAX_LINE + 1 bytes: a longest line and its newline */
	char *out;     /* replies not yet taken by the socket: out[head, tail) */
	size_t head, tail, cap;
};

/* Reply bytes the socket has not taken yet. */
static size_t
client_pending(const struct client *c)
{
	return c->tail - c->head;
}

/* Closes the client's socket and frees its buffers; the slot is free again. */
static void
client_close(struct client *c)
{
	close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Sends what the socket takes now; returns -1 if the client is gone. */
static int
client_flush(struct client *c)
{
	while (c->head < c->tail) {
		ssize_t w = send(c->fd, c->out + c->head, c->tail - c->head, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (w <= 0)
			return -1;
		c->head += (size_t)w;
	}
	c->head = 0;
	c->tail = 0;
	if (c->cap > OUT_KEEP) {
		free(c->out);
		c->out = NULL;
		c->cap = 0;
	}
	return 0;
}

/* Appends s and a newline to the client's output; returns -1 when out of memory. */
static int
client_queue(struct client *c, const char *s)
{
	size_t n = strlen(s), need;

	if (c->head > 0 && c->tail + n + 1 > c->cap) {
		/* reuse the room of what was sent before growing */
		memmove(c->out, c->out + c->head, c->tail - c->head);
		c->tail -= c->head;
		c->head = 0;
	}
	need = c->tail + n + 1;
	if (need > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(c->out, cap);
		if (p == NULL)
			return -1;
		c->out = p;
		c->cap = cap;
	}
	memcpy(c->out + c->tail, s, n);
	c->out[c->tail + n] = '\n';
	c->tail += n + 1;
	return 0;
}

/* Queues one reply line; returns -1 to drop a client whose unsent replies pass ZL_CTL_MAX_OUT. */
static int
client_reply(struct client *c, int slot, const char *s)
{
	if (client_queue(c, s) < 0) {
		fprintf(stderr, "zlgen: control client %d dropped: out of memory for its replies\n", slot);
		return -1;
	}
	if (client_pending(c) <= ZL_CTL_MAX_OUT)
		return 0;
	/* only what the socket will not take now counts against the limit */
	if (client_flush(c) < 0)
		return -1;
	if (client_pending(c) > ZL_CTL_MAX_OUT) {
		fprintf(stderr, "zlgen: control client %d dropped: it does not read its replies "
			"(%zu bytes unsent, limit %d MiB)\n", slot, client_pending(c), ZL_CTL_MAX_OUT >> 20);
		return -1;
	}
	return 0;
}

/* An error reply (malloc'd line, no newline) for a fault found before any request was parsed. */
static char *
error_line(const char *msg)
{
	json_t *rep = reply_error("%s", msg);
	char *out = json_dumps(rep, JSON_COMPACT | JSON_ENSURE_ASCII);

	json_decref(rep);
	return out;
}

/* Reads what a client sent and queues a reply to every complete line; returns -1 to drop it. */
static int
client_read(struct client *c, int slot, int *shutdown)
{
	size_t off = 0;
	ssize_t r;
	char *nl;

	if (c->in == NULL)
		c->in = malloc(ZL_CTL_MAX_LINE + 1);
	if (c->in == NULL)
		return -1;
	/* room for a line of exactly ZL_CTL_MAX_LINE bytes and its newline */
	r = recv(c->fd, c->in + c->len, ZL_CTL_MAX_LINE + 1 - c->len, MSG_DONTWAIT);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
	if (r == 0) {
		/* done sending (maybe only half-closed): it may still read its replies */
		c->eof = 1;
		return 0;
	}
	c->len += (size_t)r;
	/* lines are consumed by offset and the rest moved once: many short lines cost no quadratic copy */
	while (!*shutdown && (nl = memchr(c->in + off, '\n', c->len - off)) != NULL) {
		const char *line = c->in + off;
		size_t l = (size_t)(nl - line);
		char *out = NULL;
		int ret;

		off += l + 1;
		if (c->overflow) {
			char msg[128];

			snprintf(msg, sizeof(msg), "request line longer than %d bytes (1 MiB), the limit: "
				"send a shorter request", ZL_CTL_MAX_LINE);
			out = error_line(msg);
			c->overflow = 0;
		} else if (l > 0 && !(l == 1 && line[0] == '\r')) {
			out = zl_ctl_handle_line(line, l, shutdown);
		}
		if (out == NULL)
			continue;
		ret = client_reply(c, slot, out);
		free(out);
		if (ret < 0)
			return -1;
	}
	memmove(c->in, c->in + off, c->len - off);
	c->len -= off;
	if (c->len == ZL_CTL_MAX_LINE + 1) {
		/* one byte more than the limit and still no newline: discard up to the next one */
		c->overflow = 1;
		c->len = 0;
	}
	return client_flush(c);
}

/* Handles one client's poll events; returns -1 to close it. */
static int
client_event(struct client *c, int slot, short revents, int *shutdown)
{
	if (!c->eof && (revents & (POLLIN | POLLHUP | POLLERR))) {
		if (client_read(c, slot, shutdown) < 0)
			return -1;
	} else if (revents & (POLLHUP | POLLERR)) {
		/* done sending and gone: nobody is left to read the rest */
		return -1;
	}
	if (client_flush(c) < 0)
		return -1;
	/* a client that sent its last request leaves once it has every reply */
	return c->eof && client_pending(c) == 0 ? -1 : 0;
}

/* Tells a client beyond ZL_CTL_MAX_CLIENTS why it is refused (one try, never waiting) and closes it. */
static void
client_refuse(int fd)
{
	static char nl[] = "\n";
	char msg[128], *out;

	snprintf(msg, sizeof(msg), "too many control clients (%d connected); close one or wait until "
		"one disconnects", ZL_CTL_MAX_CLIENTS);
	fprintf(stderr, "zlgen: refused a control client: %s\n", msg);
	out = error_line(msg);
	if (out != NULL) {
		struct iovec iov[2] = { { out, strlen(out) }, { nl, 1 } };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

		/* a new socket's buffer is empty: the line fits, and a full one is not waited for */
		if (sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
			fprintf(stderr, "zlgen: could not tell the refused client: %s\n", strerror(errno));
		free(out);
	}
	close(fd);
}

int
zl_ctl_open(const char *path)
{
	struct sockaddr_un addr;
	size_t n = strlen(path);
	struct stat st;
	mode_t old;
	int lfd;

	if (n == 0) {
		fprintf(stderr, "zlgen: --ctl needs a path for the control socket, got an empty one\n");
		return -1;
	}
	if (n >= sizeof(addr.sun_path)) {
		fprintf(stderr, "zlgen: control socket path %s is %zu bytes, longer than the %zu a UNIX "
			"socket allows: use a shorter --ctl path\n", path, n, sizeof(addr.sun_path) - 1);
		return -1;
	}
	/* a stale socket of an earlier run is replaced; anything else at path is never deleted */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "zlgen: control socket path %s exists and is not a socket: remove it or "
			"choose another --ctl path\n", path);
		return -1;
	}
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		fprintf(stderr, "zlgen: cannot create the control socket %s: %s\n", path, strerror(errno));
		return -1;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, n + 1);
	unlink(path);
	/* created 0600 from the start, not chmod'ed after: no moment in which others may connect */
	old = umask(0177);
	if (bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		umask(old);
		fprintf(stderr, "zlgen: cannot bind the control socket %s: %s\n", path, strerror(errno));
		close(lfd);
		return -1;
	}
	umask(old);
	if (listen(lfd, ZL_CTL_MAX_CLIENTS) < 0) {
		fprintf(stderr, "zlgen: cannot listen on the control socket %s: %s\n", path, strerror(errno));
		zl_ctl_close(lfd, path);
		return -1;
	}
	return lfd;
}

void
zl_ctl_close(int lfd, const char *path)
{
	close(lfd);
	unlink(path);
}

int
zl_ctl_serve(int lfd, const char *path)
{
	struct client cl[ZL_CTL_MAX_CLIENTS];
	struct pollfd pfd[ZL_CTL_MAX_CLIENTS + 1];
	int shutdown = 0, ret = 0, i;

	for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
		memset(&cl[i], 0, sizeof(cl[i]));
		cl[i].fd = -1;
	}
	printf("zlgen: ready, control socket %s\n", path);
	fflush(stdout);

	while (!zl.quit && !shutdown) {
		int timeout = zl_trial_active() ? zl_trial_tick_ms() : 100;

		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
			/* POLLOUT only with output waiting: a writable socket would end every poll at once */
			pfd[i + 1].fd = cl[i].fd;
			pfd[i + 1].events = (cl[i].eof ? 0 : POLLIN) | (client_pending(&cl[i]) ? POLLOUT : 0);
			pfd[i + 1].revents = 0;
		}
		if (poll(pfd, ZL_CTL_MAX_CLIENTS + 1, timeout) < 0 && errno != EINTR) {
			fprintf(stderr, "zlgen: control socket: poll failed: %s\n", strerror(errno));
			ret = -1;
			break;
		}
		zl_trial_tick();
		/* clients before the listener: a slot freed by one that left is there for one arriving */
		for (i = 0; i < ZL_CTL_MAX_CLIENTS && !shutdown; i++)
			if (cl[i].fd >= 0 && pfd[i + 1].revents != 0 &&
					client_event(&cl[i], i, pfd[i + 1].revents, &shutdown) < 0)
				client_close(&cl[i]);
		if (!shutdown && (pfd[0].revents & POLLIN)) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				for (i = 0; i < ZL_CTL_MAX_CLIENTS && cl[i].fd >= 0; i++)
					;
				if (i == ZL_CTL_MAX_CLIENTS)
					client_refuse(fd);
				else
					cl[i].fd = fd;
			}
		}
	}
	/* the last replies (shutdown's own among them) get one more try, never a wait */
	for (i = 0; i < ZL_CTL_MAX_CLIENTS; i++) {
		if (cl[i].fd >= 0) {
			client_flush(&cl[i]);
			client_close(&cl[i]);
		}
	}
	zl_ctl_close(lfd, path);
	return ret;
}
