"""`zeroloss bench --search`: the binary search and MLRsearch side by side on the same bench paths.

For each case (a topology and frame size) and each repeat, one run per strategy, the strategies
alternating (which one goes first alternates too), so that the host's noise falls on both alike.
Per case and strategy: trial-seconds and wall time per search, the share of generator failures
among all trials, and the spread of the NDRs, (max - min) / mean. Every run's result file is kept.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .config import RunConfig
from .fmt import table
from .hostinfo import collect
from .results.resultfile import ResultFile
from .runner import Run
from .search.trials import GEN_FAIL

STRATEGIES = ("binary", "mlr")
CASES = (("p2p", 64), ("p2p", 1518), ("p2p", 9000), ("pvp", 64))


@dataclass
class Tally:
    """One strategy's searches of one case."""

    ndrs: list[float]
    trial_s: list[float]
    wall_s: list[float]
    trials: int = 0
    gen_failures: int = 0

    @property
    def spread(self) -> float | None:
        found = [v for v in self.ndrs if v]
        return (max(found) - min(found)) / statistics.mean(found) if len(found) > 1 else None


def parse_cases(text: str) -> list[tuple[str, int]]:
    """'p2p:64,pvp:64' -> [('p2p', 64), ('pvp', 64)]."""
    out = []
    for part in text.split(","):
        topo, _, size = part.strip().partition(":")
        out.append((topo, int(size)))
    return out


def search_bench(cases: list[tuple[str, int]], repeats: int, trial_s: float, validation_s: float,
                 granularity_pct: float, out_dir: Path, json_out: bool = False) -> Iterator[str]:
    """Runs the comparison and yields report lines as results arrive."""
    for topo, frame in cases:  # every case's settings are checked before anything is written
        RunConfig(topology=topo, frame_sizes=[frame], trial_s=trial_s, validation_s=validation_s,
                  granularity_pct=granularity_pct, search="mlr")
    out_dir.mkdir(parents=True, exist_ok=True)
    host = collect()
    tallies: dict[tuple[str, int, str], Tally] = {}
    if not json_out:
        yield (f"zeroloss bench --search: binary vs MLRsearch, {repeats} search(es) each per case, trial "
               f"{trial_s:g} s, final trial (validation) {validation_s:g} s, granularity/width {granularity_pct:g} %; "
               f"result files in {out_dir}")
    for topo, frame in cases:
        for rep in range(repeats):
            order = STRATEGIES if rep % 2 == 0 else STRATEGIES[::-1]
            for strategy in order:
                cfg = RunConfig(topology=topo, frame_sizes=[frame], search=strategy, trial_s=trial_s,
                                validation_s=validation_s, granularity_pct=granularity_pct)
                rf = ResultFile.create(out_dir / f"{topo}-{frame}-{strategy}-{rep}.json", cfg.to_dict(), host)
                Run(cfg, rf, lambda *_: None).execute()
                (s,) = rf.doc["searches"]
                t = tallies.setdefault((topo, frame, strategy), Tally([], [], []))
                t.ndrs.append(s["result"]["ndr"]["rate_pps"] or 0.0)
                t.trial_s.append(sum(x["duration_s"] for x in s["trials"]))
                t.wall_s.append(s["wall_s"])
                t.trials += len(s["trials"])
                t.gen_failures += sum(x["verdict"] == GEN_FAIL for x in s["trials"])
                if not json_out:
                    yield (f"  {topo} {frame} B {strategy:<6} #{rep + 1}: NDR {t.ndrs[-1]:,.0f} pps, "
                           f"{len(s['trials'])} trials, {t.trial_s[-1]:.1f} trial-s, {t.wall_s[-1]:.1f} s")
    rows, report = [], []
    for topo, frame in cases:
        b, m = tallies[(topo, frame, "binary")], tallies[(topo, frame, "mlr")]
        for name, t in (("binary", b), ("mlr", m)):
            report.append({"topology": topo, "frame": frame, "strategy": name, "ndrs": t.ndrs,
                           "trial_seconds": t.trial_s, "wall_s": t.wall_s, "trials": t.trials,
                           "generator_failures": t.gen_failures, "spread": t.spread})
        ratio = statistics.mean(m.trial_s) / statistics.mean(b.trial_s)
        wall = statistics.mean(m.wall_s) / statistics.mean(b.wall_s)

        def pct(x: float | None) -> str:
            return "-" if x is None else f"{100 * x:.1f} %"

        rows.append([f"{topo} {frame} B",
                     f"{statistics.mean(b.trial_s):.1f}", f"{statistics.mean(m.trial_s):.1f}", f"{ratio:.2f}",
                     f"{statistics.mean(b.wall_s):.1f}", f"{statistics.mean(m.wall_s):.1f}", f"{wall:.2f}",
                     pct(b.gen_failures / max(1, b.trials)), pct(m.gen_failures / max(1, m.trials)),
                     pct(b.spread), pct(m.spread),
                     f"{statistics.mean(b.ndrs):,.0f}", f"{statistics.mean(m.ndrs):,.0f}"])
    if json_out:
        yield json.dumps({"cases": report, "repeats": repeats, "trial_s": trial_s, "validation_s": validation_s,
                          "granularity_pct": granularity_pct, "finished": time.strftime("%Y-%m-%dT%H:%M:%S")},
                         indent=2)
        return
    yield ""
    yield "per search (means): trial-seconds, wall time; over all searches: generator failures, NDR spread"
    yield table(["case", "binary trial-s", "mlr trial-s", "mlr/binary", "binary wall s", "mlr wall s",
                 "mlr/binary", "binary gen. fail.", "mlr gen. fail.", "binary spread", "mlr spread",
                 "binary NDR", "mlr NDR"], rows)
    yield ("spread: (max - min) / mean of the NDRs of the repeated searches; generator failures: share of all "
           "trials (retries included) where zlgen missed the requested rate by more than 5 %")
