"""`zeroloss bench --lab FILE`: what reading a lab node costs, side by side with the bench's local reading of the
same OVS and VNF (when the node is this host, as in the lab tests): one reading of OVS + VNF counters (before
and after every trial), the OVS state kept per trial, and the share of a trial's time they add."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from zeroloss.core.codec import JsonObject, Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.dpdk.telemetry import Telemetry
from zeroloss.drivers.dut.ovs import Ovs, OvsSettings
from zeroloss.drivers.lab.labdut import LabDut
from zeroloss.drivers.lab.labfile import Lab

if TYPE_CHECKING:
    from zeroloss.drivers.lab.labrun import LabSession


@dataclass(frozen=True, kw_only=True)
class Summary(Record):
    """Milliseconds of a kind of reading: median, p90, min."""

    median: float = 0.0
    p90: float = 0.0
    min: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Walls(Record):
    """A value per way of running the short trials: without readings, with the remote ones, with the local ones."""

    none: float = 0.0
    remote: float = 0.0
    local: float | None = None  # None: the lab's OVS and VNFs are not on this host


@dataclass(frozen=True, kw_only=True)
class Overhead(Record):
    """What the remote and the local readings add to a short trial's wall time, % of it without readings."""

    remote: float = 0.0
    local: float | None = None


@dataclass(frozen=True, kw_only=True)
class LabReport(Record):
    """What bench_lab measured: the document --json prints and `table` reads."""

    readings: int = 0
    ssh_logins: int = 0
    requests: int = 0
    remote_ms: Summary = field(default_factory=Summary)
    remote_state_ms: Summary = field(default_factory=Summary)
    trial_s: float = 0.0
    trial_wall_ms: Walls = field(default_factory=Walls)
    trial_overhead_pct: Overhead = field(default_factory=Overhead)
    local_ms: Summary | None = None
    local_state_ms: Summary | None = None
    ratio: float | None = None  # remote / local median of the counters reading


def _times(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    fn()  # the first one opens connections
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _local_reader(lab: Lab, dut: LabDut) -> tuple[Callable[[], dict], Callable[[], None]] | None:
    """The bench's own reading (zeroloss.drivers.dut.ovs.Ovs.counters + DPDK telemetry) pointed at the lab's OVS and
    VNFs, when they are on this host; None otherwise."""
    rundir = Path(lab.ovs_rundir)
    if not rundir.is_dir() or not Path(dut.ctl).exists() or any(v.remote or not Path(v.telemetry).exists()
                                                                for v in lab.vnfs):
        return None
    ovs = Ovs(rundir=rundir, settings=OvsSettings(file_prefix="unused"),
              flows={b: [] for b in sorted(set(dut.path_bridges()))}, meters={b: [] for b in sorted(dut.meter_bridges)})
    ovs.vswitchd_ctl = Path(dut.ctl)
    ovs.db_sock = Path(lab.ovs_db.removeprefix("unix:"))
    tels = [Telemetry(Path(v.telemetry), timeout=1.0) for v in lab.vnfs]

    def read() -> dict:
        return {"ovs": ovs.counters(), "procs": {v.name: [t.ethdev_stats(p) for p in (0, 1)]
                                                 for v, t in zip(lab.vnfs, tels, strict=True)}}

    def close() -> None:
        for t in tels:
            t.close()
        ovs.close_unixctl()

    return read, close


def bench_lab(lab: Lab, readings: int = 50, trials: int = 5, trial_s: float = 0.5,
              progress: Callable[[str], None] = lambda _: None) -> JsonObject:
    """Median and p90 ms of a counters reading and a state reading, remote (one SSH session) and local, and the
    wall time of short trials without readings, with the remote ones and with the local ones."""
    from zeroloss.drivers.lab.labrun import session

    with session(lab, 1518, 1000, 25.0) as s:
        dut = s.dut
        s.learn()
        s.discover()
        progress(f"remote: {readings} readings over one SSH session to {lab.dut.target}")
        remote = _times(dut.counters, readings)
        remote_state = _times(dut.state, max(5, readings // 5))
        local = local_state = None
        reader = _local_reader(lab, dut)
        if reader is not None:
            read, close = reader
            progress(f"local: {readings} readings of the same OVS and VNF as the bench reads its own")
            try:
                local = _times(read, readings)
                local_state = _times(lambda: (dut_snapshot_local(lab, dut)), max(5, readings // 5))
            finally:
                close()
        walls = _trial_walls(s, lab, reader is not None, trials, trial_s, progress)
        logins = len(dut.agents)
        requests = sum(a.requests for a in dut.agents.values())
    return report(readings, logins, requests, (remote, remote_state), trial_s, walls,
                  None if local is None or local_state is None else (local, local_state)).to_json()


def report(readings: int, logins: int, requests: int, remote: tuple[list[float], list[float]], trial_s: float,
           walls: Walls, local: tuple[list[float], list[float]] | None) -> LabReport:
    """The document of the readings' and trials' times (ms): remote and local as (counters, state) readings."""
    rel = Overhead(remote=100 * (walls.remote - walls.none) / walls.none,
                   local=None if walls.local is None else 100 * (walls.local - walls.none) / walls.none)
    remote_ms = _summary(remote[0])
    local_ms = None if local is None else _summary(local[0])
    return LabReport(readings=readings, ssh_logins=logins, requests=requests, remote_ms=remote_ms,
                     remote_state_ms=_summary(remote[1]), trial_s=trial_s, trial_wall_ms=walls, trial_overhead_pct=rel,
                     local_ms=local_ms, local_state_ms=None if local is None else _summary(local[1]),
                     ratio=None if local_ms is None else remote_ms.median / max(local_ms.median, 1e-9))


def _trial_walls(s: LabSession, lab: Lab, local: bool, trials: int, trial_s: float,
                 progress: Callable[[str], None]) -> Walls:
    """The median wall time (ms) of short trials without readings, with the remote readings around each and, with
    local, with the bench's own readings of the same OVS and VNFs."""
    from zeroloss.drivers.lab.labrun import lab_streams

    dut = s.dut
    streams = lab_streams(lab, s.macs, 64, 10_000, 64, ["src_ip", "dst_ip"])
    s.client.configure(streams)

    def trial() -> None:
        s.client.run_trial(duration_s=trial_s, drain_ms=100)

    def with_remote() -> None:
        dut.counters()
        trial()
        dut.counters()
        dut.state()

    runs = {"none": trial, "remote": with_remote}
    if local:
        read, close = _local_reader(lab, dut)

        def with_local() -> None:
            read()
            trial()
            read()
            dut_snapshot_local(lab, dut)

        runs["local"] = with_local
    progress(f"trials: {trials} of {trial_s:g} s without readings, with remote and with local readings")
    walls = Walls(**{k: statistics.median(_times(fn, trials)) for k, fn in runs.items()})
    if local:
        close()
    return walls


def dut_snapshot_local(lab: Lab, dut: LabDut) -> None:
    """The bench's per-trial state reading (appctl over the control socket, ovs-vsctl) of the lab's OVS."""
    ovs = Ovs(rundir=Path(lab.ovs_rundir), settings=OvsSettings(file_prefix="unused"))
    ovs.vswitchd_ctl = Path(dut.ctl)
    ovs.db_sock = Path(lab.ovs_db.removeprefix("unix:"))
    try:
        ovs.snapshot()
        ovs.interface_statistics()
    finally:
        ovs.close_unixctl()


def _summary(ms: list[float]) -> Summary:
    if not ms:
        raise ZeroLossError("no readings")
    s = sorted(ms)
    return Summary(median=statistics.median(s), p90=s[min(len(s) - 1, int(0.9 * len(s)))], min=s[0])


def table(doc: JsonObject, target: str) -> str:
    """The text of bench_lab's document (LabReport)."""
    r = LabReport.from_json(doc)
    lines = [f"lab readings: {r.readings} per kind, {r.ssh_logins} SSH login(s), {r.requests} requests",
             f"{'reading':<34}{'remote (SSH) ms':>18}{'local (bench) ms':>18}{'remote/local':>14}"]
    for remote, local, name in ((r.remote_ms, r.local_ms, "OVS + VNF counters (per trial x2)"),
                                (r.remote_state_ms, r.local_state_ms, "OVS state (per trial x1)")):
        rm = remote.median
        lm = None if local is None else local.median
        lines.append(f"{name:<34}{rm:>18.2f}{(f'{lm:.2f}' if lm is not None else 'n/a'):>18}"
                     f"{(f'{rm / lm:.2f}' if lm else 'n/a'):>14}")
    w, pct = r.trial_wall_ms, r.trial_overhead_pct
    ways = [("remote", w.remote, pct.remote)] + ([("local", w.local, pct.local)] if w.local is not None else [])
    lines.append(f"a {r.trial_s:g} s trial (+0.1 s drain) takes {w.none:.0f} ms without readings, "
                 + ", ".join(f"{wall:.0f} ms with the {k} readings (+{p:.1f} %)" for k, wall, p in ways))
    lines.append(f"node: {target}")
    return "\n".join(lines)
