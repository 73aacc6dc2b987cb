/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prints one zlgen frame (the current format version) as hex, for the Python parser's test:
 * dump_frame FRAME_LEN VLAN FLOW TRIAL STREAM SEQ TSC [VNI UDP_PORT]   (VLAN -1: untagged)
 * With VNI and UDP_PORT the frame is wrapped in VXLAN as a remote VTEP sends it: outer
 * 02:00:00:00:0a:01 -> 02:00:00:00:0a:02, 10.0.0.1 -> 10.0.0.2 (ZL_VXLAN_LEN bytes more).
 */
#include <stdio.h>
#include <stdlib.h>

#include "frame.h"

int
main(int argc, char **argv)
{
	struct zl_frame_spec spec = {
		.src_mac = { 0x02, 0, 0, 0, 0, 0x01 },
		.dst_mac = { 0x02, 0, 0, 0, 0, 0x02 },
		.src_ip = 198u << 24 | 18u << 16 | 1,
		.dst_ip = 198u << 24 | 19u << 16 | 1,
		.src_port = 1024,
		.dst_port = 2048,
		.nb_flows = 16,
		.flow_mask = ZL_FLOW_SRC_IP | ZL_FLOW_DST_PORT,
	};
	struct zl_vxlan_spec vspec = {
		.src_mac = { 0x02, 0, 0, 0, 0x0a, 0x01 },
		.dst_mac = { 0x02, 0, 0, 0, 0x0a, 0x02 },
		.src_ip = 10u << 24 | 1,
		.dst_ip = 10u << 24 | 2,
	};
	static uint8_t frame[ZL_VXLAN_LEN + ZL_MAX_FRAME];
	struct zl_vxlan_tmpl vt;
	uint8_t *buf = frame;
	uint32_t head = 0;
	struct zl_flow flows[16];
	struct zl_frame_tmpl t;
	uint32_t len, i;

	if (argc != 8 && argc != 10) {
		fprintf(stderr, "usage: dump_frame FRAME_LEN VLAN FLOW TRIAL STREAM SEQ TSC [VNI UDP_PORT]\n");
		return 2;
	}
	len = (uint32_t)strtoul(argv[1], NULL, 0);
	spec.vlan = atoi(argv[2]);
	if (len < zl_frame_min_len(&spec) || len > ZL_MAX_FRAME || (uint32_t)atoi(argv[3]) >= 16) {
		fprintf(stderr, "dump_frame: bad frame length or flow\n");
		return 2;
	}
	zl_frame_tmpl_init(&t, &spec, flows);
	if (argc == 10) {
		vspec.vni = (uint32_t)strtoul(argv[8], NULL, 0) & ZL_VXLAN_MAX_VNI;
		vspec.udp_port = (uint16_t)strtoul(argv[9], NULL, 0);
		zl_vxlan_tmpl_init(&vt, &vspec);
		zl_vxlan_write(frame, &vt, &flows[atoi(argv[3])], len - ZL_FCS_LEN);
		head = ZL_VXLAN_LEN;
		buf = frame + head;
	}
	zl_frame_write(buf, &t, (uint32_t)atoi(argv[3]), len, (uint16_t)strtoul(argv[4], NULL, 0),
		(uint16_t)strtoul(argv[5], NULL, 0), (uint32_t)strtoul(argv[6], NULL, 0),
		(uint32_t)strtoul(argv[7], NULL, 0));
	for (i = 0; i < head + len - ZL_FCS_LEN; i++)
		printf("%02x", frame[i]);
	printf("\n");
	return 0;
}
