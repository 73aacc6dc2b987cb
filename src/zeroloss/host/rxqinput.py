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
"""

from __future__ import annotations

import yaml

from ..errors import ZeroLossError
from .ovsstate import PmdPoll
from .rxq import ALGORITHMS, Pmd, PmdLoad, Rxq, parse_affinity


def _pmds(value) -> list[Pmd]:
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = [(c, 0) for c in value]
    else:
        raise ZeroLossError("'pmds' must be a list of cores or a map core: numa", "e.g. pmds: {2: 0, 3: 0}")
    try:
        return [Pmd(int(c), int(n)) for c, n in items]
    except (TypeError, ValueError):
        raise ZeroLossError(f"'pmds' holds a non-number: {value}", "cores and nodes are whole numbers") from None


def parse_loads(text: str, source: str = "loads file") -> tuple[list[Pmd], list[Rxq], dict]:
    """A loads file -> (PMDs, RX queues, options {'algorithm', 'isolate'} as given)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ZeroLossError(f"{source} is not YAML or JSON: {str(e).splitlines()[0]}", "fix its syntax") from None
    if not isinstance(doc, dict) or "ports" not in doc:
        raise ZeroLossError(f"{source} has no 'ports' list", "see `zeroloss rxq-plan --help` for the format")
    pmds = _pmds(doc.get("pmds", []))
    rxqs: list[Rxq] = []
    for no, port in enumerate(doc["ports"] or []):
        if not isinstance(port, dict) or "name" not in port or "loads" not in port:
            raise ZeroLossError(f"{source}: port #{no + 1} needs 'name' and 'loads'", "e.g. {name: dpdk0, loads: [40]}")
        loads = port["loads"]
        pairs = list(loads.items()) if isinstance(loads, dict) else list(enumerate(loads or []))
        try:
            pins = parse_affinity(str(port.get("affinity") or ""))
            numa = int(port.get("numa", 0))
            for q, load in pairs:
                if float(load) < 0:
                    raise ValueError(f"queue {q} has a negative load")
                rxqs.append(Rxq(str(port["name"]), int(q), max(numa, 0), float(load), pins.get(int(q)), no))
        except (TypeError, ValueError) as e:
            raise ZeroLossError(f"{source}: port {port['name']}: {e}", "loads are numbers (% of one PMD)") from None
    if not rxqs:
        raise ZeroLossError(f"{source} lists no queues", "give each port a 'loads' list")
    opts = {k: doc[k] for k in ("algorithm", "isolate") if k in doc}
    if opts.get("algorithm") not in (None, *ALGORITHMS):
        raise ZeroLossError(f"{source}: unknown algorithm '{opts['algorithm']}'", f"use {', '.join(ALGORITHMS)}")
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
