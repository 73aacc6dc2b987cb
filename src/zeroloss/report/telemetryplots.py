"""The telemetry of a search's trials in the report (drivers/probe/telemetry.py records): per bench core its busy, steal
and IRQ+softirq shares, the interrupts each core took per second (isolated cores marked), the page faults of each DPDK
process, and each OVS PMD's cycles per packet, trial by trial. One figure per search, drawn only when its trials
carry telemetry, and a table of the same numbers that opens on demand."""

from __future__ import annotations

from html import escape

from zeroloss.drivers.probe.telemetry import Telemetry
from zeroloss.report.canvas import Axes, Figure
from zeroloss.report.docparts import PmdCycles
from zeroloss.report.plots import COLORS, svg_inline
from zeroloss.results.records import SearchEntry

Rows = list[tuple[int, Telemetry]]  # (trial number from 1, its telemetry)


def trials_with(search: SearchEntry) -> list[tuple[int, Telemetry]]:
    """(trial number from 1, its telemetry) of the search's trials that carry one."""
    return [(t.index + 1, Telemetry.from_json(t.telemetry)) for t in search.trials if t.telemetry]


def telemetry_figure(search: SearchEntry, title: str) -> Figure | None:
    """Four panels over the search's trials: core shares (busy solid, steal dashed, IRQ+softirq dotted), interrupts
    per second per core (a star on an isolated core), page faults per process (minor solid, major dashed), and OVS
    PMD cycles per packet; None when no trial carries telemetry."""
    rows = trials_with(search)
    if not rows:
        return None
    pmds = sorted({k for _, tel in rows for k, v in _cycles(tel).items() if v is not None}, key=int)
    fig = Figure(figsize=(9, 7.2 if pmds else 5.8), layout="constrained")
    axes = fig.subplots(4 if pmds else 3, 1, sharex=True)
    share_ax, irq_ax, fault_ax = axes[0], axes[1], axes[2]
    _core_panels(fig, share_ax, irq_ax, rows)
    _fault_panel(fault_ax, rows)
    if pmds:
        _pmd_panel(axes[3], rows, pmds)
    axes[-1].set_xlabel("trial")
    xs = [n for n, _ in rows]
    axes[-1].set_xticks(xs if len(xs) <= 30 else xs[::max(1, len(xs) // 15)])
    host = sorted({"this host" if tel.host == "local" else tel.host for _, tel in rows})
    fig.suptitle(f"{title}: telemetry of {', '.join(host)} per trial", fontsize="medium")
    return fig


def _core_panels(fig: Figure, share_ax: Axes, irq_ax: Axes, rows: Rows) -> None:
    """Per bench core: its busy, steal and IRQ+softirq shares, and the interrupts it took per second (a star when
    isolated); the figure's legend is the share panel's."""
    cores = sorted({c.core for _, tel in rows for c in tel.cores})
    for i, core in enumerate(cores):
        color = COLORS[i % len(COLORS)]
        pts = [(n, c, tel.window_s) for n, tel in rows for c in tel.cores if c.core == core]
        xs = [n for n, _, _ in pts]
        roles = "/".join(sorted({r for _, c, _ in pts for r in c.roles})) or "-"
        share_ax.plot(xs, [c.busy_pct for _, c, _ in pts], "-", marker=".", color=color,
                      label=f"core {core} ({roles})")
        share_ax.plot(xs, [c.pct("steal") for _, c, _ in pts], "--", color=color, linewidth=0.9)
        share_ax.plot(xs, [c.pct("irq", "softirq") for _, c, _ in pts], ":", color=color, linewidth=0.9)
        irq_ax.plot(xs, [c.interrupts / w if w else 0.0 for _, c, w in pts], "-", marker=".", color=color)
        iso = [(n, c.interrupts / w if w else 0.0) for n, c, w in pts if c.isolated]
        if iso:
            irq_ax.scatter([p[0] for p in iso], [p[1] for p in iso], marker="*", s=80, color=color, zorder=3,
                           label=f"core {core} isolated")
    share_ax.set_ylabel("% of the core")
    share_ax.set_ylim(0, 105)
    share_ax.grid(alpha=0.3)
    share_ax.plot([], [], "k-", label="busy")
    share_ax.plot([], [], "k--", label="steal")
    share_ax.plot([], [], "k:", label="IRQ + softirq")
    fig.legend(*share_ax.get_legend_handles_labels(), fontsize="x-small", loc="outside right upper")
    irq_ax.set_ylabel("interrupts/s")
    irq_ax.set_yscale("symlog", linthresh=10)
    irq_ax.set_ylim(bottom=0)
    irq_ax.grid(alpha=0.3)
    if irq_ax.get_legend_handles_labels()[0]:
        irq_ax.legend(fontsize="x-small")


def _fault_panel(fault_ax: Axes, rows: Rows) -> None:
    """Per DPDK process: its minor page faults per trial (solid), its major ones (dashed) when it had any."""
    procs = sorted({(p.name, p.pid) for _, tel in rows for p in tel.procs})
    for i, (name, pid) in enumerate(procs):
        color = COLORS[i % len(COLORS)]
        faults = [(n, p) for n, tel in rows for p in tel.procs if p.pid == pid]
        fault_ax.plot([n for n, _ in faults], [p.minflt for _, p in faults], "-", marker=".", color=color,
                      label=f"{name} ({pid})")
        if any(p.majflt for _, p in faults):
            fault_ax.plot([n for n, _ in faults], [p.majflt for _, p in faults], "--", color=color)
    fault_ax.set_ylabel("page faults")
    fault_ax.set_yscale("symlog", linthresh=10)
    fault_ax.set_ylim(bottom=0)
    fault_ax.grid(alpha=0.3)
    if procs:
        fault_ax.legend(fontsize="x-small", ncols=min(3, len(procs)))


def _cycles(tel: Telemetry) -> dict[str, float | None]:
    """Each OVS PMD's cycles per packet over the trial (None: it had no packet), in the telemetry's order."""
    return {k: PmdCycles.from_json(v).cycles_per_pkt for k, v in tel.pmds.items()}


def _pmd_panel(pmd_ax: Axes, rows: Rows, pmds: list[str]) -> None:
    """Per OVS PMD: its cycles per packet, trial by trial."""
    for i, pmd in enumerate(pmds):
        cpp = [(n, float(v)) for n, tel in rows if (v := _cycles(tel).get(pmd)) is not None]
        pmd_ax.plot([n for n, _ in cpp], [v for _, v in cpp], "-", marker=".", color=COLORS[i % len(COLORS)],
                    label=f"PMD core {pmd}")
    pmd_ax.set_ylabel("cycles/packet")
    pmd_ax.set_ylim(bottom=0)
    pmd_ax.grid(alpha=0.3)
    pmd_ax.legend(fontsize="x-small")


def _cells(n: int, tel: Telemetry) -> list[str]:
    cores = "; ".join(f"{c.core}{'*' if c.isolated else ''}: {c.busy_pct:.0f}/{c.pct('steal'):.1f}/"
                      f"{c.pct('irq', 'softirq'):.1f} %, {c.interrupts:,} int" for c in tel.cores)
    faults = ", ".join(f"{p.name} {p.minflt:,}/{p.majflt:,}" for p in tel.procs)
    pmd = ", ".join(f"{k}: {v:g}" for k, v in _cycles(tel).items() if v is not None)
    return [str(n), f"{tel.window_s:.2f}", cores, faults, pmd, "; ".join(tel.flags())]


def html(run_index: int, search: SearchEntry, title: str) -> str:
    """The search's telemetry figure and its numbers in a table that opens on demand; empty without telemetry."""
    fig = telemetry_figure(search, title)
    if fig is None:
        return ""
    svg = svg_inline(fig, f"tel-r{run_index}-f{search.frame}-s{search.repeat}")
    rows = [_cells(n, tel) for n, tel in trials_with(search)]
    head = ["trial", "s", "core: busy/steal/irq %, interrupts (* isolated)", "page faults minor/major",
            "PMD cycles/pkt", "flags"]
    table = ("<table class=\"telemetry\"><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
             + "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows) + "</table>")
    return (f'<div class="fig telemetry">{svg}</div><details><summary>{escape(title)}: telemetry of '
            f"{len(rows)} trials</summary>{table}</details>")
