"""`zeroloss trial --lab`: a fixed rate on a lab's generator ports through the node it describes (soak)."""

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
