"""The lab file: a valid one parses into the generator's port order; every fault is one line naming the key."""

import copy

import pytest

from zeroloss.errors import ZeroLossError
from zeroloss.lab.labfile import parse, pci_or_vdev

GOOD = {
    "dut": {"ssh": "compute-0", "ovs": {"rundir": "/run/ovs"},
            "vnfs": [{"name": "vnf1", "ports": ["vhu0", "vhu1"], "telemetry": "/var/run/dpdk/rte/dpdk_telemetry.v2"}]},
    "generator": {"lcores": "1", "ports": [
        {"name": "B", "device": "0000:5e:00.1", "dut_port": "dpdk1", "dst_mac": "FA:16:3E:00:00:02"},
        {"name": "A", "device": "0000:5e:00.0", "dut_port": "dpdk0", "dst_mac": "fa:16:3e:00:00:01", "vlan": 100,
         "speed_gbps": 25}]},
    "traffic": {"pairs": [["A", "B"]]},
}


def test_good_file_orders_ports_by_pair():
    lab = parse(GOOD)
    assert [p.name for p in lab.ports] == ["A", "B"]  # pair order, side A first, not the file's order
    assert lab.ports[1].dst_mac == "fa:16:3e:00:00:02"
    assert lab.ovs_db == "unix:/run/ovs/db.sock"
    assert lab.sides == (0, 1) and lab.learning_pps == 1000
    assert lab.vnf_of("vhu1")[1] == 1 and lab.gen_of("dpdk1") == 1 and lab.vnf_of("dpdk0") is None


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.pop("dut"), "dut' is missing"),
    (lambda d: d["dut"].update(ssh=""), "dut.ssh"),
    (lambda d: d["dut"].update(colour="red"), "unknown key 'colour'"),
    (lambda d: d["generator"]["ports"][0].update(dst_mac="02:00:00:00:00"), "not a MAC address"),
    (lambda d: d["generator"]["ports"][0].update(ip="300.1.1.1"), "not an IPv4 address"),
    (lambda d: d["generator"]["ports"][0].update(vlan=5000), "generator.ports.0.vlan"),
    (lambda d: d["traffic"].update(pairs=[["A", "C"]]), "no generator port named 'C'"),
    (lambda d: d["traffic"].update(pairs=[["A", "A"]]), "in two pairs"),
    (lambda d: d["traffic"].update(direction="sideways"), "not one of bidirectional"),
    (lambda d: d["traffic"].update(learning=True), "must be false or a map"),
    (lambda d: d["generator"]["ports"][1].update(dut_port="dpdk1"), "same DUT port"),
    (lambda d: d["dut"]["vnfs"][0].update(ports=["vhu0", "vhu0"]), "taken twice"),
    (lambda d: d["dut"]["vnfs"][0].update(ports=["vhu0", "dpdk0"]), "taken twice"),
    (lambda d: d["dut"]["vnfs"][0].update(ports=["vhu0"]), "dut.vnfs.0.ports"),
    (lambda d: d["generator"]["ports"].append({"name": "C", "device": "x", "dut_port": "p", "dst_mac":
                                               "02:00:00:00:00:01"}), "in no traffic pair"),
])
def test_faults_are_one_line_naming_the_key(edit, words):
    doc = copy.deepcopy(GOOD)
    edit(doc)
    with pytest.raises(ZeroLossError) as e:
        parse(doc, "lab.yaml")
    assert words in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("lab.yaml")


def test_not_a_map():
    with pytest.raises(ZeroLossError, match="a YAML map"):
        parse(["dut"], "lab.yaml")


def test_cli_rejects_bad_lab_file_in_one_line(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "lab.yaml"
    f.write_text("dut: {ssh: x}\ngenerator: {ports: []}\ntraffic: {pairs: [[A, B]]}\n")
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "trial", "--lab", str(f), "--rate", "1%"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "generator.ports" in r.stderr


def test_dut_changes_need_permission():
    from zeroloss.config import RunConfig

    with pytest.raises(ZeroLossError, match="allow-dut-changes"):
        RunConfig(lab="lab.yaml", dut_set=["Open_vSwitch:.:other_config:pmd-auto-lb=false"])
    assert RunConfig(lab="lab.yaml").dut == "lab"
    with pytest.raises(ZeroLossError, match="lab file"):
        RunConfig(dut="lab")


def test_pci_or_vdev():
    assert pci_or_vdev("0000:5e:00.1") and pci_or_vdev("5e:00.1")
    assert not pci_or_vdev("net_virtio_user0,path=/tmp/a.sock,server=1")
