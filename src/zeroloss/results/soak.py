"""A soak file (`zeroloss trial --lab --interval`, lab/labrun.soak): one fixed-rate trial, its per-interval rates
and loss per direction, and at the end its totals, hop ledger and diagnosis. Typed here so that `report` and
`explain` read it as they read result files. Pure: records and text only.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from zeroloss.errors import ZeroLossError
from zeroloss.results.codec import JsonObject, Record, RecordError

KIND = "zeroloss-soak"


@dataclass(frozen=True, kw_only=True)
class SoakRecord(Record):
    """A soak file as stored (lab/labrun.soak writes it)."""

    kind: str = KIND
    version: int = 1
    state: str = "running"
    lab_file: str | None = None
    frame: int = 0
    duration_s: float = 0.0
    interval_s: float = 0.0
    rate_pps: float | None = None
    line_rate_pps: float | None = None
    line_rate_pct: float | None = None
    intervals: tuple[JsonObject, ...] = ()  # {t_s, state, directions: {"A->B": {tx, rx, tx_pps, rx_pps, lost, ...}}}
    warnings: tuple[str, ...] = ()
    placement: JsonObject | None = None
    result: JsonObject | None = None  # {directions: [{tx_side, rx_side, tx, rx, lost, achieved_pps}], tx_window_s}
    ledger: list[JsonObject] | None = None
    diagnosis: list[JsonObject] | None = None
    error: str | None = None
    learning: JsonObject | None = field(default=None, repr=False)

    def directions(self) -> list[str]:
        """The directions the intervals name, in order (e.g. A->B, B->A)."""
        return sorted({k for row in self.intervals for k in (row.get("directions") or {})})

    def rows(self) -> Iterator[dict[str, Any]]:
        """One flat row per interval and direction: time, rates, frames sent, received, lost and loss %."""
        for row in self.intervals:
            for key, d in sorted((row.get("directions") or {}).items()):
                yield {"t_s": row.get("t_s"), "direction": key, "tx_pps": d.get("tx_pps"),
                       "rx_pps": d.get("rx_pps"), "tx": d.get("tx"), "rx": d.get("rx"), "lost": d.get("lost"),
                       "loss_pct": d.get("loss_pct"), "short": d.get("short")}

    def totals(self) -> list[JsonObject]:
        """Each direction's totals at the end (exact; the intervals' edges count frames in flight)."""
        return list((self.result or {}).get("directions") or [])


def is_soak(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND


def read(doc: dict[str, Any], path: object) -> SoakRecord:
    """The record of a soak document; a damaged one is one line naming the field."""
    try:
        rec = SoakRecord.from_json(doc)
    except RecordError as e:
        raise ZeroLossError(f"{path}: {e}", "the soak file is damaged: run the soak again") from None
    if not isinstance(rec.frame, int) or rec.frame <= 0:
        raise ZeroLossError(f"{path}: frame: is not a frame size", "the soak file is damaged: run the soak again")
    for i, row in enumerate(rec.intervals):
        dirs = row.get("directions")
        if not isinstance(dirs, dict) or not all(isinstance(d, dict) for d in dirs.values()):
            raise ZeroLossError(f"{path}: intervals[{i}].directions: is not an object of directions",
                                "the soak file is damaged: run the soak again")
    return rec


def summary_lines(rec: SoakRecord, label: str) -> list[str]:
    """What the soak was and how it ended: rate, duration, totals per direction, its worst interval."""
    rate = f"{rec.rate_pps:,.0f} pps per direction" if rec.rate_pps else "rate not recorded"
    pct = f" ({rec.line_rate_pct:.2f} % of line rate)" if rec.line_rate_pct else ""
    out = [f"{label}: soak at {rate}{pct}, {rec.frame} B, {rec.duration_s:g} s in {rec.interval_s:g} s intervals, "
           f"{rec.state}" + (f": {rec.error}" if rec.error else "")]
    for d in rec.totals():
        tx, lost = int(d.get("tx", 0)), int(d.get("lost", 0))
        pct_lost = f" ({100 * lost / tx:.4f} %)" if tx else ""
        out.append(f"  {d.get('tx_side')}->{d.get('rx_side')}: sent {tx:,}, received {int(d.get('rx', 0)):,}, "
                   f"lost {lost:,}{pct_lost}")
    worst = max(rec.rows(), key=lambda r: r["lost"] or 0, default=None)
    if worst is not None and (worst["lost"] or 0) > 0:
        out.append(f"  worst interval: {worst['direction']} at {worst['t_s']:g} s lost {worst['lost']:,} frames "
                   f"({worst['loss_pct']:.3f} %)")
    out += [f"  warning: {w}" for w in rec.warnings]
    return out


COLUMNS = ("t_s", "direction", "tx_pps", "rx_pps", "tx", "rx", "lost", "loss_pct", "short")


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
    head = ["t s", "direction", "tx pps", "rx pps", "lost", "loss %"]
    lines = [f"**{label}**: " + summary_lines(rec, label)[0].split(": ", 1)[1], "",
             "| " + " | ".join(head) + " |", "|" + "|".join(["---:", ":---"] + ["---:"] * 4) + "|"]
    for r in rows:
        lines.append(f"| {r['t_s']:g} | {r['direction']} | {r['tx_pps'] or 0:,.0f} | {r['rx_pps'] or 0:,.0f} | "
                     f"{r['lost'] or 0:,} | {r['loss_pct'] or 0:.3f} |")
    return "\n".join(lines) + "\n"
