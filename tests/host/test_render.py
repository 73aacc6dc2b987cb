"""The plan rendered as ovs-vsctl commands, kernel arguments, tuned variables, TripleO parameters and flavor."""

import pytest
import yaml

from zeroloss.host.plan import Intent, make_plan
from zeroloss.host.render import render


@pytest.fixture(scope="module")
def plan(r740xd):
    return make_plan(r740xd, Intent(mtu=9000, pmd_cores_per_node=4))


def test_ovs_vsctl(plan):
    lines = render(plan, "ovs-vsctl").splitlines()
    oc = "ovs-vsctl --no-wait set Open_vSwitch . other_config:"
    assert f'{oc}dpdk-socket-mem="3072,1024"   # MB per NUMA node' in lines
    assert f"{oc}dpdk-lcore-mask=0x3000000003   # CPUs 0-1,36-37" in lines
    assert f"{oc}pmd-cpu-mask=0x15c00000015c   # CPUs 2-4,6,8,38-40,42,44" in lines
    assert f'{oc}dpdk-extra="-n 6"   # memory channels' in lines
    assert ("ovs-vsctl --may-exist add-port br-dpdk dpdk3 -- set Interface dpdk3 type=dpdk "
            "options:dpdk-devargs=0000:5e:00.1 mtu_request=9000 options:n_rxq=2 options:n_rxq_desc=4096 "
            "options:n_txq_desc=4096") in lines
    assert not any(line.startswith("driverctl") for line in lines)  # the ports are on vfio-pci already


def test_cmdline_and_tuned(plan):
    cmd = render(plan, "cmdline").splitlines()
    assert cmd[1].startswith("default_hugepagesz=1G hugepagesz=1G hugepages=0:89,1:90 intel_iommu=on iommu=pt "
                             "isolcpus=2-35,38-71")
    assert render(plan, "tuned").splitlines()[1:] == ["isolated_cores=2-35,38-71",
                                                      "no_balance_cores=2-4,6,8,38-40,42,44"]


def test_tripleo_environment_parses_with_the_usual_names(plan):
    doc = yaml.safe_load(render(plan, "tripleo"))
    p = doc["parameter_defaults"]["ComputeOvsDpdkParameters"]
    assert p == {
        "KernelArgs": " ".join(plan.kernel_args), "TunedProfileName": "cpu-partitioning",
        "IsolCpusList": "2-35,38-71", "OvsDpdkCoreList": "0-1,36-37", "OvsPmdCoreList": "2-4,6,8,38-40,42,44",
        "NovaComputeCpuDedicatedSet": "5,7,9-35,41,43,45-71", "NovaComputeCpuSharedSet": "0-1,36-37",
        "OvsDpdkSocketMemory": "3072,1024", "OvsDpdkMemoryChannels": "6",
        "NovaReservedHugePages": ["node:0,size:1GB,count:3", "node:1,size:1GB,count:1"],
        "NovaReservedHostMemory": 4096, "NumDpdkInterfaceRxQueues": 2, "NovaLibvirtRxQueueSize": 1024,
        "NovaLibvirtTxQueueSize": 1024}


def test_flavor(plan):
    cmd = render(plan, "flavor").splitlines()[1]
    assert cmd.startswith("openstack flavor set <flavor> --property hw:cpu_policy=dedicated")
    for prop in ("hw:mem_page_size=1GB", "hw:emulator_threads_policy=isolate", "hw:vif_multiqueue_enabled=true"):
        assert f"--property {prop}" in cmd


def test_summary_and_all(plan):
    text = render(plan, "summary")
    assert "  per-port variant: 11264,1024" in text and "  OVS mempool model: node 0: 2544 MiB" in text
    assert text.count("    why: ") == 13
    assert [line for line in render(plan, "all").splitlines() if line.startswith("== ")] == [
        "== summary ==", "== ovs-vsctl ==", "== cmdline ==", "== tuned ==", "== tripleo ==", "== flavor =="]


def test_unbound_ports_get_a_driverctl_line(r740xd):
    plan = make_plan(r740xd, Intent(ports=("ens4f0",), mtu=9000))
    assert "driverctl set-override 0000:af:00.0 vfio-pci" in render(plan, "ovs-vsctl")
    assert plan.ports[0].node == 1 and plan.pmd_by_node[1] == (3, 39)
