"""Client of the DPDK telemetry socket (v2): /ethdev/stats, /ethdev/xstats and friends."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

from ..errors import ZeroLossError


class Telemetry:
    """One connection to a DPDK process's telemetry socket (SOCK_SEQPACKET, one JSON reply per query)."""

    def __init__(self, path: Path, timeout: float = 5.0):
        self.path = path
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.max_len = 16384
        self.info: dict = {}

    def connect(self, wait_s: float = 10.0) -> Telemetry:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.settimeout(self.timeout)
                s.connect(str(self.path))
                break
            except OSError as e:
                s.close()
                if time.monotonic() > deadline:
                    raise ZeroLossError(f"cannot reach DPDK telemetry at {self.path}: {e.strerror}",
                                        "is the DPDK process running with telemetry enabled?") from e
                time.sleep(0.1)
        self.sock = s
        self.info = json.loads(s.recv(65536).decode())
        self.max_len = int(self.info.get("max_output_len", self.max_len))
        return self

    def query(self, command: str) -> object:
        """Sends one command such as '/ethdev/stats,0' and returns its value."""
        if self.sock is None:
            self.connect()
        assert self.sock is not None
        self.sock.send(command.encode())
        reply = json.loads(self.sock.recv(max(self.max_len, 65536)).decode())
        key = command.split(",", 1)[0]
        return reply.get(key)

    def ethdev_list(self) -> list[int]:
        return list(self.query("/ethdev/list") or [])

    def ethdev_stats(self, port: int) -> dict:
        return dict(self.query(f"/ethdev/stats,{port}") or {})

    def ethdev_xstats(self, port: int) -> dict:
        return dict(self.query(f"/ethdev/xstats,{port}") or {})

    def close(self) -> None:
        if self.sock:
            self.sock.close()
            self.sock = None

    def __enter__(self) -> Telemetry:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()
