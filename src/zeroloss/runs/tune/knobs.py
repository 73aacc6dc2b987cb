"""zeroloss tune: which setting answers which finding, as a table, and the next value of each. Pure.

A finding of the diagnosis is first placed at a *site* (runs.tune.sites: where on the path the frames were lost and
why, and the knobs worth trying there, best first). A knob is a RunConfig key with a ladder: the values to try from
the current one, in order (one step at a time; a value already tried is passed over).

What the bench cannot change (kernel isolation, C-states, 1 GB pages, a NIC's descriptors, an MTU mismatch, the
generator's own limit) is not a knob: runs.tune.advice names it, with the `zeroloss host` command that plans or
audits it.

`vnf: auto` is treated as possibly a VM: the ring stops at 1024 and VM-only knobs are left out. The loop should pass
the resolved VNF kind (vnf.vm.resolve_vnf) to get them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zeroloss.core.config import RunConfig
from zeroloss.core.cores import core_list
from zeroloss.core.cpuset import parse_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import largest
from zeroloss.core.ovsfacts import CT_MAXCONNS, FLOW_LIMIT
from zeroloss.host.memory import tripleo_socket_mem
from zeroloss.targets.kinds.ovs.vnfs import ring_max
from zeroloss.targets.registry import kind_of

from .sites import TABLE, Finding, finding_size, one_line, site

MAX_QUEUES = 4          # RX queues per port the ladder goes to (the bench has 2 to 4 cores)
MAX_DESC = 4096         # OVS's NIC_PORT_MAX_Q_SIZE
OVS_TX_RETRIES = 8      # OVS's tx-retries-max default (VHOST_ENQ_RETRY_DEF); -1 in RunConfig
# hugepage memory the bench gives zlgen and each process VNF besides OVS (bench.ovsbench GEN_MB, VNF_MB; a test
# keeps them equal): OVS's socket memory may take the rest of the host's hugepages
GEN_MB = VNF_MB = 256


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


def applies(knob: Knob, cfg: RunConfig) -> bool:
    """Whether the knob's setting means something for this configuration: its kind of DUT has it (Kind.knobs)."""
    return knob.key in kind_of(cfg).knobs and cfg.vnf in knob.vnfs and knob.when(cfg)


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
