"""Campaign files: cases, crosses, skips, checked settings, and the combined table."""

import json
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.records import TrialEntry
from zeroloss.runs.campaign import builtin_names, campaign_table, expand, read

FIX = Path(__file__).parent / "fixtures"


def test_builtins_expand_to_checked_settings():
    assert {"reference-matrix", "vnf-ring"} <= set(builtin_names())
    cases = expand(read("reference-matrix"), {"trial_s": 1})
    names = [c.name for c in cases]
    assert names[0].startswith("1 ") and len(names) == 8
    skipped = [c.name[0] for c in cases if c.skipped]
    assert skipped == ["2"]
    assert (cases[5].config.bond, cases[7].config.bond, cases[7].config.dut_rxq) == \
        ("balance-slb", "balance-slb", 2)
    seven = cases[6].config
    assert (seven.bridges, seven.vlan, seven.dut_rxq, seven.topology, seven.trial_s) == (2, 100, 2, "pvp", 1)
    assert seven.frame_sizes == [4096, 8192, 9000]


def test_cross_makes_every_combination(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("name: x\nbase: {frame_sizes: [64]}\ncases:\n  - name: a\n  - name: b\n    set: {flows: 8}\n"
                 "cross:\n  vnf_ring: [256, 4096]\n  dut_rxq: [1, 2]\n")
    cases = expand(read(str(f)), {})
    assert [c.name for c in cases][:2] == ["a (vnf_ring=256, dut_rxq=1)", "a (vnf_ring=256, dut_rxq=2)"]
    assert len(cases) == 8 and cases[-1].config.flows == 8 and cases[-1].config.vnf_ring == 4096


def test_the_case_cap_counts_cases_times_cross_values(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("name: x\ncases: [{name: a}, {name: b}]\ncross:\n  flows: [" +
                 ", ".join(str(i + 1) for i in range(5000)) + "]\n")
    assert len(expand(read(str(f)), {})) == 10_000
    f.write_text(f.read_text().replace("[{name: a}, {name: b}]", "[{name: a}, {name: b}, {name: c}]"))
    with pytest.raises(ZeroLossError, match="makes 15,000 cases"):
        expand(read(str(f)), {})


@pytest.mark.parametrize("text, message", [
    ("cases: [{name: a, set: {flows: 0}}]\n", "campaign case 'a': config: flows must be in 1..1048576, got 0"),
    ("colour: red\n", "unknown key 'colour'"),
    ("- 1\n", "must be a mapping"),
])
def test_bad_campaigns_name_the_fault(tmp_path, text, message):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ZeroLossError, match=message):
        expand(read(str(f)), {})


def test_unknown_campaign_lists_the_builtins():
    with pytest.raises(ZeroLossError, match="built-in: .*reference-matrix"):
        read("no-such-campaign")


def test_v1_campaign_fixture_prints_the_same_table():
    doc = json.loads((FIX / "campaign_v1.json").read_text())
    assert doc["format"] == "zeroloss-campaign" and doc["version"] == 1
    assert campaign_table(CampaignRecord.from_json(doc)) + "\n" == (FIX / "campaign_v1.table.txt").read_text()


def test_resume_keeps_finished_cases_and_continues_the_cut_one(tmp_path):
    """A campaign cut in its third case: resuming runs only that case (on its stored run document, so the
    run resumes its searches) and the ones after it; finished and skipped cases are left alone."""
    from zeroloss.runs.campaign import CampaignFile, run_campaign

    spec = {"name": "r", "base": {"frame_sizes": [64]}, "cases": [
        {"name": "a", "set": {"flows": 2}}, {"name": "vf", "skip": "needs SR-IOV"},
        {"name": "c", "set": {"flows": 3}}, {"name": "d"}]}
    host = {"hostname": "h", "cpu_model": "x", "kernel": "k"}
    path = tmp_path / "c.json"
    cf = CampaignFile.create(path, spec, host, {"trial_s": 1})
    calls = []

    def first(name, cfg, rf):
        calls.append((name, cfg.flows, cfg.trial_s))
        rf.start_search(64, 0)
        rf.add_trial(64, 0, TrialEntry(index=0))
        if name == "c":
            rf.set_state("interrupted")
            raise KeyboardInterrupt
        rf.set_state("complete")

    with pytest.raises(KeyboardInterrupt):
        run_campaign(cf, expand(spec, {"trial_s": 1}), host, first)
    assert calls == [("a", 2, 1), ("c", 3, 1)]
    on_disk = json.loads(path.read_text())
    assert [c["run"]["state"] for c in on_disk["cases"] if "run" in c] == ["complete", "interrupted"]

    resumed = CampaignFile.load(path, host)
    calls.clear()

    def second(name, cfg, rf):
        calls.append((name, len(rf.run.searches)))
        rf.set_state("complete")

    stored = resumed.record
    assert stored.definition == spec and stored.overrides == {"trial_s": 1}
    run_campaign(resumed, expand(stored.definition, stored.overrides), host, second)
    assert calls == [("c", 1), ("d", 0)]  # c continues on its stored document, one search in it
    doc = json.loads(path.read_text())
    assert doc["state"] == "complete" and [c["name"] for c in doc["cases"]] == ["a", "vf", "c", "d"]
    with pytest.raises(ZeroLossError, match="complete: nothing to resume"):
        CampaignFile.load(path, host)
    with pytest.raises(ZeroLossError, match="was measured on"):
        doc["state"] = "interrupted"
        path.write_text(json.dumps(doc))
        CampaignFile.load(path, {"hostname": "other", "cpu_model": "y", "kernel": "k2"})


def test_resume_refuses_a_single_run_file(tmp_path):
    from zeroloss.runs.campaign import CampaignFile

    f = tmp_path / "run.json"
    f.write_text(json.dumps({"format": "zeroloss-result", "version": 1}))
    with pytest.raises(ZeroLossError, match="not a zeroloss campaign file"):
        CampaignFile.load(f, {})


def test_campaign_file_reads_and_writes_records(tmp_path):
    """CampaignFile's typed side: the document as records (its runs' changes seen at once), the state and the tune
    section written by the next save, the JSON a copy."""
    from zeroloss.core.config import load
    from zeroloss.results.campaigns import TuneRecord, TuneStep
    from zeroloss.results.records import RunRecord
    from zeroloss.runs.campaign import CampaignFile

    host = {"hostname": "h"}
    path = tmp_path / "c.json"
    cf = CampaignFile.create(path, {"name": "r"}, host, {})
    assert cf.tune is None and cf.record.cases == () and not cf.has_case("a") and cf.run_of("a") is None
    rf = cf.case("a", load(None, {"frame_sizes": [64]}), None, host)
    assert cf.case("skipped", None, "needs SR-IOV", host) is None
    rf.start_search(64, 0)
    rf.add_trial(64, 0, TrialEntry(index=0, verdict="pass"))
    run = cf.run_of("a")
    assert isinstance(run, RunRecord) and run.search(64, 0).trials[0].verdict == "pass"
    assert cf.record.case("a").run == run and cf.record.case("skipped").skip == "needs SR-IOV"
    assert cf.run_of("skipped") is None and cf.has_case("skipped")

    tune = TuneRecord(target=("pct", 100.0), budget_min=1.0, base={"flows": 2}, current={"flows": 2},
                      steps=(TuneStep(name="step 0: as given", settings={"flows": 2}),))
    cf.set_tune(tune)
    cf.set_state("complete")
    assert json.loads(path.read_text())["state"] == "running" and "tune" not in json.loads(path.read_text())
    cf.save()
    on_disk = CampaignRecord.from_json(json.loads(path.read_text()))
    assert on_disk.state == "complete" and on_disk.tune == tune == cf.tune
    assert on_disk.case("a").run.search(64, 0).trials[0].verdict == "pass"
    copy = cf.to_json()
    copy["state"] = "changed"
    assert cf.record.state == "complete"
    assert not hasattr(cf, "doc")
