"""Progress of a run on stderr: a live line per frame size on a terminal, plain lines otherwise."""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, fields
from typing import Any, TextIO

from zeroloss.core.frames import text as frame_text
from zeroloss.core.latency import lost_tail, value_text
from zeroloss.report.explain import trial_text
from zeroloss.results.fmt import si
from zeroloss.results.records import SearchOutcome, TrialEntry


@dataclass(frozen=True, kw_only=True)
class Event:
    """What a run tells its progress with an event (runs/run.py, runs/b2b.py, runs/campaign.py, runs/events.py: a
    dict of keyword values), read once: each event kind fills the fields it has, the others stay None."""

    frame: Any = None  # a size in bytes, or an IMIX's label
    name: str | None = None  # case: the campaign case
    line: str | None = None  # cores: the core probe's line
    how: str | None = None  # ceiling
    link: str | None = None
    strategy: str | None = "binary"  # search
    max_rate_pps: float | None = None
    resumed_trials: int | None = None
    rate_pps: float | None = None  # warmup
    lost: int | None = None
    record: TrialEntry | None = None  # trial
    result: Any = None  # done: the SearchOutcome; b2b: the back-to-back search's result
    verdict: Any = None  # done: the frame size's verdict (results/verdict.py), when judged
    repeat: int | None = None  # b2b
    of: int | None = None
    trial: Any = None  # load: the latency trial; events: the event trial
    step: Any = None  # tune-measure, tune-step (runs/tune/loop.py): the TuneStep

    @classmethod
    def read(cls, data: dict[str, Any]) -> Event:
        return cls(**{k: v for k, v in data.items() if k in _EVENT_FIELDS})


_EVENT_FIELDS = frozenset(f.name for f in fields(Event))


def _size(ev: Event) -> str:
    """The event's frame size (or IMIX) at the start of its line: '   64 B', '   imix'."""
    return f"{frame_text(ev.frame):>7}"


class Progress:
    """Receives the runner's events; draws a bar (terminal) or prints one line per trial (log)."""

    def __init__(self, out: TextIO | None = None, quiet: bool = False, granularity_pct: float = 0.5):
        # sys.stderr when made, not when this module was imported (a stream replaced since may be closed)
        self.out = out if out is not None else sys.stderr
        self.quiet = quiet
        self.tty = self.out.isatty()
        self.color = self.tty and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
        # trials a search takes: halving 100 % down to the granularity, plus validation
        self.expected = math.ceil(math.log2(100 / granularity_pct)) + 2
        self.count = 0

    def _paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        if self.quiet:
            return
        ev = Event.read(data)
        if event == "case":
            self._line(f"== {ev.name}")
        elif event == "cores":
            self._line(f"core probe (zlcores) {ev.line}")
        elif event == "ceiling":
            self._line(f"{_size(ev)}  measuring the generator ceiling ({ev.how}, {ev.link})")
        elif event == "mrr":
            self._line(f"{_size(ev)}  measuring what the DUT forwards when zlgen sends flat out (MRR)")
        elif event == "search":
            self.count = 0
            resumed = f", {ev.resumed_trials} trial(s) replayed" if ev.resumed_trials else ""
            self._line(f"{_size(ev)}  {ev.strategy} search over {ev.link}, up to "
                       f"{si(ev.max_rate_pps, 'pps')}{resumed}")
        elif event == "warmup":
            self._line(f"        warm-up trial at {si(ev.rate_pps, 'pps')}: lost {ev.lost} (not counted)")
        elif event == "trial":
            self.count += 1
            self._trial(ev)
        elif event == "done":
            self._done(ev)
        elif event == "b2b":  # back-to-back frames, after the searches (runs/b2b.py)
            r = ev.result
            self._line(f"{_size(ev)}  back-to-back search {ev.repeat + 1}/{ev.of}: longest burst without "
                       f"loss {r.longest:,} frames{' (the longest tried)' if r.at_limit else ''} in "
                       f"{len(r.bursts)} bursts")
        elif event == "b2b_skip":  # RFC 9004 §6.1 (runs/b2b.py)
            self._line(f"{_size(ev)}  back-to-back frames not tested: the NDR is the maximum frame rate (RFC 9004 "
                       "§6.1)")
        elif event == "load":  # latency vs load, after the search (runs/run.py)
            t, lat = ev.trial, ev.trial.latency()
            us = "/".join(value_text(lat, k, fmt=".1f") for k in ("p50", "p99", "p99_9", "max"))
            tail = " ('> x': lost frames reach it, above the largest measured)" if lost_tail(lat) else ""
            self._line(f"        latency at {t.load_pct:g} % of the NDR ({si(t.rate_pps, 'pps')}): lost {t.lost}, "
                       f"p50/p99/p99.9/max {us} us{tail}")

    def _trial(self, ev: Event) -> None:
        rec = ev.record
        assert rec is not None and ev.max_rate_pps is not None  # a trial event has both
        aim = rec.aim_pps if rec.aim_pps is not None else rec.rate_pps  # the rate the search wanted delivered
        pct = 100 * aim / ev.max_rate_pps
        verdict = rec.verdict
        shown = self._paint(verdict, "32" if verdict == "pass" else "31" if verdict == "fail" else "33")
        kind = "valid." if rec.kind == "validation" else rec.kind
        got = min((d.achieved_pps for d in rec.outcome.directions), default=0.0)
        # a pass counts at what zlgen delivered, a loss at the pace (core/search/trials.py): both shown
        text = (f"{_size(ev)}  trial {rec.index + 1:>2} {kind:<6} "
                f"{si(aim, 'pps'):>13} ({pct:5.1f} %)  delivered {si(got, 'pps'):>13}  lost {rec.lost:<8} {shown}")
        if rec.aim_pps is not None:
            text += f" (paced {si(rec.rate_pps, 'pps')})"
        if verdict == "disturbed" and rec.outcome.disturbed:
            text += f" ({rec.outcome.disturbed})"
        if rec.reason:  # a latency bound it exceeded
            text += f" ({rec.reason})"
        if rec.kind == "validation" and verdict == "fail" and rec.ledger:
            # where the frames of a failed validation were lost, and why, under its line
            if self.tty:
                self.out.write("\r\033[K")
            self._line(text)
            explained = trial_text(ev.frame, rec, rec.ledger, rec.diagnosis or [], limit=3, compact=True)
            self._line("\n".join("        " + line for line in explained.splitlines()[1:]))
        elif self.tty:
            done = min(1.0, self.count / self.expected)
            bar = "#" * round(20 * done) + "." * (20 - round(20 * done))
            self.out.write(f"\r\033[K{text}  [{bar}]")
            self.out.flush()
        else:
            self._line(text)

    def _done(self, ev: Event) -> None:
        res: SearchOutcome = ev.result
        ndr = res.ndr
        rate = si(ndr.rate_pps, "pps") if ndr.rate_pps else "none"
        pct = f" ({ndr.line_rate_pct:.2f} % of line rate)" if ndr.line_rate_pct else ""
        flags = f"  [{', '.join(res.flags)}]" if res.flags else ""
        judged = ev.verdict
        if judged is not None and judged.bound and ndr.rate_pps:
            rate = "≥ " + rate  # only a lower bound is known
        if self.tty:
            self.out.write("\r\033[K")
        self._line(f"{_size(ev)}  NDR {self._paint(rate, '1')}{pct} after {res.trials} trials{flags}")
        if judged is not None and judged.status in ("FAIL", "INCONCLUSIVE"):
            self._line(f"        {judged.status}: " + "; ".join(judged.reasons))

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()
