"""A history database opened: its URL (a file path for SQLite, `postgresql://…` for a lab's server), its engine, its
schema brought up to date by the package's Alembic migrations (migrations/), and every fault of the database as one
line (a file that is not ours, a schema newer than this zeroloss, a server out of reach, a read-only database, a
SQLite file another writer holds locked).

Writers never interleave: on SQLite every transaction begins IMMEDIATE (the file's write lock, waited for up to
`wait_s`; WAL lets readers on meanwhile); on PostgreSQL the schema's upgrade holds an advisory lock and ingests
meet on the tables' unique constraints (ingest.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError, DataError, DBAPIError, SQLAlchemyError

from zeroloss.core.errors import ZeroLossError

ENV = "ZEROLOSS_HISTORY"
DEFAULT = Path("~/.local/share/zeroloss/history.sqlite")
VERSION_TABLE = "zl_schema"
WAIT_S = 30.0  # how long a writer waits for a SQLite file another writer holds
PG_LOCK = 0x7A6C6869  # the advisory lock the schema's upgrade holds on PostgreSQL ("zlhi")


class DatabaseFault(ZeroLossError):
    """A fault of the database (out of reach, locked, read-only, not a history), not of a file given to it: every
    other file would meet it too."""


class Refused(ZeroLossError):
    """A value the database does not take (longer than its column, out of its type's range): a fault of the file
    that held it, not of the database (ingest names the file; the other files go on)."""


class ReadOnly(DatabaseFault):
    """The database refuses to be written (for a SQLite file in WAL mode, also a reader who cannot make its
    shared-memory file)."""


@dataclass(frozen=True)
class Database:
    engine: Engine
    shown: str  # the URL as messages show it (no password)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def transaction(self, write: bool = True) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back on any error (nothing half written); a
        database fault as one line. write False: a reader's (on SQLite it takes no write lock, so a read-only
        file or one another writer holds can still be read)."""
        engine = self.engine if write else self.engine.execution_options(zl_read=True)
        with faults(self.shown), engine.begin() as conn:
            yield conn


def default_url() -> str:
    """--db's default: $ZEROLOSS_HISTORY, else ~/.local/share/zeroloss/history.sqlite."""
    return os.environ.get(ENV) or str(DEFAULT.expanduser())


def parse_url(text: str) -> URL:
    """A database URL: a file path or sqlite:///PATH for SQLite, postgresql://… (psycopg 3) for PostgreSQL."""
    text = text.strip()
    if not text:
        raise ZeroLossError("the history database URL is empty", f"give --db PATH or postgresql://…, or set {ENV}")
    if "://" not in text:
        return URL.create("sqlite", database=str(Path(text).expanduser()))
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number (postgresql://u@h:x/db)
        raise ZeroLossError(f"'{_hide_password(text)}' is not a database URL", "give a file path, sqlite:///PATH or "
                            "postgresql://USER@HOST/DB") from None
    if url.get_backend_name() == "postgresql":
        return url.set(drivername="postgresql+psycopg")
    if url.drivername in ("sqlite", "sqlite+pysqlite"):
        return url
    raise ZeroLossError(f"the history database {url.render_as_string(hide_password=True)} is neither SQLite nor "
                        "PostgreSQL", "give a file path, sqlite:///PATH or postgresql://USER@HOST/DB")


def _hide_password(text: str) -> str:
    """A URL's text as messages show it when it does not parse: what lies between the user's colon and the last @
    is taken for its password and hidden (as render_as_string(hide_password=True) shows a URL that parses)."""
    return re.sub(r"(://[^:@/?#]*:).*@", r"\1***@", text, count=1)


def _sqlite_file(url: URL) -> Path | None:
    db = url.database or ""
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db)


def _sqlite_engine(url: URL, wait_s: float) -> Engine:
    """SQLite: the driver's own transactions off, each one begun IMMEDIATE (a writer takes the file's lock at its
    start, so two ingests never deadlock), WAL, foreign keys on, a busy timeout."""
    engine = create_engine(url, connect_args={"timeout": wait_s, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(wait_s * 1000)}")
        cur.execute("PRAGMA foreign_keys = ON")
        try:
            cur.execute("PRAGMA journal_mode = WAL")
        except Exception:  # a read-only file keeps its mode; reading it needs none
            pass
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("zl_read") else "BEGIN IMMEDIATE")

    return engine


def open_db(text: str | None = None, *, create: bool = True, wait_s: float = WAIT_S) -> Database:
    """The database at a URL (default_url when None), its schema at this zeroloss's head. create False (trend,
    check): a SQLite file that does not exist is a fault, not a new history."""
    url = parse_url(text if text is not None else default_url())
    shown = url.render_as_string(hide_password=True)
    if url.get_backend_name() == "sqlite":
        path = _sqlite_file(url)
        if path is not None and not path.exists():
            if not create:
                raise ZeroLossError(f"no history at {path}", "ingest result files first: zeroloss history ingest FILE")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise ZeroLossError(f"cannot make the folder of the history database {path}: {e.strerror or e}",
                                    "give --db a path in a folder you can write") from None
        engine = _sqlite_engine(url, wait_s)
    else:
        engine = create_engine(url, connect_args={"connect_timeout": max(1, int(wait_s))})
    db = Database(engine, shown)
    try:
        upgrade(db)
    except ReadOnly:
        frozen = None if create else _unchanging(url)
        if frozen is None:
            raise
        db = Database(_sqlite_engine(frozen, wait_s), shown)
        upgrade(db)
    return db


def _unchanging(url: URL) -> URL | None:
    """A reader's way into a SQLite file it may read but not open as usual: a history in WAL mode (every one this
    module made) needs its shared-memory file beside it, which a user who cannot write the folder cannot make, so
    trend and check failed as 'read-only'. Opened immutable, SQLite reads the file alone, which holds every
    committed write when no write-ahead log with writes in it lies beside it (one left by a writer is not skipped:
    None, the fault stands)."""
    if url.get_backend_name() != "sqlite":
        return None
    db = url.database or ""
    path = Path(unquote(db.removeprefix("file:"))) if db.startswith("file:") and "?" not in db else _sqlite_file(url)
    if path is None or not path.is_file():
        return None
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return None
    return URL.create("sqlite", database="file:" + quote(str(path)),
                      query={"mode": "ro", "immutable": "1", "uri": "true"})


def upgrade(db: Database) -> None:
    """The schema brought to this zeroloss's head in one transaction (nothing to do when it is there already); a
    schema newer than this zeroloss, or a database of something else, is one line."""
    from alembic.runtime.migration import MigrationContext

    script = _scripts()

    def current(conn: Connection) -> str | None:
        rev = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}).get_current_revision()
        if rev is not None and rev not in {r.revision for r in script.walk_revisions()}:
            raise ZeroLossError(f"the history database {db.shown} has schema {rev}, newer than this zeroloss "
                                f"knows (head {script.get_current_head()})", "update zeroloss")
        return rev

    with db.transaction(write=False) as conn:  # at head: nothing to write (a read-only database is read)
        older = current(conn)
        if older == script.get_current_head():
            return
    try:
        _upgrade(db, script, current)
    except ReadOnly as e:
        if older is None:
            raise
        raise ReadOnly(f"the history database {db.shown} has schema {older}, older than this zeroloss's (head "
                       f"{script.get_current_head()}), and cannot be written to bring it up to date",
                       "run any zeroloss history command on it once as a user who may write it") from e


def _upgrade(db: Database, script: Any, current: Callable[[Connection], str | None]) -> None:
    with db.transaction() as conn:
        if db.dialect == "postgresql":  # one upgrade at a time (SQLite: the transaction holds the file's lock)
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_LOCK})
        rev = current(conn)
        if rev == script.get_current_head():
            return
        if rev is None and _foreign(conn):
            raise ZeroLossError(f"{db.shown} is a database of something else (it has tables but no zeroloss "
                                "history)", "give --db another file or database")
        _run_migrations(conn)


def _foreign(conn: Connection) -> bool:
    names = set(inspect(conn).get_table_names())
    return bool(names) and not any(n.startswith("zl_") for n in names)


def _scripts() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(resources.files("zeroloss.history") / "migrations"))


def _run_migrations(conn: Connection) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("zeroloss.history") / "migrations"))
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, "head")


@contextmanager
def faults(shown: str) -> Iterator[None]:
    """A database's errors as one ZeroLossError line each."""
    try:
        yield
    except ZeroLossError:
        raise
    except DataError as e:
        raise Refused(f"a value does not fit the history database {shown}: {_first_line(e)}",
                      "the file is damaged: ingest a good copy") from None
    except DBAPIError as e:
        line, fix = _fault_line(shown, e)
        raise (ReadOnly if _read_only(_first_line(e)) else DatabaseFault)(line, fix) from None
    except SQLAlchemyError as e:
        raise DatabaseFault(f"the history database {shown}: {_first_line(e)}") from None


def _first_line(e: BaseException) -> str:
    text = str(getattr(e, "orig", None) or e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _read_only(why: str) -> bool:
    low = why.lower()
    return "readonly database" in low or "read-only transaction" in low or "permission denied" in low


def _fault_line(shown: str, e: DBAPIError) -> tuple[str, str | None]:
    """What went wrong and the fix, from what the driver said."""
    why = _first_line(e)
    low = why.lower()
    if "database is locked" in low or "database table is locked" in low:
        return (f"the history database {shown} is locked by another writer (waited for it)",
                "try again when the other ingest has ended, or give --wait more seconds")
    if _read_only(why):
        return f"the history database {shown} is read-only: {why}", "give --db a database you can write"
    if "file is not a database" in low or "file is encrypted" in low:
        return f"{shown} is not a SQLite database", "give --db another file"
    if "unable to open database file" in low:
        return f"cannot open the history database {shown}", "check the path and its folder's permissions"
    if any(w in low for w in ("connection", "could not", "timeout", "no such host", "resolve host")):
        return f"cannot reach the history database {shown}: {why}", "check the server, the URL and the network"
    return f"the history database {shown}: {why}", None
