"""`zeroloss bench --lab FILE`: what reading a lab node costs, side by side with the bench's local reading of the
same OVS and VNF (when the node is this host, as in the lab tests): one reading of OVS + VNF counters (before
and after every trial), the OVS state kept per trial, and the share of a trial's time they add."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.dpdk.telemetry import Telemetry
from zeroloss.drivers.dut.ovs import Ovs, OvsSettings
from zeroloss.drivers.lab.labdut import LabDut
from zeroloss.drivers.lab.labfile import Lab

if TYPE_CHECKING:
    from zeroloss.drivers.lab.labrun import LabSession


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
              progress: Callable[[str], None] = lambda _: None) -> dict:
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
    out = {"readings": readings, "ssh_logins": logins, "requests": requests,
           "remote_ms": _summary(remote), "remote_state_ms": _summary(remote_state),
           "trial_s": trial_s, "trial_wall_ms": walls,
           "trial_overhead_pct": {k: 100 * (v - walls["none"]) / walls["none"] for k, v in walls.items()
                                  if k != "none"}}
    if local is not None:
        out.update({"local_ms": _summary(local), "local_state_ms": _summary(local_state)})
        out["ratio"] = out["remote_ms"]["median"] / max(out["local_ms"]["median"], 1e-9)
    return out


def _trial_walls(s: LabSession, lab: Lab, local: bool, trials: int, trial_s: float,
                 progress: Callable[[str], None]) -> dict[str, float]:
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
    walls = {k: statistics.median(_times(fn, trials)) for k, fn in runs.items()}
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


def _summary(ms: list[float]) -> dict:
    if not ms:
        raise ZeroLossError("no readings")
    s = sorted(ms)
    return {"median": statistics.median(s), "p90": s[min(len(s) - 1, int(0.9 * len(s)))], "min": s[0]}


def table(r: dict, target: str) -> str:
    lines = [f"lab readings: {r['readings']} per kind, {r['ssh_logins']} SSH login(s), {r['requests']} requests",
             f"{'reading':<34}{'remote (SSH) ms':>18}{'local (bench) ms':>18}{'remote/local':>14}"]
    for key, name in (("", "OVS + VNF counters (per trial x2)"), ("_state", "OVS state (per trial x1)")):
        rm = r[f"remote{key}_ms"]["median"]
        lm = r.get(f"local{key}_ms", {}).get("median")
        lines.append(f"{name:<34}{rm:>18.2f}{(f'{lm:.2f}' if lm is not None else 'n/a'):>18}"
                     f"{(f'{rm / lm:.2f}' if lm else 'n/a'):>14}")
    w = r["trial_wall_ms"]
    lines.append(f"a {r['trial_s']:g} s trial (+0.1 s drain) takes {w['none']:.0f} ms without readings, "
                 + ", ".join(f"{w[k]:.0f} ms with the {k} readings (+{r['trial_overhead_pct'][k]:.1f} %)"
                             for k in ("remote", "local") if k in w))
    lines.append(f"node: {target}")
    return "\n".join(lines)
