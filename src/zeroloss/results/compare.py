"""`zeroloss compare`: NDR per frame size of runs against a baseline, judged against the run-to-run spread,
with what differed in their setup. Pure: reads runs' records (results/records.py) only.

A difference counts as real when it is larger than the measured spread of both runs (max - min of the repeats'
NDRs, `--repeat N`) and larger than the search's resolution (the widest pass/fail bracket a search ended with).
With one search per frame size there is no spread to judge by: the verdict says so. A size either run could not
measure conclusively (results/verdict.py: INCONCLUSIVE) holds only lower bounds: it is "inconclusive", never
faster or slower. `zeroloss compare` exits with `exit_code`: 2 when a size is slower beyond the spread (a CI
gate), 3 when a size may have regressed but cannot be judged, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, by_size
from zeroloss.core.text import si, table
from zeroloss.results.records import FINGERPRINT_KEYS, RunRecord, fingerprint
from zeroloss.results.summary import FrameRow, Run, frame_rows
from zeroloss.results.verdict import INCONCLUSIVE, size_verdicts

HOST_FIELDS = ("hostname", "machine_id", "cpu_model", "cpus", "numa_nodes", "memory_mib", "hugepages", "kernel",
               "os", "cmdline", "isolated_cpus", "dpdk_package", "python")


@dataclass(frozen=True)
class FrameDiff:
    """One frame size of two runs: both rows (None where not measured), the verdict and why."""

    frame: Frame  # a size in bytes, or an IMIX's label
    base: FrameRow | None
    other: FrameRow | None
    verdict: str  # faster | slower | within-spread | within-resolution | unjudged | generator-bound | no-ndr | missing
    #              | inconclusive
    note: str

    def _both(self) -> tuple[FrameRow, FrameRow] | None:
        """Both rows when both runs found an NDR at this size."""
        if self.base is None or self.other is None or not self.base.found or not self.other.found:
            return None
        return self.base, self.other

    @property
    def delta_pps(self) -> float | None:
        """The other run's NDR minus the baseline's, frames/s."""
        both = self._both()
        return None if both is None else both[1].ndr_pps - both[0].ndr_pps

    @property
    def delta_pct(self) -> float | None:
        """The difference as % of the baseline's NDR."""
        both = self._both()
        if both is None or not both[0].ndr_pps:
            return None
        return 100 * (both[1].ndr_pps - both[0].ndr_pps) / both[0].ndr_pps

    @property
    def delta_line_pct(self) -> float | None:
        """The difference in points of line rate."""
        both = self._both()
        return None if both is None else both[1].line_rate_pct - both[0].line_rate_pct


Diff = tuple[str, object, object]  # (key, value in the baseline, value in the other run)


@dataclass(frozen=True)
class Comparison:
    """One run against the baseline: per frame size, then what differed in settings, placement, host, versions."""

    base: Run
    other: Run
    frames: list[FrameDiff]
    config: list[Diff]
    placement: list[Diff]
    host: list[Diff]
    versions: list[Diff]

    def diffs(self, key: str) -> list[Diff]:
        """The differences of one part of the setup: config, placement, host or versions."""
        return {"config": self.config, "placement": self.placement, "host": self.host,
                "versions": self.versions}[key]


def judge(base: FrameRow, other: FrameRow) -> tuple[str, str]:
    """Whether other's NDR differs from base's by more than both were seen to vary between repeats."""
    if not base.found or not other.found:
        return "no-ndr", "no search found an NDR in the " + ("baseline" if not base.found else "other run")
    delta = other.ndr_pps - base.ndr_pps
    if base.generator_bound and other.generator_bound:
        return "generator-bound", "both NDRs sit at the generator's ceiling: the DUT may be faster in both"
    res = max(base.resolution_pps or 0.0, other.resolution_pps or 0.0)
    if res and abs(delta) <= res:
        return "within-resolution", f"|Δ| ≤ the search resolution ({si(res, 'pps')})"
    spreads = [s for s in (base.spread_pps, other.spread_pps) if s is not None]
    if not spreads:
        beyond = f"|Δ| > the search resolution ({si(res, 'pps')}), but " if res else ""
        return "unjudged", f"{beyond}one search per frame size: run-to-run spread not measured (use --repeat 3)"
    spread = max(spreads)
    if abs(delta) <= spread:
        return "within-spread", f"|Δ| ≤ the run-to-run spread ({si(spread, 'pps')})"
    word = "faster" if delta > 0 else "slower"
    one = "" if len(spreads) == 2 else " (spread of one run only)"
    bound = next((f"; the {n} NDR is at the generator's ceiling" for n, r in (("baseline's", base), ("other", other))
                  if r.generator_bound), "")
    return word, f"|Δ| > the run-to-run spread ({si(spread, 'pps')}){one}{bound}"


def frame_diffs(base: RunRecord, other: RunRecord) -> list[FrameDiff]:
    """Each frame size measured in either run, judged."""
    a = {r.frame: r for r in frame_rows(base)}
    b = {r.frame: r for r in frame_rows(other)}
    va, vb = size_verdicts(base), size_verdicts(other)
    out = []
    for f in by_size(a.keys() | b.keys()):
        unsure = [n for n, v in (("baseline", va.get(f)), ("other run", vb.get(f))) if v and v.status == INCONCLUSIVE]
        if f in a and f in b and unsure:
            why = "; ".join(dict.fromkeys(r for v in (va.get(f), vb.get(f)) if v for r in v.reasons))
            verdict, note = "inconclusive", f"the {' and the '.join(unsure)} measured only a lower bound: {why}"
        elif f in a and f in b:
            verdict, note = judge(a[f], b[f])
        else:
            verdict, note = "missing", "measured only in the " + ("baseline" if f in a else "other run")
        out.append(FrameDiff(f, a.get(f), b.get(f), verdict, note))
    return out


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, object]:
    """Nested keys joined by dots."""
    out: dict[str, object] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def dict_diff(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Diff]:
    """(key, value in a, value in b) for every key that differs, nested keys joined by dots."""
    fa, fb = _flat(a), _flat(b)
    return [(k, fa.get(k, "-"), fb.get(k, "-")) for k in sorted(fa.keys() | fb.keys()) if fa.get(k) != fb.get(k)]


def check_hosts(runs: list[Run], force: bool) -> None:
    """Refuses runs from different hosts (their difference would mix host and DUT) unless forced."""
    base = runs[0].record.host
    for r in runs[1:]:
        host = r.record.host
        if fingerprint(host) != fingerprint(base) and not force:
            what = "; ".join(f"{k} {base.get(k)} vs {host.get(k)}" for k in FINGERPRINT_KEYS
                             if base.get(k) != host.get(k))
            raise ZeroLossError(f"{runs[0].label} and {r.label} were measured on different hosts ({what}): a "
                                "difference would mix the hosts' effect with the DUT's",
                                "compare runs of one host, or pass --force")


def comparison(base: Run, other: Run) -> Comparison:
    """One run against the baseline."""
    a, b = base.record, other.record
    return Comparison(base=base, other=other, frames=frame_diffs(a, b), config=dict_diff(a.config, b.config),
                      placement=dict_diff(a.place(), b.place()),
                      host=dict_diff({k: a.host.get(k) for k in HOST_FIELDS}, {k: b.host.get(k) for k in HOST_FIELDS}),
                      versions=dict_diff({"zeroloss": a.zeroloss, "format": a.version},
                                         {"zeroloss": b.zeroloss, "format": b.version}))


def compare(runs: list[Run], force: bool = False) -> list[Comparison]:
    """Each run after the first against the first: per frame size diffs, config, placement and host diffs."""
    if len(runs) < 2:
        raise ZeroLossError("compare needs two runs or more", "give two result files, or a campaign file with "
                            "two measured cases")
    check_hosts(runs, force)
    return [comparison(runs[0], r) for r in runs[1:]]


def exit_code(cmps: list[Comparison]) -> int:
    """2 when a frame size is slower beyond the spread in any comparison; 3 when one may be slower but cannot be
    judged (one search per size, or a size measured inconclusively); else 0."""
    diffs = [d for c in cmps for d in c.frames]
    if any(d.verdict == "slower" for d in diffs):
        return 2
    if any(d.verdict in ("unjudged", "inconclusive", "no-ndr") and (d.delta_pps is None or d.delta_pps < 0)
           for d in diffs):
        return 3
    return 0


def _v(v: object) -> str:
    """A setting's value in at most 60 characters."""
    s = ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _ndr(r: FrameRow | None) -> str:
    """A frame size's NDR cell: '-' when not measured, 'none' when no search found one."""
    return "-" if r is None else f"{r.ndr_pps:,.0f}" if r.found else "none"


def _spread(r: FrameRow | None) -> str:
    """A frame size's spread cell: max - min of the NDRs (and how many there were)."""
    if r is None:
        return "-"
    return f"{r.spread_pps:,.0f} ({len(r.ndrs)})" if r.spread_pps is not None else f"- ({len(r.ndrs)})"


def text(cmp: Comparison) -> str:
    """One comparison as text: the table per frame size, then what differed in the setup."""
    base, other = cmp.base, cmp.other
    rows = []
    for d in cmp.frames:
        rows.append([str(d.frame), _ndr(d.base), _ndr(d.other),
                     f"{d.delta_pps:+,.0f}" if d.delta_pps is not None else "-",
                     f"{d.delta_pct:+.2f}" if d.delta_pct is not None else "-",
                     f"{d.delta_line_pct:+.2f}" if d.delta_line_pct is not None else "-",
                     _spread(d.base), _spread(d.other), d.verdict, d.note])
    lines = [f"{other.label} against {base.label} (baseline): NDR per direction, frames/s",
             table(["frame B", "base NDR", "NDR", "Δ pps", "Δ %", "Δ line %", "base spread (NDRs)", "spread (NDRs)",
                    "verdict", "why"], rows, left=(0, 8, 9))]
    for title, key in (("settings", "config"), ("core placement and DUT", "placement"), ("host", "host"),
                       ("zeroloss", "versions")):
        diffs = cmp.diffs(key)
        if diffs:
            lines.append(f"{title} that differ:")
            lines += [f"  {k}: {_v(a)} -> {_v(b)}" for k, a, b in diffs]
        elif key in ("config", "host"):
            lines.append(f"{title}: the same")
    return "\n".join(lines)


def to_json(cmps: list[Comparison]) -> list[dict[str, Any]]:
    """The comparisons as `zeroloss compare --json` prints them."""

    def row(r: FrameRow | None) -> dict[str, Any] | None:
        return None if r is None else {"ndr_pps": r.ndr_pps, "ndrs_pps": list(r.ndrs), "line_rate_pct":
                                       r.line_rate_pct, "spread_pps": r.spread_pps, "resolution_pps": r.resolution_pps,
                                       "generator_bound": r.generator_bound}

    return [{"base": c.base.source, "other": c.other.source,
             "frames": [{"frame": d.frame, "base": row(d.base), "other": row(d.other), "delta_pps": d.delta_pps,
                         "delta_pct": d.delta_pct, "delta_line_rate_pct": d.delta_line_pct, "verdict": d.verdict,
                         "note": d.note} for d in c.frames],
             **{key: [{"key": k, "base": a, "other": b} for k, a, b in c.diffs(key)]
                for key in ("config", "placement", "host", "versions")}} for c in cmps]
