"""`host plan`: every field of the plan for the R740xd-like fixture, the other fixtures, and refusals."""

import dataclasses

import pytest

from zeroloss.core.cpuset import parse_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.host import memory as mem
from zeroloss.host.plan import Intent, make_plan

R740_INTENT = Intent(mtu=9000, pmd_cores_per_node=4)


@pytest.fixture(scope="module")
def plan(r740xd):
    return make_plan(r740xd, R740_INTENT)


def test_r740xd_ports(plan):
    assert [(p.name, p.pci, p.node, p.reported_node, p.mtu, p.n_rxq, p.rxq_desc, p.txq_desc, p.driver)
            for p in plan.ports] == [
        ("dpdk0", "0000:3b:00.0", 0, 0, 9000, 2, 4096, 4096, "vfio-pci"),
        ("dpdk1", "0000:3b:00.1", 0, 0, 9000, 2, 4096, 4096, "vfio-pci"),
        ("dpdk2", "0000:5e:00.0", 0, 0, 9000, 2, 4096, 4096, "vfio-pci"),
        ("dpdk3", "0000:5e:00.1", 0, 0, 9000, 2, 4096, 4096, "vfio-pci")]
    assert plan.nodes == [0, 1]


def test_r740xd_cpu_partitioning(plan):
    # host CPUs = the whitepaper's dpdk-lcore-mask 0x3000000003; isolcpus = its 2-35,38-71
    assert plan.housekeeping == (0, 1, 36, 37)
    assert plan.pmd_by_node == {0: (2, 4, 6, 8, 38, 40, 42, 44), 1: (3, 39)}
    assert plan.pmd_cpus == (2, 3, 4, 6, 8, 38, 39, 40, 42, 44)
    assert set(plan.vm_cpus) == set(range(72)) - {0, 1, 36, 37} - set(plan.pmd_cpus) and len(plan.vm_cpus) == 58
    assert plan.isolated == tuple(range(2, 36)) + tuple(range(38, 72))


def test_r740xd_memory(plan):
    assert plan.socket_mem == {0: 3072, 1: 1024} and plan.socket_mem_tripleo == {0: 3072, 1: 1024}
    assert plan.socket_mem_per_port == {0: 11264, 1: 1024}  # the whitepaper's 11,264 MB for 4 x MTU 9000
    assert [(p.node, p.buf_size, p.mbufs, p.ports) for p in plan.ovs_pools] == \
        [(0, 9344, 262144, ("dpdk0", "dpdk1", "dpdk2", "dpdk3"))]
    assert plan.ovs_need_mib == {0: 262144 * 10176 / mem.MiB} == {0: 2544.0}
    assert plan.vm_memory_gb == {0: 93 - 4 - 3, 1: 94 - 4 - 1}  # node GiB - host reserve - OVS
    assert plan.hugepages_1g == {0: 89, 1: 90}
    assert plan.memory_channels == 6  # 12 DIMMs on 2 sockets; the whitepaper set dpdk-extra="-n 6"


def test_r740xd_queues_and_guest_settings(plan):
    assert (plan.rxq, plan.descriptors, plan.vhost_ring, plan.emulator_policy) == (2, 4096, 1024, "isolate")
    # the fixture runs RHEL 8's 4.18: no hugepages=N:C, so 90 on each node at boot and a unit lowers node 0 to 89
    assert plan.kernel_release == "4.18.0-193.14.3.el8_2.x86_64"
    assert plan.kernel_args == [
        "default_hugepagesz=1G", "hugepagesz=1G", "hugepages=180", "intel_iommu=on", "iommu=pt",
        "isolcpus=2-35,38-71", "nohz=on", "nohz_full=2-35,38-71", "rcu_nocbs=2-35,38-71", "skew_tick=1",
        "processor.max_cstate=1", "intel_idle.max_cstate=0"]
    assert plan.hugepages_sysfs == {0: 89, 1: 90}
    assert "older than 5.16" in plan.reasons["kernel_args"] and "freeing cannot fail" in plan.reasons["kernel_args"]
    assert plan.warnings == []


def test_every_value_has_a_reason(plan):
    assert set(plan.reasons) == {"housekeeping", "pmd", "vm_cpus", "isolated", "socket_mem", "vm_memory", "hugepages",
                                 "memory_channels", "rxq", "descriptors", "vhost_ring", "emulator_policy",
                                 "kernel_args", "pmd_auto_lb", "pmd_auto_lb_load", "pmd_auto_lb_improvement",
                                 "pmd_auto_lb_interval"}
    assert "Table 1" in plan.reasons["rxq"] and "800" in plan.reasons["socket_mem"]
    assert "DMI" in plan.reasons["memory_channels"]


def test_single_socket_plan_is_what_its_fixture_applied(single):
    plan = make_plan(single, Intent(mtu=9000, pmd_cores_per_node=2, vm_memory_gb=50))
    oc = single.ovs.other_config
    assert plan.pmd_cpus == parse_mask(oc["pmd-cpu-mask"]) == (1, 2, 9, 10)
    assert plan.housekeeping == parse_mask(oc["dpdk-lcore-mask"]) == (0, 8)
    assert plan.socket_mem_list() == oc["dpdk-socket-mem"] == "3072"
    assert f"-n {plan.memory_channels}" == oc["dpdk-extra"]
    assert set(plan.kernel_args) <= set(single.cmdline.split())
    assert plan.hugepages_1g == {0: single.nodes[0].pool(1048576).nr} == {0: 53}
    assert plan.pmd_by_node == {0: (1, 2, 9, 10)} and plan.vm_cpus == (3, 4, 5, 6, 7, 11, 12, 13, 14, 15)


def test_vm_2core(vm2):
    plan = make_plan(vm2, Intent(ports=("eth0",)))
    assert (plan.housekeeping, plan.pmd_by_node, plan.vm_cpus) == ((0,), {0: (1,)}, ())
    assert plan.socket_mem == {0: 2048} and plan.hugepages_1g == {0: 2} and plan.memory_channels == 4
    assert "intel_iommu=on" not in plan.kernel_args and "iommu=pt" in plan.kernel_args  # AMD
    assert "intel_idle.max_cstate=0" not in plan.kernel_args
    assert any("virtio-pci" in w and "driverctl set-override 0000:00:03.0 vfio-pci" in w for w in plan.warnings)
    assert any("no CPU is left for VMs" in w for w in plan.warnings)


def test_nic_with_numa_minus_one_is_planned_on_node_0_with_a_warning(minus1):
    plan = make_plan(minus1, Intent(ports=("0000:82:00.0",)))
    (port,) = plan.ports
    assert (port.node, port.reported_node) == (0, -1)
    assert plan.pmd_by_node == {0: (1,), 1: (5,)} and plan.housekeeping == (0, 4) and plan.vm_cpus == (2, 3, 6, 7)
    assert plan.socket_mem == {0: 2048, 1: 1024}
    assert any("reports NUMA node -1" in w and "SOCKET0" in w for w in plan.warnings)


def test_formula_choice_override_and_models(r740xd):
    per_port = make_plan(r740xd, dataclasses.replace(R740_INTENT, socket_mem_formula="per-port"))
    assert per_port.socket_mem == {0: 11264, 1: 1024}
    low = make_plan(r740xd, dataclasses.replace(R740_INTENT, socket_mem_mb=2048))
    assert low.socket_mem == {0: 2048, 1: 1024}
    assert any("node 0: dpdk-socket-mem 2048 MB is below the 2544 MiB" in w and "raise it to 3072 MB" in w
               for w in low.warnings)
    pp = make_plan(r740xd, dataclasses.replace(R740_INTENT, per_port_memory=True))
    n = (2 * 4096 + 11 * 4096 + 2 * 32 + 16384)  # 2 rxq, 10 PMDs + 1 txq, 4096 descriptors
    assert [p.mbufs for p in pp.ovs_pools] == [n] * 4
    assert pp.ovs_need_mib[0] == pytest.approx(4 * n * 10176 / mem.MiB)
    vhost = make_plan(r740xd, dataclasses.replace(R740_INTENT, vhost_ports=2))
    assert vhost.ovs_pools[0].ports == ("dpdk0", "dpdk1", "dpdk2", "dpdk3", "vhu0.0", "vhu0.1")
    new_kernel = dataclasses.replace(r740xd, kernel_release="5.16.0-1-amd64")
    even = make_plan(new_kernel, dataclasses.replace(R740_INTENT, vm_memory_gb=40, pmd_cores_other_nodes=0))
    assert even.hugepages_1g == {0: 43, 1: 41} and 1 not in even.pmd_by_node
    assert "hugepages=0:43,1:41" in even.kernel_args and even.hugepages_sysfs == {}
    same = make_plan(r740xd, dataclasses.replace(R740_INTENT, socket_mem_mb=1024, vm_memory_gb=40))
    assert "hugepages=82" in same.kernel_args  # equal counts: one total, split evenly by the kernel


@pytest.mark.parametrize("intent, fault", [
    (Intent(mtu=9000, pmd_cores_per_node=18), "node 0 has 17 physical core(s) left"),
    (Intent(mtu=9703), "--mtu 9703 is outside 68..9702 B"),
    (Intent(descriptors=3000), "--descriptors 3000 is not a power of 2"),
    (Intent(descriptors=8192), "--descriptors 8192 is not a power of 2 up to 4096"),
    (Intent(ports=("nope",)), "no NIC 'nope' on this host (NICs: eno1 (0000:19:00.0)"),
    (Intent(pmd_cores_per_node=0), "--pmd-cores-per-node must be at least 1"),
])
def test_impossible_intents_are_user_errors(r740xd, intent, fault):
    with pytest.raises(ZeroLossError, match=fault.replace("(", r"\(").replace(")", r"\)")):
        make_plan(r740xd, intent)


def test_no_dpdk_port_and_no_ports_given(vm2):
    with pytest.raises(ZeroLossError, match="no NIC is bound to a DPDK driver") as e:
        make_plan(vm2, Intent())
    assert "--ports" in e.value.remedy


def test_hugepages_per_node_syntax_needs_linux_5_16(r740xd):
    def plan_on(release):
        return make_plan(dataclasses.replace(r740xd, kernel_release=release), R740_INTENT)

    new = plan_on("6.1.0-18-amd64")
    assert "hugepages=0:89,1:90" in new.kernel_args and new.hugepages_sysfs == {}
    assert "Linux 6.1.0-18-amd64 reads" in new.reasons["kernel_args"]
    for release in ("5.15.0-91-generic", "", "unknown"):
        old = plan_on(release)
        assert "hugepages=180" in old.kernel_args and old.hugepages_sysfs == {0: 89, 1: 90}, release
    assert "version unknown" in plan_on("").reasons["kernel_args"]


def test_old_kernel_when_a_node_cannot_hold_the_largest_count(r740xd):
    """Node 0 has 93 GB: 92 pages there at boot leave it under 2 GB, so boot with the total and set each node."""
    small = dataclasses.replace(r740xd.nodes[0], mem_total_kb=93 * 1024 * 1024)
    big = dataclasses.replace(r740xd.nodes[1], mem_total_kb=100 * 1024 * 1024)
    plan = make_plan(dataclasses.replace(r740xd, nodes=[small, big]), R740_INTENT)
    assert plan.hugepages_1g == {0: 89, 1: 96} and "hugepages=185" in plan.kernel_args
    assert plan.hugepages_sysfs == {0: 89, 1: 96}
    assert any("node(s) 0 cannot hold 96 pages at boot" in w and "may fall short" in w for w in plan.warnings)


def test_more_pages_than_the_node_holds_is_an_error_with_numbers(r740xd):
    with pytest.raises(ZeroLossError) as e:
        make_plan(r740xd, dataclasses.replace(R740_INTENT, vm_memory_gb=95))
    assert str(e.value).startswith("node 0: 98 1 GB pages planned (3 GB OVS socket memory + 95 GB guests), but the "
                                   "node has 93 GB (MemTotal 97549428 kB)")
    assert "lower --vm-memory-gb to at most 86" in e.value.remedy
    fits = make_plan(r740xd, dataclasses.replace(R740_INTENT, vm_memory_gb=90))  # 93 pages: fits, host squeezed
    assert any("node 0: 93 GB of hugepages + 4 GB for the host exceed its 93 GB" in w for w in fits.warnings)


def test_pmd_auto_lb(plan, r740xd):
    assert plan.pmd_auto_lb == {"pmd-auto-lb": "true", "pmd-auto-lb-load-threshold": "70",
                                "pmd-auto-lb-improvement-threshold": "25", "pmd-auto-lb-rebal-interval": "5"}
    assert "OVS default 95" in plan.reasons["pmd_auto_lb_load"] and "go-live" in plan.reasons["pmd_auto_lb"]
    off = make_plan(r740xd, dataclasses.replace(R740_INTENT, pmd_auto_lb=False))
    assert off.pmd_auto_lb == {} and off.reasons["pmd_auto_lb"].startswith("off")
