"""Fixtures that start the software bench (real zlgen, real testpmd, hugepages) and stop it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zeroloss.drivers.bench.softbench import BenchSpec, SoftBench
from zeroloss.drivers.bench.workspace import Workspace


@pytest.fixture(autouse=True)
def no_runtime_folder_left():
    """After every bench test: no DPDK runtime folder of a zeroloss that is gone (our prefixes are zl<pid>s...).
    Such a folder is a leak: the processes stopped but their /var/run/dpdk entry stayed."""
    yield
    leaked = [d for d in Path("/var/run/dpdk").glob("zl*")
              if (m := re.match(r"zl(\d+)s", d.name)) and not Path(f"/proc/{m.group(1)}").exists()]
    for d in leaked:  # one leak is reported once, not by every later test
        shutil.rmtree(d, ignore_errors=True)
    assert not leaked, f"DPDK runtime folders left: {[d.name for d in leaked]}"


def bench(spec: BenchSpec):
    ws = Workspace()
    b = SoftBench(spec, ws).start()
    try:
        yield b
    finally:
        b.stop()
        ws.close()


@pytest.fixture(scope="module")
def p2p_memif():
    """zlgen <-memif-> testpmd io <-memif-> zlgen, frames up to 1518 B."""
    yield from bench(BenchSpec(dut="testpmd", link="memif"))


@pytest.fixture(scope="module")
def p2p_vhost_jumbo():
    """zlgen (virtio-user) <-> testpmd io (vhost-user) <-> zlgen, frames up to 9000 B."""
    yield from bench(BenchSpec(dut="testpmd", link="vhost", max_frame=9000))


@pytest.fixture(scope="module")
def loopback():
    """zlgen's two ports joined by one memif wire, no DUT."""
    yield from bench(BenchSpec(dut="none", link="memif"))


@pytest.fixture(scope="session")
def ovs_p2p_run(tmp_path_factory):
    """One short `zeroloss run` on ovs-p2p at 64 B, shared by the tests that each read what every trial of such a run
    stores (its telemetry: test_telemetry_bench; its interference and PMD iterations: test_interference_bench):
    (the finished process, its result file). Only the file outlives the run: no bench is held between the tests."""
    out = tmp_path_factory.mktemp("ovs_p2p_run") / "r.json"
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "run", "--topology", "ovs-p2p", "--frame-sizes", "64",
                        "--trial", "1", "--validation", "1", "--granularity", "20", "--warmup", "0", "--flows", "64",
                        "--latency-loads", "none", "-q", "-o", str(out)], capture_output=True, text=True, timeout=600)
    return r, out


def port_stats(tel, port: int) -> dict:
    return tel.ethdev_stats(port)


def delta(after: dict, before: dict, key: str) -> int:
    return after[key] - before[key]
