"""A throw-away PostgreSQL server for the history's tests and benchmark: Debian's PostgreSQL 15 started with
initdb and pg_ctl in a temporary folder (a unix socket in its own folder, a free port number, no TCP, fsync off),
a database of its own per user, stopped by its PID. As root the server runs as the `postgres` user (it refuses
root). A folder left by a process that died before stopping its server names that process (owner) and the
server's PID: the next start stops that server and removes the folder.
"""

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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def available() -> bool:
    return (PG_BIN / "initdb").exists()


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

    @contextmanager
    def database(self) -> Iterator[str]:
        """A new, empty database's URL; dropped at the end."""
        name = f"zl_{uuid.uuid4().hex[:12]}"
        self.sql(f"CREATE DATABASE {name}")
        try:
            yield self.url(name)
        finally:
            self.sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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


def reap_stale() -> None:
    """Servers started here for a process that is gone (killed before it stopped them); a folder whose owner
    lives is left."""
    for folder in Path(tempfile.gettempdir()).glob("zl-pg-*"):
        try:
            owner = int((folder / "owner").read_text())
            pid = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if not _alive(owner):
            stop(PgServer(folder, folder / "sock", 0, pid))


def start() -> PgServer:
    """A new server in a new temporary folder, running when this returns."""
    reap_stale()
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


def stop(server: PgServer) -> None:
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


@contextmanager
def running() -> Iterator[PgServer]:
    """A server for the block's time."""
    server = start()
    try:
        yield server
    finally:
        stop(server)
