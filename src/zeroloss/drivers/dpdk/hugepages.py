"""Hugepage availability, read from sysfs and /proc/mounts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

SYS_HUGEPAGES = Path("/sys/kernel/mm/hugepages")


@dataclass(frozen=True)
class HugepagePool:
    size_kb: int
    total: int
    free: int

    @property
    def free_mb(self) -> float:
        return self.free * self.size_kb / 1024


def pools(root: Path = SYS_HUGEPAGES) -> list[HugepagePool]:
    """Every hugepage size the kernel offers, with total and free page counts."""
    out = []
    for d in sorted(root.glob("hugepages-*kB")):
        size_kb = int(d.name.removeprefix("hugepages-").removesuffix("kB"))
        out.append(HugepagePool(size_kb, int((d / "nr_hugepages").read_text()),
                                int((d / "free_hugepages").read_text())))
    return out


def mounted(mounts: Path = Path("/proc/mounts")) -> bool:
    return any(line.split()[2] == "hugetlbfs" for line in mounts.read_text().splitlines()
               if len(line.split()) > 2)


def require(mb: float, root: Path = SYS_HUGEPAGES, mounts: Path = Path("/proc/mounts")) -> None:
    """Raises a ZeroLossError naming the remedy unless mb MiB of hugepages are free and mounted."""
    free = sum(p.free_mb for p in pools(root)) if root.exists() else 0.0
    if free < mb:
        raise ZeroLossError(
            f"only {free:.0f} MiB of hugepages are free, {mb:.0f} MiB are needed",
            "run 'make setup' (reserves 1024 x 2 MiB pages) or "
            "'echo 1024 > /proc/sys/vm/nr_hugepages', and stop other DPDK processes")
    if not mounted(mounts):
        raise ZeroLossError("no hugetlbfs is mounted",
                            "run 'make setup' or 'mount -t hugetlbfs nodev /dev/hugepages'")
