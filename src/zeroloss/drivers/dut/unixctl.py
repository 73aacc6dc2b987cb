"""ovs-appctl without a process per call: the OVS project's own Python unixctl client (PyPI `ovs`),
one connection kept per daemon, each call bounded by a timeout."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

from ..proc import ComponentDied

CHECK_S = 0.25  # how often a call that has not returned asks the daemon's health

# the ovs library logs its connection troubles through `logging`; our errors say it in one line instead
for _name in ("unixctl_client", "stream", "jsonrpc", "poller", "reconnect", "fatal-signal"):
    _log = logging.getLogger(_name)
    _log.addHandler(logging.NullHandler())
    _log.propagate = False


class Unixctl:
    """A unixctl connection to one OVS daemon's control socket; reconnects after an error. check, when given, is
    the daemon's health: asked while a call waits, so that a stopped or dead daemon is named at once."""

    def __init__(self, path: Path, name: str = "ovs-vswitchd", check: Callable[[], None] | None = None):
        self.path = path
        self.name = name
        self.check = check
        self._client = None

    def call(self, command: str, *args: str, timeout: float = 30) -> str:
        """The daemon's reply to one command; ComponentDied when it does not answer within timeout."""
        import ovs.unixctl.client

        if self._client is None:
            err, client = ovs.unixctl.client.UnixctlClient.create(str(self.path))
            if err:
                raise ZeroLossError(f"cannot reach {self.name} at {self.path}: error {err}")
            self._client = client
        out: dict = {}

        def transact() -> None:
            try:
                out["reply"] = self._client.transact(command, list(args))
            except Exception as e:  # the library's assertions and socket errors, reported below
                out["error"] = e

        t = threading.Thread(target=transact, daemon=True)
        t.start()
        try:
            self._join(t, timeout)
        except BaseException:
            self._client = None  # the blocked call keeps its connection; a new call opens another
            raise
        if t.is_alive():
            self._client = None
            raise ComponentDied(f"{self.name} did not answer '{command}' in {timeout:.0f} s (socket {self.path})")
        if "error" in out:
            self.close()
            raise ZeroLossError(f"{self.name} '{command}' failed: {out['error']}")
        err, error, result = out["reply"]
        if err:
            self.close()
            raise ZeroLossError(f"lost the connection to {self.name} during '{command}' (error {err})")
        if error is not None:
            raise ZeroLossError(f"{self.name} {command} failed: {error.strip().splitlines()[0] if error else ''}")
        return result or ""

    def _join(self, t: threading.Thread, timeout: float) -> None:
        """Waits up to timeout for the call's thread, asking check every CHECK_S meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            t.join(max(0.0, min(CHECK_S, deadline - time.monotonic())))
            if not t.is_alive() or time.monotonic() >= deadline:
                return
            if self.check is not None:
                self.check()

    def close(self) -> None:
        """Closes the connection (a blocked call's is left to its thread)."""
        if self._client is not None:
            try:
                self._client.close()
            except Exception:
                pass
            self._client = None
