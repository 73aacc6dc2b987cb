"""The ports, bridges, tunnels, OpenFlow rules and meters of our private OVS, and each port's state (a base of
drivers.dut.ovs.Ovs)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

from ..proc import ComponentDied
from ..session import record_tap
from .ovsctl import OvsCtl
from .ovsstats import openflow_up

ROUTE_WAIT_S = 5.0  # how long OVS may take to learn a tap's new address before it takes a route through it


def _vhost_options(sock: Path, n_rxq: int, rxd: int, txd: int, tx_retries_max: int | None) -> list[str]:
    opts = [f"options:vhost-server-path={sock}", f"options:n_rxq={n_rxq}",
            f"options:n_rxq_desc={rxd}", f"options:n_txq_desc={txd}"]
    if tx_retries_max is not None and tx_retries_max >= 0:
        opts.append(f"options:tx-retries-max={tx_retries_max}")
    return opts


def parse_map(text: str) -> dict[str, int | str]:
    """ovs-vsctl's map output '{rx_packets=10, tx_dropped=0}' as a dict (numbers as int)."""
    out: dict[str, int | str] = {}
    for key, value in re.findall(r'([\w:-]+)=("[^"]*"|[^,}]*)', text):
        value = value.strip().strip('"')
        out[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return out


class OvsPorts(OvsCtl):
    """Adds and checks what the bench builds in OVS; OpenFlow rules and meters are kept for vswitchd's restarts."""

    _bridges: list[str]
    _links_before: set[str]

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
