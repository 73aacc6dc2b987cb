"""`zeroloss bench --vnf`: the PVP VNF as a host process, as a container (a CNF) and as a VM, side by side in one
run, as the reference study compares a testpmd CNF with the same testpmd in a VM (redhat-sriov-shiftonstack-perf).

Per frame size, one PVP search with each kind, the same testpmd on the same cores (which kind goes first rotates
from one frame size to the next, so that a drift of the shared host does not always fall on one kind); then the VM
with each virtio ring size of the references' vring finding (the ring a QEMU guest can have: 256 and 1024; 4096 is
beyond QEMU's virtio-net and is reported as such). Prints the NDRs with their ratios to the process, the latency
p50/p99 at the NDR (the validation trial's), the containers' start and the guests' boot times; every run's result
file is kept.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.config import RunConfig
from zeroloss.drivers.vnf.domain import RING_SIZES
from zeroloss.host.hostinfo import collect
from zeroloss.results.fmt import table
from zeroloss.results.resultfile import ResultFile
from zeroloss.runs.run import Run

RINGS = (256, 1024, 4096)
KINDS = ("process", "container", "vm")


@dataclass
class Outcome:
    """One PVP search's answer."""

    ndr_pps: float = 0.0
    p50_us: float | None = None
    p99_us: float | None = None
    flags: tuple[str, ...] = ()
    start_s: list[float] = field(default_factory=list)  # the VMs' boot or the containers' start seconds
    accel: str = ""


@dataclass(frozen=True, kw_only=True)
class Placement(Record):
    """A run's placement as the benchmark reads it: the pvp topology's section (the run measures pvp)."""

    pvp: JsonObject


@dataclass(frozen=True, kw_only=True)
class PvpPlace(Record):
    """What the benchmark reads of the pvp section: the VMs' boot or the containers' start seconds, the acceleration."""

    vnf_boot_s: Json = ()
    cnf_start_s: Json = ()
    vnf_accel: Json = ""


def _search(out: Path, frame: int, vnf: str, ring: int, trial_s: float, validation_s: float,
            granularity_pct: float, host: dict) -> Outcome:
    cfg = RunConfig(topology="pvp", frame_sizes=[frame], vnf=vnf, vnf_ring=ring, trial_s=trial_s,
                    validation_s=validation_s, granularity_pct=granularity_pct, latency_loads="none")
    rf = ResultFile.create(out, cfg.to_dict(), host)
    Run(cfg, rf, lambda *_: None).execute()
    (s,) = rf.run.searches
    place = PvpPlace.from_json(Placement.from_json(rf.run.place()).pvp)
    res = s.result
    lat = res.ndr_latency_ns if res else None
    starts = place.vnf_boot_s if vnf == "vm" else place.cnf_start_s
    return Outcome(ndr_pps=(res.ndr.rate_pps if res else None) or 0.0,
                   p50_us=lat.p50 / 1000 if lat else None, p99_us=lat.p99 / 1000 if lat else None,
                   flags=res.flags if res else (), start_s=[b for b in starts if b], accel=place.vnf_accel)


def _order(i: int) -> tuple[str, ...]:
    """The kinds rotated by i: which goes first changes from one frame size to the next."""
    k = i % len(KINDS)
    return KINDS[k:] + KINDS[:k]


def vnf_bench(frames: list[int], trial_s: float, validation_s: float, granularity_pct: float, out_dir: Path,
              json_out: bool = False) -> Iterator[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    host = collect()
    started = time.strftime("%Y-%m-%d %H:%M")
    if not json_out:
        yield (f"zeroloss bench --vnf ({started}): PVP with the VNF as a host process, a container and a VM, trial "
               f"{trial_s:g} s, validation {validation_s:g} s, granularity {granularity_pct:g} %; result files in "
               f"{out_dir}")
    got: dict[tuple[int, str, int], Outcome] = {}
    for i, frame in enumerate(frames):
        for vnf in _order(i):
            o = _search(out_dir / f"pvp-{frame}-{vnf}-1024.json", frame, vnf, 1024, trial_s, validation_s,
                        granularity_pct, host)
            got[(frame, vnf, 1024)] = o
            if not json_out:
                yield (f"  {frame} B {vnf:<9} ring 1024: NDR {o.ndr_pps:,.0f} pps, latency p50/p99 "
                       f"{_us(o.p50_us)}/{_us(o.p99_us)} us{' [' + ', '.join(o.flags) + ']' if o.flags else ''}")
        for ring in RINGS:
            if ring == 1024 or ring not in RING_SIZES:
                continue
            o = _search(out_dir / f"pvp-{frame}-vm-{ring}.json", frame, "vm", ring, trial_s, validation_s,
                        granularity_pct, host)
            got[(frame, "vm", ring)] = o
            if not json_out:
                yield f"  {frame} B vm        ring {ring}: NDR {o.ndr_pps:,.0f} pps"

    boots = [b for (_, k, _), o in got.items() if k == "vm" for b in o.start_s]
    starts = [b for (_, k, _), o in got.items() if k == "container" for b in o.start_s]
    accel = next((o.accel for o in got.values() if o.accel), "")
    if json_out:
        yield json.dumps({"started": started, "vm_accel": accel, "vm_boot_s": boots, "container_start_s": starts,
                          "searches": [{"frame": f, "vnf": k, "ring": r, "ndr_pps": o.ndr_pps, "p50_us": o.p50_us,
                                        "p99_us": o.p99_us, "flags": list(o.flags)}
                                       for (f, k, r), o in got.items()],
                          "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2)
        return
    rows = []
    for frame in frames:
        p, c, v = (got[(frame, k, 1024)] for k in KINDS)
        v256 = got.get((frame, "vm", 256))
        rows.append([f"{frame}", f"{p.ndr_pps:,.0f}", f"{c.ndr_pps:,.0f}", f"{v.ndr_pps:,.0f}",
                     _ratio(c.ndr_pps, p.ndr_pps), _ratio(v.ndr_pps, p.ndr_pps),
                     *(f"{_us(o.p50_us)}/{_us(o.p99_us)}" for o in (p, c, v)),
                     f"{v256.ndr_pps:,.0f}" if v256 else "-", _ratio(v.ndr_pps, v256.ndr_pps if v256 else None)])
    yield ""
    yield f"PVP NDR (pps per direction) and latency p50/p99 at the NDR (us), {started}"
    yield table(["frame B", "process NDR", "container NDR", "VM NDR", "container/process", "VM/process",
                 "process lat", "container lat", "VM lat", "VM ring 256 NDR", "VM 1024/256"], rows)
    if starts:
        yield (f"container start (podman run to testpmd's prompt): {statistics.mean(starts):.2f} s (min "
               f"{min(starts):.2f}, max {max(starts):.2f}, {len(starts)} starts)")
    if boots:
        yield (f"VM boot under {accel or '?'} (QEMU start to the guest testpmd's prompt): "
               f"{statistics.mean(boots):.1f} s (min {min(boots):.1f}, max {max(boots):.1f}, {len(boots)} boots)")
    yield ("VM ring 4096: QEMU's virtio-net takes at most 1024 descriptors per queue (the process VNF's "
           "virtio-user does take 4096: zeroloss campaign vnf-ring)")


def _us(v: float | None) -> str:
    return f"{v:,.1f}" if v is not None else "-"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"
