"""dpdk-testpmd as a DUT or reference tool, driven through its interactive prompt."""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError

from ..proc import ManagedProcess, freeze
from .eal import Eal
from .telemetry import Telemetry
from .vnf import Placement, Vnf

FORWARD_MODES = ("io", "mac", "macswap", "rxonly", "txonly", "5tuple", "icmpecho")


def testpmd_binary() -> str:
    path = shutil.which("dpdk-testpmd")
    if path is None:
        raise ZeroLossError("dpdk-testpmd is not installed", "run 'make setup' (Debian package dpdk)")
    return path


@dataclass(frozen=True)
class TestPmdConfig:
    __test__ = False  # not a pytest test class

    eal: Eal
    forward_mode: str = "io"
    rxq: int = 1
    txq: int = 1
    rxd: int = 1024
    txd: int = 1024
    burst: int = 32
    max_frame: int = 1518  # bytes with FCS
    tx_pkt_len: int = 64   # txonly: frame size with FCS
    nb_mbufs: int = 8192
    set_mtu: bool = True   # False for devices that carry jumbo frames but refuse a jumbo MTU (memif)

    def argv(self) -> list[str]:
        return [testpmd_binary(), *self.eal.argv(), "--", *self.app_args()]

    def app_args(self) -> list[str]:
        """testpmd's own arguments (after EAL's "--"): also what the VM guest's testpmd is given."""
        if self.forward_mode not in FORWARD_MODES:
            raise ZeroLossError(f"unknown testpmd forward mode '{self.forward_mode}'",
                                f"use one of {', '.join(FORWARD_MODES)}")
        mbuf = max(2048, (self.max_frame + 128 + 63) // 64 * 64)
        args = ["-i", "--auto-start", f"--forward-mode={self.forward_mode}",
                f"--rxq={self.rxq}", f"--txq={self.txq}", f"--rxd={self.rxd}", f"--txd={self.txd}",
                f"--burst={self.burst}", f"--total-num-mbufs={self.nb_mbufs}",
                # --mbuf-size must come before --txpkts, or testpmd sends 64 B silently
                f"--mbuf-size={mbuf}"]
        if self.max_frame > 1518 and self.set_mtu:
            args.append(f"--max-pkt-len={self.max_frame - 4}")
        if self.forward_mode == "txonly":
            args.append(f"--txpkts={self.tx_pkt_len - 4}")
        return args


class TestPmd(Vnf):
    """A running testpmd; ``with TestPmd(cfg, log) as t:`` starts it and stops it on exit. As a VNF it is the
    process kind (dpdk.vnf.Vnf)."""

    __test__ = False

    def __init__(self, cfg: TestPmdConfig, log_path: Path, start_timeout: float = 30.0):
        self.cfg = cfg
        self.start_timeout = start_timeout
        self.proc = ManagedProcess("dpdk-testpmd", cfg.argv(), log_path, stdin_pipe=True)

    def start(self, timeout: float | None = None) -> Self:
        """Starts testpmd and waits up to timeout (default start_timeout) for its prompt with every port up."""
        self.proc.start()
        try:
            self.proc.wait_for_log("testpmd>", self.start_timeout if timeout is None else timeout)
            log = self.proc.log_path.read_text(errors="replace")
            if "Not all ports were started" in log or "Fail to configure port" in log:
                raise ZeroLossError(f"dpdk-testpmd could not start its ports: {self.proc.reason()} "
                                    f"(log: {self.proc.log_path})")
        except BaseException:
            self.stop()
            raise
        return self

    def command(self, line: str) -> None:
        """Types one command at the testpmd prompt (no reply is read: use telemetry for counters)."""
        self.proc.send(line)

    def pause(self) -> None:
        """Freezes the whole process (SIGSTOP): frames wait in its RX rings, nothing is flushed. Held on purpose,
        it is not a stopped component to its health check until resume."""
        if self.proc.alive():
            self.proc.held = True
            freeze(self.proc.pid)

    def resume(self) -> None:
        """Lets a paused testpmd run again (SIGCONT)."""
        if self.proc.alive():
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.held = False

    def telemetry(self, timeout: float = 5.0) -> Telemetry:
        """A new connection to its DPDK telemetry socket, waiting up to timeout for it; while a reply is awaited
        its health is checked (a stopped testpmd is named at once, not after the timeout)."""
        return Telemetry(self.cfg.eal.telemetry_socket, timeout=timeout, check=self.health).connect(wait_s=timeout)

    def placement(self) -> Placement:
        """A host process on its EAL lcores."""
        return Placement(kind="process", cpus=parse_list(self.cfg.eal.lcores))

    def stop(self) -> None:
        """Asks testpmd to quit (resumed first: a paused or stopped testpmd cannot), then stops the process."""
        self.close_stats()
        if self.proc.thaw():
            try:
                self.proc.send("quit")
                self.proc.proc.wait(10)
            except Exception:
                pass
        self.proc.stop()
        self.cfg.eal.cleanup()
