"""Progress of a run on stderr: a live line per frame size on a terminal, plain lines otherwise."""

from __future__ import annotations

import math
import os
import sys
from typing import TextIO

from zeroloss.core.frames import text as frame_text
from zeroloss.core.latency import lost_tail, value_text
from zeroloss.report.explain import trial_text
from zeroloss.results.fmt import si
from zeroloss.results.records import SearchOutcome, TrialEntry


def _size(data: dict) -> str:
    """The event's frame size (or IMIX) at the start of its line: '   64 B', '   imix'."""
    return f"{frame_text(data['frame']):>7}"


class Progress:
    """Receives the runner's events; draws a bar (terminal) or prints one line per trial (log)."""

    def __init__(self, out: TextIO = sys.stderr, quiet: bool = False, granularity_pct: float = 0.5):
        self.out = out
        self.quiet = quiet
        self.tty = out.isatty()
        self.color = self.tty and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
        # trials a search takes: halving 100 % down to the granularity, plus validation
        self.expected = math.ceil(math.log2(100 / granularity_pct)) + 2
        self.count = 0

    def _paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def __call__(self, event: str, data: dict) -> None:
        if self.quiet:
            return
        if event == "case":
            self._line(f"== {data['name']}")
        elif event == "cores":
            self._line(f"core probe (zlcores) {data['line']}")
        elif event == "ceiling":
            self._line(f"{_size(data)}  measuring the generator ceiling ({data['how']}, {data['link']})")
        elif event == "mrr":
            self._line(f"{_size(data)}  measuring what the DUT forwards when zlgen sends flat out (MRR)")
        elif event == "search":
            self.count = 0
            resumed = f", {data['resumed_trials']} trial(s) replayed" if data["resumed_trials"] else ""
            self._line(f"{_size(data)}  {data.get('strategy', 'binary')} search over {data['link']}, up to "
                       f"{si(data['max_rate_pps'], 'pps')}{resumed}")
        elif event == "warmup":
            self._line(f"        warm-up trial at {si(data['rate_pps'], 'pps')}: lost {data['lost']} (not counted)")
        elif event == "trial":
            self.count += 1
            self._trial(data)
        elif event == "done":
            self._done(data)
        elif event == "b2b":  # back-to-back frames, after the searches (runs/b2b.py)
            r = data["result"]
            self._line(f"{_size(data)}  back-to-back search {data['repeat'] + 1}/{data['of']}: longest burst without "
                       f"loss {r.longest:,} frames{' (the longest tried)' if r.at_limit else ''} in "
                       f"{len(r.bursts)} bursts")
        elif event == "b2b_skip":  # RFC 9004 §6.1 (runs/b2b.py)
            self._line(f"{_size(data)}  back-to-back frames not tested: the NDR is the maximum frame rate (RFC 9004 "
                       "§6.1)")
        elif event == "load":  # latency vs load, after the search (runs/run.py)
            t, lat = data["trial"], data["trial"].latency()
            us = "/".join(value_text(lat, k, fmt=".1f") for k in ("p50", "p99", "p99_9", "max"))
            tail = " ('> x': lost frames reach it, above the largest measured)" if lost_tail(lat) else ""
            self._line(f"        latency at {t.load_pct:g} % of the NDR ({si(t.rate_pps, 'pps')}): lost {t.lost}, "
                       f"p50/p99/p99.9/max {us} us{tail}")

    def _trial(self, data: dict) -> None:
        rec: TrialEntry = data["record"]
        aim = rec.aim_pps if rec.aim_pps is not None else rec.rate_pps  # the rate the search wanted delivered
        pct = 100 * aim / data["max_rate_pps"]
        verdict = rec.verdict
        shown = self._paint(verdict, "32" if verdict == "pass" else "31" if verdict == "fail" else "33")
        kind = "valid." if rec.kind == "validation" else rec.kind
        got = min((d.achieved_pps for d in rec.outcome.directions), default=0.0)
        # a pass counts at what zlgen delivered, a loss at the pace (core/search/trials.py): both shown
        text = (f"{_size(data)}  trial {rec.index + 1:>2} {kind:<6} "
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
            explained = trial_text(data["frame"], rec, rec.ledger, rec.diagnosis or [], limit=3, compact=True)
            self._line("\n".join("        " + line for line in explained.splitlines()[1:]))
        elif self.tty:
            done = min(1.0, self.count / self.expected)
            bar = "#" * round(20 * done) + "." * (20 - round(20 * done))
            self.out.write(f"\r\033[K{text}  [{bar}]")
            self.out.flush()
        else:
            self._line(text)

    def _done(self, data: dict) -> None:
        res: SearchOutcome = data["result"]
        ndr = res.ndr
        rate = si(ndr.rate_pps, "pps") if ndr.rate_pps else "none"
        pct = f" ({ndr.line_rate_pct:.2f} % of line rate)" if ndr.line_rate_pct else ""
        flags = f"  [{', '.join(res.flags)}]" if res.flags else ""
        judged = data.get("verdict")
        if judged is not None and judged.bound and ndr.rate_pps:
            rate = "≥ " + rate  # only a lower bound is known
        if self.tty:
            self.out.write("\r\033[K")
        self._line(f"{_size(data)}  NDR {self._paint(rate, '1')}{pct} after {res.trials} trials{flags}")
        if judged is not None and judged.status in ("FAIL", "INCONCLUSIVE"):
            self._line(f"        {judged.status}: " + "; ".join(judged.reasons))

    def _line(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()
