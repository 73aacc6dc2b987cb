"""`zeroloss report` and `explain` of an events file (`zeroloss events`): the outage table, per event the timeline of
its worst repeat with the lost frames where they were sent, the ledgers of the lost frames; the outage table as
JSON, CSV and Markdown; a damaged file or an events file among others is one line.

The fixture (fixtures/events_v1.json) is an events file at 10 kpps per direction, 1 s trials in 10 ms intervals: a
baseline, a vnf-restart twice (repeat 1: intervals 31..40 lost both ways, 2,000 frames; repeat 2: 31..45 A->B and
31..44 B->A, 2,900 frames) and an mtu change made at 0.3 s and undone at 0.6 s without loss."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from zeroloss.cli.main import main
from zeroloss.report.eventsreport import event_figure
from zeroloss.results import events as ev
from zeroloss.results.resultfile import read_doc

FIXTURE = Path(__file__).parent / "fixtures" / "events_v1.json"


@pytest.fixture(scope="module")
def rec() -> ev.EventsRecord:
    return ev.read(read_doc(FIXTURE), FIXTURE)


def test_the_worst_repeat_of_each_event_is_the_one_that_lost_most(rec):
    assert [(t.event, t.repeat, n, t.lost) for t, n in ev.worst(rec)] == [
        ("baseline", 1, 1, 0), ("vnf-restart", 2, 2, 2_900), ("mtu", 1, 1, 0)]


def test_the_timeline_shows_each_lost_frame_where_it_was_sent(rec):
    trial = next(t for t, _ in ev.worst(rec) if t.event == "vnf-restart")
    fig = event_figure(trial, 2)
    ab, ba, loss = fig.rows
    lost = {a.label: a.args[0] for a in loss.artists if a.kind == "stairs"}
    assert {k: int(sum(v)) for k, v in lost.items()} == {"A->B": 1_500, "B->A": 1_400}  # the ledger's frames
    assert [i for i, v in enumerate(lost["A->B"]) if v] == list(range(31, 46))  # 0.31 .. 0.46 s
    received = next(a.args[0] for a in ab.artists if a.kind == "stairs" and a.label == "A->B received")
    assert max(received[31:46]) == 0 and received[30] == 10.0  # kpps
    assert [a.args[0] for a in ab.artists if a.kind == "axvline" and a.label == "event applied"] == [0.3]
    assert ab.x.lim == [0.0, 1.0] and fig.title and "repeat 2 (the worst of 2)" in fig.title.text
    mtu = event_figure(next(t for t in rec.trials if t.event == "mtu"), 1)
    assert mtu is not None
    assert [a.label for a in mtu.rows[0].artists if a.label in ("event applied", "undone")] == [
        "event applied", "undone"]


def test_report_is_one_page_with_the_outage_table_timelines_and_ledgers(tmp_path, capsys):
    out = tmp_path / "ev.html"
    assert main(["report", str(FIXTURE), "-o", str(out), "--plots", str(tmp_path / "figs")]) == 0
    page = out.read_text()
    assert page.count("<svg") == 3 and "<script" not in page and "http://" not in page.replace(
        "http://www.w3.org", "")  # self-contained: inline SVG, no script, nothing fetched
    assert "events at 10,000 pps per direction (50 % of the NDR 20,000 pps), 64 B" in page
    row = page[page.index('<td class="l">vnf-restart</td>'):].split("</tr>")[0]
    assert [c.split(">")[-1] for c in row.split("</td>")[:-1]] == [
        "vnf-restart", "2", "2,450", "2,000", "2,900", "125", "100", "150", "125", "150", "OVS v0 tx: tx_failure"]
    assert "vnf-restart: repeat 2 (the worst of 2): lost 2,900 frames, outage 150 ms" in page
    assert "Where repeat 2&#x27;s 2,900 frames were lost" in page and "tx_failure: v1 ovs_tx_failure_drops" in page
    assert "<summary>repeat 1: where its 2,000 frames were lost</summary>" in page
    assert "No repeat lost frames (the baseline: no change)." in page
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "event-events_v1-baseline-1.svg", "event-events_v1-mtu-1.svg", "event-events_v1-vnf-restart-2.svg"]


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown"])
def test_the_outage_table_exports(capsys, fmt):
    assert main(["report", str(FIXTURE), "--format", fmt]) == 0
    text = capsys.readouterr().out
    if fmt == "json":
        doc = json.loads(text)
        assert [s["event"] for s in doc["summary"]] == ["baseline", "vnf-restart", "mtu"]
        assert [t["lost"] for t in doc["trials"]] == [0, 2_000, 2_900, 0]
    elif fmt == "csv":
        lines = text.splitlines()
        assert lines[0].startswith("run,event,repeats,lost_mean,lost_min,lost_max,outage_ms_mean")
        assert lines[2].startswith("events_v1,vnf-restart,2,2450.0,2000,2900,125.0")
    else:
        assert "| vnf-restart | 2 | 2,450 | 2,000 | 2,900 | 125 | 100 | 150 | 125 | 150 | OVS v0 tx: tx_failure |" \
            in text


def test_explain_prints_the_table_then_each_events_worst_repeat(capsys):
    assert main(["explain", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "events at 10,000 pps per direction (50 % of the NDR 20,000 pps), 64 B:"
    assert "== baseline: nothing lost in 1 repeat" in lines and "== mtu: nothing lost in 1 repeat" in lines
    head = lines.index("== vnf-restart: repeat 2, the worst of 2: lost 2,900 frames (A->B 1,500, B->A 1,400), "
                       "outage 150.0 ms at the offered rate, span 150 ms")
    assert lines[head + 1:head + 4] == [
        "     0.300 s  VNF 1 (testpmd) stopped and started (took 95 ms)",
        "  outage A->B 0.31 .. 0.46 s (when sent): 1,500 frames, 150.0 ms",
        "  outage B->A 0.31 .. 0.45 s (when sent): 1,400 frames, 140.0 ms"]
    assert lines[head + 4].startswith("  direction A->B: sent 10,000, received 8,500, lost 1,500")
    assert "  diagnosis:" in lines and "[ 51.7 %] OVS v0 tx" in out


def test_explain_json_has_each_events_worst_repeat_with_its_ledger(capsys):
    assert main(["explain", str(FIXTURE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "zeroloss-events" and len(doc["summary"]) == 3
    v = next(w for w in doc["worst"] if w["event"] == "vnf-restart")
    assert (v["repeat"], v["repeats"], v["lost"], v["outage_ms"]) == (2, 2, 2_900, 150.0)
    assert [led["lost"] for led in v["ledger"]] == [1_500, 1_400] and len(v["diagnosis"]) == 2


def _damaged(tmp_path: Path) -> Path:
    doc = json.loads(FIXTURE.read_text())
    doc["trials"][1]["directions"] = ["A->B"]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("argv", [["report", "{bad}"], ["explain", "{bad}"], ["report", "{good}", "{good}"]])
def test_a_damaged_events_file_or_one_among_others_is_one_line(tmp_path, capsys, argv):
    bad = _damaged(tmp_path)
    assert main([a.format(bad=bad, good=FIXTURE) for a in argv]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert ("trials[1].directions[0]" in err and "run zeroloss events again" in err) if "{bad}" in argv else \
        "is an events file: report it on its own" in err
    assert not list(tmp_path.glob("*.html"))


def test_the_timeline_keeps_frames_into_a_downed_link_out_of_the_loss(rec):
    """The vnf-restart trial's B->A loss recast as a bond-down's link_down (frames into the downed member): the loss
    panel shows only A->B's, the B->A panel greys what a peer would not have sent."""
    trial = next(t for t, _ in ev.worst(rec) if t.event == "vnf-restart")
    iv = json.loads(json.dumps(trial.intervals))
    ba = iv["directions"]["B->A"]
    ba["link_down"] = [t - r for t, r in zip(ba["tx"], ba["rx"], strict=True)]
    fig = event_figure(dataclasses.replace(trial, event="bond-down", intervals=iv), 1)
    _, ba_ax, loss = fig.rows
    lost = {a.label: a.args[0] for a in loss.artists if a.kind == "stairs"}
    assert int(sum(lost["A->B"])) == 1_500 and int(sum(lost["B->A"])) == 0
    labels = [a.label for a in ba_ax.artists if a.kind == "fill_between"]
    assert "offered into the downed link (the generator's)" in labels, labels
