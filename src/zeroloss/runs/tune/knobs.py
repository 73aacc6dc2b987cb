"""zeroloss tune: which setting answers which finding, as a table, and the next value of each. Pure.

A finding of the diagnosis (loss/diagnose.py: hop, where, reason, frames, cause) is first placed at a *site*: where on
the path the frames were lost and why (OVS's vhost TX into a VNF, OVS ingress from the generator, the VNF's own RX
port, the PMD placement, a mempool, a meter...). TABLE maps each site to the knobs worth trying there, best first,
each with the reason and, where one exists, the reference. A knob is a RunConfig key with a ladder: the values to
try from the current one, in order (one step at a time; a value already tried is passed over).

What the bench cannot change (kernel isolation, C-states, 1 GB pages, a NIC's descriptors, an MTU mismatch, the
generator's own limit) is not a knob: advice() names it, with the `zeroloss host` command that plans or audits it.

`vnf: auto` is treated as possibly a VM: the ring stops at 1024 and VM-only knobs are left out. The loop should pass
the resolved VNF kind (vnf.vm.resolve_vnf) to get them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zeroloss.core.config import RunConfig
from zeroloss.core.cores import core_list
from zeroloss.core.cpuset import format_list, parse_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import largest
from zeroloss.core.ovsfacts import CT_MAXCONNS, FLOW_LIMIT
from zeroloss.host.memory import tripleo_socket_mem
from zeroloss.targets.kinds.ovs.vnfs import ring_max
from zeroloss.targets.registry import kind_of

MAX_QUEUES = 4          # RX queues per port the ladder goes to (the bench has 2 to 4 cores)
MAX_DESC = 4096         # OVS's NIC_PORT_MAX_Q_SIZE
OVS_TX_RETRIES = 8      # OVS's tx-retries-max default (VHOST_ENQ_RETRY_DEF); -1 in RunConfig
# hugepage memory the bench gives zlgen and each process VNF besides OVS (bench.ovsbench GEN_MB, VNF_MB; a test
# keeps them equal): OVS's socket memory may take the rest of the host's hugepages
GEN_MB = VNF_MB = 256


Finding = dict[str, Any]  # one finding of the diagnosis (loss/diagnose.py), as decide.findings_of merges them


@dataclass(frozen=True)
class Change:
    """One setting to try: RunConfig key from old to new, the knob's name, the finding it answers, and why."""

    key: str
    old: Any
    new: Any
    knob: str
    finding: str
    why: str
    sets: dict[str, str] | None = None  # lab: the dut_set entries (TABLE:RECORD:COLUMN[:KEY] -> value) it applies


@dataclass(frozen=True)
class Host:
    cpus: int           # CPUs 0..cpus-1
    hugepages_mb: int   # the host's hugepage memory, all of it (zlgen's and the VNFs' share is taken off here)


# -- the ladders: the values to try from cfg's, in order -------------------------------------------------------

def _ring(cfg: RunConfig, h: Host) -> list[int]:
    top = ring_max(cfg.vnf)  # the deepest ring every VNF kind it may be takes (auto: perhaps a VM, 1024)
    return [v for v in (1024, 4096) if cfg.vnf_ring < v <= top]


def _rxq(cfg: RunConfig, h: Host) -> list[int]:
    return list(range(cfg.dut_rxq + 1, MAX_QUEUES + 1))


def _vnf_queues(cfg: RunConfig, h: Host) -> list[int]:
    return list(range((cfg.vnf_queues or cfg.dut_rxq) + 1, MAX_QUEUES + 1))


def used_cpus(cfg: RunConfig) -> set[int]:
    """CPUs the bench already runs a polling thread on: OVS's PMDs, zlgen, testpmd (the DUT, or the process VNF,
    which the bench places on dut_lcores' default 0,1) and a VM's vCPUs and emulator threads (the pins its kind of
    DUT names; vnf auto may be a process, whose pins are not taken)."""
    used = set(parse_mask(cfg.ovs_pmd_cpu_mask))
    for key in ("gen_lcores", "dut_lcores"):
        used.update(core_list(key, getattr(cfg, key)))
    if cfg.vnf == "vm":
        for key in kind_of(cfg).core_keys(cfg):
            if key.startswith("vnf_"):
                used.update(core_list(key, getattr(cfg, key)))
    return used


def free_cpus(cfg: RunConfig, cpus: int) -> list[int]:
    """The host's CPUs (0..cpus-1) no polling thread of the bench runs on."""
    used = used_cpus(cfg)
    return [c for c in range(cpus) if c not in used]


def _pmd_mask(cfg: RunConfig, h: Host) -> list[str]:
    free = free_cpus(cfg, h.cpus)
    return [hex(int(cfg.ovs_pmd_cpu_mask, 16) | 1 << free[0])] if free else []


def _add_cpu(key: str) -> Callable[[RunConfig, Host], list[str]]:
    def ladder(cfg: RunConfig, h: Host) -> list[str]:
        free = free_cpus(cfg, h.cpus)
        return [f"{getattr(cfg, key)},{free[0]}"] if free else []
    return ladder


def _rxq_assign(cfg: RunConfig, h: Host) -> list[str]:
    return [v for v in ("group", "cycles", "roundrobin") if v != cfg.ovs_rxq_assign]


def _retries(cfg: RunConfig, h: Host) -> list[int]:
    now = OVS_TX_RETRIES if cfg.ovs_tx_retries_max < 0 else cfg.ovs_tx_retries_max
    return [v for v in (OVS_TX_RETRIES, 32) if v > now]


def ovs_mtu(cfg: RunConfig) -> int:
    """The mtu_request the bench gives OVS's ports: the largest frame's L3 MTU, at least 1500."""
    return max(1500, max(map(largest, cfg.frame_sizes), default=1518) - 18)  # an IMIX: its largest frame


def ovs_hugepages_mb(cfg: RunConfig, hugepages_mb: int) -> int:
    """What of the host's hugepages OVS's socket memory may take: the rest after zlgen and the VNFs."""
    per_vnf = cfg.vnf_memory_mb if cfg.vnf == "vm" else VNF_MB
    return hugepages_mb - GEN_MB - per_vnf * kind_of(cfg).vnfs(cfg)


def _socket_mem(cfg: RunConfig, h: Host) -> list[int]:
    """The TripleO formula for the ports' MTU first (host/memory.py), then doubling, within the hugepages."""
    cap = ovs_hugepages_mb(cfg, h.hugepages_mb)
    now, out = cfg.ovs_socket_mem_mb, []
    formula = tripleo_socket_mem([ovs_mtu(cfg)])
    if now < formula <= cap:
        out.append(formula)
        now = formula
    while now * 2 <= cap:
        now *= 2
        out.append(now)
    return out


def _meter(cfg: RunConfig, h: Host) -> list[int]:
    return [0] if cfg.meter_pps else []


def _smc(cfg: RunConfig, h: Host) -> list[bool]:
    return [] if cfg.ovs_smc_enable else [True]


def _emc_prob(cfg: RunConfig, h: Host) -> list[int]:
    return [] if cfg.ovs_emc_insert_inv_prob == 0 else [0]  # the EMC off: no insertion or lookup for flows it loses


def _flow_limit(cfg: RunConfig, h: Host) -> list[int]:
    now = cfg.ovs_flow_limit or FLOW_LIMIT
    return [v for v in (2 * FLOW_LIMIT, 5 * FLOW_LIMIT) if v > now]


def _revalidators(cfg: RunConfig, h: Host) -> list[int]:
    return [v for v in (2, 4) if v > cfg.ovs_revalidators]


def _ct_maxconns(cfg: RunConfig, h: Host) -> list[int]:
    now = cfg.ovs_ct_maxconns or CT_MAXCONNS
    return [v for v in (CT_MAXCONNS, 2 * CT_MAXCONNS) if v > now]


def _ct_zone_limit(cfg: RunConfig, h: Host) -> list[int]:
    now = cfg.ovs_ct_zone_limit
    return [4 * now, 0] if now else []  # a zone limit well above the flows, then none


def _underlay_mtu(cfg: RunConfig, h: Host) -> list[int]:
    return [0] if getattr(cfg, "ovs_underlay_mtu", 0) else []  # 0: the bench's inner MTU + 50


def _drain(cfg: RunConfig, h: Host) -> list[int]:
    return [v for v in (1000, 2000) if v > cfg.drain_ms]


# -- the knobs ---------------------------------------------------------------------------------------------------

ANY_VNF = ("auto", "vm", "process")


@dataclass(frozen=True)
class Knob:
    key: str                                    # where it exists is its DUT kind's to say (Kind.knobs)
    name: str
    ladder: Callable[[RunConfig, Host], list[Any]]
    vnfs: tuple[str, ...] = ANY_VNF             # the VNF kinds it applies to
    when: Callable[[RunConfig], bool] = lambda cfg: True


def _pmds(cfg: RunConfig) -> int:
    return len(parse_mask(cfg.ovs_pmd_cpu_mask))


def _has_vnf(cfg: RunConfig) -> bool:  # a VNF's setting: where the kind runs VNFs (pvp, pvvp)
    return kind_of(cfg).vnfs(cfg) > 0


KNOBS = {k.key: k for k in (
    Knob("vnf_ring", "VNF virtio ring size", _ring, when=_has_vnf),
    Knob("ovs_tx_retries_max", "OVS vhost tx-retries-max", _retries),
    Knob("vnf_vcpus", "VNF cores (vCPUs)", _add_cpu("vnf_vcpus"), vnfs=("vm",), when=_has_vnf),
    Knob("dut_rxq", "RX queues per port", _rxq),
    Knob("vnf_queues", "VNF queue pairs (guest multiqueue)", _vnf_queues, when=_has_vnf),
    Knob("ovs_pmd_cpu_mask", "OVS PMD cores (pmd-cpu-mask)", _pmd_mask),
    # queue placement only matters with two PMDs or more
    Knob("ovs_rxq_assign", "OVS pmd-rxq-assign", _rxq_assign, when=lambda c: _pmds(c) > 1),
    # no descriptor knob: OVS reads n_rxq_desc/n_txq_desc on NIC (type dpdk) ports only, and every bench port is
    # vhost-user (netdev_dpdk_vhost_client_set_config reads neither); on a lab node's NICs they are labknobs'
    Knob("ovs_socket_mem_mb", "OVS dpdk-socket-mem", _socket_mem),
    Knob("meter_pps", "OpenFlow meter rate", _meter),
    Knob("dut_lcores", "DUT forwarding cores (testpmd -l)", _add_cpu("dut_lcores")),
    Knob("drain_ms", "drain time before counting", _drain),
    Knob("ovs_smc_enable", "OVS smc-enable (signature-match cache)", _smc),
    Knob("ovs_emc_insert_inv_prob", "OVS emc-insert-inv-prob", _emc_prob),
    Knob("ovs_flow_limit", "OVS flow-limit (datapath flows)", _flow_limit),
    Knob("ovs_revalidators", "OVS n-revalidator-threads", _revalidators),
    Knob("ovs_ct_maxconns", "OVS conntrack maxconns", _ct_maxconns),
    Knob("ovs_ct_zone_limit", "OVS conntrack zone limit", _ct_zone_limit),
    Knob("ovs_underlay_mtu", "OVS underlay port MTU (tunnel)", _underlay_mtu,
         when=lambda c: getattr(c, "tunnel", "none") != "none"),
)}


# -- where a finding is, and what to try there -------------------------------------------------------------------

VNF_TX = "vnf_tx"            # OVS's vhost TX towards a VNF found its RX virtqueue full (tx_failure)
OVS_RX_GEN = "ovs_rx_gen"    # OVS ingress from the generator: the port's RX queue full (rx_missed)
OVS_RX_VNF = "ovs_rx_vnf"    # OVS ingress from a VNF: the VNF's TX virtqueue full (rx_missed)
VNF_RX = "vnf_rx"            # the VNF's own RX port: its forwarding core did not keep up
DUT_RX = "dut_rx"            # p2p: testpmd's RX port
OVS_TX_NIC = "ovs_tx_nic"    # OVS TX to a port that is not a VNF's (a NIC's TX queue full)
PMD = "pmd_imbalance"
MEMPOOL = "mempool"
METER = "meter"
TX_MTU = "tx_mtu"
DATAPATH = "datapath"
UNEXPLAINED = "unexplained"
GENERATOR = "generator"      # zlgen's own receive side: generator-bound
VNF_DOWN = "vnf_down"        # the VNF's virtqueue was not running (paused guest)
QOS = "qos"
PROC_MBUFS = "proc_mbufs"    # testpmd (DUT or VNF) out of mbufs
EMC = "emc_thrash"           # the PMD's cycles went to cache misses (EMC/SMC thrash with many flows)
UPCALL = "upcall_storm"      # flow misses to the slow path, or the datapath at its flow limit
CONNTRACK = "conntrack_full"  # conntrack at maxconns or a zone limit
TUNNEL_MTU = "tunnel_mtu"    # VXLAN frames above the underlay port's MTU
OTHER = "other"

RING_WHY = ("BRIEF §7: on the bench the ring dominated, 256 -> 1024 -> 4096 gave 21 -> 85 -> 339 kpps; Intel's "
            "vhost zero-loss note: +74 % from 256 to 1024")
RXQ_WHY = "the Dell/Intel jumbo whitepaper's fix: 2 RX queues per port took zero loss from 99.2 % to 100 % of line rate"

# site -> [(knob key, why this knob for that finding)], best first
TABLE: dict[str, list[tuple[str, str]]] = {
    VNF_TX: [
        ("vnf_ring", f"the guest did not drain its RX virtqueue: a deeper ring rides out its stalls ({RING_WHY})"),
        ("ovs_tx_retries_max", "OVS drops after tx-retries-max retries on a full virtqueue (default 8): more retries "
                               "absorb short guest stalls, at some latency (OVS vhost-user docs; BRIEF §5)"),
        ("vnf_vcpus", "the guest's forwarding core did not drain its RX ring: one more vCPU for testpmd's forwarding"),
        ("dut_rxq", f"more queue pairs spread the guest's RX over more rings and cores ({RXQ_WHY})"),
    ],
    OVS_RX_GEN: [
        ("ovs_pmd_cpu_mask", "OVS's PMD did not empty the port's RX queue in time: another PMD core adds polling "
                             "cycles (BRIEF §5: rx_missed = PMD too slow or too few queues)"),
        ("dut_rxq", f"more RX queues let the PMDs share the port's load ({RXQ_WHY})"),
        ("ovs_rxq_assign", "queues placed by measured load: group puts each on the least-loaded PMD (OVS pmd.rst)"),
    ],
    OVS_RX_VNF: [
        ("ovs_pmd_cpu_mask", "OVS's PMD did not poll the VNF's TX virtqueue in time: another PMD core adds polling "
                             "cycles (BRIEF §5)"),
        ("vnf_ring", f"on a vhost port OVS's RX queue is the VNF's TX virtqueue: a deeper one absorbs PMD stalls "
                     f"({RING_WHY})"),
        ("dut_rxq", f"more queue pairs spread the VNF's TX over more virtqueues ({RXQ_WHY})"),
        ("ovs_rxq_assign", "queues placed by measured load: group puts each on the least-loaded PMD (OVS pmd.rst)"),
    ],
    VNF_RX: [
        ("vnf_vcpus", "the VNF's forwarding core did not empty its RX ring: one more vCPU for testpmd's forwarding"),
        ("vnf_ring", f"a deeper RX ring in the VNF absorbs its forwarding core's stalls ({RING_WHY})"),
        ("vnf_queues", f"more queue pairs in the guest (multiqueue) spread its RX over more rings ({RXQ_WHY})"),
        ("dut_rxq", f"more queue pairs on the VNF's ports and OVS's ({RXQ_WHY})"),
    ],
    DUT_RX: [
        ("dut_rxq", f"testpmd's forwarding did not empty its RX ring: more queues spread the load ({RXQ_WHY})"),
        ("dut_lcores", "testpmd's forwarding core did not keep up: one more forwarding core"),
    ],
    PMD: [
        ("ovs_rxq_assign", "one PMD busy while another idles: group assigns each queue to the least-loaded PMD by "
                           "measured cycles (OVS pmd.rst; BRIEF §6)"),
        ("dut_rxq", "more RX queues per port give the assignment something to spread"),
    ],
    MEMPOOL: [
        ("ovs_socket_mem_mb", "OVS halved its mempool when socket memory ran out (it logs this at DBG only): "
                              "dpdk-socket-mem by the TripleO formula for the ports' MTU (BRIEF §6; host/memory.py)"),
    ],
    METER: [
        ("meter_pps", "an OpenFlow meter polices the path below the target: a policy left too low, not a capacity; "
                      "take it off the path"),
    ],
    EMC: [
        ("ovs_smc_enable", "few lookups hit the 8k-entry EMC with many flows: the SMC (1M entries per PMD) catches "
                           "them before the megaflow classifier (OVS dpdk/bridge.rst, 'SMC cache')"),
        ("ovs_emc_insert_inv_prob", "an EMC that keeps no flow long costs an insertion and a lookup per frame: 0 turns "
                                    "it off (OVS docs: 'emc-insert-inv-prob', 0 disables insertion)"),
        ("ovs_pmd_cpu_mask", "the cache misses cost cycles: another PMD core adds them"),
        ("dut_rxq", f"more RX queues let the PMDs share the port's load ({RXQ_WHY})"),
    ],
    UPCALL: [
        ("ovs_flow_limit", "the datapath sat at its flow limit: the revalidators evicted flows that came back as "
                           "upcalls (ofproto-dpif-upcall: flow_limit)"),
        ("ovs_revalidators", "more revalidators finish each flow dump sooner, so OVS keeps the flow limit high"),
        ("ovs_pmd_cpu_mask", "upcalls are handled on the PMD's cycles: another PMD core adds them"),
    ],
    CONNTRACK: [
        ("ovs_ct_maxconns", "conntrack refused new connections at maxconns (coverage conntrack_full): their frames "
                            "take the new-connection path every time"),
        ("ovs_ct_zone_limit", "a zone at its limit refuses new connections the same way (dpctl/ct-set-limits)"),
    ],
    TUNNEL_MTU: [
        ("ovs_underlay_mtu", "VXLAN adds 50 B: the underlay port needs the inner MTU + 50 (Neutron: "
                             "global_physnet_mtu, tenant networks 50 B less)"),
    ],
    UNEXPLAINED: [
        ("drain_ms", "no counter saw the frames: frames still in flight when counting ended are counted lost; a "
                     "longer drain is a measurement setting, not the data path's (RFC 2544 waits 2 s)"),
    ],
}

REASON_SITES = {"meter": METER, "pmd_imbalance": PMD, "mempool_small": MEMPOOL, "tx_mtu": TX_MTU,
                "emc_thrash": EMC, "upcall_storm": UPCALL, "conntrack_full": CONNTRACK, "tunnel_mtu": TUNNEL_MTU,
                "datapath": DATAPATH, "unexplained": UNEXPLAINED, "rx_qos": QOS, "tx_qos": QOS}
OVS_HOP = re.compile(r"OVS (.+) (rx|tx)")
PROC_RX_HOP = re.compile(r".+ rx port \d+")
VNF_PORT = re.compile(r"v\d")  # the bench's VNF ports are v0, v1...; zlgen's g0, g1... or bonds of them


def site(f: Finding, vnf_ports: set[str] | None = None) -> str:
    """Where a finding's frames were lost, as a TABLE site. Bench port names tell VNF ports (v0...) from zlgen's, a
    lab's VNF ports are vnf_ports (its file's); the cause text tells the generator-bound cases (loss/diagnose.py says
    "generator-bound" in them)."""
    reason, hop, where, cause = (str(f.get(k) or "") for k in ("reason", "hop", "where", "cause"))
    if reason in REASON_SITES:
        return REASON_SITES[reason]
    if hop.startswith("zlgen") or "generator-bound" in cause:
        return GENERATOR
    m = OVS_HOP.fullmatch(hop)
    if m:
        to_vnf = (any(p in vnf_ports for p in m[1].split("+")) if vnf_ports is not None
                  else bool(VNF_PORT.match(m[1])))
        if m[2] == "tx":
            if reason == "tx_failure":
                return VNF_TX
            if reason == "tx_dropped":
                return VNF_DOWN if to_vnf or "virtqueue" in cause else OVS_TX_NIC
            return OTHER
        if reason == "rx_missed":
            return OVS_RX_VNF if to_vnf else OVS_RX_GEN
        return OTHER
    if PROC_RX_HOP.fullmatch(hop):
        if reason == "rx_missed":
            return VNF_RX if where.startswith("vnf") else DUT_RX
        if reason == "rx_nombuf":
            return PROC_MBUFS
    return OTHER


def applies(knob: Knob, cfg: RunConfig) -> bool:
    """Whether the knob's setting means something for this configuration: its kind of DUT has it (Kind.knobs)."""
    return knob.key in kind_of(cfg).knobs and cfg.vnf in knob.vnfs and knob.when(cfg)


def one_line(f: Finding) -> str:
    return f"{f.get('reason', '?')} at {f.get('hop', '?')}"


def _frames(f: Finding) -> float:
    v = f.get("frames")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def finding_size(f: Finding) -> float:
    """Sort key: the largest finding first."""
    return -_frames(f)


def candidates(findings: list[Finding], cfg: RunConfig, tried: set[tuple[str, Any]], cpus: int,
               hugepages_mb: int) -> list[Change]:
    """The changes to try, best first: the knobs of the largest finding first, in TABLE order, each at the first
    value of its ladder not yet tried; one per key; only knobs that apply to cfg, and only values RunConfig
    accepts. tried: (key, value) pairs measured before (list values as tuples)."""
    host = Host(cpus, hugepages_mb)
    out: list[Change] = []
    seen: set[str] = set()
    for f in sorted(findings, key=finding_size):
        for key, why in TABLE.get(site(f), []):
            knob = KNOBS[key]
            if key in seen or not applies(knob, cfg):
                continue
            change = first_untried(knob, cfg, host, tried)
            if change is None:
                continue
            seen.add(key)
            out.append(Change(key, getattr(cfg, key), change, knob.name, one_line(f), why))
    return out


def first_untried(knob: Knob, cfg: RunConfig, host: Host, tried: set[tuple[str, Any]]) -> Any:
    old = getattr(cfg, knob.key)
    for value in knob.ladder(cfg, host):
        if value == old or (knob.key, value) in tried:
            continue
        try:
            kind_of(dataclasses.replace(cfg, **{knob.key: value}))  # the settings' checks and their kind's
        except ZeroLossError:
            continue
        return value
    return None


# -- what the bench cannot try -----------------------------------------------------------------------------------

POLLERS = {OVS_RX_GEN, OVS_RX_VNF, VNF_TX, VNF_RX, DUT_RX, PMD, EMC, UPCALL}  # losses of a poller that fell behind


def _hops(fs: list[Finding]) -> str:
    names = list(dict.fromkeys(str(f.get("hop", "?")) for f in fs))
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _isolation(fs: list[Finding], cfg: RunConfig) -> str:
    ovs = "ovs_pmd_cpu_mask" in kind_of(cfg).knobs  # the bench's OVS: its PMDs poll
    cores = (f"OVS's PMD CPUs {format_list(parse_mask(cfg.ovs_pmd_cpu_mask))} and the VNF's"
             if ovs else f"testpmd's CPUs {cfg.dut_lcores}")
    return (f"isolcpus/nohz_full/rcu_nocbs for the polling cores ({cores}): a poller that loses its core for a few "
            f"ms overflows its ring ({_hops(fs)}); not a bench setting: `zeroloss host plan --format cmdline` writes "
            f"the kernel arguments, `zeroloss host audit` checks them")


def _cstates(fs: list[Finding], cfg: RunConfig) -> str:
    return ("C-states held at C1 (processor.max_cstate=1 intel_idle.max_cstate=0): a core waking from a deep C-state "
            "stalls its poller; `zeroloss host plan` adds them (unless --keep-cstates), `zeroloss host audit` checks "
            "the power states")


def _pages(fs: list[Finding], cfg: RunConfig) -> str:
    return ("1 GB hugepages for OVS and the guests (default_hugepagesz=1G hugepagesz=1G, flavor hw:mem_page_size=1GB): "
            "the bench runs on 2 MB pages; `zeroloss host plan` sizes them per NUMA node, `zeroloss host audit` "
            "checks them")


def _socket(fs: list[Finding], cfg: RunConfig) -> str:
    mtu = ovs_mtu(cfg)
    return (f"dpdk-socket-mem by the TripleO formula: {tripleo_socket_mem([mtu])} MB per NUMA node with DPDK ports for "
            f"MTU {mtu}; where the hugepages cannot hold it here, plan the host with `zeroloss host plan --mtu {mtu}`")


def _descriptors(fs: list[Finding], cfg: RunConfig) -> str | None:
    if not kind_of(cfg).ours:
        return None  # a knob there
    return ("on a physical (type dpdk) port, n_rxq_desc=n_txq_desc=4096 absorb bursts (Dell/Intel whitepaper); the "
            "bench's ports are vhost-user, where OVS ignores both: `zeroloss host plan --descriptors 4096`, "
            "`zeroloss host audit` checks them")


def _mtu(fs: list[Finding], cfg: RunConfig) -> str | None:
    if not kind_of(cfg).ours:
        return None  # a knob there
    need = ovs_mtu(cfg)
    ports = ", ".join(dict.fromkeys(str(f.get("where", "?")) for f in fs))
    return (f"mtu_request mismatch on {ports}: frames above a port's MTU + 18 B are dropped; every port of the path "
            f"and the guest need MTU >= {need} (ovs-vsctl set Interface PORT mtu_request={need}; `zeroloss host plan "
            f"--mtu {need}`)")


def _lab_vnf(fs: list[Finding], cfg: RunConfig) -> str | None:
    if kind_of(cfg).ours:
        return None  # the bench's VNF settings are knobs
    return (f"the VNF's own rings and cores ({_hops(fs)}) are the VM's, which tune does not change on a node: "
            f"virtio ring size in nova.conf [libvirt] rx_queue_size = tx_queue_size = 1024, a flavor with "
            f"hw:cpu_policy=dedicated and hw:emulator_threads_policy=isolate, and multiqueue "
            f"(hw:vif_multiqueue_enabled) for more queue pairs; measure the bench's equivalent with zeroloss tune "
            f"--set topology=pvp")


def _lab_meter(fs: list[Finding], cfg: RunConfig) -> str | None:
    if kind_of(cfg).ours:
        return None  # a knob on the bench
    return (f"an OpenFlow meter polices the path below the target ({_hops(fs)}): the flows are the controller's, "
            f"so tune leaves them; ovs-ofctl -O OpenFlow13 dump-meters BRIDGE shows its rate")


def _generator(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"the generator is the bottleneck ({_hops(fs)}): no DUT setting lifts the NDR there; more zlgen cores "
            f"(--set gen_lcores) or a hardware generator; tune stops when every size below the target is "
            f"generator-bound")


def _vnf_down(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"OVS dropped to a VNF whose virtqueue was not running ({_hops(fs)}): a paused or migrating guest, not a "
            f"setting; check virsh domstate and the guest's testpmd")


def _qos(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"QoS or ingress policing drops frames ({_hops(fs)}): a policy, not a capacity; ovs-vsctl set Interface "
            f"PORT ingress_policing_rate=0, or ovs-vsctl clear Port PORT qos")


def _datapath(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"OVS's datapath dropped frames ({_hops(fs)}): a rule or port problem, not a tuning setting; trace one "
            f"frame with ovs-appctl ofproto/trace and read ovs-ofctl dump-flows (`zeroloss explain` shows the counter)")


def _mbufs(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"testpmd ran out of mbufs ({_hops(fs)}): its mempool (--total-num-mbufs) is not a bench setting; give "
            f"the VNF more mbufs and hugepage memory")


# (the sites that call for it, its line): one line each, in the order of the largest finding calling for it
ADVICE: list[tuple[set[str], Callable[[list[Finding], RunConfig], str | None]]] = [
    (POLLERS, _isolation),
    (POLLERS, _cstates),
    ({MEMPOOL, VNF_TX, VNF_RX}, _pages),
    ({MEMPOOL}, _socket),
    ({OVS_RX_GEN, OVS_TX_NIC}, _descriptors),
    ({TX_MTU}, _mtu),
    ({VNF_TX, VNF_RX, OVS_RX_VNF}, _lab_vnf),
    ({METER}, _lab_meter),
    ({GENERATOR}, _generator),
    ({VNF_DOWN}, _vnf_down),
    ({QOS}, _qos),
    ({DATAPATH}, _datapath),
    ({PROC_MBUFS}, _mbufs),
]


def advice(findings: list[Finding], cfg: RunConfig, vnf_ports: set[str] | None = None) -> list[str]:
    """One line per thing the findings call for that tune cannot try (on the bench, or on a lab node whose VNF
    ports are vnf_ports), naming the `zeroloss host` command that plans or audits it; in the order of the findings
    (largest first)."""
    by_site: dict[str, list[Finding]] = {}
    for f in sorted(findings, key=finding_size):
        by_site.setdefault(site(f, vnf_ports), []).append(f)
    order = list(by_site)
    out: list[tuple[int, str]] = []
    for sites, fn in ADVICE:
        hit = [s for s in order if s in sites]
        if not hit:
            continue
        line = fn([f for s in hit for f in by_site[s]], cfg)
        if line:
            out.append((order.index(hit[0]), line))
    return [line for _, line in sorted(out, key=lambda x: x[0])]
