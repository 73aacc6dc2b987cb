"""How each recorded drawing call (canvas.Artist) looks in SVG: matplotlib's format strings, line styles, markers and
colours, and the same artist's glyph in a legend."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from zeroloss.report.canvas import Artist, Style

CYCLE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
LETTERS = {"b": "#0000ff", "g": "#008000", "r": "#ff0000", "c": "#00bfbf", "m": "#bf00bf", "y": "#bfbf00",
           "k": "#000000", "w": "#ffffff"}
MARKERS = set(".o^vsDX*+x")
ANNOTATE_SIZES = {"x-small": 6.94, "small": 8.33}  # an annotation's font size by name, pt (else 10)
DASHES = {"--": (3.7, 1.6), "-.": (6.4, 1.6, 1.0, 1.6), ":": (1.0, 1.65)}  # matplotlib's, times the line width
Map = Callable[[float], float]


def num(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


def color(value: Any, default: str = CYCLE[0]) -> str:
    """A matplotlib colour (a hex string, a letter, 'none', C0..C9) as SVG."""
    if value is None:
        return default
    text = str(value)
    if text in LETTERS:
        return LETTERS[text]
    if len(text) == 2 and text[0] == "C" and text[1].isdigit():
        return CYCLE[int(text[1])]
    return escape(text)


def style(a: Artist) -> tuple[str, str | None, Any]:
    """(colour, marker, linestyle) of a line-like artist, from its format string and keywords."""
    fmt = str(a.args[2]) if a.kind == "plot" and len(a.args) > 2 else ""
    letter = next((c for c in fmt if c in LETTERS), None)
    marker = next((c for c in fmt if c in MARKERS and c != "-"), None)
    ls = next((s for s in ("--", "-.", "-", ":") if s in fmt.replace(letter or "", "")), None)
    if ls is None:
        ls = "none" if (marker or fmt.strip() == "" and fmt) else "-"
    if fmt == " ":
        ls, marker = "none", None
    st = a.style
    ls = ls if st.linestyle is None else st.linestyle
    marker = marker if st.marker is None else st.marker
    own = [b for b in a.axes.artists if b.kind == "plot" and b.style.color is None]
    nth = next((i for i, b in enumerate(own) if b is a), 0)  # the colour cycle: one step per line without a colour
    col = color(LETTERS.get(letter or "", None) if st.color is None else st.color, CYCLE[nth % len(CYCLE)])
    return col, marker, ls


def dash(ls: Any, lw: float) -> str:
    """The stroke-dasharray attribute of a matplotlib line style ('' for solid)."""
    if isinstance(ls, tuple):
        pattern: Sequence[float] = ls[1]
    elif ls in DASHES:
        pattern = DASHES[ls]
    else:
        return ""
    return f' stroke-dasharray="{",".join(num(v * lw) for v in pattern)}"'


def marker_path(marker: str, x: float, y: float, d: float) -> str:
    """A marker of diameter d (pt) centred on (x, y) as path data."""
    r = d / 2
    if marker in "o.":
        r = r / 2 if marker == "." else r
        return f"M{num(x - r)} {num(y)}a{num(r)} {num(r)} 0 1 0 {num(2 * r)} 0a{num(r)} {num(r)} 0 1 0 {num(-2 * r)} 0Z"
    if marker == "^":
        return f"M{num(x)} {num(y - r)}L{num(x + r)} {num(y + r)}L{num(x - r)} {num(y + r)}Z"
    if marker == "v":
        return f"M{num(x)} {num(y + r)}L{num(x + r)} {num(y - r)}L{num(x - r)} {num(y - r)}Z"
    if marker == "s":
        s = r * 0.8
        return f"M{num(x - s)} {num(y - s)}h{num(2 * s)}v{num(2 * s)}h{num(-2 * s)}Z"
    if marker == "D":
        s = r * 0.8
        return f"M{num(x)} {num(y - s)}L{num(x + s)} {num(y)}L{num(x)} {num(y + s)}L{num(x - s)} {num(y)}Z"
    if marker == "*":
        pts = [(x + (r if k % 2 == 0 else r * 0.4) * math.sin(k * math.pi / 5),
                y - (r if k % 2 == 0 else r * 0.4) * math.cos(k * math.pi / 5)) for k in range(10)]
        return "M" + "L".join(f"{num(px)} {num(py)}" for px, py in pts) + "Z"
    if marker in "X+x":  # a filled X (its arms a third of its size wide)
        t = r / 3
        arm = [(t, 0), (r, r - t), (r - t, r), (0, t)]
        pts = [(sx * u, sy * v) for sx, sy, k in ((1, -1, 0), (1, 1, 1), (-1, 1, 2), (-1, -1, 3))
               for u, v in (arm if k % 2 == 0 else [(q, p) for p, q in arm])]
        pts = [(-py, px) for px, py in pts] if marker == "+" else pts
        return "M" + "L".join(f"{num(x + px)} {num(y + py)}" for px, py in pts) + "Z"
    return ""


def _markers(marker: str | None, pts: list[tuple[float, float]], d: float, face: str, edge: str,
             edge_w: float = 0.8, alpha: float = 1.0) -> str:
    if not marker or marker in ("none", "", " ") or not pts:
        return ""
    path = "".join(marker_path(marker, x, y, d) for x, y in pts)
    op = f' opacity="{alpha:g}"' if alpha < 1 else ""
    return f'<path d="{path}" fill="{face}" stroke="{edge}" stroke-width="{edge_w:g}"{op}/>'


def _path(pts: Sequence[tuple[float, float]]) -> str:
    """Points as path data, broken where a value is not finite."""
    out, pen, last = [], False, (math.inf, math.inf)
    for k, (x, y) in enumerate(pts):
        if not (math.isfinite(x) and math.isfinite(y)):
            pen = False
            continue
        if pen and abs(x - last[0]) < 0.25 and abs(y - last[1]) < 0.25 and k + 1 < len(pts):
            continue  # under a quarter point from the last one drawn: invisible, only bytes
        out.append(f"{'L' if pen else 'M'}{num(x)} {num(y)}")
        pen, last = True, (x, y)
    return "".join(out)


def _stroke(d: str, col: str, lw: float, ls: Any, alpha: float = 1.0) -> str:
    if not d or ls in ("none", "None", "", " "):
        return ""
    op = f' stroke-opacity="{alpha:g}"' if alpha < 1 else ""
    return (f'<path d="{d}" fill="none" stroke="{col}" stroke-width="{lw:g}"{dash(ls, lw)}{op} '
            'stroke-linejoin="round"/>')


def _xy(a: Artist, xm: Map, ym: Map) -> list[tuple[float, float]]:
    return [(xm(float(x)), ym(float(y))) for x, y in zip(a.args[0], a.args[1], strict=False)]


def _steps(xs: Sequence[float], ys: Sequence[float], xm: Map, ym: Map) -> str:
    """A post-step line: each y holds from its x to the next x. Steps under 0.1 pt up or 0.25 pt across are
    merged into their neighbours: invisible, only bytes (a CCDF has a step per histogram bucket)."""
    if not len(xs) or not len(ys):
        return ""
    x_at, y_at = xm(xs[0]), ym(ys[0])
    d = [f"M{num(x_at)} {num(y_at)}"]
    for i in range(len(ys)):
        y = ym(ys[i])
        if i and abs(y - y_at) >= 0.1:
            d.append(f"V{num(y)}")
            y_at = y
        if i + 1 < len(xs):
            x = xm(xs[i + 1])
            if abs(x - x_at) >= 0.25 or i + 2 >= len(xs):
                if d[-1][0] == "H":
                    d[-1] = f"H{num(x)}"  # level since the last step: one longer run
                else:
                    d.append(f"H{num(x)}")
                x_at = x
    return "".join(d)


def _scatter_colors(st: Style) -> tuple[str, str, float]:
    """(face, edge, edge width) of scatter markers."""
    face = color(st.color if st.facecolors is None else st.facecolors, CYCLE[0])
    edge = st.edgecolors
    if edge == "none":
        return face, "none", 0.0
    return face, face if edge in (None, "face") else color(edge), 0.8


def artist_svg(a: Artist, xm: Map, ym: Map, x0: float, y0: float, w: float, h: float) -> str:
    """One artist in page coordinates (x0, y0, w, h: its panel)."""
    st, k = a.style, a.kind
    alpha = float(st.alpha)
    if k in ("plot", "step"):
        col, marker, ls = style(a)
        pts = _xy(a, xm, ym)
        d = _steps(a.args[0], a.args[1], xm, ym) if k == "step" else _path(pts)
        face = col if st.markerfacecolor is None else st.markerfacecolor
        return (_stroke(d, col, float(st.linewidth), ls, alpha)
                + _markers(marker, pts, float(st.markersize), color(face), col, 1.0, alpha))
    if k == "scatter":
        face, edge, edge_w = _scatter_colors(st)
        size = math.sqrt(float((a.args[2] if len(a.args) > 2 else 36.0) if st.s is None else st.s))
        return _markers(_marker(st), _xy(a, xm, ym), size, face, edge, edge_w, alpha)
    if k == "stairs":
        vals, edges = a.args[0], a.args[1]
        col = color(st.color, CYCLE[0])
        return _stroke(_steps(edges, [*vals, vals[-1] if vals else 0], xm, ym), col,
                       float(st.linewidth), _linestyle(st), alpha)
    if k == "bar":
        return _bars(a, xm, ym, alpha)
    if k == "errorbar":
        col = color(st.color, CYCLE[0])
        pts = _xy(a, xm, ym)
        cap = float(st.capsize)
        errs = "".join(f"M{num(x)} {num(ym(float(v) - e))}V{num(ym(float(v) + e))}"
                       + (f"M{num(x - cap)} {num(ym(float(v) - e))}h{num(2 * cap)}M{num(x - cap)} "
                          f"{num(ym(float(v) + e))}h{num(2 * cap)}" if cap else "")
                       for (x, _), v, e in zip(pts, a.args[1], st.yerr or [], strict=False))
        return _stroke(_path(pts), col, 1.5, "-", alpha) + _stroke(errs, col, 1.0, "-", alpha)
    if k in ("axhline", "axvline"):
        col = color(st.color, CYCLE[0])
        v = float(a.args[0])
        d = f"M{num(x0)} {num(ym(v))}H{num(x0 + w)}" if k == "axhline" else f"M{num(xm(v))} {num(y0)}V{num(y0 + h)}"
        return _stroke(d, col, float(st.linewidth), _linestyle(st), alpha)
    if k == "axvspan":
        xa, xb = sorted((xm(float(a.args[0])), xm(float(a.args[1]))))
        return (f'<rect x="{num(xa)}" y="{num(y0)}" width="{num(max(xb - xa, 0.5))}" height="{num(h)}" '
                f'fill="{color(st.color)}" fill-opacity="{alpha:g}"/>')
    if k == "fill_between":
        return _fill(a, xm, ym, alpha)
    if k == "annotate":
        text, (x, y) = str(a.args[0]), a.args[1]
        dx, dy = st.xytext
        fs = ANNOTATE_SIZES.get(str(st.fontsize), 10.0)
        base = fs * 0.8 if st.va == "top" else 0.0
        return (f'<text x="{num(xm(float(x)) + dx)}" y="{num(ym(float(y)) - dy + base)}" font-size="{fs:g}">'
                f"{escape(text)}</text>")
    return ""


def _marker(st: Style) -> str:
    """A scatter's (or its legend entry's) marker: matplotlib's default is a circle."""
    return str("o" if st.marker is None else st.marker)


def _linestyle(st: Style) -> Any:
    return "-" if st.linestyle is None else st.linestyle


def _bars(a: Artist, xm: Map, ym: Map, alpha: float) -> str:
    xs, heights = a.args[0], a.args[1]
    st = a.style
    width = float((a.args[2] if len(a.args) > 2 else 0.8) if st.width is None else st.width)
    col = color(st.color, CYCLE[0])
    op = f' fill-opacity="{alpha:g}"' if alpha < 1 else ""
    out = []
    for x, hgt in zip(xs, heights, strict=False):
        xa, xb = xm(x - width / 2), xm(x + width / 2)
        ya, yb = sorted((ym(0.0), ym(float(hgt))))
        out.append(f'<rect class="bar" x="{num(xa)}" y="{num(ya)}" width="{num(xb - xa)}" height="{num(yb - ya)}" '
                   f'fill="{col}"{op}/>')
    yerr = st.yerr
    if yerr:
        cap = float(st.capsize)
        ecol = color(st.ecolor, "#000000")
        d = "".join(f"M{num(xm(x))} {num(ym(hgt - e))}V{num(ym(hgt + e))}"
                    + (f"M{num(xm(x) - cap)} {num(ym(hgt + e))}h{num(2 * cap)}" if cap else "")
                    for x, hgt, e in zip(xs, heights, yerr, strict=False) if e)
        out.append(_stroke(d, ecol, 1.0, "-"))
    return "".join(out)


def _fill(a: Artist, xm: Map, ym: Map, alpha: float) -> str:
    """fill_between: with step='post' each interval i (x[i]..x[i+1]) is filled between y1[i] and y2[i] where
    where[i] holds; otherwise the polygon through the points of each run of where."""
    xs, y1, y2 = list(a.args[0]), list(a.args[1]), list(a.args[2])
    where = a.style.where or [True] * len(xs)
    col = color(a.style.color, CYCLE[0])
    d = []
    if a.style.step == "post":
        for i in range(len(xs) - 1):
            if where[i]:
                xa, xb = xm(xs[i]), xm(xs[i + 1])
                d.append(f"M{num(xa)} {num(ym(y1[i]))}H{num(xb)}V{num(ym(y2[i]))}H{num(xa)}Z")
    else:
        run: list[int] = []
        for i in range(len(xs) + 1):
            if i < len(xs) and where[i]:
                run.append(i)
                continue
            if len(run) > 1:
                top = [(xm(xs[j]), ym(y1[j])) for j in run]
                low = [(xm(xs[j]), ym(y2[j])) for j in reversed(run)]
                d.append(_path(top + low) + "Z")
            run = []
    if not d:
        return ""
    return f'<path d="{"".join(d)}" fill="{col}" fill-opacity="{alpha:g}" stroke="none"/>'


def legend_glyph(a: Artist, x: float, y: float, fs: float) -> str:
    """An artist's sample in a legend entry: its line (and marker) over 2 em, its marker, or a patch."""
    st = a.style
    alpha = float(st.alpha)
    if a.kind in ("bar", "axvspan", "fill_between"):
        return (f'<rect x="{num(x)}" y="{num(y - fs * 0.35)}" width="{num(2 * fs)}" height="{num(fs * 0.7)}" '
                f'fill="{color(st.color)}" fill-opacity="{alpha:g}"/>')
    if a.kind == "scatter":
        face, edge, edge_w = _scatter_colors(st)
        return _markers(_marker(st), [(x + fs, y)], min(math.sqrt(float(36 if st.s is None else st.s)), fs),
                        face, edge, edge_w)
    if a.kind in ("plot", "step"):
        col, marker, ls = style(a)
        face = color(col if st.markerfacecolor is None else st.markerfacecolor)
        return (_stroke(f"M{num(x)} {num(y)}h{num(2 * fs)}", col, float(st.linewidth), ls, alpha)
                + _markers(marker, [(x + fs, y)], min(float(st.markersize), fs), face, col))
    col = color(st.color, CYCLE[0])
    return _stroke(f"M{num(x)} {num(y)}h{num(2 * fs)}", col, float(st.linewidth), _linestyle(st), alpha)
