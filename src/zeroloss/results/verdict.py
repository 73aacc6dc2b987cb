"""The one-line sign-off verdict of a run: PASS/FAIL against --require-ndr, the lowest NDR and its size.

Pure: reads a run's records (results/records.py). The run table, `zeroloss run --json` and the HTML report lead with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zeroloss.results.records import RunRecord
from zeroloss.results.summary import frame_rows


@dataclass(frozen=True)
class Verdict:
    status: str  # "PASS" | "FAIL" | "NONE" (no requirement given) | "INCOMPLETE" (no search finished)
    required: dict[int, float]  # frame size -> % of line rate the NDR must reach
    missed: dict[int, float | None]  # frame size -> the NDR's % of line rate (None: no NDR or not measured)
    lowest_pct: float | None  # the lowest NDR of the run, % of line rate (lowest repeat of each size)
    lowest_frame: int | None
    line: str

    def to_dict(self) -> dict[str, Any]:
        """The verdict as `zeroloss run --json` prints it."""
        return {"status": self.status, "required_pct": {str(k): v for k, v in self.required.items()},
                "missed": {str(k): v for k, v in self.missed.items()}, "lowest_ndr_pct": self.lowest_pct,
                "lowest_ndr_frame": self.lowest_frame, "line": self.line}


def verdict(run: RunRecord) -> Verdict:
    """Each required size's lowest NDR (the worst repeat: a sign-off is as good as its worst search) against
    its requirement; a size with no NDR, or not measured, misses."""
    required = {int(k): float(v) for k, v in (run.config.get("require_ndr") or {}).items()}
    rows = {r.frame: r for r in frame_rows(run)}
    worst = {f: (100 * min(r.ndrs) / r.line_rate_pps if r.ndrs and len(r.ndrs) == r.searches else None)
             for f, r in rows.items()}
    measured = [(pct, f) for f, pct in worst.items() if pct is not None]
    lowest_pct, lowest_frame = min(measured) if measured else (None, None)
    missed = {f: got for f, need in sorted(required.items()) if (got := worst.get(f)) is None or got < need}
    if not rows:
        status = "INCOMPLETE"
    elif not required:
        status = "NONE"
    else:
        status = "FAIL" if missed else "PASS"
    low = (f"lowest NDR {lowest_pct:.2f} % of line rate at {lowest_frame} B" if lowest_pct is not None
           else "no frame size found an NDR in every search")
    if status == "PASS":
        line = f"PASS: every frame size reached its required NDR; {low}"
    elif status == "FAIL":
        parts = [f"{f} B {'no NDR' if got is None else f'{got:.2f} %'} < {required[f]:g} %"
                 for f, got in missed.items()]
        line = "FAIL: " + "; ".join(parts) + f"; {low}"
    elif status == "NONE":
        line = f"NO REQUIREMENT (--require-ndr): {low}"
    else:
        line = "INCOMPLETE: no search finished"
    return Verdict(status, required, missed, lowest_pct, lowest_frame, line)
