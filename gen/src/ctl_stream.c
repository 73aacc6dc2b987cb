/* SPDX-License-Identifier: BSD-3-Clause */
/* Control protocol: one stream object of configure into a struct zl_stream (see gen/PROTOCOL.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ether.h>

#include "ctl_priv.h"

/* Reads optional MAC address key of obj into mac; returns 0, or -1 with err set. */
static int
stream_mac(json_t *obj, const char *key, uint8_t mac[6], char *err, const char *ctx)
{
	json_t *v = json_object_get(obj, key);
	struct rte_ether_addr a;

	if (v == NULL)
		return 0;
	if (!json_is_string(v) || rte_ether_unformat_addr(json_string_value(v), &a) != 0) {
		snprintf(err, CTL_ERRLEN, "%s%s must be a MAC address like 02:00:00:00:00:01", ctx, key);
		return -1;
	}
	memcpy(mac, a.addr_bytes, 6);
	return 0;
}

/* Reads optional IPv4 address key of obj into *ip (host order); returns 0, or -1 with err set. */
static int
stream_ip(json_t *obj, const char *key, uint32_t *ip, char *err, const char *ctx)
{
	json_t *v = json_object_get(obj, key);
	unsigned int b[4];
	char tail;

	if (v == NULL)
		return 0;
	if (!json_is_string(v) ||
			sscanf(json_string_value(v), "%u.%u.%u.%u%c", &b[0], &b[1], &b[2], &b[3], &tail) != 4 ||
			b[0] > 255 || b[1] > 255 || b[2] > 255 || b[3] > 255) {
		snprintf(err, CTL_ERRLEN, "%s%s must be an IPv4 address like 198.18.0.1", ctx, key);
		return -1;
	}
	*ip = b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
	return 0;
}

/* Expands (size, weight) pairs into an interleaved pattern (smooth weighted round robin). */
static int
stream_imix(json_t *v, struct zl_stream *s, char *err, const char *ctx)
{
	int64_t size[16], weight[16], cur[16] = { 0 }, total = 0;
	size_t i, n = json_array_size(v);
	uint32_t k;

	if (!json_is_array(v) || n == 0 || n > 16) {
		snprintf(err, CTL_ERRLEN, "%simix must be a list of 1..16 [frame_size, weight] pairs", ctx);
		return -1;
	}
	for (i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);

		if (!json_is_array(e) || json_array_size(e) != 2 ||
				!json_is_integer(json_array_get(e, 0)) || !json_is_integer(json_array_get(e, 1))) {
			snprintf(err, CTL_ERRLEN, "%simix[%zu] must be [frame_size, weight], e.g. [64, 7]", ctx, i);
			return -1;
		}
		size[i] = json_integer_value(json_array_get(e, 0));
		weight[i] = json_integer_value(json_array_get(e, 1));
		if (size[i] < ZL_MIN_FRAME || size[i] > ZL_MAX_FRAME || weight[i] < 1 || weight[i] > ZL_MAX_PATTERN) {
			snprintf(err, CTL_ERRLEN, "%simix[%zu]: frame size must be %u..%u and weight 1..%u", ctx, i,
				ZL_MIN_FRAME, ZL_MAX_FRAME, ZL_MAX_PATTERN);
			return -1;
		}
		total += weight[i];
	}
	if (total > ZL_MAX_PATTERN) {
		snprintf(err, CTL_ERRLEN, "%simix weights add up to %lld: at most %u", ctx, (long long)total, ZL_MAX_PATTERN);
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

/* The fields a stream object may have. */
static const char *const stream_keys[] = {
	"port", "queue", "rx_port", "rate_pps", "frame_size", "imix", "flows", "flow_fields",
	"src_mac", "dst_mac", "src_ip", "dst_ip", "src_port", "dst_port", "vlan", "vlan_pcp", "vxlan", NULL
};

/* The fields of a stream's vxlan object. */
static const char *const vxlan_keys[] = {
	"vni", "src_mac", "dst_mac", "src_ip", "dst_ip", "udp_port", NULL
};

/* Refuses a field of o that is not in keys; returns 0, or -1 with err set. */
static int
stream_known_keys(json_t *o, const char *const *keys, const char *what, char *err, const char *ctx)
{
	const char *key;
	json_t *v;

	json_object_foreach(o, key, v) {
		const char *const *k;

		for (k = keys; *k && strcmp(*k, key) != 0; k++)
			;
		if (*k == NULL) {
			snprintf(err, CTL_ERRLEN, "%s%s is not a %s field", ctx, key, what);
			return -1;
		}
	}
	return 0;
}

/* Reads the ports, queue, rate and frame sizes of stream object o; returns 0, or -1 with err set. */
static int
stream_traffic(json_t *o, struct zl_stream *s, char *err, const char *ctx)
{
	json_t *v;
	int64_t x;

	x = 0;
	if (ctl_json_int(o, "port", 0, zl.nb_ports - 1, &x, err, ctx) < 0)
		return -1;
	s->port = (uint16_t)x;
	s->rx_port = zl.nb_ports > 1 ? s->port ^ 1 : s->port;
	if (s->rx_port >= zl.nb_ports)
		s->rx_port = s->port;
	x = 0;
	if (ctl_json_int(o, "queue", 0, zl.ports[s->port].nb_txq - 1, &x, err, ctx) < 0)
		return -1;
	s->queue = (uint16_t)x;
	x = s->rx_port;
	if (ctl_json_int(o, "rx_port", 0, zl.nb_ports - 1, &x, err, ctx) < 0)
		return -1;
	s->rx_port = (uint16_t)x;
	v = json_object_get(o, "rate_pps");
	if (v != NULL) {
		if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e12) {
			snprintf(err, CTL_ERRLEN, "%srate_pps must be a number of frames per second >= 0 (0 = maximum)", ctx);
			return -1;
		}
		s->pps = (uint64_t)(json_number_value(v) + 0.5);
	}
	if (json_object_get(o, "imix") != NULL) {
		if (json_object_get(o, "frame_size") != NULL) {
			snprintf(err, CTL_ERRLEN, "%sgive frame_size or imix, not both", ctx);
			return -1;
		}
		return stream_imix(json_object_get(o, "imix"), s, err, ctx);
	}
	x = 64;
	if (ctl_json_int(o, "frame_size", ZL_MIN_FRAME, ZL_MAX_FRAME, &x, err, ctx) < 0)
		return -1;
	s->sizes[0] = (uint16_t)x;
	s->nb_sizes = 1;
	return 0;
}

/* Reads flow_fields (the header fields that vary per flow) into s, if given; returns 0, or -1 with err set. */
static int
stream_flow_fields(json_t *o, struct zl_stream *s, char *err, const char *ctx)
{
	json_t *v = json_object_get(o, "flow_fields"), *f;
	size_t j;

	if (v == NULL)
		return 0;
	if (!json_is_array(v)) {
		snprintf(err, CTL_ERRLEN, "%sflow_fields must be a list of src_ip, dst_ip, src_port, dst_port", ctx);
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
			snprintf(err, CTL_ERRLEN, "%sflow_fields[%zu] must be src_ip, dst_ip, src_port or dst_port", ctx, j);
			return -1;
		}
	}
	return 0;
}

/* Reads the frame header fields and flows of stream object o, defaults first; returns 0, or -1 with err set. */
static int
stream_header(json_t *o, struct zl_stream *s, char *err, const char *ctx)
{
	int64_t x;

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
	if (stream_mac(o, "src_mac", s->spec.src_mac, err, ctx) < 0 ||
			stream_mac(o, "dst_mac", s->spec.dst_mac, err, ctx) < 0 ||
			stream_ip(o, "src_ip", &s->spec.src_ip, err, ctx) < 0 ||
			stream_ip(o, "dst_ip", &s->spec.dst_ip, err, ctx) < 0)
		return -1;
	x = s->spec.src_port;
	if (ctl_json_int(o, "src_port", 0, 65535, &x, err, ctx) < 0)
		return -1;
	s->spec.src_port = (uint16_t)x;
	x = s->spec.dst_port;
	if (ctl_json_int(o, "dst_port", 0, 65535, &x, err, ctx) < 0)
		return -1;
	s->spec.dst_port = (uint16_t)x;
	x = -1;
	if (ctl_json_int(o, "vlan", -1, 4095, &x, err, ctx) < 0)
		return -1;
	s->spec.vlan = (int)x;
	x = 0;
	if (ctl_json_int(o, "vlan_pcp", 0, 7, &x, err, ctx) < 0)
		return -1;
	s->spec.vlan_pcp = (uint8_t)x;
	x = 1;
	if (ctl_json_int(o, "flows", 1, ZL_MAX_FLOWS, &x, err, ctx) < 0)
		return -1;
	s->spec.nb_flows = (uint32_t)x;
	return stream_flow_fields(o, s, err, ctx);
}

/*
 * Reads the optional vxlan object of stream object o (the outer headers of a VTEP);
 * returns 0, or -1 with err set. The outer MACs default to the stream's port and rx_port.
 */
static int
stream_vxlan(json_t *o, struct zl_stream *s, char *err, const char *ctx)
{
	json_t *v = json_object_get(o, "vxlan");
	char vctx[48];
	int64_t x;

	if (v == NULL)
		return 0;
	snprintf(vctx, sizeof(vctx), "%svxlan.", ctx);
	if (!json_is_object(v)) {
		snprintf(err, CTL_ERRLEN, "%svxlan must be an object {vni, src_ip, dst_ip, ...}", ctx);
		return -1;
	}
	if (stream_known_keys(v, vxlan_keys, "vxlan", err, vctx) < 0)
		return -1;
	if (json_object_get(v, "vni") == NULL || json_object_get(v, "src_ip") == NULL ||
			json_object_get(v, "dst_ip") == NULL) {
		snprintf(err, CTL_ERRLEN, "%svni, src_ip and dst_ip are required", vctx);
		return -1;
	}
	memcpy(s->vx_spec.src_mac, zl.ports[s->port].mac.addr_bytes, 6);
	memcpy(s->vx_spec.dst_mac, zl.ports[s->rx_port].mac.addr_bytes, 6);
	if (stream_mac(v, "src_mac", s->vx_spec.src_mac, err, vctx) < 0 ||
			stream_mac(v, "dst_mac", s->vx_spec.dst_mac, err, vctx) < 0 ||
			stream_ip(v, "src_ip", &s->vx_spec.src_ip, err, vctx) < 0 ||
			stream_ip(v, "dst_ip", &s->vx_spec.dst_ip, err, vctx) < 0)
		return -1;
	x = 0;
	if (ctl_json_int(v, "vni", 0, ZL_VXLAN_MAX_VNI, &x, err, vctx) < 0)
		return -1;
	s->vx_spec.vni = (uint32_t)x;
	x = ZL_VXLAN_PORT;
	if (ctl_json_int(v, "udp_port", 1, 65535, &x, err, vctx) < 0)
		return -1;
	s->vx_spec.udp_port = (uint16_t)x;
	s->vxlan = true;
	return 0;
}

/* Checks the frames fit their header and port, then allocates the flows; returns 0, or -1 with err set. */
static int
stream_finish(struct zl_stream *s, uint16_t idx, char *err, const char *ctx)
{
	uint32_t i, min_len = UINT32_MAX, max_len = 0;
	const char *msg;

	for (i = 0; i < s->nb_sizes; i++) {
		min_len = RTE_MIN(min_len, (uint32_t)s->sizes[i]);
		max_len = RTE_MAX(max_len, (uint32_t)s->sizes[i]);
	}
	msg = zl_frame_spec_check(&s->spec, min_len);
	if (msg != NULL) {
		snprintf(err, CTL_ERRLEN, "streams[%u]: %s", idx, msg);
		return -1;
	}
	if (max_len > zl.ports[s->port].max_frame) {
		snprintf(err, CTL_ERRLEN, "%sframe size %u B is above port %u's largest frame %u B (zlgen --max-frame)",
			ctx, max_len, s->port, zl.ports[s->port].max_frame);
		return -1;
	}
	s->flows = calloc(s->spec.nb_flows, sizeof(struct zl_flow));
	if (s->flows == NULL) {
		snprintf(err, CTL_ERRLEN, "%sout of memory for %u flows", ctx, s->spec.nb_flows);
		return -1;
	}
	return 0;
}

/* Parses stream object o (streams[idx]) into s, defaults filled in; returns 0, or -1 with err set. */
int
ctl_stream_parse(json_t *o, uint16_t idx, struct zl_stream *s, char *err)
{
	char ctx[32];

	snprintf(ctx, sizeof(ctx), "streams[%u].", idx);
	if (!json_is_object(o)) {
		snprintf(err, CTL_ERRLEN, "streams[%u] must be an object", idx);
		return -1;
	}
	if (stream_known_keys(o, stream_keys, "stream", err, ctx) < 0)
		return -1;
	memset(s, 0, sizeof(*s));
	if (json_object_get(o, "port") == NULL) {
		snprintf(err, CTL_ERRLEN, "%sport is required", ctx);
		return -1;
	}
	if (stream_traffic(o, s, err, ctx) < 0 || stream_header(o, s, err, ctx) < 0 ||
			stream_vxlan(o, s, err, ctx) < 0)
		return -1;
	return stream_finish(s, idx, err, ctx);
}
