"""Client of the DPDK telemetry socket (v2): /ethdev/stats and friends; EthdevTelemetry is what the bench reads of
any DPDK process's telemetry, here through the socket itself, for a VM through the guest's relay (vnf.vm)."""

from __future__ import annotations

import json
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Self

from ..unixsock import UnixClient


def reply_value(reply: dict, command: str) -> object:
    """The value of a telemetry reply: it is keyed by the command without its parameters."""
    return reply.get(command.split(",", 1)[0])


class EthdevTelemetry(ABC):
    """A DPDK process's telemetry over one Unix-socket connection (self.conn), queried one command at a time."""

    def __init__(self, conn: UnixClient):
        self.conn = conn

    @property
    def path(self) -> Path:
        """The socket it talks to."""
        return Path(self.conn.path)

    @abstractmethod
    def connect(self, wait_s: float = 10.0) -> Self:
        """Connects, waiting up to wait_s for the socket to appear."""

    @abstractmethod
    def query(self, command: str) -> object:
        """Sends one command such as '/ethdev/stats,0' and returns its value."""

    def ethdev_stats(self, port: int) -> dict:
        """The ethdev counters of one port (ipackets, opackets, imissed, ...)."""
        return dict(self.query(f"/ethdev/stats,{port}") or {})

    def close(self) -> None:
        """Closes the connection."""
        self.conn.close()

    def __enter__(self) -> Self:
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()


class Telemetry(EthdevTelemetry):
    """One connection to a DPDK process's telemetry socket (SOCK_SEQPACKET, one JSON reply per query); check, when
    given, is the process's health, asked while a reply is awaited (a stopped process is named, not waited for)."""

    def __init__(self, path: Path, timeout: float = 5.0, check: Callable[[], None] | None = None):
        super().__init__(UnixClient(path, "DPDK telemetry", "is the DPDK process running with telemetry enabled?",
                                    socket.SOCK_SEQPACKET, timeout, check))
        self.max_len = 16384
        self.info: dict = {}

    def connect(self, wait_s: float = 10.0) -> Self:
        """Connects and reads the greeting (the process's pid, version and largest reply)."""
        self.conn.connect(wait_s, poll_s=0.1)
        self.info = json.loads(self.conn.recv_message(65536).decode())
        self.max_len = int(self.info.get("max_output_len", self.max_len))
        return self

    def query(self, command: str) -> object:
        """Sends one command such as '/ethdev/stats,0' and returns its value."""
        if not self.conn.connected:
            self.connect()
        self.conn.send(command.encode())
        return reply_value(json.loads(self.conn.recv_message(max(self.max_len, 65536)).decode()), command)
