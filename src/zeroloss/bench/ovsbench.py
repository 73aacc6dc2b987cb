"""OVS-DPDK on the software bench: zlgen <-> OVS (vhost-user) [<-> testpmd VNFs on virtio-user] <-> zlgen.

zlgen's ports and the VNFs' ports are net_virtio_user devices serving vhost-user sockets (server=1),
exactly as QEMU serves a VM's virtio-net; OVS attaches dpdkvhostuserclient ports to them.

Topologies (BRIEF §5, the whitepaper's troubleshooting cases):
- ovs-p2p: g0 -> OVS -> g1, no VNF;
- pvp:     g0 -> v0, VNF forwards v0 -> v1, v1 -> g1 (and the reverse);
- pvvp:    g0 -> v0, VNF 1 v0 -> v1, v1 -> v2, VNF 2 v2 -> v3, v3 -> g1.
One bridge, or two (br-phy with zlgen's ports, br-int with the VNFs') joined by patch ports, with
optional VLAN translation between them. With bonding, zlgen has four ports: side A is the bond
bond-a = {g0, g2}, side B is bond-b = {g1, g3}; OVS picks the bond member on egress (NORMAL action
with static FDB entries for zlgen's MACs), ingress is accepted on every member.
"""

from __future__ import annotations

import re
import time
from contextlib import ExitStack
from dataclasses import dataclass

from ..config import check_ovs_topology
from ..dpdk import hugepages
from ..dpdk.eal import Eal
from ..dpdk.testpmd import TestPmd, TestPmdConfig
from ..dpdk.vnf import Vnf
from ..dut.ovs import Ovs, OvsSettings
from ..errors import ZeroLossError
from ..gen import Zlgen, ZlgenConfig
from ..ovsfacts import DatapathTuning
from ..proc import ComponentDied, check_alive
from ..stream import Stream
from ..vnf.domain import VmInterface, VmSpec, kernel_cmdline
from ..vnf.vm import GuestVm, guest_files, qemu_binary, resolve_accel
from .workspace import Workspace

VNFS = {"ovs-p2p": 0, "pvp": 1, "pvvp": 2}
BONDS = ("bond-a", "bond-b")
# hugepages: OVS's DPDK memory, plus zlgen and each VNF testpmd (BRIEF §7: 300-512 MB per testpmd;
# the bench's testpmd with 8192 jumbo mbufs takes about 256 MB)
GEN_MB = VNF_MB = 256


@dataclass(frozen=True)
class OvsBenchSpec:
    topology: str = "pvp"          # ovs-p2p | pvp | pvvp
    max_frame: int = 1518
    queues: int = 1                # n_rxq of every OVS port, queues of the VNFs' and zlgen's virtio devices
    vnf_ring: int = 1024           # the VNFs' virtio queue size (256/1024/4096: BRIEF §7, the vring finding)
    gen_ring: int = 4096
    vnf_forward_mode: str = "io"
    gen_lcores: str = "1"
    vnf_lcores: str = "0,1"
    vnf_main_lcore: int = 1
    pmd_cpu_mask: str = "0x1"      # OVS PMD shares core 0 with the VNFs; zlgen has core 1
    socket_mem_mb: int = 1024
    socket_limit_mb: int = 0       # 0: socket_mem_mb (unlimited, OVS's jumbo mempool takes every free hugepage)
    lcore_mask: str = "0x1"
    dpdk_extra: tuple[str, ...] = ()
    rxq_assign: str = "cycles"
    rxd: int = 2048                # n_rxq_desc / n_txq_desc of every OVS port
    txd: int = 2048
    tx_retries_max: int = -1       # vhost ports' tx-retries-max (-1: OVS's default)
    connect_timeout_s: float = 30  # how long a VNF or zlgen may wait for OVS to connect its vhost-user sockets
    gap_us: int = 1000
    bridges: int = 1               # 2: br-phy (zlgen's ports) and br-int (the VNFs') joined by patch ports
    vlan: int = -1                 # >= 0: zlgen's frames carry this VLAN; br-phy translates it to vlan + 100 for
                                   # br-int, which strips it towards the VNF (the references' VLAN translation case)
    bond: str = "none"             # active-backup | balance-slb: zlgen's ports bonded two by two on br-phy
    meter_pps: int = 0             # > 0: an OpenFlow meter drops above this rate at OVS ingress from zlgen
    # the meter's bucket (frames). A trial of T s passes at up to rate + burst / T, so a search with
    # 10 s validation finds at most 1 % (100 pps) above a 10 kpps meter. A smaller bucket is no
    # better: measured with 64 frames, 20 kpps lost 3 % at a 30 kpps meter, because frames arrive in
    # clumps (bursts of 32, PMD batches, pacing catch-up after host stalls), never evenly spaced.
    meter_burst: int = 1000
    vnf: str = "process"           # process: testpmd on virtio-user; vm: a QEMU/KVM guest running testpmd
    vnf_vcpus: tuple[int, ...] = (1, 0)  # vm: host CPU of vCPU 0 (testpmd's main lcore), 1 (its forwarding lcore)...
    vnf_emulator_cpus: tuple[int, ...] = (1,)  # vm: QEMU's emulator threads
    vnf_memory_mb: int = 512       # vm: guest memory, all of it on the host's hugepages
    vnf_queues: int = 0            # queue pairs of each VNF port (0: queues), the guest's multiqueue
    vnf_boot_timeout_s: float = 60
    vnf_accel: str = "auto"        # vm: kvm, tcg (QEMU's emulator), auto: kvm where the host has vmx/svm, else tcg
    cpu_flags: tuple[str, ...] = ("-arch-capabilities",)  # vm: host-passthrough minus these (see vnf.vm.cpu_flags)
    datapath: DatapathTuning = DatapathTuning()  # OVS's caches, revalidators, conntrack limits (ovsfacts)

    def __post_init__(self) -> None:
        if self.topology not in VNFS:
            raise ZeroLossError(f"unknown OVS topology '{self.topology}'", "use ovs-p2p, pvp or pvvp")
        check_ovs_topology(self.bridges, self.vlan, self.bond)

    @property
    def mtu(self) -> int:
        return max(1500, self.max_frame - 18)  # mtu_request is the L3 MTU: frame = MTU + 14 + 4

    @property
    def members(self) -> int:
        """zlgen ports per side: 2 when they are bonded."""
        return 1 if self.bond == "none" else 2

    @property
    def gen_ports(self) -> tuple[str, ...]:
        """zlgen's ports in zlgen's port order: port p is on side p % 2."""
        return tuple(f"g{i}" for i in range(2 * self.members))

    @property
    def vnf_ports(self) -> tuple[str, ...]:
        return tuple(f"v{i}" for i in range(2 * VNFS[self.topology]))

    @property
    def bridge_names(self) -> tuple[str, str]:
        """(the bridge of zlgen's ports, the bridge of the VNFs' ports)."""
        return ("br0", "br0") if self.bridges == 1 else ("br-phy", "br-int")

    def side(self, i: int) -> tuple[str, ...]:
        """The zlgen ports of side i (0: A, 1: B)."""
        return self.gen_ports[i::2]

    @property
    def hugepage_mb(self) -> int:
        per_vnf = self.vnf_memory_mb if self.vnf == "vm" else VNF_MB
        return self.socket_mem_mb + GEN_MB + per_vnf * VNFS[self.topology]


def flows(s: OvsBenchSpec) -> dict[str, list[str]]:
    """The OpenFlow rules of a topology, per bridge. Pure: tested without OVS."""
    outer, inner = s.bridge_names
    meter = ("meter:1,", "meter:2,") if s.meter_pps else ("", "")
    # the chain through the VNFs on the inner bridge, from side A's entry to side B's exit
    if s.bridges == 1:
        entry = ("g0", "g1")
    else:
        entry = ("patch-i0", "patch-i1")
    vnf = s.vnf_ports
    points = [entry[0], *vnf, entry[1]]
    hops = list(zip(points[0::2], points[1::2], strict=True))  # A -> B: (entry, v0), (v1, v2), ..., (v_last, exit)
    back = [(b, a) for a, b in reversed(hops)]         # B -> A
    out: dict[str, list[str]] = {outer: [], inner: []}
    if s.bridges == 1:
        # zlgen's ports are the chain's ends; ingress from zlgen passes the meter
        for d, pairs in ((0, hops), (1, back)):
            for a, b in pairs:
                m = meter[d] if a == entry[d] else ""
                out[inner].append(f"in_port={a},actions={m}output:{b}")
        return out
    ext, internal = s.vlan, s.vlan + 100
    if s.vlan >= 0:
        to_int, to_ext = f"mod_vlan_vid:{internal},", f"mod_vlan_vid:{ext},"
        match_ext, match_int = f",dl_vlan={ext}", f",dl_vlan={internal}"
        strip, push = "strip_vlan,", f"push_vlan:0x8100,mod_vlan_vid:{internal},"
    else:
        to_int = to_ext = match_ext = match_int = strip = push = ""
    for i in (0, 1):
        for g in s.side(i):
            out[outer].append(f"in_port={g}{match_ext},actions={meter[i]}{to_int}output:patch-p{i}")
        # egress towards zlgen: a bond's member is OVS's choice (NORMAL, static FDB entries)
        dest = "NORMAL" if s.bond != "none" else f"output:{s.side(i)[0]}"
        out[outer].append(f"in_port=patch-p{i}{match_int},actions={to_ext}{dest}")
    for a, b in hops + back:
        if not vnf:
            out[inner].append(f"in_port={a}{match_int},actions=output:{b}")  # VLAN stays internal
        elif a.startswith("patch"):
            out[inner].append(f"in_port={a}{match_int},actions={strip}output:{b}")
        elif b.startswith("patch"):
            out[inner].append(f"in_port={a},actions={push}output:{b}")
        else:
            out[inner].append(f"in_port={a},actions=output:{b}")
    return out


def ovs_paths(s: OvsBenchSpec) -> list[dict]:
    """The hops each direction's frames cross, for the loss ledger (zeroloss.ledger). Pure."""
    outer, inner = s.bridge_names
    vnf = s.vnf_ports
    bond = {0: BONDS[0], 1: BONDS[1]} if s.bond != "none" else {}

    def label(ports: list[str]) -> str:
        if ports == list(s.side(0)) and bond:
            return f"{bond[0]} ({'+'.join(ports)})"
        if ports == list(s.side(1)) and bond:
            return f"{bond[1]} ({'+'.join(ports)})"
        return "+".join(ports)

    def bridge(ports: list[str]) -> str:
        return outer if ports[0].startswith("g") else inner

    out = []
    for tx_side in (0, 1):
        rx_side = 1 - tx_side
        # the ports frames enter OVS on and leave it by, in order: zlgen side, VNF 1, ..., zlgen side
        stops = [list(s.side(tx_side))]
        for k in range(VNFS[s.topology]) if tx_side == 0 else reversed(range(VNFS[s.topology])):
            a, b = vnf[2 * k], vnf[2 * k + 1]
            stops += [[a], [b]] if tx_side == 0 else [[b], [a]]
        stops.append(list(s.side(rx_side)))
        gen_in = "+".join(s.side(tx_side))
        hops = [{"kind": "gen_tx", "name": f"zlgen tx {gen_in}", "where": "zlgen", "side": tx_side},
                {"kind": "ovs_rx", "name": f"OVS {label(stops[0])} rx", "where": label(stops[0]),
                 "ports": stops[0], "sender": {"gen": tx_side}}]
        for seg in range(0, len(stops), 2):
            src, dst = stops[seg], stops[seg + 1]
            meter = f"{outer}/{tx_side + 1}" if s.meter_pps and seg == 0 else None
            brs = bridge(src) if bridge(src) == bridge(dst) else f"{bridge(src)}->{bridge(dst)}"
            hops.append({"kind": "ovs_switch", "name": f"OVS {brs} {label(src)}->{label(dst)}", "where": brs,
                         "in_ports": src, "out_ports": dst, "meter": meter})
            hops.append({"kind": "ovs_tx", "name": f"OVS {label(dst)} tx", "where": label(dst), "ports": dst,
                         "receiver": "zlgen" if dst[0].startswith("g") else "vnf"})
            if dst[0].startswith("v"):
                k = vnf.index(dst[0]) // 2
                pin = vnf.index(dst[0]) % 2
                nxt = stops[seg + 2]
                name = f"VNF {k + 1} (testpmd)"
                hops.append({"kind": "proc_rx", "name": f"{name} rx port {pin}", "where": f"vnf{k}",
                             "proc": f"vnf{k}", "port": pin, "label": name})
                hops.append({"kind": "ovs_rx", "name": f"OVS {label(nxt)} rx", "where": label(nxt), "ports": nxt,
                             "sender": {"proc": f"vnf{k}", "in": pin, "out": 1 - pin, "label": name}})
        hops.append({"kind": "gen_rx", "name": f"zlgen rx {'+'.join(s.side(rx_side))}", "where": "zlgen",
                     "side": rx_side, "from": tx_side})
        out.append({"direction": "AB"[tx_side] + "->" + "AB"[rx_side], "tx_side": tx_side, "rx_side": rx_side,
                    "hops": hops})
    return out


def _virtio(index: int, sock, queues: int, ring: int) -> str:
    return f"net_virtio_user{index},path={sock},server=1,queues={queues},queue_size={ring}"


class OvsBench:
    """Starts OVS, the VNFs and zlgen in order, stops them in reverse however it ends."""

    def __init__(self, spec: OvsBenchSpec, ws: Workspace):
        self.spec = spec
        self.ws = ws
        self.ovs: Ovs | None = None
        self.vnfs: list[Vnf] = []
        self.gen: Zlgen | None = None
        self._stack = ExitStack()

    @property
    def vnf(self) -> Vnf | None:
        """The first VNF (None in ovs-p2p)."""
        return self.vnfs[0] if self.vnfs else None

    def start(self) -> OvsBench:
        s = self.spec
        hugepages.require(s.hugepage_mb)
        try:
            self.ovs = self._stack.enter_context(Ovs(self.ws.root / "ovs", OvsSettings(
                file_prefix=self.ws.prefix("ovs"), socket_mem_mb=s.socket_mem_mb,
                socket_limit_mb=s.socket_limit_mb or s.socket_mem_mb,
                lcore_mask=s.lcore_mask, pmd_cpu_mask=s.pmd_cpu_mask, rxq_assign=s.rxq_assign,
                extra=s.dpdk_extra, datapath=s.datapath)))
            self._switch()
            self.ovs.apply_ct_limits()
            for k in range(VNFS[s.topology]):
                vnf = self._vm(k) if s.vnf == "vm" else self._process_vnf(k)
                self._connect(vnf.start, s.vnf_ports[2 * k:2 * k + 2],
                              f"VNF {k + 1} ({'VM' if s.vnf == 'vm' else 'testpmd'})")
                self._stack.callback(vnf.stop)
                self.vnfs.append(vnf)
            gen_eal = Eal(lcores=s.gen_lcores, file_prefix=self.ws.prefix("gen"),
                          vdevs=tuple(_virtio(i, self.ws.sock(n), s.queues, s.gen_ring)
                                      for i, n in enumerate(s.gen_ports)))
            gen = Zlgen(ZlgenConfig(eal=gen_eal, ctl_path=self.ws.sock("zlgen-ctl"), max_frame=max(1518, s.max_frame),
                                    rxq=s.queues, txq=s.queues, gap_us=s.gap_us), self.ws.log("zlgen"))
            self._connect(lambda: gen.start(s.connect_timeout_s), s.gen_ports, "zlgen")
            self._stack.callback(gen.stop)
            self.gen = gen
            for name in (*s.gen_ports, *s.vnf_ports):
                self.ovs.check_port(name, s.mtu)
            if s.bond != "none":
                self._bond_ready()
            self.warm_up()
        except BaseException:
            self._stack.close()
            raise
        return self

    def _vnf_testpmd(self, k: int, eal: Eal) -> TestPmdConfig:
        s = self.spec
        q = s.vnf_queues or s.queues
        return TestPmdConfig(eal=eal, forward_mode=s.vnf_forward_mode, max_frame=s.max_frame, rxq=q, txq=q,
                             nb_mbufs=8192)

    def _process_vnf(self, k: int) -> TestPmd:
        """VNF k as a host process: testpmd on two net_virtio_user devices serving the vhost-user sockets."""
        s = self.spec
        ports = s.vnf_ports[2 * k:2 * k + 2]
        eal = Eal(lcores=s.vnf_lcores, main_lcore=s.vnf_main_lcore, file_prefix=self.ws.prefix(f"vnf{k}"),
                  vdevs=tuple(_virtio(i, self.ws.sock(n), s.vnf_queues or s.queues, s.vnf_ring)
                              for i, n in enumerate(ports)))
        vnf = TestPmd(self._vnf_testpmd(k, eal), self.ws.log(f"vnf{k}"), start_timeout=s.connect_timeout_s)
        vnf.proc.name = f"VNF {k + 1} (dpdk-testpmd)"
        return vnf

    def _vm(self, k: int) -> GuestVm:
        """VNF k as a QEMU/KVM guest: its two virtio-net devices are vhost-user ports whose sockets QEMU serves
        (OVS dpdkvhostuserclient connects), testpmd inside on vCPUs 0 (main) and 1.. (forwarding)."""
        s = self.spec
        kernel, initrd = guest_files()
        ports = s.vnf_ports[2 * k:2 * k + 2]
        n = len(s.vnf_vcpus)
        # testpmd in the guest: EAL with the default prefix (the relay reads /var/run/dpdk/rte), lcore 0 main
        eal = ["-l", f"0-{n - 1}", "--main-lcore", "0", "--log-level", "lib.eal:warning"]
        app = self._vnf_testpmd(k, Eal(lcores="0", file_prefix="rte")).app_args()
        # guest memory minus about 160 MB for the kernel and the initramfs: testpmd's hugepages (2 MiB)
        pages = max(64, (s.vnf_memory_mb - 160) // 2)
        cmdline = kernel_cmdline([*eal, "--", *app], pages)
        d = self.ws.root / f"vm{k}"
        spec = VmSpec(name=f"zl-{self.ws.prefix(f'vnf{k}')}", kernel=str(kernel), initrd=str(initrd),
                      cmdline=cmdline, vcpu_pins=s.vnf_vcpus, emulator_cpus=s.vnf_emulator_cpus,
                      memory_mb=s.vnf_memory_mb, console=str(d / "console.log"),
                      ctl_socket=str(self.ws.sock(f"vm{k}-ctl")), telemetry_socket=str(self.ws.sock(f"vm{k}-tel")),
                      qmp_socket=str(self.ws.sock(f"vm{k}-qmp")), emulator=qemu_binary(), cpu_flags=s.cpu_flags,
                      accel=resolve_accel(s.vnf_accel)[0],
                      interfaces=tuple(VmInterface(socket=str(self.ws.sock(p)), mac=f"52:54:00:7a:{k:02x}:{i:02x}",
                                                   queues=s.vnf_queues or s.queues, ring=s.vnf_ring)
                                      for i, p in enumerate(ports)))
        return GuestVm(spec, d, f"VNF {k + 1}", self.ws.log(f"vnf{k}"), boot_timeout_s=s.vnf_boot_timeout_s)

    def domains(self) -> list[str]:
        """The domain XML of each VNF VM (none with process VNFs)."""
        return [p.domain_xml for p in (v.placement() for v in self.vnfs) if p.domain_xml is not None]

    def _connect(self, start, ports: tuple[str, ...], who: str) -> None:
        """Starts a process whose virtio-user ports serve vhost-user sockets; it waits at probe until OVS
        connects. When it times out, names the OVS ports that never connected and the socket they wait on."""
        try:
            start()
        except ZeroLossError as e:
            try:
                waiting = self.ovs.never_connected(list(ports))
            except ZeroLossError:
                waiting = {}
            if not waiting:
                raise
            which = ", ".join(f"{p} (vhost-server-path {path})" for p, path in waiting.items())
            raise ZeroLossError(f"OVS port {which} never connected to {who}: {e}",
                                "the process serving that socket is not running or the path differs; "
                                "compare 'ovs-vsctl get Interface PORT options:vhost-server-path' with the VM's "
                                "(or VNF's) socket") from e

    def _switch(self) -> None:
        """Bridges, ports, patch ports, meters and OpenFlow rules of the topology."""
        s, ovs = self.spec, self.ovs
        outer, inner = s.bridge_names
        for br in dict.fromkeys((outer, inner)):
            ovs.add_bridge(br)
        if s.bond == "none":
            for name in s.gen_ports:
                ovs.add_vhost_client_port(outer, name, self.ovs_socket(name), mtu=s.mtu, **self._port_opts())
        else:
            for i, bond in enumerate(BONDS):
                ovs.add_vhost_client_bond(outer, bond, [(n, self.ovs_socket(n)) for n in s.side(i)], mode=s.bond,
                                          mtu=s.mtu, **self._port_opts())
        for name in s.vnf_ports:
            ovs.add_vhost_client_port(inner, name, self.ovs_socket(name), mtu=s.mtu, **self._port_opts())
        if s.bridges == 2:
            for i in (0, 1):
                ovs.add_patch_pair(outer, f"patch-p{i}", inner, f"patch-i{i}")
        if s.meter_pps:
            for i in (1, 2):
                ovs.add_meter(outer, f"meter={i},pktps,burst,band=type=drop,rate={s.meter_pps},"
                                     f"burst_size={s.meter_burst}")
        for br, rules in flows(s).items():
            ovs.set_flows(br, rules)

    def ovs_socket(self, port: str):
        """The vhost-user socket OVS's port connects to (the one the VNF or zlgen serves)."""
        return self.ws.sock(port)

    def _port_opts(self) -> dict:
        s = self.spec
        return {"n_rxq": s.queues, "rxd": s.rxd, "txd": s.txd, "tx_retries_max": s.tx_retries_max}

    def restart_switch(self) -> None:
        """Restarts ovs-vswitchd as an upgrade or crash would: ports come back from OVSDB, OpenFlow rules and
        meters are re-applied, the VNFs' and zlgen's virtio devices reconnect; then waits until all are up."""
        s = self.spec
        self.ovs.restart_vswitchd()
        for name in (*s.gen_ports, *s.vnf_ports):
            self.ovs.check_port(name, s.mtu, timeout=30)
        if s.bond != "none":
            self._bond_ready()

    def _bond_ready(self, timeout: float = 30) -> None:
        """Static FDB entries for zlgen's MACs on their bonds (egress uses NORMAL), and every member enabled."""
        s = self.spec
        macs = [p["mac"] for p in self.gen.client.ports()]
        vlan = str(max(s.vlan, 0))
        for p, mac in enumerate(macs):  # fdb/add names a member interface; the entry is the member's bond
            self.ovs.appctl("fdb/add", s.bridge_names[0], s.gen_ports[p], vlan, mac)
        deadline = time.monotonic() + timeout
        while True:
            states = {b: bond_members(self.ovs.appctl("bond/show", b)) for b in BONDS}
            if all(v == "enabled" for m in states.values() for v in m.values()) and all(states.values()):
                return
            if time.monotonic() > deadline:
                raise ZeroLossError(f"OVS bond members not all enabled after {timeout:.0f} s: {states}",
                                    "a member's vhost-user port is not connected; see the logs with --keep-logs")
            time.sleep(0.2)

    def warm_up(self) -> None:
        """A discarded trial that touches every ring buffer once (first use page-faults and loses frames)."""
        c = self.gen.client
        n = len(self.spec.gen_ports)
        c.configure([Stream(port=p, queue=q, rx_port=p ^ 1, size=min(self.spec.max_frame, 1518), rate_pps=20_000,
                            vlan=self.spec.vlan) for p in range(n) for q in range(self.spec.queues)])
        c.run_trial(frames=2 * self.spec.gen_ring, drain_ms=300)

    def counters(self) -> dict:
        """Counters of every stage for the loss ledger: OVS's (live) and each VNF's ethdev counters through its
        DPDK telemetry socket. A VNF paused on purpose does not answer: it is left out; a stopped or dead one
        raises ComponentDied."""
        procs = {}
        for k, vnf in enumerate(self.vnfs):
            try:
                procs[f"vnf{k}"] = vnf.port_stats()
            except ComponentDied:
                raise
            except (ZeroLossError, OSError, ValueError):  # not answering: left out of this reading
                pass
        # the time of the reading, so that a PMD's busy share can be taken over the trial's TX window
        return {"ovs": {**self.ovs.counters(), "t_ns": time.monotonic_ns()}, "procs": procs}

    def paths(self) -> list[dict]:
        return ovs_paths(self.spec)

    def state(self) -> dict:
        """OVS state kept per trial: PMD queues and stats, drop coverage, datapath ports (MTU, queues), every
        interface's OVSDB statistics (as of OVS's last 5 s refresh), mempools, meters, bonds' member states."""
        out: dict = self.ovs.snapshot()
        out["interface_statistics"] = self.ovs.interface_statistics()
        out["mempools"] = self.ovs.mempools([*self.spec.gen_ports, *self.spec.vnf_ports])
        if self.spec.meter_pps:
            out["meters"] = self.ovs.meter_config()
        if self.spec.bond != "none":
            out["bond_show"] = "\n".join(self.ovs.appctl("bond/show", b) for b in BONDS)
        return out

    def check(self) -> None:
        """Raises ComponentDied naming a process of the bench (OVS's two, each VNF, zlgen) that is no longer
        running or is stopped: watched around every trial, so that a dead or frozen VNF never reads as 100 % loss."""
        if self.ovs:
            self.ovs.health()
        for v in self.vnfs:
            v.health()
        check_alive([self.gen.proc] if self.gen else [])

    def stop(self) -> None:
        """Stops zlgen, the VNFs and OVS, in reverse order of start. Every stopped one is let run first: a peer
        that quits talks to OVS over vhost-user, and would wait for a frozen OVS to answer."""
        for v in self.vnfs:
            v.close_stats()
        for proc in [*(self.ovs.processes() if self.ovs else []), *(v.proc for v in self.vnfs),
                     *([self.gen.proc] if self.gen else [])]:
            proc.thaw()
        self._stack.close()

    def __enter__(self) -> OvsBench:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def bond_members(text: str) -> dict[str, str]:
    """Parses `ovs-appctl bond/show BOND`: each member's state (enabled/disabled)."""
    return dict(re.findall(r"^member (\S+): (\w+)", text, re.M))
