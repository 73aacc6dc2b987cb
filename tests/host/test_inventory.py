"""The inventory read from the fixture trees: topology, memory, hugepages, NICs, isolation, IRQs, DMI, OVS."""

import json
import struct

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.inventory import parse_dmi17
from zeroloss.host.report import inventory_dict, inventory_text
from zeroloss.host.sysfs import Root

from .conftest import FIXTURES, make_fixtures


def test_vm_2core_captured_from_this_kind_of_vm(vm2):
    assert [c.id for c in vm2.cpus] == [0, 1]
    assert [(c.node, c.socket, c.siblings) for c in vm2.cpus] == [(0, 0, (0,)), (0, 0, (1,))]
    assert len(vm2.nodes) == 1 and vm2.nodes[0].mem_total_kb == 6383828
    assert vm2.nodes[0].pool(2048).nr == 1024 and vm2.nodes[0].pool(1048576).nr == 0
    (eth0,) = vm2.nics
    assert (eth0.pci, eth0.name, eth0.driver, eth0.node, eth0.mtu, eth0.speed_mbps) == \
        ("0000:00:03.0", "eth0", "virtio-pci", -1, 1400, None)
    assert vm2.cpu_vendor == "AuthenticAMD" and vm2.isolated == () and vm2.iommu_groups == 0
    assert len(vm2.irqs) == 19 and all(i.cpus == (0, 1) for i in vm2.irqs)
    assert [s.name for s in vm2.cstates[0]] == ["POLL", "haltpoll idle"]
    assert " -- " not in vm2.cmdline and "rdinit=/process_api" in vm2.cmdline


def test_r740xd_topology(r740xd):
    assert len(r740xd.cpus) == 72 and r740xd.sockets == 2
    assert [n.id for n in r740xd.nodes] == [0, 1]
    assert r740xd.nodes[0].cpus == tuple(range(0, 72, 2)) and r740xd.nodes[1].cpus == tuple(range(1, 72, 2))
    assert r740xd.cpu(2).siblings == (2, 38) and r740xd.cpu(2).node == 0 and r740xd.cpu(21).node == 1
    assert len({c.siblings for c in r740xd.cpus if c.node == 0}) == 18
    hp = [(n.pool(1048576).nr, n.pool(1048576).free) for n in r740xd.nodes]
    assert hp == [(82, 66), (82, 81)]
    assert r740xd.cpu_vendor == "GenuineIntel" and "pdpe1gb" in r740xd.cpu_flags


def test_r740xd_nics(r740xd):
    by_pci = {n.pci: n for n in r740xd.nics}
    assert len(by_pci) == 10
    assert [p for p, n in by_pci.items() if n.dpdk_bound] == ["0000:3b:00.0", "0000:3b:00.1", "0000:5e:00.0",
                                                              "0000:5e:00.1"]
    ens4f0 = r740xd.nic("ens4f0")
    assert (ens4f0.pci, ens4f0.driver, ens4f0.node, ens4f0.speed_mbps, ens4f0.mtu) == \
        ("0000:af:00.0", "i40e", 1, 25000, 9000)
    assert r740xd.nic("3b:00.1").pci == "0000:3b:00.1" and r740xd.nic("nope") is None


def test_r740xd_kernel_isolation_irqs_dimms(r740xd):
    iso = tuple(range(2, 36)) + tuple(range(38, 72))
    assert r740xd.cmdline_cpus("isolcpus") == iso and r740xd.cmdline_cpus("rcu_nocbs") == iso
    assert r740xd.isolated == iso and r740xd.nohz_full == iso
    assert r740xd.cmdline_args()["hugepages"] == ["164"]
    assert {i.number: i.cpus for i in r740xd.irqs}[98] == (5,)
    assert "i40e-ens4f0-TxRx-0" in {i.number: i.name for i in r740xd.irqs}[98]
    assert len(r740xd.dimms) == 12 and r740xd.dimms[0].size_mb == 16384 and r740xd.memory_channels == 6
    assert r740xd.iommu_units == ["dmar0", "dmar1", "dmar2", "dmar3"] and r740xd.iommu_groups == 8
    assert set(r740xd.governors.values()) == {"performance"}
    assert [(s.name, s.latency_us) for s in r740xd.cstates[5]][-1] == ("C6", 133)


def test_r740xd_ovs_state(r740xd):
    ovs = r740xd.ovs
    assert ovs.dpdk_initialized is True and ovs.socket_mem() == [8192, 1024]
    assert ovs.pmd_cpus() == (2, 12, 21, 22, 32, 38, 48, 57, 58, 68) and ovs.lcore_cpus() == (0, 1, 36, 37)
    dpdk0 = next(i for i in ovs.interfaces if i.name == "dpdk0")
    assert (dpdk0.is_dpdk, dpdk0.effective_mtu, dpdk0.n_rxq, dpdk0.desc("n_rxq_desc"), dpdk0.numa, dpdk0.devargs) \
        == (True, 9000, 1, 2048, 0, "0000:3b:00.0")
    assert [i.name for i in ovs.interfaces if i.is_vhost] == ["vhu1", "vhu2"]


def test_nic_reporting_numa_minus_one(minus1):
    assert {n.pci: n.node for n in minus1.nics} == {"0000:81:00.0": -1, "0000:82:00.0": -1}
    assert minus1.nic("ens1f0").speed_mbps == 100000 and minus1.nic("0000:82:00.0").dpdk_bound
    assert minus1.memory_channels is None and minus1.cmdline_cpus("isolcpus") == ()


def test_single_socket(single):
    assert single.sockets == 1 and len(single.cpus) == 16 and single.cpu(1).siblings == (1, 9)
    assert single.memory_channels == 8 and single.pm_qos_latency_us == 1 and single.tuned_profile == "cpu-partitioning"


def test_isolcpus_flags_are_skipped():
    from zeroloss.host.inventory import Inventory

    inv = Inventory(root="x", cpus=[], nodes=[], nics=[],
                    cmdline="isolcpus=managed_irq,domain,10-12 isolcpus=20 -- x=1")
    assert inv.cmdline_cpus("isolcpus") == (10, 11, 12, 20)
    assert "x" not in inv.cmdline_args()


def test_dmi_type17_records():
    dmi17 = make_fixtures().dmi17
    assert parse_dmi17(dmi17("A1", "CPU1", 16384)).locator == "A1"
    assert parse_dmi17(dmi17("A7", "CPU1", 0)) is None  # empty slot
    ext = bytearray(dmi17("B2", "CPU2", 0x7FFF))
    ext[1] = 0x22
    ext[0x1B:0x1B] = bytes(7)
    struct.pack_into("<I", ext, 0x1C, 65536)
    assert parse_dmi17(bytes(ext)).size_mb == 65536  # extended size field
    assert parse_dmi17(b"\x11\x05") is None


@pytest.mark.parametrize("path, fault", [("/nonexistent/root", "is not a directory"),
                                         (str(FIXTURES / "r740xd" / "ovs"), "has neither sys/ nor proc/")])
def test_bad_root_is_a_user_error(path, fault):
    with pytest.raises(ZeroLossError, match=fault):
        Root(path)


def test_json_and_text_render(r740xd):
    doc = json.loads(json.dumps(inventory_dict(r740xd), default=str))
    assert doc["memory_channels_estimate"] == 6 and len(doc["cpus"]) == 72
    text = inventory_text(r740xd)
    assert "72 CPUs, 2 socket(s), 2 NUMA node(s)" in text
    assert "0000:af:00.0  ens4f0      i40e     1    25  9000" in text
    assert "6 channel(s) per socket" in text and "dpdk0" in text
