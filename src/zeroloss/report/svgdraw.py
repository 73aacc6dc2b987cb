"""A canvas.Figure rendered as one SVG element: panels stacked in a column (shared x), twins on the right, linear,
log and symlog axes, lines, markers, steps, bars with error bars, spans, fills, a title and legends. Text stays
text (searchable, small); its width is estimated (0.6 em a character), which is what the layout needs."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from html import escape
from typing import Any

from zeroloss.report.canvas import Artist, Axes, Figure, Legend
from zeroloss.report.svgaxis import Mapping, finite, limits, ticks
from zeroloss.report.svgmarks import artist_svg, legend_glyph

SIZES = {"xx-small": 5.79, "x-small": 6.94, "small": 8.33, "medium": 10.0, "large": 12.0, "x-large": 14.4}
FS = 10.0  # tick and axis label size, pt
PAD = 6.0
EM = 0.6  # a character's width, em (DejaVu Sans averages 0.55-0.64)
FONT = "DejaVu Sans, Bitstream Vera Sans, Arial, Helvetica, sans-serif"


def size(value: Any, default: float = FS) -> float:
    """A matplotlib font size (a number or a name such as 'small') in pt."""
    if value is None:
        return default
    return float(value) if isinstance(value, int | float) else SIZES.get(str(value), default)


def text_width(text: str, fs: float) -> float:
    return len(text) * EM * fs


def num(v: float) -> str:
    """A coordinate as short text."""
    return f"{v:.1f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


@dataclass
class Panel:
    """A row's rectangle on the page and the mappings of its axes."""
    ax: Axes
    x0: float
    y0: float
    w: float
    h: float


def _legend_size(lg: Legend) -> tuple[float, float, float]:
    """(width, height, fontsize) of a legend box."""
    fs = size(lg.fontsize, FS)
    entries = lg.entries
    cols = max(1, int(lg.ncols))
    rows = math.ceil(len(entries) / cols)
    col_w = max((text_width(lab, fs) for _, lab in entries), default=0.0) + 2.8 * fs
    return cols * col_w + fs * 0.6, rows * fs * 1.35 + fs * 0.5, fs


def render(fig: Figure, salt: str) -> str:
    """The figure as an <svg> element; salt keeps its ids unique within a page."""
    width, height = fig.figsize[0] * 72, fig.figsize[1] * 72
    parts: list[str] = []
    top = _title(fig, width, parts)
    right, bottom = PAD, PAD
    legend = _fit_legend(fig, width, height, top)
    loc = str(legend.loc) if legend else ""
    if legend:
        lw, lh, _ = _legend_size(legend)
        if "lower" in loc:
            bottom += lh + PAD
        else:
            right += lw + PAD
    rows = fig.rows
    bottom += FS * 1.4 + (FS * 1.5 if any(r.x.label for r in rows) else 0)
    ys, heights, ymaps, yticks = _rows(fig, height, top, bottom)
    label_w = {k: max((text_width(t[1], FS) for t in v), default=0.0) for k, v in yticks.items()}
    left = PAD + max(label_w[id(r)] for r in rows) + 5 + (FS * 1.5 if any(r.y.label for r in rows) else 0)
    twins = [t for r in rows for t in r.twins]
    if twins:
        right += max(label_w[id(t)] for t in twins) + 5 + (FS * 1.5 if any(t.y.label for t in twins) else 0)
    x0, w = left, width - left - right
    shared = [a for r in rows for a in (r, *r.twins)]
    for i, (row, y0, h) in enumerate(zip(rows, ys, heights, strict=True)):
        group = shared if fig.sharex else [row, *row.twins]
        lo, hi = limits(group, "x", row.x if not fig.sharex else rows[-1].x)
        xm = Mapping((rows[-1] if fig.sharex else row).x.scale, lo, hi, x0, x0 + w)
        xstate = rows[-1].x if fig.sharex and rows[-1].x.ticks else row.x
        xt = ticks(xm, xstate, max(2, int(w / (FS * 6))))
        show_x = not fig.sharex or i == len(rows) - 1
        panel = Panel(row, x0, y0, w, h)
        parts.append(_panel(panel, xm, xt, show_x, ymaps, yticks, f"{salt}-{i}"))
    if legend:
        lw, lh, _ = _legend_size(legend)
        lx = (width - lw) / 2 if "lower" in loc else width - PAD - lw
        ly = height - PAD - lh if "lower" in loc else ys[0]
        parts.append(_legend(legend, lx, ly))
    parts += _axis_labels(rows, x0, w, ys, heights, label_w)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}pt" height="{num(height)}pt" '
            f'viewBox="0 0 {num(width)} {num(height)}" font-family="{FONT}">'
            f'<rect width="{num(width)}" height="{num(height)}" fill="#ffffff"/>' + "".join(parts) + "</svg>")


def _title(fig: Figure, width: float, parts: list[str]) -> float:
    """The figure's title (shrunk to fit the width) into parts; where the panels may start."""
    top = PAD
    if fig.title:
        tfs = size(fig.title.fontsize, 12.0)
        tfs = max(6.0, min(tfs, (width - 2 * PAD) / max(text_width(fig.title.text, 1.0), 1.0)))  # a long title fits
        parts.append(f'<text x="{num(width / 2)}" y="{num(top + tfs)}" font-size="{tfs:g}" text-anchor="middle">'
                     f"{escape(fig.title.text)}</text>")
        top += tfs * 1.6
    return top


def _fit_legend(fig: Figure, width: float, height: float, top: float) -> Legend | None:
    """The figure's legend with as many columns as make it fit beside (or under, loc 'lower') the panels; None
    without entries."""
    legend = fig.legend_box if fig.legend_box and fig.legend_box.entries else None
    loc = str(legend.loc) if legend else ""
    while legend and "lower" not in loc and _legend_size(legend)[1] > height - top - PAD:
        legend = replace(legend, ncols=int(legend.ncols) + 1)  # too tall for the figure: more columns
    while legend and "lower" in loc and int(legend.ncols) > 1 and _legend_size(legend)[0] > width - 2 * PAD:
        legend = replace(legend, ncols=int(legend.ncols) - 1)  # too wide: fewer columns, more rows
    return legend


def _rows(fig: Figure, height: float, top: float, bottom: float
          ) -> tuple[list[float], list[float], dict[int, Mapping], dict[int, list[tuple[float, str, bool]]]]:
    """Each row's top and height in what top and bottom leave of the height (by the height ratios), and the y mapping
    and ticks of each of its axes (twins too), by id."""
    rows = fig.rows
    gap = FS * 0.9 if fig.sharex else FS * 2.2
    avail = height - top - bottom - gap * (len(rows) - 1)
    total = sum(fig.height_ratios) or 1.0
    heights = [avail * r / total for r in fig.height_ratios]
    ys = [top + sum(heights[:i]) + gap * i for i in range(len(rows))]
    ymaps, yticks = {}, {}
    for row, y0, h in zip(rows, ys, heights, strict=True):
        for ax in (row, *row.twins):
            lo, hi = limits([ax], "y", ax.y)
            ymaps[id(ax)] = m = Mapping(ax.y.scale, lo, hi, y0 + h, y0)
            yticks[id(ax)] = ticks(m, ax.y, max(2, int(h / (FS * 2.6))))
    return ys, heights, ymaps, yticks


def _axis_labels(rows: list[Axes], x0: float, w: float, ys: list[float], heights: list[float],
                 label_w: dict[int, float]) -> list[str]:
    """The rows' y labels (a twin's on the right) and the bottom row's x label."""
    parts = []
    ylabel_x = PAD + FS * 0.8
    for row, y0, h in zip(rows, ys, heights, strict=True):
        if row.y.label:
            parts.append(_vtext(row.y.label, ylabel_x, y0 + h / 2))
        for t in row.twins:
            if t.y.label:
                parts.append(_vtext(t.y.label, x0 + w + label_w[id(t)] + 5 + FS * 1.1, y0 + h / 2))
    if rows and rows[-1].x.label:
        parts.append(f'<text x="{num(x0 + w / 2)}" y="{num(ys[-1] + heights[-1] + FS * 2.6)}" font-size="{FS:g}" '
                     f'text-anchor="middle">{escape(rows[-1].x.label)}</text>')
    return parts


def _vtext(text: str, x: float, y: float) -> str:
    return (f'<text transform="translate({num(x)} {num(y)}) rotate(-90)" font-size="{FS:g}" text-anchor="middle">'
            f"{escape(text)}</text>")


def _panel(p: Panel, xm: Mapping, xt: list[tuple[float, str, bool]], show_x: bool,
           ymaps: dict[int, Mapping], yticks: dict[int, list[tuple[float, str, bool]]], cid: str) -> str:
    """One row: grid, artists (clipped to the panel), frame, ticks and their labels, an axes legend."""
    out = [f'<clipPath id="{escape(cid)}"><rect x="{num(p.x0)}" y="{num(p.y0)}" width="{num(p.w)}" '
           f'height="{num(p.h)}"/></clipPath>']
    ym = ymaps[id(p.ax)]
    g = p.ax.grid_style
    if g is not None:
        alpha, which, axis = g.alpha, g.which, g.axis
        lines = []
        if axis in ("both", "x"):
            lines += [f"M{num(xm(v))} {num(p.y0)}V{num(p.y0 + p.h)}" for v, _, major in xt
                      if major or which == "both"]
        if axis in ("both", "y"):
            lines += [f"M{num(p.x0)} {num(ym(v))}H{num(p.x0 + p.w)}" for v, _, major in yticks[id(p.ax)]
                      if major or which == "both"]
        if lines:
            out.append(f'<path d="{"".join(lines)}" stroke="#b0b0b0" stroke-width="0.8" '
                       f'stroke-opacity="{alpha:g}" fill="none"/>')
    body, notes = [], []  # notes: annotations, drawn only where the point they name is inside (as matplotlib)
    for ax in (p.ax, *p.ax.twins):
        m = ymaps[id(ax)]
        order = sorted(enumerate(ax.artists), key=lambda e: (_zorder(e[1]), e[0]))
        body += [artist_svg(a, xm, m, p.x0, p.y0, p.w, p.h) for _, a in order if a.kind != "annotate"]
        notes += [artist_svg(a, xm, m, p.x0, p.y0, p.w, p.h) for a in ax.artists if a.kind == "annotate"
                  and p.x0 <= xm(float(a.args[1][0])) <= p.x0 + p.w and p.y0 <= m(float(a.args[1][1])) <= p.y0 + p.h]
    out.append(f'<g clip-path="url(#{escape(cid)})">{"".join(body)}</g>' + "".join(notes))  # a note may overhang
    out.append(f'<rect x="{num(p.x0)}" y="{num(p.y0)}" width="{num(p.w)}" height="{num(p.h)}" fill="none" '
               'stroke="#000000" stroke-width="0.8"/>')
    marks, labels = [], []
    for v, text, major in yticks[id(p.ax)]:
        y, length = ym(v), 3.5 if major else 2.0
        marks.append(f"M{num(p.x0)} {num(y)}h{-length}")
        if text:
            labels.append(f'<text x="{num(p.x0 - 5)}" y="{num(y + FS * 0.35)}" text-anchor="end">{escape(text)}'
                          "</text>")
    for twin in p.ax.twins:
        tm = ymaps[id(twin)]
        for v, text, major in yticks[id(twin)]:
            y = tm(v)
            marks.append(f"M{num(p.x0 + p.w)} {num(y)}h{3.5 if major else 2.0}")
            if text:
                labels.append(f'<text x="{num(p.x0 + p.w + 5)}" y="{num(y + FS * 0.35)}">{escape(text)}</text>')
    for v, text, major in xt:
        x = xm(v)
        marks.append(f"M{num(x)} {num(p.y0 + p.h)}v{3.5 if major else 2.0}")
        if show_x and text:
            labels.append(f'<text x="{num(x)}" y="{num(p.y0 + p.h + 5 + FS * 0.9)}" text-anchor="middle">'
                          f"{escape(text)}</text>")
    out.append(f'<path d="{"".join(marks)}" stroke="#000000" stroke-width="0.8"/>')
    out.append(f'<g font-size="{FS:g}">{"".join(labels)}</g>')
    if p.ax.legend_box and p.ax.legend_box.entries:
        out.append(_axes_legend(p, xm, ym, p.ax.legend_box))
    return "".join(out)


def _zorder(a: Artist) -> float:
    """Its zorder as given, else matplotlib's default: patches and collections under lines."""
    if a.style.zorder is not None:
        return a.style.zorder
    return 1.0 if a.kind in ("axvspan", "fill_between", "bar", "scatter") else 2.0


def _axes_legend(p: Panel, xm: Mapping, ym: Mapping, lg: Legend) -> str:
    """An axes legend in the corner that covers the fewest data points (matplotlib's 'best', roughly)."""
    lw, lh, _ = _legend_size(lg)
    pts = [(xm(x), ym(y)) for a in p.ax.artists if a.kind in ("plot", "scatter", "step", "errorbar")
           for x, y in zip(finite(a.args[0]), finite(a.args[1]), strict=False)]
    corners = [(p.x0 + p.w - lw - 4, p.y0 + 4), (p.x0 + 4, p.y0 + 4), (p.x0 + 4, p.y0 + p.h - lh - 4),
               (p.x0 + p.w - lw - 4, p.y0 + p.h - lh - 4)]
    best = min(corners, key=lambda c: sum(c[0] <= x <= c[0] + lw and c[1] <= y <= c[1] + lh for x, y in pts))
    return _legend(lg, *best)


def _legend(lg: Legend, x: float, y: float) -> str:
    """A legend box at (x, y): per entry its glyph (line, marker or patch) and its label."""
    lw, lh, fs = _legend_size(lg)
    cols = max(1, int(lg.ncols))
    entries = lg.entries
    rows = math.ceil(len(entries) / cols)
    col_w = (lw - fs * 0.6) / cols
    out = [f'<rect x="{num(x)}" y="{num(y)}" width="{num(lw)}" height="{num(lh)}" rx="2" fill="#ffffff" '
           'fill-opacity="0.8" stroke="#cccccc" stroke-width="0.8"/>']
    for k, (artist, label) in enumerate(entries):
        col, row = divmod(k, rows) if cols > 1 else (0, k)
        ex, ey = x + fs * 0.3 + col * col_w, y + fs * 0.25 + row * fs * 1.35 + fs * 0.67
        out.append(legend_glyph(artist, ex, ey, fs))
        out.append(f'<text x="{num(ex + 2.4 * fs)}" y="{num(ey + fs * 0.35)}" font-size="{fs:g}">{escape(label)}'
                   "</text>")
    return '<g class="legend">' + "".join(out) + "</g>"
