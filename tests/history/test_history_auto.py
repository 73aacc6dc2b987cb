"""--history DB (cli/autoingest.py): run, campaign, events, tune and a soak store their result file when they end,
once, on SQLite and PostgreSQL; a database that cannot take it is one warning line and the command's exit code is
its own; which database (--history, the --config file's history key, $ZEROLOSS_HISTORY_AUTO); a lab node's name.
The commands run without DPDK: the part that measures is replaced by one that writes a stored result file."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from contextlib import nullcontext
from pathlib import Path

import pytest
from sqlalchemy import select

from zeroloss.cli import autoingest
from zeroloss.cli.main import build_parser, main
from zeroloss.core.errors import ZeroLossError
from zeroloss.history.db import open_db
from zeroloss.history.models import Run

from .conftest import FIXTURES
from .helpers import counts, read_doc, soak_doc, write_doc

KINDS = {"run": "result_v3.json.gz", "campaign": "campaign_v1.json", "tune": "tune_v1.json",
         "events": "events_v1.json"}


def _fixture(tmp_path: Path, kind: str) -> Path:
    if kind == "soak":
        return write_doc(tmp_path / "soak.json", soak_doc())
    return Path(shutil.copy(FIXTURES / KINDS[kind], tmp_path / KINDS[kind]))


def _history_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "history:" in line]


@pytest.mark.parametrize("kind", ["run", "campaign", "tune", "events", "soak"])
def test_the_hook_stores_each_kind_once(db_url, tmp_path, capsys, kind):
    path = _fixture(tmp_path, kind)
    autoingest.store(db_url, path, node="compute-3" if kind == "soak" else None)  # a soak file names no host
    lines = _history_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(f"history: {path}: stored") and "warning" not in lines[0]
    n = counts(open_db(db_url))
    assert n["documents"] == 1 and n["runs"] >= 1
    autoingest.store(db_url, path, quiet=True, node="compute-3" if kind == "soak" else None)  # again: once, quiet
    assert capsys.readouterr().err == ""
    assert counts(open_db(db_url)) == n


def _unreachable(tmp_path: Path, held: list) -> str:
    return "postgresql://zl:secret@127.0.0.1:1/history"  # nothing listens on port 1


def _not_sqlite(tmp_path: Path, held: list) -> str:
    (tmp_path / "junk.sqlite").write_bytes(b"this is no database, only text that is long enough" * 50)
    return str(tmp_path / "junk.sqlite")


def _unwritable(tmp_path: Path, held: list) -> str:
    (tmp_path / "file").write_text("a file where a folder should be")
    return str(tmp_path / "file" / "history.sqlite")


def _locked(tmp_path: Path, held: list) -> str:
    path = tmp_path / "locked.sqlite"
    open_db(str(path))  # a history, its schema made
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds it until the test ends
    held.append(holder)
    return str(path)


@pytest.mark.parametrize("bad", [_unreachable, _not_sqlite, _unwritable, _locked, lambda *_: "mysql://x@y/z"],
                         ids=["unreachable", "not-sqlite", "unwritable", "locked", "foreign-url"])
def test_a_database_that_cannot_take_it_is_one_warning_and_the_file_is_kept(tmp_path, capsys, monkeypatch, bad):
    monkeypatch.setattr(autoingest, "WAIT_S", 0.3)
    path = _fixture(tmp_path, "run")
    before = path.read_bytes()
    held: list[sqlite3.Connection] = []
    db = bad(tmp_path, held)
    autoingest.store(db, path)  # raises nothing
    for conn in held:
        conn.close()
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"warning: history: {path} not stored: ") and "zeroloss history ingest --db " in err
    assert "secret" not in err  # a URL's password is not shown
    if db.startswith("postgresql"):  # the command to store it later runs as copied: no masked password in it
        assert err.endswith(f"zeroloss history ingest --db postgresql://zl@127.0.0.1:1/history {path}"), err
    assert path.read_bytes() == before


def _args(**kw) -> object:
    import argparse

    return argparse.Namespace(**kw)


def test_which_database(tmp_path, monkeypatch):
    monkeypatch.delenv(autoingest.ENV, raising=False)
    config = tmp_path / "run.yaml"
    config.write_text("flows: 64\nhistory: /srv/config.sqlite\n")
    bare = tmp_path / "bare.yaml"
    bare.write_text("flows: 64\n")
    off = tmp_path / "off.yaml"
    off.write_text("history: none\n")
    assert autoingest.database(_args(history=None, config=None)) is None  # nothing asked: nothing stored
    assert autoingest.database(_args(history=None, config=str(bare))) is None
    assert autoingest.database(_args(history=None, config=str(config))) == "/srv/config.sqlite"
    assert autoingest.database(_args(history="/srv/flag.sqlite", config=str(config))) == "/srv/flag.sqlite"
    monkeypatch.setenv(autoingest.ENV, "postgresql://zl@db.lab/zl")
    assert autoingest.database(_args(history=None)) == "postgresql://zl@db.lab/zl"  # campaign, trial: no --config
    assert autoingest.database(_args(history=None, config=str(bare))) == "postgresql://zl@db.lab/zl"
    assert autoingest.database(_args(history=None, config=str(config))) == "/srv/config.sqlite"
    assert autoingest.database(_args(history=None, config=str(off))) is None  # the config file's none wins
    assert autoingest.database(_args(history="none", config=str(config))) is None
    assert autoingest.database(_args(history="default")) == autoingest.DEFAULT
    config.write_text("history: 5\n")
    with pytest.raises(ZeroLossError, match="history must be a history database"):
        autoingest.database(_args(history=None, config=str(config)))


def test_default_is_the_history_default_database(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ZEROLOSS_HISTORY", str(tmp_path / "h" / "default.sqlite"))
    autoingest.store(autoingest.DEFAULT, _fixture(tmp_path, "run"))
    assert counts(open_db(str(tmp_path / "h" / "default.sqlite")))["documents"] == 1
    assert "default.sqlite" in capsys.readouterr().err


def test_a_lab_node_is_recorded_by_its_name_and_a_campaign_over_two_nodes_by_theirs(tmp_path):
    """As a lab target places itself (targets/kinds/lab.py: lab_host, then lab with the ssh target and the lab
    file): the node is the lab file's dut.ssh host, each case's own in a campaign over several nodes."""
    lab = {"lab_host": {"host": "zl@compute-3", "hostname": "compute-3.lab"},
           "lab": {"dut": "zl@compute-3", "lab_file": "labs/compute-3.yaml", "ovs_version": "3.1.0"}}
    run = write_doc(tmp_path / "lab.json", {**read_doc(FIXTURES / "result_v3.json.gz"), "placement": lab})
    camp = read_doc(FIXTURES / "campaign_v1.json")
    for k, case in enumerate(c for c in camp["cases"] if c.get("run")):
        node = f"compute-{k % 2}"
        case["run"]["placement"] = {"lab": {"dut": f"root@{node}", "lab_file": f"labs/{node}.yaml"}}
    fleet = write_doc(tmp_path / "fleet.json", camp)
    db = str(tmp_path / "h.sqlite")
    autoingest.store(db, run)
    autoingest.store(db, fleet)
    with open_db(db).transaction() as conn:
        nodes = conn.execute(select(Run.node)).scalars().all()
    assert nodes.count("compute-3") == 1
    assert sorted(set(nodes) - {"compute-3"}) == ["compute-0", "compute-1"]


# -- the commands: their hook called once when they end with a result, never on an error or Ctrl-C -------------

@pytest.fixture
def no_bench(monkeypatch):
    """The bench lock and the host's inventory as a command takes them, without the bench."""
    from zeroloss.drivers import session
    from zeroloss.host import hostinfo

    monkeypatch.setattr(session, "BENCH", nullcontext())
    monkeypatch.setattr(hostinfo, "collect", lambda: dict(read_doc(FIXTURES / "result_v3.json.gz")["host"]))
    monkeypatch.delenv(autoingest.ENV, raising=False)


def _fake_run(monkeypatch, tmp_path, outcome):
    """`zeroloss run`'s measuring part (cli/run.py _execute) replaced: it writes the v3 fixture where the run's file
    goes and hands it back, or ends as `outcome` says."""
    from zeroloss.cli import run as run_mod
    from zeroloss.results.resultfile import ResultFile

    calls = []

    def execute(args, cfg, path, host):
        calls.append(path)
        if outcome == "interrupted":
            return None
        if outcome == "error":
            raise ZeroLossError(f"testpmd died (trials so far: {path})")
        shutil.copy(FIXTURES / "result_v3.json.gz", path)
        return ResultFile.load(path)

    monkeypatch.setattr(run_mod, "_execute", execute)
    return calls


@pytest.mark.parametrize("outcome, code", [("result", None), ("interrupted", 130), ("error", 1)])
def test_run_stores_its_file_once_when_it_ends_with_a_result(no_bench, tmp_path, monkeypatch, capsys, outcome, code):
    from zeroloss.results.resultfile import ResultFile
    from zeroloss.results.verdict import verdict

    calls = _fake_run(monkeypatch, tmp_path, outcome)
    db, out = tmp_path / "h.sqlite", tmp_path / "r.json.gz"
    got = main(["run", "--frame-sizes", "64", "-o", str(out), "--history", str(db), "-q"])
    assert calls == [out]
    if outcome != "result":
        assert got == code and not db.exists()  # nothing stored: the file is cut short
        return
    assert got == verdict(ResultFile.load(out).run).exit_code
    assert counts(open_db(str(db)))["documents"] == 1


@pytest.mark.parametrize("db", ["bad", "none", "env"])
def test_run_exit_code_is_its_own_whatever_the_database(no_bench, tmp_path, monkeypatch, capsys, db):
    monkeypatch.setattr(autoingest, "WAIT_S", 0.3)
    _fake_run(monkeypatch, tmp_path, "result")
    out = tmp_path / "r.json.gz"
    args = ["run", "--frame-sizes", "64", "-o", str(out), "--json"]
    plain = main(args)  # no --history: nothing stored, nothing said
    assert "history" not in capsys.readouterr().err
    out.unlink()
    if db == "bad":
        (tmp_path / "junk.sqlite").write_text("not a database " * 100)
        assert main([*args, "--history", str(tmp_path / "junk.sqlite")]) == plain
        assert len(_history_lines(capsys.readouterr().err)) == 1 and out.exists()
    elif db == "none":
        monkeypatch.setenv(autoingest.ENV, str(tmp_path / "env.sqlite"))
        assert main([*args, "--history", "none"]) == plain
        assert not (tmp_path / "env.sqlite").exists()
    else:
        monkeypatch.setenv(autoingest.ENV, str(tmp_path / "env.sqlite"))
        assert main(args) == plain
        assert counts(open_db(str(tmp_path / "env.sqlite")))["documents"] == 1


def test_a_soak_stores_its_file_whatever_it_lost(no_bench, tmp_path, monkeypatch, capsys):
    from zeroloss.runs import soak as soak_mod

    def soak(cfg, target, frame, rate, duration, interval, out, progress, warnings):
        doc = soak_doc()
        for d in doc["result"]["directions"]:
            d["achieved_pps"] = d["tx"] / doc["duration_s"]
        write_doc(out, doc)
        return doc

    monkeypatch.setattr(soak_mod, "soak_target", lambda cfg, frame, warn: None)
    monkeypatch.setattr(soak_mod, "soak", soak)
    db, out = tmp_path / "h.sqlite", tmp_path / "soak.json"
    assert main(["trial", "--interval", "1", "--duration", "5", "-o", str(out), "--history", str(db)]) == 2  # lost 70
    with open_db(str(db)).transaction() as conn:
        node = conn.execute(select(Run.node)).scalar_one()
    assert node == autoingest.bench_node() != "unknown"  # the bench host, as a run on it is named
    assert len(_history_lines(capsys.readouterr().err)) == 1


def test_a_plain_trial_refuses_history(capsys):
    assert main(["trial", "--history", "h.sqlite"]) == 1
    assert "--history stores a soak's file" in capsys.readouterr().err


def test_events_stores_its_file(no_bench, tmp_path, monkeypatch, capsys):
    from zeroloss.cli import events as events_cli
    from zeroloss.results.events import EventsRecord
    from zeroloss.runs import events as events_mod

    class FakeRun:
        def __init__(self, cfg, plan, path, host, progress, warn):
            self.path = path

        def execute(self) -> EventsRecord:
            shutil.copy(FIXTURES / "events_v1.json", self.path)
            return EventsRecord.from_json(read_doc(self.path))

    monkeypatch.setattr(events_cli, "_settings", lambda args: (None, None))
    monkeypatch.setattr(events_mod, "EventsRun", FakeRun)
    db, out = tmp_path / "h.sqlite", tmp_path / "ev.json"
    assert main(["events", "-o", str(out), "--history", str(db), "--json", "-q"]) == 0
    assert counts(open_db(str(db)))["documents"] == 1


def test_every_command_that_ends_with_a_file_takes_history():
    parser = build_parser()
    for argv in (["run"], ["campaign", "x"], ["events"], ["tune"], ["trial", "--interval", "1"]):
        assert parser.parse_args([*argv, "--history", "h.sqlite"]).history == "h.sqlite"


def test_campaign_stores_its_file_once_and_not_when_interrupted(no_bench, tmp_path, monkeypatch):
    from zeroloss.runs import campaign as campaign_mod

    def run_campaign(cf, cases, host, one):
        if interrupted:
            raise KeyboardInterrupt
        shutil.copy(FIXTURES / "campaign_v1.json", cf.path)  # what the campaign's cases wrote

    monkeypatch.setattr(campaign_mod, "run_campaign", run_campaign)
    db = tmp_path / "h.sqlite"
    monkeypatch.setenv(autoingest.ENV, str(db))  # campaign takes no --config: its default is the environment's
    interrupted = True
    assert main(["campaign", "vnf-ring", "-o", str(tmp_path / "cut.json"), "-q"]) == 130
    assert not db.exists()
    interrupted = False
    assert main(["campaign", "vnf-ring", "-o", str(tmp_path / "c.json"), "-q", "--json"]) == 0
    assert counts(open_db(str(db)))["documents"] == 1


@pytest.mark.parametrize("met, code", [(True, 0), (False, 2)])
def test_tune_stores_its_file_whether_it_met_its_target_or_not(no_bench, tmp_path, monkeypatch, capsys, met, code):
    from zeroloss.cli import tune as tune_cli
    from zeroloss.results.campaigns import CampaignRecord
    from zeroloss.runs.tune import loop

    class Cut:
        path = tmp_path / "t.json"

        def end(self, state: str) -> None:
            raise AssertionError(state)

    def run_tune(cf, host, run_case, progress, hugepages_mb, check):
        shutil.copy(FIXTURES / "tune_v1.json", cf.path)
        t = CampaignRecord.from_json(read_doc(cf.path)).tune
        assert t is not None
        return dataclasses.replace(t, stop="target met: every size" if met else "budget spent")

    monkeypatch.setattr(tune_cli, "_start", lambda args: (None, None, Cut.path))
    monkeypatch.setattr(loop, "resume", lambda path, host: Cut())
    monkeypatch.setattr(loop, "run_tune", run_tune)
    assert main(["tune", "--resume", str(Cut.path), "--history", str(tmp_path / "h.sqlite"), "-q"]) == code
    assert counts(open_db(str(tmp_path / "h.sqlite")))["documents"] == 1


def test_the_config_files_history_key_is_no_run_setting(no_bench, tmp_path, monkeypatch):
    """A --config file's history key chooses the database and stays out of the settings (so out of the result file
    and the series); --set history=... is no setting."""
    from zeroloss.core import config

    _fake_run(monkeypatch, tmp_path, "result")
    db, out, cfg_file = tmp_path / "h.sqlite", tmp_path / "r.json.gz", tmp_path / "run.yaml"
    cfg_file.write_text(f"flows: 64\nhistory: {db}\n")
    assert "history" not in config.load(cfg_file, {}).to_dict()
    main(["run", "--config", str(cfg_file), "--frame-sizes", "64", "-o", str(out), "-q"])
    assert counts(open_db(str(db)))["documents"] == 1
    with pytest.raises(ZeroLossError, match="unknown key 'history'"):
        config.load(None, {"history": str(db)})


@pytest.mark.parametrize("given, expect", [("mysql://x@y/z", "is neither SQLite nor PostgreSQL"),
                                           ("postgresql://u@h:port/db", "is not a database URL")])
def test_a_url_that_names_no_database_is_refused_before_anything_runs(given, expect, monkeypatch):
    """A --history that cannot name a database is one line when the command starts (store() would only warn at its
    end, after the whole run); nothing is opened to say so."""
    monkeypatch.delenv(autoingest.ENV, raising=False)
    with pytest.raises(ZeroLossError, match=expect):
        autoingest.database(_args(history=given, config=None))
    monkeypatch.setenv(autoingest.ENV, given)
    with pytest.raises(ZeroLossError, match=expect):
        autoingest.database(_args(history=None, config=None))
