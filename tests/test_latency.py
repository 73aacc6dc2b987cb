"""zeroloss.core.latency: zlgen's bucket scheme, merging, percentiles, CCDF and the bounds' syntax (known answers)."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.latency import (
    BUCKETS,
    Histogram,
    bins_of,
    bins_stored,
    bins_text,
    bucket_index,
    bucket_low,
    bucket_width,
    exceeded,
    merge,
    ns_text,
    of_streams,
    parse_bounds,
    parse_loads,
)


def hist_of(values: list[int]) -> Histogram:
    """A histogram as zlgen would record the values (zl_hist_record), in its exported form."""
    buckets: dict[int, int] = {}
    for v in values:
        low = bucket_low(bucket_index(v))
        buckets[low] = buckets.get(low, 0) + 1
    summary = {"count": len(values), "min": min(values, default=0), "max": max(values, default=0),
               "mean": sum(values) / len(values) if values else 0.0}
    return Histogram.of_stream(summary, [[low, n] for low, n in buckets.items()])


def test_bucket_scheme_matches_hist_h():
    assert [bucket_index(v) for v in (0, 1, 127)] == [0, 1, 127]  # exact below 128 ns
    assert bucket_index(128) == 128 and bucket_low(128) == 128 and bucket_width(128) == 1
    assert bucket_index(256) == 256 and bucket_width(256) == 2  # [256, 512) in 128 buckets of 2 ns
    assert bucket_low(bucket_index(50_001)) == 49_920 and bucket_width(bucket_index(50_001)) == 256  # 2^15.., 256 ns
    assert bucket_index(1 << 45) == BUCKETS - 1


@settings(max_examples=200, deadline=None)
@given(v=st.integers(min_value=0, max_value=(1 << 41) - 1))
def test_every_value_lies_in_its_bucket_and_buckets_are_narrow(v):
    i = bucket_index(v)
    low, width = bucket_low(i), bucket_width(i)
    assert low <= v < low + width
    assert width == 1 or width / low <= 1 / 128


def test_percentiles_known_answer():
    # 1000 values 1..1000 ns: p50 (rank 500) is in bucket [500, 502) -> 501, p99 in [988, 992) -> 990
    h = hist_of(list(range(1, 1001)))
    p = h.percentiles()
    # p99.9: rank ceil(99.9 / 100 * 1000) is 1000 in doubles, as in zlgen (C), so the max
    assert p["count"] == 1000 and p["min"] == 1 and p["max"] == 1000 and p["mean"] == 500.5
    assert p["p50"] == 501 and p["p90"] == 902 and p["p99"] == 990 and p["p99_9"] == 1000
    assert h.percentile(0) == 1 and h.percentile(100) == 1000
    assert Histogram().percentile(50) == 0 and Histogram().percentiles()["p99"] == 0


def test_merge_of_queues_is_the_histogram_of_all_their_values():
    rng = random.Random(7)
    a = [rng.randint(2_000, 9_000) for _ in range(5_000)]
    b = [rng.randint(40_000, 90_000) for _ in range(50)]  # one slow queue: 1 % of the direction
    merged = merge([hist_of(a), hist_of(b)])
    assert merged == hist_of(a + b)
    assert merged.count == 5_050 and merged.max == max(b) and merged.min == min(a)
    # the worst queue's p50 (what a trial kept before) is tens of us; the direction's is a few us
    assert merged.percentile(50) < 10_000 < hist_of(b).percentile(50)
    assert math.isclose(merged.mean, (sum(a) + sum(b)) / 5_050, rel_tol=1e-9)


@settings(max_examples=50, deadline=None)
@given(vals=st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=300))
def test_percentiles_are_ordered_and_within_a_bucket_of_the_exact_rank(vals):
    h = hist_of(vals)
    p = h.percentiles()
    assert p["min"] <= p["p50"] <= p["p90"] <= p["p99"] <= p["p99_9"] <= p["p99_99"] <= p["max"]
    exact = sorted(vals)[math.ceil(0.99 * len(vals)) - 1]
    assert abs(p["p99"] - exact) <= max(1, exact / 128)


def test_stored_form_round_trips_and_is_sparse():
    h = hist_of([1_000] * 10 + [2_000_000])
    doc = h.to_json()
    i, j = bucket_index(1_000), bucket_index(2_000_000)
    assert doc["bins"] == f"{i}:10,{j - i - 1}:1"  # bucket i, then after j - i - 1 empty ones bucket j
    assert Histogram.from_json(doc) == Histogram(h.buckets, h.count, h.min, h.max, round(h.mean, 3) * h.count)
    # format 2 kept [low, count] pairs: still read, to the same histogram
    v2 = {**{k: v for k, v in doc.items() if k != "bins"}, "buckets": [[1_000, 10], [bucket_low(j), 1]]}
    assert Histogram.from_json(v2) == Histogram.from_json(doc)


def test_bins_text_round_trips_and_refuses_what_it_does_not_write():
    buckets = [(0, 3), (bucket_low(300), 5), (bucket_low(301), 2), (bucket_low(305), 1)]
    assert bins_text(buckets) == "3,299:5,2,3:1" and bins_of("3,299:5,2,3:1") == buckets
    assert bins_text([]) == "" and bins_of("") == []
    for bad in ("1,,2", "a", "1:2:3", "-1", f"{BUCKETS}:1"):
        with pytest.raises(ValueError, match="latency bins"):
            bins_of(bad)


def test_long_bins_are_stored_deflated_losslessly_and_a_crafted_one_is_refused():
    """A real trial's histogram (1,800 buckets, smooth counts) stored deflated: under 2/3 of its text, the same
    buckets back; short ones stay text; broken, truncated or inflating-past-zlgen blobs are refused in one line."""
    import base64
    import random
    import zlib
    rng = random.Random(37)
    buckets = [(bucket_low(i), 50_000 + rng.randrange(-3000, 3000)) for i in range(400, 2200)]
    text, stored = bins_text(buckets), bins_stored(buckets)
    assert stored.startswith("z:") and len(stored) < 2 / 3 * len(text)
    assert bins_of(stored) == buckets
    assert bins_stored(buckets[:3]) == bins_text(buckets[:3])
    h = Histogram.of_stream({"count": sum(n for _, n in buckets), "min": buckets[0][0], "max": buckets[-1][0]},
                            buckets)
    assert Histogram.from_json(h.to_json()) == h and h.to_json()["bins"].startswith("z:")
    bomb = "z:" + base64.b64encode(zlib.compress(b"1," * 10_000_000)).decode()
    for bad in ("z:???", "z:" + base64.b64encode(b"not deflate").decode(), stored[:-40], bomb,
                "z:" + base64.b64encode(zlib.compress("1,é".encode())).decode()):
        with pytest.raises(ValueError, match="latency bins"):
            bins_of(bad)


def test_a_bucket_off_the_scheme_or_a_count_that_does_not_add_up_is_refused():
    with pytest.raises(ValueError, match="boundary"):
        Histogram.of_stream({"count": 1, "min": 129, "max": 129}, [[257, 1]])  # 256..511 buckets are 2 ns wide
    with pytest.raises(ValueError, match="hold 1 values, the summary counts 2"):
        Histogram.of_stream({"count": 2, "min": 5, "max": 5}, [[5, 1]])
    # a stream that measured but exported nothing: no merged histogram (its percentiles alone are known)
    assert of_streams([({"count": 3, "min": 1, "max": 1, "mean": 1}, [])]) is None
    assert of_streams([({"count": 0}, []), ({"count": 1, "min": 9, "max": 9, "mean": 9}, [[9, 1]])]).count == 1


def test_ccdf_falls_from_one_to_zero_at_the_max():
    h = hist_of([100] * 90 + [10_000] * 9 + [1_000_000])
    pts = h.ccdf()
    assert pts[0] == (100.0, 1.0) and pts[-1] == (1_000_000.0, 0.0)
    assert [round(s, 3) for _, s in pts[1:]] == [0.1, 0.01, 0.0]
    xs = [x for x, _ in pts]
    assert xs == sorted(xs)
    assert Histogram().ccdf() == []


def test_bounds_parse_and_judge():
    assert parse_bounds("p99=50us") == (("p99", 50_000),)
    assert parse_bounds("p50=800ns, p99.9=1.5ms,MAX=2ms") == (("p50", 800), ("p99_9", 1_500_000),
                                                               ("max", 2_000_000))
    assert parse_bounds("") == () and parse_bounds("none") == ()
    for bad in ("p98=5us", "p99", "p99=fast", "p99=0us", "p99=5us,p99=6us"):
        with pytest.raises(ZeroLossError, match="max_latency"):
            parse_bounds(bad)
    lat = {"count": 10, "p99": 63_000, "max": 70_000}
    assert exceeded((("p99", 50_000),), lat) == "p99 63 us > 50 us"
    assert exceeded((("p99", 63_000), ("max", 100_000)), lat) is None
    assert exceeded((("p99", 50_000),), None) == "p99 not measured (bound 50 us)"
    assert exceeded((), None) is None


def test_loads_and_text():
    assert parse_loads("10,50,90,100") == (10.0, 50.0, 90.0, 100.0)
    assert parse_loads("none") == () and parse_loads("0") == ()
    with pytest.raises(ZeroLossError, match="latency_loads"):
        parse_loads("10,150")
    with pytest.raises(ZeroLossError, match="latency_loads"):
        parse_loads("ten")
    assert [ns_text(x) for x in (850, 12_500, 63_000, 1_200_000, 3e9)] == ["850 ns", "12.5 us", "63 us", "1.2 ms",
                                                                           "3 s"]


# -- a stored run with latency-vs-load trials (a bench run of ovs-p2p behind a 20 kpps meter, --max-latency) --------

FIX = __import__("pathlib").Path(__file__).parent / "fixtures" / "result_v2_latency.json.gz"


def _run():
    from zeroloss.results.summary import load_runs

    return load_runs([str(FIX)])[0]


def test_stored_loads_give_nfvbench_table_json_and_verdict():
    from zeroloss.results import latencyload
    from zeroloss.results.fmt import run_table
    from zeroloss.results.verdict import verdict

    run = _run()
    (s,) = latencyload.searches(run.record)
    loads = s.latency_loads
    assert [t.load_pct for t in loads] == [10, 50, 90, 100]
    assert [t.rate_pps for t in loads] == [round(s.ndr.rate_pps * p / 100) for p in (10, 50, 90, 100)]
    for t in loads:
        h = t.histogram()
        assert h is not None and h.count == sum(d.rx for d in t.directions)  # every frame received, merged
        lat = t.latency()
        assert lat["p50"] <= lat["p99"] <= lat["p99_9"] <= lat["max"] == max(d.latency_ns["max"] for d in t.directions)
    table = latencyload.load_table(run.record).splitlines()
    assert table[1].split() == ["frame", "load", "%", "rate", "pps", "lost", "p50", "us", "p99", "us", "p99.9", "us",
                                "max", "us"]
    assert [line.split()[1] for line in table[3:]] == ["10", "50", "90", "100"]
    doc = latencyload.to_json(run.record)
    assert doc["max_latency"] == "p99 <= 200 ms" and len(doc["rows"]) == 4
    assert "(NDR and PDR with p99 <= 200 ms)" in verdict(run.record).line
    assert "both also with p99 <= 200 ms per direction" in run_table(run.record)


def test_report_has_the_latency_section_plots_and_exports():
    from zeroloss.report.html import render
    from zeroloss.results.export import export

    run = _run()
    page = render([run])
    section = page[page.index("<h3>Latency vs load</h3>"):page.index("<h3>Warnings</h3>")]
    assert section.count("<svg") == 2  # latency vs load, and the search's CCDF
    assert "<h3>Latency vs load</h3>" in page and page.count('<table class="latency-load">') == 1
    assert "also met p99 &lt;= 200 ms" in page
    md = export([run], "markdown")
    assert "Latency vs load" in md and "p99.9 us" in md
    j = json.loads(export([run], "json"))
    assert len(j["runs"][0]["latency_vs_load"]["rows"]) == 4


def test_a_run_resumes_the_loads_it_lacks():
    from zeroloss.core.config import RunConfig
    from zeroloss.runs.run import loads_done

    (s,) = _run().record.searches
    assert loads_done(s, RunConfig(frame_sizes=[64], latency_loads="10,50,90,100"))
    assert not loads_done(s, RunConfig(frame_sizes=[64], latency_loads="10,50,75"))
    assert loads_done(s, RunConfig(frame_sizes=[64], latency_loads="none"))


def test_trial_records_keep_the_reason_and_the_merged_histogram():
    (s,) = _run().record.searches
    for t in s.trials:
        for d, o in zip(t.dirs(), t.outcome.directions, strict=True):
            assert Histogram.from_json(d.latency_hist).percentiles() == d.latency_ns == o.latency_ns
            assert Histogram.from_json(d.latency_hist).count == o.rx
    assert all(t.reason is None for t in s.trials)  # 200 ms: no trial exceeded it
