"""Ingest on SQLite and PostgreSQL (conftest.db_url): the stored result files of every kind and this host's results,
stored once, in one transaction, two ingests at once."""

from __future__ import annotations

import glob
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from zeroloss.cli.main import main
from zeroloss.history import ingest as ingest_mod
from zeroloss.history.db import open_db
from zeroloss.history.ingest import ALREADY, OLDER, REPLACED, STORED, ingest
from zeroloss.history.models import Document, Outage, Point, Run
from zeroloss.history.source import content_hash
from zeroloss.results.events import EventsRecord
from zeroloss.results.summary import frame_rows, load_runs

from .conftest import FIXTURES, HERE
from .helpers import counts, read_doc, soak_doc, write_doc

REPO = HERE.parent.parent
FILES = ["result_v1.json", "result_v2.json.gz", "result_v2_latency.json.gz", "result_v2_ring256.json.gz",
         "result_v3.json.gz", "campaign_v1.json", "tune_v1.json", "events_v1.json"]


def _expected_points(path: Path) -> int:
    """The frame sizes with a finished search, as the report reads them (tune_v1's cases lack what the report
    shows: their records are read directly)."""
    doc = read_doc(path)
    if doc.get("format") == "zeroloss-campaign":
        from zeroloss.results.campaigns import CampaignRecord

        camp = CampaignRecord.from_json(doc)
        return sum(len(frame_rows(c.run)) for c in camp.cases if c.run is not None)
    return sum(len(frame_rows(r.record)) for r in load_runs([str(path)]))


@pytest.mark.parametrize("name", FILES)
def test_fixture_files_are_stored_with_their_numbers(db_url, name):
    db = open_db(db_url)
    path = FIXTURES / name
    got = ingest(db, path)
    assert got.status == STORED
    n = counts(db)
    assert n["documents"] == 1
    if name.startswith("events"):
        rec = EventsRecord.from_json(read_doc(path))
        assert n["runs"] == 1 and n["points"] == 0 and n["outages"] == len(rec.trials)
        with db.transaction() as conn:
            rows = conn.execute(select(Outage.event, Outage.lost, Outage.outage_ms).order_by(Outage.id)).all()
        assert [(r.event, r.lost) for r in rows] == [(t.event, t.lost) for t in rec.trials]
        assert max(r.outage_ms for r in rows) == max(t.outage_ms for t in rec.trials)
        return
    assert n["points"] == got.points == _expected_points(path) > 0
    assert n["runs"] == got.runs


def test_ndr_spread_and_latency_as_the_report_reads_them(db_url):
    db = open_db(db_url)
    path = FIXTURES / "result_v2.json.gz"
    ingest(db, path)
    row = next(r for r in frame_rows(load_runs([str(path)])[0].record) if r.frame == 9000)
    with Session(db.engine) as session:
        p = session.scalars(select(Point).where(Point.frame == "9000")).one()
        run = session.scalars(select(Run)).one()
    assert p.ndr_values == [40507.0, 43301.0] == list(row.ndrs)
    assert p.ndr_pps == pytest.approx(row.ndr_pps) and p.spread_pps == 2794.0
    # the widest bracket of the two searches: each one's lowest failing pace less its NDR
    brackets = [s.result.ndr.upper_pps - s.result.ndr.lower_pps for s in load_runs([str(path)])[0].record.searches
                if s.frame == 9000 and s.result and s.result.ndr.upper_pps is not None]
    assert len(brackets) == 2 and p.resolution_pps == max(brackets) == row.resolution_pps > 0
    assert p.lat_p99_us is not None and row.lat_us is not None and p.lat_p99_us >= row.lat_us[1] * 0.999
    assert p.trials > 0 and 0 <= p.discarded_share <= 1
    assert run.node == "vm/3d1219c7" and run.topology == "pvp" and run.dpdk_version and run.kernel
    assert run.settings["trial_s"] == 0.3 and "frame_sizes" not in run.settings


def test_a_soak_file_keeps_its_loss_events(db_url, tmp_path):
    db = open_db(db_url)
    got = ingest(db, write_doc(tmp_path / "soak.json", soak_doc()), node="compute-3")
    assert got.status == STORED and got.kind == "soak"
    with Session(db.engine) as session:
        rows = session.scalars(select(Outage).order_by(Outage.repeat)).all()
        node = session.scalars(select(Run.node)).one()
    assert node == "compute-3"
    assert [(o.lost, o.outage_ms, o.start_ms) for o in rows] == [(50, 50.0, 1000.0), (20, 20.0, 4000.0)]


def test_this_hosts_results(db_url):
    files = sorted(glob.glob(str(REPO / "results" / "*.json")) + glob.glob(str(REPO / "results" / "*" / "*.json")))
    if not files:
        pytest.skip("no results/*.json on this host")
    db = open_db(db_url)
    for f in files:
        assert ingest(db, f).status == STORED, f
    assert counts(db)["documents"] == len(files)


def test_a_file_ingested_twice_is_stored_once(db_url, tmp_path):
    db = open_db(db_url)
    path = FIXTURES / "campaign_v1.json"
    assert ingest(db, path).status == STORED
    before = counts(db)
    assert ingest(db, path).status == ALREADY
    packed = tmp_path / "same.json.gz"  # the same content, compressed and elsewhere
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert ingest(db, packed).status == ALREADY
    assert counts(db) == before


def test_a_later_copy_of_a_run_replaces_the_earlier(db_url, tmp_path):
    db = open_db(db_url)
    doc = read_doc(FIXTURES / "result_v3.json.gz")
    early = {**doc, "state": "interrupted", "updated": "2026-11-20T10:00:00+0000",
             "searches": [{**s, "result": None} for s in doc["searches"]]}
    late = {**doc, "updated": "2026-11-21T10:00:00+0000"}
    assert ingest(db, write_doc(tmp_path / "a.json", early)).status == STORED
    assert counts(db)["points"] == 0
    assert ingest(db, write_doc(tmp_path / "b.json", late)).status == REPLACED
    assert ingest(db, tmp_path / "a.json").status == OLDER
    n = counts(db)
    assert n["documents"] == 1 and n["runs"] == 1 and n["points"] == 1


def test_two_later_copies_of_a_run_at_once_keep_the_latest(db_url, tmp_path):
    """Two ingests of two later copies of a stored run at the same moment: the second waits for the first (on
    PostgreSQL on the stored copy's row lock, which the first deletes in replacing it), then replaces the first's
    copy with its own later one. It was 'already stored' and the older copy stayed."""
    db = open_db(db_url)
    doc = read_doc(FIXTURES / "result_v3.json.gz")
    copies = [write_doc(tmp_path / f"{n}.json", {**doc, "updated": f"2026-11-2{n}T10:00:00+0000"}) for n in (1, 2, 3)]
    assert ingest(db, copies[0]).status == STORED
    (doc2, first), (doc3, second) = (ingest_mod._read(c, None) for c in copies[1:])
    holder = db.engine.connect()
    held = holder.begin()
    assert ingest_mod.store(holder, db.dialect, first, content_hash(doc2), "2.json") == REPLACED
    done: dict[str, str] = {}

    def later() -> None:
        with db.transaction() as conn:
            done["status"] = ingest_mod.store(conn, db.dialect, second, content_hash(doc3), "3.json")

    thread = threading.Thread(target=later)
    thread.start()
    _until_waiting(db, thread)
    held.commit()
    holder.close()
    thread.join(timeout=60)
    assert done == {"status": REPLACED}
    with db.transaction() as conn:
        assert [r.path for r in conn.execute(select(Document.path))] == ["3.json"]
    assert counts(db)["runs"] == 1


def _until_waiting(db: Any, thread: threading.Thread) -> None:
    """Until the thread's transaction waits for a lock (PostgreSQL: pg_stat_activity says so; SQLite: its BEGIN
    IMMEDIATE waits in the busy handler, given a moment to get there)."""
    if db.dialect != "postgresql":
        time.sleep(0.5)
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and thread.is_alive():
        with db.engine.connect() as conn:
            if conn.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                 "AND datname = current_database()")).scalar():
                return
        time.sleep(0.05)
    raise AssertionError("the second ingest never waited for the first")


def test_an_ingest_that_fails_midway_leaves_nothing(db_url, monkeypatch):
    db = open_db(db_url)
    real, calls = ingest_mod.store_run, []

    def store_then_fail(*args, **kwargs):
        calls.append(1)
        real(*args, **kwargs)
        if len(calls) == 3:  # the campaign's third run is written, then the ingest dies
            raise RuntimeError("injected fault")

    monkeypatch.setattr(ingest_mod, "store_run", store_then_fail)
    with pytest.raises(RuntimeError, match="injected"):
        ingest(db, FIXTURES / "campaign_v1.json")
    assert len(calls) == 3
    assert set(counts(db).values()) == {0}
    monkeypatch.setattr(ingest_mod, "store_run", real)
    assert ingest(db, FIXTURES / "campaign_v1.json").status == STORED


KILLED = """
import os, sys
from zeroloss.history import ingest as m
from zeroloss.history.db import open_db
real, n = m.store_run, []
def die(*a, **k):
    real(*a, **k)
    n.append(1)
    if len(n) == 2:
        os._exit(9)  # killed: no rollback, no close
m.store_run = die
m.ingest(open_db(sys.argv[1]), sys.argv[2])
"""


def test_a_killed_ingest_leaves_nothing(db_url):
    proc = subprocess.run([sys.executable, "-c", KILLED, db_url, str(FIXTURES / "campaign_v1.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 9, proc.stderr
    db = open_db(db_url)
    assert set(counts(db).values()) == {0}
    assert ingest(db, FIXTURES / "campaign_v1.json").status == STORED


def test_two_ingests_at_once(db_url):
    """Two processes ingest the same files at the same moment (the schema made by whichever comes first): every
    file is stored once, both exit 0."""
    files = [str(FIXTURES / f) for f in FILES]
    cmd = [sys.executable, "-m", "zeroloss.cli", "history", "ingest", "--db", db_url, "--json", *files]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    statuses = [json.loads(o[0]) for o in outs]
    for i in range(len(files)):
        assert sorted(s["files"][i]["status"] for s in statuses) == [ALREADY, STORED]
    assert counts(open_db(db_url))["documents"] == len(files)


@pytest.mark.parametrize("node", ["", "   "])
def test_a_blank_node_name_is_refused(tmp_path, capsys, node):
    db = tmp_path / "h.sqlite"
    with pytest.raises(SystemExit) as e:
        main(["history", "ingest", "--db", str(db), "--node", node, str(FIXTURES / "result_v1.json")])
    assert e.value.code == 2 and "is not blank" in capsys.readouterr().err
    assert not db.exists()


def test_a_file_that_names_no_host_says_so_when_it_is_stored_only(tmp_path, capsys):
    """The note says what was recorded: a soak stored again ('already stored') recorded nothing."""
    soak, db = write_doc(tmp_path / "soak.json", soak_doc()), str(tmp_path / "h.sqlite")
    assert main(["history", "ingest", "--db", db, str(soak)]) == 0
    assert "node recorded as 'unknown'" in capsys.readouterr().err
    assert main(["history", "ingest", "--db", db, str(soak)]) == 0
    out = capsys.readouterr()
    assert ": already stored (soak" in out.out and out.err == ""


def test_a_soak_outage_of_more_than_two_billion_frames_is_stored(db_url, tmp_path):
    """A link down for 3.4 min at 64 B line rate on 10 GbE loses 3 billion frames: more than a 32-bit integer holds
    (PostgreSQL's INTEGER refused it, and the file was blamed as damaged); schema 0002 keeps 64 bits."""
    doc = soak_doc()
    big = 3_000_000_000
    doc["loss_events"][1] = {**doc["loss_events"][1], "lost": big, "directions": {"A->B": big}}
    db = open_db(db_url)
    assert ingest(db, write_doc(tmp_path / "soak.json", doc), node="compute-3").status == STORED
    with Session(db.engine) as session:
        assert session.scalars(select(Outage.lost).order_by(Outage.repeat)).all() == [50, big]
