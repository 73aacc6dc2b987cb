"""`--history DB` of run, campaign, events, tune and a soak (`trial --interval`): the command's result file stored in
the history database (zeroloss.history) when the command ends with a result, as `zeroloss history ingest` would.

Which database: --history, else the `history` key of the --config file (a campaign's: of the campaign file, at its
top or in its base), else $ZEROLOSS_HISTORY_AUTO; `none` at any
of them stores nothing (a config file's `none` overrides the environment), `default` is the history's own default
($ZEROLOSS_HISTORY, else ~/.local/share/zeroloss/history.sqlite). It is read when the command starts (a config
file's bad value is one line before anything runs) and opened only when the command ends.

When: the command ended with a result, whatever its verdict (run: PASS, FAIL, INCONCLUSIVE, exit 0, 2 or 3; a
tune that missed its target, a soak that lost frames: exit 2). Not when it ended with an error (exit 1) or was
interrupted (exit 130): that file is cut short, to be continued (--resume), and `zeroloss history ingest` takes it by
hand. Storing it can only add a line on stderr: a database that cannot be reached, is read-only or locked past 30
s, or any other fault, is one warning line; the result file stays where it is and the exit code is the command's.
The node is the one the file names: a lab node's ssh target (each case's own in a campaign over several nodes),
else the bench host (history/extract.py node_of).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

ENV = "ZEROLOSS_HISTORY_AUTO"
CONFIG_KEY = "history"  # the --config file's key (core/config.py FILE_ONLY_KEYS: not a run setting)
OFF = "none"  # stores nothing, whatever a default says
DEFAULT = "default"  # the history's own default database (zeroloss history --db's)
WAIT_S = 30.0  # how long to wait for a SQLite file another writer holds, or to reach a server (history --wait's)


def add_flag(p: argparse.ArgumentParser, what: str, scope: str = "", config: bool = True, file: str = "") -> None:
    """--history DB on a command whose result is `what` (config: the command takes --config FILE; file: the file of
    its own whose history key it reads, a campaign's)."""
    default = (f"{file}'s history key, else " if file else "") + (
        f"the --config file's history key, else ${ENV}" if config else f"${ENV}")
    p.add_argument("--history", metavar="DB",
                   help=f"{scope}when it ends with a result (any verdict), store {what} in this history database: a "
                        "file path (SQLite), postgresql://USER@HOST/DB, default (zeroloss history's), or none "
                        f"(default: {default}; see docs/history.md)")


def database(args: argparse.Namespace, in_file: object = None, file: str = "") -> str | None:
    """The database the command's result goes to (None: none; DEFAULT: the history's default), from --history, the
    --config file's `history` key (or in_file: the value of the `history` key of the command's own file, a
    campaign's, named `file`) and $ZEROLOSS_HISTORY_AUTO, in that order."""
    given = getattr(args, "history", None)
    if given is None and in_file is not None:
        given = _checked(in_file, file)
    if given is None:
        config = getattr(args, "config", None)
        given = _from_config(Path(config)) if config else None
    if given is None:
        given = os.environ.get(ENV) or None
    if given is None or given.strip().lower() == OFF:
        return None
    if given.strip().lower() != DEFAULT:
        from zeroloss.history.db import parse_url

        parse_url(given)  # a URL that cannot name a database is one line before anything runs (nothing opened yet)
    return given


def _from_config(path: Path) -> str | None:
    """The `history` key of a config file (None when it has none): a database as --history takes it."""
    from zeroloss.core import yamlio
    from zeroloss.core.config import yaml_load

    data = yaml_load(yamlio.read(path, "config file"), f"config file {path}")
    if not isinstance(data, dict) or data.get(CONFIG_KEY) is None:
        return None  # the run's own reading of the file names its other faults
    return _checked(data[CONFIG_KEY], f"config file {path}")


def _checked(value: object, file: str) -> str:
    """A file's `history` value when it can name a database; else a one-line error naming the file."""
    if not isinstance(value, str) or not value.strip():
        raise ZeroLossError(f"{file}: {CONFIG_KEY} must be a history database (a file path or "
                            f"postgresql://USER@HOST/DB), {DEFAULT} or {OFF}, got {value!r}")
    return value


def store(db: str | None, path: Path | str, quiet: bool = False, node: str | None = None) -> None:
    """The result file into the database (nothing when db is None): what was stored as one line on stderr (none
    when quiet), a fault as one warning line. Never raises a fault of the database's or the file's, so the command's
    exit code is its own. node: the name to record (None: the one the file names)."""
    if db is None:
        return
    try:
        from zeroloss.history.db import open_db
        from zeroloss.history.ingest import ingest

        opened = open_db(None if db == DEFAULT else db, create=True, wait_s=WAIT_S)
        done = ingest(opened, path, node)
    except Exception as e:  # a database fault (ZeroLossError) or anything else: the result file is what matters
        why = str(e) if isinstance(e, ZeroLossError) else f"{type(e).__name__}: {e}"
        where = "" if db == DEFAULT else f" --db {_shown(db)}"
        print(f"warning: history: {path} not stored: {why.strip().splitlines()[0] if why.strip() else why}; the "
              f"file is kept: store it later with zeroloss history ingest{where} {path}", file=sys.stderr)
        return
    if not quiet:
        print(f"history: {done.line()} in {opened.shown}", file=sys.stderr)
    for note in done.notes:
        print(f"warning: history: {path}: {note}", file=sys.stderr)


def bench_node() -> str | None:
    """This host as the history names a bench host (its hostname and the start of its machine id), for a file that
    does not record its host (a soak's); None when it cannot be read (the history then says 'unknown')."""
    try:
        from zeroloss.history.extract import node_of
        from zeroloss.host import hostinfo

        return node_of(hostinfo.collect(), None, None)
    except Exception:  # naming the node is worth a warning from ingest, not a failed soak
        return None


def _shown(db: str) -> str:
    """A database as the command to store the file later names it: a URL with its password left out (not masked:
    `***` would be taken as the password when the line is copied; libpq takes it from PGPASSWORD or ~/.pgpass)."""
    if "://" not in db:
        return db
    try:
        from sqlalchemy.engine import URL, make_url

        url = make_url(db)  # (URL.set treats password=None as "unchanged")
        return URL.create(url.drivername, url.username, None, url.host, url.port, url.database,
                          url.query).render_as_string(hide_password=False)
    except Exception:  # not a URL sqlalchemy reads: its fault is the message's, the text is not repeated
        return "DB"
