"""Sign-off verdict (--require-ndr) and the non-monotonic flag, on small result documents."""

from __future__ import annotations

import pytest

from zeroloss.core.config import RunConfig, require_map
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import line_rate_pps
from zeroloss.results.records import RunRecord
from zeroloss.results.summary import frame_rows
from zeroloss.results.verdict import verdict

LINK = 25e9


def doc(ndrs: dict[int, list[float | None]], require=None) -> dict:
    """A result document with one search per repeat and frame size (NDR None: the search found none), each NDR
    bracketed by a lost frame 1 % above it (a file written before the verdicts: the upper bound is the DUT's)."""
    searches = []
    for frame, values in ndrs.items():
        for rep, v in enumerate(values):
            searches.append({"frame": frame, "repeat": rep, "link": "memif", "trials": [],
                             "line_rate_pps": line_rate_pps(LINK, frame),
                             "result": {"ndr": {"rate_pps": v, "lower_pps": v or 0,
                                                "upper_pps": 1.01 * v if v else 1000.0},
                                        "pdr": None, "flags": [], "trials": 1}})
    cfg = {"require_ndr": require, "ndr_loss_pct": 0, "pdr_loss_pct": 0.1, "link_speed_gbps": 25}
    return {"config": cfg, "searches": searches, "ceilings": {}}


def run(ndrs: dict[int, list[float | None]], require=None) -> RunRecord:
    """The records of such a document."""
    return RunRecord.from_json(doc(ndrs, require))


def test_pass_names_the_lowest_ndr_and_its_size():
    v = verdict(run({64: [3_720_238.0], 1518: [1_000_000.0]}, {64: 5, 1518: 40}))  # 10 % and 49.4 % of line rate
    assert v.status == "PASS" and v.lowest_frame == 64 and v.lowest_pct == pytest.approx(10.0, abs=0.01)
    assert v.line.startswith("PASS") and "at 64 B" in v.line


def test_fail_names_each_size_that_missed_and_uses_the_worst_repeat():
    v = verdict(run({64: [3_720_238.0, 1_000_000.0], 9000: [None]}, {64: 5, 9000: 50}))
    assert v.status == "FAIL" and set(v.missed) == {64, 9000}
    assert v.missed[9000] is None and v.missed[64] == pytest.approx(2.69, abs=0.01)
    assert "64 B 2.69 % < 5 %" in v.line and "9000 B no NDR < 50 %" in v.line


def test_no_requirement_still_leads_with_the_lowest_ndr():
    v = verdict(run({64: [3_720_238.0]}))
    assert v.status == "NONE" and "lowest NDR 10.00 %" in v.line
    assert verdict(RunRecord.from_json({"config": {}, "searches": []})).status == "INCOMPLETE"


@pytest.mark.parametrize("value, sizes, expected", [
    (25, [64, 1518], {64: 25.0, 1518: 25.0}),
    ("25", [64], {64: 25.0}),
    ("64:10,9000:90", [64, 9000], {64: 10.0, 9000: 90.0}),
    ({"64": 10, 1518: 50.5}, [64, 1518], {64: 10.0, 1518: 50.5}),
    (None, [64], None),
])
def test_require_ndr_forms(value, sizes, expected):
    assert require_map(value, sizes) == expected


@pytest.mark.parametrize("value, message", [
    ("fast", "neither a percentage"), ({128: 10}, "128 B, which is not in frame_sizes"), (0, "in \\(0, 100\\]"),
    (True, "must be a percentage"), ({64: "x"}, "percentage in"), ([1, 2], "must be a percentage"),
])
def test_require_ndr_errors_are_one_line(value, message):
    with pytest.raises(ZeroLossError, match=message):
        RunConfig(frame_sizes=[64], require_ndr=value)


def test_larger_frame_with_more_pps_is_flagged_non_monotonic():
    rows = {r.frame: r for r in frame_rows(run({64: [1_000_000.0], 128: [1_200_000.0], 256: [900_000.0]}))}
    assert "non-monotonic" not in rows[64].flags
    assert "non-monotonic" in rows[128].flags  # more frames/s than 64 B
    assert "non-monotonic" not in rows[256].flags  # fewer frames/s, more bits than 128 B


def test_larger_frame_with_fewer_gbps_is_flagged_unless_within_the_spread():
    # 1280 B at 700 kpps carries 7.28 Gb/s L1, less than 1024 B at 1 Mpps (8.35 Gb/s)
    rows = {r.frame: r for r in frame_rows(run({1024: [1_000_000.0], 1280: [700_000.0]}))}
    assert "non-monotonic" in rows[1280].flags
    spread = {r.frame: r for r in frame_rows(run({1024: [1_000_000.0, 600_000.0], 1280: [700_000.0, 710_000.0]}))}
    assert "non-monotonic" not in spread[1280].flags


def test_ceiling_measured_through_the_dut_voids_generator_bound():
    d = doc({9000: [100_000.0]})
    d["searches"][0]["result"]["flags"] = ["generator-bound"]
    d["searches"][0]["result"]["ndr"]["generator_bound"] = True
    d["ceilings"] = {"9000": {"pps": 100_000.0, "how": "through-dut"}}
    (row,) = frame_rows(RunRecord.from_json(d))
    assert not row.generator_bound and "ceiling-via-dut" in row.flags and "generator-bound" not in row.flags
    d["ceilings"]["9000"]["how"] = "loopback"
    (row,) = frame_rows(RunRecord.from_json(d))
    assert row.generator_bound and "generator-bound" in row.flags


# the three verdicts (issue 28): searches with their trials ---------------------------------------------------------

LINE64 = line_rate_pps(LINK, 64)


def trial(i: int, rate: float, verdict: str, passes=None, seconds: float = 1.0, achieved: float | None = None,
          disturbed: str | None = None) -> dict:
    """A stored trial: the search's verdict, what it passed, one direction delivered at `achieved`."""
    got = rate if achieved is None else achieved
    tx = round(got * seconds)
    lost = 0 if passes else 5
    outcome = {"directions": [{"requested_pps": rate, "achieved_pps": got, "tx": tx, "rx": tx - lost}]}
    if disturbed:
        outcome["disturbed"] = disturbed
    return {"index": i, "rate_pps": rate, "duration_s": seconds, "kind": "search", "goal": "ndr", "verdict": verdict,
            "loss_ratio": lost / tx if tx else 0, "passes": list(passes or ()), "outcome": outcome}


def search_run(trials: list[dict], ndr: float | None, require: float | None = 1.0, gen_limit: float | None = None,
               flags=(), shared: bool = False, max_rate: float = 6e6, generator_bound: bool = False,
               measured: bool = False) -> RunRecord:
    """A run of one 64 B search with the given trials and answer; require: % of line rate (None: no requirement);
    measured: zlgen's ceiling was offered before the search (the bench's runs; not an external DUT's)."""
    clean = min((t["rate_pps"] for t in trials if t["verdict"] in ("pass", "fail") and "ndr" not in t["passes"]),
                default=None)
    result = {"ndr": {"rate_pps": ndr, "lower_pps": ndr or 0, "upper_pps": clean, "clean_fail_pps": clean,
                      "generator_bound": generator_bound},
              "pdr": None, "flags": list(flags), "trials": len(trials), "gen_limit_pps": gen_limit}
    search = {"frame": 64, "repeat": 0, "link": "memif", "trials": trials, "line_rate_pps": LINE64,
              "max_rate_pps": max_rate, "result": result}
    doc = {"config": {"require_ndr": {"64": require} if require else None, "ndr_loss_pct": 0, "pdr_loss_pct": 0.1,
                      "link_speed_gbps": 25}, "searches": [search]}
    if measured:
        doc["ceilings"] = {"64": {"pps": max_rate, "link": "memif", "how": "loopback"}}
    if shared:
        doc["core_probes"] = [{"frames": [64], "cores": [0, 1], "ratio": [0.5, 0.5], "shared": True}]
    return RunRecord.from_json(doc)


ONE_PCT = LINE64 / 100


def test_every_trial_a_generator_failure_is_inconclusive_never_fail():
    """Issue 28's first case: --require-ndr 64:1 and only generator failures gave `FAIL: 64 B no NDR < 1 %`."""
    trials = [trial(i, 6e6 / 2 ** (i // 4), "generator-failure", achieved=1e4) for i in range(12)]
    v = verdict(search_run(trials, None, gen_limit=1e4, flags=["generator-limited"]))
    assert v.status == "INCONCLUSIVE" and v.exit_code == 3
    size = v.sizes[64]
    assert size.bound and "generator could not offer more than 10.000 kpps" in v.line
    assert "100 % of the trial" in v.line and v.line.startswith("INCONCLUSIVE: 64 B NDR none (required 1 %)")


@pytest.mark.parametrize("measured, says", [
    (True, "having offered 6.000 Mpps before the search: a stalled or busy generator core"),
    (False, "below the search's top of 6.000 Mpps (the line rate or --max-rate, not measured for this DUT)")])
def test_the_generators_shortfall_says_whether_the_top_was_offered_before(measured, says):
    """On the bench zlgen offered the search's top flat out before it, so a shortfall is a stall; an external or
    linux-bridge DUT's top is the line rate or --max-rate, which nothing offered, so it may be zlgen's own limit."""
    trials = [trial(i, 6e6 / 2 ** (i // 4), "generator-failure", achieved=1e4) for i in range(12)]
    v = verdict(search_run(trials, None, gen_limit=1e4, flags=["generator-limited"], measured=measured))
    assert v.status == "INCONCLUSIVE" and says in v.line


def test_a_clean_loss_at_or_below_the_required_rate_is_a_fail():
    trials = [trial(0, 0.8 * ONE_PCT, "fail"), trial(1, 0.5 * ONE_PCT, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(trials, 0.5 * ONE_PCT))
    assert v.status == "FAIL" and v.exit_code == 2 and v.sizes[64].ndr_pct == pytest.approx(0.5)
    assert "the DUT lost frames at" in v.line and "generator on schedule" in v.line


def test_a_loss_only_in_disturbed_trials_is_inconclusive_with_the_stall_named():
    stall = "PMD core 1 stalled up to 9.8 ms, its RX ring covers 0.5 ms at this rate"
    trials = [trial(i, 0.8 * ONE_PCT, "disturbed", disturbed=stall) for i in range(4)]
    trials.append(trial(4, 0.5 * ONE_PCT, "pass", ["ndr"], seconds=10))
    v = verdict(search_run(trials, 0.5 * ONE_PCT, flags=["disturbed"]))
    assert v.status == "INCONCLUSIVE" and v.sizes[64].shown == "≥ 0.50 %"
    assert "host stalls on the DUT's cores" in v.line and "9.8 ms" in v.line


def test_shared_cores_make_a_loss_inconclusive_but_not_a_pass():
    trials = [trial(0, 0.8 * ONE_PCT, "fail"), trial(1, 0.5 * ONE_PCT, "pass", ["ndr"], seconds=10)]
    assert verdict(search_run(trials, 0.5 * ONE_PCT, shared=True)).status == "INCONCLUSIVE"
    ok = [trial(0, 2 * ONE_PCT, "pass", ["ndr"], seconds=10)]
    assert verdict(search_run(ok, 2 * ONE_PCT, shared=True)).status == "PASS"


def test_a_pass_stands_whatever_happened_above_the_required_rate():
    trials = [trial(0, 3 * ONE_PCT, "generator-failure", achieved=ONE_PCT * 2.5),
              trial(1, 2 * ONE_PCT, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(trials, 2 * ONE_PCT, gen_limit=2.5 * ONE_PCT))
    assert v.status == "PASS" and v.exit_code == 0


def test_without_a_requirement_a_clean_bracket_is_measured_and_a_generator_limit_is_not():
    clean = [trial(0, 5e6, "fail"), trial(1, 4e6, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(clean, 4e6, require=None))
    assert v.status == "NONE" and v.exit_code == 0 and v.sizes[64].status == "MEASURED" and not v.sizes[64].bound
    limited = [trial(0, 5e6, "generator-failure", achieved=1e6), trial(1, 1e6, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(limited, 1e6, require=None, gen_limit=1e6, flags=["generator-limited"]))
    assert v.status == "INCONCLUSIVE" and v.exit_code == 3 and v.sizes[64].shown.startswith("≥ ")
    assert "no frame size has a conclusive NDR" in v.line  # the headline never quotes an inconclusive NDR


def test_an_ndr_at_the_generators_own_ceiling_is_a_measured_lower_bound():
    top = [trial(0, 6e6, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(top, 6e6, require=None, generator_bound=True, flags=["generator-bound"]))
    assert v.status == "NONE" and v.sizes[64].bound and v.sizes[64].shown.startswith("≥ ")
    near = [trial(0, 6e6, "generator-failure", achieved=5.8e6), trial(1, 5.8e6, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(near, 5.8e6, require=None, gen_limit=5.8e6, generator_bound=True,
                           flags=["generator-bound", "generator-limited"]))
    assert v.status == "NONE"  # within 5 % of what zlgen offered before the search: its ceiling, not a stall


def test_most_trial_time_on_generator_failures_is_too_few_valid_trials():
    trials = [trial(i, 5e6, "generator-failure", achieved=4e6, seconds=10) for i in range(3)]
    trials += [trial(3, 5e6, "fail"), trial(4, 4e6, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(trials, 4e6, require=None))
    assert v.status == "INCONCLUSIVE" and "% of the trial time went to generator failures" in v.line


def test_no_loss_up_to_the_line_rate_is_a_measured_ndr_not_a_bound():
    """A search whose top is the line rate and which lost nothing there has measured 100 % of line rate."""
    top = [trial(0, LINE64, "pass", ["ndr"], seconds=10)]
    v = verdict(search_run(top, LINE64, require=None, max_rate=LINE64))
    assert v.status == "NONE" and v.sizes[64].status == "MEASURED" and not v.sizes[64].bound
    assert v.sizes[64].ndr_pct == pytest.approx(100)


def test_a_stall_between_an_ndr_and_a_clean_loss_within_one_step_is_no_obstacle():
    """The default run's 64 B (2026-11-28): NDR 3.755 Mpps validated, a clean loss at 3.799 Mpps, a trial paced
    3.764 Mpps between them disturbed by a testpmd stall: both ends are evidence within the step (1 % of a 5.08 Mpps
    top), so the size is MEASURED; two steps apart, the same stall leaves it INCONCLUSIVE."""
    stall = "testpmd core 0 lost 2 % of the trial to other tasks"

    def trials(fail: float) -> list[dict]:
        return [trial(0, fail, "fail"), trial(1, 3.764e6, "disturbed", disturbed=stall),
                trial(2, 3.755e6, "pass", ["ndr"], seconds=5)]

    near = search_run(trials(3.799e6), 3.755e6, require=None, max_rate=5.083e6, flags=["disturbed"])
    near.config["granularity_pct"] = 1.0
    v = verdict(near)
    assert v.sizes[64].status == "MEASURED" and "host stalls" not in v.line
    far = search_run(trials(3.87e6), 3.755e6, require=None, max_rate=5.083e6, flags=["disturbed"])
    far.config["granularity_pct"] = 1.0
    v = verdict(far)
    assert v.sizes[64].status == "INCONCLUSIVE" and "host stalls on the DUT's cores" in v.line
