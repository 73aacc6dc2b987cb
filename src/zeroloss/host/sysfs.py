"""Every host read goes through a Root: '/' on a live host, a captured tree (tests/fixtures/host/NAME) in tests.

Paths are relative to the root ('sys/class/net'); symlinks are followed but never out of the root, so a
fixture tree with relative sysfs links behaves like the real /sys.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from zeroloss.core.cpuset import parse_list, shown
from zeroloss.core.errors import ZeroLossError


class Root:
    """Read-only access to sysfs/procfs files under a root directory; missing files read as None."""

    def __init__(self, path: str | os.PathLike = "/"):
        self.path = Path(path)
        if not self.path.is_dir():
            raise ZeroLossError(f"host root {self.path} is not a directory",
                                "give --root a captured tree such as tests/fixtures/host/r740xd, or /")
        if not (self.path / "sys").is_dir() and not (self.path / "proc").is_dir():
            raise ZeroLossError(f"host root {self.path} has neither sys/ nor proc/",
                                "point --root at the directory that holds sys/ and proc/")
        self.reads: list[str] | None = None  # set to a list to record every path read (fixture capture)

    @property
    def live(self) -> bool:
        return self.path.resolve() == Path("/")

    def _note(self, rel: str) -> None:
        if self.reads is not None:
            self.reads.append(rel)

    def text(self, rel: str) -> str | None:
        """The stripped content of a file, or None when it is missing or unreadable."""
        self._note(rel)
        try:
            return (self.path / rel).read_text(errors="replace").strip()
        except OSError:
            return None

    def raw(self, rel: str) -> bytes | None:
        self._note(rel)
        try:
            return (self.path / rel).read_bytes()
        except OSError:
            return None

    def integer(self, rel: str) -> int | None:
        """A file holding one whole number, or None when it is missing; ZeroLossError when it holds something else."""
        value = self.text(rel)
        if value is None:
            return None
        if not re.fullmatch(r"-?[0-9]{1,20}", value):
            raise self.fault(rel, f"holds {shown(value)}, not a whole number")
        return int(value)

    def cpus(self, rel: str, required: bool = False) -> tuple[int, ...] | None:
        """A kernel CPU list ('0-3,8'), or None when the file is missing; ZeroLossError when it is not a CPU list
        (or is empty though required: the kernel always names at least one CPU there)."""
        value = self.text(rel)
        if value is None:
            return None
        try:
            cpus = parse_list(value)
        except ValueError as e:
            raise self.fault(rel, str(e)) from None
        if required and not cpus:
            raise self.fault(rel, "is empty, the kernel always names at least one CPU there")
        return cpus

    def fault(self, rel: str, what: str) -> ZeroLossError:
        """The error for a file that the kernel would never write so: a damaged or hand-edited capture."""
        return ZeroLossError(f"{self.path / rel}: {what}",
                             None if self.live else "recapture the host or fix the file in the captured tree")

    def listdir(self, rel: str) -> list[str]:
        """Sorted entry names of a directory ([] when missing)."""
        self._note(rel + "/")
        try:
            return sorted(os.listdir(self.path / rel))
        except OSError:
            return []

    def exists(self, rel: str) -> bool:
        self._note(rel)
        return os.path.lexists(self.path / rel)

    def resolve(self, rel: str) -> str | None:
        """The path of rel inside the root after following symlinks, or None if it leaves the root or is missing."""
        self._note(rel)
        base = self.path.resolve()
        try:
            target = (self.path / rel).resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        try:
            return str(target.relative_to(base))
        except ValueError:
            return None

    def link_name(self, rel: str) -> str | None:
        """The last component of a symlink's target ('driver' -> 'i40e'), or None if rel is not a link."""
        self._note(rel)
        try:
            return os.path.basename(os.readlink(self.path / rel))
        except OSError:
            return None
