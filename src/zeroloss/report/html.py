"""`zeroloss report`: one self-contained HTML page (inline CSS and SVG, no script, no network) from result files:
setup, results, NDR and latency plots, each search's trace, the loss ledger of failed trials, every warning."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields
from html import escape
from typing import Any

from zeroloss import __version__
from zeroloss.core import frames
from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss.ledger import REASONS
from zeroloss.report import latencyplots, plots, telemetryplots
from zeroloss.report.explain import HOP_HEADERS, hop_rows, select, trial_analysis
from zeroloss.results.campaigns import TuneRecord
from zeroloss.results.fmt import FLAG_TEXT
from zeroloss.results.records import RunRecord, SearchEntry, TrialEntry
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

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1240px;padding:0 16px;
color:#1b1b1b}
h1{font-size:24px;margin:24px 0 4px}
h2{font-size:20px;border-bottom:2px solid #1f77b4;padding-bottom:3px;margin-top:36px}
h3{font-size:16px;margin:22px 0 8px}h4{font-size:14px;margin:14px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f3f6f9;font-weight:600}td.l,th.l{text-align:left}
tr.fail td{background:#fdecec}tr.pass td{background:#eef8ee}tr.risk td{background:#fff7e0}
.verdict{font-size:1.1em}.verdict.pass{color:#1a7f37}.verdict.fail{color:#b42318}.verdict.inconclusive{color:#b54708}
.meta{color:#555}.kv td{text-align:left;white-space:normal;max-width:440px;overflow-wrap:anywhere}
.kv td:first-child{color:#444;white-space:nowrap}td.why{white-space:normal;text-align:left}
.kv td.set{font-weight:600}.grid{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.warn{background:#fff7e0;border-left:4px solid #f0a000;padding:6px 10px;margin:4px 0}
.ok{background:#eef8ee;border-left:4px solid #2ca02c;padding:6px 10px}
.fig svg{max-width:100%;height:auto}details{margin:4px 0 10px}summary{cursor:pointer;color:#1f5f99}
code{background:#f3f6f9;padding:0 3px;white-space:pre-wrap}.tw{overflow-x:auto;max-width:100%}
table.results td:last-child{min-width:10em}
table.results td:last-child,table.ledger td:last-child,table.ledger th:last-child{white-space:normal;text-align:left}
ul.fix{margin:2px 0 8px}nav a{margin-right:12px}
"""


def _table(headers: list[str], rows: list[list[str]], cls: str = "", row_classes: list[str] | None = None,
           left: int = 1) -> str:
    """An HTML table; cells are escaped here; the first `left` columns are left-aligned."""
    head = "".join(f'<th class="l">{escape(h)}</th>' if i < left else f"<th>{escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = []
    for n, row in enumerate(rows):
        rc = f' class="{row_classes[n]}"' if row_classes and row_classes[n] else ""
        cells = "".join(f'<td class="l">{escape(c)}</td>' if i < left else f"<td>{escape(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f"<tr{rc}>{cells}</tr>")
    return (f'<div class="tw"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            "</table></div>")


def _kv(title: str, items: list[tuple[str, str, bool, str]]) -> str:
    """A key/value table; bold values are the ones set away from their default; hover text explains a key."""
    rows = "".join(f'<tr><td title="{escape(tip)}">{escape(k)}</td><td class="{"set" if bold else ""}">'
                   f"{escape(v)}</td></tr>" for k, v, bold, tip in items)
    return f'<div><h4>{escape(title)}</h4><table class="kv"><tbody>{rows}</tbody></table></div>'


def _fmt(v: object) -> str:
    """A setting's or host fact's value as text: floats short, lists and objects joined, nothing as '-'."""
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) or "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) or "-"
    return "-" if v in ("", None) else str(v)


HOST_KEYS = [("hostname", "host"), ("cpu_model", "CPU"), ("cpus", "CPUs"), ("numa_nodes", "NUMA nodes"),
             ("memory_mib", "memory, MiB"), ("hugepages", "hugepages (size: count)"), ("isolated_cpus", "isolcpus"),
             ("kernel", "kernel"), ("os", "OS"), ("dpdk_package", "DPDK package"), ("cmdline", "kernel cmdline"),
             ("python", "Python")]


def _lab_block(where: str, place: Mapping[str, Any]) -> str:
    """A lab node: where it is, the paths OVS traced, changes made; or its audit, finding by finding."""
    if where == "lab_host":
        if "error" in place:
            return _kv("Lab node's host", [("not read", _fmt(place["error"]), False, "")])
        findings = (place.get("audit") or {}).get("findings") or []
        items = [("host", _fmt(place.get("host")), False, "ssh destination"),
                 ("hostname", _fmt(place.get("hostname")), False, "")]
        items += [(f.get("severity", ""), f"{f.get('rule', '')}: {f.get('message', '')}", False,
                   f.get("remedy", "")) for f in findings]
        if not findings:
            items.append(("audit", "no finding", False, "zeroloss host audit --host"))
        return _kv("Lab node's host and audit", items)
    items = [(k, _fmt(place.get(k)), False, "") for k in ("dut", "lab_file", "ovs_version", "ovs_rundir",
                                                            "dut_readings") if k in place]
    for c in place.get("chains") or []:
        hops = c["ovs_ports"]
        path = " → ".join(hops[:1] + [f"{a} | {v} | {b}" for a, b, v in zip(hops[1::2], hops[2::2], c["vnfs"],
                                                                                 strict=False)] + hops[-1:])
        items.append((f"path {c['tx']}→{c['rx']}", path, False, "traced by ofproto/trace"))
    for ch in place.get("dut_changes") or []:
        items.append(("changed (restored)", f"{ch['setting']}: {ch['from']} → {ch['to']}", True, "--dut-set"))
    items += [(f"port {p['name']}", f"{p['device']} → {p['dut_port']}, {p['speed_gbps']:g} Gb/s ({p['speed_from']})",
               False, "") for p in place.get("ports") or []]
    return _kv("Lab node", items)


def _tune_section(runs: list[Run], tick: Callable[[], None]) -> Iterator[str]:
    """The tuning story of a tune file: NDR per step, the steps with their change and decision, how it ended."""
    tunes: list[TuneRecord] = []
    for r in runs:
        if r.tune is not None and all(r.tune is not t for t in tunes):
            tunes.append(r.tune)
    for t in tunes:
        from zeroloss.runs.tune.render import render as render_settings
        from zeroloss.runs.tune.render import target_text, tuned_keys

        fig = plots.svg_inline(plots.tune_figure(t), "tune")
        tick()
        rows = []
        for s in t.steps:
            d = s.decision or {}
            c = s.change
            rows.append([s.name, f"{c['key']}: {c['old']} → {c['new']}" if c else "as given",
                         (c or {}).get("finding", ""), d.get("effect", "running"),
                         "kept" if s.kept else ("reverted" if d else ""), d.get("why", "")])
        keys = tuned_keys(t)
        kept = (f"<pre>{escape(render_settings(keys, 'ovs-vsctl'))}</pre>" if keys
                else "<p>No setting was kept: the start settings stay.</p>")
        advice = "".join(f"<li>{escape(a)}</li>" for a in t.advice)
        yield (f'<section id="tune"><h2>Tuning story: target {escape(target_text((t.target[0], t.target[1])))}'
               f'</h2><div class="fig">{fig}</div>'
               + _table(["step", "change", "finding", "effect", "", "why"], rows)
               + f"<p>Ended: {escape(t.stop or 'not yet (resume with zeroloss tune --resume)')}</p>"
               + "<h3>Settings kept</h3>" + kept + (f"<h3>Advice (not tried on the bench)</h3><ul>{advice}</ul>"
                                                    if advice else "") + "</section>")


def _setup(run: RunRecord) -> str:
    """The run's setup: host, settings (those changed first), placement or lab node, generator ceiling, core probe."""
    host = run.host
    host_items = [(name, _fmt(host.get(key)), False, key) for key, name in HOST_KEYS if key in host]
    defaults = RunConfig()
    cfg = run.config
    cfg_items: list[tuple[str, str, bool, str]] = []
    for f in fields(RunConfig):
        if f.name in cfg:
            unit = f.metadata.get("unit") or ""
            value = _fmt(cfg[f.name]) + ("" if unit in ("", "%") else " ") + unit
            cfg_items.append((f.name, value, cfg[f.name] != getattr(defaults, f.name), f.metadata.get("help", "")))
    cfg_items += [(k, _fmt(v), True, "not a setting of this zeroloss") for k, v in cfg.items()
                  if k not in {f.name for f in fields(RunConfig)}]
    changed = [item for item in cfg_items if item[2]]
    blocks = [_kv("Host", host_items),
              "<div>" + _kv("Settings changed from the default", changed)
              + f"<details><summary>all {len(cfg_items)} settings (bold: changed)</summary>"
              + _kv("Settings", cfg_items) + "</details></div>"]
    for where, place in run.place().items():
        if where in ("lab", "lab_host"):
            blocks.append(_lab_block(where, place))
            continue
        items = [(k, _fmt(v), False, "") for k, v in place.items() if k != "flows"]
        items += [(f"flows {br}", "; ".join(rules), False, "OpenFlow rules zeroloss installed")
                  for br, rules in (place.get("flows") or {}).items()]
        blocks.append(_kv(f"Core placement and DUT: {where}", items))
    return '<div class="grid">' + "".join(blocks) + _ceilings(run) + _core_probes(run) + "</div>"


def _ceilings(run: RunRecord) -> str:
    """The generator's ceiling per frame size, when it was measured."""
    if not run.ceilings:
        return ""
    rows = [[frames.text(frames.key(f)), f"{c.pps:,.0f}", c.link or "", c.how or ""]
            for f, c in sorted(run.ceilings.items(), key=lambda kv: frames.order(frames.key(kv[0])))]
    return ("<div><h4>Generator ceiling (highest rate tried)</h4>"
            + _table(["frame", "pps", "wire", "measured"], rows) + "</div>")


def _core_probes(run: RunRecord) -> str:
    """The core probe's readings before each bench, when it ran."""
    if not run.core_probes:
        return ""
    rows = [[", ".join(map(frames.text, p.frames)), ",".join(map(str, p.cores)),
             " / ".join(f"{x:.2f}" for x in p.ratio), "shared" if p.shared else "independent"]
            for p in run.core_probes]
    return ("<div><h4>Core probe (each core's speed with all busy / alone, before the bench)</h4>"
            + _table(["frames", "cores", "together / alone", "verdict"], rows) + "</div>")


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
    rows = latency_rows(run)
    if not rows:
        return "<p>No latency recorded at the NDR.</p>"
    names = [name for _, name in PERCENTILES]
    cells = [[f"{r['frame']}", r["direction"], f"{r['rate_pps']:,.0f}", f"{r['count']:,}", f"{r['mean']:.1f}",
              *(f"{r[n]:.1f}" if n in r else "-" for n in names)] for r in rows]
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


def warnings(run: RunRecord) -> list[str]:
    """Everything that qualifies the numbers: the run's own warnings, flags per frame size, an unfinished run,
    frame sizes without a result."""
    out = list(run.all_warnings())
    if run.state != "complete":
        out.append(f"The run is {run.state}: results are partial (continue it with zeroloss run --resume).")
    done = {s.frame for s in run.finished()}
    missing = [f for f in run.config.get("frame_sizes", []) if f not in done]
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
        leds, diag = trial_analysis(search, trial)  # loss/ledger.py's and loss/diagnose.py's JSON
    except ZeroLossError as e:
        summary = "; ".join(f"{d.port}->{d.rx_port}: " + ", ".join(f"{k} {v:,}" for k, v in (d.ledger or {}).items())
                            for d in trial.dirs())
        return f"<h4>{escape(head)}</h4><p>{escape(str(e))}. Per direction: {escape(summary)}</p>"
    return f'<h4 class="lossy-trial">{escape(head)}</h4>' + ledger_html(leds, diag)


def ledger_html(leds: list[dict[str, Any]], diag: list[dict[str, Any]]) -> str:
    """Ledgers per direction, hop by hop (loss/ledger.py's JSON), and the findings with their fixes
    (loss/diagnose.py's)."""
    parts = []
    for led in leds:
        lost, unexpl = led["lost"], led["unexplained"]
        parts.append(f"<p>Direction {escape(str(led['direction']))}: sent {led['sent']:,}, received "
                     f"{led['received']:,}, lost {lost:,}, counted {led['counted']:,}, unexplained {unexpl:,}</p>")
        if lost == 0 and not unexpl:
            continue
        parts.append(_table(HOP_HEADERS, hop_rows(led, compact=True), "ledger", left=1))
        parts.append(f"<details><summary>the whole path, {len(led['hops'])} hops</summary>"
                     + _table(HOP_HEADERS, hop_rows(led, compact=False), "path", left=1) + "</details>")
    for f in diag:
        share = f"{f['share_pct']:.1f} %" if f["frames"] else "risk"
        what = REASONS.get(f["reason"], f["reason"].replace("_", " "))
        items = "".join(f"<li>seen: {escape(e)}</li>" for e in f["evidence"])
        items += "".join(f"<li>fix: <code>{escape(r)}</code></li>" for r in f["remedies"])
        parts.append(f'<div class="warn finding"><b>[{share}] {escape(f["hop"])}: {escape(what)}</b> '
                     f"({f['frames']:,} frames): {escape(f['cause'])}<ul class=\"fix\">{items}</ul></div>")
    return "".join(parts)


def _run_section(i: int, run: Run, tick: Callable[[], None]) -> Iterator[str]:
    """One run's section: setup, results, latency, warnings, search traces, where frames were lost."""
    rec = run.record
    yield f'<section class="run" id="run-{i}"><h2>{escape(run.label)}</h2>'
    meta = (f"file {run.source}, format version {rec.version}, zeroloss {rec.zeroloss}, started "
            f"{rec.created}, updated {rec.updated}, state {rec.state}")
    yield f'<p class="meta">{escape(describe(rec))}<br>{escape(meta)}</p>'
    yield "<h3>Setup</h3>" + _setup(rec)
    c = rec.config
    yield (f"<h3>Results</h3><p>NDR: loss ≤ {c['ndr_loss_pct']:g} %, PDR: loss ≤ {c['pdr_loss_pct']:g} %, per "
           f"direction; % of {line_gbps(rec):g} Gb/s line rate; rates in frames/s per direction.</p>")
    yield results_table(rec)
    yield "<h3>Latency at the NDR</h3>" + _latency(rec)
    svg = []  # latency vs load (report/latencyplots.py)
    for k, fig in enumerate(latencyplots.figures(run)):
        svg.append(plots.svg_inline(fig, f"load{i}-{k}"))
        tick()
    yield latencyplots.section(run, svg)
    yield b2b_table(rec)
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


def render(runs: list[Run], title: str | None = None, progress: Callable[[int], None] | None = None) -> str:
    """The report page for one or more runs (several runs share the NDR and latency plots); progress is told
    the number of figures drawn so far."""
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
            *(part for i, r in enumerate(runs) for part in _run_section(i, r, tick))]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"zeroloss {__version__}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def render_soak(rec: SoakRecord, label: str, title: str | None = None) -> str:
    """The report page of a soak file: what it was, its totals, the timeline plot, the intervals, the ledger and
    the diagnosis of the whole trial."""
    from zeroloss.report.explain import direction_text, findings_text

    title = title or f"zeroloss soak report: {label}"
    head, *rest = summary_lines(rec, label)
    rows = [[f"{r['t_s']:g}", r["direction"], f"{r['tx_pps'] or 0:,.0f}", f"{r['rx_pps'] or 0:,.0f}",
             f"{r['tx'] or 0:,}", f"{r['refused'] or 0:,}", f"{r['rx'] or 0:,}", f"{r['lost'] or 0:,}",
             f"{r['loss_pct'] or 0:.3f}"] for r in rec.rows()]
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
    events = rec.events()
    if events:
        erows = [[str(k), f"{e['start_s']:g}", f"{e['end_s']:g}", f"{int(e['lost']):,}",
                  f"{ms:,.1f}" if (ms := outage_ms(e, rec.rate_pps)) is not None else "", top_drop(e.get("ledger"))]
                 for k, e in enumerate(events, 1)]
        body += ["<h2>Loss events</h2>", _table(["event", "start s", "end s", "frames lost",
                                                 "outage ms at the offered rate (worst direction)",
                                                 "where (largest drop)"], erows,
                                                "events", left=1)]
        for k, e in enumerate(events, 1):
            lines = [line for led in e.get("ledger") or [] for line in direction_text(led)]
            lines += findings_text(e.get("diagnosis") or [])
            if lines:
                body += [f"<h3>Loss event {k}: its ledger ({e['start_s']:g} s .. {e['end_s']:g} s)</h3>",
                         "<pre>" + escape("\n".join(lines)) + "</pre>"]
    if ledger:
        body += ["<h2>Where frames were lost (the whole trial)</h2>", "<pre>" + escape("\n".join(ledger)) + "</pre>"]
    if diag:
        body += ["<h2>Diagnosis</h2>", "<pre>" + escape("\n".join(diag)) + "</pre>"]
    if rec.placement:
        body.append(_lab_block("lab", rec.placement.get("lab") or rec.placement))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"zeroloss {__version__}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
