"""`zeroloss history trend --html FILE`: the trend page of a results history (history/trend.py), one section per
node: a table of its series (runs, groups, level, last change, whether the nightly check fails it), then per series
its NDR over time with jumpavg's groups drawn (each group's average as a line over its runs, its standard deviation
as a band) and each change marked at the run that started it with its size in %. One self-contained HTML file, its
figures drawn by the report's own SVG renderer (canvas.py, svgdraw.py), as the run report (report/html.py)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from zeroloss import __version__
from zeroloss.core.text import si
from zeroloss.history.text import bounds_text, change_text, when
from zeroloss.history.trend import Group, Trend
from zeroloss.report.canvas import Axes, Figure
from zeroloss.report.htmlbase import CSS, _table
from zeroloss.report.plots import svg_inline

RUN_COLOR = "#1f77b4"
MARK_COLOR = "#ff7f0e"  # the run a report is of, in its series (run_history)
NORMAL_COLOR = "#7f7f7f"  # a group or change neither a regression nor a progression
GROUP_COLOR = {"normal": NORMAL_COLOR, "regression": "#d62728", "progression": "#2ca02c"}
DAY = 86400.0
# date tick steps in days: an hour to a year; the first that gives at most MAX_TICKS ticks is taken
STEPS = (1 / 24, 3 / 24, 6 / 24, 12 / 24, 1.0, 2.0, 7.0, 14.0, 28.0, 91.0, 182.0, 364.0)
MAX_TICKS = 8


def _unit(level: float) -> tuple[float, str]:
    return (1e6, "Mpps") if level >= 1e6 else (1e3, "kpps")


def _xs(t: Trend) -> tuple[list[float], bool]:
    """Each run's place on the x axis: its start in days since 1970 (UTC) when every run has one, else its number
    in the series; and whether they are dates."""
    every = [*t.samples, *t.bounds]
    if every and all(s.started is not None for s in every):
        return [s.started.replace(tzinfo=UTC).timestamp() / DAY for s in t.samples if s.started], True
    return [float(k + 1 + t.skipped) for k in range(len(t.samples))], False


def _date_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Ticks at whole hours or days (UTC) between lo and hi (days), at most MAX_TICKS, labelled as dates."""
    step = next((s for s in STEPS if (hi - lo) / s <= MAX_TICKS), STEPS[-1])
    first = math.ceil(lo / step - 1e-9) * step
    pos = [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]
    fmt = "%m-%d %H:%M" if step < 1 else ("%Y-%m-%d" if hi - lo > 300 else "%m-%d")
    return pos, [datetime.fromtimestamp(p * DAY, UTC).strftime(fmt) for p in pos]


def _group_span(xs: Sequence[float], g: Group) -> tuple[float, float]:
    """Where a group's band runs: from its first run to its last, half a step wider on each side (a group of one
    run is a band too), never past the middle between it and its neighbours."""
    a, b = xs[g.start], xs[g.end]
    left = (a - xs[g.start - 1]) / 2 if g.start > 0 else (xs[1] - xs[0]) / 2 if len(xs) > 1 else 0.5
    right = (xs[g.end + 1] - b) / 2 if g.end + 1 < len(xs) else (b - xs[-2]) / 2 if len(xs) > 1 else 0.5
    return a - left, b + right


def _groups(ax: Axes, t: Trend, xs: Sequence[float], scale: float) -> None:
    """Each group's band (average ± standard deviation) and average, coloured by what started it."""
    shown: set[str] = set()
    for g in t.groups:
        xa, xb = _group_span(xs, g)
        col = GROUP_COLOR.get(g.comment, NORMAL_COLOR)
        lo, hi = (g.avg - g.stdev) / scale, (g.avg + g.stdev) / scale
        label = None if g.comment in shown else f"group ({g.comment}): average ± standard deviation"
        shown.add(g.comment)
        ax.fill_between([xa, xb], [hi, hi], [lo, lo], color=col, alpha=0.18, linewidth=0, label=label)
        ax.plot([xa, xb], [g.avg / scale, g.avg / scale], color=col, linewidth=2)


def _changes(ax: Axes, t: Trend, xs: Sequence[float], scale: float) -> None:
    """Each change: a dashed line at the run that started it, its size in % and that run's name beside it (on
    the left of the line when it is in the right half of the figure)."""
    lo, hi = min(xs, default=0.0), max(xs, default=0.0)
    for c in t.changes():
        x, g = xs[c.at], next(g for g in t.groups if g.start == c.at)
        col = GROUP_COLOR.get(c.kind, NORMAL_COLOR)
        ax.axvline(x, color=col, linestyle="--", linewidth=1)
        text = f"{c.size_pct:+.2f} % at {c.label}"
        dx = -(len(text) * 0.6 * 6.94 + 4) if hi > lo and (x - lo) / (hi - lo) > 0.5 else 4
        ax.annotate(text, (x, g.avg / scale), xytext=(dx, 4), textcoords="offset points", fontsize="x-small",
                    color=col)


def series_figure(t: Trend, mark: int | None = None) -> Figure:
    """A series' NDR (or PDR) over time: each run's value (its repeats as small dots), jumpavg's groups as bands
    with their averages, each change marked with its size in % and the run that started it; mark: a sample drawn
    apart (the run a report is of)."""
    xs, dated = _xs(t)
    scale, unit = _unit(max((s.value for s in [*t.samples, *t.bounds]), default=1.0))
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    ax = fig.add_subplot()
    _groups(ax, t, xs, scale)
    reps = [(x, r / scale) for x, s in zip(xs, t.samples, strict=True) for r in s.repeats]
    if reps:
        ax.scatter([x for x, _ in reps], [y for _, y in reps], s=5, color="#555555", alpha=0.5, label="repeats")
    ax.plot(xs, [s.value / scale for s in t.samples], "o", color=RUN_COLOR, markersize=3,
            label=f"run's {t.metric.upper()}" + (" (mean of its repeats)" if reps else ""))
    span = list(xs)  # where the x axis runs: the classified runs and the lower bounds
    if dated and t.bounds:  # lower bounds (trend.py): drawn apart, never in a group
        at = [(b.started.replace(tzinfo=UTC).timestamp() / DAY, b.value / scale) for b in t.bounds if b.started]
        ax.plot([x for x, _ in at], [y for _, y in at], "^", color=NORMAL_COLOR, markersize=4,
                markerfacecolor="none", label="lower bound (inconclusive or generator-bound): not classified")
        span += [x for x, _ in at]
    if mark is not None and 0 <= mark < len(t.samples):
        ax.plot([xs[mark]], [t.samples[mark].value / scale], "o", color=MARK_COLOR, markersize=9,
                markerfacecolor="none", label="this run")
    _changes(ax, t, xs, scale)
    if span:
        pad = (max(span) - min(span)) * 0.02 or 0.5
        ax.set_xlim(min(span) - pad, max(span) + pad)
        if dated:
            ax.set_xticks(*_date_ticks(min(span) - pad, max(span) + pad))
    ax.set_xlabel("run start (UTC)" if dated else "run of the series")
    ax.set_ylabel(f"{t.metric.upper()}, {unit}")
    ax.grid(alpha=0.3)
    fig.legend(fontsize="x-small", loc="outside lower center", ncols=3)
    return fig


def _row(t: Trend, last: int) -> tuple[list[str], str]:
    """A series' row of its node's table, and its class (fail: `history check --last last` fails it)."""
    g = t.groups[-1] if t.groups else None
    changes = t.changes()
    c = changes[-1] if changes else None
    failed = t.regression(last) is not None
    level = f"{si(g.avg, 'pps')} ± {100 * g.stdev / g.avg:.2f} %" if g and g.avg else "-"
    settings = ", ".join(f"{k}={v}" for k, v in sorted(t.settings.items())) or "defaults"
    frame = f"{t.frame} B" if t.frame.isdigit() else t.frame
    runs = str(len(t.samples)) + (f" (+{t.skipped} older)" if t.skipped else "") + (
        f" (+{len(t.bounds)} lower bounds)" if t.bounds else "")
    return ([t.topology or "-", frame, settings, runs, str(len(t.groups)), level,
             change_text(c) if c else "-", "REGRESSION" if failed else "ok"], "fail" if failed else "")


def _node_section(node: str, found: list[Trend], k: int, last: int) -> str:
    rows = [_row(t, last) for t in found]
    parts = [f'<section id="node-{k}"><h2>{escape(node)}</h2>',
             _table(["topology", "frame", "settings", "runs", "groups", "last group", "last change",
                     f"check --last {last}"], [r for r, _ in rows], "series", [c for _, c in rows], left=3)]
    for n, t in enumerate(found):
        parts.append(f'<h3 id="node-{k}-{n}">{escape(t.title)}</h3>')
        parts.append(f'<div class="fig">{svg_inline(series_figure(t), f"h{k}-{n}")}</div>')
        first, newest = (t.samples[0], t.samples[-1]) if t.samples else (None, None)
        span = f"{when(first.started)} .. {when(newest.started)} UTC" if first and newest else "-"
        older = (f"; {t.skipped} older run(s) left out of the classification" if t.skipped else "") + (
            f"; {bounds_text(t)}" if t.bounds else "")
        parts.append(f'<p class="meta">{len(t.samples)} run(s), {span}{older}.</p>')
        changes = t.changes()
        if changes:
            parts.append('<ul class="fix">' + "".join(f"<li>{escape(change_text(c))}</li>" for c in changes)
                         + "</ul>")
    return "".join(parts) + "</section>"


def run_history(found: Sequence[Trend], started: datetime | None, prefix: str, db_shown: str, last: int = 3) -> str:
    """A run report's history part (`zeroloss report --history DB`): the series of the run's node, topology, frame
    sizes and settings in the history, as the trend page draws them, the run itself marked where it is stored (the
    sample of its start time). prefix: the figures' id prefix, unique in the page."""
    head = (f'<p class="meta">From {escape(db_shown)}: the series this run belongs to (its node, topology, frame '
            "size and the settings that define a series), each series' runs in time order split into groups of "
            "equal performance by FD.io CSIT's jumpavg; the circle is this run.</p>")
    if not found:
        return head + ('<p class="ok">None of its series has a run in the history yet: store it with '
                       "zeroloss history ingest, or run with --history.</p>")
    rows = [_row(t, last) for t in found]
    parts = [head, _table(["topology", "frame", "settings", "runs", "groups", "last group", "last change",
                           f"check --last {last}"], [r for r, _ in rows], "series", [c for _, c in rows], left=3)]
    for n, t in enumerate(found):
        mark = next((k for k, x in enumerate(t.samples) if started is not None and x.started == started), None)
        bound = any(started is not None and b.started == started for b in t.bounds)
        where = (f"this run is run {mark + 1 + t.skipped} of {len(t.samples) + t.skipped}" if mark is not None
                 else "this run's NDR here is a lower bound, not classified" if bound
                 else "this run is not in the history")
        parts.append(f"<h4>{escape(t.title)}</h4>")
        parts.append(f'<div class="fig">{svg_inline(series_figure(t, mark), f"{prefix}-{n}")}</div>')
        changes = "".join(f"<li>{escape(change_text(c))}</li>" for c in t.changes())
        parts.append(f'<p class="meta">{len(t.samples)} run(s); {where}.</p>'
                     + (f'<ul class="fix">{changes}</ul>' if changes else ""))
    return "".join(parts)


def render_history(found: list[Trend], db_shown: str, last: int = 3, title: str | None = None) -> str:
    """The trend page: per node its series' table and each series' figure (module docstring)."""
    title = title or "zeroloss history: trends per node"
    nodes: dict[str, list[Trend]] = {}
    for t in found:
        nodes.setdefault(t.node, []).append(t)
    runs = sum(len(t.samples) + t.skipped for t in found)
    meta = (f"Made by zeroloss {__version__} on {time.strftime('%Y-%m-%d %H:%M %Z')} from {db_shown}: "
            f"{len(nodes)} node(s), {len(found)} series, {runs:,} points. Each series' runs in time order are split "
            "into groups of equal performance by FD.io CSIT's jumpavg (minimum description length); each group after "
            "the first starts a regression (red) or a progression (green), marked at the run that started it with "
            "its size in % of the group before. Rates are frames per second per direction. A series fails the "
            f"nightly check (zeroloss history check --last {last}) when its last group started within its newest "
            f"{last} runs below the group before by more than its spread and its newer runs' search resolution (their "
            "NDR brackets).")
    nav = "".join(f'<a href="#node-{k}">{escape(n)}</a>' for k, n in enumerate(nodes))
    body = [f"<h1>{escape(title)}</h1>", f'<p class="meta">{escape(meta)}</p>', f"<nav>{nav}</nav>"]
    if not found:
        body.append('<p class="ok">No series matches.</p>')
    body += [_node_section(n, ts, k, last) for k, (n, ts) in enumerate(nodes.items())]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"zeroloss {__version__}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
