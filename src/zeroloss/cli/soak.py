"""`zeroloss trial --interval` (or -o, or --topology, or --lab): a fixed rate for a duration through any run target
(the bench's testpmd P2P and OVS topologies, a lab node), loss and rate per interval, loss events with their
ledgers, written to a soak file every interval (soakrun.soak)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from zeroloss.cli import autoingest
from zeroloss.cli.argtypes import check_frame
from zeroloss.cli.runflags import add_run_flag, run_overrides
from zeroloss.core.errors import ZeroLossError

if TYPE_CHECKING:
    from zeroloss.core.config import RunConfig

# the run settings `trial` takes as `run` does (the others through --set KEY=VALUE)
MAX_DURATION_S = 86400  # zlgen's longest trial (start's duration_s, gen/PROTOCOL.md)
RUN_FLAGS = ("topology", "bond", "firewall", "tunnel", "vnf_ring", "vnf", "cnf_launch", "vnf_link", "link_speed_gbps")


def add_flags(t: argparse.ArgumentParser, set_value) -> None:
    """The soak's flags of `trial`: the bench's topology and VNF as `run` takes them, and --set."""
    for name in RUN_FLAGS:
        add_run_flag(t, name, scope="soak")
    t.set_defaults(run_flag_names=RUN_FLAGS)
    t.add_argument("--set", action="append", type=set_value, metavar="KEY=VALUE",
                   help="soak: any run setting by its key, e.g. --set dut_rxq=2")


def is_soak(args: argparse.Namespace) -> bool:
    """Whether `trial` is a soak: an interval, a file, a lab, an OVS topology or a run setting asked for."""
    return bool(args.lab or args.interval is not None or args.output or args.set or run_overrides(args))


def _settings(args: argparse.Namespace) -> tuple[RunConfig, float]:
    """The soak's run settings (the trial's flags, the run flags, --set; a lab's) and its interval, checked."""
    from zeroloss.core import config as config_mod
    from zeroloss.targets.registry import check_cores  # the cores the settings' kind of DUT names

    if args.imix:
        raise ZeroLossError("--imix is not available in a soak (--interval, -o, --lab, --topology) yet",
                            "give --frame-size")
    check_frame(args.frame_size)
    if not 0 < args.duration <= MAX_DURATION_S:  # also refuses nan and inf
        raise ZeroLossError(f"--duration {args.duration:g} s must be above 0 and at most {MAX_DURATION_S:,} s")
    if not math.isfinite(args.rate[1]):
        raise ZeroLossError(f"--rate {args.rate[1]:g} is not a rate", "give frames/s (e.g. 1M) or a % of line rate")
    interval = args.interval if args.interval is not None else 1.0
    if not 0.1 <= interval <= args.duration:
        raise ZeroLossError(f"--interval {interval:g} s must be between 0.1 s and the duration ({args.duration:g} s)")
    if args.dut == "none" and not args.lab:
        raise ZeroLossError("a soak needs a DUT: --dut none wires zlgen to itself", "drop --dut none")
    overrides = {"frame_sizes": [args.frame_size], "flows": args.flows, "forward_mode": args.forward_mode,
                 "drain_ms": args.drain_ms, "bidirectional": not args.unidirectional, **run_overrides(args),
                 **dict(args.set or []), **({"link": args.link} if args.link else {})}
    if args.lab:
        overrides.update({"dut": "lab", "lab": args.lab})
    cfg = config_mod.load(None, overrides).effective()
    check_cores(cfg)
    return cfg, interval


def _out(args: argparse.Namespace) -> Path:
    """The soak file, its folder made (and a lab file read) before the bench is taken."""
    out = Path(args.output or f"results/soak-{time.strftime('%Y%m%d-%H%M%S')}.json")
    try:  # before the bench is taken
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ZeroLossError(f"cannot make the folder of the soak file {out}: {e.strerror or e}",
                            "give -o a path in a folder you can write") from None
    if args.lab:
        from zeroloss.drivers.lab.labfile import load

        load(args.lab)  # a broken lab file is one line before the bench is taken
    return out


def soak_trial(args: argparse.Namespace) -> int:
    """zeroloss trial as a soak: loss and rate every interval, loss events, the file written every interval."""
    from zeroloss.drivers.session import BENCH
    from zeroloss.results.fmt import soak_line, soak_table
    from zeroloss.results.soak import read as read_soak
    from zeroloss.runs.soak import soak, soak_target

    cfg, interval = _settings(args)
    out = _out(args)
    db = autoingest.database(args)
    warnings: list[str] = []

    def progress(row: dict) -> None:
        if args.json:
            return
        print(soak_line(row), flush=True)

    with BENCH:
        target = soak_target(cfg, args.frame_size, warnings.append)
        try:
            doc = soak(cfg, target, args.frame_size, args.rate, args.duration, interval, out, progress, warnings)
        except KeyboardInterrupt:
            print(f"zeroloss: interrupted; the intervals so far are in {out}", file=sys.stderr)
            return 130
        except ZeroLossError as e:
            raise ZeroLossError(f"{e} (intervals so far: {out})") from e
    rec = read_soak(doc, out)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        from zeroloss.results.soak import event_lines

        print(soak_table(doc))
        print("\n".join(event_lines(rec)))
        print(f"\nresult file: {out}\nreport: zeroloss report {out}; explain: zeroloss explain {out}")
    # lost frames or not; a soak file records no host: a bench soak is named after this host, a lab's after its node
    autoingest.store(db, out, node=autoingest.bench_node() if db and not args.lab else None)
    lost = sum(d.lost for d in rec.ends())
    return 0 if lost == 0 else 2
