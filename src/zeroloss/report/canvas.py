"""A figure as a record of drawing calls, made with a subset of matplotlib's own Figure and Axes methods (same names,
same arguments): the report's figure functions draw into it once; svgdraw.py renders it as SVG in milliseconds and
replay() hands the very same calls to matplotlib for a PNG.

Why not matplotlib for the SVG: its text layout, constrained layout and mathtext took 0.45 s per figure on a 2-vCPU
host, 15 s for the 33 figures of a default run's report (issue 37 asks for 2 s); the figures are lines, markers,
bars and spans on linear, log or symlog axes, which need none of that machinery."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

Formatter = Callable[[float, Any], str]


@dataclass(frozen=True, kw_only=True)
class Style:
    """The keyword arguments of a drawing call that the SVG renderer reads (matplotlib's names and meanings), typed
    once when the call is recorded; the call keeps every keyword as given for replay(). None: not given (where
    matplotlib's default depends on the call; the renderer supplies it)."""
    label: Any = None
    color: Any = None
    linestyle: Any = None
    linewidth: float = 1.5
    marker: Any = None
    markersize: float = 6.0
    markerfacecolor: Any = None
    alpha: float = 1.0
    zorder: float | None = None
    s: float | None = None  # scatter: marker area, pt²
    facecolors: Any = None
    edgecolors: Any = None
    width: float | None = None  # bar
    yerr: Sequence[float] | None = None
    capsize: float = 0.0
    ecolor: Any = None
    where: Sequence[bool] | None = None  # fill_between
    step: str | None = None
    xytext: tuple[float, float] = (0.0, 0.0)  # annotate: offset in points
    fontsize: Any = None
    va: str | None = None

    @classmethod
    def of(cls, kw: dict[str, Any]) -> Style:
        """The keywords of a call the renderer reads (the others only matter to matplotlib)."""
        return cls(**{k: v for k, v in kw.items() if k in _STYLE_FIELDS})


_STYLE_FIELDS = frozenset(f.name for f in fields(Style))


@dataclass(frozen=True, kw_only=True)
class Legend:
    """A legend as asked for (Axes.legend or Figure.legend): its entries and the keywords the renderer reads."""
    entries: list[tuple[Artist, str]]
    loc: str = ""
    ncols: int = 1
    fontsize: Any = None

    @classmethod
    def of(cls, entries: list[tuple[Artist, str]], kw: dict[str, Any]) -> Legend:
        return cls(entries=entries, **{k: v for k, v in kw.items() if k in ("loc", "ncols", "fontsize")})


@dataclass(frozen=True, kw_only=True)
class Grid:
    """Axes.grid's keywords: its opacity, which ticks (major, both) and which axis (x, y, both)."""
    alpha: float = 1.0
    which: str = "major"
    axis: str = "both"


@dataclass(frozen=True)
class Title:
    """A figure's title: its text and font size (None: matplotlib's, 'large')."""
    text: str
    fontsize: Any = None


@dataclass(eq=False)
class Artist:
    """One drawing call on an axes: its matplotlib method, arguments and keyword arguments (and their typed view)."""
    kind: str
    args: tuple[Any, ...]
    kw: dict[str, Any]
    axes: Axes
    key: int
    style: Style = field(init=False)

    def __post_init__(self) -> None:
        self.style = Style.of(self.kw)

    @property
    def label(self) -> str | None:
        text = self.style.label
        return None if text is None or str(text).startswith("_") else str(text)


@dataclass
class Scale:
    """An axis's scale: linear, log or symlog (linear within ±linthresh, log beyond)."""
    name: str = "linear"
    linthresh: float = 1.0


@dataclass
class AxisState:
    """What was set on one axis of an axes (x or y)."""
    scale: Scale = field(default_factory=Scale)
    lim: list[float | None] = field(default_factory=lambda: [None, None])
    ticks: tuple[list[float], list[str] | None] | None = None
    label: str = ""
    major: Formatter | None = None
    minor: Formatter | None = None


class _AxisProxy:
    """ax.xaxis / ax.yaxis: only the formatter setters."""

    def __init__(self, ax: Axes, name: str) -> None:
        self._ax, self._name = ax, name

    def set_major_formatter(self, fn: Formatter) -> None:
        self._ax.axis(self._name).major = fn
        self._ax.fig.log_call(self._ax, f"{self._name}axis.set_major_formatter", (fn,), {})

    def set_minor_formatter(self, fn: Formatter) -> None:
        self._ax.axis(self._name).minor = fn
        self._ax.fig.log_call(self._ax, f"{self._name}axis.set_minor_formatter", (fn,), {})


# the drawing methods recorded as artists (each returns its Artist, a legend handle)
DRAWS = ("plot", "scatter", "step", "stairs", "bar", "errorbar", "axhline", "axvline", "axvspan", "fill_between",
         "annotate")


class Axes:
    """One panel: its artists in drawing order and its axis settings."""

    def __init__(self, fig: Figure, twin_of: Axes | None = None) -> None:
        self.fig, self.twin_of = fig, twin_of
        self.artists: list[Artist] = []
        self.x, self.y = AxisState(), AxisState()
        self.grid_style: Grid | None = None
        self.legend_box: Legend | None = None
        self.xaxis, self.yaxis = _AxisProxy(self, "x"), _AxisProxy(self, "y")
        self.twins: list[Axes] = []

    def axis(self, name: str) -> AxisState:
        return self.x if name == "x" else self.y

    def __getattr__(self, name: str) -> Callable[..., Artist]:
        if name not in DRAWS:
            raise AttributeError(name)

        def draw(*args: Any, **kw: Any) -> Artist:
            artist = Artist(name, args, kw, self, next(self.fig.keys))
            self.artists.append(artist)
            self.fig.log_call(self, name, args, kw, artist)
            return artist
        return draw

    def _set(self, name: str, *args: Any, **kw: Any) -> None:
        self.fig.log_call(self, name, args, kw)

    def twinx(self) -> Axes:
        twin = Axes(self.fig, twin_of=self)
        self.twins.append(twin)
        self.fig.log_call(self, "twinx", (), {}, twin)
        return twin

    def set_xscale(self, name: str, linthresh: float | None = None) -> None:
        self.x.scale = Scale(name, 1.0 if linthresh is None else linthresh)
        self._set("set_xscale", name, **({} if linthresh is None else {"linthresh": linthresh}))

    def set_yscale(self, name: str, linthresh: float | None = None) -> None:
        self.y.scale = Scale(name, 1.0 if linthresh is None else linthresh)
        self._set("set_yscale", name, **({} if linthresh is None else {"linthresh": linthresh}))

    def _lim(self, axis: AxisState, args: tuple[Any, ...], lo: float | None, hi: float | None) -> None:
        if args:
            lo, hi = (args[0] if len(args) > 0 else lo), (args[1] if len(args) > 1 else hi)
        if lo is not None:
            axis.lim[0] = float(lo)
        if hi is not None:
            axis.lim[1] = float(hi)

    def set_xlim(self, *args: float, left: float | None = None, right: float | None = None) -> None:
        self._lim(self.x, args, left, right)
        self._set("set_xlim", *args, **({"left": left} if left is not None else {}),
                  **({"right": right} if right is not None else {}))

    def set_ylim(self, *args: float, bottom: float | None = None, top: float | None = None) -> None:
        self._lim(self.y, args, bottom, top)
        self._set("set_ylim", *args, **({"bottom": bottom} if bottom is not None else {}),
                  **({"top": top} if top is not None else {}))

    def set_xticks(self, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
        self.x.ticks = ([float(t) for t in ticks], None if labels is None else [str(s) for s in labels])
        self._set("set_xticks", list(ticks), *(() if labels is None else (list(labels),)))

    def set_xlabel(self, text: str) -> None:
        self.x.label = text
        self._set("set_xlabel", text)

    def set_ylabel(self, text: str) -> None:
        self.y.label = text
        self._set("set_ylabel", text)

    def grid(self, **kw: Any) -> None:
        self.grid_style = Grid(**kw)
        self._set("grid", **kw)

    def legend(self, *args: Any, **kw: Any) -> None:
        self.legend_box = Legend.of(_entries(args, [self]), kw)
        self.fig.log_call(self, "legend", args, kw)

    def get_legend_handles_labels(self) -> tuple[list[Artist], list[str]]:
        pairs = [(a, a.label) for a in self.artists if a.label is not None and a.kind != "annotate"]
        return [a for a, _ in pairs], [lab for _, lab in pairs if lab is not None]

    def has_artists(self) -> bool:
        return bool(self.artists)


def _entries(args: tuple[Any, ...], axes: list[Axes]) -> list[tuple[Artist, str]]:
    """A legend's entries: (handles, labels) as given, or every labelled artist of the axes."""
    if len(args) >= 2:
        return list(zip(args[0], [str(s) for s in args[1]], strict=True))
    out: list[tuple[Artist, str]] = []
    for ax in axes:
        for a in ax.artists:
            if a.label is not None and a.kind != "annotate":
                out.append((a, a.label))
    return out


class Figure:
    """A figure: its size in inches, panels stacked in one column (with twins), a title and a figure legend."""

    def __init__(self, figsize: tuple[float, float] = (9, 4.2), layout: str | None = None) -> None:
        self.figsize, self.layout = figsize, layout
        self.rows: list[Axes] = []
        self.height_ratios: list[float] = []
        self.sharex = False
        self.title: Title | None = None
        self.legend_box: Legend | None = None
        self.log: list[tuple[Axes | None, str, tuple[Any, ...], dict[str, Any], Any]] = []
        self.keys = itertools.count()

    def log_call(self, target: Axes | None, name: str, args: tuple[Any, ...], kw: dict[str, Any],
                 result: Any = None) -> None:
        self.log.append((target, name, args, kw, result))

    def all_axes(self) -> list[Axes]:
        return [a for row in self.rows for a in (row, *row.twins)]

    def add_subplot(self) -> Axes:
        ax = Axes(self)
        self.rows, self.height_ratios = [ax], [1.0]
        self.log_call(None, "add_subplot", (), {}, ax)
        return ax

    def subplots(self, nrows: int, ncols: int = 1, sharex: bool = False,
                 height_ratios: Sequence[float] | None = None) -> list[Axes]:
        if ncols != 1:
            raise ValueError("canvas.Figure stacks panels in one column")
        axes = [Axes(self) for _ in range(nrows)]
        self.rows, self.sharex = axes, sharex
        self.height_ratios = [float(r) for r in height_ratios] if height_ratios else [1.0] * nrows
        kw: dict[str, Any] = ({"sharex": sharex, "height_ratios": list(height_ratios)} if height_ratios
                              else {"sharex": sharex})
        self.log_call(None, "subplots", (nrows, ncols), kw, axes)
        return axes

    def suptitle(self, text: str, fontsize: Any = None) -> None:
        self.title = Title(text, fontsize)
        self.log_call(None, "suptitle", (text,), {} if fontsize is None else {"fontsize": fontsize})

    def legend(self, *args: Any, **kw: Any) -> None:
        self.legend_box = Legend.of(_entries(args, self.all_axes()), kw)
        self.log_call(None, "legend", args, kw)


def replay(fig: Figure) -> Any:
    """The figure made again with matplotlib (constrained layout), call by call: for PNG output."""
    from matplotlib.figure import Figure as MplFigure

    out = MplFigure(figsize=fig.figsize, layout="constrained")
    made: dict[int, Any] = {}  # id of our Axes or Artist -> matplotlib's object

    def real(value: Any) -> Any:
        if isinstance(value, Artist):
            obj = made[id(value)]
            return obj[0] if isinstance(obj, list) else obj  # plot() returns a list of lines
        if isinstance(value, list):
            return [real(v) for v in value]
        return value

    for target, name, args, kw, result in fig.log:
        obj: Any = out if target is None else made[id(target)]
        for part in name.split("."):
            obj = getattr(obj, part)
        value = obj(*[real(a) for a in args], **kw)
        if isinstance(result, list):
            for mine, theirs in zip(result, list(value), strict=True):
                made[id(mine)] = theirs
        elif result is not None:
            made[id(result)] = value
    return out
