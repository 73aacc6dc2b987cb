"""`zeroloss report` and its exports on stored result files of each format version (v1: before the loss ledger,
v2: with it) and a campaign file: table contents, CSV/Markdown/JSON text, the HTML page's parts, plot files."""

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.cli.main import main
from zeroloss.report.html import render
from zeroloss.report.htmlledger import warnings
from zeroloss.results.export import COLUMNS, VERDICT_COLUMNS, export
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_json
from zeroloss.results.summary import Run, frame_rows, latency_rows, load_runs, stem

FIX = Path(__file__).parent / "fixtures"
V1, V2, V2B = FIX / "result_v1.json", FIX / "result_v2.json.gz", FIX / "result_v2_ring256.json.gz"
CAMPAIGN = FIX / "campaign_v1.json"
EVENTS = FIX / "events_v1.json"


def _doc(path: Path) -> dict:
    return read_json(path, "fixture")


def _rows(doc: dict | Path) -> list:
    """The frame rows of a document, or of a stored file."""
    return frame_rows(RunRecord.from_json(_doc(doc) if isinstance(doc, Path) else doc))


@pytest.mark.parametrize("path", [V1, V2, V2B])
def test_rows_are_the_numbers_of_the_file(path):
    doc = _doc(path)
    rows = _rows(doc)
    assert [r.frame for r in rows] == sorted({s["frame"] for s in doc["searches"] if s.get("result")})
    for r in rows:
        searches = [s for s in doc["searches"] if s["frame"] == r.frame]
        ndrs = [s["result"]["ndr"]["rate_pps"] for s in sorted(searches, key=lambda s: s["repeat"])
                if s["result"]["ndr"]["rate_pps"]]
        assert list(r.ndrs) == ndrs and r.repeats == doc["config"]["repeat"]
        assert r.ndr_pps == pytest.approx(sum(ndrs) / len(ndrs) if ndrs else 0.0)
        assert r.spread_pps == (max(ndrs) - min(ndrs) if len(ndrs) > 1 else None)
        assert ("no-ndr" in r.flags) == (len(ndrs) < len(searches))
        first = next((s for s in sorted(searches, key=lambda s: s["repeat"]) if s["result"]["ndr"]["rate_pps"]),
                     searches[0])
        assert r.line_rate_pct == pytest.approx(100 * r.ndr_pps / first["line_rate_pps"])
        assert r.val_tx == (first["result"]["ndr"].get("validation") or {}).get("tx")


def test_v2_latency_rows_come_from_the_validation_trial():
    doc = _doc(V2)
    rows = latency_rows(RunRecord.from_json(doc))
    assert {r["frame"] for r in rows} == set(doc["config"]["frame_sizes"])
    for r in rows:
        s = next(s for s in sorted(doc["searches"], key=lambda s: s["repeat"])
                 if s["frame"] == r["frame"] and s["result"]["ndr"]["rate_pps"])
        t = s["trials"][s["result"]["ndr"]["validation"]["index"]]
        d = next(d for d in t["directions"] if f"{d['port']}->{d['rx_port']}" == r["direction"])
        assert r["p99"] == d["latency_ns"]["p99"] / 1e3 and r["max"] == d["latency_ns"]["max"] / 1e3
        assert r["min"] <= r["p50"] <= r["p90"] <= r["p99"] <= r["p99.9"] <= r["max"]


@pytest.mark.parametrize("path", [V1, V2])
def test_csv_and_markdown_match_the_stored_text(path):
    runs = load_runs([str(path)])
    for fmt, suffix in (("csv", ".csv"), ("markdown", ".md")):
        assert export(runs, fmt) == (FIX / (stem(path) + suffix)).read_text(), f"{fmt} of {path.name}"


def test_csv_has_one_row_per_run_and_frame_with_the_files_numbers():
    runs = load_runs([str(V2), str(V2B)])
    recs = list(csv.DictReader(io.StringIO(export(runs, "csv"))))
    assert [(r["run"], int(r["frame_bytes"])) for r in recs] == [
        (run.label, row.frame) for run in runs for row in frame_rows(run.record)]
    for rec in recs:
        row = next(r for r in _rows(V2 if rec["run"] == "result_v2" else V2B)
                   if r.frame == int(rec["frame_bytes"]))
        assert int(rec["ndr_found"]) == len(row.ndrs)
        if row.found:
            assert float(rec["ndr_min_pps"]) == min(row.ndrs) and float(rec["ndr_max_pps"]) == max(row.ndrs)
            assert float(rec["ndr_pps"]) == pytest.approx(row.ndr_pps, abs=0.05)
        else:
            assert rec["ndr_pps"] == rec["ndr_min_pps"] == ""


def test_a_search_without_ndr_is_not_averaged_in_as_zero():
    doc = _doc(V2)
    (s0,) = [s for s in doc["searches"] if s["frame"] == 64 and s["repeat"] == 0]
    s0["result"]["ndr"]["rate_pps"] = None
    (r64,) = [r for r in _rows(doc) if r.frame == 64]
    other = next(s for s in doc["searches"] if s["frame"] == 64 and s["repeat"] == 1)["result"]["ndr"]["rate_pps"]
    assert r64.ndrs == (other,) and r64.ndr_pps == other and r64.searches == 2 and "no-ndr" in r64.flags
    for s in doc["searches"]:
        s["result"]["ndr"]["rate_pps"] = None
    rows = _rows(doc)
    assert all(not r.found and r.spread_pps is None for r in rows)
    md = export([Run("x", "x.json", RunRecord.from_json(doc))], "markdown")
    assert md.count("| none |") == len(rows)


def test_json_export_names_its_units_and_runs():
    doc = json.loads(export(load_runs([str(V1), str(V2)]), "json"))
    assert list(doc["columns"]) == [key for key, _, _ in COLUMNS] + [key for key, _, _ in VERDICT_COLUMNS]
    assert [r["label"] for r in doc["runs"]] == ["result_v1", "result_v2"]
    assert [r["verdict"]["status"] for r in doc["runs"]] == ["INCONCLUSIVE", "INCONCLUSIVE"]
    assert {r["frame_bytes"]: r["verdict"] for r in doc["rows"] if r["run"] == "result_v1"} == \
        {128: "INCONCLUSIVE", 9000: "MEASURED"}
    assert [r["topology"] for r in doc["runs"]] == ["p2p", "pvp"]
    assert len(doc["rows"]) == len(_rows(V1)) + len(_rows(V2))


def test_markdown_is_a_table_per_run():
    text = export(load_runs([str(V2), str(V2B)]), "markdown")
    tables = [b for b in text.split("\n\n") if b.startswith("|")]
    assert len(tables) == 2
    for t in tables:
        lines = t.strip().splitlines()
        assert len({line.count("|") for line in lines}) == 1  # every row has as many cells as the header
        assert len(lines) == 2 + len(_rows(V2))


def test_campaign_files_give_one_run_per_measured_case():
    runs = load_runs([str(CAMPAIGN)])
    doc = _doc(CAMPAIGN)
    assert [r.label for r in runs] == [f"campaign_v1: {c['name']}" for c in doc["cases"] if c.get("run")]


def test_same_file_names_are_told_apart_by_path(tmp_path):
    (tmp_path / "x").mkdir()
    shutil.copy(V2, tmp_path / "x" / "r.json")
    shutil.copy(V2B, tmp_path / "r.json")
    runs = load_runs([str(tmp_path / "x" / "r.json"), str(tmp_path / "r.json")])
    assert runs[0].label != runs[1].label


def test_html_has_every_part_and_needs_no_network():
    runs = load_runs([str(V2), str(V1)])
    page = render(runs)
    doc2 = _doc(V2)
    searches = len(doc2["searches"]) + len(_doc(V1)["searches"])
    assert page.count("<svg") == 2 + searches  # NDR, latency, and one trace per search
    for part in ("Setup", "Results", "Latency at the NDR", "Warnings", "Search trace", "Where frames were lost"):
        assert page.count(f"<h3>{part}") == 2
    assert "<script" not in page and "<link" not in page and "@import" not in page and "<img" not in page
    assert re.findall(r'(?:src|href)\s*=\s*"(?!#)', page) == []  # nothing to fetch: every reference is in the page
    assert "url(" not in page.replace("url(#", "")
    assert page.count('<table class="results">') == 4  # in the summary and in each run's section
    assert "vnf_ring" in page and doc2["host"]["cpu_model"] in page
    lost = [t for s in doc2["searches"] for t in s["trials"] if t["kind"] == "validation" and t["verdict"] == "fail"]
    if lost:  # the v2 run had failed validation trials: their ledgers are shown, with the counters they name
        assert page.count("<h4>") > 0 and 'class="ledger"' in page
    assert "was recorded without per-hop counters" in page or "ledger" in page


def test_the_setup_shows_the_core_probe_and_a_shared_reading_is_a_warning():
    from zeroloss.report.htmlsetup import _setup

    doc = _doc(V2)
    frame = doc["searches"][0]["frame"]
    assert "Core probe" not in _setup(RunRecord.from_json(doc))  # a file from before the probe
    doc["core_probes"] = [{"frames": [frame], "cores": [0, 1], "ratio": [0.52, 0.51], "shared": True}]
    run = RunRecord.from_json(doc)
    html = _setup(run)
    assert "Core probe" in html and "0.52 / 0.51" in html and "shared" in html
    assert any(w.startswith(f"{frame} B, cores-shared:") for w in warnings(run))


def test_warnings_list_flags_unfinished_runs_and_missing_sizes():
    doc = _doc(V1)
    texts = warnings(RunRecord.from_json(doc))
    assert any("generator-bound" in w for w in texts) and any("noisy" in w for w in texts)
    doc["state"] = "interrupted"
    doc["config"]["frame_sizes"] = [128, 512, 9000]
    texts = warnings(RunRecord.from_json(doc))
    assert any("interrupted" in w for w in texts) and any("No result for 512 B" in w for w in texts)


def test_report_cli_writes_html_plots_and_exports(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(V2), "-o", str(out), "--plots", str(tmp_path / "p"), "--plot-format", "png"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    pngs = sorted((tmp_path / "p").glob("*.png"))
    assert len(pngs) == 2 + len(_doc(V2)["searches"])
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert main(["report", str(V2), "--plots", str(tmp_path / "s"), "-o", str(tmp_path / "t.md")]) == 0
    assert all(p.read_text().lstrip().startswith("<?xml") for p in (tmp_path / "s").glob("*.svg"))
    assert (tmp_path / "t.md").read_text() == (FIX / "result_v2.md").read_text()
    capsys.readouterr()
    assert main(["report", str(V1), "--format", "csv"]) == 0
    assert capsys.readouterr().out == (FIX / "result_v1.csv").read_text()


def test_report_cli_default_output_is_beside_the_result(tmp_path, capsys):
    src = tmp_path / "run.json"
    shutil.copy(V2, src)
    assert main(["report", str(src)]) == 0
    assert (tmp_path / "run.html").exists() and "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["report", "/nonexistent.json"], "cannot read result file /nonexistent.json"),
    (["report", "{bad}", "--format", "csv"], "not valid JSON"),
    (["report", "{v99}"], "format version 99"),
    (["report", "{v2}", "-o", "{v2}"], "is one of the result files"),
    (["report", "{empty_campaign}"], "has no measured case"),
])
def test_report_errors_are_one_line(tmp_path, capsys, argv, message):
    files = {"bad": tmp_path / "bad.json", "v99": tmp_path / "v99.json", "v2": tmp_path / "v2.json",
             "empty_campaign": tmp_path / "c.json"}
    files["bad"].write_text("{")
    files["v99"].write_text(json.dumps(dict(_doc(V1), version=99)))
    shutil.copy(V2, files["v2"])
    files["empty_campaign"].write_text(json.dumps({"format": "zeroloss-campaign", "version": 1, "cases": []}))
    before = files["v2"].read_bytes()
    args = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert files["v2"].read_bytes() == before


def test_report_and_compare_read_files_only(tmp_path):
    """No bench, DUT control, generator or DPDK module is loaded, no process is started, nothing is on PATH (also
    for an events file: report and explain)."""
    code = ("import subprocess, sys\n"
            "start = subprocess.Popen.__init__\n"
            "def refuse(self, args, *a, **k):\n"  # matplotlib asks fontconfig once for its font cache
            "    if args[0] != 'fc-list': raise SystemExit(f'started a process: {args}')\n"
            "    start(self, args, *a, **k)\n"
            "subprocess.Popen.__init__ = refuse\n"
            "from zeroloss.cli import main\n"
            "rc = main(sys.argv[1:])\n"
            "print(sorted(m for m in sys.modules if m.startswith(('zeroloss.drivers.bench', 'zeroloss.drivers.gen', "
            "'zeroloss.drivers.dpdk', 'zeroloss.runs.run', 'zeroloss.drivers.dut.ovs', "
            "'zeroloss.drivers.dut.unixctl')) and m != 'zeroloss.drivers.dut.ovsstats'))\n"
            "sys.exit(rc)")
    env = {"PATH": str(tmp_path / "nothing"), "MPLCONFIGDIR": str(tmp_path / "mpl"), "HOME": str(tmp_path)}
    for args, rc in ((["report", str(V2), str(V2B), "-o", str(tmp_path / "r.html")], 0),
                     (["compare", str(V2), str(V2B)], 3),  # the baseline is inconclusive: exit 3, not an error
                     (["report", str(V1), "--format", "csv"], 0),
                     (["report", str(EVENTS), "-o", str(tmp_path / "e.html")], 0),  # an events file (zeroloss events)
                     (["explain", str(EVENTS)], 0)):
        out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == rc, out.stderr
        assert out.stdout.strip().splitlines()[-1] == "[]", args


def test_a_lab_run_shows_the_node_its_paths_and_the_ports_line_rate(tmp_path):
    doc = _doc(V2)
    doc["placement"] = {
        "lab": {"dut": "compute-0", "ovs_version": "ovs-vswitchd (Open vSwitch) 3.1.0",
                "chains": [{"tx": "A", "rx": "B", "ovs_ports": ["nic0", "vhu0", "vhu1", "nic1"], "vnfs": ["vnf1"]}],
                "dut_changes": [{"setting": "Open_vSwitch:.:other_config:pmd-rxq-assign", "from": None,
                                 "to": "roundrobin"}],
                "ports": [{"name": "A", "device": "0000:3b:00.0", "dut_port": "nic0", "speed_gbps": 10,
                           "speed_from": "port"}]},
        "lab_host": {"host": "compute-0", "hostname": "c0", "audit": {"findings": [
            {"rule": "isolcpus-missing", "severity": "error", "message": "PMD CPUs not isolated", "remedy": "x"}]}}}
    f = tmp_path / "lab.json"
    f.write_text(json.dumps(doc))
    page = render(load_runs([str(f)]))
    assert "nic0 → vhu0 | vnf1 | vhu1 → nic1" in page and "isolcpus-missing: PMD CPUs not isolated" in page
    assert "pmd-rxq-assign: None → roundrobin" in page and "% of 10 Gb/s line rate" in page
