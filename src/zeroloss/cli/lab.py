"""`zeroloss trial --lab`: a fixed rate on a lab's generator ports through the node it describes (soak); `zeroloss lab`:
an example lab file, and the check of one."""

from __future__ import annotations

import argparse
import json
import sys

from zeroloss.cli.argtypes import check_frame
from zeroloss.errors import ZeroLossError


def lab_trial(args: argparse.Namespace) -> int:
    """zeroloss trial --lab: a fixed rate for a duration on the lab's ports, loss and rate per interval (soak)."""
    import time
    from pathlib import Path

    from zeroloss.fmt import soak_line, soak_table
    from zeroloss.lab.labfile import load
    from zeroloss.lab.labrun import soak
    from zeroloss.session import BENCH

    if args.imix:
        raise ZeroLossError("--imix is not available with --lab yet", "give --frame-size")
    check_frame(args.frame_size)
    if args.duration <= 0:
        raise ZeroLossError("--duration must be more than 0 seconds")
    interval = args.interval if args.interval is not None else 1.0
    if not 0.1 <= interval <= args.duration:
        raise ZeroLossError(f"--interval {interval:g} s must be between 0.1 s and the duration ({args.duration:g} s)")
    kind, value = args.rate
    lab = load(args.lab)
    out = Path(args.output or f"results/soak-{time.strftime('%Y%m%d-%H%M%S')}.json")

    def progress(row: dict) -> None:
        if not args.json:
            print(soak_line(row), flush=True)

    with BENCH:
        try:
            doc = soak(lab, value if kind == "pps" else None, value if kind == "pct" else None, args.frame_size,
                       args.duration, interval, lab.flows or args.flows, out, progress, drain_ms=args.drain_ms)
        except KeyboardInterrupt:
            print(f"zeroloss: interrupted; the intervals so far are in {out}", file=sys.stderr)
            return 130
        except ZeroLossError as e:
            raise ZeroLossError(f"{e} (intervals so far: {out})") from e
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(soak_table(doc))
        print(f"\nresult file: {out}")
    lost = sum(d["lost"] for d in doc["result"]["directions"])
    return 0 if lost == 0 else 2


def check_lab_file(path: str | None) -> None:
    """Checks a run's lab file before the bench is taken: a fault in it is one line naming the key, whoever holds
    the bench."""
    if path:
        from zeroloss.lab.labfile import load

        load(path)


def _cmd_lab(args: argparse.Namespace) -> int:
    from zeroloss.lab.labfile import EXAMPLE, load

    if args.example:
        print(EXAMPLE, end="")
        return 0
    if args.check:
        lab = load(args.check)
        pairs = len(lab.ports) // 2
        print(f"{args.check}: ok: {len(lab.ports)} generator ports in {pairs} pair(s), {len(lab.vnfs)} VNF(s), "
              f"the node reached as `ssh {lab.dut.target}` (not contacted)")
        return 0
    raise ZeroLossError("zeroloss lab needs --example or --check FILE", "zeroloss lab --example > lab.yaml")


def register(sub) -> None:
    """Add `lab` (--example, --check FILE) to the main parser's subcommands."""
    p = sub.add_parser("lab", help="lab mode's file: print a commented example, or check one (docs/lab.md)",
                       description="A lab file describes a compute node zeroloss did not build, the generator ports "
                                   "cabled to it and the traffic (docs/lab.md); run --lab, trial --lab, tune --lab "
                                   "and bench --lab read it.")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--example", action="store_true", help="print a commented example lab file")
    what.add_argument("--check", metavar="FILE", help="check FILE as a run would (schema and consistency; "
                                                      "nothing is contacted) and exit 0, or 1 with the fault")
    p.set_defaults(func=_cmd_lab)
