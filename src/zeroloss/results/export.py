"""The results table as JSON, CSV or Markdown (for scripts, spreadsheets, tickets): strings, the CLI prints."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from zeroloss.core.frames import legend as mix_legend
from zeroloss.results import latencyload
from zeroloss.results.runsettings import RunSettings
from zeroloss.results.summary import FrameRow, Run, frame_rows
from zeroloss.results.verdict import SizeVerdict, size_verdicts, verdict

# (key, unit or meaning, value of a row); rates are frames/s per direction, as everywhere in zeroloss
COLUMNS: list[tuple[str, str, Callable[[FrameRow], Any]]] = [
    ("frame_bytes", "frame size, B incl. FCS, or an IMIX's label (imix, imix:SIZE:WEIGHT,...; its Gb/s and % of "
                    "line rate are of its mean frame)", lambda r: r.frame),
    ("wire", "bench wire or external", lambda r: r.link),
    ("repeats", "searches at this size", lambda r: r.repeats),
    ("ndr_found", "searches that found an NDR", lambda r: len(r.ndrs)),
    ("ndr_pps", "NDR, frames/s per direction (mean of the searches that found one)", lambda r: _f(r, r.ndr_pps, 1)),
    ("ndr_sd_pps", "standard deviation of the repeats' NDR, frames/s", lambda r: _f(r, r.ndr_sd, 1)),
    ("ndr_min_pps", "lowest repeat's NDR, frames/s", lambda r: min(r.ndrs, default=None)),
    ("ndr_max_pps", "highest repeat's NDR, frames/s", lambda r: max(r.ndrs, default=None)),
    ("ndr_line_rate_pct", "NDR, % of line rate", lambda r: _f(r, r.line_rate_pct, 3)),
    ("ndr_l1_gbps", "NDR on the wire incl. preamble and gap, Gb/s", lambda r: _f(r, r.l1_gbps, 4)),
    ("ndr_l2_gbps", "NDR in frame bits, Gb/s", lambda r: _f(r, r.l2_gbps, 4)),
    ("pdr_pps", "PDR, frames/s per direction (repeat 0)", lambda r: r.pdr_pps),
    ("pdr_line_rate_pct", "PDR, % of line rate", lambda r: None if r.pdr_pct is None else round(r.pdr_pct, 3)),
    ("validation_lost", "frames lost in the NDR validation trial", lambda r: r.val_lost),
    ("validation_tx", "frames sent in the NDR validation trial", lambda r: r.val_tx),
    ("lat_p50_us", "latency at NDR, median, us", lambda r: r.lat_us and round(r.lat_us[0], 2)),
    ("lat_p99_us", "latency at NDR, 99th percentile, us", lambda r: r.lat_us and round(r.lat_us[1], 2)),
    ("lat_max_us", "latency at NDR, maximum, us", lambda r: r.lat_us and round(r.lat_us[2], 2)),
    ("flags", "warnings about the number (see the report)", lambda r: " ".join(r.flags)),
]
# a frame size's sign-off (results/verdict.py), beside its numbers
VERDICT_COLUMNS: list[tuple[str, str, Callable[[SizeVerdict | None], Any]]] = [
    ("verdict", "PASS, FAIL or INCONCLUSIVE against --require-ndr; MEASURED without one",
     lambda v: v.status if v else None),
    ("ndr_lower_bound", "true when the NDR is only a lower bound (the table shows ≥)",
     lambda v: v.bound if v else None),
    ("verdict_reasons", "why the size failed or is inconclusive", lambda v: "; ".join(v.reasons) if v else None),
]
FORMATS = ("json", "csv", "markdown")


def _f(r: FrameRow, value: float, digits: int) -> float | None:
    """A rounded NDR figure, or None when no search found an NDR."""
    return round(value, digits) if r.found else None


def records(runs: list[Run]) -> list[dict[str, Any]]:
    """One flat record per run and frame size, keyed by COLUMNS (plus the run's label)."""
    out = []
    for run in runs:
        sizes = size_verdicts(run.record)
        for row in frame_rows(run.record):
            v = sizes.get(row.frame)
            out.append({"run": run.label, **{key: get(row) for key, _, get in COLUMNS},
                        **{key: get_v(v) for key, _, get_v in VERDICT_COLUMNS}})
    return out


def _run_json(r: Run) -> dict[str, Any]:
    """What a run's rows are of: its topology, link speed, loss limits and state."""
    c = RunSettings.from_json(r.record.config)
    return {"label": r.label, "source": r.source, "topology": c.topology,
            "link_speed_gbps": r.record.link_speed_gbps, "ndr_loss_pct": c.ndr_loss_pct,
            "pdr_loss_pct": c.pdr_loss_pct, "state": r.record.state, "verdict": verdict(r.record).to_dict(),
            "latency_vs_load": latencyload.to_json(r.record)}


def to_json(runs: list[Run]) -> str:
    """The columns with their units, the runs, and one row per run and frame size."""
    units = {key: unit for key, unit, _ in COLUMNS} | {key: unit for key, unit, _ in VERDICT_COLUMNS}
    doc = {"columns": units, "runs": [_run_json(r) for r in runs],
           "rows": records(runs)}
    return json.dumps(doc, indent=1)


def to_csv(runs: list[Run]) -> str:
    """The rows as CSV with a header line; an empty cell where a value is unknown."""
    buf = io.StringIO()
    keys = [key for key, _, _ in COLUMNS] + [key for key, _, _ in VERDICT_COLUMNS]
    w = csv.DictWriter(buf, fieldnames=["run", *keys], lineterminator="\n")
    w.writeheader()
    for rec in records(runs):
        w.writerow({k: "" if v is None else v for k, v in rec.items()})
    return buf.getvalue()


def _md_cells(r: FrameRow, v: SizeVerdict | None) -> list[str]:
    """A frame size's cells of the Markdown table; an NDR that is only a lower bound reads "≥ X"."""
    spread = f" ± {r.ndr_sd:,.0f}" if len(r.ndrs) > 1 else ""
    lat = " / ".join(f"{v:.1f}" for v in r.lat_us) if r.lat_us else "-"
    status = v.status if v else "-"
    ge = "≥ " if v is not None and v.bound else ""
    if not r.found:
        return [str(r.frame), "none", "-", "-", "-", "-", lat, status, ", ".join(r.flags)]
    return [str(r.frame), f"{ge}{r.ndr_pps:,.0f}{spread}", f"{ge}{r.line_rate_pct:.2f}", f"{r.l1_gbps:.3f}",
            f"{r.pdr_pps:,.0f}" if r.pdr_pps else "-",
            f"{r.val_lost:,} / {r.val_tx:,}" if r.val_tx is not None else "-", lat, status, ", ".join(r.flags)]


def to_markdown(runs: list[Run]) -> str:
    """One table per run, with a caption line that says what the numbers are."""
    out = []
    head = ["frame B", "NDR pps", "% line rate", "L1 Gb/s", "PDR pps", "val. lost / sent", "lat p50 / p99 / max us",
            "verdict", "flags"]
    for run in runs:
        c = RunSettings.from_json(run.record.config)
        out.append(f"**{run.label}**: {c.topology}, NDR (loss ≤ {c.ndr_loss_pct:g} %) and PDR "
                   f"(≤ {c.pdr_loss_pct:g} %) per direction, % of {run.record.link_speed_gbps:g} Gb/s line rate")
        out.append("")
        out.append(verdict(run.record).line)
        out.append("")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(["---:"] * (len(head) - 2) + [":---", ":---"]) + "|")
        sizes = size_verdicts(run.record)
        rows = frame_rows(run.record)
        out += ["| " + " | ".join(_md_cells(r, sizes.get(r.frame))) + " |" for r in rows]
        out += [line.strip() for line in mix_legend(r.frame for r in rows)]
        if loads := latencyload.load_table(run.record):  # latency vs load, NFVbench's table
            out += ["", "```", loads, "```"]
        out.append("")
    return "\n".join(out)


def export(runs: list[Run], fmt: str) -> str:
    """The runs' results table in one of FORMATS."""
    return {"json": to_json, "csv": to_csv, "markdown": to_markdown}[fmt](runs)
