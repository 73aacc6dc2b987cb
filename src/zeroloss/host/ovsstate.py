"""OVS state for inventory and audit: other_config, interfaces and pmd-rxq-show, read from a reachable system OVS
with read-only commands, or from a directory of their captured outputs (the same file names as CAPTURE)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ZeroLossError
from .cpuset import parse_mask

# file name in a captured directory -> the read-only command that produced it
CAPTURE = {
    "vsctl-list-open_vswitch.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Open_vSwitch"],
    "vsctl-list-interface.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Interface"],
    "pmd-rxq-show.txt": ["ovs-appctl", "--timeout=5", "dpif-netdev/pmd-rxq-show"],
}
DEFAULT_DESC = 2048  # OVS NIC_PORT_DEFAULT_RXQ_SIZE / _TXQ_SIZE (lib/netdev-dpdk.c)


@dataclass(frozen=True)
class OvsInterface:
    name: str
    type: str = ""
    mtu: int | None = None
    mtu_request: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    other_config: dict[str, str] = field(default_factory=dict)

    @property
    def is_dpdk(self) -> bool:
        return self.type == "dpdk"

    @property
    def is_vhost(self) -> bool:
        return self.type.startswith("dpdkvhostuser")

    @property
    def effective_mtu(self) -> int:
        return self.mtu or self.mtu_request or 1500

    @property
    def n_rxq(self) -> int:
        return _int(self.options.get("n_rxq"), 1)

    def desc(self, which: str) -> int:
        """n_rxq_desc / n_txq_desc as configured (OVS's default 2048 when unset)."""
        return _int(self.options.get(which), DEFAULT_DESC)

    @property
    def numa(self) -> int | None:
        value = self.status.get("numa_id")
        return _int(value, None) if value is not None else None

    @property
    def devargs(self) -> str:
        return self.options.get("dpdk-devargs", "")


@dataclass
class OvsState:
    source: str  # 'live' or the captured directory
    other_config: dict[str, str] = field(default_factory=dict)
    dpdk_initialized: bool | None = None
    interfaces: list[OvsInterface] = field(default_factory=list)
    pmd_rxq_show: str = ""

    def socket_mem(self) -> list[int] | None:
        text = self.other_config.get("dpdk-socket-mem")
        if not text:
            return None
        try:
            return [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            return None

    def _mask_cpus(self, key: str) -> tuple[int, ...]:
        """The CPUs of a hex CPU mask in other_config; none when it is unset or unreadable."""
        mask = self.other_config.get(key)
        try:
            return parse_mask(mask) if mask else ()
        except ValueError:
            return ()

    def pmd_cpus(self) -> tuple[int, ...]:
        return self._mask_cpus("pmd-cpu-mask")

    def lcore_cpus(self) -> tuple[int, ...]:
        return self._mask_cpus("dpdk-lcore-mask")

    def dpdk_ports(self) -> list[OvsInterface]:
        return [i for i in self.interfaces if i.is_dpdk]


def _int(value, default):
    try:
        return int(str(value).strip('"'))
    except (TypeError, ValueError):
        return default


def _ovsdb_value(value):
    """Decode OVSDB JSON: ['map', [[k, v]...]] -> dict, ['set', [...]] -> list, ['uuid', u] -> u."""
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        kind, data = value
        if kind == "map":
            return {str(k): str(_ovsdb_value(v)) for k, v in data}
        if kind == "set":
            return [_ovsdb_value(v) for v in data]
        if kind in ("uuid", "named-uuid"):
            return data
    return value


def parse_vsctl_list(text: str) -> list[dict]:
    """`ovs-vsctl --format=json list TABLE` -> one dict per row, OVSDB values decoded."""
    try:
        doc = json.loads(text)
        headings = doc["headings"]
        return [{h: _ovsdb_value(v) for h, v in zip(headings, row, strict=True)} for row in doc["data"]]
    except (ValueError, KeyError, TypeError) as e:
        raise ZeroLossError(f"not the JSON output of `ovs-vsctl --format=json list`: {e}") from None


def _scalar_int(value) -> int | None:
    if isinstance(value, list):  # an empty optional column reads as an empty set
        value = value[0] if value else None
    return _int(value, None) if value is not None else None


def interfaces_from_rows(rows: list[dict]) -> list[OvsInterface]:
    out = []
    for r in rows:
        out.append(OvsInterface(
            name=str(r.get("name", "")), type=str(r.get("type", "") or ""), mtu=_scalar_int(r.get("mtu")),
            mtu_request=_scalar_int(r.get("mtu_request")), options=dict(r.get("options") or {}),
            status=dict(r.get("status") or {}), other_config=dict(r.get("other_config") or {})))
    return sorted(out, key=lambda i: i.name)


def from_outputs(source: str, outputs: dict[str, str]) -> OvsState:
    """Build the state from command outputs keyed like CAPTURE (missing ones are left empty)."""
    state = OvsState(source=source)
    if outputs.get("vsctl-list-open_vswitch.json"):
        rows = parse_vsctl_list(outputs["vsctl-list-open_vswitch.json"])
        if rows:
            state.other_config = dict(rows[0].get("other_config") or {})
            init = rows[0].get("dpdk_initialized")
            state.dpdk_initialized = init if isinstance(init, bool) else None
    if outputs.get("vsctl-list-interface.json"):
        state.interfaces = interfaces_from_rows(parse_vsctl_list(outputs["vsctl-list-interface.json"]))
    state.pmd_rxq_show = outputs.get("pmd-rxq-show.txt", "")
    return state


def read_captured(directory: str | os.PathLike) -> OvsState:
    d = Path(directory)
    if not d.is_dir():
        raise ZeroLossError(f"OVS state directory {d} does not exist",
                            f"capture it with: {'; '.join(' '.join(c) + ' > ' + f for f, c in CAPTURE.items())}")
    outputs = {f: (d / f).read_text() for f in CAPTURE if (d / f).is_file()}
    if not outputs:
        raise ZeroLossError(f"{d} holds none of {', '.join(CAPTURE)}", "capture the OVS state into it first")
    return from_outputs(str(d), outputs)


def db_socket() -> Path:
    return Path(os.environ.get("OVS_RUNDIR", "/var/run/openvswitch")) / "db.sock"


def read_live(run=subprocess.run) -> tuple[OvsState | None, str]:
    """The system OVS through read-only ovs-vsctl/ovs-appctl calls; (None, why) when it is not reachable."""
    sock = db_socket()
    if not sock.exists():
        return None, f"no OVS database socket at {sock}: OVS rules skipped"
    outputs = {}
    for name, argv in CAPTURE.items():
        try:
            r = run(argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"`{' '.join(argv)}` failed ({e}): OVS rules skipped"
        if r.returncode == 0:
            outputs[name] = r.stdout
        elif name != "pmd-rxq-show.txt":  # pmd-rxq-show fails on a kernel-datapath OVS; the rest must work
            return None, f"`{' '.join(argv)}` exited {r.returncode}: {r.stderr.strip()[:200]}: OVS rules skipped"
    return from_outputs("live", outputs), "OVS state read live (read-only ovs-vsctl/ovs-appctl)"


@dataclass(frozen=True)
class PolledQueue:
    port: str
    queue: int
    enabled: bool
    usage_pct: int | None  # None = NOT AVAIL


@dataclass(frozen=True)
class PmdPoll:
    core: int
    numa: int
    isolated: bool
    queues: tuple[PolledQueue, ...]


_PMD_LINE = re.compile(r"^pmd thread numa_id (-?\d+) core_id (\d+):")
_Q_LINE = re.compile(r"^\s*port:\s*(\S+)\s+queue-id:\s*(\d+)\s*\((enabled|disabled)\)\s*pmd usage:\s*(\d+ %|NOT AVAIL)")


def parse_pmd_rxq_show(text: str) -> list[PmdPoll]:
    """`ovs-appctl dpif-netdev/pmd-rxq-show` (OVS 2.16 .. 3.x layout) -> PMDs with their queues and usage."""
    pmds: list[PmdPoll] = []
    cur: dict | None = None

    def flush():
        if cur is not None:
            pmds.append(PmdPoll(cur["core"], cur["numa"], cur["isolated"], tuple(cur["queues"])))

    for line in text.splitlines():
        m = _PMD_LINE.match(line)
        if m:
            flush()
            cur = {"numa": int(m.group(1)), "core": int(m.group(2)), "isolated": False, "queues": []}
            continue
        if cur is None:
            continue
        if line.strip().startswith("isolated"):
            cur["isolated"] = line.split(":", 1)[1].strip() == "true"
            continue
        q = _Q_LINE.match(line)
        if q:
            usage = None if q.group(4) == "NOT AVAIL" else int(q.group(4).split()[0])
            cur["queues"].append(PolledQueue(q.group(1), int(q.group(2)), q.group(3) == "enabled", usage))
    flush()
    if text.strip() and not pmds:
        raise ZeroLossError("no 'pmd thread numa_id N core_id M:' lines in the pmd-rxq-show text",
                            "give the output of `ovs-appctl dpif-netdev/pmd-rxq-show`")
    return pmds
