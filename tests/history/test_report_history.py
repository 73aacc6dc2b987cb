"""`zeroloss report FILE --history DB` (cli/report.py, report/historypage.run_history): the run report gets, per run,
the series of its node, topology, frame sizes and settings from the history, as the trend page draws them, the run
itself marked where it is stored; the database is only read; --history with a table format or a soak is one line."""

from __future__ import annotations

import pytest

from zeroloss.cli.main import main
from zeroloss.history.db import open_db
from zeroloss.history.ingest import ingest

from .conftest import FIXTURES
from .helpers import counts, read_doc, soak_doc, write_doc


def _night(tmp_path, day: int, scale: float):
    """A stored run whose sizes are measured (not lower bounds: the trend leaves those out) as another night's run:
    its start a day later, its NDRs scaled."""
    doc = read_doc(FIXTURES / "result_v2_ring256.json.gz")
    doc["created"] = f"2026-11-{day:02d}T02:00:00Z"
    for s in doc["searches"]:
        for goal in ("ndr", "pdr"):
            if s["result"] and s["result"].get(goal) and s["result"][goal].get("rate_pps"):
                s["result"][goal]["rate_pps"] *= scale
    return write_doc(tmp_path / f"night-{day:02d}.json", doc)


def _report(tmp_path, path, db: str, capsys) -> str:
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--history", db, "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    return out.read_text()


def test_a_stored_run_is_shown_in_its_series_and_marked(db_url, tmp_path, capsys):
    db = open_db(db_url, create=True)
    nights = [_night(tmp_path, d, 1.0 + 0.001 * (d % 2)) for d in range(1, 6)]
    for n in nights:
        ingest(db, n, "compute-3")
    before = counts(db)
    page = _report(tmp_path, nights[2], db_url, capsys)  # stored under another name than its file's host
    assert "<h3>History of its series</h3>" in page and "<h4>compute-3 · pvp · 64 B · " in page
    assert page.count("this run is run 3 of 5.") == 2  # 64 B and 9000 B
    assert "the circle is this run" in page and "<svg" in page.split("History of its series")[1]
    assert counts(db) == before  # only read


def test_a_run_not_stored_says_so(db_url, tmp_path, capsys):
    db = open_db(db_url, create=True)
    ingest(db, _night(tmp_path, 1, 1.0), None)
    page = _report(tmp_path, _night(tmp_path, 2, 1.0), db_url, capsys)  # the same series, not this night
    assert "this run is not in the history." in page and "1 run(s)" in page
    empty = tmp_path / "empty.sqlite"
    open_db(str(empty), create=True)
    page = _report(tmp_path, _night(tmp_path, 3, 1.0), str(empty), capsys)
    assert "None of its series has a run in the history yet" in page


@pytest.mark.parametrize("extra, expect", [(["--format", "json"], "--history adds the runs' series to the HTML"),
                                           ([], "no history at")])
def test_history_where_it_cannot_go_is_one_line(tmp_path, capsys, extra, expect):
    code = main(["report", str(FIXTURES / "result_v3.json.gz"), "--history", str(tmp_path / "none.sqlite"),
                 "-o", str(tmp_path / "r.out"), "-q", *extra])
    err = capsys.readouterr().err
    assert code == 1 and expect in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2
    assert not (tmp_path / "none.sqlite").exists() and not (tmp_path / "r.out").exists()


def test_a_soak_report_refuses_history(tmp_path, capsys):
    soak = write_doc(tmp_path / "soak.json", soak_doc())
    assert main(["report", str(soak), "--history", str(tmp_path / "h.sqlite"), "-q"]) == 1
    assert "--history adds the runs' series" in capsys.readouterr().err
