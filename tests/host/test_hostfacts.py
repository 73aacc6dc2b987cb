"""Kernel release, PCIe links, processes and per-CPU interrupt counts as the inventory reads them."""

import pytest

from zeroloss.host.hostfacts import (
    PcieLink,
    interrupt_counts,
    kernel_release,
    kernel_version,
    lane_gbps,
    parse_link_speed,
    parse_link_width,
    parse_stat,
    processes,
)
from zeroloss.host.sysfs import Root

from .conftest import FIXTURES


@pytest.mark.parametrize("text, gts", [("8.0 GT/s PCIe", 8.0), ("8 GT/s", 8.0), ("2.5 GT/s", 2.5),
                                       ("16.0 GT/s PCIe", 16.0), ("Unknown", None), ("", None), (None, None)])
def test_link_speed_in_both_kernel_formats(text, gts):
    assert parse_link_speed(text) == gts


@pytest.mark.parametrize("text, width", [("8", 8), ("x16", 16), ("0", None), ("Unknown", None), (None, None)])
def test_link_width(text, width):
    assert parse_link_width(text) == width


def test_pcie_bandwidth_per_direction():
    assert lane_gbps(8.0, 4) == pytest.approx(31.51, abs=0.01)  # gen3 x4: 128b/130b
    assert lane_gbps(8.0, 8) == pytest.approx(63.02, abs=0.01)
    assert lane_gbps(2.5, 8) == 16.0 and lane_gbps(5.0, 8) == 32.0  # 8b/10b
    assert lane_gbps(16.0, 8) == pytest.approx(126.03, abs=0.01)
    assert lane_gbps(None, 8) is None
    link = PcieLink(8.0, 4, 8.0, 8)
    assert link.degraded and link.text() == "gen3 x4 (8.0 GT/s)" and link.text("max") == "gen3 x8 (8.0 GT/s)"
    assert not PcieLink(8.0, 8, 8.0, 8).degraded


def test_kernel_release_and_version(tmp_path):
    assert kernel_release(Root(FIXTURES / "r740xd")) == "4.18.0-193.14.3.el8_2.x86_64"
    (tmp_path / "proc").mkdir()
    assert kernel_release(Root(tmp_path)) == ""
    (tmp_path / "proc" / "version").write_text("Linux version 5.15.0-91-generic (buildd@lcy02) (gcc ...) #101\n")
    assert kernel_release(Root(tmp_path)) == "5.15.0-91-generic"
    assert kernel_version("4.18.0-193.el8") == (4, 18) and kernel_version("6.1.0-18-amd64") == (6, 1)
    assert kernel_version("") is None and kernel_version("unknown") is None


def test_stat_with_odd_comm_and_cut_short():
    line = "77 (a (b) c) S 1 77 77 0 -1 4194560 " + " ".join(["0"] * 29) + " 9 0 0"
    assert parse_stat(line) == ("a (b) c", 4194560, 9)
    assert parse_stat("77 (x) S 1") is None and parse_stat("garbage") is None


def test_processes_leave_kernel_threads_out():
    procs = processes(Root(FIXTURES / "r740xd"))
    assert [(p.pid, p.comm, p.last_cpu) for p in procs] == [(1, "systemd", 0), (1432, "ovs-vswitchd", 36),
                                                             (2210, "collectd", 12), (2388, "irqbalance", 37)]
    assert procs[0].allowed == (0, 1, 36, 37)


def test_interrupt_counts_per_cpu(tmp_path):
    counts = interrupt_counts(Root(FIXTURES / "r740xd"))
    assert counts[98] == {5: 100} and counts[31] == {36: 100} and counts[0] == {0: 100}
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "interrupts").write_text(
        "           CPU0       CPU1\n  0:         12          3   IO-APIC   2-edge      timer\n"
        "NMI:          0          0   Non-maskable interrupts\n 40:          0          7   PCI-MSI eth0\n")
    assert interrupt_counts(Root(tmp_path)) == {0: {0: 12, 1: 3}, 40: {1: 7}}
