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

As Neutron's OVS agent deploys a compute node (issue 30), two options combine with every topology:
- firewall=conntrack: security groups on the tenant ports' bridge as Neutron's openvswitch firewall driver builds
  them (bench.ovsfirewall: its tables 60, 71-73, 81-82, 91-94, registers reg5/reg6, the same flows): the tenant
  ports (the VNFs', and zlgen's where they sit on that bridge) are ports of one network, whose local VLAN is its
  conntrack zone (zone=NXM_NX_REG6[0..15], shared by the network's ports). A frame leaving a firewalled port is
  checked against the port's MAC/IP pairs and looked up in the zone once, committed where Neutron commits it (at the
  ingress port's rules, or in table 73 towards a port of no firewall); a reply is +est+rpl at its egress (the fast
  path). OVS 3.1's userspace conntrack keeps one-way UDP +new (committed again each frame) until a reply: the
  bench's side B streams are the replies of side A's when the firewall is on (bench.target.bench_streams).
- tunnel=vxlan: br-int (g0, the VNFs) - patch - br-tun (a userspace VXLAN port, local VLAN 1 <-> the VNI) and the
  underlay bridge br-phy (g1 as the physical port, the local VTEP address on br-phy's own port, a kernel tap in
  the netdev datapath, as the userspace-tunnelling how-to sets it). zlgen's side B is the remote VTEP: its frames
  arrive encapsulated (OVS decapsulates B->A, encapsulates A->B; zlgen decapsulates and counts inner frames).
"""

from __future__ import annotations

import re
import time
from contextlib import ExitStack
from dataclasses import replace

from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.stream import Stream, Vxlan

from ..dpdk import hugepages
from ..dpdk.eal import Eal
from ..dpdk.testpmd import TestPmd, TestPmdConfig
from ..dpdk.vnf import Vnf
from ..dut.ovs import READ_S, Ovs, OvsSettings
from ..gen import Zlgen, ZlgenConfig
from ..proc import ComponentDied, check_alive
from ..vnf.container import SHARED_DIR, ContainerSpec, ContainerVnf, PodmanFailed, cnf_pod, require_image
from ..vnf.domain import VmInterface, VmSpec, kernel_cmdline
from ..vnf.vm import GuestVm, guest_files, qemu_binary, resolve_accel
from .ovsflows import flows
from .ovspaths import ovs_paths
from .ovsspec import BONDS, GEN_MB, LOCAL_VTEP, REMOTE_VTEP, VNF_MB, VNFS, VTEP_PLEN, OvsBenchSpec
from .workspace import Workspace

# the spec, its rules and its ledger paths are bench.ovsspec's, ovsflows' and ovspaths'; importable from here too
__all__ = ["BONDS", "GEN_MB", "LOCAL_VTEP", "VNFS", "VNF_MB", "OvsBench", "OvsBenchSpec", "bond_members", "flows",
           "ovs_paths"]


def _virtio(index: int, sock, queues: int, ring: int, mac: str = "") -> str:
    return f"net_virtio_user{index},path={sock},server=1,queues={queues},queue_size={ring}" + (f",mac={mac}" if mac
                                                                                              else "")


class OvsBench:
    """Starts OVS, the VNFs and zlgen in order, stops them in reverse however it ends."""

    def __init__(self, spec: OvsBenchSpec, ws: Workspace):
        self.spec = spec
        self.ws = ws
        self.ovs: Ovs | None = None
        self.vnfs: list[Vnf] = []
        self.gen: Zlgen | None = None
        self.vxlan: Vxlan | None = None  # tunnel vxlan: the outer headers of zlgen's side B (the remote VTEP)
        self._vtep_cleanup = None
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
                vnf = {"vm": self._vm, "container": self._container}.get(s.vnf, self._process_vnf)(k)
                self._connect(vnf.start, s.vnf_ports[2 * k:2 * k + 2],
                              f"VNF {k + 1} ({ {'vm': 'VM', 'container': 'container'}.get(s.vnf, 'testpmd')})")
                self._stack.callback(vnf.stop)
                self.vnfs.append(vnf)
            gen_eal = Eal(lcores=s.gen_lcores, file_prefix=self.ws.prefix("gen"),
                          vdevs=tuple(_virtio(i, self.ws.sock(n), s.queues, s.gen_ring,
                                              s.gen_mac(n) if s.firewall != "none" else "")
                                      for i, n in enumerate(s.gen_ports)))
            gen = Zlgen(ZlgenConfig(eal=gen_eal, ctl_path=self.ws.sock("zlgen-ctl"), max_frame=max(1518, s.max_frame),
                                    rxq=s.queues, txq=s.queues, gap_us=s.gap_us), self.ws.log("zlgen"))
            self._connect(lambda: gen.start(s.connect_timeout_s), s.gen_ports, "zlgen")
            self._stack.callback(gen.stop)
            self.gen = gen
            for name in (*s.gen_ports, *s.vnf_ports):
                self.ovs.check_port(name, s.port_mtu(name))
            self._underlay()
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
        if s.vnf_link == "memif":
            q = self.memif_queues()
        return TestPmdConfig(eal=eal, forward_mode=s.vnf_forward_mode, max_frame=s.max_frame, rxq=q, txq=q,
                             nb_mbufs=8192, set_mtu=s.vnf_link != "memif")

    def _process_vnf(self, k: int) -> TestPmd:
        """VNF k as a host process: testpmd on two net_virtio_user devices serving the vhost-user sockets."""
        s = self.spec
        ports = s.vnf_ports[2 * k:2 * k + 2]
        eal = Eal(lcores=s.vnf_lcores, main_lcore=s.vnf_main_lcore, file_prefix=self.ws.prefix(f"vnf{k}"),
                  vdevs=tuple(self._vnf_port(i, n) for i, n in enumerate(ports)))
        vnf = TestPmd(self._vnf_testpmd(k, eal), self.ws.log(f"vnf{k}"), start_timeout=s.connect_timeout_s)
        vnf.proc.name = f"VNF {k + 1} (dpdk-testpmd)"
        return vnf

    def _container(self, k: int) -> ContainerVnf:
        """VNF k as a container (a CNF): the process VNF's testpmd, its sockets in the session folder mounted at
        /vhu, its EAL runtime folder mounted where it is here (telemetry), pinned to the process VNF's lcores."""
        s = self.spec
        ports = s.vnf_ports[2 * k:2 * k + 2]
        # a Pod's name is a DNS subdomain: the session's prefix without its '_'
        name = f"zl-{self.ws.prefix(f'vnf{k}')}".lower().replace("_", "-")
        eal = Eal(lcores=s.vnf_lcores, main_lcore=s.vnf_main_lcore, file_prefix=self.ws.prefix(f"vnf{k}"),
                  vdevs=tuple(self._vnf_port(i, n, SHARED_DIR) for i, n in enumerate(ports)))
        cfg = self._vnf_testpmd(k, eal)
        spec = ContainerSpec(name=name, image=require_image(), argv=tuple(cfg.argv()),
                             cpus=parse_list(s.vnf_lcores), socket_dir=str(self.ws.root),
                             runtime_dir=str(eal.runtime_dir), hugepages_mb=VNF_MB, launch=s.cnf_launch,
                             labels={"org.zeroloss.session": self.ws.tag}, ctl_fifo=f"cnf{k}.fifo")
        manifest = cnf_pod(spec) if s.cnf_launch == "kube" else None
        return ContainerVnf(spec, self.ws.root / f"cnf{k}", f"VNF {k + 1}", self.ws.log(f"vnf{k}"),
                            eal.telemetry_socket, manifest=manifest, start_timeout_s=s.connect_timeout_s)

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
        except PodmanFailed:
            raise
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
        for br in dict.fromkeys((outer, inner, *(("br-tun",) if s.tunnel != "none" else ()))):
            ovs.add_bridge(br)
        if s.bond == "none":
            for name in s.gen_ports:
                ovs.add_vhost_client_port(s.bridge_of(name), name, self.ovs_socket(name), mtu=s.port_mtu(name),
                                          **self._port_opts())
        else:
            for i, bond in enumerate(BONDS):
                ovs.add_vhost_client_bond(outer, bond, [(n, self.ovs_socket(n)) for n in s.side(i)], mode=s.bond,
                                          mtu=s.mtu, **self._port_opts())
        for name in s.vnf_ports:
            if s.vnf_link == "memif":
                ovs.add_memif_port(inner, name, self.memif_socket(name), n_rxq=self.memif_queues(), mtu=s.mtu,
                                   rxd=s.rxd, txd=s.txd)
            else:
                ovs.add_vhost_client_port(inner, name, self.ovs_socket(name), mtu=s.mtu, **self._port_opts())
        if s.tunnel != "none":
            ovs.add_patch_pair(inner, "patch-tun", "br-tun", "patch-int")
            ovs.add_vxlan_port("br-tun", s.vxlan_port, REMOTE_VTEP, LOCAL_VTEP)
        elif s.bridges == 2:
            for i in (0, 1):
                ovs.add_patch_pair(outer, f"patch-p{i}", inner, f"patch-i{i}")
        if s.meter_pps:
            for i in (1, 2):
                ovs.add_meter(outer, f"meter={i},pktps,burst,band=type=drop,rate={s.meter_pps},"
                                     f"burst_size={s.meter_burst}")
        for br, rules in flows(s).items():
            ovs.set_flows(br, rules)

    def _underlay(self) -> None:
        """tunnel vxlan: the local VTEP on br-phy, the route and neighbour entry of zlgen's side B (the remote VTEP),
        then the Vxlan header zlgen's side B streams carry. Again after a vswitchd restart (the tap is new)."""
        s = self.spec
        if s.tunnel == "none":
            self.vxlan = None
            return
        g1 = s.gen_ports.index(s.side(1)[0])
        gen_mac = self.gen.client.ports()[g1]["mac"]
        if self._vtep_cleanup is None:  # the tap persists after OVS: its address is taken away when the bench stops
            self._vtep_cleanup = self._stack.callback(self.ovs.clear_vtep, "br-phy", f"{LOCAL_VTEP}/{VTEP_PLEN}")
        self.ovs.set_vtep("br-phy", f"{LOCAL_VTEP}/{VTEP_PLEN}", REMOTE_VTEP, gen_mac)
        self.vxlan = Vxlan(s.vni, src_mac=gen_mac, dst_mac=self.ovs.mac_in_use("br-phy"), src_ip=REMOTE_VTEP,
                           dst_ip=LOCAL_VTEP)

    def encapsulate(self, streams: list[Stream]) -> list[Stream]:
        """The streams as zlgen sends them: with the tunnel, side B's in VXLAN from the remote VTEP."""
        if self.vxlan is None:
            return streams
        return [replace(st, vxlan=self.vxlan) if st.port % 2 == 1 else st for st in streams]

    def ovs_socket(self, port: str):
        """The vhost-user socket OVS's port connects to (the one the VNF or zlgen serves)."""
        return self.ws.sock(port)

    def memif_queues(self) -> int:
        """Queue pairs of a memif VNF port. memif's client sets the rings of both sides, and OVS transmits on the
        queue of its thread (one per PMD, one for the main thread): the VNF must have that many, or OVS's TX to
        the queues it lacks fails."""
        s = self.spec
        return max(s.vnf_queues or s.queues, bin(int(s.pmd_cpu_mask, 16)).count("1") + 1)

    def memif_socket(self, port: str):
        """The memif socket OVS serves for a VNF port (--vnf-link memif)."""
        return self.ws.sock(f"{port}-memif")

    def _vnf_port(self, i: int, port: str, folder: str | None = None) -> str:
        """The VNF's vdev for its port i on OVS's port: virtio-user serving the vhost-user socket, or a memif client
        of OVS's memif socket; folder: where the socket is seen from the VNF (a container's mount)."""
        s = self.spec
        if s.vnf_link == "memif":
            sock = self.memif_socket(port)
            path = f"{folder}/{sock.name}" if folder else str(sock)
            return f"net_memif{i},role=client,socket={path},socket-abstract=no,id=0"
        sock = self.ws.sock(port)
        return _virtio(i, f"{folder}/{sock.name}" if folder else sock, s.vnf_queues or s.queues, s.vnf_ring)

    def _port_opts(self) -> dict:
        s = self.spec
        return {"n_rxq": s.queues, "rxd": s.rxd, "txd": s.txd, "tx_retries_max": s.tx_retries_max}

    def restart_switch(self) -> None:
        """Restarts ovs-vswitchd as an upgrade or crash would: ports come back from OVSDB, OpenFlow rules and
        meters are re-applied, the VNFs' and zlgen's virtio devices reconnect; then waits until all are up."""
        s = self.spec
        self.ovs.restart_vswitchd()
        for name in (*s.gen_ports, *s.vnf_ports):
            self.ovs.check_port(name, s.port_mtu(name), timeout=30)
        self._underlay()
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
        c.configure(self.encapsulate([Stream(port=p, queue=q, rx_port=p ^ 1, size=min(self.spec.max_frame, 1518),
                                             rate_pps=20_000, vlan=self.spec.vlan)
                                      for p in range(n) for q in range(self.spec.queues)]))
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
        if self.spec.tunnel != "none":
            for key, args in (("tnl_ports_show", ("tnl/ports/show", "-v")), ("tnl_arp_show", ("tnl/arp/show",)),
                              ("ovs_route_show", ("ovs/route/show",))):
                out[key] = self.ovs.appctl(*args, timeout=READ_S)
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
