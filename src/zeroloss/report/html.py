"""`zeroloss report`: one self-contained HTML page (inline CSS and SVG, no script, no network) from result files:
setup, results, NDR and latency plots, each search's trace, the loss ledger of failed trials, every warning (the
setup in htmlsetup.py, traces, warnings and ledgers in htmlledger.py, the shared CSS and tables in htmlbase.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from html import escape

from zeroloss import __version__
from zeroloss.core import frames
from zeroloss.report import latencyplots, plots
from zeroloss.report.docparts import Goals, LatencyRow, LossEvent, Placement
from zeroloss.report.explain import select
from zeroloss.report.htmlbase import CSS, _table
from zeroloss.report.htmlledger import _ledger_html, _trace, warnings
from zeroloss.report.htmlsetup import _lab_block, _setup, _tune_section
from zeroloss.results.records import RunRecord
from zeroloss.results.soak import SoakRecord, outage_ms, summary_lines, top_drop
from zeroloss.results.summary import (
    PERCENTILES,
    Run,
    describe,
    frame_rows,
    latency_rows,
    line_gbps,
    traced_searches,
)
from zeroloss.results.verdict import size_verdicts, verdict


def results_table(run: RunRecord) -> str:
    """The results table of a run: one row per frame size (summary.frame_rows)."""
    rows = frame_rows(run)
    sizes = size_verdicts(run)
    rep = any(r.repeats > 1 for r in rows)
    headers = ["frame B", "wire", "NDR pps", *(["NDR min … max"] if rep else []), "% line rate", "L1 Gb/s",
               "L2 Gb/s", "PDR pps", "PDR %", "val. lost / sent", "lat p50 / p99 / max µs", "verdict", "flags"]
    out = []
    for r in rows:
        size = sizes.get(r.frame)
        ge = "≥ " if size is not None and size.bound else ""  # only a lower bound is known
        if not r.found:
            cells = [str(r.frame), r.link, "none", *(["-"] if rep else []), "-", "-", "-"]
        else:
            cells = [str(r.frame), r.link,
                     ge + f"{r.ndr_pps:,.0f}" + (f" ± {r.ndr_sd:,.0f}" if len(r.ndrs) > 1 else "")]
            if rep:
                cells.append(f"{min(r.ndrs):,.0f} … {max(r.ndrs):,.0f}")
            cells += [ge + f"{r.line_rate_pct:.2f}", f"{r.l1_gbps:.3f}", f"{r.l2_gbps:.3f}"]
        cells += [
                  f"{r.pdr_pps:,.0f}" if r.pdr_pps else "-", f"{r.pdr_pct:.2f}" if r.pdr_pct is not None else "-",
                  f"{r.val_lost:,} / {r.val_tx:,}" if r.val_tx is not None else "-",
                  " / ".join(f"{v:.1f}" for v in r.lat_us) if r.lat_us else "-",
                  size.status if size else "-",  # the reasons are in the verdict line above
                  ", ".join(r.flags)]
        out.append(cells)
    if not out:
        return '<p class="warn">No frame size finished its search.</p>'
    mixes = "".join(f"<p>{escape(line.strip())}</p>" for line in frames.legend(r.frame for r in rows))
    return _table(headers, out, "results", left=2) + mixes


def _latency(run: RunRecord) -> str:
    """Latency percentiles at the NDR per frame size and direction."""
    rows = [LatencyRow.from_json(r) for r in latency_rows(run)]
    if not rows:
        return "<p>No latency recorded at the NDR.</p>"
    names = [name for _, name in PERCENTILES]
    cells = [[f"{r.frame}", r.direction, f"{r.rate_pps:,.0f}", f"{r.count:,}", f"{r.mean:.1f}",
              *(f"{r.extra[n]:.1f}" if n in r.extra else "-" for n in names)] for r in rows]
    return _table(["frame B", "direction", "rate pps", "samples", "mean", *names], cells, "latency", left=2)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def b2b_table(run: RunRecord) -> str:
    """Back-to-back frames (RFC 9004 §6.4, §7): per frame size N, the searches' longest zero-loss bursts (mean, min,
    max, stdev), the DUT buffer times they imply, the final step and the upper limit; a frame size not tested
    (§6.1) has its row too."""
    rows = []
    for s in run.searches:
        b = s.b2b
        if b is None or not b.repeats and b.applicable is not False:
            continue
        if not b.repeats:
            rows.append([f"{s.frame}", "0", "-", "-", "-", "-", f"{b.max_rate_pps or 0:,.0f}",
                         f"{b.throughput_pps or 0:,.0f}", "-", "-", "-", f"{b.max_frames:,}",
                         "not tested: the throughput is the maximum frame rate (RFC 9004 §6.1)"])
            continue
        note = "; ".join(x for x in ("at or near the upper limit: likely invalid, rerun with a higher --b2b-max "
                                     "(RFC 9004 §6.2)" if b.at_limit else "",
                                     "not applicable (RFC 9004 §6.1)" if b.applicable is False else "") if x)
        rows.append([f"{s.frame}", f"{len(b.repeats)}/{b.repeats_wanted}", f"{b.mean or 0:,.0f}", f"{b.min:,}",
                     f"{b.max:,}", f"{b.stdev or 0:,.1f}", f"{b.max_rate_pps or 0:,.0f}",
                     f"{b.throughput_pps or 0:,.0f}", _ms(b.implied_buffer_s), _ms(b.corrected_buffer_s),
                     "-" if b.step is None else f"{b.step:,}", f"{b.max_frames:,}", note])
    if not rows:
        return ""
    basis = next((s.b2b.rate_basis for s in run.searches if s.b2b is not None and s.b2b.rate_basis), "")
    res = next((s.b2b.resolution_pct for s in run.searches if s.b2b is not None and s.b2b.resolution_pct), 1.0)
    return ("<h3>Back-to-back frames (RFC 9004)</h3><p>The longest burst (frames per direction) the DUT forwarded "
            "without loss, searched N times per frame size (RFC 9004 §6.3; bursts doubled while they passed, then "
            "a binary search with loss verification, §6.2); mean, min, max and sample stdev of the N longest "
            "bursts; implied buffer = mean / max rate, corrected = implied − implied × throughput / max rate "
            "(§6.4), the throughput being the frame size's NDR. Step: the largest gap left between a search's "
            f"longest pass and shortest fail (the search stops within {res:g} % of the pass, at least 1 "
            f"frame); limit: the longest burst a search may try (§6.2, §7). Max rate: {escape(basis or '')}.</p>"
            + _table(["frame B", "N", "mean frames", "min", "max", "stdev", "max rate pps", "throughput pps",
                      "implied ms", "corrected ms", "step", "limit", "note"], rows, "b2b", left=1))


def _run_section(i: int, run: Run, tick: Callable[[], None], history: str | None = None) -> Iterator[str]:
    """One run's section: setup, results, latency, its history (report --history: report/historypage.run_history's
    part, None: not asked), warnings, search traces, where frames were lost."""
    rec = run.record
    yield f'<section class="run" id="run-{i}"><h2>{escape(run.label)}</h2>'
    meta = (f"file {run.source}, format version {rec.version}, zeroloss {rec.zeroloss}, started "
            f"{rec.created}, updated {rec.updated}, state {rec.state}")
    yield f'<p class="meta">{escape(describe(rec))}<br>{escape(meta)}</p>'
    yield "<h3>Setup</h3>" + _setup(rec)
    c = Goals.from_json(rec.config)
    yield (f"<h3>Results</h3><p>NDR: loss ≤ {c.ndr_loss_pct:g} %, PDR: loss ≤ {c.pdr_loss_pct:g} %, per "
           f"direction; % of {line_gbps(rec):g} Gb/s line rate; rates in frames/s per direction.</p>")
    yield results_table(rec)
    yield "<h3>Latency at the NDR</h3>" + _latency(rec)
    svg = []  # latency vs load (report/latencyplots.py)
    for k, fig in enumerate(latencyplots.figures(run)):
        svg.append(plots.svg_inline(fig, f"load{i}-{k}"))
        tick()
    yield latencyplots.section(run, svg)
    yield b2b_table(rec)
    if history is not None:
        yield "<h3>History of its series</h3>" + history
    warns = warnings(rec)
    yield "<h3>Warnings</h3>" + ("".join(f'<div class="warn">{escape(w)}</div>' for w in warns) if warns
                                 else '<p class="ok">None.</p>')
    yield "<h3>Search trace</h3>"
    for s in traced_searches(rec):
        yield _trace(i, s)
        tick()
    chosen = select(rec, None, None, None) if rec.searches else []
    yield "<h3>Where frames were lost</h3>"
    if not chosen:
        yield '<p class="ok">No trial lost frames.</p>'
    else:
        yield ("<p>The failed validation trials (or a search's lossiest trial): every stage's counters, hop by hop, "
               "and what to change.</p>")
        yield from (_ledger_html(s, t) for _, s, t in chosen)
    yield "</section>"


def figure_count(runs: list[Run]) -> int:
    """How many figures render draws: NDR, latency, one trace per search (for a progress line)."""
    return 2 + sum(len(traced_searches(r.record)) for r in runs) + latencyplots.figure_count(runs)


def render(runs: list[Run], title: str | None = None, progress: Callable[[int], None] | None = None,
           history: Sequence[str] | None = None) -> str:
    """The report page for one or more runs (several runs share the NDR and latency plots); progress is told
    the number of figures drawn so far; history: each run's history part, in the runs' order (None: none)."""
    drawn = 0

    def tick() -> None:
        nonlocal drawn
        drawn += 1
        if progress:
            progress(drawn)

    title = title or ("zeroloss report: " + ", ".join(r.label for r in runs))
    nav = "".join(f'<a href="#run-{i}">{escape(r.label)}</a>' for i, r in enumerate(runs))
    ndr = plots.svg_inline(plots.ndr_figure(runs), "ndr")
    tick()
    lat = plots.svg_inline(plots.latency_figure(runs), "lat")
    tick()
    summary = "".join(f"<h4>{escape(r.label)}: {escape(describe(r.record))}</h4>{results_table(r.record)}"
                      for r in runs)
    verdicts = "".join(f'<p class="verdict {v.status.lower()}"><b>{escape(r.label)}</b>: {escape(v.line)}</p>'
                       for r in runs for v in [verdict(r.record)])
    body = [f"<h1>{escape(title)}</h1>", verdicts,
            f'<p class="meta">Made by zeroloss {__version__} on {time.strftime("%Y-%m-%d %H:%M %Z")} from '
            f"{len(runs)} run(s); it reads only the result files. Rates are frames per second per direction; "
            "frame sizes include the 4 B FCS.</p>",
            f"<nav>{nav}</nav>",
            '<section id="summary"><h2>Summary</h2>',
            f'<div class="fig" id="fig-ndr">{ndr}</div>', summary,
            f'<div class="fig" id="fig-latency">{lat}</div></section>',
            *_tune_section(runs, tick),
            *(part for i, r in enumerate(runs)
              for part in _run_section(i, r, tick, history[i] if history is not None else None))]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"zeroloss {__version__}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def render_soak(rec: SoakRecord, label: str, title: str | None = None) -> str:
    """The report page of a soak file: what it was, its totals, the timeline plot, the intervals, the ledger and
    the diagnosis of the whole trial."""
    from zeroloss.report.explain import direction_text, findings_text

    title = title or f"zeroloss soak report: {label}"
    head, *rest = summary_lines(rec, label)
    rows = [[f"{row.t_s:g}", key, f"{d.tx_pps or 0:,.0f}", f"{d.rx_pps or 0:,.0f}", f"{d.tx or 0:,}",
             f"{d.refused or 0:,}", f"{d.rx or 0:,}", f"{d.lost or 0:,}", f"{d.loss_pct or 0:.3f}"]
            for row in rec.intervals for key, d in sorted(row.directions.items())]  # as SoakRecord.rows()
    ledger = [line for led in rec.ledger or [] for line in direction_text(led)]
    diag = findings_text(rec.diagnosis or [])
    body = [f"<h1>{escape(title)}</h1>", f"<p class=\"verdict\">{escape(head)}</p>",
            f'<p class="meta">Made by zeroloss {__version__} on {time.strftime("%Y-%m-%d %H:%M %Z")} from '
            "the soak file only. Rates are frames per second per direction; frame sizes include the 4 B FCS.</p>",
            "<pre>" + escape("\n".join(rest)) + "</pre>",
            f'<div class="fig" id="fig-soak">{plots.svg_inline(plots.soak_figure(rec, label), "soak")}</div>',
            "<h2>Intervals</h2>",
            "<p>Per interval: frames sent (the wire took them), refused (the wire did not take them; counted lost on "
            "a virtual wire, whose refusal is the DUT's full ring), received and lost.</p>",
            _table(["t s", "direction", "sent pps", "received pps", "sent", "refused", "received", "lost", "loss %"],
                   rows, "soak", left=2)]
    events = [LossEvent.from_json(e) for e in rec.events()]
    if events:
        erows = [[str(k), f"{e.start_s:g}", f"{e.end_s:g}", f"{int(e.lost):,}",
                  f"{ms:,.1f}" if (ms := outage_ms(e.to_json(), rec.rate_pps)) is not None else "",
                  top_drop(e.ledger)] for k, e in enumerate(events, 1)]
        body += ["<h2>Loss events</h2>", _table(["event", "start s", "end s", "frames lost",
                                                 "outage ms at the offered rate (worst direction)",
                                                 "where (largest drop)"], erows,
                                                "events", left=1)]
        for k, e in enumerate(events, 1):
            lines = [line for led in e.ledger or [] for line in direction_text(led)]
            lines += findings_text(e.diagnosis or [])
            if lines:
                body += [f"<h3>Loss event {k}: its ledger ({e.start_s:g} s .. {e.end_s:g} s)</h3>",
                         "<pre>" + escape("\n".join(lines)) + "</pre>"]
    if ledger:
        body += ["<h2>Where frames were lost (the whole trial)</h2>", "<pre>" + escape("\n".join(ledger)) + "</pre>"]
    if diag:
        body += ["<h2>Diagnosis</h2>", "<pre>" + escape("\n".join(diag)) + "</pre>"]
    if rec.placement:
        body.append(_lab_block("lab", Placement.from_json(rec.placement).lab or rec.placement))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"zeroloss {__version__}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
