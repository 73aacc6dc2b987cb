"""`zeroloss bench` (zlgen against testpmd) without DPDK: the tables and the JSON document from given rates."""

from __future__ import annotations

import contextlib
import json

from zeroloss.studies import genbench as gb


def _fake(monkeypatch):
    monkeypatch.setattr(gb, "Workspace", contextlib.nullcontext)
    monkeypatch.setattr(gb, "zlgen_max", lambda ws, frame, s, run: {64: 20e6, 1518: 2e6}[frame] + run)
    monkeypatch.setattr(gb, "testpmd_max", lambda ws, frame, s, run: {64: 25e6, 1518: 2e6}[frame])

    def pacing(ws, rates, s, gap_us):
        return [gb.Paced(requested_pps=r, achieved_pps=r * 0.99, device_pps=r * 0.98, ratio=0.99, restarts=gap_us,
                         skipped=7, ratio_without_stalls=0.995) for r in rates]

    monkeypatch.setattr(gb, "zlgen_pacing", pacing)


def test_the_json_document_holds_every_run_and_the_pacing_per_gap(monkeypatch):
    _fake(monkeypatch)
    (text,) = gb.run_benchmarks(seconds=1.0, repeats=3, json_out=True)
    doc = json.loads(text)
    assert list(doc) == ["seconds", "repeats", "device", "lcore", "max_tx", "pacing"]
    assert doc["max_tx"][0] == {"frame": 64, "zlgen_pps": [20e6, 20e6 + 1, 20e6 + 2], "testpmd_pps": [25e6] * 3,
                                "zlgen_median_pps": 20e6 + 1, "testpmd_median_pps": 25e6, "ratio": (20e6 + 1) / 25e6}
    assert list(doc["pacing"]) == ["50", "1000"]  # the restart gaps, us
    assert [p["requested_pps"] for p in doc["pacing"]["50"]] == [f * (20e6 + 1) for f in gb.PACING]
    assert doc["pacing"]["1000"][0]["restarts"] == 1000


def test_the_tables_show_the_medians_and_the_pacing(monkeypatch):
    _fake(monkeypatch)
    text = "\n".join(gb.run_benchmarks(seconds=1.0, repeats=1))
    row = next(ln for ln in text.splitlines() if ln.startswith("64 B"))
    assert row.split()[2:4] == ["20.000", "20.000"] and row.split()[-1] == "0.800"
    assert "restart gap 1000 us" in text
    paced = next(ln for ln in text.splitlines() if ln.startswith("10%"))
    assert paced.split()[1:4] == ["2.0000", "1.9800", "0.99000"]
