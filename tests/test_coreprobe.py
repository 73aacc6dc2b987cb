"""The core-sharing probe (zlcores, host/coreprobe.py): two threads on one core split it and read as shared;
a result whose probe said shared flags its sizes; a probe that cannot run warns and never stops a run."""

from __future__ import annotations

import os

import pytest

from test_verdict import doc
from zeroloss.errors import ZeroLossError
from zeroloss.fmt import FLAG_TEXT, run_table
from zeroloss.host import coreprobe
from zeroloss.proc import GEN_BUILD
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_result
from zeroloss.results.schema import RUN
from zeroloss.results.summary import frame_rows

NEEDS_ZLCORES = pytest.mark.skipif(not os.access(GEN_BUILD / "zlcores", os.X_OK),
                                   reason="zlcores is not built (make build)")


@NEEDS_ZLCORES
def test_one_core_named_twice_is_shared():
    """Two workers pinned to one core get half of it each (time slicing): the probe must call that shared, the
    case the bench meets when a hypervisor runs both of its vCPUs on one physical CPU."""
    core = sorted(os.sched_getaffinity(0))[-1]
    r = coreprobe.probe([core, core], ms=50, rounds=2)
    assert r["cores"] == [core, core] and len(r["ratio"]) == 2
    assert all(0.3 < x < 0.7 for x in r["ratio"]), r
    assert r["shared"] and "shared" in coreprobe.describe(r)
    assert all(a > 0 for a in r["alone_mops"]) and all(t > 0 for t in r["together_mops"])


@NEEDS_ZLCORES
def test_a_reading_of_two_cores_is_whole():
    """Whatever this host's cores are, the reading has a ratio per core within what sharing allows."""
    cores = sorted(os.sched_getaffinity(0))[:2]
    if len(cores) < 2:
        pytest.skip("one usable core")
    r = coreprobe.probe(cores, ms=50, rounds=2)
    assert r["cores"] == cores and all(0 < x < 1.5 for x in r["ratio"]), r
    assert r["shared"] == (min(r["ratio"]) < coreprobe.SHARED_BELOW)


@NEEDS_ZLCORES
def test_a_core_we_cannot_use_is_one_line():
    with pytest.raises(ZeroLossError, match=r"core probe on cores \[0, 1000\] failed: zlcores: cannot run on core"):
        coreprobe.probe([0, 1000])


def test_shared_is_any_core_below_the_threshold():
    assert coreprobe.shared([0.51, 0.98]) and not coreprobe.shared([0.97, 1.0]) and not coreprobe.shared([])
    assert not coreprobe.shared([0.77, 0.8])  # the hypervisor holding both vCPUs up for a moment: seen


def test_a_shared_probe_flags_its_sizes_only_and_the_table_says_why():
    d = doc({64: [3_000_000.0], 1518: [900_000.0]})
    d["core_probes"] = [{"frames": [64], "cores": [0, 1], "ratio": [0.5, 0.52], "shared": True},
                        {"frames": [1518], "cores": [0, 1], "ratio": [0.99, 1.0], "shared": False}]
    run = RunRecord.from_json(d)
    rows = {r.frame: r for r in frame_rows(run)}
    assert "cores-shared" in rows[64].flags and "cores-shared" not in rows[1518].flags
    assert FLAG_TEXT["cores-shared"] in run_table(run)


def test_the_schema_reads_a_probe_and_refuses_a_broken_one():
    import jsonschema

    good = {"frames": [64], "cores": [0, 1], "ratio": [0.99, 1.0], "shared": False, "alone_mops": [1.0, 1.0]}
    jsonschema.validate({"config": {"link_speed_gbps": 25, "ndr_loss_pct": 0, "pdr_loss_pct": 0.1}, "host": {},
                         "searches": [], "core_probes": [good]}, RUN)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"config": {"link_speed_gbps": 25, "ndr_loss_pct": 0, "pdr_loss_pct": 0.1},
                             "host": {}, "searches": [], "core_probes": [{**good, "shared": "no"}]}, RUN)


def _run(tmp_path, **settings):
    from zeroloss.config import load
    from zeroloss.results.resultfile import ResultFile
    from zeroloss.runner import Run

    cfg = load(None, {"frame_sizes": [64], **settings})
    events = []
    run = Run(cfg, ResultFile.create(tmp_path / "r.json", cfg.to_dict(), {"hostname": "t"}),
              lambda event, data: events.append(event))
    return run, events


def test_a_probe_that_cannot_run_warns_and_the_run_goes_on(tmp_path, monkeypatch):
    def missing():
        raise ZeroLossError("zlcores (the core-sharing probe) is not built", "run 'make setup'")

    monkeypatch.setattr(coreprobe, "zlcores_binary", missing)
    run, events = _run(tmp_path)
    run._probe_cores([64], {0, 1})
    assert events == [] and run.rf.run.core_probes is None
    assert list(run.rf.run.all_warnings()) == [
        "core probe: zlcores (the core-sharing probe) is not built: run 'make setup'"]


def test_a_shared_reading_is_kept_with_its_sizes_and_warned(tmp_path, monkeypatch):
    seen = []

    def fake(cores, ms=50, rounds=3):
        seen.append(cores)
        return {"cores": cores, "ratio": [0.5, 0.5], "shared": True}

    monkeypatch.setattr(coreprobe, "probe", fake)
    run, shown = _run(tmp_path)
    run._probe_cores([64, 128], {1, 0})
    assert shown == ["cores"]
    assert seen == [[0, 1]] and run.rf.run.core_probes[0].frames == (64, 128)
    assert "cores 0,1: together 0.50/0.50 of alone (shared" in run.rf.run.all_warnings()[0]
    assert read_result(tmp_path / "r.json")["core_probes"]  # on disk (its journal) before the bench starts
    (tmp_path / "off").mkdir()
    run2, events = _run(tmp_path / "off", core_probe=False)
    run2._probe_cores([64], {0, 1})
    (tmp_path / "one").mkdir()
    run3, events3 = _run(tmp_path / "one")
    run3._probe_cores([64], {0})
    assert events == [] and events3 == [] and len(seen) == 1  # off, or one core only: no probe


@NEEDS_ZLCORES
def test_host_cores_prints_a_reading_and_exits_3_only_when_shared():
    import json
    import subprocess
    import sys

    cores = sorted(os.sched_getaffinity(0))[:2]
    if len(cores) < 2:
        pytest.skip("one usable core")
    cli = [sys.executable, "-m", "zeroloss.cli", "host", "cores"]
    r = subprocess.run([*cli, "--cores", ",".join(map(str, cores)), "--rounds", "1", "--json"], capture_output=True,
                       text=True, timeout=60)
    reading = json.loads(r.stdout)
    assert r.returncode == (3 if reading["shared"] else 0) and reading["cores"] == cores, r.stderr
    r = subprocess.run([*cli, "--cores", ",".join(map(str, cores)), "--rounds", "1"], capture_output=True, text=True,
                       timeout=60)
    assert "together/alone" in r.stdout and f"cores {cores[0]},{cores[1]}: together" in r.stdout
    for bad, words in ((["--cores", "0"], "names one core"), (["--cores", "0-x"], "is not a list of cores")):
        r = subprocess.run([*cli, *bad], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    # --rounds is ranged by its argparse type: argparse's usage error (exit 2), no traceback
    r = subprocess.run([*cli, "--cores", "0,1", "--rounds", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--rounds: 0 must be at least 1" in r.stderr and "Traceback" not in r.stderr
