"""Host metadata recorded with every result: what ran where (read from /proc, /sys and uname)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path


def _read(path: str, default: str = "") -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _os_name() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def _pkg_version(name: str) -> str:
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def collect() -> dict:
    """Facts that identify the host and that change results when they change."""
    mem_kb = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    hp = {}
    for d in sorted(Path("/sys/kernel/mm/hugepages").glob("hugepages-*")):
        hp[d.name.removeprefix("hugepages-")] = int(_read(str(d / "nr_hugepages"), "0"))
    return {
        "hostname": socket.gethostname(),
        "machine_id": _read("/etc/machine-id"),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "numa_nodes": len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))),
        "memory_mib": mem_kb // 1024,
        "hugepages": hp,
        "kernel": platform.release(),
        "os": _os_name(),
        "cmdline": _read("/proc/cmdline"),
        "isolated_cpus": _read("/sys/devices/system/cpu/isolated"),
        "dpdk_package": _pkg_version("dpdk"),
        "python": platform.python_version(),
    }
