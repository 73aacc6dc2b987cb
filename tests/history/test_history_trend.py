"""Trends and the nightly check on SQLite and PostgreSQL, over a synthetic history made from a real run.

data/meter_pvp_v3.json.gz is a real result file of this bench (bench --noisy, 2026-11-28 22:37: pvp, 64 B, an
OVS meter at 30 kpps, three searches; its trials kept as summaries, its host's command line left out). Its three
NDRs give the level and the spread (sample standard deviation, 0.23 %); each synthetic run is that file with its
start time moved on and its three NDRs drawn from a normal distribution with that spread (a fixed seed).
"""

from __future__ import annotations

import random

from zeroloss.cli.main import main
from zeroloss.history.db import open_db
from zeroloss.history.ingest import ingest
from zeroloss.history.trend import Filter, classify, trends

from .helpers import REAL, read_doc, write_doc
from .helpers import real_level as _level
from .helpers import synthetic_history as _history


def test_the_real_spread_is_what_the_synthetic_runs_use():
    mean, sd = _level()
    assert 30000 < mean < 30200 and 0.001 < sd / mean < 0.005


def test_a_flat_series_has_one_group_and_passes_the_check(db_url, tmp_path, capsys):
    db = open_db(db_url)
    for f in _history(tmp_path, 30, None, 0.0):
        ingest(db, f)
    (t,) = trends(db, Filter(frame="64"))
    assert len(t.samples) == 30 and len(t.groups) == 1 and t.changes() == []
    assert t.regression(3) is None
    assert main(["history", "check", "--db", db_url]) == 0
    assert "no regression: 1 series" in capsys.readouterr().out


def test_a_5_pct_step_is_a_regression_from_the_run_that_started_it(db_url, tmp_path, capsys):
    db = open_db(db_url)
    files = _history(tmp_path, 33, 30, 0.05)
    for f in files:
        ingest(db, f)
    (t,) = trends(db)
    assert [(g.start, g.comment) for g in t.groups] == [(0, "normal"), (30, "regression")]
    (change,) = t.changes()
    assert change.label == "night-030" and -5.6 < change.size_pct < -4.4
    assert main(["history", "trend", "--db", db_url]) == 0
    out = capsys.readouterr().out
    assert "runs 31-33" in out and "regression -" in out and "at night-030 (2026-10-31 02:00 UTC)" in out
    assert main(["history", "check", "--db", db_url, "--last", "3"]) == 2
    assert "REGRESSION: 1 of 1 series" in capsys.readouterr().out
    # older than the window: the gate has passed on, the trend still shows it
    assert main(["history", "check", "--db", db_url, "--last", "2"]) == 0


def test_a_step_within_the_spread_is_not_a_regression():
    """A drop of a quarter of the spread (jumpavg's groups on the values alone): one group."""
    mean, sd = _level()
    rnd = random.Random(3)
    values = [[rnd.gauss(mean, sd) for _ in range(3)] for _ in range(30)]
    values += [[rnd.gauss(mean - sd / 4, sd) for _ in range(3)] for _ in range(3)]
    assert len(classify(values)) == 1


def test_a_change_names_the_versions_that_changed(db_url, tmp_path):
    db = open_db(db_url)
    files = _history(tmp_path, 12, 10, 0.05)
    for f in files[10:]:  # the new kernel came with the drop
        doc = read_doc(f)
        write_doc(f, {**doc, "host": {**doc["host"], "kernel": "6.19.0-new"}})
    for f in files:
        ingest(db, f)
    (t,) = trends(db)
    (change,) = t.changes()
    assert change.changed == {"kernel": (read_doc(REAL)["host"]["kernel"], "6.19.0-new")}


def test_a_check_whose_filter_matches_no_series_fails(db_url, tmp_path, capsys):
    """A misspelt node or size must not pass the nightly gate by checking nothing."""
    db = open_db(db_url)
    for f in _history(tmp_path, 6, 3, 0.05):
        ingest(db, f)
    (t,) = trends(db)
    assert main(["history", "check", "--db", db_url, "--node", t.node, "--frame", "64"]) == 2
    capsys.readouterr()
    for args in (["--frame", "1518"], ["--node", "compute-3"], ["--node", t.node, "--topology", "p2p"],
                 ["--metric", "pdr"]):
        assert main(["history", "check", "--db", db_url, *args]) == 1, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("zeroloss: error: no series matches"), err
    assert main(["history", "trend", "--db", db_url, "--node", "compute-3"]) == 0  # trend just shows nothing
    assert capsys.readouterr().out.strip() == "no series matches"


def test_the_help_of_trend_and_check_states_units(capsys):
    """What a level, ± and --wait are measured in, as `trial --help` states its units."""
    from zeroloss.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["history"]
    actions = next(a for a in sub._actions if a.dest == "history_command").choices
    for name in ("trend", "check"):
        text = " ".join(actions[name].format_help().split())
        assert "frames/s per direction" in text and "seconds to wait" in text, (name, text)
    text = " ".join(actions["trend"].format_help().split())
    assert "standard deviation in % of that level" in text and "UTC" in text
