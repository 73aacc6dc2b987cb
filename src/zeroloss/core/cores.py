"""Cores a run's settings name, checked against this host before anything starts: a mask or lcore list naming a
core the host lacks would otherwise surface a minute later as a DPDK process that never came up."""

from __future__ import annotations

import os
from pathlib import Path

from .config import RunConfig, _shown
from .errors import ZeroLossError

# the settings that name host cores, in the order they are checked: OVS's masks, the lcore lists, testpmd's main
# lcore (a kind of DUT names more: an OVS bench's VM pins, targets/kinds/ovs)
CORE_KEYS = ("ovs_pmd_cpu_mask", "ovs_lcore_mask", "gen_lcores", "dut_lcores", "dut_main_lcore")


def check_cores(cfg: RunConfig, keys: tuple[str, ...] = CORE_KEYS, online: set[int] | None = None,
                usable: set[int] | None = None) -> None:
    """Refuses a CPU mask (ovs_pmd_cpu_mask, ovs_lcore_mask), lcore list (gen_lcores, dut_lcores: DPDK -l syntax
    such as 0,1 or 0-3) or dut_main_lcore that names a core this host does not have (online) or this process may
    not use (its CPU affinity), in one line. keys: the settings to check (the DUT kind's core_keys, which adds a
    VM's pins where one may run: targets/registry.check_cores). Checked before a run starts, never on reading a
    result: a file made on another host names that host's cores. online and usable default to this host's."""
    online = _online_cores() if online is None else online
    usable = os.sched_getaffinity(0) if usable is None else usable
    checks: list[tuple[str, str, list[tuple[int, int]]]] = []
    for key in keys:
        value = getattr(cfg, key)
        if key.endswith("_mask"):
            checks.append((key, value, [(b, b) for b in sorted(mask_set(value))]))  # RunConfig checked the hex
        elif isinstance(value, int):
            checks.append((key, str(value), [(value, value)]))
        else:
            checks.append((key, value, _core_ranges(key, value)))
    for key, text, ranges in checks:
        for lo, hi in ranges:
            core = next((c for c in range(lo, min(hi, lo + len(online) + 1) + 1) if c not in online), None)
            if core is not None:
                raise ZeroLossError(f"config: {key} {text} names core {core}; this host has cores "
                                    f"{_cores_text(online)}")
            core = next((c for c in range(lo, hi + 1) if c not in usable), None)
            if core is not None:
                raise ZeroLossError(f"config: {key} {text} names core {core}, which this process may not use; it may "
                                    f"use cores {_cores_text(usable)}", "use those, or widen zeroloss's CPU affinity "
                                                                        "(taskset, cgroup cpuset)")


def core_list(key: str, text: str) -> tuple[int, ...]:
    """A core list in DPDK -l syntax, expanded in its own order ('1,0' -> (1, 0): vCPU 0 on core 1)."""
    return tuple(c for lo, hi in _core_ranges(key, text) for c in range(lo, hi + 1))


def _core_ranges(key: str, text: str) -> list[tuple[int, int]]:
    """An lcore list in DPDK -l syntax ('0,1', '0-3', '1,4-5') as (first, last) ranges."""
    out = []
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        if not (lo.isdigit() and lo.isascii() and len(lo) < 10 and (not sep or hi.isdigit() and hi.isascii()
                                                                    and len(hi) < 10)):
            raise ZeroLossError(f"config: {key} {_shown(text)} is not a list of cores such as 0,1 or 0-3")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ZeroLossError(f"config: {key} {_shown(text)}: the range {item.strip()} runs backwards")
        out.append((first, last))
    return out


def _online_cores() -> set[int]:
    """The cores this host has online (/sys/devices/system/cpu/online), or 0..cpu_count-1."""
    try:
        text = Path("/sys/devices/system/cpu/online").read_text().strip()
        return {c for lo, hi in _core_ranges("online", text) for c in range(lo, hi + 1)}
    except (OSError, ZeroLossError):
        return set(range(os.cpu_count() or 1))


def _cores_text(cores: set[int]) -> str:
    from .cpuset import format_list

    return format_list(cores) or "none"


def lcore_set(key: str, text: str) -> set[int]:
    """The cores of an lcore list in DPDK -l syntax: '0,2-3' -> {0, 2, 3}."""
    return {c for first, last in _core_ranges(key, text) for c in range(first, last + 1)}


def mask_set(text: str) -> set[int]:
    """The cores of a hex CPU mask: '0x5' -> {0, 2}."""
    mask = int(text, 16)
    return {b for b in range(mask.bit_length()) if mask >> b & 1}
