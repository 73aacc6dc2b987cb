"""The history benchmark's parts (studies/historybench.py, historydetect.py) on small inputs: the synthetic history
it builds from real files (on SQLite and PostgreSQL), and the detection study's measures."""

from __future__ import annotations

import statistics

from zeroloss.history.db import open_db
from zeroloss.history.trend import trends
from zeroloss.studies.historybench import STEP_NIGHTS, STEP_PCT, build, templates, time_ingest
from zeroloss.studies.historydetect import Spread, detect, false_alarms

from .helpers import REAL, counts, read_doc, real_level, write_doc


def _folder(tmp_path):
    """Two real run files: REAL (three searches: their spread) and a copy measured once (the spread of the two
    files' runs, as a series in results/ measured once)."""
    doc = read_doc(REAL)
    write_doc(tmp_path / "meter.json", doc)
    once = {**doc, "searches": doc["searches"][:1], "created": "2026-11-28T23:00:00+0000"}
    write_doc(tmp_path / "once.json", once)
    return tmp_path


def test_templates_carry_their_measured_spread(tmp_path):
    temps = {t.path.name: t for t in templates(_folder(tmp_path))}
    mean, sd = real_level()
    assert temps["meter.json"].rel_sd == {"64": sd / mean}
    ndrs = [s["result"]["ndr"]["rate_pps"] for s in read_doc(REAL)["searches"]]
    runs = [statistics.mean(ndrs), ndrs[0]]  # the series' two runs
    assert temps["once.json"].rel_sd == {"64": statistics.stdev(runs) / statistics.mean(runs)}


def test_the_synthetic_history_has_every_night_and_the_injected_step(db_url, tmp_path):
    temps = templates(_folder(tmp_path))
    db = open_db(db_url)
    build(db, temps, nodes=2, nights=12)
    found = {t.node: t for t in trends(db)}
    assert sorted(found) == ["node-00", "node-01"]
    assert all(len(t.samples) == 12 for t in found.values())
    step, flat = found["node-00"], found["node-01"]
    before = statistics.mean(s.value for s in step.samples[:-STEP_NIGHTS])
    after = statistics.mean(s.value for s in step.samples[-STEP_NIGHTS:])
    assert abs(after / before - (1 - STEP_PCT / 100)) < 0.01
    assert step.regression(3) is not None and flat.regression(3) is None
    secs, trials = time_ingest(db, temps, 12)
    assert len(secs) == 2 and trials == sum(t.trials for t in temps)
    assert counts(db)["runs"] == 24 and len(trends(db)) == 2  # deleted again: the history is the built one
    time_ingest(db, temps, 12, keep=True)
    assert counts(db)["runs"] == 26 and {t.node for t in trends(db)} == {"node-00", "node-01", "ingest"}


def test_a_step_far_beyond_the_spread_is_flagged_at_once_and_noise_is_not():
    mean, sd = real_level()
    s = Spread("meter", mean, sd, 3)
    d = detect(s, 5.0, series=5)
    assert d.needed == [1] * 5 and d.gate == 5
    none = detect(s, 0.0, series=5)
    assert none.needed == [None] * 5 and none.gate == 0
    a = false_alarms(s, runs=60)
    assert (a.nights_failed, a.alarms, a.groups_whole) == (0, 0, 1)
