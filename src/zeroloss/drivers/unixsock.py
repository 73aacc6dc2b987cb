"""One client for the Unix sockets the bench talks over (zlgen's control socket, DPDK telemetry, QEMU's QMP and
the guest's virtio-serial channels): connect with retry until a deadline, a timeout per call, a clean close, and
a one-line ZeroLossError naming the socket and the fix when it cannot be reached.

Stream sockets carry lines (readline); SOCK_SEQPACKET sockets carry messages (recv_message). Once connected,
a call that fails raises OSError as the socket does (TimeoutError when the peer does not answer in time,
PeerClosed when it closed the connection): each protocol client says what that means for its caller.
(drivers/lab/agent.py runs on a remote node with the standard library only: it keeps its own.)
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

CHECK_S = 0.25  # how often a client with a check asks it while it waits for a reply


class PeerClosed(ConnectionError):
    """The other end closed the connection (a read returned nothing)."""


class UnixClient:
    """One connection to a Unix socket: ``UnixClient(path, "zlgen's control socket", remedy).connect(10)``."""

    def __init__(self, path: Path | str, what: str, remedy: str, kind: int = socket.SOCK_STREAM,
                 timeout: float = 5.0, check: Callable[[], None] | None = None):
        self.path = str(path)
        self.what = what
        self.remedy = remedy
        self.kind = kind
        self.timeout = timeout
        self.check = check  # the server's health, called every CHECK_S while a reply is awaited (it raises)
        self.sock: socket.socket | None = None
        self._buf = b""

    @property
    def connected(self) -> bool:
        """Whether a connection is open."""
        return self.sock is not None

    def connect(self, wait_s: float = 0.0, alive: Callable[[], bool] | None = None,
                poll_s: float = 0.05) -> UnixClient:
        """Connects, trying again every poll_s until wait_s has passed or alive() says the server is gone."""
        self.close()
        deadline = time.monotonic() + wait_s
        while True:
            s = socket.socket(socket.AF_UNIX, self.kind)
            s.settimeout(self.timeout)
            try:
                s.connect(self.path)
            except OSError as e:
                s.close()
                if time.monotonic() >= deadline or (alive is not None and not alive()):
                    raise ZeroLossError(f"cannot reach {self.what} at {self.path}: {e.strerror or e}",
                                        self.remedy) from e
                time.sleep(poll_s)
                continue
            self.sock = s
            return self

    def _open(self) -> socket.socket:
        """The connected socket; a one-line error when there is none."""
        if self.sock is None:
            raise ZeroLossError(f"not connected to {self.what} at {self.path}", self.remedy)
        return self.sock

    def send(self, data: bytes) -> None:
        """Sends data: all of it on a stream, one message on SOCK_SEQPACKET."""
        s = self._open()
        if self.kind == socket.SOCK_SEQPACKET:
            s.send(data)
        else:
            s.sendall(data)

    def recv_message(self, max_len: int = 65536, timeout: float | None = None) -> bytes:
        """One message (SOCK_SEQPACKET) or whatever a stream has ready, waiting up to timeout (default: the
        client's)."""
        s = self._open()
        left = self._await(self.timeout if timeout is None else timeout)
        s.settimeout(left)
        try:
            data = s.recv(max_len)
        finally:
            s.settimeout(self.timeout)
        if not data:
            raise PeerClosed(f"{self.what} at {self.path} closed the connection")
        return data

    def readline(self, timeout: float | None = None) -> bytes:
        """The next line (without its newline), waiting at most timeout in all (default: the client's)."""
        s = self._open()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.what} at {self.path} did not answer in time")
                s.settimeout(self._await(left))
                chunk = s.recv(65536)
                if not chunk:
                    raise PeerClosed(f"{self.what} at {self.path} closed the connection")
                self._buf += chunk
        finally:
            if self.sock is not None:
                self.sock.settimeout(self.timeout)
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _await(self, timeout: float) -> float:
        """With a check: waits until the socket is readable, calling check every CHECK_S (TimeoutError after
        timeout). The time left of timeout, for the read that follows (at least a moment)."""
        if self.check is None:
            return timeout
        deadline = time.monotonic() + timeout
        while not select.select([self._open()], [], [], min(CHECK_S, max(0.0, deadline - time.monotonic())))[0]:
            self.check()
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.what} at {self.path} did not answer in time")
        return max(0.01, deadline - time.monotonic())

    def wait_readable(self, timeout: float) -> bool:
        """Whether a line or message is ready to read, waiting at most timeout for one."""
        return b"\n" in self._buf or bool(select.select([self._open()], [], [], timeout)[0])

    def close(self) -> None:
        """Closes the connection (and forgets any unread input); closing twice is harmless."""
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self._buf = b""

    def __enter__(self) -> UnixClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
