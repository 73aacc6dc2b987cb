/* SPDX-License-Identifier: BSD-3-Clause */
/* Test frame templates, per-flow header values and the receive-side parser. */
#include <string.h>

#include "frame.h"

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88A8

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* Sum of the 16-bit big-endian words of len bytes. */
static uint32_t
word_sum(const uint8_t *p, unsigned int len)
{
	uint32_t s = 0;
	unsigned int i;

	for (i = 0; i + 1 < len; i += 2)
		s += get16(p + i);
	return s;
}

uint32_t
zl_frame_min_len(const struct zl_frame_spec *spec)
{
	uint32_t l2 = ZL_ETH_LEN + (spec->vlan >= 0 ? ZL_VLAN_LEN : 0);
	uint32_t need = l2 + ZL_IP_LEN + ZL_UDP_LEN + sizeof(struct zl_sig) + ZL_FCS_LEN;

	/* 64 B, tagged or not: a DUT popping the tag of a 64 B frame leaves 56 B, padded to 60 B on a wire */
	return need < ZL_MIN_FRAME ? ZL_MIN_FRAME : need;
}

const char *
zl_frame_spec_check(const struct zl_frame_spec *spec, uint32_t min_frame)
{
	uint32_t n = spec->nb_flows;

	if (n == 0)
		return "flows must be at least 1";
	if (n > ZL_MAX_FLOWS)
		return "flows must be at most 1048576";
	if (spec->vlan > 4095)
		return "vlan must be -1 (untagged) or 0..4095";
	if (spec->vlan_pcp > 7)
		return "vlan_pcp must be 0..7";
	if (spec->flow_mask == 0 && n > 1)
		return "flows > 1 needs at least one stepped field (src_ip, dst_ip, src_port, dst_port)";
	if ((spec->flow_mask & ZL_FLOW_SRC_IP) && (uint64_t)spec->src_ip + n - 1 > UINT32_MAX)
		return "src_ip + flows - 1 passes 255.255.255.255: lower src_ip or flows";
	if ((spec->flow_mask & ZL_FLOW_DST_IP) && (uint64_t)spec->dst_ip + n - 1 > UINT32_MAX)
		return "dst_ip + flows - 1 passes 255.255.255.255: lower dst_ip or flows";
	if ((spec->flow_mask & ZL_FLOW_SRC_PORT) && (uint32_t)spec->src_port + n - 1 > 65535)
		return "src_port + flows - 1 passes 65535: lower src_port or flows, or step IPs too";
	if ((spec->flow_mask & ZL_FLOW_DST_PORT) && (uint32_t)spec->dst_port + n - 1 > 65535)
		return "dst_port + flows - 1 passes 65535: lower dst_port or flows, or step IPs too";
	if (min_frame < zl_frame_min_len(spec))
		return "frames must be at least 64 bytes";
	return NULL;
}

void
zl_frame_tmpl_init(struct zl_frame_tmpl *t, const struct zl_frame_spec *spec,
		struct zl_flow *flows)
{
	uint8_t *h = t->hdr;
	uint8_t *ip;
	uint32_t i;

	memset(t, 0, sizeof(*t));
	memcpy(h, spec->dst_mac, 6);
	memcpy(h + 6, spec->src_mac, 6);
	if (spec->vlan >= 0) {
		put16(h + 12, ETHERTYPE_VLAN);
		put16(h + 14, (uint16_t)(spec->vlan_pcp << 13 | spec->vlan));
		put16(h + 16, ETHERTYPE_IPV4);
		t->l2_len = ZL_ETH_LEN + ZL_VLAN_LEN;
	} else {
		put16(h + 12, ETHERTYPE_IPV4);
		t->l2_len = ZL_ETH_LEN;
	}
	t->hdr_len = t->l2_len + ZL_IP_LEN + ZL_UDP_LEN;
	h[t->hdr_len] = ZL_MAGIC0;
	h[t->hdr_len + 1] = ZL_MAGIC1;
	h[t->hdr_len + 2] = ZL_FRAME_VERSION;
	h[t->hdr_len + 3] = 0; /* flags */
	ip = h + t->l2_len;
	ip[0] = 0x45;           /* version 4, IHL 5 */
	ip[1] = 0;              /* DSCP/ECN */
	put16(ip + 6, 0x4000);  /* don't fragment */
	ip[8] = 64;             /* TTL */
	ip[9] = 17;             /* UDP */

	t->nb_flows = spec->nb_flows;
	t->flows = flows;
	for (i = 0; i < spec->nb_flows; i++) {
		uint32_t sip = spec->src_ip + ((spec->flow_mask & ZL_FLOW_SRC_IP) ? i : 0);
		uint32_t dip = spec->dst_ip + ((spec->flow_mask & ZL_FLOW_DST_IP) ? i : 0);
		uint16_t sp = (uint16_t)(spec->src_port + ((spec->flow_mask & ZL_FLOW_SRC_PORT) ? i : 0));
		uint16_t dp = (uint16_t)(spec->dst_port + ((spec->flow_mask & ZL_FLOW_DST_PORT) ? i : 0));
		uint8_t b[4];

		put32(ip + 12, sip);
		put32(ip + 16, dip);
		/* total length, ID and checksum are zero in the template: added per frame */
		flows[i].ip_sum = word_sum(ip, ZL_IP_LEN);
		put32(b, sip);
		memcpy(&flows[i].src_ip_be, b, 4);
		put32(b, dip);
		memcpy(&flows[i].dst_ip_be, b, 4);
		put16(b, sp);
		memcpy(&flows[i].src_port_be, b, 2);
		put16(b, dp);
		memcpy(&flows[i].dst_port_be, b, 2);
		flows[i].vx_sport = zl_vxlan_sport(sip, dip, sp, dp);
	}
	memset(ip + 12, 0, 8);
}

enum zl_frame_kind
zl_frame_parse(const uint8_t *buf, uint32_t len, struct zl_frame_info *info)
{
	uint32_t l2 = ZL_ETH_LEN;
	uint16_t et;
	const uint8_t *ip, *udp;
	const struct zl_sig *sig;
	uint32_t ip_len;

	if (len < ZL_ETH_LEN)
		return ZL_FRAME_FOREIGN;
	et = get16(buf + 12);
	/* skip up to two VLAN tags (802.1Q, QinQ) added or kept by the DUT */
	while ((et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ) && l2 < ZL_ETH_LEN + 2 * ZL_VLAN_LEN) {
		if (len < l2 + ZL_VLAN_LEN)
			return ZL_FRAME_FOREIGN;
		et = get16(buf + l2 + 2);
		l2 += ZL_VLAN_LEN;
	}
	if (et != ETHERTYPE_IPV4)
		return ZL_FRAME_FOREIGN;
	if (len < l2 + ZL_IP_LEN + ZL_UDP_LEN + sizeof(*sig))
		return ZL_FRAME_FOREIGN;
	ip = buf + l2;
	if (ip[0] != 0x45 || ip[9] != 17)
		return ZL_FRAME_FOREIGN;
	udp = ip + ZL_IP_LEN;
	sig = (const struct zl_sig *)(udp + ZL_UDP_LEN);
	if (sig->magic[0] != ZL_MAGIC0 || sig->magic[1] != ZL_MAGIC1)
		return ZL_FRAME_FOREIGN;

	info->trial_id = (uint16_t)get16(ip + 4);
	info->stream_id = sig->stream_id;
	info->seq = sig->seq;
	info->tx_tsc = sig->tx_tsc;
	info->l2_len = (uint16_t)l2;
	info->frame_len = len;
	if (sig->version != ZL_FRAME_VERSION)
		return ZL_FRAME_MALFORMED;
	ip_len = get16(ip + 2);
	/*
	 * The frame must be as long as its IP header says: shorter is truncated,
	 * longer only as Ethernet padding up to the 60 B minimum (a DUT that pops
	 * a VLAN tag from a 64 B frame pads it back to 60 B).
	 */
	if (l2 + ip_len > len || (l2 + ip_len < len && len > ZL_MIN_FRAME - ZL_FCS_LEN) ||
			get16(udp + 4) != ip_len - ZL_IP_LEN)
		return ZL_FRAME_MALFORMED;
	if (zl_csum_fold(word_sum(ip, ZL_IP_LEN)) != 0)
		return ZL_FRAME_MALFORMED;
	return ZL_FRAME_OURS;
}

/* The murmur3 32-bit finaliser: every input bit flips each output bit with probability ~1/2. */
static uint32_t
mix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/*
 * RFC 7348 5: the outer source port should be a hash of the inner frame's headers
 * so an underlay spreads the flows (ECMP, RSS), in the dynamic range 49152..65535.
 * The inner Ethernet addresses are the stream's, the same for all its flows, so
 * the 5-tuple alone tells flows apart. The 32-bit hash is scaled into the range
 * as Linux's udp_flow_src_port (include/net/udp.h) does, (hash * span) >> 32,
 * which for a span of 16,384 is the top 14 bits. Run once per flow when a stream
 * is configured; src/zeroloss/gen/frame.py vxlan_src_port is the same function.
 */
uint16_t
zl_vxlan_sport(uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port)
{
	uint32_t h = 17;        /* the protocol, UDP, as the seed */

	h = mix32(h ^ src_ip);
	h = mix32(h ^ dst_ip);
	h = mix32(h ^ ((uint32_t)src_port << 16 | dst_port));
	return (uint16_t)(ZL_VXLAN_SPORT_BASE + (h >> 18));
}

void
zl_vxlan_tmpl_init(struct zl_vxlan_tmpl *t, const struct zl_vxlan_spec *spec)
{
	uint8_t *h = t->hdr;
	uint8_t *ip = h + ZL_ETH_LEN;
	uint8_t *udp = ip + ZL_IP_LEN;
	uint8_t *vx = udp + ZL_UDP_LEN;

	memset(t, 0, sizeof(*t));
	memcpy(h, spec->dst_mac, 6);
	memcpy(h + 6, spec->src_mac, 6);
	put16(h + 12, ETHERTYPE_IPV4);
	ip[0] = 0x45;           /* version 4, IHL 5 */
	put16(ip + 6, 0x4000);  /* don't fragment; ID 0 (atomic datagram, RFC 6864) */
	ip[8] = 64;             /* TTL */
	ip[9] = 17;             /* UDP */
	put32(ip + 12, spec->src_ip);
	put32(ip + 16, spec->dst_ip);
	/* total length and checksum are zero in the template: added per frame */
	t->ip_sum = word_sum(ip, ZL_IP_LEN);
	put16(udp + 2, spec->udp_port);
	/* UDP checksum 0: RFC 7348 5 asks VTEPs to send zero over IPv4 */
	vx[0] = ZL_VXLAN_FLAG_I;
	vx[4] = (uint8_t)(spec->vni >> 16);
	vx[5] = (uint8_t)(spec->vni >> 8);
	vx[6] = (uint8_t)spec->vni;
}

enum zl_vxlan_kind
zl_vxlan_parse(const uint8_t *buf, uint32_t len, const uint16_t *ports, unsigned int nb_ports,
		uint32_t *inner_off, uint32_t *inner_len)
{
	uint32_t l2 = ZL_ETH_LEN, ihl, ip_len, off;
	const uint8_t *ip, *udp;
	uint16_t et, dport;
	unsigned int i;

	if (len < ZL_VXLAN_LEN + ZL_ETH_LEN)
		return ZL_VXLAN_NONE;
	et = get16(buf + 12);
	while ((et == ETHERTYPE_VLAN || et == ETHERTYPE_QINQ) && l2 < ZL_ETH_LEN + 2 * ZL_VLAN_LEN) {
		et = get16(buf + l2 + 2);
		l2 += ZL_VLAN_LEN;
	}
	if (et != ETHERTYPE_IPV4)
		return ZL_VXLAN_NONE;
	ip = buf + l2;
	ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	if ((ip[0] >> 4) != 4 || ihl < ZL_IP_LEN || ip[9] != 17)
		return ZL_VXLAN_NONE;
	off = l2 + ihl + ZL_UDP_LEN + ZL_VXLAN_HDR_LEN;
	if (len < off + ZL_ETH_LEN)
		return ZL_VXLAN_NONE;
	udp = ip + ihl;
	dport = get16(udp + 2);
	for (i = 0; i < nb_ports && ports[i] != dport; i++)
		;
	if (i == nb_ports || !(udp[ZL_UDP_LEN] & ZL_VXLAN_FLAG_I))
		return ZL_VXLAN_NONE;
	ip_len = get16(ip + 2);
	if ((get16(ip + 6) & 0x3fff) != 0 ||              /* a fragment (MF or offset): not reassembled */
			l2 + ip_len > len || ip_len < off - l2 + ZL_ETH_LEN ||
			get16(udp + 4) != ip_len - ihl ||
			zl_csum_fold(word_sum(ip, ihl)) != 0)
		return ZL_VXLAN_BAD;
	*inner_off = off;
	*inner_len = l2 + ip_len - off;
	return ZL_VXLAN_INNER;
}
