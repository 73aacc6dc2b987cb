"""Inputs of `zeroloss rxq-plan`: a loads file (YAML/JSON) or the text of `ovs-appctl dpif-netdev/pmd-rxq-show`.

Loads file:
    pmds: {3: 0, 7: 0, 8: 0}     # core: NUMA node (or a list of cores, all on node 0)
    algorithm: cycles            # optional: roundrobin | cycles | group
    isolate: true                # optional: other_config:pmd-rxq-isolate
    ports:
      - name: dpdk0
        numa: 0                  # the port's node (-1 is taken as 0, as OVS does for DPDK ports)
        loads: [30, 80, 60]      # % of one PMD per queue, or {queue_id: load}
        affinity: "0:3"          # optional other_config:pmd-rxq-affinity
        port_no: 2               # optional: datapath port number (dpif/show's N/PORT_NO), for OVS's port order
    datapath_ports: {br0: 1}     # optional: the datapath's other ports and their numbers (bridges' own ports)
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import yaml

from zeroloss.core.codec import Json, Record
from zeroloss.core.cpuset import MAX_CPUS
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.yamlio import BoundedLoader

from .ovsstate import MAX_NODES, MAX_QUEUES, PmdPoll
from .rxq import ALGORITHMS, Pmd, PmdLoad, Rxq, parse_affinity

MAX_PORTS = 65535  # a datapath numbers its ports 1..UINT16_MAX (lib/dpif-netdev.c choose_port), port 0 its own
MAX_TOTAL_RXQ = 2**18  # queues simulated at once: MAX_PORTS ports x the 4 queues of the default what-if
MAX_JSON_BYTES = 64 * 2**20
MAX_YAML_BYTES = 2**20


@dataclass(frozen=True, kw_only=True)
class LoadsDoc(Record):
    """A loads file (`rxq-plan --help` describes it), values as written: each is checked where it is used."""
    ports: Json = None
    pmds: Json = ()
    datapath_ports: Json = None
    algorithm: Json = None
    isolate: Json = True


@dataclass(frozen=True, kw_only=True)
class PortLoads(Record):
    """One entry of 'ports': its name, queue loads (a list, or a map queue: load), pinning, node, port number."""
    name: Json = None
    loads: Json = None
    affinity: Json = None
    numa: Json = 0
    port_no: Json = None


def _whole(value, what: str, low: int, high: int) -> int:
    """A whole number low..high-1 written as a number or digits ('3', 3; not 3.5, true or 1e309); ValueError."""
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,20}\s*", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} {_shown(value)} is not a whole number")
    if not low <= value < high:
        raise ValueError(f"{what} {value} is outside {low}..{high - 1}")
    return value


def _load(value, what: str) -> float:
    """A queue load: a finite number >= 0 (% of one PMD); ValueError."""
    try:
        load = float(value) if not isinstance(value, bool) and isinstance(value, int | float | str) else math.nan
    except (ValueError, OverflowError):
        load = math.nan
    if not math.isfinite(load):
        raise ValueError(f"{what} has the load {_shown(value)}, not a number")
    if load < 0:
        raise ValueError(f"{what} has a negative load")
    return load


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _pmds(value, source: str) -> list[Pmd]:
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list | tuple):  # a tuple: none given (LoadsDoc's default)
        items = [(c, 0) for c in value]
    else:
        raise ZeroLossError(f"{source}: 'pmds' must be a list of cores or a map core: numa", "e.g. pmds: {2: 0, 3: 0}")
    pmds: list[Pmd] = []
    cores: set[int] = set()
    try:
        if len(items) > MAX_CPUS:
            raise ValueError(f"{len(items):,} PMDs, more than the {MAX_CPUS} CPUs Linux can have")
        for c, n in items:
            pmd = Pmd(_whole(c, "core", 0, MAX_CPUS), _whole(n, f"core {c}: node", 0, MAX_NODES))
            if pmd.core in cores:
                raise ValueError(f"core {pmd.core} is listed twice")
            cores.add(pmd.core)
            pmds.append(pmd)
    except ValueError as e:
        raise ZeroLossError(f"{source}: 'pmds': {e}", "cores and nodes are whole numbers, each core once") from None
    return pmds


class _Loader(BoundedLoader):
    """YAML that refuses a key given twice in one map (PyYAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()  # a set: 200k datapath ports took minutes with a list
            twice = next((k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)
                          and (k.value in seen or seen.add(k.value))), None)
            if twice is not None:
                raise yaml.constructor.ConstructorError(None, None, f"key {_shown(twice)} appears twice in a map",
                                                        node.start_mark)
        return super().construct_mapping(node, deep)


def _yaml(text: str, source: str):
    loader = None
    try:
        loader = _Loader(text)  # refuses control characters already
        return loader.get_single_data()
    except yaml.YAMLError as e:
        raise ZeroLossError(f"{source} is not YAML or JSON: {' '.join(str(e).split())[:200]}", "fix its syntax"
                            ) from None
    except RecursionError:
        raise ZeroLossError(f"{source} is nested too deeply to be a loads file") from None
    except (ValueError, TypeError, OverflowError) as e:  # a scalar no Python value holds: 2024-13-45, 5000 digits
        raise ZeroLossError(f"{source} holds a value YAML cannot convert ({' '.join(str(e).split())[:100]})") from None
    finally:
        if loader is not None:
            loader.dispose()


def _dp_ports(doc: LoadsDoc, dp_ports: dict[str, int], names: set[str], source: str) -> dict:
    """{'dp_ports': {name: number}, 'dp_ports_complete': bool} from the ports' port_no and 'datapath_ports'."""
    if not dp_ports:
        return {}
    if set(dp_ports) != names:
        raise ZeroLossError(f"{source}: 'port_no' is given for {len(dp_ports)} of {len(names)} ports",
                            "give every port its datapath port number, or none")
    others = doc.datapath_ports or {}
    if not isinstance(others, dict):
        raise ZeroLossError(f"{source}: 'datapath_ports' is not a map name: port number", "e.g. {br0: 1}")
    try:
        every = dp_ports | {str(n): _whole(no, f"datapath port {n}", 0, 2**32 - 1) for n, no in others.items()}
    except ValueError as e:
        raise ZeroLossError(f"{source}: 'datapath_ports': {e}", "datapath port numbers are whole numbers") from None
    if len(set(dp_ports.values())) < len(dp_ports):
        raise ZeroLossError(f"{source}: two ports have the same port_no", "each DPDK port has its own number")
    return {"dp_ports": every, "dp_ports_complete": doc.keys is not None and "datapath_ports" in doc.keys}


def _document(text: str, source: str):
    """The loads file's document: JSON through the json module (a 50k-port file in a second; a key given twice
    refused), anything else through YAML, which is pure Python here and so bounded at MAX_YAML_BYTES."""
    if len(text) > MAX_JSON_BYTES:
        raise ZeroLossError(f"{source} is {len(text):,} characters, more than the {MAX_JSON_BYTES:,} a loads file "
                            f"needs ({MAX_PORTS:,} ports, {MAX_TOTAL_RXQ:,} queues)", "is it the right file?")
    if text.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(text, object_pairs_hook=_json_map)
        except RecursionError:
            raise ZeroLossError(f"{source} is nested too deeply to be a loads file") from None
        except json.JSONDecodeError:
            pass  # not JSON after all (YAML's flow style looks alike): YAML reads it
        except ValueError as e:  # a key given twice, a number of 5000 digits
            raise ZeroLossError(f"{source}: {' '.join(str(e).split())[:200]}", "give each key once, numbers as "
                                "numbers") from None
    if len(text) > MAX_YAML_BYTES:
        raise ZeroLossError(f"{source} is {len(text):,} characters of YAML, more than the {MAX_YAML_BYTES:,} read as "
                            "YAML (a pure-Python parser: about 20 s a MiB)", "write larger loads files as JSON")
    return _yaml(text, source)


def _json_map(pairs: list) -> dict:
    """A JSON object; ValueError when a key appears twice (json would keep the last silently)."""
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {_shown(twice)} appears twice in an object")
    return out


def _check_sizes(doc: LoadsDoc, source: str) -> list[PortLoads | None]:
    """Refuse a document larger than any OVS datapath before any queue is built: ports, queues per port, queues in
    all, datapath ports (OVS numbers ports up to 65535: lib/dpif-netdev.c choose_port). The ports read (None for
    an entry that is not a map)."""
    total = 0
    count = len(doc.ports)
    fault = f"{count:,} ports, more than the {MAX_PORTS:,} a datapath holds" if count > MAX_PORTS else ""
    ports = [PortLoads.from_json(p) if isinstance(p, dict) else None for p in (doc.ports if not fault else ())]
    for no, port in enumerate(ports):
        loads = port.loads if port is not None else None
        n = len(loads) if isinstance(loads, list | dict) else 0
        if n > MAX_QUEUES:
            fault = f"port #{no + 1} has {n:,} loads, more than the {MAX_QUEUES} queues a DPDK port has"
            break
        total += n
    if not fault and total > MAX_TOTAL_RXQ:
        fault = f"{total:,} queues, more than the {MAX_TOTAL_RXQ:,} rxq-plan simulates"
    others = doc.datapath_ports
    if not fault and isinstance(others, dict) and len(others) > MAX_PORTS:
        fault = f"{len(others):,} datapath_ports, more than the {MAX_PORTS:,} a datapath holds"
    if fault:
        raise ZeroLossError(f"{source}: {fault}", "is it the right file?")
    return ports


def parse_loads(text: str, source: str = "loads file") -> tuple[list[Pmd], list[Rxq], dict]:
    """A loads file -> (PMDs, RX queues, options {'algorithm', 'isolate'} as given); ZeroLossError naming source
    and the fault (no number, not finite, negative, a core, port or queue given twice, more than OVS holds)."""
    raw = _document(text, source)
    doc = LoadsDoc.from_json(raw) if isinstance(raw, dict) else LoadsDoc()
    if not isinstance(doc.ports, list):
        raise ZeroLossError(f"{source} has no 'ports' list", "see `zeroloss rxq-plan --help` for the format")
    ports = _check_sizes(doc, source)
    pmds = _pmds(doc.pmds, source)
    rxqs: list[Rxq] = []
    names: set[str] = set()
    dp_ports: dict[str, int] = {}
    for no, port in enumerate(ports):
        if port is None or not port.keys or not {"name", "loads"} <= port.keys:
            raise ZeroLossError(f"{source}: port #{no + 1} needs 'name' and 'loads'", "e.g. {name: dpdk0, loads: [40]}")
        name = str(port.name)
        loads = port.loads
        try:
            if name in names:
                raise ValueError("the port is listed twice")
            names.add(name)
            if not isinstance(loads, dict | list | None):
                raise ValueError("'loads' is not a list or a map queue: load")
            pairs = list(loads.items()) if isinstance(loads, dict) else list(enumerate(loads or []))
            pins = parse_affinity(str(port.affinity or ""))
            numa = _whole(port.numa, "numa", -1, MAX_NODES)
            if "port_no" in port.keys:
                dp_ports[name] = _whole(port.port_no, "port_no", 0, 2**32 - 1)
            queues: set[int] = set()
            for q, load in pairs:
                qid = _whole(q, "queue", 0, MAX_QUEUES)
                if qid in queues:
                    raise ValueError(f"queue {qid} is listed twice")
                queues.add(qid)
                rxqs.append(Rxq(name, qid, max(numa, 0), _load(load, f"queue {qid}"), pins.get(qid), no))
        except ValueError as e:
            shown = name if name.isprintable() and len(name) <= 40 else _shown(name)
            raise ZeroLossError(f"{source}: port {shown}: {' '.join(str(e).split())}",
                                "loads are numbers (% of one PMD)") from None
    if not rxqs:
        raise ZeroLossError(f"{source} lists no queues", "give each port a 'loads' list")
    opts = {k: raw[k] for k in ("algorithm", "isolate") if k in raw}
    opts.update(_dp_ports(doc, dp_ports, names, source))
    if doc.algorithm not in (None, *ALGORITHMS):
        raise ZeroLossError(f"{source}: unknown algorithm {_shown(doc.algorithm)}", f"use {', '.join(ALGORITHMS)}")
    if not isinstance(doc.isolate, bool):
        raise ZeroLossError(f"{source}: isolate {_shown(doc.isolate)} is not true or false")
    return pmds, rxqs, opts


def from_pmd_rxq_show(polls: list[PmdPoll], port_numa: dict[str, int] | None = None
                      ) -> tuple[list[Pmd], list[Rxq], list[PmdLoad], list[str]]:
    """pmd-rxq-show -> (PMDs, queues with their usage as load, the current placement, notes).

    The output does not say which node a port is on or which queues are pinned: a port's node comes from
    port_numa, else from a non-isolated PMD that polls it (OVS puts queues on their own node when it can);
    a queue on an isolated PMD is taken as pinned there (only pinned queues land on isolated PMDs)."""
    port_numa = dict(port_numa or {})
    notes: list[str] = []
    total = sum(len(p.queues) for p in polls)
    if total > MAX_TOTAL_RXQ:
        raise ZeroLossError(f"the pmd-rxq-show text lists {total:,} queues, more than the {MAX_TOTAL_RXQ:,} rxq-plan "
                            "simulates", "is it the right file?")
    names = sorted({q.port for p in polls for q in p.queues})
    home: dict[str, int] = {}  # the lowest node of a non-isolated PMD polling the port, else of any PMD
    for p in sorted(polls, key=lambda p: (p.isolated, p.numa)):
        for q in p.queues:
            home.setdefault(q.port, p.numa)
    assumed = []
    for name in names:
        if name in port_numa:
            continue
        port_numa[name] = home[name]
        assumed.append(f"{name}={port_numa[name]}")
    if assumed:
        notes.append(f"NUMA node of the ports taken from the PMDs polling them ({', '.join(assumed)}); give "
                     "--port-numa NAME=NODE,... for ports polled across nodes")
    port_no = {n: i for i, n in enumerate(names)}
    pmds, rxqs, current = [], [], []
    for p in polls:
        pmds.append(Pmd(p.core, p.numa))
        placed = PmdLoad(p.core, p.numa, p.isolated)
        for q in p.queues:
            rxq = Rxq(q.port, q.queue, port_numa[q.port], float(q.usage_pct or 0), p.core if p.isolated else None,
                      port_no[q.port])
            rxqs.append(rxq)
            placed.add(rxq)
        current.append(placed)
    if any(q.usage_pct is None for p in polls for q in p.queues):
        notes.append("some queues show 'NOT AVAIL' usage (no measurement yet): counted as 0 %")
    rxqs.sort(key=lambda q: (q.port_no, q.queue))
    return pmds, rxqs, current, notes


def parse_pmds(text: str, known: dict[int, int]) -> list[Pmd]:
    """--pmds '3,7,8' or '3:0,21:1' -> PMDs; a bare core takes its node from known (core -> node), else 0; cores
    0..MAX_CPUS-1 once each, nodes 0..MAX_NODES-1."""
    out = []
    cores: set[int] = set()
    items = text.split(",")
    if len(items) > MAX_CPUS:
        raise ZeroLossError(f"--pmds lists {len(items):,} cores, more than the {MAX_CPUS} CPUs Linux can have")
    for item in items:
        if not item.strip():
            continue
        core, sep, numa = item.partition(":")
        try:
            c = _whole(core, "core", 0, MAX_CPUS)
            pmd = Pmd(c, _whole(numa, f"core {c}: node", 0, MAX_NODES) if sep else known.get(c, 0))
            if c in cores:
                raise ValueError(f"core {c} is listed twice")
        except ValueError as e:
            raise ZeroLossError(f"'{item.strip()[:40]}' in --pmds: {e}", "e.g. --pmds 2,4 or 2:0,3:1"
                                ) from None
        cores.add(c)
        out.append(pmd)
    if not out:
        raise ZeroLossError("--pmds names no core", "e.g. --pmds 2,4")
    return out
