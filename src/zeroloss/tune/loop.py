"""`zeroloss tune`: measure, read the failed validation's diagnosis, change the one setting its first remedy names,
measure again, keep the change only when the NDR rose beyond the run-to-run spread; until the target is met, no
remedy is left or the budget is spent.

The tune file is a campaign file (every step a case with its whole run document, so report, compare and explain
read it) with a `tune` section: the target, the steps with their change and decision, the settings kept so far.
Every decision follows from what is stored, so a cut tune resumes where it stopped (the cut step's finished
trials are replayed).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..campaign import CampaignFile
from ..config import RunConfig, load, stored
from ..errors import ZeroLossError
from ..results.records import Ceiling
from ..results.resultfile import ResultFile
from . import decide as dec
from . import knobs, labknobs
from .render import target_text
from .render import tuned_keys as tuned_keys  # loop.tuned_keys: the CLI's and the tests' name

TUNE = "tune"
MIN_REPEAT = 2  # a spread needs two searches per size


def parse_target(text: str) -> tuple[str, float]:
    """'100%' / '99.5%' (of line rate) or a rate in frames/s ('1.2M', '500k', '250000')."""
    t = str(text).strip()
    try:
        if t.endswith("%"):
            v = float(t[:-1])
            if not 0 < v <= 100:
                raise ValueError
            return "pct", v
        mult = {"k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6}.get(t[-1:], 1.0)
        v = float(t[:-1] if mult != 1.0 else t) * mult
        if v <= 0:
            raise ValueError
        return "pps", v
    except ValueError:
        raise ZeroLossError(f"--target {text!r} is not a % of line rate (e.g. 100%) or a rate (e.g. 1.2M pps)") \
            from None


def create(path: Path, base: dict[str, Any], target: tuple[str, float], budget_min: float, noise_pct: float,
           host: dict, max_steps: int | None = None, node: dict | None = None) -> CampaignFile:
    """A new tune file. On a lab node (base has a lab file) node is what LabDut.node_settings read there: the
    ladders start from its values, and each step's changes go to the node through dut_set."""
    if base.get("lab"):
        if not base.get("allow_dut_changes"):
            raise ZeroLossError("zeroloss tune changes the lab node's OVS settings (each restored after its step)",
                                "add --allow-dut-changes")
        if node is None:
            raise ZeroLossError("zeroloss tune on a lab node needs the node's settings read first")
    settings = {**base, "repeat": max(int(base.get("repeat", 1) or 1), MIN_REPEAT)}
    load(None, settings)  # checked now: one line before anything starts
    spec = {"name": TUNE, "description": f"zeroloss tune to {target_text(target)}", "base": settings}
    cf = CampaignFile.create(path, spec, host, {})
    cf.doc[TUNE] = {"target": list(target), "budget_min": budget_min, "max_steps": max_steps,
                    "noise_pct": noise_pct, "spent_s": 0.0,
                    "base": settings, "current": settings, "current_step": None, "steps": [], "stop": None,
                    "skipped": [], "advice": []}
    if base.get("lab"):
        cf.doc[TUNE]["node"] = node
    cf.save()
    return cf


def resume(path: Path, host: dict) -> CampaignFile:
    cf = CampaignFile.load(path, host)
    if TUNE not in cf.doc:
        raise ZeroLossError(f"{path} is a campaign file, not a tune file",
                            "continue it with zeroloss campaign --resume")
    cf.doc["state"] = "running"
    return cf


def _run_doc(cf: CampaignFile, name: str) -> dict:
    return next(c["run"] for c in cf.doc["cases"] if c["name"] == name)


def _stats(cf: CampaignFile, name: str) -> dict[int, dec.SizeStats]:
    return dec.stats(_run_doc(cf, name))


def _stats_dict(s: dict[int, dec.SizeStats]) -> dict[str, dict]:
    return {str(f): dataclasses.asdict(x) for f, x in sorted(s.items())}


def run_tune(cf: CampaignFile, host: dict, run_case: Callable[[str, RunConfig, ResultFile], None],
             progress: Callable[[str, dict], None], cpus: int | None = None, hugepages_mb: int = 0,
             check: Callable[[RunConfig], None] = lambda cfg: None) -> dict:
    """Runs the loop to its end; returns the tune section. check(cfg) raises ZeroLossError for a setting this
    host cannot run (cores taken): such a candidate is skipped with its reason."""
    t = cf.doc[TUNE]
    target = (t["target"][0], float(t["target"][1]))
    cpus = cpus or os.cpu_count() or 1
    if not t["steps"]:
        t["steps"].append({"name": "step 0: as given", "change": None, "settings": t["base"]})
    while True:
        step = t["steps"][-1]
        if "decision" not in step:
            _measure(cf, step, host, run_case, progress)
            after = _stats(cf, step["name"])
            step["stats"] = _stats_dict(after)
            if step["change"] is None:
                step["decision"] = {"effect": "baseline", "keep": True, "why": "the settings as given", "per_size": {}}
            else:
                d = dec.decide(_stats(cf, t["current_step"]), after, t["noise_pct"])
                step["decision"] = dataclasses.asdict(d) if dataclasses.is_dataclass(d) else dict(d)
            if step["decision"]["keep"]:
                t["current"], t["current_step"] = step["settings"], step["name"]
            cf.save()
            progress("tune-step", {"step": step, "target": target})
        stop = _next(cf, t, target, cpus, hugepages_mb, check)
        cf.save()
        if stop:
            t["stop"] = stop
            cf.doc["state"] = "complete"
            cf.save()
            return t


# settings zlgen's own ceiling (measured on zlgen alone, nothing in between) depends on: a step changing none of
# them reuses the ceilings the step it starts from measured, and only the DUT is measured again
CEILING_KEYS = frozenset({"frame_sizes", "flows", "flow_fields", "bidirectional", "topology", "bond", "link",
                          "dut_rxq", "gen_lcores", "pace_gap_us", "ring_depth_log2", "vlan"})


def _measure(cf: CampaignFile, step: dict, host: dict, run_case, progress) -> None:
    started = time.monotonic()
    cfg = load(None, step["settings"])
    new = not any(c["name"] == step["name"] for c in cf.doc["cases"])
    rf = cf.case(step["name"], cfg, None, host)
    t = cf.doc[TUNE]
    if rf is not None and new and step["change"] and step["change"]["key"] not in CEILING_KEYS \
            and t["current_step"]:
        stored_ceilings = _run_doc(cf, t["current_step"]).get("ceilings") or {}
        for f, c in stored_ceilings.items():  # the generator's own ceilings stay; the DUT's MRR changed
            if c.get("how") == "loopback":
                rf.set_ceiling(int(f), Ceiling.from_json({k: v for k, v in c.items() if not k.startswith("mrr_")}))
    progress("tune-measure", {"step": step})
    try:
        if rf is not None:
            run_case(step["name"], stored(rf.run.config), rf)
    finally:
        cf.doc[TUNE]["spent_s"] += time.monotonic() - started
        cf.save()


def _next(cf: CampaignFile, t: dict, target: tuple[str, float], cpus: int, hugepages_mb: int,
          check: Callable[[RunConfig], None]) -> str | None:
    """Appends the next step, or returns why the tune ends."""
    current = _run_doc(cf, t["current_step"])
    st = dec.stats(current)
    findings = dec.findings_of(current)
    cfg = load(None, t["current"])
    node = labknobs.Node.from_dict(t["node"]) if t.get("node") else None
    t["advice"] = knobs.advice(findings, cfg, set(node.vnf_ports) if node else None)
    below = {f: s for f, s in st.items() if not dec.target_met(s, target)}
    if not below:
        return f"target met: every frame size reached {target_text(target)}"
    if dec.generator_bound(st, target):
        return ("the generator is the limit: the sizes below the target are generator-bound on this bench, so no "
                "DUT setting can show a gain (measure on a host with more cores or a real NIC)")
    if t["spent_s"] >= t["budget_min"] * 60:
        return f"budget spent ({t['spent_s'] / 60:.1f} of {t['budget_min']:g} min)"
    changes = sum(1 for s in t["steps"] if s["change"])
    if t.get("max_steps") is not None and changes >= t["max_steps"]:
        return f"step limit reached ({changes} change{'s' if changes != 1 else ''} tried, --steps {t['max_steps']})"
    tried = {(s["change"]["key"], _hashable(s["change"]["new"])) for s in t["steps"] if s["change"]}
    tried |= {(k, _hashable(v)) for k, v in t["base"].items()}
    skipped_now = labknobs.skipped(findings, node) if node else []
    found = (labknobs.candidates(findings, cfg, node, tried) if node
             else knobs.candidates(findings, cfg, tried, cpus, hugepages_mb))
    for c in found:
        settings = labknobs.with_sets(t["current"], c.sets) if c.sets else {**t["current"], c.key: c.new}
        try:
            new_cfg = load(None, settings)
            check(new_cfg)
        except ZeroLossError as e:
            skipped_now.append({"key": c.key, "new": c.new, "why": e.message})
            continue
        change = dataclasses.asdict(c)
        t["skipped"] += [s for s in skipped_now if s not in t["skipped"]]
        t["steps"].append({"name": f"step {len(t['steps'])}: {c.key}={c.new}", "change": change,
                           "settings": settings})
        return None
    t["skipped"] += [s for s in skipped_now if s not in t["skipped"]]
    if not findings:
        return "no remedy left: the failed trials name no cause a setting answers"
    return "no remedy left: every setting the diagnosis names was tried, or this host cannot run it"


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v
