"""`zeroloss report` and `zeroloss compare`: they read result files only, never the bench."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_text_atomic
from zeroloss.core.frames import text as frame_text

if TYPE_CHECKING:
    from zeroloss.results.events import EventsRecord
    from zeroloss.results.load import Document, Raw
    from zeroloss.results.soak import SoakRecord
    from zeroloss.results.summary import Run

SUFFIX_FORMAT = {".html": "html", ".htm": "html", ".json": "json", ".csv": "csv", ".md": "markdown",
                 ".markdown": "markdown"}


def _slug(text: str) -> str:
    """A run's label as a file name part."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def _write_plots(runs: list[Run], folder: Path, fmt: str) -> list[Path]:
    """Every plot of the report as an image file in folder: NDR, latency, one trace per search."""
    from zeroloss.report import plots
    from zeroloss.results.summary import traced_searches

    folder.mkdir(parents=True, exist_ok=True)
    out = [plots.save(plots.ndr_figure(runs), folder / "ndr", fmt),
           plots.save(plots.latency_figure(runs), folder / "latency", fmt)]
    for run in runs:
        for s in traced_searches(run.record):
            fig = plots.trace_figure(s, f"{run.label}: {frame_text(s.frame)}, search {s.repeat + 1}")
            size = f"{s.frame}B" if isinstance(s.frame, int) else _slug(s.frame)  # an IMIX: its label
            out.append(plots.save(fig, folder / f"trace-{_slug(run.label)}-{size}-{s.repeat + 1}", fmt))
    return out


def _history(runs: list[Run], db_text: str) -> list[str]:
    """Each run's history part of the report (--history DB): the series of its node (the one it is stored under,
    else its file's), topology, frame sizes and settings as the history holds them (history/trend.py, the default
    window), the run marked where stored. The database is only read: one that does not exist or cannot be reached
    is one line."""
    from zeroloss.history.db import open_db
    from zeroloss.history.extract import host_fp, parse_time, run_rows, series_key
    from zeroloss.history.lookup import stored_nodes
    from zeroloss.history.trend import Filter, trends
    from zeroloss.report.historypage import run_history

    db = open_db(None if db_text == "default" else db_text, create=False)
    out = []
    for i, run in enumerate(runs):
        found = []
        started = parse_time(run.record.created)
        # the node it was stored under (ingest --node), else the one its file names, as ingest would
        node = next(iter(stored_nodes(db, host_fp(run.record.host), started)), None)
        for series, _ in run_rows(run.record, run.label, node).points:
            found += [t for t in trends(db, Filter(series.node, series.topology, series.frame))
                      if series_key(t.node, t.topology, t.frame, t.settings) == series.key]
        out.append(run_history(found, started, f"hist{i}", db.shown))
    return out


def _cmd_report(args: argparse.Namespace) -> int:
    """`zeroloss report`: the HTML report, or the results table as JSON/CSV/Markdown."""
    from zeroloss.results.events import EventsRecord
    from zeroloss.results.export import export
    from zeroloss.results.load import read
    from zeroloss.results.soak import SoakRecord
    from zeroloss.results.summary import labelled, runs_in, stem

    out = Path(args.output) if args.output else None
    fmt = args.format or (SUFFIX_FORMAT.get(out.suffix.lower(), "html") if out else "html")
    if out is not None and any(out.resolve() == Path(f).resolve() for f in args.files):
        raise ZeroLossError(f"-o {out} is one of the result files: it would be overwritten", "name another file")
    found = [read(f) for f in args.files]  # each file read once; the first that cannot be read is one line
    lone = _lone(found)  # a soak or events file is reported on its own
    if args.history and (fmt != "html" or lone is not None):
        raise ZeroLossError("--history adds the runs' series to the HTML report of run or campaign files",
                            "drop --history, or use zeroloss history trend for the series alone")
    if isinstance(lone, SoakRecord):
        return _report_soak(args, lone, out, fmt)
    if isinstance(lone, EventsRecord):
        return _report_events(args, lone, out, fmt)
    runs = labelled([run for raw in found for run in runs_in(raw)])
    if out is None and fmt == "html":
        first = Path(args.files[0])
        out = first.with_name(stem(first) + ".html")
    if fmt == "html":
        from zeroloss.report.html import figure_count, render

        total = figure_count(runs)
        show = sys.stderr.isatty() and not args.quiet

        def progress(done: int) -> None:  # a line on the terminal only, rewritten in place
            if show:
                end = "\n" if done == total else ""
                print(f"\rdrawing plots: {done}/{total}", end=end, file=sys.stderr, flush=True)

        text = render(runs, args.title, progress, _history(runs, args.history) if args.history else None)
    else:
        text = export(runs, fmt)
    if out is None:
        print(text, end="" if text.endswith("\n") else "\n")
    else:
        write_text_atomic(out, text)
        print(f"wrote {out} ({len(text.encode()) / 1024:,.0f} KiB, {fmt}" +
              (", self-contained: open it in any browser)" if fmt == "html" else ")"))
    if args.plots:
        try:
            written = _write_plots(runs, Path(args.plots), args.plot_format)
        except OSError as e:
            raise ZeroLossError(f"cannot write the plots to {args.plots}: {e.strerror or e}",
                                "choose a writable folder (--plots)") from e
        for p in written:
            print(f"wrote {p}")
    return 0


def _lone(found: list[Raw]) -> Document | None:
    """The record of the soak file (`zeroloss trial --interval`) or else the events file (`zeroloss events`) among
    the files read, or None; with other files beside it, one line."""
    from zeroloss.results.load import EVENTS, SOAK, record

    for kind in (SOAK, EVENTS):
        raw = next((r for r in found if r.kind is kind), None)
        if raw is None:
            continue
        if len(found) > 1:
            raise ZeroLossError(f"{raw.name} is {kind.what}: report it on its own",
                                f"give one {kind.what.split(' ', 1)[1]}, or result and campaign files only")
        return record(raw)
    return None


def _report_events(args: argparse.Namespace, rec: EventsRecord, out: Path | None, fmt: str) -> int:
    """`zeroloss report EVENTS.json`: its HTML page (a timeline per event), or its outage table as
    JSON/CSV/Markdown; --plots: each event's timeline as an image."""
    from zeroloss.report import eventsreport
    from zeroloss.results.summary import stem

    first = Path(args.files[0])
    label = stem(first)
    if fmt == "html":
        out = out or first.with_name(label + ".html")
        text = eventsreport.render_events(rec, label, args.title)
    else:
        text = eventsreport.export(rec, label, fmt)
    _emit(text, out, fmt)
    if args.plots:
        _save_plots(args, lambda: ((f"event-{_slug(label)}-{_slug(trial.event)}-{trial.repeat}", fig)
                                   for trial, fig in eventsreport.figures(rec)))
    return 0


def _emit(text: str, out: Path | None, fmt: str) -> None:
    """A soak's or an events file's page or export: to the output file, or printed."""
    if out is None:
        print(text, end="" if text.endswith("\n") else "\n")
    else:
        write_text_atomic(out, text)
        print(f"wrote {out} ({len(text.encode()) / 1024:,.0f} KiB, {fmt})")


def _save_plots(args: argparse.Namespace, figures: Any) -> None:
    """--plots: each (name, figure) that figures() gives, saved in the folder; a folder that refuses is one line."""
    from zeroloss.report import plots

    try:
        folder = Path(args.plots)
        folder.mkdir(parents=True, exist_ok=True)
        for name, fig in figures():
            print(f"wrote {plots.save(fig, folder / name, args.plot_format)}")
    except OSError as e:
        raise ZeroLossError(f"cannot write the plots to {args.plots}: {e.strerror or e}",
                            "choose a writable folder (--plots)") from e


def _report_soak(args: argparse.Namespace, rec: SoakRecord, out: Path | None, fmt: str) -> int:
    """`zeroloss report SOAK.json`: its HTML page (the timeline plot), or its intervals as JSON/CSV/Markdown."""
    from zeroloss.results import soak
    from zeroloss.results.summary import stem

    first = Path(args.files[0])
    label = stem(first)
    if fmt == "html":
        from zeroloss.report.html import render_soak

        out = out or first.with_name(label + ".html")
        text = render_soak(rec, label, args.title)
    else:
        text = soak.export(rec, label, fmt)
    _emit(text, out, fmt)
    if args.plots:
        from zeroloss.report import plots

        _save_plots(args, lambda: [("soak-" + _slug(label), plots.soak_figure(rec, label))])
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    """`zeroloss compare`: each run against the first, as text or JSON."""
    from zeroloss.results.compare import compare, exit_code, text, to_json
    from zeroloss.results.summary import load_runs

    cmps = compare(load_runs(args.files), force=args.force)
    if args.json:
        print(json.dumps(to_json(cmps), indent=1))
    else:
        print("\n\n".join(text(c) for c in cmps))
    return exit_code(cmps)


def register(sub: Any) -> None:
    """The report and compare subcommands."""
    r = sub.add_parser(
        "report", help="an HTML report with plots, or the results table as JSON/CSV/Markdown, from result files",
        description="Reads result files of zeroloss run or campaign (never the bench) and writes one "
                    "self-contained HTML page: the setup (host, settings, core placement), the results table, NDR "
                    "per frame size as frames/s and % of line rate, latency percentiles at NDR, each search's "
                    "trace (offered rate and loss per trial), where failed trials lost frames, and every "
                    "warning. Several files share the plots. --format json|csv|markdown prints the results table "
                    "instead. Rates are frames/s per direction; frame sizes bytes including FCS.")
    r.add_argument("files", nargs="+", metavar="RESULT.json",
                   help="result files of zeroloss run or campaign, or one soak file or events file (zeroloss events)")
    r.add_argument("-o", "--output", metavar="FILE",
                   help="where to write (default for HTML: the first file with .html; other formats: stdout); "
                        "the format follows the suffix (.html .json .csv .md) unless --format is given")
    r.add_argument("--format", choices=["html", "json", "csv", "markdown"],
                   help="html: the full report (default); json, csv, markdown: the results table, one row per run "
                        "and frame size (Markdown pastes into tickets)")
    r.add_argument("--plots", metavar="DIR", help="also save every plot in DIR as an image")
    r.add_argument("--plot-format", choices=["svg", "png"], default="svg", help="image format of --plots (default svg)")
    r.add_argument("--title", metavar="TEXT", help="the report's title (default: the runs' names)")
    r.add_argument("--history", metavar="DB",
                   help="HTML: add each run's series from this results history (a file path for SQLite, "
                        "postgresql://USER@HOST/DB, or default: zeroloss history's), its NDR over time with jumpavg's "
                        "groups and changes, the run marked; the database is only read (see docs/history.md)")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    r.set_defaults(func=_cmd_report)

    c = sub.add_parser(
        "compare", help="NDR per frame size of runs side by side, with the setup that differed",
        description="Compares each run with the first (the baseline), per frame size: NDR in frames/s, the "
                    "difference in frames/s, in % of the baseline and in points of line rate, and whether it is "
                    "larger than the run-to-run spread (max - min of the NDRs of --repeat searches) and the search "
                    "resolution; then the settings, core placement and host facts that differ. A campaign file "
                    "gives one run per case. Runs from different hosts are refused unless --force. Exit code (a CI "
                    "gate): 2 when a frame size is slower beyond the spread, 3 when one may be slower but cannot be "
                    "judged (one search per size: use --repeat; or a size measured inconclusively), 0 otherwise, "
                    "1 on an error.")
    c.add_argument("files", nargs="+", metavar="RESULT.json", help="baseline first, then the runs to compare")
    c.add_argument("--force", action="store_true", help="compare runs from different hosts anyway")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")
    c.set_defaults(func=_cmd_compare)
