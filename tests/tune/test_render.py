"""The settings a tune kept, rendered as `host plan` renders a plan: ovs-vsctl, TripleO, flavor, summary."""

from __future__ import annotations

import inspect
import re

import pytest
import yaml

from zeroloss.core.errors import ZeroLossError
from zeroloss.host import render as host_render
from zeroloss.runs.tune.render import FORMATS, render

KEPT = {"ovs_pmd_cpu_mask": "0x3", "ovs_rxq_assign": "group", "ovs_socket_mem_mb": 3072, "dut_rxq": 2,
        "ovs_rxd": 4096, "ovs_txd": 4096, "ovs_tx_retries_max": 32, "vnf_ring": 1024}


def test_ovs_vsctl_commands():
    out = render(KEPT, "ovs-vsctl")
    lines = out.splitlines()
    assert "ovs-vsctl --no-wait set Open_vSwitch . other_config:pmd-cpu-mask=0x3   # CPUs 0-1" in lines
    assert "ovs-vsctl --no-wait set Open_vSwitch . other_config:pmd-rxq-assign=group" in lines
    assert any(line.startswith('ovs-vsctl --no-wait set Open_vSwitch . other_config:dpdk-socket-mem="3072"')
               for line in lines)
    assert any(line.startswith("ovs-vsctl set Interface <dpdk port> options:n_rxq=2") for line in lines)
    assert any(line.startswith("ovs-vsctl set Interface <dpdk port> options:n_rxq_desc=4096 "
                               "options:n_txq_desc=4096") for line in lines)
    assert any(line.startswith("ovs-vsctl set Interface <vhost port> options:tx-retries-max=32") for line in lines)
    assert "# guest settings (vnf_ring): see --format flavor" in lines
    assert all(line.startswith(("ovs-vsctl ", "#")) for line in lines)


def test_ovs_vsctl_default_retries_and_meter_and_nothing():
    out = render({"ovs_tx_retries_max": -1, "meter_pps": 0, "ovs_dpdk_extra": "-n 4"}, "ovs-vsctl")
    assert "ovs-vsctl remove Interface <vhost port> options tx-retries-max" in out
    assert "meter was taken off the path" in out
    assert 'other_config:dpdk-extra="-n 4"' in out
    assert "no OVS setting was changed" in render({"vnf_ring": 4096}, "ovs-vsctl")


def test_tripleo_environment_uses_host_plans_parameter_names():
    out = render({**KEPT, "vnf_ring": 4096, "ovs_dpdk_extra": "-n 6"}, "tripleo")
    doc = yaml.safe_load(out)
    params = doc["parameter_defaults"]["ComputeOvsDpdkParameters"]
    assert params == {"OvsPmdCoreList": "0-1", "OvsDpdkSocketMemory": "3072", "OvsDpdkMemoryChannels": "6",
                      "NovaLibvirtRxQueueSize": 1024, "NovaLibvirtTxQueueSize": 1024}
    assert doc["parameter_defaults"]["NumDpdkInterfaceRxQueues"] == 2  # global in THT's overcloud.j2.yaml
    assert "NovaLibvirtRxQueueSize: 512" in render({"vnf_ring": 700}, "tripleo")  # THT allows 256, 512, 1024
    source = inspect.getsource(host_render.tripleo)
    assert all(f'"{name}"' in source for name in params)  # the names `host plan --format tripleo` writes
    assert "the bench kept 4096; libvirt takes at most 1024" in out
    assert re.search(r"ovs_rxq_assign, ovs_tx_retries_max, ovs_rxd, ovs_txd: no TripleO role parameter", out)


def test_tripleo_with_nothing_to_set_is_still_yaml():
    doc = yaml.safe_load(render({"meter_pps": 0}, "tripleo"))
    assert doc["parameter_defaults"]["ComputeOvsDpdkParameters"] == {}


def test_flavor_properties_and_nova_conf():
    out = render({"dut_rxq": 2, "vnf_ring": 1024}, "flavor")
    assert "openstack flavor set <flavor> --property hw:vif_multiqueue_enabled=true" in out
    assert "[libvirt]\nrx_queue_size = 1024\ntx_queue_size = 1024" in out
    assert "hw:vif_multiqueue_enabled" in render({"vnf_queues": 3}, "flavor")
    assert "hw:vif_multiqueue_enabled" not in render({"dut_rxq": 1}, "flavor")
    capped = render({"vnf_ring": 4096}, "flavor")
    assert "rx_queue_size = 1024" in capped and "the bench kept 4096" in capped
    vcpus = render({"vnf_vcpus": "1,0,2"}, "flavor")
    assert "--vcpus 3" in vcpus and "hw:cpu_policy=dedicated" in vcpus
    assert render({"ovs_rxq_assign": "group"}, "flavor") == "# no guest setting was changed"


def test_summary_names_each_setting_with_its_help():
    out = render({"vnf_ring": 1024, "dut_rxq": 2}, "summary")
    assert out.splitlines()[0].startswith("dut_rxq = 2   # RX (and TX) queues per DUT port")
    assert out.splitlines()[1].startswith("vnf_ring = 1024   # pvp, pvvp: the VNFs' virtio ring size")
    assert render({}, "summary") == "no setting was changed"


def test_every_format_renders_and_an_unknown_one_is_refused():
    for fmt in FORMATS:
        assert render(KEPT, fmt) and render({}, fmt)
    with pytest.raises(ZeroLossError, match="unknown format 'xml'.*summary, ovs-vsctl, tripleo, flavor"):
        render(KEPT, "xml")
