"""The result journal: saving a trial appends one line (the same cost at trial 1 and trial 10,000); kill -9 at any
moment leaves a file that report, compare, explain and --resume read with every finished trial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.results import journal
from zeroloss.results.records import Ceiling, SearchOutcome, TrialEntry
from zeroloss.results.resultfile import ResultFile, read_result
from zeroloss.results.summary import load_runs

SRC = Path(__file__).resolve().parents[1] / "src"
HOST = {"hostname": "h", "cpu_model": "c", "kernel": "k"}
CONFIG = {"link_speed_gbps": 10.0, "ndr_loss_pct": 0.0, "pdr_loss_pct": 0.1, "frame_sizes": [64]}


def trial(i: int, rate: float = 1e6) -> TrialEntry:
    return TrialEntry.from_json({"index": i, "rate_pps": rate, "duration_s": 1.0, "kind": "search", "goal": "ndr",
                                 "verdict": "pass", "loss_ratio": 0.0, "passes": ["ndr"], "outcome": {"directions": [
                                     {"requested_pps": rate, "achieved_pps": rate, "tx": 100, "rx": 100}]}})


def test_a_trial_is_a_journal_line_and_the_file_is_written_whole_only_at_the_end(tmp_path):
    path = tmp_path / "r.json"
    rf = ResultFile.create(path, CONFIG, HOST)
    whole = path.read_bytes()
    rf.start_search(64, 0, link="memif", line_rate_pps=14880952.0)
    for i in range(5):
        rf.add_trial(64, 0, trial(i))
    assert path.read_bytes() == whole  # the document itself is not rewritten per trial
    lines = journal.path_of(path).read_text().splitlines()
    assert [json.loads(x)["op"] for x in lines] == ["search"] + ["trial"] * 5
    assert oct(journal.path_of(path).stat().st_mode & 0o777) == "0o600"
    assert len(read_result(path)["searches"][0]["trials"]) == 5
    rf.finish_search(64, 0, SearchOutcome.from_json({"ndr": {"rate_pps": 1e6}, "flags": []}), wall_s=3.0)
    rf.set_state("complete")
    assert not journal.path_of(path).exists()  # folded into the document
    doc = json.loads(path.read_text())
    assert doc["state"] == "complete" and len(doc["searches"][0]["trials"]) == 5 and doc["journal_seq"] == 8


def test_lines_already_in_the_document_are_not_applied_twice(tmp_path):
    """A crash between writing the compacted document and removing its journal."""
    path = tmp_path / "r.json"
    rf = ResultFile.create(path, CONFIG, HOST)
    rf.start_search(64, 0)
    rf.add_trial(64, 0, trial(0))
    kept = journal.path_of(path).read_bytes()
    rf.save()
    journal.path_of(path).write_bytes(kept)
    assert len(read_result(path)["searches"][0]["trials"]) == 1


def test_a_torn_last_line_is_not_a_change_and_a_damaged_line_is_one_error(tmp_path):
    path = tmp_path / "r.json"
    rf = ResultFile.create(path, CONFIG, HOST)
    rf.start_search(64, 0)
    rf.add_trial(64, 0, trial(0))
    with open(journal.path_of(path), "a") as f:
        f.write('{"seq": 3, "t": "x", "op": "trial", "frame": 64, "rep')  # kill -9 mid-write
    assert len(read_result(path)["searches"][0]["trials"]) == 1
    journal.path_of(path).write_text('{"seq": 1, "t": "x", "op": "trial", "frame": 128, "repeat": 0}\n')
    with pytest.raises(ZeroLossError, match=r"r.json.journal: line 1 is not a change"):
        read_result(path)


WRITER = """
import sys
sys.path.insert(0, {src!r})
from zeroloss.results.resultfile import ResultFile
from zeroloss.results.records import Ceiling, TrialEntry
rf = ResultFile.create(__import__('pathlib').Path({path!r}), {config!r}, {host!r})
rf.set_ceiling(64, Ceiling(pps=2e6, link="memif", how="loopback"))
rf.start_search(64, 0, link="memif", line_rate_pps=14880952.0, ceiling_pps=2e6)
i = 0
while True:
    rf.add_trial(64, 0, TrialEntry.from_json({{"index": i, "rate_pps": 1e6, "duration_s": 1.0, "kind": "search",
        "verdict": "pass", "loss_ratio": 0.0,
        "outcome": {{"directions": [{{"tx": 10, "rx": 10, "achieved_pps": 1e6}}]}}}}))
    print(i, flush=True)
    i += 1
"""


def test_kill_9_at_any_moment_leaves_every_finished_trial_readable_and_resumable(tmp_path):
    path = tmp_path / "r.json"
    code = WRITER.format(src=str(SRC), path=str(path), config=CONFIG, host=HOST)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        done = -1
        for line in p.stdout:
            done = int(line)
            if done >= 200:
                break
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    doc = read_result(path)
    trials = doc["searches"][0]["trials"]
    assert len(trials) >= done + 1 and [t["index"] for t in trials] == list(range(len(trials)))
    assert doc["ceilings"]["64"]["pps"] == 2e6
    (run,) = load_runs([str(path)])  # what report, compare and export read
    assert len(run.record.searches[0].trials) == len(trials)
    rf = ResultFile.load(path)  # --resume: folded in, journal gone
    assert not journal.path_of(path).exists() and len(rf.search(64, 0).trials) == len(trials)
    assert rf.run.ceiling(64) == Ceiling(pps=2e6, link="memif", how="loopback")


def test_the_save_benchmark_times_both_writers_on_the_same_trials(tmp_path):
    """python -m zeroloss.studies.savebench: the whole file grows with the trials, a journal line does not."""
    from zeroloss.studies.savebench import FIXTURE, measure, render

    rows = measure([1, 20], 1, FIXTURE, tmp_path)
    assert [r.trials for r in rows] == [1, 20]
    assert rows[1].old_bytes > 10 * rows[0].old_bytes and rows[1].new_bytes < 2 * rows[0].new_bytes
    assert all(r.old_ms > 0 and r.new_ms > 0 for r in rows) and list(tmp_path.iterdir()) == []
    assert "whole file ms" in render(rows, FIXTURE)
