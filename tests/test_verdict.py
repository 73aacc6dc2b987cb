"""Sign-off verdict (--require-ndr) and the non-monotonic flag, on small result documents."""

from __future__ import annotations

import pytest

from zeroloss.config import RunConfig, require_map
from zeroloss.errors import ZeroLossError
from zeroloss.model import line_rate_pps
from zeroloss.results.records import RunRecord
from zeroloss.results.summary import frame_rows
from zeroloss.results.verdict import verdict

LINK = 25e9


def doc(ndrs: dict[int, list[float | None]], require=None) -> dict:
    """A result document with one search per repeat and frame size (NDR None: the search found none)."""
    searches = []
    for frame, values in ndrs.items():
        for rep, v in enumerate(values):
            searches.append({"frame": frame, "repeat": rep, "link": "memif", "trials": [],
                             "line_rate_pps": line_rate_pps(LINK, frame),
                             "result": {"ndr": {"rate_pps": v, "lower_pps": v or 0, "upper_pps": None},
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
