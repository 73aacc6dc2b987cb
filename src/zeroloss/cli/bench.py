"""`zeroloss bench`: the study a flag picks (STUDIES, in the order they win when several are given; zlgen against
testpmd txonly without one) and each study's runner, which hands back the lines to print. Errors a user can cause
are ZeroLossError, printed by cli.main as one line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from zeroloss.core.errors import ZeroLossError


def _folder(kind: str) -> Path:
    """A study's folder of result files: results/bench-KIND-TIME."""
    return Path(f"results/bench-{kind}-{time.strftime('%Y%m%d-%H%M%S')}")


def _lab(args: argparse.Namespace) -> list[str]:
    from zeroloss.drivers.lab.labfile import load
    from zeroloss.studies.labbench import bench_lab, table

    lab = load(args.lab)
    r = bench_lab(lab, readings=args.readings,
                  progress=lambda m: None if args.json else print(m, file=sys.stderr, flush=True))
    return [json.dumps(r, indent=2)] if args.json else [table(r, lab.dut.target)]


def _tune(args: argparse.Namespace) -> list[str]:
    from zeroloss.studies.tunebench import tune_bench

    return tune_bench(args.frames, args.trial, args.validation, args.granularity, args.budget, _folder("tune"),
                      json_out=args.json)


def _neutron(args: argparse.Namespace) -> list[str]:
    from zeroloss.studies import neutronbench

    try:
        parts = neutronbench.parse_parts(args.parts)
    except ValueError as e:
        raise ZeroLossError(f"--parts '{args.parts}': {e}", f"use some of {', '.join(neutronbench.PARTS)}") \
            from None
    return neutronbench.neutron_bench(parts, args.trial, args.validation, args.granularity, args.budget,
                                      Path(args.dir) if args.dir else _folder("neutron"), json_out=args.json)


def _vnf(args: argparse.Namespace) -> list[str]:
    from zeroloss.studies.vnfbench import vnf_bench

    return vnf_bench(args.frames, args.trial, args.validation, args.granularity, _folder("vnf"), json_out=args.json)


def _search(args: argparse.Namespace) -> list[str]:
    from zeroloss.studies.searchbench import parse_cases, parse_strategies, search_bench

    args.cases = args.cases or "p2p:64,p2p:1518,p2p:9000,pvp:64"
    try:
        cases = parse_cases(args.cases)
    except ValueError:
        raise ZeroLossError(f"--cases '{args.cases}' is not TOPOLOGY:SIZE,... (e.g. p2p:64,pvp:64)") from None
    try:
        strategies = parse_strategies(args.strategies)
    except ValueError as e:
        raise ZeroLossError(f"--strategies '{args.strategies}': {e}") from None
    return search_bench(cases, args.repeats or 3, args.trial, args.validation, args.granularity, _folder("search"),
                        json_out=args.json, strategies=strategies)


def _noisy(args: argparse.Namespace) -> list[str]:
    from zeroloss.studies import noisybench

    try:
        cases = noisybench.parse_cases(args.cases or ",".join(noisybench.CASES))
    except ValueError as e:
        raise ZeroLossError(f"--cases '{args.cases}': {e}", f"use some of {', '.join(noisybench.CASES)}") \
            from None
    return noisybench.noisy_bench(cases, args.repeats or 5, args.meter_pps, args.trial, args.validation,
                                  args.granularity, _folder("noisy"), json_out=args.json)


def _gen(args: argparse.Namespace) -> list[str]:
    from zeroloss.studies.genbench import run_benchmarks

    return run_benchmarks(seconds=args.seconds, repeats=args.repeats or 3, json_out=args.json)


# flag (its dest) -> the study it runs; the first flag given wins, as in the order `bench --help` lists them
STUDIES: dict[str, Callable[[argparse.Namespace], list[str]]] = {
    "lab": _lab, "tune": _tune, "neutron": _neutron, "vnf": _vnf, "search": _search, "noisy": _noisy}


def cmd_bench(args: argparse.Namespace) -> int:
    run = next((study for flag, study in STUDIES.items() if getattr(args, flag)), _gen)
    for line in run(args):
        print(line, flush=True)
    return 0
