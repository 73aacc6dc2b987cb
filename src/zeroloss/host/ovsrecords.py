"""OVS's answers as records (ovsstate.py reads them): the captured command outputs by file name, an `ovs-vsctl
--format=json list` table and the rows zeroloss reads of it, and the keys zeroloss reads from OVS's maps
(Open_vSwitch other_config; an Interface's options, status and other_config). The maps themselves stay the state
(the inventory writes them as OVS has them); these records are how code reads them."""

from __future__ import annotations

from dataclasses import dataclass, field

from zeroloss.core.codec import Json, Record


@dataclass(frozen=True, kw_only=True)
class OvsOutputs(Record):
    """The commands' outputs by CAPTURE's file names (a missing one is None)."""
    open_vswitch: str | None = field(default=None, metadata={"key": "vsctl-list-open_vswitch.json"})
    interface: str | None = field(default=None, metadata={"key": "vsctl-list-interface.json"})
    bridge: str | None = field(default=None, metadata={"key": "vsctl-list-bridge.json"})
    pmd_rxq_show: str = field(default="", metadata={"key": "pmd-rxq-show.txt"})


@dataclass(frozen=True, kw_only=True)
class VsctlTable(Record):
    """`ovs-vsctl --format=json list TABLE`: the column names and one list of values per row."""
    headings: Json = None
    data: Json = None


@dataclass(frozen=True, kw_only=True)
class OpenVswitchRow(Record):
    """The Open_vSwitch table's row (OVSDB values decoded)."""
    other_config: Json = None
    dpdk_initialized: Json = None


@dataclass(frozen=True, kw_only=True)
class InterfaceRow(Record):
    """A row of the Interface table (OVSDB values decoded)."""
    name: Json = ""
    type: Json = ""
    mtu: Json = None
    mtu_request: Json = None
    options: Json = None
    status: Json = None
    other_config: Json = None


@dataclass(frozen=True, kw_only=True)
class BridgeRow(Record):
    """A row of the Bridge table (OVSDB values decoded)."""
    name: Json = ""
    datapath_type: Json = None


def _key(name: str) -> dict[str, str]:
    return {"key": name}


@dataclass(frozen=True, kw_only=True)
class OtherConfig(Record):
    """The Open_vSwitch other_config keys zeroloss reads, values as OVS stores them (None: unset)."""
    dpdk_init: str | None = field(default=None, metadata=_key("dpdk-init"))
    dpdk_socket_mem: str | None = field(default=None, metadata=_key("dpdk-socket-mem"))
    dpdk_lcore_mask: str | None = field(default=None, metadata=_key("dpdk-lcore-mask"))
    pmd_cpu_mask: str | None = field(default=None, metadata=_key("pmd-cpu-mask"))
    dpdk_extra: str | None = field(default=None, metadata=_key("dpdk-extra"))
    per_port_memory: str | None = field(default=None, metadata=_key("per-port-memory"))


@dataclass(frozen=True, kw_only=True)
class InterfaceOptions(Record):
    """The Interface options zeroloss reads (None: unset)."""
    n_rxq: str | None = None
    n_rxq_desc: str | None = None
    n_txq_desc: str | None = None
    dpdk_devargs: str | None = field(default=None, metadata=_key("dpdk-devargs"))


@dataclass(frozen=True, kw_only=True)
class InterfaceStatus(Record):
    """The Interface status keys zeroloss reads (None: not reported)."""
    numa_id: str | None = None
    link_speed: str | None = None


@dataclass(frozen=True, kw_only=True)
class InterfaceConfig(Record):
    """The Interface other_config keys zeroloss reads (None: unset)."""
    pmd_rxq_affinity: str | None = field(default=None, metadata=_key("pmd-rxq-affinity"))
