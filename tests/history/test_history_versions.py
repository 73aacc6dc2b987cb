"""The versions a run is stored with (history/extract.py _versions): zlgen's and the DPDK it runs from the placement
(every kind records its zlgen's hello), OVS's from the bench's or the lab node's `ovs-appctl version`, and the host's
DPDK package named as zlgen names DPDK, so that files with one and files with the other are not a change of DPDK."""

from __future__ import annotations

from zeroloss.history.extract import _versions

HOST = {"kernel": "6.1.0-28-amd64", "dpdk_package": "22.11.11-0+deb12u1"}


def test_a_bench_runs_versions_come_from_its_placement():
    placement = {"pvp": {"zlgen": "0.1.0", "dpdk": "DPDK 22.11.11",
                         "ovs_version": "ovs-vswitchd-dpdk (Open vSwitch) 3.1.0"}}
    assert _versions(HOST, placement, "0.1.0") == {
        "zeroloss_version": "0.1.0", "zlgen_version": "0.1.0", "dpdk_version": "DPDK 22.11.11",
        "ovs_version": "ovs-vswitchd-dpdk (Open vSwitch) 3.1.0", "kernel": "6.1.0-28-amd64"}


def test_a_file_without_zlgens_dpdk_names_the_package_as_zlgen_would():
    v = _versions(HOST, {}, "0.1.0")
    assert v["dpdk_version"] == "DPDK 22.11.11" and v["zlgen_version"] is None and v["ovs_version"] is None
    assert _versions({**HOST, "dpdk_package": "1:23.11.2-1"}, None, None)["dpdk_version"] == "DPDK 23.11.2"
    assert _versions({**HOST, "dpdk_package": ""}, None, None)["dpdk_version"] == ""


def test_a_lab_runs_generator_and_node():
    placement = {"lab_file": "compute-3.yaml", "kernel": "5.14.0-427", "ovs_version": "ovs-vswitchd (Open vSwitch) "
                 "3.3.1", "lab_gen": {"zlgen": "0.1.0", "dpdk": "DPDK 22.11.11"}}
    v = _versions(HOST, placement, "0.1.0")
    assert (v["zlgen_version"], v["ovs_version"], v["kernel"]) == ("0.1.0", "ovs-vswitchd (Open vSwitch) 3.3.1",
                                                                   "5.14.0-427")
