"""Text formatting of results: helpers return strings, only the CLI prints."""

from __future__ import annotations

from .model import TrialResult


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
