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

import math
import re

import yaml

from ..errors import ZeroLossError
from ..yamlio import BoundedLoader
from .cpuset import MAX_CPUS
from .ovsstate import MAX_NODES, MAX_QUEUES, PmdPoll
from .rxq import ALGORITHMS, Pmd, PmdLoad, Rxq, parse_affinity


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
    elif isinstance(value, list):
        items = [(c, 0) for c in value]
    else:
        raise ZeroLossError(f"{source}: 'pmds' must be a list of cores or a map core: numa", "e.g. pmds: {2: 0, 3: 0}")
    pmds: list[Pmd] = []
    try:
        for c, n in items:
            pmd = Pmd(_whole(c, "core", 0, MAX_CPUS), _whole(n, f"core {c}: node", 0, MAX_NODES))
            if any(p.core == pmd.core for p in pmds):
                raise ValueError(f"core {pmd.core} is listed twice")
            pmds.append(pmd)
    except ValueError as e:
        raise ZeroLossError(f"{source}: 'pmds': {e}", "cores and nodes are whole numbers, each core once") from None
    return pmds


class _Loader(BoundedLoader):
    """YAML that refuses a key given twice in one map (PyYAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            keys = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
            twice = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
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


def _dp_ports(doc: dict, dp_ports: dict[str, int], names: set[str], source: str) -> dict:
    """{'dp_ports': {name: number}, 'dp_ports_complete': bool} from the ports' port_no and 'datapath_ports'."""
    if not dp_ports:
        return {}
    if set(dp_ports) != names:
        raise ZeroLossError(f"{source}: 'port_no' is given for {len(dp_ports)} of {len(names)} ports",
                            "give every port its datapath port number, or none")
    others = doc.get("datapath_ports") or {}
    if not isinstance(others, dict):
        raise ZeroLossError(f"{source}: 'datapath_ports' is not a map name: port number", "e.g. {br0: 1}")
    try:
        every = dp_ports | {str(n): _whole(no, f"datapath port {n}", 0, 2**32 - 1) for n, no in others.items()}
    except ValueError as e:
        raise ZeroLossError(f"{source}: 'datapath_ports': {e}", "datapath port numbers are whole numbers") from None
    if len(set(dp_ports.values())) < len(dp_ports):
        raise ZeroLossError(f"{source}: two ports have the same port_no", "each DPDK port has its own number")
    return {"dp_ports": every, "dp_ports_complete": "datapath_ports" in doc}


def parse_loads(text: str, source: str = "loads file") -> tuple[list[Pmd], list[Rxq], dict]:
    """A loads file -> (PMDs, RX queues, options {'algorithm', 'isolate'} as given); ZeroLossError naming source
    and the fault (no number, not finite, negative, a core, port or queue given twice)."""
    doc = _yaml(text, source)
    if not isinstance(doc, dict) or not isinstance(doc.get("ports"), list):
        raise ZeroLossError(f"{source} has no 'ports' list", "see `zeroloss rxq-plan --help` for the format")
    pmds = _pmds(doc.get("pmds", []), source)
    rxqs: list[Rxq] = []
    names: set[str] = set()
    dp_ports: dict[str, int] = {}
    for no, port in enumerate(doc["ports"]):
        if not isinstance(port, dict) or "name" not in port or "loads" not in port:
            raise ZeroLossError(f"{source}: port #{no + 1} needs 'name' and 'loads'", "e.g. {name: dpdk0, loads: [40]}")
        name = str(port["name"])
        loads = port["loads"]
        try:
            if name in names:
                raise ValueError("the port is listed twice")
            names.add(name)
            if not isinstance(loads, dict | list | None):
                raise ValueError("'loads' is not a list or a map queue: load")
            pairs = list(loads.items()) if isinstance(loads, dict) else list(enumerate(loads or []))
            pins = parse_affinity(str(port.get("affinity") or ""))
            numa = _whole(port.get("numa", 0), "numa", -1, MAX_NODES)
            if "port_no" in port:
                dp_ports[name] = _whole(port["port_no"], "port_no", 0, 2**32 - 1)
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
    opts = {k: doc[k] for k in ("algorithm", "isolate") if k in doc}
    opts.update(_dp_ports(doc, dp_ports, names, source))
    if opts.get("algorithm") not in (None, *ALGORITHMS):
        raise ZeroLossError(f"{source}: unknown algorithm {_shown(opts['algorithm'])}", f"use {', '.join(ALGORITHMS)}")
    if not isinstance(opts.get("isolate", True), bool):
        raise ZeroLossError(f"{source}: isolate {_shown(opts['isolate'])} is not true or false")
    return pmds, rxqs, opts


def from_pmd_rxq_show(polls: list[PmdPoll], port_numa: dict[str, int] | None = None
                      ) -> tuple[list[Pmd], list[Rxq], list[PmdLoad], list[str]]:
    """pmd-rxq-show -> (PMDs, queues with their usage as load, the current placement, notes).

    The output does not say which node a port is on or which queues are pinned: a port's node comes from
    port_numa, else from a non-isolated PMD that polls it (OVS puts queues on their own node when it can);
    a queue on an isolated PMD is taken as pinned there (only pinned queues land on isolated PMDs)."""
    port_numa = dict(port_numa or {})
    notes: list[str] = []
    names = sorted({q.port for p in polls for q in p.queues})
    assumed = []
    for name in names:
        if name in port_numa:
            continue
        homes = [p.numa for p in polls if not p.isolated for q in p.queues if q.port == name]
        homes = homes or [p.numa for p in polls for q in p.queues if q.port == name]
        port_numa[name] = min(homes)
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
            placed.queues.append(rxq)
        current.append(placed)
    if any(q.usage_pct is None for p in polls for q in p.queues):
        notes.append("some queues show 'NOT AVAIL' usage (no measurement yet): counted as 0 %")
    rxqs.sort(key=lambda q: (q.port_no, q.queue))
    return pmds, rxqs, current, notes


def parse_pmds(text: str, known: dict[int, int]) -> list[Pmd]:
    """--pmds '3,7,8' or '3:0,21:1' -> PMDs; a bare core takes its node from known (core -> node), else 0."""
    out = []
    for item in text.split(","):
        if not item.strip():
            continue
        core, sep, numa = item.partition(":")
        try:
            c = int(core)
            out.append(Pmd(c, int(numa) if sep else known.get(c, 0)))
        except ValueError:
            raise ZeroLossError(f"'{item.strip()}' in --pmds is not CORE or CORE:NODE", "e.g. --pmds 2,4 or 2:0,3:1"
                                ) from None
    if not out:
        raise ZeroLossError("--pmds names no core", "e.g. --pmds 2,4")
    return out
