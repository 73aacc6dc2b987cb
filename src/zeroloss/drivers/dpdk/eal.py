"""EAL command-line arguments and the per-process runtime directory."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

RUNTIME_ROOT = Path("/var/run/dpdk")


@dataclass(frozen=True)
class Eal:
    """EAL options of one DPDK process. Each process gets its own file prefix; with no PCI
    addresses the process is told --no-pci so it never touches the host's devices."""

    lcores: str
    file_prefix: str
    vdevs: tuple[str, ...] = ()
    pci: tuple[str, ...] = ()
    in_memory: bool = True
    main_lcore: int | None = None  # DPDK's default is the lowest lcore id, not the first listed
    extra: tuple[str, ...] = field(default=())

    def argv(self) -> list[str]:
        args = ["-l", self.lcores, "--file-prefix", self.file_prefix, "--log-level", "lib.eal:warning"]
        if self.main_lcore is not None:
            args += ["--main-lcore", str(self.main_lcore)]
        if self.in_memory:
            # no hugepage files left behind; one file per memory segment list keeps the
            # vhost-user memory table of virtio_user under its 8-region limit
            args += ["--in-memory", "--single-file-segments"]
        if self.pci:
            for addr in self.pci:
                args += ["-a", addr]
        else:
            args.append("--no-pci")
        for v in self.vdevs:
            args += ["--vdev", v]
        return args + list(self.extra)

    @property
    def runtime_dir(self) -> Path:
        return RUNTIME_ROOT / self.file_prefix

    @property
    def telemetry_socket(self) -> Path:
        return self.runtime_dir / "dpdk_telemetry.v2"

    def cleanup(self) -> None:
        """Removes the runtime directory the process left (only ours: named by our prefix)."""
        shutil.rmtree(self.runtime_dir, ignore_errors=True)
