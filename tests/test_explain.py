"""`zeroloss explain` on result files built from recorded trials, and the explanation `zeroloss run` prints
under a failed validation trial. No bench needed."""

import copy
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.cli.progress import Progress
from zeroloss.report.explain import analyse
from zeroloss.results.records import TrialEntry
from zeroloss.targets.kinds.testpmd import p2p_paths

FIX = Path(__file__).parent / "fixtures" / "ledger"


def recorded_trial(name: str, index: int, kind: str, verdict: str) -> tuple[dict, dict]:
    """A result file's search entry and trial made of a recorded fixture, as `zeroloss run` writes them."""
    doc = json.loads((FIX / f"{name}.json").read_text())
    ctx = {**doc["context"], "frame": doc["frame"], "rate_pps": doc["rate_pps"]}
    leds, diag = analyse(doc["paths"], doc["counters"], doc["dut_state"], ctx, set(doc["sides"]))
    g = doc["counters"]["gen"]["dirs"]["0"]
    trial = {"index": index, "rate_pps": doc["rate_pps"], "duration_s": 1.0, "kind": kind, "goal": "ndr",
             "verdict": verdict, "loss_ratio": 0.0, "passes": [],
             "outcome": {"directions": [{"requested_pps": doc["rate_pps"], "achieved_pps": doc["rate_pps"],
                                         "tx": g["offered"], "rx": g["rx_unique"], "duplicate": 0, "late": 0}]},
             "directions": [{"port": 0, "rx_port": 1}], "counters": doc["counters"], "dut_state": doc["dut_state"],
             "ledger": leds, "diagnosis": diag}
    search = {"frame": doc["frame"], "repeat": 0, "paths": doc["paths"], "ledger_context": doc["context"],
              "trials": [trial], "result": None}
    return search, trial


def clean_trial(index: int) -> dict:
    """A trial that lost nothing (its ledger stored, as a file written without counters has it)."""
    t = copy.deepcopy(recorded_trial("meter", index, "search", "pass")[1])
    t["outcome"]["directions"][0]["rx"] = t["outcome"]["directions"][0]["tx"]
    c = {"gen": {"dirs": {"0": {"offered": 100, "tx": 100, "refused": 0, "rx_unique": 100}}, "ports": [{}, {}]},
         "procs": {"dut": [{"ipackets": 100}, {"opackets": 100}]}}
    t["ledger"], t["diagnosis"] = analyse(p2p_paths(), c, None, {}, {0})
    del t["counters"]
    return t


def result_file(tmp_path: Path, searches: list[dict]) -> Path:
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"format": "zeroloss-result", "version": 1, "config": {}, "searches": searches}))
    return path


def run(*args):
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", "explain", *map(str, args)], capture_output=True,
                          text=True)


def test_explains_the_failed_validation_trial_by_default(tmp_path):
    search, _ = recorded_trial("mtu", 1, "validation", "fail")
    search["trials"].insert(0, clean_trial(0))
    r = run(result_file(tmp_path, [search]))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("4018 B trial 2 (validation, 10,000 pps per direction, 1 s, fail): lost 10,000")
    assert "OVS v0 tx" in out and "tx_mtu: v0 ovs_tx_mtu_exceeded_drops" in out
    assert "[100.0 %] OVS v0 tx: oversize" in out
    assert "fix:   ovs-vsctl set Interface v0 mtu_request=4000" in out


def test_any_trial_by_number_and_json(tmp_path):
    search, _ = recorded_trial("vnf-stop", 1, "search", "fail")
    search["trials"].insert(0, clean_trial(0))
    path = result_file(tmp_path, [search])
    r = run(path, "--trial", 1)
    assert r.returncode == 0 and "nothing lost" in r.stdout and "diagnosis" not in r.stdout
    r = run(path, "--trial", 2, "--json")
    (doc,) = json.loads(r.stdout)
    assert (doc["trial"], doc["frame"], doc["verdict"]) == (2, 64, "fail")
    assert doc["diagnosis"][0]["hop"] == "OVS v0 tx" and doc["diagnosis"][0]["reason"] == "tx_failure"
    assert doc["ledger"][0]["unexplained"] == 0


def test_default_without_failed_validation_takes_the_lossiest_trial(tmp_path):
    search, _ = recorded_trial("meter", 1, "search", "fail")
    search["trials"].insert(0, clean_trial(0))
    r = run(result_file(tmp_path, [search]))
    assert r.stdout.startswith("64 B trial 2 (search") and "mod-meter br0 meter=1" in r.stdout


def test_campaign_file_by_case(tmp_path):
    a, _ = recorded_trial("meter", 0, "validation", "fail")
    b, _ = recorded_trial("overload", 0, "validation", "fail")
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "zeroloss-campaign", "cases": [
        {"name": "1 meter", "run": {"searches": [a]}}, {"name": "2 overload", "run": {"searches": [b]}},
        {"name": "3 skipped", "skip": "no SR-IOV"}]}))
    r = run(path, "--case", "overload")
    assert r.returncode == 0 and r.stdout.startswith("== 2 overload") and "1 meter" not in r.stdout
    assert "OVS g0 rx" in r.stdout and "PMD core 0 was" in r.stdout


@pytest.mark.parametrize("args, expect", [
    (["--trial", 9], "no trial 9 for 4018 B"),
    (["--frame", 64], "no search for 64 B in this file"),
])
def test_bad_selection_is_one_line(tmp_path, args, expect):
    search, _ = recorded_trial("mtu", 0, "validation", "fail")
    r = run(result_file(tmp_path, [search]), *args)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and expect in r.stderr, r.stderr


def test_several_frame_sizes_need_frame_with_trial(tmp_path):
    a, _ = recorded_trial("mtu", 0, "validation", "fail")
    b, _ = recorded_trial("meter", 0, "validation", "fail")
    r = run(result_file(tmp_path, [a, b]), "--trial", 1)
    assert r.returncode == 1 and "add --frame SIZE" in r.stderr
    r = run(result_file(tmp_path, [a, b]), "--trial", 1, "--frame", 64)
    assert r.returncode == 0 and "meter" in r.stdout


def test_trial_without_counters_and_files_that_are_not_results(tmp_path):
    search, trial = recorded_trial("mtu", 0, "validation", "fail")
    for key in ("counters", "ledger"):
        del trial[key]
    r = run(result_file(tmp_path, [search]))
    assert r.returncode == 1 and "recorded without per-hop counters" in r.stderr
    other = tmp_path / "x.json"
    other.write_text("[1, 2]")
    assert "not a zeroloss result, campaign, soak or events file" in run(other).stderr
    assert "cannot read result file" in run(tmp_path / "missing.json").stderr
    other.write_text("{")
    assert "is not valid JSON" in run(other).stderr


def test_run_progress_prints_the_explanation_under_a_failed_validation():
    _, trial = recorded_trial("overload", 4, "validation", "fail")
    out = io.StringIO()
    Progress(out=out)("trial", {"frame": 64, "record": TrialEntry.from_json(trial), "max_rate_pps": trial["rate_pps"]})
    text = out.getvalue()
    first, *rest = text.splitlines()
    assert "trial  5 valid." in first and first.endswith("fail")
    assert any("OVS g0 rx" in line and "rx_missed" in line for line in rest)
    # g0 is a dpdkvhostuserclient port: OVS ignores options:n_rxq there, the queues come from its virtio side
    # (issue 38, 11)
    assert any("fix:   more queues on g0's virtio side" in line and "queues=2" in line and "mq=on" in line
               for line in rest), rest
    assert not any("options:n_rxq=" in line for line in rest), rest
    out = io.StringIO()
    Progress(out=out)("trial", {"frame": 64, "record": TrialEntry.from_json(clean_trial(0)), "max_rate_pps": 1.0})
    assert len(out.getvalue().splitlines()) == 1


def test_a_disturbed_trial_is_explained_as_the_hosts_loss():
    from zeroloss.report.explain import host_lines
    from zeroloss.results.records import TrialEntry

    t = TrialEntry.from_json({
        "index": 3, "rate_pps": 1e6, "duration_s": 1, "kind": "search", "verdict": "disturbed", "loss_ratio": 0.01,
        "outcome": {"directions": [{"achieved_pps": 1e6, "tx": 1000, "rx": 990}],
                    "disturbed": "testpmd core 0 stalled 5.0 ms (run delay 20 ms over 4 preemption(s), steal 0 ms), "
                                 "its RX ring covers 1.0 ms at this rate"},
        "interference": {"threads": [{"name": "rte-worker-0", "run_delay_ms": 20.0, "nonvoluntary": 4}],
                         "cores": [{"core": 0, "steal_ms": 0.0}, {"core": 1, "steal_ms": 3.0}],
                         "pmd_perf": {"1": {"max_iteration_ms_gt": 2.5, "max_iteration_ms_le": 5.0}}}})
    lines = host_lines(t)
    assert lines[0].startswith("host: DISTURBED, testpmd core 0 stalled 5.0 ms") and "not the DUT's" in lines[0]
    assert "rte-worker-0 5.00 ms x 4" in lines[1] and "steal core 1 3 ms" in lines[1]
    assert lines[2] == "OVS PMD longest iteration: core 1 2.5-5.0 ms"
    assert host_lines(TrialEntry.from_json({"outcome": {"directions": []}})) == []


def test_the_rx_queue_remedy_follows_the_ports_type():
    """options:n_rxq is a NIC's setting: on a vhost-user port OVS takes the queues its virtio peer enables, so
    the remedy names that side there (issue 38, 11), and n_rxq only where OVS reads it."""
    from pathlib import Path

    from zeroloss.loss import rules_ovs
    from zeroloss.loss.rulebase import Ctx

    show = (Path(__file__).parent / "fixtures" / "ovs" / "dpctl-show.txt").read_text()
    x = Ctx({}, {"dpctl_show": show}, {})
    assert rules_ovs.port_type("g0", x) == "dpdkvhostuserclient" and rules_ovs.port_type("nope", x) is None
    vhost = rules_ovs.more_rx_queues("g0", 4, x)
    assert "n_rxq" not in vhost.replace("OVS ignores options:n_rxq", "")
    assert "queues=4" in vhost and "mq=on,vectors=10" in vhost and "ethtool -L" in vhost
    nic = "port 9: dpdk0 (dpdk: configured_rx_queues=1, requested_rx_queues=1)"
    x = Ctx({}, {"dpctl_show": show + "  " + nic + "\n"}, {})
    assert rules_ovs.more_rx_queues("dpdk0", 4, x) == \
        "more RX queues spread over the PMDs: ovs-vsctl set Interface dpdk0 options:n_rxq=4"
