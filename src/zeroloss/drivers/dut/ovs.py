"""A private Open vSwitch with DPDK: own database, sockets and run directory; never the system's OVS.

ovsdb-server and ovs-vswitchd-dpdk (Debian openvswitch-switch-dpdk; /usr/sbin/ovs-vswitchd is the
build without DPDK) run as our children, configured through ovs-vsctl/ovs-ofctl/ovs-appctl called
with explicit sockets. OpenFlow rules are kept here and re-applied whenever vswitchd restarts.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.ovsfacts import DatapathTuning

from ..proc import ManagedProcess
from .ovsctl import READ_S as READ_S  # drivers.bench.ovsbench reads it from here
from .ovsports import OvsPorts
from .ovsread import OvsRead

VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
EXIT_S = 15.0   # how long `ovs-appctl exit --cleanup` may take when OVS stops


@dataclass(frozen=True)
class OvsSettings:
    """other_config of Open_vSwitch: DPDK memory and cores."""

    file_prefix: str
    socket_mem_mb: int = 1024       # MTU 9000 ports need 1024 on the bench (BRIEF §7)
    socket_limit_mb: int = 0        # 0: no limit
    lcore_mask: str = "0x1"         # OVS's non-PMD DPDK threads
    pmd_cpu_mask: str = "0x1"       # PMD threads polling the ports
    rxq_assign: str = "cycles"      # cycles | roundrobin | group
    extra: tuple[str, ...] = ()
    # the PMDs' cycles-per-iteration histograms (dpif-netdev/pmd-perf-show): how long their longest iteration
    # ran, read around each trial (host interference); a slight cost per iteration, as the OVS docs say
    perf_metrics: bool = True
    datapath: DatapathTuning = DatapathTuning()  # the caches, revalidators and conntrack limits (zeroloss tune)

    def other_config(self) -> dict[str, str]:
        extra = " ".join((f"--file-prefix={self.file_prefix}", "--in-memory", "--no-pci", *self.extra))
        out = {"dpdk-init": "true", "dpdk-socket-mem": str(self.socket_mem_mb),
               "dpdk-lcore-mask": self.lcore_mask, "pmd-cpu-mask": self.pmd_cpu_mask,
               "pmd-rxq-assign": self.rxq_assign, "dpdk-extra": extra}
        if self.socket_limit_mb:
            out["dpdk-socket-limit"] = str(self.socket_limit_mb)
        if self.perf_metrics:
            out["pmd-perf-metrics"] = "true"
        return {**out, **self.datapath.other_config()}


def net_devices(root: Path = Path("/sys/class/net")) -> dict[str, bool]:
    """The host's network devices: name -> whether it is a tun/tap device."""
    try:
        return {d.name: (d / "tun_flags").exists() for d in root.iterdir()}
    except OSError:
        return {}


def left_taps(names: list[str], before: set[str], now: dict[str, bool]) -> list[str]:
    """Of the taps OVS makes for these names, those present now that were not before. Pure."""
    return [n for n in dict.fromkeys(names) if now.get(n) and n not in before]


@dataclass
class Ovs(OvsPorts, OvsRead):
    """ovsdb-server + ovs-vswitchd-dpdk in rundir; ``with Ovs(...) as ovs:`` stops both however it ends.
    Its calls are OvsCtl's (ovsctl.py), its ports OvsPorts' (ovsports.py), its readings OvsRead's (ovsread.py)."""

    rundir: Path
    settings: OvsSettings
    flows: dict[str, list[str]] = field(default_factory=dict)
    meters: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.db = self.rundir / "conf.db"
        self.db_sock = self.rundir / "db.sock"
        self.vswitchd_ctl = self.rundir / "vswitchd.ctl"
        self.ovsdb = None
        self.vswitchd = None
        self._unixctl = None
        self._bridges = []
        self._links_before = set()

    # processes ------------------------------------------------------------------------------------------
    def start(self) -> Ovs:
        if not os.access(VSWITCHD, os.X_OK):
            raise ZeroLossError(f"{VSWITCHD} is missing", "run 'make setup' (Debian openvswitch-switch-dpdk)")
        self.rundir.mkdir(parents=True, exist_ok=True)
        self._links_before = set(net_devices())
        try:
            self._run(["ovsdb-tool", "create", str(self.db), SCHEMA])
            self.ovsdb = ManagedProcess("ovsdb-server", [
                "ovsdb-server", str(self.db), f"--remote=punix:{self.db_sock}",
                f"--unixctl={self.rundir / 'ovsdb.ctl'}", f"--log-file={self.rundir / 'ovsdb.log'}"],
                self.rundir / "ovsdb.out").start()
            self._wait_path(self.db_sock, self.ovsdb, 10)
            self.vsctl("init")
            self.vsctl("set", "Open_vSwitch", ".",
                       *(f"other_config:{k}={v}" for k, v in self.settings.other_config().items()))
            self.start_vswitchd()
        except BaseException:
            self.stop()
            raise
        return self

    def start_vswitchd(self) -> None:
        self.close_unixctl()
        env = {"OVS_RUNDIR": str(self.rundir), "OVS_LOGDIR": str(self.rundir), "OVS_DBDIR": str(self.rundir)}
        self.vswitchd = ManagedProcess("ovs-vswitchd-dpdk", [
            VSWITCHD, f"unix:{self.db_sock}", f"--unixctl={self.vswitchd_ctl}",
            f"--log-file={self.rundir / 'vswitchd.log'}"], self.rundir / "vswitchd.out", env=env).start()
        self._wait_path(self.vswitchd_ctl, self.vswitchd, 30)
        deadline = time.monotonic() + 60
        while self.vsctl("--if-exists", "get", "Open_vSwitch", ".", "dpdk_initialized").strip() != "true":
            if not self.vswitchd.alive() or time.monotonic() > deadline:
                raise ZeroLossError(f"ovs-vswitchd-dpdk did not initialise DPDK: {self._log_reason()}",
                                    f"check dpdk-extra (ovs_dpdk_extra), dpdk-socket-mem and free hugepages; "
                                    f"log: {self.rundir / 'vswitchd.log'}")
            time.sleep(0.2)
        for bridge in {*self.meters, *self.flows}:  # after a restart, bridges come back from OVSDB
            self._wait_path(self.rundir / f"{bridge}.mgmt", self.vswitchd, 30)
        for bridge, meters in self.meters.items():
            for m in meters:
                self.ofctl("add-meter", bridge, m)
        for bridge in self.flows:
            self._apply_flows(bridge)
        if self.flows:  # after a restart: conntrack's limits are not in OVSDB
            self.apply_ct_limits()

    def apply_ct_limits(self) -> None:
        """Conntrack's connection and zone limits of the settings, once the netdev datapath exists (a bridge)."""
        for cmd in self.settings.datapath.ct_commands():
            self.appctl(*cmd)

    def restart_vswitchd(self) -> None:
        """Restarts vswitchd (the database keeps bridges and ports); OpenFlow rules are applied again."""
        if self.vswitchd:
            self.vswitchd.stop()
        self.start_vswitchd()

    def stop(self) -> None:
        """Stops both daemons: vswitchd through `exit --cleanup` when both run (a stopped one is let run again
        first; one held by a debugger is only signalled), then by signal."""
        self.close_unixctl()
        # exit --cleanup removes the datapath's ports through OVSDB: pointless (and slow) when it is gone
        if self.vswitchd and self.ovsdb and self.ovsdb.thaw() and self.vswitchd.thaw():
            try:
                self._run(["ovs-appctl", "-t", str(self.vswitchd_ctl), "exit", "--cleanup"], check=False,
                          timeout=EXIT_S, guard=False)
            except ZeroLossError:
                pass  # it is signalled below
        if self.vswitchd:
            self.vswitchd.stop()
        if self.ovsdb:
            self.ovsdb.stop()
        self.vswitchd = self.ovsdb = None
        shutil.rmtree(Path("/var/run/dpdk") / self.settings.file_prefix, ignore_errors=True)
        self._remove_taps()

    def _remove_taps(self) -> None:
        """The netdev datapath's kernel taps (one per bridge, and ovs-netdev) are persistent: `exit --cleanup`
        removes them, a vswitchd that was killed or stopped otherwise leaves them on the host. Removes those of our
        bridges that were not there before we started (a tap of that name that was there is not ours)."""
        for name in left_taps([*self._bridges, "ovs-netdev"], self._links_before, net_devices()):
            self._run(["ip", "link", "del", name], check=False, guard=False)

    def __enter__(self) -> Ovs:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # helpers ----------------------------------------------------------------------------------------------
    def _log_reason(self) -> str:
        log = self.rundir / "vswitchd.log"
        try:
            lines = [ln for ln in log.read_text().splitlines() if "|ERR|" in ln or "|EMER|" in ln]
        except OSError:
            lines = []
        return lines[-1].split("|")[-1] if lines else f"see {log}"
