"""Who owns the bench and the result files, and what a run that died left behind.

- The bench lock (/run/zeroloss/bench.lock, flock): one zeroloss at a time starts DPDK processes on this host.
  Reentrant within a process (a run opens several bench sessions). The kernel releases it when the
  holder dies, even by kill -9; the file holds the holder's pid and command so a refusal can name it.
- Result locks (/run/zeroloss/locks/*.lock): one writer per result or campaign file.
- Sessions (RUNDIR/sNNN/): a bench session's sockets and logs, with owner.json (the zeroloss that made
  it) and one NAME.pid file per process it started. A session whose owner is gone is stale: the next
  zeroloss to take the bench stops what is left of it (only its own processes, by pid, checked against
  their start time), removes its DPDK runtime folders, its sockets and the kernel taps it recorded (made.taps: OVS's
  netdev datapath's, which outlive ovs-vswitchd) and marks a result file it was writing `interrupted`, so that it
  can be resumed (stale.py: what a session records, and the clean-up of one whose owner is gone).
- Kept logs: sessions that ended in an error keep their logs (the error names them), at most
  KEEP_SESSIONS of them and none older than KEEP_DAYS.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import open_lockfile, overwrite_fd, remove_temps

from .stale import RUN_REMEDY, me, reap_session, sweep_runtime
from .stale import TAPS as TAPS  # the names below are the session's records, kept importable from here
from .stale import forget_container as forget_container
from .stale import record_child as record_child
from .stale import record_container as record_container
from .stale import record_tap as record_tap
from .stale import remove_container as remove_container
from .stale import start_time as start_time
from .stale import tap_index as tap_index
from .stale import write_owner as write_owner

DPDK_RUNTIME = Path("/var/run/dpdk")
KEEP_SESSIONS = 10
KEEP_DAYS = 7


def rundir() -> Path:
    """Where bench sessions live (ZEROLOSS_RUNDIR, default /run/zeroloss)."""
    return Path(os.environ.get("ZEROLOSS_RUNDIR", "/run/zeroloss"))


def lockdir() -> Path:
    """Where the locks live: one place per host whatever the run folder, as the cores are the host's."""
    return Path(os.environ.get("ZEROLOSS_LOCKDIR", "/run/zeroloss"))


def _run_error(what: str, path: Path, e: OSError) -> ZeroLossError:
    """A run or lock folder that refused a write (full, read-only) as one line with the remedy."""
    return ZeroLossError(f"cannot {what} {path}: {e.strerror or e}", RUN_REMEDY)


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ZeroLossError(f"cannot create the run folder {path}: {e.strerror}",
                            "set ZEROLOSS_RUNDIR to a folder zeroloss may write (default /run/zeroloss)") from e


class FileLock:
    """An exclusive flock on a file that holds the holder's description (JSON)."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def try_acquire(self, info: dict) -> dict | None:
        """Takes the lock and writes info into it; returns None, or the holder's info when another has it."""
        while True:
            try:
                fd = open_lockfile(self.path)
            except OSError as e:
                raise _run_error("open the lock", self.path, e) from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_info(fd)
                os.close(fd)
                return holder or {"pid": "?", "command": "another zeroloss"}
            try:  # the file may have been removed (a stale lock cleaned) between open and flock: lock the new one
                same = os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _read_info(fd)
        try:
            overwrite_fd(fd, json.dumps(info).encode())
        except OSError as e:  # a full run folder: the lock is not taken (closing drops the flock)
            os.close(fd)
            raise _run_error("write the lock", self.path, e) from e
        self.fd, self.previous = fd, previous
        return None

    def release(self, remove: bool = False) -> None:
        if self.fd is None:
            return
        if remove:
            try:
                self.path.unlink()
            except OSError:
                pass
        else:
            overwrite_fd(self.fd, b"")
        os.close(self.fd)  # closing drops the flock
        self.fd = None


def _read_info(fd: int) -> dict | None:
    try:
        data = os.pread(fd, 4096, 0)
        info = json.loads(data) if data else None
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _holder_text(h: dict) -> str:
    return f"zeroloss pid {h.get('pid')} ('{h.get('command', '?')}', since {h.get('since', '?')})"


class _Bench:
    """The process's hold on the bench lock: counted, so nested sessions of one run share it."""

    def __init__(self) -> None:
        self.lock: FileLock | None = None
        self.depth = 0

    def acquire(self) -> None:
        if self.depth == 0:
            _mkdir(lockdir())
            lock = FileLock(lockdir() / "bench.lock")
            holder = lock.try_acquire(me())
            if holder is not None:
                raise ZeroLossError(f"the bench is in use by {_holder_text(holder)}",
                                    "wait for it to finish, or stop it; two runs at once share cores and "
                                    "would both report contaminated numbers")
            self.lock = lock
            try:
                for line in reap(rundir()):
                    print(f"zeroloss: {line}", file=sys.stderr)
            except BaseException:
                self.lock = None
                lock.release()
                raise
        self.depth += 1

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0 and self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> _Bench:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


BENCH = _Bench()


class ResultLock:
    """One writer per result (or campaign) file: ``with ResultLock(path):`` refuses a second zeroloss."""

    def __init__(self, path: Path):
        self.path = Path(path)
        real = os.path.realpath(self.path)
        self.key = hashlib.sha1(real.encode()).hexdigest()[:20]
        self.lock: FileLock | None = None

    def __enter__(self) -> ResultLock:
        folder = lockdir() / "locks"
        _mkdir(folder)
        lock = FileLock(folder / f"{self.key}.lock")
        holder = lock.try_acquire({**me(), "result": os.path.realpath(self.path)})
        if holder is not None:
            raise ZeroLossError(f"{self.path} is being written by {_holder_text(holder)}",
                                "wait for it to finish; two writers would lose each other's trials")
        self.lock = lock
        for line in _remove_temps(Path(os.path.realpath(self.path))):  # ours alone now: a killed writer's
            print(f"zeroloss: {line}", file=sys.stderr)
        return self

    def __exit__(self, *exc) -> None:
        if self.lock:
            self.lock.release(remove=True)
            self.lock = None


def reap(base: Path) -> list[str]:
    """Cleans what zeroloss runs that are gone left behind (called with the bench lock held): their processes,
    DPDK runtime folders and sockets; result files they left `running` become `interrupted`; old kept logs
    are pruned. Returns one line per thing done, for the user."""
    notes = []
    for owner in sorted(base.glob("s*/owner.json")):
        notes += reap_session(owner.parent, DPDK_RUNTIME)
    locks = lockdir() / "locks"
    for path in sorted(locks.glob("*.lock")) if locks.is_dir() else ():
        notes += _reap_result_lock(path)
    _prune_logs(base)
    sweep_runtime(DPDK_RUNTIME)
    return notes


def _reap_result_lock(path: Path) -> list[str]:
    lock = FileLock(path)
    try:
        if lock.try_acquire(me()) is not None:
            return []  # its writer runs
    except ZeroLossError:
        return []
    notes = []
    prev = lock.previous or {}
    result = prev.get("result")
    if result:
        notes += _result_marker(Path(result))
        notes += _remove_temps(Path(result))
    lock.release(remove=True)
    return notes


def _remove_temps(result: Path) -> list[str]:
    """The temporary files a writer killed mid-write left beside its result file, removed (called holding that
    file's lock: no live writer has one)."""
    removed = remove_temps(result)
    if not removed:
        return []
    return [f"removed {len(removed)} temporary file(s) a zeroloss killed while writing {result} left beside it "
            f"({', '.join(p.name for p in removed[:3])}{', ...' if len(removed) > 3 else ''})"]


def _no_marker(path: Path) -> list[str]:
    return []


_result_marker: Callable[[Path], list[str]] = _no_marker


def mark_results_with(marker: Callable[[Path], list[str]]) -> None:
    """How reap marks a result or campaign file whose writer is gone (results/resultfile.py registers it: the
    file format is the results package's, and this module sits below it)."""
    global _result_marker
    _result_marker = marker


def _prune_logs(base: Path) -> None:
    """Kept session logs: the newest KEEP_SESSIONS, none older than KEEP_DAYS."""
    kept = []
    for d in base.glob("s*"):
        if d.is_dir() and not (d / "owner.json").exists():
            try:
                kept.append((d.stat().st_mtime, d))
            except OSError:
                continue
    kept.sort(reverse=True)
    cutoff = time.time() - KEEP_DAYS * 86400
    for i, (mtime, d) in enumerate(kept):
        if i >= KEEP_SESSIONS or mtime < cutoff:
            shutil.rmtree(d, ignore_errors=True)

