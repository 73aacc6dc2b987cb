"""zeroloss tune on a lab node: the knobs that exist there, as OVS database settings. Pure.

On the bench a knob is a RunConfig key (knobs.py): the bench builds OVS and the VNF from those settings. A lab node
was built by someone else: what tune may change there is what `ovs-vsctl set` changes at runtime, each applied for
one step's run through dut_set (TABLE:RECORD:COLUMN[:KEY]=VALUE, restored when the run ends) and only with
--allow-dut-changes. The ladders start from the node's own values, read once when the tune starts (Node).

Not knobs on a node, only advice: anything that needs ovs-vswitchd restarted (dpdk-socket-mem, dpdk-lcore-mask),
the VNF's own settings (its virtio ring, vCPUs, queues: the VM's flavor and nova.conf), OpenFlow meters (flows are
the controller's) and the kernel's (isolcpus, C-states, pages).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zeroloss.core.config import RunConfig
from zeroloss.core.cpuset import format_list, parse_list, parse_mask
from zeroloss.core.ovsfacts import CT_MAXCONNS, FLOW_LIMIT, VXLAN_OVERHEAD

from . import knobs as kn
from . import sites as st
from .labnode import Node as Node
from .labnode import Port as Port

NETDEV_DP = "netdev@ovs-netdev"

OC = "Open_vSwitch:.:other_config:"
OVS_DEFAULT_DESC = 2048      # OVS's NIC_PORT_DEFAULT_SIZE for n_rxq_desc / n_txq_desc
OVS_DEFAULT_MTU = 1500
VHOST_TYPES = ("dpdkvhostuser", "dpdkvhostuserclient")


# -- dut_set entries: TABLE:RECORD:COLUMN[:KEY]=VALUE ----------------------------------------------------------

def sets_of(dut_set: list[str] | tuple[str, ...]) -> dict[str, str]:
    """dut_set entries as spec -> value (a later entry for a spec wins)."""
    out: dict[str, str] = {}
    for s in dut_set:
        spec, _, value = s.partition("=")
        out[spec] = value
    return out


def with_sets(settings: dict[str, Any], sets: dict[str, str]) -> dict[str, Any]:
    """settings with these dut_set entries added or replaced, in a stable order."""
    merged = {**sets_of(settings.get("dut_set") or ()), **sets}
    return {**settings, "dut_set": [f"{k}={v}" for k, v in merged.items()]}


def _port_spec(port: str, column: str) -> str:
    return f"Interface:{port}:{column}"


def value(node: Node, sets: dict[str, str], spec: str) -> str | None:
    """A setting's value for the step: the step's dut_set entry, else the node's own."""
    if spec in sets:
        return sets[spec]
    parts = spec.split(":")
    if parts[0] == "dpctl":
        return node.ct.get(":".join(parts[2:]))
    if parts[0] == "Open_vSwitch" and len(parts) == 4 and parts[2] == "other_config":
        return node.other_config.get(parts[3])
    if parts[0] == "Interface" and parts[1] in node.ports:
        p = node.ports[parts[1]]
        if parts[2] == "options" and len(parts) == 4:
            return p.options.get(parts[3])
        if parts[2] == "mtu_request":
            return str(p.mtu_request if p.mtu_request is not None else p.mtu or OVS_DEFAULT_MTU)
        if parts[2] == "ingress_policing_rate":
            return str(p.policing_kbps)
    return None


def _int(text: str | None, default: int) -> int:
    try:
        return int(str(text), 0)
    except (TypeError, ValueError):
        return default


# -- the knobs ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Ctx:
    node: Node
    sets: dict[str, str]          # the step's dut_set entries
    cfg: RunConfig
    finding: st.Finding

    def get(self, spec: str) -> str | None:
        return value(self.node, self.sets, spec)

    def dpdk_ports(self, ports: tuple[str, ...] | list[str]) -> list[str]:
        """Of these ports, the NIC (type dpdk) ones: n_rxq and descriptors mean something only there."""
        return [p for p in ports if p in self.node.ports and self.node.ports[p].type == "dpdk"]

    def finding_ports(self) -> list[str]:
        """The node's ports a finding names (its where: 'vhu0', or 'vhu0+vhu2' for pairs summed)."""
        return [p for p in self.finding.where.split("+") if p in self.node.ports]


@dataclass(frozen=True)
class LabKnob:
    key: str
    name: str
    # the next changes from the step's values, in order: each {spec: value}; empty when there is none
    ladder: Callable[[Ctx], list[dict[str, str]]]


def _pmd_mask(c: Ctx) -> list[dict[str, str]]:
    now = _int(c.get(OC + "pmd-cpu-mask"), 0)
    free = [cpu for cpu in c.node.spare_cpus if not now >> cpu & 1]
    return [{OC + "pmd-cpu-mask": hex(now | 1 << free[0])}] if free and now else []


def _rxq_assign(c: Ctx) -> list[dict[str, str]]:
    if len(parse_mask(c.get(OC + "pmd-cpu-mask") or "0x0")) < 2:
        return []  # placement only matters with two PMDs or more
    now = c.get(OC + "pmd-rxq-assign") or "cycles"
    return [{OC + "pmd-rxq-assign": v} for v in ("group", "cycles", "roundrobin") if v != now]


def _per_port(ports: Callable[[Ctx], list[str]], option: str, values: Callable[[int], list[int]],
              default: int) -> Callable[[Ctx], list[dict[str, str]]]:
    """A ladder of one interface option set alike on several ports, from the highest value they have now."""
    def ladder(c: Ctx) -> list[dict[str, str]]:
        names = ports(c)
        if not names:
            return []
        now = max(_int(c.get(_port_spec(p, f"options:{option}")), default) for p in names)
        return [{_port_spec(p, f"options:{option}"): str(v) for p in names} for v in values(now)]
    return ladder


def _gen_dpdk(c: Ctx) -> list[str]:
    return c.dpdk_ports(c.finding_ports() or c.node.gen_ports)


def _nic_dpdk(c: Ctx) -> list[str]:
    """TX to a NIC: the finding's port when it is one, else every generator-facing NIC port."""
    return c.dpdk_ports(c.finding_ports() or c.node.gen_ports)


def _vnf_vhost(c: Ctx) -> list[str]:
    """The VNF-facing vhost-user ports tx-retries-max applies to: the finding's, else all the VNFs'."""
    names = [p for p in c.finding_ports() if p in c.node.vnf_ports] or list(c.node.vnf_ports)
    return [p for p in names if c.node.ports.get(p, Port(p)).type in VHOST_TYPES]


def _doubling(now: int) -> list[int]:
    out = []
    while now * 2 <= kn.MAX_DESC:
        now *= 2
        out.append(now)
    return out


def _mtu(c: Ctx) -> list[dict[str, str]]:
    """Every port at the path's ends whose MTU is below what the largest frame needs, raised to it."""
    need = kn.ovs_mtu(c.cfg)
    names = [p for p in (*c.node.gen_ports, *c.node.vnf_ports) if p in c.node.ports]
    low = [p for p in names if _int(c.get(_port_spec(p, "mtu_request")), OVS_DEFAULT_MTU) < need]
    return [{_port_spec(p, "mtu_request"): str(need) for p in low}] if low else []


def _oc(key: str, values: Callable[[str | None], list[str]]) -> Callable[[Ctx], list[dict[str, str]]]:
    """A ladder of one other_config key from its value on the node (None: unset, OVS's default)."""
    def ladder(c: Ctx) -> list[dict[str, str]]:
        return [{OC + key: v} for v in values(c.get(OC + key))]
    return ladder


def _limit_up(default: int, steps: tuple[int, ...]) -> Callable[[str | None], list[str]]:
    return lambda now: [str(v) for v in steps if v > _int(now, default)]


CT = "dpctl:" + NETDEV_DP + ":"


def _ct_maxconns(c: Ctx) -> list[dict[str, str]]:
    now = _int(c.get(CT + "ct-maxconns"), CT_MAXCONNS)
    return [{CT + "ct-maxconns": str(v)} for v in (CT_MAXCONNS, 2 * CT_MAXCONNS) if v > now]


def _ct_zone(c: Ctx) -> list[dict[str, str]]:
    now = _int(c.get(CT + "ct-limits:default"), 0)
    return [{CT + "ct-limits:default": str(v)} for v in (4 * now, 0)] if now else []


def _underlay_mtu(c: Ctx) -> list[dict[str, str]]:
    """The finding's (underlay) ports raised to the largest frame's MTU + the VXLAN headers."""
    need = kn.ovs_mtu(c.cfg) + VXLAN_OVERHEAD
    low = [p for p in c.finding_ports() if _int(c.get(_port_spec(p, "mtu_request")), OVS_DEFAULT_MTU) < need]
    return [{_port_spec(p, "mtu_request"): str(need) for p in low}] if low else []


def _policing(c: Ctx) -> list[dict[str, str]]:
    names = [p for p in c.finding_ports() if _int(c.get(_port_spec(p, "ingress_policing_rate")), 0)]
    return [{_port_spec(p, "ingress_policing_rate"): "0" for p in names}] if names else []


LAB_KNOBS = {k.key: k for k in (
    LabKnob("pmd-cpu-mask", "OVS PMD cores (pmd-cpu-mask)", _pmd_mask),
    LabKnob("pmd-rxq-assign", "OVS pmd-rxq-assign", _rxq_assign),
    LabKnob("n_rxq", "RX queues of the NIC ports (n_rxq)",
            _per_port(_gen_dpdk, "n_rxq", lambda n: list(range(n + 1, kn.MAX_QUEUES + 1)), 1)),
    LabKnob("n_rxq_desc", "RX descriptors of the NIC ports (n_rxq_desc)",
            _per_port(_gen_dpdk, "n_rxq_desc", _doubling, OVS_DEFAULT_DESC)),
    LabKnob("n_txq_desc", "TX descriptors of the NIC ports (n_txq_desc)",
            _per_port(_nic_dpdk, "n_txq_desc", _doubling, OVS_DEFAULT_DESC)),
    LabKnob("tx-retries-max", "OVS vhost tx-retries-max",
            _per_port(_vnf_vhost, "tx-retries-max", lambda n: [v for v in (kn.OVS_TX_RETRIES, 32) if v > n],
                      kn.OVS_TX_RETRIES)),
    LabKnob("mtu_request", "MTU of the path's ports (mtu_request)", _mtu),
    LabKnob("ingress_policing_rate", "ingress policing", _policing),
    LabKnob("smc-enable", "OVS smc-enable (signature-match cache)",
            _oc("smc-enable", lambda now: [] if now == "true" else ["true"])),
    LabKnob("emc-insert-inv-prob", "OVS emc-insert-inv-prob",
            _oc("emc-insert-inv-prob", lambda now: [] if now == "0" else ["0"])),
    LabKnob("flow-limit", "OVS flow-limit (datapath flows)",
            _oc("flow-limit", _limit_up(FLOW_LIMIT, (2 * FLOW_LIMIT, 5 * FLOW_LIMIT)))),
    LabKnob("n-revalidator-threads", "OVS n-revalidator-threads",
            _oc("n-revalidator-threads", _limit_up(0, (2, 4)))),
    LabKnob("ct-maxconns", "OVS conntrack maxconns (dpctl/ct-set-maxconns)", _ct_maxconns),
    LabKnob("ct-zone-limit", "OVS conntrack default zone limit (dpctl/ct-set-limits)", _ct_zone),
    LabKnob("underlay-mtu", "MTU of the tunnel's underlay port (mtu_request)", _underlay_mtu),
)}

SPARE_WHY = "list CPUs tune may give to PMDs in the lab file's dut.ovs.spare_cpus"

# site -> [(lab knob key, why)], best first; RunConfig keys (drain_ms) are the bench's knobs, measurement settings
LAB_TABLE: dict[str, list[tuple[str, str]]] = {
    st.VNF_TX: [
        ("tx-retries-max", "OVS drops after tx-retries-max retries on a full virtqueue (default 8): more retries "
                           "absorb short guest stalls, at some latency (OVS vhost-user docs; BRIEF §5)"),
    ],
    st.OVS_RX_GEN: [
        ("pmd-cpu-mask", "OVS's PMD did not empty the NIC's RX queue in time: another PMD core adds polling cycles "
                         "(BRIEF §5: rx_missed = PMD too slow or too few queues)"),
        ("n_rxq", f"more RX queues let the PMDs share the port's load ({st.RXQ_WHY})"),
        ("n_rxq_desc", "deeper RX descriptors absorb bursts on a NIC port (Dell/Intel whitepaper: 2048 -> 4096)"),
        ("pmd-rxq-assign", "queues placed by measured load: group puts each on the least-loaded PMD (OVS pmd.rst)"),
    ],
    st.OVS_RX_VNF: [
        ("pmd-cpu-mask", "OVS's PMD did not poll the VNF's TX virtqueue in time: another PMD core adds polling "
                         "cycles (BRIEF §5)"),
        ("pmd-rxq-assign", "queues placed by measured load: group puts each on the least-loaded PMD (OVS pmd.rst)"),
    ],
    st.OVS_TX_NIC: [
        ("n_txq_desc", "OVS found the NIC's TX queue full: deeper TX descriptors absorb bursts (Dell/Intel "
                       "whitepaper: 2048 -> 4096)"),
    ],
    st.PMD: [
        ("pmd-rxq-assign", "one PMD busy while another idles: group assigns each queue to the least-loaded PMD by "
                           "measured cycles (OVS pmd.rst; BRIEF §6)"),
        ("n_rxq", "more RX queues per NIC port give the assignment something to spread"),
    ],
    st.TX_MTU: [
        ("mtu_request", "frames above a port's MTU + 18 B are dropped at its TX (ovs_tx_mtu_exceeded_drops): every "
                        "port of the path needs the largest frame's MTU (the jumbo-frame whitepapers: MTU 9000 end "
                        "to end)"),
    ],
    st.QOS: [
        ("ingress_policing_rate", "an ingress policer on the path drops below the target: a policy the node's owner "
                                  "set, not a capacity; taken off for one step to show what the path carries"),
    ],
    st.UNEXPLAINED: [(k, w) for k, w in st.TABLE[st.UNEXPLAINED]],
    st.EMC: [("smc-enable", st.TABLE[st.EMC][0][1]), ("emc-insert-inv-prob", st.TABLE[st.EMC][1][1]),
             ("pmd-cpu-mask", st.TABLE[st.EMC][2][1])],
    st.UPCALL: [("flow-limit", st.TABLE[st.UPCALL][0][1]), ("n-revalidator-threads", st.TABLE[st.UPCALL][1][1]),
                ("pmd-cpu-mask", st.TABLE[st.UPCALL][2][1])],
    st.CONNTRACK: [("ct-maxconns", st.TABLE[st.CONNTRACK][0][1]), ("ct-zone-limit", st.TABLE[st.CONNTRACK][1][1])],
    st.TUNNEL_MTU: [("underlay-mtu", st.TABLE[st.TUNNEL_MTU][0][1])],
}


def _describe(sets: dict[str, str], node: Node, cur: dict[str, str]) -> tuple[str, str]:
    """(old, new) as the story shows them: one value when the change sets one value, with the ports."""
    olds = sorted({value(node, cur, s) or "unset" for s in sets})
    news = sorted(set(sets.values()))
    ports = sorted({s.split(":")[1] for s in sets if s.startswith("Interface:")})
    where = f" ({', '.join(ports)})" if ports else ""
    return "/".join(olds) + where, "/".join(news)


def candidates(findings: list[st.Finding], cfg: RunConfig, node: Node, tried: set[tuple[str, Any]]) -> list[kn.Change]:
    """The changes to try on the node, best first, as knobs.candidates: the largest finding's knobs first, one per
    key, each at its first untried value. A lab change's `sets` are its dut_set entries; its key is the knob."""
    vnf_ports = set(node.vnf_ports)
    cur = sets_of(cfg.dut_set)
    out: list[kn.Change] = []
    seen: set[str] = set()
    for f in sorted(findings, key=st.finding_size):
        for key, why in LAB_TABLE.get(st.site(f, vnf_ports), []):
            if key in seen:
                continue
            if key in kn.KNOBS:  # a measurement setting (drain_ms): as on the bench
                knob = kn.KNOBS[key]
                if not kn.applies(knob, cfg):
                    continue
                new = kn.first_untried(knob, cfg, kn.Host(1, 0), tried)
                if new is not None:
                    seen.add(key)
                    out.append(kn.Change(key, getattr(cfg, key), new, knob.name, st.one_line(f), why))
                continue
            lab_knob = LAB_KNOBS[key]
            for sets in lab_knob.ladder(Ctx(node, cur, cfg, f)):
                old, new = _describe(sets, node, cur)
                if (key, new) in tried or all(value(node, cur, s) == v for s, v in sets.items()):
                    continue
                seen.add(key)
                out.append(kn.Change(key, old, new, lab_knob.name, st.one_line(f), why, sets))
                break
    return out


def skipped(findings: list[st.Finding], node: Node) -> list[dict[str, Any]]:
    """Knobs the findings call for that this node's file rules out: PMD cores without spare CPUs named."""
    vnf_ports = set(node.vnf_ports)
    wants_pmd = any(st.site(f, vnf_ports) in (st.OVS_RX_GEN, st.OVS_RX_VNF) for f in findings)
    if wants_pmd and not node.spare_cpus:
        return [{"key": "pmd-cpu-mask", "new": "+1 CPU", "why": f"no spare CPU known: {SPARE_WHY}"}]
    return []


def spare(text: str | None) -> tuple[int, ...]:
    return tuple(parse_list(text)) if text else ()


def render(keys: dict[str, str]) -> str:
    """The kept dut_set entries as the ovs-vsctl commands that apply them on the node (its own port names)."""
    if not keys:
        return "# no OVS setting was changed"
    lines = ["# OVS settings zeroloss tune kept on the node (tune restored the node as found: apply these to keep "
             "them)"]
    for spec, v in keys.items():
        parts = spec.split(":")
        if parts[0] == "dpctl":
            arg = f"default={v}" if parts[2] == "ct-limits" else v
            cmd = parts[2].replace("ct-", "ct-set-")
            lines.append(f"ovs-appctl dpctl/{cmd} {parts[1]} {arg}   # not kept across an OVS restart: put it in the "
                         f"node's OVS start-up")
            continue
        ref = ":".join(parts[2:])
        note = ""
        if parts[0] == "Open_vSwitch" and ref == "other_config:pmd-cpu-mask":
            note = f"   # CPUs {format_list(parse_mask(v))}"
        if ref == "ingress_policing_rate" and v == "0":
            note = "   # the policer is a policy: remove it only if its owner agrees"
        lines.append(f"ovs-vsctl set {parts[0]} {parts[1]} {ref}={v}{note}")
    return "\n".join(lines)
