"""PVP on the software bench: zlgen <-> OVS-DPDK (vhost-user) <-> a testpmd "VNF" on virtio-user.

zlgen's two ports and the VNF's two ports are net_virtio_user devices serving vhost-user sockets
(server=1), exactly as QEMU serves a VM's virtio-net; OVS attaches dpdkvhostuserclient ports to
them. Flows: g0 -> v0, VNF forwards v0 -> v1, v1 -> g1, and the reverse.
"""

from __future__ import annotations

import re
from contextlib import ExitStack
from dataclasses import dataclass

from ..dpdk import hugepages
from ..dpdk.eal import Eal
from ..dpdk.testpmd import TestPmd, TestPmdConfig
from ..dut.ovs import Ovs, OvsSettings
from ..errors import ZeroLossError
from ..gen import Zlgen, ZlgenConfig
from .workspace import Workspace

GEN_PORTS = ("g0", "g1")
VNF_PORTS = ("v0", "v1")
# OVS's DPDK memory, plus zlgen and the VNF testpmd (BRIEF §7: ~1 GB OVS, 300-512 MB per testpmd)
HUGEPAGE_MB = 1024 + 256 + 256


@dataclass(frozen=True)
class PvpSpec:
    max_frame: int = 1518
    queues: int = 1               # n_rxq of every OVS port, queues of the VNF's and zlgen's virtio devices
    vnf_ring: int = 1024          # the VNF's virtio queue size (256/1024/4096: BRIEF §7, the vring finding)
    gen_ring: int = 4096
    vnf_forward_mode: str = "io"
    gen_lcores: str = "1"
    vnf_lcores: str = "0,1"
    vnf_main_lcore: int = 1
    pmd_cpu_mask: str = "0x1"     # OVS PMD shares core 0 with the VNF; zlgen has core 1
    socket_mem_mb: int = 1024
    rxq_assign: str = "cycles"
    gap_us: int = 1000
    bridges: int = 1              # 2: br-phy (zlgen's ports) and br-int (the VNF's) joined by patch ports
    vlan: int = -1                # >= 0: zlgen's frames carry this VLAN; br-phy translates it to vlan + 100 for
                                  # br-int, which strips it towards the VNF (the references' VLAN translation case)
    meter_pps: int = 0            # > 0: an OpenFlow meter drops above this rate at OVS ingress from zlgen
    # the meter's bucket (frames). A trial of T s passes at up to rate + burst / T, so a search with
    # 10 s validation finds at most 1 % (100 pps) above a 10 kpps meter. A smaller bucket is no
    # better: measured with 64 frames, 20 kpps lost 3 % at a 30 kpps meter, because frames arrive in
    # clumps (bursts of 32, PMD batches, pacing catch-up after host stalls), never evenly spaced.
    meter_burst: int = 1000

    @property
    def mtu(self) -> int:
        return max(1500, self.max_frame - 18)  # mtu_request is the L3 MTU: frame = MTU + 14 + 4


def _virtio(index: int, sock, queues: int, ring: int) -> str:
    return f"net_virtio_user{index},path={sock},server=1,queues={queues},queue_size={ring}"


class PvpBench:
    """Starts OVS, the VNF and zlgen in order, stops them in reverse however it ends."""

    def __init__(self, spec: PvpSpec, ws: Workspace):
        self.spec = spec
        self.ws = ws
        self.ovs: Ovs | None = None
        self.vnf: TestPmd | None = None
        self.gen: Zlgen | None = None
        self._stack = ExitStack()

    def start(self) -> PvpBench:
        s = self.spec
        hugepages.require(HUGEPAGE_MB)
        try:
            self.ovs = self._stack.enter_context(Ovs(self.ws.root / "ovs", OvsSettings(
                file_prefix=self.ws.prefix("ovs"), socket_mem_mb=s.socket_mem_mb, pmd_cpu_mask=s.pmd_cpu_mask,
                rxq_assign=s.rxq_assign)))
            self._switch()
            vnf_eal = Eal(lcores=s.vnf_lcores, main_lcore=s.vnf_main_lcore, file_prefix=self.ws.prefix("vnf"),
                          vdevs=tuple(_virtio(i, self.ws.sock(n), s.queues, s.vnf_ring)
                                      for i, n in enumerate(VNF_PORTS)))
            self.vnf = self._stack.enter_context(TestPmd(TestPmdConfig(
                eal=vnf_eal, forward_mode=s.vnf_forward_mode, max_frame=s.max_frame, rxq=s.queues, txq=s.queues,
                nb_mbufs=8192), self.ws.log("vnf")))
            gen_eal = Eal(lcores=s.gen_lcores, file_prefix=self.ws.prefix("gen"),
                          vdevs=tuple(_virtio(i, self.ws.sock(n), s.queues, s.gen_ring)
                                      for i, n in enumerate(GEN_PORTS)))
            self.gen = self._stack.enter_context(Zlgen(ZlgenConfig(
                eal=gen_eal, ctl_path=self.ws.sock("zlgen-ctl"), max_frame=max(1518, s.max_frame),
                rxq=s.queues, txq=s.queues, gap_us=s.gap_us), self.ws.log("zlgen")))
            for name in (*GEN_PORTS, *VNF_PORTS):
                self.ovs.check_port(name)
            self.warm_up()
        except BaseException:
            self._stack.close()
            raise
        return self

    def _switch(self) -> None:
        """Bridges, ports, meters and OpenFlow rules of the topology."""
        s, ovs = self.spec, self.ovs
        phy, vnf_br = ("br0", "br0") if s.bridges == 1 else ("br-phy", "br-int")
        for br in dict.fromkeys((phy, vnf_br)):
            ovs.add_bridge(br)
        for name in GEN_PORTS:
            ovs.add_vhost_client_port(phy, name, self.ws.sock(name), n_rxq=s.queues, mtu=s.mtu)
        for name in VNF_PORTS:
            ovs.add_vhost_client_port(vnf_br, name, self.ws.sock(name), n_rxq=s.queues, mtu=s.mtu)
        meter = ["", ""]
        if s.meter_pps:
            for i in (1, 2):
                ovs.ofctl("add-meter", phy, f"meter={i},pktps,burst,band=type=drop,rate={s.meter_pps},"
                                            f"burst_size={s.meter_burst}")
            meter = ["meter:1,", "meter:2,"]
        ext, internal = s.vlan, s.vlan + 100
        if s.bridges == 1:
            if s.vlan >= 0:
                raise ZeroLossError("VLAN translation needs two bridges", "set bridges: 2")
            ovs.set_flows(phy, [f"in_port=g0,actions={meter[0]}output:v0", "in_port=v1,actions=output:g1",
                                f"in_port=g1,actions={meter[1]}output:v1", "in_port=v0,actions=output:g0"])
            return
        for i in (0, 1):
            ovs.vsctl("add-port", phy, f"patch-p{i}", "--", "set", "Interface", f"patch-p{i}", "type=patch",
                      f"options:peer=patch-i{i}")
            ovs.vsctl("add-port", vnf_br, f"patch-i{i}", "--", "set", "Interface", f"patch-i{i}", "type=patch",
                      f"options:peer=patch-p{i}")
        if s.vlan >= 0:
            to_int, to_ext = f"mod_vlan_vid:{internal},", f"mod_vlan_vid:{ext},"
            strip, push = "strip_vlan,", f"push_vlan:0x8100,mod_vlan_vid:{internal},"
            match_ext, match_int = f",dl_vlan={ext}", f",dl_vlan={internal}"
        else:
            to_int = to_ext = strip = push = match_ext = match_int = ""
        ovs.set_flows(phy, [f"in_port=g0{match_ext},actions={meter[0]}{to_int}output:patch-p0",
                            f"in_port=g1{match_ext},actions={meter[1]}{to_int}output:patch-p1",
                            f"in_port=patch-p0{match_int},actions={to_ext}output:g0",
                            f"in_port=patch-p1{match_int},actions={to_ext}output:g1"])
        # the VNF forwards v0 -> v1 and v1 -> v0: g0's frames come back on g1 and the reverse
        ovs.set_flows(vnf_br, [f"in_port=patch-i0{match_int},actions={strip}output:v0",
                               f"in_port=patch-i1{match_int},actions={strip}output:v1",
                               f"in_port=v0,actions={push}output:patch-i0",
                               f"in_port=v1,actions={push}output:patch-i1"])

    def warm_up(self) -> None:
        """A discarded trial that touches every ring buffer once (first use page-faults and loses frames)."""
        c = self.gen.client
        vlan = {"vlan": self.spec.vlan} if self.spec.vlan >= 0 else {}
        c.configure([{"port": p, "queue": q, "frame_size": min(self.spec.max_frame, 1518), "rate_pps": 20_000,
                      **vlan} for p in (0, 1) for q in range(self.spec.queues)])
        c.run_trial(frames=2 * self.spec.gen_ring, drain_ms=300)

    def port_counters(self) -> list[dict]:
        """Per zlgen-facing OVS port (g0, g1), live datapath counters in DPDK ethdev terms, plus every OVS
        port's counters ('ovs'): ipackets = what OVS took from zlgen, opackets = what it gave zlgen."""
        ports = dpctl_ports(self.ovs.appctl("dpctl/show", "-s"))
        every = {f"ovs_{name}_{k}": v for name, c in ports.items() for k, v in c.items()}
        out = []
        for name in GEN_PORTS:
            p = ports.get(name, {})
            out.append({"ipackets": p.get("rx_packets", 0), "opackets": p.get("tx_packets", 0),
                        "imissed": p.get("rx_dropped", 0), "oerrors": p.get("tx_dropped", 0), **every})
        return out

    def stop(self) -> None:
        self._stack.close()

    def __enter__(self) -> PvpBench:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def dpctl_ports(text: str) -> dict[str, dict[str, int]]:
    """Parses `ovs-appctl dpctl/show -s`: per port RX/TX packets, errors and drops."""
    ports: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for line in text.splitlines():
        m = re.match(r"\s*port \d+: (\S+)", line)
        if m:
            cur = ports.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s*(RX|TX) packets:(\d+) errors:(\S+) dropped:(\d+)", line)
        if m and cur is not None:
            d = m.group(1).lower()
            errors = int(m.group(3)) if m.group(3).isdigit() else 0  # vhost ports print '?'
            cur[f"{d}_packets"], cur[f"{d}_errors"], cur[f"{d}_dropped"] = int(m.group(2)), errors, int(m.group(4))
    return ports

