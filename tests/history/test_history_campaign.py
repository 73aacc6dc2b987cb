"""A campaign file's `history` key (runs/campaign.py read_definition, cli/autoingest.py): the campaign YAML names the
database as a run's --config file does, at its top or in its base; --history and `none` still win; the key is no
run setting, so it is neither in the stored definition nor in a case's settings; a case cannot name one."""

from __future__ import annotations

import json
import shutil
from contextlib import nullcontext
from pathlib import Path

import pytest

from zeroloss.cli import autoingest
from zeroloss.cli.main import main
from zeroloss.core.errors import ZeroLossError
from zeroloss.history.db import open_db
from zeroloss.runs.campaign import read, read_definition

from .conftest import FIXTURES
from .helpers import counts, read_doc

CASES = "cases:\n  - name: two\n    set: {flows: 2}\n"


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "nightly.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("where", ["top", "base"])
def test_the_key_names_the_database_and_leaves_the_definition(tmp_path, where):
    db = "postgresql://zl:secret@db.lab/zl"
    text = (f"history: {db}\nbase: {{frame_sizes: [64]}}\n" if where == "top"
            else f"base: {{frame_sizes: [64], history: '{db}'}}\n") + CASES
    spec, history = read_definition(str(_yaml(tmp_path, text)))
    assert history == db
    assert "history" not in json.dumps(spec)  # the campaign file keeps the definition: no password in results
    assert spec["base"] == {"frame_sizes": [64]}
    assert read(str(_yaml(tmp_path, text))) == spec


def test_without_the_key_nothing_changes(tmp_path):
    text = "base: {frame_sizes: [64]}\n" + CASES
    spec, history = read_definition(str(_yaml(tmp_path, text)))
    assert history is None
    assert spec == {"name": "nightly", "base": {"frame_sizes": [64]},
                    "cases": [{"name": "two", "set": {"flows": 2}}]}


@pytest.mark.parametrize("text, expect", [
    ("history: a.sqlite\nbase: {history: b.sqlite}\n" + CASES, "history is given twice"),
    ("cases:\n  - name: two\n    set: {flows: 2, history: a.sqlite}\n", "case 'two' sets history"),
])
def test_a_database_named_twice_or_by_a_case_is_one_line(tmp_path, text, expect):
    with pytest.raises(ZeroLossError, match=expect):
        read_definition(str(_yaml(tmp_path, text)))


@pytest.fixture()
def fake_campaign(monkeypatch):
    """The campaign's measuring part replaced: it writes the stored campaign fixture and keeps what it was given."""
    from zeroloss.drivers import session
    from zeroloss.host import hostinfo
    from zeroloss.runs import campaign as campaign_mod

    seen: dict = {}

    def run_campaign(cf, cases, host, one):
        seen["definition"] = cf.record.definition
        shutil.copy(FIXTURES / "campaign_v1.json", cf.path)

    monkeypatch.setattr(session, "BENCH", nullcontext())
    monkeypatch.setattr(hostinfo, "collect", lambda: dict(read_doc(FIXTURES / "result_v3.json.gz")["host"]))
    monkeypatch.delenv(autoingest.ENV, raising=False)
    monkeypatch.setattr(campaign_mod, "run_campaign", run_campaign)
    return seen


def test_the_campaign_file_is_stored_where_its_yaml_says(fake_campaign, tmp_path, monkeypatch):
    db, other = tmp_path / "h.sqlite", tmp_path / "env.sqlite"
    monkeypatch.setenv(autoingest.ENV, str(other))  # the file's key comes before the environment
    camp = _yaml(tmp_path, f"history: {db}\nbase: {{frame_sizes: [64]}}\n" + CASES)
    assert main(["campaign", str(camp), "-o", str(tmp_path / "c.json"), "-q", "--json"]) == 0
    assert counts(open_db(str(db)))["documents"] == 1
    assert not other.exists()
    assert "history" not in json.dumps(fake_campaign["definition"])


def test_history_none_on_the_command_line_wins_over_the_file(fake_campaign, tmp_path):
    db = tmp_path / "h.sqlite"
    camp = _yaml(tmp_path, f"history: {db}\n" + CASES)
    assert main(["campaign", str(camp), "-o", str(tmp_path / "c.json"), "-q", "--json", "--history", "none"]) == 0
    assert not db.exists()


def test_a_key_that_names_no_database_is_refused_before_anything_runs(fake_campaign, tmp_path, capsys):
    camp = _yaml(tmp_path, "history: mysql://x@y/z\n" + CASES)
    assert main(["campaign", str(camp), "-o", str(tmp_path / "c.json"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "neither SQLite nor PostgreSQL" in err and "Traceback" not in err
    assert "definition" not in fake_campaign and not (tmp_path / "c.json").exists()
