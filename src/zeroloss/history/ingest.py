"""One file into the history, in one transaction: its document, its runs, their points (each in its series), b2b
figures and outages, or nothing (any fault rolls the whole file back).

Stored once: a document whose content hash is already there is not stored again; one with the identity of a stored
document (the same run, campaign or events file written again, e.g. resumed and completed) replaces it when it was
updated later, and is left out when it is an older copy. Two ingests at once are safe: on SQLite the second waits
for the first's write lock (db.py); on PostgreSQL both meet on the unique constraints, the second's INSERT ... ON
CONFLICT DO NOTHING waiting for the first to commit and then storing nothing it stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Integer, String, Table, delete, insert, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from zeroloss.core.errors import ZeroLossError
from zeroloss.history.db import Database, Refused
from zeroloss.history.extract import extract
from zeroloss.history.models import B2b, Document, Outage, Point, Run, Series
from zeroloss.history.rows import DocRows, RunRows
from zeroloss.history.rows import Series as SeriesRow
from zeroloss.history.source import Document as DocRecord
from zeroloss.history.source import content_hash, read_document
from zeroloss.results import schema

DOCS: Table = Document.__table__  # type: ignore[assignment]
RUNS: Table = Run.__table__  # type: ignore[assignment]
SERIES: Table = Series.__table__  # type: ignore[assignment]
POINTS: Table = Point.__table__  # type: ignore[assignment]
B2BS: Table = B2b.__table__  # type: ignore[assignment]
OUTAGES: Table = Outage.__table__  # type: ignore[assignment]

STORED, REPLACED, ALREADY, OLDER = "stored", "replaced", "already stored", "older copy"


@dataclass(frozen=True)
class Ingested:
    """What ingest did with a file: stored (or replaced an earlier copy), or left out and why; what it holds."""

    path: str
    status: str
    kind: str
    runs: int
    points: int
    trials: int
    seconds: float
    notes: tuple[str, ...] = ()

    def line(self) -> str:
        what = f"{self.kind}, {self.runs} run(s), {self.points} point(s), {self.trials:,} trials"
        return f"{self.path}: {self.status} ({what}, {self.seconds:.2f} s)"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "status": self.status, "kind": self.kind, "runs": self.runs,
                "points": self.points, "trials": self.trials, "seconds": round(self.seconds, 4),
                "notes": list(self.notes)}


def ingest(db: Database, path: Path | str, node: str | None = None) -> Ingested:
    """Reads one file and stores it in one transaction (history/ingest.py's rules)."""
    start = time.perf_counter()
    path = Path(path)
    doc, rows = _read(path, node)
    if rows.document.state == "running":
        raise ZeroLossError(f"{schema.shown(path)} is still being written (state running)",
                            "ingest it when its run has ended")
    sha = content_hash(doc)
    try:
        fits(rows, db.shown)
        with db.transaction() as conn:
            status = store(conn, db.dialect, rows, sha, str(path))
    except Refused as e:  # the file's fault: named, and the other files go on
        raise ZeroLossError(f"{schema.shown(path)}: {e.message}", e.remedy) from None
    notes = tuple(f"node recorded as '{r.run.node}': the file names no host; give --node NAME"
                  for r in rows.runs if r.run.node == "unknown" and status in (STORED, REPLACED))
    return Ingested(str(path), status, rows.document.kind, len(rows.runs), sum(len(r.points) for r in rows.runs),
                    sum(r.run.trials for r in rows.runs), time.perf_counter() - start, notes)


def _read(path: Path, node: str | None) -> tuple[DocRecord, DocRows]:
    """The file's record and rows; a field of a shape its kind's readers do not take (a damaged file the schema
    let through) is one line, as any other fault of the file."""
    try:
        doc = read_document(path)
        return doc, extract(doc, path, node)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError, ZeroDivisionError) as e:
        raise ZeroLossError(f"{schema.shown(path)}: a field is not what this kind of file holds "
                            f"({type(e).__name__}: {e})", "the file is damaged; ingest a good copy") from None


def fits(rows: DocRows, shown: str) -> None:
    """Refused (the file's fault) when a value would not fit its column: a text longer than its String's length, an
    integer beyond its column's 32 or 64 bits. PostgreSQL refuses such a value and SQLite stores it, so a damaged
    file would be stored in one history and refused by another; checked here, both refuse it, in the same words."""
    tables: list[tuple[Table, dict[str, Any]]] = [(DOCS, rows.document.row())]
    for r in rows.runs:
        tables += [(RUNS, r.run.row())] + [(t, row) for s, p in r.points for t, row in ((SERIES, s.row()),
                                                                                       (POINTS, p.row()))]
        tables += [(B2BS, b) for b in r.b2b] + [(OUTAGES, o) for o in r.outages]
    for table, row in tables:
        for col in table.columns:
            v = row.get(col.name)
            why = None
            if isinstance(col.type, String) and col.type.length and isinstance(v, str) and len(v) > col.type.length:
                why = f"{len(v)} characters, at most {col.type.length}"
            elif isinstance(col.type, Integer) and isinstance(v, int) and not isinstance(v, bool):
                bits = 64 if isinstance(col.type, BigInteger) else 32
                if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
                    why = f"{v}, beyond a {bits}-bit integer"
            if why is not None:
                raise Refused(f"a value does not fit the history database {shown}: {table.name}.{col.name} is {why}",
                              "the file is damaged: ingest a good copy")


def _insert(dialect: str, table: Table) -> Any:
    """INSERT that can say ON CONFLICT DO NOTHING on this database."""
    return (postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table))


def store(conn: Connection, dialect: str, rows: DocRows, sha: str, path: str) -> str:
    """The document's rows on an open transaction: STORED, REPLACED, or ALREADY / OLDER (nothing written).

    On PostgreSQL a concurrent ingest of another copy of the same run can commit between this one's look for the
    stored copy and its INSERT (the look waited on the copy that ingest then replaced, and found nothing): the
    INSERT then meets that ingest's document on its identity, and the look is made again, now seeing it, so the
    later of the two copies is the one kept (SQLite: the write lock makes the ingests take turns)."""
    for _ in range(3):
        status = _store(conn, dialect, rows, sha, path)
        if status is not None:
            return status
    raise ZeroLossError(f"{path}: other ingests kept storing copies of this run meanwhile", "ingest it again")


def _store(conn: Connection, dialect: str, rows: DocRows, sha: str, path: str) -> str | None:
    """store's one attempt; None: a concurrent ingest stored another copy of this run since the look for one."""
    if conn.execute(select(DOCS.c.id).where(DOCS.c.sha256 == sha)).first() is not None:
        return ALREADY
    identity = rows.document.identity or sha
    old = conn.execute(select(DOCS.c.id, DOCS.c.updated, DOCS.c.sha256).where(DOCS.c.identity == identity)
                       .with_for_update()).first()
    status = STORED
    if old is not None and old.sha256 == sha:  # a concurrent ingest committed this very file since the look above
        return ALREADY
    if old is not None:
        new = rows.document.updated
        if new is None or (old.updated is not None and new <= old.updated):
            return OLDER
        conn.execute(delete(DOCS).where(DOCS.c.id == old.id))
        status = REPLACED
    values = {**rows.document.row(), "identity": identity, "sha256": sha, "path": path,
              "ingested": datetime.now(UTC).replace(tzinfo=None)}
    doc_id = conn.execute(_insert(dialect, DOCS).values(**values).on_conflict_do_nothing()
                          .returning(DOCS.c.id)).scalar()
    if doc_id is None:  # a concurrent ingest stored it first, or another copy of its run: look again
        return ALREADY if conn.execute(select(DOCS.c.id).where(DOCS.c.sha256 == sha)).first() else None
    series: dict[str, int] = {}
    for seq, run in enumerate(rows.runs):
        store_run(conn, dialect, doc_id, seq, run, series)
    return status


def store_run(conn: Connection, dialect: str, doc_id: int, seq: int, run: RunRows, series: dict[str, int]) -> None:
    """One run's rows; series: the ids of the series met so far in this document."""
    run_id = conn.execute(insert(RUNS).values(**run.run.row(), document_id=doc_id, seq=seq)
                          .returning(RUNS.c.id)).scalar_one()
    points = []
    for s, p in run.points:
        if s.key not in series:
            series[s.key] = _series_id(conn, dialect, s)
        points.append({**p.row(), "run_id": run_id, "series_id": series[s.key]})
    for table, many in ((POINTS, points), (B2BS, [{**b, "run_id": run_id} for b in run.b2b]),
                        (OUTAGES, [{**o, "run_id": run_id} for o in run.outages])):
        if many:
            conn.execute(insert(table), many)


def _series_id(conn: Connection, dialect: str, s: SeriesRow) -> int:
    """The series' id, the series added when new (ON CONFLICT: another ingest may add it at the same moment)."""
    conn.execute(_insert(dialect, SERIES).values(**s.row()).on_conflict_do_nothing(index_elements=["key"]))
    return int(conn.execute(select(SERIES.c.id).where(SERIES.c.key == s.key)).scalar_one())
