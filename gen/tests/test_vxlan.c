/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of VXLAN encapsulation (zlgen as a remote VTEP) and decapsulation on receive. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frame.h"

static const uint16_t std_port[] = { ZL_VXLAN_PORT };

struct vx_stream {
	struct zl_frame_spec spec;
	struct zl_flow flows[64];
	struct zl_frame_tmpl tmpl;
	struct zl_vxlan_spec vspec;
	struct zl_vxlan_tmpl vtmpl;
};

/* A stream of 64 flows (inner VLAN vlan, -1 untagged) to VNI vni on UDP port udp_port. */
static void
vx_stream_init(struct vx_stream *s, int vlan, uint32_t vni, uint16_t udp_port)
{
	static const uint8_t imac_s[6] = { 0x02, 0, 0, 0, 0, 0x01 }, imac_d[6] = { 0x02, 0, 0, 0, 0, 0x02 };
	static const uint8_t omac_s[6] = { 0x02, 0xaa, 0, 0, 0, 0x01 }, omac_d[6] = { 0x02, 0xbb, 0, 0, 0, 0x02 };

	memset(s, 0, sizeof(*s));
	memcpy(s->spec.src_mac, imac_s, 6);
	memcpy(s->spec.dst_mac, imac_d, 6);
	s->spec.vlan = vlan;
	s->spec.src_ip = 198u << 24 | 18u << 16 | 1;
	s->spec.dst_ip = 198u << 24 | 19u << 16 | 1;
	s->spec.src_port = 1024;
	s->spec.dst_port = 1024;
	s->spec.nb_flows = 64;
	s->spec.flow_mask = ZL_FLOW_SRC_IP | ZL_FLOW_DST_IP;
	zl_frame_tmpl_init(&s->tmpl, &s->spec, s->flows);
	memcpy(s->vspec.src_mac, omac_s, 6);
	memcpy(s->vspec.dst_mac, omac_d, 6);
	s->vspec.src_ip = 10u << 24 | 0u << 16 | 0u << 8 | 1;
	s->vspec.dst_ip = 10u << 24 | 0u << 16 | 0u << 8 | 2;
	s->vspec.vni = vni;
	s->vspec.udp_port = udp_port;
	zl_vxlan_tmpl_init(&s->vtmpl, &s->vspec);
}

/* Builds one wrapped frame of inner size frame_len (with FCS) as the worker does; returns its length. */
static uint32_t
vx_build(uint8_t *buf, const struct vx_stream *s, uint32_t flow, uint32_t frame_len, uint16_t trial,
		uint32_t seq)
{
	memset(buf, 0, ZL_VXLAN_LEN + frame_len);
	zl_vxlan_write(buf, &s->vtmpl, &s->flows[flow], frame_len - ZL_FCS_LEN);
	zl_frame_write(buf + ZL_VXLAN_LEN, &s->tmpl, flow, frame_len, trial, 3, seq, 0xabcdef01);
	return ZL_VXLAN_LEN + frame_len - ZL_FCS_LEN;
}

/* Outer headers of every size and a few flows, byte by byte; the inner frame parses as a plain one. */
static void
test_encap(int vlan, uint32_t vni)
{
	static uint8_t buf[ZL_VXLAN_LEN + ZL_MAX_FRAME];
	struct vx_stream s;
	uint32_t size, flow;

	vx_stream_init(&s, vlan, vni, ZL_VXLAN_PORT);
	for (size = 64; size <= ZL_MAX_FRAME; size += size < 200 ? 1 : 397) {
		for (flow = 0; flow < 64; flow += 21) {
			uint32_t len = vx_build(buf, &s, flow, size, 4242, size * 7 + flow);
			const uint8_t *ip = buf + 14, *udp = ip + 20, *vx = udp + 8;
			struct zl_frame_info fi;
			uint32_t off = 0, ilen = 0;

			CHECK_EQ_U64(len, size - 4 + 50);
			CHECK(memcmp(buf, s.vspec.dst_mac, 6) == 0 && memcmp(buf + 6, s.vspec.src_mac, 6) == 0);
			CHECK_EQ_U64(be16_at(buf + 12), 0x0800);
			CHECK_EQ_U64(ip[0], 0x45);
			CHECK_EQ_U64(be16_at(ip + 2), len - 14);
			CHECK_EQ_U64(be16_at(ip + 4), 0);          /* ID 0: atomic */
			CHECK_EQ_U64(be16_at(ip + 6), 0x4000);     /* DF */
			CHECK_EQ_U64(ip[8], 64);
			CHECK_EQ_U64(ip[9], 17);
			CHECK_EQ_U64(be32_at(ip + 12), s.vspec.src_ip);
			CHECK_EQ_U64(be32_at(ip + 16), s.vspec.dst_ip);
			CHECK_EQ_U64(rfc1071(ip, 20), 0);
			CHECK_EQ_U64(be16_at(udp), s.flows[flow].vx_sport);  /* entropy: the flow's hash */
			CHECK(be16_at(udp) >= 49152);
			CHECK_EQ_U64(be16_at(udp + 2), 4789);
			CHECK_EQ_U64(be16_at(udp + 4), len - 14 - 20);
			CHECK_EQ_U64(be16_at(udp + 6), 0);
			CHECK_EQ_U64(vx[0], 0x08);
			CHECK_EQ_U64(vx[1] | vx[2] | vx[3] | vx[7], 0);
			CHECK_EQ_U64(be32_at(vx + 4) >> 8, vni);

			CHECK_EQ_U64(zl_frame_parse(buf, len, &fi), ZL_FRAME_FOREIGN); /* not ours until unwrapped */
			CHECK_EQ_U64(zl_vxlan_parse(buf, len, std_port, 1, &off, &ilen), ZL_VXLAN_INNER);
			CHECK_EQ_U64(off, 50);
			CHECK_EQ_U64(ilen, size - 4);
			CHECK_EQ_U64(zl_frame_parse(buf + off, ilen, &fi), ZL_FRAME_OURS);
			CHECK_EQ_U64(fi.trial_id, 4242);
			CHECK_EQ_U64(fi.stream_id, 3);
			CHECK_EQ_U64(fi.seq, size * 7 + flow);
			CHECK_EQ_U64(fi.tx_tsc, 0xabcdef01);
			CHECK_EQ_U64(fi.l2_len, vlan >= 0 ? 18 : 14);
		}
	}
}

/*
 * The outer source port of RFC 7348 5: a hash of the inner flow's headers in 49152..65535,
 * the same for the same flow, and flows 16,384 apart no longer share one (the old index
 * mod 16,384 aliased them).
 */
static void
test_sport_hash(void)
{
	enum { NB = 1u << 17 };
	static struct zl_flow flows[NB], again[NB];
	static uint8_t seen[16384];
	static uint8_t buf[ZL_VXLAN_LEN + 64];
	struct zl_frame_spec spec;
	struct zl_frame_tmpl t, t2;
	struct vx_stream s;
	uint32_t i, mod = 0, alias = 0, distinct = 0;

	vx_stream_init(&s, -1, 1, ZL_VXLAN_PORT);
	spec = s.spec;
	spec.nb_flows = NB;
	spec.flow_mask = ZL_FLOW_SRC_IP;
	zl_frame_tmpl_init(&t, &spec, flows);
	zl_frame_tmpl_init(&t2, &spec, again);
	for (i = 0; i < NB; i++) {
		uint16_t p = flows[i].vx_sport;

		CHECK(p >= 49152);
		CHECK_EQ_U64(p, again[i].vx_sport);
		CHECK_EQ_U64(p, zl_vxlan_sport(spec.src_ip + i, spec.dst_ip, spec.src_port, spec.dst_port));
		mod += p == 49152 + (i & 16383u);
		if (i >= 16384)
			alias += p == flows[i - 16384].vx_sport;
		if (!seen[p - 49152]) {
			seen[p - 49152] = 1;
			distinct++;
		}
	}
	/* a uniform hash puts 1 flow in 16,384 on any one port: about 8 of 131,072 by chance */
	CHECK(mod < 64);
	CHECK(alias < 64);
	/* 8 flows a port on average: all but ~e^-8 of the 16,384 ports are used */
	CHECK(distinct > 16300);
	/* the frame carries its flow's port; only the inner headers choose it, not the index */
	zl_vxlan_write(buf, &s.vtmpl, &flows[16384 + 5], 60);
	CHECK_EQ_U64(be16_at(buf + 34), flows[16384 + 5].vx_sport);
	CHECK(flows[16384 + 5].vx_sport != 49152 + 5 || flows[5].vx_sport != 49152 + 5);
	CHECK_EQ_U64(zl_vxlan_sport(1, 2, 3, 4), zl_vxlan_sport(1, 2, 3, 4));
	CHECK(zl_vxlan_sport(1, 2, 3, 4) != zl_vxlan_sport(2, 1, 3, 4) ||
	      zl_vxlan_sport(1, 2, 3, 4) != zl_vxlan_sport(1, 2, 4, 3));
}

/* What a received frame is taken for: other ports, flags, fragments, tags, options, bad headers. */
static void
test_decap_cases(void)
{
	static uint8_t buf[256], b2[256];
	static const uint16_t ports2[] = { ZL_VXLAN_PORT, 8472 };
	struct vx_stream s;
	struct zl_frame_info fi;
	uint32_t len, off, ilen;

	vx_stream_init(&s, -1, 5001, 8472);
	len = vx_build(buf, &s, 7, 64, 9, 77);
	CHECK_EQ_U64(len, 110);
	CHECK_EQ_U64(be16_at(buf + 36), 8472);
	/* a port zlgen does not listen on: not VXLAN (foreign) */
	CHECK_EQ_U64(zl_vxlan_parse(buf, len, std_port, 1, &off, &ilen), ZL_VXLAN_NONE);
	CHECK_EQ_U64(zl_vxlan_parse(buf, len, ports2, 2, &off, &ilen), ZL_VXLAN_INNER);
	CHECK_EQ_U64(zl_vxlan_parse(buf, len, ports2, 0, &off, &ilen), ZL_VXLAN_NONE);

	vx_stream_init(&s, 100, 1, ZL_VXLAN_PORT);
	len = vx_build(buf, &s, 0, 64, 9, 77);
	/* I flag clear: not VXLAN */
	memcpy(b2, buf, len);
	b2[42] = 0;
	CHECK_EQ_U64(zl_vxlan_parse(b2, len, std_port, 1, &off, &ilen), ZL_VXLAN_NONE);
	/* bad outer checksum */
	memcpy(b2, buf, len);
	b2[14 + 8] = 63;
	CHECK_EQ_U64(zl_vxlan_parse(b2, len, std_port, 1, &off, &ilen), ZL_VXLAN_BAD);
	/* a fragment */
	memcpy(b2, buf, len);
	b2[14 + 6] = 0x20; /* MF, DF cleared: the checksum is off too, the fragment test comes first */
	CHECK_EQ_U64(zl_vxlan_parse(b2, len, std_port, 1, &off, &ilen), ZL_VXLAN_BAD);
	/* truncated: the outer total length says more than arrived */
	CHECK_EQ_U64(zl_vxlan_parse(buf, len - 1, std_port, 1, &off, &ilen), ZL_VXLAN_BAD);
	/* too short for an inner Ethernet header: not VXLAN */
	CHECK_EQ_U64(zl_vxlan_parse(buf, 50 + 13, std_port, 1, &off, &ilen), ZL_VXLAN_NONE);
	/* UDP length disagreeing with IPv4 */
	memcpy(b2, buf, len);
	b2[14 + 20 + 5]++;
	CHECK_EQ_U64(zl_vxlan_parse(b2, len, std_port, 1, &off, &ilen), ZL_VXLAN_BAD);
	/* padding after the outer datagram is not part of the inner frame */
	memcpy(b2, buf, len);
	memset(b2 + len, 0xee, 6);
	CHECK_EQ_U64(zl_vxlan_parse(b2, len + 6, std_port, 1, &off, &ilen), ZL_VXLAN_INNER);
	CHECK_EQ_U64(ilen, 60);

	/* an outer 802.1Q tag (a tagged underlay) and IPv4 options: the inner frame is still found */
	memset(b2, 0, sizeof(b2));
	memcpy(b2, buf, 12);
	b2[12] = 0x81; b2[13] = 0x00; b2[14] = 0x00; b2[15] = 0x0a; /* VLAN 10 */
	memcpy(b2 + 16, buf + 12, 2);
	memcpy(b2 + 18, buf + 14, 20);
	b2[18] = 0x46;                     /* IHL 6: one word of options (zeros: end of list) */
	b2[18 + 3] += 4;                   /* total length + 4 */
	b2[18 + 10] = b2[18 + 11] = 0;
	{
		uint16_t c = rfc1071(b2 + 18, 24);

		b2[18 + 10] = (uint8_t)(c >> 8);
		b2[18 + 11] = (uint8_t)c;
	}
	memcpy(b2 + 18 + 24, buf + 34, len - 34);
	CHECK_EQ_U64(zl_vxlan_parse(b2, len + 8, std_port, 1, &off, &ilen), ZL_VXLAN_INNER);
	CHECK_EQ_U64(off, 18 + 24 + 16);
	CHECK_EQ_U64(ilen, 60);
	CHECK_EQ_U64(zl_frame_parse(b2 + off, ilen, &fi), ZL_FRAME_OURS);
	CHECK_EQ_U64(fi.seq, 77);
	CHECK_EQ_U64(fi.l2_len, 18);       /* the inner tag of the stream */

	/* a plain zlgen frame and an ARP frame are not VXLAN */
	CHECK_EQ_U64(zl_vxlan_parse(buf + 50, 60, std_port, 1, &off, &ilen), ZL_VXLAN_NONE);
	memset(b2, 0xff, 60);
	b2[12] = 0x08; b2[13] = 0x06;
	CHECK_EQ_U64(zl_vxlan_parse(b2, 60, std_port, 1, &off, &ilen), ZL_VXLAN_NONE);
	/* a VXLAN frame whose inner frame is not zlgen's: decapsulated, then foreign */
	memcpy(b2, buf, len);
	b2[50 + 18 + 28] = 'X';
	CHECK_EQ_U64(zl_vxlan_parse(b2, len, std_port, 1, &off, &ilen), ZL_VXLAN_INNER);
	CHECK_EQ_U64(zl_frame_parse(b2 + off, ilen, &fi), ZL_FRAME_FOREIGN);
}

/* The template: VNI bounds and the fields left for each frame. */
static void
test_template(void)
{
	struct vx_stream s;

	vx_stream_init(&s, -1, ZL_VXLAN_MAX_VNI, 4789);
	CHECK_EQ_U64(s.vtmpl.hdr[46], 0xff);
	CHECK_EQ_U64(s.vtmpl.hdr[47], 0xff);
	CHECK_EQ_U64(s.vtmpl.hdr[48], 0xff);
	CHECK_EQ_U64(s.vtmpl.hdr[49], 0);   /* reserved */
	CHECK_EQ_U64(be16_at(s.vtmpl.hdr + 16), 0);  /* total length patched per frame */
	CHECK_EQ_U64(be16_at(s.vtmpl.hdr + 24), 0);  /* checksum patched per frame */
	vx_stream_init(&s, -1, 0, 4789);
	CHECK_EQ_U64(be32_at(s.vtmpl.hdr + 46) >> 8, 0);
}

/* Runs the VXLAN tests and prints the summary line. */
int
main(void)
{
	test_template();
	test_encap(-1, 5000);
	test_encap(100, 0xABCDEF);
	test_decap_cases();
	test_sport_hash();
	return check_report();
}
