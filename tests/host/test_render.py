"""The plan rendered as ovs-vsctl commands, kernel arguments, tuned variables, TripleO parameters, EDPM variables, a
PerformanceProfile and flavor. The EDPM and PerformanceProfile outputs of the R740xd fixture are golden files
(tests/host/golden/), compared exactly; after an intended change regenerate them with

    ZEROLOSS_REGOLDEN=1 .venv/bin/pytest -q tests/host/test_render.py -k golden
"""

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from zeroloss.core.cpuset import format_list
from zeroloss.host.plan import Intent, make_plan
from zeroloss.host.render import FORMATS, render

GOLDEN = Path(__file__).resolve().parent / "golden"
R740_INTENT = Intent(mtu=9000, pmd_cores_per_node=4)


@pytest.fixture(scope="module")
def plan(r740xd):
    return make_plan(r740xd, R740_INTENT)


def test_ovs_vsctl(plan):
    lines = render(plan, "ovs-vsctl").splitlines()
    oc = "ovs-vsctl --no-wait set Open_vSwitch . other_config:"
    assert f'{oc}dpdk-socket-mem="3072,1024"   # MB per NUMA node' in lines
    assert f"{oc}dpdk-lcore-mask=0x3000000003   # CPUs 0-1,36-37" in lines
    assert f"{oc}pmd-cpu-mask=0x15c00000015c   # CPUs 2-4,6,8,38-40,42,44" in lines
    assert f'{oc}dpdk-extra="-n 6"   # memory channels' in lines
    assert [line for line in lines if "pmd-auto-lb" in line] == [
        f"{oc}pmd-auto-lb=true", f"{oc}pmd-auto-lb-load-threshold=70", f"{oc}pmd-auto-lb-improvement-threshold=25",
        f"{oc}pmd-auto-lb-rebal-interval=5"]
    assert ("ovs-vsctl --may-exist add-port br-dpdk dpdk3 -- set Interface dpdk3 type=dpdk "
            "options:dpdk-devargs=0000:5e:00.1 mtu_request=9000 options:n_rxq=2 options:n_rxq_desc=4096 "
            "options:n_txq_desc=4096") in lines
    assert not any(line.startswith("driverctl") for line in lines)  # the ports are on vfio-pci already


def test_cmdline_and_tuned(plan):
    cmd = render(plan, "cmdline").splitlines()
    assert cmd[1].startswith("default_hugepagesz=1G hugepagesz=1G hugepages=180 intel_iommu=on iommu=pt "
                             "isolcpus=2-35,38-71")
    unit = cmd[cmd.index("[Unit]"):]  # the fixture's 4.18 kernel: the boot unit lowers node 0 to 89 pages
    assert "DefaultDependencies=no" in unit and "Before=openvswitch.service ovs-vswitchd.service libvirtd.service " \
        "virtqemud.service" in unit
    assert [line for line in unit if line.startswith("ExecStart=")] == [
        "ExecStart=/bin/sh -c 'echo 89 > /sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages'",
        "ExecStart=/bin/sh -c 'echo 90 > /sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages'"]
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
        "NovaReservedHostMemory": 4096, "NovaLibvirtRxQueueSize": 1024,
        "NovaLibvirtTxQueueSize": 1024, "OvsPmdAutoLb": True, "OvsPmdLoadThreshold": "70",
        "OvsPmdImprovementThreshold": "25", "OvsPmdRebalInterval": "5"}
    assert "install zeroloss-hugepages.service" in render(plan, "tripleo")
    # a global parameter (tripleo-heat-templates overcloud.j2.yaml), beside the role's, not inside them
    assert doc["parameter_defaults"]["NumDpdkInterfaceRxQueues"] == 2


def test_per_port_memory_reaches_the_deployer_outputs(r740xd):
    plan = make_plan(r740xd, dataclasses.replace(R740_INTENT, per_port_memory=True))
    assert "other_config:per-port-memory=true" in render(plan, "ovs-vsctl")
    for fmt in ("tripleo", "edpm"):
        text = " ".join(render(plan, fmt).replace("#", " ").split())
        assert "ovs-vsctl set Open_vSwitch . other_config:per-port-memory=true" in text, fmt
    assert "per-port-memory" not in render(make_plan(r740xd, R740_INTENT), "tripleo")


def test_edpm_has_no_lcore_list_removed_upstream(plan):
    # edpm-ansible PR #876 (2025-02-07) removed edpm_ovs_dpdk_lcore_list from roles/edpm_ovs_dpdk
    assert "edpm_ovs_dpdk_lcore_list" not in render(plan, "edpm")


@pytest.mark.parametrize("version, ovs_dpdk", [("", False), ("4.22", False), ("4.23", True), ("5.0.1", True)])
def test_performance_profile_ovs_dpdk_cpus_by_openshift_version(r740xd, version, ovs_dpdk):
    plan = make_plan(r740xd, dataclasses.replace(R740_INTENT, ocp_version=version))
    text = render(plan, "performance-profile")
    cpu = yaml.safe_load(text)["spec"]["cpu"]
    if ovs_dpdk:  # cluster-node-tuning-operator release-4.23: spec.cpu.ovsDpdk, no set overlapping another
        assert cpu == {"isolated": format_list(plan.vm_cpus), "ovsDpdk": format_list(plan.pmd_cpus),
                       "reserved": "0-1,36-37"}
    else:
        assert cpu == {"isolated": "2-35,38-71", "reserved": "0-1,36-37"}
        assert "give --ocp-version 4.23" in " ".join(text.split())
    assert "OpenShift has no PerformanceProfile field for OVS-DPDK" not in text


def test_flavor(plan):
    cmd = render(plan, "flavor").splitlines()[1]
    assert cmd.startswith("openstack flavor set <flavor> --property hw:cpu_policy=dedicated")
    for prop in ("hw:mem_page_size=1GB", "hw:emulator_threads_policy=isolate", "hw:vif_multiqueue_enabled=true"):
        assert f"--property {prop}" in cmd


def test_summary_and_all(plan):
    text = render(plan, "summary")
    assert "  per-port variant: 11264,1024" in text and "  OVS mempool model: node 0: 2544 MiB" in text
    assert text.count("    why: ") == 17
    assert "  set per node at boot: zeroloss-hugepages.service (kernel 4.18.0-193.14.3.el8_2.x86_64 < 5.16)" in text
    assert "  pmd-auto-lb-load-threshold: 70" in text
    assert [line for line in render(plan, "all").splitlines() if line.startswith("== ")] == [
        "== summary ==", "== ovs-vsctl ==", "== cmdline ==", "== tuned ==", "== tripleo ==", "== edpm ==",
        "== performance-profile ==", "== flavor =="]


def test_unbound_ports_get_a_driverctl_line(r740xd):
    plan = make_plan(r740xd, Intent(ports=("ens4f0",), mtu=9000))
    assert "driverctl set-override 0000:af:00.0 vfio-pci" in render(plan, "ovs-vsctl")
    assert plan.ports[0].node == 1 and plan.pmd_by_node[1] == (3, 39)


@pytest.mark.parametrize("fmt", ["performance-profile", "edpm"])
def test_golden_outputs_of_the_r740xd(plan, fmt):
    """`zeroloss host plan --root tests/fixtures/host/r740xd --mtu 9000 --pmd-cores-per-node 4 --format FMT`."""
    path = GOLDEN / f"r740xd-{fmt}.yaml"
    text = render(plan, fmt) + "\n"
    if os.environ.get("ZEROLOSS_REGOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"regenerate with ZEROLOSS_REGOLDEN=1 if the change is intended: {path}"


def test_performance_profile_fields(plan):
    doc = yaml.safe_load(render(plan, "performance-profile"))
    assert (doc["apiVersion"], doc["kind"]) == ("performance.openshift.io/v2", "PerformanceProfile")
    spec = doc["spec"]
    assert spec["cpu"] == {"isolated": "2-35,38-71", "reserved": "0-1,36-37"}
    assert spec["hugepages"] == {"defaultHugepagesSize": "1G", "pages": [{"count": 89, "node": 0, "size": "1G"},
                                                                         {"count": 90, "node": 1, "size": "1G"}]}
    assert spec["numa"] == {"topologyPolicy": "single-numa-node"} and spec["realTimeKernel"] == {"enabled": False}
    assert spec["workloadHints"] == {"highPowerConsumption": True, "perPodPowerManagement": False, "realTime": True}
    assert spec["globallyDisableIrqLoadBalancing"] is True
    assert spec["nodeSelector"] == {"node-role.kubernetes.io/worker-cnf": ""}
    assert spec["machineConfigPoolSelector"] == {"machineconfiguration.openshift.io/role": "worker-cnf"}
    assert spec["additionalKernelArgs"] == ["intel_iommu=on", "iommu=pt"]
    assert list(spec) == sorted(spec)  # PPC writes sorted keys


def test_performance_profile_without_cstate_limits_and_on_one_cpu(single):
    plan = make_plan(single, Intent(mtu=9000, pmd_cores_per_node=2, vm_memory_gb=50, low_latency=False))
    spec = yaml.safe_load(render(plan, "performance-profile"))["spec"]
    assert spec["workloadHints"]["highPowerConsumption"] is False
    assert spec["hugepages"]["pages"] == [{"count": 53, "node": 0, "size": "1G"}]
    assert spec["cpu"]["reserved"] == "0,8"
    one = dataclasses.replace(plan, housekeeping=(0,))
    assert 'reserved: "0"' in render(one, "performance-profile")  # a lone CPU is quoted, as Go's yaml writes it


def test_edpm_variables(plan):
    doc = yaml.safe_load(render(plan, "edpm"))
    v = doc["spec"]["nodeTemplate"]["ansible"]["ansibleVars"]
    assert v == {
        "edpm_kernel_args": " ".join(plan.kernel_args), "edpm_tuned_profile": "cpu-partitioning",
        "edpm_tuned_isolated_cores": "2-35,38-71", "edpm_nova_libvirt_qemu_group": "hugetlbfs",
        "edpm_ovs_dpdk_pmd_core_list": "2-4,6,8,38-40,42,44",
        "edpm_ovs_dpdk_socket_memory": "3072,1024", "edpm_ovs_dpdk_memory_channels": 6,
        "edpm_ovs_dpdk_pmd_auto_lb": True, "edpm_ovs_dpdk_pmd_load_threshold": "70",
        "edpm_ovs_dpdk_pmd_improvement_threshold": "25", "edpm_ovs_dpdk_pmd_rebal_interval": "5",
        "edpm_ovs_dpdk_vhost_postcopy_support": False, "edpm_ovs_dpdk_enable_tso": False}
    text = render(plan, "edpm")
    assert "cpu_dedicated_set = 5,7,9-35,41,43,45-71" in text and "rx_queue: 2" in text


def test_edpm_and_tripleo_without_auto_lb(r740xd):
    plan = make_plan(r740xd, Intent(mtu=9000, pmd_cores_per_node=4, pmd_auto_lb=False))
    v = yaml.safe_load(render(plan, "edpm"))["spec"]["nodeTemplate"]["ansible"]["ansibleVars"]
    assert v["edpm_ovs_dpdk_pmd_auto_lb"] is False and "edpm_ovs_dpdk_pmd_load_threshold" not in v
    t = yaml.safe_load(render(plan, "tripleo"))["parameter_defaults"]["ComputeOvsDpdkParameters"]
    assert t["OvsPmdAutoLb"] is False and "OvsPmdLoadThreshold" not in t
    assert "pmd-auto-lb" not in render(plan, "ovs-vsctl")


def test_every_format_renders_on_every_fixture(r740xd, single, minus1):
    for inv, intent in ((r740xd, Intent(mtu=9000)), (single, Intent(mtu=9000, pmd_cores_per_node=2)),
                        (minus1, Intent(ports=("0000:82:00.0",)))):
        plan = make_plan(inv, intent)
        for fmt in FORMATS:
            assert render(plan, fmt), fmt
        for fmt in ("tripleo", "edpm", "performance-profile"):
            yaml.safe_load(render(plan, fmt))
