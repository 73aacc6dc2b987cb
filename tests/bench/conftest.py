"""Fixtures that start the software bench (real zlgen, real testpmd, hugepages) and stop it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from zeroloss.bench.softbench import BenchSpec, SoftBench
from zeroloss.bench.workspace import Workspace


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


def port_stats(tel, port: int) -> dict:
    return tel.ethdev_stats(port)


def delta(after: dict, before: dict, key: str) -> int:
    return after[key] - before[key]
