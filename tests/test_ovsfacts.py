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


def foreign_imports(path: Path) -> set[str]:
    """The modules a file of loss/ imports that a pure module must not: any of zeroloss but core/ and loss/ itself
    (a relative import going up counts), and the standard library's ways of reaching a device or a process."""
    mods = set()
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, ast.ImportFrom):
            mods.add("." * n.level + (n.module or ""))
        elif isinstance(n, ast.Import):
            mods |= {a.name for a in n.names}
    ours = {m for m in mods if m.startswith(("zeroloss", "."))}
    return ({m for m in ours if m.startswith("..") or (m.startswith("zeroloss.") and m.split(".")[1] not in
                                                       ("core", "loss"))}
            | {m for m in mods if m.split(".")[0] in ("subprocess", "socket", "os", "shutil")})


def test_the_loss_package_imports_no_device_layer():
    """loss/ (the ledger, its readers, the diagnosis and its rules) is pure: its modules import core/ and each other
    (ovsfacts holds the OVS facts they need), never drivers/, host/ or anything above, nor start a process."""
    files = sorted((SRC.parent / "loss").glob("*.py"))
    assert {"diagnose.py", "rulebase.py", "rules_ovs.py", "ledger.py"} <= {f.name for f in files}
    assert {f.name: foreign_imports(f) for f in files if foreign_imports(f)} == {}


def test_the_import_check_sees_a_device_import(tmp_path):
    """The check above refuses an absolute or a parent-relative import of another layer, and subprocess; core and
    a sibling pass."""
    f = tmp_path / "x.py"
    f.write_text("from zeroloss.drivers.dut import ovs\nfrom ..host import sriov\nimport subprocess\n"
                 "from zeroloss.core.frames import largest\nfrom .rulebase import rule\nimport zeroloss.results\n")
    assert foreign_imports(f) == {"zeroloss.drivers.dut", "..host", "subprocess", "zeroloss.results"}
