"""What OVS prints about its counters and state, parsed. Pure text in, dicts out (tested on recorded output).

Live sources only: OpenFlow 1.4 port statistics carry OVS's custom counters (ovs_tx_failure_drops,
ovs_tx_mtu_exceeded_drops, per-queue vhost counters...) at the moment they are asked for, where the
OVSDB statistics column is refreshed only every 5 s; meter statistics count each band's drops.
"""

from __future__ import annotations

import re

# pmd-rxq-show and dpctl/show are parsed (and the caches' figures summed) beside the diagnosis that reads them
# from stored results
from zeroloss.core.ovsfacts import cache_stats, parse_dpctl_config, parse_pmd_rxq
from zeroloss.loss.counters import PmdStats

from .ovsrecords import PerfDelta, PerfHead, PerfHist, UpcallDp

__all__ = ["cache_stats", "datapath_state", "parse_coverage_drops", "parse_ct_limits", "parse_ct_stats",
           "parse_dpctl_config", "parse_dpctl_datapaths", "parse_dump_ports", "parse_mempool", "parse_meter_config",
           "parse_meter_stats", "parse_pmd_rxq", "parse_pmd_stats", "parse_upcall_show", "pmd_perf", "pmd_perf_delta"]

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
    seen: dict[int, int] = {}  # packets in, by meter
    dropped: dict[int, int] = {}
    cur: int | None = None
    for line in text.splitlines():
        m = re.match(r"meter:(\d+) .*packet_in_count:(\d+)", line)
        if m:
            cur = int(m.group(1))
            seen[cur], dropped[cur] = int(m.group(2)), 0
            continue
        m = re.match(r"\s*\d+: packet_count:(\d+)", line)
        if m and cur is not None:
            dropped[cur] += int(m.group(1))
    return {k: {"packets_in": n, "dropped": dropped[k]} for k, n in seen.items()}


def parse_meter_config(text: str) -> dict[int, dict]:
    """`ovs-ofctl -O OpenFlow13 dump-meters BR`: each meter's unit and its drop band's rate and burst."""
    out: dict[int, dict] = {}
    cur: int | None = None
    for line in text.splitlines():
        m = re.match(r"meter=(\d+) (\w+)", line)
        if m:
            cur = int(m.group(1))
            out[cur] = {"unit": m.group(2)}
            continue
        m = re.match(r"\s*type=drop rate=(\d+)(?: burst_size=(\d+))?", line)
        if m and cur is not None:
            out[cur] = {**out[cur], "rate": int(m.group(1)), **({"burst_size": int(m.group(2))} if m.group(2) else {})}
    return out


# pmd-stats-show's counters kept per PMD (OVS 3.1 lib/dpif-netdev.c pmd_info_show_stats), as key names
_PMD_COUNTERS = {"packets received": "packets_received", "packet recirculations": "recirculations",
                 "phwol hits": "phwol_hits", "mfex opt hits": "mfex_opt_hits", "simple match hits": "simple_hits",
                 "emc hits": "emc_hits", "smc hits": "smc_hits", "megaflow hits": "megaflow_hits",
                 "miss with success upcall": "upcalls", "miss with failed upcall": "lost_upcalls",
                 "idle cycles": "idle_cycles", "processing cycles": "processing_cycles"}


def parse_pmd_stats(text: str) -> dict[str, dict[str, int]]:
    """`ovs-appctl dpif-netdev/pmd-stats-show`: per PMD core, packets received, the datapath caches' hits (EMC,
    SMC, megaflow), misses that went up to the slow path (upcalls) and those lost (failed upcalls), and idle/
    processing cycles. All cumulative, so a trial's figures are the difference of two readings; the printed average
    of subtable lookups per megaflow hit becomes megaflow_lookups (avg x hits) so that it subtracts too."""
    out: dict[str, dict[str, int]] = {}
    avg: dict[str, float] = {}
    cur: dict[str, int] | None = None
    core = ""
    for line in text.splitlines():
        m = re.match(r"pmd thread numa_id (\S+) core_id (\d+):", line)
        if m:
            core = m.group(2)
            cur = out[core] = {"numa": int(m.group(1)) if m.group(1).isdigit() else -1}
            continue
        if line.startswith("main thread"):
            cur = None
            continue
        if cur is None:
            continue
        m = re.match(r"\s*([a-z .]+): (\d+)(?:\s|$)", line)
        if m and m.group(1) in _PMD_COUNTERS:
            cur[_PMD_COUNTERS[m.group(1)]] = int(m.group(2))
            continue
        m = re.match(r"\s*avg\. subtable lookups per megaflow hit: ([\d.]+)", line)
        if m:
            avg[core] = float(m.group(1))
    for core, pmd in out.items():
        hits = PmdStats.from_json(pmd).megaflow_hits
        if core in avg and hits is not None:
            out[core] = {**pmd, "megaflow_lookups": round(avg[core] * hits)}
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
    return {**out, "avail": int(k.group(1)), "in_use": int(k.group(2))} if k else out


# coverage counters kept beside the drop counters: conntrack refusing a new connection (table or zone full; the
# zone counter exists from OVS 3.2 on) and the revalidators' flow limit
COVERAGE_LIMITS = ("conntrack_full", "conntrack_zone_full", "upcall_flow_limit_hit", "upcall_flow_limit_kill")


# coverage/show lists only the counters that ever counted: these are read as 0 until then, so that a counter's first
# events (within a trial) are a difference of two readings too (OVS 3.1 lib/dpif-netdev.c, lib/odp-execute.c)
COVERAGE_ZERO = (*COVERAGE_LIMITS, "datapath_drop_upcall_error", "datapath_drop_tunnel_push_error",
                 "datapath_drop_tunnel_pop_error", "datapath_drop_invalid_tnl_port", "datapath_drop_recirc_error",
                 "datapath_drop_invalid_port", "drop_action_of_pipeline", "netdev_push_header_drops")


def parse_coverage_drops(text: str) -> dict[str, int]:
    """`ovs-appctl coverage/show`: totals of the drop counters (datapath_drop_*, drop_action_*, the tunnel push/pop
    errors...) and of COVERAGE_LIMITS, those of COVERAGE_ZERO at 0 when OVS does not list them yet. PMD threads
    publish their counts about once a second, so a reading right after a trial can lag."""
    found = {name: int(total) for name, total in re.findall(r"^(\S+)\s.*total: (\d+)", text, re.M)
             if "drop" in name or name in COVERAGE_LIMITS}
    return {**dict.fromkeys(COVERAGE_ZERO, 0), **found} if text.startswith("Event coverage") else found


# datapath state read after each trial (gauges, not counters): the netdev datapath's flows and lookups, the
# revalidators' flow limit, conntrack's connections and limits. ct-stats-show walks every connection, so it is
# read only when ct-get-nconns says there are at most CT_STATS_MAX.
NETDEV_DP = "netdev@ovs-netdev"
DATAPATH_READS = (("upcall_show", ("upcall/show",)),
                  ("ct_nconns", ("dpctl/ct-get-nconns", NETDEV_DP)),
                  ("ct_maxconns", ("dpctl/ct-get-maxconns", NETDEV_DP)),
                  ("ct_limits", ("dpctl/ct-get-limits", NETDEV_DP)))
CT_STATS_READ = ("dpctl/ct-stats-show", NETDEV_DP)
CT_STATS_MAX = 100_000


def parse_dpctl_datapaths(text: str) -> dict[str, dict[str, int]]:
    """`ovs-appctl dpctl/show`: per datapath (netdev@ovs-netdev...), its lookups (hit, missed, lost) and flows."""
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for line in text.splitlines():
        if m := re.match(r"(\S+@\S+):$", line):
            cur = out[m.group(1)] = {}
        elif cur is None:
            continue
        elif m := re.match(r"\s*lookups: hit:(\d+) missed:(\d+) lost:(\d+)", line):
            cur.update(hit=int(m.group(1)), missed=int(m.group(2)), lost=int(m.group(3)))
        elif m := re.match(r"\s*flows: (\d+)", line):
            cur["flows"] = int(m.group(1))
    return out


def parse_upcall_show(text: str) -> dict[str, dict[str, int | list[int]]]:
    """`ovs-appctl upcall/show`: per datapath, its flows (current, avg, max and the flow limit the revalidators
    keep), the last dump's duration (ms) and each revalidator's keys."""
    out: dict[str, dict[str, int | list[int]]] = {}
    keys: dict[str, list[int]] = {}  # each revalidator's keys, by datapath
    cur: dict[str, int | list[int]] | None = None
    name = ""
    for line in text.splitlines():
        if m := re.match(r"(\S+@\S+):$", line):
            name = m.group(1)
            keys[name] = []
            cur = out[name] = {"revalidator_keys": keys[name]}
        elif cur is None:
            continue
        elif m := re.match(r"\s*flows\s*: \(current (\d+)\) \(avg (\d+)\) \(max (\d+)\) \(limit (\d+)\)", line):
            cur.update(flows=int(m.group(1)), flows_avg=int(m.group(2)), flows_max=int(m.group(3)),
                       flow_limit=int(m.group(4)))
        elif m := re.match(r"\s*dump duration : (\d+)ms", line):
            cur["dump_duration_ms"] = int(m.group(1))
        elif m := re.match(r"\s*\d+: \(keys (\d+)\)", line):
            keys[name].append(int(m.group(1)))
    return {n: {**dp, "revalidators": len(keys[n])} for n, dp in out.items()}


def parse_ct_limits(text: str) -> dict:
    """`ovs-appctl dpctl/ct-get-limits`: the default zone limit (0: none) and each zone's limit and count."""
    zones = {zone: {"limit": int(limit), "count": int(count)}
             for zone, limit, count in re.findall(r"zone=(\d+),limit=(\d+),count=(\d+)", text)}
    m = re.search(r"default limit=(\d+)", text)
    return {"zones": zones, **({"default_limit": int(m.group(1))} if m else {})}


def parse_ct_stats(text: str) -> dict[str, int]:
    """`ovs-appctl dpctl/ct-stats-show`: connections in total and per protocol (tcp, udp, icmp...)."""
    m = re.search(r"Total: (\d+)", text)
    protos = re.findall(r"^\s+(TCP|UDP|UDPLITE|SCTP|ICMP|ICMPv6|ICMPV6|DCCP|IGMP|Other): (\d+)", text, re.M)
    return {**({"total": int(m.group(1))} if m else {}), **{proto.lower(): int(n) for proto, n in protos}}


def _int_reply(text: str | None) -> int | None:
    return int(text.split()[0]) if text and text.split() and text.split()[0].isdigit() else None


def datapath_state(texts: dict[str, str]) -> dict:
    """The datapath's state from the outputs of DATAPATH_READS (and dpctl_show, ct_stats_show when read), keyed as
    there: {flows, lookups_hit/missed/lost, flow_limit, flows_max, dump_duration_ms, revalidators, ct: {nconns,
    maxconns, default_limit, zones, total, tcp...}}. A text that starts with 'unavailable' or is missing leaves its
    figures out."""
    def ok(key: str) -> str:
        t = texts.get(key) or ""
        return "" if t.startswith("unavailable") else t

    out: dict = {}
    dp = parse_dpctl_datapaths(ok("dpctl_show")).get(NETDEV_DP, {})
    out.update({("lookups_" + k if k != "flows" else k): v for k, v in dp.items()})
    up = parse_upcall_show(ok("upcall_show")).get(NETDEV_DP, {})
    out.update({k: v for k, v in up.items() if k in ("flow_limit", "flows_max", "flows_avg", "dump_duration_ms",
                                                     "revalidators")})
    flows = UpcallDp.from_json(up).flows
    if "flows" not in out and flows is not None:
        out = {**out, "flows": flows}
    ct: dict = {}
    for key in ("nconns", "maxconns"):
        v = _int_reply(ok(f"ct_{key}"))
        if v is not None:
            ct[key] = v
    if ok("ct_limits"):
        ct.update(parse_ct_limits(ok("ct_limits")))
    ct.update(parse_ct_stats(ok("ct_stats_show")))
    return {**out, "ct": ct} if ct else out


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


def _tsc_hz(pmd: PerfHead) -> float | None:
    """The TSC rate behind a PMD's cycle counts: used cycles over their share of the measurement's duration."""
    if not pmd.duration_s:
        return None
    if pmd.used_pct:
        return pmd.used_cycles / (pmd.used_pct / 100) / pmd.duration_s
    return pmd.ghz * 1e9 if pmd.ghz else None


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
    return {core: {**pmd, "tsc_hz": _tsc_hz(PerfHead.from_json(pmd))} for core, pmd in out.items()}


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
        pa, pb = PerfHist.from_json(a), PerfHist.from_json(b)
        bins = pb.cycles_per_it
        counts = [(wall, n - (bins[i][1] if i < len(bins) else 0)) for i, (wall, n) in enumerate(pa.cycles_per_it)]
        used = [i for i, (_, n) in enumerate(counts) if n > 0]
        le = gt = le_ms = gt_ms = None
        written = PerfDelta.COUNTS
        if used:
            top = used[-1]
            le, gt = counts[top][0], counts[top - 1][0] if top else 0
            written |= PerfDelta.CYCLES
            if pa.tsc_hz:
                le_ms, gt_ms = (None if v is None else round(v / pa.tsc_hz * 1e3, 3) for v in (le, gt))
                written |= PerfDelta.MS
        out[core] = PerfDelta(
            iterations=pa.iterations - pb.iterations, idle_iterations=pa.idle_iterations - pb.idle_iterations,
            busy_iterations=pa.busy_iterations - pb.busy_iterations, rx_packets=pa.rx_packets - pb.rx_packets,
            max_iteration_cycles_le=le, max_iteration_cycles_gt=gt, max_iteration_ms_le=le_ms,
            max_iteration_ms_gt=gt_ms, keys=written).to_json()
    return out


def openflow_up(show: str, port: str) -> bool:
    """True when `ovs-ofctl show BRIDGE` lists the port with a state that is not LINK_DOWN (after a vswitchd restart
    OVSDB's link_state can stay 'down' while the port forwards: OpenFlow's state is the one to read)."""
    m = re.search(rf"^\s*\d+\({re.escape(port)}\):.*?^\s+state:\s+([^\n]*)", show, re.M | re.S)
    return m is not None and "LINK_DOWN" not in m.group(1)
