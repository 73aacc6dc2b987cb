"""`zeroloss bench --vnf`: the PVP VNF as a VM against the VNF as a host process, side by side in one run.

Per frame size, one PVP search with `--vnf process` and one with `--vnf vm` (which goes first alternates), then
the VM with each virtio ring size of the references' vring finding (the ring a QEMU guest can have: 256 and 1024;
4096 is beyond QEMU's virtio-net and is reported as such). Prints the NDRs with their ratios and the guests' boot
times; every run's result file is kept.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from .config import RunConfig
from .fmt import table
from .hostinfo import collect
from .results.resultfile import ResultFile
from .runner import Run
from .vnf.domain import RING_SIZES

RINGS = (256, 1024, 4096)


def _search(out: Path, frame: int, vnf: str, ring: int, trial_s: float, validation_s: float,
            granularity_pct: float, host: dict) -> tuple[float, list[float], str]:
    """One PVP search: (NDR pps, the VMs' boot seconds, the accelerator)."""
    cfg = RunConfig(topology="pvp", frame_sizes=[frame], vnf=vnf, vnf_ring=ring, trial_s=trial_s,
                    validation_s=validation_s, granularity_pct=granularity_pct)
    rf = ResultFile.create(out, cfg.to_dict(), host)
    Run(cfg, rf, lambda *_: None).execute()
    (s,) = rf.run.searches
    place = rf.run.place()["pvp"]
    return ((s.ndr.rate_pps if s.ndr else None) or 0.0, [b for b in place.get("vnf_boot_s", []) if b],
            place.get("vnf_accel", ""))


def vnf_bench(frames: list[int], trial_s: float, validation_s: float, granularity_pct: float, out_dir: Path,
              json_out: bool = False) -> Iterator[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    host = collect()
    if not json_out:
        yield (f"zeroloss bench --vnf: PVP with the VNF as a VM and as a host process, trial {trial_s:g} s, "
               f"validation {validation_s:g} s, granularity {granularity_pct:g} %; result files in {out_dir}")
    ndr: dict[tuple[int, str, int], float] = {}
    boots: list[float] = []
    accel = ""
    for i, frame in enumerate(frames):
        for vnf in (("process", "vm") if i % 2 == 0 else ("vm", "process")):
            rate, boot, acc = _search(out_dir / f"pvp-{frame}-{vnf}-1024.json", frame, vnf, 1024, trial_s,
                                      validation_s, granularity_pct, host)
            ndr[(frame, vnf, 1024)] = rate
            boots += boot
            accel = acc or accel
            if not json_out:
                yield f"  {frame} B {vnf:<7} ring 1024: NDR {rate:,.0f} pps"
        for ring in RINGS:
            if ring == 1024 or ring not in RING_SIZES:
                continue
            rate, boot, _ = _search(out_dir / f"pvp-{frame}-vm-{ring}.json", frame, "vm", ring, trial_s,
                                    validation_s, granularity_pct, host)
            ndr[(frame, "vm", ring)] = rate
            boots += boot
            if not json_out:
                yield f"  {frame} B vm      ring {ring}: NDR {rate:,.0f} pps"

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a and b else "-"

    rows = []
    for frame in frames:
        p, v = ndr[(frame, "process", 1024)], ndr[(frame, "vm", 1024)]
        v256 = ndr.get((frame, "vm", 256))
        rows.append([f"{frame}", f"{p:,.0f}", f"{v:,.0f}", ratio(v, p), f"{v256:,.0f}" if v256 else "-",
                     ratio(v, v256), "n/a"])
    if json_out:
        yield json.dumps({"ndr": [{"frame": f, "vnf": k, "ring": r, "ndr_pps": x} for (f, k, r), x in ndr.items()],
                          "vm_accel": accel, "boot_s": boots,
                          "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}, indent=2)
        return
    yield ""
    yield (f"PVP NDR (pps per direction); the VM under {accel or '?'}; guest boot "
           f"{statistics.mean(boots):.1f} s (min {min(boots):.1f}, max {max(boots):.1f}, {len(boots)} boots)"
           if boots else "PVP NDR (pps per direction)")
    yield table(["frame B", "process NDR", "VM NDR", "VM/process", "VM ring 256 NDR", "VM 1024/256",
                 "VM ring 4096"], rows)
    yield ("VM ring 4096: QEMU's virtio-net takes at most 1024 descriptors per queue (the process VNF's "
           "virtio-user does take 4096: zeroloss campaign vnf-ring)")
