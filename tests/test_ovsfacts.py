"""ovsfacts: the pure OVS facts the diagnosis shares with host/ and dut/ (parsers and memory formulas)."""

import ast
from pathlib import Path

from zeroloss.core import ovsfacts
from zeroloss.drivers.dut import ovsstats
from zeroloss.host import memory

SRC = Path(ovsfacts.__file__).parent


def test_memory_formulas():
    assert ovsfacts.tripleo_socket_mem([9000]) == 3072  # (9216 + 800) * 262144 B + 512 MB -> 3,016 MB -> 3 GB
    assert ovsfacts.tripleo_socket_mem([9000] * 4, per_port=True) == 11264  # the whitepaper's four ports
    assert ovsfacts.tripleo_socket_mem([]) == ovsfacts.TRIPLEO_MIN_MB
    assert ovsfacts.ovs_buf_size(1500) == 2176
    assert ovsfacts.ovs_shared_mbufs(999) == ovsfacts.MAX_NB_MBUF and ovsfacts.ovs_shared_mbufs(998) == 16384


def test_parsers():
    text = ("pmd thread numa_id 0 core_id 2:\n  isolated : true\n"
            "  port: dpdk0           queue-id:  1 (enabled)   pmd usage: 37 %\n")
    assert ovsfacts.parse_pmd_rxq(text) == [{"core": 2, "numa": 0, "isolated": True, "port": "dpdk0", "queue": 1,
                                             "enabled": True, "usage_pct": 37}]
    dpctl = "  port 1: dpdk0 (dpdk: configured_rx_queues=2, mtu=9000, requested_rx_queues=2)\n"
    assert ovsfacts.parse_dpctl_config(dpctl)["dpdk0"]["mtu"] == 9000


def test_one_definition():
    """host/memory and dut/ovsstats hand out ovsfacts' functions, not copies of them."""
    assert memory.tripleo_socket_mem is ovsfacts.tripleo_socket_mem
    assert memory.ovs_shared_mbufs is ovsfacts.ovs_shared_mbufs
    assert ovsstats.parse_pmd_rxq is ovsfacts.parse_pmd_rxq


def test_diagnose_imports_no_device_layer():
    """diagnose is pure: it imports neither dut/ nor host/ (ovsfacts holds what it needs)."""
    tree = ast.parse((SRC.parent / "loss" / "diagnose.py").read_text())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in mods if m and m.split(".")[0] in ("dut", "host", "drivers")}, mods
