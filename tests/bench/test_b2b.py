"""Back-to-back frames (RFC 9004) on the bench, through a DUT of known buffer: an OpenFlow meter whose bucket
(meter_burst frames) lets a burst of about that many frames through at any rate, and polices to meter_pps after."""

from __future__ import annotations

import subprocess

from zeroloss.results.resultfile import read_doc

from .test_run import ZEROLOSS, run
from .verdicts import assert_ran

METER_PPS, BUCKET = 10_000, 2000


def test_b2b_finds_the_meters_bucket(tmp_path):
    """A burst of B frames at rate R through a token bucket of size K refilled at r passes while B (1 - r / R) <= K;
    the RFC 9004 §6.4 corrected buffer time, times R, undoes the refill: it is K. OVS's RX ring (4096) is deeper
    than the bucket, so the meter is the first to drop. Tolerance: 5 % (a host stall can cost a search a few bursts;
    loss verification resends each losing burst once, and 3 searches' mean spreads what is left)."""
    out = tmp_path / "r.json"
    # the throughput search first (RFC 9004 §5): trials as long as its validation (1 s; with shorter trials the
    # bucket lets them pass above what a validation keeps, and the search walked down through failed validations:
    # 22 trials), 25 % granularity (the throughput only corrects the buffer time by T / R, 0.2 %: a throughput 25 %
    # low moves the corrected buffer by 0.05 % of the bucket; 5 trials where 5 % took 8); its top fails at the meter
    # (explain has a lossy trial to show)
    r = run("--topology", "ovs-p2p", "--frame-sizes", "64", "--set", f"meter_pps={METER_PPS}",
            "--set", f"meter_burst={BUCKET}", "--b2b", "--b2b-repeats", "3", "--b2b-max", "0.05",
            "--set", "b2b_idle_s=0.2", "--trial", "1", "--validation", "1", "--granularity", "25", "--warmup", "0",
            "--latency-loads", "none", "--drain-ms", "100", "--pdr-loss", "-1", "--flows", "64", "-o", str(out))
    assert_ran(r)
    doc = read_doc(out)
    b = doc["searches"][0]["b2b"]
    assert len(b["repeats"]) == 3 and b["repeats_wanted"] == 3 and not any(x["at_limit"] for x in b["repeats"])
    for rep in b["repeats"]:  # each search: a longest pass below its shortest fail, every burst stored
        assert 0 < rep["longest"] < rep["shortest_fail"] and rep["bursts"][0]["frames"] == 64
        assert any(x["frames"] == rep["longest"] and x["lost"] == 0 for x in rep["bursts"])
    assert abs(b["mean"] - BUCKET) <= 0.05 * BUCKET, b["mean"]
    assert abs(b["corrected_buffer_s"] * b["max_rate_pps"] - BUCKET) <= 0.05 * BUCKET
    assert b["implied_buffer_s"] == b["mean"] / b["max_rate_pps"] and b["applicable"]
    assert b["throughput_pps"] == doc["searches"][0]["result"]["ndr"]["rate_pps"]
    # the longest burst that lost frames lost them in the meter, and the ledger balances
    rep = max(b["repeats"], key=lambda x: x["fail_frames"] or 0)
    assert any(f["reason"] == "meter" for f in rep["fail_diagnosis"])
    assert all(d["unexplained"] == 0 for d in rep["fail_ledger"])
    # the report's table and explain's lines
    html = subprocess.run([*ZEROLOSS, "report", str(out), "-o", str(tmp_path / "r.html")],
                          capture_output=True, text=True)
    assert html.returncode == 0, html.stderr
    assert "Back-to-back frames (RFC 9004)" in (tmp_path / "r.html").read_text()
    ex = subprocess.run([*ZEROLOSS, "explain", str(out)], capture_output=True, text=True)
    assert "back-to-back frames (RFC 9004), 3 of 3 searches" in ex.stdout and "meter" in ex.stdout
