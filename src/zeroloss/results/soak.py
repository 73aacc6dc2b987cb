"""A soak file (`zeroloss trial --interval`, soakrun.soak over any run target: the bench's topologies or a lab
node): one fixed-rate trial, its per-interval rates and loss per direction, its loss events (intervals with loss,
merged) with their times, ledgers and diagnoses, and at the end its totals, hop ledger and diagnosis. Typed here
so that `report` and `explain` read it as they read result files. Pure: records, loss-event arithmetic and text.

Format history: version 1 (issue 27): intervals, totals, ledger. Version 2 (issue 32): `target`, `started_at`,
interval rows with `refused` and `short` counting refused frames as lost where the target says so, and
`loss_events: [{start_s, end_s, first, last, lost, directions, ledger, diagnosis, window_s}]`. Version 1 files
are still read (their loss events are found from their rows, without ledgers). Since 2026-11-29 an event also has
`read_slack`: per direction, the frames its ledger's two end readings leave open (those in flight at each, and
those zlgen sent or received while the DUT's counters were read): how far the ledger's unexplained frames may come
from where the readings fell rather than from the DUT (runs/soak.Readings.slack). Older files lack it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from zeroloss.core.codec import Json, JsonObject, Record, RecordError
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_json_atomic
from zeroloss.loss.ledger import largest_drop

KIND = "zeroloss-soak"
VERSION = 2
MERGE_GAP = 1  # intervals without loss between two with loss that still make one event
# the keys a soak file has from its first write (SoakRecord.new), the others added as the soak goes
_NEW_KEYS = ("kind", "version", "state", "target", "lab_file", "frame", "duration_s", "interval_s", "intervals",
             "loss_events", "warnings", "config")


@dataclass(frozen=True, kw_only=True)
class DirectionRow(Record):
    """One direction in one interval: frames sent (the wire took), refused (it did not), received, the shortfall
    since the start (sent + refused where the target counts them lost - received: loss or frames in flight), the
    rates, and the interval's own loss (negative when the previous interval's in-flight frames came in it)."""

    tx: int | None = None
    refused: int | None = 0  # version 2
    rx: int | None = None
    short: int | None = None  # version 2
    tx_pps: float | None = None
    rx_pps: float | None = None
    lost: int | None = None
    loss_pct: float | None = None


@dataclass(frozen=True, kw_only=True)
class IntervalRow(Record):
    """One interval: when it ended (seconds from the start), zlgen's state then, and each direction's figures."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"state"})  # zlgen's status may not say

    t_s: float | None = None
    state: str | None = None
    directions: dict[str, DirectionRow] = field(default_factory=dict)  # {"A->B": ..., "B->A": ...}


@dataclass(frozen=True, kw_only=True)
class SoakTotal(Record):
    """One direction's totals at the end (exact; the intervals' edges count frames in flight): tx is offered, the
    refused frames included (lost too where the target counts them so)."""

    tx_side: Json = None  # 0 or 1 (runs/soak.py), A or B (a lab's first files)
    rx_side: Json = None
    tx: int = 0
    rx: int = 0
    lost: int = 0
    refused: int | None = 0
    achieved_pps: float | None = None


@dataclass(frozen=True, kw_only=True)
class SoakResult(Record):
    """The trial's end: each direction's totals, and zlgen's TX window."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"tx_window_s"})

    directions: tuple[SoakTotal, ...] | None = None
    tx_window_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class SoakRecord(Record):
    """A soak file as stored (runs/soak.py writes it through `write`); its fields in the order the file has them."""

    kind: str = KIND
    version: int = 1
    state: str = "running"
    target: str | None = None  # the run target's link: memif, vhost, ovs-p2p, pvp, pvvp, lab (version 2)
    lab_file: str | None = None
    frame: int = 0
    duration_s: float = 0.0
    interval_s: float = 0.0
    intervals: tuple[IntervalRow, ...] = ()
    loss_events: tuple[JsonObject, ...] = ()  # version 2: see events()
    warnings: tuple[str, ...] = ()
    config: JsonObject | None = None  # {topology, dut, flows, bidirectional, drain_ms}
    rate_pps: float | None = None
    line_rate_pps: float | None = None
    line_rate_pct: float | None = None
    placement: JsonObject | None = None
    learning: JsonObject | None = field(default=None, repr=False)
    started_at: float | None = None  # the time traffic started (epoch seconds; version 2)
    result: SoakResult | None = None
    ledger: list[JsonObject] | None = None
    diagnosis: list[JsonObject] | None = None
    counters: JsonObject | None = None
    dut_state: JsonObject | None = None
    dut_readings: Json = None  # a lab node's readings during the soak, as its target gives them
    error: str | None = None

    @classmethod
    def new(cls, *, lab_file: str | None, frame: int, duration_s: float, interval_s: float, warnings: list[str],
            config: JsonObject) -> SoakRecord:
        """A soak's record before its target is entered: what a file says from its first write (target and lab
        file null until known)."""
        return cls(version=VERSION, target=None, lab_file=lab_file, frame=frame, duration_s=duration_s,
                   interval_s=interval_s, warnings=tuple(warnings), config=config,
                   keys=frozenset(_NEW_KEYS))

    def events(self) -> list[JsonObject]:
        """The loss events: as stored (version 2), or found from the rows of a version 1 file (no ledgers)."""
        if self.version >= 2:
            return list(self.loss_events)
        return loss_events(list(self.intervals), None)

    def directions(self) -> list[str]:
        """The directions the intervals name, in order (e.g. A->B, B->A)."""
        return sorted({k for row in self.intervals for k in row.directions})

    def rows(self) -> Iterator[dict[str, Any]]:
        """One flat row per interval and direction: time, rates, frames sent (the wire took), refused (the wire
        did not take; lost too where the target counts them so, so lost may pass sent), received, lost and
        loss %."""
        for row in self.intervals:
            for key, d in sorted(row.directions.items()):
                yield {"t_s": row.t_s, "direction": key, "tx_pps": d.tx_pps, "rx_pps": d.rx_pps, "tx": d.tx,
                       "refused": d.refused, "rx": d.rx, "lost": d.lost, "loss_pct": d.loss_pct, "short": d.short}

    def ends(self) -> tuple[SoakTotal, ...]:
        """Each direction's totals at the end (exact; the intervals' edges count frames in flight)."""
        return (self.result.directions or ()) if self.result is not None else ()

    def totals(self) -> list[JsonObject]:
        """ends() as the file has them."""
        return [d.to_json() for d in self.ends()]


def confirmed(shorts: list[int], final: int | None = None) -> list[int]:
    """Per interval, the frames lost in it for sure, from the cumulative shortfall (sent minus received since the
    start) read at each interval's end: frames short at one reading that are still short at every later one (and
    at the exact end, final) were lost, the rest were in flight. The frames confirmed lost by interval i are the
    smallest later shortfall, so a frame in flight at an edge is never loss and the sum is the exact total."""
    floor = final if final is not None else None
    upto = [0] * len(shorts)
    for i in range(len(shorts) - 1, -1, -1):
        floor = shorts[i] if floor is None else min(floor, shorts[i])
        upto[i] = max(0, floor)
    return [b - a for a, b in zip([0, *upto], upto, strict=False)]


def in_flight(rows: Sequence[IntervalRow], final: dict[str, int] | None) -> dict[str, list[int]]:
    """Per direction, the frames in flight at each reading (index k: the reading that ends row k-1; reading 0,
    before traffic, has none): its shortfall less the loss confirmed by then (confirmed). The exact end has none."""
    out: dict[str, list[int]] = {}
    for key in sorted({k for row in rows for k in row.directions}):
        shorts = [int((d.short if (d := row.directions.get(key)) is not None else 0) or 0) for row in rows]
        upto, flying = 0, [0]
        for short, step in zip(shorts, confirmed(shorts, None if final is None else final.get(key, 0)), strict=True):
            upto += step
            flying.append(short - upto)
        out[key] = flying
    return out


def in_flight_margin(shorts: list[int], steps: list[int]) -> int:
    """The frames a reading may find in flight: twice the median of each reading's shortfall above the loss
    confirmed by then. A step of confirmed loss no larger is no event (it may be frames in flight at a reading
    that never fell back to zero); the totals stay exact."""
    upto, above = 0, []
    for short, step in zip(shorts, steps, strict=True):
        upto += step
        above.append(short - upto)
    above.sort()
    return 2 * above[len(above) // 2] if above else 0


def lossy_runs(lost: list[int], merge_gap: int = MERGE_GAP) -> list[tuple[int, int]]:
    """(first, last) index of each run of intervals with loss, runs apart by up to merge_gap clean intervals
    merged into one."""
    runs: list[tuple[int, int]] = []
    for i, n in enumerate(lost):
        if n <= 0:
            continue
        if runs and i - runs[-1][1] - 1 <= merge_gap:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


def loss_events(rows: Sequence[IntervalRow], final: dict[str, int] | None,
                merge_gap: int = MERGE_GAP) -> list[JsonObject]:
    """The loss events of a soak's interval rows: runs of intervals with confirmed loss in any direction, merged
    across gaps of up to merge_gap intervals; each with its time span (start of its first interval, end of its
    last, seconds from the start), its first and last row index, and frames lost in total and per direction.
    An interval has loss when its confirmed loss is above the frames a reading finds in flight (in_flight_margin).
    final: each direction's exact shortfall at the end (the trial's totals), when known."""
    keys = sorted({k for row in rows for k in row.directions})
    per_dir, lossy = {}, [False] * len(rows)
    for key in keys:
        shorts = [int((d.short if (d := row.directions.get(key)) is not None else 0) or 0) for row in rows]
        steps = per_dir[key] = confirmed(shorts, None if final is None else final.get(key, 0))
        margin = in_flight_margin(shorts, steps)
        lossy = [was or n > margin for was, n in zip(lossy, steps, strict=True)]
    any_lost = [1 if x else 0 for x in lossy]
    out = []
    for first, last in lossy_runs(any_lost, merge_gap):
        dirs = {k: sum(per_dir[k][first:last + 1]) for k in keys if sum(per_dir[k][first:last + 1])}
        out.append({"start_s": float(rows[first - 1].t_s or 0) if first else 0.0, "end_s": float(rows[last].t_s or 0),
                    "first": first, "last": last, "lost": sum(dirs.values()), "directions": dirs})
    return out


def outage_ms(event: JsonObject, rate_pps: float | None) -> float | None:
    """A loss event's outage at the offered rate (per direction): its worst direction's lost frames at that rate,
    as `zeroloss events` gives it; the directions' frames are not added (two directions losing 1 s each are a 1 s
    outage, not 2 s). None without a rate or loss."""
    dirs = [int(n) for n in (event.get("directions") or {}).values() if isinstance(n, int | float)]
    worst = max(dirs, default=int(event.get("lost") or 0))
    return 1000 * worst / rate_pps if rate_pps and worst > 0 else None


def event_lines(rec: SoakRecord) -> list[str]:
    """One line per loss event: when, how long, frames lost per direction, where (its ledger's top drop)."""
    events = rec.events()
    if not events:
        return ["loss events: none" + (" so far" if rec.state == "running" else "")]
    out = [f"loss events: {len(events)}"]
    for k, e in enumerate(events, 1):
        dirs = ", ".join(f"{d} {n:,}" for d, n in sorted((e.get("directions") or {}).items()))
        ms = outage_ms(e, rec.rate_pps)
        dur = f", outage {ms:,.1f} ms at the offered rate (worst direction)" if ms is not None else ""
        out.append(f"  event {k}: {e['start_s']:g} s .. {e['end_s']:g} s lost {int(e.get('lost', 0)):,} frames "
                   f"({dirs}){dur}" + (f"; {where}" if (where := top_drop(e.get("ledger"))) else ""))
    return out


def top_drop(ledger: list[JsonObject] | None) -> str:
    """Where an event's ledger lost the most frames: 'N at HOP: reason', or '' without a ledger."""
    best = largest_drop(ledger)
    return f"{best[0]:,} at {best[1]}: {best[2]}" if best else ""


def write(path: Path, rec: SoakRecord) -> None:
    """The soak file, whole: atomic, 0600 (a lab's addresses and the node's state), never through a planted link
    (fileio.write_json_atomic)."""
    write_json_atomic(path, rec.to_json())


def is_soak(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND


def read(doc: dict[str, Any], path: object) -> SoakRecord:
    """The record of a soak document; a damaged one is one line naming the field."""
    try:
        rec = SoakRecord.from_json(doc)
    except RecordError as e:
        if e.at.startswith("intervals"):
            _check_rows(doc.get("intervals"), path)
        raise ZeroLossError(f"{path}: {e}", "the soak file is damaged: run the soak again") from None
    if not isinstance(rec.frame, int) or rec.frame <= 0:
        raise ZeroLossError(f"{path}: frame: is not a frame size", "the soak file is damaged: run the soak again")
    for i, ev in enumerate(rec.loss_events):
        if not isinstance(ev, dict) or not all(isinstance(ev.get(k), int | float) for k in ("start_s", "end_s",
                                                                                          "lost")):
            raise ZeroLossError(f"{path}: loss_events[{i}]: needs start_s, end_s and lost",
                                "the soak file is damaged: run the soak again")
    return rec


def _check_rows(rows: object, path: object) -> None:
    """One line naming the first interval row whose directions are not an object of directions."""
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        dirs = row.get("directions") if isinstance(row, dict) else None
        if not isinstance(dirs, dict) or not all(isinstance(d, dict) for d in dirs.values()):
            raise ZeroLossError(f"{path}: intervals[{i}].directions: is not an object of directions",
                                "the soak file is damaged: run the soak again")


def _side(side: object) -> str:
    """A direction's side as the intervals name it: A or B (soakrun stores 0 and 1, the lab's first files A, B)."""
    return "AB"[side] if isinstance(side, int) and side in (0, 1) else str(side)


def summary_lines(rec: SoakRecord, label: str) -> list[str]:
    """What the soak was and how it ended: rate, duration, totals per direction, its worst interval."""
    rate = f"{rec.rate_pps:,.0f} pps per direction" if rec.rate_pps else "rate not recorded"
    pct = f" ({rec.line_rate_pct:.2f} % of line rate)" if rec.line_rate_pct else ""
    out = [f"{label}: soak at {rate}{pct}, {rec.frame} B, {rec.duration_s:g} s in {rec.interval_s:g} s intervals, "
           f"{rec.state}" + (f": {rec.error}" if rec.error else "")]
    for d in rec.ends():
        tx, lost = int(d.tx), int(d.lost)  # tx: offered, the refused frames included
        refused = int(d.refused or 0)
        pct_lost = f" ({100 * lost / tx:.4f} %)" if tx else ""
        out.append(f"  {_side(d.tx_side)}->{_side(d.rx_side)}: sent {tx - refused:,}"
                   + (f", refused {refused:,}" if refused else "")
                   + f", received {int(d.rx):,}, lost {lost:,}{pct_lost}")
    worst = max(rec.rows(), key=lambda r: r["lost"] or 0, default=None)
    if worst is not None and (worst["lost"] or 0) > 0:
        out.append(f"  worst interval: {worst['direction']} at {worst['t_s']:g} s lost {worst['lost']:,} frames "
                   f"({worst['loss_pct']:.3f} %)")
    out += event_lines(rec)
    out += [f"  warning: {w}" for w in rec.warnings]
    return out


COLUMNS = ("t_s", "direction", "tx_pps", "rx_pps", "tx", "refused", "rx", "lost", "loss_pct", "short")


def export(rec: SoakRecord, label: str, fmt: str) -> str:
    """The intervals as JSON, CSV or Markdown (one row per interval and direction)."""
    rows = list(rec.rows())
    if fmt == "json":
        return json.dumps({"run": label, "kind": KIND, "frame": rec.frame, "rate_pps": rec.rate_pps,
                           "state": rec.state, "totals": rec.totals(), "rows": rows}, indent=1)
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["run", *COLUMNS], lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({"run": label, **{k: "" if v is None else v for k, v in r.items()}})
        return buf.getvalue()
    head = ["t s", "direction", "tx pps", "rx pps", "refused", "lost", "loss %"]
    lines = [f"**{label}**: " + summary_lines(rec, label)[0].split(": ", 1)[1], "",
             "| " + " | ".join(head) + " |", "|" + "|".join(["---:", ":---"] + ["---:"] * 5) + "|"]
    for r in rows:
        lines.append(f"| {r['t_s']:g} | {r['direction']} | {r['tx_pps'] or 0:,.0f} | {r['rx_pps'] or 0:,.0f} | "
                     f"{r['refused'] or 0:,} | {r['lost'] or 0:,} | {r['loss_pct'] or 0:.3f} |")
    return "\n".join(lines) + "\n"
