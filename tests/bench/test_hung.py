"""A hung component is a dead component (issue 28 Must 4): SIGSTOP of a process of a running search (the VNF,
ovs-vswitchd, ovsdb-server, zlgen, P2P's testpmd) ends the run within a trial + 5 s of the stop with one line naming
it, exit 1, the file `failed` with no result made of the frozen path, and no process of ours left behind (the
stopped one included)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from zeroloss.results.resultfile import read_doc

from .test_faults import leftovers, one_error_line, pid_of, runtime_dirs, start, trials, wait_trials
from .test_run import ZEROLOSS

TRIAL_S = 1.0
SEARCH = ["--frame-sizes", "64", "--trial", str(TRIAL_S), "--validation", str(TRIAL_S), "--drain-ms", "100",
          "--flows", "16", "--warmup", "0", "--granularity", "0.2", "--latency-loads", "none",
          "--set", "core_probe=false"]

# the pid file beside the component's log, the name the error must give
PVP = [
    ("vnf0.log.pid", "VNF 1 (dpdk-testpmd)"),
    ("vswitchd.out.pid", "ovs-vswitchd-dpdk"),
    ("ovsdb.out.pid", "ovsdb-server"),
    ("zlgen.log.pid", "zlgen"),
]


def stop_mid_search(p: subprocess.Popen, out, rundir, pidfile: str, timeout: float = 180, n: int = 1):
    """SIGSTOP of the component behind pidfile once the file holds n trials: (trials kept, its pid, the run's
    stderr, seconds from the stop to the run's end); the run is killed if the test fails first."""
    try:
        kept = wait_trials(p, out, n, timeout=timeout)
        pid = pid_of(rundir, pidfile)
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        _, err = p.communicate(timeout=120)
        return kept, pid, err, time.monotonic() - stopped
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()


def assert_stopped_is_named(tmp_path, p: subprocess.Popen, out, name: str, kept: int, pid: int, err: str,
                            took: float) -> None:
    """The claims of one stop: exit 1, one line naming the stopped component within a trial + 5 s, the file
    failed with its trials and no result, nothing of ours left (the stopped process included)."""
    assert p.returncode == 1, (name, err)
    line = one_error_line(err)
    assert f"{name} (pid {pid}) is stopped (SIGSTOP or a debugger): state T" in line, line
    assert "its log's last line" in line and f"zeroloss run --resume {out}" in line, line
    print(f"{name}: {took:.1f} s from the stop to the line")
    assert took < TRIAL_S + 5, f"{name}: {took:.1f} s from the stop to the line: {line}"
    doc = read_doc(out)
    assert doc["state"] == "failed", name
    assert trials(out) >= kept, f"{name}: finished trials lost"
    assert all(s["result"] is None for s in doc["searches"]), f"{name}: a stopped component made a result"
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z", name
    assert leftovers(tmp_path) == [], name
    assert runtime_dirs(p.pid) == [], name


def test_sigstop_of_each_pvp_component_is_one_line_within_a_trial_and_5_s(tmp_path):
    """One PVP search stopped four times, each time by SIGSTOP of another component (the VNF, ovs-vswitchd,
    ovsdb-server, zlgen) once a new trial is saved, resumed after each (one bench: the resume keeps the ceiling and
    MRR measured, the bench starts again): each stop is its own named failure."""
    out, rundir = tmp_path / "r.json", tmp_path / "run"
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(rundir))
    p = start(out, rundir, "--topology", "pvp", "--vnf", "process", *SEARCH)
    for i, (pidfile, name) in enumerate(PVP):
        if i:
            p = subprocess.Popen([*ZEROLOSS, "run", "--resume", str(out), "-q"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
        kept, pid, err, took = stop_mid_search(p, out, rundir, pidfile, n=trials(out) + 1)
        assert_stopped_is_named(tmp_path, p, out, name, kept, pid, err, took)


def test_sigstop_of_the_dut_p2p_is_one_line_within_a_trial_and_5_s(tmp_path):
    out, rundir = tmp_path / "r.json", tmp_path / "run"
    p = start(out, rundir, "--topology", "p2p", *SEARCH)
    kept, pid, err, took = stop_mid_search(p, out, rundir, "testpmd.log.pid")
    assert_stopped_is_named(tmp_path, p, out, "DUT (dpdk-testpmd)", kept, pid, err, took)


def test_sigstop_of_the_vnf_vm_is_one_line_within_a_trial_and_5_s(tmp_path):
    """The VNF as a VM (QEMU under TCG here: its boot is the cost of this test): QEMU stopped mid-search."""
    from zeroloss.drivers.vnf.vm import GUEST_DIR, kvm_usable

    why = kvm_usable() or (None if (GUEST_DIR / "initrd.gz").exists() else "the guest is not built (make setup)")
    if why:
        pytest.skip(f"no VM here: {why}")
    out, rundir = tmp_path / "r.json", tmp_path / "run"
    vm = ["--vnf", "vm", "--trial", "0.5", "--validation", "1", "--drain-ms", "300", "--granularity", "10",
          "--flows", "16", "--warmup", "0"]
    p = start(out, rundir, "--topology", "pvp", "--frame-sizes", "64", *vm)
    kept, pid, err, took = stop_mid_search(p, out, rundir, "vnf0.log.pid", timeout=300)
    assert p.returncode == 1, err
    line = one_error_line(err)
    assert f"VNF 1 (qemu-system-x86_64) (pid {pid}) is stopped (SIGSTOP or a debugger): state T" in line, line
    print(f"VNF VM: {took:.1f} s from the stop to the line")
    assert took < 1 + 5, f"{took:.1f} s from the stop to the line: {line}"
    assert read_doc(out)["state"] == "failed" and trials(out) >= kept
    assert leftovers(tmp_path) == [] and runtime_dirs(p.pid) == []
