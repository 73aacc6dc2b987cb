"""Events on a lab node (`zeroloss events --lab FILE --allow-dut-changes`): the changes of drivers/bench/events.py made
through the node's own commands over its session. Each change is recorded with its undo in LabDut.changes, so
that a trial cut short (an error, Ctrl-C) still leaves the node as it was: LabDut.stop undoes what is left.

Lab events: rxq-rebalance, pmd-mask (one of the lab file's spare_cpus added to pmd-cpu-mask, then back), flows-10k
(the rules piped to ovs-ofctl add-flows by the node's python3, deleted by cookie), mtu (mtu_request of VNF 1's
first port, or generator port B's OVS port, raised by 100 bytes, then back), bond-down / bond-up (the active member
of the OVS bond a generator port is cabled to taken down, then up: netdev-dpdk/set-admin-state for a DPDK member,
ovs-ofctl mod-port BRIDGE MEMBER down/up otherwise), ovs-restart and vnf-restart (the commands the lab file names
run on the node, then waited for: drivers/lab/labrestart.py).
"""

from __future__ import annotations

import shlex
import time

from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError

from ..bench.events import FLOW_COOKIE, FLOWS, MTU_STEP, SETTLE_S, Event, active_member, mask_cores, pmd_cores
from ..bench.ovsbench import bond_members
from ..dut.ovsstats import openflow_up as openflow_up  # the lab events' tests read it from here
from .labdut import LabDut
from .labeventbase import PORTS, LabEvent
from .labfile import missing_command
from .labrestart import LabOvsRestart, LabVnfRestart

DPDK_TYPES = ("dpdk", "dpdkvhostuser", "dpdkvhostuserclient")  # netdev-dpdk/set-admin-state takes these

# run by the node's python3: the rules of bench.events.flow_lines, piped to the command that follows
_FLOWS_PY = ("import subprocess,sys\n"
             "n,c=int(sys.argv[1]),sys.argv[2]\n"
             "t=''.join(f'cookie={c},priority=40000,udp,nw_dst=10.{i>>16&255}.{i>>8&255}.{i&255},tp_dst=9,"
             "actions=drop\\n' for i in range(n))\n"
             "sys.exit(subprocess.run(sys.argv[3:],input=t.encode()).returncode)\n")


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
    watch = PORTS

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


def bond_list(text: str) -> dict[str, list[str]]:
    """`ovs-appctl bond/list`: each bond's members ("bond\ttype\trecircID\tmembers" then a line per bond)."""
    out = {}
    for line in text.splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 4 and cols[0]:
            out[cols[0]] = [m.strip() for m in cols[3].split(",") if m.strip()]
    return out


def path_bond(bonds: dict[str, list[str]], ports: list[str]) -> str | None:
    """The bond the generator's ports are cabled to (a port named as the bond or as one of its members): the last
    port's first, as the bench's events take side B's bond; None when no port is on a bond."""
    for port in reversed(ports):
        for bond, members in bonds.items():
            if port == bond or port in members:
                return bond
    return None


def admin_argv(dut: LabDut, kind: str, bridge: str, member: str, up: bool) -> list[str]:
    """The node's command that takes a bond member's link down or up, as a failed NIC port: netdev-dpdk/set-admin-state
    for a DPDK port (OVS's own link state), ovs-ofctl mod-port (the port administratively down) for any other."""
    if kind in DPDK_TYPES:
        return ["ovs-appctl", "-t", dut.ctl, "netdev-dpdk/set-admin-state", member, "up" if up else "down"]
    return dut.ofctl_argv("mod-port", bridge, member, "up" if up else "down")


class LabBond(LabEvent):
    """The active member of the bond on the path taken down, then up (bond-down); or down before the trial and up
    at the event (bond-up). Each down is in LabDut.changes with its up until it is undone."""

    watch = PORTS

    def __init__(self, dut: LabDut, name: str):
        super().__init__(dut)
        self.name = name
        self.has_undo = name == "bond-down"
        self.starts_down = name == "bond-up"
        ports = [p.dut_port for p in dut.lab.ports]
        bonds = bond_list(dut.appctl("bond/list"))
        bond = path_bond(bonds, ports)
        if bond is None:
            raise ZeroLossError(f"event {name}: no OVS bond on the traffic's path on {dut.lab.dut.target} (the "
                                f"generator ports' {', '.join(ports)}; bonds: {', '.join(bonds) or 'none'})",
                                "cable the generator to a bond's member (dut_port: the bond or its member), or "
                                "leave bond events out")
        self.bond, self.members = bond, bonds[bond]
        self.member = ""

    def _state(self) -> dict[str, str]:
        return bond_members(self.dut.appctl("bond/show", self.bond))

    def _set(self, up: bool) -> str:
        m = self.member
        kind = self.dut.vsctl("get", "Interface", m, "type").strip().strip('"')
        bridge = self.dut.bridge_of.get(self.bond) or self.dut.vsctl("port-to-br", self.bond).strip()
        argv = admin_argv(self.dut, kind, bridge, m, up)
        if up:
            self._undo_mine()  # the recorded up, run now and taken off the list
        else:
            self.dut.changes.append((admin_argv(self.dut, kind, bridge, m, True), ["bond", self.bond, m, "down"]))
            self.mine = [self.dut.changes[-1]]
            self._run(argv, f"{m} down")
        want = "enabled" if up else "disabled"
        deadline = time.monotonic() + SETTLE_S
        while self._state().get(m) != want:
            if time.monotonic() > deadline:
                raise ZeroLossError(f"event {self.name}: bond {self.bond}'s member {m} not {want} on the node after "
                                    f"{SETTLE_S:.0f} s")
            time.sleep(0.01)
        return shlex.join(argv)

    def prepare(self) -> list[str]:
        self.member = active_member(self.dut.appctl("bond/show", self.bond)) or self.members[0]
        # the generator port cabled to the member itself (one cabled to the bond goes through a switch: not ours)
        cabled = [i for i, p in enumerate(self.dut.lab.ports) if p.dut_port == self.member]
        self.link_down_port = cabled[0] if cabled else None
        return [self._set(False)] if self.name == "bond-up" else []

    def apply(self) -> str:
        return self._set(self.name == "bond-up")

    def undo(self) -> str:
        return self._set(True)


def check(dut: LabDut, names: list[str] | tuple[str, ...]) -> None:
    """Before any traffic: the events that need something of the lab file or the node (a restart command, a bond
    on the path) have it, or one line says what is missing. Nothing is changed."""
    for name in names:
        why = missing_command(dut.lab, name)
        if why:
            raise ZeroLossError(why)
        if name.startswith("bond-"):
            LabBond(dut, name)


def lab_event(dut: LabDut, name: str) -> Event:
    """The lab's event of that name (the lab kind's events, targets/kinds/lab.py, name it)."""
    if name.startswith("bond-"):
        return LabBond(dut, name)
    kinds: dict[str, type[LabEvent]] = {"rxq-rebalance": LabRebalance, "pmd-mask": LabPmdMask,
                                        "flows-10k": LabFlows, "mtu": LabMtu, "ovs-restart": LabOvsRestart,
                                        "vnf-restart": LabVnfRestart}
    return kinds[name](dut)
