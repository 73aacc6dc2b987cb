"""zeroloss tune's keep/revert rule on recorded numbers, the NDR statistics of a run, and the findings of its
failed trials."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.results.records import RunRecord, SearchEntry
from zeroloss.runs.tune.decide import (
    SizeStats,
    decide,
    findings_of,
    gap,
    generator_bound,
    repeat_bound,
    stats,
    target_met,
    target_pps,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures"
LINE_64 = 37_202_380.952380955  # 25 Gb/s at 64 B


def fixture(name: str) -> RunRecord:
    return RunRecord.from_json(json.loads(gzip.decompress((FIX / name).read_bytes())))


def search_json(frame: int, repeat: int, ndr: float | None, trials: list[dict] | None = None, bound: bool = False,
                flags: tuple[str, ...] = ()) -> dict:
    """A search entry as the result file (format 2) keeps it, with what tune reads."""
    return {"frame": frame, "repeat": repeat, "line_rate_pps": LINE_64 if frame == 64 else 346_452.3,
            "result": {"ndr": {"goal": "ndr", "rate_pps": ndr, "generator_bound": bound}, "flags": list(flags)},
            "trials": trials or []}


def search(*args, **kw) -> SearchEntry:
    return SearchEntry.from_json(search_json(*args, **kw))


def run_json(sizes: dict[int, list[float | None]]) -> dict:
    return {"searches": [search_json(f, i, v) for f, ndrs in sizes.items() for i, v in enumerate(ndrs)]}


def run(sizes: dict[int, list[float | None]]) -> RunRecord:
    return RunRecord.from_json(run_json(sizes))


def runs(*searches: SearchEntry) -> RunRecord:
    return RunRecord(searches=searches)


def stat(*ndrs: float, frame: int = 64) -> dict[int, SizeStats]:
    return stats(run({frame: list(ndrs)}))


def sizes(**by_frame: tuple[float, ...]) -> dict[int, SizeStats]:
    out = {}
    for key, ndrs in by_frame.items():
        out.update(stat(*ndrs, frame=int(key[1:])))
    return out


# -- statistics --------------------------------------------------------------------------------------------------

def test_stats_of_the_v2_fixture():
    st_ = stats(fixture("result_v2.json.gz"))
    assert sorted(st_) == [64, 9000]
    s64, s9000 = st_[64], st_[9000]
    assert s64.ndrs == [0.0, 89964.0] and s64.mean == 44982.0 and s64.spread == 89964.0  # repeat 0 found none
    assert s64.line_rate_pps == pytest.approx(LINE_64)
    assert s9000.ndrs == [40507.0, 43301.0] and s9000.spread == 2794.0
    # 64 B repeat 0 found no NDR because zlgen could not deliver any rate: that repeat is generator-bound, the
    # other is not; 9000 B repeat 0 is flagged generator-bound, repeat 1 not: neither size is bound every time
    assert (s64.bound_repeats, s64.generator_bound) == (1, False)
    assert (s9000.bound_repeats, s9000.generator_bound) == (1, False)


def test_stats_skips_searches_without_a_result_and_orders_repeats():
    doc = run_json({9000: [30_000.0], 64: [None, 20_000.0]})
    doc["searches"].reverse()
    doc["searches"].append({"frame": 1518, "repeat": 0, "trials": []})  # cut before it finished
    s = stats(RunRecord.from_json(doc))
    assert list(s) == [64, 9000] and s[64].ndrs == [0.0, 20_000.0] and s[9000].spread == 0.0


def test_repeat_bound():
    assert repeat_bound(search(64, 0, 1e5, bound=True))
    assert repeat_bound(search(64, 0, 1e5, flags=("generator-bound",)))
    assert not repeat_bound(search(64, 0, 1e5, flags=("generator-limited",)))  # limited somewhere, not bound
    gen_fail = [{"verdict": "generator-failure", "rate_pps": 1e5}]
    assert repeat_bound(search(64, 0, None, gen_fail, flags=("generator-limited",)))
    lossy = [*gen_fail, {"verdict": "fail", "rate_pps": 5e4}]
    assert not repeat_bound(search(64, 0, None, lossy, flags=("generator-limited",)))  # the DUT lost frames


def test_target_met_takes_the_worst_repeat():
    s = stat(1_000_000.0, 1_200_000.0)[64]
    assert target_pps(s, ("pps", 1.1e6)) == 1.1e6
    assert not target_met(s, ("pps", 1.1e6)) and gap(s, ("pps", 1.1e6)) == pytest.approx(100_000)
    assert target_met(s, ("pps", 1e6)) and gap(s, ("pps", 1e6)) == 0.0
    pct = 100 * 1_000_000 / LINE_64
    assert target_met(s, ("pct", pct * 0.999)) and not target_met(s, ("pct", pct * 1.01))
    assert not target_met(SizeStats(64, [], 0.0, 0.0, LINE_64, False), ("pps", 1.0))
    with pytest.raises(ValueError, match="'gbps'"):
        target_pps(s, ("gbps", 1.0))


def test_generator_bound_looks_at_the_sizes_below_the_target_only():
    bound = SizeStats(64, [1e5, 1e5], 1e5, 0.0, LINE_64, True, 2)
    free = SizeStats(9000, [3e4, 3e4], 3e4, 0.0, 346_452.3, False, 0)
    assert generator_bound({64: bound})
    assert not generator_bound({64: bound, 9000: free})
    assert generator_bound({64: bound, 9000: free}, ("pct", 5))  # 9000 B is at 8.7 %: only 64 B (0.27 %) is short
    assert not generator_bound({64: bound, 9000: free}, ("pct", 0.1))  # every size meets it: nothing bound
    assert not generator_bound({})


# -- the keep/revert rule ----------------------------------------------------------------------------------------

def test_an_improvement_within_the_spread_is_no_effect():
    d = decide(stat(100_000.0, 110_000.0), stat(108_000.0, 112_000.0))
    assert (d.effect, d.keep) == ("no effect", False)
    p = d.per_size[64]
    assert p["delta"] == 5_000.0 and p["threshold"] == 10_000.0  # the spread before beats the 2 % floor (2,100)
    assert "spread before" in d.why


def test_an_improvement_beyond_the_spread_is_kept():
    d = decide(stat(100_000.0, 110_000.0), stat(150_000.0, 155_000.0))
    assert (d.effect, d.keep) == ("improved", True)
    assert d.per_size[64] == {"before": 105_000.0, "after": 152_500.0, "delta": 47_500.0, "threshold": 10_000.0,
                              "before_spread": 10_000.0, "after_spread": 5_000.0}
    assert d.why.startswith("improved: 64 B +47,500 pps")


def test_the_spread_after_counts_too():
    d = decide(stat(100_000.0, 100_500.0), stat(90_000.0, 140_000.0))  # +14,750 pps but after varies by 50,000
    assert d.effect == "no effect" and d.per_size[64]["threshold"] == 50_000.0 and "spread after" in d.why


def test_one_size_up_and_another_down_beyond_their_thresholds_is_worse():
    before = sizes(s64=(100_000.0, 101_000.0), s9000=(30_000.0, 30_300.0))
    after = sizes(s64=(130_000.0, 131_000.0), s9000=(25_000.0, 25_300.0))
    d = decide(before, after)
    assert (d.effect, d.keep) == ("worse", False)
    assert d.why.startswith("worse: 9000 B -5,000 pps") and "while 64 B +30,000 pps" in d.why


def test_one_size_up_and_another_within_its_threshold_is_improved():
    before = sizes(s64=(100_000.0, 101_000.0), s9000=(30_000.0, 30_300.0))
    after = sizes(s64=(130_000.0, 131_000.0), s9000=(30_100.0, 30_150.0))
    d = decide(before, after)
    assert d.effect == "improved" and d.keep and "within the threshold: 9000 B" in d.why


def test_a_single_repeat_is_judged_by_the_noise_floor_and_says_so():
    small = decide(stat(100_000.0), stat(101_500.0))  # +1.5 % < 2 %
    assert small.effect == "no effect" and small.per_size[64]["threshold"] == 2_000.0
    assert "noise floor" in small.why and "repeat >= 2" in small.why
    big = decide(stat(100_000.0), stat(103_000.0))
    assert big.effect == "improved" and big.keep and "noise floor" in big.why
    assert decide(stat(100_000.0), stat(97_000.0)).effect == "worse"
    assert decide(stat(100_000.0), stat(103_000.0), noise_pct=5.0).effect == "no effect"


def test_exactly_at_the_threshold_is_no_effect():
    assert decide(stat(100_000.0, 110_000.0), stat(110_000.0, 120_000.0)).effect == "no effect"


def test_from_no_ndr_to_one_is_an_improvement():
    d = decide(stat(0.0, 0.0), stat(20_000.0, 21_000.0))
    assert d.effect == "improved" and d.per_size[64]["threshold"] == 1_000.0
    assert decide(stat(0.0, 0.0), stat(0.0, 0.0)).effect == "no effect"


def test_sizes_measured_on_one_side_only_are_not_judged():
    d = decide(sizes(s64=(1e5, 1e5)), sizes(s9000=(3e4, 3e4)))
    assert (d.effect, d.keep, d.per_size) == ("no effect", False, {})
    d = decide(sizes(s64=(1e5, 1e5), s9000=(3e4, 3e4)), sizes(s64=(2e5, 2e5)))
    assert d.effect == "improved" and list(d.per_size) == [64]


def test_ring256_to_ring1024_on_the_recorded_fixtures():
    """Two recorded PVP runs (ring 256, then 1024): 9000 B rose beyond both spreads; 64 B's spread (one repeat
    found no NDR) is wider than its gain: improved, kept."""
    d = decide(stats(fixture("result_v2_ring256.json.gz")), stats(fixture("result_v2.json.gz")))
    assert d.effect == "improved" and d.keep
    assert d.per_size[9000]["delta"] > d.per_size[9000]["threshold"]
    assert abs(d.per_size[64]["delta"]) <= d.per_size[64]["threshold"]


ndrs = st.lists(st.floats(0, 1e7, allow_nan=False), min_size=1, max_size=4)


@given(st.dictionaries(st.sampled_from([64, 1518, 9000]), st.tuples(ndrs, ndrs), min_size=1))
def test_rule_properties(data):
    before = {f: stat(*b, frame=f)[f] for f, (b, _) in data.items()}
    after = {f: stat(*a, frame=f)[f] for f, (_, a) in data.items()}
    d = decide(before, after)
    assert d.keep == (d.effect == "improved")
    deltas = [(p["delta"], p["threshold"]) for p in d.per_size.values()]
    assert all(t >= 0 for _, t in deltas)
    if d.effect == "worse":
        assert any(x < -t for x, t in deltas)
    elif d.effect == "improved":
        assert any(x > t for x, t in deltas) and all(x >= -t for x, t in deltas)
    else:
        assert all(abs(x) <= t for x, t in deltas)
    assert decide(before, before).effect == "no effect"  # nothing changed: never kept
    assert "\n" not in d.why


# -- findings ----------------------------------------------------------------------------------------------------

def test_findings_of_the_v2_fixture():
    fs = findings_of(fixture("result_v2.json.gz"))
    top = [(f.hop, f.reason, f.frames) for f in fs]
    # 9000 B: no validation failed, so each repeat's highest-rate failed trial (44 + 1237 and 40 + 1245 frames);
    # 64 B repeat 1: its failed validations at 105,840 and 100,548 pps, the lower one (105 frames each way)
    assert top == [("OVS g1 rx", "rx_missed", 1285), ("OVS g0 rx", "rx_missed", 1281),
                   ("OVS v0 tx", "tx_failure", 105), ("OVS v1 tx", "tx_failure", 105),
                   ("OVS g0 mempool", "mempool_small", 0)]
    assert fs[0].sizes == (9000,) and fs[0].searches == 2
    assert fs[-1].sizes == (64, 9000) and fs[-1].searches == 3
    assert sum(f.share_pct for f in fs) == pytest.approx(100.0)
    assert fs[0].cause.startswith("OVS's PMD could not keep up with port g1")


def trial(kind: str, verdict: str, rate: float, *diag: tuple[str, str, int]) -> dict:
    return {"kind": kind, "verdict": verdict, "rate_pps": rate,
            "diagnosis": [{"hop": h, "where": h.split()[1], "reason": r, "frames": n, "share_pct": 0.0,
                           "cause": f"{r} at {h}", "evidence": [], "remedies": []} for h, r, n in diag]}


def test_findings_of_a_hand_made_run():
    a = search(64, 0, 50_000.0, [
        trial("search", "fail", 200_000.0, ("OVS g0 rx", "rx_missed", 9000)),
        trial("validation", "fail", 80_000.0, ("OVS v0 tx", "tx_failure", 40)),
        trial("validation", "fail", 60_000.0, ("OVS v0 tx", "tx_failure", 30), ("OVS v1 tx", "tx_failure", 10)),
        trial("validation", "pass", 50_000.0, ("OVS v0 tx", "tx_failure", 1)),
    ])
    b = search(64, 1, 70_000.0, [
        trial("search", "fail", 90_000.0, ("OVS v1 tx", "tx_failure", 5)),
        trial("search", "fail", 150_000.0, ("OVS v1 tx", "tx_failure", 50), ("OVS g0 rx", "rx_missed", 20)),
        trial("validation", "generator-failure", 300_000.0, ("OVS g1 rx", "rx_missed", 99_999)),
    ])
    c = search(1518, 0, None, [trial("search", "generator-failure", 1e6, ("OVS g1 rx", "rx_missed", 7))])
    fs = findings_of(runs(a, b, c))
    assert [(f.hop, f.frames, f.searches) for f in fs] == [
        ("OVS v1 tx", 60, 2), ("OVS v0 tx", 30, 1), ("OVS g0 rx", 20, 1)]
    assert [round(f.share_pct, 1) for f in fs] == [54.5, 27.3, 18.2]
    assert findings_of(runs()) == [] and findings_of(RunRecord.from_json({})) == []


def test_validation_rates_that_tie_take_the_last():
    s = search(64, 0, 1.0, [trial("validation", "fail", 5.0, ("OVS v0 tx", "tx_failure", 1)),
                            trial("validation", "fail", 5.0, ("OVS g0 rx", "rx_missed", 2))])
    assert [f.hop for f in findings_of(runs(s))] == ["OVS g0 rx"]
