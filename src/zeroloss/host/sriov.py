"""SR-IOV virtual functions as the node shows them: which PF and VF index a VF is (sysfs), the PF's per-VF settings
and counters (`ip -s -d link show dev PF`), and the per-VF counters some drivers print in `ethtool -S PF`. Pure:
text in, records out; sysfs is read through anything with Root's text/link_name/listdir (a Root over a tree, or
the lab agent's reader on the node).

Sources of the formats:
- sysfs: drivers/pci/iov.c creates `virtfn<N>` links in the PF's device directory and a `physfn` link in each
  VF's; Documentation/ABI/testing/sysfs-bus-pci documents sriov_numvfs and sriov_totalvfs; a netdev's
  /sys/class/net/<name>/device links to its PCI function, which lists the netdev under net/.
- iproute2 ip/ipaddress.c print_vfinfo() and print_vf_stats64(): one `vf N` line per VF (`vf N     link/ether MAC
  brd ...` since iproute2 4.x, `vf N MAC MAC` before), `, vlan V`, `, qos Q`, `, spoof checking on|off`,
  `, link-state auto|enable|disable`, `, trust on|off`, then with -s the `RX: bytes packets mcast bcast [dropped]`
  and `TX: bytes packets [dropped]` lines and their numbers.
- ethtool -S: `NIC statistics:` then `     NAME: VALUE` per stat (ethtool.c do_gstats). Per-VF stats exist only in
  Intel's out-of-tree drivers, in two forms seen on real hosts: ixgbe's `VF 0 Rx Packets`, `VF 0 Rx Bytes`,
  `VF 0 Tx Packets`, `VF 0 Tx Bytes`, `VF 0 MC Packets` (github.com/prometheus/node_exporter issue #3217) and
  i40e 2.12's `vf000.rx_unicast`, `.rx_multicast`, `.rx_broadcast`, `.rx_discards`, `.tx_unicast`, ...,
  `.tx_discards`, `.tx_errors` (github.com/collectd/collectd issue #3568). In-tree drivers report per-VF counters
  through IFLA_VF_STATS only (ip -s link).
- What the numbers count: i40e_get_vf_stats() and ice_get_vf_stats() report rx_packets = the VF VSI's unicast +
  multicast + broadcast and rx_dropped = its rx_discards (i40e since 2025 also rx_discards_other); DPDK's iavf
  counts the same VSI registers and reports ipackets = unicast + multicast + broadcast - rx_discards: the VSI's
  packet counters include the discarded frames. Other drivers' rx_packets are taken as frames delivered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from zeroloss.core.codec import Record
from zeroloss.core.errors import ZeroLossError

PCI = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
PF_INDEX = re.compile(r"^([A-Za-z0-9_.:@-]{1,15})/([0-9]{1,4})$")
# drivers whose per-VF rx_packets include the frames counted in rx_dropped (see the module's sources)
DROPS_IN_RX_PACKETS = ("i40e", "ice")
SYS_PCI = "sys/bus/pci/devices"
SYS_NET = "sys/class/net"


class Reader(Protocol):
    """sysfs under a root: what Root (host/sysfs.py) offers."""

    def text(self, rel: str) -> str | None: ...

    def link_name(self, rel: str) -> str | None: ...

    def listdir(self, rel: str) -> list[str]: ...


@dataclass(frozen=True)
class VfPort:
    """A VF and the PF it belongs to, as sysfs tells."""

    spec: str                 # what the lab file named: a PCI address, a VF netdev or PF/N
    vf_pci: str
    pf_pci: str
    index: int                # N of the PF's virtfnN link to this VF
    pf_netdev: str            # the PF's interface name ('' when the PF has no netdev: bound to DPDK)
    numvfs: int | None
    totalvfs: int | None
    pf_driver: str = ""
    vf_driver: str = ""

    @property
    def label(self) -> str:
        return f"{self.pf_netdev or self.pf_pci} vf {self.index}"


@dataclass(frozen=True)
class VfInfo:
    """One `vf N` entry of `ip link show dev PF`: its settings and, with -s, its counters."""

    index: int
    mac: str = ""
    vlan: int = 0
    qos: int = 0
    spoofchk: bool | None = None
    link_state: str | None = None
    trust: bool | None = None
    stats: dict[str, int] | None = None   # rx_bytes rx_packets multicast broadcast [rx_dropped] tx_bytes ...


@dataclass
class PfLink:
    """`ip [-s] [-d] link show dev PF`: the PF's name, MTU, flags and state, and its VFs."""

    name: str
    mtu: int | None = None
    flags: tuple[str, ...] = ()
    state: str = ""
    vfs: dict[int, VfInfo] = field(default_factory=dict)

    @property
    def up(self) -> bool:
        return "UP" in self.flags and "LOWER_UP" in self.flags


_HEAD = re.compile(r"^\d+:\s+(\S+?)(?:@\S+)?:\s+<([^>]*)>(.*)$")
_VF = re.compile(r"^\s*vf (\d+)\s+(?:link/\S+ ([0-9a-fA-F:]+)|MAC ([0-9a-fA-F:]+))(.*)$")
_NUM = re.compile(r"^\s*[0-9]+(\s+[0-9]+)*\s*$")


def _onoff(rest: str, what: str) -> bool | None:
    m = re.search(rf", {what} (on|off)\b", rest)
    return None if m is None else m.group(1) == "on"


def parse_ip_link(text: str, where: str = "ip link show") -> PfLink:
    """The PF and its VFs from `ip [-s] [-d] link show dev PF` (human output, one device); ZeroLossError when the
    text is not that."""
    lines = text.splitlines()
    head = next((_HEAD.match(line) for line in lines if _HEAD.match(line)), None)
    if head is None:
        raise ZeroLossError(f"{where}: no '<N>: <name>: <FLAGS>' line: not `ip link show` output",
                            "run `ip -s -d link show dev PF` on the node to see what it prints")
    rest = head.group(3)
    mtu = re.search(r"\bmtu (\d+)", rest)
    state = re.search(r"\bstate (\S+)", rest)
    pf = PfLink(head.group(1), int(mtu.group(1)) if mtu else None, tuple(head.group(2).split(",")),
                state.group(1) if state else "")
    k = 0
    while k < len(lines):
        m = _VF.match(lines[k])
        k += 1
        if m is None:
            continue
        tail = m.group(4)
        vlan = re.search(r", vlan (\d+)", tail)
        qos = re.search(r", qos (\d+)", tail)
        link = re.search(r", link-state (auto|enable|disable)", tail)
        stats: dict[str, int] = {}
        for side in ("RX", "TX"):  # print_vf_stats64: a header line of names, then a line of numbers
            if k + 1 < len(lines) and lines[k].strip().startswith(f"{side}:") and _NUM.match(lines[k + 1]):
                names = lines[k].strip()[3:].split()
                values = [int(v) for v in lines[k + 1].split()]
                if len(names) != len(values):
                    raise ZeroLossError(f"{where}: vf {m.group(1)}: {side} has {len(names)} names and "
                                        f"{len(values)} numbers", "run ip without -h (human-readable numbers)")
                key = {"RX": {"bytes": "rx_bytes", "packets": "rx_packets", "mcast": "multicast",
                              "bcast": "broadcast", "dropped": "rx_dropped"},
                       "TX": {"bytes": "tx_bytes", "packets": "tx_packets", "dropped": "tx_dropped"}}[side]
                stats.update({key.get(n, f"{side.lower()}_{n}"): v for n, v in zip(names, values, strict=True)})
                k += 2
        index = int(m.group(1))
        pf.vfs[index] = VfInfo(index, (m.group(2) or m.group(3) or "").lower(), int(vlan.group(1)) if vlan else 0,
                               int(qos.group(1)) if qos else 0, _onoff(tail, "spoof checking"),
                               link.group(1) if link else None, _onoff(tail, "trust"), stats or None)
    return pf


@dataclass(frozen=True, kw_only=True)
class I40eVfCounters(Record):
    """The vfNNN.* counters i40e's `ethtool -S PF` prints for one VF (None: not printed)."""
    rx_unicast: int | None = None
    tx_unicast: int | None = None
    rx_bytes: int | None = None
    tx_bytes: int | None = None
    rx_discards: int | None = None
    tx_errors: int | None = None


@dataclass(frozen=True, kw_only=True)
class VfStats(Record):
    """A VF's counters from ip's per-VF stats or ethtool's (as parse_ip_link and parse_ethtool_vf_stats name them);
    a count not given reads 0."""
    rx_packets: int = 0
    tx_packets: int = 0
    rx_dropped: int = 0
    tx_dropped: int = 0


_ETHTOOL_VF = re.compile(r"^\s*VF (\d+) (Rx Packets|Rx Bytes|Tx Packets|Tx Bytes|MC Packets):\s*(\d+)\s*$")
_ETHTOOL_VFNNN = re.compile(r"^\s*vf(\d{3})\.([a-z_]+):\s*(\d+)\s*$")


def parse_ethtool_vf_stats(text: str) -> dict[int, dict[str, int]]:
    """Per-VF counters of `ethtool -S PF` for the drivers that print them; {} otherwise. ixgbe's `VF 3 Rx Packets: 12`
    -> rx_packets, rx_bytes, tx_packets, tx_bytes, multicast; i40e's `vf003.rx_unicast: 12` -> rx_packets (unicast +
    multicast + broadcast: the VSI's counts, discards included, as ip's), rx_dropped (rx_discards), tx_packets and
    tx_dropped (tx_errors: the VSI's TX error counter, which upstream i40e reports as the VF's tx_dropped since commit
    50b2af451597; tx_discards stays 0 for a VF)."""
    key = {"Rx Packets": "rx_packets", "Rx Bytes": "rx_bytes", "Tx Packets": "tx_packets", "Tx Bytes": "tx_bytes",
           "MC Packets": "multicast"}
    out: dict[int, dict[str, int]] = {}
    raw: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        m = _ETHTOOL_VF.match(line)
        if m:
            out.setdefault(int(m.group(1)), {})[key[m.group(2)]] = int(m.group(3))
        m = _ETHTOOL_VFNNN.match(line)
        if m:
            raw.setdefault(int(m.group(1)), {})[m.group(2)] = int(m.group(3))
    for n, r in raw.items():
        c = I40eVfCounters.from_json(r)
        if c.rx_unicast is None or c.tx_unicast is None:
            continue
        out[n] = {"rx_packets": sum(r.get(f"rx_{k}", 0) for k in ("unicast", "multicast", "broadcast")),
                  "tx_packets": sum(r.get(f"tx_{k}", 0) for k in ("unicast", "multicast", "broadcast")),
                  **({"rx_bytes": c.rx_bytes} if c.rx_bytes is not None else {}),
                  **({"tx_bytes": c.tx_bytes} if c.tx_bytes is not None else {}),
                  **({"rx_dropped": c.rx_discards} if c.rx_discards is not None else {}),
                  **({"tx_dropped": c.tx_errors} if c.tx_errors is not None else {})}
    return out


def vf_counters(stats: dict[str, int] | None, ethtool: dict[str, int] | None, pf_driver: str) -> dict[str, int] | None:
    """A VF's counters as the ledger reads them: rx_packets = frames the VF took from the NIC's switch (delivered),
    rx_dropped = frames it dropped there, tx_packets / tx_dropped = frames it sent on / dropped on the way out.
    From ip's per-VF stats, else ethtool's (drop counters only where the driver prints them); None when neither
    has the VF."""
    src = stats if stats and "rx_packets" in stats else ethtool if ethtool and "rx_packets" in ethtool else None
    if src is None:
        return None
    vf = VfStats.from_json(src)
    rx_drops, tx_drops = src is stats or "rx_dropped" in src, src is stats or "tx_dropped" in src
    # a driver that counts its drops in rx_packets too: the frames delivered are the rest
    delivered = vf.rx_packets - vf.rx_dropped if rx_drops and pf_driver in DROPS_IN_RX_PACKETS else vf.rx_packets
    return {"rx_packets": delivered, "tx_packets": vf.tx_packets, **({"rx_dropped": vf.rx_dropped} if rx_drops else {}),
            **({"tx_dropped": vf.tx_dropped} if tx_drops else {})}


def vf_spec(port: str) -> str | None:
    """'sriov:X' -> X (a VF's PCI address, its netdev, or PF/N); None for any other port name."""
    return port[len("sriov:"):] if port.startswith("sriov:") else None


def resolve(read: Reader, spec: str) -> VfPort:
    """The VF a lab file names, from sysfs: a PCI address, a VF netdev, or PF/N (the PF's netdev or PCI address
    and the VF's index); ZeroLossError with the fix when sysfs does not have it."""
    pf_idx = PF_INDEX.match(spec) if not PCI.match(spec) else None
    if pf_idx:
        pf, n = pf_idx.group(1), int(pf_idx.group(2))
        pf_pci = pf if PCI.match(pf) else read.link_name(f"{SYS_NET}/{pf}/device")
        if not pf_pci:
            raise ZeroLossError(f"sriov:{spec}: the node has no network interface {pf!r}",
                                "name the PF by its interface name or PCI address (ip -br link)")
        vf = read.link_name(f"{SYS_PCI}/{pf_pci}/virtfn{n}")
        if vf is None:
            numvfs = read.text(f"{SYS_PCI}/{pf_pci}/sriov_numvfs")
            raise ZeroLossError(f"sriov:{spec}: {pf} has no VF {n} (sriov_numvfs {numvfs or 'missing: no SR-IOV'})",
                                f"echo {n + 1} > /sys/bus/pci/devices/{pf_pci}/sriov_numvfs (or more)")
    elif PCI.match(spec):
        vf = spec.lower()
    else:
        vf = read.link_name(f"{SYS_NET}/{spec}/device")
        if vf is None:
            raise ZeroLossError(f"sriov:{spec}: the node has no PCI network interface {spec!r}",
                                "name the VF by its PCI address (a VF bound to vfio-pci has no interface name)")
    base = f"{SYS_PCI}/{vf}"
    pf_pci = read.link_name(f"{base}/physfn")
    if pf_pci is None:
        what = "no such PCI device" if read.text(f"{base}/vendor") is None else "a PCI function but not a VF"
        raise ZeroLossError(f"sriov:{spec}: {vf} is {what} (no physfn link in /sys/bus/pci/devices/{vf})",
                            "name a VF: ls -l /sys/bus/pci/devices/<PF>/virtfn*")
    pf_base = f"{SYS_PCI}/{pf_pci}"
    index = None
    for name in read.listdir(pf_base):
        if name.startswith("virtfn") and name[6:].isdigit() and read.link_name(f"{pf_base}/{name}") == vf:
            index = int(name[6:])
            break
    if index is None:
        raise ZeroLossError(f"sriov:{spec}: {pf_pci} has no virtfn link to {vf}",
                            "the VF is being removed or sysfs is inconsistent: read /sys/bus/pci/devices/<PF>/")
    nets = read.listdir(f"{pf_base}/net")
    return VfPort(spec, vf, pf_pci, index, nets[0] if nets else "", _int(read.text(f"{pf_base}/sriov_numvfs")),
                  _int(read.text(f"{pf_base}/sriov_totalvfs")), read.link_name(f"{pf_base}/driver") or "",
                  read.link_name(f"{base}/driver") or "")


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None
