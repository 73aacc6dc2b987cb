"""`zeroloss bench --search`: the search strategies side by side on the same bench paths.

Strategies: `binary` (zeroloss's binary search: short trials, then validation at the final trial
duration), `mlr` (MLRsearch: initial trials, then final trials) and `rfc2544` (the same binary search
with every trial at the final trial duration, as RFC 2544 §26.1 and most testers run it). So MLRsearch
is compared both with our cheaper binary search and with the classic one at equal final trial duration.
An entry may add run settings for itself (`mlr:mlr_duration_sum_s=15`), so goals can be compared too.
For each case (a topology and frame size) and each repeat, one run per strategy, the order rotating
per repeat, so that the host's noise falls on all alike. Per case and strategy: trial-seconds and
wall time per search, the share of generator failures among all trials and the spread of the NDRs,
(max - min) / mean. Every run's result file is kept.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from zeroloss.core.codec import Record
from zeroloss.core.config import RunConfig, load, setting
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.search.trials import GEN_FAIL
from zeroloss.host.hostinfo import collect
from zeroloss.results.fmt import table
from zeroloss.results.records import SearchEntry
from zeroloss.results.resultfile import ResultFile
from zeroloss.runs.run import Run

STRATEGIES = ("binary", "mlr", "rfc2544")
CASES = (("p2p", 64), ("p2p", 1518), ("p2p", 9000), ("pvp", 64))


@dataclass
class Tally:
    """One strategy's searches of one case."""

    ndrs: list[float]
    trial_s: list[float]
    wall_s: list[float]
    trials: int = 0
    gen_failures: int = 0

    def add(self, search: SearchEntry) -> None:
        """One finished search of a result file."""
        assert search.result is not None
        self.ndrs.append(search.result.ndr.rate_pps or 0.0)
        self.trial_s.append(sum(x.duration_s for x in search.trials))
        self.wall_s.append(search.wall_s or 0.0)
        self.trials += len(search.trials)
        self.gen_failures += sum(x.verdict == GEN_FAIL for x in search.trials)

    @property
    def spread(self) -> float | None:
        found = [v for v in self.ndrs if v]
        return (max(found) - min(found)) / statistics.mean(found) if len(found) > 1 else None


@dataclass(frozen=True, kw_only=True)
class StrategyCase(Record):
    """One case and strategy as the document holds it: per search its NDR, trial-seconds and wall time."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"spread"})

    topology: str = ""
    frame: int = 0
    strategy: str = ""
    ndrs: tuple[float, ...] = ()
    trial_seconds: tuple[float, ...] = ()
    wall_s: tuple[float, ...] = ()
    trials: int = 0
    generator_failures: int = 0
    spread: float | None = None


@dataclass(frozen=True, kw_only=True)
class SearchReport(Record):
    """The document --json prints (and render reads: SearchReport.from_json of it)."""

    cases: tuple[StrategyCase, ...] = ()
    repeats: int = 0
    trial_s: float = 0.0
    validation_s: float = 0.0
    granularity_pct: float = 0.0
    strategies: tuple[str, ...] = ()
    out_dir: str = ""
    finished: str = ""
    interrupted: bool = False


def parse_strategies(text: str) -> list[str]:
    """'binary,mlr,mlr:mlr_duration_sum_s=15' -> the same entries, in the given order, each once. An entry is a
    strategy's name, then any run settings for it alone as :KEY=VALUE (YAML values), so one strategy can run
    beside itself with other goals. ValueError names the fault."""
    entries = [x.strip() for x in text.split(",") if x.strip()]
    if not entries:
        raise ValueError("no strategy given")
    for entry in entries:
        name = strategy_name(entry)
        if name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r} (known: {', '.join(STRATEGIES)})")
        strategy_settings(entry)
    dup = sorted({x for x in entries if entries.count(x) > 1})
    if dup:
        raise ValueError(f"{dup[0]} is given twice")
    return entries


def strategy_settings(entry: str) -> dict[str, object]:
    """The run settings an entry adds: 'mlr:mlr_duration_sum_s=15' -> {'mlr_duration_sum_s': 15}."""
    try:
        return dict(setting(part, f"{entry}, setting") for part in entry.split(":")[1:])
    except ZeroLossError as e:
        raise ValueError(str(e)) from None


def strategy_name(entry: str) -> str:
    """'mlr:mlr_duration_sum_s=15' -> 'mlr'."""
    return entry.split(":")[0].strip()


def _search_and_trial(strategy: str, trial_s: float, validation_s: float) -> tuple[str, float]:
    """A bench strategy's --search and its (initial) trial duration."""
    if strategy == "rfc2544":
        return "binary", validation_s  # every trial at the final trial duration
    return strategy, trial_s


def _config(entry: str, topo: str, frame: int, trial_s: float, validation_s: float,
            granularity_pct: float) -> RunConfig:
    """One entry's run settings for one case: its search and trial durations, then its own settings."""
    search, trial = _search_and_trial(strategy_name(entry), trial_s, validation_s)
    return load(None, {"topology": topo, "frame_sizes": [frame], "search": search, "trial_s": trial,
                       "validation_s": validation_s, "granularity_pct": granularity_pct, **strategy_settings(entry)})


def parse_cases(text: str) -> list[tuple[str, int]]:
    """'p2p:64,pvp:64' -> [('p2p', 64), ('pvp', 64)]."""
    out = []
    for part in text.split(","):
        topo, _, size = part.strip().partition(":")
        out.append((topo, int(size)))
    return out


def search_bench(cases: list[tuple[str, int]], repeats: int, trial_s: float, validation_s: float,
                 granularity_pct: float, out_dir: Path, json_out: bool = False,
                 strategies: list[str] | None = None) -> Iterator[str]:
    """Runs the comparison and yields report lines as results arrive."""
    strategies = list(strategies or STRATEGIES)
    for topo, frame in cases:  # every case's settings are checked before anything is written
        for strategy in strategies:
            _config(strategy, topo, frame, trial_s, validation_s, granularity_pct)
    out_dir.mkdir(parents=True, exist_ok=True)
    host = collect()
    tallies: dict[tuple[str, int, str], Tally] = {}
    rfc = f" (rfc2544: every trial {validation_s:g} s)" if "rfc2544" in map(strategy_name, strategies) else ""
    head = (f"zeroloss bench --search: {', '.join(strategies)}; {repeats} search(es) each per case, trial "
            f"{trial_s:g} s{rfc}, final trial (validation) {validation_s:g} s, "
            f"granularity/width {granularity_pct:g} %; result files in {out_dir}")
    if json_out:
        print(head, file=sys.stderr, flush=True)
    else:
        yield head
    width = max(len(x) for x in strategies)
    cut = False
    try:
        for topo, frame in cases:
            for rep in range(repeats):
                k = rep % len(strategies)
                order = strategies[k:] + strategies[:k]  # who goes first rotates
                for strategy in order:
                    cfg = _config(strategy, topo, frame, trial_s, validation_s, granularity_pct)
                    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in strategy)
                    rf = ResultFile.create(out_dir / f"{topo}-{frame}-{slug}-{rep}.json", cfg.to_dict(), host)
                    Run(cfg, rf, lambda *_: None).execute()
                    (s,) = rf.run.searches
                    t = tallies.setdefault((topo, frame, strategy), Tally([], [], []))
                    t.add(s)
                    line = (f"  {topo} {frame} B {strategy:<{width}} #{rep + 1}: NDR {t.ndrs[-1]:,.0f} pps, "
                            f"{len(s.trials)} trials, {t.trial_s[-1]:.1f} trial-s, {t.wall_s[-1]:.1f} s")
                    if json_out:  # stdout is the one JSON document; a long bench still shows how far it is
                        print(line, file=sys.stderr, flush=True)
                    else:
                        yield line
    except KeyboardInterrupt:
        cut = True  # the searches that finished still make a table; the cut one's file says interrupted
    report = [StrategyCase(topology=topo, frame=frame, strategy=name, ndrs=tuple(t.ndrs),
                           trial_seconds=tuple(t.trial_s), wall_s=tuple(t.wall_s), trials=t.trials,
                           generator_failures=t.gen_failures, spread=t.spread)
              for (topo, frame, name), t in tallies.items()]
    report.sort(key=lambda c: (cases.index((c.topology, c.frame)), strategies.index(c.strategy)))
    doc = SearchReport(cases=tuple(report), repeats=repeats, trial_s=trial_s, validation_s=validation_s,
                       granularity_pct=granularity_pct, strategies=tuple(strategies), out_dir=str(out_dir),
                       finished=time.strftime("%Y-%m-%dT%H:%M:%S"), interrupted=cut)
    yield from _ending(doc, json_out)
    if cut:
        raise KeyboardInterrupt


def _ending(doc: SearchReport, json_out: bool) -> Iterator[str]:
    """The bench's last lines: the JSON document, or the table, saying so when Ctrl-C cut the bench."""
    if json_out:
        yield json.dumps(doc.to_json(), indent=2)
        return
    yield ""
    if doc.interrupted:
        yield (f"interrupted: the table holds the {sum(len(c.ndrs) for c in doc.cases)} searches that "
               f"finished (result files in {doc.out_dir})")
    yield from render(doc)


def render(doc: SearchReport) -> Iterator[str]:
    """The comparison table of a finished bench (the document --json prints): per case and strategy the means
    per search, the generator failures and NDR spread over all its searches, and MLRsearch's trial-seconds
    as a share of each other strategy's."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f} %"

    rows = []
    by_case: dict[tuple[str, int], dict[str, StrategyCase]] = {}
    for c in doc.cases:
        by_case.setdefault((c.topology, c.frame), {})[c.strategy] = c
    for (topo, frame), entries in by_case.items():
        mlr = entries.get("mlr")
        for name, c in entries.items():
            ratio = "-" if mlr is None or name == "mlr" else \
                f"{statistics.mean(mlr.trial_seconds) / statistics.mean(c.trial_seconds):.2f}"
            rows.append([f"{topo} {frame} B", name, f"{c.trials / len(c.ndrs):.1f}",
                         f"{statistics.mean(c.trial_seconds):.1f}", ratio, f"{statistics.mean(c.wall_s):.1f}",
                         pct(c.generator_failures / max(1, c.trials)), pct(c.spread),
                         f"{statistics.mean(c.ndrs):,.0f}"])
    yield "per search (means): trials, trial-seconds, wall time; over all searches: generator failures, NDR spread"
    yield table(["case", "search", "trials", "trial-s", "mlr trial-s / this", "wall s", "gen. fail.", "spread",
                 "NDR pps"], rows)
    yield ("spread: (max - min) / mean of the NDRs of the repeated searches; generator failures: share of all "
           "trials (retries included) where zlgen missed the requested rate by more than 5 %; rfc2544: the binary "
           "search with every trial at the final trial duration; NAME:KEY=VALUE: that strategy with that run setting")
