/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests of the test frame: templates, per-frame headers, signature, parser. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "frame.h"

struct spec_case {
	const char *name;
	struct zl_frame_spec spec;
};

/* Reads a little-endian 16-bit value. */
static uint32_t
le16_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

/* Reads a little-endian 32-bit value. */
static uint32_t
le32_at(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Allocates a zeroed frame buffer of max(64, frame_len - 4) bytes. */
static uint8_t *
frame_buf(uint32_t frame_len, size_t *size)
{
	size_t n = frame_len - 4 < 64 ? 64 : frame_len - 4;
	uint8_t *b = calloc(1, n);

	if (b == NULL) {
		perror("calloc");
		exit(2);
	}
	*size = n;
	return b;
}

/* Sets a MAC from six bytes. */
static void
set_mac(uint8_t *m, uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t e, uint8_t f)
{
	m[0] = a; m[1] = b; m[2] = c; m[3] = d; m[4] = e; m[5] = f;
}

/* Host order IPv4 address from four octets. */
static uint32_t
ipv4(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return a << 24 | b << 16 | c << 8 | d;
}

/* Checks every byte of one written frame against the spec, flow and signature values. */
static void
check_frame(const uint8_t *b, size_t size, const struct zl_frame_spec *sp, uint32_t flow,
		uint32_t frame_len, uint16_t trial, uint16_t stream, uint32_t seq, uint32_t tsc)
{
	uint32_t l2 = sp->vlan >= 0 ? 18 : 14;
	const uint8_t *ip = b + l2, *udp = ip + 20, *sig = udp + 8;
	uint32_t ip_len = frame_len - 4 - l2;
	uint32_t sip = sp->src_ip + ((sp->flow_mask & ZL_FLOW_SRC_IP) ? flow : 0);
	uint32_t dip = sp->dst_ip + ((sp->flow_mask & ZL_FLOW_DST_IP) ? flow : 0);
	uint32_t sport = sp->src_port + ((sp->flow_mask & ZL_FLOW_SRC_PORT) ? flow : 0);
	uint32_t dport = sp->dst_port + ((sp->flow_mask & ZL_FLOW_DST_PORT) ? flow : 0);
	uint8_t hdr[20];
	size_t i;
	int rest_zero = 1;

	CHECK(memcmp(b, sp->dst_mac, 6) == 0);
	CHECK(memcmp(b + 6, sp->src_mac, 6) == 0);
	if (sp->vlan >= 0) {
		CHECK_EQ_U64(be16_at(b + 12), 0x8100);
		CHECK_EQ_U64(be16_at(b + 14) >> 13, sp->vlan_pcp);
		CHECK_EQ_U64((be16_at(b + 14) >> 12) & 1, 0); /* DEI */
		CHECK_EQ_U64(be16_at(b + 14) & 0xfff, (uint32_t)sp->vlan);
		CHECK_EQ_U64(be16_at(b + 16), 0x0800);
	} else {
		CHECK_EQ_U64(be16_at(b + 12), 0x0800);
	}
	CHECK_EQ_U64(ip[0], 0x45);
	CHECK_EQ_U64(ip[1], 0);
	CHECK_EQ_U64(be16_at(ip + 2), ip_len);
	CHECK_EQ_U64(be16_at(ip + 4), trial);     /* identification: the trial id */
	CHECK_EQ_U64(be16_at(ip + 6), 0x4000);    /* DF, offset 0 */
	CHECK_EQ_U64(ip[8], 64);
	CHECK_EQ_U64(ip[9], 17);
	CHECK_EQ_U64(be32_at(ip + 12), sip);
	CHECK_EQ_U64(be32_at(ip + 16), dip);
	/* the checksum verifies, and equals the one computed over a zeroed field */
	CHECK_EQ_U64(rfc1071(ip, 20), 0);
	memcpy(hdr, ip, 20);
	hdr[10] = hdr[11] = 0;
	CHECK_EQ_U64(be16_at(ip + 10), rfc1071(hdr, 20));
	CHECK_EQ_U64(be16_at(udp), sport & 0xffff);
	CHECK_EQ_U64(be16_at(udp + 2), dport & 0xffff);
	CHECK_EQ_U64(be16_at(udp + 4), ip_len - 20);
	CHECK_EQ_U64(be16_at(udp + 6), 0);
	/* signature (version 2), at hdr_len = l2 + 28 */
	CHECK_EQ_U64(sig[0], 'Z');
	CHECK_EQ_U64(sig[1], 'L');
	CHECK_EQ_U64(sig[2], 2);
	CHECK_EQ_U64(sig[3], 0);
	CHECK_EQ_U64(le16_at(sig + 4), stream);
	CHECK_EQ_U64(le32_at(sig + 6), seq);
	CHECK_EQ_U64(le32_at(sig + 10), tsc);
	for (i = l2 + 28 + 14; i < size; i++)
		if (b[i] != 0)
			rest_zero = 0;
	CHECK(rest_zero);
}

/* Writes frames of every size for a few flows of one spec, checks them and parses them back. */
static void
test_spec(const struct spec_case *c)
{
	/* tagged or not, from 64 B */
	static const uint32_t sizes[] = { 64, 65, 128, 1518, 9000, 9728 };
	const struct zl_frame_spec *sp = &c->spec;
	struct zl_flow *flows = calloc(sp->nb_flows, sizeof(*flows));
	struct zl_frame_tmpl t;
	uint32_t picks[5], s, k, f;
	unsigned long before = check_fail;

	if (flows == NULL)
		exit(2);
	CHECK(zl_frame_spec_check(sp, sizes[0]) == NULL);
	memset(&t, 0xa5, sizeof(t));
	zl_frame_tmpl_init(&t, sp, flows);
	CHECK_EQ_U64(t.l2_len, sp->vlan >= 0 ? 18 : 14);
	CHECK_EQ_U64(t.hdr_len, sp->vlan >= 0 ? 46 : 42);
	CHECK_EQ_U64(t.nb_flows, sp->nb_flows);
	CHECK(t.flows == flows);

	picks[0] = 0;
	picks[1] = 1 % sp->nb_flows;
	picks[2] = sp->nb_flows / 2;
	picks[3] = sp->nb_flows - 2 < sp->nb_flows ? sp->nb_flows - 2 : 0;
	picks[4] = sp->nb_flows - 1;
	for (s = 0; s < 6; s++) {
		for (k = 0; k < 5; k++) {
			uint32_t len = sizes[s];
			uint16_t trial = (uint16_t)(0xbe00 + s);
			uint16_t stream = (uint16_t)(0x1200 + k);
			uint32_t seq = 0xdead0000u + s * 16 + k;
			uint32_t tsc = 0x01234567u ^ (s << 24) ^ k;
			struct zl_frame_info info;
			size_t size;
			uint8_t *b = frame_buf(len, &size);

			zl_frame_write(b, &t, picks[k], len, trial, stream, seq, tsc);
			check_frame(b, size, sp, picks[k], len, trial, stream, seq, tsc);
			memset(&info, 0, sizeof(info));
			CHECK_EQ_U64(zl_frame_parse(b, len - 4, &info), ZL_FRAME_OURS);
			CHECK_EQ_U64(info.trial_id, trial);
			CHECK_EQ_U64(info.stream_id, stream);
			CHECK_EQ_U64(info.seq, seq);
			CHECK_EQ_U64(info.tx_tsc, tsc);
			CHECK_EQ_U64(info.l2_len, t.l2_len);
			CHECK_EQ_U64(info.frame_len, len - 4);
			free(b);
		}
	}
	/* every flow at the smallest size; the buffer is reused (not re-zeroed) */
	{
		size_t size;
		uint8_t *b = frame_buf(sizes[0], &size);

		for (f = 0; f < sp->nb_flows; f++) {
			zl_frame_write(b, &t, f, sizes[0], 7, 3, f, ~f);
			check_frame(b, size, sp, f, sizes[0], 7, 3, f, ~f);
		}
		free(b);
	}
	/* payload bytes past the first 64 are left as they are */
	{
		uint8_t *b = malloc(1514);
		size_t i;
		int kept = 1;

		if (b == NULL)
			exit(2);
		memset(b, 0xa5, 1514);
		zl_frame_write(b, &t, picks[4], 1518, 1, 2, 3, 4);
		for (i = 64; i < 1514; i++)
			if (b[i] != 0xa5)
				kept = 0;
		CHECK(kept);
		CHECK_EQ_U64(zl_frame_parse(b, 1514, &(struct zl_frame_info){ 0 }), ZL_FRAME_OURS);
		free(b);
	}
	free(flows);
	if (check_fail != before)
		fprintf(stderr, "  (failures above in spec %s)\n", c->name);
}

/* Malformed, foreign and DUT-modified frames. */
static void
test_parse_cases(void)
{
	struct zl_frame_spec sp, spv;
	struct zl_flow fl[1], flv[1];
	struct zl_frame_tmpl t, tv;
	struct zl_frame_info info;
	uint8_t b[200], c[200];

	memset(&sp, 0, sizeof(sp));
	set_mac(sp.src_mac, 0x02, 0, 0, 0, 0, 0x01);
	set_mac(sp.dst_mac, 0x02, 0, 0, 0, 0, 0x02);
	sp.vlan = -1;
	sp.src_ip = ipv4(198, 18, 0, 1);
	sp.dst_ip = ipv4(198, 19, 0, 1);
	sp.src_port = 1024;
	sp.dst_port = 1024;
	sp.nb_flows = 1;
	sp.flow_mask = ZL_FLOW_SRC_IP;
	spv = sp;
	spv.vlan = 42;
	spv.vlan_pcp = 3;
	zl_frame_tmpl_init(&t, &sp, fl);
	zl_frame_tmpl_init(&tv, &spv, flv);

	/* reference: 128 B frame, 124 B in the buffer */
	memset(b, 0, sizeof(b));
	zl_frame_write(b, &t, 0, 128, 9, 5, 77, 88);
	CHECK_EQ_U64(zl_frame_parse(b, 124, &info), ZL_FRAME_OURS);

	/* truncated: shorter than the IP total length */
	CHECK_EQ_U64(zl_frame_parse(b, 123, &info), ZL_FRAME_MALFORMED);
	CHECK_EQ_U64(zl_frame_parse(b, 100, &info), ZL_FRAME_MALFORMED);
	CHECK_EQ_U64(zl_frame_parse(b, 60, &info), ZL_FRAME_MALFORMED);
	CHECK_EQ_U64(zl_frame_parse(b, 58, &info), ZL_FRAME_MALFORMED);
	/* longer than the IP total length, and not mere padding to 60 B */
	CHECK_EQ_U64(zl_frame_parse(b, 125, &info), ZL_FRAME_MALFORMED);
	CHECK_EQ_U64(zl_frame_parse(b, 190, &info), ZL_FRAME_MALFORMED);

	/* wrong version byte: ours by magic, but malformed; fields still reported */
	memcpy(c, b, sizeof(c));
	c[42 + 2] = 3;
	memset(&info, 0, sizeof(info));
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_MALFORMED);
	CHECK_EQ_U64(info.trial_id, 9);
	CHECK_EQ_U64(info.seq, 77);
	c[42 + 2] = 0;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_MALFORMED);
	c[42 + 2] = 1;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_MALFORMED);
	/* a version 1 frame (16-byte signature, trial id in it: tests/fixtures/frame_v1_64B_flow3.hex) */
	{
		static const char v1[] = "02000000000202000000000108004500002e000040004011ae94c6120004c6130001"
			"04000803001a00005a4c010007000200ffffffff785634120000";
		unsigned int k, x;

		for (k = 0; k < 60; k++) {
			sscanf(v1 + 2 * k, "%2x", &x);
			c[k] = (uint8_t)x;
		}
		CHECK_EQ_U64(rfc1071(c + 14, 20), 0);
		CHECK_EQ_U64(zl_frame_parse(c, 60, &info), ZL_FRAME_MALFORMED);
	}

	/* corrupted IP checksum, and a header byte changed under a valid checksum */
	memcpy(c, b, sizeof(c));
	c[14 + 11] ^= 0x01;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_MALFORMED);
	memcpy(c, b, sizeof(c));
	c[14 + 8] = 63; /* TTL decremented without a checksum update */
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_MALFORMED);
	/* a router's TTL decrement with the checksum fixed (RFC 1624) stays ours */
	{
		uint8_t h[20];

		memcpy(c, b, sizeof(c));
		c[14 + 8] = 63;
		memcpy(h, c + 14, 20);
		h[10] = h[11] = 0;
		c[14 + 10] = (uint8_t)(rfc1071(h, 20) >> 8);
		c[14 + 11] = (uint8_t)rfc1071(h, 20);
		CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_OURS);
	}
	/* UDP length disagreeing with the IP length */
	memcpy(c, b, sizeof(c));
	c[34 + 5] ^= 0x04;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_MALFORMED);

	/* wrong magic */
	memcpy(c, b, sizeof(c));
	c[42] = 'X';
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_FOREIGN);
	memcpy(c, b, sizeof(c));
	c[43] = 'l';
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_FOREIGN);
	/* ARP, IPv6 ethertypes */
	memcpy(c, b, sizeof(c));
	c[12] = 0x08;
	c[13] = 0x06;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_FOREIGN);
	c[12] = 0x86;
	c[13] = 0xdd;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_FOREIGN);
	/* not UDP, IP options */
	memcpy(c, b, sizeof(c));
	c[14 + 9] = 6;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_FOREIGN);
	memcpy(c, b, sizeof(c));
	c[14] = 0x46;
	CHECK_EQ_U64(zl_frame_parse(c, 124, &info), ZL_FRAME_FOREIGN);
	/* too short to hold the headers and the signature */
	CHECK_EQ_U64(zl_frame_parse(b, 0, &info), ZL_FRAME_FOREIGN);
	CHECK_EQ_U64(zl_frame_parse(b, 13, &info), ZL_FRAME_FOREIGN);
	CHECK_EQ_U64(zl_frame_parse(b, 14, &info), ZL_FRAME_FOREIGN);
	CHECK_EQ_U64(zl_frame_parse(b, 55, &info), ZL_FRAME_FOREIGN);
	CHECK_EQ_U64(zl_frame_parse(b, 56, &info), ZL_FRAME_MALFORMED); /* holds the signature, truncated */
	memcpy(c, b, sizeof(c));
	c[12] = 0x81;
	c[13] = 0x00;
	CHECK_EQ_U64(zl_frame_parse(c, 17, &info), ZL_FRAME_FOREIGN);

	/* tagged 68 B frame whose tag the DUT popped: 64 B on the wire, 60 B, no padding */
	memset(b, 0, sizeof(b));
	zl_frame_write(b, &tv, 0, 68, 1, 2, 3, 4);
	CHECK_EQ_U64(zl_frame_parse(b, 64, &info), ZL_FRAME_OURS);
	memcpy(c, b, 12);
	memcpy(c + 12, b + 16, 64 - 16);
	CHECK_EQ_U64(zl_frame_parse(c, 60, &info), ZL_FRAME_OURS);
	CHECK_EQ_U64(info.l2_len, 14);
	CHECK_EQ_U64(info.seq, 3);
	/* a tagged 64 B frame: the signature ends where the FCS begins */
	memset(b, 0xa5, sizeof(b));
	zl_frame_write(b, &tv, 0, 64, 0xbeef, 2, 5, 4);
	memset(&info, 0, sizeof(info));
	CHECK_EQ_U64(zl_frame_parse(b, 60, &info), ZL_FRAME_OURS);
	CHECK_EQ_U64(info.trial_id, 0xbeef);
	CHECK_EQ_U64(info.stream_id, 2);
	CHECK_EQ_U64(info.seq, 5);
	CHECK_EQ_U64(info.tx_tsc, 4);
	CHECK_EQ_U64(info.l2_len, 18);
	CHECK_EQ_U64(info.frame_len, 60);
	CHECK_EQ_U64(be16_at(b + 18 + 2), 42);     /* IP total length */
	CHECK_EQ_U64(be16_at(b + 18 + 20 + 4), 22); /* UDP length */
	CHECK_EQ_U64(rfc1071(b + 18, 20), 0);
	CHECK_EQ_U64(zl_frame_parse(b, 59, &info), ZL_FRAME_FOREIGN); /* too short for the signature */
	/* its tag popped by the DUT: 56 B (a virtio or memif port), or padded back to 60 B (a wire) */
	memset(c, 0xa5, sizeof(c));
	memcpy(c, b, 12);
	memcpy(c + 12, b + 16, 60 - 16);
	CHECK_EQ_U64(zl_frame_parse(c, 56, &info), ZL_FRAME_OURS);
	CHECK_EQ_U64(info.l2_len, 14);
	CHECK_EQ_U64(info.trial_id, 0xbeef);
	CHECK_EQ_U64(info.seq, 5);
	c[56] = c[57] = c[58] = c[59] = 0; /* Ethernet padding */
	CHECK_EQ_U64(zl_frame_parse(c, 60, &info), ZL_FRAME_OURS);
	CHECK_EQ_U64(info.seq, 5);
	CHECK_EQ_U64(info.frame_len, 60);
	/* padding past 60 B is not padding */
	CHECK_EQ_U64(zl_frame_parse(c, 62, &info), ZL_FRAME_MALFORMED);

	/* the DUT pushes an 802.1Q tag onto an untagged frame: 128 B on the wire becomes 132 B */
	memset(b, 0, sizeof(b));
	zl_frame_write(b, &t, 0, 128, 11, 12, 13, 14);
	memcpy(c, b, 12);
	c[12] = 0x81;
	c[13] = 0x00;
	c[14] = 0x00;
	c[15] = 0x64;
	memcpy(c + 16, b + 12, 124 - 12);
	memset(&info, 0, sizeof(info));
	CHECK_EQ_U64(zl_frame_parse(c, 128, &info), ZL_FRAME_OURS);
	CHECK_EQ_U64(info.l2_len, 18);
	CHECK_EQ_U64(info.trial_id, 11);
	CHECK_EQ_U64(info.stream_id, 12);
	CHECK_EQ_U64(info.seq, 13);
	CHECK_EQ_U64(info.tx_tsc, 14);
	CHECK_EQ_U64(info.frame_len, 128);
	/* and a QinQ outer tag on top: l2 is 22 */
	memcpy(b, c, 12);
	b[12] = 0x88;
	b[13] = 0xa8;
	b[14] = 0x00;
	b[15] = 0x07;
	memcpy(b + 16, c + 12, 128 - 12);
	CHECK_EQ_U64(zl_frame_parse(b, 132, &info), ZL_FRAME_OURS);
	CHECK_EQ_U64(info.l2_len, 22);
	/* a third tag is more than the parser looks through */
	memcpy(c, b, 12);
	c[12] = 0x81;
	c[13] = 0x00;
	c[14] = 0x00;
	c[15] = 0x08;
	memcpy(c + 16, b + 12, 132 - 12);
	CHECK_EQ_U64(zl_frame_parse(c, 136, &info), ZL_FRAME_FOREIGN);
}

/* Every trial id in the IPv4 ID, on the flows with the largest header sums: checksum and parse. */
static void
test_trial_ids(const struct zl_frame_spec *sp)
{
	struct zl_flow *flows = calloc(sp->nb_flows, sizeof(*flows));
	struct zl_frame_tmpl t;
	struct zl_frame_info info;
	uint8_t b[64];
	uint32_t trial, flow, bad = 0;

	if (flows == NULL)
		exit(2);
	zl_frame_tmpl_init(&t, sp, flows);
	for (flow = sp->nb_flows - 4; flow < sp->nb_flows; flow++) {
		for (trial = 0; trial < 65536; trial++) {
			zl_frame_write(b, &t, flow, 64, (uint16_t)trial, 1, trial, 0);
			if (rfc1071(b + 14, 20) != 0 || zl_frame_parse(b, 60, &info) != ZL_FRAME_OURS ||
					info.trial_id != trial || be16_at(b + 18) != trial)
				bad++;
		}
	}
	CHECK_EQ_U64(bad, 0);
	free(flows);
}

/* Spec validation and minimum frame lengths. */
static void
test_spec_check(void)
{
	struct zl_frame_spec sp;

	memset(&sp, 0, sizeof(sp));
	sp.vlan = -1;
	sp.src_ip = ipv4(198, 18, 0, 1);
	sp.dst_ip = ipv4(198, 19, 0, 1);
	sp.src_port = 1024;
	sp.dst_port = 1024;
	sp.nb_flows = 1;
	sp.flow_mask = ZL_FLOW_SRC_IP | ZL_FLOW_DST_IP;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	CHECK(zl_frame_spec_check(&sp, 9728) == NULL);
	CHECK(zl_frame_spec_check(&sp, 63) != NULL);
	CHECK_EQ_U64(zl_frame_min_len(&sp), 64);

	sp.nb_flows = 0;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.nb_flows = ZL_MAX_FLOWS;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.nb_flows = ZL_MAX_FLOWS + 1;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);

	/* flows > 1 with nothing to step */
	sp.nb_flows = 2;
	sp.flow_mask = 0;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.nb_flows = 1;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);

	/* UDP source port stepping past 65535 */
	sp.flow_mask = ZL_FLOW_SRC_PORT;
	sp.src_port = 65000;
	sp.nb_flows = 1000;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.nb_flows = 536; /* 65000 + 535 = 65535 */
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.nb_flows = 537;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	/* the same port is fine when only the IPs step */
	sp.flow_mask = ZL_FLOW_SRC_IP;
	sp.nb_flows = 1000;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.src_port = 1024;

	/* destination port */
	sp.flow_mask = ZL_FLOW_DST_PORT;
	sp.dst_port = 65535;
	sp.nb_flows = 1;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.nb_flows = 2;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.dst_port = 1024;

	/* destination IP stepping past 255.255.255.255 */
	sp.flow_mask = ZL_FLOW_DST_IP;
	sp.dst_ip = ipv4(255, 255, 255, 250);
	sp.nb_flows = 10;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.nb_flows = 6;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.nb_flows = 7;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	/* source IP, with the largest flow count */
	sp.flow_mask = ZL_FLOW_SRC_IP;
	sp.dst_ip = ipv4(198, 19, 0, 1);
	sp.src_ip = UINT32_MAX - ZL_MAX_FLOWS + 1;
	sp.nb_flows = ZL_MAX_FLOWS;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.src_ip++;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.src_ip = ipv4(198, 18, 0, 1);
	sp.nb_flows = 1;

	/* VLAN id and priority */
	sp.vlan = 4096;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.vlan = 4095;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.vlan = 0;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.vlan_pcp = 7;
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	sp.vlan_pcp = 8;
	CHECK(zl_frame_spec_check(&sp, 64) != NULL);
	sp.vlan_pcp = 0;
	/* a tagged stream takes 64 B frames, as every tester sends them */
	CHECK(zl_frame_spec_check(&sp, 63) != NULL);
	CHECK(zl_frame_spec_check(&sp, 64) == NULL);
	CHECK_EQ_U64(zl_frame_min_len(&sp), 64);
	sp.vlan = 100;
	CHECK_EQ_U64(zl_frame_min_len(&sp), 64);
	sp.vlan = -1;
	CHECK_EQ_U64(zl_frame_min_len(&sp), 64);
}

/* Runs the frame tests and prints the summary line. */
int
main(void)
{
	struct spec_case cases[6];
	unsigned int i;

	memset(cases, 0, sizeof(cases));

	cases[0].name = "untagged, 1000 flows stepping both IPs";
	set_mac(cases[0].spec.src_mac, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01);
	set_mac(cases[0].spec.dst_mac, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02);
	cases[0].spec.vlan = -1;
	cases[0].spec.src_ip = ipv4(198, 18, 0, 1);
	cases[0].spec.dst_ip = ipv4(198, 19, 1, 1);
	cases[0].spec.src_port = 1024;
	cases[0].spec.dst_port = 2048;
	cases[0].spec.nb_flows = 1000;
	cases[0].spec.flow_mask = ZL_FLOW_SRC_IP | ZL_FLOW_DST_IP;

	cases[1].name = "VLAN 100 pcp 5, 300 flows stepping both ports";
	set_mac(cases[1].spec.src_mac, 0xa0, 0x36, 0x9f, 0x12, 0x34, 0x56);
	set_mac(cases[1].spec.dst_mac, 0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa);
	cases[1].spec.vlan = 100;
	cases[1].spec.vlan_pcp = 5;
	cases[1].spec.src_ip = ipv4(10, 1, 2, 3);
	cases[1].spec.dst_ip = ipv4(10, 4, 5, 6);
	cases[1].spec.src_port = 5000;
	cases[1].spec.dst_port = 65000;
	cases[1].spec.nb_flows = 300;
	cases[1].spec.flow_mask = ZL_FLOW_SRC_PORT | ZL_FLOW_DST_PORT;

	cases[2].name = "VLAN 0 pcp 0, one flow";
	set_mac(cases[2].spec.src_mac, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00);
	set_mac(cases[2].spec.dst_mac, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	cases[2].spec.vlan = 0;
	cases[2].spec.src_ip = ipv4(0, 0, 0, 0);
	cases[2].spec.dst_ip = ipv4(255, 255, 255, 255);
	cases[2].spec.src_port = 0;
	cases[2].spec.dst_port = 65535;
	cases[2].spec.nb_flows = 1;
	cases[2].spec.flow_mask = 0;

	cases[3].name = "untagged, 4096 flows stepping all four fields across octets";
	set_mac(cases[3].spec.src_mac, 0x02, 0x11, 0x22, 0x33, 0x44, 0x55);
	set_mac(cases[3].spec.dst_mac, 0x02, 0x66, 0x77, 0x88, 0x99, 0xaa);
	cases[3].spec.vlan = -1;
	cases[3].spec.src_ip = ipv4(10, 0, 0, 250);
	cases[3].spec.dst_ip = ipv4(172, 16, 255, 200);
	cases[3].spec.src_port = 60000;
	cases[3].spec.dst_port = 1;
	cases[3].spec.nb_flows = 4096;
	cases[3].spec.flow_mask = ZL_FLOW_SRC_IP | ZL_FLOW_DST_IP | ZL_FLOW_SRC_PORT | ZL_FLOW_DST_PORT;

	cases[4].name = "VLAN 4095 pcp 7, 17 flows stepping dst_ip only";
	set_mac(cases[4].spec.src_mac, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00);
	set_mac(cases[4].spec.dst_mac, 0x02, 0x00, 0x00, 0x00, 0x02, 0x00);
	cases[4].spec.vlan = 4095;
	cases[4].spec.vlan_pcp = 7;
	cases[4].spec.src_ip = ipv4(192, 168, 0, 1);
	cases[4].spec.dst_ip = ipv4(255, 255, 255, 239);
	cases[4].spec.src_port = 7;
	cases[4].spec.dst_port = 9;
	cases[4].spec.nb_flows = 17;
	cases[4].spec.flow_mask = ZL_FLOW_DST_IP;

	cases[5].name = "untagged, 65536 flows stepping src_ip: every checksum carry case";
	set_mac(cases[5].spec.src_mac, 0x02, 0x00, 0x00, 0x00, 0x00, 0x05);
	set_mac(cases[5].spec.dst_mac, 0x02, 0x00, 0x00, 0x00, 0x00, 0x06);
	cases[5].spec.vlan = -1;
	cases[5].spec.src_ip = ipv4(10, 200, 0, 0);
	cases[5].spec.dst_ip = ipv4(255, 255, 255, 254);
	cases[5].spec.src_port = 65535;
	cases[5].spec.dst_port = 65535;
	cases[5].spec.nb_flows = 65536;
	cases[5].spec.flow_mask = ZL_FLOW_SRC_IP;

	for (i = 0; i < 6; i++)
		test_spec(&cases[i]);

	/* spot checks of stepped values written out by hand */
	{
		struct zl_flow fl[4096];
		struct zl_frame_tmpl t;
		uint8_t b[64];

		zl_frame_tmpl_init(&t, &cases[3].spec, fl);
		memset(b, 0, sizeof(b));
		zl_frame_write(b, &t, 10, 64, 0, 0, 0, 0);
		CHECK_EQ_U64(be32_at(b + 26), 0x0a000104); /* 10.0.0.250 + 10 = 10.0.1.4 */
		CHECK_EQ_U64(be32_at(b + 30), 0xac10ffd2); /* 172.16.255.210 */
		CHECK_EQ_U64(be16_at(b + 34), 60010);
		CHECK_EQ_U64(be16_at(b + 36), 11);
		zl_frame_write(b, &t, 4095, 64, 0, 0, 0, 0);
		CHECK_EQ_U64(be32_at(b + 26), 0x0a0010f9); /* 10.0.0.250 + 4095 = 10.0.16.249 */
		CHECK_EQ_U64(be32_at(b + 30), 0xac110fc7); /* 172.16.255.200 + 4095 = 172.17.15.199 */
		CHECK_EQ_U64(be16_at(b + 34), 64095);
		CHECK_EQ_U64(be16_at(b + 36), 4096);
		/* 64 B frame: IP total length 46, UDP length 26 */
		CHECK_EQ_U64(be16_at(b + 16), 46);
		CHECK_EQ_U64(be16_at(b + 38), 26);
	}

	test_parse_cases();
	test_trial_ids(&cases[5].spec);
	test_spec_check();
	return check_report();
}
