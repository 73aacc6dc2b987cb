"""Loss events of a soak (results/soak.py, version 2): confirmed loss per interval from the cumulative shortfall,
runs of lossy intervals merged, version 1 files still read, and the report's timeline and tables from a small
version 2 fixture."""

from __future__ import annotations

import json

import pytest

from zeroloss.cli.main import main
from zeroloss.results.fmt import soak_line, soak_table
from zeroloss.results.soak import IntervalRow, confirmed, event_lines, loss_events, lossy_runs, read, summary_lines


def test_frames_in_flight_at_an_edge_are_never_loss_and_the_sum_is_the_exact_total():
    # 5 in flight at the first reading arrive later; 100 lost in interval 2; the exact end says 100
    assert confirmed([5, 0, 100, 103, 100], final=100) == [0, 0, 100, 0, 0]
    assert sum(confirmed([3, 40, 41, 42], final=40)) == 40
    assert confirmed([], final=0) == []


def test_lossy_intervals_merge_across_a_short_gap_only():
    assert lossy_runs([0, 5, 0, 7, 0, 0, 9]) == [(1, 3), (6, 6)]
    assert lossy_runs([0, 5, 0, 7], merge_gap=0) == [(1, 1), (3, 3)]
    assert lossy_runs([0, 0]) == []


def rows(shorts: list[int]) -> list[dict]:
    return [{"t_s": float(i + 1), "state": "running",
             "directions": {"A->B": {"tx": 1000, "rx": 1000, "short": s, "tx_pps": 1000.0, "rx_pps": 1000.0,
                                     "lost": 0, "loss_pct": 0.0}}} for i, s in enumerate(shorts)]


def test_a_loss_event_has_its_span_in_seconds_and_frames_per_direction():
    (e,) = loss_events([IntervalRow.from_json(r) for r in rows([2, 3, 2, 503, 502, 500])], {"A->B": 500})
    assert (e["start_s"], e["end_s"], e["first"], e["last"], e["lost"]) == (3.0, 4.0, 3, 3, 500 - 2)
    assert e["directions"] == {"A->B": 498}
    assert loss_events([IntervalRow.from_json(r) for r in rows([2, 3, 2, 3])], {"A->B": 0}) == []  # in flight only


def soak_v2() -> dict:
    r = rows([0, 0, 900, 900, 900])
    r[2]["directions"]["A->B"].update({"rx": 100, "rx_pps": 100.0, "lost": 900, "loss_pct": 90.0})
    led = {"direction": "A->B", "tx_side": 0, "rx_side": 1, "sent": 3000, "received": 2100, "lost": 900,
           "counted": 900, "unexplained": 0, "hops": [
               {"kind": "gen_tx", "name": "zlgen tx port 0", "where": "zlgen", "in": 3000, "out": 3000, "drops": [],
                "extra": [], "unexplained": 0, "counters": True},
               {"kind": "proc_rx", "name": "DUT (testpmd) rx port 0", "where": "DUT (testpmd) port 0", "in": 3000,
                "out": 2100, "drops": [{"reason": "RX queue full", "frames": 900, "counter": "zlgen tx_refused"}],
                "extra": [], "unexplained": 0, "counters": True}]}
    event = {"start_s": 2.0, "end_s": 3.0, "first": 2, "last": 2, "lost": 900, "directions": {"A->B": 900},
             "ledger": [led], "diagnosis": [], "window_s": [2.0, 4.0]}
    return {"kind": "zeroloss-soak", "version": 2, "state": "complete", "target": "memif", "started_at": 1.0,
            "frame": 64, "duration_s": 5.0, "interval_s": 1.0, "rate_pps": 1000.0, "line_rate_pps": 14_880_952.0,
            "line_rate_pct": 0.0067, "intervals": r, "loss_events": [event], "warnings": [],
            "result": {"directions": [{"tx_side": 0, "rx_side": 1, "tx": 5000, "rx": 4100, "lost": 900,
                                       "achieved_pps": 1000.0}], "tx_window_s": 5.0}, "ledger": [led],
            "diagnosis": []}


def test_version_2_reads_its_events_and_version_1_finds_them_from_its_rows(tmp_path):
    rec = read(soak_v2(), "s.json")
    assert [e["lost"] for e in rec.events()] == [900] and rec.events()[0]["ledger"]
    v1 = {k: v for k, v in soak_v2().items() if k not in ("loss_events", "target", "started_at")} | {"version": 1}
    (e,) = read(v1, "s.json").events()
    assert (e["start_s"], e["end_s"], e["lost"]) == (2.0, 3.0, 900) and "ledger" not in e


def test_report_and_explain_show_the_loss_events_their_ledgers_and_the_shaded_timeline(tmp_path, capsys):
    f = tmp_path / "soak.json"
    f.write_text(json.dumps(soak_v2()))
    page = tmp_path / "soak.html"
    assert main(["report", str(f), "-o", str(page), "--plots", str(tmp_path / "figs")]) == 0
    html = page.read_text()
    assert "<h2>Loss events</h2>" in html and "Loss event 1: its ledger (2 s .. 3 s)" in html
    assert "900 at DUT (testpmd) rx port 0: RX queue full" in html
    svg = (tmp_path / "figs" / "soak-soak.svg").read_text()
    assert "loss event" in svg  # the shaded span's legend entry
    capsys.readouterr()
    assert main(["explain", str(f)]) == 0
    out = capsys.readouterr().out
    assert "loss events: 1" in out and "event 1: 2 s .. 3 s lost 900 frames (A->B 900), outage 900.0 ms" in out
    assert "event 1 ledger (2 s .. 3 s):" in out
    assert main(["explain", str(f), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["loss_events"][0]["lost"] == 900


def test_a_damaged_loss_event_is_one_line(tmp_path, capsys):
    doc = soak_v2()
    doc["loss_events"][0].pop("lost")
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    assert main(["explain", str(f)]) == 1
    assert "loss_events[0]: needs start_s, end_s and lost" in capsys.readouterr().err


def soak_two_ways() -> dict:
    """A 5 s soak at 1000 pps per direction whose one loss event lost 5,000 frames A->B and 4,373 B->A (both
    directions down for 5 s at once), the A->B side's wire refusing 600 of them in interval 3 (refused frames are
    lost on a virtual wire but not sent)."""
    doc = soak_v2()
    for row in doc["intervals"]:
        row["directions"]["B->A"] = dict(row["directions"]["A->B"])
    a = doc["intervals"][2]["directions"]["A->B"]
    a.update({"tx": 400, "refused": 600, "rx": 0, "rx_pps": 0.0, "tx_pps": 400.0, "lost": 1000, "loss_pct": 100.0})
    doc["loss_events"][0].update({"lost": 9373, "directions": {"A->B": 5000, "B->A": 4373}})
    doc["result"]["directions"] = [
        {"tx_side": 0, "rx_side": 1, "tx": 5000, "rx": 0, "lost": 5000, "refused": 600, "achieved_pps": 1000.0},
        {"tx_side": 1, "rx_side": 0, "tx": 5000, "rx": 627, "lost": 4373, "refused": 0, "achieved_pps": 1000.0}]
    return doc


def test_a_loss_event_of_both_directions_is_an_outage_of_the_worse_one(tmp_path, capsys):
    """Two directions down at once for 5 s are a 5 s outage, as `zeroloss events` gives it (the worst direction),
    not the 9.4 s their frames add up to."""
    rec = read(soak_two_ways(), "s.json")
    (line,) = [x for x in event_lines(rec) if "event 1:" in x]
    assert "lost 9,373 frames (A->B 5,000, B->A 4,373), outage 5,000.0 ms" in line and "9,373.0 ms" not in line
    f = tmp_path / "soak.json"
    f.write_text(json.dumps(soak_two_ways()))
    page = tmp_path / "soak.html"
    assert main(["report", str(f), "-o", str(page)]) == 0
    html = page.read_text()
    assert "<td>5,000.0</td>" in html and "9,373.0" not in html
    capsys.readouterr()
    assert main(["explain", str(f)]) == 0
    assert "outage 5,000.0 ms" in capsys.readouterr().out


def test_refused_frames_are_their_own_figure_so_lost_never_passes_what_was_sent_and_refused(tmp_path):
    """An interval whose wire refused 600 of 1,000 frames offered lost 1,000: the console line, the totals table,
    the summary and the report's interval table show the refused frames beside the frames sent."""
    doc = soak_two_ways()
    rec = read(doc, "s.json")
    row = next(r for r in rec.rows() if r["t_s"] == 3.0 and r["direction"] == "A->B")
    assert (row["tx"], row["refused"], row["lost"]) == (400, 600, 1000)
    assert row["lost"] == row["tx"] + row["refused"] - row["rx"]
    assert "refused       600" in soak_line(doc["intervals"][2])
    table = soak_table(doc).splitlines()
    assert table[1].split() == ["direction", "sent", "refused", "received", "lost", "loss", "%", "achieved", "pps"]
    assert table[2].split()[:5] == ["A->B", "4,400", "600", "0", "5,000"]
    assert "A->B: sent 4,400, refused 600, received 0, lost 5,000" in "\n".join(summary_lines(rec, "s"))
    f = tmp_path / "soak.json"
    f.write_text(json.dumps(doc))
    assert main(["report", str(f), "-o", str(tmp_path / "soak.html")]) == 0
    html = (tmp_path / "soak.html").read_text()
    assert "<th>refused</th>" in html
    assert "<td>400</td><td>600</td><td>0</td><td>1,000</td>" in html  # sent, refused, received, lost


class _NoBench:
    """session.BENCH for tests of refusals: taking the bench fails the test (the value was not checked first)."""

    def __enter__(self):
        raise AssertionError("the bench was taken: a bad value was not refused before anything started")

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("args,text", [
    (["--duration", "inf"], "--duration inf s must be above 0 and at most 86,400 s"),
    (["--duration", "1e99"], "--duration 1e+99 s must be above 0"),
    (["--rate", "nan"], "--rate nan is not a rate"),
    (["-o", "{tmp}/file/sub/s.json"], "cannot make the folder of the soak file"),
])
def test_a_soaks_values_are_checked_before_anything_starts(tmp_path, monkeypatch, capsys, args, text):
    from zeroloss.drivers import session

    monkeypatch.setattr(session, "BENCH", _NoBench())
    (tmp_path / "file").write_text("")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out = ["-o", str(tmp_path / "s.json")] if "-o" not in args else []
    assert main(["trial", "--interval", "1", *out, *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err, err
    assert not (tmp_path / "s.json").exists()
