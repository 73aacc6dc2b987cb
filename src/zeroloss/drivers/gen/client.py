"""Client of zlgen's control socket: versioned, line-delimited JSON (gen/PROTOCOL.md)."""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.model import IntervalPage, Intervals, TrialResult
from zeroloss.core.stream import Stream

from ..proc import ComponentDied
from ..unixsock import PeerClosed, UnixClient
from .replies import (
    Configured,
    Hello,
    IntervalsReply,
    IntervalsRequest,
    Ports,
    Reply,
    ResultHead,
    ResultReply,
    Started,
    StartRequest,
)

PROTO = 1
WATCH_S = 1.0  # how often a watched trial checks the bench's processes
CONTROL_S = 5.0  # how long a request of a trial (start, the result after its end) may go unanswered


class ZlgenError(ZeroLossError):
    """zlgen refused a request; the message is zlgen's own."""


class ZlgenClient:
    """One connection to a running zlgen."""

    def __init__(self, path: Path | str, timeout: float = 30.0, guard: Callable[[], None] | None = None):
        self.path = str(path)
        self.timeout = timeout
        self.guard = guard  # zlgen's own health (Zlgen.check): a stopped or dead zlgen is named while awaited
        self._ids = itertools.count(1)
        self.conn = UnixClient(path, "zlgen's control socket", "is zlgen running? its log says why not",
                               timeout=timeout)

    @property
    def sock(self) -> socket.socket | None:
        """The open connection's socket (None when not connected)."""
        return self.conn.sock

    def connect(self, wait_s: float = 10.0) -> ZlgenClient:
        """Connects, waiting up to wait_s for the socket, and checks that zlgen speaks this protocol."""
        self.conn.connect(wait_s)
        hello = Hello.from_json(self.request("hello"))
        if hello.proto != PROTO:
            raise ZeroLossError(f"zlgen speaks protocol {hello.proto}, this zeroloss speaks {PROTO}",
                                "rebuild zlgen with 'make build'")
        return self

    def send_raw(self, line: bytes, watch: Callable[[], None] | None = None, timeout: float | None = None) -> dict:
        """Sends one raw line (tests use it for malformed input) and returns the parsed reply, waiting up to timeout
        (default: the client's). The client's guard and watch, when given, are called every WATCH_S while the
        reply is awaited; zlgen is not disturbed meanwhile (no extra request)."""
        if not self.conn.connected:
            raise ZeroLossError("not connected to zlgen")
        wait = self.timeout if timeout is None else timeout
        checks = [c for c in (self.guard, watch) if c is not None]
        try:
            self.conn.send(line + b"\n")
            deadline = time.monotonic() + wait
            try:
                while not self.conn.wait_readable(min(WATCH_S, max(0.0, deadline - time.monotonic()))):
                    for check in checks:
                        check()
                    if time.monotonic() >= deadline:
                        raise TimeoutError
            except BaseException:
                self.close()  # its reply is still due: the connection is out of step, never reuse it
                raise
            reply = self.conn.readline(max(0.0, deadline - time.monotonic()) + 0.1)
        except TimeoutError:
            raise
        except PeerClosed as e:
            raise ZeroLossError("zlgen closed the control connection") from e
        except OSError as e:  # zlgen died or closed the connection: no traceback, one line
            raise ZeroLossError(f"lost the control connection to zlgen: {e.strerror or e}") from e
        try:
            return json.loads(reply)
        except ValueError as e:
            raise ZeroLossError(f"zlgen sent a reply that is not JSON: {reply[:80]!r}") from e

    def request(self, cmd: str, timeout: float | None = None, watch: Callable[[], None] | None = None,
                **fields) -> dict:
        """Sends a command and returns the reply; raises ZlgenError when zlgen says ok: false."""
        rid = next(self._ids)
        msg = {"cmd": cmd, "id": rid, "proto": PROTO, **fields}
        wait = self.timeout if timeout is None else timeout
        try:
            reply = self.send_raw(json.dumps(msg).encode(), watch, wait)
        except TimeoutError as e:
            raise ComponentDied(f"zlgen did not answer '{cmd}' in {wait:.0f} s (control socket {self.path})") from e
        head = Reply.from_json(reply)
        if head.id != rid:
            raise ZeroLossError(f"zlgen answered request {head.id} to request {rid}")
        if not head.ok:
            raise ZlgenError(f"zlgen: {head.error}")
        return reply

    def hello(self) -> dict:
        return self.request("hello")

    def ports(self) -> list[dict]:
        return Ports.from_json(self.request("ports")).ports

    def configure(self, streams: list[Stream], idle_sleep_us: int | None = None) -> int:
        """Sets the streams of the next trials; the number zlgen configured."""
        sleep = {} if idle_sleep_us is None else {"idle_sleep_us": idle_sleep_us}
        return Configured.from_json(self.request("configure", streams=[s.to_wire() for s in streams], **sleep)).streams

    def start(self, duration_s: float | None = None, frames: int | None = None, drain_ms: int = 500,
              rate_pps: float | list[float] | None = None, trial: int | None = None,
              watch: Callable[[], None] | None = None, interval_ms: int | None = None,
              catchup_max: int | None = None) -> int:
        """Starts a trial; with interval_ms, zlgen counts each stream's frames per interval of their TX time
        (StreamResult.intervals, and live with intervals()); with catchup_max, no stream catches up more than that
        many frames after a pause (it restarts its schedule instead: gen/PROTOCOL.md)."""
        fields = StartRequest(drain_ms=drain_ms, catchup_max=catchup_max, interval_ms=interval_ms,
                              duration_s=duration_s, frames=frames, rate_pps=rate_pps, trial=trial).to_json()
        return Started.from_json(self.request("start", timeout=CONTROL_S, watch=watch, **fields)).trial

    def status(self) -> dict:
        return self.request("status")

    def stop(self) -> None:
        self.request("stop")

    def result(self, wait_s: float = 0.0, watch: Callable[[], None] | None = None,
               slack_s: float | None = None) -> TrialResult:
        """The last trial's result, zlgen waiting up to wait_s for it to end; its reply may take slack_s more
        (default: the client's timeout)."""
        slack = self.timeout if slack_s is None else slack_s
        reply = ResultReply.from_json(self.request("result", timeout=wait_s + slack, watch=watch, wait_s=wait_s))
        paged = ResultHead.from_json(reply.result).paged()
        result = TrialResult.from_dict(reply.result)
        if not paged:
            return result
        # too many intervals for one reply: zlgen sent their count, the lists come page by page
        page = self.intervals(0)
        streams = []
        for s in result.streams:
            got, n = page.streams[s.id], paged[s.id].count
            streams.append(replace(s, intervals=Intervals(ms=got.ms, tx=got.tx[:n], rx=got.rx[:n],
                                                          rx_unplaced=paged[s.id].rx_unplaced)))
        return replace(result, streams=tuple(streams))

    def intervals(self, from_: int = 0, stream: int | None = None) -> IntervalPage:
        """The trial's final intervals from interval from_ (every stream, or one), read page by page: during a
        trial those whose frames can no longer arrive (drain_ms after their end), after it all of them."""
        ask = IntervalsRequest(from_=from_, stream=stream)
        tx: dict[int, list[int]] = {}
        rx: dict[int, list[int]] = {}
        while True:
            reply = IntervalsReply.from_json(self.request("intervals", **ask.to_json()))
            for s in reply.streams:
                tx.setdefault(s.id, []).extend(s.tx)
                rx.setdefault(s.id, []).extend(s.rx)
            if reply.to >= reply.final or reply.to <= ask.from_:
                break
            ask = replace(ask, from_=reply.to)
        streams = {s.id: Intervals(ms=reply.ms, tx=tuple(tx[s.id]), rx=tuple(rx[s.id]), rx_unplaced=s.rx_unplaced)
                   for s in reply.streams}
        return IntervalPage(trial=reply.trial, ms=reply.ms, first=from_, end=reply.to, final=reply.final,
                            state=reply.state, streams=streams)

    def run_trial(self, duration_s: float | None = None, frames: int | None = None, drain_ms: int = 500,
                  rate_pps: float | list[float] | None = None, trial: int | None = None,
                  watch: Callable[[], None] | None = None, interval_ms: int | None = None,
                  catchup_max: int | None = None) -> TrialResult:
        """Starts a trial and waits for its final counters (after the drain). watch, when given, is called every
        WATCH_S while the trial runs (it raises to end the wait: a process of the bench died mid-trial). A trial
        of duration_s is answered within CONTROL_S of its end, or zlgen is not answering; one of frames may
        take a minute more (its duration depends on its rate)."""
        self.start(duration_s=duration_s, frames=frames, drain_ms=drain_ms, rate_pps=rate_pps, trial=trial,
                   watch=watch, interval_ms=interval_ms, catchup_max=catchup_max)
        end = drain_ms / 1000
        if duration_s is None or frames is not None:
            return self.result(wait_s=(duration_s or 0) + end + 60, watch=watch)
        return self.result(wait_s=duration_s + end + CONTROL_S / 2, watch=watch, slack_s=CONTROL_S / 2)

    def shutdown(self) -> None:
        try:
            self.request("shutdown", timeout=5)
        except (ZeroLossError, OSError):
            pass
        self.close()

    def close(self) -> None:
        """Closes the connection."""
        self.conn.close()
