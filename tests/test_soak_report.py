"""`zeroloss report` and `explain` read a soak file (`trial --lab --interval`): its timeline, totals, ledger and
diagnosis; the intervals export as JSON, CSV and Markdown; a damaged one is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zeroloss.cli.main import main
from zeroloss.report.explain import analyse

LEDGER = Path(__file__).parent / "fixtures" / "ledger"


def soak_doc() -> dict:
    """A soak file as lab/labrun.soak writes it, its ledger and diagnosis those of a recorded meter trial (the
    ledger fixtures): 40 kpps offered to a 20 kpps meter, 2 s in 1 s intervals."""
    rec = json.loads((LEDGER / "meter.json").read_text())
    ctx = {**rec["context"], "frame": rec["frame"], "rate_pps": rec["rate_pps"]}
    leds, diag = analyse(rec["paths"], rec["counters"], rec["dut_state"], ctx, set(rec["sides"]))
    rows = []
    for t in (1.0, 2.0):
        dirs = {"A->B": {"tx": 40_000, "rx": 20_100, "short": 19_900 * int(t), "tx_pps": 40_000.0,
                         "rx_pps": 20_100.0, "lost": 19_900, "loss_pct": 49.75}}
        rows.append({"t_s": t, "state": "running" if t < 2 else "done", "directions": dirs})
    return {"kind": "zeroloss-soak", "version": 1, "state": "complete", "lab_file": "lab.yaml", "frame": rec["frame"],
            "duration_s": 2.0, "interval_s": 1.0, "intervals": rows, "warnings": [], "rate_pps": 40_000.0,
            "line_rate_pps": 14_880_952.0, "line_rate_pct": 0.27, "placement": {"lab": {"dut": "compute-0"}},
            "result": {"directions": [{"tx_side": "A", "rx_side": "B", "tx": 80_000, "rx": 40_200, "lost": 39_800,
                                       "achieved_pps": 40_000.0}], "tx_window_s": 2.0},
            "ledger": leds, "diagnosis": diag}


@pytest.fixture
def soak_file(tmp_path) -> Path:
    p = tmp_path / "soak.json"
    p.write_text(json.dumps(soak_doc()))
    return p


def test_report_of_a_soak_is_a_page_with_its_timeline(soak_file, tmp_path, capsys):
    out = tmp_path / "soak.html"
    assert main(["report", str(soak_file), "-o", str(out), "--plots", str(tmp_path / "figs")]) == 0
    page = out.read_text()
    assert page.count("<svg") == 1 and "soak at 40,000 pps per direction" in page
    assert "A-&gt;B: sent 80,000, received 40,200, lost 39,800" in page and "Diagnosis" in page
    assert (tmp_path / "figs" / "soak-soak.svg").exists()


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown"])
def test_a_soaks_intervals_export(soak_file, capsys, fmt):
    assert main(["report", str(soak_file), "--format", fmt]) == 0
    text = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(text)
        assert [r["t_s"] for r in doc["rows"]] == [1.0, 2.0] and doc["totals"][0]["lost"] == 39_800
    elif fmt == "csv":
        assert text.splitlines()[0] == "run,t_s,direction,tx_pps,rx_pps,tx,refused,rx,lost,loss_pct,short"
        assert len(text.splitlines()) == 3
    else:
        assert "| 1 | A->B | 40,000 | 20,100 | 0 | 19,900 | 49.750 |" in text


def test_explain_of_a_soak_gives_its_ledger_and_diagnosis(soak_file, capsys):
    assert main(["explain", str(soak_file)]) == 0
    text = capsys.readouterr().out
    assert "worst interval: A->B at 1 s lost 19,900 frames" in text and "meter" in text.lower()
    assert main(["explain", str(soak_file), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnosis"]


def test_a_soak_is_reported_on_its_own_and_a_damaged_one_is_one_line(soak_file, tmp_path, capsys):
    v2 = Path(__file__).parent / "fixtures" / "result_v1.json"
    assert main(["report", str(soak_file), str(v2), "--format", "csv"]) == 1
    assert "report it on its own" in capsys.readouterr().err
    bad = soak_doc()
    bad["intervals"][0]["directions"] = [1, 2]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(bad))
    for cmd in (["report", str(p), "--format", "csv"], ["explain", str(p)]):
        assert main(cmd) == 1
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "intervals[0].directions" in err
