"""The schema's migrations on a history that has runs: 0001 -> 0002 adds each point's search resolution (the NDR's
widest bracket); the points stored before keep their numbers and have none, the points stored after have theirs;
a read-only history left at 0001 is one line saying who can bring it up to date."""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect, select

from zeroloss.cli.main import main
from zeroloss.history.db import open_db
from zeroloss.history.ingest import ingest
from zeroloss.history.models import Point

from .conftest import FIXTURES


def _migrate(db, to: str) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("zeroloss.history") / "migrations"))
    with db.transaction() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, to)


def _columns(db) -> set[str]:
    with db.transaction(write=False) as conn:
        return {c["name"] for c in inspect(conn).get_columns("zl_points")}


def test_a_history_at_0001_is_brought_up_and_keeps_its_points(db_url):
    db = open_db(db_url)
    ingest(db, FIXTURES / "result_v2.json.gz")
    _migrate(db, "0001")
    assert "resolution_pps" not in _columns(db)
    with db.transaction(write=False) as conn:
        before = {(r.run_id, r.frame): r.ndr_pps for r in conn.execute(select(Point.run_id, Point.frame,
                                                                              Point.ndr_pps))}
    db.engine.dispose()

    db = open_db(db_url)  # this zeroloss brings it to its head
    assert "resolution_pps" in _columns(db)
    ingest(db, FIXTURES / "result_v3.json.gz")
    with db.transaction(write=False) as conn:
        rows = list(conn.execute(select(Point.run_id, Point.frame, Point.ndr_pps, Point.resolution_pps)))
    old = [r for r in rows if (r.run_id, r.frame) in before]
    new = [r for r in rows if (r.run_id, r.frame) not in before]
    assert {(r.run_id, r.frame): r.ndr_pps for r in old} == before  # the points stored before keep their numbers
    assert all(r.resolution_pps is None for r in old)
    assert new and any(r.resolution_pps for r in new if r.ndr_pps)  # those stored after have their brackets


def test_a_read_only_history_at_0001_is_one_line(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    db = open_db(str(path))
    ingest(db, FIXTURES / "result_v1.json")
    _migrate(db, "0001")
    db.engine.dispose()
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    assert main(["history", "trend", "--db", url]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("zeroloss: error: "), err
    assert "has schema 0001, older than this zeroloss's" in err and "a user who may write it" in err, err
    assert main(["history", "check", "--db", str(path)]) == 0  # written once, it is brought up to date
