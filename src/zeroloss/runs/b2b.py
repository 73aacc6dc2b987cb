"""Back-to-back frames through a target (RFC 2544 §26.4, RFC 9004), after a frame size's NDR searches (RFC 9004 §5:
the Throughput first): a frame size whose NDR is the maximum frame rate is not tested (§6.1); the others get N
searches (core/search/b2b.py, §6.2, §6.3) for the longest burst zlgen sends flat out (frames mode, rate 0 on every
stream) that the DUT forwards without loss; every burst read with the DUT's counters around it, followed by the idle
time of §6.2, saved before the next one starts, and the longest burst that lost frames of each search kept with its
ledger (where those frames were lost).

A burst in frames mode ends when each stream's RX ring on the DUT has taken its share: a frame the full ring refused
is counted (tx_refused, a loss) and the next one is offered. So a burst that loses frames that way offers more frames
than asked (B2bBurst.sent) while one that passes offers exactly the frames asked; the verdict is the one a burst of
exactly that many frames offered would get (it fails as soon as one of them is refused).

A resumed run keeps the finished searches and replays the unfinished one's stored bursts (the search is a function
of its bursts' outcomes), so it asks again exactly where it stopped.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from collections.abc import Callable

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.search.b2b import B2bConfig, Burst, applicable, idle_s, longest_burst, stats
from zeroloss.loss.records import TrialDetail
from zeroloss.results.records import B2bBurst, B2bRecord, B2bRepeat
from zeroloss.results.resultfile import ResultFile
from zeroloss.targets.base import guarded

from .trial import TrialRunner, outcome_of

RATE_BASIS = ("zlgen's ceiling for this frame size, sending as fast as it can (frames mode, rate 0): the lower of "
              "its loopback ceiling alone and what it offered flat out beside the DUT (the MRR trial). The bench has "
              "no physical link whose line rate at the minimum gap would be the maximum frame rate, and a burst's own "
              "first-to-last TX time measures how fast the DUT's RX ring took it, not a rate on a wire (kept as "
              "burst_rate_pps)")
LINE_BASIS = "the ports' line rate at this frame size (RFC 9004 §6.4's Max Theoretical Frame Rate)"
START_FRAMES = 64
MAX_DRAIN_MS = 60_000  # zlgen's longest drain; a longer idle time is waited here


def burst_trial(runner: TrialRunner, frames: int, drain_ms: int) -> tuple[Burst, TrialDetail]:
    """One burst of `frames` per direction at zlgen's maximum rate, split over each direction's streams, with the
    counters of every stage read before and after it: what the burst did and the trial's details (ledger). The burst
    is followed by drain_ms of receiving and idle (RFC 9004 §6.2), the part beyond zlgen's longest drain slept here."""
    health = runner.probe.health
    health()
    per_stream = max(1, math.ceil(frames / max(1, runner.lanes)))
    before = guarded(health, runner.probe.counters)
    r = guarded(health, lambda: runner.client.run_trial(frames=per_stream, drain_ms=min(MAX_DRAIN_MS, drain_ms),
                                                        rate_pps=0.0, watch=health))
    if drain_ms > MAX_DRAIN_MS:
        time.sleep((drain_ms - MAX_DRAIN_MS) / 1000)
    after = guarded(health, runner.probe.counters)
    out = outcome_of(r, runner.refused_is_loss)
    # a frame of an earlier burst seen now, or one seen twice, is no proof of a lossless burst: it counts as a loss
    lost = max(d.lost if not d.anomalous else max(1, d.lost) for d in out.directions)
    rate = min(d.achieved_pps for d in out.directions)
    burst = Burst(sent=min(d.tx for d in out.directions), lost=lost, rate_pps=rate)
    detail = guarded(health, lambda: runner.detail_of(r, before, after, rate))  # the ledger of every stage
    return burst, detail


class B2bRun:
    """The back-to-back test of one frame size, stored in the entry of its first search (repeat 0)."""

    def __init__(self, cfg: RunConfig, rf: ResultFile, progress: Callable[[str, dict], None]):
        self.cfg = cfg
        self.rf = rf
        self.progress = progress

    def run(self, runner: TrialRunner, frame: int, ceiling_pps: float, line_pps: float) -> B2bRecord:
        """The frame size's N searches (those stored kept), each saved as it ends; ceiling_pps: what zlgen sends
        flat out on this path, the maximum frame rate here."""
        cfg = self.cfg
        ceiling = self.rf.run.ceiling(frame)
        loopback_pps = ceiling.pps if ceiling is not None and ceiling.how == "loopback" else None
        entry = self.rf.search(frame, 0)
        if entry is None:
            raise ZeroLossError(f"{frame} B: back-to-back frames need the frame size's search first")
        ndrs = [s.ndr.rate_pps for r in range(cfg.repeat) if (s := self.rf.search(frame, r)) is not None
                and s.ndr is not None and s.ndr.rate_pps]
        throughput = sum(ndrs) / len(ndrs) if ndrs else None  # RFC 9004 §6.4's Measured Throughput (RFC 2544 §26.1)
        stored = entry.b2b
        max_frames = max(1, math.ceil(cfg.b2b_max_s * ceiling_pps))
        if stored is not None and stored.max_frames != max_frames:
            stored = None  # other settings: its bursts answer another search
        rec = stored or B2bRecord(repeats_wanted=cfg.b2b_repeats, max_frames=max_frames, max_s=cfg.b2b_max_s,
                                  resolution_pct=cfg.b2b_resolution_pct, verify=1, idle_s=cfg.b2b_idle_s,
                                  rate_basis=RATE_BASIS if loopback_pps else LINE_BASIS, max_rate_pps=ceiling_pps,
                                  line_rate_pps=line_pps, loopback_pps=loopback_pps)
        rec = rec.with_(repeats_wanted=cfg.b2b_repeats, throughput_pps=throughput)
        if not applicable(throughput, ceiling_pps, cfg.b2b_resolution_pct):  # RFC 9004 §6.1: not tested
            rec = rec.with_(applicable=False, repeats=(), current=None)
            self.rf.set_b2b(frame, 0, rec)
            self.progress("b2b_skip", {"frame": frame, "record": rec})
            return rec
        scfg = B2bConfig(max_frames=max_frames, start_frames=min(START_FRAMES, max_frames),
                         resolution_pct=cfg.b2b_resolution_pct, verify=1)

        def drain_ms(n: int) -> int:
            """Receive (the run's drain), then RFC 9004 §6.2's idle: b2b_idle_s, longer for a longer burst."""
            return cfg.drain_ms + round(idle_s(n, ceiling_pps, cfg.b2b_idle_s) * 1000)

        done = list(rec.repeats)
        while len(done) < cfg.b2b_repeats:
            rep = self._one(runner, frame, rec.with_(repeats=tuple(done)), scfg, drain_ms)
            done.append(rep)
            rec = summarise(rec.with_(repeats=tuple(done), current=None))
            self.rf.set_b2b(frame, 0, rec)
            self.progress("b2b", {"frame": frame, "repeat": len(done) - 1, "of": cfg.b2b_repeats, "result": rep,
                                  "record": rec})
        rec = summarise(rec)
        self.rf.set_b2b(frame, 0, rec)
        return rec


    def _one(self, runner: TrialRunner, frame: int, rec: B2bRecord, scfg: B2bConfig,
             drain_ms: Callable[[int], int]) -> B2bRepeat:
        """One search (RFC 9004 §6.3's repeat): the stored bursts of an unfinished one replayed first, each live burst
        saved before the next, the longest burst that lost frames kept with its ledger."""
        replay = deque(rec.current or ())
        bursts: list[B2bBurst] = []
        failed: dict[int, TrialDetail] = {}  # the longest burst that lost frames so far: its frames, its detail

        def send(n: int) -> Burst:
            if replay and replay[0].frames == n:
                b = replay.popleft()
                bursts.append(b)
                return Burst(sent=b.sent, lost=b.lost, rate_pps=b.rate_pps)
            replay.clear()
            burst, detail = burst_trial(runner, n, drain_ms(n))
            bursts.append(B2bBurst(frames=n, sent=burst.sent, lost=burst.lost, rate_pps=round(burst.rate_pps, 1),
                                   verify=bool(bursts and bursts[-1].frames == n and bursts[-1].lost) or None,
                                   trial_id=detail.trial_id))
            if not burst.passed and n > max(failed, default=0):
                failed.clear()
                failed[n] = detail
            self.rf.set_b2b(frame, 0, rec.with_(current=tuple(bursts)))
            return burst

        res = longest_burst(scfg, send)
        n, d = next(iter(failed.items()), (None, None))
        return B2bRepeat(longest=res.longest, at_limit=res.at_limit, shortest_fail=res.shortest_fail,
                         bursts=tuple(bursts), fail_frames=n, fail_ledger=None if d is None else d.ledger,
                         fail_diagnosis=None if d is None else d.diagnosis)

def summarise(rec: B2bRecord) -> B2bRecord:
    """RFC 9004 §6.4's calculations over the searches so far: the mean, minimum, maximum and standard deviation
    of their longest bursts and the buffer times at the maximum frame rate (max_rate_pps, rate_basis)."""
    if not rec.repeats or not rec.max_rate_pps:
        return rec
    long = sorted(b.rate_pps for r in rec.repeats for b in r.bursts if b.frames >= 1024 and b.rate_pps > 0)
    s = stats([r.longest for r in rec.repeats], rec.max_rate_pps, rec.throughput_pps)
    return rec.with_(burst_rate_pps=round(statistics.median(long), 1) if long else None, mean=s.mean, min=s.min,
                     max=s.max, stdev=s.stdev, implied_buffer_s=s.implied_buffer_s,
                     corrected_buffer_s=s.corrected_buffer_s,
                     applicable=applicable(rec.throughput_pps, rec.max_rate_pps, rec.resolution_pct or 1.0))

def b2b_done(rec: B2bRecord | None, cfg: RunConfig) -> bool:
    """Whether a frame size has the back-to-back searches the run asks (or needs none: not asked, or not applicable
    by RFC 9004 §6.1)."""
    return not cfg.b2b or (rec is not None and (rec.applicable is False and not rec.repeats
                                                or len(rec.repeats) >= cfg.b2b_repeats and rec.mean is not None))
