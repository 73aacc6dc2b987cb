"""The audit's rule registry and the data a rule sees: Context (inventory, OVS state, domain), Hit (what a rule
reports), Rule and the @rule decorator. Rule modules (rules*.py) import this module; audit.py imports them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from . import memory as mem
from .domxml import Domain
from .inventory import Inventory
from .ovsstate import OvsState, PmdPoll, parse_pmd_rxq_show
from .rxq import parse_affinity

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Hit:
    """What a rule function reports: the problem, the evidence seen (file or command and value), the fix."""
    message: str
    evidence: str
    remedy: str
    severity: str | None = None  # overrides the rule's default


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str
    source: str
    what: str
    needs: tuple[str, ...]  # 'ovs', 'domain', 'rxq_show', 'bridges', 'procs', 'pcie': data that must be present;
    #                         'dpdk': DPDK in use
    check: Callable[[Context], list[Hit]]


RULES: list[Rule] = []


def rule(id: str, severity: str, source: str, what: str, needs: tuple[str, ...] = ()):
    """Register the decorated check function as a rule."""
    def register(fn):
        RULES.append(Rule(id, severity, source, what, needs, fn))
        return fn
    return register


@dataclass(frozen=True)
class AuditPort:
    name: str
    node: int
    reported_node: int | None
    mtu: int
    n_rxq: int
    rxq_desc: int
    txq_desc: int
    rxq_desc_set: str | None
    txq_desc_set: str | None
    affinity: dict[int, int]
    pci: str


@dataclass
class Context:
    inv: Inventory
    ovs: OvsState | None = None
    domain: Domain | None = None
    flows: int | None = None  # flows per port the host must carry (None: unknown)
    vm_memory_gb: int = 0  # guest memory still to be started per node with DPDK ports, GB

    @cached_property
    def isolated(self) -> set[int]:
        return set(self.inv.cmdline_cpus("isolcpus")) | set(self.inv.isolated)

    @cached_property
    def pmds(self) -> tuple[int, ...]:
        return self.ovs.pmd_cpus() if self.ovs else ()

    @cached_property
    def ports(self) -> list[AuditPort]:
        """OVS's DPDK ports with the node they are on (OVS status numa_id, else the NIC's sysfs node; -1 -> 0)."""
        out = []
        for i in self.ovs.dpdk_ports() if self.ovs else []:
            nic = self.inv.nic(i.devargs) if i.devargs else None
            reported = i.numa if i.numa is not None else (nic.node if nic else None)
            try:
                pins = parse_affinity(i.known_other_config.pmd_rxq_affinity or "")
            except ValueError:
                pins = {}
            out.append(AuditPort(i.name, max(reported or 0, 0), reported, i.effective_mtu, i.n_rxq,
                                 i.desc("n_rxq_desc"), i.desc("n_txq_desc"), i.known_options.n_rxq_desc,
                                 i.known_options.n_txq_desc, pins, nic.pci if nic else i.devargs))
        return out

    @cached_property
    def dpdk_nodes(self) -> set[int]:
        nodes = {p.node for p in self.ports}
        nodes |= {max(n.node, 0) for n in self.inv.nics if n.dpdk_bound}
        return nodes

    @property
    def has_dpdk(self) -> bool:
        dpdk_init = bool(self.ovs and (self.ovs.known_other_config.dpdk_init or "").strip('"') in ("true", "try"))
        return bool(self.ports) or any(n.dpdk_bound for n in self.inv.nics) or dpdk_init

    @cached_property
    def polling_cpus(self) -> set[int]:
        """CPUs that must not be disturbed: PMDs and isolated CPUs; all CPUs when neither is known."""
        cpus = set(self.pmds) | self.isolated
        return cpus or {c.id for c in self.inv.cpus}

    @cached_property
    def housekeeping(self) -> set[int]:
        return {c.id for c in self.inv.cpus} - self.isolated - set(self.pmds)

    @cached_property
    def polls(self) -> list[PmdPoll]:
        return parse_pmd_rxq_show(self.ovs.pmd_rxq_show) if self.ovs and self.ovs.pmd_rxq_show else []

    def tripleo_need(self, node: int) -> tuple[int, int, list[str]]:
        """(TripleO distinct-MTU MB, per-port MB, 'port (MTU)' labels) for the DPDK ports on node."""
        ports = [p for p in self.ports if p.node == node]
        mtus = [p.mtu for p in ports]
        return (mem.tripleo_socket_mem(mtus), mem.tripleo_socket_mem(mtus, per_port=True),
                [f"{p.name} (MTU {p.mtu})" for p in ports])
