"""The one interface of a VNF on the bench, whatever runs it: testpmd as a host process (dpdk.testpmd.TestPmd) or
inside a QEMU guest (vnf.vm.GuestVm). Like testpmd's table of forwarding engines, the bench holds a list of Vnf and
never asks which kind it has: forward mode, port counters, health, placement, start and stop are the same calls."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Self

from zeroloss.core.errors import ZeroLossError

from ..proc import ManagedProcess, check_alive
from .telemetry import EthdevTelemetry


@dataclass(frozen=True)
class Placement:
    """What a VNF runs on: a host process on DPDK lcores, or a VM whose vCPUs and emulator threads are pinned."""

    kind: str                       # process | container | vm
    cpus: tuple[int, ...]           # the host CPUs it runs on
    domain_xml: str | None = None   # vm: the domain XML QEMU was started from
    boot_s: float | None = None     # vm: seconds from QEMU's start to the guest testpmd's prompt; container: from
                                    # podman's start to the container testpmd's prompt
    manifest: str | None = None     # container started by podman kube play: the Pod manifest (JSON)


class Vnf(ABC):
    """A running VNF: ``with vnf:`` starts it and stops it however the block ends."""

    proc: ManagedProcess            # the host process: testpmd itself, or QEMU
    settle_s: float = 0.05          # how long a new forward mode takes to apply
    _stats: EthdevTelemetry | None = None

    @abstractmethod
    def start(self) -> Self:
        """Starts it and returns once its testpmd forwards; stops what it started when it cannot."""

    @abstractmethod
    def stop(self) -> None:
        """Stops it, also when it is paused or half started."""

    @abstractmethod
    def command(self, line: str) -> None:
        """Types one command at its testpmd's prompt."""

    @abstractmethod
    def pause(self) -> None:
        """Freezes it: frames wait in its RX rings, nothing is forwarded or flushed."""

    @abstractmethod
    def resume(self) -> None:
        """Lets a paused VNF run again."""

    @abstractmethod
    def telemetry(self, timeout: float = 1.0) -> EthdevTelemetry:
        """A new connection to its testpmd's DPDK telemetry."""

    @abstractmethod
    def placement(self) -> Placement:
        """What it runs on."""

    def set_forward_mode(self, mode: str) -> None:
        """Switches its testpmd's forwarding engine (io, mac, rxonly, ...)."""
        self.command("stop")
        self.command(f"set fwd {mode}")
        self.command("start")
        time.sleep(self.settle_s)

    def port_stats(self, ports: tuple[int, ...] = (0, 1), timeout: float = 1.0) -> list[dict]:
        """The ethdev counters of its ports over a telemetry connection kept between readings; when it does not
        answer (stopped, paused) the connection is dropped and ZeroLossError or OSError raised."""
        try:
            if self._stats is None:
                self._stats = self.telemetry(timeout)
            return [self._stats.ethdev_stats(p) for p in ports]
        except (ZeroLossError, OSError, ValueError):  # TimeoutError is an OSError; a torn reply a ValueError
            self.close_stats()
            raise

    def close_stats(self) -> None:
        """Closes the telemetry connection port_stats keeps."""
        if self._stats is not None:
            self._stats.close()
            self._stats = None

    def health(self) -> None:
        """Raises ComponentDied when its process is no longer running or is stopped (SIGSTOP, a debugger)."""
        check_alive([self.proc])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
