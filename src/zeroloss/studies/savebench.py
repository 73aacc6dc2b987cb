"""What saving a trial costs, side by side in one run: the result file written whole after every trial (the
writer before the journal: json.dumps(indent=1), fsync, rename) against one journal line (results/journal.py).

The trials are a stored result file's (tests/fixtures/result_v2.json.gz by default: PVP trials with every
stage's counters, ledger and diagnosis), replayed into one search until it holds N trials. At each N the cost of
saving trial N is timed (median of --reps), with the bytes that save writes.

    python -m zeroloss.studies.savebench [--points 1,100,200,1000] [--reps 5] [--source FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from zeroloss.core.codec import Record
from zeroloss.core.fileio import write_text_atomic
from zeroloss.results.records import RunRecord, TrialEntry
from zeroloss.results.resultfile import ResultFile, new_document

FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "result_v2.json.gz"


@dataclass(frozen=True, kw_only=True)
class SaveCost(Record):
    """The cost of saving trial N: each writer's median time (ms) and the bytes it wrote."""

    trials: int
    old_ms: float
    new_ms: float
    old_bytes: int
    new_bytes: int


def _trials(source: Path) -> tuple[RunRecord, list[TrialEntry]]:
    data = source.read_bytes()
    rec = RunRecord.from_json(json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data))
    return rec, [t for s in rec.searches for t in s.trials]


def _old_save(path: Path, doc: dict) -> int:
    """The writer before the journal: the whole document, indented, fsynced, renamed. Bytes written."""
    text = json.dumps({**doc, "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1)
    write_text_atomic(path, text)
    return len(text.encode())


def measure(points: list[int], reps: int, source: Path, folder: Path) -> list[SaveCost]:
    """Per N: the old and the new writer's time to save trial N, and the bytes each writes for it."""
    base, trials = _trials(source)
    rows = []
    for n in points:
        stored = [trials[i % len(trials)].with_(index=i).to_json() for i in range(n - 1)]
        search = {"frame": 64, "repeat": 0, "trials": stored, "result": None, "link": "pvp"}
        doc = {**new_document(base.config, base.host), "searches": [search]}
        entry = trials[(n - 1) % len(trials)].with_(index=n - 1)
        old_s, new_s = [], []
        old_bytes = new_bytes = 0
        for r in range(reps):
            old_doc = {**doc, "searches": [{**search, "trials": [*stored, entry.to_json()]}]}
            t0 = time.perf_counter()
            old_bytes = _old_save(folder / f"old-{n}-{r}.json", old_doc)
            old_s.append(time.perf_counter() - t0)
            path = folder / f"new-{n}-{r}.json"
            rf = ResultFile(path, json.loads(json.dumps(doc)))
            rf.save()
            jpath = path.with_name(path.name + ".journal")
            t0 = time.perf_counter()
            rf.add_trial(64, 0, entry)
            new_s.append(time.perf_counter() - t0)
            new_bytes = jpath.stat().st_size
            for p in folder.glob(f"*-{n}-{r}.json*"):
                p.unlink()
        rows.append(SaveCost(trials=n, old_ms=1e3 * statistics.median(old_s), new_ms=1e3 * statistics.median(new_s),
                             old_bytes=old_bytes, new_bytes=new_bytes))
    return rows


def render(rows: list[SaveCost], source: Path) -> str:
    out = [f"zeroloss save cost per trial, {time.strftime('%Y-%m-%d %H:%M')}, trials of {source.name} "
           f"(median of the reps at each N)",
           f"{'trial N':>8} {'whole file ms':>14} {'journal ms':>11} {'ratio':>7} {'whole file bytes':>17} "
           f"{'journal bytes':>14}"]
    for r in rows:
        out.append(f"{r.trials:>8,} {r.old_ms:>14.2f} {r.new_ms:>11.2f} {r.old_ms / r.new_ms:>6.1f}x "
                   f"{r.old_bytes:>17,} {r.new_bytes:>14,}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m zeroloss.studies.savebench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", default="1,100,200,1000", help="trial counts N to time the save of trial N at")
    ap.add_argument("--reps", type=int, default=5, help="saves timed at each N (the median is shown)")
    ap.add_argument("--source", type=Path, default=FIXTURE, help="a result file whose trials are replayed")
    ap.add_argument("--json", action="store_true", help="the rows as JSON")
    args = ap.parse_args(argv)
    try:
        points = [int(x) for x in args.points.split(",") if x.strip()]
        if not points or min(points) < 1 or args.reps < 1:
            raise ValueError
    except ValueError:
        print("savebench: --points takes whole numbers >= 1 (e.g. 1,100,200,1000), --reps >= 1", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="zl-savebench-", dir=".") as d:
        rows = measure(points, args.reps, args.source, Path(d))
    print(json.dumps([r.to_json() for r in rows], indent=1) if args.json else render(rows, args.source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
