"""Latency vs load in the report: NFVbench's table (load % of the NDR, rate, p50, p99, p99.9, max), a figure of
the percentiles against the load, and the CCDF of each trial's merged histogram (the share of frames slower than
x, log-log: the tail a percentile table hides). Pure: reads result records, draws on a canvas.Figure."""

from __future__ import annotations

from collections.abc import Iterator
from html import escape

from zeroloss.core.latency import lost_tail, ns_text, value_text
from zeroloss.report.canvas import Figure
from zeroloss.report.docparts import LoadRow
from zeroloss.results import latencyload
from zeroloss.results.records import RunRecord, SearchEntry
from zeroloss.results.summary import Run

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
SHOWN = (("p50", "p50", "-"), ("p99", "p99", "--"), ("p99_9", "p99.9", "-."), ("max", "max", ":"))


def _us(v: float, _pos: object = None) -> str:
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def load_figure(run: Run) -> Figure:
    """p50/p99/p99.9/max (every direction merged) against the load, % of the NDR, one colour per search, log y.
    A figure the lost frames reach (latency.Histogram.percentile) is a lower bound: drawn at the largest value
    measured as an open upward triangle off the line, never as a low point on it."""
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.add_subplot()
    bounded = False
    for i, s in enumerate(latencyload.searches(run.record)):
        trials = sorted(s.latency_loads or (), key=lambda t: t.load_pct)
        lats = [t.latency() for t in trials]
        color = COLORS[i % len(COLORS)]
        for key, name, style in SHOWN:
            pts = [(t.load_pct, lat[key] / 1e3) for t, lat in zip(trials, lats, strict=True)
                   if lat.get(key) and key not in lost_tail(lat)]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3,
                        color=color, label=f"{_name(s)}: {name}")
            up = [(t.load_pct, lat[key] / 1e3) for t, lat in zip(trials, lats, strict=True)
                  if lat.get(key) and key in lost_tail(lat)]
            if up:
                bounded = True
                ax.plot([p[0] for p in up], [p[1] for p in up], linestyle="none", marker="^", markersize=7,
                        markerfacecolor="none", color=color, label=f"{_name(s)}: {name} > (frames lost)")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_us)
    ax.set_xlim(0, 105)
    ax.set_xlabel("load, % of the NDR")
    ax.set_ylabel("latency, µs (log scale)")
    ax.grid(which="both", alpha=0.3)
    if ax.has_artists():
        fig.legend(loc="outside right upper", fontsize="small")
    fig.suptitle(f"{run.label}: latency vs load (every direction merged)"
                 + ("; ^: frames lost reach it, above the value" if bounded else ""))
    return fig


def ccdf_figure(run: Run, search: SearchEntry) -> Figure:
    """The CCDF of each latency-vs-load trial of a search: the share of frames slower than x, log-log."""
    fig = Figure(figsize=(9, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for i, t in enumerate(sorted(search.latency_loads or (), key=lambda t: t.load_pct)):
        h = t.histogram()
        if h is None or not h.count:
            continue
        pts = [(x / 1e3, y) for x, y in h.ccdf() if y > 0]
        if pts:
            lost = f", {h.lost:,} lost: the curve ends at {h.lost / (h.count + h.lost):.2%}" if h.lost else ""
            ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", color=COLORS[i % len(COLORS)],
                    label=f"{t.load_pct:g} % of the NDR ({h.count:,} frames, max {ns_text(h.max)}{lost})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(_us)
    ax.set_xlabel("latency, µs (log scale)")
    ax.set_ylabel("share of frames slower (log scale)")
    ax.grid(which="both", alpha=0.3)
    if ax.has_artists():
        ax.legend(fontsize="small")
    fig.suptitle(f"{run.label}: {_name(search)}, latency distribution (CCDF) at each load")
    return fig


def _name(s: SearchEntry) -> str:
    return f"{s.frame}" + (" B" if isinstance(s.frame, int) else "") + (f", search {s.repeat + 1}" if s.repeat else "")


def table_html(run: RunRecord) -> str:
    """NFVbench's table as HTML: frame, load %, rate, frames lost, p50, p99, p99.9, max (every direction merged)."""
    rows = latencyload.rows(run)
    head = "".join(f"<th>{escape(h)}</th>" for h in ("frame", "load % of NDR", "rate pps", "lost", "p50 µs",
                                                      "p99 µs", "p99.9 µs", "max µs"))
    body = []
    for r in map(LoadRow.from_json, rows):
        lat = r.latency_ns
        cells = [str(r.frame), f"{r.load_pct:g}", f"{r.rate_pps:,.0f}", f"{r.lost:,}",
                 *(value_text(lat, k) for k, _, _ in SHOWN)]
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return f'<table class="latency-load"><tr>{head}</tr>{"".join(body)}</table>'


def figures(run: Run) -> Iterator[Figure]:
    """The run's latency-vs-load figures: the load figure, then one CCDF per search that has trials."""
    found = latencyload.searches(run.record)
    if not found:
        return
    yield load_figure(run)
    for s in found:
        yield ccdf_figure(run, s)


def figure_count(runs: list[Run]) -> int:
    """How many figures `figures` draws for the runs."""
    return sum(1 + len(found) for run in runs if (found := latencyload.searches(run.record)))


def section(run: Run, svg: list[str]) -> str:
    """The report's latency-vs-load section of a run: the criterion, the table and the figures (inline SVG)."""
    if not latencyload.searches(run.record):
        return ""
    bound = latencyload.criterion(run.record)
    note = (f"<p>The NDR and PDR also met {escape(bound)} per direction (--max-latency).</p>" if bound else "")
    figs = "".join(f'<div class="fig">{s}</div>' for s in svg)
    return (f"<h3>Latency vs load</h3>{note}<p>Fixed-rate trials after the search at shares of the NDR, every "
            f"direction's frames merged into one histogram (zlgen's buckets are at most 0.8 % wide). Percentiles are "
            f"over the frames sent: a lost frame ranks above every value measured, so a percentile the lost frames "
            f"reach is only known to be above the largest latency measured ('&gt; x', an open triangle).</p>"
            f"{table_html(run.record)}{figs}")
