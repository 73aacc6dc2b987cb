"""A Linux bridge as the DUT: the kernel's software forwarding path, measured like any other.

zlgen's two ports are AF_PACKET sockets (DPDK's net_af_packet) on the host ends of two veth pairs; the other ends
are the ports of a bridge in a network namespace the run makes and deletes:

    zlgen port 0 -> veth zb..a ==> a -> br0 -> b ==> veth zb..b -> zlgen port 1   (and back, when bidirectional)

Every hop is counted by the kernel's interface counters (rtnl_link_stats64), read around each trial: the host ends
from sysfs, the namespace's ports with `ip -n NS -s -j link`. What they can tell, and what not:
- a veth pair has one counter for both ends: the sender's tx_packets *is* the peer's rx_packets (veth_get_stats64
  reports the peer's lstats). A frame the peer's backlog refused (netif_rx: netdev_max_backlog full) is the sender's
  tx_dropped. So a veth hop's own_in is tx_packets + tx_dropped and its out tx_packets.
- the bridge's own drops (no port to forward to, MTU on egress, a port not forwarding) are counted nowhere but in the
  ingress port's rx_dropped when the stack refused the frame; the rest of a gap across the bridge is unexplained.
- frames the AF_PACKET socket's ring lost on receive are zlgen's imissed (PACKET_STATISTICS), its gen_rx hop's.

The namespace is named zlbr-<pid>-<n>: a namespace whose process is gone is a leftover of a killed run, deleted
before a new one is made (with it go its veth peers, so the host ends too). The kernel must add no frames of its own
to the counters: IPv6 is off on every interface made (router and neighbour solicitations, MLD reports), and so is
the bridge's multicast snooping (with it on, the bridge joins 224.0.0.106, RFC 4286, and says so in an IGMP
report out of every port).

One module and its test (tests/test_kind_linuxbridge.py), nothing else: the registry's proof (issue 39, Must 1)."""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import subprocess
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroloss.core.codec import Record
from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, largest
from zeroloss.drivers.probe.telemetry import local_reader
from zeroloss.loss.counters import Counters, NetdevStats, PathHop
from zeroloss.loss.readers import HopReading, drop

from ..base import Probe
from ..bench import BenchTarget, gen_threads
from ..registry import Kind, Needs, register

if TYPE_CHECKING:
    from zeroloss.drivers.bench.workspace import Workspace
    from zeroloss.drivers.gen import Zlgen, ZlgenClient

NS_PREFIX = "zlbr-"
NS_RE = re.compile(r"^zlbr-(\d+)-\d+$")
SYSFS = Path("/sys/class/net")
MAX_FRAME = 9000
COUNTERS = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors")
_seq = itertools.count()


def ring_frame(frame_max: int) -> int:
    """af_packet's ring frame (framesz) for frames up to frame_max B (FCS included): a TPACKET_V2 frame puts the
    Ethernet frame 66 B in (its header, then the MAC header aligned so the IP header is), 128 B leave room; whole
    KiB so that a ring block of few pages holds whole frames (ring_block); never below the PMD's default 2048."""
    return max(2048, (frame_max + 128 + 1023) // 1024 * 1024)


def ring_block(framesz: int) -> int:
    """af_packet's ring block (blocksz): whole pages holding whole ring frames. The PMD finds frame i at
    i * framesz, the kernel at block i // per_block, frame i % per_block: the two agree only when a block holds
    its frames with nothing left over (a 9136 B frame in a 12 KiB block stalls the ring after its first frame)."""
    return math.lcm(framesz, os.sysconf("SC_PAGE_SIZE"))


def vdev(index: int, iface: str, framesz: int) -> str:
    """One zlgen port: a DPDK af_packet vdev on a host interface, one queue pair."""
    return f"net_af_packet{index},iface={iface},qpairs=1,framesz={framesz},blocksz={ring_block(framesz)}"


def netdev_hop(kind: str, name: str, where: str, netdev: str, ns: bool) -> dict[str, Any]:
    return {"kind": kind, "name": name, "where": where, "netdev": netdev, "ns": ns}


def bridge_paths(host: tuple[str, str]) -> list[dict[str, Any]]:
    """zlgen port p -> veth host[p] => bridge port 'ab'[p] -> br0 -> bridge port 'ab'[q] => veth host[q] -> zlgen
    port q, per direction."""
    out = []
    for tx in (0, 1):
        rx = 1 - tx
        a, b = "ab"[tx], "ab"[rx]
        out.append({"direction": "AB"[tx] + "->" + "AB"[rx], "tx_side": tx, "rx_side": rx, "hops": [
            {"kind": "gen_tx", "name": f"zlgen tx port {tx}", "where": "zlgen", "side": tx},
            netdev_hop("veth", f"veth {host[tx]} -> {a}", f"veth {host[tx]}", host[tx], False),
            {"kind": "bridge", "name": f"bridge br0 {a} -> {b}", "where": "br0", "in": a, "out": b},
            netdev_hop("veth", f"veth {b} -> {host[rx]}", f"veth {b}", b, True),
            {"kind": "gen_rx", "name": f"zlgen rx port {rx}", "where": "zlgen", "side": rx, "from": tx}]})
    return out


@dataclass(frozen=True, kw_only=True)
class NetdevHop(Record):
    """A veth or bridge hop's own fields (bridge_paths): the netdev and whether it is in the namespace (veth), the
    bridge's ports in and out (bridge)."""

    netdev: str = ""
    ns: bool = False
    in_: str = field(default="", metadata={"key": "in"})
    out: str = ""


@dataclass(frozen=True, kw_only=True)
class Netdevs(Record):
    """Every interface's counters (Bridge.counters): the host ends', the namespace's."""

    host: Mapping[str, NetdevStats] = field(default_factory=dict)
    ns: Mapping[str, NetdevStats] = field(default_factory=dict)

    def of(self, name: str, ns: bool) -> NetdevStats | None:
        return (self.ns if ns else self.host).get(name)


@dataclass(frozen=True, kw_only=True)
class BridgeCounters(Record):
    """This kind's part of a trial's counters (in Counters.extra)."""

    netdev: Netdevs = field(default_factory=Netdevs)


def _netdevs(c: Counters) -> Netdevs:
    return BridgeCounters.from_json(c.extra).netdev


def read_veth(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """A veth pair from the sending end: what it took (tx_packets + tx_dropped), what the peer got (tx_packets:
    the same counter) and what the peer's backlog refused (tx_dropped)."""
    own = NetdevHop.from_json(h.extra)
    s = _netdevs(c).of(own.netdev, own.ns)
    if s is None:
        return HopReading(None, None)
    drops = [drop("rx_dropped", s.tx_dropped, f"{own.netdev} tx_dropped (the peer's backlog was full)"),
             drop("tx_dropped", s.tx_errors, f"{own.netdev} tx_errors")]
    return HopReading(s.tx_packets + s.tx_dropped + s.tx_errors, s.tx_packets, drops)


def read_bridge(h: PathHop, c: Counters, budget: dict[str, int]) -> HopReading:
    """The bridge between two of its ports: in what the ingress port received, out what the egress port sent or
    dropped sending; the ingress port's rx_dropped are frames the stack refused there."""
    own, nd = NetdevHop.from_json(h.extra), _netdevs(c)
    pin, pout = nd.of(own.in_, True), nd.of(own.out, True)
    if pin is None or pout is None:
        return HopReading(None, None)
    drops = [drop("rx_dropped", pin.rx_dropped, f"bridge port {own.in_} rx_dropped"),
             drop("rx_errors", pin.rx_errors, f"bridge port {own.in_} rx_errors")]
    return HopReading(pin.rx_packets, pout.tx_packets + pout.tx_dropped + pout.tx_errors, drops)


@dataclass(frozen=True, kw_only=True)
class IpLink(Record):
    """One link of `ip -s -j link`: its name and counters (stats64: rx and tx, each packets, dropped, errors...)."""

    ifname: str = ""
    stats64: Mapping[str, Mapping[str, int]] | None = None


def ip(*args: str, ns: str | None = None, check: bool = True) -> str:
    """`ip [-n ns] args`; a failure is one line naming the command and iproute2's reason."""
    cmd = ["ip", *(("-n", ns) if ns else ()), *args]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise ZeroLossError("dut linux-bridge needs iproute2's ip", "apt install iproute2") from None
    if check and r.returncode != 0:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise ZeroLossError(f"dut linux-bridge: {' '.join(cmd)}: {why}")
    return r.stdout


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def reap_stale() -> list[str]:
    """Deletes the namespaces of runs that are gone (their veth pairs go with them); returns their names."""
    gone = []
    for line in ip("netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        m = NS_RE.match(name)
        if m and not _alive(int(m.group(1))):
            ip("netns", "delete", name, check=False)
            gone.append(name)
    return gone


class Bridge:
    """The namespace, its bridge and the two veth pairs; deleted on close (also after a half-made start)."""

    def __init__(self, mtu: int):
        n = next(_seq)
        pid = os.getpid()
        self.ns = f"{NS_PREFIX}{pid}-{n}"
        self.host = (f"zb{pid:x}{n}a", f"zb{pid:x}{n}b")
        self.mtu = mtu
        self.made = False

    def make(self) -> Bridge:
        ns, mtu = self.ns, str(self.mtu)
        ip("netns", "add", ns)
        self.made = True
        for conf in ("all", "default"):
            ip("netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1")
        ip("link", "add", "name", "br0", "mtu", mtu, "type", "bridge", "stp_state", "0",
           "mcast_snooping", "0", ns=ns)
        for host, port in zip(self.host, "ab", strict=True):
            ip("link", "add", "name", host, "mtu", mtu, "type", "veth", "peer", "name", port, "mtu", mtu, "netns", ns)
            v6 = Path(f"/proc/sys/net/ipv6/conf/{host}/disable_ipv6")
            if v6.exists():  # a host without IPv6 sends none
                v6.write_text("1\n")
            ip("link", "set", "dev", port, "master", "br0", "up", ns=ns)
            ip("link", "set", "dev", host, "up")
        ip("link", "set", "dev", "br0", "up", ns=ns)
        return self

    def counters(self) -> dict[str, Any]:
        """Every interface's counters: the host ends from sysfs, the namespace's from one `ip -s -j link`."""
        host = {n: {k: int((SYSFS / n / "statistics" / k).read_text()) for k in COUNTERS} for n in self.host}
        inside = {}
        for link in map(IpLink.from_json, json.loads(ip("-s", "-j", "link", "show", ns=self.ns))):
            st = link.stats64 or {}
            inside[link.ifname] = {f"{d}_{k}": int(st.get(d, {}).get(k, 0)) for d in ("rx", "tx")
                                      for k in ("packets", "dropped", "errors")}
        return {"netdev": {"host": host, "ns": inside}}

    def check(self) -> None:
        """Raises when the namespace or a host end is gone (someone deleted it during the run)."""
        missing = [n for n in (f"/run/netns/{self.ns}", *(str(SYSFS / h) for h in self.host)) if not Path(n).exists()]
        if missing:
            raise ZeroLossError(f"dut linux-bridge: {missing[0]} is gone: something else deleted the bridge's "
                                "namespace or veths during the run")

    def close(self) -> None:
        if self.made:
            ip("netns", "delete", self.ns, check=False)
            for host in self.host:  # gone with their peers; one left by a half-made start is deleted here
                if (SYSFS / host).exists():
                    ip("link", "delete", "dev", host, check=False)
            self.made = False


class BridgeTarget(BenchTarget):
    """zlgen's af_packet ports through a Linux bridge in a namespace of the run's own."""

    link = "linux-bridge"
    refused_is_loss = False  # a frame af_packet's TX ring refused never reached the kernel

    def __init__(self, cfg: RunConfig, frames: list[Frame]):
        super().__init__(cfg, 1)
        biggest = max(1518, *map(largest, frames))
        self.framesz = ring_frame(biggest)
        self.bridge = Bridge(mtu=max(1500, biggest - 18))
        self.gen: Zlgen | None = None

    def top(self, frame: int, line_pps: float) -> float:
        return self.cfg.max_rate_pps or line_pps

    def _open(self, stack: ExitStack, ws: Workspace) -> None:
        from zeroloss.drivers.dpdk import hugepages
        from zeroloss.drivers.dpdk.eal import Eal
        from zeroloss.drivers.gen import Zlgen, ZlgenConfig

        if os.geteuid() != 0:
            raise ZeroLossError("dut linux-bridge makes a network namespace and veths: it needs root",
                                "run it as root")
        hugepages.require(256)
        reap_stale()
        stack.callback(self.bridge.close)
        self.bridge.make()
        vdevs = tuple(vdev(i, h, self.framesz) for i, h in enumerate(self.bridge.host))
        eal = Eal(lcores=self.cfg.gen_lcores, file_prefix=ws.prefix("gen"), vdevs=vdevs)
        # zlgen's mbufs hold a whole ring frame (af_packet refuses a queue whose frames do not fit one)
        zc = ZlgenConfig(eal=eal, ctl_path=ws.sock("zlgen-ctl"), max_frame=self.framesz, gap_us=self.cfg.pace_gap_us)
        self.gen = stack.enter_context(Zlgen(zc, ws.log("zlgen")))

    @property
    def client(self) -> ZlgenClient:
        assert self.gen is not None
        return self.gen.client

    def _health(self) -> None:
        assert self.gen is not None
        self.gen.check()
        self.bridge.check()

    def probe(self) -> Probe:
        gen = self.gen
        assert gen is not None
        return Probe(bridge_paths(self.bridge.host), self.bridge.counters, context={"queues": 1, "bench": False},
                     health=self._health, threads=lambda: gen_threads(gen),
                     telemetry=local_reader(lambda: gen_threads(gen)))

    def placement(self) -> dict[str, dict]:
        b = self.bridge
        return {self.link: {"zlgen_lcores": self.cfg.gen_lcores, "netns": b.ns, "ports": list(b.host),
                            "mtu": b.mtu, "af_packet_framesz": self.framesz, "kernel": os.uname().release,
                            **self.gen_versions()}}


def check(cfg: RunConfig) -> None:
    """What a Linux bridge between af_packet ports can be run with."""
    biggest = max(map(largest, cfg.frame_sizes))
    if biggest > MAX_FRAME:  # af_packet's ring frame must fit one of zlgen's mbufs (ring_frame, Zlgen's max_frame)
        raise ZeroLossError(f"dut linux-bridge carries frames up to {MAX_FRAME} B through af_packet, not {biggest} B",
                            f"use frame sizes up to {MAX_FRAME}")
    if cfg.ports:
        raise ZeroLossError("dut linux-bridge makes its own ports (veths): ports are for dut external",
                            "drop --port")
    if cfg.dut_rxq != 1:
        raise ZeroLossError(f"dut linux-bridge has one queue pair per port, not dut_rxq {cfg.dut_rxq}",
                            "drop dut_rxq")
    if cfg.link != "auto":
        raise ZeroLossError(f"dut linux-bridge's wire is a veth, not link {cfg.link}", "drop link")


def _make(cfg: RunConfig, link: str, frames: list[Frame], needs: Needs) -> BridgeTarget:
    return BridgeTarget(cfg, frames)


KIND = register(Kind(
    name="linux-bridge", duts=("linux-bridge",), topologies=("p2p",), order=40,
    help="linux-bridge (the kernel's bridge between veths, zlgen on af_packet)", make=_make, check=check,
    events=("events are changes to OVS: dut linux-bridge has none", "use --topology ovs-p2p, pvp or pvvp"),
    knobs=frozenset({"drain_ms"}), readers={"veth": read_veth, "bridge": read_bridge},
))
