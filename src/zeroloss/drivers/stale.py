"""What a bench session records so that the next zeroloss can clean up after it, and that clean-up.

A session (RUNDIR/sNNN/) holds owner.json (the zeroloss that made it), one NAME.pid file per process it started,
a NAME.container file per container or Pod it runs and made.taps (the kernel taps OVS's netdev datapath made, which
outlive ovs-vswitchd). A session whose owner is gone is stale: reap_session stops its processes (by pid, checked
against their start time), removes its containers, DPDK runtime folders, sockets and those taps (session.reap calls
it with the bench lock held).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import write_text_atomic

RUN_REMEDY = ("free space there (df), or set ZEROLOSS_RUNDIR and ZEROLOSS_LOCKDIR to a folder with room "
              "(default /run/zeroloss)")


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


def sweep_runtime(runtime: Path) -> None:
    """DPDK runtime folders of zeroloss sessions whose zeroloss is gone (our prefixes are zl<pid>s...)."""
    for d in runtime.glob("zl*"):
        m = re.match(r"zl(\d+)s", d.name)
        if m and start_time(int(m.group(1))) is None:
            shutil.rmtree(d, ignore_errors=True)


def reap_session(root: Path, runtime: Path) -> list[str]:
    """Cleans one session folder whose owner is gone (nothing when it runs): one line for the user."""
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
        for d in runtime.glob(f"{tag}*"):
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
