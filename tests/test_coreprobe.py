"""The core-sharing probe (zlcores, drivers/probe/coreprobe.py): two threads on one core split it and read as shared;
a result whose probe said shared flags its sizes; a probe that cannot run warns and never stops a run."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest

from test_verdict import doc
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.probe import coreprobe
from zeroloss.drivers.proc import GEN_BUILD
from zeroloss.results.fmt import FLAG_TEXT, run_table
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_result
from zeroloss.results.schema import RUN
from zeroloss.results.summary import frame_rows

NEEDS_ZLCORES = pytest.mark.skipif(not os.access(GEN_BUILD / "zlcores", os.X_OK),
                                   reason="zlcores is not built (make build)")


@NEEDS_ZLCORES
@pytest.mark.alone  # another test on its core would change the reading (tests/workers.py)
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
@pytest.mark.alone  # another test on its core would change the reading (tests/workers.py)
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
    from zeroloss.core.config import load
    from zeroloss.results.resultfile import ResultFile
    from zeroloss.runs.run import Run

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


class Clock:
    """runner.time for a test: sleep advances monotonic at once (the probe's own time is PROBE_S each)."""

    PROBE_S = 0.7

    def __init__(self):
        self.now, self.slept = 100.0, []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.slept.append(s)
        self.now += s

    def strftime(self, fmt):
        return "2026-12-01T16:38:00"


def _probes(monkeypatch, clock, ratios):
    """coreprobe.probe faked: each call the next of ratios (the last repeated), taking the probe's time."""
    seen = []

    def fake(cores, ms=50, rounds=3):
        r = ratios[min(len(seen), len(ratios) - 1)]
        seen.append(cores)
        clock.now += clock.PROBE_S
        return {"cores": cores, "ratio": r, "shared": coreprobe.shared(r), "when": f"t{len(seen)}"}

    monkeypatch.setattr(coreprobe, "probe", fake)
    return seen


@pytest.fixture
def clock(monkeypatch):
    import zeroloss.runs.corewatch

    c = Clock()
    monkeypatch.setattr(zeroloss.runs.corewatch, "time", c)
    return c


def test_a_shared_reading_is_kept_with_its_sizes_and_warned(tmp_path, monkeypatch, clock):
    seen = _probes(monkeypatch, clock, [[0.5, 0.5]])
    run, shown = _run(tmp_path, core_probe_wait_s=0)  # no wait: one probe, measured anyway
    run._probe_cores([64, 128], {1, 0})
    assert shown == ["cores"] and clock.slept == []
    assert seen == [[0, 1]] and run.rf.run.core_probes[0].frames == (64, 128)
    assert run.rf.run.core_probes[0].attempts == 1 and run.rf.run.core_probes[0].trigger == "frame"
    assert run.rf.run.all_warnings() == (
        "cores 0,1: together 0.50/0.50 of alone (shared: they split one physical core): 64 B, 128 B measured on "
        "them anyway, flagged cores-shared (an NDR measured there is the sharing's, not the data path's); pin the "
        "generator and the DUT to separate physical cores, or run again when the host gives them",)
    assert read_result(tmp_path / "r.json")["core_probes"]  # on disk (its journal) before the size is measured
    (tmp_path / "off").mkdir()
    run2, events = _run(tmp_path / "off", core_probe=False)
    run2._probe_cores([64], {0, 1})
    (tmp_path / "one").mkdir()
    run3, events3 = _run(tmp_path / "one")
    run3._probe_cores([64], {0})
    assert events == [] and events3 == [] and len(seen) == 1  # off, or one core only: no probe


def test_a_shared_host_is_waited_for_and_the_size_measured_after_it_came_back(tmp_path, monkeypatch, clock):
    """16:38 read 0.52, 16:45 1.00 on one idle VM: the probe waits (bounded) for the host to give the cores back,
    holding the bench's pollers only while it probes, and keeps the reading the size was measured after."""
    seen = _probes(monkeypatch, clock, [[0.52, 0.51], [0.55, 0.6], [0.99, 1.0]])
    held = []

    @contextmanager
    def hold():
        held.append("stop")
        yield
        held.append("run")

    run, shown = _run(tmp_path)
    run._probe_cores([128], {0, 1}, hold)
    assert len(seen) == 3 and held == ["stop", "run"] * 3 and clock.slept == [2.0, 2.0]
    (p,) = run.rf.run.core_probes
    assert (p.frames, p.ratio, p.shared, p.attempts, p.waited_s, p.when) == ((128,), (0.99, 1.0), False, 3, 6.1, "t3")
    assert run.rf.run.all_warnings() == () and shown == ["cores", "cores"]
    assert not run._cores_waited_out


def test_a_host_that_never_gives_the_cores_is_waited_for_a_bounded_time_and_said_once(tmp_path, monkeypatch, clock):
    seen = _probes(monkeypatch, clock, [[0.52, 0.51]])
    run, shown = _run(tmp_path, core_probe_wait_s=10)
    run._probe_cores([64], {0, 1})
    (p,) = run.rf.run.core_probes
    assert p.shared and p.attempts == len(seen) == 4 and p.waited_s <= 10  # 0.7 + 3 x (2 + 0.7) = 8.8 s
    (warning,) = run.rf.run.all_warnings()
    assert "the host never gave independent cores in 9 s (4 probes); 64 B measured on them anyway" in warning
    assert run._cores_waited_out
    frames = {p.frames[0]: p.shared for p in run.rf.run.core_probes}
    assert frames == {64: True}


def _entry(index, verdict):
    from zeroloss.results.records import TrialEntry

    return TrialEntry(index=index, rate_pps=1e6, duration_s=1.0, verdict=verdict)


class _Target:
    def cores(self):
        return {0, 1}


def test_a_run_of_disturbed_or_generator_failed_trials_probes_again_mid_search(tmp_path, monkeypatch, clock):
    seen = _probes(monkeypatch, clock, [[0.99, 1.0], [0.5, 0.5]])
    run, shown = _run(tmp_path, core_probe_wait_s=5)
    run._probe_cores([64], {0, 1})  # before the size: independent
    t, lines = _Target(), []
    run.progress = lambda event, data: lines.append(data["line"])
    verdicts = ["disturbed", "generator-failure", "pass",  # broken by a pass: no probe
                "disturbed", "generator-failure", "disturbed",  # a run of three: probed (shared, waited 5 s)
                "disturbed", "disturbed"]
    for i, v in enumerate(verdicts):
        run._cores_after_trial(t, 64, _entry(i, v), replayed=False)
    for i in range(3):  # a resumed search's stored trials are not this host's now
        run._cores_after_trial(t, 64, _entry(i, "disturbed"), replayed=True)
    assert len(seen) == 1 + 2  # 5 s: 0.7 + 2 + 0.7 + 2 > 5 after the second
    probes = run.rf.run.core_probes
    assert [(p.trigger, p.after_trial, p.shared) for p in probes] == [("frame", None, False), ("disturbed", 5, True)]
    assert "64 B from trial 7 on measured on them anyway" in run.rf.run.all_warnings()[0]
    assert lines[-1].startswith("after 3 disturbed or generator-failed trials: cores 0,1: together 0.50/0.50")
    # the wait ran out for this size: the next run of three probes once, without waiting
    for i in range(8, 11):
        run._cores_after_trial(t, 64, _entry(i, "disturbed"), replayed=False)
    assert len(seen) == 4 and run.rf.run.core_probes[-1].attempts == 1
    # the next size starts a new watch, and waits again
    run._probe_cores([128], {0, 1})
    assert run.rf.run.core_probes[-1].attempts > 1


def test_only_sizes_measured_while_shared_are_flagged():
    from zeroloss.results.verdict import _shared_frames

    d = doc({64: [3_000_000.0], 128: [2_000_000.0], 256: [1_500_000.0]})
    d["core_probes"] = [
        {"frames": [64], "cores": [0, 1], "ratio": [0.99, 1.0], "shared": False, "trigger": "frame"},
        {"frames": [64], "cores": [0, 1], "ratio": [0.5, 0.52], "shared": True, "trigger": "disturbed",
         "after_trial": 4, "attempts": 6, "waited_s": 14.2},  # 64 B: shared from trial 6 on
        {"frames": [128], "cores": [0, 1], "ratio": [0.99, 1.0], "shared": False, "trigger": "frame", "attempts": 3,
         "waited_s": 5.4},  # shared, then given back before 128 B was measured
        {"frames": [256], "cores": [0, 1], "ratio": [1.0, 1.0], "shared": False, "trigger": "frame"}]
    run = RunRecord.from_json(d)
    assert _shared_frames(run) == {64}
    rows = {r.frame: "cores-shared" in r.flags for r in frame_rows(run)}
    assert rows == {64: True, 128: False, 256: False}
    assert run.to_json()["core_probes"] == d["core_probes"]  # the new fields travel


@NEEDS_ZLCORES
@pytest.mark.alone  # a reading of this host's cores (tests/workers.py)
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


class _Vnf:
    def __init__(self, log):
        self.log = log

    def pause(self):
        self.log.append("vnf stop")

    def resume(self):
        self.log.append("vnf run")


def test_a_bench_s_pollers_are_held_for_the_probe_and_let_run_whatever_happens(tmp_path):
    """zlgen stopped first and let run last, every thread stopped, marked held (no health check calls it a stopped
    component), and running again after the block, also when the block fails; a target that is not a bench of the
    run's (an external DUT) is not stopped."""
    from zeroloss.core.config import RunConfig
    from zeroloss.drivers.bench.softbench import SoftBench
    from zeroloss.drivers.proc import ManagedProcess, check_alive, proc_state
    from zeroloss.targets.kinds.external import ExternalTarget
    from zeroloss.targets.kinds.testpmd import P2pTarget
    from zeroloss.targets.pollers import pollers_held

    log = []
    with ManagedProcess("zlgen", ["sleep", "30"], tmp_path / "gen.log") as gen:
        bench = SoftBench.__new__(SoftBench)
        bench.gen, bench.dut = type("G", (), {"proc": gen})(), _Vnf(log)
        target = P2pTarget(RunConfig(), "memif", [64])
        target.bench = bench
        with pollers_held(target) as held:
            assert held and proc_state(gen.pid) in ("T", "t") and gen.held and log == ["vnf stop"]
            check_alive([gen])  # held on purpose: not a fault
        assert proc_state(gen.pid) not in ("T", "t") and not gen.held and log == ["vnf stop", "vnf run"]
        with pytest.raises(ZeroLossError), pollers_held(target):
            raise ZeroLossError("the probe failed")
        assert proc_state(gen.pid) not in ("T", "t") and not gen.held and log[-1] == "vnf run"
    with pollers_held(ExternalTarget(RunConfig(), [64])) as held:
        assert not held
