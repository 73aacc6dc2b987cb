"""One persistent SSH session per lab host, running zeroloss's reader (agent.py) on the host's python3: a reading
is one request and one reply on that session, not a login (BRIEF: observe, never change)."""

from __future__ import annotations

import base64
import itertools
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from zeroloss.host.ssh import SshTarget, last_line, python_argv, sudo_hint, unreachable_hint

from ..proc import ComponentDied
from .replies import AgentReply, Ran

if TYPE_CHECKING:
    from .kube import KubeExecTarget

AGENT = Path(__file__).with_name("agent.py")
# the host's python3 reads one line (the agent, base64) and runs it; the rest of stdin is requests
BOOT = ("import base64,sys;src=base64.b64decode(sys.stdin.readline());sys.argv=['zl-agent'];"
        "exec(compile(src,'zl-agent','exec'),{'__name__':'__main__'})")


class SshLost(ComponentDied):
    """The SSH session to a lab host ended while zeroloss needed it: the trial in progress is not a result."""


class RemoteAgent:
    """The agent on one host over one `ssh` process, started on first use."""

    def __init__(self, target: SshTarget | KubeExecTarget, timeout: float = 30.0):
        self.target = target
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self._ids = itertools.count(1)
        self._buf = b""
        self.info: dict = {}
        self.requests = 0
        self.ended: SshLost | None = None  # how the session ended, once it has: later checks repeat it

    @property
    def name(self) -> str:
        return self.target.target

    def start(self) -> RemoteAgent:
        if self.proc is not None:
            return self
        self.ended = None
        try:
            self.proc = subprocess.Popen(self.target.argv(python_argv("-u", "-c", BOOT)), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError as e:
            if hasattr(self.target, "no_client"):  # another way in (drivers/lab/kube.py): its own tool
                raise SshLost(*self.target.no_client()) from e
            raise SshLost("cannot run ssh: OpenSSH's client is not installed", "run 'make setup'") from e
        os.set_blocking(self.proc.stdout.fileno(), False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self._send(base64.b64encode(AGENT.read_bytes()) + b"\n", connecting=True)
        self.info = self.call("hello", timeout=30, connecting=True)
        return self

    def _fault(self, connecting: bool) -> SshLost:
        if self.ended is None:
            self.ended = self._first_fault(connecting)
        return self.ended

    def _first_fault(self, connecting: bool) -> SshLost:
        err = b""
        if self.proc is not None:
            if hasattr(self.target, "fault"):  # kubectl prints its verdict after the stream ends: let it finish
                try:
                    self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    pass
            try:
                err = self.proc.stderr.read() or b""
            except (OSError, ValueError):
                pass
            rc = self.proc.poll()
        else:
            rc = None
        line = last_line(err)
        self.close()
        if hasattr(self.target, "fault"):  # another way in (drivers/lab/kube.py) explains its own tool's last words
            return SshLost(*self.target.fault(err, rc, connecting))
        if connecting:
            hint = sudo_hint(err)
            if hint:
                return SshLost(f"{self.name}: cannot become root: {line}", hint)
            if "python3" in line and ("not found" in line or "No such file" in line):
                return SshLost(f"{self.name} has no python3, which zeroloss's reader needs",
                               "install python3 on the host (the distribution's package)")
            return SshLost(f"cannot reach {self.name} over SSH: {line or f'ssh exited {rc}'}",
                           unreachable_hint(self.target.target, self.target.ssh_config))
        return SshLost(f"lost the SSH connection to {self.name}" + (f": {line}" if line else
                                                                   f" (ssh exited {rc})" if rc is not None else ""))

    def _send(self, data: bytes, connecting: bool = False) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._fault(connecting) from None

    def _line(self, deadline: float, connecting: bool) -> bytes:
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise SshLost(f"{self.name} did not answer in {self.timeout:.0f} s: the SSH session is stuck",
                              "is the host overloaded or the network down?")
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if r:
                chunk = self.proc.stdout.read()
                if not chunk:
                    raise self._fault(connecting)
                self._buf += chunk
            elif self.proc.poll() is not None:
                raise self._fault(connecting)
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def call(self, op: str, timeout: float | None = None, connecting: bool = False, **kw) -> object:
        """One request; its result. Raises SshLost when the session is gone, ZeroLossError for the agent's own
        faults."""
        if self.proc is None:
            self.start()
        rid = next(self._ids)
        self.requests += 1
        self._send(json.dumps({"id": rid, "op": op, **kw}).encode() + b"\n", connecting)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            line = self._line(deadline, connecting)
            try:
                reply = AgentReply.from_json(json.loads(line))
            except ValueError:
                continue  # e.g. a login banner on stdout
            if reply.id == rid:
                break
        if not reply.ok:
            raise SshLost(f"zeroloss's reader on {self.name} failed: {reply.error}")
        return reply.result

    def run(self, argv: list[str], env: dict | None = None, timeout: float = 30) -> Ran:
        return Ran.from_json(self.call("run", argv=argv, env=env or {}, timeout=timeout + 5))

    def batch(self, items: list[dict], timeout: float | None = None) -> list:
        return self.call("batch", items=items, timeout=timeout)

    def lost(self) -> SshLost:
        """The fault of a session found ended between requests (health checks)."""
        if self.ended is not None or hasattr(self.target, "fault"):
            return self._fault(connecting=False)
        return SshLost(f"lost the SSH connection to {self.name}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            p.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        for f in (p.stdout, p.stderr):
            try:
                f.close()
            except (OSError, ValueError):
                pass

    def __enter__(self) -> RemoteAgent:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
