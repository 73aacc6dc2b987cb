"""Back-to-back frames (RFC 9004) as explain and the report tell them, from records of known numbers; and the run's
§6.1 rule (a frame size whose throughput is the maximum rate is not tested) over a real result file."""

import io
import json
import re

from zeroloss.cli.progress import Progress
from zeroloss.core.config import RunConfig
from zeroloss.loss.records import Ledger
from zeroloss.report.explain import b2b_lines, failed_burst_text
from zeroloss.report.html import b2b_table
from zeroloss.results.records import B2bBurst, B2bRecord, B2bRepeat, GoalRecord, RunRecord, SearchEntry, SearchOutcome
from zeroloss.results.resultfile import ResultFile
from zeroloss.runs.b2b import B2bRun, b2b_done


def ledger(direction: str, sent: int, received: int) -> dict:
    """A direction's ledger whose only drop is the DUT's RX ring refusing frames (as zlgen counts them)."""
    lost = sent - received
    hop = {"name": "OVS g0 rx", "counters": True, "in": sent, "out": received, "unexplained": 0, "extra": [],
           "drops": [{"frames": lost, "reason": "rx_missed", "counter": "zlgen tx_refused into g0"}]}
    return {"direction": direction, "sent": sent, "received": received, "lost": lost, "counted": lost,
            "unexplained": 0, "hops": [hop]}


def record(**more) -> B2bRecord:
    """The 1518 B figures of the README's bench run, three searches: longest 1328, 1464, 1600 (mean 1464, sample
    stdev sqrt((136² + 0 + 136²) / 2) = 136.0); the third one's longest losing burst asked 2,048 frames per direction
    and offered 26,080 and 27,040 (the refused frames on top)."""
    fail = B2bRepeat(longest=1600, shortest_fail=1616, fail_frames=2048,
                     fail_ledger=(Ledger.from_json(ledger("A->B", 26_080, 2048)),
                                  Ledger.from_json(ledger("B->A", 27_040, 2048))),
                     bursts=(B2bBurst(frames=2048, sent=26_080, lost=24_992),))
    reps = (B2bRepeat(longest=1328, shortest_fail=1344), B2bRepeat(longest=1464, shortest_fail=1472), fail)
    base = dict(repeats_wanted=3, repeats=reps, max_frames=9_180_992, max_s=2.0, resolution_pct=1.0,
                max_rate_pps=4_590_496.0, throughput_pps=189_735.0, rate_basis="zlgen's ceiling", applicable=True,
                mean=1464.0, min=1328, max=1600, stdev=136.0, implied_buffer_s=1464 / 4_590_496,
                corrected_buffer_s=1464 / 4_590_496 * (1 - 189_735 / 4_590_496))
    return B2bRecord(**{**base, **more})


def test_the_longest_losing_burst_names_frames_asked_and_offered_per_direction():
    """The two numbers that disagreed ("2,048 per direction" beside "sent 26,080"): asked vs offered."""
    text = failed_burst_text(2048, [ledger("A->B", 26_080, 2048), ledger("B->A", 27_040, 2048)])
    assert text == ("the longest burst that lost frames: 2,048 frames asked per direction, offered A->B 26,080, "
                    "B->A 27,040 (a burst runs until the frames asked are taken: each frame the DUT's full RX ring "
                    "refused was offered on top and counted lost); lost 49,024 in both directions")
    # a burst whose frames were all offered and some dropped further on says nothing of refusals
    assert failed_burst_text(2048, [ledger("A->B", 2048, 2000)]) == (
        "the longest burst that lost frames: 2,048 frames asked per direction, offered A->B 2,048; lost 48")


def test_explain_gives_the_benchmark_each_search_the_step_and_the_limit():
    """RFC 9004 §6.4 (mean, min, max, stdev, buffer times: 1464 / 4,590,496 = 0.319 ms; × (1 - 189,735 / 4,590,496)
    = 0.306 ms), §6.3 (each search's longest burst), §7 (step: the largest gap 1616 - 1600 = 16; the limit)."""
    lines = b2b_lines(SearchEntry(frame=1518, b2b=record()))
    assert lines[0] == ("1518 B back-to-back frames (RFC 9004), 3 of 3 searches: mean 1,464 frames per direction "
                        "(min 1,328, max 1,600, stdev 136.0); implied buffer 0.319 ms, corrected 0.306 ms at a "
                        "maximum rate of 4,590,496 pps, throughput 189,735 pps")
    assert lines[1] == ("  longest burst without loss, per search: 1,328, 1,464, 1,600; final step 16 frames (1 % of "
                        "the longest pass, at least 1); upper limit 9,180,992 frames (2 s)")
    assert lines[2].startswith("  the longest burst that lost frames: 2,048 frames asked per direction, offered "
                               "A->B 26,080, B->A 27,040")
    assert any("direction A->B: sent 26,080, received 2,048, lost 24,032" in x for x in lines)
    assert not any("upper limit (" in x and "likely invalid" in x for x in lines)


def test_a_search_that_lost_at_the_limit_is_flagged_likely_invalid():
    """RFC 9004 §6.2: a search whose shortest losing burst is the limit itself ended near it."""
    near = record(max_frames=1616)
    assert near.at_limit and not record().at_limit
    assert any("at or near the upper limit (1,616 frames)" in x and "likely invalid" in x
               for x in b2b_lines(SearchEntry(frame=1518, b2b=near)))
    assert "likely invalid, rerun with a higher --b2b-max" in b2b_table(RunRecord(searches=(SearchEntry(
        frame=1518, b2b=near),)))


def _cells(html: str) -> list[list[str]]:
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in re.findall(r"<tr>(.*?)</tr>", html, re.S)]


def test_report_table_has_the_items_rfc9004_section_7_asks():
    """Frame size, N, mean, min, max, stdev, corrected buffer time, step and limit; a size not tested (§6.1) too."""
    skipped = B2bRecord(repeats_wanted=3, max_frames=1000, max_rate_pps=100_000.0, throughput_pps=100_000.0,
                        applicable=False)
    run = RunRecord(searches=(SearchEntry(frame=1518, b2b=record()), SearchEntry(frame=64, b2b=skipped)))
    html = b2b_table(run)
    rows = _cells(html)
    assert rows[0] == ["frame B", "N", "mean frames", "min", "max", "stdev", "max rate pps", "throughput pps",
                       "implied ms", "corrected ms", "step", "limit", "note"]
    assert rows[1] == ["1518", "3/3", "1,464", "1,328", "1,600", "136.0", "4,590,496", "189,735", "0.319", "0.306",
                       "16", "9,180,992", ""]
    assert rows[2][:2] == ["64", "0"] and "not tested" in rows[2][-1] and "§6.1" in rows[2][-1]
    assert "implied − implied × throughput / max rate" in html and "within 1 % of the pass" in html
    assert b2b_lines(SearchEntry(frame=64, b2b=skipped)) == [
        "64 B back-to-back frames (RFC 9004): not tested: the throughput (100,000 pps) is the maximum frame rate "
        "(100,000 pps), so no burst fills a buffer (RFC 9004 §6.1)"]


def test_rfc9004_6_1_a_frame_size_at_the_maximum_rate_is_not_tested(tmp_path):
    """Its NDR (1,000,000 pps) is the maximum rate: the run stores a record that says so, sends no burst (the
    runner is never touched) and counts the frame size as done; one at 600,000 pps is not done without searches."""
    cfg = RunConfig(b2b=True, b2b_repeats=2)
    rf = ResultFile.create(tmp_path / "r.json", {}, {})
    for frame, ndr in ((64, 1_000_000.0), (128, 600_000.0)):
        rf.start_search(frame, 0)
        rf.finish_search(frame, 0, SearchOutcome(ndr=GoalRecord(rate_pps=ndr)))
    events: list = []
    rec = B2bRun(cfg, rf, lambda e, d: events.append((e, d["frame"]))).run(None, 64, 1_000_000.0,  # type: ignore
                                                                            1_488_095.0)
    assert events == [("b2b_skip", 64)]
    assert rec.applicable is False and rec.repeats == () and rec.throughput_pps == 1_000_000.0
    stored = rf.search(64, 0)
    assert stored is not None and stored.b2b == rec and b2b_done(stored.b2b, cfg)
    assert not b2b_done(B2bRecord(repeats_wanted=2, applicable=True), cfg) and b2b_done(None, RunConfig())
    out = io.StringIO()
    Progress(out=out)("b2b_skip", {"frame": 64, "record": rec})
    assert out.getvalue().strip() == ("64 B  back-to-back frames not tested: the NDR is the maximum frame rate "
                                      "(RFC 9004 §6.1)")


def test_explain_tells_the_bursts_when_no_search_trial_lost_frames(tmp_path, capsys):
    """A run whose throughput search lost nothing still has back-to-back bursts that did: explain says there is no
    lossy trial, then tells the bursts (it used to stop at the first line)."""
    from zeroloss.cli.main import main

    rf = ResultFile.create(tmp_path / "r.json", {}, {})
    rf.start_search(1518, 0)
    rf.finish_search(1518, 0, SearchOutcome(ndr=GoalRecord(rate_pps=189_735.0)))
    rf.set_b2b(1518, 0, record())
    rf.set_state("complete")
    assert main(["explain", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "no trial lost frames: nothing to explain" in out
    assert "1518 B back-to-back frames (RFC 9004), 3 of 3 searches: mean 1,464 frames per direction" in out


def test_the_losing_bursts_findings_are_records_written_back_as_read():
    """fail_diagnosis holds Finding records (loss/records.py), and writes the file's JSON back key for key."""
    found = [{"hop": "OVS g0 rx", "where": "g0", "reason": "rx_missed", "frames": 24_992, "counter": "zlgen tx_refused",
              "cause": "the DUT's RX ring was full", "evidence": ["ring 256"], "remedies": ["a deeper ring"],
              "share_pct": 100.0},
             {"hop": "OVS PMD placement", "where": "core 1", "reason": "pmd_imbalance", "frames": 0, "share_pct": 0.0,
              "cause": "one PMD busy", "evidence": [], "remedies": []}]
    doc = {"longest": 1600, "shortest_fail": 1616, "fail_frames": 2048, "fail_diagnosis": found}
    rep = B2bRepeat.from_json(doc)
    assert [(f.hop, f.reason, f.frames) for f in rep.fail_diagnosis] == [("OVS g0 rx", "rx_missed", 24_992),
                                                                        ("OVS PMD placement", "pmd_imbalance", 0)]
    assert json.dumps(rep.to_json()) == json.dumps(doc)
