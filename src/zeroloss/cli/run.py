"""`zeroloss run` (the settings or the file to resume, the searches on the bench, the table and the verdict) and
`zeroloss campaign` (its cases, one run each, into one file). Errors a user can cause are ZeroLossError, printed by
cli.main as one line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from zeroloss.cli import autoingest
from zeroloss.cli.runflags import run_overrides
from zeroloss.core.errors import ZeroLossError

if TYPE_CHECKING:
    from zeroloss.core.config import RunConfig
    from zeroloss.results.resultfile import ResultFile


def cmd_run(args: argparse.Namespace) -> int:
    """Exit 0 pass (or no requirement), 2 fail, 3 inconclusive (results/verdict.py), 130 interrupted."""
    from zeroloss.host import hostinfo

    overrides = run_overrides(args)
    overrides.update(dict(args.set or []))
    host = hostinfo.collect()
    cfg, path = _run_settings(args, overrides)
    db = autoingest.database(args)
    rf = _execute(args, cfg, path, host)
    if rf is None:
        return 130
    code = _print_run(args, rf)
    autoingest.store(db, rf.path, args.quiet)  # any verdict; a fault of the database is a warning, not the code
    return code


def _run_settings(args: argparse.Namespace, overrides: dict) -> tuple[RunConfig | None, Path]:
    """The settings (None with --resume: they are the result file's) and the result file's path."""
    from zeroloss.cli.lab import check_lab_file
    from zeroloss.core import config as config_mod
    from zeroloss.targets.registry import check_cores  # the cores the settings' kind of DUT names

    if args.resume:
        given = [k for k, v in overrides.items() if v is not None]
        if given or args.config:
            drop = ", ".join(given) or "--config"
            raise ZeroLossError(f"--resume takes its settings from the result file; drop {drop}")
        return None, Path(args.resume)
    cfg = config_mod.load(Path(args.config) if args.config else None, overrides)
    check_cores(cfg)
    check_lab_file(cfg.lab)  # a broken lab file is its fault, not "the bench is in use"
    return cfg, Path(args.output or f"results/zeroloss-{time.strftime('%Y%m%d-%H%M%S')}.json")


def _resume(args: argparse.Namespace, path: Path, host: dict) -> tuple[ResultFile, RunConfig]:
    """The cut run's result file, running again, and its settings."""
    from zeroloss.core import config as config_mod
    from zeroloss.results.resultfile import ResultFile
    from zeroloss.targets.registry import check_cores

    rf = ResultFile.load(path)
    rf.check_host(host)
    if rf.run.state == "complete":
        raise ZeroLossError(f"{args.resume} is complete: nothing to resume")
    cfg = config_mod.stored(rf.run.config)
    check_cores(cfg)
    rf.set_state("running")
    return rf, cfg


def _execute(args: argparse.Namespace, cfg: RunConfig | None, path: Path, host: dict) -> ResultFile | None:
    """The run on the bench, its result file written as it goes; None when interrupted (said on stderr)."""
    from zeroloss.cli.progress import Progress
    from zeroloss.drivers.proc import ComponentDied
    from zeroloss.drivers.session import BENCH, ResultLock
    from zeroloss.results.resultfile import ResultFile
    from zeroloss.runs.run import Run, interrupted_state

    with ResultLock(path), BENCH:  # one writer per result file, one zeroloss on the bench
        if args.resume:
            rf, cfg = _resume(args, path, host)
        else:
            assert cfg is not None
            rf = ResultFile.create(path, cfg.to_dict(), host)
        progress = Progress(quiet=args.quiet, granularity_pct=cfg.granularity_pct)
        try:
            with interrupted_state(rf):
                Run(cfg, rf, progress).execute()
        except (KeyboardInterrupt, ComponentDied, ZeroLossError) as e:
            _cut(args, rf, e)
            return None
    return rf


def _cut(args: argparse.Namespace, rf: ResultFile, e: BaseException) -> None:
    """A run cut by Ctrl-C (said on stderr) or by a fault (raised as one line naming the file so far); a new run
    cut before any measurement leaves no file."""
    from zeroloss.drivers.proc import ComponentDied

    if not args.resume and not rf.run.ceilings and not any(s.trials for s in rf.run.searches):
        rf.discard()  # ended before any measurement (no sudo, the node unreachable): nothing to continue
        if isinstance(e, KeyboardInterrupt):
            print("zeroloss: interrupted before the first trial; no result file written", file=sys.stderr)
            return
        raise e
    if isinstance(e, KeyboardInterrupt):
        print(f"zeroloss: interrupted; the finished trials are in {rf.path}; continue with: "
              f"zeroloss run --resume {rf.path}", file=sys.stderr)
        return
    if isinstance(e, ComponentDied):
        raise ZeroLossError(f"{e} (trials so far: {rf.path}; continue with: zeroloss run --resume "
                            f"{rf.path})") from e
    raise ZeroLossError(f"{e} (trials so far: {rf.path})") from e


def _print_run(args: argparse.Namespace, rf: ResultFile) -> int:
    """The run's table (or JSON), warnings and verdict; its exit code."""
    from zeroloss.results import latencyload
    from zeroloss.results.fmt import queue_lines, run_table
    from zeroloss.results.verdict import verdict

    run = rf.run
    sign_off = verdict(run)
    code = sign_off.exit_code  # 0 pass (or no requirement), 2 fail, 3 inconclusive: results/verdict.py
    if args.json:
        keys = ("frame", "repeat", "link", "ceiling_pps", "line_rate_pps", "result")
        searches = [{k: d[k] for k in keys} for d in (s.to_json() for s in run.searches)]
        print(json.dumps({"verdict": sign_off.to_dict(), "result_file": str(rf.path), "searches": searches,
                          "latency_vs_load": latencyload.to_json(run), "warnings": list(run.all_warnings())},
                         indent=2))
        return code
    print(run_table(run))
    if loads := latencyload.load_table(run):
        print()
        print(loads)
    lines = queue_lines(run)
    if lines:
        print()
        print("\n".join(lines))
    for w in run.all_warnings():
        print(f"warning: {w}", file=sys.stderr)
    print(f"\nresult file: {rf.path}\nHTML report: zeroloss report {rf.path}")
    if code:
        print(f"zeroloss: {sign_off.line}", file=sys.stderr)
    return code


def cmd_campaign(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from zeroloss.cli.lab import check_lab_file
    from zeroloss.drivers.session import BENCH, ResultLock
    from zeroloss.host import hostinfo
    from zeroloss.runs.campaign import CampaignFile, Definition, builtin_names, expand, read_definition

    if args.list or not (args.campaign or args.resume):
        print("built-in campaigns: " + ", ".join(builtin_names()))
        return 0 if args.list else 2
    host = hostinfo.collect()
    if args.resume:
        if args.campaign or args.set or args.output:
            raise ZeroLossError("--resume takes the campaign and its settings from the result file; "
                                "give only the file")
        path = Path(args.resume)
        in_file = None  # a campaign file keeps no database: --history or the environment's
    else:
        spec, in_file = read_definition(args.campaign)
        overrides = dict(args.set or [])
        cases = expand(spec, overrides)
        for lab in sorted({c.config.lab for c in cases if c.config is not None and c.config.lab}):
            check_lab_file(lab)  # before the bench is taken, as run does
        name = Definition.from_json(spec).name
        path = Path(args.output or f"results/campaign-{name}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    db = autoingest.database(args, in_file, f"campaign {args.campaign}")
    with ResultLock(path), BENCH:  # one writer per campaign file, one zeroloss on the bench
        if args.resume:
            cf = CampaignFile.load(path, host)
            cf.set_state("running")
            camp = cf.record
            cases = expand(camp.definition or {}, camp.overrides or {})
        else:
            cf = CampaignFile.create(path, spec, host, overrides)
        code = _campaign(args, cf, cases, host)
    if code == 0:  # not when interrupted (130): the campaign is cut, to be resumed
        autoingest.store(db, cf.path, args.quiet)
    return code


def _campaign(args: argparse.Namespace, cf, cases, host: dict) -> int:
    from zeroloss.cli.progress import Progress
    from zeroloss.runs.campaign import campaign_table, run_campaign
    from zeroloss.runs.run import Run, interrupted_state
    from zeroloss.targets.registry import check_cores  # the cores the settings' kind of DUT names

    progress = Progress(quiet=args.quiet)

    def one(name, cfg, rf) -> None:
        progress("case", {"name": name})
        check_cores(cfg)
        with interrupted_state(rf):
            Run(cfg, rf, progress).execute()

    try:
        run_campaign(cf, cases, host, one)
    except KeyboardInterrupt:
        cf.end("interrupted")
        print(f"zeroloss: interrupted; the finished trials are in {cf.path}; continue with: "
              f"zeroloss campaign --resume {cf.path}", file=sys.stderr)
        return 130
    except ZeroLossError as e:
        cf.end("failed")
        raise ZeroLossError(f"{e} (trials so far: {cf.path})") from e
    if args.json:
        print(json.dumps(cf.to_json(), indent=1))
        return 0
    print(campaign_table(cf.record))
    print(f"\nresult file: {cf.path}\nHTML report: zeroloss report {cf.path}")
    return 0
