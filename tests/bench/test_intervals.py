"""zlgen's per-interval counters on the bench (issue 32): a VNF frozen mid-trial is a hole in the intervals at the
time the frames were sent, every frame of the stream is in one interval, and the outage holds the trial's loss.

The VNF is the PVP bench's testpmd behind OVS: OVS's vhost-user port drops what the frozen VNF's full ring does not
take, a real loss. The P2P bench would not do: its testpmd is zlgen's direct peer on a memif, whose full ring
pushes back (zlgen's TX is refused, measured 44 423 frames refused and none lost in a 300 ms freeze at 200 kpps)."""

from __future__ import annotations

import os
import signal
import threading
import time

from zeroloss.core.outage import outages
from zeroloss.core.stream import Stream
from zeroloss.drivers.bench.ovsbench import OvsBench, OvsBenchSpec
from zeroloss.drivers.bench.workspace import Workspace
from zeroloss.drivers.proc import freeze

RATE = 30_000  # pps: far below what the PVP bench carries, so the freeze is the only loss on a quiet host
MS = 10
FREEZE_AT_S = 1.0
FREEZE_S = 0.3


def test_frozen_vnf_is_one_outage_at_its_time_and_every_frame_is_placed():
    with Workspace() as ws, OvsBench(OvsBenchSpec(topology="pvp"), ws) as bench:
        c = bench.gen.client
        c.configure([Stream(port=0, rx_port=1, rate_pps=RATE, size=64)])
        pid = bench.vnf.proc.pid
        when: dict[str, float] = {}

        def freeze_vnf() -> None:
            time.sleep(FREEZE_AT_S)
            when["stop"] = time.monotonic()
            freeze(pid)
            time.sleep(FREEZE_S)
            os.kill(pid, signal.SIGCONT)
            when["cont"] = time.monotonic()

        t0 = time.monotonic()
        c.start(duration_s=2.5, drain_ms=300, interval_ms=MS)
        start = (t0 + time.monotonic()) / 2 + 0.001  # the first deadline: 1 ms after the start reply
        freezer = threading.Thread(target=freeze_vnf)
        freezer.start()
        try:
            time.sleep(2.0)
            live = c.intervals(0)  # while the trial runs: the intervals final so far
        finally:
            freezer.join()
        r = c.result(wait_s=5)

    s = r.streams[0]
    iv = s.intervals
    assert iv is not None and iv.ms == MS
    # every frame sent is in one interval; every distinct frame received too (or counted as not placed)
    assert sum(iv.tx) == s.tx_pkts > 0
    assert sum(iv.rx) + iv.rx_unplaced == s.rx_unique
    assert iv.rx_unplaced == 0  # no frame took 2^32 cycles
    assert all(r <= t for t, r in zip(iv.tx, iv.rx, strict=True))
    # the live reply's final intervals are the result's: a final interval does not change afterwards
    assert live.state == "running" and 150 <= live.final <= 200
    assert live.streams[0].tx == iv.tx[:live.end] and live.streams[0].rx == iv.rx[:live.end]
    # the outage of the freeze, at the time the VNF was frozen (its ring takes the first 1024 frames first), holds the
    # trial's loss; its frames-lost length at the offered rate
    found = outages(iv.tx, iv.rx, iv.ms, RATE)
    assert sum(o.lost for o in found) == s.lost
    frozen_ms = (when["stop"] - start) * 1000
    thawed_ms = (when["cont"] - start) * 1000
    seen = f"{found}, frozen at {frozen_ms:.0f} ms, thawed at {thawed_ms:.0f} ms, lost per interval {iv.lost}"
    o = max(found, key=lambda o: o.lost)
    assert o.lost > sum(iv.tx[int(o.start_ms) // MS:int(o.end_ms) // MS]) / 2, seen
    assert o.lost >= 0.9 * s.lost, seen  # one outage: on a quiet host all of it (a busy one may lose a few more)
    assert frozen_ms - 3 * MS <= o.start_ms <= frozen_ms + 3 * MS + 1024 / min(RATE, s.achieved_pps) * 1000, seen
    assert thawed_ms - 3 * MS <= o.end_ms <= thawed_ms + 3 * MS, seen
    # the frames-lost length: the frozen time less what the ring absorbed, within the span
    assert o.outage_ms <= o.span_ms
