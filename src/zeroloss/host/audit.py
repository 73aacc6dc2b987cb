"""Audit a host (live or captured) against the OVS-DPDK zero-loss practices. Rules live in rules.py as data (id,
severity, source, what they need) plus one small function each; this module runs them and collects findings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
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
class Finding:
    rule: str
    severity: str
    message: str
    evidence: str
    source: str
    remedy: str


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
                pins = parse_affinity(i.other_config.get("pmd-rxq-affinity", ""))
            except ValueError:
                pins = {}
            out.append(AuditPort(i.name, max(reported or 0, 0), reported, i.effective_mtu, i.n_rxq,
                                 i.desc("n_rxq_desc"), i.desc("n_txq_desc"), i.options.get("n_rxq_desc"),
                                 i.options.get("n_txq_desc"), pins, nic.pci if nic else i.devargs))
        return out

    @cached_property
    def dpdk_nodes(self) -> set[int]:
        nodes = {p.node for p in self.ports}
        nodes |= {max(n.node, 0) for n in self.inv.nics if n.dpdk_bound}
        return nodes

    @property
    def has_dpdk(self) -> bool:
        dpdk_init = bool(self.ovs and self.ovs.other_config.get("dpdk-init", "").strip('"') in ("true", "try"))
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


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # rule -> why
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 2 if self.findings else 0


def _missing(rule: Rule, ctx: Context) -> str | None:
    if "dpdk" in rule.needs and not ctx.has_dpdk:
        return "no DPDK in use (no vfio-pci NIC, no OVS DPDK port)"
    if "ovs" in rule.needs and ctx.ovs is None:
        return "no OVS state"
    if "rxq_show" in rule.needs and not (ctx.ovs and ctx.ovs.pmd_rxq_show):
        return "no pmd-rxq-show output"
    if "domain" in rule.needs and ctx.domain is None:
        return "no --domain-xml"
    if "bridges" in rule.needs and not (ctx.ovs and ctx.ovs.bridges):
        return "no OVS bridge list"
    if "procs" in rule.needs and not ctx.inv.procs:
        return "no process list (/proc/PID)"
    if "pcie" in rule.needs and not ctx.inv.pcie:
        return "no PCIe link data (sys/bus/pci/devices/*/current_link_*)"
    return None


def run(ctx: Context, only: list[Rule] | None = None) -> Report:
    """Every rule whose data is present; findings ordered by severity then rule order."""
    from . import rules, rules_guest, rules_kernel, rules_zpl  # noqa: F401  (importing them registers their rules)

    report = Report()
    for rule in RULES if only is None else only:
        why = _missing(rule, ctx)
        if why:
            report.skipped[rule.id] = why
            continue
        hits = rule.check(ctx)
        if not hits:
            report.passed.append(rule.id)
        for h in hits:
            report.findings.append(Finding(rule.id, h.severity or rule.severity, h.message, h.evidence, rule.source,
                                           h.remedy))
    report.findings.sort(key=lambda f: SEVERITIES.index(f.severity))
    return report


def format_report(report: Report, header: list[str]) -> str:
    lines = list(header)
    for f in report.findings:
        lines += [f"{f.severity.upper():8} {f.rule}: {f.message}", f"         evidence: {f.evidence}",
                  f"         source:   {f.source}", f"         remedy:   {f.remedy}"]
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in SEVERITIES}
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n) or "no findings"
    lines.append(f"{summary}; {len(report.passed)} rule(s) passed, {len(report.skipped)} not applicable or "
                 f"lacking data")
    by_reason: dict[str, list[str]] = {}
    for rule, why in report.skipped.items():
        by_reason.setdefault(why, []).append(rule)
    lines += [f"  skipped ({why}): {', '.join(rules)}" for why, rules in by_reason.items()]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
