"""`zeroloss run` on the real bench: the search converges, every trial's frames are accounted for,
repeats report their spread, Ctrl-C leaves a resumable file, bad input is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.resultfile import read_doc

from .test_cli_bench import our_processes
from .verdicts import assert_ran

ZEROLOSS = [sys.executable, "-m", "zeroloss.cli"]
# the warm-up trial has its own tests (the meter search, the README's main command); zlgen's ceiling and the MRR
# are measured flat out for 0.3 s like the trials (the 1 s default: the README's main command, test_cli_bench)
FAST_LATENCY = ["--trial", "0.3", "--validation", "0.6", "--drain-ms", "100", "--granularity", "5", "--flows", "64",
                "--warmup", "0", "--set", "ceiling_s=0.3"]
# latency vs load (on by default) has its own bench test and the main run test: the other runs go without it
FAST_PROBED = [*FAST_LATENCY, "--latency-loads", "none"]
# the core probe (~2 s a bench) has its own tests (test_coreprobe, the main run test, the PVP run test, the README's
# command): the other runs go without it, as they go without latency vs load
NO_PROBE = ["--set", "core_probe=false"]
FAST = [*FAST_PROBED, *NO_PROBE]


def run(*args, timeout=600, env=None):
    return subprocess.run([*ZEROLOSS, "run", *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_run_converges_and_every_frame_is_accounted_for(tmp_path):
    out = tmp_path / "r.json"
    r = run("--frame-sizes", "64,9000", *FAST_LATENCY, "-o", str(out), "--json")
    assert_ran(r)
    summary = json.loads(r.stdout)
    doc = read_doc(out)
    assert doc["format"] == "zeroloss-result" and doc["version"] == 3 and doc["state"] == "complete"
    assert doc["host"]["cpus"] and doc["host"]["kernel"] and doc["placement"]["memif"]["dpdk"].startswith("DPDK")
    assert [s["frame"] for s in summary["searches"]] == [64, 9000]
    assert [s["link"] for s in doc["searches"]] == ["memif", "vhost"]
    assert doc["ceilings"]["64"]["how"] == "loopback"
    # the core probe ran before each size (memif, then vhost), on zlgen's and testpmd's cores, both held still
    assert [(p["frames"], p["cores"]) for p in doc["core_probes"] if p["trigger"] == "frame"] == [([64], [0, 1]),
                                                                                                ([9000], [0, 1])]
    assert all(p["shared"] == (min(p["ratio"]) < 0.65) for p in doc["core_probes"])
    for s in doc["searches"]:
        res = s["result"]
        ndr = res["ndr"]
        assert ndr["rate_pps"] and ndr["rate_pps"] <= s["max_rate_pps"]
        val = s["trials"][ndr["validation"]["index"]]
        assert val["kind"] == "validation" and val["verdict"] == "pass" and ndr["validation"]["lost"] == 0
        assert res["ndr_latency_ns"]["p50"] <= res["ndr_latency_ns"]["p99"] <= res["ndr_latency_ns"]["max"]
        for t in s["trials"]:
            assert t["rate_pps"] <= s["max_rate_pps"] + 0.5
            for d in t["directions"]:
                led = d["ledger"]
                # conservation: sent = received + every counted drop, nothing unexplained
                assert led["sent"] == led["received"] + led["counted"] and led["lost"] == led["counted"]
                assert led["unexplained"] == 0
            hops = [h["name"] for h in t["ledger"][0]["hops"]]
            assert hops == ["zlgen tx port 0", "DUT (testpmd) rx port 0", "DUT (testpmd) tx port 1", "zlgen rx port 1"]
        # a rate that failed validation (lost frames; a generator failure is retried, not failed) is never the result
        failed = [t["rate_pps"] for t in s["trials"]
                  if t["kind"] == "validation" and t["verdict"] == "fail" and "ndr" not in t["passes"]]
        assert all(f > ndr["rate_pps"] for f in failed)
    # the report of a fresh result file: the HTML page and the table with one row per frame size
    html = tmp_path / "r.html"
    rep = subprocess.run([*ZEROLOSS, "report", str(out), "-o", str(html)], capture_output=True, text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    loads = sum(1 for s in doc["searches"] if s.get("latency_loads"))  # latency vs load: one plot, a CCDF each
    telemetry = sum(1 for s in doc["searches"] if any(t.get("telemetry") for t in s["trials"]))  # a figure each
    assert telemetry == len(doc["searches"])  # every search's trials keep the host's telemetry
    assert html.read_text().count("<svg") == 2 + len(doc["searches"]) + (1 + loads if loads else 0) + telemetry
    rep = subprocess.run([*ZEROLOSS, "report", str(out), "--format", "csv"], capture_output=True, text=True,
                         timeout=300)
    assert [line.split(",")[1] for line in rep.stdout.splitlines()[1:]] == ["64", "9000"]


def test_repeated_searches_report_their_spread(tmp_path):
    r = run("--frame-sizes", "256", "--repeat", "2", *FAST, "-o", str(tmp_path / "r.json"))
    assert_ran(r)
    lines = r.stdout.splitlines()
    # the verdict leads: measured, or inconclusive when the host held zlgen back (seen in the full suite)
    assert lines[0].startswith(("NO REQUIREMENT (--require-ndr): lowest NDR", "INCONCLUSIVE: 256 B NDR")), lines[0]
    header = lines[2]
    assert "NDR min … max" in header
    row = next(line for line in r.stdout.splitlines() if line.startswith("256"))
    assert "±" in row and "…" in row
    doc = read_doc(tmp_path / "r.json")
    assert sorted(s["repeat"] for s in doc["searches"]) == [0, 1]
    assert all(s["result"]["ndr"]["rate_pps"] for s in doc["searches"])


def test_interrupted_run_resumes_where_it_stopped(tmp_path):
    out = tmp_path / "r.json"
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"))
    # starting at 50 % the first search takes at least 4 short trials even if the DUT passes everything
    # (CI once saw 64 B pass at the ceiling: a search of 2 trials, finished before the test could cut it)
    p = subprocess.Popen([*ZEROLOSS, "run", "--frame-sizes", "64,128", *FAST, "--start", "50", "-o", str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        try:
            doc = read_doc(out)
            if doc["searches"] and len(doc["searches"][0]["trials"]) >= 3:
                break
        except (OSError, ValueError, KeyError, IndexError, ZeroLossError):
            pass
        time.sleep(0.1)
    assert p.poll() is None, "the run ended before the test could interrupt it"
    tag = next((tmp_path / "run").glob("s*")).name
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert f"zeroloss run --resume {out}" in err and "Traceback" not in err
    assert our_processes(tag) == []
    cut = read_doc(out)
    assert cut["state"] == "interrupted"
    before = cut["searches"][0]["trials"]
    assert len(before) >= 3

    r = run("--resume", str(out), env=env)
    assert_ran(r)
    assert "replayed" in r.stderr
    done = read_doc(out)
    assert done["state"] == "complete"
    after = done["searches"][0]["trials"]
    assert [t["rate_pps"] for t in after[:len(before)]] == [t["rate_pps"] for t in before]
    assert after[:len(before)] == before  # replayed trials kept as measured
    assert all(s["result"] for s in done["searches"])
    r = run("--resume", str(out))
    assert r.returncode == 1 and "nothing to resume" in r.stderr


def one_line_error(r, expect: str) -> None:
    """Exit 1, no traceback, and the error is one line (progress lines may come before it)."""
    assert r.returncode == 1, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("zeroloss: error:")]
    assert len(errors) == 1 and errors[0] == lines[-1] and expect in errors[0], r.stderr


@pytest.mark.parametrize("args, expect", [
    (["--frame-sizes", "20"], "frame_sizes must hold values in 64..9728 B, got 20"),
    (["--flows", "70000", "--set", "flow_fields=[src_port]"], "70000 flows stepping a UDP port"),
    (["--set", "trial_s=-1"], "trial_s must be in 0.1..86400 s"),
    (["--set", "colour=red"], "unknown key 'colour'"),
    (["--dut", "external"], "dut external needs ports"),
])
def test_bad_settings_are_one_line(tmp_path, args, expect):
    r = run(*args, "-o", str(tmp_path / "r.json"))
    one_line_error(r, expect)
    assert not (tmp_path / "r.json").exists()


def test_a_core_the_host_lacks_is_named_before_anything_starts(tmp_path):
    r = run("--frame-sizes", "64", *FAST, "--set", "dut_lcores=0,7", "--set", "dut_main_lcore=0",
            "-o", str(tmp_path / "r.json"))
    one_line_error(r, "dut_lcores 0,7 names core 7")
    assert not (tmp_path / "r.json").exists()


def test_dut_that_fails_to_start_is_one_line_and_stops_everything(tmp_path):
    """A testpmd that exits at start (here one that cannot find its EAL): the error names it and its log's
    cause, the file is failed, and zlgen's loop (started before) is stopped."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "dpdk-testpmd").write_text("#!/bin/sh\necho 'EAL: FATAL: cannot init memory'\nexit 1\n")
    (fake / "dpdk-testpmd").chmod(0o755)
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"), PATH=f"{fake}:{os.environ['PATH']}")
    r = run("--frame-sizes", "64", *FAST, "-o", str(tmp_path / "r.json"), env=env)
    one_line_error(r, "dpdk-testpmd exited (code 1) before it was ready: EAL: FATAL: cannot init memory")
    assert our_processes(str(tmp_path)) == []
    assert read_doc(tmp_path / "r.json")["state"] == "failed"


def test_missing_hugepages_is_one_line_with_the_remedy(tmp_path):
    nr = Path("/proc/sys/vm/nr_hugepages")
    saved = nr.read_text()
    try:
        nr.write_text("0")
        r = run("--frame-sizes", "64", *FAST, "-o", str(tmp_path / "r.json"))
    finally:
        nr.write_text(saved)
    one_line_error(r, "hugepages")
    assert "make setup" in r.stderr


def test_external_dut_mode_drives_only_zlgen(tmp_path):
    """The user's DUT (here a testpmd we start ourselves, standing in for a lab DUT) on the ports named."""
    from zeroloss.drivers.bench.links import memif_wire
    from zeroloss.drivers.dpdk.eal import Eal
    from zeroloss.drivers.dpdk.testpmd import TestPmd, TestPmdConfig

    # the user's DUT is not ours: started outside a zeroloss session (which would hold the bench lock)
    w0 = memif_wire(0, tmp_path / "x0.sock", ring_log2=14)
    w1 = memif_wire(1, tmp_path / "x1.sock", ring_log2=14)
    eal = Eal(lcores="0,1", main_lcore=1, file_prefix=f"usertest{os.getpid()}", vdevs=(w0.a, w1.a))
    with TestPmd(TestPmdConfig(eal=eal), tmp_path / "userdut.log"):
        r = run("--dut", "external", "--port", w0.b, "--port", w1.b, "--max-rate", "200k",
                "--frame-sizes", "64", *FAST, "-o", str(tmp_path / "r.json"), "--json")
    assert_ran(r)
    doc = read_doc(tmp_path / "r.json")
    (s,) = doc["searches"]
    assert s["link"] == "external" and s["max_rate_pps"] == 200_000
    assert doc["ceilings"] == {}  # no loop without the DUT: the user's --max-rate bounds the search
    assert doc["placement"]["external"]["ports"] == [w0.b, w1.b]
    ndr = s["result"]["ndr"]
    assert ndr["rate_pps"] and ndr["rate_pps"] <= 200_000
    assert "generator-bound" not in s["result"]["flags"]


def test_require_ndr_fails_the_run_naming_the_size(tmp_path):
    """Sign-off against a DUT of known capacity: an OVS meter passing 30 kpps per direction, 1 % of 25 GbE line
    rate at 64 B (372 kpps) required. The DUT loses frames cleanly far below the requirement: exit 2, the verdict
    names the size and the clean loss; the result file is complete (a missed requirement is a result)."""
    out = tmp_path / "r.json"
    r = run("--topology", "ovs-p2p", "--set", "meter_pps=30000", "--frame-sizes", "64", *FAST, "--require-ndr",
            "1", "--search", "mlr", "-o", str(out), "--json")
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert v["status"] == "FAIL" and list(v["missed"]) == ["64"] and v["lowest_ndr_frame"] == 64
    assert v["sizes"]["64"]["status"] == "FAIL" and "the DUT lost frames at" in v["line"]
    s = read_doc(out)
    assert s["state"] == "complete" and s["searches"][0]["result"]["ndr"]["clean_fail_pps"] <= 372_024


def test_zlgen_joined_to_itself_is_generator_bound():
    """The other side of the ceiling: searching zlgen's own loopback (nothing in between) up to zlgen's own
    ceiling ends at that ceiling and says so, with either strategy."""
    from zeroloss.core.config import RunConfig
    from zeroloss.core.search import SearchConfig
    from zeroloss.drivers.bench.softbench import BenchSpec, SoftBench
    from zeroloss.drivers.bench.workspace import Workspace
    from zeroloss.runs.run import STRATEGIES
    from zeroloss.runs.trial import TrialRunner, flat_out
    from zeroloss.targets.loopback import LoopbackTarget

    cfg = RunConfig(frame_sizes=[64], flows=64, drain_ms=100, pdr_loss_pct=-1)
    with Workspace() as ws, SoftBench(BenchSpec(dut="none", link="memif", gap_us=5000), ws) as lb:
        target = LoopbackTarget(cfg, lb)
        ceiling = flat_out(target, 64)[0]
        for name, search in STRATEGIES.items():
            # up to 80 % of the unpaced ceiling with a 20 % step: a top trial that failed still ends in a step
            scfg = SearchConfig(max_rate_pps=ceiling * 0.8, trial_s=0.3, validation_s=0.6, granularity_pct=20,
                                pdr_loss_pct=None)
            runner = TrialRunner(target, cfg, 64, [])
            res = search(scfg, runner)
            assert res.ndr.generator_bound and "generator-bound" in res.flags, (name, res.ndr, ceiling)
