"""`zeroloss check jumbo`: the Intel OVS-DPDK jumbo-frame article's two functional test cases, on PVP.

1. mtu_request=9000 on every port: 9018 B frames (MTU + 14 B Ethernet header + 4 B FCS) cross
   PVP unfragmented, each received as long as it was sent.
2. One port lowered to mtu_request=6000 at run time: 9018 B frames towards it are dropped (and
   counted by OVS as MTU drops), 6018 B frames still pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import TrialResult
from zeroloss.core.stream import Stream
from zeroloss.drivers.bench.ovsbench import OvsBench, OvsBenchSpec
from zeroloss.drivers.bench.workspace import Workspace
from zeroloss.loss.ledger import counter_delta

FRAMES = 2000
RATE = 10_000


@dataclass
class Step:
    name: str
    passed: bool
    evidence: dict = field(default_factory=dict)  # an Evidence's JSON: what `check jumbo` prints


@dataclass(frozen=True, kw_only=True)
class Evidence(Record):
    """What a step's trial counted: frames and bytes sent and received, OVS's MTUs and its counters of v0."""

    frame_bytes: int = 0
    sent: int = 0
    received: int = 0
    lost: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    malformed_or_truncated: int = 0
    ovs_mtu: JsonObject = field(default_factory=dict)  # port -> the mtu OVS reports (a string, as ovs-vsctl gives it)
    ovs_v0_tx_dropped: int = 0
    ovs_v0_tx_packets: int = 0


@dataclass(frozen=True, kw_only=True)
class _Iface(Record):
    """What the check reads of a port's Interface row (Ovs.interface: ovs-vsctl's strings)."""

    mtu: Json = None
    link_state: Json = None


@dataclass(frozen=True, kw_only=True)
class _PortDelta(Record):
    """What the check reads of v0's counters over a trial (OVS's port statistics, counter_delta)."""

    tx_dropped: int = 0
    tx_packets: int = 0


def _mtu(bench: OvsBench, port: str) -> Json:
    return _Iface.from_json(bench.ovs.interface(port)).mtu


def _trial(bench: OvsBench, frame: int) -> tuple[TrialResult, dict]:
    """Frames port 0 -> 1 (through v0); OVS's live counters of v0 over the trial."""
    c = bench.gen.client
    c.configure([Stream(port=0, rx_port=1, size=frame, rate_pps=RATE, flows=16)])
    before = bench.ovs.counters()["ports"]["v0"]
    r = c.run_trial(frames=FRAMES, drain_ms=500)
    after = bench.ovs.counters()["ports"]["v0"]
    return r, counter_delta(after, before)


def set_mtu(bench: OvsBench, port: str, mtu: int, timeout: float = 30) -> None:
    """Changes a port's mtu_request and waits until OVS has applied it and the port is up again."""
    bench.ovs.vsctl("set", "Interface", port, f"mtu_request={mtu}")
    deadline = time.monotonic() + timeout
    while True:
        row = _Iface.from_json(bench.ovs.interface(port))
        if row.mtu == str(mtu) and row.link_state == "up":
            break
        if time.monotonic() > deadline:
            raise ZeroLossError(f"OVS did not apply mtu_request={mtu} on {port} in {timeout:.0f} s "
                                f"(mtu {row.mtu}, link {row.link_state})")
        time.sleep(0.2)
    time.sleep(1.0)  # the VNF's virtio device settles after the vhost port's reconfiguration


def _evidence(r: TrialResult, frame: int, ovs_v0: dict, mtu: dict) -> Evidence:
    (s,) = r.streams
    v0 = _PortDelta.from_json(ovs_v0)
    return Evidence(frame_bytes=frame, sent=s.tx_pkts, received=s.rx_unique, lost=s.lost, bytes_sent=s.tx_bytes,
                    bytes_received=s.rx_bytes, malformed_or_truncated=r.ports[1].rx_malformed, ovs_mtu=mtu,
                    ovs_v0_tx_dropped=v0.tx_dropped, ovs_v0_tx_packets=v0.tx_packets)


def jumbo(ws: Workspace, vnf: str = "process") -> list[Step]:
    """Runs both cases (the VNF a process or a VM); returns every step with its verdict and the counters."""
    steps = []
    spec = OvsBenchSpec(max_frame=9018, vnf=vnf)  # mtu_request 9000 on every port
    with OvsBench(spec, ws) as bench:
        mtus = {p: _mtu(bench, p) for p in ("g0", "v0", "v1", "g1")}
        r, d = _trial(bench, 9018)
        ev = _evidence(r, 9018, d, mtus)
        ok = ev.lost == 0 and ev.bytes_received == ev.bytes_sent == FRAMES * 9018 and ev.malformed_or_truncated == 0
        steps.append(Step("mtu_request=9000 everywhere: 9018 B frames cross PVP whole", ok, ev.to_json()))

        set_mtu(bench, "v0", 6000)
        mtus = {p: _mtu(bench, p) for p in ("g0", "v0", "v1", "g1")}
        r, d = _trial(bench, 9018)
        ev = _evidence(r, 9018, d, mtus)
        ok = ev.received == 0 and ev.sent == FRAMES and ev.ovs_v0_tx_dropped == FRAMES
        steps.append(Step("v0 lowered to mtu_request=6000: 9018 B frames dropped by OVS on TX to v0", ok,
                          ev.to_json()))

        r, d = _trial(bench, 6018)
        ev = _evidence(r, 6018, d, mtus)
        ok = ev.lost == 0 and ev.bytes_received == FRAMES * 6018 and ev.ovs_v0_tx_dropped == 0
        steps.append(Step("v0 at mtu_request=6000: 6018 B frames still pass", ok, ev.to_json()))
    return steps
