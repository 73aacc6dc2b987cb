"""Do the cores a run pins its busy-polling processes to run independently, or do they share a physical core?

Two hardware threads of one core (SMT siblings), or two virtual CPUs a hypervisor runs on one physical CPU,
split one core's throughput: a zero-loss search on them measures the sharing, not the data path. A guest
cannot see that in its CPU topology (sysfs reports what the hypervisor declares), so zeroloss measures it:
`zlcores` times each core alone and all together on an integer kernel; together/alone is about 1 on
separate cores and about 0.5 or less on shared ones. Our DPDK processes poll the same cores: the run probes with
them held still (targets/pollers.py), before each frame size and after a run of disturbed or generator-failed trials,
since a hypervisor may take a core away and give it back minutes later (runner.Run._probe_cores)."""

from __future__ import annotations

import json
import subprocess
import time

from zeroloss.core.errors import ZeroLossError

from ..proc import built

# together/alone below this on any core: the cores share a physical core. SMT siblings and time slicing both
# halve the kernel's throughput (0.51-0.53 measured for two workers on one core); separate cores read 0.95-1.09
# here, and 2 of 60 readings over 5 minutes 0.77-0.80, when the hypervisor held both vCPUs up in the together
# window. The median of three rounds per core, and a threshold between the two, keep those apart.
SHARED_BELOW = 0.65


def zlcores_binary() -> str:
    return built("zlcores")


def probe(cores: list[int], ms: int = 50, rounds: int = 3) -> dict:
    """zlcores' reading of these cores, with `shared` (any core's together/alone below SHARED_BELOW) and the
    time it was taken. ZeroLossError names the fault in one line."""
    argv = [zlcores_binary(), "--cores", ",".join(map(str, cores)), "--ms", str(ms), "--rounds", str(rounds)]
    # every round times each core alone and all together, each after a 20 ms start
    timeout = 5 + rounds * (len(cores) + 1) * (ms + 20) / 1e3 * 3
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ZeroLossError(f"the core probe on cores {cores} did not finish in {timeout:.0f} s") from None
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no message"])[0]
        raise ZeroLossError(f"the core probe on cores {cores} failed: {last}")
    try:
        out = json.loads(r.stdout)
        ratios = [float(x) for x in out["ratio"]]
    except (ValueError, KeyError, TypeError):
        raise ZeroLossError(f"the core probe printed no reading: {r.stdout.strip()[:80]!r}") from None
    return {**out, "shared": shared(ratios), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}


def shared(ratios: list[float]) -> bool:
    """Whether a probe's together/alone ratios say the cores share a physical core."""
    return bool(ratios) and min(ratios) < SHARED_BELOW


def describe(reading: dict) -> str:
    """One line for progress and warnings: 'cores 0,1: together 0.99/1.00 of alone (independent)'."""
    ratios = "/".join(f"{x:.2f}" for x in reading["ratio"])
    verdict = "shared: they split one physical core" if reading["shared"] else "independent"
    return f"cores {','.join(map(str, reading['cores']))}: together {ratios} of alone ({verdict})"
