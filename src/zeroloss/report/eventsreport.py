"""`zeroloss report EVENTS.json`: the page of an events file (`zeroloss events`, results/events.py): the outage
table, per event a timeline of its worst repeat (what each direction received per interval, the event's apply and
undo, the lost frames shaded) and the ledgers of its lost frames; or the outage table as JSON, CSV or Markdown.
One self-contained HTML file, as the run report (report/html.py)."""

from __future__ import annotations

import csv
import io
import time
from html import escape

from zeroloss import __version__
from zeroloss.report.canvas import Axes, Figure
from zeroloss.report.docparts import EventIntervals, HostFacts, Placement
from zeroloss.report.htmlbase import CSS, _fmt, _kv, _table
from zeroloss.report.htmlledger import ledger_html
from zeroloss.report.htmlsetup import _lab_block
from zeroloss.report.plots import COLORS, svg_inline
from zeroloss.results.events import BASELINE, EventsRecord, EventTrial, table, to_json_summary, worst

SHADE = "#d62728"  # the lost frames, as the soak's loss events


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


def _unit(rate_pps: float) -> tuple[float, str]:
    """The rate axis' unit: kpps under 1 Mpps (an events trial runs at a fraction of the NDR), else Mpps."""
    return (1e3, "kpps") if rate_pps < 1e6 else (1e6, "Mpps")


def _series(trial: EventTrial) -> tuple[float, dict[str, tuple[list[int], list[int], list[int]]]]:
    """The trial's interval length (ms) and per direction its frames sent, received and offered into a link the
    event took down (results.events.EventDirection.link_down) per interval, the lists as long (the shorter padded
    with empty intervals: zlgen leaves trailing ones out)."""
    iv = EventIntervals.from_json(trial.intervals or {})
    out = {}
    for key, d in sorted((iv.directions or {}).items()):
        tx, rx, down = list(d.tx or ()), list(d.rx or ()), list(d.link_down or ())
        n = max(len(tx), len(rx), len(down))
        out[key] = (tx + [0] * (n - len(tx)), rx + [0] * (n - len(rx)), down + [0] * (n - len(down)))
    return float(iv.ms or 0), out


def event_figure(trial: EventTrial, repeats: int) -> Figure | None:
    """A trial's timeline, one panel per direction: the frames received per interval as a rate (solid) against
    those sent (dotted), both by the interval the frames were SENT in (zlgen's counters), so a dip is the outage
    where it happened, the lost frames shaded between them; below, the frames lost per interval, each large
    outage labelled. The event's apply (solid) and undo (dashed) marked, each command's run time in grey, the
    outages (runs of intervals with loss) in a light band. None: no interval counters."""
    ms, dirs = _series(trial)
    if not ms or not dirs:
        return None
    scale, unit = _unit(trial.rate_pps or 1.0)
    fig = Figure(figsize=(9, 1.6 + 1.3 * len(dirs)), layout="constrained")
    axes = list(fig.subplots(len(dirs) + 1, 1, sharex=True, height_ratios=[3] * len(dirs) + [2]))
    loss_ax = axes[-1]
    end_s = max(trial.duration_s, max(len(tx) for tx, _, _ in dirs.values()) * ms / 1000)
    first_down = True
    for i, ((key, series), ax) in enumerate(zip(dirs.items(), axes, strict=False)):
        first_down = _direction_panel(ax, loss_ax, i, key, series, ms, trial, scale, unit, first_down)
    _marks(axes, trial, end_s)
    big = sorted(trial.outages, key=lambda o: -o.lost)[:4]  # the largest outages labelled with their frames
    for o in big:
        if o.lost >= 0.05 * max(trial.lost, 1):
            loss_ax.annotate(f"{o.lost:,} ({_ms(o.outage_ms)} ms)", (o.end_ms / 1000, o.lost), fontsize="x-small",
                             xytext=(3, -2), textcoords="offset points", va="top")
    axes[0].set_xlim(0, end_s)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:-1]:
        h, lab = ax.get_legend_handles_labels()
        handles, labels = handles + h, labels + lab
    fig.legend(handles, labels, fontsize="x-small", loc="outside right upper")
    _loss_axis(loss_ax, dirs, ms)
    which = f"repeat {trial.repeat} (the worst of {repeats})" if repeats > 1 else f"repeat {trial.repeat}"
    fig.suptitle(f"{trial.event}: {which}: lost {trial.lost:,} frames, outage {_ms(trial.outage_ms)} ms",
                 fontsize="medium")
    return fig


def _direction_panel(ax: Axes, loss_ax: Axes, i: int, key: str, series: tuple[list[int], list[int], list[int]],
                     ms: float, trial: EventTrial, scale: float, unit: str, first_down: bool) -> bool:
    """One direction's panel (received against sent, the lost frames shaded, what went into a downed link in grey)
    and its line of lost frames on loss_ax; whether the downed link's legend entry is still to be given."""
    tx, rx, down = series
    per_s = 1000 / ms / scale
    color = COLORS[i % len(COLORS)]
    ts = [k * ms / 1000 for k in range(len(tx) + 1)]
    sent, got = [x * per_s for x in tx], [x * per_s for x in rx]
    peer = [(t - x) * per_s for t, x in zip(tx, down, strict=True)]  # what a peer would have sent
    ax.stairs(sent, ts, color="#555555", linewidth=0.8, linestyle=":", label="sent" if i == 0 else None)
    ax.stairs(got, ts, color=color, linewidth=1, label=f"{key} received")
    ax.fill_between(ts, [*peer, peer[-1] if peer else 0], [*got, got[-1] if got else 0], step="post",
                    where=[*(r < t - x for t, r, x in zip(tx, rx, down, strict=True)), False], color=SHADE,
                    alpha=0.6, linewidth=0, label="lost frames" if i == 0 else None)
    if any(down):
        ax.fill_between(ts, [*sent, sent[-1] if sent else 0], [*peer, peer[-1] if peer else 0], step="post",
                        where=[*(x > 0 for x in down), False], color="#7f7f7f", alpha=0.5, linewidth=0,
                        label="offered into the downed link (the generator's)" if first_down else None)
        first_down = False
    loss_ax.stairs([max(0, t - r - x) for t, r, x in zip(tx, rx, down, strict=True)], ts, color=color,
                   linewidth=1, label=key)
    if trial.rate_pps:  # sent under it: frames the generator could not send (refused by a wire without peer)
        ax.axhline(trial.rate_pps / scale, color="#555555", linestyle=(0, (1, 3)), linewidth=0.8,
                   label="offered" if i == 0 else None)
    ax.set_ylabel(f"{key}, {unit}")
    ax.set_ylim(0, max([*sent, *got, trial.rate_pps / scale]) * 1.08)
    ax.grid(alpha=0.3)
    return first_down


def _marks(axes: list[Axes], trial: EventTrial, end_s: float) -> None:
    """On every panel: the outages (a light band), the commands run during the trial (grey), the event's apply
    (solid) and undo (dashed)."""
    first_outage = first_command = True  # only the first of each is labelled
    for o in trial.outages:
        for ax in axes:
            ax.axvspan(o.start_ms / 1000, o.end_ms / 1000, color=SHADE, alpha=0.12, linewidth=0, zorder=0,
                       label="outage (intervals with loss)" if first_outage and ax is axes[0] else None)
        first_outage = False
    for a in trial.actions:  # commands run during the trial (a preparation before it is in the table only)
        if 0 <= a.t_ms <= end_s * 1000:
            for ax in axes:
                ax.axvspan(a.t_ms / 1000, (a.t_ms + a.took_ms) / 1000, color="#7f7f7f", alpha=0.25, linewidth=0,
                           zorder=0, label="command running" if first_command and ax is axes[0] else None)
            first_command = False
    for t_ms, style, text in ((trial.t_event_ms, "-", "event applied"), (trial.t_undo_ms, "--", "undone")):
        if t_ms is not None:
            for ax in axes:
                ax.axvline(t_ms / 1000, color="black", linestyle=style, linewidth=1,
                           label=text if ax is axes[0] else None)


def _loss_axis(loss_ax: Axes, dirs: dict[str, tuple[list[int], list[int], list[int]]], ms: float) -> None:
    """The bottom panel's scale and labels: frames lost per interval, symlog."""
    loss_ax.set_yscale("symlog", linthresh=1)
    loss_ax.set_ylim(0, 5 * max([10, *(t - r - x for tx, rx, down in dirs.values()
                                       for t, r, x in zip(tx, rx, down, strict=True))]))
    loss_ax.set_ylabel(f"lost per {ms:g} ms")
    loss_ax.set_xlabel("time from the trial's start (when the frames were sent), s")
    loss_ax.grid(alpha=0.3)


def figures(rec: EventsRecord) -> list[tuple[EventTrial, Figure]]:
    """One timeline per event (its worst repeat), for --plots."""
    return [(t, fig) for t, n in worst(rec) if (fig := event_figure(t, n)) is not None]


SUMMARY_HEAD = ["event", "repeats", "lost mean", "lost min", "lost max", "outage ms mean", "outage ms min",
                "outage ms max", "span ms mean", "span ms max", "where lost (largest drop)"]


def _summary_rows(rec: EventsRecord) -> list[list[str]]:
    return [[s.event, str(s.repeats), f"{s.lost_mean:,.0f}", f"{s.lost_min:,}", f"{s.lost_max:,}",
             _ms(s.outage_ms_mean), _ms(s.outage_ms_min), _ms(s.outage_ms_max), _ms(s.span_ms_mean),
             _ms(s.span_ms_max), s.where or "-"] for s in rec.summary]


def _trial_rows(trials: list[EventTrial]) -> list[list[str]]:
    """A row per repeat: lost per direction, outage, span, the outages on the timeline, the commands run."""
    rows = []
    for t in trials:
        dirs = ", ".join(d.text() for d in t.directions)
        outs = "; ".join(f"{o.direction} {o.start_ms / 1000:.2f}..{o.end_ms / 1000:.2f} s: {o.lost:,}"
                         for o in t.outages)
        acts = "; ".join(f"{a.t_ms / 1000:.3f} s: {a.what} ({a.took_ms:,.0f} ms)" for a in t.actions)
        rows.append([str(t.repeat), f"{t.lost:,}", dirs, _ms(t.outage_ms), _ms(t.span_ms), outs or "-", acts or "-"])
    return rows


def _event_section(rec: EventsRecord, k: int, trial: EventTrial, repeats: int) -> str:
    """An event: the timeline of its worst repeat, its repeats, the ledger of the worst one's lost frames (the
    others' on demand)."""
    mine = [t for t in rec.trials if t.event == trial.event]
    parts = [f'<section class="event" id="event-{k}"><h3>{escape(trial.event)}</h3>']
    fig = event_figure(trial, repeats)
    parts.append(f'<div class="fig">{svg_inline(fig, f"ev{k}")}</div>' if fig is not None else
                 '<p class="meta">No timeline: zlgen counted no intervals in this trial.</p>')
    parts.append(_table(["repeat", "lost", "per direction", "outage ms", "span ms", "outages (when sent)",
                         "commands (when, took)"], _trial_rows(mine), "trials",
                        ["fail" if t.lost else "pass" for t in mine], left=1))
    for t in mine:
        parts += [f'<div class="warn">repeat {t.repeat}: {escape(w)}</div>' for w in t.warnings]
    if not trial.lost:
        why = " (the baseline: no change)" if trial.event == BASELINE else ""
        parts.append(f'<p class="ok">No repeat lost frames{why}.</p>')
    else:
        what = f"Where repeat {trial.repeat}'s {trial.lost:,} frames were lost"
        parts.append(f"<h4>{escape(what)}</h4>")
        parts.append(ledger_html(trial.ledger or [], trial.diagnosis or []) if trial.ledger else
                     '<p class="meta">No ledger (the DUT\'s counters were not read).</p>')
        for t in mine:
            if t is not trial and t.lost and t.ledger:
                parts.append(f"<details><summary>repeat {t.repeat}: where its {t.lost:,} frames were lost</summary>"
                             f"{ledger_html(t.ledger, t.diagnosis or [])}</details>")
    return "".join(parts) + "</section>"


def render_events(rec: EventsRecord, label: str, title: str | None = None) -> str:
    """The report page of an events file."""
    title = title or f"zeroloss events report: {label}"
    head = table(rec).split("\n", 1)[0].rstrip(":")
    plan = rec.plan or {}
    state = rec.state + (f": {rec.error}" if rec.error else "")
    meta = (f"Made by zeroloss {__version__} on {time.strftime('%Y-%m-%d %H:%M %Z')} from the events file only "
            f"(started {rec.created}, updated {rec.updated}, {state}). Rates are frames per second per direction; "
            "frame sizes include the 4 B FCS.")
    nav = "".join(f'<a href="#event-{k}">{escape(t.event)}</a>' for k, (t, _) in enumerate(worst(rec)))
    items = [(k, _fmt(v), False, "") for k, v in plan.items()]
    items += [("NDR", f"{rec.ndr_pps:,.0f} pps" if rec.ndr_pps else "-", False, "per direction"),
              ("NDR from", _fmt(rec.ndr_from), False, "a search, a result file, or --rate"),
              ("host", _fmt(HostFacts.from_json(rec.host or {}).hostname), False, "")]
    cfg = rec.config or {}
    setup: list[tuple[str, str, bool, str]] = [(k, _fmt(cfg.get(k)), False, "") for k in
                                               ("topology", "bond", "vnf", "frame_sizes", "flows") if k in cfg]
    body = [f"<h1>{escape(title)}</h1>", f'<p class="verdict">{escape(head)} ({escape(state)})</p>',
            f'<p class="meta">{escape(meta)}</p>', f"<nav>{nav}</nav>",
            "<h2>Outage per event</h2>",
            "<p>Frames lost over each event's repeats (all directions), and the outage they make: the worst "
            "direction's lost frames at the offered rate (the frames-lost method, RFC 6201's frame loss duration). "
            "The span runs from the first interval with loss to the last one's end (zlgen's interval counters place "
            "each frame at the time it was sent). Where: the ledger's largest drop.</p>",
            _table(SUMMARY_HEAD, _summary_rows(rec), "events", left=1),
            '<div class="grid">' + _kv("Plan", items) + (_kv("Setup", setup) if setup else "") + "</div>"]
    lab = Placement.from_json(rec.placement).lab if rec.placement else None
    if lab:
        body.append(_lab_block("lab", lab))
    warns = list(rec.warnings) + ([rec.error] if rec.error else [])
    body.append("<h2>Warnings</h2>" + ("".join(f'<div class="warn">{escape(w)}</div>' for w in warns) if warns
                                         else '<p class="ok">None.</p>'))
    body.append("<h2>Timelines and ledgers</h2><p>One timeline per event: its worst repeat (most frames lost; the "
                "first of equals), what each direction received per interval against what it sent, by the interval "
                "the frames were sent in; frames the generator could not send (refused by a wire without peer, lost "
                "too: the table's 'refused') show as sent under the offered line. Then its repeats and where the lost "
                "frames were dropped, hop by hop.</p>")
    body += [_event_section(rec, k, t, n) for k, (t, n) in enumerate(worst(rec))]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"generator\" content=\"zeroloss {__version__}\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def export(rec: EventsRecord, label: str, fmt: str) -> str:
    """The outage table as JSON (with each trial's figures), CSV or Markdown (one row per event)."""
    if fmt == "json":
        return to_json_summary(rec, label)
    keys = ["event", "repeats", "lost_mean", "lost_min", "lost_max", "outage_ms_mean", "outage_ms_min",
            "outage_ms_max", "span_ms_mean", "span_ms_max", "where"]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["run", *keys], lineterminator="\n")
        w.writeheader()
        for s in rec.summary:
            doc = s.to_json()
            w.writerow({"run": label, **{k: "" if doc.get(k) is None else doc.get(k) for k in keys}})
        return buf.getvalue()
    lines = [f"**{label}**: {table(rec).split(chr(10), 1)[0].rstrip(':')}", "",
             "| " + " | ".join(SUMMARY_HEAD) + " |", "|:---|" + "---:|" * (len(SUMMARY_HEAD) - 2) + ":---|"]
    lines += ["| " + " | ".join(r) + " |" for r in _summary_rows(rec)]
    return "\n".join(lines) + "\n"

