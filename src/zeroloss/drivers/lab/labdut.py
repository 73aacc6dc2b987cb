"""A lab's compute node as the loss ledger sees it: its OVS (counters, PMDs, meters, drops, rxq placement) and
its VNFs' DPDK counters, read over one SSH session per host, one round trip per reading. Nothing on the node
is changed, except the settings a run is explicitly allowed to change (--allow-dut-changes), each restored at
the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.rxqorder import parse_dpif_show
from zeroloss.loss.ledger import STAT_KEYS

from ..dut.ovsread import vsctl_names
from ..dut.ovsstats import (
    parse_coverage_drops,
    parse_dump_ports,
    parse_meter_stats,
    parse_pmd_stats,
)
from ..proc import ComponentDied
from .labchange import LabChanges
from .labfile import Lab
from .labsriov import LabVfs, summed, uses_ovs
from .labstate import LabState
from .remote import RemoteAgent
from .replies import EthdevReply, Ran, ran

ETHDEV_KEYS = (*STAT_KEYS, "q_ipackets", "q_opackets")


class LabDut(LabChanges, LabState):
    """The remote OVS and VNFs of a lab file; start() opens the sessions and finds OVS, stop() closes them.
    Its calls are LabCtl's (labctl.py), its settings and their undo LabChanges' (labchange.py), the OVS state kept
    with each trial LabState's (labstate.py)."""

    def __init__(self, lab: Lab):
        self.lab = lab
        self.agents: dict[str, RemoteAgent] = {}
        self.ctl = ""                                 # ovs-vswitchd's control socket on the host
        self.vswitchd_pid: int | None = None         # ovs-vswitchd's, from its pid file
        self.ovsdb_pid: int | None = None            # ovsdb-server's, where its pid file has one
        self.bridge_of: dict[str, str] = {}          # OVS port -> bridge
        self.dp_names: dict[int, str] = {}           # datapath port number -> OVS port
        self.path_ports: list[str] = []
        self.meter_bridges: set[str] = set()
        self.stage_procs: set[str] = set()           # counters of several VNFs summed (pairs in parallel)
        self.changes: list[tuple[list[str], list[str]]] = []  # (undo argv, what was done) in the order done
        self.readings = 0
        self.vfs = LabVfs(lab)                        # the lab's SR-IOV VF ports (sriov:), none for an OVS lab
        self.vf_sums: set[str] = set()                # the VF sums ('a+b') the paths name (labsriov.vf_sums)
        self.ovs = uses_ovs(lab)                      # False: every path is generator -> VF -> VNF -> VF, no OVS
        self.version = ""

    # node -----------------------------------------------------------------------------------------------
    def start(self) -> LabDut:
        self.agent()
        if not self.ovs:  # a pure SR-IOV node: its VNFs' sessions and its VFs, no ovs-vswitchd to find
            for v in self.lab.vnfs:
                if v.remote:
                    self.agent(self.lab.vnf_target(v))
            self.health()
            self.check_vnfs()
            self._start_vfs()
            return self
        self.find_ovs()
        for v in self.lab.vnfs:  # a guest's or a CNF pod's session opened now: a wrong pod is one line before traffic
            if v.remote:
                self.agent(self.lab.vnf_target(v))
        self.health()
        self.check_vnfs()
        version = self.appctl("version").strip().splitlines()
        self.version = version[0] if version else ""
        self.topology()
        self._start_vfs()
        return self

    def check_vnfs(self) -> None:
        """Refuses a VNF whose telemetry socket gives no counters for its two ports: its hops would stand in the
        ledger uncounted, and every frame lost there would be put down to the hops around it."""
        local = [v for v in self.lab.vnfs if not v.remote]
        replies = dict(zip((v.name for v in local), self.agent().batch([self._tel(v) for v in local]), strict=True))
        for k, v in enumerate(self.lab.vnfs):
            if v.remote:
                req = {key: x for key, x in self._tel(v).items() if key != "op"}
                replies[v.name] = self.agent(self.lab.vnf_target(v)).call("telemetry", **req)
            reply = replies[v.name]
            if _ethdev(reply) is None:
                tel = EthdevReply.from_json(reply) if isinstance(reply, dict) else EthdevReply()
                why = tel.error or "no /ethdev/stats for ports 0 and 1"
                raise ZeroLossError(f"{self.lab.path}: dut.vnfs.{k} ({v.name}): its telemetry socket {v.telemetry} "
                                    f"on {self.lab.vnf_target(v).target} gives no counters ({why})",
                                    "set telemetry to the VNF's dpdk_telemetry.v2 socket (DPDK's --file-prefix "
                                    "folder, e.g. /var/run/dpdk/rte/) and check that the VNF runs")

    def find_ovs(self) -> None:
        """ovs-vswitchd's and ovsdb-server's pids from their pid files, and vswitchd's control socket (again after
        a restart: zeroloss events' ovs-restart)."""
        a = self.agent()
        rundir = self.lab.ovs_rundir
        r = ran(a.batch([self._req_run(["cat", f"{rundir}/ovs-vswitchd.pid"]),
                         self._req_run(["cat", f"{rundir}/ovsdb-server.pid"])]))
        vswitchd, db = _pid(r[0]), _pid(r[1])
        if vswitchd is None:
            raise ZeroLossError(f"{a.name}: no ovs-vswitchd in {rundir} ({(r[0].err or '').strip() or 'no pid'})",
                                "set dut.ovs.rundir in the lab file to OVS's run directory")
        self.vswitchd_pid = vswitchd
        if db is not None:
            self.ovsdb_pid = db
        self.ctl = f"{rundir}/ovs-vswitchd.{vswitchd}.ctl"

    @property
    def pids(self) -> dict[str, int]:
        """OVS's daemons found on the node and their pids (what the health check watches)."""
        return {name: pid for name, pid in (("ovs-vswitchd", self.vswitchd_pid), ("ovsdb-server", self.ovsdb_pid))
                if pid is not None}

    def _start_vfs(self) -> None:
        if self.vfs.specs:
            self.vfs.start(self.agent().call, self._req_run)
            self.vfs.parse(self.agent().batch(self.vfs.items(self._req_run)))  # the PFs' VF settings, for the audit

    def topology(self) -> None:
        """Bridges, their ports and the datapath's port numbers (none on a node without OVS)."""
        if not self.ovs:
            return
        a = self.agent()
        brs = vsctl_names(self.vsctl("list-br"))
        outs = ran(a.batch([self._req_run(self.vsctl_argv("list-ports", b)) for b in brs]
                           + [self._req_ctl("dpif/show")]))
        self.bridge_of = {p: b for b, r in zip(brs, outs[:-1], strict=True)
                          for p in vsctl_names(self._out(r, "list-ports"))}
        for b in brs:
            self.bridge_of.setdefault(b, b)
        self.dp_names = {n: p for p, n in parse_dpif_show(self._out(outs[-1], "dpif/show"),
                                                           f"{a.name}'s dpif/show").items()}

    def trace(self, bridge: str, match: str) -> str:
        return self.appctl("ofproto/trace", bridge, match)

    def use_path(self, ports: list[str], meters: list[str], procs: list[str]) -> None:
        """The OVS ports, meters and VNF stages the trials' frames cross: what every reading reads."""
        self.path_ports = sorted(set(ports))
        self.meter_bridges = {m.split("/")[0] for m in meters}
        self.stage_procs = set(procs)

    # readings -------------------------------------------------------------------------------------------
    def path_bridges(self) -> list[str]:
        """The bridges of the OVS ports on the traffic's path."""
        return sorted({self.bridge_of[p] for p in self.path_ports if p in self.bridge_of})

    def counters(self) -> dict:
        """Every stage's counters in one round trip per host: OVS's port counters (OpenFlow 1.4, live), the
        meters on the path, drop coverage, PMD cycles, and each VNF's ethdev counters (telemetry)."""
        if not self.ovs:
            return self._vf_counters()
        brs = self.path_bridges()
        meter_brs = sorted(self.meter_bridges)
        items = [self._req_run(self.ofctl_argv("dump-ports", b, version="OpenFlow14")) for b in brs]
        items += [self._req_run(self.ofctl_argv("meter-stats", b)) for b in meter_brs]
        items += [self._req_ctl("coverage/show"), self._req_ctl("dpif-netdev/pmd-stats-show"),
                  {"op": "alive", "pids": list(self.pids.values())}]
        local_vnfs = [v for v in self.lab.vnfs if not v.remote]
        items += [self._tel(v) for v in local_vnfs]
        items += self.vfs.items(self._req_run)  # SR-IOV VFs on the path: their PFs' per-VF counters
        r = self.agent().batch(items)
        t_ns = time.monotonic_ns()
        self.readings += 1
        self._check_alive(r[len(brs) + len(meter_brs) + 2])
        ports: dict[str, dict] = {}
        for reply in r[:len(brs)]:
            ports.update(parse_dump_ports(self._out(Ran.from_json(reply), "ovs-ofctl dump-ports")))
        meters = {}
        for b, reply in zip(meter_brs, r[len(brs):len(brs) + len(meter_brs)], strict=True):
            for mid, m in parse_meter_stats(self._out(Ran.from_json(reply), "ovs-ofctl meter-stats")).items():
                meters[f"{b}/{mid}"] = m
        k = len(brs) + len(meter_brs)
        coverage, pmds = ran(r[k:k + 2])
        ovs = {"ports": ports, "meters": meters, "coverage": parse_coverage_drops(self._out(coverage, "coverage/show")),
               "pmds": parse_pmd_stats(self._out(pmds, "pmd-stats-show")), "t_ns": t_ns}
        procs = self._procs(local_vnfs, r[k + 3:k + 3 + len(local_vnfs)])
        if self.vfs.specs:
            return {"ovs": ovs, "procs": procs, "vfs": summed(self.vfs.parse(r[k + 3 + len(local_vnfs):]),
                                                             self.vf_sums)}
        return {"ovs": ovs, "procs": procs}

    def _vf_counters(self) -> dict:
        """A reading of a node without OVS: the VNFs' ethdev counters and the VFs' (their PFs'), one round trip."""
        local_vnfs = [v for v in self.lab.vnfs if not v.remote]
        r = self.agent().batch([self._tel(v) for v in local_vnfs] + self.vfs.items(self._req_run))
        self.readings += 1
        procs = self._procs(local_vnfs, r[:len(local_vnfs)])
        return {"ovs": {"t_ns": time.monotonic_ns()}, "procs": procs,
                "vfs": summed(self.vfs.parse(r[len(local_vnfs):]), self.vf_sums)}

    def _procs(self, local_vnfs: list, replies: list) -> dict:
        """The VNFs' ethdev counters: the node's own from the batch's telemetry replies, a guest's or a CNF pod's
        over its own session, and the sums of the stages that name several VNFs (a+b)."""
        procs = {v.name: stats for v, reply in zip(local_vnfs, replies, strict=True)
                 if (stats := _ethdev(reply)) is not None}
        for v in self.lab.vnfs:
            if v.remote:  # a guest's ssh, a CNF pod's exec
                req = {k: x for k, x in self._tel(v).items() if k != "op"}
                stats = _ethdev(self.agent(self.lab.vnf_target(v)).call("telemetry", **req))
                if stats is not None:
                    procs[v.name] = stats
        return self._sums(procs)

    def _sums(self, procs: dict) -> dict:
        """procs with the stages that name several VNFs (a+b) set to the sums of their VNFs' counters."""
        procs = dict(procs)
        for name in sorted(h for h in self.stage_procs if "+" in h):
            parts = [procs.get(n) for n in name.split("+")]
            if all(parts):
                procs[name] = [{key: sum(p[i].get(key, 0) for p in parts) for key in STAT_KEYS} for i in (0, 1)]
        return procs

    def derive(self, reading: dict) -> dict:
        """A reading with its stage sums recomputed from its VNFs' counters (Probe.derive): after a VNF's counters
        were rebased for its restart, a stage summing it with another is the sum of the rebased counters."""
        return {**reading, "procs": self._sums(reading["procs"])} if "procs" in reading else reading

    def _check_alive(self, alive: dict) -> None:
        for name, pid in self.pids.items():
            if not alive.get(str(pid), True):
                raise ComponentDied(f"{name} (pid {pid}) on {self.lab.dut.target} is no longer running")

    def health(self) -> None:
        """Raises ComponentDied when a session is gone or OVS on the node stopped."""
        for a in self.agents.values():
            if not a.alive():
                raise a.lost()
        self._check_alive(self.agent().call("alive", pids=list(self.pids.values())))

    def stop(self, note: Callable[[str], None] = lambda _: None) -> list[str]:
        faults = self.restore(note) if self.changes else []
        for a in self.agents.values():
            a.close()
        self.agents.clear()
        return faults

    def __enter__(self) -> LabDut:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _ethdev(reply: object) -> list[dict] | None:
    """A VNF's telemetry reply as the ledger's two port counter rows; None when it did not answer."""
    rows = EthdevReply.from_json(reply).rows() if isinstance(reply, dict) else None
    if rows is None:
        return None
    return [{k: v for k, v in r.items() if k in ETHDEV_KEYS} for r in rows]


def _pid(reply: Ran) -> int | None:
    """The pid a pid file holds (`cat` of it), None when it holds none."""
    words = reply.out.split() if not reply.rc else []
    return int(words[0]) if words and words[0].isdigit() else None
