"""`zeroloss trial --interval` (soak): one fixed rate for a duration through any run target its kind of DUT makes
(targets/registry.py: the bench's testpmd P2P and OVS topologies, a lab node), the one loop for the bench and the lab.

Every interval: what each direction sent and received meanwhile (zlgen's live counters) and the DUT's counters
(the target's Probe), saved to the soak file before the next interval. Loss events are the intervals with confirmed
loss (results/soak.loss_events), merged; each event's ledger is the counter deltas over its intervals (one
interval more at its end, for the frames its rings held) and its diagnosis. Ctrl-C leaves a valid file (state
interrupted); every write is atomic, so a kill -9 keeps the last interval written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_json_atomic
from zeroloss.core.model import line_rate_pps
from zeroloss.core.stream import Stream
from zeroloss.drivers.proc import ComponentDied
from zeroloss.loss.diagnose import analyse
from zeroloss.loss.ledger import counter_delta
from zeroloss.results.soak import KIND, VERSION, loss_events
from zeroloss.targets import registry
from zeroloss.targets.base import Probe, Target, by_direction, gen_counters, guarded

KEEP = 3  # the latest interval readings kept besides those an event's ledger needs
STOP_GRACE_S = 5.0  # a process of the target stopped (SIGSTOP) this long is a fault; shorter, an outage measured


def patient(health: Callable[[], None]) -> Callable[[], None]:
    """health that lets a process of the target be stopped (or its reading fail) for up to STOP_GRACE_S: in a soak
    a DUT frozen for a moment is a loss event to measure, not the end; one dead or stopped longer still ends it."""
    def check() -> None:
        try:
            health()
        except ComponentDied as first:
            deadline = time.monotonic() + STOP_GRACE_S
            while True:
                time.sleep(0.05)
                try:
                    health()
                    return
                except ComponentDied:
                    if time.monotonic() > deadline:
                        # the first words name the cause; later checks may only see what it left (a closed session)
                        raise first from None
    return check


def soak_target(cfg: RunConfig, frame: int, warn: Callable[[str], None]) -> Target:
    """The run target a soak's settings name, as `zeroloss run` makes it (targets/registry.py) for one frame size;
    one line when its kind of DUT cannot soak."""
    kind = registry.kind_of(cfg)
    if kind.soak is not None:
        raise ZeroLossError(*kind.soak)
    return registry.target(cfg, frame, registry.Needs(warn, host_facts_known=True))


def direction_key(s: Stream) -> str:
    return "AB"[s.port % 2] + "->" + "AB"[(s.rx_port or 0) % 2]


class Readings:
    """zlgen's cumulative counters per stream and the DUT's counters at each interval's end; the readings an
    event's ledger needs are kept, the others dropped (a soak of hours keeps a few)."""

    def __init__(self, streams: list[Stream], probe: Probe, refused_is_loss: bool):
        self.streams, self.probe, self.refused_is_loss = streams, probe, refused_is_loss
        self.snaps: dict[int, dict[str, Any]] = {}
        self.pinned: set[int] = {0}  # readings around intervals that lost frames: an event's ledger may need them

    def read(self, k: int, t: float, client: Any) -> dict[str, Any]:
        """Reading k at t seconds: zlgen's counters just before and just after the DUT's, averaged, so both
        describe the same instant (the frames sent while the DUT's counters are read would otherwise show as
        unexplained)."""
        health = self.probe.health
        g1 = guarded(health, client.status)
        counters = guarded(health, self.probe.counters)
        g2 = guarded(health, client.status)
        snap = {"t": t, "state": g2.get("state"), "counters": counters}
        for key in ("tx_pkts", "rx_pkts", "tx_refused"):
            a = [x.get(key, 0) for x in g1.get("streams") or []] or [0] * len(self.streams)
            b = [x.get(key, 0) for x in g2.get("streams") or []] or [0] * len(self.streams)
            snap[key] = [(x + y) // 2 for x, y in zip(a, b, strict=True)]
        self.snaps[k] = snap
        return snap

    def final(self, k: int, t: float, r: Any, counters: dict) -> None:
        """The exact end: the trial's result (unique frames received) and the DUT's counters after it."""
        self.snaps[k] = {"t": t, "state": "done", "counters": counters,
                         "tx_pkts": [s.tx_pkts for s in r.streams], "rx_pkts": [s.rx_unique for s in r.streams],
                         "tx_refused": [s.tx_refused for s in r.streams]}

    def row(self, k: int) -> dict[str, Any]:
        """Interval k's row: per direction frames sent, refused, received and lost in it, the rates, and the
        shortfall since the start (sent + refused (when it is loss) - received: loss or frames in flight)."""
        a, b = self.snaps[k - 1], self.snaps[k]
        dt = max(b["t"] - a["t"], 1e-9)
        dirs: dict[str, dict[str, Any]] = {}
        for i, s in enumerate(self.streams):
            d = dirs.setdefault(direction_key(s), {"tx": 0, "refused": 0, "rx": 0, "short": 0})
            refused = b["tx_refused"][i] - a["tx_refused"][i]
            d["tx"] += b["tx_pkts"][i] - a["tx_pkts"][i]
            d["refused"] += refused
            d["rx"] += b["rx_pkts"][i] - a["rx_pkts"][i]
            d["short"] += b["tx_pkts"][i] + (b["tx_refused"][i] if self.refused_is_loss else 0) - b["rx_pkts"][i]
        for d in dirs.values():
            offered = d["tx"] + (d["refused"] if self.refused_is_loss else 0)
            d["tx_pps"] = d["tx"] / dt
            d["rx_pps"] = d["rx"] / dt
            d["lost"] = offered - d["rx"]  # this interval's: negative when the previous one's in-flight frames came
            d["loss_pct"] = 100 * d["lost"] / offered if offered else 0.0
        return {"t_s": round(b["t"], 3), "state": b["state"], "directions": dirs}

    def gen(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        """zlgen's part of the counters between two readings (gen_counters' shape, from its live counters)."""
        dirs: dict[str, dict[str, int]] = {}
        for i, s in enumerate(self.streams):
            d = dirs.setdefault(str(s.port % 2), {"offered": 0, "tx": 0, "refused": 0, "rx_unique": 0, "late": 0,
                                                  "duplicate": 0})
            tx, refused = b["tx_pkts"][i] - a["tx_pkts"][i], b["tx_refused"][i] - a["tx_refused"][i]
            refused = refused if self.refused_is_loss else 0
            d["tx"] += tx
            d["refused"] += refused
            d["offered"] += tx + refused
            d["rx_unique"] += b["rx_pkts"][i] - a["rx_pkts"][i]
        return {"dirs": dirs, "ports": [], "window_s": b["t"] - a["t"]}

    def window(self, first: int, last: int) -> tuple[int, int] | None:
        """The readings around rows first..last (row k runs from reading k to k+1): the one before the first
        row, and the one after the row following the last (the frames the rings held at the event's end) or,
        until it is read, the last row's end."""
        ends = [k for k in (last + 2, last + 1) if k in self.snaps]
        return (first, ends[0]) if first in self.snaps and ends else None

    def pin(self, i: int, row: dict[str, Any]) -> None:
        """Keeps the readings around row i when it lost more frames than a reading finds in flight."""
        if any(d["lost"] > max(64, d["tx"] // 1000) for d in row["directions"].values()):
            self.pinned |= {i, i + 1, i + 2}

    def prune(self, events: list[dict[str, Any]], latest: int) -> None:
        keep = {*self.pinned, *range(latest - KEEP, latest + 1)}
        for e in events:
            keep |= {e["first"], e["last"] + 1, e["last"] + 2}
        for k in [k for k in self.snaps if k not in keep]:
            del self.snaps[k]


class Soak:
    """One soak through an entered target: its document, saved after every interval."""

    def __init__(self, doc: dict[str, Any], out_path: Path):
        self.doc, self.out_path = doc, out_path
        self.ledgers: dict[tuple[int, int], tuple[int, list, list, list[float]]] = {}

    def save(self) -> None:  # atomic, 0600 (a lab's addresses and the node's state), never through a planted link
        write_json_atomic(self.out_path, self.doc)

    def events(self, rd: Readings, ctx: dict, final: dict[str, int] | None) -> None:
        """The loss events of the rows so far, each with its ledger and diagnosis (computed once per span, while
        the readings around it are kept)."""
        events = loss_events(self.doc["intervals"], final)
        sides = {s.port % 2 for s in rd.streams}
        for e in events:
            span = (e["first"], e["last"])
            w = rd.window(*span)
            if w is not None and (span not in self.ledgers or self.ledgers[span][0] < w[1]):
                a, b = rd.snaps[w[0]], rd.snaps[w[1]]
                c = counter_delta(b["counters"], a["counters"]) or {}
                c["gen"] = rd.gen(a, b)
                state = guarded(rd.probe.health, rd.probe.state) if rd.probe.state else None
                leds, diag = analyse(rd.probe.paths, c, state, ctx, sides)
                self.ledgers[span] = (w[1], leds, diag, [round(a["t"], 3), round(b["t"], 3)])
            if span in self.ledgers:
                _, leds, diag, window = self.ledgers[span]
                e.update({"ledger": leds, "diagnosis": diag, "window_s": window})
            else:
                e.update({"ledger": None, "diagnosis": [], "window_s": None})
        self.doc["loss_events"] = events
        rd.prune(events, max(rd.snaps))


def new_doc(cfg: RunConfig, frame: int, duration_s: float, interval_s: float, warnings: list[str]) -> dict[str, Any]:
    return {"kind": KIND, "version": VERSION, "state": "running", "target": None, "lab_file": cfg.lab,
            "frame": frame, "duration_s": duration_s, "interval_s": interval_s, "intervals": [], "loss_events": [],
            "warnings": warnings, "config": {"topology": cfg.topology, "dut": cfg.dut, "flows": cfg.flows,
                                       "bidirectional": cfg.bidirectional, "drain_ms": cfg.drain_ms}}


def soak(cfg: RunConfig, target: Target, frame: int, rate: tuple[str, float], duration_s: float, interval_s: float,
         out_path: Path, progress: Callable[[dict], None], warnings: list[str] | None = None) -> dict:
    """One trial at a fixed rate (('pps', frames/s) or ('pct', % of the ports' line rate) per direction) through
    target: a row per interval, loss events with ledgers, saved to out_path as it goes; at the end the trial's
    exact totals, ledger and diagnosis. Returns the document."""
    doc = new_doc(cfg, frame, duration_s, interval_s, warnings if warnings is not None else [])
    run = Soak(doc, out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with target:
            _soak(cfg, target, frame, rate, run, progress)
        run.save()
        return doc
    except BaseException as e:
        if doc["state"] == "running":
            doc["state"] = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            doc["error"] = str(e) if isinstance(e, ZeroLossError) else type(e).__name__
        try:
            run.save()
        except ZeroLossError:
            pass
        raise


def _soak(cfg: RunConfig, target: Target, frame: int, rate: tuple[str, float], run: Soak,
          progress: Callable[[dict], None]) -> None:
    doc = run.doc
    duration_s, interval_s, drain_ms = doc["duration_s"], doc["interval_s"], cfg.drain_ms
    place = {**target.placement(), **target.prepare(frame)}
    line = line_rate_pps(target.link_bps or cfg.link_speed_gbps * 1e9, frame)
    pps = rate[1] if rate[0] == "pps" else rate[1] / 100 * line
    doc.update({"target": target.link, "rate_pps": pps, "line_rate_pps": line, "line_rate_pct": 100 * pps / line,
                "placement": place})
    if isinstance(place.get("lab"), dict) and "learning" in place["lab"]:
        doc["learning"] = place["lab"]["learning"]
    run.save()  # before traffic: the file says what is being soaked
    probe = target.probe()
    probe.health = patient(probe.health)
    streams = target.streams(frame, pps)
    client = target.client
    n = client.configure(streams)
    ctx = {**probe.context, "frame": frame, "rate_pps": pps, "flows": cfg.flows}
    rd = Readings(streams, probe, target.refused_is_loss)
    rd.snaps[0] = {"t": 0.0, "state": "idle", "counters": guarded(probe.health, probe.counters),
                   **{k: [0] * len(streams) for k in ("tx_pkts", "rx_pkts", "tx_refused")}}
    client.start(duration_s=duration_s, drain_ms=drain_ms, rate_pps=[pps / target.lanes] * n)
    t0 = time.monotonic()
    doc["started_at"] = round(time.time(), 3)
    k = 1
    while True:
        due = t0 + k * interval_s
        while time.monotonic() < due:
            time.sleep(min(0.05, max(0.0, due - time.monotonic())))
            probe.health()
        snap = rd.read(k, time.monotonic() - t0, client)
        row = rd.row(k)
        doc["intervals"].append(row)
        rd.pin(k - 1, row)
        run.events(rd, ctx, None)
        run.save()
        progress(row)
        k += 1
        if snap["state"] in ("done", "draining") or snap["t"] > duration_s + drain_ms / 1000 + 5:
            break
    r = client.result(wait_s=duration_s + 60, watch=probe.health)
    after = guarded(probe.health, probe.counters)
    rd.final(k, time.monotonic() - t0, r, after)
    c = counter_delta(after, rd.snaps[0]["counters"]) or {}
    c["gen"] = gen_counters(r, target.refused_is_loss)
    state = guarded(probe.health, probe.state) if probe.state else None
    groups = by_direction(r)
    leds, diag = analyse(probe.paths, c, state, ctx, {tx for tx, _ in groups})
    directions = []
    final = {}
    for (tx, rx), g in groups.items():
        refused = sum(x.tx_refused for x in g) if target.refused_is_loss else 0
        sent, got = sum(x.tx_pkts for x in g), sum(x.rx_unique for x in g)
        directions.append({"tx_side": tx, "rx_side": rx, "tx": sent + refused, "rx": got, "lost": sent + refused - got,
                           "refused": refused, "achieved_pps": (sent + refused) / r.tx_window_s if r.tx_window_s
                           else 0.0})
        final["AB"[tx] + "->" + "AB"[rx]] = sent + refused - got
    doc["result"] = {"directions": directions, "tx_window_s": r.tx_window_s}
    run.events(rd, ctx, final)  # exact now: the frames in flight at the last reading have arrived or are lost
    doc.update({"ledger": leds, "diagnosis": diag, "counters": c, "dut_state": state, "state": "complete"})
    doc["placement"].update(target.finish())
    if isinstance(doc["placement"].get("lab"), dict) and "dut_readings" in doc["placement"]["lab"]:
        doc["dut_readings"] = doc["placement"]["lab"]["dut_readings"]
