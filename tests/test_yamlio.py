"""Bounded YAML (issue 29 Must 5): huge files, billion laughs, alias cycles, deep nesting and campaigns of billions
of cases are one line, exit 1, within seconds and a bounded memory, through the real CLI; modest aliases still read."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zeroloss.core import config, yamlio
from zeroloss.core.errors import ZeroLossError
from zeroloss.host.rxqinput import parse_loads

SRC = Path(__file__).resolve().parents[1] / "src"
TIME_LIMIT_S = 10  # generous for a loaded host: each case takes under 1 s here
RSS_LIMIT_MB = 150  # the CLI itself takes ~30 MB; a 100 MB file read whole would not fit
AS_LIMIT = 2 << 30  # the child's address space: a run that would grow without end fails fast instead


# The CLI runs as the grandchild of a small launcher that reports its peak RSS: a child forked straight from this
# test process inherits its peak (Linux keeps the pre-exec high-water mark in ru_maxrss), and pytest's own grows
# with every package the other tests import.
LAUNCHER = """
import os, resource, sys
out, limit, args = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
pid = os.fork()
if pid == 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    os.execv(sys.executable, [sys.executable, "-m", "zeroloss.cli", *args])
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def cli(tmp: Path, *args: str) -> tuple[int, str, float, float]:
    """`zeroloss ARGS` in a process of bounded address space, killed after twice the time limit: (exit status,
    stderr, seconds, peak RSS in MB)."""
    err, report = tmp / "stderr.txt", tmp / "rusage.txt"
    report.unlink(missing_ok=True)
    started = time.monotonic()
    with open(err, "wb") as e:
        p = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(report), str(AS_LIMIT), *args],
                             stdout=subprocess.DEVNULL, stderr=e, env={**os.environ, "PYTHONPATH": str(SRC)}, cwd=tmp,
                             start_new_session=True)
    timer = threading.Timer(2 * TIME_LIMIT_S, lambda: os.killpg(p.pid, 9))
    timer.start()
    p.wait()
    timer.cancel()
    code, maxrss = (int(x) for x in report.read_text().split()) if report.exists() else (p.returncode, 0)
    return code, err.read_text(errors="replace"), time.monotonic() - started, maxrss / 1024


def assert_one_line(result: tuple[int, str, float, float], *words: str) -> str:
    code, stderr, seconds, rss = result
    assert code == 1 and stderr.count("\n") == 1 and "Traceback" not in stderr, stderr[-2000:]
    assert seconds < TIME_LIMIT_S, f"{seconds:.1f} s: {stderr}"
    assert rss < RSS_LIMIT_MB, f"{rss:.0f} MB: {stderr}"
    for w in words:
        assert w in stderr, stderr
    return stderr


def write_big(path: Path, head: str, item: str, size: int) -> Path:
    """A real YAML file of at least size bytes: head, then item repeated (written in chunks)."""
    chunk = item * (1 << 20 // len(item))
    with open(path, "w") as f:
        f.write(head)
        written = len(head)
        while written < size:
            written += f.write(chunk)
    return path


def laughs(levels: int = 9) -> str:
    """A flow list whose aliases expand to 10**levels strings: 'billion laughs' in under 1 KB."""
    parts = ["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    parts += [f"&l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("big")
    return {"config": write_big(d / "config.yaml", "frame_sizes:\n", "  - 64\n", 100 << 20),
            "list": write_big(d / "list.yaml", "", "- {name: a, set: {flows: 8}}\n", 100 << 20)}


@pytest.mark.parametrize("kind, argv", [
    ("config", ["run", "--config"]),
    ("list", ["run", "--config"]),
    ("list", ["campaign"]),
    ("list", ["trial", "--lab"]),
])
def test_a_100_mb_yaml_file_is_refused_before_it_is_read(tmp_path, big, kind, argv):
    size = big[kind].stat().st_size
    assert_one_line(cli(tmp_path, *argv, str(big[kind])), f"is {size} bytes, more than the 65536 zeroloss reads")


def test_a_billion_laughs_lab_file_is_refused_before_it_is_built(tmp_path):
    lab = tmp_path / "lab.yaml"
    lab.write_text(f"dut:\n  ssh: node\n  ssh_options: {laughs()}\ngenerator: {{}}\ntraffic: {{}}\n")
    assert lab.stat().st_size < 1024
    assert_one_line(cli(tmp_path, "trial", "--lab", str(lab)),
                    f"{lab}: its aliases (*name) expand to 1,234,567,910 nodes from 30 written, more than the 10,000 "
                    "more zeroloss reads: write the values out")


@pytest.mark.parametrize("argv, text", [
    (["run", "--config"], "frame_sizes: {}\n"),
    (["campaign"], "name: x\nbase: {{frame_sizes: {}}}\n"),
])
def test_billion_laughs_is_refused_in_configs_and_campaigns(tmp_path, argv, text):
    f = tmp_path / "f.yaml"
    f.write_text(text.format(laughs()))
    assert_one_line(cli(tmp_path, *argv, str(f)), "its aliases (*name) expand to 1,234,567,9")


def test_billion_laughs_is_refused_in_an_rxq_loads_file():
    with pytest.raises(ZeroLossError, match=r"loads file is not YAML or JSON: .*expand to 1,234,567,9"):
        parse_loads(f"pmds: [2]\nports: {laughs()}\n")


def test_a_campaign_of_billions_of_cases_is_refused_before_they_are_listed(tmp_path):
    keys = ["flows", "trial_s", "drain_ms", "vnf_ring", "dut_rxq", "meter_pps", "bridges", "vlan", "frame_sizes"]
    cross = "".join(f"  {k}: [{', '.join(str(v + 1) for v in range(10))}]\n" for k in keys)
    f = tmp_path / "c.yaml"
    f.write_text(f"name: huge\ncases: [{{name: a}}, {{name: b}}, {{name: c}}]\ncross:\n{cross}")
    assert f.stat().st_size < 1024
    assert_one_line(cli(tmp_path, "campaign", str(f)),
                    "campaign 'huge' makes 3,000,000,000 cases (3 case(s) x 10 x 10 x 10 x 10 x 10 x 10 x 10 x 10 x "
                    "10 cross values), more than the 10,000 zeroloss runs", "cross fewer values")


@pytest.mark.parametrize("text, fault", [
    ("a: &x [*x]\n", "the alias *x is inside the node it names (a cycle), at line 1"),
    ("a: &x {b: [c, *x]}\n", "the alias *x is inside the node it names (a cycle), at line 1"),
    ("a: &x [1]\n" + "".join(f"b{i}: *x\n" for i in range(101)), "more than 100 aliases (*name) in one document, "
                                                                  "at line 102"),
    ("a: " + "[" * 101 + "]" * 101 + "\n", "nested too deeply (more than 100 levels), at line 1"),
])
def test_cycles_alias_counts_and_nesting_are_one_line(text, fault):
    with pytest.raises(ZeroLossError) as e:
        yamlio.load(text, "f.yaml")
    assert e.value.message == f"f.yaml: {fault}"


def test_modest_aliases_and_nesting_still_read():
    doc = yamlio.load("base: &b {flows: 8, sizes: &s [64, 128]}\none: *b\ntwo: {sizes: *s}\n"
                      "deep: " + "[" * 99 + "]" * 99 + "\n", "f.yaml")
    assert doc["one"] == doc["base"] and doc["two"]["sizes"] == [64, 128]
    expands = "a: &a [" + ", ".join(["x"] * 999) + "]\n" + "".join(f"b{i}: *a\n" for i in range(10))
    assert len(yamlio.load(expands, "f.yaml")["b9"]) == 999  # 10 x 1,000 more nodes: the limit
    with pytest.raises(ZeroLossError, match="expand to 12,013 nodes from 1,013 written"):
        yamlio.load(expands + "b10: *a\n", "f.yaml")


def test_a_file_at_the_limit_is_read_and_one_over_it_is_not(tmp_path):
    f = tmp_path / "c.yaml"
    head = "frame_sizes: ["
    f.write_text(head + "64," * ((yamlio.MAX_BYTES - len(head) - 4) // 3) + "64]\n")
    size = f.stat().st_size
    assert yamlio.MAX_BYTES - 3 <= size <= yamlio.MAX_BYTES
    started = time.monotonic()
    assert len(config.load(f, {}).frame_sizes) > 20_000
    assert time.monotonic() - started < TIME_LIMIT_S
    f.write_text(f.read_text() + "#" * (yamlio.MAX_BYTES - size + 1))
    with pytest.raises(ZeroLossError, match=f"config file {f} is 65537 bytes, more than the 65536 zeroloss reads"):
        config.load(f, {})


def test_the_largest_lab_file_read_full_of_faults_is_one_line_in_bounded_time(tmp_path):
    """64 KiB of wrong ssh options (32,000 schema faults): one line, exit 1, within the limits."""
    lab = tmp_path / "lab.yaml"
    head, tail = "dut:\n  ssh: node\n  ssh_options: [", "1]\ngenerator: {}\ntraffic: {}\n"
    lab.write_text(head + "1," * ((yamlio.MAX_BYTES - len(head) - len(tail)) // 2) + tail)
    assert yamlio.MAX_BYTES - 2 <= lab.stat().st_size <= yamlio.MAX_BYTES
    assert_one_line(cli(tmp_path, "trial", "--lab", str(lab)), f"{lab}: ")
