"""The typed records of a result file's back-to-back frames benchmark (RFC 9004; results/records.py SearchEntry.b2b,
runs/b2b.py): each search's bursts and longest zero-loss burst, the ledger of its longest burst that lost frames,
and the statistics over the searches."""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.codec import Record
from zeroloss.loss.records import Finding, Ledger


@dataclass(frozen=True, kw_only=True)
class B2bBurst(Record):
    """One burst of a back-to-back search (core/search/b2b.py), in the order sent: frames asked for per direction, sent
    and lost (the worst direction's), the rate it went out at; verify: a resend of a burst that lost frames.

    sent counts the frames offered: a burst goes on until `frames` are taken, and a frame the DUT's full RX ring
    refused counts as lost and sent, so a burst that lost frames that way sent more than `frames` (runs/b2b.py)."""

    frames: int = 0
    sent: int = 0
    lost: int = 0
    rate_pps: float = 0.0
    verify: bool | None = None
    trial_id: int | None = None


@dataclass(frozen=True, kw_only=True)
class B2bRepeat(Record):
    """One of a frame size's N back-to-back searches (RFC 9004 §6.3): its longest zero-loss burst, its bursts, and
    the ledger of its longest burst that lost frames (where those frames were lost, hop by hop)."""

    longest: int = 0
    at_limit: bool = False  # the longest burst tried passed: a lower bound
    shortest_fail: int | None = None
    bursts: tuple[B2bBurst, ...] = ()
    fail_frames: int | None = None  # the longest burst that lost frames (asked, per direction), whose ledger follows
    fail_ledger: tuple[Ledger, ...] | None = None  # per direction, hop by hop (loss/ledger.py); "sent": frames offered
    fail_diagnosis: tuple[Finding, ...] | None = None  # findings (loss/diagnose.py), as TrialEntry.diagnosis


@dataclass(frozen=True, kw_only=True)
class B2bRecord(Record):
    """A frame size's back-to-back frames benchmark (RFC 2544 §26.4, RFC 9004 §6.4): N searches' longest bursts,
    their mean (the benchmark), minimum, maximum and standard deviation, and the DUT buffer time they imply.
    applicable False with no repeats: the frame size was not tested (RFC 9004 §6.1, its throughput is the maximum
    frame rate).

    "Max Theoretical Frame Rate" (RFC 9004 §6.4) is, on a physical link, the line rate at the minimum inter-frame
    gap. A burst here goes out as fast as zlgen sends (rate 0, frames mode), so the rate the buffer times divide by
    is `max_rate_pps`, zlgen's measured ceiling on the path (rate_basis says which); the nominal line rate, zlgen's
    loopback ceiling and the bursts' own rate are kept beside it."""

    repeats_wanted: int = 0  # N
    repeats: tuple[B2bRepeat, ...] = ()
    current: tuple[B2bBurst, ...] | None = None  # the unfinished search's bursts so far (a resumed run replays them)
    max_frames: int = 0  # the upper search limit, per direction (max_s at max_rate_pps; RFC 9004 §6.2, §7)
    max_s: float | None = None
    resolution_pct: float | None = None  # the search's step: % of the longest pass, at least 1 frame (RFC 9004 §7)
    verify: int | None = None
    idle_s: float | None = None  # RFC 9004 §6.2: least idle time after each burst's drain, longer for longer bursts
    max_rate_pps: float | None = None  # the Max Theoretical Frame Rate the buffer times divide by (rate_basis)
    rate_basis: str | None = None  # what max_rate_pps is on this path
    burst_rate_pps: float | None = None  # median of the bursts' own rates (first to last TX, bursts >= 1024 frames)
    loopback_pps: float | None = None  # zlgen's ceiling alone (its loopback), when measured
    line_rate_pps: float | None = None  # the nominal link's frame rate at this size
    throughput_pps: float | None = None  # Measured Throughput: the NDR of the frame size's searches (mean)
    applicable: bool | None = None  # RFC 9004 §6.1: throughput below the maximum frame rate
    mean: float | None = None
    min: int | None = None
    max: int | None = None
    stdev: float | None = None
    implied_buffer_s: float | None = None
    corrected_buffer_s: float | None = None

    @property
    def finished(self) -> bool:
        return self.repeats_wanted > 0 and len(self.repeats) >= self.repeats_wanted and self.mean is not None

    @property
    def at_limit(self) -> bool:
        """Some search ended at or near the upper limit (RFC 9004 §6.2: the limit passed, so the result is a lower
        bound, or the limit was its shortest losing burst): likely invalid, to be repeated with a higher b2b_max_s."""
        return any(r.at_limit or (r.shortest_fail is not None and r.shortest_fail == self.max_frames)
                   for r in self.repeats)

    @property
    def step(self) -> int | None:
        """The largest final step of the searches, frames (RFC 9004 §7's step size): shortest fail - longest pass."""
        steps = [r.shortest_fail - r.longest for r in self.repeats if r.shortest_fail is not None]
        return max(steps) if steps else None

