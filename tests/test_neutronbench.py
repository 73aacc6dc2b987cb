"""zeroloss bench --neutron: its tables from result records (the runs themselves are bench work)."""

import pytest

from zeroloss.core.search.trials import GEN_FAIL
from zeroloss.loss.records import Finding
from zeroloss.results.campaigns import CampaignRecord, CaseRecord, TuneRecord, TuneStep
from zeroloss.results.records import (
    DirectionOutcome,
    GoalRecord,
    OutcomeRecord,
    RunRecord,
    SearchEntry,
    SearchOutcome,
    TrialEntry,
)
from zeroloss.studies import neutronbench as nb


def _trial(i: int, rate: float, lost: int, verdict: str = "fail", diagnosis=None) -> TrialEntry:
    d = DirectionOutcome(requested_pps=rate, achieved_pps=rate, tx=1000, rx=1000 - lost)
    return TrialEntry(index=i, rate_pps=rate, verdict=verdict if lost else "pass",
                      outcome=OutcomeRecord(directions=(d,)), diagnosis=diagnosis)


def _search(frame: int, ndr: float, trials, flags=()) -> SearchEntry:
    return SearchEntry(frame=frame, trials=tuple(trials),
                       result=SearchOutcome(ndr=GoalRecord(rate_pps=ndr, line_rate_pct=ndr / 1e5), flags=flags))


EMC = (Finding(reason="emc_thrash", hop="OVS g0->g1", share_pct=80.0, frames=8, cause=""),
       Finding(reason="rx_missed", hop="OVS g0 rx", share_pct=20.0, frames=2, cause=""))
CT = (Finding(reason="conntrack_full", hop="OVS br-int conntrack zone 1", share_pct=100.0, frames=5, cause=""),)


def test_the_cell_names_the_top_finding_of_the_lowest_lossy_trial_above_the_ndr():
    s = _search(64, 1e6, [_trial(0, 2e6, 500, diagnosis=CT), _trial(1, 1.5e6, 10, diagnosis=EMC),
                          _trial(2, 1e6, 0), _trial(3, 0.5e6, 7, diagnosis=CT)])  # 3: below the NDR (a host burst)
    assert nb.lossy_above(s).index == 1
    assert nb.cell_diagnosis(s) == "emc_thrash at OVS g0->g1 (80 %)"


def test_generator_failures_never_make_the_diagnosis():
    s = _search(64, 1e6, [_trial(0, 2e6, 900, verdict=GEN_FAIL, diagnosis=CT)], flags=("generator-limited",))
    assert nb.lossy_above(s) is None
    assert nb.cell_diagnosis(s) == "generator-bound"
    assert nb.cell_diagnosis(_search(64, 1e6, [_trial(0, 1e6, 0)])) == "no DUT loss seen"
    assert nb.cell_diagnosis(_search(64, 1e6, [_trial(0, 2e6, 5, diagnosis=())])) == "no finding"


def _run(cfg, searches) -> RunRecord:
    return RunRecord(config=cfg, searches=tuple(searches), state="complete")


def test_matrix_rows_one_per_case_with_each_sizes_ndr_and_diagnosis():
    cfg = {"topology": "pvp", "firewall": "conntrack", "tunnel": "vxlan", "flows": 1000000}
    camp = CampaignRecord(name="neutron-matrix", cases=(
        CaseRecord(name="a", run=_run(cfg, [_search(64, 250e3, [_trial(0, 3e5, 9, diagnosis=CT)]),
                                            _search(1518, 0, [_trial(0, 1e4, 9, diagnosis=EMC)])])),
        CaseRecord(name="b", skip="not here")))
    headers, rows, cases = nb.matrix_rows(camp)
    assert headers[:4] == ["topology", "firewall", "tunnel", "flows"] and len(headers) == 10
    assert rows[0][:4] == ["pvp", "conntrack", "vxlan", "1,000,000"]
    assert rows[0][4] == "250k (2.50 %)" and rows[0][5] == "-"  # no telemetry in these trials
    assert rows[0][6].startswith("conntrack_full at OVS br-int conntrack zone 1")
    assert rows[0][7] == "none" and rows[0][9].startswith("emc_thrash")
    assert rows[1] == ["-"] * 10
    assert cases[0].sizes["64"].ndr_pps == 250e3 and cases[1].skip == "not here"
    assert cases[1].to_json() == {"case": "b", "settings": dict.fromkeys(["topology", "firewall", "tunnel", "flows"]),
                                  "sizes": {}, "skip": "not here"}  # --json: a skipped case's settings are nulls


def test_tune_summary_start_and_end_of_the_kept_step():
    base = {"flows": 1000000, "smc_enable": False}
    tuned = CampaignRecord(name="tune", cases=(
        CaseRecord(name="baseline", run=_run(base, [_search(64, 100e3, [])])),
        CaseRecord(name="smc", run=_run({**base, "smc_enable": True}, [_search(64, 180e3, [])]))),
        tune=TuneRecord(base=base, current={**base, "smc_enable": True}, current_step="smc", stop="no remedy left",
                        steps=(TuneStep(name="baseline"), TuneStep(name="smc", decision={"keep": True}))))
    t = nb.tune_summary(tuned)
    assert t.kept == {"smc_enable": True} and t.sizes["64"].ratio == pytest.approx(1.8)
    assert [s.kept for s in t.steps] == [False, True]
    lines = "\n".join(nb.render(nb.NeutronReport(date="d", host="h", cpu="c",
                                                 settings=nb.Settings(trial_s=1, validation_s=2, granularity_pct=1),
                                                 tune=t.with_(case={"flows": 1000000}, minutes=3.0))))
    assert "kept {'smc_enable': True}" in lines and "1.80" in lines and "smc (kept)" in lines


def test_parts_are_checked():
    assert nb.parse_parts("latency,matrix") == ["matrix", "latency"]
    for bad in ("", "matrix,foo"):
        with pytest.raises(ValueError):
            nb.parse_parts(bad)


def test_cycles_per_packet_is_the_median_over_trials_weighted_by_each_pmds_packets():
    def tel(*pmds):
        return {"pmds": {str(i): {"cycles_per_pkt": c, "rx_packets": n} for i, (c, n) in enumerate(pmds)}}

    trials = [TrialEntry(index=0, telemetry=tel((100.0, 1000), (300.0, 3000))),  # 250 over both PMDs
              TrialEntry(index=1, telemetry=tel((400.0, 10))),
              TrialEntry(index=2, telemetry=tel((900.0, 0))),  # no packets: left out
              TrialEntry(index=3, telemetry=tel((200.0, 5))), TrialEntry(index=4)]
    assert nb.cycles_per_packet(SearchEntry(frame=64, trials=tuple(trials))) == pytest.approx(250.0)
    assert nb.cycles_per_packet(SearchEntry(frame=64, trials=(TrialEntry(index=0),))) is None
