"""Audit a host (live or captured) against the OVS-DPDK zero-loss practices. Rules live in rules*.py as data (id,
severity, source, what they need) plus one small function each, registered in rulebase.py; this module runs them and
collects findings."""

from __future__ import annotations

from dataclasses import dataclass, field

# importing the rule modules registers their rules, in this order
from . import rules, rules_guest, rules_kernel, rules_zpl  # noqa: F401
from .rulebase import RULES, SEVERITIES, Context, Rule

__all__ = ["RULES", "SEVERITIES", "Context", "Finding", "Report", "format_report", "run"]


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str
    message: str
    evidence: str
    source: str
    remedy: str


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
    lines += [f"  skipped ({why}): {', '.join(ids)}" for why, ids in by_reason.items()]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)
