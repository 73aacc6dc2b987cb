"""The search's trial callback: a live trial through a target with every stage's counters, ledger and diagnosis
around it, or a stored trial given back when a search resumes."""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, replace

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.latency import Histogram, mark_lost, of_streams
from zeroloss.core.model import StreamResult, TrialResult
from zeroloss.core.search import Direction, Kind, Outcome
from zeroloss.drivers.dut.ovsstats import pmd_perf_delta
from zeroloss.drivers.probe.interference import Interference, delta, ring_ms, snapshot
from zeroloss.drivers.probe.telemetry import trial_record
from zeroloss.loss.diagnose import analysis
from zeroloss.loss.ledger import counter_delta
from zeroloss.loss.records import TrialDetail, TrialDirection
from zeroloss.results.records import TrialEntry
from zeroloss.targets.base import Target, by_direction, gen_counters, guarded

CEILING_S = 1.0


def outcome_of(r: TrialResult, refused_is_loss: bool) -> Outcome:
    """The search's view of a trial, one Direction per direction. On a virtual wire a frame the device
    refuses was refused by the DUT's full RX ring (backpressure): it was offered, so it counts as sent
    and lost, not as a generator failure. On a NIC a refused frame never left the generator's TX ring."""
    dirs = []
    for group in by_direction(r).values():
        refused = sum(s.tx_refused for s in group) if refused_is_loss else 0
        tx = sum(s.tx_pkts for s in group) + refused
        achieved = tx / r.tx_window_s if r.tx_window_s else sum(s.achieved_pps for s in group)
        dirs.append(Direction(requested_pps=sum(s.requested_pps for s in group), achieved_pps=achieved, tx=tx,
                              rx=sum(s.rx_unique for s in group), duplicate=sum(s.duplicate for s in group),
                              late=sum(s.late for s in group), latency_ns=direction_latency(group, refused_is_loss)[0]))
    return Outcome(tuple(dirs))


def direction_latency(group: list[StreamResult], refused_is_loss: bool = True) -> tuple[dict, Histogram | None]:
    """A direction's latency percentiles and its streams' histograms merged (zeroloss.core.latency); from a zlgen that
    exports no buckets, the worst stream's percentiles and no histogram.

    Over the frames sent, the lost ones at the top (latency.Histogram.percentile says why): a percentile they reach
    is the largest value measured, listed in "lost_tail" (a lower bound), never the smaller figure of the frames that
    arrived. Lost: sent and not received, a frame the virtual wire refused counted sent as outcome_of counts it (on
    a NIC, refused_is_loss=False: it never left zlgen; the default counts it, so a mark errs on the side of a bound)."""
    refused = sum(s.tx_refused for s in group) if refused_is_loss else 0
    lost = max(0, sum(s.tx_pkts for s in group) + refused - sum(s.rx_unique for s in group))
    hist = of_streams(((asdict(s.latency_ns), s.latency_hist) for s in group), lost)
    if hist is None:
        lat = [asdict(s.latency_ns) for s in group]
        worst = {k: max(x[k] for x in lat) for k in lat[0]}
        return mark_lost({**worst, "count": sum(s.latency_ns.count for s in group)}, lost), None
    return hist.percentiles(), hist


class TrialRunner:
    """The search's trial callback: replays stored trials of a resumed search, then measures live."""

    def __init__(self, target: Target, cfg: RunConfig, frame: int, replay: list[TrialEntry]):
        """Configures the target's streams for the frame size; replay: the trials a resumed search stored."""
        self.client = target.client
        self.refused_is_loss = target.refused_is_loss
        self.cfg = cfg
        self.frame = frame
        self.probe = target.probe()
        self.replay = deque(replay)
        self.detail: TrialDetail | None = None  # the last live trial's, for the search's on_trial (runs/run.py)
        self.replaying = False
        self.lanes = target.lanes
        self.nb_streams = self.client.configure(target.streams(frame, 0))

    def __call__(self, rate_pps: float, duration_s: float, kind: Kind) -> Outcome:
        if self.replay:
            stored = self.replay.popleft()
            try:
                return self._replayed(stored, rate_pps, kind)
            except (TypeError, ValueError, AttributeError) as e:  # a damaged file: one line, not a trace
                raise ZeroLossError(f"cannot resume: a stored trial of {self.frame} B is damaged "
                                    f"({type(e).__name__}: {e})", "start a new run") from e
        self.replaying = False
        out, self.detail = self.measure(rate_pps, duration_s)
        return out

    def _replayed(self, stored: TrialEntry, rate_pps: float, kind: Kind) -> Outcome:
        """A stored trial given back to the search, if it is the one the search asks for now."""
        if abs(stored.rate_pps - rate_pps) > 0.5 or stored.kind != kind.value:
            raise ZeroLossError(f"cannot resume: stored trial {stored.index} of {self.frame} B ran at "
                                f"{stored.rate_pps:.0f} pps, the search now asks {rate_pps:.0f} pps",
                                "the file was made with other settings or an older zeroloss; start a new run")
        self.replaying = True
        return stored.outcome.outcome()

    def measure(self, rate_pps: float, duration_s: float) -> tuple[Outcome, TrialDetail]:
        """One live trial with the counters of every stage and the host's stalls of every poller read around it,
        and every process of the bench checked before and after each step: the search's view and the detail."""
        health = self.probe.health
        health()
        refs = guarded(health, self.probe.threads)
        perf = self.probe.perf
        before = guarded(health, self.probe.counters)
        perf_before = guarded(health, perf) if perf else None
        start = snapshot(refs)
        tel = self.probe.telemetry  # the DUT host's CPUs, interrupts and processes (host.telemetry)
        tel_before = guarded(health, tel) if tel else None
        # zlgen never catches up more than half the DUT's smallest RX ring after a pause (burst() says why)
        catchup = max(1, min(self.probe.rings.values()) // 2) if self.probe.rings else None
        r = guarded(health, lambda: self.client.run_trial(
            duration_s=duration_s, drain_ms=self.cfg.drain_ms,
            rate_pps=[rate_pps / self.lanes] * self.nb_streams, watch=health, catchup_max=catchup))
        stalls = delta(start, snapshot(refs))
        tel_after = guarded(health, tel) if tel else None
        after = guarded(health, self.probe.counters)
        out = outcome_of(r, self.refused_is_loss)
        disturbed = self.disturbance(out, stalls, rate_pps) or self.burst(out, r)
        detail = guarded(health, lambda: self.detail_of(r, before, after, rate_pps))
        pmd = {}
        if perf and perf_before is not None:  # each PMD's longest iteration: its own stalls, whatever caused them
            perf_after = guarded(health, perf)
            pmd = {"pmd_perf": pmd_perf_delta(perf_before, perf_after)}
        detail = detail.with_(interference={**stalls.to_json(), "stall_ms": stalls.stall_ms_by_core(),
                                            "disturbed": disturbed, **pmd})
        if tel_before is not None and tel_after is not None:
            detail = detail.with_(telemetry=trial_record(tel_before, tel_after, perf_before,
                                                         perf_after if perf else None, detail.counters))
        return replace(out, disturbed=disturbed, gen_stalled=self.gen_stall(out, stalls, duration_s)), detail

    def disturbance(self, out: Outcome, stalls: Interference, rate_pps: float) -> str | None:
        """The sentence naming a core that stalled longer than its RX ring covers at this rate, when the trial lost
        frames (a stall in a trial that lost nothing changed nothing). Rings hold a queue's share of a direction."""
        if not self.probe.rings or not any(d.lost > 0 for d in out.directions):
            return None
        per_queue = rate_pps / max(1, self.lanes)
        return stalls.disturbance({c: ring_ms(n, per_queue) for c, n in self.probe.rings.items()})

    @staticmethod
    def gen_stall(out: Outcome, stalls: Interference, duration_s: float) -> str | None:
        """The sentence naming the host's stall of zlgen's core when it explains zlgen's shortfall: a direction
        delivered more than 1 % short of its pace, and zlgen's busiest thread waited for its core (run delay) at
        least half as long as the frames it did not send would have taken. zlgen skips frames only when late, so a
        shortfall with such a wait is the host's; without one it is zlgen's own (a generator limit)."""
        worst = max(out.directions, key=lambda d: 1 - d.achieved_pps / d.requested_pps if d.requested_pps else 0)
        if not worst.requested_pps or worst.achieved_pps >= 0.99 * worst.requested_pps:
            return None
        missing_ms = 1e3 * duration_s * (1 - worst.achieved_pps / worst.requested_pps)
        gen = [t for t in stalls.threads if t.role == "zlgen"]
        waited = max(gen, key=lambda t: t.run_delay_ms, default=None)
        if waited is None or waited.run_delay_ms < missing_ms / 2:
            return None
        return (f"zlgen's thread {waited.name} waited {waited.run_delay_ms:.0f} ms for its core "
                f"({waited.nonvoluntary} preemptions), {missing_ms:.0f} ms of sending missed")

    def burst(self, out: Outcome, r: TrialResult) -> str | None:
        """The sentence naming a catch-up of zlgen larger than half the DUT's smallest RX ring, when the trial lost
        frames. zlgen never runs ahead of its schedule; after a pause shorter than its gap it sends what fell due
        (pace_max_backlog frames at most, per stream and so per queue) as fast as it can. Every window of the trial
        then carried at most the pace's share plus that backlog: a DUT that forwards the pace holds it in its ring
        when the backlog fits in half of it (the other half for the queue the pace itself builds), so a loss is
        the DUT's at the pace. A larger catch-up may have made the loss: the trial is disturbed, retried. measure()
        asks zlgen for no more (catchup_max): this is the check of what it did."""
        if not self.probe.rings or not any(d.lost > 0 for d in out.directions):
            return None
        ring = min(self.probe.rings.values())
        worst = max(r.streams, key=lambda s: s.pace_max_backlog, default=None)
        if worst is None or 2 * worst.pace_max_backlog <= ring:
            return None
        return (f"zlgen caught up {worst.pace_max_backlog} frames at once after a pause (stream {worst.id}), more "
                f"than half the DUT's {ring}-slot RX ring holds")

    def detail_of(self, r: TrialResult, before: dict, after: dict, rate_pps: float) -> TrialDetail:
        """The trial's record beyond the search's view: counters of every stage over the trial (before and after
        it, as the probe read them), the ledger of each direction hop by hop, the diagnosis when frames were lost,
        and the DUT's state."""
        c = {**(counter_delta(after, before) or {}), "gen": gen_counters(r, self.refused_is_loss)}
        state = self.probe.state() if self.probe.state else None
        ctx = {**self.probe.context, "frame": self.frame, "rate_pps": rate_pps, "flows": self.cfg.flows}
        groups = by_direction(r)
        leds, diag = analysis(self.probe.paths, c, state, ctx, {tx for tx, _ in groups})
        by_side = {led.tx_side: led for led in leds}
        directions = []
        for (port, rx_port), group in groups.items():
            lat, hist = direction_latency(group, self.refused_is_loss)  # every stream (queue) merged
            directions.append(TrialDirection(
                port=port, rx_port=rx_port, tx_refused=sum(s.tx_refused for s in group),
                pace_skipped=sum(s.pace_skipped for s in group), pace_restarts=sum(s.pace_restarts for s in group),
                # zlgen's longest lateness behind its TX schedule: its own stall
                pace_max_late_ns=max(s.pace_max_late_ns for s in group),
                pace_max_backlog=max(s.pace_max_backlog for s in group), reordered=sum(s.reordered for s in group),
                ledger=by_side[port].summary(), latency_ns=lat, latency_hist=hist.to_json() if hist else None))
        return TrialDetail(trial_id=r.trial, tx_window_s=r.tx_window_s, directions=tuple(directions), counters=c,
                           ledger=tuple(leds), diagnosis=tuple(diag), dut_state=state)


def flat_out(target: Target, frame: int, seconds: float = CEILING_S) -> tuple[float, float]:
    """(received, offered) frames per second per direction when zlgen sends as fast as it can for seconds, each
    of the slowest direction; offered counts the frames a virtual wire refused."""
    client = target.client
    client.configure(target.streams(frame, 0))
    r = client.run_trial(duration_s=seconds, drain_ms=200)
    groups = by_direction(r).values()
    rx = min(sum(s.rx_unique for s in g) for g in groups) / r.tx_window_s
    offered = min(sum(s.tx_pkts + s.tx_refused for s in g) for g in groups) / r.tx_window_s
    return rx, offered
