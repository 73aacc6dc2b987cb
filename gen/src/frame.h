/* SPDX-License-Identifier: BSD-3-Clause */
/* zlgen on-wire test frame: Ethernet [802.1Q] IPv4 UDP + 14-byte signature, trial id in the IPv4 ID. */
#ifndef ZL_FRAME_H
#define ZL_FRAME_H

#include <assert.h>
#include <stdint.h>
#include <stddef.h>

#define ZL_MAGIC0 0x5A /* 'Z' */
#define ZL_MAGIC1 0x4C /* 'L' */
#define ZL_FRAME_VERSION 2
#define ZL_FCS_LEN 4
#define ZL_ETH_LEN 14
#define ZL_VLAN_LEN 4
#define ZL_IP_LEN 20
#define ZL_UDP_LEN 8
#define ZL_MIN_FRAME 64
#define ZL_MAX_FRAME 9728
#define ZL_MAX_FLOWS (1u << 20)

/*
 * Signature carried right after the UDP header. All multi-byte fields are
 * little-endian (the generator's native order); the Ethernet/IP/UDP headers
 * in front of it are network order as usual.
 *
 * offset size field
 *      0    2 magic      'Z' 'L'
 *      2    1 version    ZL_FRAME_VERSION (2)
 *      3    1 flags      0 (reserved)
 *      4    2 stream_id  index of the stream in the current configuration
 *      6    4 seq        per-stream sequence number, starts at 0 each trial
 *     10    4 tx_tsc     low 32 bits of the TSC when the burst was built
 *
 * The trial id (wraps at 65536) is the IPv4 Identification field, network
 * order: the frames are atomic (DF set, never fragmented), whose ID may hold
 * any value (RFC 6864 4.1), and the IPv4 checksum covers it.
 *
 * 14 bytes fit a 64 B frame with an 802.1Q tag: 18 (Ethernet + tag) + 20 (IPv4)
 * + 8 (UDP) + 14 = 60 B, plus the 4 B FCS added by the wire; untagged, 4 B of
 * padding follow the signature. Version 1 (a 16-byte signature holding the
 * trial id at offset 4) needed 68 B tagged frames; zlgen no longer reads it.
 */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "zlgen writes the signature in native order and assumes a little-endian host"
#endif

struct zl_sig {
	uint8_t magic[2];
	uint8_t version;
	uint8_t flags;
	uint16_t stream_id;
	uint32_t seq;
	uint32_t tx_tsc;
} __attribute__((packed));

static_assert(sizeof(struct zl_sig) == 14, "zl_sig must be 14 bytes on the wire");
static_assert(offsetof(struct zl_sig, version) == 2, "version at offset 2");
static_assert(offsetof(struct zl_sig, stream_id) == 4, "stream_id at offset 4");
static_assert(offsetof(struct zl_sig, seq) == 6, "seq at offset 6");
static_assert(offsetof(struct zl_sig, tx_tsc) == 10, "tx_tsc at offset 10");
static_assert(ZL_ETH_LEN + ZL_VLAN_LEN + ZL_IP_LEN + ZL_UDP_LEN + sizeof(struct zl_sig) + ZL_FCS_LEN
		== ZL_MIN_FRAME, "a 64 B tagged frame carries the signature");

/* Which header fields are stepped to make flows (bit mask). */
#define ZL_FLOW_SRC_IP   0x1
#define ZL_FLOW_DST_IP   0x2
#define ZL_FLOW_SRC_PORT 0x4
#define ZL_FLOW_DST_PORT 0x8

/* Addresses of one stream, host byte order. */
struct zl_frame_spec {
	uint8_t src_mac[6];
	uint8_t dst_mac[6];
	int vlan;              /* -1: untagged, else VLAN id 0..4095 */
	uint8_t vlan_pcp;
	uint32_t src_ip;
	uint32_t dst_ip;
	uint16_t src_port;
	uint16_t dst_port;
	uint32_t nb_flows;     /* >= 1 */
	uint32_t flow_mask;    /* ZL_FLOW_* */
};

/* Per-flow header values, precomputed so the hot path only patches bytes. */
struct zl_flow {
	uint32_t src_ip_be;
	uint32_t dst_ip_be;
	uint16_t src_port_be;
	uint16_t dst_port_be;
	uint32_t ip_sum;       /* IPv4 header word sum without total length, ID and checksum */
	uint16_t vx_sport;     /* outer UDP source port when the stream is VXLAN: zl_vxlan_sport of the above */
};

/* Header template of one stream. */
struct zl_frame_tmpl {
	uint8_t hdr[64];       /* Ethernet [VLAN] IPv4 UDP, signature magic, version and flags; zeros where patched */
	uint16_t l2_len;       /* 14 or 18 */
	uint16_t hdr_len;      /* l2_len + 28: where the signature starts */
	uint32_t nb_flows;
	struct zl_flow *flows; /* nb_flows entries, owned by the caller */
};

/* Result of parsing a received frame. */
enum zl_frame_kind {
	ZL_FRAME_FOREIGN = 0,  /* not a zlgen frame (ARP, LLDP, other traffic) */
	ZL_FRAME_OURS = 1,     /* well-formed zlgen frame */
	ZL_FRAME_MALFORMED = 2 /* zlgen magic but bad version, length or headers */
};

struct zl_frame_info {
	uint16_t trial_id;     /* the IPv4 Identification */
	uint16_t stream_id;
	uint32_t seq;
	uint32_t tx_tsc;
	uint16_t l2_len;
	uint32_t frame_len;    /* bytes received, without FCS */
};

/* Checks a stream's addresses; returns NULL or a message naming the fault. */
const char *zl_frame_spec_check(const struct zl_frame_spec *spec, uint32_t min_frame);

/* Smallest frame (with FCS) that carries the signature for this spec. */
uint32_t zl_frame_min_len(const struct zl_frame_spec *spec);

/* Fills tmpl->hdr and the flows table (caller provides nb_flows entries). */
void zl_frame_tmpl_init(struct zl_frame_tmpl *tmpl, const struct zl_frame_spec *spec,
		struct zl_flow *flows);

/* Folds a 32-bit one's-complement sum into the 16-bit IPv4 checksum value. */
static inline uint16_t
zl_csum_fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * Writes the headers and signature of one frame of wire length frame_len
 * (with FCS) into buf, which holds at least max(64, frame_len - 4) bytes. Only the
 * first 64 bytes are written (the template, then headers and signature patched
 * in place): payload bytes beyond them are left as they are.
 */
static inline void
zl_frame_write(uint8_t *buf, const struct zl_frame_tmpl *t, uint32_t flow,
		uint32_t frame_len, uint16_t trial_id, uint16_t stream_id,
		uint32_t seq, uint32_t tx_tsc)
{
	const struct zl_flow *f = &t->flows[flow];
	uint8_t *ip = buf + t->l2_len;
	uint8_t *udp = ip + ZL_IP_LEN;
	uint32_t ip_len = frame_len - ZL_FCS_LEN - t->l2_len;
	uint32_t udp_len = ip_len - ZL_IP_LEN;
	uint16_t csum;
	struct zl_sig *sig = (struct zl_sig *)(buf + t->hdr_len);

	__builtin_memcpy(buf, t->hdr, 64);
	ip[2] = (uint8_t)(ip_len >> 8);
	ip[3] = (uint8_t)ip_len;
	ip[4] = (uint8_t)(trial_id >> 8);
	ip[5] = (uint8_t)trial_id;
	csum = zl_csum_fold(f->ip_sum + ip_len + trial_id);
	ip[10] = (uint8_t)(csum >> 8);
	ip[11] = (uint8_t)csum;
	__builtin_memcpy(ip + 12, &f->src_ip_be, 4);
	__builtin_memcpy(ip + 16, &f->dst_ip_be, 4);
	__builtin_memcpy(udp, &f->src_port_be, 2);
	__builtin_memcpy(udp + 2, &f->dst_port_be, 2);
	udp[4] = (uint8_t)(udp_len >> 8);
	udp[5] = (uint8_t)udp_len;
	/* UDP checksum 0: "no checksum", allowed for IPv4 (RFC 768) */
	udp[6] = 0;
	udp[7] = 0;
	/* magic, version and flags came with the template */
	sig->stream_id = stream_id;
	sig->seq = seq;
	sig->tx_tsc = tx_tsc;
}

/* Classifies a received frame (len bytes, no FCS, contiguous) and fills info. */
enum zl_frame_kind zl_frame_parse(const uint8_t *buf, uint32_t len,
		struct zl_frame_info *info);

/*
 * VXLAN (RFC 7348): a stream may be sent as a remote VTEP sends it, each frame
 * wrapped in outer Ethernet / IPv4 / UDP / VXLAN headers, ZL_VXLAN_LEN bytes in
 * front of the inner frame (which is built exactly as a plain one). The outer
 * IPv4 header has DF, TTL 64, ID 0 and a valid checksum; the outer UDP source
 * port is a hash of the inner flow's addresses and ports in 49152..65535
 * (zl_vxlan_sport, computed once per flow into the flows table), its checksum 0;
 * the VXLAN header has the I flag and the VNI.
 */
#define ZL_VXLAN_PORT 4789
#define ZL_VXLAN_HDR_LEN 8
#define ZL_VXLAN_LEN (ZL_ETH_LEN + ZL_IP_LEN + ZL_UDP_LEN + ZL_VXLAN_HDR_LEN)
#define ZL_VXLAN_FLAG_I 0x08
#define ZL_VXLAN_MAX_VNI 0xFFFFFFu
#define ZL_VXLAN_SPORT_BASE 49152u

static_assert(ZL_VXLAN_LEN == 50, "VXLAN adds 50 B to a frame");

/* Outer addresses of a VXLAN stream, host byte order. */
struct zl_vxlan_spec {
	uint8_t src_mac[6];
	uint8_t dst_mac[6];
	uint32_t src_ip;
	uint32_t dst_ip;
	uint32_t vni;          /* 0..2^24-1 */
	uint16_t udp_port;     /* outer UDP destination port */
};

/* Outer header template of a VXLAN stream. */
struct zl_vxlan_tmpl {
	uint8_t hdr[ZL_VXLAN_LEN]; /* zeros where patched: IPv4 total length and checksum, UDP source port and length */
	uint32_t ip_sum;           /* outer IPv4 header word sum without total length and checksum */
};

/* Fills the outer header template of a VXLAN stream. */
void zl_vxlan_tmpl_init(struct zl_vxlan_tmpl *t, const struct zl_vxlan_spec *spec);

/*
 * The outer UDP source port of an inner flow (host byte order in and out): a
 * hash of its IPv4 addresses, UDP ports and protocol, in 49152..65535.
 */
uint16_t zl_vxlan_sport(uint32_t src_ip, uint32_t dst_ip, uint16_t src_port, uint16_t dst_port);

/*
 * Writes the outer headers of flow f in front of an inner frame of inner_len
 * bytes (without FCS) that starts at buf + ZL_VXLAN_LEN.
 */
static inline void
zl_vxlan_write(uint8_t *buf, const struct zl_vxlan_tmpl *t, const struct zl_flow *f, uint32_t inner_len)
{
	uint8_t *ip = buf + ZL_ETH_LEN;
	uint8_t *udp = ip + ZL_IP_LEN;
	uint32_t ip_len = inner_len + ZL_IP_LEN + ZL_UDP_LEN + ZL_VXLAN_HDR_LEN;
	uint32_t udp_len = ip_len - ZL_IP_LEN;
	uint16_t sport = f->vx_sport;
	uint16_t csum = zl_csum_fold(t->ip_sum + ip_len);

	__builtin_memcpy(buf, t->hdr, ZL_VXLAN_LEN);
	ip[2] = (uint8_t)(ip_len >> 8);
	ip[3] = (uint8_t)ip_len;
	ip[10] = (uint8_t)(csum >> 8);
	ip[11] = (uint8_t)csum;
	udp[0] = (uint8_t)(sport >> 8);
	udp[1] = (uint8_t)sport;
	udp[4] = (uint8_t)(udp_len >> 8);
	udp[5] = (uint8_t)udp_len;
}

/* Result of looking for a VXLAN header in a received frame. */
enum zl_vxlan_kind {
	ZL_VXLAN_NONE = 0,     /* not IPv4/UDP to one of the VXLAN ports with the I flag */
	ZL_VXLAN_INNER = 1,    /* decapsulated: the inner frame is at *inner_off, *inner_len bytes */
	ZL_VXLAN_BAD = 2       /* VXLAN to our port, but a bad outer checksum or length, or fragmented */
};

/*
 * Looks for an outer Ethernet [up to two VLAN tags] IPv4 (any IHL) UDP VXLAN
 * header whose UDP destination port is one of ports[0..nb_ports-1], in len
 * bytes (no FCS, contiguous). The inner frame's length comes from the outer
 * IPv4 total length (padding after it is ignored).
 */
enum zl_vxlan_kind zl_vxlan_parse(const uint8_t *buf, uint32_t len, const uint16_t *ports,
		unsigned int nb_ports, uint32_t *inner_off, uint32_t *inner_len);

#endif
