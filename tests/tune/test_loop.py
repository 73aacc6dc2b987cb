"""The tune loop over a fake DUT whose NDR is a known function of its settings (pure: no process; run_case writes
the searches a run of those settings would). It keeps what lifts the NDR beyond the spread, reverts the rest,
skips what the host cannot run, stops for the right reason, and a cut tune resumes to the same end."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.records import SearchOutcome, TrialEntry
from zeroloss.results.resultfile import ResultFile
from zeroloss.runs.tune import loop

LINE = 14_880_952.0
HOST = {"hostname": "test"}


def fake_dut(ndr_of, bound: bool = False, noise: float = 0.0, delay: float = 0.0):
    """run_case for the loop: two searches per size, NDR ndr_of(cfg) (+/- noise), a failed validation whose
    diagnosis blames OVS's vhost TX into the VNF (tx_failure at OVS v0 tx)."""
    calls = []

    def run_case(name, cfg, rf: ResultFile) -> None:
        calls.append((name, cfg))
        time.sleep(delay)
        base = ndr_of(cfg)
        for f in cfg.frame_sizes:
            for rep in range(cfg.repeat):
                ndr = base * (1 + (noise if rep else -noise))
                fail = {"kind": "validation", "verdict": "fail", "rate_pps": ndr * 1.1, "diagnosis": [
                    {"hop": "OVS v0 tx", "where": "v0", "reason": "tx_failure", "frames": 1000, "share_pct": 100.0,
                     "counter": "v0 ovs_tx_failure_drops", "cause": "the guest behind v0 did not drain its RX ring",
                     "evidence": [], "remedies": []}]}
                rf.start_search(f, rep, line_rate_pps=LINE)
                rf.add_trial(f, rep, TrialEntry.from_json(fail))
                rf.finish_search(f, rep, SearchOutcome.from_json({
                    "ndr": {"rate_pps": ndr, "generator_bound": bound, "line_rate_pct": 100 * ndr / LINE},
                    "flags": ["generator-bound"] if bound else []}))
        rf.set_state("complete")
    return run_case, calls


def ring_model(cfg) -> float:
    """The vring finding as a curve: the ring lifts the NDR, retries do nothing, queues a little."""
    return {256: 20_000.0, 1024: 85_000.0, 4096: 86_000.0}[cfg.vnf_ring] * (1.2 if cfg.dut_rxq > 1 else 1.0)


def start(tmp_path, target="100%", budget=60.0, max_steps=None, **settings):
    base = {"topology": "pvp", "vnf": "process", "vnf_ring": 256, "frame_sizes": [64], **settings}
    from zeroloss.core.config import load

    return loop.create(tmp_path / "tune.json", load(None, base).to_dict(), loop.parse_target(target), budget, 2.0,
                       HOST, max_steps)


def test_keeps_the_ring_reverts_what_does_nothing_and_ends_without_remedies(tmp_path):
    cf = start(tmp_path)
    run_case, calls = fake_dut(ring_model, noise=0.01)
    t = loop.run_tune(cf, HOST, run_case, lambda *_: None, cpus=2, hugepages_mb=2560)
    by_change = {s.change["key"] + "=" + str(s.change["new"]): s.decision for s in t.steps if s.change}
    assert by_change["vnf_ring=1024"]["keep"] and by_change["vnf_ring=1024"]["effect"] == "improved"
    assert by_change["vnf_ring=4096"]["effect"] == "no effect" and not by_change["vnf_ring=4096"]["keep"]
    assert by_change["ovs_tx_retries_max=32"]["effect"] == "no effect"
    assert by_change["dut_rxq=2"]["keep"]
    assert t.current["vnf_ring"] == 1024 and t.current["dut_rxq"] == 2
    assert t.current["ovs_tx_retries_max"] == -1
    assert t.stop.startswith("no remedy left")
    assert loop.tuned_keys(t) == {"vnf_ring": 1024, "dut_rxq": 2}
    assert all(cfg.repeat == 2 for _, cfg in calls)  # a spread needs two searches per size
    assert json.loads((tmp_path / "tune.json").read_text())["state"] == "complete"


def test_stops_when_the_target_is_met(tmp_path):
    cf = start(tmp_path, target="50k")
    run_case, _ = fake_dut(ring_model)
    t = loop.run_tune(cf, HOST, run_case, lambda *_: None, cpus=2, hugepages_mb=2560)
    assert t.stop.startswith("target met") and len(t.steps) == 2


def test_a_generator_bound_bench_stops_with_that_reason(tmp_path):
    cf = start(tmp_path)
    run_case, _ = fake_dut(ring_model, bound=True)
    t = loop.run_tune(cf, HOST, run_case, lambda *_: None, cpus=2, hugepages_mb=2560)
    assert "generator is the limit" in t.stop and len(t.steps) == 1


def test_budget_and_settings_the_host_cannot_run(tmp_path):
    cf = start(tmp_path, budget=0.0001)  # 6 ms: spent by the first step
    run_case, _ = fake_dut(ring_model, delay=0.05)
    t = loop.run_tune(cf, HOST, run_case, lambda *_: None, cpus=2, hugepages_mb=2560)
    assert t.stop.startswith("budget spent") and len(t.steps) == 1

    def no_big_rings(cfg):
        if cfg.vnf_ring > 256:
            raise ZeroLossError("rings above 256 do not fit here")
    cf = start(tmp_path / "b")
    t = loop.run_tune(cf, HOST, fake_dut(ring_model)[0], lambda *_: None, cpus=2, hugepages_mb=2560,
                      check=no_big_rings)
    assert {"key": "vnf_ring", "new": 1024, "why": "rings above 256 do not fit here"} in t.skipped
    assert all(s.change["key"] != "vnf_ring" for s in t.steps if s.change)


def test_the_step_limit_counts_changes_not_the_baseline(tmp_path):
    cf = start(tmp_path, max_steps=2)
    run_case, calls = fake_dut(ring_model, noise=0.01)
    t = loop.run_tune(cf, HOST, run_case, lambda *_: None, cpus=2, hugepages_mb=2560)
    assert t.stop == "step limit reached (2 changes tried, --steps 2)"
    assert len(t.steps) == 3 and len(calls) == 3 and t.current["vnf_ring"] == 1024


def test_a_cut_tune_resumes_to_the_same_end(tmp_path):
    full = loop.run_tune(start(tmp_path / "a"), HOST, fake_dut(ring_model)[0], lambda *_: None, cpus=2,
                         hugepages_mb=2560)
    cf = start(tmp_path / "b")
    run_case, calls = fake_dut(ring_model)

    def cut(name, cfg, rf):
        if len(calls) == 2:  # Ctrl-C in the second step, before any search
            raise KeyboardInterrupt
        run_case(name, cfg, rf)
    with pytest.raises(KeyboardInterrupt):
        loop.run_tune(cf, HOST, cut, lambda *_: None, cpus=2, hugepages_mb=2560)
    cf.end("interrupted")
    cf = loop.resume(tmp_path / "b" / "tune.json", HOST)
    t = loop.run_tune(cf, HOST, run_case, lambda *_: None, cpus=2, hugepages_mb=2560)
    assert [s.name for s in t.steps] == [s.name for s in full.steps]
    assert t.current == full.current and t.stop == full.stop


def test_bad_targets_and_lab_files_are_refused(tmp_path):
    for text in ("0%", "101%", "fast", "-5"):
        with pytest.raises(ZeroLossError, match="--target"):
            loop.parse_target(text)
    assert loop.parse_target("99.5%") == ("pct", 99.5) and loop.parse_target("1.2M") == ("pps", 1.2e6)
    with pytest.raises(ZeroLossError, match="lab node"):
        loop.create(tmp_path / "t.json", {"lab": "lab.yaml"}, ("pct", 100.0), 10, 2.0, HOST)


def test_the_tune_file_keeps_the_v1_layout_and_reads_back_as_the_loop_left_it(tmp_path):
    """The loop keeps its section as records; the file it writes has tune_v1.json's keys in the same order (nulls
    where nothing is set yet) and reads back to the record run_tune returned."""
    fixture = json.loads((Path(__file__).parents[1] / "fixtures" / "tune_v1.json").read_text())
    cf = start(tmp_path)
    created = json.loads((tmp_path / "tune.json").read_text())
    assert list(created["tune"]) == list(fixture["tune"])
    assert [created["tune"][k] for k in ("max_steps", "current_step", "stop", "steps")] == [None, None, None, []]
    t = loop.run_tune(cf, HOST, fake_dut(ring_model, noise=0.01)[0], lambda *_: None, cpus=2, hugepages_mb=2560)
    doc = json.loads((tmp_path / "tune.json").read_text())
    assert list(doc) == list(fixture) and list(doc["tune"]) == list(fixture["tune"])
    assert [list(s) for s in doc["tune"]["steps"]] == [list(s) for s in fixture["tune"]["steps"]]
    assert doc["tune"]["steps"][0]["change"] is None and list(doc["tune"]["steps"][1]["decision"]) == \
        list(fixture["tune"]["steps"][1]["decision"])
    camp = CampaignRecord.from_json(doc)
    assert camp.to_json() == doc and camp.tune == t == cf.tune
    assert [s.name for s in camp.tune.steps] == [s["name"] for s in fixture["tune"]["steps"]]
    assert camp.tune.to_json()["steps"][1]["decision"] == fixture["tune"]["steps"][1]["decision"]
