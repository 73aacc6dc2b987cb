"""`zeroloss bench --noisy` without the bench: its cases, the hog process, and its summaries, targets and table
from stored records."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.core.config import RunConfig
from zeroloss.results.records import GoalRecord, RunRecord, SearchEntry, SearchOutcome, TrialEntry
from zeroloss.studies import noisybench as nb

LINE_64 = 37_202_380.0  # 64 B at 25 Gb/s


def _trial(i: int, rate: float, verdict: str, s: float = 1.0) -> TrialEntry:
    return TrialEntry(index=i, rate_pps=rate, duration_s=s, verdict=verdict, goal="ndr",
                      passes=("ndr",) if verdict == "pass" else ())


def _search(ndr: float, trials: list[TrialEntry], clean_fail: float | None = None, gen_limit: float | None = None,
            frame: int = 64, repeat: int = 0, top: float = 5e6) -> SearchEntry:
    return SearchEntry(frame=frame, repeat=repeat, trials=tuple(trials), line_rate_pps=LINE_64, max_rate_pps=top,
                       result=SearchOutcome(ndr=GoalRecord(goal="ndr", rate_pps=ndr, generator_bound=False,
                                                           clean_fail_pps=clean_fail), gen_limit_pps=gen_limit),
                       wall_s=12.0)


def _run(*searches: SearchEntry, required: dict | None = None) -> RunRecord:
    return RunRecord(state="complete", config={"require_ndr": required}, searches=searches)


def test_cases_keep_the_bench_order_and_refuse_unknown_ones():
    assert nb.parse_cases("pvp, hog-gen,quiet") == ["quiet", "hog-gen", "pvp"]
    with pytest.raises(ValueError, match="unknown case 'p2p'"):
        nb.parse_cases("quiet,p2p")
    with pytest.raises(ValueError, match="no case"):
        nb.parse_cases(" , ")


def test_the_hogs_cores_are_zlgens_worker_and_testpmds_forwarding_lcore():
    cfg = RunConfig()  # gen_lcores 1; dut_lcores 0,1 with main lcore 1
    assert (nb.gen_core(cfg), nb.dut_core(cfg)) == (1, 0)
    assert nb.dut_core(RunConfig(dut_lcores="2-4", dut_main_lcore=2)) == 3


def test_the_hog_is_pinned_while_it_runs_and_gone_after():
    with nb.hog(0) as pid:
        assert os.sched_getaffinity(pid) == {0}
        assert Path(f"/proc/{pid}").exists()
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped
    with pytest.raises(RuntimeError), nb.hog(0) as pid:
        raise RuntimeError("the run failed")
    assert not Path(f"/proc/{pid}").exists()  # also when the block raised


def test_time_shares_of_generator_failures_and_disturbed_trials():
    run = _run(_search(1e6, [_trial(0, 2e6, "generator-failure"), _trial(1, 1e6, "pass"),
                             _trial(2, 1.5e6, "disturbed", 2.0)]))
    assert nb.time_shares(run) == (0.25, 0.5)
    assert nb.time_shares(_run()) == (0.0, 0.0)


def test_a_generator_limited_size_is_inconclusive_with_its_bound_and_exit_3():
    # required 10 % of line rate (3.7 Mpps); the generator offered 5 Mpps before the search, 1 Mpps during it
    s = _search(1e6, [_trial(0, 5e6, "generator-failure"), _trial(1, 1e6, "pass", 2.0)], gen_limit=1e6)
    case = nb.hog_case("hog-gen", 1, _run(s, required={"64": 10.0}), 42.0)
    size = case.sizes["64"]
    assert size.status == "INCONCLUSIVE" and size.ndr == "≥ 2.69 %" and size.lower_bound
    assert case.exit_code == 3 and case.status == "INCONCLUSIVE" and "generator" in case.line
    assert case.generator_failure_share == pytest.approx(1 / 3) and case.hog_core == 1


def test_a_clean_loss_below_the_requirement_is_a_fail_and_the_target_not_met():
    s = _search(1e6, [_trial(0, 2e6, "fail"), _trial(1, 1e6, "pass")], clean_fail=2e6)
    gen = nb.hog_case("hog-gen", 1, _run(s, required={"64": 10.0}), 30.0)
    assert gen.sizes["64"].status == "FAIL" and gen.exit_code == 2
    doc = nb.NoisyReport(hog=(gen,))
    assert nb.targets(doc) == [("0 sizes FAIL with the hog on the generator's core", "1 FAIL (64 B)", False)]
    err = nb.hog_case("hog-gen", 1, _run(), 3.0, error="zlgen died")
    assert err.exit_code == 1 and err.line == "zlgen died"
    assert nb.targets(nb.NoisyReport(hog=(err,)))[0][2] is False  # a run that died shows nothing


def test_the_requirement_is_nine_tenths_of_the_quiet_ndr_rounded_down():
    quiet = nb.HogCase(sizes={"64": nb.SizeRow(ndr_line_rate_pct=12.345), "1518": nb.SizeRow(ndr_line_rate_pct=100.0),
                              "9000": nb.SizeRow(ndr_line_rate_pct=None)})
    assert nb.required_from(quiet) == {64: 11.11, 1518: 90.0}


def test_the_meter_miss_counts_the_burst_a_final_trial_may_pass():
    # 30 kpps, 1000 frames of burst, 5 s: a trial passes up to 30,200 pps
    assert nb.meter_miss(30_000, 30_000, 1000, 5.0) == 0
    assert nb.meter_miss(30_200, 30_000, 1000, 5.0) == 0
    assert nb.meter_miss(29_700, 30_000, 1000, 5.0) == pytest.approx(0.01)
    assert nb.meter_miss(30_500, 30_000, 1000, 5.0) == pytest.approx(0.01)
    assert nb.meter_miss(29_000, 30_000, 1000, 5.0) == pytest.approx(1 / 30)
    assert nb.meter_miss(30_500, 30_000, 1000, 2.0) == 0  # a shorter final trial passes more


def test_meter_case_counts_searches_within_the_spread_and_the_retried_trials():
    searches = [_search(30_100, [_trial(0, 31_000, "fail"), _trial(1, 30_100, "pass", 5.0)], repeat=0),
                _search(29_850, [_trial(0, 31_000, "disturbed"), _trial(1, 29_850, "pass", 5.0)], repeat=1),
                _search(29_000, [_trial(0, 31_000, "generator-failure"), _trial(1, 29_000, "pass", 5.0)], repeat=2)]
    c = nb.meter_case("pvp", "binary", _run(*searches), 99.0, 30_000, 1000, 5.0)
    assert c.ndrs == (30_100, 29_850, 29_000) and c.within == 2
    assert c.spread == pytest.approx(1100 / 29_650)
    assert (c.trials, c.disturbed, c.generator_failures, c.trial_s) == (6, 1, 1, 18.0)
    assert c.search_wall_s == (12.0, 12.0, 12.0) and c.error is None
    assert c.to_json()["search_wall_s"] == [12.0, 12.0, 12.0] and c.to_json()["error"] is None  # --json's form


def _meter(topo: str, strategy: str, ndrs: list[float]) -> nb.MeterCase:
    run = _run(*(_search(n, [_trial(0, n, "pass", 5.0)], repeat=i) for i, n in enumerate(ndrs)))
    return nb.meter_case(topo, strategy, run, 60.0, 30_000, 1000, 5.0)


def test_targets_and_table_of_a_finished_bench():
    quiet = nb.hog_case("quiet", None, _run(_search(4e6, [_trial(0, 4e6, "pass")], clean_fail=4.2e6)), 20.0)
    gen = nb.hog_case("hog-gen", 1, _run(_search(1e6, [_trial(0, 5e6, "generator-failure"),
                                                       _trial(1, 1e6, "pass", 2.0)], gen_limit=1e6),
                                         required={"64": 9.67}), 42.0)
    meter = [_meter("ovs-p2p", "binary", [30_000, 30_100, 29_990, 30_050, 30_000]),
             _meter("pvp", "binary", [30_000, 29_000, 30_000, 30_000, 30_000])]
    doc = nb.NoisyReport(date="2026-11-25 13:00:00 UTC", hog=(quiet, gen), meter=tuple(meter), meter_pps=30_000,
                         meter_burst=1000, validation_s=5.0, out_dir="results/bench-noisy-x", wall_s=600.0)
    assert nb.targets(doc) == [
        ("meter searches within 1 % of the capacity in >= 90 % of searches", "9 of 10", True),
        ("spread <= 2 % per topology and strategy", "worst 3.36 %", False),
        ("0 sizes FAIL with the hog on the generator's core", "0 FAIL", True)]
    text = "\n".join(nb.render(doc))
    assert text.startswith("zeroloss bench --noisy, 2026-11-25 13:00:00 UTC\n")
    assert "64 B MEASURED NDR 10.75 %" in text  # quiet: a clean loss above the NDR
    assert "64 B INCONCLUSIVE NDR ≥ 2.69 % (req. 9.67 %)" in text
    assert "capacity is [30,000, 30,200] pps" in text
    rows = {ln.split()[0] + " " + ln.split()[1]: ln.split() for ln in text.splitlines()
            if ln.startswith(("ovs-p2p", "pvp"))}
    assert rows["ovs-p2p binary"][2:5] == ["5/5", "0.0", "%"] and rows["pvp binary"][2] == "4/5"
    assert "target: spread <= 2 % per topology and strategy: worst 3.36 %: NOT met" in text
    assert "target: 0 sizes FAIL with the hog on the generator's core: 0 FAIL: met" in text


def test_bad_cases_are_one_line():
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "bench", "--noisy", "--cases", "quiet,p2p"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == ["zeroloss: error: --cases 'quiet,p2p': unknown case 'p2p': use some of "
                                             "quiet, hog-gen, hog-dut, ovs-p2p, pvp"], r.stderr


def test_an_interrupted_bench_says_so_under_its_tables():
    doc = nb.NoisyReport(date="2026-11-25 13:00:00 UTC", meter=(_meter("pvp", "mlr", [30_000]),), meter_pps=30_000,
                         meter_burst=1000, validation_s=5.0, out_dir="d", wall_s=90.0, interrupted=True)
    lines = list(nb.render(doc))
    assert lines[-1] == "interrupted (Ctrl-C): only the cases that finished; wall time 1.5 min; result files in d"
    assert "target: spread <= 2 % per topology and strategy: worst -: NOT met" in lines  # one search: no spread


def test_a_meter_run_cut_by_ctrl_c_is_left_interrupted_not_running(tmp_path, monkeypatch):
    """bench --noisy stopped by Ctrl-C left its meter result file `running` beside its journal (issue 38, 15): it
    is `interrupted`, compacted (no journal), and `run --resume` takes it, as after `zeroloss run`."""
    from zeroloss.results import journal
    from zeroloss.results.resultfile import read_doc

    def cut(self):
        self.rf.warn("a line in the journal")  # a change made before the cut
        raise KeyboardInterrupt

    monkeypatch.setattr(nb.Run, "execute", cut)
    path = tmp_path / "meter-pvp-binary.json"
    cfg = nb._meter_config("pvp", "binary", 1, 1_000_000, 0.5, 1.0, 5.0)
    with pytest.raises(KeyboardInterrupt):
        nb._execute(cfg, path, {"hostname": "h"})
    assert read_doc(path)["state"] == "interrupted" and not journal.path_of(path).exists()
    assert "a line in the journal" in read_doc(path)["warnings"]
