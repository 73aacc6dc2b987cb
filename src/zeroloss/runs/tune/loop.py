"""`zeroloss tune`: measure, read the failed validation's diagnosis, change the one setting its first remedy names,
measure again, keep the change only when the NDR rose beyond the run-to-run spread; until the target is met, no
remedy is left or the budget is spent.

The tune file is a campaign file (every step a case with its whole run document, so report, compare and explain
read it) with a `tune` section: the target, the steps with their change and decision, the settings kept so far.
Every decision follows from what is stored, so a cut tune resumes where it stopped (the cut step's finished
trials are replayed). The loop keeps the section as a TuneRecord: each change makes the next record (`with_`), which
CampaignFile.set_tune stores and CampaignFile.save writes.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.config import RunConfig, load, stored
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame, key, order
from zeroloss.results.campaigns import TuneRecord, TuneStep
from zeroloss.results.records import Ceiling, RunRecord
from zeroloss.results.resultfile import ResultFile
from zeroloss.targets import registry

from ..campaign import CampaignFile
from . import advice, knobs, labknobs
from . import decide as dec
from .render import target_text
from .render import tuned_keys as tuned_keys  # loop.tuned_keys: the CLI's and the tests' name

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


@dataclass(frozen=True, kw_only=True)
class _Base(Record):
    """What create reads of the settings a tune starts from (the rest stays in extra)."""

    lab: Json = None
    allow_dut_changes: Json = None
    repeat: Json = 1


@dataclass(frozen=True, kw_only=True)
class _Changed(Record):
    """A step's change as the tune file keeps it (knobs.Change's JSON): the setting and the value tried."""

    key: str = ""
    new: Json = None


def create(path: Path, base: JsonObject, target: tuple[str, float], budget_min: float, noise_pct: float,
           host: JsonObject, max_steps: int | None = None, node: JsonObject | None = None) -> CampaignFile:
    """A new tune file. On a lab node (base has a lab file) node is what LabDut.node_settings read there: the
    ladders start from its values, and each step's changes go to the node through dut_set."""
    b = _Base.from_json(base)
    if b.lab:
        if not b.allow_dut_changes:
            raise ZeroLossError("zeroloss tune changes the lab node's OVS settings (each restored after its step)",
                                "add --allow-dut-changes")
        if node is None:
            raise ZeroLossError("zeroloss tune on a lab node needs the node's settings read first")
    settings = {**base, "repeat": max(int(b.repeat or 1), MIN_REPEAT)}
    registry.load(None, settings)  # checked now (with its kind of DUT): one line before anything starts
    spec = {"name": "tune", "description": f"zeroloss tune to {target_text(target)}", "base": settings}
    cf = CampaignFile.create(path, spec, host, {})
    cf.set_tune(TuneRecord(target=tuple(target), budget_min=budget_min, max_steps=max_steps, noise_pct=noise_pct,
                           spent_s=0.0, base=settings, current=settings, current_step=None, steps=(), stop=None,
                           skipped=(), advice=(), node=node if b.lab else None))
    cf.save()
    return cf


def resume(path: Path, host: JsonObject) -> CampaignFile:
    """A cut tune file to continue (its state running again)."""
    cf = CampaignFile.load(path, host)
    if cf.tune is None:
        raise ZeroLossError(f"{path} is a campaign file, not a tune file",
                            "continue it with zeroloss campaign --resume")
    cf.set_state("running")
    return cf


def tune_of(cf: CampaignFile) -> TuneRecord:
    """The tune section of a tune file."""
    t = cf.tune
    if t is None:
        raise ZeroLossError(f"{cf.path} is a campaign file, not a tune file")
    return t


def _run(cf: CampaignFile, name: str | None) -> RunRecord:
    """The run of a step that was measured."""
    run = None if name is None else cf.run_of(name)
    if run is None:
        raise ZeroLossError(f"{cf.path}: the tune names step {name!r}, which has no run", "the file is damaged")
    return run


def _stats_json(s: dict[Frame, dec.SizeStats]) -> dict[str, JsonObject]:
    return {str(f): dataclasses.asdict(x) for f, x in sorted(s.items(), key=lambda x: order(x[0]))}


def _decision_json(d: dec.Decision) -> JsonObject:
    """A decision as the tune file keeps it (per_size keyed by the frame size as text)."""
    return {**dataclasses.asdict(d), "per_size": {str(f): dict(v) for f, v in d.per_size.items()}}


Progress = Callable[[str, dict[str, Any]], None]


def run_tune(cf: CampaignFile, host: JsonObject, run_case: Callable[[str, RunConfig, ResultFile], None],
             progress: Progress, cpus: int | None = None, hugepages_mb: int = 0,
             check: Callable[[RunConfig], None] = lambda cfg: None) -> TuneRecord:
    """Runs the loop to its end; returns the tune section. check(cfg) raises ZeroLossError for a setting this
    host cannot run (cores taken): such a candidate is skipped with its reason."""
    t = tune_of(cf)
    target = (str(t.target[0]), float(t.target[1]))
    cpus = cpus or os.cpu_count() or 1
    if not t.steps:
        t = t.with_(steps=(TuneStep(name="step 0: as given", change=None, settings=t.base),))
        cf.set_tune(t)
    while True:
        step = t.steps[-1]
        if step.decision is None:
            t = _measure(cf, t, step, host, run_case, progress)
            t = _decided(cf, t, step)
            cf.save()
            progress("tune-step", {"step": t.steps[-1], "target": target})
        t, stop = _next(cf, t, target, cpus, hugepages_mb, check)
        cf.set_tune(t)
        cf.save()
        if stop:
            t = t.with_(stop=stop)
            cf.set_tune(t)
            cf.set_state("complete")
            cf.save()
            return t


def _decided(cf: CampaignFile, t: TuneRecord, step: TuneStep) -> TuneRecord:
    """The tune with its last step measured and decided (decide.py's rule); a kept step's settings become the
    current ones. Stored in cf (not saved)."""
    after = dec.stats(_run(cf, step.name))
    if step.change is None:
        decision: JsonObject = {"effect": "baseline", "keep": True, "why": "the settings as given", "per_size": {}}
    else:
        decision = _decision_json(dec.decide(dec.stats(_run(cf, t.current_step)), after, t.noise_pct))
    done = step.with_(stats=_stats_json(after), decision=decision)
    t = t.with_(steps=(*t.steps[:-1], done))
    if done.kept:
        t = t.with_(current=done.settings, current_step=done.name)
    cf.set_tune(t)
    return t


# settings zlgen's own ceiling (measured on zlgen alone, nothing in between) depends on: a step changing none of
# them reuses the ceilings the step it starts from measured, and only the DUT is measured again
CEILING_KEYS = frozenset({"frame_sizes", "flows", "flow_fields", "bidirectional", "topology", "bond", "link",
                          "dut_rxq", "gen_lcores", "pace_gap_us", "ring_depth_log2", "vlan"})


def _generator_ceiling(c: Ceiling) -> Ceiling:
    """The generator's own ceiling without the DUT's MRR measured beside it (the next step measures that again)."""
    return Ceiling.from_json({k: v for k, v in c.to_json().items() if not k.startswith("mrr_")})


def _measure(cf: CampaignFile, t: TuneRecord, step: TuneStep, host: JsonObject,
             run_case: Callable[[str, RunConfig, ResultFile], None], progress: Progress) -> TuneRecord:
    """Runs the step's case (or the rest of it, when cut); the measuring time is added to spent_s and saved, also
    when the run is cut. Returns the tune with that time."""
    started = time.monotonic()
    cfg = load(None, step.settings or {})
    new = not cf.has_case(step.name)
    rf = cf.case(step.name, cfg, None, host)
    if rf is not None and new and step.change and _Changed.from_json(step.change).key not in CEILING_KEYS \
            and t.current_step:
        for f, c in (_run(cf, t.current_step).ceilings or {}).items():  # the generator's own ceilings stay
            if c.how == "loopback":
                rf.set_ceiling(key(f), _generator_ceiling(c))
    progress("tune-measure", {"step": step})
    try:
        if rf is not None:
            run_case(step.name, stored(rf.run.config), rf)
    finally:
        t = t.with_(spent_s=t.spent_s + (time.monotonic() - started))
        cf.set_tune(t)
        cf.save()
    return t


def _next(cf: CampaignFile, t: TuneRecord, target: tuple[str, float], cpus: int, hugepages_mb: int,
          check: Callable[[RunConfig], None]) -> tuple[TuneRecord, str | None]:
    """The tune with the next step appended, or with why it ends (the tune, the reason)."""
    current = _run(cf, t.current_step)
    st = dec.stats(current)
    findings = dec.findings_of(current)
    cfg = load(None, t.current or {})
    node = labknobs.Node.from_dict(t.node) if t.node else None
    t = t.with_(advice=tuple(advice.advice(findings, cfg, set(node.vnf_ports) if node else None)))
    below = {f: s for f, s in st.items() if not dec.target_met(s, target)}
    if not below:
        return t, f"target met: every frame size reached {target_text(target)}"
    if dec.generator_bound(st, target):
        return t, ("the generator is the limit: the sizes below the target are generator-bound on this bench, so no "
                   "DUT setting can show a gain (measure on a host with more cores or a real NIC)")
    if t.spent_s >= t.budget_min * 60:
        return t, f"budget spent ({t.spent_s / 60:.1f} of {t.budget_min:g} min)"
    changes = sum(1 for s in t.steps if s.change)
    if t.max_steps is not None and changes >= t.max_steps:
        return t, f"step limit reached ({changes} change{'s' if changes != 1 else ''} tried, --steps {t.max_steps})"
    tried = {(c.key, _hashable(c.new)) for c in (_Changed.from_json(s.change) for s in t.steps if s.change)}
    tried |= {(k, _hashable(v)) for k, v in (t.base or {}).items()}
    skipped_now = labknobs.skipped(findings, node) if node else []
    found = (labknobs.candidates(findings, cfg, node, tried) if node
             else knobs.candidates(findings, cfg, tried, cpus, hugepages_mb))
    current_settings = t.current or {}
    for c in found:
        settings = (labknobs.with_sets(current_settings, c.sets) if c.sets
                    else {**current_settings, c.key: c.new})
        try:
            check(registry.load(None, settings))
        except ZeroLossError as e:
            skipped_now.append({"key": c.key, "new": c.new, "why": e.message})
            continue
        step = TuneStep(name=f"step {len(t.steps)}: {c.key}={c.new}", change=dataclasses.asdict(c),
                        settings=settings)
        return t.with_(skipped=_merged(t.skipped, skipped_now), steps=(*t.steps, step)), None
    t = t.with_(skipped=_merged(t.skipped, skipped_now))
    if not findings:
        return t, "no remedy left: the failed trials name no cause a setting answers"
    return t, "no remedy left: every setting the diagnosis names was tried, or this host cannot run it"


def _merged(skipped: tuple[Any, ...], now: list[JsonObject]) -> tuple[Any, ...]:
    """The candidates skipped so far, with those of this step not named before."""
    return (*skipped, *(s for s in now if s not in skipped))


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v
