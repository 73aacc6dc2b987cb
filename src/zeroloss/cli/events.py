"""`zeroloss events`: frames lost and outage (ms) while the DUT changes under a fixed-rate load (runs/events.py)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from zeroloss.cli import autoingest
from zeroloss.cli.argtypes import number, rate, whole_number
from zeroloss.cli.progress import Event
from zeroloss.cli.runflags import add_run_flags, run_overrides
from zeroloss.core.errors import ZeroLossError

if TYPE_CHECKING:
    from zeroloss.core.config import RunConfig
    from zeroloss.runs.events import Plan

RUN_FLAGS = ("flows", "topology", "bond", "firewall", "tunnel", "vnf_ring", "vnf", "cnf_launch", "vnf_link", "lab",
             "allow_dut_changes", "forward_mode", "drain_ms", "trial_s", "validation_s", "granularity_pct",
             "link_speed_gbps")


def _settings(args: argparse.Namespace) -> tuple[RunConfig, Plan]:
    """The run settings at the one frame size and the plan of events, checked (a broken lab file named before the
    bench is taken)."""
    from zeroloss.cli.lab import check_lab_file
    from zeroloss.core import config as config_mod
    from zeroloss.runs.events import Plan, check

    overrides = run_overrides(args)
    overrides.update(dict(args.set or []))
    if "frame_sizes" in dict(args.set or []):
        raise ZeroLossError("events run at one frame size: --set frame_sizes is not taken", "give --frame-size BYTES")
    overrides["frame_sizes"] = [args.frame_size]
    cfg = config_mod.load(Path(args.config) if args.config else None, overrides)
    names = args.event or ["all"]
    if "all" in names:  # what the settings' kind of DUT makes of it (a lab: the events its file has commands for)
        from zeroloss.targets.registry import Events, kind_of

        events = kind_of(cfg).events
        names = list(events.chosen(cfg)) if isinstance(events, Events) else []  # none: check() says why
    plan = Plan(events=tuple(dict.fromkeys(names)), repeat=args.repeat, load_pct=args.load, duration_s=args.duration,
                t_event_s=args.at, t_undo_s=args.undo_at if args.undo_at is not None else 2 * args.at,
                rate_pps=args.rate, ndr_from=args.ndr_from, baseline=not args.no_baseline)
    check(cfg, plan)
    check_lab_file(cfg.lab)
    return cfg, plan


def _path(args: argparse.Namespace) -> Path:
    """The events file, its folder made before the bench is taken."""
    path = Path(args.output or f"results/events-{time.strftime('%Y%m%d-%H%M%S')}.json")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ZeroLossError(f"cannot make the folder of the events file {path}: {e.strerror or e}",
                            "give -o a path in a folder you can write") from None
    return path


def _progress(args: argparse.Namespace) -> Callable[[str, dict], None]:
    """One line on stderr per quick search and per trial done (none with --json or --quiet)."""
    def progress(kind: str, data: dict) -> None:
        if args.json or args.quiet:
            return
        ev = Event.read(data)
        if kind == "search":
            print(f"quick NDR search at {ev.frame} B (top {ev.max_rate_pps:,.0f} pps)", file=sys.stderr,
                  flush=True)
        elif kind == "done":
            t = ev.trial
            where = f", {t.where}" if t.where else ""
            print(f"  {t.event} {t.repeat}: lost {t.lost:,} frames, outage {t.outage_ms:,.1f} ms{where}",
                  file=sys.stderr, flush=True)

    return progress


def _cmd_events(args: argparse.Namespace) -> int:
    from zeroloss.drivers.session import BENCH, ResultLock
    from zeroloss.host import hostinfo
    from zeroloss.results.events import table, to_json_summary
    from zeroloss.runs.events import EventsRun

    cfg, plan = _settings(args)
    path = _path(args)
    db = autoingest.database(args)
    with ResultLock(path), BENCH:
        run = EventsRun(cfg, plan, path, hostinfo.collect(), _progress(args),
                        warn=lambda w: print(f"warning: {w}", file=sys.stderr))
        try:
            rec = run.execute()
        except KeyboardInterrupt:
            print(f"zeroloss: interrupted; the finished trials are in {path}; every process started was stopped "
                  "and every change undone", file=sys.stderr)
            return 130
        except ZeroLossError as e:
            raise ZeroLossError(f"{e} (trials so far: {path})") from e
    if args.json:
        print(to_json_summary(rec, str(path)))
    else:
        print(table(rec))
        for w in rec.warnings:
            print(f"warning: {w}", file=sys.stderr)
        print(f"\nevents file: {path}")
    autoingest.store(db, path, args.quiet)
    return 0


def register(sub, set_value) -> None:
    """Add `events` to the main parser's subcommands."""
    from zeroloss.results.events import EVENTS

    e = sub.add_parser(
        "events", help="frames lost and outage (ms) while the DUT changes (bond failover, PMD mask, restarts...)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Per event and repeat, one fixed-rate trial at --load % of the NDR (--ndr-from a result file, "
                    "or a quick search first; or --rate) with 10 ms interval counters; the event is applied at --at "
                    "seconds and undone at --undo-at, and every stage's counters are read around the trial. Prints "
                    "per event the frames lost and the outage in ms (lost frames at the offered rate) as mean "
                    "(min … max), the span of the loss on the timeline and the hop that lost them. A baseline "
                    "repeat without any change comes first. The events file is written after every trial.",
        epilog="events:\n" + "\n".join(f"  {k}: {v}" for k, v in EVENTS.items())
        + "\nlab mode (--lab FILE --allow-dut-changes): every event through the node's own commands; bond-down/up "
          "on the bond a generator port is cabled to; ovs-restart and vnf-restart run the lab file's dut.ovs.restart "
          "and dut.vnfs.0.restart; --event all there: the events the lab file has commands for, no bond events")
    e.add_argument("--event", action="append", choices=[*EVENTS, "all"], metavar="NAME",
                   help="an event (repeatable), or all (default: every event this topology can have)")
    e.add_argument("--repeat", type=whole_number(1, 1000), default=3, metavar="N",
                   help="trials per event (default 3)")
    e.add_argument("--load", type=number, default=50.0, metavar="PCT", help="the trials' rate in %% of the NDR "
                                                                              "(default 50)")
    e.add_argument("--rate", type=rate, default=None, metavar="PPS", help="the trials' rate per direction instead "
                                                                           "of a load of the NDR")
    e.add_argument("--ndr-from", metavar="RESULT.json", help="the NDR at the frame size from a zeroloss run result "
                                                              "file (default: a quick search first)")
    e.add_argument("--duration", type=number, default=10.0, metavar="S", help="each trial's TX time (default 10)")
    e.add_argument("--at", type=number, default=3.0, metavar="S", help="when the event is applied (default 3)")
    e.add_argument("--undo-at", type=number, default=None, metavar="S",
                   help="when it is undone (default twice --at)")
    e.add_argument("--no-baseline", action="store_true", help="no repeat without an event")
    e.add_argument("--frame-size", type=int, default=64, metavar="BYTES", help="frame size (default 64)")
    e.add_argument("--config", metavar="FILE", help="YAML file of run settings (flags override it)")
    e.add_argument("--set", action="append", type=set_value, metavar="KEY=VALUE", help="any run setting by its key")
    add_run_flags(e, RUN_FLAGS)
    e.add_argument("--output", "-o", metavar="FILE", help="events file (default results/events-TIME.json)")
    autoingest.add_flag(e, "the events file")
    e.add_argument("--json", action="store_true", help="print the summary and each trial's figures as JSON")
    e.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    e.set_defaults(func=_cmd_events)

