"""Text formatting of results: helpers return strings, only the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zeroloss.core.codec import Json, Record
from zeroloss.core.frames import legend as mix_legend
from zeroloss.core.frames import text as frame_text
from zeroloss.core.latency import lost_reaches
from zeroloss.core.model import TrialResult
from zeroloss.core.text import si, table
from zeroloss.loss.records import Ledger
from zeroloss.results.runsettings import RunSettings
from zeroloss.results.soak import IntervalRow, SoakRecord

__all__ = ["port_table", "queue_lines", "run_table", "si", "soak_line", "soak_table", "table", "trial_table"]



@dataclass(frozen=True, kw_only=True)
class QueueCounts(Record):
    """A port's frames per RX queue: a DUT testpmd's `dut_ports` entry (q_ipackets) or a hop's evidence (q_ipackets,
    or rx_queues: loss/ledger.py)."""

    q_ipackets: Json = ()
    rx_queues: Json = None


@dataclass(frozen=True, kw_only=True)
class OldTrial(Record):
    """What a trial of a file before the hop ledger kept beside its record: the DUT testpmd's port counters."""

    dut_ports: Json = None


@dataclass(frozen=True, kw_only=True)
class Said(Record):
    """What the soak table shows of a finding of its diagnosis (loss/records.py Finding, as the soak file keeps it)."""

    frames: Json = None
    hop: Json = None
    cause: Json = None
    remedies: Json = ()


if TYPE_CHECKING:
    from zeroloss.results.records import RunRecord, TrialEntry


def trial_table(r: TrialResult) -> str:
    """Per-stream counters of one trial, with latency in microseconds."""
    headers = ["stream", "requested", "achieved", "tx", "rx", "lost", "refused", "reord", "dup", "late",
               "lat p50 us", "p99 us", "max us"]
    rows = []
    for s in r.streams:
        lat = s.latency_ns
        rows.append([
            f"{s.id} ({s.port}->{s.rx_port})",
            "max" if s.requested_pps == 0 else si(s.requested_pps, "pps"),
            si(s.achieved_pps, "pps"), str(s.tx_pkts), str(s.rx_unique), str(s.lost), str(s.tx_refused),
            str(s.reordered), str(s.duplicate), str(s.late),
            f"{lat.p50 / 1e3:.1f}", f"{lat.p99 / 1e3:.1f}", f"{lat.max / 1e3:.1f}"])
    return table(headers, rows)


def port_table(r: TrialResult) -> str:
    """Per-port receive classification and DPDK counters of one trial."""
    headers = ["port", "rx", "foreign", "malformed", "late", "ipackets", "opackets", "imissed", "ierrors",
               "oerrors", "rx_nombuf"]
    rows = [[f"{p.port} {p.name}", str(p.rx_pkts), str(p.rx_foreign), str(p.rx_malformed), str(p.rx_late),
             str(p.ethdev.ipackets), str(p.ethdev.opackets), str(p.ethdev.imissed), str(p.ethdev.ierrors),
             str(p.ethdev.oerrors), str(p.ethdev.rx_nombuf)] for p in r.ports]
    return table(headers, rows)


FLAG_TEXT = {
    "generator-bound": "the NDR sits at the generator's ceiling (zlgen alone), or at what zlgen could offer "
                       "flat out beside the DUT: the DUT may be faster than we can measure",
    "generator-limited": "the generator could not deliver some requested rates (retried, never counted as DUT "
                         "loss); rates above them were not tried",
    "noisy": "a longer validation trial failed where a short trial passed, or a rate passed above one that "
             "failed: results vary from trial to trial (use --repeat to see the spread)",
    "meter-burst": "an OpenFlow meter on the path dropped the frames of the failed validations: its burst, not the "
                   "DUT's noise, lets a short trial pass where a longer one fails (the run's warning names the meter "
                   "and its burst size)",
    "no-ndr": "a search found no rate without loss (every rate it tried lost frames or the generator failed): "
              "the NDR shown is the mean of the searches that found one; see the search trace",
    "disturbed": "a trial lost frames while a DUT core stalled longer than its RX ring covers at that rate (host "
                 "interference: run delay, steal): retried, never counted as the DUT's loss; see the trial's "
                 "interference in the result file",
    "anomalies": "duplicates, late frames or more frames received than sent were seen (see the result file)",
    "ceiling-via-dut": "the generator's ceiling of this file was measured through the DUT (zeroloss before 0.2): "
                       "an NDR at it may be the DUT's limit, so it is not called generator-bound; run again to "
                       "measure zlgen alone",
    "cores-shared": "a core probe before or during this size's searches read its cores at under 65 % of their "
                    "speed alone when all were busy: they share a physical core (SMT siblings, or a hypervisor "
                    "running them on one), so the NDR is the sharing's, not the data path's; pin to separate "
                    "physical cores",
    "non-monotonic": "this larger frame size reached more frames/s, or fewer Gb/s, than the next smaller size "
                     "beyond their spread: a sign of noise or of a size-dependent problem (use --repeat)",
}


def run_table(run: RunRecord) -> str:
    """The result of `zeroloss run` shaped like the references' tables: frame size, line rate %, frames/s."""
    from zeroloss.results.summary import frame_rows
    from zeroloss.results.verdict import verdict

    cfg = RunSettings.from_json(run.config)
    frows = frame_rows(run)
    sign_off = verdict(run)
    repeat = max((r.repeats for r in frows), default=1)
    headers = ["frame B", "wire", "NDR pps", "line rate %", "L1 Gb/s", "L2 Gb/s"]
    if repeat > 1:
        headers.append("NDR min … max")
    headers += ["PDR pps", "PDR %", "val. loss", "lat p50/p99/max us", "verdict", "flags"]
    rows = []
    for r in frows:
        size = sign_off.sizes.get(r.frame)
        ge = "≥ " if size is not None and size.bound else ""  # only a lower bound is known
        if not r.found:
            row = [str(r.frame), r.link, "none", "-", "-", "-", *(["-"] if repeat > 1 else [])]
        else:
            ndr_cell = ge + f"{r.ndr_pps:,.0f}" + (f" ± {r.ndr_sd:,.0f}" if len(r.ndrs) > 1 else "")
            row = [str(r.frame), r.link, ndr_cell, ge + f"{r.line_rate_pct:.2f}", f"{r.l1_gbps:.3f}",
                   f"{r.l2_gbps:.3f}"]
            if repeat > 1:
                row.append(f"{min(r.ndrs):,.0f} … {max(r.ndrs):,.0f}")
        row += [f"{r.pdr_pps:,.0f}" if r.pdr_pps else "-", f"{r.pdr_pct:.2f}" if r.pdr_pps else "-",
                f"{r.val_lost}/{r.val_tx}" if r.val_tx is not None else "-",
                _lat_cell(r.lat_us, r.val_lost or 0, r.val_tx or 0),
                size.status if size is not None else "-", ", ".join(r.flags)]
        rows.append(row)
    legend = [f"  {f}: {FLAG_TEXT[f]}" for f in sorted({f for r in frows for f in r.flags}) if f in FLAG_TEXT]
    legend += mix_legend(r.frame for r in frows)
    title = (f"Zero-loss throughput: NDR (loss <= {cfg.ndr_loss_pct:g} %) and PDR (loss <= "
             f"{cfg.pdr_loss_pct:g} %) per direction, % of {run.link_speed_gbps:g} Gb/s line rate")
    from zeroloss.results.latencyload import criterion

    if bound := criterion(run):  # a latency bound was part of the criterion (--max-latency)
        title += f"; both also with {bound} per direction"
    return "\n".join([sign_off.line, title, table(headers, rows), *legend])


def _lat_cell(lat_us: tuple[float, ...] | None, lost: int, tx: int) -> str:
    """p50/p99/max at the NDR in us; one the validation's lost frames reach is '>x': over the frames sent it is
    above the largest latency measured (latency.Histogram.percentile)."""
    if not lat_us:
        return "-"
    return "/".join((">" if lost_reaches(pct, tx - lost, lost) else "") + f"{v:.1f}"
                    for v, pct in zip(lat_us, (50.0, 99.0, 100.0), strict=False))


def _queue_cells(trial: TrialEntry, nb: int) -> list[str]:
    """A trial's RX queue shares per port that counts per queue: from its hop ledger (the hops' evidence, in
    loss/ledger.py's shape), or from `dut_ports` in files written before the hop ledger."""
    cells = []
    for p, port in enumerate(OldTrial.from_json(trial.extra).dut_ports or []):
        q = QueueCounts.from_json(port).q_ipackets[:nb]
        if sum(q):
            cells.append(f"port {p}: " + " ".join(f"q{i} {100 * c / sum(q):.0f}%" for i, c in enumerate(q)))
    for led in trial.ledger or []:
        for hop in led.hops:
            ev = QueueCounts.from_json(hop.evidence or {})
            q = (ev.q_ipackets or ev.rx_queues or [])[:nb]
            total = sum(q)
            if total:
                shares = " ".join(f"q{i} {100 * c / total:.0f}%" for i, c in enumerate(q))
                cells.append(f"{hop.where}: {shares}")
    return cells


def queue_lines(run: RunRecord) -> list[str]:
    """How the frames of the NDR validation trial spread over the RX queues of each port on the path that
    counts per queue (a DUT testpmd's ports, OVS's vhost ports)."""
    nb = RunSettings.from_json(run.config).dut_rxq
    out: list[str] = []
    if nb < 2:
        return out
    for s in run.searches:
        val = s.ndr.validation if s.ndr else None
        if val is None or s.repeat != 0:
            continue
        cells = _queue_cells(s.trials[val.index], nb)
        if cells:
            out.append(f"{frame_text(s.frame):>7}  " + "   ".join(cells))
    if out:
        out.insert(0, f"DUT RX queue share at the NDR validation trial ({nb} queue(s) per port):")
    return out


def soak_line(row: dict[str, Any]) -> str:
    """One interval of a fixed-rate (soak) trial: time, then per direction rate sent/received, the frames the wire
    refused in it (not in the rate sent) and the shortfall (its loss in a file before `short`)."""
    rec = IntervalRow.from_json(row)
    parts = [f"{rec.t_s:8.1f} s"]
    for key, d in sorted(rec.directions.items()):
        short = d.short if d.keys is None or "short" in d.keys else d.lost
        parts.append(f"{key} tx {d.tx_pps:>11,.0f} pps  rx {d.rx_pps:>11,.0f} pps  "
                     f"refused {d.refused:>9,}  short {short:>9,}")
    return "  ".join(parts)


def soak_table(soak: SoakRecord | dict[str, Any]) -> str:
    """A soak's totals per direction and where its frames were lost (its record, or its document as runs/soak.py
    returns it)."""
    rec = soak if isinstance(soak, SoakRecord) else SoakRecord.from_json(soak)
    lines = [f"fixed-rate trial: {rec.frame} B at {rec.rate_pps or 0:,.0f} pps per direction "
             f"({rec.line_rate_pct or 0:.2f} % of line rate), {rec.duration_s:g} s, "
             f"{len(rec.intervals)} interval(s) of {rec.interval_s:g} s"]
    worst = max((d.short or 0 for row in rec.intervals for d in row.directions.values()), default=0)
    lines.append(f"{'direction':<10}{'sent':>14}{'refused':>12}{'received':>14}{'lost':>10}{'loss %':>12}"
                 f"{'achieved pps':>16}")
    for d in rec.ends():  # tx: offered, the refused frames (lost too) included
        key = "AB"[d.tx_side] + "->" + "AB"[d.rx_side]
        pct = 100 * d.lost / d.tx if d.tx else 0.0
        refused = d.refused or 0
        lines.append(f"{key:<10}{d.tx - refused:>14,}{refused:>12,}{d.rx:>14,}{d.lost:>10,}{pct:>12.6f}"
                     f"{d.achieved_pps or 0:>16,.0f}")
    lines.append(f"largest shortfall during the trial: {worst:,} frame(s) sent and not yet received (lost or in "
                 f"flight; 'short' per interval)")
    lines += _ledger_lines(rec.ledger or [])
    for f in map(Said.from_json, rec.diagnosis or []):
        if "frames" in (f.keys or ()):
            lines.append(f"diagnosis: {f.frames:,} frame(s) at {f.hop}: {f.cause}")
            lines += [f"  fix: {r}" for r in f.remedies[:2]]
    return "\n".join(lines)


def _ledger_lines(ledger: list[dict[str, Any]]) -> list[str]:
    """Each drop of a soak's hop ledger, and the frames lost where no counter saw them."""
    lines = []
    for led in map(Ledger.of, ledger):
        for hop in led.hops:
            lines += [f"  {led.direction}: {drop.frames:,} lost at {hop.name}: {drop.reason} ({drop.counter})"
                      for drop in hop.drops]
            if hop.unexplained:
                lines.append(f"  {led.direction}: {hop.unexplained:,} lost at {hop.name} where no counter saw them")
    return lines
