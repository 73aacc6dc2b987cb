"""The results history's benchmark (issue 40, closing note): `python -m zeroloss.studies.historybench`.

A synthetic history of 10,000 runs made from the real result files under results/ (every run file: its frame
sizes, trials and figures; each night's NDRs drawn around the file's own with its measured spread: the standard
deviation of its repeated searches, else of the runs of its case (its file name) in its series in results/, else
of its series' runs), on SQLite and on a temporary
PostgreSQL 15 (history/pgtemp.py, as the tests start it): 10 nodes, each running one of the files every night for
1,000 nights (the files with the most frame sizes first), node-00 5 % lower in its newest 3 nights. Printed side
by side:
- building it (each night's rows stored as ingest stores them, 500 files per transaction);
- ingest: every real run file ingested once more (read, extracted, stored: `history ingest`) into the 10,000-run
  history, per run and per 1,000 trials (then deleted: the history measured next is the 10,000 runs);
- `zeroloss history trend` and `check` (the CLI, a process each), every run of a series classified (--window 0)
  and its newest 200 (the default); the trend page (`trend --html`), its time and size;
then historydetect.py's figures: the runs jumpavg needs to flag a 3 % and a 5 % regression in three real series
of results/, and the nightly check's false alarms over 1,000 runs without one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import delete

from zeroloss.history import pgtemp
from zeroloss.history.db import Database, open_db
from zeroloss.history.extract import extract
from zeroloss.history.ingest import DOCS, ingest, store
from zeroloss.history.rows import DocRows, RunRows
from zeroloss.history.source import read_document
from zeroloss.results.records import RunRecord
from zeroloss.studies.historydetect import Spread, detect, detection_lines, false_alarms

START = datetime(2024, 3, 1, 1, 30)
STEP_PCT = 5.0  # node-00's drop in its newest STEP_NIGHTS nights
STEP_NIGHTS = 3
BATCH = 500


@dataclass
class Template:
    """A real run file: its record, its trials, and per frame size the relative spread of one search."""

    path: Path
    raw: dict[str, Any]
    record: RunRecord
    trials: int
    frames: int
    rel_sd: dict[str, float]


def _ndrs(rows: DocRows) -> Iterator[tuple[str, str, list[float]]]:
    """(series key, frame, NDRs of its searches) of every point of a document's rows."""
    for r in rows.runs:
        for series, p in r.points:
            vals = [float(v) for v in p.ndr_values or ([] if p.ndr_pps is None else [p.ndr_pps])]
            if vals:
                yield series.key, p.frame, vals


def templates(folder: Path) -> list[Template]:
    """Every run file under folder (recursively) with a measured NDR; most frame sizes first."""
    found = []
    for path in sorted(folder.rglob("*.json")):
        raw = json.loads(path.read_text())
        if not isinstance(raw, dict) or raw.get("format") != "zeroloss-result":
            continue
        rec = read_document(path)
        assert isinstance(rec, RunRecord)
        found.append((path, raw, rec, extract(rec, path, "bench")))
    runs_of: dict[Any, list[float]] = {}  # the run NDRs of each series, and of each case (file name) in it
    for path, *_, rows in found:
        for key, _, vals in _ndrs(rows):
            for k in (key, (key, path.name)):
                runs_of.setdefault(k, []).append(statistics.mean(vals))
    out = []
    for path, raw, rec, rows in found:
        rel = {}
        for key, frame, vals in _ndrs(rows):
            case = runs_of[(key, path.name)]
            same = vals if len(vals) > 1 else case if len(case) > 1 else runs_of[key]
            rel[frame] = statistics.stdev(same) / statistics.mean(same) if len(same) > 1 else 0.01
        if rel:
            trials = sum(len(s.trials) for s in rec.searches)
            out.append(Template(path, raw, rec, trials, len(rel), rel))
    return sorted(out, key=lambda t: (-t.frames, str(t.path)))


def _drawn(rnd: random.Random, level: float, sd: float) -> float:
    """An NDR drawn around level with that standard deviation, in whole frames/s and at least 1 % of the level (a
    spread of 30 % would draw a rate below zero once in 1,400 draws)."""
    return float(max(round(rnd.gauss(level, sd)), round(0.01 * level)))


def _night(base: DocRows, t: Template, node: int, night: int, factor: float,
           rnd: random.Random) -> tuple[DocRows, str]:
    """A node's night: the template's rows at that time, each search's NDR drawn anew; and its content hash."""
    when = START + timedelta(days=night)
    ident = hashlib.sha256(f"historybench {node} {night}".encode()).hexdigest()
    doc = replace(base.document, identity=ident, created=when, updated=when)
    runs = []
    for r in base.runs:
        points = []
        for series, p in r.points:
            vals = [float(v) for v in p.ndr_values or ([] if p.ndr_pps is None else [p.ndr_pps])]
            if not vals:
                points.append((series, p))
                continue
            m0, sd = statistics.mean(vals), t.rel_sd[p.frame]
            new = [_drawn(rnd, m0 * factor, sd * m0) for _ in vals]
            m = statistics.mean(new)
            points.append((series, replace(p, ndr_pps=m, ndr_values=new,
                                           ndr_sd=statistics.stdev(new) if len(new) > 1 else None,
                                           spread_pps=max(new) - min(new) if len(new) > 1 else None,
                                           pdr_pps=p.pdr_pps * m / m0 if p.pdr_pps else None)))
        label = f"{r.run.label}-n{night:04d}"
        runs.append(RunRows(replace(r.run, started=when, label=label), points, r.b2b, r.outages))
    return DocRows(doc, runs), ident


def build(db: Database, temps: list[Template], nodes: int, nights: int, seed: int = 5) -> float:
    """The synthetic history (module docstring); the seconds it took."""
    rnd = random.Random(seed)
    bases = [(temps[i % len(temps)], extract(temps[i % len(temps)].record, temps[i % len(temps)].path,
                                             f"node-{i:02d}")) for i in range(nodes)]
    start = time.perf_counter()
    todo = [(n, i) for n in range(nights) for i in range(nodes)]
    for k in range(0, len(todo), BATCH):
        with db.transaction() as conn:
            for night, i in todo[k:k + BATCH]:
                t, base = bases[i]
                factor = 1 - STEP_PCT / 100 if i == 0 and night >= nights - STEP_NIGHTS else 1.0
                rows, sha = _night(base, t, i, night, factor, rnd)
                store(conn, db.dialect, rows, sha, f"{t.path}#{night}")
    return time.perf_counter() - start


def _file(t: Template, when: datetime, folder: Path, rnd: random.Random) -> Path:
    """A copy of the template as a new night's file: its times moved, each search's NDR drawn anew."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
    searches = []
    for s in t.record.searches:
        ndr = s.result.ndr.rate_pps if s.result is not None else None
        if s.result is not None and ndr:
            sd = t.rel_sd.get(str(s.frame), 0.0) * ndr
            s = s.with_(result=s.result.with_(ndr=s.result.ndr.with_(rate_pps=_drawn(rnd, ndr, sd))))
        searches.append(s.to_json())
    path = folder / f"{t.path.stem}-{when:%Y%m%d}.json"
    path.write_text(json.dumps({**t.raw, "created": stamp, "updated": stamp, "searches": searches}))
    return path


def time_ingest(db: Database, temps: list[Template], nights: int, keep: bool = False) -> tuple[list[float], int]:
    """Every template ingested once more as a night after the history's last (node "ingest"); each file's seconds
    and the trials of them all. Unless keep, the files are deleted again afterwards (the history is the built one)."""
    rnd, secs, trials, paths = random.Random(9), [], 0, []
    with tempfile.TemporaryDirectory(prefix="zl-histbench-") as tmp:
        for k, t in enumerate(temps):
            path = _file(t, START + timedelta(days=nights + k), Path(tmp), rnd)
            got = ingest(db, path, "ingest")
            secs.append(got.seconds)
            trials += got.trials
            paths.append(str(path))
    if not keep:
        with db.transaction() as conn:
            conn.execute(delete(DOCS).where(DOCS.c.path.in_(paths)))
    return secs, trials


def _zeroloss() -> list[str]:
    exe = Path(sys.executable).with_name("zeroloss")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "zeroloss.cli"]


def time_cli(argv: list[str]) -> tuple[float, int, int]:
    """A `zeroloss` command in its own process: seconds (with the interpreter's start), exit code, bytes printed."""
    start = time.perf_counter()
    done = subprocess.run([*_zeroloss(), *argv], capture_output=True, timeout=3600, check=False)
    return time.perf_counter() - start, done.returncode, len(done.stdout)


@dataclass
class Figures:
    """One database's figures."""

    name: str
    build_s: float = 0.0
    ingest_s: tuple[float, ...] = ()
    ingest_trials: int = 0
    cli: dict[str, tuple[float, int, int]] | None = None
    page_bytes: int = 0


COMMANDS = {  # (label, argv after --db URL)
    "start: history check --help (no database)": ["history", "check", "--help"],
    "trend, every run classified (--window 0)": ["history", "trend", "--window", "0"],
    "trend, newest 200 per series (default)": ["history", "trend"],
    "check, every run classified (--window 0)": ["history", "check", "--window", "0"],
    "check, newest 200 per series (default)": ["history", "check"],
    "trend --html (the page)": ["history", "trend", "--html", "{page}"],
}


def measure(name: str, url: str, temps: list[Template], nodes: int, nights: int, folder: Path) -> Figures:
    """Build, ingest, trend and check on one database (module docstring)."""
    f = Figures(name)
    db = open_db(url)
    f.build_s = build(db, temps, nodes, nights)
    secs, f.ingest_trials = time_ingest(db, temps, nights)
    f.ingest_s = tuple(secs)
    db.engine.dispose()
    page = folder / f"trend-{name.split()[0].lower()}.html"
    f.cli = {}
    for label, argv in COMMANDS.items():
        db_arg = [] if "--help" in argv else ["--db", url]
        parts = argv[:2] + db_arg + [a.replace("{page}", str(page)) for a in argv[2:]]
        f.cli[label] = time_cli(parts)
    f.page_bytes = page.stat().st_size if page.exists() else 0
    return f


def side_by_side(figs: list[Figures], runs: int, series: int) -> list[str]:
    """The databases' figures in columns."""
    def row(label: str, cells: list[str]) -> str:
        return f"  {label:<44}" + "".join(f"{c:>22}" for c in cells)

    lines = ["", row(f"{runs:,} runs, {series} series", [f.name for f in figs])]
    lines.append(row("build (bulk, 500 files per transaction)", [f"{f.build_s:.1f} s" for f in figs]))
    lines.append(row(f"ingest per run ({len(figs[0].ingest_s)} real files)",
                     [f"{1000 * statistics.mean(f.ingest_s):.0f} ms ({1000 * min(f.ingest_s):.0f}-"
                      f"{1000 * max(f.ingest_s):.0f})" for f in figs]))
    lines.append(row("ingest per 1,000 trials",
                     [f"{1000 * sum(f.ingest_s) / max(f.ingest_trials, 1):.2f} s" for f in figs]))
    for label in COMMANDS:
        lines.append(row(label, [f"{f.cli[label][0]:.1f} s (exit {f.cli[label][1]})" if f.cli else "-"
                                 for f in figs]))
    lines.append(row("trend page size", [f"{f.page_bytes / 1e6:.1f} MB" for f in figs]))
    return lines


def spreads(temps: list[Template]) -> list[Spread]:
    """The detection study's real series: the metered pvp 64 B of bench --noisy (three searches a run, their
    spread), and the default p2p 1518 B, 1024 B and 64 B runs (one search a run, the spread of the series' runs in
    results/)."""
    meters = [t for t in temps if t.path.name == "meter-pvp-binary.json"]
    meter = max(meters, key=lambda t: len(t.record.searches))  # the one with the most searches (3)
    big = next(t for t in temps if t.frames >= 10)
    level = _level(meter, "64")
    out = [Spread("pvp 64 B, meter 30 kpps", level, meter.rel_sd["64"] * level, len(meter.record.searches),
                  _bracket(meter, "64"))]
    for frame in ("1518", "1024", "64"):
        level = _level(big, frame)
        out.append(Spread(f"p2p {frame} B, defaults", level, big.rel_sd[frame] * level, 1, _bracket(big, frame)))
    return out


def _bracket(t: Template, frame: str) -> float:
    """The widest NDR bracket of the file's searches at frame, frames/s (what ingest stores as its resolution)."""
    widths = [b for s in t.record.searches if str(s.frame) == frame and s.result and s.result.ndr.rate_pps
              and (b := s.result.ndr.bracket_pps) is not None]
    return max(widths, default=0.0)


def _level(t: Template, frame: str) -> float:
    vals = [float(s.result.ndr.rate_pps) for s in t.record.searches
            if str(s.frame) == frame and s.result and s.result.ndr and s.result.ndr.rate_pps]
    return statistics.mean(vals)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m zeroloss.studies.historybench", description=__doc__.split("\n")[0])
    p.add_argument("--results", type=Path, default=Path("results"), help="the real result files (default results/)")
    p.add_argument("--nodes", type=int, default=10)
    p.add_argument("--nights", type=int, default=1000)
    p.add_argument("--no-postgresql", action="store_true", help="SQLite only")
    p.add_argument("--no-detection", action="store_true", help="leave out the detection study")
    args = p.parse_args(argv)
    print(f"zeroloss history benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    temps = templates(args.results)
    used = [temps[i % len(temps)] for i in range(args.nodes)]
    series = sum(t.frames for t in used)
    print(f"{len(temps)} real run files under {args.results}/; the nodes run: "
          + ", ".join(f"{t.path.relative_to(args.results)} ({t.frames} sizes)" for t in used), flush=True)
    figs = []
    with tempfile.TemporaryDirectory(prefix="zl-histbench-") as tmp:
        figs.append(measure("SQLite", str(Path(tmp) / "history.sqlite"), temps, args.nodes, args.nights, Path(tmp)))
        print(f"SQLite done, load {os.getloadavg()[0]:.2f}", flush=True)
        if not args.no_postgresql and pgtemp.available():
            with pgtemp.running() as server, server.database() as url:
                figs.append(measure("PostgreSQL 15", url, temps, args.nodes, args.nights, Path(tmp)))
            print(f"PostgreSQL done, load {os.getloadavg()[0]:.2f}", flush=True)
    print("\n".join(side_by_side(figs, args.nodes * args.nights, series)), flush=True)
    if not args.no_detection:
        found = [detect(s, step) for s in spreads(temps) for step in (0.0, 3.0, 5.0)]
        alarms = [false_alarms(s) for s in spreads(temps)]
        print("\n".join(detection_lines(found, alarms)))
    print(f"\nended {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
