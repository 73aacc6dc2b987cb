/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Prints one zlgen frame (the current format version) as hex, for the Python parser's test:
 * dump_frame FRAME_LEN VLAN FLOW TRIAL STREAM SEQ TSC   (VLAN -1: untagged)
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
	static uint8_t buf[ZL_MAX_FRAME];
	struct zl_flow flows[16];
	struct zl_frame_tmpl t;
	uint32_t len, i;

	if (argc != 8) {
		fprintf(stderr, "usage: dump_frame FRAME_LEN VLAN FLOW TRIAL STREAM SEQ TSC\n");
		return 2;
	}
	len = (uint32_t)strtoul(argv[1], NULL, 0);
	spec.vlan = atoi(argv[2]);
	if (len < zl_frame_min_len(&spec) || len > ZL_MAX_FRAME || (uint32_t)atoi(argv[3]) >= 16) {
		fprintf(stderr, "dump_frame: bad frame length or flow\n");
		return 2;
	}
	zl_frame_tmpl_init(&t, &spec, flows);
	zl_frame_write(buf, &t, (uint32_t)atoi(argv[3]), len, (uint16_t)strtoul(argv[4], NULL, 0),
		(uint16_t)strtoul(argv[5], NULL, 0), (uint32_t)strtoul(argv[6], NULL, 0),
		(uint32_t)strtoul(argv[7], NULL, 0));
	for (i = 0; i < len - ZL_FCS_LEN; i++)
		printf("%02x", buf[i]);
	printf("\n");
	return 0;
}
