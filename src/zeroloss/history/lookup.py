"""Where a run already stored in the history is: the nodes it was stored under (a run ingested with --node NAME is
that node's, not the host's its file names), found by the facts of its host and its start, as ingest keeps them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from zeroloss.history.db import Database
from zeroloss.history.models import Run


def stored_nodes(db: Database, host_fp: str | None, started: datetime | None) -> list[str]:
    """The nodes a run of this host (host_fp, history/extract.py) that started then was stored under, in name
    order; none when it is not stored (or its file records neither)."""
    if host_fp is None or started is None:
        return []
    q = select(Run.node).where(Run.host_fp == host_fp, Run.started == started).distinct().order_by(Run.node)
    with db.transaction(write=False) as conn:
        return [str(n) for n in conn.scalars(q)]
