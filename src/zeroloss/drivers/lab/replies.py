"""The lab agent's replies (agent.py) as records (core.codec), read once where they arrive: the envelope of every
reply (remote.py), a command's or an ovs-appctl command's outcome (ops run and unixctl), a VNF's ethdev counters
(op telemetry)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from zeroloss.core.codec import Json, JsonObject, Record


@dataclass(frozen=True, kw_only=True)
class AgentReply(Record):
    """One line the agent wrote: the request's id, whether it was served, its result or the agent's fault."""

    id: int | None = None
    ok: bool = False
    result: Json = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Ran(Record):
    """A command run on the node (op run) or an ovs-appctl command (op unixctl): its exit status, output and errors."""

    rc: int = 0
    out: str = ""
    err: str = ""

    def why(self) -> str | int:
        """The last line of its errors, else its exit status (how a failed command is named in one line)."""
        lines = (self.err or "").strip().splitlines()
        return lines[-1] if lines else self.rc


def ran(replies: Iterable[Json]) -> list[Ran]:
    """The replies of a batch of run and unixctl requests."""
    return [Ran.from_json(r) for r in replies]


@dataclass(frozen=True, kw_only=True)
class EthdevReply(Record):
    """A VNF's telemetry reply to /ethdev/stats of its ports 0 and 1 (agent op telemetry), or the agent's fault."""

    error: Json = None
    port0: Json = field(default=None, metadata={"key": "/ethdev/stats,0"})
    port1: Json = field(default=None, metadata={"key": "/ethdev/stats,1"})

    def rows(self) -> tuple[JsonObject, JsonObject] | None:
        """The two ports' counters; None when the socket did not answer or a port gave none."""
        if "error" in (self.keys or ()) or not isinstance(self.port0, dict) or not isinstance(self.port1, dict):
            return None
        return self.port0, self.port1
