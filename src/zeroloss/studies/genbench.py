"""`zeroloss bench`: zlgen against dpdk-testpmd txonly, and zlgen's pacing accuracy, side by side.

Both tools transmit on the same virtual device (net_null, which frees what it is given) from the
same lcore, one after the other, alternating, and are measured the same way: the device's
opackets counter read over DPDK telemetry across a fixed window.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass

from zeroloss.core.codec import Record
from zeroloss.core.stream import Stream
from zeroloss.drivers.bench.workspace import Workspace
from zeroloss.drivers.dpdk.eal import Eal
from zeroloss.drivers.dpdk.telemetry import Telemetry
from zeroloss.drivers.dpdk.testpmd import TestPmd, TestPmdConfig
from zeroloss.drivers.gen import Zlgen, ZlgenConfig
from zeroloss.results.fmt import table

LCORE = 1          # the datapath core of both tools (the quieter core of a 2-core host)
OTHER = 0          # testpmd's main lcore and zlgen's control thread
SIZES = (64, 1518)
PACING = (0.10, 0.50, 0.90)
GAPS_US = (50, 1000)  # the default restart gap, and one that rides out sub-millisecond host stalls
WARMUP_S = 0.5


@dataclass(frozen=True, kw_only=True)
class MaxTx(Record):
    """One frame size's maximum TX rate: every run of each tool, the medians and their ratio."""

    frame: int = 0
    zlgen_pps: tuple[float, ...] = ()
    testpmd_pps: tuple[float, ...] = ()
    zlgen_median_pps: float = 0.0
    testpmd_median_pps: float = 0.0
    ratio: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Paced(Record):
    """A paced trial: achieved / requested from zlgen's own count and from the device's."""

    requested_pps: float = 0.0
    achieved_pps: float = 0.0
    device_pps: float = 0.0
    ratio: float = 0.0
    restarts: int = 0
    skipped: int = 0
    ratio_without_stalls: float = 0.0  # what the pacer delivers when OS stalls (counted as skipped) are set aside


@dataclass(frozen=True, kw_only=True)
class GenReport(Record):
    """The document --json prints."""

    seconds: float = 0.0
    repeats: int = 0
    device: str = "net_null"
    lcore: int = LCORE
    max_tx: tuple[MaxTx, ...] = ()
    pacing: dict[int, tuple[Paced, ...]] | None = None  # per restart gap (us), the trials at PACING of the maximum


@dataclass(frozen=True, kw_only=True)
class EthStats(Record):
    """What the benchmark reads of a port's ethdev statistics (DPDK telemetry /ethdev/stats)."""

    opackets: int


def _opackets(tel: Telemetry) -> int:
    """Frames port 0 has sent, as its device counts them."""
    return EthStats.from_json(tel.ethdev_stats(0)).opackets


def _window_rate(tel: Telemetry, seconds: float) -> float:
    """opackets per second of port 0 over a window of the given length."""
    a = _opackets(tel)
    t0 = time.monotonic()
    time.sleep(seconds)
    b = _opackets(tel)
    return (b - a) / (time.monotonic() - t0)


def zlgen_max(ws: Workspace, frame: int, seconds: float, run: int) -> float:
    eal = Eal(lcores=str(LCORE), file_prefix=ws.prefix(f"bz{frame}_{run}"), vdevs=("net_null0,no-rx=1",))
    with Zlgen(ZlgenConfig(eal=eal, ctl_path=ws.sock("bench-zlgen")), ws.log("bench-zlgen")) as g:
        g.client.configure([Stream(port=0, size=frame)])
        g.client.start(duration_s=seconds + 2 * WARMUP_S, drain_ms=0)
        with Telemetry(eal.telemetry_socket) as tel:
            time.sleep(WARMUP_S)
            rate = _window_rate(tel, seconds)
        g.client.result(wait_s=seconds + 10)
    return rate


def testpmd_max(ws: Workspace, frame: int, seconds: float, run: int) -> float:
    eal = Eal(lcores=f"{OTHER},{LCORE}", main_lcore=OTHER, file_prefix=ws.prefix(f"bt{frame}_{run}"),
              vdevs=("net_null0,no-rx=1",))
    cfg = TestPmdConfig(eal=eal, forward_mode="txonly", tx_pkt_len=frame)
    with TestPmd(cfg, ws.log("bench-testpmd")), Telemetry(eal.telemetry_socket) as tel:
        time.sleep(WARMUP_S)
        return _window_rate(tel, seconds)


def zlgen_pacing(ws: Workspace, rates: list[float], seconds: float, gap_us: int) -> list[Paced]:
    """Paced 64 B trials: achieved / requested from zlgen's own count and from the device's."""
    eal = Eal(lcores=str(LCORE), file_prefix=ws.prefix(f"bp{gap_us}"), vdevs=("net_null0,no-rx=1",))
    out = []
    cfg = ZlgenConfig(eal=eal, ctl_path=ws.sock("bench-pace"), gap_us=gap_us)
    with Zlgen(cfg, ws.log("bench-pace")) as g, \
            Telemetry(eal.telemetry_socket) as tel:
        g.client.configure([Stream(port=0, size=64)])
        for rate in rates:
            before = _opackets(tel)
            r = g.client.run_trial(duration_s=seconds, drain_ms=0, rate_pps=rate)
            sent = _opackets(tel) - before
            (s,) = r.streams
            out.append(Paced(requested_pps=s.requested_pps, achieved_pps=s.achieved_pps,
                             device_pps=sent / r.tx_window_s, ratio=s.achieved_pps / s.requested_pps,
                             restarts=s.pace_restarts, skipped=s.pace_skipped,
                             ratio_without_stalls=(s.tx_pkts + s.pace_skipped) / (s.requested_pps * r.tx_window_s)))
    return out


def run_benchmarks(seconds: float = 3.0, repeats: int = 3, json_out: bool = False) -> Iterator[str]:
    """Runs the benchmarks and yields report lines as results arrive."""
    max_tx: list[MaxTx] = []
    gaps: dict[int, tuple[Paced, ...]] = {}
    if not json_out:
        yield (f"zeroloss bench: zlgen vs dpdk-testpmd --forward-mode=txonly on net_null, datapath on lcore "
               f"{LCORE}, {seconds:g} s windows, median of {repeats} alternating runs")
    with Workspace() as ws:
        rows = []
        for frame in SIZES:
            z, t = [], []
            for run in range(repeats):
                z.append(zlgen_max(ws, frame, seconds, run))
                t.append(testpmd_max(ws, frame, seconds, run))
            zm, tm = statistics.median(z), statistics.median(t)
            max_tx.append(MaxTx(frame=frame, zlgen_pps=tuple(z), testpmd_pps=tuple(t), zlgen_median_pps=zm,
                                testpmd_median_pps=tm, ratio=zm / tm))
            rows.append([f"{frame} B", f"{zm / 1e6:.3f}", f"{min(z) / 1e6:.3f} … {max(z) / 1e6:.3f}",
                         f"{tm / 1e6:.3f}", f"{min(t) / 1e6:.3f} … {max(t) / 1e6:.3f}", f"{zm / tm:.3f}"])
        if not json_out:
            yield ""
            yield "maximum TX rate"
            yield table(["frame", "zlgen Mpps", "min … max", "testpmd Mpps", "min … max", "zlgen/testpmd"], rows)
        top = max_tx[0].zlgen_median_pps
        for gap_us in GAPS_US:
            pacing = zlgen_pacing(ws, [f * top for f in PACING], seconds, gap_us)
            gaps[gap_us] = tuple(pacing)
            if json_out:
                continue
            yield ""
            yield (f"pacing accuracy, 64 B, as a share of zlgen's maximum ({top / 1e6:.3f} Mpps), "
                   f"restart gap {gap_us} us")
            yield table(["load", "requested Mpps", "achieved Mpps", "achieved/requested", "device/requested",
                         "restarts", "skipped", "without stalls"],
                        [[f"{f:.0%}", f"{p.requested_pps / 1e6:.4f}", f"{p.achieved_pps / 1e6:.4f}",
                          f"{p.ratio:.5f}", f"{p.device_pps / p.requested_pps:.5f}", str(p.restarts),
                          str(p.skipped), f"{p.ratio_without_stalls:.5f}"]
                         for f, p in zip(PACING, pacing, strict=True)])
        if not json_out:
            yield ("'skipped': frames the pacer left out after the OS held zlgen up for longer than the restart "
                   "gap (it never bursts to catch up); 'without stalls' counts them back in. A longer gap "
                   "catches up short stalls with short bursts instead.")
    if json_out:
        report = GenReport(seconds=seconds, repeats=repeats, max_tx=tuple(max_tx), pacing=gaps)
        yield json.dumps(report.to_json(), indent=2)
