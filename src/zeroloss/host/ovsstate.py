"""OVS state for inventory and audit: other_config, interfaces and pmd-rxq-show, read from a reachable system OVS
with read-only commands, or from a directory of their captured outputs (the same file names as CAPTURE)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from zeroloss.core.cpuset import MAX_CPUS, parse_mask, shown
from zeroloss.core.errors import ZeroLossError

from .ovsrecords import (
    BridgeRow,
    InterfaceConfig,
    InterfaceOptions,
    InterfaceRow,
    InterfaceStatus,
    OpenVswitchRow,
    OtherConfig,
    OvsOutputs,
    VsctlTable,
)

# file name in a captured directory -> the read-only command that produced it
CAPTURE = {
    "vsctl-list-open_vswitch.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Open_vSwitch"],
    "vsctl-list-interface.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Interface"],
    "vsctl-list-bridge.json": ["ovs-vsctl", "--timeout=5", "--format=json", "list", "Bridge"],
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
    def known_options(self) -> InterfaceOptions:
        return InterfaceOptions.from_json(self.options)

    @property
    def known_status(self) -> InterfaceStatus:
        return InterfaceStatus.from_json(self.status)

    @property
    def known_other_config(self) -> InterfaceConfig:
        return InterfaceConfig.from_json(self.other_config)

    @property
    def n_rxq(self) -> int:
        return _int(self.known_options.n_rxq, 1)

    def desc(self, which: str) -> int:
        """n_rxq_desc / n_txq_desc as configured (OVS's default 2048 when unset)."""
        return _int(self.options.get(which), DEFAULT_DESC)

    @property
    def numa(self) -> int | None:
        value = self.known_status.numa_id
        return _int(value, None) if value is not None else None

    @property
    def devargs(self) -> str:
        devargs = self.known_options.dpdk_devargs
        return "" if devargs is None else devargs


@dataclass
class OvsState:
    source: str  # 'live' or the captured directory
    other_config: dict[str, str] = field(default_factory=dict)
    dpdk_initialized: bool | None = None
    interfaces: list[OvsInterface] = field(default_factory=list)
    pmd_rxq_show: str = ""
    bridges: dict[str, str] = field(default_factory=dict)  # name -> datapath_type ('' = system)

    @property
    def known_other_config(self) -> OtherConfig:
        """other_config's keys that zeroloss reads (read from the map each time: the map is the state)."""
        return OtherConfig.from_json(self.other_config)

    def socket_mem(self) -> list[int] | None:
        text = self.known_other_config.dpdk_socket_mem
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


def parse_vsctl_list(text: str, source: str = "") -> list[dict]:
    """`ovs-vsctl --format=json list TABLE` -> one dict per row, OVSDB values decoded; the columns the state
    reads as maps (other_config, options, status) must be maps."""
    where = f"{source}: " if source else ""
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise TypeError(f"a JSON {type(doc).__name__}, not an object")
        missing = [k for k in ("headings", "data") if k not in doc]
        if missing:
            raise KeyError(missing[0])
        table = VsctlTable.from_json(doc)
        rows = [{h: _ovsdb_value(v) for h, v in zip(table.headings, row, strict=True)} for row in table.data]
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise ZeroLossError(f"{where}not the JSON output of `ovs-vsctl --format=json list`: "
                            f"{' '.join(str(e).split())[:200]}") from None
    for no, row in enumerate(rows):
        for key in ("other_config", "options", "status"):
            if not isinstance(row.get(key) or {}, dict):
                raise ZeroLossError(f"{where}row {no + 1}: column {key} is not an OVSDB map ['map', [[key, value], "
                                    f"...]]", "capture it again with ovs-vsctl --format=json list")
    return rows


def _scalar_int(value) -> int | None:
    if isinstance(value, list):  # an empty optional column reads as an empty set
        value = value[0] if value else None
    return _int(value, None) if value is not None else None


def interfaces_from_rows(rows: list[dict]) -> list[OvsInterface]:
    out = []
    for r in map(InterfaceRow.from_json, rows):
        out.append(OvsInterface(
            name=str(r.name), type=str(r.type or ""), mtu=_scalar_int(r.mtu), mtu_request=_scalar_int(r.mtu_request),
            options=dict(r.options or {}), status=dict(r.status or {}), other_config=dict(r.other_config or {})))
    return sorted(out, key=lambda i: i.name)


def _where(source: str, name: str) -> str:
    """How an error names one output: the captured file, or the live command."""
    return f"`{' '.join(CAPTURE[name])}`" if source == "live" else str(Path(source) / name)


def from_outputs(source: str, outputs: dict[str, str]) -> OvsState:
    """Build the state from command outputs keyed like CAPTURE (missing ones are left empty); ZeroLossError naming
    the file (or command) whose output is not what the command prints."""
    state = OvsState(source=source)
    got = OvsOutputs.from_json(outputs)
    if got.open_vswitch:
        rows = parse_vsctl_list(got.open_vswitch, _where(source, "vsctl-list-open_vswitch.json"))
        if rows:
            top = OpenVswitchRow.from_json(rows[0])
            state.other_config = dict(top.other_config or {})
            state.dpdk_initialized = top.dpdk_initialized if isinstance(top.dpdk_initialized, bool) else None
    if got.interface:
        state.interfaces = interfaces_from_rows(parse_vsctl_list(got.interface,
                                                                 _where(source, "vsctl-list-interface.json")))
    if got.bridge:
        rows = parse_vsctl_list(got.bridge, _where(source, "vsctl-list-bridge.json"))
        state.bridges = {str(r.name): str(r.datapath_type or "") for r in map(BridgeRow.from_json, rows)}
    state.pmd_rxq_show = got.pmd_rxq_show
    parse_pmd_rxq_show(state.pmd_rxq_show, _where(source, "pmd-rxq-show.txt"))  # refused here, not mid-audit
    return state


def read_captured(directory: str | os.PathLike) -> OvsState:
    d = Path(directory)
    if not d.is_dir():
        raise ZeroLossError(f"OVS state directory {d} does not exist",
                            f"capture it with: {'; '.join(' '.join(c) + ' > ' + f for f, c in CAPTURE.items())}")
    outputs = {f: read_utf8(d / f) for f in CAPTURE if (d / f).is_file()}
    if not outputs:
        raise ZeroLossError(f"{d} holds none of {', '.join(CAPTURE)}", "capture the OVS state into it first")
    return from_outputs(str(d), outputs)


def read_utf8(path: str | os.PathLike) -> str:
    """A text file's content; ZeroLossError naming it when it cannot be read or is not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ZeroLossError(f"cannot read {path}: {e.strerror}", "check the path") from None
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        raise ZeroLossError(f"{path} is not UTF-8 text (byte {e.start}: {data[e.start:e.start + 1]!r})",
                            "give the command's text output as captured") from None


def db_socket() -> Path:
    return Path(os.getenv("OVS_RUNDIR", "/var/run/openvswitch")) / "db.sock"


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


@dataclass
class _PmdLines:
    """One PMD's block of pmd-rxq-show while it is read."""
    numa: int
    core: int
    isolated: bool = False
    queues: list[PolledQueue] = field(default_factory=list)

    def poll(self) -> PmdPoll:
        return PmdPoll(self.core, self.numa, self.isolated, tuple(self.queues))


_PMD_LINE = re.compile(r"^pmd thread numa_id (-?[0-9]{1,20}) core_id ([0-9]{1,20}):")
_Q_LINE = re.compile(r"^\s*port:\s*(\S+)\s+queue-id:\s*([0-9]{1,20})\s*\((enabled|disabled)\)\s*pmd usage:\s*"
                     r"([0-9]{1,3} %|NOT AVAIL)")
MAX_NODES = 1024  # Linux's MAX_NUMNODES (NODES_SHIFT 10)
MAX_QUEUES = 1024  # DPDK's RTE_MAX_QUEUES_PER_PORT: no queue id reaches it


def parse_pmd_rxq_show(text: str, source: str = "the pmd-rxq-show text") -> list[PmdPoll]:
    """`ovs-appctl dpif-netdev/pmd-rxq-show` (OVS 2.16 .. 3.x layout) -> PMDs with their queues and usage;
    ZeroLossError naming source when it holds no PMD or a core, node or queue id no OVS prints."""
    pmds: list[PmdPoll] = []
    cur: _PmdLines | None = None

    for no, line in enumerate(text.splitlines(), start=1):
        m = _PMD_LINE.match(line)
        if m:
            if cur is not None:
                pmds.append(cur.poll())
            cur = _PmdLines(numa=int(m.group(1)), core=int(m.group(2)))
            continue
        if cur is None:
            continue
        if line.strip().startswith("isolated"):
            cur.isolated = line.partition(":")[2].strip() == "true"
            continue
        q = _Q_LINE.match(line)
        if q:
            usage = None if q.group(4) == "NOT AVAIL" else int(q.group(4).split()[0])
            cur.queues.append(PolledQueue(q.group(1), int(q.group(2)), q.group(3) == "enabled", usage))
        elif line.lstrip().startswith("port:"):  # 'nan %', '-5 %': a queue OVS never prints so, not one to drop
            raise ZeroLossError(f"{source}: line {no} {shown(line, 100)} is not 'port: NAME queue-id: N (enabled) pmd "
                                "usage: N %' (N 0..999) or 'NOT AVAIL'", "give the output of `ovs-appctl "
                                "dpif-netdev/pmd-rxq-show` as printed")
    if cur is not None:
        pmds.append(cur.poll())
    if text.strip() and not pmds:
        raise ZeroLossError(f"no 'pmd thread numa_id N core_id M:' lines in {source}",
                            "give the output of `ovs-appctl dpif-netdev/pmd-rxq-show`")
    cores: set[int] = set()
    queues: set[tuple[str, int]] = set()
    for p in pmds:
        fault = ("repeats a core" if p.core in cores else
                 "is not a CPU and NUMA node" if not (0 <= p.core < MAX_CPUS and -1 <= p.numa < MAX_NODES) else "")
        for q in p.queues:
            fault = fault or (f"polls {q.port} queue {q.queue} again" if (q.port, q.queue) in queues else
                              f"polls queue id {q.queue} (DPDK ports have fewer than {MAX_QUEUES})"
                              if q.queue >= MAX_QUEUES else "")
            queues.add((q.port, q.queue))
        if fault:
            raise ZeroLossError(f"{source}: 'pmd thread numa_id {p.numa} core_id {p.core}' {fault}",
                                "give the output of `ovs-appctl dpif-netdev/pmd-rxq-show`")
        cores.add(p.core)
    return pmds
