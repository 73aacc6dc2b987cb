"""The tune file's story, as `zeroloss tune` prints it and as the report shows it (pure: a recorded file)."""

import copy
import dataclasses
import json
from pathlib import Path

from zeroloss.cli.tune import story
from zeroloss.report.html import render
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_json
from zeroloss.results.summary import load_runs
from zeroloss.runs.tune import decide

FIX = Path(__file__).parents[1] / "fixtures" / "result_v2.json.gz"


def tune_doc() -> dict:
    run = read_json(FIX, "fixture")
    better = copy.deepcopy(run)
    for s in better["searches"]:
        if s["result"] and (s["result"].get("ndr") or {}).get("rate_pps"):
            s["result"]["ndr"]["rate_pps"] *= 1.5
    steps = []
    for k, (doc, change, decision) in enumerate([
            (run, None, {"effect": "baseline", "keep": True, "why": "the settings as given", "per_size": {}}),
            (better, {"key": "vnf_ring", "old": 256, "new": 1024, "knob": "VNF virtio ring size",
                      "finding": "tx_failure at OVS v0 tx", "why": "the guest's ring overflowed"},
             {"effect": "improved", "keep": True, "why": "64 B rose beyond the spread", "per_size": {}}),
            (run, {"key": "ovs_tx_retries_max", "old": -1, "new": 32, "knob": "vhost tx retries",
                   "finding": "tx_failure at OVS v0 tx", "why": "retries absorb short stalls"},
             {"effect": "no effect", "keep": False, "why": "within the spread", "per_size": {}})]):
        name = f"step {k}: " + (f"{change['key']}={change['new']}" if change else "as given")
        stats = decide.stats(RunRecord.from_json(doc))
        steps.append({"name": name, "change": change, "settings": {}, "decision": decision,
                      "stats": {str(f): dataclasses.asdict(x) for f, x in stats.items()}, "doc": doc})
    tune = {"target": ["pct", 100.0], "budget_min": 60, "noise_pct": 2.0, "spent_s": 300.0,
            "base": {"vnf_ring": 256, "ovs_tx_retries_max": -1},
            "current": {"vnf_ring": 1024, "ovs_tx_retries_max": -1},
            "current_step": steps[1]["name"], "stop": "no remedy left: every setting the diagnosis names was tried",
            "skipped": [{"key": "ovs_pmd_cpu_mask", "new": "0x3", "why": "core 1 is zlgen's"}],
            "advice": ["isolate the PMD cores: zeroloss host plan"], "steps": []}
    cases = []
    for s in steps:
        cases.append({"name": s["name"], "run": s.pop("doc")})
        tune["steps"].append(s)
    return {"format": "zeroloss-campaign", "version": 1, "name": "tune", "state": "complete", "cases": cases,
            "tune": tune}


def test_story_lists_steps_decisions_and_the_settings_kept():
    tune = CampaignRecord.from_json(tune_doc()).tune
    assert tune is not None
    text = story(tune)
    assert "vnf_ring: 256 -> 1024" in text and "improved" in text and "kept" in text
    assert "no effect" in text and "reverted" in text
    assert "ended: no remedy left" in text and "not tried: ovs_pmd_cpu_mask=0x3: core 1 is zlgen's" in text
    assert "advice: isolate the PMD cores" in text
    assert "settings kept" in text and "ovs_tx_retries_max" not in text.split("settings kept")[1].split("TripleO")[0]


def test_report_tells_the_tuning_story(tmp_path):
    f = tmp_path / "tune.json"
    f.write_text(json.dumps(tune_doc()))
    page = render(load_runs([str(f)]))
    assert page.count('<section id="tune">') == 1 and "Tuning story: target 100 % of line rate" in page
    assert "vnf_ring: 256 → 1024" in page and "reverted" in page and "no remedy left" in page
