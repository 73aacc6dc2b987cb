"""Starting and stopping zlgen: where the binary is, its arguments, its lifetime."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import MAX_FRAME, MIN_FRAME

from ..dpdk.eal import Eal
from ..proc import ManagedProcess, built, check_alive
from .client import ZlgenClient


def zlgen_binary() -> str:
    """$ZEROLOSS_ZLGEN, else the repository's build (editable installs), else zlgen on PATH."""
    env = os.environ.get("ZEROLOSS_ZLGEN")
    if env:
        if not os.access(env, os.X_OK):
            raise ZeroLossError(f"ZEROLOSS_ZLGEN={env} is not an executable file")
        return env
    return built("zlgen")


@dataclass(frozen=True)
class ZlgenConfig:
    eal: Eal
    ctl_path: Path
    rxq: int = 1
    txq: int = 1
    rxd: int = 1024
    txd: int = 1024
    max_frame: int = 1518
    idle_sleep_us: int = 0
    mbufs: int = 0
    gap_us: int = 50  # pacing: lateness after which the schedule restarts instead of catching up
    hotplug: tuple[str, ...] = ()  # devices probed after the EAL's, in order (both ends of a vhost-user wire)

    def argv(self) -> list[str]:
        if not MIN_FRAME <= self.max_frame <= MAX_FRAME:
            raise ZeroLossError(f"largest frame {self.max_frame} B is outside {MIN_FRAME}..{MAX_FRAME} B")
        args = [zlgen_binary(), *self.eal.argv(), "--", "--ctl", str(self.ctl_path),
                "--rxq", str(self.rxq), "--txq", str(self.txq),
                "--rxd", str(self.rxd), "--txd", str(self.txd),
                "--max-frame", str(self.max_frame), "--idle-sleep-us", str(self.idle_sleep_us),
                "--gap-us", str(self.gap_us)]
        if self.mbufs:
            args += ["--mbufs", str(self.mbufs)]
        for dev in self.hotplug:
            args += ["--hotplug", dev]
        return args


class Zlgen:
    """A running zlgen and a connected client: ``with Zlgen(cfg, log) as g: g.client.run_trial(...)``."""

    def __init__(self, cfg: ZlgenConfig, log_path: Path):
        self.cfg = cfg
        self.proc = ManagedProcess("zlgen", cfg.argv(), log_path)
        self.client = ZlgenClient(cfg.ctl_path, guard=self.check)

    def start(self, timeout: float = 30.0) -> Zlgen:
        """Starts zlgen and connects; its health is asked while any request awaits its reply."""
        self.client.guard = self.check
        self.proc.start()
        try:
            self.proc.wait_for_log("zlgen: ready", timeout)
            self.client.connect()
        except BaseException:
            self.stop()
            raise
        return self

    def check(self) -> None:
        """Raises ComponentDied when zlgen is no longer running or is stopped."""
        check_alive([self.proc])

    def stop(self) -> int | None:
        """Asks zlgen to shut down (ports stopped, hugepages freed), let run again first if it was stopped;
        signals it if it does not."""
        self.client.guard = None  # it is being stopped: its exit is no fault
        if self.proc.thaw() and self.client.sock is not None:
            self.client.shutdown()
            try:
                self.proc.proc.wait(10)
            except Exception:
                pass
        self.client.close()
        code = self.proc.stop()
        self.cfg.eal.cleanup()
        return code

    def __enter__(self) -> Zlgen:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
