"""What a run's section shows of its searches (report/html.py): each search's trace and trials, the warnings that
qualify the numbers, and the loss ledger of the lossy trials, hop by hop, with the findings and their fixes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from zeroloss.core import frames
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss.ledger import REASONS
from zeroloss.loss.records import Ledger, finding_of
from zeroloss.report import plots, telemetryplots
from zeroloss.report.docparts import Goals
from zeroloss.report.explain import HOP_HEADERS, FindingLike, LedgerLike, hop_rows, trial_records
from zeroloss.report.htmlbase import _table
from zeroloss.results.fmt import FLAG_TEXT
from zeroloss.results.records import RunRecord, SearchEntry, TrialEntry
from zeroloss.results.summary import frame_rows


def warnings(run: RunRecord) -> list[str]:
    """Everything that qualifies the numbers: the run's own warnings, flags per frame size, an unfinished run,
    frame sizes without a result."""
    out = list(run.all_warnings())
    if run.state != "complete":
        out.append(f"The run is {run.state}: results are partial (continue it with zeroloss run --resume).")
    done = {s.frame for s in run.finished()}
    missing = [f for f in Goals.from_json(run.config).frame_sizes or [] if f not in done]
    if missing:
        out.append(f"No result for {', '.join(map(frames.text, missing))}.")
    for r in frame_rows(run):
        out += [f"{frames.text(r.frame)}, {flag}: {FLAG_TEXT.get(flag, flag)}" for flag in r.flags]
        if r.val_lost:
            out.append(f"{frames.text(r.frame)}: the NDR's validation trial lost {r.val_lost:,} frames (within the "
                       "tolerance).")
    return out


def _trace(run_index: int, search: SearchEntry) -> str:
    """A search's trace figure, and its trials in a table that opens on demand."""
    title = f"{frames.text(search.frame)}, search {search.repeat + 1}"
    fig = plots.trace_figure(search, title)
    svg = plots.svg_inline(fig, f"r{run_index}-f{search.frame}-s{search.repeat}")
    line = search.line_rate_pps or math.nan  # the schema requires it: a file without it is refused when read
    rows, classes = [], []
    for t in search.trials:
        dirs = t.outcome.directions
        tx, rx = sum(d.tx for d in dirs), sum(d.rx for d in dirs)
        achieved = sum(d.achieved_pps for d in dirs) / len(dirs) if dirs else 0
        rows.append([str(t.index + 1), t.kind, t.goal or "", f"{t.rate_pps:,.0f}", f"{100 * t.rate_pps / line:.2f}",
                     f"{achieved:,.0f}", f"{t.duration_s:g}", f"{tx:,}", f"{rx:,}", f"{tx - rx:,}",
                     f"{100 * t.loss_ratio:.4f}", t.verdict])
        classes.append({"pass": "pass", "fail": "fail"}.get(t.verdict, "risk"))
    table = _table(["trial", "kind", "goal", "offered pps", "% line", "achieved pps", "s", "sent", "received", "lost",
                    "loss %", "verdict"], rows, "trace", classes, left=3)
    return (f'<div class="fig trace">{svg}</div><details><summary>{escape(title)}: {len(rows)} trials</summary>'
            f"{table}</details>" + telemetryplots.html(run_index, search, title))


def _ledger_html(search: SearchEntry, trial: TrialEntry) -> str:
    """A lossy trial's ledger per direction, hop by hop, and the findings with their fixes."""
    head = (f"{frames.text(search.frame)}, search {search.repeat + 1}, trial {trial.index + 1} ({trial.kind}, "
            f"{trial.rate_pps:,.0f} pps per direction, {trial.duration_s:g} s, {trial.verdict})")
    try:
        leds, diag = trial_records(search, trial)
    except ZeroLossError as e:
        summary = "; ".join(f"{d.port}->{d.rx_port}: " + ", ".join(f"{k} {v:,}" for k, v in (d.ledger or {}).items())
                            for d in trial.dirs())
        return f"<h4>{escape(head)}</h4><p>{escape(str(e))}. Per direction: {escape(summary)}</p>"
    return f'<h4 class="lossy-trial">{escape(head)}</h4>' + ledger_html(leds, diag)


def ledger_html(leds: Sequence[LedgerLike], diag: Sequence[FindingLike]) -> str:
    """Ledgers per direction, hop by hop (loss/ledger.py), and the findings with their fixes (loss/diagnose.py);
    records, or the JSON of a file that keeps them untyped (events)."""
    parts = []
    for led in map(Ledger.of, leds):
        lost, unexpl = led.lost, led.unexplained
        parts.append(f"<p>Direction {escape(str(led.direction))}: sent {led.sent:,}, received "
                     f"{led.received:,}, lost {lost:,}, counted {led.counted:,}, unexplained {unexpl:,}</p>")
        if lost == 0 and not unexpl:
            continue
        parts.append(_table(HOP_HEADERS, hop_rows(led, compact=True), "ledger", left=1))
        parts.append(f"<details><summary>the whole path, {len(led.hops)} hops</summary>"
                     + _table(HOP_HEADERS, hop_rows(led, compact=False), "path", left=1) + "</details>")
    for f in map(finding_of, diag):
        share = f"{f.share_pct:.1f} %" if f.frames else "risk"
        what = REASONS.get(f.reason, f.reason.replace("_", " "))
        items = "".join(f"<li>seen: {escape(e)}</li>" for e in f.evidence)
        items += "".join(f"<li>fix: <code>{escape(r)}</code></li>" for r in f.remedies)
        parts.append(f'<div class="warn finding"><b>[{share}] {escape(f.hop)}: {escape(what)}</b> '
                     f"({f.frames:,} frames): {escape(f.cause)}<ul class=\"fix\">{items}</ul></div>")
    return "".join(parts)
