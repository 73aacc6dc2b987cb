"""`zeroloss run`: the generator ceiling, then a zero-loss search per frame size on the bench or an
external DUT, every trial saved to the result file before the next one starts."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TypeVar

from zeroloss.results.records import (
    Ceiling,
    CoreProbe,
    LatencyAtNdr,
    OutcomeRecord,
    SearchOutcome,
    TrialEntry,
    Warmup,
)
from zeroloss.results.resultfile import ResultFile
from zeroloss.search import Direction, Kind, Outcome, SearchConfig, SearchResult, TrialRecord, binary_search
from zeroloss.search.mlr import mlr_search

from .bench.ovsbench import VNFS, OvsBench, OvsBenchSpec, flows
from .bench.softbench import BenchSpec, SoftBench
from .bench.vnfs import vnf_placement, vnf_settings
from .bench.workspace import Workspace
from .config import OVS_TOPOLOGIES, RunConfig
from .cores import lcore_set, mask_set
from .dpdk import hugepages
from .dpdk.eal import Eal
from .errors import ZeroLossError
from .explain import analyse
from .gen import Zlgen, ZlgenClient, ZlgenConfig
from .host import coreprobe
from .ledger import STAT_KEYS, counter_delta, external_paths, p2p_paths, queue_spread, summary
from .model import TrialResult, line_rate_pps
from .proc import ComponentDied

T = TypeVar("T")


@dataclass
class Probe:
    """What the runner reads around each trial besides zlgen: the counters of every stage (before and after),
    the path each direction's frames take through them (for the loss ledger), and the DUT's state after it."""

    paths: list[dict]
    counters: Callable[[], dict] = dict
    state: Callable[[], dict] | None = None
    context: dict = field(default_factory=dict)  # for the diagnosis: queues, vnf_ring, pmd_cpu_mask, vnfs
    health: Callable[[], None] = lambda: None  # raises ComponentDied when a process of the bench is gone


def guarded(health: Callable[[], None], fn: Callable[[], T]) -> T:
    """fn's result, with every process of the bench checked after it: a trial during which the DUT, a VNF, OVS
    or zlgen died is never a result, and when fn fails because one died the error names that process."""
    try:
        out = fn()
    except (ZeroLossError, OSError, ValueError):
        # a dead process is the cause: name it rather than its symptom. A process killed a moment ago may still
        # be exiting when its peers already see its sockets close: give it a second to be seen gone
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            health()
            time.sleep(0.05)
        raise
    health()
    return out


def dpdk_counters(stats: dict) -> dict:
    """A DPDK process's port counters as the ledger keeps them: the totals and per-queue packets."""
    return {k: v for k, v in stats.items() if k in STAT_KEYS or k in ("q_ipackets", "q_opackets")}


def ovs_probe(bench: OvsBench) -> Probe:
    """The stages of an OVS bench: OVS's ports, datapath and PMDs, and the VNFs' ports."""
    spec = bench.spec
    return Probe(bench.paths(), bench.counters, bench.state, context={
        "queues": spec.queues, "vnf_ring": spec.vnf_ring if spec.vnf_ports else None,
        "pmd_cpu_mask": spec.pmd_cpu_mask, "vnfs": [f"vnf{k}" for k in range(VNFS[spec.topology])], "bench": True},
        health=bench.check)


def gen_counters(r: TrialResult, refused_is_loss: bool) -> dict:
    """zlgen's part of a trial's counters: per direction (by TX side) what it offered, sent and received
    unique, and per port its DPDK counters."""
    dirs = {}
    for (tx, _), group in by_direction(r).items():
        refused = sum(s.tx_refused for s in group) if refused_is_loss else 0
        sent = sum(s.tx_pkts for s in group)
        dirs[str(tx)] = {"offered": sent + refused, "tx": sent, "refused": refused,
                         "rx_unique": sum(s.rx_unique for s in group), "late": sum(s.late for s in group),
                         "duplicate": sum(s.duplicate for s in group)}
    ports = [{**asdict(p.ethdev), "rx_foreign": p.rx_foreign} for p in r.ports]
    return {"dirs": dirs, "ports": ports, "window_s": r.tx_window_s}
PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
CEILING_S = 1.0
STRATEGIES = {"binary": binary_search, "mlr": mlr_search}
# the search's top is at most this much above the DUT's MRR: a DUT that lost frames when zlgen sent flat out
# forwards no more than that paced, give or take what its rings absorb
MRR_MARGIN = 1.05
# how the generator's own ceiling is measured, per wire: stored with each ceiling in the result file
CEILING_METHODS = {
    "memif": "zlgen alone: its two ports joined by one memif wire, nothing in between",
    "vhost": "zlgen alone: its net_vhost port joined to its own net_virtio_user port (queue size 4096) in one "
             "process, nothing in between; zlgen also does the vhost side's copies there, so this is a lower "
             "bound of its ceiling on the DUT's vhost-user ports",
}


def link_for(cfg: RunConfig, frame: int) -> str:
    """memif up to 1518 B; vhost-user above (memif reports a 1518 B maximum and copies jumbo frames slowly)."""
    if cfg.link != "auto":
        return cfg.link
    return "memif" if frame <= 1518 else "vhost"


def groups(cfg: RunConfig) -> list[tuple[str, list[int]]]:
    """Frame sizes grouped by the wire they need, in the order given (one bench per group)."""
    out: list[tuple[str, list[int]]] = []
    for frame in cfg.frame_sizes:
        link = link_for(cfg, frame)
        if out and out[-1][0] == link:
            out[-1][1].append(frame)
        else:
            out.append((link, [frame]))
    return out


def _ip(value: int) -> str:
    return ".".join(str(value >> s & 255) for s in (24, 16, 8, 0))


def streams(cfg: RunConfig, frame: int, rate_pps: float, queues: int = 1, members: int = 1) -> list[dict]:
    """Streams of each direction (side A -> B and, when bidirectional, B -> A), one per TX queue of each
    of the side's zlgen ports (members: 2 when bonded; zlgen port p is on side p % 2). The direction's
    rate and flows are split over its lanes (ports x queues), each lane with its own flows."""
    lanes = queues * members
    per_lane = max(1, cfg.flows // lanes)
    out = []
    for side, rx_side in ((0, 1), (1, 0))[:2 if cfg.bidirectional else 1]:
        for m in range(members):
            for q in range(queues):
                lane = m * queues + q
                src = (198 << 24 | 18 << 16 | side << 8 | 1) + lane * per_lane  # RFC 2544 benchmark range
                dst = (198 << 24 | 19 << 16 | rx_side << 8 | 1)
                out.append({"port": side + 2 * m, "queue": q, "rx_port": rx_side + 2 * m, "frame_size": frame,
                            "flows": per_lane, "flow_fields": list(cfg.flow_fields), "rate_pps": rate_pps / lanes,
                            "src_ip": _ip(src), "dst_ip": _ip(dst),
                            **({"vlan": cfg.vlan} if cfg.vlan >= 0 else {})})
    return out


def by_direction(r: TrialResult) -> dict[tuple[int, int], list]:
    """The streams of a trial grouped by direction (tx side, rx side); zlgen port p is on side p % 2."""
    out: dict[tuple[int, int], list] = {}
    for s in r.streams:
        out.setdefault((s.port % 2, s.rx_port % 2), []).append(s)
    return out


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
                              late=sum(s.late for s in group)))
    return Outcome(tuple(dirs))


class TrialRunner:
    """The search's trial callback: replays stored trials of a resumed search, then measures live."""

    def __init__(self, client: ZlgenClient, cfg: RunConfig, frame: int, probe: Probe, replay: list[TrialEntry],
                 refused_is_loss: bool, make_streams: Callable[[int, float], list[dict]] | None = None,
                 lanes: int = 0):
        """make_streams(frame, rate) and lanes (streams per direction): a lab's streams instead of the bench's."""
        self.client = client
        self.refused_is_loss = refused_is_loss
        self.cfg = cfg
        self.frame = frame
        self.probe = probe
        self.replay = deque(replay)
        self.detail: dict = {}
        self.replaying = False
        queues = cfg.dut_rxq if cfg.dut not in ("external", "lab") else 1
        members = 2 if cfg.bond != "none" else 1
        self.lanes = lanes or queues * members
        made = make_streams(frame, 0) if make_streams else streams(cfg, frame, 0, queues, members)
        self.nb_streams = client.configure(made)

    def __call__(self, rate_pps: float, duration_s: float, kind: Kind) -> Outcome:
        if self.replay:
            stored = self.replay.popleft()
            try:
                return self._replayed(stored, rate_pps, kind)
            except (TypeError, ValueError, AttributeError) as e:  # a damaged file: one line, not a trace
                raise ZeroLossError(f"cannot resume: a stored trial of {self.frame} B is damaged "
                                    f"({type(e).__name__}: {e})", "start a new run") from e
        self.replaying = False
        return self.measure(rate_pps, duration_s)

    def _replayed(self, stored: TrialEntry, rate_pps: float, kind: Kind) -> Outcome:
        """A stored trial given back to the search, if it is the one the search asks for now."""
        if abs(stored.rate_pps - rate_pps) > 0.5 or stored.kind != kind.value:
            raise ZeroLossError(f"cannot resume: stored trial {stored.index} of {self.frame} B ran at "
                                f"{stored.rate_pps:.0f} pps, the search now asks {rate_pps:.0f} pps",
                                "the file was made with other settings or an older zeroloss; start a new run")
        self.replaying = True
        return stored.outcome.outcome()

    def measure(self, rate_pps: float, duration_s: float) -> Outcome:
        """One live trial with the counters of every stage read around it, and every process of the bench
        checked before and after each step."""
        health = self.probe.health
        health()
        before = guarded(health, self.probe.counters)
        r = guarded(health, lambda: self.client.run_trial(
            duration_s=duration_s, drain_ms=self.cfg.drain_ms,
            rate_pps=[rate_pps / self.lanes] * self.nb_streams, watch=health))
        after = guarded(health, self.probe.counters)
        self.detail = guarded(health, lambda: self._details(r, before, after, rate_pps))
        return outcome_of(r, self.refused_is_loss)

    def _details(self, r: TrialResult, before: dict, after: dict, rate_pps: float) -> dict:
        """The trial's record beyond the search's view: counters of every stage over the trial, the ledger of
        each direction hop by hop, the diagnosis when frames were lost, and the DUT's state."""
        c = counter_delta(after, before) or {}
        c["gen"] = gen_counters(r, self.refused_is_loss)
        state = self.probe.state() if self.probe.state else None
        ctx = {**self.probe.context, "frame": self.frame, "rate_pps": rate_pps}
        groups = by_direction(r)
        leds, diag = analyse(self.probe.paths, c, state, ctx, {tx for tx, _ in groups})
        by_side = {led["tx_side"]: led for led in leds}
        directions = []
        for (port, rx_port), group in groups.items():
            lat = [asdict(s.latency_ns) for s in group]
            directions.append({"port": port, "rx_port": rx_port, "tx_refused": sum(s.tx_refused for s in group),
                               "pace_skipped": sum(s.pace_skipped for s in group),
                               "pace_restarts": sum(s.pace_restarts for s in group),
                               "reordered": sum(s.reordered for s in group), "ledger": summary(by_side[port]),
                               # worst queue's percentiles (merging histograms would need the buckets)
                               "latency_ns": {k: max(x[k] for x in lat) for k in lat[0]}})
        detail: dict = {"trial_id": r.trial, "tx_window_s": r.tx_window_s, "directions": directions,
                        "counters": c, "ledger": leds, "diagnosis": diag}
        if state is not None:
            detail["dut_state"] = state
        return detail


def flat_out(client: ZlgenClient, cfg: RunConfig, frame: int, queues: int = 1,
             members: int = 1) -> tuple[float, float]:
    """(received, offered) frames per second per direction when zlgen sends as fast as it can, each of the
    slowest direction; offered counts the frames a virtual wire refused."""
    client.configure(streams(cfg, frame, 0, queues, members))
    r = client.run_trial(duration_s=CEILING_S, drain_ms=200)
    groups = by_direction(r).values()
    rx = min(sum(s.rx_unique for s in g) for g in groups) / r.tx_window_s
    offered = min(sum(s.tx_pkts + s.tx_refused for s in g) for g in groups) / r.tx_window_s
    return rx, offered


def measure_ceiling(client: ZlgenClient, cfg: RunConfig, frame: int, queues: int = 1, members: int = 1) -> float:
    """Frames per second per direction that arrive when zlgen sends as fast as it can (the slowest direction)."""
    return flat_out(client, cfg, frame, queues, members)[0]


class Run:
    """One `zeroloss run`: owns the result file and reports progress through a callback."""

    def __init__(self, cfg: RunConfig, rf: ResultFile, progress: Callable[[str, dict], None]):
        self.cfg = cfg.effective()
        self.rf = rf
        self.progress = progress
        self.link_bps = self.cfg.link_speed_gbps * 1e9

    def execute(self) -> None:
        if self.cfg.dut == "lab":
            from .lab.labrun import run_lab

            run_lab(self)
        elif self.cfg.dut == "external":
            self._external()
        elif self.cfg.topology in OVS_TOPOLOGIES:
            self._ovs()
        else:
            for link, frames in groups(self.cfg):
                self._bench_group(link, frames)
        self.rf.set_state("complete")

    def _todo(self, frames: list[int]) -> list[int]:
        return [f for f in frames if any(not (s := self.rf.search(f, r)) or not s.finished
                                         for r in range(self.cfg.repeat))]

    def _bench_group(self, link: str, frames: list[int]) -> None:
        frames = self._todo(frames)
        if not frames:
            return
        cfg = self.cfg
        spec = BenchSpec(dut="testpmd", link=link, forward_mode=cfg.forward_mode, max_frame=max(1518, *frames),
                         depth=cfg.ring_depth_log2, gen_lcores=cfg.gen_lcores, dut_lcores=cfg.dut_lcores,
                         dut_main_lcore=cfg.dut_main_lcore, dut_rxq=cfg.dut_rxq, gap_us=cfg.pace_gap_us)
        self._probe_cores(frames, lcore_set("gen_lcores", cfg.gen_lcores) | lcore_set("dut_lcores", cfg.dut_lcores))
        with Workspace() as ws:
            ceilings = self._ceilings_loopback(ws, link, frames, spec.max_frame, spec.depth)
            with SoftBench(spec, ws) as bench, bench.dut.telemetry() as tel:
                self._place(link, bench.gen.client, {"zlgen_lcores": cfg.gen_lcores, "testpmd_lcores": cfg.dut_lcores,
                                                     "testpmd_main_lcore": cfg.dut_main_lcore})
                probe = Probe(p2p_paths(), lambda: {"procs": {"dut": [dpdk_counters(tel.ethdev_stats(p))
                                                                      for p in (0, 1)]}},
                              context={"queues": cfg.dut_rxq, "bench": True}, health=bench.check)
                self._frames(bench.gen.client, frames, link, ceilings, probe)

    def _ovs(self) -> None:
        """ovs-p2p, pvp or pvvp through a private OVS-DPDK; the ceiling is measured through it."""
        frames = self._todo(list(self.cfg.frame_sizes))
        if not frames:
            return
        cfg = self.cfg
        spec = OvsBenchSpec(topology=cfg.topology, max_frame=max(1518, *frames), queues=cfg.dut_rxq,
                            vnf_ring=cfg.vnf_ring, vnf_forward_mode=cfg.forward_mode, gen_lcores=cfg.gen_lcores,
                            gap_us=cfg.pace_gap_us, bridges=cfg.bridges, vlan=cfg.vlan, bond=cfg.bond,
                            meter_pps=cfg.meter_pps, socket_mem_mb=cfg.ovs_socket_mem_mb,
                            socket_limit_mb=cfg.ovs_socket_limit_mb or cfg.ovs_socket_mem_mb,
                            lcore_mask=cfg.ovs_lcore_mask,
                            pmd_cpu_mask=cfg.ovs_pmd_cpu_mask, rxq_assign=cfg.ovs_rxq_assign,
                            dpdk_extra=tuple(cfg.ovs_dpdk_extra.split()), rxd=cfg.ovs_rxd, txd=cfg.ovs_txd,
                            tx_retries_max=cfg.ovs_tx_retries_max, **vnf_settings(cfg))
        vnf_cores = lcore_set("vnf_lcores", spec.vnf_lcores) if spec.vnf_ports and spec.vnf == "process" else set()
        self._probe_cores(frames, lcore_set("gen_lcores", spec.gen_lcores) | mask_set(spec.pmd_cpu_mask) | vnf_cores)
        with Workspace() as ws:
            ceilings = self._ceilings_loopback(ws, "vhost", frames, spec.max_frame, spec.gen_ring.bit_length() - 1,
                                               spec.members)
        with Workspace() as ws, OvsBench(spec, ws) as bench:
            self._place(cfg.topology, bench.gen.client, {
                "zlgen_lcores": spec.gen_lcores, "zlgen_ports": list(spec.gen_ports),
                **({"vnf_lcores": spec.vnf_lcores, "vnf_main_lcore": spec.vnf_main_lcore}
                   if spec.vnf_ports and spec.vnf == "process" else {}),
                "vnfs": len(spec.vnf_ports) // 2, "ovs_pmd_cpu_mask": spec.pmd_cpu_mask, "vnf_ring": spec.vnf_ring,
                "ovs_mtu_request": spec.mtu, "ovs_n_rxq": spec.queues, "ovs_socket_mem_mb": spec.socket_mem_mb,
                "ovs_rxq_assign": spec.rxq_assign, "ovs_rxd": spec.rxd, "ovs_txd": spec.txd,
                "bridges": spec.bridges, "vlan": spec.vlan, "bond": spec.bond,
                "meter_pps": spec.meter_pps, "flows": flows(spec), **vnf_placement(spec, bench)})
            self._frames(bench.gen.client, frames, cfg.topology, ceilings, ovs_probe(bench))

    def _probe_cores(self, frames: list[int], cores: set[int]) -> None:
        """Whether the cores the bench's processes will poll on run independently (host/coreprobe.py), measured
        before any of them starts; kept per group of frame sizes, a shared reading also as a warning. A probe
        that cannot run is a warning too: it never stops the run."""
        if not self.cfg.core_probe or len(cores) < 2:
            return
        try:
            reading = coreprobe.probe(sorted(cores))
        except ZeroLossError as e:
            self.rf.warn(f"core probe: {e}")
            return
        self.progress("cores", {"cores": sorted(cores), "line": coreprobe.describe(reading)})
        self.rf.add_core_probe(CoreProbe.from_json({"frames": frames, **reading}))
        if reading["shared"]:
            self.rf.warn(f"{coreprobe.describe(reading)}: NDRs measured on them are the sharing's, not the data "
                         "path's; pin the generator and the DUT to separate physical cores")

    def _place(self, key: str, client: ZlgenClient, info: dict) -> None:
        self.rf.set_placement(key, {**info, "dpdk": client.hello()["dpdk"]})

    def _frames(self, client: ZlgenClient, frames: list[int], link: str, ceilings: dict[int, float],
                probe: Probe) -> None:
        """Searches each frame size between zlgen's own ceiling and what the DUT forwards when zlgen sends as
        fast as it can (its maximum receive rate, MRR: the top of the search range, never a ceiling)."""
        members = 2 if self.cfg.bond != "none" else 1
        for frame in frames:
            mrr, offered = self._mrr(frame, lambda f=frame: guarded(
                probe.health, lambda: flat_out(client, self.cfg, f, self.cfg.dut_rxq, members)))
            for rep in range(self.cfg.repeat):
                self._search(client, probe, frame, rep, link, min(ceilings[frame], offered), mrr)

    def _mrr(self, frame: int, measure: Callable[[], tuple[float, float]]) -> tuple[float, float]:
        """The DUT's maximum receive rate (MRR) and what zlgen, running beside the DUT, offered flat out meanwhile
        (the generator's limit on this path, at most its ceiling alone)."""
        entry = self.rf.run.ceiling(frame)
        assert entry is not None  # measured before: _ceilings_loopback
        if entry.mrr_pps is None:
            self.progress("mrr", {"frame": frame})
            mrr, offered = measure()
            entry = entry.with_(mrr_pps=mrr, mrr_offered_pps=offered)
            self.rf.set_ceiling(frame, entry)
        assert entry.mrr_pps is not None
        return entry.mrr_pps, entry.mrr_offered_pps or entry.pps

    def _ceilings_loopback(self, ws: Workspace, link: str, frames: list[int], max_frame: int, depth: int,
                           members: int = 1) -> dict[int, float]:
        """zlgen alone, its ports joined by the DUT's kind of wire (memif, or vhost-user to virtio-user in one
        process), nothing in between: what the generator and the wire carry, per frame size."""
        stored = {f: self.rf.run.ceiling(f) for f in frames}
        need = [f for f, c in stored.items() if c is None or c.how != "loopback"]
        out = {f: c.pps for f, c in stored.items() if c is not None and f not in need}
        if need:
            loop = BenchSpec(dut="none", link=link, max_frame=max_frame, depth=depth, gen_lcores=self.cfg.gen_lcores,
                             dut_rxq=self.cfg.dut_rxq, gap_us=self.cfg.pace_gap_us, wires=members)
            with SoftBench(loop, ws) as lb:
                for f in need:
                    self.progress("ceiling", {"frame": f, "link": link, "how": "loopback"})
                    pps = guarded(lb.check, lambda f=f: measure_ceiling(lb.gen.client, self.cfg, f, self.cfg.dut_rxq,
                                                                        members))
                    self.rf.set_ceiling(f, Ceiling(pps=pps, link=link, how="loopback", method=CEILING_METHODS[link]))
                    out[f] = pps
        return out

    def _external(self) -> None:
        cfg = self.cfg
        frames = self._todo(list(cfg.frame_sizes))
        if not frames:
            return
        hugepages.require(256)
        pci = tuple(p for p in cfg.ports if PCI_RE.match(p))
        vdevs = tuple(p for p in cfg.ports if not PCI_RE.match(p))
        with Workspace() as ws:
            eal = Eal(lcores=cfg.gen_lcores, file_prefix=ws.prefix("gen"), vdevs=vdevs, pci=pci)
            zc = ZlgenConfig(eal=eal, ctl_path=ws.sock("zlgen-ctl"), max_frame=max(1518, *frames),
                             gap_us=cfg.pace_gap_us)
            with Zlgen(zc, ws.log("zlgen")) as g:
                self.rf.set_placement("external", {"zlgen_lcores": cfg.gen_lcores, "ports": list(cfg.ports),
                                                   "dpdk": g.client.hello()["dpdk"]})
                for frame in frames:
                    top = cfg.max_rate_pps or line_rate_pps(self.link_bps, frame)
                    for rep in range(cfg.repeat):
                        self._search(g.client, Probe(external_paths(), context={"bench": False}, health=g.check),
                                     frame, rep, "external", top, ceiling_is_gen=False)

    def _search(self, client: ZlgenClient, probe: Probe, frame: int, rep: int, link: str,
                ceiling: float, mrr: float | None = None, ceiling_is_gen: bool = True,
                lab_streams: tuple[Callable[[int, float], list[dict]], int, bool] | None = None) -> None:
        """One search; ceiling: the generator's limit (its own ceiling, or what it offered flat out beside the
        DUT, the lower); mrr: the DUT's maximum receive rate, which bounds the top from above by MRR_MARGIN."""
        cfg = self.cfg
        line = line_rate_pps(self.link_bps, frame)
        max_rate = min(ceiling, line, mrr * MRR_MARGIN if mrr else ceiling)
        stored = self.rf.search(frame, rep)
        replay = list(stored.trials) if stored else []
        self.rf.start_search(frame, rep, link=link, ceiling_pps=ceiling, line_rate_pps=line,
                             max_rate_pps=max_rate, paths=probe.paths, ledger_context=probe.context)
        scfg = SearchConfig(max_rate_pps=max_rate, start_pct=cfg.start_pct, granularity_pct=cfg.granularity_pct,
                            ndr_loss_pct=cfg.ndr_loss_pct,
                            pdr_loss_pct=cfg.pdr_loss_pct if cfg.pdr_loss_pct >= 0 else None,
                            trial_s=cfg.trial_s, validation_s=cfg.validation_s,
                            gen_tolerance_pct=cfg.gen_tolerance_pct, max_retries=cfg.max_retries,
                            anomaly_policy=cfg.anomaly_policy, exceed_ratio=cfg.mlr_exceed_ratio,
                            duration_sum_s=cfg.mlr_duration_sum_s, preceding_targets=cfg.mlr_preceding_targets,
                            ceiling_is_generator=ceiling_is_gen and max_rate == ceiling < line)
        if lab_streams:  # (make_streams, lanes, refused_is_loss)
            runner = TrialRunner(client, cfg, frame, probe, replay, lab_streams[2], lab_streams[0], lab_streams[1])
        else:
            runner = TrialRunner(client, cfg, frame, probe, replay, refused_is_loss=link != "external")
        self.progress("search", {"frame": frame, "repeat": rep, "link": link, "max_rate_pps": max_rate,
                                 "resumed_trials": len(replay), "strategy": cfg.search})
        if cfg.warmup_s > 0:
            self._warm_up(frame, rep, runner, max_rate)
        saved: list[TrialEntry] = []

        def on_trial(rec: TrialRecord) -> None:
            entry = TrialEntry.of(rec)
            if runner.replaying:  # the stored trial, as it was stored
                entry = replay[rec.index]
            else:
                entry = TrialEntry.from_json({**entry.to_json(), **runner.detail})
                for led in runner.detail.get("ledger", []):
                    if led["unexplained"]:
                        self.rf.warn(f"{frame} B trial {rec.index + 1}: {led['unexplained']} frame(s) lost where no "
                                     f"counter saw them (direction {led['direction']}; zeroloss explain shows where)")
                    for hop in led["hops"]:
                        ev = hop.get("evidence") or {}
                        _, warn = queue_spread(ev.get("q_ipackets") or ev.get("rx_queues") or [], cfg.dut_rxq)
                        if warn:
                            self.rf.warn(f"{hop['name']}: {warn}")
            self.rf.add_trial(frame, rep, entry)
            saved.append(entry)
            self.progress("trial", {"frame": frame, "record": entry.to_json(), "max_rate_pps": max_rate})

        started = time.monotonic()
        try:
            result = STRATEGIES[cfg.search](scfg, runner, on_trial)
        except ComponentDied as e:  # the trial it ended was not saved: the search resumes from the one before
            raise ComponentDied(f"{frame} B search, trial {len(saved) + 1}: {e.message}") from e
        wall_s = round(time.monotonic() - started, 3)  # the search's own time, warm-up excluded
        outcome = SearchOutcome.of(result, frame, self.link_bps, ndr_latency(result, saved))
        self.rf.finish_search(frame, rep, outcome, wall_s)
        self.progress("done", {"frame": frame, "repeat": rep, "result": outcome.to_json()})

    def _warm_up(self, frame: int, rep: int, runner: TrialRunner, max_rate: float) -> None:
        """One trial before the search (trafficgen's warm-up trial), never given to it: rings, page faults,
        flow caches and MAC tables are warm when the first counted trial starts. Kept in the search's entry."""
        rate = float(max(1, round(max_rate * self.cfg.warmup_pct / 100)))
        out = runner.measure(rate, self.cfg.warmup_s)
        self.rf.set_warmup(frame, rep, Warmup(rate_pps=rate, duration_s=self.cfg.warmup_s,
                                              outcome=OutcomeRecord.of(out)))
        self.progress("warmup", {"rate_pps": rate, "lost": sum(x.lost for x in out.directions)})


def ndr_latency(res: SearchResult, trials: list[TrialEntry]) -> LatencyAtNdr | None:
    """The worst direction's latency percentiles in the trial that validated the NDR, if it measured any."""
    v = res.ndr.validation
    if v is None:
        return None
    t = next((t for t in trials if t.index == v.index), None)
    lat = [d.latency_ns for d in (t.dirs() if t else ()) if d.latency_ns]
    if not lat:
        return None
    return LatencyAtNdr(**{k: max(x[k] for x in lat) for k in ("p50", "p99", "max")})


@contextmanager
def interrupted_state(rf: ResultFile) -> Iterator[None]:
    """Marks the result file interrupted or failed when the run does not finish; the trials stay."""
    try:
        yield
    except KeyboardInterrupt:
        rf.set_state("interrupted", best_effort=True)
        raise
    except BaseException:
        rf.set_state("failed", best_effort=True)
        raise
