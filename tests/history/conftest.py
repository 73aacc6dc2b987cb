"""The history's tests run on SQLite and on a real PostgreSQL: Debian's PostgreSQL 15 started for the session
(initdb and pg_ctl in a temporary folder, a unix socket in its own folder, a free port number, no TCP), a fresh
database per test, the server stopped by its PID at the end. As root the server runs as the `postgres` user (it
refuses root)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_BIN = Path("/usr/lib/postgresql/15/bin")
HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    folder: Path
    sockets: Path
    port: int
    pid: int

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@/{db}?host={self.sockets}&port={self.port}"

    def sql(self, statement: str, db: str = "postgres") -> None:
        """One statement outside a transaction (CREATE DATABASE cannot run in one)."""
        import psycopg

        with psycopg.connect(host=str(self.sockets), port=self.port, user="postgres", dbname=db,
                             autocommit=True) as conn:
            conn.execute(statement)


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reap_stale() -> None:
    """Servers this fixture started for a test session that is gone (killed before its teardown): each folder
    names the session's PID (owner) and the server's (data/postmaster.pid); a folder whose session lives is left."""
    for folder in Path(tempfile.gettempdir()).glob("zl-pg-*"):
        try:
            owner = int((folder / "owner").read_text())
            pid = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if not _alive(owner):
            _stop(PgServer(folder, folder / "sock", 0, pid))


def _start() -> PgServer:
    _reap_stale()
    folder = Path(tempfile.mkdtemp(prefix="zl-pg-"))
    (folder / "owner").write_text(str(os.getpid()))
    data, sockets = folder / "data", folder / "sock"
    data.mkdir()
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
        for d in (data, sockets):
            shutil.chown(d, "postgres", "postgres")
    subprocess.run(_as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                 "--no-sync", "-E", "UTF8"]), check=True, capture_output=True, timeout=120)
    port = _free_port()
    opts = f"-k {sockets} -p {port} -c listen_addresses='' -c fsync=off -c max_connections=40"
    subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(data), "-o", opts,
                                 "-l", str(folder / "server.log")]), check=True, capture_output=True, timeout=90)
    pid = int((data / "postmaster.pid").read_text().split()[0])
    return PgServer(folder, sockets, port, pid)


def _stop(server: PgServer) -> None:
    """Fast shutdown by the postmaster's PID, waited for; then its folder goes."""
    try:
        os.kill(server.pid, signal.SIGINT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            os.kill(server.pid, 0)
            time.sleep(0.1)
        os.kill(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no PostgreSQL 15 at {PG_BIN}: make setup installs Debian's postgresql")
    server = _start()
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> Iterator[str]:
    """A new, empty history database: a SQLite file, or a database of its own on the session's PostgreSQL."""
    if request.param == "sqlite":
        yield str(tmp_path / "history.sqlite")
        return
    server = request.getfixturevalue("pg_server")
    name = f"zl_{uuid.uuid4().hex[:12]}"
    server.sql(f"CREATE DATABASE {name}")
    try:
        yield server.url(name)
    finally:
        server.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
