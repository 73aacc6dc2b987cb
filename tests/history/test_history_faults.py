"""Bad input, as the CLI shows it: one line each on stderr, exit 1, nothing stored; and the database's own faults
(out of reach, read-only, locked, a newer schema, something else's database)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest
from sqlalchemy import text

from zeroloss.cli.main import main
from zeroloss.history.db import VERSION_TABLE, open_db
from zeroloss.history.ingest import ingest
from zeroloss.history.models import Base

from .conftest import FIXTURES
from .helpers import counts, read_doc, soak_doc, synthetic_history, write_doc


def _one_error(capsys, *words: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("zeroloss: error: "), err
    for w in words:
        assert w in err, err
    return err


def _bad_files(tmp_path):
    result = read_doc(FIXTURES / "result_v3.json.gz")
    truncated = tmp_path / "truncated.json.gz"
    truncated.write_bytes(gzip.compress(json.dumps(result).encode())[:2000])
    return {
        "truncated": (truncated, "truncated.json.gz"),
        "not json": (tmp_path / "text.json", "text.json"),
        "foreign": (write_doc(tmp_path / "foreign.json", {"hello": "world"}), "is not a zeroloss result"),
        "newer run": (write_doc(tmp_path / "v99.json", {**result, "version": 99}), "update zeroloss"),
        "newer events": (write_doc(tmp_path / "ev.json", {**read_doc(FIXTURES / "events_v1.json"), "version": 2}),
                         "update zeroloss"),
        "newer soak": (write_doc(tmp_path / "soak.json", {**soak_doc(), "version": 3}), "update zeroloss"),
        "damaged": (write_doc(tmp_path / "damaged.json", {**result, "searches": "none"}), "damaged.json"),
        "damaged case": (write_doc(tmp_path / "camp.json", {**read_doc(FIXTURES / "campaign_v1.json"),
                                                             "cases": [{"name": "x", "run": {"format": 1}}]}),
                         "camp.json"),
    }


@pytest.mark.parametrize("what", ["truncated", "not json", "foreign", "newer run", "newer events", "newer soak",
                                  "damaged", "damaged case"])
def test_a_bad_file_is_one_line_and_nothing_stored(db_url, tmp_path, capsys, what):
    bad = _bad_files(tmp_path)
    path, words = bad[what]
    if what == "not json":
        path.write_text("{ not json")
    good = FIXTURES / "result_v1.json"
    assert main(["history", "ingest", "--db", db_url, str(path), str(good)]) == 1
    out = capsys.readouterr()
    assert "result_v1.json: stored" in out.out  # the good file beside it is stored
    err = out.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("zeroloss: error: ") and words in err, err
    assert counts(open_db(db_url))["documents"] == 1


def test_a_value_the_server_does_not_take_is_the_files_fault(db_url, tmp_path, capsys):
    """A damaged file with a state longer than its column: PostgreSQL would refuse the value and SQLite store it;
    both refuse it before the transaction. That is the file's fault, named as such; the database is fine and the
    next file is stored (on PostgreSQL it once stopped the ingest as a database fault)."""
    long = write_doc(tmp_path / "long.json", {**read_doc(FIXTURES / "result_v3.json.gz"), "state": "complete" * 5})
    assert main(["history", "ingest", "--db", db_url, str(long), str(FIXTURES / "result_v1.json")]) == 1
    out = capsys.readouterr()
    assert "result_v1.json: stored" in out.out
    err = out.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"zeroloss: error: {long}: a value does not fit"), err
    assert "the file is damaged" in err and "zl_documents.state is 40 characters, at most 16" in err
    assert counts(open_db(db_url))["documents"] == 1


def test_a_running_file_waits_for_its_end(db_url, tmp_path, capsys):
    running = write_doc(tmp_path / "run.json", {**read_doc(FIXTURES / "result_v3.json.gz"), "state": "running"})
    assert main(["history", "ingest", "--db", db_url, str(running)]) == 1
    _one_error(capsys, "still being written")


def test_a_newer_schema_is_refused(db_url, capsys):
    db = open_db(db_url)
    with db.transaction() as conn:
        conn.execute(text("UPDATE zl_schema SET version_num = '9999'"))
    assert main(["history", "trend", "--db", db_url]) == 1
    _one_error(capsys, "schema 9999, newer than this zeroloss", "update zeroloss")


def test_models_and_migrations_agree(db_url):
    """The tables the migrations make are the models' (a model changed without a migration fails here)."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    db = open_db(db_url)
    with db.transaction() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE}), Base.metadata)
    assert diff == []


def test_unreachable_server(capsys, tmp_path):
    url = f"postgresql://postgres@/zl?host={tmp_path}&port=1"
    assert main(["history", "trend", "--db", url, "--wait", "2"]) == 1
    _one_error(capsys, "cannot reach the history database", "check the server")


@pytest.mark.parametrize("url", ["postgresql://zl:s3cr3t@db.lab:54x/zl", "postgresql://zl:s3cr3t@[::1/zl"])
def test_a_url_that_does_not_parse_hides_its_password(url, capsys):
    assert main(["history", "check", "--db", url]) == 1
    err = _one_error(capsys, "is not a database URL", "zl:***@")
    assert "s3cr3t" not in err


def test_a_host_that_does_not_resolve_is_out_of_reach(capsys):
    assert main(["history", "check", "--db", "postgresql://zl:s3cr3t@no-such-host.invalid/zl", "--wait", "2"]) == 1
    err = _one_error(capsys, "cannot reach the history database", "check the server")
    assert "s3cr3t" not in err


def test_read_only_postgresql(pg_server, capsys):
    pg_server.sql("CREATE DATABASE zl_ro")
    try:
        url = pg_server.url("zl_ro")
        open_db(url)
        pg_server.sql("ALTER DATABASE zl_ro SET default_transaction_read_only = on")
        assert main(["history", "ingest", "--db", url, str(FIXTURES / "result_v1.json")]) == 1
        _one_error(capsys, "is read-only")
        assert main(["history", "trend", "--db", url]) == 0  # reading it still works
    finally:
        pg_server.sql("DROP DATABASE IF EXISTS zl_ro WITH (FORCE)")


def test_read_only_sqlite(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    open_db(str(path))
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    assert main(["history", "ingest", "--db", url, str(FIXTURES / "result_v1.json")]) == 1
    _one_error(capsys, "is read-only")
    assert main(["history", "trend", "--db", url]) == 0


def _without_root_over_modes() -> list[str] | None:
    """The prefix that runs a command without root's power over file modes (so a folder's mode 555 holds for it as
    for any user), or None when there is none."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    return None if setpriv is None else [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--"]


@pytest.mark.parametrize("how", ["path", "uri"])
def test_trend_and_check_read_a_history_in_a_folder_they_cannot_write(tmp_path, how):
    """A history in WAL mode needs a shared-memory file beside it to be read as usual; a user who cannot write its
    folder (a lab's history published read-only) still reads it, and writing it is one line."""
    prefix = _without_root_over_modes()
    if prefix is None:
        pytest.skip("running as root without setpriv: a folder's mode does not hold")
    folder = tmp_path / "published"
    folder.mkdir()
    path = folder / "h.sqlite"
    db = open_db(str(path))
    ingest(db, FIXTURES / "result_v1.json")
    db.engine.dispose()
    assert sorted(p.name for p in folder.iterdir()) == ["h.sqlite"]  # the last connection closed: no -wal, -shm
    path.chmod(0o444)
    folder.chmod(0o555)
    url = str(path) if how == "path" else f"sqlite:///file:{path}?mode=ro&uri=true"

    def zeroloss(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, sys.executable, "-m", "zeroloss.cli", "history", *args, "--db", url],
                              capture_output=True, text=True, timeout=120)

    try:
        check = zeroloss("check")
        assert (check.returncode, check.stderr) == (0, ""), check
        assert check.stdout.startswith("no regression: 2 series"), check.stdout
        trend = zeroloss("trend", "--json")
        assert trend.returncode == 0 and len(json.loads(trend.stdout)["series"]) == 2, trend
        stored = zeroloss("ingest", str(FIXTURES / "result_v3.json.gz"))
        assert stored.returncode == 1 and stored.stderr.count("\n") == 1 and "is read-only" in stored.stderr, stored
    finally:
        folder.chmod(0o755)
    assert counts(open_db(str(path), create=False))["documents"] == 1


def test_locked_sqlite(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    open_db(str(path))
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the file
    try:
        assert main(["history", "ingest", "--db", str(path), "--wait", "0.3",
                     str(FIXTURES / "result_v1.json")]) == 1
        _one_error(capsys, "is locked by another writer")
    finally:
        holder.rollback()
        holder.close()
    assert main(["history", "ingest", "--db", str(path), str(FIXTURES / "result_v1.json")]) == 0


def test_a_locked_sqlite_stops_the_ingest_in_one_line(tmp_path, capsys):
    """Every file would wait --wait for the same lock in turn and say the same line: the first says it for all."""
    path = tmp_path / "h.sqlite"
    open_db(str(path))
    files = [str(FIXTURES / f) for f in ("result_v1.json", "result_v3.json.gz", "campaign_v1.json")]
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert main(["history", "ingest", "--db", str(path), "--wait", "0.3", "--json", *files]) == 1
        err = _one_error(capsys, "result_v1.json and the 2 file(s) after it not stored", "is locked by another writer")
    finally:
        holder.rollback()
        holder.close()
    assert "result_v3" not in err
    assert counts(open_db(str(path)))["documents"] == 0


def test_no_history_yet_and_not_a_database(tmp_path, capsys):
    assert main(["history", "trend", "--db", str(tmp_path / "none.sqlite")]) == 1
    _one_error(capsys, "no history at")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is no database at all" * 100)
    assert main(["history", "trend", "--db", str(junk)]) == 1
    _one_error(capsys, "is not a SQLite database")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER)")
    assert main(["history", "ingest", "--db", str(other), str(FIXTURES / "result_v1.json")]) == 1
    _one_error(capsys, "database of something else")
    assert main(["history", "ingest", "--db", "mysql://x@y/z", str(FIXTURES / "result_v1.json")]) == 1
    _one_error(capsys, "neither SQLite nor PostgreSQL")


def test_the_default_database_is_the_environments(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZEROLOSS_HISTORY", str(tmp_path / "env.sqlite"))
    assert main(["history", "ingest", str(FIXTURES / "result_v1.json")]) == 0
    assert (tmp_path / "env.sqlite").exists() and "result_v1.json: stored" in capsys.readouterr().out
    monkeypatch.delenv("ZEROLOSS_HISTORY")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert main(["history", "ingest", "--json", str(FIXTURES / "result_v1.json")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["files"][0]["status"] == "stored"
    assert (tmp_path / ".local/share/zeroloss/history.sqlite").exists()


def test_a_trend_page_that_cannot_be_written_is_one_line_naming_html(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    assert main(["history", "ingest", "--db", str(db), *map(str, synthetic_history(tmp_path, 3, None, 0.0))]) == 0
    capsys.readouterr()
    assert main(["history", "trend", "--db", str(db), "--html", str(tmp_path)]) == 1  # a folder
    err = _one_error(capsys, "give --html a file path")
    assert "(-o)" not in err


@pytest.mark.parametrize("wait", ["nan", "inf", "-1"])
def test_a_wait_that_is_no_number_of_seconds_is_refused(tmp_path, capsys, wait):
    with pytest.raises(SystemExit) as e:
        main(["history", "check", "--db", str(tmp_path / "h.sqlite"), f"--wait={wait}"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "is not a number of seconds, 0 or more" in err and "Traceback" not in err
