"""`zeroloss bench --tune`: zeroloss tune from a bad PVP (the VNF's ring at 256) beside the best setting the
vnf-ring campaign finds by trying every ring, with the same trial settings: the NDR per frame size at the tune's
start and end, the campaign's best and their ratio, the steps and minutes each took."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.fmt import table
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import read_json, records
from zeroloss.runs.tune import decide

BAD = {"topology": "pvp", "vnf": "process", "vnf_ring": 256}


def _zeroloss(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", *args], capture_output=True, text=True)


def _sets(settings: dict[str, Any]) -> list[str]:
    return [x for k, v in settings.items() for x in ("--set", f"{k}={v}")]


def _campaign(path: Path) -> CampaignRecord:
    """A campaign or tune file the bench wrote, as records."""
    return records(CampaignRecord, read_json(path, "campaign file"), path)


def _run(camp: CampaignRecord, name: str | None) -> RunRecord:
    """The run of a case the bench measured."""
    case = None if name is None else camp.case(name)
    if case is None or case.run is None:
        raise ZeroLossError(f"campaign {camp.name}: no run of case {name!r}")
    return case.run


def tune_bench(frames: list[int], trial_s: float, validation_s: float, granularity: float, budget_min: float,
               out_dir: Path, json_out: bool = False) -> list[str]:
    """Runs zeroloss tune from the bad PVP and the vnf-ring campaign; their NDRs side by side (lines to print)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    common = {"trial_s": trial_s, "validation_s": validation_s, "granularity_pct": granularity, "repeat": 2,
              "frame_sizes": "[" + ",".join(map(str, frames)) + "]"}
    tune_file, camp_file = out_dir / "tune.json", out_dir / "vnf-ring.json"
    started = time.monotonic()
    r = _zeroloss("tune", "--target", "100%", *_sets({**BAD, **common}), "--budget", str(budget_min),
                  "-o", str(tune_file), "-q", "--json")
    if r.returncode not in (0, 2):
        raise ZeroLossError(f"zeroloss tune failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    tune_min = (time.monotonic() - started) / 60
    started = time.monotonic()
    r = _zeroloss("campaign", "vnf-ring", *_sets({"vnf": "process", **common}), "-o", str(camp_file), "-q")
    if r.returncode != 0:
        raise ZeroLossError(f"the vnf-ring campaign failed: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    camp_min = (time.monotonic() - started) / 60
    tuned, camp = _campaign(tune_file), _campaign(camp_file)
    t = tuned.tune
    if t is None:
        raise ZeroLossError(f"{tune_file} is not a tune file")
    start = decide.stats(_run(tuned, tuned.cases[0].name))
    end = decide.stats(_run(tuned, t.current_step))
    best: dict[int, tuple[float, str]] = {}
    for c in camp.measured():
        run = _run(camp, c.name)
        for f, s in decide.stats(run).items():
            if f not in best or s.mean > best[f][0]:
                best[f] = (s.mean, f"ring {run.config['vnf_ring']}")
    current, base = t.current or {}, t.base or {}
    rows = []
    kept = {k: v for k, v in current.items() if base.get(k) != v}
    sizes: dict[Any, dict[str, Any]] = {}
    doc: dict[str, Any] = {"tune_steps": len(t.steps), "tune_min": tune_min, "campaign_cases": len(camp.cases),
                           "campaign_min": camp_min, "stop": t.stop, "kept": kept, "sizes": sizes}
    for f in sorted(start):
        b = best.get(f, (0.0, "-"))
        ratio = end[f].mean / b[0] if b[0] else float("nan")
        sizes[f] = {"start": start[f].mean, "end": end[f].mean, "best": b[0], "best_setting": b[1],
                    "end_vs_best": ratio}
        rows.append([f"{f}", f"{start[f].mean:,.0f}", f"{end[f].mean:,.0f} ±{end[f].spread / 2:,.0f}",
                     f"{end[f].mean / start[f].mean:.2f}" if start[f].mean else "-", f"{b[0]:,.0f} ({b[1]})",
                     f"{ratio:.2f}"])
    if json_out:
        return [json.dumps(doc, indent=2)]
    return [f"zeroloss tune from PVP with the VNF's ring at 256 (target 100 %): {len(t.steps)} step(s) in "
            f"{tune_min:.1f} min, kept {kept or 'nothing'}; ended: {t.stop}",
            f"vnf-ring campaign (rings 256, 1024, 4096, same trial settings): {len(camp.cases)} runs in "
            f"{camp_min:.1f} min",
            table(["frame B", "start NDR", "tune end NDR", "end/start", "campaign best NDR", "tune/best"], rows),
            f"files: {tune_file}, {camp_file}"]
