"""Events on a lab node (`zeroloss events --lab FILE --allow-dut-changes`): the changes of drivers/bench/events.py made
through the node's own commands over its session. Each change is recorded with its undo in LabDut.changes, so
that a trial cut short (an error, Ctrl-C) still leaves the node as it was: LabDut.stop undoes what is left.

Lab events: rxq-rebalance, pmd-mask (one of the lab file's spare_cpus added to pmd-cpu-mask, then back), flows-10k
(the rules piped to ovs-ofctl add-flows by the node's python3, deleted by cookie), mtu (mtu_request of VNF 1's
first port, or generator port B's OVS port, raised by 100 bytes, then back), bond-down / bond-up (the active member
of the OVS bond a generator port is cabled to taken down, then up: netdev-dpdk/set-admin-state for a DPDK member,
ovs-ofctl mod-port BRIDGE MEMBER down/up otherwise), ovs-restart and vnf-restart (the commands the lab file names,
dut.ovs.restart and dut.vnfs.0.restart, run on the node; then OVS answers again and the path's ports are up, or the
VNF's telemetry answers again, within BACK_S; the restarted part's counters are rebased as on the bench).
"""

from __future__ import annotations

import shlex
import time

from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError

from ..bench.events import FLOW_COOKIE, FLOWS, MTU_STEP, SETTLE_S, Event, active_member, mask_cores, pmd_cores
from ..bench.ovsbench import bond_members
from ..dut.ovsstats import openflow_up
from .labdut import LabDut, _ethdev
from .labfile import missing_command

RESTART_S = 300.0  # the longest a lab file's restart command may run
BACK_S = 60.0      # how long OVS or a VNF may take to answer again, its ports up, after its restart command
DPDK_TYPES = ("dpdk", "dpdkvhostuser", "dpdkvhostuserclient")  # netdev-dpdk/set-admin-state takes these

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


# the node's OVS port counters, read around each action that may set them back to zero: OVS 3.x sums a vhost
# port's per-virtqueue counters (new with a reconnected VNF) and zeroes its drop counters when the port is
# reconfigured or set up, as on the bench (bench.events, outagerun.restarted)
PORTS = (("ovs", "ports"),)


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


class LabRestart(LabEvent):
    """A lab file's restart command run on the node, then waited for: what restarted answers again."""

    has_undo = False

    def __init__(self, dut: LabDut, argv: tuple[str, ...] | None):
        super().__init__(dut)
        why = missing_command(dut.lab, self.name)
        if why or argv is None:
            raise ZeroLossError(why or f"event {self.name}: no command")
        self.argv = list(argv)

    def _restart(self) -> None:
        r = self.dut.agent().batch([{"op": "run", "argv": self.argv, "env": self.dut.env, "timeout": RESTART_S}],
                                   timeout=RESTART_S + 10)[0]
        if r["rc"]:
            lines = (r.get("err") or r.get("out") or "").strip().splitlines()
            raise ZeroLossError(f"event {self.name}: {shlex.join(self.argv)} failed on {self.dut.lab.dut.target}: "
                                f"{lines[-1] if lines else 'exit status ' + str(r['rc'])}")

    def _ports_down(self, ports: list[str]) -> list[str]:
        """The OVS ports not up: OVSDB's link_state, else OpenFlow's port state (after a vswitchd restart OVS 3.1
        can leave link_state 'down' in OVSDB while the port forwards, as dut/ovs.datapath_port_up found on the
        bench)."""
        dut = self.dut
        replies = dut.agent().batch([dut._req_run(dut.vsctl_argv("get", "Interface", p, "link_state")) for p in ports])
        down = {p: (r.get("out") or "").strip().strip('"') or "no link_state" for p, r in zip(ports, replies,
                                                                                              strict=True)
                if r.get("rc") or r["out"].strip().strip('"') != "up"}
        bridges = sorted({dut.bridge_of[p] for p in down if p in dut.bridge_of})
        shows = dut.agent().batch([dut._req_run(dut.ofctl_argv("show", b)) for b in bridges])
        text = "\n".join(r.get("out") or "" for r in shows if not r.get("rc"))
        return [f"{p} ({state})" for p, state in down.items() if not openflow_up(text, p)]

    def _late(self, what: str) -> ZeroLossError:
        return ZeroLossError(f"event {self.name}: after {shlex.join(self.argv)}, {what} on {self.dut.lab.dut.target} "
                             f"within {BACK_S:.0f} s", "bring it back by hand; check the command in the lab file")


class LabOvsRestart(LabRestart):
    """dut.ovs.restart: OVS restarted by the node's own command; done when a new ovs-vswitchd answers on its control
    socket and the path's OVS ports are up. The OVS counters start from zero: the engine rebases them."""

    name = "ovs-restart"
    resets = (("ovs",),)

    def __init__(self, dut: LabDut):
        super().__init__(dut, dut.lab.ovs_restart)

    def apply(self) -> str:
        old = self.dut.pids.get("ovs-vswitchd")
        self._restart()
        deadline = time.monotonic() + BACK_S
        why = ""
        while True:
            try:
                self.dut.find_ovs()
                new = self.dut.pids["ovs-vswitchd"]
                alive = self.dut.agent().call("alive", pids=[new])
                if new == old:
                    why = f"ovs-vswitchd still pid {old}: not restarted"
                elif not isinstance(alive, dict) or not alive.get(str(new)):
                    why = f"ovs-vswitchd (pid {new}) not running"
                else:
                    self.dut.appctl("version")
                    down = self._ports_down(self.dut.path_ports)
                    if not down:
                        break
                    why = f"OVS port(s) {', '.join(down)} not up"
            except ZeroLossError as e:
                why = f"OVS not answering ({e.message})"
            if time.monotonic() > deadline:
                raise self._late(why)
            time.sleep(0.1)
        self.dut.topology()  # the new process's datapath port numbers
        again = self.dut.reapply_datapath()  # the run's conntrack limits: the new datapath starts with defaults
        return (f"{shlex.join(self.argv)} (ovs-vswitchd pid {old} -> {new}); the path's OVS ports up again"
                + (f"; set again: {', '.join(again)}" if again else ""))


class LabVnfRestart(LabRestart):
    """dut.vnfs.0.restart: VNF 1 restarted by the node's own command; done when its DPDK telemetry answers again
    with counters that started anew (fewer frames than just before) and its OVS ports are up. Its counters are
    rebased."""

    name = "vnf-restart"
    watch = PORTS

    def __init__(self, dut: LabDut):
        super().__init__(dut, dut.lab.vnfs[0].restart if dut.lab.vnfs else None)
        self.vnf = dut.lab.vnfs[0]
        self.resets = (("procs", self.vnf.name),)

    def _frames(self) -> int | None:
        """The VNF's received and sent frames (telemetry), None when it does not answer."""
        v = self.vnf
        target = self.dut.lab.vnf_target(v)
        try:
            if v.remote and (a := self.dut.agents.get(target.target)) is not None and not a.alive():
                a.close()
                del self.dut.agents[target.target]  # a rebooted guest or a new pod: a new session
            req = {k: x for k, x in self.dut._tel(v).items() if k != "op"}
            reply = self.dut.agent(target).call("telemetry", **req)
            stats = _ethdev(reply) if isinstance(reply, dict) else None
        except ZeroLossError:
            return None
        if stats is None:
            return None
        return sum(int(row.get("ipackets", 0)) + int(row.get("opackets", 0)) for row in stats)

    def apply(self) -> str:
        before = self._frames()
        self._restart()
        deadline = time.monotonic() + BACK_S
        gone = before is None
        ports = [p for p in self.vnf.ports if not p.startswith("sriov:")] if self.dut.ovs else []
        while True:
            now = self._frames()
            gone = gone or now is None
            if now is None:
                why = f"{self.vnf.name}'s telemetry ({self.vnf.telemetry}) not answering"
            elif not gone and before is not None and now >= before:
                why = f"{self.vnf.name} not restarted (its counters did not start anew)"
            else:
                down = self._ports_down(ports) if ports else []
                if not down:
                    break
                why = f"OVS port(s) {', '.join(down)} not up"
            if time.monotonic() > deadline:
                raise self._late(why)
            time.sleep(0.1)
        return f"{shlex.join(self.argv)} ({self.vnf.name}); its telemetry answers again, its ports up"


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
