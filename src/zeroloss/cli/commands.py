"""The sub-commands that read or check rather than run a search: `check` (the jumbo and ledger checks) and `explain`
(`bench` is cli/bench.py). Errors a user can cause are ZeroLossError, printed by cli.main as one line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zeroloss.results.events import EventsRecord
    from zeroloss.results.soak import SoakRecord


def cmd_check(args: argparse.Namespace) -> int:
    from zeroloss.drivers.bench.workspace import Workspace
    from zeroloss.drivers.vnf.vm import resolve_vnf

    if args.what == "ledger":
        return _check_ledger(args)
    from zeroloss.studies.jumbocheck import Evidence, jumbo

    with Workspace() as ws:
        steps = jumbo(ws, resolve_vnf(args.vnf))
    if args.json:
        print(json.dumps([{"step": s.name, "passed": s.passed, "evidence": s.evidence} for s in steps], indent=1))
    else:
        for s in steps:
            e = Evidence.from_json(s.evidence)
            print(f"{'PASS' if s.passed else 'FAIL'}  {s.name}")
            print(f"      {e.frame_bytes} B: sent {e.sent}, received {e.received} "
                  f"({e.bytes_received} of {e.bytes_sent} bytes), malformed/truncated "
                  f"{e.malformed_or_truncated}, OVS TX drops on v0 {e.ovs_v0_tx_dropped}, "
                  f"OVS MTUs {e.ovs_mtu}")
    return 0 if all(s.passed for s in steps) else 2


def _check_ledger(args: argparse.Namespace) -> int:
    from zeroloss.drivers.vnf.vm import resolve_vnf
    from zeroloss.report.docparts import Told
    from zeroloss.report.explain import findings_text
    from zeroloss.studies.ledgercheck import ATTRIBUTED_PCT, run

    def progress(name: str) -> None:
        if not args.json:
            print(f"== {name}: starting the bench and losing frames on purpose", file=sys.stderr, flush=True)

    cases = run(args.case, progress, resolve_vnf(args.vnf))
    if args.json:
        print(json.dumps([{"case": c.name, "passed": c.passed, "lost": c.lost, "expected_hop": c.hop,
                           "expected_reason": c.reason, "attributed": c.attributed,
                           "attributed_pct": c.attributed_pct, "knob": c.knob, "knob_named": c.knob_named,
                           "ledger": d.ledger, "diagnosis": d.diagnosis}
                          for c in cases for d in [Told.from_json(c.detail)]], indent=1))
    else:
        for c in cases:
            print(f"{'PASS' if c.passed else 'FAIL'}  {c.name}")
            print(f"      lost {c.lost:,} frames; {c.attributed_pct:.2f} % attributed to {c.hop} / {c.reason} "
                  f"(needs {ATTRIBUTED_PCT:g} %); remedy naming '{c.knob}': {'yes' if c.knob_named else 'no'}")
            print("\n".join(findings_text([c.finding] if c.finding else [])))
    return 0 if all(c.passed for c in cases) else 2


def _explain_soak(args: argparse.Namespace, rec: SoakRecord) -> int:
    """`zeroloss explain SOAK.json`: the soak's totals and worst interval, then where the whole trial lost frames
    and why (its ledger and diagnosis)."""
    from pathlib import Path

    from zeroloss.report.docparts import LossEvent
    from zeroloss.report.explain import direction_text, findings_text
    from zeroloss.results.soak import summary_lines
    from zeroloss.results.summary import stem

    if args.json:
        print(json.dumps({"kind": "zeroloss-soak", "frame": rec.frame, "totals": rec.totals(),
                          "ledger": rec.ledger or [], "diagnosis": rec.diagnosis or [],
                          "loss_events": rec.events()}, indent=1))
        return 0
    lines = summary_lines(rec, stem(Path(args.file)))
    for k, e in enumerate(map(LossEvent.from_json, rec.events()), 1):
        if e.ledger:
            lines.append(f"event {k} ledger ({e.start_s:g} s .. {e.end_s:g} s):")
            for led in e.ledger:
                lines += direction_text(led)
            if e.diagnosis:
                lines += ["  diagnosis:", *findings_text(e.diagnosis)]
    if rec.events():
        lines.append("the whole soak:")
    for led in rec.ledger or []:
        lines += direction_text(led)
    if rec.diagnosis:
        lines += ["diagnosis:", *findings_text(rec.diagnosis)]
    elif rec.ledger is None:
        lines.append("(no ledger: the soak did not finish)")
    print("\n".join(lines))
    return 0


def _explain_events(args: argparse.Namespace, rec: EventsRecord) -> int:
    """`zeroloss explain EVENTS.json`: the outage table, then per event its worst repeat (most frames lost): the
    commands run, the outages on the timeline, where the frames were lost (its ledger) and why (its diagnosis)."""
    from zeroloss.report.explain import direction_text, findings_text
    from zeroloss.results.events import table, worst

    chosen = worst(rec)
    if args.json:
        print(json.dumps({"kind": "zeroloss-events", "file": args.file, "state": rec.state, "frame": rec.frame,
                          "rate_pps": rec.rate_pps, "ndr_pps": rec.ndr_pps,
                          "summary": [s.to_json() for s in rec.summary],
                          "worst": [{"event": t.event, "repeat": t.repeat, "repeats": n, "lost": t.lost,
                                     "outage_ms": t.outage_ms, "span_ms": t.span_ms, "where": t.where,
                                     "directions": [d.to_json() for d in t.directions],
                                     "actions": [a.to_json() for a in t.actions],
                                     "outages": [o.to_json() for o in t.outages], "ledger": t.ledger or [],
                                     "diagnosis": t.diagnosis or []} for t, n in chosen]}, indent=1))
        return 0
    lines = [table(rec), f"state: {rec.state}" + (f": {rec.error}" if rec.error else "")]
    lines += [f"warning: {w}" for w in rec.warnings]
    for t, n in chosen:
        which = f"repeat {t.repeat}, the worst of {n}" if n > 1 else f"repeat {t.repeat}"
        if not t.lost:
            lines += ["", f"== {t.event}: nothing lost in {n} repeat{'s' if n > 1 else ''}"]
            continue
        dirs = ", ".join(d.text() for d in t.directions)
        span = f", span {t.span_ms:,.0f} ms" if t.span_ms is not None else ""
        lines += ["", f"== {t.event}: {which}: lost {t.lost:,} frames ({dirs}), outage {t.outage_ms:,.1f} ms at the "
                      f"offered rate{span}"]
        lines += [f"  {a.t_ms / 1000:8.3f} s  {a.what} (took {a.took_ms:,.0f} ms)" for a in t.actions]
        lines += [f"  outage {o.direction} {o.start_ms / 1000:.2f} .. {o.end_ms / 1000:.2f} s (when sent): "
                  f"{o.lost:,} frames, {o.outage_ms:,.1f} ms" for o in t.outages]
        lines += [f"  warning: {w}" for w in t.warnings]
        if not t.ledger:
            lines.append("  (no ledger: the DUT's counters were not read)")
        for led in t.ledger or []:
            lines += ["  " + line for line in direction_text(led, compact=True)]
        if t.diagnosis:
            lines += ["  diagnosis:", *("  " + line for line in findings_text(t.diagnosis))]
    print("\n".join(lines))
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from zeroloss.report.explain import select, trial_analysis, trial_text
    from zeroloss.results import schema
    from zeroloss.results.events import EventsRecord
    from zeroloss.results.load import load
    from zeroloss.results.records import RunRecord
    from zeroloss.results.soak import SoakRecord

    rec = load(args.file, shape=schema.EXPLAIN)  # a run's or campaign's searches, trials, counters and paths
    if isinstance(rec, SoakRecord):
        return _explain_soak(args, rec)
    if isinstance(rec, EventsRecord):
        return _explain_events(args, rec)
    chosen = select(rec, args.frame, args.trial, args.case)
    out = []
    for case, search, trial in chosen:  # its counters and state are checked there, only in the trials analysed
        leds, diag = trial_analysis(search, trial, args.file)
        out.append((case, search, trial, leds, diag))
    if args.json:
        listing = []
        for case, search, trial, leds, diag in out:
            listing.append({"case": case or None, "frame": search.frame, "repeat": search.repeat,
                            "trial": trial.index + 1, "kind": trial.kind, "rate_pps": trial.rate_pps,
                            "verdict": trial.verdict, "ledger": leds, "diagnosis": diag})
        print(json.dumps(listing, indent=1))
        return 0
    if not out:
        print(f"{args.file}: no trial lost frames: nothing to explain (--trial N shows any trial's ledger)")
    for i, (case, search, trial, leds, diag) in enumerate(out):
        if i:
            print()
        if case:
            print(f"== {case}")
        print(trial_text(search.frame, trial, leds, diag))
    if args.trial is None and isinstance(rec, RunRecord):  # back-to-back frames (RFC 9004): where bursts lost frames
        from zeroloss.report.explain import b2b_lines

        for search in rec.searches:
            if args.frame is None or search.frame == args.frame:
                lines = b2b_lines(search)
                print("\n" + "\n".join(lines) if lines else "", end="\n" if lines else "")
    return 0
