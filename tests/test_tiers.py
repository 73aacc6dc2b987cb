"""The test tiers' guard (tests/tiers.py) at work: a test without the bench marker that starts a bench program fails
with a line naming the program and the marker, whether it starts it itself, through zeroloss's ManagedProcess, through
a Python child, or catches the refusal; the same test marked bench passes, and a lab test may start sshd only."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

INNER = '''
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.drivers.proc import ManagedProcess

ZLGEN = {zlgen!r}      # stand-ins that only exit 0: the guard goes by the program's name, nothing of the bench starts
SSHD = {sshd!r}
VSWITCHD = {vswitchd!r}


def test_unmarked_runs_zlgen():
    subprocess.run([ZLGEN, "-l", "1"], check=True)


def test_unmarked_starts_zlgen_as_zeroloss_does(tmp_path):
    with ManagedProcess("zlgen", [ZLGEN], tmp_path / "zlgen.log"):
        pass


def test_unmarked_python_child_starts_it_and_the_test_catches_everything():
    child = f"import subprocess\\ntry:\\n  subprocess.run([{{ZLGEN!r}}])\\nexcept Exception:\\n  pass\\n"
    subprocess.run([sys.executable, "-c", child])


def test_unmarked_runs_ovs_through_env():
    try:
        subprocess.run(["env", "A=1", VSWITCHD, "--pidfile"])
    except Exception:
        pass


def test_unmarked_starts_sshd():
    subprocess.run([SSHD, "-D"], check=True)


def test_unmarked_starts_other_processes():
    subprocess.run(["true"], check=True)
    subprocess.run([sys.executable, "-c", "import subprocess; subprocess.run(['true'], check=True)"], check=True)


@pytest.mark.bench
def test_marked_bench_runs_zlgen_and_ovs(tmp_path):
    subprocess.run([ZLGEN], check=True)
    with ManagedProcess("ovs-vswitchd", [VSWITCHD], tmp_path / "ovs.log") as p:
        p.proc.wait()
    subprocess.run([sys.executable, "-c", f"import subprocess; subprocess.run([{{ZLGEN!r}}], check=True)"], check=True)


@pytest.mark.lab
def test_lab_starts_sshd():
    subprocess.run([SSHD], check=True)


@pytest.mark.lab
def test_lab_without_bench_runs_zlgen():
    subprocess.run([ZLGEN], check=True)
'''


@pytest.fixture
def stand_ins(tmp_path):
    """Executables named zlgen, sshd and ovs-vswitchd that only exit 0."""
    out = {}
    for name in ("zlgen", "sshd", "ovs-vswitchd"):
        path = tmp_path / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
        out[name] = str(path)
    return out


def test_the_guard_fails_an_unmarked_test_that_starts_a_bench_program(pytester, stand_ins, monkeypatch):
    pytester.makepyfile(test_inner=INNER.format(zlgen=stand_ins["zlgen"], sshd=stand_ins["sshd"],
                                                vswitchd=stand_ins["ovs-vswitchd"]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))
    result = pytester.runpytest_subprocess("-p", "tiers", "-p", "no:cacheprovider", "-rA",
                                           "-W", "ignore::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(passed=3, failed=6)
    passed = {ln.split("::")[1].split()[0] for ln in result.outlines if ln.startswith("PASSED")}
    assert passed == {"test_unmarked_starts_other_processes", "test_marked_bench_runs_zlgen_and_ovs",
                      "test_lab_starts_sshd"}
    result.stdout.fnmatch_lines([
        "*test_inner.py::test_unmarked_runs_zlgen started zlgen (*) without the bench marker: "
        "mark it @pytest.mark.bench*",
        "*test_inner.py::test_unmarked_starts_zlgen_as_zeroloss_does started zlgen*without the bench marker*",
        "*test_inner.py::test_unmarked_python_child_starts_it_and_the_test_catches_everything started zlgen*",
        "*test_inner.py::test_unmarked_runs_ovs_through_env started ovs-vswitchd*without the bench marker*",
        "*test_inner.py::test_unmarked_starts_sshd started sshd*without the lab (or bench) marker*",
        "*test_inner.py::test_lab_without_bench_runs_zlgen started zlgen*without the bench marker*",
    ], consecutive=False)


def test_the_tiers_of_this_suite_by_directory(pytester):
    """Every test under tests/bench is bench, every one under tests/lab is lab, the others have neither unless
    marked."""
    result = pytester.runpytest_subprocess(str(TESTS / "bench" / "test_memif_sockets.py"),
                                           str(TESTS / "lab" / "test_lab_names.py"), str(TESTS / "test_frame.py"),
                                           "--collect-only", "-q", "-m", "not bench and not lab",
                                           f"--rootdir={TESTS.parent}", "-c", str(TESTS.parent / "pyproject.toml"))
    ids = [ln for ln in result.outlines if "::" in ln]
    assert ids and all(ln.startswith("tests/test_frame.py::") for ln in ids), ids


@pytest.mark.parametrize("argv, need", [
    (["/work/main/gen/build/zlgen", "-l", "1"], ("bench", "zlgen")),
    (["sudo", "-E", "taskset", "-c", "0,1", "nice", "-n", "5", "dpdk-testpmd", "-l", "0,1"], ("bench", "dpdk-testpmd")),
    (["env", "OVS_RUNDIR=/x", "ovs-vswitchd", "unix:/x/db.sock"], ("bench", "ovs-vswitchd")),
    (["timeout", "5", "qemu-system-x86_64", "-m", "512"], ("bench", "qemu-system-x86_64")),
    (["sh", "-c", "exec podman run --rm img"], ("bench", "podman")),
    (["bash", "tests/lab/lab.sh", "start", "/tmp/l1"], ("bench", "lab.sh")),
    (["/usr/sbin/sshd", "-D", "-f", "cfg"], ("lab", "sshd")),
    (["oc", "exec", "-i", "-c", "testpmd", "--", "sh", "-c", "cat"], None),  # a container named testpmd
    (["ovs-vsctl", "show"], None),  # a client of OVS, not OVS
    ([sys.executable, "-m", "zeroloss.cli", "run", "--help"], None),
    (["sh", "-c", "echo zlgen"], None),
])
def test_what_counts_as_starting_a_tiers_program(argv, need):
    from tiers import procguard

    assert procguard.needed_marker(argv) == need
