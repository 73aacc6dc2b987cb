"""`zeroloss rxq-plan`: OVS 3.1's RX queue to PMD assignment for a loads file or pmd-rxq-show text (register(sub) adds
it to the main parser; cli/host.py calls it)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from zeroloss.cli.argtypes import whole_number
from zeroloss.core.codec import Record
from zeroloss.core.errors import ZeroLossError

if TYPE_CHECKING:
    from zeroloss.host.rxq import Assignment, Pmd, Rxq


def _rxq_count(text: str) -> int:
    """rxq-plan --rxq: queues per port, 1..MAX_QUEUES."""
    from zeroloss.host.ovsstate import MAX_QUEUES

    return whole_number(1, MAX_QUEUES)(text)


PMD_RXQ_SHOW = ("ovs-appctl", "--timeout=5", "dpif-netdev/pmd-rxq-show")


def _read_text(spec: str, live: tuple[str, ...] = PMD_RXQ_SHOW, name: str = "pmd-rxq-show") -> tuple[str, str]:
    """The text of FILE, stdin ('-') or the live command's output, and how to name it; ZeroLossError when it is
    not UTF-8."""
    from zeroloss.host.ovsstate import read_utf8

    if spec == "-":
        stdin = getattr(sys.stdin, "buffer", None)  # a test may put a text stream there
        try:
            return (stdin.read().decode() if stdin else sys.stdin.read()), "stdin"
        except UnicodeDecodeError as e:
            raise ZeroLossError(f"stdin is not UTF-8 text (byte {e.start})", "pipe the command's text output") from None
    if spec == "live":
        from zeroloss.host.ovsstate import db_socket

        if not db_socket().exists():
            raise ZeroLossError(f"no OVS database socket at {db_socket()}", f"give a {name} file instead")
        argv = list(live)
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ZeroLossError(f"`{' '.join(argv)}` failed: {e}", "is ovs-vswitchd running with DPDK?") from None
        if r.returncode:
            raise ZeroLossError(f"`{' '.join(argv)}` exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout, f"live {name}"
    return read_utf8(spec), spec


@dataclass(frozen=True, kw_only=True)
class Options(Record):
    """A loads file's options (host/rxqinput.py parse_loads): algorithm and isolate as given, the datapath port
    numbers it gives and whether they are every port's."""

    algorithm: str | None = None
    isolate: Any = True
    dp_ports: dict[str, int] | None = None
    dp_ports_complete: Any = False


@dataclass(frozen=True, kw_only=True)
class VisitOrder(Record):
    """How OVS is modelled to walk the ports and NUMA nodes (--json's visit_order): the hash build it assumed and
    why, the datapath port numbers, the assumptions."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"ports", "dp_ports"})

    ports: tuple[str, ...] | None = None
    numas: tuple[int, ...] = ()
    hash_build: str = ""
    hash_build_source: str = ""
    dp_ports: dict[str, int] | None = None
    assumptions: tuple[str, ...] = ()


def _rxq_order(args, pmds, rxqs, opts: Options):
    """(queues numbered with their datapath port numbers, the modelled visit order, its description)."""
    from zeroloss.host.rxqorder import DPIF_SHOW, detect_build, number_ports, parse_dpif_show, visit_order

    if args.dpif_show == "-" and "-" in (args.loads, args.pmd_rxq_show):
        raise ZeroLossError("stdin can feed only one input", "give --dpif-show as a file")
    dp_ports, complete = opts.dp_ports, bool(opts.dp_ports_complete)
    live = "live" in (args.pmd_rxq_show, args.dpif_show)
    if args.dpif_show or (args.pmd_rxq_show == "live" and not dp_ports):
        try:
            text, where = _read_text(args.dpif_show or "live", tuple(DPIF_SHOW), "dpif/show")
            dp_ports, complete = parse_dpif_show(text, where), True
        except ZeroLossError:
            if args.dpif_show:
                raise  # given explicitly; read along with a live pmd-rxq-show only when it can be
    if args.hash_build != "auto":
        build, how, assumed = args.hash_build, "given with --hash-build", False
    elif live:
        build, how, assumed = detect_build()
    else:
        build, how, assumed = "plain", "not read from a live OVS, plain assumed", True
    if dp_ports:
        rxqs = number_ports(rxqs, dp_ports)
    order = visit_order(rxqs, pmds, dp_ports, build, how, assumed, complete)
    doc = VisitOrder(ports=None if order.ports is None else tuple(order.ports), numas=tuple(order.numas),
                     hash_build=build, hash_build_source=how, dp_ports=dp_ports, assumptions=tuple(order.notes))
    return rxqs, order, doc


def _cmd_rxq(args: argparse.Namespace) -> int:
    from zeroloss.host.report import alb_lines, assignment_text, compare_rows
    from zeroloss.host.rxq import ALGORITHMS, alb_estimate, assign, split_queues

    source, pmds, rxqs, raw_opts, current, notes = _inputs(args)
    opts = Options.from_json(raw_opts)
    algorithm = args.algorithm or opts.algorithm or "cycles"
    isolate = bool(opts.isolate) and not args.no_isolate
    rxqs, order, order_doc = _rxq_order(args, pmds, rxqs, opts)
    chosen = assign(pmds, rxqs, algorithm, isolate, order)
    cases = [(f"{a}{' (chosen)' if a == algorithm else ''}", assign(pmds, rxqs, a, isolate, order))
             for a in ALGORITHMS]
    if current is not None:
        cases.insert(0, ("current (pmd-rxq-show)", current))
    for n in args.rxq or [1, 2, 4]:
        cases.append((f"{algorithm}, {n} rxq/port", assign(pmds, split_queues(rxqs, n), algorithm, isolate, order)))
    alb = alb_estimate(current, chosen) if current is not None else []
    starts = _other_starts(pmds, rxqs, algorithm, isolate, order, chosen)
    if args.json:
        doc = {"source": source, "algorithm": algorithm, "isolate": isolate, "notes": notes,
               "visit_order": order_doc.to_json(),
               "assignment": dataclasses.asdict(chosen),
               "other_starts": [{"numas": list(n), "assignment": dataclasses.asdict(a)} for n, a in starts],
               "compare": [{"case": n, "assignment": dataclasses.asdict(a)} for n, a in cases], "auto_lb": alb}
        print(json.dumps(doc, indent=1))
        return 0
    ports = len({q.port for q in rxqs})
    print(f"{source}: {len(rxqs)} RX queue(s) on {ports} port(s), {len(pmds)} PMD(s); OVS 3.1 "
          f"pmd-rxq-assign={algorithm}, pmd-rxq-isolate={'true' if isolate else 'false'}")
    print(assignment_text(chosen))
    for line in chosen.log:
        print(f"  {line}")
    print("\nother algorithms and queue counts (queues split evenly, as RSS aims for):")
    print(compare_rows(cases))
    if alb:
        print("\nauto load balance (pmd-auto-lb) estimate against the current placement:")
        print("\n".join(alb_lines(alb)))
    if order_doc.ports and len(order_doc.ports) > 1 or len(order.numas) > 1:
        print(f"\nOVS visit order ({order_doc.hash_build} hash: {order_doc.hash_build_source}): ports "
              f"{', '.join(order.ports) if order.ports else 'as input'}; NUMA nodes {', '.join(map(str, order.numas))}")
    for n in notes:
        print(f"note: {n}")
    for n in order.notes:
        print(f"caveat: {n}")
    for numas, alt in starts:
        print(f"\nafter a start that walks the NUMA nodes as {', '.join(map(str, numas))}, OVS places them so:")
        print(assignment_text(alt))
    return 0


def _inputs(args: argparse.Namespace
            ) -> tuple[str, list[Pmd], list[Rxq], dict[str, Any], Assignment | None, list[str]]:
    """(the input's name, its PMDs, its RX queues, the loads file's options, the current placement of a
    pmd-rxq-show input, notes on what it could not say), checked before any assignment is simulated."""
    from zeroloss.host.ovsstate import parse_pmd_rxq_show
    from zeroloss.host.rxq import from_assignment
    from zeroloss.host.rxqinput import MAX_TOTAL_RXQ, parse_loads, parse_pmds

    if bool(args.loads) == bool(args.pmd_rxq_show):
        raise ZeroLossError("give exactly one of --loads FILE and --pmd-rxq-show FILE|-|live")
    current = None
    notes: list[str] = []
    if args.loads:
        text, source = _read_text(args.loads)
        pmds, rxqs, opts = parse_loads(text, source)
    else:
        from zeroloss.host.rxqinput import from_pmd_rxq_show

        text, source = _read_text(args.pmd_rxq_show)
        port_numa = {}
        for item in (x.strip() for x in (args.port_numa or "").split(",") if x.strip()):
            name, _, node = item.partition("=")
            if not re.fullmatch(r"-?[0-9]{1,4}", node):
                raise ZeroLossError(f"'{item}' in --port-numa is not NAME=NODE", "e.g. --port-numa dpdk0=0,dpdk1=1")
            port_numa[name] = int(node)
        pmds, rxqs, placed, notes = from_pmd_rxq_show(parse_pmd_rxq_show(text, source), port_numa)
        current = from_assignment(placed)
        opts = {}
    if args.pmds:
        pmds = parse_pmds(args.pmds, {p.core: p.numa for p in pmds})
    if not pmds:
        raise ZeroLossError(f"{source} names no PMD", "add 'pmds:' to the file or give --pmds")
    nports = len({q.port for q in rxqs})
    for n in args.rxq or []:  # checked before any work: ports x n queues are built for each
        if nports * n > MAX_TOTAL_RXQ:
            raise ZeroLossError(f"--rxq {n} makes {nports * n:,} RX queues on {nports:,} ports, more than the "
                                f"{MAX_TOTAL_RXQ:,} rxq-plan simulates", "give a smaller --rxq")
    return source, pmds, rxqs, opts, current, notes


MAX_OTHER_STARTS = 8  # other NUMA walk orders simulated (each is one more assignment of every queue)


def _other_starts(pmds, rxqs, algorithm, isolate, order, chosen):
    """[(NUMA walk order, assignment)] for the other orders OVS may take after a restart (nodes sharing a hash
    bucket) whose placement differs from the chosen one."""
    from zeroloss.host.rxq import assign

    out = []
    for numas in order.other_numas[:MAX_OTHER_STARTS]:
        alt = assign(pmds, rxqs, algorithm, isolate, dataclasses.replace(order, numas=numas))
        if alt.core_of() != chosen.core_of() or alt.unpolled != chosen.unpolled:
            out.append((numas, alt))
    return out


def register(sub) -> None:
    """Add `rxq-plan` to the main parser's subcommands."""
    r = sub.add_parser("rxq-plan", help="simulate OVS 3.1's RX queue to PMD assignment",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Places RX queues on PMD threads as OVS 3.1 does (roundrobin, cycles, group; "
                                   "pinned queues and isolation; cross-NUMA fallback), prints per-PMD queues and "
                                   "load (% of one PMD), and compares other algorithms and queue counts. With "
                                   "pmd-rxq-show input it also estimates what auto load balance would do.",
                       epilog="--loads file (YAML or JSON):\n  pmds: {3: 0, 7: 0, 8: 0}   # core: NUMA node\n"
                              "  ports:\n    - {name: dpdk0, numa: 0, loads: [30, 80, 60, 70, 10]}   "
                              "# % of one PMD per queue\n"
                              "    - {name: vhu0, numa: 0, loads: {0: 20}, affinity: \"0:8\"}")
    src = r.add_mutually_exclusive_group()
    src.add_argument("--loads", metavar="FILE", help="queue loads (YAML/JSON, see below; - = stdin)")
    src.add_argument("--pmd-rxq-show", metavar="FILE|-|live",
                     help="output of ovs-appctl dpif-netdev/pmd-rxq-show (- = stdin, live = run it read-only)")
    r.add_argument("--algorithm", choices=["roundrobin", "cycles", "group"],
                   help="pmd-rxq-assign to simulate (default: the file's, else cycles as OVS)")
    r.add_argument("--pmds", metavar="CORE[:NODE],...", help="simulate these PMD cores instead of the input's")
    r.add_argument("--rxq", type=_rxq_count, action="append", metavar="N",
                   help="what-if queue count per port (repeatable; default 1, 2 and 4)")
    r.add_argument("--no-isolate", action="store_true", help="pmd-rxq-isolate=false (only honoured with group)")
    r.add_argument("--port-numa", metavar="NAME=NODE,...", help="NUMA node of ports in pmd-rxq-show input")
    r.add_argument("--dpif-show", metavar="FILE|-|live", help="output of ovs-appctl dpif/show: the datapath port "
                   "numbers that set OVS's port order (read live along with --pmd-rxq-show live)")
    r.add_argument("--hash-build", choices=["auto", "plain", "sse42"], default="auto",
                   help="OVS's hash functions: plain, or sse42 (built with SSE4.2, e.g. -march=x86-64-v2: CRC32C); "
                        "auto = from the installed package when reading live, else plain (default auto)")
    r.add_argument("--json", action="store_true", help="print JSON only")
    r.set_defaults(func=_cmd_rxq)
