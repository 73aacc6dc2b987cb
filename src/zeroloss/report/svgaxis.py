"""An axis of a canvas.Figure on the page (svgdraw.py): its scale's mapping (linear, log, symlog), the view limits
from the data the artists span, and the ticks with their labels."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from zeroloss.report.canvas import Artist, Axes, AxisState, Scale


@dataclass
class Mapping:
    """One axis's data range and its scale on the page: value -> position."""
    scale: Scale
    lo: float
    hi: float
    start: float  # page position of lo
    end: float  # page position of hi

    def __post_init__(self) -> None:
        self._t0 = self.t(self.lo)
        self._k = (self.end - self.start) / ((self.t(self.hi) - self._t0) or 1.0)

    def t(self, v: float) -> float:
        if self.scale.name == "log":
            return math.log10(v) if v > 0 else -1e9
        if self.scale.name == "symlog":
            a = abs(v) / self.scale.linthresh
            return math.copysign(a if a <= 1 else 1 + math.log10(a), v)
        return v

    def __call__(self, v: float) -> float:
        p = self.start + (self.t(v) - self._t0) * self._k
        return -1e5 if p < -1e5 else (1e5 if p > 1e5 else p)

    def inverse(self, t: float) -> float:
        if self.scale.name == "log":
            return float(10 ** t)
        if self.scale.name == "symlog":
            a = abs(t)
            return math.copysign((a if a <= 1 else 10 ** (a - 1)) * self.scale.linthresh, t)
        return t


def finite(vals: Iterable[Any]) -> list[float]:
    """The values that are finite numbers, as floats (the others left out)."""
    out = []
    for v in vals:
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return out


def extent(a: Artist, axis: str) -> tuple[list[float], bool]:
    """The data an artist spans on axis x or y, and whether it sticks to 0 there (bars and stairs: no margin)."""
    k, args = a.kind, a.args
    if k in ("plot", "scatter", "step"):
        return finite(args[0] if axis == "x" else args[1]), False
    if k == "stairs":
        return (finite(args[1]), False) if axis == "x" else (finite([*args[0], 0.0]), True)
    if k == "bar":
        w = float((args[2] if len(args) > 2 else 0.8) if a.style.width is None else a.style.width)
        if axis == "x":
            return finite(x + s * w / 2 for x in args[0] for s in (-1, 1)), False
        err = a.style.yerr or [0.0] * len(args[1])
        return finite([0.0, *(h + e for h, e in zip(args[1], err, strict=False))]), True
    if k == "errorbar":
        if axis == "x":
            return finite(args[0]), False
        err = a.style.yerr or [0.0] * len(args[1])
        return finite(y + s * e for y, e in zip(args[1], err, strict=False) for s in (-1, 1)), False
    if k == "axhline":
        return (finite(args[:1]), False) if axis == "y" else ([], False)
    if k in ("axvline", "axvspan"):
        return (finite(args[:2]), False) if axis == "x" else ([], False)
    if k == "fill_between":
        return (finite(args[0]), False) if axis == "x" else (finite([*args[1], *args[2]]), False)
    return [], False


def limits(axes: list[Axes], axis: str, state: AxisState) -> tuple[float, float]:
    """An axis's view limits: what was set, else the data with 5 % margins (in the scale's own terms)."""
    vals, sticky = [], False
    for ax in axes:
        for a in ax.artists:
            v, s = extent(a, axis)
            vals += v
            sticky = sticky or (s and bool(v))
    scale = state.scale
    if scale.name == "log":
        vals = [v for v in vals if v > 0]
    lo_set, hi_set = state.lim
    if not vals:
        vals = [1.0, 10.0] if scale.name == "log" else [0.0, 1.0]
    m = Mapping(scale, 0.0, 1.0, 0.0, 1.0)
    t0, t1 = m.t(min(vals)), m.t(max(vals))
    if t0 == t1:
        t0, t1 = t0 - 0.5, t1 + 0.5
    span = t1 - t0
    lo = m.inverse(t0 - 0.05 * span) if not (sticky and min(vals) == 0) else 0.0
    hi = m.inverse(t1 + 0.05 * span)
    lo = lo_set if lo_set is not None else lo
    hi = hi_set if hi_set is not None else hi
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    return lo, hi


def _nice(span: float, n: int) -> float:
    raw = span / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), 10 * mag)


def _decimals(step: float) -> int:
    return next((d for d in range(7) if abs(round(step * 10 ** d) - step * 10 ** d) < 1e-6), 6)


def default_text(v: float, scale: str, step: float = 1.0) -> str:
    if scale == "linear":
        text = f"{v:.{_decimals(step)}f}" if step < 1 else f"{v:.0f}"
        return text.lstrip("-") if float(text) == 0 else text  # no "-0.0"
    return f"{v:g}"


def ticks(m: Mapping, state: AxisState, n: int) -> list[tuple[float, str, bool]]:
    """(value, label, major) of an axis's ticks within its limits; about n labelled ones."""
    lo, hi = min(m.lo, m.hi), max(m.lo, m.hi)

    def inside(v: float) -> bool:
        return lo - 1e-9 * (abs(lo) + 1) <= v <= hi + 1e-9 * (abs(hi) + 1)
    fmt = state.major
    if state.ticks is not None:
        pos, labels = state.ticks
        return [(p, labels[i] if labels else (fmt(p, None) if fmt else default_text(p, m.scale.name)), True)
                for i, p in enumerate(pos) if inside(p)]
    out: list[tuple[float, str, bool]] = []
    if m.scale.name == "linear":
        step = _nice(hi - lo, n)
        k = math.ceil(lo / step - 1e-9)
        while k * step <= hi + 1e-9 * step:
            v = k * step
            out.append((v, fmt(v, None) if fmt else default_text(v, "linear", step), True))
            k += 1
        return out
    if m.scale.name == "log":
        a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        every = max(1, math.ceil((b - a + 1) / max(n, 1)))
        majors = [10.0 ** k for k in range(a, b + 1) if k % every == 0 and inside(10.0 ** k)]
        out = [(v, fmt(v, None) if fmt else default_text(v, "log"), True) for v in majors]
        if every == 1:
            minor_fmt = state.minor or (None if len(majors) >= 2 else
                                        (lambda v, _p: default_text(v, "log") if f"{v:e}"[0] in "25" else ""))
            out += [(v, minor_fmt(v, None) if minor_fmt else "", False)
                    for k in range(a, b + 1) for d in range(2, 10) if inside(v := d * 10.0 ** k)]
        return out
    lt = m.scale.linthresh  # symlog: 0 and the decades from linthresh up, thinned to about n
    pos = [lt * 10.0 ** k for k in range(0, 40) if lt * 10.0 ** k <= max(abs(lo), abs(hi)) * (1 + 1e-9)]
    every = max(1, math.ceil((len(pos) + 1) / max(n, 1)))
    vals = [0.0, *pos[::every], *(-p for p in pos[::every])]
    return [(v, fmt(v, None) if fmt else default_text(v, "symlog"), True) for v in vals if inside(v)]
