"""The HTML report opened in headless Chromium (Debian `chromium`): the plots and tables render, nothing is
fetched from the network, no console error; a screenshot is kept in build/test-artifacts/report.png."""

import shutil
from pathlib import Path

import pytest

from zeroloss.cli.main import main
from zeroloss.report.explain import select
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_json
from zeroloss.results.summary import frame_rows

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (make setup)")

FIX = Path(__file__).parent / "fixtures"
ARTIFACTS = Path(__file__).parent.parent / "build" / "test-artifacts"

PROBES = {
    "svgs": "document.querySelectorAll('svg').length",
    "ndr_box": "(() => { const r = document.querySelector('#fig-ndr svg').getBoundingClientRect();"
               " return [r.width, r.height]; })()",
    "ndr_bars": "document.querySelectorAll('#fig-ndr svg rect.bar').length",
    "ndr_text": "document.querySelector('#fig-ndr svg').textContent",
    "trace_boxes": "[...document.querySelectorAll('.trace svg')].map(s => s.getBoundingClientRect().height)",
    "result_rows": "[...document.querySelectorAll('section.run table.results')]"
                   ".map(t => t.querySelectorAll('tbody tr').length)",
    "first_ndr": "document.querySelector('section.run table.results tbody tr td:nth-child(3)').textContent",
    "ledgers": "document.querySelectorAll('table.ledger').length",
    "lossy_trials": "document.querySelectorAll('h4.lossy-trial').length",
    "page_width": "document.documentElement.scrollWidth",
    "findings": "document.querySelectorAll('.finding').length",
    "title": "document.title",
}


def test_report_renders_in_chromium(tmp_path):
    from browser import open_page

    runs = [FIX / "result_v2.json.gz", FIX / "result_v2_ring256.json.gz"]
    out = tmp_path / "report.html"
    assert main(["report", *map(str, runs), "-o", str(out)]) == 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = open_page(out, evaluate=PROBES, screenshot=ARTIFACTS / "report.png")
    docs = [read_json(p, "fixture") for p in runs]
    recs = [RunRecord.from_json(d) for d in docs]
    v = page.values
    assert page.errors == []
    assert v["svgs"] == 2 + sum(len(d["searches"]) for d in docs)
    width, height = v["ndr_box"]
    assert width > 400 and height > 150
    assert "frame size, bytes" in v["ndr_text"] and "% of line rate" in v["ndr_text"]
    assert all(h > 100 for h in v["trace_boxes"])
    rows = [frame_rows(r) for r in recs]
    assert v["ndr_bars"] == sum(r.found for rs in rows for r in rs)  # one bar per run and frame size with an NDR
    assert v["result_rows"] == [len(r) for r in rows]
    # the baseline's 64 B NDR is only a lower bound (its searches were mostly generator failures): "≥ X"
    assert v["first_ndr"].removeprefix("≥ ").startswith(f"{rows[0][0].ndr_pps:,.0f}")
    chosen = [c for r in recs for c in select(r, None, None, None)]
    assert chosen and v["lossy_trials"] == len(chosen) and v["ledgers"] >= len(chosen) and v["findings"] >= 1
    assert v["page_width"] <= 1280  # wide tables scroll in their box, the page does not
    assert v["title"].startswith("zeroloss report")
    png = (ARTIFACTS / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 1280
