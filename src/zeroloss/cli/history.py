"""`zeroloss history`: result files into a database of every run (ingest), each series' groups and changes (trend),
and the nightly gate (check) (history/, docs/history.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroloss.cli.argtypes import number, whole_number
from zeroloss.core.errors import ZeroLossError

if TYPE_CHECKING:
    from zeroloss.history.db import Database
    from zeroloss.history.trend import Filter, Trend

CHECK_FAILED = 2  # check: a series regressed (1 is an error, as for every command)


def _open(args: argparse.Namespace, create: bool) -> Database:
    from zeroloss.history.db import open_db

    return open_db(args.db, create=create, wait_s=args.wait)


def _cmd_ingest(args: argparse.Namespace) -> int:
    """Each file in its own transaction: a bad one is one line on stderr, the others are stored; a fault of the
    database stops there, in one line naming the files not stored; exit 1 if any failed."""
    from zeroloss.history.db import DatabaseFault
    from zeroloss.history.ingest import ingest

    db = _open(args, create=True)
    done, failed = [], 0
    for k, f in enumerate(args.files):
        try:
            result = ingest(db, f, args.node)
        except DatabaseFault as e:  # the next files would meet it too (and each wait --wait for a lock): one line
            failed += len(args.files) - k
            after = len(args.files) - k - 1
            print(f"zeroloss: error: {f}" + (f" and the {after} file(s) after it" if after else "") +
                  f" not stored: {e}", file=sys.stderr)
            break
        except ZeroLossError as e:
            failed += 1
            print(f"zeroloss: error: {e}", file=sys.stderr)
            continue
        done.append(result)
        if not args.json:
            print(result.line())
        for note in result.notes:
            print(f"warning: {f}: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"db": db.shown, "files": [r.to_json() for r in done], "failed": failed}, indent=1))
    return 1 if failed else 0


def _filter(args: argparse.Namespace) -> Filter:
    from zeroloss.history.trend import Filter

    return Filter(node=args.node, topology=args.topology, frame=args.frame)


def _window(args: argparse.Namespace) -> int | None:
    """--window: the newest runs of a series classified (trend.WINDOW when not given; 0: all)."""
    from zeroloss.history.trend import WINDOW

    return WINDOW if args.window is None else (args.window or None)


def _cmd_trend(args: argparse.Namespace) -> int:
    from zeroloss.history.text import trend_text
    from zeroloss.history.trend import trends

    if args.html and args.json:
        raise ZeroLossError("--html and --json both asked for", "give one of them")
    db = _open(args, create=False)
    found = trends(db, _filter(args), args.metric, _window(args))
    if args.changed:
        found = [t for t in found if len(t.groups) > 1]
    if args.html:
        return _write_page(args, db.shown, found)
    if args.json:
        print(json.dumps({"series": [t.to_json() for t in found]}, indent=1))
        return 0
    if not found:
        print("no series" + (" with a change" if args.changed else "") + " matches")
        return 0
    print("\n\n".join(trend_text(t) for t in found))
    return 0


def _write_page(args: argparse.Namespace, shown: str, found: list[Trend]) -> int:
    """trend --html FILE: the trend page written, one line printed."""
    from zeroloss.core.fileio import write_text_atomic
    from zeroloss.report.historypage import render_history

    text = render_history(found, shown, args.last)
    try:
        write_text_atomic(args.html, text, mode=0o644)
    except ZeroLossError as e:  # its remedy names run's -o
        raise ZeroLossError(e.message, "give --html a file path in a folder you can write") from None
    nodes = len({t.node for t in found})
    print(f"wrote {args.html} ({len(text.encode()) / 1024:,.0f} KiB, {nodes} node(s), {len(found)} series, "
          "self-contained: open it in any browser)")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    """The gate: exit 2 when a series regressed; a filter that matches no series is an error (a misspelt node or
    size must not pass the gate by checking nothing)."""
    from zeroloss.history.text import check_text
    from zeroloss.history.trend import Filter, trends

    want = _filter(args)
    found = trends(_open(args, create=False), want, args.metric, _window(args))
    if not found and (want != Filter() or args.metric == "pdr"):
        given = [f"--{k} {v}" for k, v in vars(want).items() if v is not None] + \
            (["a PDR (--metric pdr)"] if args.metric == "pdr" else [])
        raise ZeroLossError(f"no series matches {', '.join(given)}: the gate checked nothing",
                            "see the series and their names with zeroloss history trend")
    failed = [(t, c) for t in found if (c := t.regression(args.last)) is not None]
    if args.json:
        print(json.dumps({"series": len(found), "last": args.last, "regressions": [
            {**t.to_json(), "regression": {"size_pct": round(c.size_pct, 3), "run": c.label,
                                           "changed": {k: list(v) for k, v in c.changed.items()}}}
            for t, c in failed]}, indent=1))
    else:
        print(check_text(failed, len(found), args.last))
    return CHECK_FAILED if failed else 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="URL", default=None,
                   help="the history database: a file path (SQLite) or postgresql://USER@HOST/DB (default: "
                        "$ZEROLOSS_HISTORY, else ~/.local/share/zeroloss/history.sqlite)")
    p.add_argument("--wait", type=_seconds, default=30.0, metavar="S",
                   help="seconds to wait for a SQLite file another writer holds, or to reach a server (default 30)")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")


def _series_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", metavar="NAME", help="only this node's series")
    p.add_argument("--topology", metavar="NAME", help="only this topology's series (p2p, ovs-p2p, pvp, pvvp)")
    p.add_argument("--frame", metavar="SIZE", help="only this frame size's series (bytes, or an IMIX's label)")
    p.add_argument("--metric", choices=["ndr", "pdr"], default="ndr",
                   help="the rate followed: the NDR or the PDR as delivered, frames/s per direction (default ndr)")
    p.add_argument("--window", type=whole_number(0), default=None, metavar="N",
                   help="classify each series' newest N runs (default 200; 0: all of them, which takes time "
                        "quadratic in a series' runs)")


def _seconds(text: str) -> float:
    """--wait: seconds, 0 or more (the number given to SQLite's busy timeout and the server's connect timeout)."""
    s = number(text)
    if not math.isfinite(s) or s < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds, 0 or more")
    return s


def _name(text: str) -> str:
    """--node: a node's name as the series will show it; a blank one would be a series of no node."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a node's name is not blank (leave --node out for the file's own node)")
    return text.strip()


def register(sub: Any) -> None:
    """Add `history` (ingest, trend, check) to the main parser's subcommands."""
    h = sub.add_parser("history", help="every run kept in a database; trends and regressions per series "
                                       "(docs/history.md)",
                       description="Keeps the result files of every run (run, campaign, tune, events, soak) in a "
                                   "database, SQLite by default or a lab's PostgreSQL, and finds in each series (node, "
                                   "topology, frame size, settings) its groups of equal performance and the changes "
                                   "between them with FD.io CSIT's jumpavg.")
    hs = h.add_subparsers(dest="history_command", metavar="ACTION", required=True)
    i = hs.add_parser("ingest", help="store result files (each once, each in one transaction)",
                      description="Stores each file in one transaction; a file already stored is not stored again, "
                                  "a later copy of a stored run (resumed and completed) replaces it. Exit 1 when a "
                                  "file could not be stored (the others are).")
    i.add_argument("files", nargs="+", metavar="FILE", help="result, campaign, tune, events or soak files")
    i.add_argument("--node", type=_name, metavar="NAME",
                   help="the node's name (default: a lab node's ssh target, else the bench host's hostname and "
                        "machine id)")
    _common(i)
    i.set_defaults(func=_cmd_ingest)
    t = hs.add_parser("trend", help="each series' groups of equal performance and the changes between them",
                      description="Per series, its runs in time order split by jumpavg into groups of equal "
                                  "performance; each change with its size in % and the run that started it. A "
                                  "group's level is its runs' mean NDR (or PDR) as delivered, frames/s per "
                                  "direction, ± its standard deviation in % of that level; times are UTC.")
    _series_filters(t)
    t.add_argument("--changed", action="store_true", help="only the series with a change")
    t.add_argument("--html", type=Path, metavar="FILE",
                   help="write the trend page instead: per node its series' table and each series' NDR over time "
                        "with its groups and changes drawn (one self-contained HTML file)")
    t.add_argument("--last", type=whole_number(1), default=3, metavar="N",
                   help="with --html: mark the series `history check --last N` fails (default 3)")
    _common(t)
    t.set_defaults(func=_cmd_trend)
    c = hs.add_parser("check", help="exit 2 when a series' newest runs start a regression beyond its spread "
                                    "(a nightly gate)",
                      description="Exit 0 when no series regressed, 2 when one's last group started within its "
                                  "newest --last runs below the group before by more than the series' spread and "
                                  "the newer runs' search resolution (their NDR brackets, frames/s), 1 on an error.")
    _series_filters(c)
    c.add_argument("--last", type=whole_number(1), default=3, metavar="N",
                   help="the newest runs of a series a regression may start in (default 3)")
    _common(c)
    c.set_defaults(func=_cmd_check)
