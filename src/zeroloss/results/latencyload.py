"""Latency vs load as NFVbench reports it: per search, the fixed-rate trials at shares of the NDR (runs/run.py), as
rows, a text table and JSON. Pure: reads a run's records (SearchEntry.latency_loads)."""

from __future__ import annotations

from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.latency import bounds_text, lost_tail, parse_bounds, value_text
from zeroloss.core.text import table
from zeroloss.results.records import LoadTrial, RunRecord, SearchEntry
from zeroloss.results.runsettings import RunSettings

SHOWN = ("p50", "p99", "p99_9", "max")  # NFVbench's columns


def searches(run: RunRecord) -> list[SearchEntry]:
    """The searches that have latency-vs-load trials, in the run's order."""
    return [s for s in run.searches if s.latency_loads]


def row(s: SearchEntry, t: LoadTrial) -> dict[str, Any]:
    """One trial as a row: its load, rate and loss, all directions merged, and each direction's percentiles (ns)."""
    return {"frame": s.frame, "repeat": s.repeat, "load_pct": t.load_pct, "rate_pps": t.rate_pps,
            "duration_s": t.duration_s, "tx": t.tx, "lost": t.lost, "loss_ratio": t.loss_ratio,
            "disturbed": t.disturbed, "latency_ns": t.latency(),
            "directions": [{"port": d.port, "rx_port": d.rx_port, "tx": d.tx, "lost": d.lost,
                            "latency_ns": d.latency()} for d in t.directions]}


def rows(run: RunRecord) -> list[dict[str, Any]]:
    """Every latency-vs-load trial of the run as a row, search by search, in the order run."""
    return [row(s, t) for s in searches(run) for t in s.latency_loads or ()]


def criterion(run: RunRecord) -> str:
    """The latency bound the run's NDR and PDR also met ('' without one): 'p99 <= 50 us'."""
    try:
        return bounds_text(parse_bounds(str(RunSettings.from_json(run.config).max_latency or "")))
    except ZeroLossError:
        return ""


def load_table(run: RunRecord) -> str:
    """The text table printed after a run and by `zeroloss report --format markdown`'s text: frame, load % of the
    NDR, rate, frames lost, p50, p99, p99.9 and max in us, all directions merged, over the frames sent: a figure the
    lost frames reach is '> x' (x the largest measured, latency.Histogram.percentile); '' when there are no trials."""
    rs = [(s, t, t.latency()) for s in searches(run) for t in s.latency_loads or ()]
    if not rs:
        return ""
    repeats = len({s.repeat for s, _, _ in rs}) > 1
    headers = ["frame", *(["search"] if repeats else []), "load %", "rate pps", "lost",
               "p50 us", "p99 us", "p99.9 us", "max us"]
    cells = []
    for s, t, lat in rs:
        cells.append([str(s.frame), *([str(s.repeat + 1)] if repeats else []), f"{t.load_pct:g}",
                      f"{t.rate_pps:,.0f}", f"{t.lost:,}" + (" *" if t.disturbed else ""),
                      *(value_text(lat, k) for k in SHOWN)])
    title = "Latency vs load (% of the NDR; every direction's frames merged)"
    out = [title, table(headers, cells, left=(0,))]
    if any(t.disturbed for _, t, _ in rs):
        out.append("  *: a host stall touched the trial (its latency is the host's as much as the DUT's)")
    if any(lost_tail(lat) for _, _, lat in rs):
        out.append("  > x: frames lost reach this percentile: over the frames sent it is above x, the largest latency "
                   "measured (a lost frame never arrived; the frames that did are not its latency)")
    return "\n".join(out)


def to_json(run: RunRecord) -> dict[str, Any]:
    """The run's latency-vs-load trials for --json: the bound the search also met, and the rows."""
    return {"max_latency": criterion(run) or None, "rows": rows(run)}
