"""What the history tests share: counting rows, writing documents, and a soak document of the current format."""

from __future__ import annotations

import gzip
import json
import random
import statistics
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from zeroloss.history.db import Database
from zeroloss.history.models import B2b, Document, Outage, Point, Run, Series

REAL = Path(__file__).resolve().parent / "data" / "meter_pvp_v3.json.gz"  # test_history_trend's docstring
TABLES = {"documents": Document, "runs": Run, "series": Series, "points": Point, "b2b": B2b, "outages": Outage}


def counts(db: Database) -> dict[str, int]:
    with db.transaction() as conn:
        return {name: conn.execute(select(func.count()).select_from(m)).scalar_one() for name, m in TABLES.items()}


def read_doc(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def write_doc(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def soak_doc() -> dict[str, Any]:
    """A finished soak of format 2 with two loss events (the shape runs/soak.py writes)."""
    rows = [{"t_s": t, "state": "running",
             "directions": {"A->B": {"tx": 1000, "rx": 1000 - lost, "tx_pps": 1000, "rx_pps": 1000 - lost,
                                     "lost": lost, "short": short, "loss_pct": lost / 10}}}
            for t, lost, short in ((1.0, 0, 0), (2.0, 50, 50), (3.0, 0, 50), (4.0, 0, 50), (5.0, 20, 70))]
    return {"kind": "zeroloss-soak", "version": 2, "state": "complete", "target": "memif", "started_at": 1764370000.0,
            "frame": 64, "duration_s": 5.0, "interval_s": 1.0, "rate_pps": 1000.0, "line_rate_pps": 37202381.0,
            "line_rate_pct": 0.003, "intervals": rows, "warnings": [], "placement": {},
            "result": {"directions": [{"tx_side": 0, "rx_side": 1, "tx": 5000, "rx": 4930, "lost": 70}]},
            "loss_events": [{"start_s": 1.0, "end_s": 2.0, "first": 1, "last": 1, "lost": 50,
                             "directions": {"A->B": 50}},
                            {"start_s": 4.0, "end_s": 5.0, "first": 4, "last": 4, "lost": 20,
                             "directions": {"A->B": 20}}]}


def real_level() -> tuple[float, float]:
    """The mean and sample standard deviation of REAL's three NDRs."""
    ndrs = [s["result"]["ndr"]["rate_pps"] for s in read_doc(REAL)["searches"]]
    return statistics.mean(ndrs), statistics.stdev(ndrs)


def synthetic_history(folder: Path, runs: int, step_at: int | None, step: float, seed: int = 7) -> list[Path]:
    """runs result files a day apart made from REAL, each search's NDR drawn with REAL's level and spread; from
    step_at on, the level is lower by step (a share)."""
    doc, (mean, sd) = read_doc(REAL), real_level()
    rnd, start, out = random.Random(seed), datetime(2026, 10, 1, 2, 0), []
    for i in range(runs):
        level = mean * (1 - step) if step_at is not None and i >= step_at else mean
        when = (start + timedelta(days=i)).strftime("%Y-%m-%dT%H:%M:%S+0000")
        searches = [{**s, "result": {**s["result"], "ndr": {**s["result"]["ndr"],
                                                              "rate_pps": float(round(rnd.gauss(level, sd)))}}}
                    for s in doc["searches"]]
        out.append(write_doc(folder / f"night-{i:03d}.json",
                             {**doc, "created": when, "updated": when, "searches": searches}))
    return out
