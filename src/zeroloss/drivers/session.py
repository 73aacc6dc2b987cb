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
  can be resumed.
- Kept logs: sessions that ended in an error keep their logs (the error names them), at most
  KEEP_SESSIONS of them and none older than KEEP_DAYS.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import open_lockfile, overwrite_fd, remove_temps, write_text_atomic

DPDK_RUNTIME = Path("/var/run/dpdk")
KEEP_SESSIONS = 10
KEEP_DAYS = 7
RUN_REMEDY = ("free space there (df), or set ZEROLOSS_RUNDIR and ZEROLOSS_LOCKDIR to a folder with room "
              "(default /run/zeroloss)")


def rundir() -> Path:
    """Where bench sessions live (ZEROLOSS_RUNDIR, default /run/zeroloss)."""
    return Path(os.environ.get("ZEROLOSS_RUNDIR", "/run/zeroloss"))


def lockdir() -> Path:
    """Where the locks live: one place per host whatever the run folder, as the cores are the host's."""
    return Path(os.environ.get("ZEROLOSS_LOCKDIR", "/run/zeroloss"))


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22): with the pid it names one
    process, even after the pid is reused. None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(pid: int, started: int | None) -> bool:
    """True while the process that had this pid and start time runs (a zombie counts as gone)."""
    if started is None or start_time(pid) != started:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def me() -> dict:
    """This process as a lock holder or session owner describes it."""
    return {"pid": os.getpid(), "start": start_time(os.getpid()), "command": " ".join(sys.argv[:8])[:300],
            "since": time.strftime("%Y-%m-%d %H:%M:%S")}


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
        notes += _reap_session(owner.parent)
    locks = lockdir() / "locks"
    for path in sorted(locks.glob("*.lock")) if locks.is_dir() else ():
        notes += _reap_result_lock(path)
    _prune_logs(base)
    _sweep_runtime()
    return notes


def _sweep_runtime() -> None:
    """DPDK runtime folders of zeroloss sessions whose zeroloss is gone (our prefixes are zl<pid>s...)."""
    for d in DPDK_RUNTIME.glob("zl*"):
        m = re.match(r"zl(\d+)s", d.name)
        if m and start_time(int(m.group(1))) is None:
            shutil.rmtree(d, ignore_errors=True)


def _reap_session(root: Path) -> list[str]:
    try:
        owner = json.loads((root / "owner.json").read_text())
    except (OSError, ValueError):
        owner = {}
    if alive(owner.get("pid", -1), owner.get("start")):
        return []
    notes = []
    stopped = []
    for pidfile in root.rglob("*.pid"):
        try:
            pid, started, name = pidfile.read_text().split(maxsplit=2)
            pid, started = int(pid), int(started)
        except (OSError, ValueError):
            continue
        if alive(pid, started):
            try:
                os.kill(pid, signal.SIGKILL)
                stopped.append(f"{name.strip()} (pid {pid})")
            except ProcessLookupError:
                pass
    stopped += _remove_containers(root)
    tag = owner.get("tag")
    if tag:
        for d in DPDK_RUNTIME.glob(f"{tag}*"):
            shutil.rmtree(d, ignore_errors=True)
    stopped += remove_made_taps(root)
    for p in root.rglob("*.sock"):
        p.unlink(missing_ok=True)
    for p in root.rglob("*"):  # OVS's too: its control (*.ctl), the bridges' OpenFlow (*.mgmt, *.snoop) sockets
        if p.is_socket():
            p.unlink(missing_ok=True)
    (root / "owner.json").unlink(missing_ok=True)
    what = f"stopped {', '.join(stopped)}; " if stopped else ""
    notes.append(f"cleaned the session of zeroloss pid {owner.get('pid', '?')}, which is gone: {what}"
                 f"its logs are in {root}")
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


def write_owner(root: Path, tag: str) -> None:
    """The session's owner.json: this zeroloss, and the DPDK file prefix its processes use."""
    try:
        write_text_atomic(root / "owner.json", json.dumps({**me(), "tag": tag}))
    except ZeroLossError as e:  # the run folder is full or read-only: its remedy, not the result file's (-o)
        raise ZeroLossError(e.message, RUN_REMEDY) from e


def record_container(path: Path, name: str, kind: str) -> None:
    """A container or Pod (kind) zeroloss is starting, by name, so that a later zeroloss removes it if we die
    before it is gone (its processes are conmon's children, not ours: PR_SET_PDEATHSIG does not reach them)."""
    write_text_atomic(path, f"{kind} {name}\n")


def forget_container(path: Path) -> None:
    path.unlink(missing_ok=True)


def _remove_containers(root: Path) -> list[str]:
    """Removes the containers and Pods a gone session recorded (podman rm --force: whatever their state)."""
    out = []
    for rec in sorted(root.rglob("*.container")):
        try:
            kind, name = rec.read_text().split()
        except (OSError, ValueError):
            continue
        removed = remove_container(name, kind)
        if removed is not None:
            if removed:
                out.append(f"{kind} {name}")
            rec.unlink(missing_ok=True)
    return out


def remove_container(name: str, kind: str, env: dict[str, str] | None = None) -> bool | None:
    """Removes a container or a Pod (kind) by name, in whatever state: whether one was there; None when podman
    could not be run or failed."""
    args = ["pod", "rm"] if kind == "pod" else ["rm"]
    try:
        done = subprocess.run(["podman", *args, "--force", "--ignore", "--time", "0", name],
                              capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return bool(done.stdout.strip()) if done.returncode == 0 else None


SYS_NET = Path("/sys/class/net")
TAPS = "made.taps"  # in a session's folder: the kernel taps its processes made, one "NAME IFINDEX" a line
TAP_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


def tap_index(name: str, sys_net: Path = SYS_NET) -> int | None:
    """The ifindex of the tun/tap device of that name, None when there is none (or it is no tap)."""
    d = sys_net / name
    try:
        return int((d / "ifindex").read_text()) if (d / "tun_flags").exists() else None
    except (OSError, ValueError):
        return None


def record_tap(folder: Path, name: str, sys_net: Path = SYS_NET) -> bool:
    """A tap our process made (OVS's netdev datapath makes ovs-netdev and one per bridge, and they outlive a killed
    ovs-vswitchd), by name and ifindex, so that a later zeroloss removes it, and only it, if we die. Best effort:
    whether it was recorded (False: no such tap yet)."""
    index = tap_index(name, sys_net)
    if index is None or not TAP_NAME.match(name):
        return False
    path, line = folder / TAPS, f"{name} {index}\n"
    try:
        known = path.read_text() if path.exists() else ""
        if line not in known:
            write_text_atomic(path, known + line)
    except (OSError, ZeroLossError):
        return False
    return True


def remove_made_taps(root: Path, sys_net: Path = SYS_NET) -> list[str]:
    """Deletes the taps a gone session recorded that are still the same devices (name and ifindex: a tap made
    since under that name by anyone else stays)."""
    out = []
    for rec in sorted(root.rglob(TAPS)):
        try:
            lines = rec.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            name, _, index = line.partition(" ")
            if not TAP_NAME.match(name) or not index.isdigit() or tap_index(name, sys_net) != int(index):
                continue
            try:
                done = subprocess.run(["ip", "link", "delete", name], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                out.append(f"tap {name}")
        rec.unlink(missing_ok=True)
    return out


def record_child(pidfile: Path, pid: int, name: str) -> None:
    """A started process's pid and start time, so that a later zeroloss can stop it if we die. Best effort: the
    process already runs and its owner stops it; a missing pid file only leaves it to PR_SET_PDEATHSIG."""
    try:
        write_text_atomic(pidfile, f"{pid} {start_time(pid) or 0} {name}\n")
    except ZeroLossError:
        pass
