"""What a trial keeps in a result file (format 3, results/keep.py), and what that costs in bytes."""

import gzip
import json
import math
import random
from pathlib import Path

import pytest

from zeroloss.core.latency import Histogram, bins_text, bucket_low
from zeroloss.loss.records import TrialDetail
from zeroloss.results import keep
from zeroloss.results.records import VERSION, RunRecord, TrialEntry, merged_hist
from zeroloss.results.resultfile import ResultFile, read_result

FIX = Path(__file__).parent / "fixtures"


def _hist(nb: int) -> Histogram:
    """A histogram of nb consecutive buckets from 2 us up, counts as a 5 s validation at 1 Mpps spreads them
    (five digits, smooth with noise: what a real one deflates like)."""
    rng = random.Random(nb)
    buckets = [(bucket_low(1400 + i), round(40_000 + 15_000 * math.sin(i / 150)) + rng.randrange(-1500, 1500))
               for i in range(nb)]
    return Histogram.of_stream({"count": sum(n for _, n in buckets), "min": buckets[0][0], "max": buckets[-1][0],
                                "mean": 30_000}, buckets)


def _trial(kind: str, lost: int) -> tuple[TrialEntry, TrialDetail]:
    """A stored ovs-p2p trial of the latency fixture, with 1,600-bucket histograms, as a live trial's entry and
    detail (TrialRunner.measure)."""
    doc = json.loads(gzip.open(FIX / "result_v2_latency.json.gz").read())
    t = doc["searches"][0]["trials"][0]
    for d in t["outcome"]["directions"]:
        d["rx"] = d["tx"] - lost
    h = _hist(1600)
    for d in t["directions"]:
        d["latency_hist"], d["latency_ns"] = h.to_json(), h.percentiles()
    head = ("index", "rate_pps", "duration_s", "kind", "goal", "verdict", "loss_ratio", "passes", "outcome")
    entry = TrialEntry.from_json({**{k: t[k] for k in head}, "kind": kind})
    return entry, TrialDetail.from_json({k: v for k, v in t.items() if k not in head})


def _stored(kind: str, lost: int) -> dict:
    entry, detail = _trial(kind, lost)
    return entry.with_(**keep.kept(entry, detail)).to_json()


def _size(doc: dict) -> int:
    return len(json.dumps(doc, separators=(",", ":")))


def test_full_detail_where_it_decides_a_summary_elsewhere():
    clean = _stored("search", 0)
    assert clean["kept"] == "summary"
    assert not {"counters", "dut_state", "telemetry"} & clean.keys()
    assert all("latency_hist" not in d and d["latency_ns"]["p99"] for d in clean["directions"])
    assert clean["ledger"] and clean["interference"]  # explain shows the stored ledger; the host's stalls stay
    for kind, lost in (("search", 5), ("validation", 0), ("validation", 5)):
        full = _stored(kind, lost)
        assert "kept" not in full and {"counters", "dut_state", "telemetry"} <= full.keys()
        h = merged_hist(d["latency_hist"] for d in full["directions"])
        assert h is not None and h.count == 2 * _hist(1600).count and len(h.buckets) == 1600


def test_a_realistic_trial_is_small():
    """Bytes are deterministic: a summary ~4 KB; a full trial with two 1,600-bucket histograms (their bins deflated:
    ~9.6 KB of text each, 5.8 KB so; format 2: ~190 KB indented) ~25 KB with this ovs-p2p fixture's 6 KB of OVS
    state, under 20 KB without it (a testpmd DUT's: the default run's largest trials were 18.1-18.3 KB,
    2026-11-28); a binary search's mix (half its trials lossy, one validation in ten) under 20 KB a trial."""
    summary, full = _size(_stored("search", 0)), _size(_stored("search", 5))
    assert summary <= 5_000
    assert len(bins_text(_hist(1600).buckets)) > 9_000 and len(_hist(1600).to_json()["bins"]) <= 6_000
    assert full <= 26_000
    assert full - len(json.dumps(_stored("search", 5)["dut_state"], separators=(",", ":"))) <= 20_000
    assert (5 * summary + 4 * full + _size(_stored("validation", 0))) / 10 <= 20_000


def test_the_file_is_written_compact_as_version_3_and_reads_back(tmp_path):
    path = tmp_path / "r.json"
    rf = ResultFile.create(path, {"a": 1}, {"hostname": "h"})
    rf.start_search(64, 0, link="memif")
    entry, detail = _trial("search", 5)
    rf.add_trial(64, 0, entry.with_(**keep.kept(entry, detail)))
    rf.set_state("done")
    text = path.read_text()
    assert "\n" not in text and ": " not in text.split('"trials"')[0]
    doc = read_result(path)
    assert doc["version"] == VERSION == 3
    (t,) = RunRecord.from_json(doc).searches[0].trials
    assert merged_hist(d.latency_hist for d in t.dirs()) == merged_hist(d.latency_hist
                                                                       for d in detail.directions)


def test_stored_v3_run_reads_and_keeps_histograms_where_they_decide():
    """A software-bench run of format 3 (64 B, p2p, --trial 0.5 --validation 1): clean search trials are
    summaries, the others and every latency-vs-load trial keep histograms that merge, and it reports."""
    from zeroloss.report.html import render
    from zeroloss.results.summary import load_runs

    (run,) = load_runs([str(FIX / "result_v3.json.gz")])
    assert run.record.version == 3
    (s,) = run.record.searches
    for t in s.trials:
        assert (t.kept == "summary") == (not keep.keeps_full(t))
        hist = merged_hist(d.latency_hist for d in t.dirs())
        assert (hist is None) == (t.kept == "summary") and all(d.latency_ns for d in t.dirs())
    assert any(t.kept for t in s.trials) and any(not t.kept for t in s.trials)
    assert s.latency_loads and all(lt.histogram() is not None for lt in s.latency_loads)
    assert "<svg" in render([run])


def test_a_full_trial_with_deflated_bins_passes_the_full_trial_schema():
    """A validation's deflated histograms ("z:" bins) are what the full trial schema (trial_analysis) accepts."""
    from zeroloss.results.schema import TRIAL, check
    doc = _stored("validation", 0)
    assert all(d["latency_hist"]["bins"].startswith("z:") for d in doc["directions"])
    check(doc, TRIAL, "r.json")
    doc["directions"][0]["latency_hist"]["bins"] = "z:not base64!"
    with pytest.raises(Exception, match="bins|pattern"):
        check(doc, TRIAL, "r.json")
