"""Processes zeroloss starts: argument lists, logs in files, stopped by PID on exit or error."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import IO

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import open_log

from .session import record_child

PR_SET_PDEATHSIG = 1
STOPPED = ("T", "t")   # /proc/PID/stat states: stopped by a signal (SIGSTOP, SIGTSTP), held by a debugger
KILLED_S = 5.0         # how long a SIGKILLed process may take to be reaped (a debugger's is reaped by it)
CONFIRM_S = 0.15       # a process is stopped when it is still stopped this long after (a passing ptrace is not)


def _die_with_parent(parent: int, sig: int = signal.SIGKILL):
    """preexec_fn: the child is killed when zeroloss dies, even by kill -9 (prctl PR_SET_PDEATHSIG), so that
    no generator, DUT or switch keeps polling a core and holding hugepages after us. A client that must clean up
    what it runs elsewhere (podman run: the container is conmon's child, not its own) gets SIGTERM instead."""
    libc = ctypes.CDLL(None, use_errno=True)

    def setup() -> None:
        libc.prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
    return setup


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def proc_state(pid: int) -> str | None:
    """The state letter of /proc/PID/stat (R, S, D, T, t, Z, ...); None when there is no such process."""
    return proc_state_of(Path(f"/proc/{pid}/stat"))


def freeze(pid: int, timeout: float = 5.0) -> None:
    """SIGSTOP, and back once every thread of the process is stopped (SIGSTOP lands asynchronously)."""
    os.kill(pid, signal.SIGSTOP)
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            states = [proc_state_of(t / "stat") for t in tasks.iterdir()]
        except OSError:
            return  # gone
        if all(st in STOPPED for st in states):
            return
        time.sleep(0.01)


def proc_state_of(stat: Path) -> str | None:
    try:
        fields = stat.read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None
    return fields[0] if fields else None


class ComponentDied(ZeroLossError):
    """A process zeroloss started died or exited while it was needed: the run cannot go on, and its numbers
    from that moment on would describe a broken path, not the DUT."""


def check_alive(procs: list[ManagedProcess]) -> None:
    """Raises ComponentDied naming the first of procs that is no longer running."""
    for p in procs:
        why = p.died()
        if why:
            raise ComponentDied(why)


class ManagedProcess:
    """A child process with an owner: ``with ManagedProcess(...) as p:`` stops it however the block ends."""

    def __init__(self, name: str, argv: list[str], log_path: Path, stdin_pipe: bool = False,
                 env: dict[str, str] | None = None, death_signal: int = signal.SIGKILL):
        self.name = name
        self.death_signal = death_signal
        self.env = {**os.environ, **env} if env else None
        self.argv = argv
        self.log_path = log_path
        self.stdin_pipe = stdin_pipe
        self.proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self.held = False  # stopped on purpose by its owner (TestPmd.pause): not a fault while held

    def start(self) -> ManagedProcess:
        self._log = open_log(self.log_path)
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE if self.stdin_pipe else subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us, we stop the child in order
                env=self.env,
                preexec_fn=_die_with_parent(os.getpid(), self.death_signal),
            )
        except OSError as e:
            self._log.close()
            raise ZeroLossError(f"cannot start {self.name} ({self.argv[0]}): {e.strerror}",
                                "run 'make setup' to install and build everything") from e
        record_child(self.pidfile, self.proc.pid, self.name)
        return self

    @property
    def pidfile(self) -> Path:
        return self.log_path.with_name(self.log_path.name + ".pid")

    def died(self) -> str | None:
        """None while the process runs (or was never started); else how it ended, or that it is stopped (a
        stopped process forwards and answers nothing: as good as dead), and its log's last line, in one line,
        for an error that names it."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            state = self.stopped()
            if state is None:
                return None
            how = f"is stopped (SIGSTOP or a debugger): state {state}"
        else:
            code = self.proc.returncode
            how = f"was killed by {signal_name(code)}" if code < 0 else f"exited with code {code}"
        return (f"{self.name} (pid {self.proc.pid}) {how}; its log's last line: '{self.last_line()}' "
                f"(log: {self.log_path})")

    def stopped(self, confirm_s: float = CONFIRM_S) -> str | None:
        """Its state letter (T or t) when it runs but is stopped, and still is confirm_s later (a debugger or
        profiler that attaches for a moment is not a fault); None otherwise, and while its owner holds it."""
        if self.held or not self.alive():
            return None
        if proc_state(self.proc.pid) not in STOPPED:
            return None
        if confirm_s:
            time.sleep(confirm_s)
        state = proc_state(self.proc.pid)
        return state if state in STOPPED and not self.held and self.alive() else None

    def thaw(self) -> bool:
        """Lets it run again if it is stopped (SIGCONT), so that it can be asked to quit; whether it now runs.
        False when it is gone or stays stopped (held by a debugger: only SIGKILL ends it then)."""
        if not self.alive():
            return False
        if proc_state(self.proc.pid) not in STOPPED:
            return True
        try:
            os.kill(self.proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            return False
        self.held = False
        deadline = time.monotonic() + CONFIRM_S
        while time.monotonic() < deadline:
            if proc_state(self.proc.pid) not in STOPPED:
                return self.alive()
            time.sleep(0.01)
        return False

    def last_line(self) -> str:
        lines = [ln.strip() for ln in self.log_tail(20).splitlines() if ln.strip()]
        return lines[-1][:200] if lines else "(empty)"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def send(self, line: str) -> None:
        """Writes a line to the process's standard input (interactive tools such as testpmd)."""
        if self.proc is None or self.proc.stdin is None or not self.alive():
            raise ZeroLossError(f"{self.name} is not running: {self.reason()} (log: {self.log_path})")
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def wait_for_log(self, text: str, timeout: float) -> None:
        """Waits until text appears in the log; raises with the log's tail if the process dies first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if text in self.log_path.read_text(errors="replace"):
                    return
            except OSError:
                pass
            if not self.alive():
                raise ZeroLossError(f"{self.name} exited (code {self.proc.returncode}) before it was ready: "
                                    f"{self.reason()} (log: {self.log_path})")
            time.sleep(0.05)
        raise ZeroLossError(f"{self.name} was not ready after {timeout:.0f} s: {self.reason()} "
                            f"(log: {self.log_path})")

    def reason(self) -> str:
        """The log line that most likely says what went wrong (last error-like line, else the last)."""
        text = self.log_tail(200)
        if "\nUsage:" in "\n" + text:  # DPDK prints its usage after the fault: the fault is above it
            text = ("\n" + text).split("\nUsage:", 1)[0]
        lines = [ln.strip() for ln in text.splitlines()
                 if ln.strip() and not ln[0].isspace() and "exiting with code" not in ln]
        for ln in reversed(lines):
            low = ln.lower()
            if any(w in low for w in ("error", "fail", "cannot", "invalid", "must", "no ports", "not ")):
                return ln
        return lines[-1] if lines else "no output"

    def stop(self, timeout: float = 10.0) -> int | None:
        """Stops the process: SIGTERM (SIGINT for DPDK apps is the same) and SIGCONT (a stopped process acts on
        SIGTERM only once it runs), then SIGKILL after timeout, or at once when it stays stopped (a debugger)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass
            for sig in (signal.SIGTERM, signal.SIGCONT):
                try:
                    os.kill(self.proc.pid, sig)
                except ProcessLookupError:
                    pass
            self.held = False
            if not self._wait_exit(timeout):
                try:
                    os.kill(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                try:
                    self.proc.wait(KILLED_S)
                except subprocess.TimeoutExpired:
                    pass  # killed, but a debugger holds it: the debugger reaps it, not us
        if self._log:
            self._log.close()
            self._log = None
        self.pidfile.unlink(missing_ok=True)
        return self.proc.returncode

    def _wait_exit(self, timeout: float) -> bool:
        """Whether it exited within timeout; False early when it stays stopped after SIGCONT (traced)."""
        deadline = time.monotonic() + timeout
        stopped_since: float | None = None
        while self.proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                return False
            if proc_state(self.proc.pid) in STOPPED:
                stopped_since = stopped_since or now
                if now - stopped_since > 2 * CONFIRM_S:
                    return False
            else:
                stopped_since = None
            time.sleep(0.02)
        return True

    def __enter__(self) -> ManagedProcess:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()


GEN_BUILD = Path(__file__).resolve().parents[3] / "gen" / "build"  # meson's build of gen/ (make setup)


def built(name: str) -> str:
    """A program of gen/ (zlgen, zlcores): the repository's build (editable installs), else the one on PATH."""
    local = GEN_BUILD / name
    if os.access(local, os.X_OK):
        return str(local)
    found = shutil.which(name)
    if found is None:
        raise ZeroLossError(f"{name} is not built", "run 'make setup' (or 'make build')")
    return found
