"""Latency on the real bench (issue 30 Must 4): latency vs load after the search, merged histograms that hold every
frame received, and a latency bound that the search obeys as it obeys loss."""

from __future__ import annotations

import json
import re

from zeroloss.core.latency import Histogram
from zeroloss.results.resultfile import read_doc

from .test_run import FAST, run
from .verdicts import assert_ran

# an OpenFlow meter of known capacity on ovs-p2p: an NDR the generator reaches whatever else the host runs
METER = ["--topology", "ovs-p2p", "--set", "meter_pps=20000", "--frame-sizes", "64", "--pdr-loss", "-1"]
# the claims are about the latency of the rates a search found or refused, not about where the NDR lies: a coarse
# search (25 % of the top a step, after FAST's 5 %) ends in 3-5 trials instead of 8-10 and a validation, and the bound
# that every rate fails is trialled at 100, 50 and 25 % of the top (the floor: one step) instead of down to 5 %
COARSE = ["--granularity", "25"]


def test_latency_vs_load_and_a_latency_bound(tmp_path):
    out = tmp_path / "r.json"
    r = run(*METER, *FAST, *COARSE, "--latency-loads", "10,50,90,100", "--latency-trial", "0.5", "-o", str(out))
    assert_ran(r)
    doc = read_doc(out)
    (s,) = doc["searches"]
    ndr = s["result"]["ndr"]["rate_pps"]
    assert ndr, s["result"]
    loads = s["latency_loads"]
    assert [t["load_pct"] for t in loads] == [10, 50, 90, 100]
    assert [t["rate_pps"] for t in loads] == [max(1, round(ndr * p / 100)) for p in (10, 50, 90, 100)]
    for t in loads:
        for d in t["directions"]:
            h = Histogram.from_json(d["latency_hist"])
            # every frame received has its latency in the direction's merged histogram (no duplicates here)
            assert h.count == d["rx"] > 0
            p = d["latency_ns"]
            assert p["p50"] <= p["p99"] <= p["p99_9"] <= p["max"] and p == h.percentiles()
    # the table after the run: NFVbench's columns, one row per load
    table = r.stdout[r.stdout.index("Latency vs load"):].splitlines()
    assert re.split(r"\s{2,}", table[1].strip()) == ["frame", "load %", "rate pps", "lost", "p50 us", "p99 us",
                                                     "p99.9 us", "max us"]
    rows = [re.split(r"\s{2,}", line.strip()) for line in table[3:7]]
    assert [row[1] for row in rows] == ["10", "50", "90", "100"]
    for row in rows:
        p50, p99, p999, mx = (float(x.replace(",", "")) for x in row[4:8])
        assert p50 <= p99 <= p999 <= mx
    # the search trials that keep their detail (validations, lossy ones: keep.py) kept the merged histogram too
    first = next(t for t in s["trials"] if t.get("kept") != "summary")
    assert Histogram.from_json(first["directions"][0]["latency_hist"]).count == first["outcome"]["directions"][0]["rx"]

    # a bound below any latency this bench has: no rate meets it, whatever its loss; each trial says why
    bounded = tmp_path / "b.json"
    r = run(*METER, *FAST, *COARSE, "--latency-loads", "none", "--max-latency", "p99=100ns", "-o", str(bounded),
            "--json")
    assert r.returncode in (0, 3), r.stderr
    doc = read_doc(bounded)
    (s,) = doc["searches"]
    assert not s["result"]["ndr"]["rate_pps"] and not s.get("latency_loads")  # capped below the loss-only NDR
    counted = [t for t in s["trials"] if t["verdict"] in ("pass", "fail")]
    assert counted and all(t["verdict"] == "fail" and t["passes"] == [] for t in counted)
    # a trial whose lost frames reach its p99 says so (latency.Histogram.percentile: they are its tail)
    assert all(re.fullmatch(r"p99 ([0-9.]+ (ns|us|ms) > 100 ns|> [0-9.]+ (ns|us|ms), lost frames reach it \(bound 100 "
                            r"ns\))( \(direction [01]\))?", t["reason"]) for t in counted)
    assert any(t["outcome"]["directions"][0]["tx"] == t["outcome"]["directions"][0]["rx"] for t in counted), \
        "no trial was lossless: the bound was not what failed them"
    assert "p99 <= 100 ns" in json.loads(r.stdout)["latency_vs_load"]["max_latency"]
