"""zeroloss tune on a lab node: the node as tune reads it before it starts (runs/tune/labknobs.py's ladders start
from its values): OVS's other_config, the interfaces at the ends of the path, the CPUs tune may give to PMDs. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zeroloss.core.codec import Json, JsonObject, Record


@dataclass(frozen=True)
class Port:
    """One OVS interface of the node as read: its type, MTU, options and ingress policing."""

    name: str
    type: str = ""
    mtu: int | None = None
    mtu_request: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    policing_kbps: int = 0


@dataclass(frozen=True, kw_only=True)
class NodeJson(Record):
    """A node as the tune file keeps it (Node.to_dict), read once by Node.from_dict."""

    other_config: JsonObject | None = None
    ports: JsonObject
    gen_ports: Json
    vnf_ports: Json
    spare_cpus: Json = None
    ct: JsonObject | None = None


@dataclass(frozen=True)
class Node:
    """What tune reads of a node before it starts: OVS's other_config, the interfaces at the ends of the path (the
    generator-facing ones and the VNFs'), and the CPUs the lab file says tune may give to PMDs."""

    other_config: dict[str, str]
    ports: dict[str, Port]
    gen_ports: tuple[str, ...]
    vnf_ports: tuple[str, ...]
    spare_cpus: tuple[int, ...] = ()
    ct: dict[str, str] = field(default_factory=dict)  # conntrack's ct-maxconns and ct-limits:default, as read

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Node:
        n = NodeJson.from_json(d)
        return cls({str(k): str(v) for k, v in (n.other_config or {}).items()},
                   {name: Port(name, **{k: v for k, v in p.items() if k != "name"}) for name, p in n.ports.items()},
                   tuple(n.gen_ports), tuple(n.vnf_ports), tuple(n.spare_cpus or ()),
                   {str(k): str(v) for k, v in (n.ct or {}).items()})

    def to_dict(self) -> dict[str, Any]:
        return {"other_config": self.other_config,
                "ports": {n: {"type": p.type, "mtu": p.mtu, "mtu_request": p.mtu_request, "options": p.options,
                              "policing_kbps": p.policing_kbps} for n, p in self.ports.items()},
                "gen_ports": list(self.gen_ports), "vnf_ports": list(self.vnf_ports),
                "spare_cpus": list(self.spare_cpus), "ct": dict(self.ct)}
