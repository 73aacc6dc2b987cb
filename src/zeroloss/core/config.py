"""`zeroloss run` settings: defaults, YAML file, flags; every value checked, faults named in one line.
The checks are core.configcheck's, the YAML reading core.configfile's; their names are importable from here too."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from . import frames
from .configcheck import (
    BOND_MODES,
    FIREWALLS,
    TUNNELS,
    FieldMeta,
    _check,
    _kind,
    _shown,
    _shown_path,
    check_neutron,
    check_ovs_topology,
    number_text,
    require_map,
)
from .configfile import TEXT_KEYS, setting, yaml_load
from .errors import ZeroLossError
from .frames import Frame
from .latency import parse_bounds, parse_loads
from .model import MAX_FRAME, MIN_FRAME

__all__ = ["BOND_MODES", "DEFAULT_SIZES", "FIREWALLS", "FLOW_FIELDS", "OVS_TOPOLOGIES", "TEXT_KEYS", "TOPOLOGIES",
           "TUNNELS", "VNF_RINGS", "RunConfig", "_shown", "check_neutron", "check_ovs_topology", "field_help", "load",
           "number_text", "require_map", "setting", "stored", "yaml_load"]

TOPOLOGIES = ("p2p", "ovs-p2p", "pvp", "pvvp")
OVS_TOPOLOGIES = TOPOLOGIES[1:]
DEFAULT_SIZES = (64, 128, 256, 512, 1024, 1280, 1518, 4096, 8192, 9000)
FLOW_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")
VNF_RINGS = (256, 512, 1024, 2048, 4096)
# keys a config file may hold that are not run settings (not in RunConfig, so never in a result file or a series): the
# history database the command's result is stored in (cli/autoingest.py reads it)
FILE_ONLY_KEYS = frozenset({"history"})
LABEL_MAX = 64  # a series label is a name in tables, not a note


def _f(default, help: str, lo=None, hi=None, choices=None, unit: str = "", flag: str = "", metavar: str = ""):
    """A config field with its range or choices, the help text the CLI shows and, when `zeroloss run` offers it as
    a flag, the flag's name (and its metavar where the unit does not say it; cli.runflags makes the flags)."""
    meta = {"help": help, "lo": lo, "hi": hi, "choices": choices, "unit": unit, "flag": flag, "metavar": metavar}
    if isinstance(default, list | tuple):
        return field(default_factory=lambda: list(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class RunConfig:
    """Everything `zeroloss run` can be told; the YAML keys are these names."""

    frame_sizes: list[Frame] = _f(DEFAULT_SIZES, "frame sizes in bytes including FCS, and IMIXes: imix (64:7,570:4,"
                                                 "1518:1) or imix:SIZE:WEIGHT,... (frames.py)", MIN_FRAME, MAX_FRAME,
                                  unit="B", flag="--frame-sizes")
    flows: int = _f(1024, "flows per direction, made by stepping the flow_fields", 1, 1 << 20, flag="--flows")
    flow_fields: list[str] = _f(("src_ip", "dst_ip"), "header fields stepped per flow", choices=FLOW_FIELDS)
    bidirectional: bool = _f(True, "send both ways (port 0 -> 1 and 1 -> 0)")
    topology: str = _f("p2p", "bench path: p2p (zlgen - testpmd - zlgen), ovs-p2p (zlgen - OVS-DPDK - zlgen), "
                              "pvp (zlgen - OVS-DPDK - testpmd VNF on virtio-user - OVS-DPDK - zlgen) or pvvp "
                              "(two VNFs in a chain)", choices=TOPOLOGIES, flag="--topology")
    bridges: int = _f(1, "OVS: 1 bridge, or 2 (br-phy with zlgen's ports, br-int with the VNFs', patch ports)", 1, 2)
    vlan: int = _f(-1, "OVS with 2 bridges: zlgen's frames carry this VLAN, translated to vlan+100 between the "
                       "bridges (-1: untagged)", -1, 3995)
    bond: str = _f("none", "OVS with 2 bridges: zlgen's ports bonded two by two on br-phy (four zlgen ports)",
                   choices=BOND_MODES, flag="--bond")
    meter_pps: int = _f(0, "OVS: an OpenFlow meter dropping above this rate at OVS ingress, per direction "
                           "(a DUT of known capacity; 0: none)", 0, 100_000_000, unit="pps")
    meter_burst: int = _f(1000, "OVS: the meter's bucket (burst_size), frames: a burst of up to about this many "
                                "frames passes it at any rate (a DUT of known buffer)", 1, 100_000_000)
    firewall: str = _f("none", "OVS: security groups as Neutron's openvswitch firewall deploys them on the tenant "
                               "ports' bridge: conntrack (a zone per network, commit on new, established fast path, "
                               "invalid dropped) or none", choices=FIREWALLS, flag="--firewall")
    tunnel: str = _f("none", "OVS: the tenant network: vxlan (br-int - br-tun with a userspace VXLAN port over the "
                             "br-phy underlay; zlgen's side B is the remote VTEP) or none", choices=TUNNELS,
                     flag="--tunnel")
    ovs_underlay_mtu: int = _f(0, "tunnel vxlan: mtu_request of br-phy's underlay port (0: the inner MTU + 50, "
                                  "VXLAN's overhead; less makes OVS drop the encapsulated frames it cannot send)",
                               0, 9710)
    ovs_socket_mem_mb: int = _f(1024, "OVS: dpdk-socket-mem, hugepage memory OVS takes at start (MTU 9000 ports "
                                      "need about 1024 MB)", 16, 1 << 20, unit="MB")
    ovs_socket_limit_mb: int = _f(0, "OVS: dpdk-socket-limit, the most it may grow to (0: ovs_socket_mem_mb; "
                                     "without a limit OVS's jumbo mempool grows into the VNFs' and zlgen's "
                                     "hugepages)", 0, 1 << 20, unit="MB")
    ovs_pmd_cpu_mask: str = _f("0x1", "OVS: pmd-cpu-mask, the cores of the PMD threads (hex)")
    ovs_lcore_mask: str = _f("0x1", "OVS: dpdk-lcore-mask, the cores of OVS's other DPDK threads (hex)")
    ovs_rxq_assign: str = _f("cycles", "OVS: pmd-rxq-assign, how RX queues are spread over PMDs",
                             choices=("cycles", "roundrobin", "group"))
    ovs_dpdk_extra: str = _f("", "OVS: dpdk-extra, more EAL arguments for OVS (after zeroloss's own)")
    ovs_rxd: int = _f(2048, "OVS: n_rxq_desc of every port (power of 2)", 64, 4096)
    ovs_txd: int = _f(2048, "OVS: n_txq_desc of every port (power of 2)", 64, 4096)
    ovs_tx_retries_max: int = _f(-1, "OVS: tx-retries-max of vhost ports (-1: OVS's default, 8)", -1, 32)
    ovs_emc_insert_inv_prob: int = _f(-1, "OVS: emc-insert-inv-prob, 1 in N new flows enters the exact-match cache "
                                          "(0: EMC off; -1: OVS's default, 100)", -1, (1 << 32) - 1)
    ovs_smc_enable: bool = _f(False, "OVS: smc-enable, the signature-match cache (1M entries per PMD) behind the EMC")
    ovs_flow_limit: int = _f(0, "OVS: flow-limit, datapath flows the revalidators keep (0: OVS's default, 200000)",
                             0, 10_000_000)
    ovs_revalidators: int = _f(0, "OVS: n-revalidator-threads (0: OVS's default, from the cores)", 0, 64)
    ovs_ct_maxconns: int = _f(0, "OVS: conntrack's connection limit, dpctl/ct-set-maxconns (0: OVS's default, "
                                 "3000000)", 0, 100_000_000)
    ovs_ct_zone_limit: int = _f(0, "OVS: conntrack's default zone limit, dpctl/ct-set-limits default=N (0: none)",
                                0, 100_000_000)
    vnf_ring: int = _f(1024, "pvp, pvvp: the VNFs' virtio ring size (a VM takes at most 1024)",
                       choices=VNF_RINGS, flag="--vnf-ring")
    vnf: str = _f("auto", "pvp, pvvp: the VNF: vm (a QEMU/KVM guest running testpmd behind vhost-user), process "
                          "(testpmd on virtio-user, a host process), container (that testpmd in a podman container, "
                          "a CNF), auto (vm where KVM works)",
                  choices=("auto", "vm", "process", "container"), flag="--vnf")
    cnf_launch: str = _f("run", "container: how the CNF starts: run (podman run) or kube (podman kube play of the Pod "
                                "manifest `host plan --format k8s` renders)", choices=("run", "kube"),
                         flag="--cnf-launch")
    vnf_link: str = _f("vhost", "pvp, pvvp with a process or container VNF: its ports are vhost-user (OVS "
                                "dpdkvhostuserclient, the VNF's virtio-user serves the socket) or memif (OVS's "
                                "DPDK port on a net_memif server socket, the VNF its client; frames up to 1518 B)",
                       choices=("vhost", "memif"), flag="--vnf-link")
    vnf_vcpus: str = _f("1,0", "vm: host CPU of each vCPU, in vCPU order (vCPU 0 runs testpmd's main lcore, the "
                               "others forward)")
    vnf_emulator_cpus: str = _f("1", "vm: host CPUs of QEMU's emulator threads")
    vnf_queues: int = _f(0, "pvp, pvvp: queue pairs of each VNF port, the guest's multiqueue (0: dut_rxq)", 0, 16)
    vnf_memory_mb: int = _f(512, "vm: guest memory, on the host's 2 MiB hugepages", 256, 65536, unit="MB")
    vnf_accel: str = _f("auto", "vm: kvm, tcg (QEMU's emulator: slow, for function not speed), or auto (kvm where the "
                                "host has hardware virtualization, else tcg)", choices=("auto", "kvm", "tcg"))
    vnf_boot_timeout_s: float = _f(60.0, "vm: how long the guest may take to reach testpmd's prompt", 5, 3600,
                                   unit="s")
    # its choices and their words are the DUT kinds' (targets/registry.py: kind_of refuses another, cli.runflags
    # offers them): a kind is added without a word here
    dut: str = _f("testpmd", "device under test", flag="--dut")
    lab: str = _f("", "lab mode: the lab file (generator ports, the DUT host, its OVS and VNFs, the traffic; see "
                      "docs/lab.md)",
                  flag="--lab", metavar="FILE")
    dut_set: list[str] = _f((), "lab mode: OVS settings to change on the DUT for this run, TABLE:RECORD:COLUMN[:KEY]="
                                "VALUE (ovs-vsctl set), each restored at the end; needs allow_dut_changes",
                                flag="--dut-set", metavar="TABLE:RECORD:COLUMN[:KEY]=VALUE")
    allow_dut_changes: bool = _f(False, "lab mode: allow dut_set to change the DUT's OVS (restored at the end)",
                                 flag="--allow-dut-changes")
    forward_mode: str = _f("io", "testpmd forwarding mode", choices=("io", "mac", "macswap"), flag="--forward-mode")
    link: str = _f("auto", "bench wire: memif, vhost, or auto (memif up to 1518 B, vhost above)",
                   choices=("auto", "memif", "vhost"), flag="--link")
    ports: list[str] = _f((), "external mode: the two ports as EAL device arguments (PCI address or vdev)",
                          flag="--port", metavar="DEVARGS")
    max_rate_pps: float = _f(0.0, "external and lab mode: the highest rate to try per direction (0 = line rate)",
                             0, 1e10, unit="pps", flag="--max-rate")
    search: str = _f("binary", "search strategy: binary (RFC 2544 / trafficgen: short trials, one long validation) or "
                               "mlr (MLRsearch, RFC 9971: FD.io CSIT's controller; its goals: mlr_exceed_ratio, "
                               "mlr_duration_sum_s, mlr_preceding_targets)", choices=("binary", "mlr"),
                               flag="--search")
    mlr_exceed_ratio: float = _f(0.5, "mlr: share of a load's trial seconds that may exceed the goal's loss and the "
                                      "load still count as a lower bound (0: none may)", 0, 0.99)
    mlr_duration_sum_s: float = _f(0.0, "mlr: trial seconds that decide a load (0: validation_s, one final trial "
                                        "decides)", 0, 86400, unit="s")
    mlr_preceding_targets: int = _f(2, "mlr: coarser phases before the final one, each at twice the width and "
                                       "shorter trials (1 is cheapest; 2 is CSIT's)", 1, 10)
    warmup_s: float = _f(1.0, "warm-up trial before each search, not counted (0: none)", 0, 3600, unit="s",
                         flag="--warmup")
    warmup_pct: float = _f(10.0, "warm-up trial rate (% of the search's top rate)", 0.1, 100, unit="%")
    require_ndr: Any = _f(None, "sign-off: the NDR each frame size must reach, % of line rate: one number for "
                                "every size or a map {size: pct} (as a flag: 25, or 64:10,9000:90); a miss makes "
                                "zeroloss run exit 2, naming the sizes that missed", unit="%",
                                flag="--require-ndr", metavar="PCT|SIZE:PCT,...")
    trial_s: float = _f(2.0, "search trial duration (mlr: its initial trial duration)", 0.1, 86400, unit="s",
                        flag="--trial")
    validation_s: float = _f(5.0, "final validation trial duration (mlr: its final trial duration)", 0.1, 86400,
                             unit="s", flag="--validation")
    drain_ms: int = _f(500, "longest receive time after TX stops before counting; it ends as soon as every frame "
                            "sent has arrived, so only a trial that lost frames waits all of it", 0, 60000, unit="ms",
                       flag="--drain-ms")
    ceiling_s: float = _f(1.0, "how long zlgen sends flat out to measure its own ceiling and the DUT's maximum "
                               "receive rate (MRR) per frame size, before the search", 0.1, 60, unit="s")
    granularity_pct: float = _f(1.0, "stop searching when the bounds are this close (% of the top rate; mlr: "
                                     "relative width, % of the upper bound)",
                                0.01, 50, unit="%", flag="--granularity")
    start_pct: float = _f(100.0, "first trial rate (% of the ceiling)", 0.1, 100, unit="%", flag="--start")
    ndr_loss_pct: float = _f(0.0, "loss tolerated by the no-drop rate (NDR), per direction", 0, 100, unit="%",
                             flag="--ndr-loss")
    pdr_loss_pct: float = _f(0.1, "loss tolerated by the partial-drop rate (PDR), per direction; "
                                  "negative = no PDR", -1, 100, unit="%", flag="--pdr-loss")
    max_latency: str = _f("", "latency bounds the NDR and PDR must also meet, per direction: STAT=LATENCY,... with "
                              "STAT p50, p90, p99, p99.9, p99.99 or max and units ns, us, ms (e.g. p99=50us,max=1ms); "
                              "a trial above one fails as a loss would", flag="--max-latency",
                          metavar="STAT=LATENCY,...")
    latency_loads: str = _f("10,50,90,100", "latency vs load: after each search, fixed-rate trials at these % of "
                                            "the NDR, each with its latency percentiles and histogram (none: no "
                                            "such trials)", flag="--latency-loads", metavar="PCT,PCT,...|none")
    # 2 s: 10^4 frames for a p99.99 from 5 kpps up; at 5 s, the four default loads took 20 s of every frame size
    latency_trial_s: float = _f(2.0, "latency vs load: each trial's duration (0: validation_s)", 0, 86400, unit="s",
                                flag="--latency-trial")
    b2b: bool = _f(False, "back-to-back frames (RFC 2544 §26.4, RFC 9004): after each frame size's searches, the "
                          "longest burst at zlgen's maximum rate the DUT forwards without loss, searched b2b_repeats "
                          "times; their mean, spread and the DUT buffer time it implies", flag="--b2b")
    b2b_repeats: int = _f(10, "back-to-back: searches per frame size, N (RFC 9004 §6.3: N is reported, with no "
                              "minimum; RFC 2544 §26.4 had asked at least 50; 10 keeps a frame size to minutes, "
                              "docs/b2b.md says why)", 1, 1000, flag="--b2b-repeats")
    b2b_max_s: float = _f(2.0, "back-to-back: the longest burst tried, in seconds at the maximum rate (RFC 9004 "
                               "§6.2: configurable up to 30 s; a result at or near it is likely invalid, flagged)",
                          0.001, 60, unit="s", flag="--b2b-max")
    b2b_idle_s: float = _f(2.0, "back-to-back: idle time after each burst and its drain, for the DUT to empty its "
                                "buffers (RFC 9004 §6.2: at least 2 s; a burst that took longer to send waits as "
                                "long as it took)", 0, 60, unit="s")
    b2b_resolution_pct: float = _f(1.0, "back-to-back: stop a search when its bounds are this close (% of the "
                                        "longest burst that passed, at least 1 frame)", 0.01, 50, unit="%")
    gen_tolerance_pct: float = _f(5.0, "achieved rate below requested by more than this = generator failure "
                                       "(retried, never DUT loss)", 0.01, 50, unit="%")
    max_retries: int = _f(3, "retries after a generator failure or anomaly", 0, 20)
    anomaly_policy: str = _f("retry", "negative loss, duplicates, late frames", choices=("fail", "retry", "abort"))
    pace_gap_us: int = _f(1000, "zlgen pacing: a stall shorter than this is made up with short bursts, a "
                                "longer one restarts the schedule and its frames are skipped (generator failure "
                                "if too many)", 1, 1000000, unit="us")
    link_speed_gbps: float = _f(25.0, "nominal link speed for % of line rate", 0.001, 1000, unit="Gb/s",
                                flag="--link-speed")
    repeat: int = _f(1, "searches per frame size (the spread of their NDRs is reported)", 1, 100, flag="--repeat")
    ring_depth_log2: int = _f(14, "bench ring depth, log2 (memif rsize; vhost queue size capped at 4096)", 8, 14)
    dut_rxq: int = _f(1, "RX (and TX) queues per DUT port", 1, 16)
    gen_lcores: str = _f("1", "zlgen's lcores (-l)")
    dut_lcores: str = _f("0,1", "testpmd's lcores (-l); its main lcore is dut_main_lcore")
    core_probe: bool = _f(True, "bench: before each frame size (its pollers held still) and after a run of disturbed "
                          "or generator-failed trials, measure whether the cores they poll on share a physical core "
                          "(zlcores, about 0.7 s); sizes measured on shared cores are flagged cores-shared")
    core_probe_wait_s: float = _f(15.0, "bench: how long to wait (probing again every 2 s) for a host that shares "
                                  "the bench's cores to give them back before measuring anyway", 0, 600, unit="s")
    dut_main_lcore: int = _f(1, "testpmd's main lcore (reads commands only)", 0, 1023)
    strict_rfc2544: bool = _f(False, "RFC 2544 preset: 60 s trials and validation, 2 s drain, 0 loss (RFC 2544 "
                                     "§24, §23)",
                              flag="--strict-rfc2544")
    label: str = _f("", "a name of the run's series in the results history: runs that differ only in their label are "
                        "compared apart, e.g. noisy-neighbour for runs beside another tenant's load (what zeroloss's "
                        "settings do not say); empty: none", flag="--label", metavar="TEXT")

    def __post_init__(self) -> None:
        self._check_fields()
        self._check_cross()
        self._check_ovs()
        object.__setattr__(self, "frame_sizes", frames.keys(self.frame_sizes))  # a mix's label in its stable form
        object.__setattr__(self, "require_ndr", require_map(self.require_ndr, self.frame_sizes))
        if self.search == "mlr" and self.validation_s < self.trial_s:
            raise ZeroLossError(f"config: with search mlr, validation_s ({self.validation_s}) is the final trial "
                                f"duration and must be >= trial_s ({self.trial_s})")
        if self.mlr_duration_sum_s and self.mlr_duration_sum_s < self.validation_s:
            raise ZeroLossError(f"config: mlr_duration_sum_s ({self.mlr_duration_sum_s}) must be 0 or >= validation_s "
                                f"({self.validation_s})")
        if not self.flow_fields and self.flows > 1:
            raise ZeroLossError("flows > 1 needs at least one of flow_fields: " + ", ".join(FLOW_FIELDS))

    def _check_fields(self) -> None:
        """Each value on its own (type, range, choices), the latency texts, and PDR's loss against NDR's."""
        for f in fields(self):
            _check(f, getattr(self, f.name))
        parse_bounds(self.max_latency), parse_loads(self.latency_loads)  # a fault named in one line
        if len(self.label) > LABEL_MAX or not self.label.isprintable():
            raise ZeroLossError(f"config: label must be at most {LABEL_MAX} printable characters, got "
                                f"{_shown(self.label)}")
        if self.pdr_loss_pct >= 0 and self.pdr_loss_pct < self.ndr_loss_pct:
            raise ZeroLossError(f"pdr_loss_pct ({self.pdr_loss_pct}) must be >= ndr_loss_pct ({self.ndr_loss_pct})")

    def _check_cross(self) -> None:
        """The settings that must agree: the DUT with the lab file, the flows with UDP's ports, the VNF with its link
        and ring. What one kind of DUT needs of them (external's two ports, lab's file) is that kind's check
        (targets/kinds/), run wherever the settings meet their kind (targets/registry.kind_of)."""
        if self.lab and self.dut == "testpmd":  # the default: a lab file says where the DUT is
            object.__setattr__(self, "dut", "lab")
        if self.lab and self.dut not in ("lab", "testpmd"):
            raise ZeroLossError(f"config: a lab file runs with dut lab, not {self.dut}", "drop dut, or the lab file")
        if self.dut_set and not self.allow_dut_changes:
            raise ZeroLossError(f"dut_set would change the DUT ({self.dut_set[0]}): zeroloss only observes a lab "
                                f"unless told otherwise",
                                "add --allow-dut-changes (every change is restored at the end)")
        if self.dut_set and not self.lab:
            raise ZeroLossError("dut_set is for lab mode (a DUT zeroloss did not build)", "give --lab FILE")
        if "src_port" in self.flow_fields and 1024 + self.flows - 1 > 65535 or \
                "dst_port" in self.flow_fields and 1024 + self.flows - 1 > 65535:
            raise ZeroLossError(f"{self.flows} flows stepping a UDP port from 1024 pass port 65535",
                                "use at most 64512 flows, or step src_ip/dst_ip")
        if self.vnf_link == "memif" and self.vnf in ("vm", "auto"):
            raise ZeroLossError(f"config: vnf_link memif is for a process or container VNF, not vnf {self.vnf}",
                                "add --vnf container (or process), or use --vnf-link vhost")
        if self.vnf_link == "memif" and any(frames.largest(f) > 1518 for f in self.frame_sizes):
            raise ZeroLossError("config: vnf_link memif carries frames up to 1518 B (DPDK's memif reports a 1518 B "
                                "maximum)", "use --vnf-link vhost for jumbo frames")
        if self.vnf == "vm" and self.vnf_ring not in (256, 512, 1024):
            raise ZeroLossError(f"config: a VM's virtio ring cannot hold {self.vnf_ring} descriptors: QEMU's "
                                f"virtio-net takes 256, 512 or 1024", "use --vnf-ring 1024, or --vnf process for 4096")

    def _check_ovs(self) -> None:
        """OVS's values (rings, memory, CPU masks) and what its topology can be built of; no OVS setting without OVS."""
        for key in ("ovs_rxd", "ovs_txd"):
            v = getattr(self, key)
            if v & (v - 1):
                raise ZeroLossError(f"config: {key} must be a power of 2, got {v}", "use 512, 1024, 2048 or 4096")
        if self.ovs_socket_limit_mb and self.ovs_socket_limit_mb < self.ovs_socket_mem_mb:
            raise ZeroLossError(f"config: ovs_socket_limit_mb {self.ovs_socket_limit_mb} is below ovs_socket_mem_mb "
                                f"{self.ovs_socket_mem_mb}: OVS could not take the memory it starts with",
                                f"raise ovs_socket_limit_mb to {self.ovs_socket_mem_mb} or more, or set it to 0 (the "
                                "same as ovs_socket_mem_mb)")
        for key in ("ovs_pmd_cpu_mask", "ovs_lcore_mask"):
            v = getattr(self, key)
            try:
                if int(v, 16) <= 0:
                    raise ValueError
            except ValueError:
                raise ZeroLossError(f"config: {key} must be a hex CPU mask such as 0x1 or 0x6, got {_shown(v)}") \
                    from None
        if self.topology in OVS_TOPOLOGIES:
            check_ovs_topology(self.bridges, self.vlan, self.bond)
            check_neutron(self.topology, self.bridges, self.vlan, self.bond, self.meter_pps, self.firewall, self.tunnel)
        elif (self.bridges != 1 or self.vlan >= 0 or self.bond != "none" or self.meter_pps
              or self.firewall != "none" or self.tunnel != "none"):
            raise ZeroLossError(f"bridges, vlan, bond, meter_pps, firewall and tunnel are OVS settings; topology "
                                f"{self.topology} "
                                "has no OVS", "use --topology ovs-p2p, pvp or pvvp")

    def effective(self) -> RunConfig:
        """The settings with the strict RFC 2544 preset applied (it overrides durations and loss)."""
        if not self.strict_rfc2544:
            return self
        return dataclasses.replace(self, trial_s=60.0, validation_s=60.0, drain_ms=2000, ndr_loss_pct=0.0)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def stored(doc_config: dict) -> RunConfig:
    """The settings a result file was made with. Keys added since keep the behaviour of the zeroloss that wrote
    it: files without `search` were searched by the binary search, without `warmup_s` had no warm-up trial,
    without `latency_loads` no latency-vs-load trials."""
    if not isinstance(doc_config, dict):
        raise ZeroLossError(f"the result file's config is {_kind(doc_config)}, not a mapping of settings")
    known = {f.name for f in fields(RunConfig)}
    for key in doc_config:
        if key not in known:
            raise ZeroLossError(f"the result file's config has a key this zeroloss does not know: {_shown(key)}",
                                "continue it with the zeroloss that wrote it, or start the run again")
    return RunConfig(**{"search": "binary", "warmup_s": 0.0, "latency_loads": "none", **doc_config})


def field_help() -> dict[str, str]:
    """Help text per key, with unit and range, for --help and docs."""
    out = {}
    for f in fields(RunConfig):
        m = FieldMeta.of(f)
        extra = []
        if m.unit:
            extra.append(m.unit)
        if m.lo is not None:
            extra.append(m.range_text)
        if m.choices:
            extra.append("|".join(map(str, m.choices)))
        out[f.name] = m.help + (f" [{', '.join(extra)}]" if extra else "")
    return out


def load(path: Path | None, overrides: dict[str, Any]) -> RunConfig:
    """Defaults, then the YAML file, then the flags (only those the user gave)."""
    values: dict[str, Any] = {}
    if path is not None:
        from . import yamlio

        shown = _shown_path(path)
        data = yaml_load(yamlio.read(path, "config file"), f"config file {shown}")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ZeroLossError(f"config file {shown}: must be a mapping of keys to values, not {_kind(data)}")
        values.update({k: v for k, v in data.items() if k not in FILE_ONLY_KEYS})
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(RunConfig)}
    for key in values:
        if key not in known:
            raise ZeroLossError(f"config: unknown key {_shown(key)}", "see 'zeroloss run --help' for the keys")
    for key in TEXT_KEYS & values.keys():  # a number where text was meant: from YAML that was not kept as text
        v = values[key]
        if isinstance(v, int) and not isinstance(v, bool):
            values[key] = hex(v) if key.endswith("_mask") else str(v)
    return RunConfig(**values)

