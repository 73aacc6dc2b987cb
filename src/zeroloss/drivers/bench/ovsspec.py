"""The OVS bench's topology as data: which ports, bridges, bonds, VLANs, tunnel and firewall an OVS-DPDK bench
has (bench.ovsbench builds it, bench.ovsflows writes its OpenFlow rules, bench.ovspaths its ledger hops). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.configcheck import check_neutron, check_ovs_topology
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.ovsfacts import DatapathTuning

VNFS = {"ovs-p2p": 0, "pvp": 1, "pvvp": 2}
BONDS = ("bond-a", "bond-b")
# hugepages: OVS's DPDK memory, plus zlgen and each VNF testpmd (BRIEF §7: 300-512 MB per testpmd;
# the bench's testpmd with 8192 jumbo mbufs takes about 256 MB)
GEN_MB = VNF_MB = 256
# tunnel vxlan: the VTEPs on a documentation prefix (RFC 5737 TEST-NET-3; TEST-NET-1 is this host's own network in
# some sandboxes), Neutron's first local VLAN, VXLAN's 50 bytes
LOCAL_VTEP, REMOTE_VTEP, VTEP_PLEN = "203.0.113.1", "203.0.113.2", 24
LOCAL_VLAN = 1
VXLAN_OVERHEAD = 50          # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8
# coverage counters each stage of a switch segment explains (prefixes): the firewall's drop rules are OpenFlow drops
STAGE_COUNTERS = {"conntrack": ("drop_action_of_pipeline",),
                  "encap": ("datapath_drop_tunnel_push", "drop_action_tunnel"),
                  "decap": ("datapath_drop_tunnel_pop", "datapath_drop_invalid_tnl_port")}


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
    vnf: str = "process"           # process: testpmd on virtio-user; vm: a QEMU/KVM guest running testpmd;
                                   # container: the process's testpmd in a podman container (vnf.container)
    cnf_launch: str = "run"        # container: podman run, or podman kube play of its Pod manifest
    vnf_link: str = "vhost"        # process, container: the VNFs' ports are vhost-user, or memif (OVS the server)
    vnf_vcpus: tuple[int, ...] = (1, 0)  # vm: host CPU of vCPU 0 (testpmd's main lcore), 1 (its forwarding lcore)...
    vnf_emulator_cpus: tuple[int, ...] = (1,)  # vm: QEMU's emulator threads
    vnf_memory_mb: int = 512       # vm: guest memory, all of it on the host's hugepages
    vnf_queues: int = 0            # queue pairs of each VNF port (0: queues), the guest's multiqueue
    vnf_boot_timeout_s: float = 60
    vnf_accel: str = "auto"        # vm: kvm, tcg (QEMU's emulator), auto: kvm where the host has vmx/svm, else tcg
    cpu_flags: tuple[str, ...] = ("-arch-capabilities",)  # vm: host-passthrough minus these (see vnf.vm.cpu_flags)
    datapath: DatapathTuning = DatapathTuning()  # OVS's caches, revalidators, conntrack limits (ovsfacts)
    firewall: str = "none"         # conntrack: Neutron's openvswitch firewall on the tenant ports (module doc)
    tunnel: str = "none"           # vxlan: br-int - br-tun - br-phy, zlgen's side B the remote VTEP
    vni: int = 100                 # the tenant network's VXLAN network identifier
    underlay_mtu: int = 0          # mtu_request of br-phy's underlay port (0: mtu + 50); smaller on purpose: H3's case
    sg_prefix: str = "198.18.0.0/15"  # the security-group rule's remote prefix: the streams' source addresses

    def __post_init__(self) -> None:
        if self.topology not in VNFS:
            raise ZeroLossError(f"unknown OVS topology '{self.topology}'", "use ovs-p2p, pvp or pvvp")
        check_ovs_topology(self.bridges, self.vlan, self.bond)
        check_neutron(self.topology, self.bridges, self.vlan, self.bond, self.meter_pps, self.firewall, self.tunnel)

    @property
    def mtu(self) -> int:
        return max(1500, self.max_frame - 18)  # mtu_request is the L3 MTU: frame = MTU + 14 + 4

    @property
    def wire_mtu(self) -> int:
        """mtu_request of the underlay port (g1 on br-phy with tunnel vxlan)."""
        return self.underlay_mtu or self.mtu + VXLAN_OVERHEAD

    def port_mtu(self, port: str) -> int:
        """mtu_request of an OVS port: the underlay's on br-phy, the tenant MTU elsewhere."""
        return self.wire_mtu if self.tunnel != "none" and port in self.side(1) else self.mtu

    @property
    def vxlan_port(self) -> str:
        """The tunnel port's name as Neutron's agent makes it: vxlan- and the remote VTEP's address in hex."""
        return "vxlan-" + "".join(f"{int(b):02x}" for b in REMOTE_VTEP.split("."))

    @property
    def fw_ports(self) -> tuple[str, ...]:
        """The tenant ports the firewall protects, in the order of their numbers in reg5 (index + 1): zlgen's ports
        on the tenant bridge (all with one bridge, side A's with the tunnel), then the VNFs'."""
        if self.firewall == "none":
            return ()
        if self.tunnel != "none":
            gen = self.side(0)
        else:
            gen = self.gen_ports if self.bridges == 1 else ()
        return (*gen, *self.vnf_ports)

    @property
    def local_vlan(self) -> int:
        """The tenant network's local VLAN on the tenant bridge (Neutron's reg6): the internal VLAN of the VLAN
        translation with two bridges, else the first one Neutron's agent hands out."""
        return self.vlan + 100 if self.bridges == 2 and self.vlan >= 0 else LOCAL_VLAN

    def zone(self, port: str) -> int | None:
        """The conntrack zone of a tenant port: its network's local VLAN, one zone per network (None: not
        firewalled)."""
        return self.local_vlan if port in self.fw_ports else None

    def guard(self, a: str, b: str) -> str | None:
        """The firewalled port whose tables look frames from port a to port b of the tenant bridge up in conntrack:
        a's egress, else b's ingress (ovsfirewall); None when neither is firewalled."""
        return a if a in self.fw_ports else b if b in self.fw_ports else None

    def gen_mac(self, port: str) -> str:
        """zlgen's MAC on one of its ports (set on its virtio-user device): the firewall's anti-spoofing matches it."""
        return f"02:5a:4c:00:00:{self.gen_ports.index(port) + 1:02x}"

    def inner_end(self, port: str, side: int) -> str:
        """Where frames of zlgen port `port` (on side `side`) enter or leave the tenant bridge."""
        if not port.startswith("g") or self.bridges == 1 and self.tunnel == "none":
            return port
        if self.tunnel != "none":
            return port if side == 0 else "patch-tun"
        return f"patch-i{side}"

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
        return ("br0", "br0") if self.bridges == 1 and self.tunnel == "none" else ("br-phy", "br-int")

    def bridge_of(self, port: str) -> str:
        """The bridge an OVS port of zlgen or a VNF sits on."""
        outer, inner = self.bridge_names
        if port.startswith("v") or self.tunnel != "none" and port in self.side(0):
            return inner
        return outer

    def side(self, i: int) -> tuple[str, ...]:
        """The zlgen ports of side i (0: A, 1: B)."""
        return self.gen_ports[i::2]

    @property
    def hugepage_mb(self) -> int:
        per_vnf = self.vnf_memory_mb if self.vnf == "vm" else VNF_MB
        return self.socket_mem_mb + GEN_MB + per_vnf * VNFS[self.topology]
