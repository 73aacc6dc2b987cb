/* SPDX-License-Identifier: BSD-3-Clause */
/* Transmit pacing: schedule set-up (the per-burst arithmetic is inline in pace.h). */
#include <string.h>

#include "pace.h"

void
zl_pace_init(struct zl_pace *p, uint64_t hz, uint64_t pps, uint64_t start_tsc,
		uint32_t burst, uint64_t gap_tsc)
{
	memset(p, 0, sizeof(*p));
	p->hz = hz;
	p->pps = pps;
	p->start_tsc = start_tsc;
	p->burst = burst ? burst : 1;
	p->gap_tsc = gap_tsc;
}
