"""IMIX in `zeroloss run` on the real bench (issue 30 Must 5): one short run of 64 B and the simple IMIX; the mix
gets its own search ending with an NDR, every trial's frames are conserved, and its Gb/s and line rate are of the
mix's mean frame (the largest, 1518 B, still fits the memif wire)."""

from __future__ import annotations

import subprocess

import pytest

from zeroloss.core import frames
from zeroloss.results.resultfile import read_doc

from .test_run import FAST, ZEROLOSS, run
from .verdicts import assert_ran

MEAN = (64 * 7 + 570 * 4 + 1518) / 12


def test_a_run_measures_the_simple_imix_like_a_size(tmp_path):
    out = tmp_path / "imix.json"
    # test_run's short trials: what is claimed here (the mix's search, conservation, its mean frame) holds per trial
    r = run("--frame-sizes", "64,imix", *FAST, "-o", str(out))
    assert_ran(r)
    doc = read_doc(out)
    assert doc["config"]["frame_sizes"] == [64, "imix"]
    assert [s["frame"] for s in doc["searches"]] == [64, "imix"]
    assert [s["link"] for s in doc["searches"]] == ["memif", "memif"]  # the mix's largest frame is 1518 B
    assert doc["ceilings"]["imix"]["how"] == "loopback" and doc["ceilings"]["imix"]["pps"] > 0
    # the run's table and the CSV export show the mix like a size, with its mean
    assert "imix: frames of 64:7,570:4,1518:1 B interleaved by weight" in r.stdout
    rep = subprocess.run([*ZEROLOSS, "report", str(out), "--format", "csv"], capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0 and [line.split(",")[1] for line in rep.stdout.splitlines()[1:]] == ["64", "imix"]
    s = doc["searches"][1]
    link_bps = doc["config"]["link_speed_gbps"] * 1e9
    assert s["line_rate_pps"] == pytest.approx(link_bps / ((MEAN + 20) * 8))
    assert s["line_rate_pps"] == pytest.approx(frames.line_rate_pps(link_bps, "imix"))
    for t in s["trials"]:
        for d in t["directions"]:
            led = d["ledger"]  # conservation: sent = received + every counted drop, nothing unexplained
            assert led["sent"] == led["received"] + led["counted"] and led["unexplained"] == 0
        ports = t["counters"]["gen"]["ports"] if t.get("kept") != "summary" else []  # summaries: no counters
        for p in ports:  # zlgen's ports sent the mix: bytes (no FCS) / frames = its mean
            assert p["obytes"] / p["opackets"] + 4 == pytest.approx(MEAN, abs=0.5)
    ndr = s["result"]["ndr"]
    if not ndr["rate_pps"]:  # a host busy with other work: never MEASURED without an NDR (test_run's rule)
        assert r.returncode == 3 and "generator-limited" in s["result"]["flags"], r.stderr
        return
    assert ndr["validation"]["lost"] == 0
    assert ndr["l2_gbps"] == pytest.approx(ndr["rate_pps"] * MEAN * 8 / 1e9)
    assert ndr["l1_gbps"] == pytest.approx(ndr["rate_pps"] * (MEAN + 20) * 8 / 1e9)
    assert ndr["line_rate_pct"] == pytest.approx(100 * ndr["l1_gbps"] * 1e9 / link_bps)
