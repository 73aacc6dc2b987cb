"""The settings a tune kept, rendered for the tools that apply them on a compute node, as `zeroloss host plan`
renders a plan (host/render.py): ovs-vsctl commands, a TripleO heat environment (the same parameter names),
`openstack flavor set` properties with nova.conf [libvirt] options for the VNF, and a summary. Pure.

keys: RunConfig key -> the value kept (tuned_keys). Bench-only settings (the meter, the drain) have no
deployment form: they are named in comments. Port names are placeholders: the bench's ports are not the node's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zeroloss.core.codec import Json, Record
from zeroloss.core.config import field_help
from zeroloss.core.cpuset import format_list, parse_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.host.render_deploy import comment
from zeroloss.results.campaigns import TuneRecord

from . import labknobs

FORMATS = ("summary", "ovs-vsctl", "tripleo", "flavor")
OC = "ovs-vsctl --no-wait set Open_vSwitch . other_config:"
DPDK_PORT = "<dpdk port>"
VHOST_PORT = "<vhost port>"
LIBVIRT_RING_MAX = 1024  # libvirt/QEMU: rx_queue_size and tx_queue_size of 256, 512 or 1024
LIBVIRT_RINGS = (256, 512, LIBVIRT_RING_MAX)
ROLE = "ComputeOvsDpdk"


@dataclass(frozen=True, kw_only=True)
class Kept(Record):
    """The kept settings (tuned_keys) that have a deployment form, read once from keys; None: not changed (a
    RunConfig setting is never None)."""

    ovs_pmd_cpu_mask: Json = None
    ovs_rxq_assign: Json = None
    ovs_socket_mem_mb: Json = None
    ovs_socket_limit_mb: Json = None
    ovs_dpdk_extra: Json = None
    dut_rxq: Json = None
    ovs_rxd: Json = None
    ovs_txd: Json = None
    ovs_tx_retries_max: Json = None
    meter_pps: Json = None
    vnf_ring: Json = None
    vnf_queues: Json = None
    vnf_vcpus: Json = None


def target_text(target: tuple[str, float]) -> str:
    """A tune's target as text: '100 % of line rate' or '1,200,000 pps'."""
    return f"{target[1]:g} % of line rate" if target[0] == "pct" else f"{target[1]:,.0f} pps"


def tuned_keys(t: TuneRecord) -> dict[str, Any]:
    """The settings the tune changed and kept: RunConfig key -> final value, and on a lab node each OVS setting
    kept (TABLE:RECORD:COLUMN[:KEY] -> value) beside the dut_set the tune started with."""
    current, start = t.current or {}, t.base or {}
    out = {k: v for k, v in current.items() if k != "dut_set" and start.get(k) != v}
    base = labknobs.sets_of(start.get("dut_set") or ())
    out.update({k: v for k, v in labknobs.sets_of(current.get("dut_set") or ()).items() if base.get(k) != v})
    return out


def _cpus(mask: str) -> str:
    return format_list(parse_mask(mask))


def _queues(k: Kept) -> int | None:
    """The guest's queue pairs: vnf_queues, or dut_rxq when vnf_queues is 0 or not tuned."""
    q = k.vnf_queues or k.dut_rxq
    return int(q) if q else None


def _channels(extra: str) -> str | None:
    """The memory channels in dpdk-extra text ('-n 4')."""
    words = str(extra).split()
    for i, w in enumerate(words):
        if w == "-n" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("-n") and w[2:].isdigit():
            return w[2:]
    return None


def ovs_vsctl(keys: dict[str, Any]) -> str:
    k = Kept.from_json(keys)
    lines = ["# OVS-DPDK settings zeroloss tune kept (dpdk-* keys take effect when ovs-vswitchd restarts; port names "
             "are placeholders)"]
    if k.ovs_pmd_cpu_mask is not None:
        lines.append(f"{OC}pmd-cpu-mask={k.ovs_pmd_cpu_mask}   # CPUs {_cpus(k.ovs_pmd_cpu_mask)}")
    if k.ovs_rxq_assign is not None:
        lines.append(f"{OC}pmd-rxq-assign={k.ovs_rxq_assign}")
    if k.ovs_socket_mem_mb is not None:
        lines.append(f'{OC}dpdk-socket-mem="{k.ovs_socket_mem_mb}"   # MB per NUMA node with DPDK ports: '
                     f'one value per node, comma-separated')
    if k.ovs_socket_limit_mb:
        lines.append(f'{OC}dpdk-socket-limit="{k.ovs_socket_limit_mb}"')
    if k.ovs_dpdk_extra is not None:
        lines.append(f"{OC}dpdk-extra={json.dumps(k.ovs_dpdk_extra)}")
    if k.dut_rxq is not None:
        lines.append(f"ovs-vsctl set Interface {DPDK_PORT} options:n_rxq={k.dut_rxq}   # every physical DPDK "
                     f"port; a vhost-user port takes the guest's queue count (see --format flavor)")
    desc = [f"options:n_{d}q_desc={v}" for d, v in (("rx", k.ovs_rxd), ("tx", k.ovs_txd)) if v is not None]
    if desc:
        lines.append(f"ovs-vsctl set Interface {DPDK_PORT} {' '.join(desc)}   # physical DPDK ports only (OVS "
                     f"ignores them on vhost-user ports)")
    if k.ovs_tx_retries_max is not None:
        r = k.ovs_tx_retries_max
        lines.append(f"ovs-vsctl remove Interface {VHOST_PORT} options tx-retries-max   # OVS's default, 8" if r < 0
                     else f"ovs-vsctl set Interface {VHOST_PORT} options:tx-retries-max={r}   # each VM's vhost-user "
                          f"port, after nova/os-vif creates it")
    if k.meter_pps is not None:
        lines.append("# the bench's OpenFlow meter " + ("was taken off the path: on the node, look for meters in the "
                                                        "flows' actions (ovs-ofctl -O OpenFlow13 dump-meters BRIDGE)"
                                                        if not k.meter_pps else
                                                        f"polices at {k.meter_pps} pps"))
    guest = [n for n, v in (("vnf_ring", k.vnf_ring), ("vnf_queues", k.vnf_queues), ("vnf_vcpus", k.vnf_vcpus))
             if v is not None]
    if guest:
        lines.append(f"# guest settings ({', '.join(guest)}): see --format flavor")
    if not any(line.startswith("ovs-vsctl") for line in lines):
        lines.insert(1, "# no OVS setting was changed")
    return "\n".join(lines)


def tripleo(keys: dict[str, Any], role: str = ROLE) -> str:
    """A heat environment with the TripleO role parameters host/render.py writes, for the keys that have one."""
    k = Kept.from_json(keys)
    params: list[tuple[str, str, str | None]] = []
    if k.ovs_pmd_cpu_mask is not None:
        params.append(("OvsPmdCoreList", json.dumps(_cpus(k.ovs_pmd_cpu_mask)),
                       "PMD CPUs (whole sibling pairs on the NIC's NUMA node on a real host: zeroloss host plan)"))
    if k.ovs_socket_mem_mb is not None:
        params.append(("OvsDpdkSocketMemory", json.dumps(str(k.ovs_socket_mem_mb)),
                       "MB per NUMA node, comma-separated, one value per node"))
    channels = _channels(k.ovs_dpdk_extra if k.ovs_dpdk_extra is not None else "")
    if channels:
        params.append(("OvsDpdkMemoryChannels", json.dumps(channels), None))
    if k.vnf_ring is not None:
        kept = int(k.vnf_ring)  # THT allows 256, 512, 1024 (NovaLibvirtRxQueueSize allowed_values)
        ring = max([r for r in LIBVIRT_RINGS if r <= kept] or [LIBVIRT_RINGS[0]])
        note = (f"the bench kept {kept}; libvirt takes at most {LIBVIRT_RING_MAX}" if kept > LIBVIRT_RING_MAX else
                f"the bench kept {kept}; TripleO allows {', '.join(map(str, LIBVIRT_RINGS))}" if ring != kept else None)
        params += [("NovaLibvirtRxQueueSize", str(ring), note), ("NovaLibvirtTxQueueSize", str(ring), None)]
    lines = ["# TripleO heat environment written by `zeroloss tune`", "parameter_defaults:"]
    if k.dut_rxq is not None:  # a global parameter (tripleo-heat-templates overcloud.j2.yaml), not a role one
        lines += comment("a global parameter (tripleo-heat-templates overcloud.j2.yaml), not a role one", 110, "  ")
        lines.append(f"  NumDpdkInterfaceRxQueues: {k.dut_rxq}")
    lines.append(f"  {role}Parameters:")
    for name, value, note in params:
        if note:
            lines += comment(note, 110, "    ")
        lines.append(f"    {name}: {value}")
    if not params:
        lines.append("    {}")
    rest = [n for n, v in (("ovs_rxq_assign", k.ovs_rxq_assign), ("ovs_tx_retries_max", k.ovs_tx_retries_max),
                           ("ovs_rxd", k.ovs_rxd), ("ovs_txd", k.ovs_txd)) if v is not None]
    if rest:
        lines += comment(f"{', '.join(rest)}: no TripleO role parameter; apply them with --format ovs-vsctl (e.g. "
                         "from a post-deployment script)", 110)
    return "\n".join(lines)


def flavor(keys: dict[str, Any], name: str = "<flavor>") -> str:
    """Flavor properties and nova.conf [libvirt] options for the VNF's guests."""
    k = Kept.from_json(keys)
    lines = []
    props = []
    q = _queues(k)
    if q and q > 1:
        props.append("hw:vif_multiqueue_enabled=true")
    if props:
        lines.append(f"# guests: virtio multiqueue ({q} queue pairs: the guest gets one per vCPU, up to its vCPUs)")
        lines.append(f"openstack flavor set {name} " + " ".join(f"--property {p}" for p in props))
    if k.vnf_vcpus is not None:
        n = len(str(k.vnf_vcpus).split(","))
        lines += [f"# the VNF forwarded best with {n} vCPUs: a flavor with --vcpus {n} and pinned CPUs",
                  f"openstack flavor create {name} --vcpus {n} --property hw:cpu_policy=dedicated "
                  f"--property hw:emulator_threads_policy=isolate"]
    if k.vnf_ring is not None:
        ring = int(k.vnf_ring)
        cap = min(ring, LIBVIRT_RING_MAX)
        note = "" if ring == cap else f"; the bench kept {ring}, libvirt takes at most {cap}"
        lines += [f"# nova.conf on the compute node (virtio ring size{note}):", "[libvirt]",
                  f"rx_queue_size = {cap}", f"tx_queue_size = {cap}"]
    return "\n".join(lines) if lines else "# no guest setting was changed"


def summary(keys: dict[str, Any]) -> str:
    """Each setting kept with what it is (the RunConfig help text)."""
    helps = field_help()
    if not keys:
        return "no setting was changed"
    return "\n".join(f"{k} = {v}   # {helps.get(k, '')}".rstrip(" #") for k, v in sorted(keys.items()))


RENDERERS = {"summary": summary, "ovs-vsctl": ovs_vsctl, "tripleo": tripleo, "flavor": flavor}

# a lab node's OVS settings (TABLE:RECORD:COLUMN[:KEY]) with a bench key of the same meaning, for TripleO
_LAB_EQUIV = {"Open_vSwitch:.:other_config:pmd-cpu-mask": "ovs_pmd_cpu_mask",
              "Open_vSwitch:.:other_config:pmd-rxq-assign": "ovs_rxq_assign",
              "options:n_rxq": "dut_rxq", "options:n_rxq_desc": "ovs_rxd", "options:n_txq_desc": "ovs_txd",
              "options:tx-retries-max": "ovs_tx_retries_max"}


def _lab_equivalents(lab: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for spec, v in lab.items():
        key = _LAB_EQUIV.get(spec) or _LAB_EQUIV.get(":".join(spec.split(":")[2:]))
        if key:
            out[key] = int(v) if v.lstrip("-").isdigit() and key != "ovs_pmd_cpu_mask" else v
    return out


def _lab(keys: dict[str, Any], fmt: str) -> str:
    """A lab node's kept settings: the node's own ovs-vsctl commands; TripleO parameters where one has the same
    meaning; measurement settings in the summary."""
    lab = {k: str(v) for k, v in keys.items() if ":" in k}
    run = {k: v for k, v in keys.items() if ":" not in k}
    if fmt == "ovs-vsctl":
        return labknobs.render(lab)
    if fmt == "tripleo":
        text = tripleo(_lab_equivalents(lab))
        other = [k for k in lab if not (_LAB_EQUIV.get(k) or _LAB_EQUIV.get(":".join(k.split(":")[2:])))]
        if other:
            text += "\n" + "\n".join(comment(f"{', '.join(other)}: no TripleO role parameter here; apply them with "
                                               f"--format ovs-vsctl", 110))
        return text
    if fmt == "flavor":
        return "# no guest setting was changed: tune does not change a lab node's VNF"
    lines = [f"{k} = {v}   # OVS setting on the node" for k, v in lab.items()]
    return "\n".join([*lines, summary(run)] if run else lines)


def render(keys: dict[str, Any], fmt: str) -> str:
    if fmt not in RENDERERS:
        raise ZeroLossError(f"unknown format {fmt!r}", f"use one of {', '.join(FORMATS)}")
    if any(":" in k for k in keys):
        return _lab(keys, fmt)
    return RENDERERS[fmt](keys)
