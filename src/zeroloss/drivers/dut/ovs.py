"""A private Open vSwitch with DPDK: own database, sockets and run directory; never the system's OVS.

ovsdb-server and ovs-vswitchd-dpdk (Debian openvswitch-switch-dpdk; /usr/sbin/ovs-vswitchd is the
build without DPDK) run as our children, configured through ovs-vsctl/ovs-ofctl/ovs-appctl called
with explicit sockets. OpenFlow rules are kept here and re-applied whenever vswitchd restarts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.ovsfacts import DatapathTuning

from ..proc import ComponentDied, ManagedProcess, check_alive
from ..session import record_tap
from .ovsstats import (
    CT_STATS_MAX,
    CT_STATS_READ,
    DATAPATH_READS,
    datapath_state,
    openflow_up,
    parse_coverage_drops,
    parse_dump_ports,
    parse_mempool,
    parse_meter_config,
    parse_meter_stats,
    parse_pmd_stats,
    pmd_perf,
)
from .unixctl import Unixctl

VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
CALL_S = 30.0   # how long a configuration call (ovs-vsctl, ovs-ofctl, ovs-appctl) may go unanswered
READ_S = 3.0    # the same for the readings around each trial: a daemon that does not answer is a fault
EXIT_S = 15.0   # how long `ovs-appctl exit --cleanup` may take when OVS stops
ROUTE_WAIT_S = 5.0  # how long OVS may take to learn a tap's new address before it takes a route through it
CHECK_S = 0.25  # how often a call that has not returned asks the daemons' health


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


def _short(arg: str) -> str:
    """An argument as an error message shows it: our private socket paths by their file name."""
    return arg.rsplit("/", 1)[-1] if arg.startswith(("/", "unix:/")) else arg


def _vhost_options(sock: Path, n_rxq: int, rxd: int, txd: int, tx_retries_max: int | None) -> list[str]:
    opts = [f"options:vhost-server-path={sock}", f"options:n_rxq={n_rxq}",
            f"options:n_rxq_desc={rxd}", f"options:n_txq_desc={txd}"]
    if tx_retries_max is not None and tx_retries_max >= 0:
        opts.append(f"options:tx-retries-max={tx_retries_max}")
    return opts


def parse_interface_statistics(csv_text: str) -> dict[str, dict[str, int]]:
    """`ovs-vsctl --format=csv --data=bare --columns=name,statistics list Interface` as {name: {key: n}}."""
    import csv
    import io

    out = {}
    for row in csv.reader(io.StringIO(csv_text)):
        if len(row) == 2:
            pairs = (kv.split("=", 1) for kv in row[1].split() if "=" in kv)
            out[row[0]] = {k: int(v) for k, v in pairs if re.fullmatch(r"-?\d+", v)}
    return out


def vsctl_names(text: str) -> list[str]:
    """ovs-vsctl list-br / list-ports output: one name a line (a name may hold spaces)."""
    return [line for line in text.splitlines() if line.strip()]


def parse_map(text: str) -> dict[str, int | str]:
    """ovs-vsctl's map output '{rx_packets=10, tx_dropped=0}' as a dict (numbers as int)."""
    out: dict[str, int | str] = {}
    for key, value in re.findall(r'([\w:-]+)=("[^"]*"|[^,}]*)', text):
        value = value.strip().strip('"')
        out[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return out


@dataclass
class Ovs:
    """ovsdb-server + ovs-vswitchd-dpdk in rundir; ``with Ovs(...) as ovs:`` stops both however it ends."""

    rundir: Path
    settings: OvsSettings
    flows: dict[str, list[str]] = field(default_factory=dict)
    meters: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.db = self.rundir / "conf.db"
        self.db_sock = self.rundir / "db.sock"
        self.vswitchd_ctl = self.rundir / "vswitchd.ctl"
        self.ovsdb: ManagedProcess | None = None
        self.vswitchd: ManagedProcess | None = None
        self._unixctl: Unixctl | None = None
        self._bridges: list[str] = []
        self._links_before: set[str] = set()

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

    def close_unixctl(self) -> None:
        """Closes the kept unixctl connection to ovs-vswitchd (a new one opens at the next command)."""
        if self._unixctl is not None:
            self._unixctl.close()
            self._unixctl = None

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

    def processes(self) -> list[ManagedProcess]:
        """ovsdb-server and ovs-vswitchd-dpdk as they run now (vswitchd is a new process after a restart)."""
        return [p for p in (self.ovsdb, self.vswitchd) if p is not None]

    def health(self) -> None:
        """Raises ComponentDied naming a daemon that is no longer running or is stopped."""
        check_alive(self.processes())

    def __enter__(self) -> Ovs:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # configuration ----------------------------------------------------------------------------------------
    def vsctl(self, *args: str, timeout: float = CALL_S) -> str:
        """An ovs-vsctl command to our database (--no-wait: never blocks on a vswitchd that is down or busy,
        BRIEF §7); ComponentDied when ovsdb-server does not answer within timeout."""
        return self._run(["ovs-vsctl", f"--db=unix:{self.db_sock}", "--no-wait", *args], timeout=timeout)

    def appctl(self, *args: str, timeout: float = CALL_S) -> str:
        """An ovs-appctl command to our vswitchd, through the OVS Python unixctl client."""
        if self._unixctl is None:
            who = f"{self.vswitchd.name} (pid {self.vswitchd.pid})" if self.vswitchd else "ovs-vswitchd"
            self._unixctl = Unixctl(self.vswitchd_ctl, who, check=self.health)
        return self._unixctl.call(*args, timeout=timeout)

    def ofctl(self, cmd: str, bridge: str, *args: str, version: str = "OpenFlow13", timeout: float = CALL_S) -> str:
        """An ovs-ofctl command to one of our bridges."""
        return self._run(["ovs-ofctl", "-O", version, "--names", cmd, f"unix:{self.rundir / (bridge + '.mgmt')}",
                          *args], timeout=timeout)

    def add_bridge(self, name: str) -> None:
        """A netdev bridge, returned once vswitchd serves its OpenFlow socket: vsctl does not wait (--no-wait), and
        an ovs-ofctl to the bridge before vswitchd has made it fails ('br0.mgmt: No such file', seen on the bench)."""
        self._bridges.append(name)
        self.vsctl("add-br", name, "--", "set", "bridge", name, "datapath_type=netdev")
        if self.vswitchd is not None:
            self._wait_path(self.rundir / f"{name}.mgmt", self.vswitchd, 30)
            self._record_taps()

    def _record_taps(self) -> None:
        """The datapath's taps this bridge made (its own and ovs-netdev), recorded in our run folder: a zeroloss
        killed with -9 never runs stop(), and the next one's clean-up of its session removes exactly these."""
        deadline = time.monotonic() + 2
        for name in dict.fromkeys([*self._bridges, "ovs-netdev"]):
            if name in self._links_before:
                continue  # a tap of that name that was there before us is not ours
            while not record_tap(self.rundir, name) and time.monotonic() < deadline:
                time.sleep(0.05)

    def add_vhost_client_port(self, bridge: str, name: str, sock: Path, n_rxq: int = 1, mtu: int = 1500,
                              rxd: int = 2048, txd: int = 2048, tx_retries_max: int | None = None) -> None:
        """A dpdkvhostuserclient port: OVS connects to the socket the VM (or zlgen) serves, as QEMU does."""
        self.vsctl("add-port", bridge, name, "--", "set", "Interface", name, "type=dpdkvhostuserclient",
                   *_vhost_options(sock, n_rxq, rxd, txd, tx_retries_max), f"mtu_request={mtu}")

    def add_memif_port(self, bridge: str, name: str, sock: Path, n_rxq: int = 1, mtu: int = 1500,
                       rxd: int = 2048, txd: int = 2048) -> None:
        """A DPDK port on a memif vdev (net_memif, OVS's dpdk-devargs as for any vdev): OVS is the memif server
        and creates the socket, the VNF connects as the client (what Userspace CNI's memif interfaces do)."""
        self.vsctl("add-port", bridge, name, "--", "set", "Interface", name, "type=dpdk",
                   f"options:dpdk-devargs=net_memif_{name},role=server,socket={sock},socket-abstract=no,id=0",
                   f"options:n_rxq={n_rxq}",
                   f"options:n_rxq_desc={rxd}", f"options:n_txq_desc={txd}", f"mtu_request={mtu}")

    def add_vhost_client_bond(self, bridge: str, name: str, members: list[tuple[str, Path]], mode: str,
                              n_rxq: int = 1, mtu: int = 1500, rxd: int = 2048, txd: int = 2048,
                              tx_retries_max: int | None = None) -> None:
        """An OVS bond (Port with several Interfaces) of dpdkvhostuserclient members, without LACP."""
        args = ["add-bond", bridge, name, *(m for m, _ in members), f"bond_mode={mode}", "lacp=off"]
        for member, sock in members:
            args += ["--", "set", "Interface", member, "type=dpdkvhostuserclient",
                     *_vhost_options(sock, n_rxq, rxd, txd, tx_retries_max), f"mtu_request={mtu}"]
        self.vsctl(*args)

    def add_vxlan_port(self, bridge: str, name: str, remote_ip: str, local_ip: str) -> None:
        """A VXLAN tunnel port as Neutron's OVS agent adds it to br-tun: the VNI set by the flows (in_key/out_key
        flow), to one remote VTEP; in the netdev datapath it is a userspace tunnel (tnl_push/tnl_pop)."""
        self.vsctl("add-port", bridge, name, "--", "set", "Interface", name, "type=vxlan",
                   f"options:remote_ip={remote_ip}", f"options:local_ip={local_ip}", "options:in_key=flow",
                   "options:out_key=flow", "options:df_default=true")

    def mac_in_use(self, name: str) -> str:
        """The MAC address an interface uses (a bridge's own port: the tap's)."""
        return self.vsctl("get", "Interface", name, "mac_in_use").strip().strip('"')

    def set_vtep(self, bridge: str, cidr: str, remote_ip: str, remote_mac: str) -> None:
        """The local VTEP of userspace tunnelling (OVS's userspace-tunneling how-to): the address on the bridge's
        own port (a kernel tap in the netdev datapath, gone with vswitchd), a route to the remote VTEP out of the
        bridge, and its neighbour entry (tnl/arp/set: no ARP exchange needed)."""
        clash = [ln.split()[1] for ln in self._run(["ip", "-o", "-4", "addr", "show", "to", cidr]).splitlines()
                 if ln.split()[1] != bridge]
        clash += [ln for ln in self._run(["ip", "-4", "route", "show", "match", cidr.split("/")[0]]).splitlines()
                  if "default" not in ln and f"dev {bridge} " not in ln + " "]
        if clash:
            raise ZeroLossError(f"the VTEP network {cidr} is already this host's ({'; '.join(clash)})",
                                "the bench's tunnel would take it over: run it on a host without that network")
        # no IPv6 on the tap: its router solicitations and MLD reports would leave by the underlay port and reach
        # zlgen as foreign frames (seen: one 70 B frame in a trial, an unexplained frame in the ledger)
        v6 = Path("/proc/sys/net/ipv6/conf") / bridge / "disable_ipv6"
        if v6.exists():
            v6.write_text("1\n")
        for argv in (["ip", "addr", "replace", cidr, "dev", bridge], ["ip", "link", "set", bridge, "up"]):
            self._run(argv)
        # OVS learns the tap's new address over netlink, a moment later: until then it has no source address for the
        # route and refuses it ("Error while inserting route"; seen once in 22 bench starts)
        deadline = time.monotonic() + ROUTE_WAIT_S
        while True:
            try:
                self.appctl("ovs/route/add", f"{remote_ip}/32", bridge)
                break
            except ComponentDied:
                raise
            except ZeroLossError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.appctl("tnl/arp/set", bridge, remote_ip, remote_mac)

    def clear_vtep(self, bridge: str, cidr: str) -> None:
        """Takes the VTEP address off the bridge's tap again: OVS makes netdev taps persistent, so an address left
        there would outlive the bench on the host."""
        self._run(["ip", "addr", "del", cidr, "dev", bridge], check=False, guard=False)

    def add_patch_pair(self, bridge_a: str, port_a: str, bridge_b: str, port_b: str) -> None:
        """Two patch ports joining two bridges."""
        self.vsctl("add-port", bridge_a, port_a, "--", "set", "Interface", port_a, "type=patch",
                   f"options:peer={port_b}", "--", "add-port", bridge_b, port_b, "--", "set", "Interface", port_b,
                   "type=patch", f"options:peer={port_a}")

    def set_flows(self, bridge: str, flows: list[str]) -> None:
        """Replaces the bridge's OpenFlow rules; they are remembered and re-applied after a restart."""
        self.flows[bridge] = list(flows)
        self._apply_flows(bridge)

    def add_meter(self, bridge: str, meter: str) -> None:
        """An OpenFlow meter (ovs-ofctl add-meter syntax); meters are not in OVSDB, so they are remembered
        and re-added, before the flows that use them, whenever vswitchd restarts."""
        self.meters.setdefault(bridge, []).append(meter)
        self.ofctl("add-meter", bridge, meter)

    def _apply_flows(self, bridge: str) -> None:
        self.ofctl("del-flows", bridge)
        for f in self.flows[bridge]:
            self.ofctl("add-flow", bridge, f)

    # state ------------------------------------------------------------------------------------------------
    def interface(self, name: str) -> dict:
        """ofport, link state, MTU, error and statistics of an interface."""
        out = self.vsctl("--columns=ofport,link_state,mtu,error,statistics", "list", "Interface", name)
        row: dict = {}
        for line in out.splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            row[key] = parse_map(value) if value.startswith("{") else value.strip('"')
        return row

    def check_port(self, name: str, mtu: int | None = None, timeout: float = 10) -> None:
        """OVS keeps a port whose mempool it could not allocate but never configures it; only its log says
        why. Detects that (and a port OVS refused outright), waiting for the port to come up at its MTU."""
        deadline = time.monotonic() + timeout
        while True:
            row = self.interface(name)
            if row.get("ofport") in ("-1", "[]") or row.get("error") not in ("[]", "", None):
                raise ZeroLossError(f"OVS could not set up port {name}: {row.get('error')}",
                                    "check the port's type and options ('ovs-vsctl list Interface " + name + "')")
            failed = self.mempool_failure(name)
            if failed:
                raise ZeroLossError(
                    f"OVS dropped port {name}: no memory pool for MTU {failed[0]} ({failed[1]})",
                    "raise dpdk-socket-mem / dpdk-socket-limit (ovs_socket_mem_mb, ovs_socket_limit_mb) or "
                    "free hugepages: a port at MTU 9000 needs about 1024 MB, see 'zeroloss host plan'")
            up = row.get("link_state") == "up" and (mtu is None or row.get("mtu") == str(mtu))
            if up or self.datapath_port_up(name, mtu):
                return
            if time.monotonic() > deadline:
                raise ZeroLossError(f"OVS port {name} is not up after {timeout:.0f} s (link {row.get('link_state')}, "
                                    f"mtu {row.get('mtu')}, requested {mtu})", f"see {self.rundir / 'vswitchd.log'}")
            time.sleep(0.2)

    def datapath_port_up(self, name: str, mtu: int | None) -> bool:
        """The port's state as the datapath and OpenFlow see it. After a vswitchd restart OVSDB's link_state
        and mtu columns can stay at 'down'/0 while the port forwards (seen with OVS 3.1 and meters)."""
        dp = re.search(rf"port \d+: {re.escape(name)} \((.*)\)", self.appctl("dpctl/show"))
        if not dp or (mtu is not None and f"mtu={mtu}," not in dp.group(1) + ","):
            return False
        bridge = self.vsctl("iface-to-br", name).strip()
        return openflow_up(self.ofctl("show", bridge), name)

    def mempool_failure(self, name: str) -> tuple[str, str] | None:
        """(MTU, reason) when vswitchd's log says it could not create the port's memory pool."""
        try:
            text = (self.rundir / "vswitchd.log").read_text(errors="replace")
        except OSError:
            return None
        m = re.search(rf"Failed to create memory pool for netdev {re.escape(name)}, with MTU (\d+) on socket "
                      r"\d+: (.*)", text)
        return (m.group(1), m.group(2).strip()) if m else None

    def never_connected(self, names: list[str]) -> dict[str, str]:
        """vhost-user client ports among names that never connected to their socket (vswitchd logs each
        connection), with the socket each waits for."""
        try:
            log = (self.rundir / "vswitchd.log").read_text(errors="replace")
        except OSError:
            log = ""
        out = {}
        for name in names:
            path = self.vsctl("--if-exists", "get", "Interface", name, "options:vhost-server-path").strip().strip('"')
            if f"({path}) connected" not in log:
                out[name] = path
        return out

    def interface_statistics(self) -> dict[str, dict]:
        """Every interface's OVSDB statistics column (rx_dropped, tx_dropped, ovs_tx_failure_drops,
        ovs_tx_retries, ovs_tx_mtu_exceeded_drops...), in one call. OVS refreshes it every 5 s."""
        out = self.vsctl("--format=csv", "--data=bare", "--no-headings", "--columns=name,statistics",
                         "list", "Interface", timeout=READ_S)
        return parse_interface_statistics(out)

    def bridges(self) -> list[str]:
        """Our bridges: those we gave OpenFlow rules (asking OVSDB costs a process per trial)."""
        return list(self.flows) or vsctl_names(self.vsctl("list-br"))

    def counters(self) -> dict:
        """Live counters for the loss ledger: every port's packets, drops and custom drop counters (OpenFlow 1.4
        port statistics, read now, not OVSDB's 5 s copy), each meter's drops, the datapath's drop coverage
        counters and each PMD's cycles."""
        ports: dict[str, dict] = {}
        meters: dict[str, dict] = {}
        for br in self.bridges():
            ports.update(parse_dump_ports(self.ofctl("dump-ports", br, version="OpenFlow14", timeout=READ_S)))
            if br in self.meters:
                for mid, m in parse_meter_stats(self.ofctl("meter-stats", br, timeout=READ_S)).items():
                    meters[f"{br}/{mid}"] = m
        return {"ports": ports, "meters": meters,
                "coverage": parse_coverage_drops(self.appctl("coverage/show", timeout=READ_S)),
                "pmds": parse_pmd_stats(self.appctl("dpif-netdev/pmd-stats-show", timeout=READ_S))}

    def pmd_perf(self) -> dict[str, dict]:
        """Each PMD's iterations and cycles-per-iteration histogram (dpif-netdev/pmd-perf-show), per core."""
        return pmd_perf(self.appctl("dpif-netdev/pmd-perf-show", timeout=READ_S))

    def meter_config(self) -> dict[str, dict]:
        return {f"{br}/{mid}": m for br in self.meters for mid, m in
                parse_meter_config(self.ofctl("dump-meters", br, timeout=READ_S)).items()}

    def mempools(self, ports: list[str]) -> dict[str, dict]:
        """Each DPDK port's mempool (name, mbufs, in use) from netdev-dpdk/get-mempool-info."""
        out = {}
        for port in ports:
            try:
                out[port] = parse_mempool(self.appctl("netdev-dpdk/get-mempool-info", port, timeout=READ_S))
            except ComponentDied:
                raise
            except ZeroLossError:
                continue
        return out

    def snapshot(self) -> dict[str, str]:
        """PMD and drop state as OVS prints it (kept per trial in the result file)."""
        out = {}
        for key, args in (("pmd_rxq_show", ("dpif-netdev/pmd-rxq-show",)),
                          ("pmd_stats_show", ("dpif-netdev/pmd-stats-show",)),
                          ("coverage_drops", ("coverage/show",)),
                          ("dpctl_show", ("dpctl/show",))):
            try:
                text = self.appctl(*args, timeout=READ_S)
            except ComponentDied:
                raise
            except ZeroLossError as e:
                text = f"unavailable: {e}"
            if key == "coverage_drops":
                text = "\n".join(line for line in text.splitlines() if "drop" in line)
            out[key] = text
        out["datapath"] = self.datapath_state(out["dpctl_show"])
        return out

    def datapath_state(self, dpctl_show: str) -> dict:
        """Datapath flows and flow limit, revalidators, conntrack's connections and limits (ovsstats.datapath_state);
        a command this OVS does not answer leaves its figures out."""
        texts = {"dpctl_show": dpctl_show}
        for key, args in DATAPATH_READS:
            try:
                texts[key] = self.appctl(*args, timeout=READ_S)
            except ComponentDied:
                raise
            except ZeroLossError:
                continue
        nconns = datapath_state(texts).get("ct", {}).get("nconns")
        if nconns is not None and nconns <= CT_STATS_MAX:
            try:
                texts["ct_stats_show"] = self.appctl(*CT_STATS_READ, timeout=READ_S)
            except ComponentDied:
                raise
            except ZeroLossError:
                pass
        return datapath_state(texts)

    # helpers ----------------------------------------------------------------------------------------------
    def _run(self, argv: list[str], check: bool = True, timeout: float = CALL_S, guard: bool = True) -> str:
        """An OVS tool's output, the tool killed after timeout (ComponentDied naming the daemon that does not
        answer); with guard, the daemons' health is asked every CHECK_S while it runs."""
        try:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            raise ZeroLossError(f"cannot run {argv[0]}: {e.strerror}", "run 'make setup'") from e
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    out, err = p.communicate(timeout=max(0.0, min(CHECK_S, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if guard:
                        self.health()  # a stopped or dead daemon is named now, not after the timeout
                    if time.monotonic() >= deadline:
                        # name the daemon that does not answer, not only the tool that waited for it
                        daemon = self.ovsdb if argv[0] == "ovs-vsctl" else self.vswitchd
                        who = f"{daemon.name} (pid {daemon.pid})" if daemon and daemon.alive() else "OVS"
                        raise ComponentDied(f"{who} did not answer {' '.join(_short(a) for a in argv[:3])} in "
                                            f"{timeout:.0f} s (see {self.rundir})") from None
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        if check and p.returncode != 0:
            msg = (err.strip() or out.strip()).splitlines()
            what = next((ln for ln in msg if "server returned an error" not in ln), msg[-1] if msg else "")
            raise ZeroLossError(f"{' '.join(_short(a) for a in argv[:4])} failed: "
                                f"{what or 'exit ' + str(p.returncode)}")
        return out

    def _wait_path(self, path: Path, proc: ManagedProcess, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            if not proc.alive():
                raise ZeroLossError(f"{proc.name} exited before it was ready: {proc.reason()} (log: {proc.log_path})")
            if time.monotonic() > deadline:
                raise ZeroLossError(f"{proc.name} was not ready after {timeout:.0f} s (log: {proc.log_path})")
            time.sleep(0.05)

    def _log_reason(self) -> str:
        log = self.rundir / "vswitchd.log"
        try:
            lines = [ln for ln in log.read_text().splitlines() if "|ERR|" in ln or "|EMER|" in ln]
        except OSError:
            lines = []
        return lines[-1].split("|")[-1] if lines else f"see {log}"
