"""No input makes `zeroloss host ...` or `zeroloss rxq-plan` print a traceback: a fixture host with one sysfs/procfs
file or OVS capture damaged at a time, malformed loads files, pmd-rxq-show texts and domain XMLs, and a reader that
leaves the pipe early (`| head -1`). A fault is one line on stderr that names the file; a host that is merely odd
(numa_node -1) stays an audit finding."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zeroloss.cli.main import main

from .conftest import FIXTURES

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CPU = "sys/devices/system/cpu"
NIC = "sys/bus/pci/devices/0000:17:00.0"
CPU_LISTS = [f"{CPU}/online", f"{CPU}/isolated", "sys/devices/system/node/node0/cpulist",
             f"{CPU}/cpu0/topology/thread_siblings_list", "proc/irq/40/smp_affinity_list"]
OTHER_FILES = [f"{NIC}/numa_node", f"{NIC}/class", f"{CPU}/cpu3/topology/core_id", "proc/interrupts",
               "proc/cmdline", "proc/cpuinfo", "sys/devices/system/node/node0/meminfo",
               "sys/devices/system/node/node0/hugepages/hugepages-1048576kB/free_hugepages",
               f"{CPU}/cpu0/cpuidle/state1/latency", "sys/firmware/dmi/entries/17-0/raw",
               "ovs/vsctl-list-open_vswitch.json", "ovs/vsctl-list-interface.json", "ovs/pmd-rxq-show.txt"]
BAD_LISTS = [b"0-", b"a-b", b"5-2", b"1,,2", b"99999999999", b"0-99999999999", b"", b"-1", b"1\n2", b"\xff\xfe0",
             b"9" * 5000, b"\x00"]
BAD_ANY = [b"foo", b"", b"\xff\xfe\x00garbage", b"-7", b"1e309", b"9" * 5000, b"[" * 5000, b'{"headings": 1}',
           b'{"headings": ["other_config", "options"], "data": [["x", ["map", 5]]]}',
           b'{"headings": ["name", "other_config"], "data": [["x", "not a map"]]}',
           b"pmd thread numa_id 0 core_id 2:\n  isolated\n", b"pmd thread numa_id 0 core_id 99999999999:\n",
           b"pmd thread numa_id 0 core_id 2:\npmd thread numa_id 0 core_id 2:\n", b"\x11\x05",
           b"\x11\x20" + bytes(10) + b"\xff\x7f" + bytes(7), b"Node 0 MemTotal: " + b"9" * 5000 + b" kB\n",
           b"CPU0\n \xc2\xb2: 5 x\n 40: \xc2\xb2 5 y\n"]
COMMANDS = (["host", "inventory"], ["host", "plan", "--format", "all"], ["host", "audit"])


def cli(argv: list[str]) -> tuple[int, str, str]:
    """main(argv) in this process: exit code, stdout, stderr (any exception but argparse's fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def host():
    """A copy of the single-socket fixture host, damaged one file at a time by `damaged`."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "host"
        shutil.copytree(FIXTURES / "single-socket", root, symlinks=True)
        yield root


def damaged(root: Path, rel: str, data: bytes) -> list[tuple[int, str, str]]:
    """Every host command on root with rel's content replaced by data (restored afterwards)."""
    path = root / rel
    saved = path.read_bytes()
    path.write_bytes(data)
    try:
        return [cli([*argv, "--root", str(root)]) for argv in COMMANDS]
    finally:
        path.write_bytes(saved)


def assert_clean(code: int, err: str, name: str | None) -> None:
    """Exit 0, 2 (audit findings) or 1 with one line that starts with 'zeroloss: error:' and names the file (name
    None: the content may be well formed, so the error may be about the host, e.g. no core left for a PMD)."""
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code == 1:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("zeroloss: error: ") and (name is None or name in lines[0]), err


@pytest.mark.parametrize("rel", CPU_LISTS)
@pytest.mark.parametrize("data", BAD_LISTS, ids=repr)
def test_a_damaged_cpu_list_is_named(host, rel, data):
    for code, _, err in damaged(host, rel, data):
        assert_clean(code, err, str(host / rel))
        if data.strip() or not rel.endswith(("isolated", "cpulist")):
            assert code == 1, err  # all garbage; empty is an error where the kernel always names a CPU


@pytest.mark.parametrize("rel", OTHER_FILES)
@pytest.mark.parametrize("data", BAD_ANY, ids=lambda d: repr(d[:30]))
def test_any_damaged_file_is_named_or_read(host, rel, data):
    for code, _, err in damaged(host, rel, data):
        assert_clean(code, err, str(host / rel))


@pytest.mark.parametrize("rel, data, fault", [
    (f"{CPU}/online", b"0-", "'0-' in CPU list '0-' is not a number or range"),
    (f"{CPU}/isolated", b"5-2", "range '5-2' in CPU list '5-2' runs backwards"),
    ("sys/devices/system/node/node0/cpulist", b"1,,2", "CPU list '1,,2' has an empty item"),
    (f"{CPU}/cpu0/topology/thread_siblings_list", b"99999999999", "is not a CPU id 0..8191"),
    (f"{CPU}/cpu0/topology/thread_siblings_list", b"1", "does not name cpu0 itself"),
    ("proc/irq/40/smp_affinity_list", b"", "is empty, the kernel always names at least one CPU there"),
    (f"{NIC}/numa_node", b"foo", "holds 'foo', not a whole number"),
    (f"{NIC}/numa_node", b"3", "names node 3, but the host has node(s) 0"),
    (f"{NIC}/numa_node", b"\xff\xfe", "not a whole number"),
    ("ovs/pmd-rxq-show.txt", b"\xff\xfe", "is not UTF-8 text (byte 0: b'\\xff')"),
    ("ovs/vsctl-list-interface.json", b"[1]", "not the JSON output of `ovs-vsctl --format=json list`"),
    ("ovs/pmd-rxq-show.txt", b"pmd thread numa_id 0 core_id 2:\npmd thread numa_id 0 core_id 2:\n",
     "repeats a core"),
])
def test_faults_name_file_and_fault(host, rel, data, fault):
    code, _, err = damaged(host, rel, data)[2]  # audit reads everything
    assert code == 1 and err.startswith(f"zeroloss: error: {host / rel}") and fault in err, err
    assert_clean(code, err, str(host / rel))


def test_odd_host_facts_stay_findings(tmp_path):
    """numa_node -1 on a multi-node host is what firmware reports, not a damaged file: a finding, exit 2."""
    code, out, err = cli(["host", "audit", "--root", str(FIXTURES / "numa-minus-one")])
    assert code == 2 and "nic-numa-unknown" in out and not err, err


@FUZZ
@given(rel=st.sampled_from(CPU_LISTS),
       data=st.binary(max_size=16) | st.from_regex(r"[0-9a-f, \n-]{0,14}", fullmatch=True).map(str.encode))
def test_any_bytes_in_a_cpu_list_are_read_or_named(host, rel, data):
    for code, _, err in damaged(host, rel, data):
        assert_clean(code, err, str(host / rel) if "host has" not in err and "core(s) left" not in err else None)


# rxq-plan inputs and the domain XML

LOADS = [b"pmds: [1]\nports: [{name: a, loads: [.nan]}]", b"pmds: [1]\nports: [{name: a, loads: [.inf]}]",
         b"pmds: [1]\nports: [{name: a, loads: [1e309]}]", b"pmds: [1]\nports: [{name: a, loads: [-1]}]",
         b"pmds: [1]\nports: [{name: a, loads: [x]}]", b'{"pmds": [1], "ports": [{"name": "a", "loads": ["NaN"]}]}',
         b"pmds: {3: 0, 3: 1}\nports: [{name: a, loads: [1]}]", b"pmds: [3, 3]\nports: [{name: a, loads: [1]}]",
         b"pmds: {3: 0, '3': 1}\nports: [{name: a, loads: [1]}]",
         b"pmds: [1]\nports: [{name: a, loads: [1]}, {name: a, loads: [2]}]",
         b"pmds: [1]\nports: [{name: a, loads: {0: 1, '0': 2}}]", b"pmds: [1]\nports: [{name: a, loads: {0: 1, 0: 2}}]",
         b"- pmds\n- ports", b"\xff\xfe\x00", b"[" * 5000, b"pmds: [" + b"9" * 5000 + b"]\nports: []",
         b"pmds: [1]\nports: 5", b"pmds: [1]\nports: [{name: a, loads: 5}]",
         b"pmds: [1e309]\nports: [{name: a, loads: [1]}]",
         b"pmds: [true]\nports: [{name: a, loads: [1]}]", b"pmds: [1]\nisolate: 'no'\nports: [{name: a, loads: [1]}]",
         b"pmds: [1]\nports: [{name: a, numa: .inf, loads: [1]}]", b"pmds: [1]\nports: [{name: a, loads: {-1: 1}}]",
         b"pmds: [1]\nports: [{name: a, loads: [1], affinity: \"0-\\n3\"}]", b"pmds: [1]\nalgorithm: [x]\nports: []",
         b"when: 2024-13-45\nports: []"]
SHOWS = [b"\xff\xfe", b"garbage",
         b"pmd thread numa_id 0 core_id " + b"9" * 5000 + b":\n", b"pmd thread numa_id 0 core_id 99999999999:\n",
         b"pmd thread numa_id 0 core_id 2:\n  port: p queue-id: 0 (enabled) pmd usage: 5 %\n"
         b"pmd thread numa_id 0 core_id 3:\n  port: p queue-id: 0 (enabled) pmd usage: 5 %\n",
         b"pmd thread numa_id 0 core_id 2:\n  port: p queue-id: 99999 (enabled) pmd usage: 5 %\n"]
DOMAINS = [b"\xff\xfe<domain/>", b"<domain", b"<network/>", b"<?xml version='1.0' encoding='nope'?><domain/>",
           b"<domain><vcpu cpuset='0-99999999999'>2</vcpu></domain>",
           b"<domain><cputune><vcpupin vcpu='x' cpuset='1'/></cputune></domain>",
           b"<domain><cputune><emulatorpin cpuset='1,,2'/></cputune></domain>", b"<domain>\xe9</domain>"]


@pytest.mark.parametrize("data", LOADS, ids=lambda d: repr(d[:40]))
def test_bad_loads_files_are_named(tmp_path, data):
    f = tmp_path / "loads.yaml"
    f.write_bytes(data)
    code, _, err = cli(["rxq-plan", "--loads", str(f)])
    assert code == 1, err
    assert_clean(code, err, str(f))


def test_large_but_finite_loads_are_planned(tmp_path):
    f = tmp_path / "loads.yaml"
    f.write_text("pmds: [1, 2]\nports: [{name: a, loads: [1e300, 1e-300, 0]}]")
    code, out, err = cli(["rxq-plan", "--loads", str(f)])
    assert code == 0 and not err, err


@FUZZ
@given(data=st.binary(max_size=60) | st.sampled_from(LOADS).map(lambda d: d[:-3]))
def test_any_bytes_as_loads_are_read_or_named(data):
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "loads.yaml"
        f.write_bytes(data)
        code, _, err = cli(["rxq-plan", "--loads", str(f)])
        assert_clean(code, err, str(f))


@pytest.mark.parametrize("data", SHOWS, ids=lambda d: repr(d[:40]))
def test_bad_pmd_rxq_show_files_are_named(tmp_path, data):
    f = tmp_path / "show.txt"
    f.write_bytes(data)
    code, _, err = cli(["rxq-plan", "--pmd-rxq-show", str(f)])
    assert code == 1, err
    assert_clean(code, err, str(f))


def test_a_pmd_without_queues_or_isolated_value_is_read(tmp_path):
    f = tmp_path / "show.txt"
    f.write_bytes(b"pmd thread numa_id 0 core_id 2:\n  isolated\n")
    code, out, err = cli(["rxq-plan", "--pmd-rxq-show", str(f)])
    assert code == 0 and "0 RX queue(s)" in out and not err, err


@pytest.mark.parametrize("data", DOMAINS, ids=lambda d: repr(d[:40]))
def test_bad_domain_xml_is_named(tmp_path, data):
    f = tmp_path / "vm.xml"
    f.write_bytes(data)
    code, _, err = cli(["host", "audit", "--root", str(FIXTURES / "single-socket"), "--domain-xml", str(f)])
    assert code == 1, err
    assert_clean(code, err, str(f))


def test_huge_but_whole_domain_memory_is_read(tmp_path):
    f = tmp_path / "vm.xml"
    f.write_bytes(b"<domain><memory unit='b'>" + b"9" * 400 + b"</memory></domain>")
    code, _, err = cli(["host", "audit", "--root", str(FIXTURES / "single-socket"), "--domain-xml", str(f)])
    assert_clean(code, err, str(f))


# a reader that leaves early: `zeroloss host inventory | head -1`

def zeroloss() -> list[str]:
    exe = Path(sys.executable).parent / "zeroloss"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "zeroloss.cli"]


@pytest.mark.parametrize("argv", [
    ["host", "inventory", "--root", str(FIXTURES / "r740xd")],
    ["host", "plan", "--root", str(FIXTURES / "r740xd"), "--format", "all"],
    ["host", "audit", "--root", str(FIXTURES / "r740xd")],
    ["rxq-plan", "--loads", str(FIXTURES / "rxq-redhat-example.yaml")],
], ids=lambda a: " ".join(a[:2]))
def test_a_closed_pipe_ends_quietly(argv):
    read, write = os.pipe()
    os.close(read)  # the reader has left before the first line: every write meets EPIPE
    try:
        r = subprocess.run([*zeroloss(), *argv], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert r.returncode in (0, 141) and not r.stderr, r.stderr


def test_head_sees_the_first_line():
    """The shell's `| head -1`: head prints the header line, zeroloss ends without a word on stderr."""
    first = subprocess.Popen([*zeroloss(), "host", "inventory", "--root", str(FIXTURES / "r740xd")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=first.stdout, capture_output=True, text=True, timeout=120)
    first.stdout.close()
    err = first.stderr.read().decode()
    first.stderr.close()
    assert first.wait(timeout=120) in (0, 141) and not err, err
    assert head.stdout.startswith("host ") and head.stdout.count("\n") == 1
