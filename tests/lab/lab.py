"""The lab compute node for tests: lab.sh deploys OVS-DPDK and a testpmd VNF in a directory, Lab drives it.

``with Lab(dir) as lab:`` starts it and stops it however the block ends. The facts lab.sh wrote to
DIR/lab.json are lab.facts and attributes (lab.rundir, lab.db, lab.ovs_pids, lab.vnf_pid, lab.vnf_telemetry,
lab.vnf_file_prefix, lab.gen_macs, lab.vnf_macs, lab.gen_sockets, lab.vnf_sockets, lab.bridges, lab.ports...).
vsctl/ofctl/appctl run the OVS tools on this lab, as a test injecting a fault would on the node.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

LAB_SH = Path(__file__).with_name("lab.sh")
VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
NEED_MB = 1024 + 256 + 256  # OVS, the VNF and the generator zeroloss starts on the lab


def missing() -> str | None:
    """Why the lab cannot run here (None when it can): root, OVS-DPDK, testpmd and free hugepages."""
    if os.geteuid() != 0:
        return "the lab needs root (hugepages, /var/run/dpdk)"
    if not os.access(VSWITCHD, os.X_OK):
        return f"{VSWITCHD} is missing (Debian package openvswitch-switch-dpdk)"
    for tool in ("ovsdb-server", "ovs-vsctl", "dpdk-testpmd"):
        if not any(os.access(Path(d) / tool, os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep)):
            return f"{tool} is missing (Debian packages openvswitch-switch, dpdk)"
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    free_mb = int(meminfo["HugePages_Free"]) * int(meminfo["Hugepagesize"].split()[0]) // 1024
    if free_mb < NEED_MB:
        return f"{free_mb} MB of hugepages free, the lab needs {NEED_MB} MB"
    return None


class LabError(RuntimeError):
    """lab.sh or an OVS tool failed; the message is its one-line complaint."""


class Lab:
    """A lab deployed by lab.sh in workdir (its basename names the DPDK file prefixes: keep it unique)."""

    def __init__(self, workdir: Path):
        self.workdir = Path(workdir)
        self.facts: dict = {}

    def start(self, timeout: float = 120) -> Lab:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._lab_sh("start", timeout)
        self.facts = json.loads((self.workdir / "lab.json").read_text())
        return self

    def stop(self, timeout: float = 60) -> None:
        """Stops everything lab.sh started; safe to call twice."""
        self._lab_sh("stop", timeout)

    def __enter__(self) -> Lab:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __getattr__(self, name: str):
        facts = self.__dict__.get("facts", {})
        if name in facts:
            return facts[name]
        raise AttributeError(f"no lab fact or attribute '{name}'")

    def __getitem__(self, key: str):
        return self.facts[key]

    # the OVS tools on this lab --------------------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """OVS_RUNDIR of this lab: ovs-appctl and ovs-ofctl find vswitchd and the bridges' sockets through it."""
        return {"OVS_RUNDIR": self.rundir}

    def remote_argv(self, tool: str, *args: str) -> list[str]:
        """An OVS tool's command line as run on the node (over ssh): `env OVS_RUNDIR=... tool [--db=...] args`."""
        db = [f"--db={self.db}"] if tool == "ovs-vsctl" else []
        return ["env", f"OVS_RUNDIR={self.rundir}", tool, *db, *args]

    def vsctl(self, *args: str) -> str:
        return self._run(["ovs-vsctl", f"--db={self.db}", "--timeout=30", *args])

    def ofctl(self, *args: str) -> str:
        """ovs-ofctl; a bridge name means that bridge's socket in the run dir. Meters need ("-O", "OpenFlow13", ...)."""
        return self._run(["ovs-ofctl", *args])

    def appctl(self, *args: str) -> str:
        """ovs-appctl to ovs-vswitchd (pass "-t", "ovsdb-server" first for the database server)."""
        return self._run(["ovs-appctl", "--timeout=30", *args])

    def _run(self, argv: list[str]) -> str:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, **self.env})
        if r.returncode != 0:
            raise LabError(f"{' '.join(argv[:3])} failed: {r.stderr.strip() or r.returncode}")
        return r.stdout

    def _lab_sh(self, action: str, timeout: float) -> None:
        r = subprocess.run([str(LAB_SH), action, str(self.workdir)], capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            lines = [ln for ln in r.stderr.splitlines() if ln.startswith("lab.sh:")] or r.stderr.splitlines()
            raise LabError(lines[0] if lines else f"lab.sh {action} exited with {r.returncode}")
