"""`zeroloss bench --search`'s pure parts: the strategies and what each runs."""

from __future__ import annotations

import pytest

from zeroloss.results.records import SearchOutcome, TrialEntry
from zeroloss.studies import searchbench
from zeroloss.studies.searchbench import STRATEGIES, _config, _search_and_trial, parse_cases, parse_strategies, render


def test_rfc2544_is_the_binary_search_with_every_trial_at_the_final_duration():
    assert _search_and_trial("rfc2544", 2.0, 5.0) == ("binary", 5.0)
    assert _search_and_trial("binary", 2.0, 5.0) == ("binary", 2.0)
    assert _search_and_trial("mlr", 2.0, 5.0) == ("mlr", 2.0)


def test_strategies_are_known_names_each_once_in_order():
    assert parse_strategies("mlr, rfc2544") == ["mlr", "rfc2544"]
    assert parse_strategies(",".join(STRATEGIES)) == list(STRATEGIES)
    for bad in ("", "binary,binary", "binary,fast", ",", "mlr:x", "mlr:=3", "mlr:a=[1", "fast:trial_s=1"):
        with pytest.raises(ValueError):
            parse_strategies(bad)


def test_an_entry_runs_its_strategy_with_its_own_settings():
    assert parse_strategies("mlr, mlr:mlr_duration_sum_s=15") == ["mlr", "mlr:mlr_duration_sum_s=15"]
    plain = _config("mlr", "p2p", 1518, 2.0, 5.0, 0.5)
    goals = _config("mlr:mlr_duration_sum_s=15:mlr_exceed_ratio=0.3", "p2p", 1518, 2.0, 5.0, 0.5)
    assert (goals.search, goals.trial_s, goals.validation_s, goals.frame_sizes) == ("mlr", 2.0, 5.0, [1518])
    assert (goals.mlr_duration_sum_s, goals.mlr_exceed_ratio) == (15, 0.3)
    assert plain.mlr_duration_sum_s != 15
    rfc = _config("rfc2544:granularity_pct=1", "pvp", 64, 2.0, 5.0, 0.5)
    assert (rfc.search, rfc.trial_s, rfc.granularity_pct, rfc.topology) == ("binary", 5.0, 1, "pvp")


def test_cases_are_topology_and_size():
    assert parse_cases("p2p:64, pvp:1518") == [("p2p", 64), ("pvp", 1518)]
    with pytest.raises(ValueError):
        parse_cases("p2p")


def test_the_table_is_rendered_from_the_json_document():
    """--json prints the document; render() makes the same table from it (means per search, MLRsearch's
    trial-seconds as a share of each other strategy's, generator failures and spread over all searches)."""
    def case(strategy, ndrs, trial_seconds, trials, gen_failures):
        spread = (max(ndrs) - min(ndrs)) / (sum(ndrs) / len(ndrs))
        return {"topology": "p2p", "frame": 64, "strategy": strategy, "ndrs": ndrs, "trial_seconds": trial_seconds,
                "wall_s": [t + 3 for t in trial_seconds], "trials": trials, "generator_failures": gen_failures,
                "spread": spread}
    doc = {"cases": [case("rfc2544", [100.0, 104.0], [60.0, 40.0], 20, 2),
                     case("mlr", [101.0, 101.0], [20.0, 30.0], 10, 0)]}
    table = "\n".join(render(searchbench.SearchReport.from_json(doc)))
    lines = table.splitlines()
    rfc = next(ln for ln in lines if "rfc2544" in ln and "p2p 64 B" in ln)
    mlr = next(ln for ln in lines if " mlr " in ln and "p2p 64 B" in ln)
    # rfc2544: 10 trials and 50 trial-s per search, MLRsearch spent 25 / 50 of that; 2 of 20 trials failed
    assert rfc.split()[4:10] == ["10.0", "50.0", "0.50", "53.0", "10.0", "%"], rfc
    assert "3.9 %" in rfc and "102" in rfc
    assert mlr.split()[4:8] == ["5.0", "25.0", "-", "28.0"] and "0.0 %" in mlr, mlr
    assert "spread: (max - min) / mean" in table


def test_ctrl_c_prints_the_table_of_the_finished_searches(tmp_path, monkeypatch):
    """A long bench cut by Ctrl-C still prints what it measured (the finished searches, said so), then ends as
    interrupted; the cut search is left out of the table."""
    calls = []

    class FakeRun:  # the third run is cut by Ctrl-C
        def __init__(self, cfg, rf, progress):
            self.cfg, self.rf = cfg, rf

        def execute(self):
            calls.append(self.cfg.search)
            if len(calls) == 3:
                raise KeyboardInterrupt
            ndr = 1000.0 * len(calls)
            self.rf.start_search(64, 0)
            for i in range(3):
                self.rf.add_trial(64, 0, TrialEntry(index=i, duration_s=2.0, verdict="pass"))
            self.rf.finish_search(64, 0, SearchOutcome.from_json({"ndr": {"rate_pps": ndr}}), wall_s=9.0)

    monkeypatch.setattr(searchbench, "Run", FakeRun)
    monkeypatch.setattr(searchbench, "collect", lambda: {"hostname": "test"})
    lines = []
    with pytest.raises(KeyboardInterrupt):
        for line in searchbench.search_bench([("p2p", 64)], 2, 2.0, 5.0, 0.5, tmp_path, strategies=["binary", "mlr"]):
            lines.append(line)
    text = "\n".join(lines)
    assert len(calls) == 3
    assert "interrupted: the table holds the 2 searches that finished" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("p2p 64 B")]
    assert len(rows) == 2 and "1,000" in rows[0] and "2,000" in rows[1], text
