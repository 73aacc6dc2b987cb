"""Fault injection, as a careful tester does it: kill -9 of every component of a PVP search and of zeroloss
itself, two runs at once, an output that cannot be written, a full disk. Every case asserts: no traceback,
one error line naming the cause, the file `failed` or `interrupted` with the finished trials kept and
resumable, and no process or DPDK runtime folder of ours left."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.resultfile import read_doc

from .test_run import ZEROLOSS
from .verdicts import assert_ran

SEARCH = ["--trial", "0.3", "--validation", "0.6", "--drain-ms", "100", "--flows", "64", "--warmup", "0",
          "--latency-loads", "none", "--set", "core_probe=false"]


def mount_tmpfs(path: Path, options: str) -> None:
    """A small tmpfs of our own (a full or read-only disk on demand); skipped where mounting is not allowed
    (a container without CAP_SYS_ADMIN: there the bench's hugetlbfs would have been mounted by the host)."""
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")


def start(out: Path, rundir: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(rundir))
    return subprocess.Popen([*ZEROLOSS, "run", *args, "-q", "-o", str(out)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def trials(out: Path) -> int:
    try:
        return sum(len(s["trials"]) for s in read_doc(out)["searches"])
    except (OSError, ValueError, KeyError, ZeroLossError):  # not written yet, or caught mid-write
        return 0


def wait_trials(p: subprocess.Popen, out: Path, n: int, timeout: float = 180) -> int:
    """Waits until the file holds at least n trials (the run is mid-search); returns how many."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert p.poll() is None, f"the run ended before the test could cut it: {p.communicate()[1]}"
        got = trials(out)
        if got >= n:
            return got
        time.sleep(0.05)
    raise AssertionError(f"no {n} trials in {timeout} s")


def pid_of(rundir: Path, pidfile: str) -> int:
    """A component's pid from the pid file zeroloss keeps beside its log (in the live session)."""
    for owner in rundir.glob("s*/owner.json"):
        for f in owner.parent.rglob(pidfile):
            return int(f.read_text().split()[0])
    raise AssertionError(f"no {pidfile} under {rundir}")


def leftovers(tmp_path: Path) -> list[str]:
    """Processes still running with our folders in their arguments (zombies excluded), and DPDK runtime
    folders of our sessions."""
    ps = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
    procs = [ln for ln in ps.splitlines() if str(tmp_path) in ln and " Z" not in ln and "ps -eo" not in ln
             and "pytest" not in ln]
    return procs


def runtime_dirs(pid: int) -> list[str]:
    return [d.name for d in Path("/var/run/dpdk").glob(f"zl{pid}s*")]


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    errors = [ln for ln in lines if ln.startswith("zeroloss: error:")]
    assert len(errors) == 1, err
    return errors[0]


# the component, the pid file beside its log, the name the error must give
COMPONENTS = [
    ("VNF", "vnf0.log.pid", "VNF 1 (dpdk-testpmd)"),
    ("ovs-vswitchd", "vswitchd.out.pid", "ovs-vswitchd-dpdk"),
    ("ovsdb-server", "ovsdb.out.pid", "ovsdb-server"),
    ("zlgen", "zlgen.log.pid", "zlgen"),
]


def test_kill_9_of_each_pvp_component_fails_the_run_and_resume_goes_on(tmp_path):
    """One PVP search cut four times, each time by kill -9 of another component (the VNF, ovs-vswitchd,
    ovsdb-server, zlgen) and once by kill -9 of zeroloss itself, resumed after each: each cut is a named
    failure (never 'NDR none'), keeps every finished trial, leaves nothing running, and the search completes."""
    out, rundir = tmp_path / "r.json", tmp_path / "run"
    # 2 %: the top (5 % above the MRR) fails, then 6 bisections (2**6 > 100 / 2) and a validation: at least 8 trials,
    # more than the 5 cuts need (one new trial each), and few enough that the last resume is short (at 0.2 % the
    # search took 11 trials at least, and its validations near the edge often failed: up to 74 records)
    args = ["--topology", "pvp", "--vnf", "process", "--frame-sizes", "64", *SEARCH, "--granularity", "2"]
    p = start(out, rundir, *args)
    for what, pidfile, name in COMPONENTS:
        kept = wait_trials(p, out, trials(out) + 1)
        os.kill(pid_of(rundir, pidfile), signal.SIGKILL)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 1, (what, err)
        line = one_error_line(err)
        assert name in line and "killed by SIGKILL" in line, (what, line)
        assert "its log's last line" in line and f"zeroloss run --resume {out}" in line, line
        doc = read_doc(out)
        assert doc["state"] == "failed", what
        assert trials(out) >= kept, f"{what}: finished trials lost"
        assert all(s["result"] is None for s in doc["searches"]), f"{what}: a dead component made a result"
        assert leftovers(tmp_path) == [], what
        assert runtime_dirs(p.pid) == [], what
        p = subprocess.Popen([*ZEROLOSS, "run", "--resume", str(out), "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, ZEROLOSS_RUNDIR=str(rundir)))

    # zeroloss itself, kill -9: its children die with it, the next zeroloss marks the file interrupted
    wait_trials(p, out, trials(out) + 1)
    p.kill()
    p.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(tmp_path) == [], "children outlived zeroloss"
    assert read_doc(out)["state"] == "running"
    r = subprocess.run([*ZEROLOSS, "run", "--resume", str(out), "-q", "--json"], capture_output=True, text=True,
                       env=dict(os.environ, ZEROLOSS_RUNDIR=str(rundir)), timeout=600)
    assert_ran(r)
    assert f"cleaned the session of zeroloss pid {p.pid}, which is gone" in r.stderr
    assert runtime_dirs(p.pid) == []
    doc = read_doc(out)
    assert doc["state"] == "complete" and doc["searches"][0]["result"]["ndr"]["rate_pps"]
    assert leftovers(tmp_path) == []


def test_two_runs_at_once_are_refused_and_a_killed_zeroloss_is_marked_interrupted(tmp_path):
    """One bench run for two claims: a second run while it runs is refused naming the first (the bench's lock,
    then the file's own lock), the first going on untouched; then kill -9 of it leaves a file `running` that the
    next zeroloss on the bench marks interrupted, keeping its trials. (Ctrl-C of a run, `interrupted` and resumed:
    tests/bench/test_run.py::test_interrupted_run_resumes_where_it_stopped.)"""
    out, rundir = tmp_path / "a.json", tmp_path / "run"
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(rundir))
    # four sizes: a search can end after two trials (its top rate passes and is validated), the run cannot
    p = start(out, rundir, "--frame-sizes", "64,128,256,512", *SEARCH, "--granularity", "0.2")
    try:
        wait_trials(p, out, 1)
        second = subprocess.run([*ZEROLOSS, "run", "--frame-sizes", "64", "-o", str(tmp_path / "b.json")],
                                capture_output=True, text=True, env=env, timeout=60)
        assert second.returncode == 1
        line = one_error_line(second.stderr)
        assert f"the bench is in use by zeroloss pid {p.pid}" in line, line
        # the same file twice: refused by the file's own lock, the first run's trials untouched
        before = trials(out)
        twice = subprocess.run([*ZEROLOSS, "run", "--resume", str(out)], capture_output=True, text=True, env=env,
                               timeout=60)
        assert twice.returncode == 1
        assert f"{out} is being written by zeroloss pid {p.pid}" in one_error_line(twice.stderr)
        assert not (tmp_path / "b.json").exists()
        assert trials(out) >= before, "the refused resume touched the first run's trials"
        # the first run goes on (a trial more), then zeroloss itself is killed
        kept = wait_trials(p, out, max(2, trials(out) + 1))
        p.kill()
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert read_doc(out)["state"] == "running"
    # any next zeroloss on the bench cleans the stale session and marks the file, without touching its trials
    r = subprocess.run([*ZEROLOSS, "trial", "--duration", "0.2", "--rate", "10k"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"{out} was left running by a zeroloss that is gone: marked interrupted" in r.stderr
    assert read_doc(out)["state"] == "interrupted" and trials(out) >= kept >= 2
    assert leftovers(tmp_path) == [] and runtime_dirs(p.pid) == []
    kept_dirs = list(rundir.glob("s*"))
    assert kept_dirs and all(not (d / "owner.json").exists() for d in kept_dirs)  # its logs are kept, as logs


@pytest.mark.parametrize("output, message", [
    ("/etc/passwd/x.json", "/etc/passwd is not a folder"),
    ("{ro}/x.json", "Read-only file system"),
])
def test_unwritable_output_is_one_line_and_starts_nothing(tmp_path, output, message):
    ro = tmp_path / "ro"
    ro.mkdir()
    mount_tmpfs(ro, "ro,size=64k")
    try:
        r = subprocess.run([*ZEROLOSS, "run", "--frame-sizes", "64", "-o", output.format(ro=ro)],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run")))
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert r.returncode == 1
    assert message in one_error_line(r.stderr)
    assert leftovers(tmp_path) == []


def test_unwritable_run_folder_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    mount_tmpfs(ro, "ro,size=64k")
    try:
        r = subprocess.run([*ZEROLOSS, "run", "--frame-sizes", "64", "-o", str(tmp_path / "r.json")],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, ZEROLOSS_RUNDIR=str(ro)))
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert str(ro) in line and "Read-only file system" in line and "ZEROLOSS_RUNDIR" in line
    # nothing ran: no result file, no resume hint (issue 38, 10)
    assert not (tmp_path / "r.json").exists() and "--resume" not in r.stderr


def test_run_folder_too_long_for_a_socket_is_named(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    r = subprocess.run([*ZEROLOSS, "trial", "--duration", "0.2"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, ZEROLOSS_RUNDIR=str(deep)))
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "too long for UNIX sockets" in line and "ZEROLOSS_RUNDIR" in line


def test_full_disk_fails_the_run_with_one_line_and_a_failed_file(tmp_path):
    """The disk holding the result file fills up mid-run (another writer takes the last byte): the run stops
    with one line, the file on disk is still valid JSON, marked failed, with the trials saved so far, and no
    temporary file is left."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount_tmpfs(disk, "size=8m")
    try:
        out = disk / "r.json"
        # two sizes: a search can end after two trials (its top passes and is validated), the run cannot; the disk
        # fills as soon as one trial is saved
        p = start(out, tmp_path / "run", "--frame-sizes", "64,128", *SEARCH, "--granularity", "0.2")
        saved = wait_trials(p, out, 1)
        with open(disk / "filler", "wb", buffering=0) as f:  # the rest of the disk, to the last block
            try:
                while f.write(b"\0" * 65536):
                    pass
            except OSError:
                pass
        _, err = p.communicate(timeout=300)
        assert p.returncode == 1, err
        line = one_error_line(err)
        # the file or its journal (FILE.journal: where the trials go) could not be written
        assert f"cannot write {out}" in line and "No space left on device" in line, line
        doc = read_doc(out)
        assert doc["state"] == "failed" and trials(out) >= saved
        # no temporary file left; the journal holds the trials the document does not (readers apply it)
        assert sorted(x.name for x in disk.iterdir()) == ["filler", "r.json", "r.json.journal"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    assert leftovers(tmp_path) == []


def test_zlgen_refuses_a_control_path_too_long_for_a_socket(tmp_path):
    from zeroloss.drivers.dpdk.eal import Eal
    from zeroloss.drivers.gen.process import zlgen_binary

    ctl = tmp_path / ("c" * 120) / "zlgen-ctl.sock"
    eal = Eal(lcores="1", file_prefix=f"zltest{os.getpid()}", vdevs=("net_null0", "net_null1"))
    r = subprocess.run([zlgen_binary(), *eal.argv(), "--", "--ctl", str(ctl)], capture_output=True, text=True,
                       timeout=60)
    eal.cleanup()
    assert r.returncode == 1, r.stdout + r.stderr
    assert "longer than the 107 a UNIX socket allows" in r.stdout + r.stderr


def test_kill_9_of_zeroloss_mid_pvp_leaves_no_ovs_tap_or_socket_after_the_next_run(tmp_path):
    """kill -9 of zeroloss during PVP left OVS's netdev taps (br0, ovs-netdev) and its *.ctl sockets behind (issue
    38, 14): the OVS bench records in its session folder the taps it made (name and ifindex), and the next zeroloss
    on the bench removes exactly those, and the session's OVS sockets."""
    from zeroloss.drivers import session

    out, rundir = tmp_path / "r.json", tmp_path / "run"
    before = {d.name for d in Path("/sys/class/net").iterdir()}
    p = start(out, rundir, "--topology", "pvp", "--vnf", "process", "--frame-sizes", "64", *SEARCH,
              "--granularity", "2")
    try:
        wait_trials(p, out, 1)
        p.kill()
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    (made,) = list(rundir.glob(f"s*/ovs/{session.TAPS}"))
    taps = dict(line.split() for line in made.read_text().splitlines())
    assert {"br0", "ovs-netdev"} - before <= set(taps), taps  # every tap OVS made for us is recorded
    assert all(session.tap_index(n) == int(i) for n, i in taps.items()), "the taps outlived ovs-vswitchd"
    assert [x for x in made.parent.glob("*.ctl") if x.is_socket()], "no OVS control socket left to clean"
    r = subprocess.run([*ZEROLOSS, "trial", "--duration", "0.2", "--rate", "10k"], capture_output=True, text=True,
                       env=dict(os.environ, ZEROLOSS_RUNDIR=str(rundir)), timeout=120)
    assert r.returncode == 0, r.stderr
    assert f"cleaned the session of zeroloss pid {p.pid}" in r.stderr and "tap " in r.stderr, r.stderr
    assert all(session.tap_index(n) is None for n in taps), "a recorded tap is still there"
    assert not [x for x in made.parent.rglob("*") if x.is_socket()], "an OVS socket is still there"
    assert leftovers(tmp_path) == [] and runtime_dirs(p.pid) == []
