"""Latency over the frames sent: a lost frame is the top of the distribution (latency.Histogram.percentile), so a
lossy trial's percentiles that the loss reaches are marked and bounded below, never shown as the smaller figure of
the frames that arrived; the latency-vs-load series shows p99 rising with load where it must; a warm trial runs
before the first load (runner.Run._latency_loads)."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from zeroloss.core.latency import (
    PERCENTILES,
    Histogram,
    bucket_index,
    bucket_low,
    exceeded,
    lost_reaches,
    lost_tail,
    mark_lost,
    merge,
    value_text,
)
from zeroloss.core.model import Latency, StreamResult
from zeroloss.core.search import Direction, Outcome
from zeroloss.loss.records import TrialDetail, TrialDirection
from zeroloss.results.latencyload import load_table
from zeroloss.results.records import LoadDirection, LoadTrial
from zeroloss.runs.run import Run, load_trial
from zeroloss.runs.trial import direction_latency


def hist_of(values: list[int], lost: int = 0) -> Histogram:
    """A histogram as zlgen would record the values, with `lost` frames that never arrived."""
    buckets: dict[int, int] = {}
    for v in values:
        low = bucket_low(bucket_index(v))
        buckets[low] = buckets.get(low, 0) + 1
    summary = {"count": len(values), "min": min(values, default=0), "max": max(values, default=0),
               "mean": sum(values) / len(values) if values else 0.0}
    return replace(Histogram.of_stream(summary, [[low, n] for low, n in buckets.items()]), lost=lost)


def test_lost_frames_rank_above_every_value_known_answer():
    # 1000 frames of 1..1000 ns arrived, 5 were lost: 1005 sent. p99 is the 995th smallest (a measured one, in
    # bucket [992, 996) -> 994), p99.9 the 1004th: a lost frame, so only "1000 ns or more" is known
    h = hist_of(list(range(1, 1001)), lost=5)
    p = h.percentiles()
    assert p["p50"] == 503 and p["p90"] == 906 and p["p99"] == 994
    assert p["lost"] == 5 and p["lost_tail"] == ["p99_9", "p99_99", "max"]
    assert p["p99_9"] == p["p99_99"] == p["max"] == 1000  # the largest measured: a lower bound
    assert hist_of(list(range(1, 1001))).percentiles()["p99"] == 990  # no loss: zlgen's figure, no marks
    assert "lost_tail" not in hist_of(list(range(1, 1001))).percentiles()


def test_every_percentile_is_lost_when_nothing_arrived():
    p = Histogram(lost=10).percentiles()
    assert p["lost_tail"] == ["p50", "p90", "p99", "p99_9", "p99_99", "max"] and p["count"] == 0
    assert value_text(p, "p99") == "lost" and value_text(p, "min") == "0.0"


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.integers(min_value=1, max_value=10_000_000), min_size=1, max_size=300),
       lost=st.integers(min_value=0, max_value=400), more=st.integers(min_value=1, max_value=50))
def test_losing_frames_never_lowers_a_percentile(values, lost, more):
    """The rule's point: the loss grows, the figures never fall; a percentile is lost exactly when its rank over
    the frames sent is beyond the frames received."""
    h = hist_of(values, lost)
    worse = replace(h, lost=lost + more)
    for key, pct in PERCENTILES:
        assert worse.percentile(pct) >= h.percentile(pct) >= replace(h, lost=0).percentile(pct)
        rank = max(1, math.ceil(pct / 100 * (len(values) + lost)))
        assert h.lost_reaches(pct) == (lost > 0 and rank > len(values))
        assert (key in lost_tail(h.percentiles())) == h.lost_reaches(pct)
        if h.lost_reaches(pct):
            assert h.percentile(pct) == max(values)


def test_merge_and_the_stored_form_keep_the_lost_tail():
    a, b = hist_of([100] * 98, lost=2), hist_of([200] * 100, lost=0)
    m = merge([a, b])
    assert m.lost == 2 and m.count == 198 and not m.lost_reaches(99)  # rank 198 of 200: measured
    assert merge([a, Histogram(lost=3)]).lost == 5  # a direction that received nothing still adds its loss
    back = Histogram.from_json(a.to_json())
    assert back == a and back.percentiles() == a.percentiles()
    assert "lost" not in b.to_json()  # a lossless histogram is stored as before


def test_a_bound_the_lost_frames_reach_is_exceeded_however_low_the_measured_values():
    lat = hist_of([1_000] * 99, lost=1).percentiles()  # p99: rank 99 of 100, measured; p99.9 lost
    assert exceeded((("p99", 50_000),), lat) is None
    over = exceeded((("p99_9", 50_000),), lat)
    assert over is not None and over.startswith("p99.9 > 1 us") and "lost" in over
    assert exceeded((("max", 50_000),), lat) is not None


def test_percentiles_known_only_as_numbers_are_marked_the_same_way():
    lat = {"count": 100, "min": 1, "mean": 5.0, "max": 90, "p50": 5, "p90": 9, "p99": 50, "p99_9": 80,
           "p99_99": 90}
    assert mark_lost(lat, 0) is lat
    m = mark_lost(lat, 2)  # 102 sent: p99 is the 101st -> lost
    assert m["lost_tail"] == ["p99", "p99_9", "p99_99", "max"] and m["p99"] == 90 and m["p90"] == 9
    assert lost_reaches(98.0, 100, 2) is False and lost_reaches(99.0, 100, 2) is True
    assert value_text(m, "p99") == "> 0.1" and value_text(m, "p90") == "0.0" and value_text(m, "nope") == "-"


def _stream(values: list[int], tx: int, refused: int = 0) -> StreamResult:
    h = hist_of(values)
    return StreamResult(id=0, port=0, queue=0, rx_port=1, flows=1, requested_pps=1000, achieved_pps=1000.0,
                        tx_pkts=tx, tx_bytes=64 * tx, tx_refused=refused, tx_nombuf=0, pace_restarts=0,
                        pace_skipped=0, rx_pkts=len(values), rx_bytes=64 * len(values), rx_unique=len(values),
                        lost=tx - len(values), seq_gaps=0, reordered=0, duplicate=0, late=0,
                        latency_ns=Latency(count=h.count, min=h.min, mean=h.mean, max=h.max,
                                           p99=int(h.percentile(99))), latency_hist=h.buckets)


def test_direction_latency_puts_a_directions_lost_frames_at_the_top():
    lat, hist = direction_latency([_stream([1_000] * 989, tx=1000)])  # p99: the 990th of 1000
    assert hist is not None and hist.lost == 11 and lat["lost"] == 11 and "p99" in lat["lost_tail"]
    # a frame the virtual wire refused was refused by the DUT's full ring: lost; on a NIC it never left zlgen
    lat, _ = direction_latency([_stream([1_000] * 1000, tx=1000, refused=20)])
    assert lat["lost"] == 20 and "p99" in lat["lost_tail"]
    lat, _ = direction_latency([_stream([1_000] * 1000, tx=1000, refused=20)], refused_is_loss=False)
    assert "lost_tail" not in lat


# -- latency vs load ---------------------------------------------------------------------------------------------

def _load(pct: float, values: list[int], tx: int) -> LoadTrial:
    """A load trial as the runner records it: TrialRunner's detail (direction_latency), then load_trial."""
    group = [_stream(values, tx)]
    lat, hist = direction_latency(group)
    assert hist is not None
    out = Outcome((Direction(requested_pps=1000, achieved_pps=1000, tx=tx, rx=len(values), latency_ns=lat),))
    detail = TrialDetail(trial_id=1, directions=(TrialDirection(port=0, rx_port=1, latency_ns=lat,
                                                                latency_hist=hist.to_json()),))
    return load_trial(pct, pct * 100, 1.0, out, detail)


def test_p99_rises_with_load_or_is_marked_lost_never_lower():
    """ovs-p2p's case: at 90 % of the NDR the DUT dropped its most delayed frames (3 % of them). Over the frames
    that arrived, p99 fell below the 50 % load's; over the frames sent it is marked lost, a bound at least the
    largest value measured, and the table shows it as '> ...'."""
    low = [5_000] * 1950 + [100_000] * 50  # p99 (the 1980th of 2000): 100 us
    mid = [5_000] * 1950 + [1_000_000] * 50  # 1 ms
    high = [5_000] * 1935 + [1_100_000] * 5  # 60 of 2000 lost: the queue overflowed, its slowest frames dropped
    series = [_load(10, low, 2000), _load(50, mid, 2000), _load(90, high, 2000)]
    received_only = [replace(t.histogram() or Histogram(), lost=0).percentile(99) for t in series]
    assert received_only[2] < received_only[1]  # the fault: the lossy load looked faster
    shown = [t.latency() for t in series]
    assert "p99" in lost_tail(shown[2]) and shown[2]["lost"] == 60
    for prev, cur in zip(shown, shown[1:], strict=False):
        assert "p99" in lost_tail(cur) or cur["p99"] >= prev["p99"]
    assert shown[2]["p99"] >= max(s["p99"] for s in shown[:2])  # a lower bound above the lossless loads' p99
    # the stored direction holds the same marks, and the text table says what the figure is
    assert "p99" in lost_tail(series[2].directions[0].latency_ns)
    run = SimpleNamespace(searches=[SimpleNamespace(frame=64, repeat=0, latency_loads=tuple(series))],
                          config={})
    text = load_table(run)  # type: ignore[arg-type]
    row90 = next(line for line in text.splitlines() if line.lstrip().startswith("64") and " 90 " in line)
    assert "> " in row90 and "lost" in text.splitlines()[-1]


def test_a_file_before_the_lost_tail_is_read_with_it():
    """Stored load trials from before the rule (no 'lost' in their histogram or percentiles) are read over the
    frames sent too: the direction's tx - rx is the lost count."""
    h = hist_of(list(range(1, 1001)))
    t = LoadTrial(load_pct=90, rate_pps=1e6, duration_s=1, directions=(
        LoadDirection(tx=1020, rx=1000, latency_ns=h.percentiles(), latency_hist=h.to_json()),))
    assert t.latency()["lost"] == 20 and "p99" in t.latency()["lost_tail"]
    no_hist = replace(t, directions=(replace(t.directions[0], latency_hist=None),))
    assert "p99" in no_hist.latency()["lost_tail"] and no_hist.latency()["p99"] == 1000


def test_a_warm_trial_at_the_first_loads_rate_runs_before_the_loads_and_is_not_kept():
    """The first load after a search carried the search's tail: one warm trial at its rate comes first."""
    calls: list[tuple[float, float]] = []
    lat, hist = direction_latency([_stream([1_000] * 100, tx=100)])

    detail = TrialDetail(directions=(TrialDirection(latency_ns=lat, latency_hist=hist and hist.to_json()),))

    def measure(rate: float, duration: float) -> tuple[Outcome, TrialDetail]:
        calls.append((rate, duration))
        return Outcome((Direction(requested_pps=rate, achieved_pps=rate, tx=100, rx=100, latency_ns=lat),)), detail

    runner = SimpleNamespace(measure=measure)
    saved: list[tuple] = []
    events: list[tuple[str, dict]] = []
    entry = SimpleNamespace(ndr=SimpleNamespace(rate_pps=1_000_000.0), latency_loads=None)
    rf = SimpleNamespace(search=lambda f, r: entry, set_latency_loads=lambda f, r, k: saved.append(k))
    cfg = SimpleNamespace(latency_loads="10,50", latency_trial_s=2.0, validation_s=5.0, warmup_s=0.5)
    run = SimpleNamespace(rf=rf, cfg=cfg, progress=lambda e, d: events.append((e, d)))
    Run._latency_loads(run, runner, 64, 0)  # type: ignore[arg-type]
    assert calls == [(100_000.0, 0.5), (100_000.0, 2.0), (500_000.0, 2.0)]
    assert [t.load_pct for t in saved[-1]] == [10, 50]  # the warm trial is not among the loads
    assert [e for e, _ in events] == ["warmup", "load", "load"]
    calls.clear()
    Run._latency_loads(SimpleNamespace(rf=rf, cfg=replace_ns(cfg, warmup_s=0.0), progress=lambda e, d: None),
                       runner, 64, 0)  # type: ignore[arg-type]
    assert calls == [(100_000.0, 2.0), (500_000.0, 2.0)]  # --warmup 0: no warm-up trials at all


def replace_ns(ns: SimpleNamespace, **kw: object) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(ns), **kw})


def test_explain_shows_a_lossy_directions_latency_as_a_bound():
    from zeroloss.report.explain import latency_lines
    from zeroloss.results.records import DirectionOutcome, OutcomeRecord, TrialDirection, TrialEntry

    h = hist_of([5_000] * 980 + [900_000] * 5)  # 15 of 1000 lost: p99 (the 990th) is a lost frame
    t = TrialEntry(outcome=OutcomeRecord(directions=(DirectionOutcome(tx=1000, rx=985),)),
                   directions=(TrialDirection(latency_ns=h.percentiles(), latency_hist=h.to_json()),))
    (line,) = latency_lines(t)  # a file before the rule: the marks come from the outcome's loss
    assert "p50 5.0, p99 > 900.0, p99.9 > 900.0, max > 900.0" in line and "15 lost frames" in line
    clean = TrialEntry(outcome=OutcomeRecord(directions=(DirectionOutcome(tx=985, rx=985),)),
                       directions=(TrialDirection(latency_ns=h.percentiles(), latency_hist=h.to_json()),))
    # the same frames, nothing lost: p99 is the 976th of 985, a fast one (what the lossy trial showed before)
    assert latency_lines(clean) == ["latency 0->1 (us, over the frames sent): p50 5.0, p99 5.0, p99.9 899.1, "
                                    "max 900.0"]


def test_the_run_tables_latency_cell_marks_what_the_validations_loss_reaches():
    from zeroloss.results.fmt import _lat_cell

    assert _lat_cell((12.0, 15.25, 40.0), 0, 1000) == "12.0/15.2/40.0"
    assert _lat_cell((12.0, 15.25, 40.0), 2, 1000) == "12.0/15.2/>40.0"  # a lost frame: the max is a bound
    assert _lat_cell((12.0, 40.0, 40.0), 20, 1000) == "12.0/>40.0/>40.0"  # 2 % lost reach p99
    assert _lat_cell(None, 0, 0) == "-"
