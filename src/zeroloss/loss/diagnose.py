"""Diagnosis: the dominant drops of a trial's ledger turned into causes and remedies. Pure.

Each finding names the hop and reason, how many of the lost frames it explains, what the counters and
OVS's state show (PMD load, queue placement, MTU, meter rate, mempool size), and remedies that are
concrete commands or zeroloss settings. The causes follow BRIEF §5 (where OVS-DPDK loses packets) and
the references' troubleshooting cases (RX queue overflow on a busy PMD, vring size, MTU, mempool).
"""

from __future__ import annotations

import re

from zeroloss.core.frames import largest
from zeroloss.core.ovsfacts import (
    CT_MAXCONNS,
    EMC_ENTRIES,
    FLOW_LIMIT,
    VXLAN_OVERHEAD,
    cache_stats,
    ovs_shared_mbufs,
    parse_dpctl_config,
    parse_pmd_rxq,
    tripleo_socket_mem,
)

from .ledger import ledger

BUSY_PCT = 85      # a PMD this busy over a trial has no headroom left
IDLE_PCT = 40      # ... and one below this while another is busy means the load is badly placed
CACHE_HIT_PCT = 50     # EMC + SMC serving fewer lookups than this, the rest megaflow lookups: the caches thrash
MIN_LOOKUPS = 10_000   # ... judged on at least this many lookups in the trial
UPCALL_PCT = 1.0       # more lookups than this going up to the slow path: an upcall storm
FLOWS_NEAR_LIMIT = 0.9  # datapath flows at this share of the flow limit: the revalidators evict


def pmd_load(c: dict) -> dict[str, float]:
    """Busy share (%) of each PMD core while zlgen transmitted: its processing cycles over the cycles of the
    TX window. The counters span the TX window plus the drain (when the PMD idles), so their own
    idle/processing ratio would understate a saturated PMD; the readings' timestamps give cycles per second.
    Without them: processing / (idle + processing) over the whole span."""
    ovs = c.get("ovs") or {}
    span_ns, window = ovs.get("t_ns"), (c.get("gen") or {}).get("window_s")
    out = {}
    for core, p in (ovs.get("pmds") or {}).items():
        busy = p.get("processing_cycles", 0)
        total = p.get("idle_cycles", 0) + busy
        if total <= 0:
            continue
        if span_ns and window and span_ns > window * 1e9:
            out[core] = min(100.0, 100 * busy / (total * window * 1e9 / span_ns))
        else:
            out[core] = 100 * busy / total
    return out


def _rxq(state: dict) -> list[dict]:
    text = (state or {}).get("pmd_rxq_show") or ""
    try:
        return parse_pmd_rxq(text) if not text.startswith("unavailable") else []
    except ValueError:  # a stored text no OVS printed (a number of thousands of digits): no queue placement
        return []


def _mtus(state: dict) -> dict[str, int]:
    try:
        rows = parse_dpctl_config((state or {}).get("dpctl_show") or "")
    except ValueError:
        return {}
    return {n: r["mtu"] for n, r in rows.items() if isinstance(r.get("mtu"), int)}


def _mask_plus_one(mask: str) -> str:
    """The PMD CPU mask with the next core added (the lowest core not in it)."""
    try:
        m = int(mask, 16)
    except ValueError:
        m = -1
    if m < 0:
        return "<mask with one more core>"
    bit = 0
    while m >> bit & 1:
        bit += 1
    return hex(m | 1 << bit)


def _pmd_evidence(ports: list[str], rxq: list[dict], load: dict[str, float]) -> tuple[list[str], float | None]:
    """Which PMDs poll these ports' queues and how busy each was; the busiest one's load."""
    cores = sorted({r["core"] for r in rxq if r["port"] in ports})
    lines, busiest = [], None
    for core in cores:
        polled = ", ".join(f"{r['port']} q{r['queue']}" for r in rxq if r["core"] == core)
        pct = load.get(str(core))
        if pct is not None:
            busiest = pct if busiest is None else max(busiest, pct)
        lines.append(f"PMD core {core} was {'?' if pct is None else f'{pct:.0f}'} % busy while zlgen sent; it polls "
                     f"{polled}")
    if not cores and load:
        busiest = max(load.values())
        lines += [f"PMD core {k} was {v:.0f} % busy while zlgen sent" for k, v in sorted(load.items())]
    return lines, busiest


def _queue_evidence(hop: dict, side: str) -> list[str]:
    q = (hop.get("evidence") or {}).get(f"{side}_queues") or []
    total = sum(q)
    if len(q) < 2 or not total:
        return []
    return [f"{hop['where']} {side.upper()} queues: " + ", ".join(f"q{i} {100 * n / total:.0f} %" for i, n in
                                                                   enumerate(q))]


class _Ctx:
    def __init__(self, c: dict, state: dict, ctx: dict):
        self.c, self.state, self.ctx = c, state or {}, ctx
        self.load = pmd_load(c)
        self.rxq = _rxq(self.state)
        self.mtus = _mtus(self.state)
        self.mask = ctx.get("pmd_cpu_mask") or "0x1"
        self.queues = int(ctx.get("queues") or 1)
        self.bench = ctx.get("bench", True)
        self.cache = cache_stats(((c.get("ovs") or {}).get("pmds")) or {})
        self.dp = self.state.get("datapath") or {}
        self.coverage = (c.get("ovs") or {}).get("coverage") or {}
        self.pmd_cause = _pmd_cause(self)


def _rx_missed_ovs(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    ports = hop["ports"]
    names = hop["where"]
    ev, busiest = _pmd_evidence(ports, x.rxq, x.load)
    ev += _queue_evidence(hop, "rx")
    sender = hop.get("sender") or {}
    who = f"{sender['label']}'s TX into it" if "proc" in sender else "the frames sent to it"
    iface = ports[0]
    remedies = [f"more PMD cores: ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask={_mask_plus_one(x.mask)} "
                f"(isolated cores on the port's NUMA node; 'zeroloss host plan' picks them)",
                _more_rx_queues(iface, 2 * x.queues, x)]
    if busiest is not None and busiest < BUSY_PCT:
        cause = (f"OVS port {names}'s RX queue overflowed although its PMD was only {busiest:.0f} % busy: the PMD "
                 f"thread lost its core for a while (not isolated, shared with other threads) or bursts exceed "
                 f"the ring")
        remedies = [f"a core of its own for the PMD: isolcpus/nohz_full for pmd-cpu-mask {x.mask}, no other "
                    f"thread on it ('zeroloss host audit' checks it)",
                    "a deeper ring: for a vhost port the guest's virtio queue size (QEMU rx_queue_size/"
                    "tx_queue_size=1024); for a NIC port ovs-vsctl set Interface PORT options:n_rxq_desc=4096",
                    *remedies]
    else:
        load = f" (busiest {busiest:.0f} %)" if busiest is not None else ""
        cause = (f"OVS's PMD could not keep up with port {names}{load}: {who} found its RX queue full "
                 f"(a NIC counts these as rx_missed_errors)")
        remedies.append("deeper RX descriptors absorb bursts, not a lack of cycles: for a NIC port ovs-vsctl set "
                        "Interface PORT options:n_rxq_desc=4096")
    return cause, ev, remedies


def port_type(iface: str, x: _Ctx) -> str | None:
    """The OVS interface type of a port (dpdk, dpdkvhostuser, dpdkvhostuserclient, ...) from dpctl/show, or None."""
    m = re.search(rf"^\s*port \d+: {re.escape(iface)} \(([\w-]+)", x.state.get("dpctl_show") or "", re.M)
    return m.group(1) if m else None


def _virtio_queues(iface: str, n: int) -> str:
    """More queues on a vhost-user port: OVS ignores options:n_rxq there and takes as many queues as the virtio
    side (the guest, or a virtio-user process) enables, so they are set on that side."""
    return (f"more queues on {iface}'s virtio side (OVS ignores options:n_rxq on a vhost-user port and uses the "
            f"queues its peer enables): a VM's QEMU -netdev vhost-user,...,queues={n} with -device virtio-net-pci,"
            f"mq=on,vectors={2 * n + 2}, then ethtool -L <guest interface> combined {n} in the guest; a container or "
            f"process VNF's net_virtio_user queues={n} (and --rxq/--txq={n} in testpmd)")


def _more_rx_queues(iface: str, n: int, x: _Ctx) -> str:
    """The RX queue remedy by the port's type: n_rxq on a NIC (or a port of unknown type), the virtio side's queues
    on a vhost-user port."""
    kind = port_type(iface, x)
    if kind is not None and kind.startswith("dpdkvhostuser"):
        return _virtio_queues(iface, n)
    return f"more RX queues spread over the PMDs: ovs-vsctl set Interface {iface} options:n_rxq={n}"


def _tx_failure(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    port = hop["where"]
    retries = (hop.get("evidence") or {}).get("tx_retries", 0)
    ev = [f"OVS retried {retries} time(s) on {port} before dropping (options:tx-retries-max, default 8)"]
    if hop.get("receiver") == "zlgen":
        return (f"zlgen did not drain its RX virtqueue behind {port}: the generator's receive side is the "
                f"bottleneck (generator-bound), not OVS"), ev, [
            "more generator cores: --set gen_lcores=1-2 (one per port) or a lower rate",
            "a larger generator ring (zlgen's virtio queue size)"]
    ring = x.ctx.get("vnf_ring")
    procs = (x.c.get("procs") or {})
    ev += [f"{k}: telemetry did not answer after the trial (stopped or paused)" for k in x.ctx.get("vnfs", [])
           if k not in procs]
    remedies = [("a larger virtio ring in the guest: QEMU -device virtio-net-pci,rx_queue_size=1024,"
                 "tx_queue_size=1024 (a VM), net_virtio_user queue_size=1024 (a container or process)"
                 + (f" (this run: {ring}; bench: --set vnf_ring=1024)" if ring else "")),
                "more cores for the VNF's forwarding threads, isolated from OVS's PMDs",
                "multiqueue: " + _virtio_queues(hop["ports"][0], 2 * x.queues),
                f"more retries absorb short guest stalls (adds latency): ovs-vsctl set Interface {hop['ports'][0]} "
                f"options:tx-retries-max=32"]
    if ring and int(ring) >= 1024:
        remedies = remedies[1:] + remedies[:1]
    return f"the guest behind {port} did not drain its RX virtqueue: OVS's vhost TX found it full", ev, remedies


def _tx_vring_down(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    """OVS counted a TX drop on a VNF's vhost-user port that no retry, MTU or QoS counter explains: the port's
    virtqueue was not running. OVS 3.1 drops to a vhost device that is not running or whose queue the guest has
    not enabled (netdev-dpdk's vhost send path) and counts it in tx_dropped only. A VM whose vCPUs are stopped
    (virsh suspend, QMP stop, the stop-and-copy of a live migration) has its vhost-user device stopped by QEMU."""
    port = hop["where"]
    procs = x.c.get("procs") or {}
    ev = [f"{k}: telemetry did not answer after the trial (stopped or paused)" for k in x.ctx.get("vnfs", [])
          if k not in procs]
    return (f"OVS dropped frames to {port} while its virtqueue was not running: the guest was paused (or being "
            f"migrated), or its virtio driver had stopped the device"), ev, [
        "keep the VM running while traffic flows: check 'virsh domstate' (paused? a snapshot or live migration "
        "in progress?) and 'virsh domjobinfo'",
        "the guest's DPDK application must keep its virtio ports started (testpmd: 'show port info all')",
        f"ovs-vsctl get Interface {hop['ports'][0]} status shows the vhost device's state"]


def _tx_mtu(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    frame = largest(x.ctx.get("frame") or 0)  # a mix's largest frame is the one the MTU stops
    ports = hop["ports"]
    mtus = {p: x.mtus.get(p) for p in ports}
    shown = ", ".join(f"{p} MTU {m}" for p, m in mtus.items() if m is not None) or "MTU unknown"
    need = max(1500, frame - 18)
    return (f"{frame} B frames are larger than port {hop['where']} can send ({shown}: at most MTU + 18 B)",
            [shown], [f"ovs-vsctl set Interface {p} mtu_request={need}" for p in ports] +
            ["every port on the path and the guest's own MTU need it too (ip link set dev IF mtu "
             f"{need} in the VM)"])


PMD_BATCH = 32  # frames an OVS PMD hands its pipeline (and a meter) at once: NETDEV_MAX_BURST


def _meter(hop: dict, drop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    bridge, _, mid = (hop.get("meter") or "?/?").partition("/")
    conf = ((x.state.get("meters") or {}).get(hop.get("meter") or "") or {})
    rate, burst = conf.get("rate"), conf.get("burst_size")
    offered = x.ctx.get("rate_pps")
    unit = conf.get("unit", "pktps")
    what = f"{rate} {'pps' if unit == 'pktps' else unit}" if rate else "its band rate"
    ev = [f"meter {mid} on {bridge}: drop band at {what}, burst {burst if burst is not None else '?'}"]
    if offered:
        ev.append(f"offered {offered:,.0f} pps on this direction")
    take_off = (f"or take it off the path: remove meter:{mid} from the flow's actions (ovs-ofctl -O OpenFlow13 "
                f"dump-flows {bridge})")
    if _burst_bound(rate, burst, unit, offered, drop["frames"], (x.c.get("gen") or {}).get("window_s")):
        new_burst = max(2 * burst, 2 * PMD_BATCH)
        over = offered > rate
        excess = f"{offered - rate:,.0f} pps over it" if over else "the offered rate is within it"
        ev.append(f"the meter dropped {drop['frames']:,} frames, more than its rate explains ({excess}): frames "
                  f"reach it in batches (up to {PMD_BATCH} per PMD poll) larger than its burst_size {burst}")
        rate_new = int(offered * 1.1) if over else rate
        return (f"OpenFlow meter {mid} on bridge {bridge} drops bursts above its burst_size {burst}"
                + (f" (and polices this direction to {what})" if over else f", not the rate ({what})"), ev,
                [f"raise burst_size: ovs-ofctl -O OpenFlow13 mod-meter {bridge} meter={mid},pktps,burst,"
                 f"band=type=drop,rate={rate_new},burst_size={new_burst}", take_off])
    new = f"{int(offered * 1.1)}" if offered else "<rate>"
    return (f"OpenFlow meter {mid} on bridge {bridge} polices this direction to {what}", ev,
            [f"raise it: ovs-ofctl -O OpenFlow13 mod-meter {bridge} meter={mid},pktps,burst,band=type=drop,"
             f"rate={new},burst_size={burst if burst is not None else 1000}", take_off])


def _burst_bound(rate, burst, unit: str, offered, dropped: int, window_s) -> bool:
    """True when a packet meter's burst_size, not its rate, explains its drops: the offered rate is within the
    meter's rate, or the drops are more than twice what the excess over the rate could cause in the TX window."""
    if unit != "pktps" or not rate or burst is None or not offered:
        return False
    if offered <= rate:
        return dropped > 0
    return bool(window_s) and dropped > 2 * (offered - rate) * window_s


DATAPATH = {"datapath_drop_upcall_error": "the flow miss could not be handed to the slow path (upcall error)",
            "drop_action_of_pipeline": "the OpenFlow pipeline dropped it: no matching rule or an explicit drop",
            "datapath_drop_invalid_port": "the output port does not exist (any more)",
            "datapath_drop_lock_error": "the datapath could not take a lock",
            "datapath_drop_rx_invalid_packet": "the packet was malformed",
            "datapath_drop_invalid_bond": "the bond had no usable member",
            "datapath_drop_tunnel_push_error": "the tunnel header could not be pushed (encapsulation failed: no route "
                                               "or neighbour for the remote VTEP, or the underlay port is gone)",
            "datapath_drop_tunnel_pop_error": "the tunnel header could not be popped (decapsulation failed: a "
                                              "malformed or unexpected outer header)",
            "datapath_drop_invalid_tnl_port": "a tunnel frame arrived for no configured tunnel port (remote_ip, key "
                                              "or dst_port do not match)",
            "datapath_drop_recirc_error": "recirculation failed (conntrack or a tunnel's second pass)",
            "netdev_push_header_drops": "the tunnel header did not fit the frame (push_header)"}


def _datapath(hop: dict, drop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    name = drop["counter"].split()[-1]
    bridge = hop["where"].split("->")[0]
    port = hop["in_ports"][0]
    return (f"OVS dropped frames inside {hop['where']}: {DATAPATH.get(name, name)}",
            [f"coverage counter {name}"],
            [f"trace one frame: ovs-appctl ofproto/trace {bridge} in_port={port}",
             f"look at the rules and their counters: ovs-ofctl -O OpenFlow13 dump-flows {bridge}"])


def _nombuf(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    return (f"{hop['where']} ran out of mbufs to receive into (mempool exhausted)", [],
            ["more mbufs for that process (testpmd --total-num-mbufs) or more socket memory",
             "for OVS: dpdk-socket-mem at least the formula for its MTUs ('zeroloss host plan')"])


def _mempool_findings(x: _Ctx) -> list[dict]:
    """OVS halves a mempool silently when the socket memory cannot hold it (logged at DBG only)."""
    out = []
    for port, mp in sorted((x.state.get("mempools") or {}).items()):
        mtu = x.mtus.get(port)
        size = mp.get("size")
        if not mtu or not size or x.ctx.get("per_port_memory"):
            continue
        want = ovs_shared_mbufs(mtu)
        if size < want:
            mb = tripleo_socket_mem([mtu])
            out.append({"hop": f"OVS {port} mempool", "where": port, "reason": "mempool_small", "frames": 0,
                        "share_pct": 0.0,
                        "cause": f"OVS created {port}'s mempool with {size} mbufs instead of {want} (it halves the "
                                 f"count when socket memory runs out): bursts can exhaust it",
                        "evidence": [f"mempool {mp.get('name')}: {size} mbufs of {mp.get('elt_size', '?')} B"],
                        "remedies": [f"ovs-vsctl set Open_vSwitch . other_config:dpdk-socket-mem={mb} (the formula "
                                     f"for MTU {mtu}; per NUMA node, comma-separated)"]})
            break
    return out


def _imbalance(x: _Ctx) -> list[dict]:
    if len(x.load) < 2:
        return []
    hot = max(x.load, key=x.load.get)
    cold = min(x.load, key=x.load.get)
    if x.load[hot] < BUSY_PCT or x.load[cold] > IDLE_PCT:
        return []
    return [{"hop": "OVS PMD placement", "where": f"core {hot}", "reason": "pmd_imbalance", "frames": 0,
             "share_pct": 0.0,
             "cause": f"PMD core {hot} was {x.load[hot]:.0f} % busy while core {cold} was {x.load[cold]:.0f} %: "
                      f"the RX queues are placed badly",
             "evidence": [f"core {r['core']}: {r['port']} q{r['queue']}" for r in x.rxq],
             "remedies": ["ovs-vsctl set Open_vSwitch . other_config:pmd-rxq-assign=group",
                          "ovs-appctl dpif-netdev/pmd-rxq-rebalance",
                          "more RX queues per busy port (options:n_rxq), and flows that spread over them "
                          "(step source IPs: --set flow_fields=src_ip)"]}]


def _conntrack_full(x: _Ctx) -> tuple[str, str, list[str], list[str]] | None:
    """Conntrack refusing new connections: its coverage counters rose, or its table or a zone is at its limit."""
    ct = x.dp.get("ct") or {}
    nconns, maxconns = ct.get("nconns"), ct.get("maxconns")
    refused = {k: x.coverage.get(k, 0) for k in ("conntrack_full", "conntrack_zone_full") if x.coverage.get(k, 0) > 0}
    zones = {z: v for z, v in (ct.get("zones") or {}).items() if v.get("limit") and v.get("count", 0) >= v["limit"]}
    default = ct.get("default_limit") or 0
    at_max = nconns is not None and maxconns and nconns >= maxconns
    at_default = bool(default) and nconns is not None and nconns >= default
    if not (refused or zones or at_max or at_default):
        return None
    ev = [f"coverage {k}: {v:,} new connection(s) refused in the trial" for k, v in refused.items()]
    if nconns is not None:
        ev.append(f"conntrack holds {nconns:,} connection(s), ct maxconns {maxconns if maxconns is not None else '?'}"
                  + (f", default zone limit {default:,}" if default else ""))
    ev += [f"zone {z}: {v['count']:,} connection(s) of its limit {v['limit']:,}" for z, v in sorted(zones.items())]
    want = max(2 * (nconns or 0), 2 * int(x.ctx.get("flows") or 0), CT_MAXCONNS if at_max else 0)
    remedies = []
    if refused.get("conntrack_full") or at_max:
        remedies.append(f"ovs-appctl dpctl/ct-set-maxconns netdev@ovs-netdev {want} (zeroloss: --set ovs_ct_maxconns="
                        f"{want})")
    if zones or at_default or refused.get("conntrack_zone_full"):
        limit = max(2 * max([default, *(v["limit"] for v in zones.values())]), 2 * int(x.ctx.get("flows") or 0))
        remedies.append(f"ovs-appctl dpctl/ct-set-limits netdev@ovs-netdev default={limit}"
                        + "".join(f" zone={z},limit={limit}" for z in sorted(zones))
                        + f" (zeroloss: --set ovs_ct_zone_limit={limit}; Neutron: one zone per network)")
    return ("conntrack_full", "conntrack was full: new connections were refused a commit, so each of their frames "
            "took conntrack's slow new-connection path again (and a firewall dropping +inv or uncommitted frames "
            "drops them)", ev, remedies)


def _upcall_storm(x: _Ctx) -> tuple[str, str, list[str], list[str]] | None:
    """Flow misses going up to the slow path (handler threads) or lost there, or the datapath at its flow limit."""
    cache, dp = x.cache, x.dp
    flows, limit = dp.get("flows"), dp.get("flow_limit")
    near = bool(flows is not None and limit and flows >= FLOWS_NEAR_LIMIT * limit)
    hit = x.coverage.get("upcall_flow_limit_hit", 0) + x.coverage.get("upcall_flow_limit_kill", 0)
    storm = cache and cache["lookups"] >= MIN_LOOKUPS and cache["upcalls_pct"] >= UPCALL_PCT
    lost = cache.get("lost_upcalls", 0) if cache else 0
    if not (storm or lost or near or hit):
        return None
    ev = []
    if cache:
        ev.append(f"{cache['upcalls']:,} of {cache['lookups']:,} lookups ({cache['upcalls_pct']} %) missed every cache "
                  f"and went up to the slow path; {lost:,} upcall(s) failed (lost)")
    if flows is not None:
        ev.append(f"datapath flows {flows:,} (max {dp.get('flows_max', '?')}), flow limit {limit if limit else '?'}, "
                  f"{dp.get('revalidators', '?')} revalidator(s), last dump {dp.get('dump_duration_ms', '?')} ms")
    if hit:
        ev.append(f"coverage upcall_flow_limit_hit/kill: {hit:,}")
    new_limit = max(2 * FLOW_LIMIT, 2 * (limit or 0), 2 * int(x.ctx.get("flows") or 0))
    revs = int(dp.get("revalidators") or 1) + 2
    return ("upcall_storm", "flow misses went up to OVS's slow path (an upcall per new megaflow, handled by the "
            "handler threads) faster than it installs flows" + (" and the datapath sat at its flow limit, which the "
                                                                "revalidators keep by evicting flows" if near else ""),
            ev, [f"ovs-vsctl set Open_vSwitch . other_config:flow-limit={new_limit} (zeroloss: --set ovs_flow_limit="
                 f"{new_limit}); OVS lowers the limit itself when a flow dump takes over 1 s",
                 f"ovs-vsctl set Open_vSwitch . other_config:n-revalidator-threads={revs} (zeroloss: --set "
                 f"ovs_revalidators={revs}): dumps finish sooner, the limit stays high",
                 "fewer megaflows: OpenFlow rules that match fewer fields (each matched field splits the megaflows)"])


def _emc_thrash(x: _Ctx) -> tuple[str, str, list[str], list[str]] | None:
    """The exact-match cache (and SMC) serving few lookups while many flows pass: each miss costs a megaflow
    (subtable) lookup, and each EMC insertion evicts another flow's entry."""
    cache = x.cache
    if not cache or cache["lookups"] < MIN_LOOKUPS:
        return None
    flows = int(x.ctx.get("flows") or 0)
    cached = cache["emc_pct"] + cache["smc_pct"]
    if cached >= CACHE_HIT_PCT or cache["megaflow_pct"] < 100 - CACHE_HIT_PCT or (flows and flows <= EMC_ENTRIES):
        return None
    ev = [f"EMC hits {cache['emc_pct']} %, SMC hits {cache['smc_pct']} %, megaflow hits {cache['megaflow_pct']} % of "
          f"{cache['lookups']:,} lookups ({cache['subtable_lookups_per_hit']} subtable lookups per megaflow hit)"
          + (f"; {flows:,} flows per direction against {EMC_ENTRIES:,} EMC entries per PMD" if flows else "")]
    if cache["recirculations"]:
        ev.append(f"{cache['recirculations']:,} recirculation(s): every frame looks up the caches twice "
                  f"(conntrack or a tunnel's second pass)")
    remedies = []
    if not cache["smc_pct"]:
        remedies.append("ovs-vsctl set Open_vSwitch . other_config:smc-enable=true (zeroloss: --set ovs_smc_enable="
                        "true): the signature-match cache holds 1M flows per PMD behind the 8k-entry EMC")
    remedies.append("ovs-vsctl set Open_vSwitch . other_config:emc-insert-inv-prob=0 (zeroloss: --set "
                    "ovs_emc_insert_inv_prob=0): the EMC off, no insertion or lookup cost for flows it never keeps")
    return ("emc_thrash", f"the datapath caches thrashed: only {cached:.0f} % of lookups hit the EMC or SMC, the rest "
            f"paid a megaflow lookup", ev, remedies)


def _pmd_cause(x: _Ctx) -> tuple[str, str, list[str], list[str]] | None:
    """Why the PMD ran short of cycles beyond its load, from the datapath's own figures: conntrack full, an upcall
    storm or the caches thrashing (in that order: each makes the next worse); None when none holds."""
    return _conntrack_full(x) or _upcall_storm(x) or _emc_thrash(x)


def _reason(hop: dict, drop: dict, x: _Ctx) -> str:
    """A finding's reason: the ledger's, or the datapath cause behind frames lost at an OVS port's RX or to the
    slow path, or the tunnel MTU behind an oversize drop."""
    if drop["reason"] == "rx_missed" and hop["kind"] == "ovs_rx" and x.pmd_cause:
        return x.pmd_cause[0]
    if drop["reason"] == "datapath" and drop["counter"].endswith("upcall_error") and _upcall_storm(x):
        return "upcall_storm"
    if drop["reason"] == "tx_mtu" and _tunnel_mtu(hop, x):
        return "tunnel_mtu"
    return str(drop["reason"])


def _tunnel_mtu(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]] | None:
    """Oversize drops on a tunnel's underlay port: the inner frame plus the VXLAN headers (50 B) exceed its MTU."""
    if not (hop.get("underlay") or hop.get("tunnel") or x.ctx.get("tunnel") not in (None, "", "none")):
        return None
    frame = largest(x.ctx.get("frame") or 0)  # a mix: its largest frame
    ports = hop["ports"]
    mtus = {p: x.mtus.get(p) for p in ports}
    inner = frame - 18
    need = inner + VXLAN_OVERHEAD
    if any(m is not None and m >= need for m in mtus.values()):
        return None
    shown = ", ".join(f"{p} MTU {m}" for p, m in mtus.items() if m is not None) or "MTU unknown"
    return (f"{frame} B frames encapsulated in VXLAN ({inner} B inner packet + {VXLAN_OVERHEAD} B of outer headers = "
            f"{need} B) are larger than underlay port {hop['where']} can send ({shown})",
            [shown, f"datapath tunnel push/pop drops: {x.coverage.get('datapath_drop_tunnel_push_error', 0)}/"
                    f"{x.coverage.get('datapath_drop_tunnel_pop_error', 0)}"],
            [f"ovs-vsctl set Interface {p} mtu_request={need} (the underlay's MTU: the inner MTU + {VXLAN_OVERHEAD})"
             for p in ports] + [f"or a tenant MTU of {max(68, (mtus[ports[0]] or 1500) - VXLAN_OVERHEAD)} in the "
                                "guests (Neutron gives VXLAN networks global_physnet_mtu minus 50)"])


def _vf_rx_dropped(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    """A VF's RX drops (its PF's rx_dropped for it: the VSI's rx_discards on i40e/ice, the vport's rx_dropped on
    mlx5): the NIC's switch had a frame for the VF and no free descriptor in the VF's RX ring."""
    vf, vnf = hop["where"], _vnf_of_vf(hop, x)
    return (f"VF {vf} had no free RX descriptor for the frames the NIC delivered: {vnf} did not drain its RX ring "
            "in time (its forwarding core too slow or stalled, too few RX queues or descriptors, or no mbufs to refill "
            "the ring)",
            [f"ip -s -d link show dev <PF of {vf}>: its vf entry's RX dropped",
             f"{vnf}'s own counters on that port: imissed / rx_nombuf (DPDK's VF driver reads the same discards)"],
            [f"deeper RX descriptors in {vnf} (testpmd --rxd=4096) and more mbufs (--total-num-mbufs)",
             f"more RX queues and forwarding cores in {vnf} (testpmd --rxq=2 --nb-cores=2), its cores isolated and "
             "pinned (a CNF: Guaranteed QoS, cpu-quota.crio.io: disable)",
             "a lower rate: the VNF is the bottleneck here, not the NIC"])


def _vf_tx_dropped(hop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    """A VF's TX drops (its PF's tx_dropped for it: i40e's VSI tx_errors, ice's tx_errors, mlx5's vport drops): the
    NIC refused frames the VNF sent, mostly by anti-spoofing (a source MAC or VLAN the VF may not use) or a VF
    whose link is down."""
    vf, vnf = hop["where"], _vnf_of_vf(hop, x)
    return (f"the NIC dropped frames {vnf} sent by VF {vf}: MAC anti-spoofing (a source MAC not the VF's while "
            "spoof checking is on: e.g. forward io keeps the generator's MAC), a VLAN tag the VF's port VLAN or VLAN "
            "filter refuses, or the VF's link down (link-state disable, or its PF down)",
            [f"ip -s -d link show dev <PF of {vf}>: its vf entry's TX dropped and settings (spoof checking, vlan, "
             "link-state, trust)", "the run's SR-IOV audit warnings (vf-spoofchk, vf-vlan, vf-link-state)"],
            [f"ip link set dev <PF> vf <N> spoofchk off (SriovNetwork spoofChk: off), or let {vnf} send with the "
             "VF's MAC (testpmd --forward-mode=mac)",
             "match the VLANs: ip link set dev <PF> vf <N> vlan <V> for the VLAN the VNF sends, or none",
             "ip link set dev <PF> vf <N> state auto and the PF up (ip link set dev <PF> up)"])


def _vnf_of_vf(hop: dict, x: _Ctx) -> str:
    return "the VNF holding it" if not x.ctx.get("vnfs") else " + ".join(x.ctx["vnfs"])


def _finding(hop: dict, drop: dict, x: _Ctx) -> tuple[str, list[str], list[str]]:
    reason, kind = drop["reason"], hop["kind"]
    if reason == "vf_rx_dropped":
        return _vf_rx_dropped(hop, x)
    if reason == "vf_tx_dropped":
        return _vf_tx_dropped(hop, x)
    if reason == "rx_missed" and kind == "ovs_rx":
        cause, ev, remedies = _rx_missed_ovs(hop, x)
        if x.pmd_cause:  # the PMD's cycles went to the caches' misses, the slow path or conntrack
            why, ev2, rem2 = x.pmd_cause[1:]
            return f"{why}. {cause}", ev2 + ev, rem2 + remedies
        return cause, ev, remedies
    if reason == "tx_failure":
        return _tx_failure(hop, x)
    if reason == "tx_mtu" and _tunnel_mtu(hop, x):
        return _tunnel_mtu(hop, x)
    if reason == "tx_mtu":
        return _tx_mtu(hop, x)
    if reason == "tx_dropped" and hop.get("receiver") == "vnf":
        return _tx_vring_down(hop, x)
    if reason == "meter":
        return _meter(hop, drop, x)
    if reason == "datapath":
        return _datapath(hop, drop, x)
    if reason == "rx_nombuf":
        return _nombuf(hop, x)
    if reason in ("rx_missed", "tx_refused") and kind in ("gen_rx", "proc_tx"):
        return ("zlgen did not drain its RX ring: the generator's receive side is the bottleneck (generator-bound)",
                [], ["more generator cores (--set gen_lcores) or a lower rate; the DUT is faster than this bench"
                     " can measure"])
    if reason == "rx_missed" and kind == "proc_rx":
        return (f"{hop['where']} found its RX ring full: the DUT's forwarding core did not keep up",
                _queue_evidence(hop, "rx"),
                [f"more RX queues and cores for the DUT: --set dut_rxq={2 * x.queues} --set dut_lcores=...",
                 "deeper RX descriptors (testpmd --rxd=4096)"])
    if reason in ("rx_qos", "tx_qos"):
        port = hop["ports"][0]
        return (f"QoS on {hop['where']} dropped frames above its rate", [],
                [f"ovs-vsctl set Interface {port} ingress_policing_rate=0" if reason == "rx_qos"
                 else f"ovs-vsctl clear Port {port} qos"])
    return (f"{hop['name']}: {drop['counter']}", [], [])


def _link_down(hop: dict, frames: int, down: dict) -> dict:
    """zlgen's refusals into the port whose link an event took down (outagerun: link_down): the generator's."""
    return {"hop": hop["name"], "where": hop["where"], "reason": "link_down", "frames": frames,
            "counter": "zlgen tx_refused", "remedies": [],
            "cause": f"{down['event']} took the link of {down['member'] or 'the port'} down (zlgen port "
                     f"{down['port']}): zlgen, not a bonded peer, kept offering into it and its wire refused the "
                     "frames; a peer does not send into a link that is down, so they are the generator's, not the "
                     "DUT's (link_down)",
            "evidence": [f"zlgen port {down['port']} refused {down['refused']:,} frame(s) over the trial"]}


def diagnose(ledgers: list[dict], c: dict, state: dict | None, ctx: dict) -> list[dict]:
    """Findings for a trial, the DUT's largest first, then the generator's. ctx: frame, rate_pps, flows, queues,
    vnf_ring, pmd_cpu_mask, vnfs, tunnel, link_down ({side, port, member, event, refused}: a link an event took
    down, whose refusals are the generator's)."""
    x = _Ctx(c, state or {}, ctx)
    lost = sum(max(0, led["lost"]) for led in ledgers)
    merged: dict[tuple[str, str], dict] = {}
    down = x.ctx.get("link_down") or {}
    for led in ledgers:
        for hop in led["hops"]:
            for drop in hop["drops"]:
                if down and led.get("tx_side") == down["side"] and drop["counter"].startswith("zlgen tx_refused"):
                    n = min(drop["frames"], down["refused"])
                    drop = {**drop, "frames": drop["frames"] - n}
                    if n:
                        merged[(hop["name"], "link_down")] = _link_down(hop, n, down)
                    if not drop["frames"]:
                        continue
                key = (hop["name"], drop["reason"])
                if key in merged:
                    merged[key]["frames"] += drop["frames"]
                    continue
                cause, ev, remedies = _finding(hop, drop, x)
                merged[key] = {"hop": hop["name"], "where": hop["where"], "reason": _reason(hop, drop, x),
                               "frames": drop["frames"], "counter": drop["counter"], "cause": cause,
                               "evidence": ev, "remedies": remedies}
            if hop["unexplained"]:
                key = (hop["name"], "unexplained")
                if key in merged:
                    merged[key]["frames"] += hop["unexplained"]
                    continue
                blind = not hop["counters"]
                extra = sum(d["frames"] for d in hop.get("extra", []))
                remedies = ["a longer drain (--set drain_ms=1000) if frames were in flight"]
                if blind:
                    cause = f"no counters from {hop['where']} (its process did not answer: stopped or paused?)"
                elif extra:
                    cause = (f"{extra} frame(s) of a previous trial (late) or sent twice reached zlgen here and hide "
                             f"as many of this trial's frames, still in flight when the drain ended")
                elif x.ctx.get("restarted"):
                    ring = x.ctx.get("vnf_ring")
                    cause = ("a VNF restarted during the trial: the frames OVS had put in its RX virtqueue when it "
                             f"quit (at most its ring{f' of {ring}' if ring else ''}) count as sent in OVS's vhost "
                             "counters and as received nowhere, and its ports' counts between the reading just "
                             "before the restart and its exit are not seen: no counter counts them")
                    remedies = []
                else:
                    cause = ("no counter explains them: frames still in flight after the drain, or a stage that "
                             "does not count what it drops")
                merged[key] = {
                    "hop": hop["name"], "where": hop["where"], "reason": "unexplained", "frames": hop["unexplained"],
                    "counter": "", "cause": cause,
                    "evidence": [], "remedies": remedies}
    # the DUT's findings first, largest first; then the generator's (frames it offered into a downed link)
    out = sorted(merged.values(), key=lambda f: (f["reason"] == "link_down", -abs(f["frames"])))
    for f in out:
        f["share_pct"] = 100 * f["frames"] / lost if lost else 0.0
    if lost > 0:
        out += _imbalance(x)
    out += _mempool_findings(x)
    return out


def analyse(paths: list[dict], c: dict, state: dict | None, ctx: dict, sides: set[int]) -> tuple[list, list]:
    """Ledger of each direction the trial sent (loss/ledger.py), and the findings when something was lost."""
    leds = ledger([p for p in paths if p["tx_side"] in sides], c)
    lossy = any(d["lost"] > 0 or d["unexplained"] for d in leds)
    return leds, (diagnose(leds, c, state, ctx) if lossy else [])
