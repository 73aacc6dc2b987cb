"""The restart events on a lab node: ovs-restart and vnf-restart run the commands the lab file names (dut.ovs.restart,
dut.vnfs.0.restart) on the node, then wait until OVS answers again and the path's ports are up, or the VNF's telemetry
answers again with counters that started anew, within BACK_S; the restarted part's counters are rebased as on the
bench."""

from __future__ import annotations

import shlex
import time

from zeroloss.core.errors import ZeroLossError

from ..dut.ovsstats import openflow_up
from .labdut import LabDut, _ethdev
from .labeventbase import PORTS, LabEvent
from .labfile import missing_command
from .replies import Ran, ran

RESTART_S = 300.0  # the longest a lab file's restart command may run
BACK_S = 60.0      # how long OVS or a VNF may take to answer again, its ports up, after its restart command


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
        r = Ran.from_json(self.dut.agent().batch([{"op": "run", "argv": self.argv, "env": self.dut.env,
                                                   "timeout": RESTART_S}], timeout=RESTART_S + 10)[0])
        if r.rc:
            lines = (r.err or r.out or "").strip().splitlines()
            raise ZeroLossError(f"event {self.name}: {shlex.join(self.argv)} failed on {self.dut.lab.dut.target}: "
                                f"{lines[-1] if lines else 'exit status ' + str(r.rc)}")

    def _ports_down(self, ports: list[str]) -> list[str]:
        """The OVS ports not up: OVSDB's link_state, else OpenFlow's port state (after a vswitchd restart OVS 3.1
        can leave link_state 'down' in OVSDB while the port forwards, as dut/ovs.datapath_port_up found on the
        bench)."""
        dut = self.dut
        replies = ran(dut.agent().batch([dut._req_run(dut.vsctl_argv("get", "Interface", p, "link_state"))
                                         for p in ports]))
        down = {p: (r.out or "").strip().strip('"') or "no link_state" for p, r in zip(ports, replies, strict=True)
                if r.rc or r.out.strip().strip('"') != "up"}
        bridges = sorted({dut.bridge_of[p] for p in down if p in dut.bridge_of})
        shows = ran(dut.agent().batch([dut._req_run(dut.ofctl_argv("show", b)) for b in bridges]))
        text = "\n".join(r.out or "" for r in shows if not r.rc)
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
        old = self.dut.vswitchd_pid
        self._restart()
        deadline = time.monotonic() + BACK_S
        why = ""
        while True:
            try:
                self.dut.find_ovs()
                new = self.dut.vswitchd_pid
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
