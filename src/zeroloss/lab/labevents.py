"""Events on a lab node (`zeroloss events --lab FILE --allow-dut-changes`): the changes of bench/events.py made
through the node's own OVS commands over its session. Each change is recorded with its undo in LabDut.changes, so
that a trial cut short (an error, Ctrl-C) still leaves the node as it was: LabDut.stop undoes what is left.

Lab events: rxq-rebalance, pmd-mask (one of the lab file's spare_cpus added to pmd-cpu-mask, then back), flows-10k
(the rules piped to ovs-ofctl add-flows by the node's python3, deleted by cookie) and mtu (mtu_request of VNF 1's
first port, or generator port B's OVS port, raised by 100 bytes, then back). Restarting a node's daemons or VNFs is
not zeroloss's to do: those events are refused before anything starts (bench/events.unfit).
"""

from __future__ import annotations

import time

from ..bench.events import FLOW_COOKIE, FLOWS, MTU_STEP, SETTLE_S, Event, mask_cores, pmd_cores
from ..errors import ZeroLossError
from ..host.cpuset import parse_list
from .labdut import LabDut

# run by the node's python3: the rules of bench.events.flow_lines, piped to the command that follows
_FLOWS_PY = ("import subprocess,sys\n"
             "n,c=int(sys.argv[1]),sys.argv[2]\n"
             "t=''.join(f'cookie={c},priority=40000,udp,nw_dst=10.{i>>16&255}.{i>>8&255}.{i&255},tp_dst=9,"
             "actions=drop\\n' for i in range(n))\n"
             "sys.exit(subprocess.run(sys.argv[3:],input=t.encode()).returncode)\n")


class LabEvent(Event):
    def __init__(self, dut: LabDut):
        self.dut = dut
        self.mine: list[tuple[list[str], list[str]]] = []  # this event's entries of dut.changes

    def _change(self, setting: str) -> None:
        n = len(self.dut.changes)
        self.dut.change(setting)
        self.mine = self.dut.changes[n:]

    def _run(self, argv: list[str], what: str) -> None:
        r = self.dut.agent().run(argv, env=self.dut.env, timeout=60)
        if r["rc"]:
            lines = (r.get("err") or "").strip().splitlines()
            raise ZeroLossError(f"{self.dut.lab.dut.target}: {what} failed: {lines[-1] if lines else r['rc']}")

    def _undo_mine(self) -> None:
        """This event's changes undone, newest first, and taken off the node's list of changes to undo."""
        for undo, what in reversed(self.mine):
            self._run(undo, "undo of " + ":".join(what[:3]))
            if (undo, what) in self.dut.changes:
                self.dut.changes.remove((undo, what))
        self.mine = []

    def restore(self) -> None:
        if self.mine:
            self._undo_mine()


class LabRebalance(LabEvent):
    name = "rxq-rebalance"
    has_undo = False

    def apply(self) -> str:
        self.dut.appctl("dpif-netdev/pmd-rxq-rebalance")
        return "ovs-appctl dpif-netdev/pmd-rxq-rebalance"


class LabPmdMask(LabEvent):
    name = "pmd-mask"

    def __init__(self, dut: LabDut):
        super().__init__(dut)
        self.old = dut.other_config().get("pmd-cpu-mask", "")
        spare = parse_list(dut.lab.spare_cpus) if dut.lab.spare_cpus else []
        if not self.old or not spare:
            raise ZeroLossError("event pmd-mask on a lab node needs the node's pmd-cpu-mask set and a spare core",
                                "set spare_cpus in the lab file (a core OVS may take for a PMD during the event)")
        old = int(self.old, 16)
        free = [c for c in spare if not old >> c & 1]
        if not free:
            raise ZeroLossError(f"event pmd-mask: every spare_cpus core is already in pmd-cpu-mask {self.old}",
                                "name a core outside the mask in spare_cpus")
        self.new = hex(old | 1 << free[0])

    def _wait(self, mask: str) -> None:
        deadline = time.monotonic() + SETTLE_S
        while pmd_cores(self.dut.appctl("dpif-netdev/pmd-rxq-show")) != mask_cores(mask):
            if time.monotonic() > deadline:
                raise ZeroLossError(f"event pmd-mask: the node's PMD threads not on {mask} after {SETTLE_S:.0f} s")
            time.sleep(0.02)

    def apply(self) -> str:
        self._change(f"Open_vSwitch:.:other_config:pmd-cpu-mask={self.new}")
        self._wait(self.new)
        return f"ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask={self.new}"

    def undo(self) -> str:
        self._undo_mine()
        self._wait(self.old)
        return f"ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask={self.old}"


class LabFlows(LabEvent):
    name = "flows-10k"

    def __init__(self, dut: LabDut):
        super().__init__(dut)
        bridges = dut.path_bridges()
        if not bridges:
            raise ZeroLossError("event flows-10k: the traffic's path crosses no OVS bridge on the node")
        self.bridge = bridges[-1]

    def apply(self) -> str:
        add = self.dut.ofctl_argv("add-flows", self.bridge, "-")
        delete = self.dut.ofctl_argv("del-flows", self.bridge, f"cookie={FLOW_COOKIE}/-1")
        self.dut.changes.append((delete, ["flows", self.bridge, f"cookie={FLOW_COOKIE}"]))
        self.mine = [self.dut.changes[-1]]
        self._run(["python3", "-c", _FLOWS_PY, str(FLOWS), FLOW_COOKIE, *add], "ovs-ofctl add-flows")
        return f"ovs-ofctl add-flows {self.bridge} ({FLOWS} rules, cookie {FLOW_COOKIE})"

    def undo(self) -> str:
        self._undo_mine()
        return f"ovs-ofctl del-flows {self.bridge} cookie={FLOW_COOKIE}/-1"


class LabMtu(LabEvent):
    name = "mtu"

    def __init__(self, dut: LabDut):
        super().__init__(dut)
        lab = dut.lab
        self.port = lab.vnfs[0].ports[0] if lab.vnfs and lab.vnfs[0].ports else lab.ports[-1].dut_port
        mtu = dut.vsctl("get", "Interface", self.port, "mtu").strip()
        if not mtu.isdigit() or int(mtu) <= 0:
            raise ZeroLossError(f"event mtu: OVS port {self.port} on the node has no MTU ({mtu or 'none'})",
                                "check that the port is up ('ovs-vsctl list Interface PORT')")
        self.new = int(mtu) + MTU_STEP

    def _wait(self, mtu: int) -> None:
        deadline = time.monotonic() + SETTLE_S
        while self.dut.vsctl("get", "Interface", self.port, "mtu").strip() != str(mtu):
            if time.monotonic() > deadline:
                raise ZeroLossError(f"event mtu: OVS port {self.port} not at MTU {mtu} after {SETTLE_S:.0f} s")
            time.sleep(0.02)

    def apply(self) -> str:
        self._change(f"Interface:{self.port}:mtu_request={self.new}")
        self._wait(self.new)
        return f"ovs-vsctl set Interface {self.port} mtu_request={self.new}"

    def undo(self) -> str:
        self._undo_mine()
        self._wait(self.new - MTU_STEP)
        return f"ovs-vsctl set Interface {self.port} mtu_request back ({self.new - MTU_STEP})"


def lab_event(dut: LabDut, name: str) -> Event:
    """The lab's event of that name (bench.events.unfit has said it is a lab event)."""
    kinds: dict[str, type[LabEvent]] = {"rxq-rebalance": LabRebalance, "pmd-mask": LabPmdMask,
                                        "flows-10k": LabFlows, "mtu": LabMtu}
    return kinds[name](dut)
