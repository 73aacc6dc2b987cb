"""How LabDut talks to a lab node: its SSH sessions (one per host), ovs-vsctl and ovs-appctl over them, the
requests a batch is made of (the base of drivers.lab.labdut.LabDut)."""

from __future__ import annotations

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.ssh import SshTarget

from .kube import KubeExecTarget
from .labfile import Lab
from .remote import RemoteAgent
from .replies import Ran


class LabCtl:
    """The calls to one lab node's OVS and VNFs; LabDut sets the state below."""

    lab: Lab
    agents: dict[str, RemoteAgent]
    ctl: str
    ovs: bool

    # sessions -------------------------------------------------------------------------------------------
    def agent(self, target: SshTarget | KubeExecTarget | None = None) -> RemoteAgent:
        target = target or self.lab.dut
        a = self.agents.get(target.target)
        if a is None:
            a = self.agents[target.target] = RemoteAgent(target)
            a.start()
        return a

    @property
    def env(self) -> dict:
        return {"OVS_RUNDIR": self.lab.ovs_rundir}

    def vsctl_argv(self, *args: str) -> list[str]:
        return ["ovs-vsctl", f"--db={self.lab.ovs_db}", "--timeout=10", *args]

    def ofctl_argv(self, cmd: str, bridge: str, *args: str, version: str = "OpenFlow13") -> list[str]:
        return ["ovs-ofctl", "-O", version, "--names", cmd, bridge, *args]

    def _req_run(self, argv: list[str]) -> dict:
        return {"op": "run", "argv": argv, "env": self.env, "timeout": 15}

    def _req_ctl(self, cmd: str, *args: str) -> dict:
        return {"op": "unixctl", "path": self.ctl, "cmd": cmd, "args": list(args)}

    def _out(self, reply: Ran, what: str) -> str:
        if reply.rc:
            raise ZeroLossError(f"{self.lab.dut.target}: {what} failed: {reply.why()}")
        return reply.out

    def vsctl(self, *args: str) -> str:
        return self._out(self.agent().run(self.vsctl_argv(*args), env=self.env), "ovs-vsctl " + " ".join(args[:3]))

    def appctl(self, cmd: str, *args: str) -> str:
        return self._out(Ran.from_json(self.agent().call("unixctl", path=self.ctl, cmd=cmd, args=list(args))),
                         f"ovs-appctl {cmd}")

    def _need_ovs(self, what: str) -> None:
        if not self.ovs:
            raise ZeroLossError(f"lab: {what}, and this lab's paths cross no OVS (every generator port is cabled to "
                                "an SR-IOV VF)", "use a lab file whose generator ports are cabled to OVS ports")

    def _tel(self, v) -> dict:
        return {"op": "telemetry", "path": v.telemetry, "cmds": ["/ethdev/stats,0", "/ethdev/stats,1"],
                "timeout": 1.0}
