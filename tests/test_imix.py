"""IMIX in `zeroloss run` (issue 30 Must 5): the frame-size grammar, the mix's line-rate arithmetic (mean frame),
and every reader of a result file (table, verdict, exports, compare, campaign table, HTML) keying a mix like a
size. The stored fixture's 128 B search is turned into an IMIX search: the readers see what a run would write."""

import copy
import csv
import io
import json
from pathlib import Path

import pytest

from zeroloss.cli.main import main
from zeroloss.core import frames
from zeroloss.core.config import RunConfig, load
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import l1_bps, l2_bps
from zeroloss.core.stream import Imix
from zeroloss.report.html import render
from zeroloss.results import schema
from zeroloss.results.compare import compare, text
from zeroloss.results.export import export
from zeroloss.results.fmt import run_table
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_json
from zeroloss.results.summary import Run, frame_rows
from zeroloss.results.verdict import verdict

V1 = Path(__file__).parent / "fixtures" / "result_v1.json"
SIMPLE_MEAN = (64 * 7 + 570 * 4 + 1518) / 12  # 353.83 B


def test_the_list_grammar():
    assert frames.parse("64,1518,imix") == [64, 1518, "imix"]
    assert frames.parse("64, IMIX ,") == [64, "imix"]
    # a mix takes the SIZE:WEIGHT items after imix:, up to the next plain size
    assert frames.parse("64,imix:64:1,1518:1,9000") == [64, "imix:64:1,1518:1", 9000]
    assert frames.parse("imix:64:7,570:4,1518:1") == ["imix"]  # the simple IMIX written out has its short label
    assert frames.parse("imix:64:1,imix:128:2,256:1") == ["imix:64:1", "imix:128:2,256:1"]
    for bad, what in [("64:7,imix", "is a SIZE:WEIGHT entry outside a mix"), ("imix:64", "is not SIZE:WEIGHT"),
                      ("imix:64:7:1", "is not SIZE:WEIGHT"), ("imix:10:1", "IMIX entry 10:1"),
                      ("imix:64:0", "weights >= 1"), ("64,x", "is not a list of frame sizes")]:
        with pytest.raises(ZeroLossError, match=what):
            frames.parse(bad)


def test_a_key_names_what_is_sent_and_counted():
    assert frames.imix("imix") == Imix(frames.SIMPLE_IMIX)
    assert frames.stream_size(64) == 64 and frames.stream_size("imix:64:1,9000:1") == Imix(((64, 1), (9000, 1)))
    assert (frames.largest("imix"), frames.largest(128)) == (1518, 128)
    assert frames.mean("imix") == pytest.approx(SIMPLE_MEAN) and frames.mean("imix:64:3,1518:1") == 427.5
    # line rate of a mix: link / ((mean + 20 B) x 8): 10 Gb/s carries 3,343,736 simple-IMIX frames/s
    assert frames.line_rate_pps(10e9, "imix") == pytest.approx(1e10 / ((SIMPLE_MEAN + 20) * 8))
    assert round(frames.line_rate_pps(10e9, "imix")) == 3_343_736
    assert frames.line_rate_pps(10e9, 64) == pytest.approx(14_880_952.38)
    assert frames.by_size(["imix", 9000, "imix:64:1", 64]) == [64, 9000, "imix:64:1", "imix"]
    assert (frames.text(64), frames.text("imix")) == ("64 B", "imix")
    assert frames.key("IMIX") == "imix" and frames.key("1518") == 1518 and frames.key("Imix:64:1") == "imix:64:1"


def test_run_settings_take_mixes_and_require_them_by_label():
    c = RunConfig(frame_sizes=[64, "IMIX", "imix:64:1,1518:1"], require_ndr="64:10,imix:5")
    assert c.frame_sizes == [64, "imix", "imix:64:1,1518:1"] and c.require_ndr == {64: 10.0, "imix": 5.0}
    # imix names the run's one mix, whatever its label
    assert RunConfig(frame_sizes=["imix:64:1,1518:1"], require_ndr="imix:30").require_ndr == {"imix:64:1,1518:1": 30}
    assert RunConfig(frame_sizes=[64, "imix"], require_ndr=20).require_ndr == {64: 20.0, "imix": 20.0}
    with pytest.raises(ZeroLossError, match="require_ndr names imix, which is not in frame_sizes"):
        RunConfig(frame_sizes=[64], require_ndr="imix:5")
    with pytest.raises(ZeroLossError, match="IMIX entry 64:0"):
        RunConfig(frame_sizes=["imix:64:0"])
    with pytest.raises(ZeroLossError, match="neither a size in bytes nor an IMIX"):
        RunConfig(frame_sizes=[64, "jumbo"])
    # the stored config reads back the same (JSON keys of require_ndr are text)
    stored = json.loads(json.dumps(c.to_dict()))
    assert load(None, stored) == c


def _imix_doc() -> dict:
    """The v1 fixture with its 128 B search run as the simple IMIX: what `zeroloss run --frame-sizes imix,9000`
    writes (frame key, config, ceiling key, line rate of the mean frame)."""
    doc = copy.deepcopy(read_json(V1, "fixture"))
    s = next(s for s in doc["searches"] if s["frame"] == 128)
    s["frame"] = "imix"
    s["line_rate_pps"] = frames.line_rate_pps(doc["config"]["link_speed_gbps"] * 1e9, "imix")
    doc["config"]["frame_sizes"] = ["imix", 9000]
    doc["config"]["require_ndr"] = {"imix": 1.0}
    doc["ceilings"]["imix"] = doc["ceilings"].pop("128")
    return doc


def test_readers_key_a_mix_like_a_size(tmp_path):
    doc = _imix_doc()
    schema.check(doc, schema.RUN, "imix.json")  # the schema takes a mix's label where a size goes
    rec = RunRecord.from_json(doc)
    assert rec.to_json() == doc
    rows = {r.frame: r for r in frame_rows(rec)}
    assert list(rows) == [9000, "imix"]  # sizes, then mixes
    r = rows["imix"]
    assert r.found and r.mean_bytes == pytest.approx(SIMPLE_MEAN)
    assert r.l2_gbps == pytest.approx(l2_bps(r.ndr_pps, SIMPLE_MEAN) / 1e9)
    assert r.l1_gbps == pytest.approx(r.ndr_pps * (SIMPLE_MEAN + 20) * 8 / 1e9)
    assert r.l1_gbps == pytest.approx(l1_bps(r.ndr_pps, SIMPLE_MEAN) / 1e9)
    assert r.line_rate_pct == pytest.approx(100 * r.l1_gbps / 25.0)  # % of line rate = L1 Gb/s / link speed
    v = verdict(rec)
    assert "imix" in v.sizes and v.required == {"imix": 1.0} and v.status in ("PASS", "FAIL", "INCONCLUSIVE")
    assert "imix" in json.dumps(v.to_dict()["sizes"])
    table = run_table(rec)
    assert "\n| imix " not in table and any(line.split()[:1] == ["imix"] for line in table.splitlines())
    assert "imix: frames of 64:7,570:4,1518:1 B interleaved by weight" in table and "mean 353.8 B" in table
    run = Run("imix", "imix.json", rec)
    rows_csv = list(csv.DictReader(io.StringIO(export([run], "csv"))))
    assert [x["frame_bytes"] for x in rows_csv] == ["9000", "imix"]
    assert float(rows_csv[1]["ndr_l2_gbps"]) == pytest.approx(r.l2_gbps, abs=1e-4)
    assert "| imix |" in export([run], "markdown")
    assert [x["frame_bytes"] for x in json.loads(export([run], "json"))["rows"]] == [9000, "imix"]
    cmp = compare([run, Run("again", "again.json", rec)])
    assert [d.frame for d in cmp[0].frames] == [9000, "imix"] and "\nimix " in text(cmp[0])
    page = render([run])
    assert ">imix<" in page and "mean 353.8 B" in page


def test_report_and_explain_commands_read_a_mix(tmp_path, capsys):
    path = tmp_path / "imix.json"
    path.write_text(json.dumps(_imix_doc()))
    assert main(["report", str(path)]) in (0, None)
    out = capsys.readouterr().out
    assert "imix" in out
    main(["report", str(path), "--format", "csv"])
    assert "\nimix," in capsys.readouterr().out.replace('"', "")
    with pytest.raises(SystemExit):
        main(["explain", str(path), "--frame", "imix:64"])  # not a label: one argparse line
    assert "not SIZE:WEIGHT" in capsys.readouterr().err
