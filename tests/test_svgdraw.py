"""The report's own SVG drawing (report/canvas.py, svgdraw.py, svgmarks.py): a figure is well-formed SVG whose marks
sit where the data says, log and symlog axes get the ticks a reader expects, and the same recorded figure replays
on matplotlib for PNG."""

import io
import xml.etree.ElementTree as ET

import pytest

from zeroloss.report import svgdraw
from zeroloss.report.canvas import AxisState, Figure, Scale, replay

NS = {"s": "http://www.w3.org/2000/svg"}


def _tree(fig: Figure) -> ET.Element:
    return ET.fromstring(svgdraw.render(fig, "t"))


def _two_panels() -> Figure:
    fig = Figure(figsize=(9, 3.6))
    top, low = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    top.plot([1, 2, 3], [10, 20, 30], "-", marker="o", color="#123456", label="offered")
    top.axhline(25, color="#1f77b4", linestyle="--", label="NDR")
    top.scatter([2], [20], s=90, marker="X", color="#d62728", label="fail")
    low.set_yscale("symlog", linthresh=1e-4)
    low.scatter([1, 2, 3], [0.0, 0.5, 0.0], marker="o")
    low.set_xlabel("trial")
    top.set_ylabel("offered, Mpps")
    fig.legend(*top.get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
    fig.suptitle("64 B, search 1")
    return fig


def test_a_figure_is_well_formed_svg_with_its_text():
    root = _tree(_two_panels())
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "64 B, search 1" in texts and "trial" in texts and "offered, Mpps" in texts
    assert {"offered", "NDR", "fail"} <= set(texts)  # the legend's labels
    assert len(root.findall(".//s:clipPath", NS)) == 2  # one per panel, ids salted
    ids = [c.get("id") for c in root.findall(".//s:clipPath", NS)]
    assert len(set(ids)) == 2 and all(i.startswith("t-") for i in ids)


def test_marks_sit_where_the_data_says():
    """A line's points at x = 1..3 run left to right and, y growing, upward on the page; the axhline at 25 lies
    between the points at 20 and 30."""
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([1, 2, 3], [10, 20, 30], color="#123456")
    ax.axhline(25, color="#abcdef")
    root = _tree(fig)
    line = next(p for p in root.iter("{http://www.w3.org/2000/svg}path") if p.get("stroke") == "#123456")
    pts = [tuple(map(float, seg.split())) for seg in line.get("d", "").replace("M", "").split("L")]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    assert xs == sorted(xs) and ys == sorted(ys, reverse=True)
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)  # linear
    hline = next(p for p in root.iter("{http://www.w3.org/2000/svg}path") if p.get("stroke") == "#abcdef")
    y25 = float(hline.get("d", "").split()[1].split("H")[0])
    assert ys[2] < y25 < ys[1]


def test_bars_one_rect_each_from_zero():
    fig = Figure()
    ax = fig.add_subplot()
    ax.bar([0, 1, 2], [1.0, 2.0, 4.0], 0.4, color="#1f77b4", yerr=[0.1, 0.2, 0.0], capsize=2)
    bars = [r for r in _tree(fig).iter("{http://www.w3.org/2000/svg}rect") if r.get("class") == "bar"]
    heights = [float(r.get("height", 0)) for r in bars]
    bottoms = {round(float(r.get("y", 0)) + float(r.get("height", 0)), 1) for r in bars}
    assert len(bars) == 3 and len(bottoms) == 1  # all stand on 0
    assert heights[1:] == pytest.approx([2 * heights[0], 4 * heights[0]], rel=0.01)


def _labels(scale: Scale, lo: float, hi: float, n: int = 6) -> list[str]:
    m = svgdraw.Mapping(scale, lo, hi, 100.0, 0.0)
    return [t for _, t, major in svgdraw.ticks(m, AxisState(scale=scale), n) if major]


def test_ticks_of_linear_log_and_symlog_axes():
    assert _labels(Scale(), 0, 1.05) == ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    assert _labels(Scale(), 0, 250_000) == ["0", "50000", "100000", "150000", "200000", "250000"]
    assert _labels(Scale("log"), 0.8, 2000) == ["1", "10", "100", "1000"]
    assert _labels(Scale("log"), 1e-7, 1.2, n=4) == ["1e-06", "0.001", "1"]  # 9 decades, 4 labels: every third
    assert _labels(Scale("symlog", 1e-4), 0, 1.0, n=3) == ["0", "0.0001", "0.01", "1"]
    assert _labels(Scale("symlog", 10), 0, 50_000, n=8) == ["0", "10", "100", "1000", "10000"]


def test_a_log_axis_spanning_under_two_decades_labels_its_twos_and_fives():
    m = svgdraw.Mapping(Scale("log"), 3, 40, 100.0, 0.0)
    labelled = [t for _, t, _ in svgdraw.ticks(m, AxisState(scale=Scale("log")), 6) if t]
    assert labelled == ["10", "5", "20"]


def test_an_over_tall_figure_legend_takes_more_columns():
    fig = Figure(figsize=(9, 2))
    ax = fig.add_subplot()
    for k in range(40):
        ax.plot([0, 1], [k, k + 1], label=f"series {k}")
    fig.legend(loc="outside right upper", fontsize="small")
    root = _tree(fig)
    legend = next(g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "legend")
    box = legend.find("s:rect", NS)
    assert box is not None and float(box.get("height", 0)) <= 2 * 72
    assert sum(1 for t in legend.iter("{http://www.w3.org/2000/svg}text")) == 40


def test_the_same_figure_replays_on_matplotlib_for_png():
    real = replay(_two_panels())
    assert len(real.axes) == 2
    assert [ln.get_label() for ln in real.axes[0].lines] == ["offered", "NDR"]
    assert real.axes[1].get_yscale() == "symlog" and real.get_suptitle() == "64 B, search 1"
    buf = io.BytesIO()
    real.savefig(buf, format="png", dpi=40)
    assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
