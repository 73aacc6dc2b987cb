"""The lab file: a valid one parses into the generator's port order; every fault is one line naming the key."""

import copy
import os
import subprocess
import sys

import pytest

from zeroloss.core.config import yaml_load
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers import session
from zeroloss.drivers.lab.labfile import EXAMPLE, parse, pci_or_vdev
from zeroloss.host.ssh import SshTarget


def zeroloss(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", *args], capture_output=True, text=True, timeout=60,
                          env=env)

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
    (lambda d: d["dut"].update(ssh="-oProxyCommand=touch /tmp/x"), "dut.ssh: '-oProxyCommand=touch /tmp/x' is not "
                                                                   "an ssh destination"),
    (lambda d: d["dut"]["vnfs"][0].update(ssh="-F/tmp/evil"), "dut.vnfs.0.ssh: '-F/tmp/evil' is not an ssh dest"),
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


def test_the_example_passes_the_check_and_the_cli_prints_it(tmp_path):
    lab = parse(yaml_load(EXAMPLE, "example"), "example")
    assert [p.name for p in lab.ports] == ["A", "B"] and lab.dut.target == "compute-0" and len(lab.vnfs) == 1
    r = zeroloss("lab", "--example")
    assert r.returncode == 0 and r.stdout == EXAMPLE and r.stdout.startswith("# ")
    f = tmp_path / "lab.yaml"
    f.write_text(r.stdout)
    r = zeroloss("lab", "--check", str(f))
    assert r.returncode == 0 and r.stdout.startswith(f"{f}: ok: 2 generator ports in 1 pair(s)"), r.stderr
    f.write_text("- a list, not a lab file\n")  # one line naming the fault, and the example to start from
    r = zeroloss("lab", "--check", str(f))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "zeroloss lab --example" in r.stderr


def test_a_broken_lab_file_is_named_even_when_the_bench_is_in_use(tmp_path, monkeypatch):
    monkeypatch.setenv("ZEROLOSS_RUNDIR", str(tmp_path / "run"))
    monkeypatch.setenv("ZEROLOSS_LOCKDIR", str(tmp_path / "lock"))
    f = tmp_path / "lab.yaml"
    f.write_text(EXAMPLE.replace("dst_mac: fa:16:3e:44:55:66", "dst_mac: nowhere"))
    with session.BENCH:  # another zeroloss holds the bench
        r = zeroloss("run", "--lab", str(f), "-o", str(tmp_path / "r.json"), env=dict(os.environ))
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "generator.ports.1.dst_mac: 'nowhere' is not a MAC address" in r.stderr and "in use" not in r.stderr
    campaign = tmp_path / "campaign.yaml"
    campaign.write_text(f"name: lab-sizes\nbase: {{lab: {f}}}\ncases: [{{name: small, set: {{frame_sizes: [64]}}}}]\n")
    with session.BENCH:
        r = zeroloss("campaign", str(campaign), "-o", str(tmp_path / "c.json"), env=dict(os.environ))
    assert r.returncode == 1 and "is not a MAC address" in r.stderr and "in use" not in r.stderr, r.stderr


def test_an_ssh_destination_beginning_with_a_dash_never_reaches_ssh_as_an_option(tmp_path):
    planted = tmp_path / "planted"
    target = SshTarget(f"-oProxyCommand=touch {planted}")
    argv = target.argv(["true"])
    assert argv[-3:-1] == ["--", target.target] and argv.count("--") == 1  # no option is read after '--'
    with pytest.raises(ZeroLossError):
        target.run(["true"], timeout=30)  # real ssh: an invalid host name, never a ProxyCommand
    assert not planted.exists()
    r = zeroloss("host", "audit", f"--host=-oProxyCommand=touch {planted}")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "is not an ssh destination" in r.stderr
    assert not planted.exists()


def test_the_unreachable_hint_names_the_ssh_config_used(tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host nowhere\n    HostName 127.0.0.1\n    Port 1\n    BatchMode yes\n")
    with pytest.raises(ZeroLossError) as e:
        SshTarget("nowhere", ssh_config=str(config)).run(["true"], timeout=30)
    assert e.value.remedy == f"check that `ssh -F {config} nowhere true` works without a password prompt"


def test_dut_changes_need_permission():
    from zeroloss.core.config import RunConfig

    with pytest.raises(ZeroLossError, match="allow-dut-changes"):
        RunConfig(lab="lab.yaml", dut_set=["Open_vSwitch:.:other_config:pmd-auto-lb=false"])
    assert RunConfig(lab="lab.yaml").dut == "lab"
    from zeroloss.targets.registry import kind_of

    with pytest.raises(ZeroLossError, match="lab file"):  # the lab kind's own check (targets/kinds/lab.py)
        kind_of(RunConfig(dut="lab"))


def test_pci_or_vdev():
    assert pci_or_vdev("0000:5e:00.1") and pci_or_vdev("5e:00.1")
    assert not pci_or_vdev("net_virtio_user0,path=/tmp/a.sock,server=1")


def test_a_file_that_is_not_a_lab_file_is_never_echoed(tmp_path):
    """`lab --check /etc/shadow` printed the file's lines back as "unknown key ..." (issue 38, 15): a file with none
    of the lab file's keys is said not to be one, and an unknown key is named only when it reads as a key name."""
    secret = "root:$y$j9T$Zq8sEcReT:19000:0:99999:7:::"
    shadow = tmp_path / "shadow"
    shadow.write_text(f"{secret}\ndaemon:*:19000:0:99999:7:::\n")
    r = zeroloss("lab", "--check", str(shadow))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "not a lab file" in r.stderr, r.stderr
    assert "Zq8sEcReT" not in r.stderr and "daemon" not in r.stderr
    doc = yaml_load(EXAMPLE, "example")
    doc[secret] = 1
    with pytest.raises(ZeroLossError) as e:
        parse(doc, "lab.yaml")
    assert "Zq8sEcReT" not in str(e.value) and "no key name" in str(e.value)
    doc = yaml_load(EXAMPLE, "example")
    doc["dut"].update(colour="red", flavour="sweet")
    with pytest.raises(ZeroLossError) as e:
        parse(doc, "lab.yaml")
    assert "dut: unknown key 'colour' and 1 more (known: ssh," in str(e.value)
