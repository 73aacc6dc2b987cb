"""`zeroloss lab`: an example lab file, and the check of one (`zeroloss trial --lab`, the soak, is cli/soak.py)."""

from __future__ import annotations

import argparse

from zeroloss.core.errors import ZeroLossError


def check_lab_file(path: str | None) -> None:
    """Checks a run's lab file before the bench is taken: a fault in it is one line naming the key, whoever holds
    the bench."""
    if path:
        from zeroloss.drivers.lab.labfile import load

        load(path)


def _cmd_lab(args: argparse.Namespace) -> int:
    from zeroloss.drivers.lab.labfile import EXAMPLE, load

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
