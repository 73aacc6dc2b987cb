"""The OVS rules: why OVS-DPDK dropped frames at a port or inside a bridge, by the drop's reason. An RX queue that
overflowed (and the PMD cause behind it, rules_pmd.py), a guest that did not drain its virtqueue (tx_failure) or
whose virtqueue was not running, frames over a port's MTU (a tunnel's underlay: the VXLAN headers), an OpenFlow
meter, the datapath's own drops and QoS. Pure.

The causes follow BRIEF §5 (where OVS-DPDK loses packets) and the references' troubleshooting cases (RX queue
overflow on a busy PMD, vring size, MTU); each remedy is a command or a zeroloss setting.
"""

from __future__ import annotations

import re
from typing import Any

from zeroloss.core.frames import largest
from zeroloss.core.ovsfacts import VXLAN_OVERHEAD

from .counters import Sender
from .facts import MeterConf, RxqRow
from .readers import Evidence
from .rulebase import Ctx, Drop, Explanation, Hop, queue_evidence, rule
from .rules_pmd import BUSY_PCT, pmd_cause, upcall_storm


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


def _pmd_evidence(ports: list[str], rxq: list[RxqRow], load: dict[str, float]) -> tuple[list[str], float | None]:
    """Which PMDs poll these ports' queues and how busy each was; the busiest one's load."""
    cores = sorted({r.core for r in rxq if r.port in ports})
    lines, busiest = [], None
    for core in cores:
        polled = ", ".join(f"{r.port} q{r.queue}" for r in rxq if r.core == core)
        pct = load.get(str(core))
        if pct is not None:
            busiest = pct if busiest is None else max(busiest, pct)
        lines.append(f"PMD core {core} was {'?' if pct is None else f'{pct:.0f}'} % busy while zlgen sent; it polls "
                     f"{polled}")
    if not cores and load:
        busiest = max(load.values())
        lines += [f"PMD core {k} was {v:.0f} % busy while zlgen sent" for k, v in sorted(load.items())]
    return lines, busiest


@rule(reasons=("rx_missed",), kinds=("ovs_rx",))
def rx_missed_ovs(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """An OVS port's RX queue overflowed: its PMD short of cycles, and the datapath cause that took them."""
    found = _rx_overflow(hop, x)
    why = pmd_cause(x)
    if why:  # the PMD's cycles went to the caches' misses, the slow path or conntrack
        return Explanation(f"{why.cause}. {found.cause}", why.evidence + list(found.evidence),
                           why.remedies + list(found.remedies), reason=why.reason)
    return found


def _rx_overflow(hop: Hop, x: Ctx) -> Explanation:
    ports = hop.path("ports")
    names = hop.where
    ev, busiest = _pmd_evidence(ports, x.rxq, x.load)
    ev += queue_evidence(hop, "rx")
    sender = Sender.from_json(hop.path("sender") or {})
    who = f"{sender.label}'s TX into it" if sender.proc is not None else "the frames sent to it"
    iface = ports[0]
    remedies = [f"more PMD cores: ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask={_mask_plus_one(x.mask)} "
                f"(isolated cores on the port's NUMA node; 'zeroloss host plan' picks them)",
                more_rx_queues(iface, 2 * x.queues, x)]
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
    return Explanation(cause, ev, remedies)


def _silent(x: Ctx) -> list[str]:
    """The run's VNFs whose telemetry gave no counters after the trial."""
    return [f"{k}: telemetry did not answer after the trial (stopped or paused)" for k in x.run.vnfs or ()
            if k not in (x.c.procs or {})]


def port_type(iface: str, x: Ctx) -> str | None:
    """The OVS interface type of a port (dpdk, dpdkvhostuser, dpdkvhostuserclient, ...) from dpctl/show, or None."""
    m = re.search(rf"^\s*port \d+: {re.escape(iface)} \(([\w-]+)", x.state.dpctl_show or "", re.M)
    return m.group(1) if m else None


def _virtio_queues(iface: str, n: int) -> str:
    """More queues on a vhost-user port: OVS ignores options:n_rxq there and takes as many queues as the virtio
    side (the guest, or a virtio-user process) enables, so they are set on that side."""
    return (f"more queues on {iface}'s virtio side (OVS ignores options:n_rxq on a vhost-user port and uses the "
            f"queues its peer enables): a VM's QEMU -netdev vhost-user,...,queues={n} with -device virtio-net-pci,"
            f"mq=on,vectors={2 * n + 2}, then ethtool -L <guest interface> combined {n} in the guest; a container or "
            f"process VNF's net_virtio_user queues={n} (and --rxq/--txq={n} in testpmd)")


def more_rx_queues(iface: str, n: int, x: Ctx) -> str:
    """The RX queue remedy by the port's type: n_rxq on a NIC (or a port of unknown type), the virtio side's queues
    on a vhost-user port."""
    kind = port_type(iface, x)
    if kind is not None and kind.startswith("dpdkvhostuser"):
        return _virtio_queues(iface, n)
    return f"more RX queues spread over the PMDs: ovs-vsctl set Interface {iface} options:n_rxq={n}"


@rule(reasons=("tx_failure",))
def tx_failure(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """OVS's vhost TX found a virtqueue full after its retries: the guest (or zlgen) behind it did not drain it."""
    port = hop.where
    retries = Evidence.from_json(hop.evidence or {}).tx_retries or 0
    ev = [f"OVS retried {retries} time(s) on {port} before dropping (options:tx-retries-max, default 8)"]
    if hop.path("receiver") == "zlgen":
        return Explanation(f"zlgen did not drain its RX virtqueue behind {port}: the generator's receive side is "
                           f"the bottleneck (generator-bound), not OVS", ev, [
                               "more generator cores: --set gen_lcores=1-2 (one per port) or a lower rate",
                               "a larger generator ring (zlgen's virtio queue size)"])
    ring = x.run.vnf_ring
    ev += _silent(x)
    remedies = [("a larger virtio ring in the guest: QEMU -device virtio-net-pci,rx_queue_size=1024,"
                 "tx_queue_size=1024 (a VM), net_virtio_user queue_size=1024 (a container or process)"
                 + (f" (this run: {ring}; bench: --set vnf_ring=1024)" if ring else "")),
                "more cores for the VNF's forwarding threads, isolated from OVS's PMDs",
                "multiqueue: " + _virtio_queues(hop.path("ports")[0], 2 * x.queues),
                "more retries absorb short guest stalls (adds latency): ovs-vsctl set Interface "
                f"{hop.path('ports')[0]} "
                f"options:tx-retries-max=32"]
    if ring and int(ring) >= 1024:
        remedies = remedies[1:] + remedies[:1]
    return Explanation(f"the guest behind {port} did not drain its RX virtqueue: OVS's vhost TX found it full", ev,
                       remedies)


@rule(reasons=("tx_dropped",))
def tx_vring_down(hop: Hop, drop: Drop, x: Ctx) -> Explanation | None:
    """OVS counted a TX drop on a VNF's vhost-user port that no retry, MTU or QoS counter explains: the port's
    virtqueue was not running. OVS 3.1 drops to a vhost device that is not running or whose queue the guest has
    not enabled (netdev-dpdk's vhost send path) and counts it in tx_dropped only. A VM whose vCPUs are stopped
    (virsh suspend, QMP stop, the stop-and-copy of a live migration) has its vhost-user device stopped by QEMU."""
    if hop.path("receiver") != "vnf":
        return None
    port = hop.where
    ev = _silent(x)
    return Explanation(f"OVS dropped frames to {port} while its virtqueue was not running: the guest was paused (or "
                       f"being migrated), or its virtio driver had stopped the device", ev, [
        "keep the VM running while traffic flows: check 'virsh domstate' (paused? a snapshot or live migration "
        "in progress?) and 'virsh domjobinfo'",
        "the guest's DPDK application must keep its virtio ports started (testpmd: 'show port info all')",
        f"ovs-vsctl get Interface {hop.path('ports')[0]} status shows the vhost device's state"])


@rule(reasons=("tx_mtu",))
def tunnel_mtu(hop: Hop, drop: Drop, x: Ctx) -> Explanation | None:
    """Oversize drops on a tunnel's underlay port: the inner frame plus the VXLAN headers (50 B) exceed its MTU."""
    if not (hop.path("underlay") or hop.path("tunnel") or x.run.tunnel not in (None, "", "none")):
        return None
    frame = largest(x.run.frame or 0)  # a mix: its largest frame
    ports = hop.path("ports")
    mtus = {p: x.mtus.get(p) for p in ports}
    inner = frame - 18
    need = inner + VXLAN_OVERHEAD
    if any(m is not None and m >= need for m in mtus.values()):
        return None
    shown = ", ".join(f"{p} MTU {m}" for p, m in mtus.items() if m is not None) or "MTU unknown"
    return Explanation(
        f"{frame} B frames encapsulated in VXLAN ({inner} B inner packet + {VXLAN_OVERHEAD} B of outer headers = "
        f"{need} B) are larger than underlay port {hop.where} can send ({shown})",
        [shown, f"datapath tunnel push/pop drops: {x.coverage.datapath_drop_tunnel_push_error}/"
                f"{x.coverage.datapath_drop_tunnel_pop_error}"],
        [f"ovs-vsctl set Interface {p} mtu_request={need} (the underlay's MTU: the inner MTU + {VXLAN_OVERHEAD})"
         for p in ports] + [f"or a tenant MTU of {max(68, (mtus[ports[0]] or 1500) - VXLAN_OVERHEAD)} in the "
                            "guests (Neutron gives VXLAN networks global_physnet_mtu minus 50)"],
        reason="tunnel_mtu")


@rule(reasons=("tx_mtu",))
def tx_mtu(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """Frames larger than a port can send: its MTU + 18 B."""
    frame = largest(x.run.frame or 0)  # a mix's largest frame is the one the MTU stops
    ports = hop.path("ports")
    mtus = {p: x.mtus.get(p) for p in ports}
    shown = ", ".join(f"{p} MTU {m}" for p, m in mtus.items() if m is not None) or "MTU unknown"
    need = max(1500, frame - 18)
    return Explanation(f"{frame} B frames are larger than port {hop.where} can send ({shown}: at most MTU + 18 B)",
                       [shown], [f"ovs-vsctl set Interface {p} mtu_request={need}" for p in ports] +
                       ["every port on the path and the guest's own MTU need it too (ip link set dev IF mtu "
                        f"{need} in the VM)"])


PMD_BATCH = 32  # frames an OVS PMD hands its pipeline (and a meter) at once: NETDEV_MAX_BURST


@rule(reasons=("meter",))
def meter(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """An OpenFlow meter's drop band: its rate polices the direction, or its burst_size is below the PMD's batches."""
    bridge, _, mid = (hop.path("meter") or "?/?").partition("/")
    conf = x.state.meters.get(hop.path("meter") or "") or MeterConf()
    rate: Any = conf.rate  # numbers as OVS's meter and the context give them (None when unknown)
    burst: Any = conf.burst_size
    offered: Any = x.run.rate_pps
    unit = conf.unit
    what = f"{rate} {'pps' if unit == 'pktps' else unit}" if rate else "its band rate"
    ev = [f"meter {mid} on {bridge}: drop band at {what}, burst {burst if burst is not None else '?'}"]
    if offered:
        ev.append(f"offered {offered:,.0f} pps on this direction")
    take_off = (f"or take it off the path: remove meter:{mid} from the flow's actions (ovs-ofctl -O OpenFlow13 "
                f"dump-flows {bridge})")
    if _burst_bound(rate, burst, unit, offered, drop.frames, x.c.gen.window_s if x.c.gen else None):
        new_burst = max(2 * burst, 2 * PMD_BATCH)
        over = offered > rate
        excess = f"{offered - rate:,.0f} pps over it" if over else "the offered rate is within it"
        ev.append(f"the meter dropped {drop.frames:,} frames, more than its rate explains ({excess}): frames "
                  f"reach it in batches (up to {PMD_BATCH} per PMD poll) larger than its burst_size {burst}")
        rate_new = int(offered * 1.1) if over else rate
        return Explanation(f"OpenFlow meter {mid} on bridge {bridge} drops bursts above its burst_size {burst}"
                           + (f" (and polices this direction to {what})" if over else f", not the rate ({what})"), ev,
                           [f"raise burst_size: ovs-ofctl -O OpenFlow13 mod-meter {bridge} meter={mid},pktps,burst,"
                            f"band=type=drop,rate={rate_new},burst_size={new_burst}", take_off])
    new = f"{int(offered * 1.1)}" if offered else "<rate>"
    return Explanation(f"OpenFlow meter {mid} on bridge {bridge} polices this direction to {what}", ev,
                       [f"raise it: ovs-ofctl -O OpenFlow13 mod-meter {bridge} meter={mid},pktps,burst,"
                        f"band=type=drop,rate={new},burst_size={burst if burst is not None else 1000}", take_off])


def _burst_bound(rate: Any, burst: Any, unit: str, offered: Any, dropped: int, window_s: Any) -> bool:
    """True when a packet meter's burst_size, not its rate, explains its drops: the offered rate is within the
    meter's rate, or the drops are more than twice what the excess over the rate could cause in the TX window."""
    if unit != "pktps" or not rate or burst is None or not offered:
        return False
    if offered <= rate:
        return dropped > 0
    return bool(window_s) and bool(dropped > 2 * (offered - rate) * window_s)


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


@rule(reasons=("datapath",))
def datapath(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """Frames OVS dropped inside a bridge, by the datapath's coverage counter; an upcall error in an upcall storm
    is the storm's (rules_pmd.py)."""
    name = drop.counter.split()[-1]
    storm = drop.counter.endswith("upcall_error") and upcall_storm(x)
    bridge = hop.where.split("->")[0]
    port = hop.path("in_ports")[0]
    return Explanation(f"OVS dropped frames inside {hop.where}: {DATAPATH.get(name, name)}",
                       [f"coverage counter {name}"],
                       [f"trace one frame: ovs-appctl ofproto/trace {bridge} in_port={port}",
                        f"look at the rules and their counters: ovs-ofctl -O OpenFlow13 dump-flows {bridge}"],
                       reason="upcall_storm" if storm else None)


@rule(reasons=("rx_qos", "tx_qos"))
def qos(hop: Hop, drop: Drop, x: Ctx) -> Explanation:
    """An ingress policer (rx_qos) or an egress QoS (tx_qos) on a port."""
    port = hop.path("ports")[0]
    return Explanation(f"QoS on {hop.where} dropped frames above its rate", [],
                       [f"ovs-vsctl set Interface {port} ingress_policing_rate=0" if drop.reason == "rx_qos"
                        else f"ovs-vsctl clear Port {port} qos"])
