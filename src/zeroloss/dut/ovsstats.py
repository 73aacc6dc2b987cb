"""What OVS prints about its counters and state, parsed. Pure text in, dicts out (tested on recorded output).

Live sources only: OpenFlow 1.4 port statistics carry OVS's custom counters (ovs_tx_failure_drops,
ovs_tx_mtu_exceeded_drops, per-queue vhost counters...) at the moment they are asked for, where the
OVSDB statistics column is refreshed only every 5 s; meter statistics count each band's drops.
"""

from __future__ import annotations

import re

# pmd-rxq-show and dpctl/show are parsed beside the diagnosis that reads them from stored results
from ..ovsfacts import parse_dpctl_config, parse_pmd_rxq

__all__ = ["parse_coverage_drops", "parse_dpctl_config", "parse_dump_ports", "parse_mempool", "parse_meter_config",
           "parse_meter_stats", "parse_pmd_rxq", "parse_pmd_stats", "pmd_perf", "pmd_perf_delta"]

# custom counters kept per port: OVS's own drop counters and each queue's packets (the vhost library's
# size histograms and notification counters are left out)
_KEEP = re.compile(r"^(ovs_\w+|[rt]x_q\d+_good_packets|rx_missed_errors|rx_mbuf_allocation_errors|"
                   r"[rt]x_errors|rx_dropped|tx_dropped)$")


def _num(text: str) -> int | None:
    return int(text) if text.isdigit() else None  # OVS prints '?' for counters a port does not have


def parse_dump_ports(text: str) -> dict[str, dict[str, int]]:
    """`ovs-ofctl -O OpenFlow14 --names dump-ports BR`: per port name, packets, drops, errors and the
    custom counters (OpenFlow's LOCAL port is left out)."""
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    custom = False
    for line in text.splitlines():
        m = re.match(r'\s*port\s+"?([^":]+)"?: rx pkts=(\d+), bytes=\d+, drop=(\S+), errs=(\S+),', line)
        if m:
            custom = False
            if m.group(1) == "LOCAL":
                cur = None
                continue
            cur = out.setdefault(m.group(1), {})
            cur["rx_packets"] = int(m.group(2))
            for key, value in (("rx_dropped", m.group(3)), ("rx_errors", m.group(4))):
                if _num(value.rstrip(",")) is not None:
                    cur[key] = _num(value.rstrip(","))
            continue
        if cur is None:
            continue
        m = re.match(r"\s*tx pkts=(\d+), bytes=\d+, drop=(\S+), errs=(\S+),", line)
        if m:
            cur["tx_packets"] = int(m.group(1))
            for key, value in (("tx_dropped", m.group(2)), ("tx_errors", m.group(3))):
                if _num(value.rstrip(",")) is not None:
                    cur[key] = _num(value.rstrip(","))
            continue
        if "CUSTOM Statistics" in line:
            custom = True
            continue
        if custom:
            for key, value in re.findall(r"(\w+)=(\d+)", line):
                if _KEEP.match(key):
                    cur[key] = int(value)
    return out


def parse_meter_stats(text: str) -> dict[int, dict[str, int]]:
    """`ovs-ofctl -O OpenFlow13 meter-stats BR`: per meter, frames it saw and frames its bands dropped."""
    out: dict[int, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for line in text.splitlines():
        m = re.match(r"meter:(\d+) .*packet_in_count:(\d+)", line)
        if m:
            cur = out[int(m.group(1))] = {"packets_in": int(m.group(2)), "dropped": 0}
            continue
        m = re.match(r"\s*\d+: packet_count:(\d+)", line)
        if m and cur is not None:
            cur["dropped"] += int(m.group(1))
    return out


def parse_meter_config(text: str) -> dict[int, dict]:
    """`ovs-ofctl -O OpenFlow13 dump-meters BR`: each meter's unit and its drop band's rate and burst."""
    out: dict[int, dict] = {}
    cur: dict | None = None
    for line in text.splitlines():
        m = re.match(r"meter=(\d+) (\w+)", line)
        if m:
            cur = out[int(m.group(1))] = {"unit": m.group(2)}
            continue
        m = re.match(r"\s*type=drop rate=(\d+)(?: burst_size=(\d+))?", line)
        if m and cur is not None:
            cur["rate"] = int(m.group(1))
            if m.group(2):
                cur["burst_size"] = int(m.group(2))
    return out


def parse_pmd_stats(text: str) -> dict[str, dict[str, int]]:
    """`ovs-appctl dpif-netdev/pmd-stats-show`: per PMD core, packets received and idle/processing cycles
    (cumulative; a trial's busy share comes from the difference of two readings)."""
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\S+) core_id (\d+):", line)
        if m:
            cur = out[m.group(2)] = {"numa": int(m.group(1)) if m.group(1).isdigit() else -1}
            continue
        if line.startswith("main thread"):
            cur = None
            continue
        if cur is None:
            continue
        m = re.match(r"\s*(packets received|idle cycles|processing cycles): (\d+)", line)
        if m:
            cur[m.group(1).replace(" ", "_")] = int(m.group(2))
    return out


def parse_mempool(text: str) -> dict:
    """`ovs-appctl netdev-dpdk/get-mempool-info PORT`: the port's mempool, its size (mbufs) and use."""
    m = re.search(r"mempool <(\S+)>", text)
    if not m:
        return {}
    out: dict = {"name": m.group(1)}
    for key in ("size", "populated_size", "elt_size"):
        k = re.search(rf"^\s*{key}=(\d+)", text, re.M)
        if k:
            out[key] = int(k.group(1))
    k = re.search(r"avail \((\d+)\), in use \((\d+)\)", text)
    if k:
        out["avail"], out["in_use"] = int(k.group(1)), int(k.group(2))
    return out


def parse_coverage_drops(text: str) -> dict[str, int]:
    """`ovs-appctl coverage/show`: totals of the drop counters (datapath_drop_*, drop_action_*...).
    PMD threads publish their counts about once a second, so a reading right after a trial can lag."""
    return {name: int(total) for name, total in re.findall(r"^(\S*drop\S*)\s.*total: (\d+)", text, re.M)}


_PERF_LINES = (  # (pattern, keys): the overall lines of pmd-perf-show (OVS 3.1; 'Cycles:' and '- idle:' before it)
    (r"\s*Iterations:\s+(\d+)\s+\(([\d.]+) us/it\)", ("iterations", "us_per_it")),
    (r"\s*- Used TSC cycles:\s+(\d+)\s+\(\s*([\d.]+) % of total cycles\)", ("used_cycles", "used_pct")),
    (r"\s*Cycles:\s+(\d+)\s+\(([\d.]+) GHz\)", ("used_cycles", "ghz")),
    (r"\s*- idle(?: iterations)?:\s+(\d+)\s+\(\s*([\d.]+) %", ("idle_iterations", "idle_pct")),
    (r"\s*- busy(?: iterations)?:\s+(\d+)\s+\(\s*([\d.]+) %", ("busy_iterations", "busy_pct")),
    (r"\s*Rx packets:\s+(\d+)(?:\s+\((\d+) Kpps, (\d+) cycles/pkt\))?", ("rx_packets", "kpps", "cycles_per_pkt")),
    (r"\s*- Upcalls:\s+(\d+)", ("upcalls",)),  # issue 30 Must 3 (host/telemetry): upcalls, lost, TX batches
    (r"\s*- Lost upcalls:\s+(\d+)", ("lost_upcalls",)),
    (r"\s*Tx packets:\s+(\d+)", ("tx_packets",)),
    (r"\s*Tx batches:\s+(\d+)", ("tx_batches",)),
)


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def _tsc_hz(pmd: dict) -> float | None:
    """The TSC rate behind a PMD's cycle counts: used cycles over their share of the measurement's duration."""
    if not pmd.get("duration_s"):
        return None
    if pmd.get("used_pct"):
        return pmd["used_cycles"] / (pmd["used_pct"] / 100) / pmd["duration_s"]
    return pmd["ghz"] * 1e9 if pmd.get("ghz") else None


def pmd_perf(text: str) -> dict[str, dict]:
    """`ovs-appctl dpif-netdev/pmd-perf-show`: per PMD core (cumulative since the last pmd-stats-clear) its
    iterations (idle, busy), used TSC cycles and their idle/busy shares, RX packets and cycles per packet, the TSC
    rate, and with other_config:pmd-perf-metrics=true the cycles/it histogram as [[inclusive upper wall or None
    for the last bin, iterations], ...]."""
    out: dict[str, dict] = {}
    cur: dict | None = None
    duration: float | None = None
    hist: list | None = None
    for line in text.splitlines():
        if m := re.match(r"Measurement duration: ([\d.]+) s", line):
            duration = float(m.group(1))
        elif m := re.match(r"pmd thread numa_id (\S+) core_id (\d+):", line):
            cur = out[m.group(2)] = {"duration_s": duration}
            hist = None
        elif cur is None:
            continue
        elif line.startswith("Histograms"):
            hist = cur["cycles_per_it"] = []
        elif hist is not None:
            cells = line.split()
            if not cells or cells[0].startswith("-"):
                hist = None
            elif cells[0].isdigit() or cells[0] == ">":
                hist.append([None if cells[0] == ">" else int(cells[0]), int(cells[1])])
                if len(cells) >= 10:  # the 5th histogram: the longest vhost queue seen per iteration
                    cur.setdefault("max_vhost_qlen", []).append([None if cells[8] == ">" else int(cells[8]),
                                                                  int(cells[9])])
        else:
            for pattern, keys in _PERF_LINES:
                if m := re.match(pattern, line):
                    cur.update({k: _number(v) for k, v in zip(keys, m.groups(), strict=True) if v is not None})
                    break
    for pmd in out.values():
        pmd["tsc_hz"] = _tsc_hz(pmd)
    return out


def pmd_perf_delta(before: dict[str, dict], after: dict[str, dict]) -> dict[str, dict]:
    """Per PMD core in both readings of pmd_perf: iterations and RX packets between them and, from the cycles/it
    histogram, the longest iteration's bounds: more than max_iteration_cycles_gt and at most
    max_iteration_cycles_le cycles (None: beyond the last wall), with the same in ms at the PMD's TSC rate. A PMD
    descheduled mid-iteration shows the stall in that iteration's length."""
    out: dict[str, dict] = {}
    for core, a in after.items():
        b = before.get(core)
        if b is None:
            continue
        d = {k: a.get(k, 0) - b.get(k, 0) for k in ("iterations", "idle_iterations", "busy_iterations", "rx_packets")}
        bins = b.get("cycles_per_it", [])
        counts = [(wall, n - (bins[i][1] if i < len(bins) else 0))
                  for i, (wall, n) in enumerate(a.get("cycles_per_it", []))]
        used = [i for i, (_, n) in enumerate(counts) if n > 0]
        if used:
            top = used[-1]
            d["max_iteration_cycles_le"] = counts[top][0]
            d["max_iteration_cycles_gt"] = counts[top - 1][0] if top else 0
            hz = a.get("tsc_hz")
            if hz:
                for key in ("max_iteration_cycles_le", "max_iteration_cycles_gt"):
                    v = d[key]
                    d[key.replace("cycles", "ms")] = None if v is None else round(v / hz * 1e3, 3)
        out[core] = d
    return out
