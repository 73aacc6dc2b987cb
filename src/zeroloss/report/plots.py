"""Figures of the report, drawn on a canvas.Figure from result records: NDR per frame size (frames/s and % of
line rate on two axes, as in the Dell/Intel jumbo-frame whitepaper's Figure 3), latency at NDR, and each
search's trace. Each figure is rendered to SVG text (inlined in the HTML report) or saved as SVG or PNG."""

from __future__ import annotations

import io
import math
from pathlib import Path

from zeroloss.core.fileio import write_text_atomic
from zeroloss.core.frames import Frame, by_size, order
from zeroloss.report import svgdraw
from zeroloss.report.canvas import Figure, replay
from zeroloss.report.docparts import LatencyRow, LossEvent, StepStats
from zeroloss.results.campaigns import TuneRecord
from zeroloss.results.records import SearchEntry
from zeroloss.results.soak import SoakRecord
from zeroloss.results.summary import Run, frame_rows, latency_rows, line_gbps

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf"]
VERDICT_STYLE = {  # verdict -> (marker, colour, legend text)
    "pass": ("o", "#2ca02c", "pass"),
    "fail": ("X", "#d62728", "loss above tolerance"),
    "generator-failure": ("^", "#7f7f7f", "generator could not send (retried)"),
    "anomaly": ("D", "#ff7f0e", "anomaly (duplicates, late frames)"),
    "disturbed": ("s", "#9467bd", "lost while a DUT core stalled (host; retried)"),
}
FORMATS = ("svg", "png")


def ndr_figure(runs: list[Run]) -> Figure:
    """NDR per frame size: bars of frames/s per direction (left axis), % of line rate as lines (right axis)."""
    per_run = [frame_rows(run.record) for run in runs]
    frames = by_size({r.frame for rows in per_run for r in rows})  # sizes, then IMIXes
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.add_subplot()
    pct_ax = ax.twinx()
    width = 0.8 / max(len(runs), 1)
    for i, run in enumerate(runs):
        rows = {r.frame: r for r in per_run[i] if r.found}
        xs = [frames.index(f) + (i - (len(runs) - 1) / 2) * width for f in rows]
        color = COLORS[i % len(COLORS)]
        ax.bar(xs, [r.ndr_pps / 1e6 for r in rows.values()], width * 0.95, color=color, alpha=0.45,
               yerr=[r.ndr_sd / 1e6 for r in rows.values()] if any(r.repeats > 1 for r in rows.values()) else None,
               label=f"{run.label}: Mpps", ecolor="#333333", capsize=2)
        pct_ax.plot([frames.index(f) for f in rows], [r.line_rate_pct for r in rows.values()], marker="o",
                    color=color, label=f"{run.label}: % line rate")
    ax.set_xticks(range(len(frames)), [str(f) for f in frames])
    ax.set_xlabel("frame size, bytes (FCS included)")
    ax.set_ylabel("NDR, Mpps per direction (bars)")
    pct_ax.set_ylabel("NDR, % of line rate (lines)")
    tops = [r.line_rate_pct * 1.05 for rows in per_run for r in rows if r.found]  # a run may have none
    pct_ax.set_ylim(0, max([105.0, *tops]))
    ax.grid(axis="y", alpha=0.3)
    handles = ax.get_legend_handles_labels()[0] + pct_ax.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + pct_ax.get_legend_handles_labels()[1]
    fig.legend(handles, labels, loc="outside lower center", ncols=min(4, max(2, len(labels))), fontsize="small")
    speeds = sorted({f"{line_gbps(run.record):g}" for run in runs})
    fig.suptitle(f"Zero-loss throughput (NDR) per frame size, line rate {'/'.join(speeds)} Gb/s")
    return fig


def _plain(v: float, _pos: object = None) -> str:
    """A log axis label as a plain number: 2,000 rather than 2 x 10^3."""
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def _lead(v: float) -> int:
    """The leading digit of a positive number."""
    return int(f"{v:e}"[0]) if v > 0 else 0


LAT_SHOWN = (("p50", "-"), ("p99", "--"), ("p99.9", "-."), ("max", ":"))


def latency_figure(runs: list[Run]) -> Figure:
    """Latency percentiles at NDR per frame size (the worse direction), one colour per run, log scale."""
    per_run = [[LatencyRow.from_json(r) for r in latency_rows(run.record)] for run in runs]
    frames = by_size({r.frame for rows in per_run for r in rows})
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for i, (run, rows) in enumerate(zip(runs, per_run, strict=True)):
        worst: dict[Frame, dict[str, float]] = {}
        for r in rows:
            w = worst.setdefault(r.frame, {})
            for name, _ in LAT_SHOWN:
                if name in r.extra:  # the percentiles, by name
                    w[name] = max(w.get(name, 0.0), r.extra[name])
        for name, style in LAT_SHOWN:
            pts = [(frames.index(f), v[name]) for f, v in sorted(worst.items(), key=lambda x: order(x[0])) if name in v]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3,
                        color=COLORS[i % len(COLORS)], label=f"{run.label}: {name}")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_plain)
    ax.yaxis.set_minor_formatter(lambda v, pos: _plain(v, pos) if _lead(v) in (2, 5) else "")
    ax.set_xticks(range(len(frames)), [str(f) for f in frames])
    ax.set_xlabel("frame size, bytes (FCS included)")
    ax.set_ylabel("latency at NDR, µs (log scale)")
    ax.grid(which="both", alpha=0.3)
    if ax.has_artists():
        fig.legend(loc="outside right upper", fontsize="small")
    fig.suptitle("Latency at the NDR (validation trial, the worse direction)")
    return fig


def trace_figure(search: SearchEntry, title: str) -> Figure:
    """A search's trials in order: offered rate (top) and loss (bottom), marked by verdict."""
    trials = search.trials
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    rate_ax, loss_ax = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    for verdict, (marker, color, text) in VERDICT_STYLE.items():
        sel = [t for t in trials if t.verdict == verdict]
        if not sel:
            continue
        for kind, size in (("search", 36), ("validation", 90)):
            pts = [t for t in sel if (t.kind == "validation") == (kind == "validation")]
            if pts:
                xs = [t.index + 1 for t in pts]
                rate_ax.scatter(xs, [t.rate_pps / 1e6 for t in pts], s=size, marker=marker, color=color,
                                edgecolors="black" if kind == "validation" else "none",
                                label=text + (" (validation)" if kind == "validation" else ""), zorder=3)
                loss_ax.scatter(xs, [100 * t.loss_ratio for t in pts], s=size * 0.6, marker=marker, color=color,
                                zorder=3)
    xs = [t.index + 1 for t in trials]
    rate_ax.plot(xs, [t.rate_pps / 1e6 for t in trials], color="#999999", linewidth=0.8, zorder=1)
    ndr = search.ndr.rate_pps if search.ndr is not None else None
    if ndr:
        rate_ax.axhline(ndr / 1e6, color="#1f77b4", linestyle="--", linewidth=1, label=f"NDR {ndr / 1e6:.3f} Mpps")
    top = max(t.rate_pps for t in trials) if trials else 0.0
    line = search.line_rate_pps or math.nan  # the schema requires it: a file without it is refused when read
    if top >= 0.3 * line:  # the line rate only where it does not flatten the trace
        rate_ax.axhline(line / 1e6, color="#555555", linestyle=":", linewidth=1, label="line rate")
    else:
        rate_ax.plot([], [], " ", label=f"line rate {line / 1e6:.3g} Mpps (off scale)")
    rate_ax.set_ylabel("offered, Mpps")
    rate_ax.set_ylim(bottom=0)
    rate_ax.grid(alpha=0.3)
    fig.legend(*rate_ax.get_legend_handles_labels(), fontsize="x-small", loc="outside right upper")
    loss_ax.set_yscale("symlog", linthresh=1e-4)
    loss_ax.set_ylim(0, max(1.0, 300 * max((t.loss_ratio for t in trials), default=0.0)))
    loss_ax.set_ylabel("loss, %")
    loss_ax.set_xlabel("trial")
    loss_ax.grid(alpha=0.3)
    loss_ax.set_xticks(xs if len(xs) <= 30 else xs[::max(1, len(xs) // 15)])
    fig.suptitle(title, fontsize="medium")
    return fig


def _render(fig: Figure, fmt: str, salt: str) -> bytes:
    """The figure as SVG (drawn by svgdraw.py) or PNG (the same calls replayed on matplotlib) bytes."""
    if fmt == "svg":
        return ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svgdraw.render(fig, salt) + "\n").encode()
    buf = io.BytesIO()
    replay(fig).savefig(buf, format=fmt, dpi=110)
    return buf.getvalue()


def svg_inline(fig: Figure, salt: str) -> str:
    """The figure as an <svg> element to put in an HTML page."""
    return svgdraw.render(fig, salt)


def save(fig: Figure, path: Path, fmt: str) -> Path:
    """The figure written to path with fmt's suffix (svg or png); the path written."""
    path = path.with_suffix("." + fmt)
    write_text_atomic(path, _render(fig, fmt, path.stem), mode=0o644)  # no host data; never through a symlink
    return path


def tune_figure(tune: TuneRecord) -> Figure:
    """A tune's story: each frame size's NDR (mean over repeats, bar = spread) at every step; filled markers for
    the steps kept, hollow for those reverted; the target as a dashed line where it is in frames/s or % of one
    line rate."""
    steps = [(s, {f: StepStats.from_json(x) for f, x in s.stats.items()}) for s in tune.steps if s.stats]
    frames = sorted({int(f) for _, stats in steps for f in stats})
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for i, f in enumerate(frames):
        color = COLORS[i % len(COLORS)]
        pts = [(k, stats[str(f)], s.kept) for k, (s, stats) in enumerate(steps) if str(f) in stats]
        ax.errorbar([k for k, _, _ in pts], [x.mean / 1e6 for _, x, _ in pts],
                    yerr=[x.spread / 2e6 for _, x, _ in pts], color=color, capsize=3, label=f"{f} B", alpha=0.8)
        ax.scatter([k for k, _, kept in pts if not kept], [x.mean / 1e6 for _, x, kept in pts if not kept],
                   facecolors="white", edgecolors=color, zorder=3, s=40)
        ax.scatter([k for k, _, kept in pts if kept], [x.mean / 1e6 for _, x, kept in pts if kept],
                   color=color, zorder=3, s=40)
        kind, value = tune.target
        line = pts[0][1].line_rate_pps if pts else None
        goal = value if kind == "pps" else (value / 100 * line if line else None)
        if goal:
            ax.axhline(goal / 1e6, color=color, linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(steps)), [s.name.split(":")[0].replace("step ", "") for s, _ in steps])
    ax.set_xlabel("step (filled: kept, hollow: reverted; dashed: the target)")
    ax.set_ylabel("NDR, Mpps per direction")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.suptitle("zeroloss tune: NDR per step")
    return fig


def soak_figure(rec: SoakRecord, title: str) -> Figure:
    """A soak's timeline: per direction what was sent and received each interval (top) and its loss (bottom), its
    loss events shaded."""
    fig = Figure(figsize=(9, 3.6), layout="constrained")
    rate_ax, loss_ax = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    for i, key in enumerate(rec.directions()):
        mine = [(row.t_s, d) for row in rec.intervals if (d := row.directions.get(key)) is not None]
        ts = [t for t, _ in mine]
        color = COLORS[i % len(COLORS)]
        rate_ax.plot(ts, [(d.tx_pps or 0) / 1e6 for _, d in mine], color=color, linewidth=1, label=f"{key} sent")
        rate_ax.plot(ts, [(d.rx_pps or 0) / 1e6 for _, d in mine], color=color, linewidth=1, linestyle="--",
                     label=f"{key} received")
        loss_ax.plot(ts, [max(0.0, d.loss_pct or 0.0) for _, d in mine], color=color, marker=".", linewidth=0.8)
    if rec.rate_pps:
        rate_ax.axhline(rec.rate_pps / 1e6, color="#555555", linestyle=":", linewidth=1, label="requested")
    for k, e in enumerate(map(LossEvent.from_json, rec.events())):  # each loss event's intervals shaded, on both axes
        for ax in (rate_ax, loss_ax):
            ax.axvspan(e.start_s, e.end_s, color="#d62728", alpha=0.15, linewidth=0,
                       label="loss event" if k == 0 and ax is rate_ax else None)
    rate_ax.set_ylabel("Mpps")
    rate_ax.set_ylim(bottom=0)
    rate_ax.grid(alpha=0.3)
    fig.legend(*rate_ax.get_legend_handles_labels(), fontsize="x-small", loc="outside right upper")
    loss_ax.set_yscale("symlog", linthresh=1e-4)
    loss_ax.set_ylim(bottom=0)
    loss_ax.set_ylabel("loss, %")
    loss_ax.set_xlabel("time, s")
    loss_ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize="medium")
    return fig
