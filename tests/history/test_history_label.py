"""A run's label (RunConfig.label, `--label`): what zeroloss's settings do not say (another tenant's load, a BIOS
profile) kept apart in the history. Two runs of one node, topology and settings that differ only in their label are
two series; without a label a run is in the series it was in before the setting existed."""

from __future__ import annotations

import pytest

from zeroloss.core.config import load
from zeroloss.core.errors import ZeroLossError
from zeroloss.history.db import open_db
from zeroloss.history.extract import series_settings
from zeroloss.history.ingest import ingest

from .conftest import FIXTURES
from .helpers import counts, read_doc, write_doc


def _labelled(tmp_path, label: str | None, name: str):
    doc = read_doc(FIXTURES / "result_v3.json.gz")
    if label is not None:
        doc["config"]["label"] = label
    doc["created"] = {"quiet": "2026-11-01T02:00:00Z", "hog": "2026-11-02T02:00:00Z",
                      "none": "2026-11-03T02:00:00Z"}[name]
    return write_doc(tmp_path / f"{name}.json", doc)


def test_runs_that_differ_only_in_their_label_are_two_series(db_url, tmp_path):
    db = open_db(db_url, create=True)
    ingest(db, _labelled(tmp_path, "", "quiet"), "node-a")
    one = counts(db)["series"]
    ingest(db, _labelled(tmp_path, None, "none"), "node-a")  # a file from before the setting: the same series
    assert counts(db)["series"] == one
    ingest(db, _labelled(tmp_path, "noisy-neighbour", "hog"), "node-a")
    assert counts(db)["series"] == 2 * one and counts(db)["runs"] == 3


def test_the_label_is_a_series_setting_and_text():
    assert series_settings({"label": "noisy-neighbour", "repeat": 3}) == {"label": "noisy-neighbour"}
    assert series_settings({"label": ""}) == {}
    assert load(None, {"label": 2026}).label == "2026"  # YAML's number kept as the text written


@pytest.mark.parametrize("bad", ["x" * 65, "two\nlines", "bell\x07"])
def test_a_label_that_is_no_name_is_one_line(bad):
    with pytest.raises(ZeroLossError, match="label must be at most 64 printable characters"):
        load(None, {"label": bad})
