"""The trend page (`history trend --html`, report/historypage.py) and the classification window (`--window`), on
SQLite and PostgreSQL, over synthetic histories made from a real run (helpers.synthetic_history)."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from zeroloss.cli.main import main
from zeroloss.history.db import open_db
from zeroloss.history.ingest import ingest
from zeroloss.history.text import trend_text
from zeroloss.history.trend import Filter, trends
from zeroloss.report.historypage import _xs, series_figure

from .helpers import synthetic_history


def _two_nodes(db_url: str, tmp_path: Path) -> None:
    """compute-3: 33 nights, 5 % lower from night-030 on; compute-4: 20 flat nights."""
    db = open_db(db_url)
    (tmp_path / "c3").mkdir()
    (tmp_path / "c4").mkdir()
    for f in synthetic_history(tmp_path / "c3", 33, 30, 0.05):
        ingest(db, f, "compute-3")
    for f in synthetic_history(tmp_path / "c4", 20, None, 0.0, seed=11):
        ingest(db, f, "compute-4")


def test_the_figure_draws_one_band_per_group_and_marks_the_change(db_url, tmp_path):
    _two_nodes(db_url, tmp_path)
    db = open_db(db_url)
    (step,) = trends(db, Filter(node="compute-3"))
    (flat,) = trends(db, Filter(node="compute-4"))
    assert len(step.groups) == 2 and len(flat.groups) == 1
    for t in (step, flat):
        fig = series_figure(t)
        (ax,) = fig.rows
        bands = [a for a in ax.artists if a.kind == "fill_between"]
        assert len(bands) == len(t.groups)
        for band, g in zip(bands, t.groups, strict=True):  # kpps: average ± standard deviation
            assert band.args[1][0] == (g.avg + g.stdev) / 1e3 and band.args[2][0] == (g.avg - g.stdev) / 1e3
        runs = next(a for a in ax.artists if a.kind == "plot" and a.args[2:] == ("o",))
        assert len(runs.args[0]) == len(t.samples)
        assert sum(1 for a in ax.artists if a.kind == "scatter") == 1  # the repeats
    (ax,) = series_figure(step).rows
    (mark,) = [a for a in ax.artists if a.kind == "axvline"]
    (note,) = [a for a in ax.artists if a.kind == "annotate"]
    xs, dated = _xs(step)
    assert dated and mark.args[0] == xs[30] == note.args[1][0]
    (change,) = step.changes()
    assert note.args[0] == f"{change.size_pct:+.2f} % at night-030" and -5.6 < change.size_pct < -4.4
    (ax,) = series_figure(flat).rows
    assert not [a for a in ax.artists if a.kind in ("axvline", "annotate")]


def test_the_page_names_each_series_per_node_and_the_check_it_fails(db_url, tmp_path, capsys):
    _two_nodes(db_url, tmp_path)
    out = tmp_path / "trend.html"
    assert main(["history", "trend", "--db", db_url, "--html", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out} (")
    page = unescape(out.read_text())
    assert page.count("<svg") == 2
    for t in trends(open_db(db_url)):
        assert f">{t.title}</h3>" in page
    assert "<h2>compute-3</h2>" in page and "<h2>compute-4</h2>" in page
    c3, c4 = page.split("<h2>compute-4</h2>")
    assert "regression -5." in c3 and "at night-030" in c3 and ">REGRESSION</td>" in c3
    assert ">ok</td>" in c4 and "REGRESSION" not in c4 and "at night-" not in c4
    assert len(re.findall(r"% at night-030</text>", c3)) == 1  # the mark in the figure
    # one node's page; the regression older than --last is no longer the check's
    assert main(["history", "trend", "--db", db_url, "--html", str(out), "--node", "compute-3", "--last", "2"]) == 0
    page = unescape(out.read_text())
    assert "<h2>compute-3</h2>" in page and "compute-4" not in page and ">REGRESSION</td>" not in page


def test_html_and_json_together_are_refused(db_url, tmp_path, capsys):
    _two_nodes(db_url, tmp_path)
    assert main(["history", "trend", "--db", db_url, "--html", str(tmp_path / "t.html"), "--json"]) == 1
    assert "--html and --json" in capsys.readouterr().err
    assert not (tmp_path / "t.html").exists()


def test_a_long_series_is_classified_over_its_newest_runs(db_url, tmp_path, capsys):
    db = open_db(db_url)
    for f in synthetic_history(tmp_path, 40, 37, 0.05):
        ingest(db, f)
    (t,) = trends(db, window=25)
    assert t.skipped == 15 and len(t.samples) == 25 and t.samples[0].label == "night-015"
    (change,) = t.changes()
    assert change.label == "night-037" and t.regression(3) is not None
    text = trend_text(t)
    assert "40 run(s), the newest 25 classified, 2 group(s)" in text and "runs 16-37" in text
    assert "runs 38-40" in text
    (whole,) = trends(db, window=None)
    assert whole.skipped == 0 and len(whole.samples) == 40 and whole.changes()[0].label == "night-037"
    assert main(["history", "trend", "--db", db_url, "--window", "0"]) == 0
    assert "40 run(s), 2 group(s)" in capsys.readouterr().out
    assert main(["history", "check", "--db", db_url, "--window", "10"]) == 2
    assert main(["history", "trend", "--db", db_url, "--window", "10", "--json"]) == 0
    assert '"older_runs_left_out": 30' in capsys.readouterr().out
