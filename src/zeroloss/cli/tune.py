"""`zeroloss tune`: the closed loop (measure, diagnose, change one setting, keep it only when the NDR rises beyond
the spread), its table of steps and the final settings rendered for deployment."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroloss.cli import autoingest
from zeroloss.cli.progress import Event
from zeroloss.cli.runflags import add_run_flags, run_overrides
from zeroloss.core.errors import ZeroLossError
from zeroloss.report.docparts import Skipped, StepChange, StepDecision, StepStats
from zeroloss.results.campaigns import TuneRecord, TuneStep

if TYPE_CHECKING:
    from zeroloss.core.config import RunConfig
    from zeroloss.results.resultfile import ResultFile


def register(sub, set_value) -> None:
    """`zeroloss tune` and its flags (the run settings it takes as flags made from RunConfig's fields)."""
    t = sub.add_parser(
        "tune", help="find the settings that reach a zero-loss target: measure, diagnose, change one, keep what helps",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Starts from the given run settings (--config/--set, as zeroloss run), searches the NDR of every "
                    "frame size (at least 2 searches each, for the spread), takes the diagnosis of the failed "
                    "validation trials, changes the one setting the largest finding's remedy names (virtio ring, "
                    "RX queues, descriptors, PMD cores, rxq assignment, tx retries, socket memory, a meter), "
                    "measures again and keeps the change only when the NDR rose beyond the run-to-run spread. "
                    "Ends when every size meets --target, no remedy is left, or --budget is spent. Rates are "
                    "frames/s per direction; the target is % of line rate or frames/s. With --lab, the lab node's "
                    "OVS settings are changed with ovs-vsctl for each step and restored after it (needs "
                    "--allow-dut-changes).",
        epilog="Knobs the bench cannot change (isolcpus, C-states, 1 GB pages) are printed as advice from zeroloss "
               "host plan / host audit. The tune file is a campaign file: zeroloss report shows every step.")
    t.add_argument("--target", required=False, metavar="PCT%|PPS",
                   help="the NDR every frame size must reach: %% of line rate (e.g. 100%%) or frames/s (e.g. 1.2M)")
    t.add_argument("--config", metavar="FILE", help="YAML file of run settings to start from")
    t.add_argument("--set", action="append", type=set_value, metavar="KEY=VALUE", help="a run setting to start from")
    add_run_flags(t, ("lab", "allow_dut_changes", "frame_sizes", "trial_s", "validation_s", "granularity_pct",
                      "drain_ms"))  # the search's own settings, as run takes them
    t.add_argument("--budget", type=float, default=60.0, metavar="MIN",
                   help="stop after this many minutes of measuring (default 60)")
    t.add_argument("--steps", type=int, default=None, metavar="N",
                   help="try at most N changes after the baseline (default: no limit, --budget bounds the time)")
    t.add_argument("--noise", type=float, default=2.0, metavar="PCT",
                   help="smallest NDR change counted as an effect, %% of the NDR, when the spread is smaller "
                        "(default 2)")
    t.add_argument("--output", "-o", metavar="FILE", help="tune file (default results/tune-TIME.json)")
    autoingest.add_flag(t, "the tune file")
    t.add_argument("--resume", metavar="FILE", help="continue a cut tune from its file")
    t.add_argument("--json", action="store_true", help="print the tune section as JSON")
    t.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    t.set_defaults(func=cmd_tune)


def _start(args: argparse.Namespace) -> tuple[RunConfig | None, tuple[str, float] | None, Path]:
    """The settings to start from and the target (None, None with --resume: they are the tune file's), and the
    tune file's path; a broken lab file is named before the bench is taken."""
    from zeroloss.core import config as config_mod
    from zeroloss.runs.tune import loop
    from zeroloss.targets.registry import check_cores  # the cores the settings' kind of DUT names

    if args.resume:
        if args.target or args.config or args.set or args.output or args.steps is not None or run_overrides(args):
            raise ZeroLossError("--resume takes the target and settings from the tune file; give only the file")
        return None, None, Path(args.resume)
    if not args.target:
        raise ZeroLossError("zeroloss tune needs --target", "e.g. --target 100% or --target 1.2M")
    target = loop.parse_target(args.target)
    if args.budget <= 0 or not 0 <= args.noise <= 50 or (args.steps is not None and args.steps < 1):
        raise ZeroLossError("--budget must be more than 0 minutes, --steps at least 1 and --noise within 0..50 %")
    overrides = {**dict(args.set or []), **run_overrides(args)}
    # tune decides on NDRs: its runs skip latency vs load (4 more trials per search) unless --set asks for it
    overrides.setdefault("latency_loads", "none")
    base = config_mod.load(Path(args.config) if args.config else None, overrides)
    if base.lab and not base.allow_dut_changes:
        raise ZeroLossError("zeroloss tune changes the lab node's OVS settings (each restored after its step)",
                            "add --allow-dut-changes")
    if base.lab:  # a broken lab file is named before the bench is taken (it is not "the bench is in use")
        from zeroloss.drivers.lab.labfile import load as load_lab

        load_lab(base.lab)
    check_cores(base)
    return base, target, Path(args.output or f"results/tune-{time.strftime('%Y%m%d-%H%M%S')}.json")


def cmd_tune(args: argparse.Namespace) -> int:
    from zeroloss.cli.progress import Progress
    from zeroloss.drivers.dpdk import hugepages
    from zeroloss.drivers.session import BENCH, ResultLock
    from zeroloss.host import hostinfo
    from zeroloss.runs.run import Run, interrupted_state
    from zeroloss.runs.tune import loop
    from zeroloss.targets.registry import check_cores  # the cores the settings' kind of DUT names

    host = hostinfo.collect()
    base, target, path = _start(args)
    db = autoingest.database(args)
    progress = Progress(quiet=args.quiet)

    def run_case(name: str, cfg: RunConfig, rf: ResultFile) -> None:
        progress("case", {"name": name})
        with interrupted_state(rf):
            Run(cfg, rf, progress).execute()

    with ResultLock(path), BENCH:
        if base is None:
            cf = loop.resume(path, host)
        else:
            cf = loop.create(path, base.to_dict(), target, args.budget, args.noise, host, args.steps,
                             _node(base.lab) if base.lab else None)
        try:
            t = loop.run_tune(cf, host, run_case, lambda kind, info: _progress(args, kind, info),
                              hugepages_mb=int(sum(p.total * p.size_kb / 1024 for p in hugepages.pools())),
                              check=check_cores)
        except KeyboardInterrupt:
            cf.end("interrupted")
            print(f"zeroloss: interrupted; the steps so far are in {cf.path}; continue with: "
                  f"zeroloss tune --resume {cf.path}", file=sys.stderr)
            return 130
        except ZeroLossError as e:
            cf.end("failed")
            raise ZeroLossError(f"{e} (steps so far: {cf.path}; continue with: zeroloss tune --resume {cf.path})") \
                from e
    if args.json:
        print(json.dumps(t.to_json(), indent=1))
    else:
        print(story(t))
        print(f"\ntune file: {cf.path}\nHTML report: zeroloss report {cf.path}")
    autoingest.store(db, cf.path, args.quiet)  # the target met or not
    met = (t.stop or "").startswith("target met")
    return 0 if met else 2


def _node(lab_path: str) -> dict[str, Any]:
    """The lab node's OVS settings tune starts from, read over one SSH session."""
    from zeroloss.drivers.lab.labdut import LabDut
    from zeroloss.drivers.lab.labfile import load

    with LabDut(load(lab_path)) as dut:
        return dut.node_settings()


def _progress(args: argparse.Namespace, kind: str, info: dict[str, Any]) -> None:
    """One line on stderr per step measured and decided (runs/tune/loop.py's progress)."""
    if args.quiet:
        return
    step: TuneStep = Event.read(info).step
    if kind == "tune-measure":
        print(f"zeroloss tune: measuring {step.name}", file=sys.stderr, flush=True)
    elif kind == "tune-step":
        d = StepDecision.from_json(step.decision or {})
        print(f"zeroloss tune: {step.name}: {d.effect}{' (kept)' if step.kept else ' (reverted)'}: "
              f"{d.why}", file=sys.stderr, flush=True)


def _steps_table(t: TuneRecord) -> str:
    """One row per step: its change, the NDR per size (mean ± half the spread), its effect and whether it was kept."""
    from zeroloss.results.fmt import table

    frames = sorted({int(f) for s in t.steps for f in (s.stats or {})})
    rows = []
    for s in t.steps:
        st = s.stats or {}  # per size, decide.SizeStats as the tune file keeps it
        cells = []
        for f in frames:
            x = st.get(str(f))
            y = StepStats.from_json(x) if x else None
            cells.append(f"{y.mean:,.0f} ±{y.spread / 2:,.0f}" if y else "-")
        d = StepDecision.from_json(s.decision or {})
        c = None if s.change is None else StepChange.from_json(s.change)
        change = f"{c.key}: {c.old} -> {c.new}" if c else "as given"
        rows.append([s.name.split(":")[0], change, *cells, d.effect,
                     "kept" if s.kept else ("reverted" if s.decision else "")])
    return table(["step", "change", *(f"{f} B NDR pps" for f in frames), "effect", ""], rows)


def story(t: TuneRecord) -> str:
    """The steps as a table (NDR per size before and after, effect, kept), why it ended, the final settings
    rendered for deployment and the advice the bench cannot try."""
    from zeroloss.runs.tune.render import render, target_text, tuned_keys

    lines = [f"zeroloss tune to {target_text((t.target[0], t.target[1]))}: {len(t.steps)} step(s), "
             f"{t.spent_s / 60:.1f} min measuring", _steps_table(t)]
    for s in t.steps:
        if s.change and s.decision:
            lines.append(f"  {s.name}: {StepChange.from_json(s.change).finding}; "
                         f"{StepDecision.from_json(s.decision).why}")
    lines.append(f"ended: {t.stop or 'not yet'}")
    keys = tuned_keys(t)
    if keys:
        lines += ["", "settings kept (as ovs-vsctl commands):", render(keys, "ovs-vsctl"), "",
                  "as a TripleO environment:", render(keys, "tripleo"), "", "for the VNF's flavor / nova.conf:",
                  render(keys, "flavor")]
    else:
        lines.append("no setting was kept: the start settings stay")
    for x in map(Skipped.from_json, t.skipped):  # runs/tune/loop.py's {key, new, why}
        lines.append(f"not tried: {x.key}={x.new}: {x.why}")
    for a in t.advice:
        lines.append(f"advice: {a}")
    return "\n".join(lines)
