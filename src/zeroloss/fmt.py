"""Text formatting of results: helpers return strings, only the CLI prints."""

from __future__ import annotations

from .model import TrialResult, l1_bps, l2_bps


def si(value: float, unit: str = "") -> str:
    """1234567 -> '1.235 M' (engineering notation with three decimals)."""
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3f} {prefix}{unit}"
    return f"{value:.0f} {unit}".rstrip()


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain text table with right-aligned columns (first column left-aligned)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs)

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


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


def _mean_sd(values: list[float]) -> tuple[float, float]:
    m = sum(values) / len(values)
    sd = (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    return m, sd


FLAG_TEXT = {
    "generator-bound": "the NDR sits at the generator's ceiling: the DUT may be faster than we can measure",
    "generator-limited": "the generator could not deliver some requested rates (retried, never counted as DUT "
                         "loss); rates above them were not tried",
    "noisy": "a longer validation trial failed where a short trial passed, or a rate passed above one that "
             "failed: results vary from trial to trial (use --repeat to see the spread)",
    "anomalies": "duplicates, late frames or more frames received than sent were seen (see the result file)",
}


def run_table(doc: dict) -> str:
    """The result of `zeroloss run` shaped like the references' tables: frame size, line rate %, frames/s."""
    cfg = doc["config"]
    by_frame: dict[int, list[dict]] = {}
    for s in doc["searches"]:
        if s.get("result"):
            by_frame.setdefault(s["frame"], []).append(s)
    repeat = max((len(v) for v in by_frame.values()), default=1)
    headers = ["frame B", "wire", "NDR pps", "line rate %", "L1 Gb/s", "L2 Gb/s"]
    if repeat > 1:
        headers.append("NDR min … max")
    headers += ["PDR pps", "PDR %", "val. loss", "lat p50/p99/max us", "flags"]
    rows = []
    for frame in sorted(by_frame):
        runs = by_frame[frame]
        ndrs = [r["result"]["ndr"].get("rate_pps") or 0.0 for r in runs]
        first = runs[0]["result"]
        m, sd = _mean_sd(ndrs)
        line = runs[0]["line_rate_pps"]
        ndr_cell = f"{m:,.0f}" + (f" ± {sd:,.0f}" if repeat > 1 else "")
        row = [str(frame), runs[0]["link"], ndr_cell, f"{100 * m / line:.2f}",
               f"{l1_bps(m, frame) / 1e9:.3f}", f"{l2_bps(m, frame) / 1e9:.3f}"]
        if repeat > 1:
            row.append(f"{min(ndrs):,.0f} … {max(ndrs):,.0f}")
        pdr = first.get("pdr") or {}
        pdr_rate = pdr.get("rate_pps")
        val = first["ndr"].get("validation") or {}
        lat = first.get("ndr_latency_ns")
        flags = sorted({f for r in runs for f in r["result"]["flags"]})
        row += [f"{pdr_rate:,.0f}" if pdr_rate else "-", f"{pdr['line_rate_pct']:.2f}" if pdr_rate else "-",
                f"{val['lost']}/{val['tx']}" if val else "-",
                f"{lat['p50'] / 1e3:.1f}/{lat['p99'] / 1e3:.1f}/{lat['max'] / 1e3:.1f}" if lat else "-",
                ", ".join(flags)]
        rows.append(row)
    legend = [f"  {f}: {FLAG_TEXT[f]}" for f in sorted({f for r in rows for f in r[-1].split(", ") if f})
              if f in FLAG_TEXT]
    title = (f"Zero-loss throughput: NDR (loss <= {cfg['ndr_loss_pct']:g} %) and PDR (loss <= "
             f"{cfg['pdr_loss_pct']:g} %) per direction, % of {cfg['link_speed_gbps']:g} Gb/s line rate")
    return "\n".join([title, table(headers, rows), *legend])


def queue_lines(doc: dict) -> list[str]:
    """How the frames of the NDR validation trial spread over the RX queues of each port on the path that
    counts per queue (a DUT testpmd's ports, OVS's vhost ports)."""
    nb = doc["config"].get("dut_rxq", 1)
    out: list[str] = []
    if nb < 2:
        return out
    for s in doc["searches"]:
        val = ((s.get("result") or {}).get("ndr") or {}).get("validation")
        if not val or s["repeat"] != 0:
            continue
        cells = []
        trial = s["trials"][val["index"]]
        for p, port in enumerate(trial.get("dut_ports") or []):  # files written before the hop ledger
            q = port.get("q_ipackets", [])[:nb]
            if sum(q):
                cells.append(f"port {p}: " + " ".join(f"q{i} {100 * c / sum(q):.0f}%" for i, c in enumerate(q)))
        for led in trial.get("ledger") or []:
            for hop in led["hops"]:
                ev = hop.get("evidence") or {}
                q = (ev.get("q_ipackets") or ev.get("rx_queues") or [])[:nb]
                total = sum(q)
                if total:
                    shares = " ".join(f"q{i} {100 * c / total:.0f}%" for i, c in enumerate(q))
                    cells.append(f"{hop['where']}: {shares}")
        if cells:
            out.append(f"{s['frame']:>5} B  " + "   ".join(cells))
    if out:
        out.insert(0, f"DUT RX queue share at the NDR validation trial ({nb} queue(s) per port):")
    return out
