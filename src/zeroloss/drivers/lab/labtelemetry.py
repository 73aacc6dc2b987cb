"""A lab node's telemetry per trial (drivers/probe/telemetry.py), read over the node's agent: the same files as on the
bench (/proc/stat, /proc/interrupts, the isolated CPUs, each DPDK process's /proc/PID/stat) in one round trip per
reading.

Which cores and processes are the node's data path is learnt once per frame size (when the run asks for its probe):
the OVS PMDs' cores from pmd-stats-show, ovs-vswitchd's pid from its pid file, and each VNF on the node (reached
through its DPDK telemetry socket, not through a guest) by its pid (telemetry /info) and the cores its threads are
pinned to (taskset -apc).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from zeroloss.core.codec import Json, Record

from ..dut.ovsstats import parse_pmd_stats
from ..probe.interference import cpu_list
from ..probe.telemetry import Snapshot, files, snapshot_of
from .labdut import LabDut
from .replies import Ran, ran


@dataclass(frozen=True, kw_only=True)
class InfoReply(Record):
    """A VNF's telemetry reply to /info (agent op telemetry): its info, None when the socket gave none."""

    info: Json = field(default=None, metadata={"key": "/info"})


@dataclass(frozen=True, kw_only=True)
class Info(Record):
    """A DPDK process's /info: its pid (an int when it gave one)."""

    pid: Json = None

READ_TIMEOUT_S = 5


def parse_taskset(text: str) -> dict[int, list[int]]:
    """`taskset -apc PID`: each thread's allowed CPUs ("pid 12's current affinity list: 2-3")."""
    return {int(m.group(1)): cpu_list(m.group(2))
            for m in re.finditer(r"pid (\d+)'s current affinity list: (\S+)", text)}


class NodeTelemetry:
    """Probe.telemetry of a lab node: a Snapshot of the node now (its data path's cores and processes)."""

    def __init__(self, dut: LabDut):
        self.dut = dut
        self.cores: dict[int, list[str]] = {}
        self.procs: dict[int, str] = {}
        self.learn()

    def _run(self, *argv: str) -> dict:
        return {"op": "run", "argv": list(argv), "timeout": READ_TIMEOUT_S}

    def learn(self) -> None:
        """The data path's cores and processes on the node now."""
        dut = self.dut
        vnfs = [v for v in dut.lab.vnfs if not v.remote]  # a guest's or a pod's pid is not the node's
        items = [{"op": "unixctl", "path": dut.ctl, "cmd": "dpif-netdev/pmd-stats-show", "args": []} if dut.ovs else
                 {"op": "alive", "pids": []}]  # a node without OVS (SR-IOV): no PMDs
        items += [{"op": "telemetry", "path": v.telemetry, "cmds": ["/info"], "timeout": 1.0} for v in vnfs]
        r = dut.agent().batch(items)
        cores: dict[int, list[str]] = {}
        procs: dict[int, str] = {}
        pmds = Ran.from_json(r[0]) if dut.ovs else None
        if pmds is not None and not pmds.rc:
            for core in parse_pmd_stats(pmds.out):
                cores.setdefault(int(core), []).append("pmd")
        if "ovs-vswitchd" in dut.pids:
            procs[dut.pids["ovs-vswitchd"]] = "pmd"
        for reply in r[1:]:
            info = InfoReply.from_json(reply).info if isinstance(reply, dict) else None
            pid = Info.from_json(info).pid if isinstance(info, dict) else None
            if isinstance(pid, int):
                procs[pid] = "vnf"
        vnf_pids = [p for p, role in procs.items() if role == "vnf"]
        if vnf_pids:
            for done in ran(dut.agent().batch([self._run("taskset", "-apc", str(p)) for p in vnf_pids])):
                if done.rc:
                    continue
                for cpus in parse_taskset(done.out).values():
                    if len(cpus) == 1 and "vnf" not in cores.setdefault(cpus[0], []):
                        cores[cpus[0]].append("vnf")
        self.cores, self.procs = cores, procs

    def __call__(self) -> Snapshot:
        paths = files(self.procs)
        keys = list(paths)
        r = ran(self.dut.agent().batch([self._run("cat", paths[k]) for k in keys]))
        t = time.monotonic()
        texts = {k: (x.out if not x.rc else None) for k, x in zip(keys, r, strict=True)}
        return snapshot_of(texts, self.cores, self.procs, t, self.dut.lab.dut.target)
