"""Host facts beyond the topology, read through a Root: the running kernel's release, the PCIe link of each NIC,
the CPU affinity of user processes, and per-CPU interrupt counts. Read leniently: a process that exits mid-read or a
link the kernel reports as 'Unknown' is skipped, never an error.

Sources: Documentation/ABI/testing/sysfs-bus-pci (current_link_speed/width, max_link_speed/width), proc(5)
(/proc/PID/stat field 9 flags, field 39 processor; /proc/PID/status Cpus_allowed_list), include/linux/sched.h
(PF_KTHREAD 0x00200000).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zeroloss.core.cpuset import parse_list

from .sysfs import Root

PF_KTHREAD = 0x00200000
# usable Gb/s per lane after line coding: 8b/10b up to 5 GT/s, 128b/130b from 8 GT/s (PCIe 3.0-5.0)
PCIE_LANE_GBPS = {2.5: 2.0, 5.0: 4.0, 8.0: 8.0 * 128 / 130, 16.0: 16.0 * 128 / 130, 32.0: 32.0 * 128 / 130}
PCIE_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5}


@dataclass(frozen=True)
class PcieLink:
    """The link of a PCI function's device as the kernel reports it (speed in GT/s per lane, width in lanes)."""
    speed_gts: float | None
    width: int | None
    max_speed_gts: float | None
    max_width: int | None

    @property
    def gbps(self) -> float | None:
        """Usable bandwidth per direction of the negotiated link, Gb/s (None when speed or width is unknown)."""
        return lane_gbps(self.speed_gts, self.width)

    @property
    def degraded(self) -> bool:
        """Negotiated below what both ends support (a x8 card in a x4 slot, a gen3 card trained at gen1)."""
        return bool((self.width and self.max_width and self.width < self.max_width)
                    or (self.speed_gts and self.max_speed_gts and self.speed_gts < self.max_speed_gts))

    def text(self, which: str = "current") -> str:
        speed, width = (self.speed_gts, self.width) if which == "current" else (self.max_speed_gts, self.max_width)
        gen = PCIE_GEN.get(speed or 0.0)
        return f"{f'gen{gen} ' if gen else ''}x{width or '?'} ({speed or '?'} GT/s)"


@dataclass(frozen=True)
class Proc:
    """A user process (kernel threads are left out) with the CPUs it may run on and the one it last ran on."""
    pid: int
    comm: str
    allowed: tuple[int, ...]  # /proc/PID/status Cpus_allowed_list
    last_cpu: int | None  # /proc/PID/stat field 39


def lane_gbps(speed_gts: float | None, width: int | None) -> float | None:
    if not speed_gts or not width:
        return None
    per_lane = PCIE_LANE_GBPS.get(speed_gts, speed_gts * 128 / 130 if speed_gts > 5 else speed_gts * 0.8)
    return per_lane * width


def parse_link_speed(text: str | None) -> float | None:
    """'8.0 GT/s PCIe' (Linux >= 5.x), '8 GT/s' (older), '2.5 GT/s' -> GT/s; 'Unknown' or missing -> None."""
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", text or "")
    return float(m.group(1)) if m else None


def parse_link_width(text: str | None) -> int | None:
    """'8' or 'x8' -> 8; '0', 'Unknown' or missing -> None."""
    m = re.fullmatch(r"\s*x?([0-9]{1,2})\s*", text or "")
    return int(m.group(1)) or None if m else None


def pcie_link(root: Root, pci: str) -> PcieLink | None:
    """The link of one PCI function, or None when sysfs does not say (a virtual NIC, an old kernel)."""
    base = f"sys/bus/pci/devices/{pci}"
    link = PcieLink(parse_link_speed(root.text(f"{base}/current_link_speed")),
                    parse_link_width(root.text(f"{base}/current_link_width")),
                    parse_link_speed(root.text(f"{base}/max_link_speed")),
                    parse_link_width(root.text(f"{base}/max_link_width")))
    return link if link.speed_gts or link.width else None


def kernel_release(root: Root) -> str:
    """'4.18.0-193.14.3.el8_2.x86_64' from proc/sys/kernel/osrelease, else proc/version; '' when neither is there."""
    release = (root.text("proc/sys/kernel/osrelease") or "").split()
    if release:
        return release[0]
    m = re.match(r"^Linux version (\S+)", root.text("proc/version") or "")
    return m.group(1) if m else ""


def kernel_version(release: str) -> tuple[int, int] | None:
    """'4.18.0-193.el8' -> (4, 18); None when the release does not start with MAJOR.MINOR."""
    m = re.match(r"^([0-9]+)\.([0-9]+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_stat(text: str) -> tuple[str, int, int | None] | None:
    """/proc/PID/stat -> (comm, flags, processor); None when it is cut short. comm may hold spaces and ')'."""
    head, sep, rest = text.rpartition(")")
    if not sep or "(" not in head:
        return None
    fields = rest.split()  # fields[0] is field 3 (state): field N is fields[N - 3]
    try:
        flags = int(fields[6])
        cpu = int(fields[36]) if len(fields) > 36 else None
    except (IndexError, ValueError):
        return None
    return head.partition("(")[2], flags, cpu


def processes(root: Root) -> list[Proc]:
    """User processes under proc/ with their allowed and last CPUs; kernel threads (PF_KTHREAD) left out."""
    out = []
    for entry in root.listdir("proc"):
        if not entry.isascii() or not entry.isdigit():
            continue
        stat = parse_stat(root.text(f"proc/{entry}/stat") or "")
        if stat is None or stat[1] & PF_KTHREAD:
            continue
        allowed = None
        for line in (root.text(f"proc/{entry}/status") or "").splitlines():
            key, _, value = line.partition(":")
            if key == "Cpus_allowed_list":
                try:
                    allowed = parse_list(value)
                except ValueError:
                    allowed = None
        if allowed is not None:
            out.append(Proc(int(entry), stat[0], allowed, stat[2]))
    return sorted(out, key=lambda p: p.pid)


def interrupt_counts(root: Root) -> dict[int, dict[int, int]]:
    """Device IRQs (numbered lines of /proc/interrupts) -> {cpu: count since boot} for every CPU with a count > 0."""
    lines = (root.text("proc/interrupts") or "").splitlines()
    if not lines:
        return {}
    cols = [int(h[3:]) for h in lines[0].split() if re.fullmatch(r"CPU[0-9]{1,5}", h)]
    out: dict[int, dict[int, int]] = {}
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not re.fullmatch(r"[0-9]{1,9}", head.strip()):
            continue
        counts = {}
        for cpu, field in zip(cols, rest.split(), strict=False):
            if not re.fullmatch(r"[0-9]{1,20}", field):
                break
            if int(field):
                counts[cpu] = int(field)
        out[int(head)] = counts
    return out
