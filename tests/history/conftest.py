"""The history's tests run on SQLite and on a real PostgreSQL: Debian's PostgreSQL 15 started for the session
(history/pgtemp.py: initdb and pg_ctl in a temporary folder, a unix socket in its own folder, a free port number,
no TCP), a fresh database per test, the server stopped by its PID at the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from zeroloss.history import pgtemp
from zeroloss.history.pgtemp import PgServer

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if not pgtemp.available():
        pytest.skip(f"no PostgreSQL 15 at {pgtemp.PG_BIN}: make setup installs Debian's postgresql")
    with pgtemp.running() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> Iterator[str]:
    """A new, empty history database: a SQLite file, or a database of its own on the session's PostgreSQL."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite")
        return
    server: PgServer = request.getfixturevalue("pg_server")
    with server.database() as url:
        yield url
