"""The history's trends and checks as text: strings only (cli/history.py prints them)."""

from __future__ import annotations

from datetime import datetime

from zeroloss.core.text import si
from zeroloss.history.trend import Change, Trend


def when(t: datetime | None) -> str:
    return "-" if t is None else t.strftime("%Y-%m-%d %H:%M")


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.2f} %" if whole else "-"


def versions_text(change: Change) -> str:
    """'kernel 6.1 -> 6.2, ovs_version 3.1 -> 3.2': what the run that started a change ran with that the run
    before it did not."""
    return ", ".join(f"{k.removesuffix('_version')} {old or '?'} -> {new or '?'}"
                     for k, (old, new) in change.changed.items())


def change_text(c: Change) -> str:
    since = f"; {v}" if (v := versions_text(c)) else ""
    return f"{c.kind} {c.size_pct:+.2f} % at {c.label} ({when(c.started)} UTC{since})"


def trend_text(t: Trend) -> str:
    """A series: its title, one line per group (runs, when, level ± its standard deviation), its changes."""
    unit = "pps" if t.metric == "ndr" else "pps PDR"
    runs = f"{len(t.samples)} run(s)" if not t.skipped else \
        f"{len(t.samples) + t.skipped} run(s), the newest {len(t.samples)} classified"
    lines = [f"{t.title}: {runs}, {len(t.groups)} group(s)"]
    for g in t.groups:
        first, last = t.samples[g.start], t.samples[g.end]
        a, b = g.start + 1 + t.skipped, g.end + 1 + t.skipped
        runs = f"run {a}" if a == b else f"runs {a}-{b}"
        lines.append(f"  {runs:<12} {when(first.started)} .. {when(last.started)}  {si(g.avg, unit)} "
                     f"± {_pct(g.stdev, g.avg)}")
    lines += [f"  {change_text(c)}" for c in t.changes()]
    if t.bounds:
        lines.append(f"  {bounds_text(t)}")
    return "\n".join(lines)


def bounds_text(t: Trend) -> str:
    """The runs of a series whose NDR there is only a lower bound (trend.py): how many, their range, why apart."""
    unit = "pps" if t.metric == "ndr" else "pps PDR"
    lo, hi = min(b.value for b in t.bounds), max(b.value for b in t.bounds)
    span = f">= {si(lo, unit)}" + (f" .. >= {si(hi, unit)}" if hi != lo else "")
    return (f"{len(t.bounds)} run(s) not classified, lower bounds {span} (inconclusive or generator-bound: what the "
            "generator delivered, not the DUT's rate)")


def check_text(failed: list[tuple[Trend, Change]], series: int, last: int) -> str:
    if not failed:
        return f"no regression: {series} series, none regressed in its newest {last} run(s) beyond its spread"
    lines = [f"REGRESSION: {len(failed)} of {series} series regressed in their newest {last} run(s) beyond their "
             "spread"]
    lines += [f"  {t.title}: {change_text(c)}" for t, c in failed]
    return "\n".join(lines)
