"""SR-IOV VF ports: ip/ethtool parsers on real output (tests/fixtures/sriov/README says where each comes from), the
VF's PF and index from a sysfs tree laid out as the kernel does, the audit rules, the VF path and its ledger, and
VFs in a domain XML."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.lab.labfile import EXAMPLE, parse
from zeroloss.drivers.lab.labsriov import PolicySpec, check_domain, lab_paths, plan_for, read_plan, summed, vf_chain
from zeroloss.drivers.lab.path import ledger_paths
from zeroloss.drivers.lab.replies import Ran
from zeroloss.drivers.vnf.domain import with_vfs
from zeroloss.host.domxml import parse_domain
from zeroloss.host.rules_sriov import PlanVfs, VfUse, check
from zeroloss.host.sriov import VfInfo, parse_ethtool_vf_stats, parse_ip_link, resolve, vf_counters
from zeroloss.host.sysfs import Root
from zeroloss.loss.diagnose import diagnose
from zeroloss.loss.ledger import counter_delta, ledger
from zeroloss.results import schema

FIX = Path(__file__).parent / "fixtures" / "sriov"


def text(name: str) -> str:
    return (FIX / name).read_text()


def test_ip_link_ice_vfs_settings_and_counters():
    pf = parse_ip_link(text("ip_link_ice_example_cnf.txt"))
    assert (pf.name, pf.mtu, pf.state, pf.up) == ("ens2f0", 9000, "UP", True)
    assert sorted(pf.vfs) == list(range(16))
    vf3 = pf.vfs[3]
    assert (vf3.mac, vf3.spoofchk, vf3.link_state, vf3.trust, vf3.vlan) == ("5e:c2:8b:ef:87:a4", True, "auto", False, 0)
    assert vf3.stats == {"rx_bytes": 346464, "rx_packets": 4374, "multicast": 0, "broadcast": 4374, "rx_dropped": 0,
                         "tx_bytes": 0, "tx_packets": 0, "tx_dropped": 0}
    assert pf.vfs[15].stats["rx_packets"] == 5435


def test_ip_link_old_format_vlan_spoofchk_and_trust():
    pf = parse_ip_link(text("ip_link_mlx_vlan_old.txt"))
    assert pf.name == "enp101s0f0" and len(pf.vfs) == 11
    assert (pf.vfs[0].vlan, pf.vfs[0].spoofchk, pf.vfs[0].stats) == (10, False, None)
    assert (pf.vfs[9].vlan, pf.vfs[9].spoofchk) == (10, True)
    assert pf.vfs[1].vlan == 0
    trusted = parse_ip_link(text("ip_link_trust_on.txt"))
    assert [v.trust for v in trusted.vfs.values()] == [True, False, False, False, False]


def test_ip_link_refuses_other_text():
    with pytest.raises(ZeroLossError, match="not `ip link show` output"):
        parse_ip_link(text("ethtool_ixgbe_vf.txt"))


def test_vf_counters_i40e_tx_dropped_between_readings():
    before = parse_ip_link(text("ip_link_i40e_before.txt")).vfs[0]
    after = parse_ip_link(text("ip_link_i40e_tx_dropped.txt")).vfs[0]
    delta = counter_delta(vf_counters(after.stats, None, "i40e"), vf_counters(before.stats, None, "i40e"))
    assert delta == {"rx_packets": 0, "rx_dropped": 0, "tx_packets": 0, "tx_dropped": 2}


def test_vf_counters_drops_inside_rx_packets_for_i40e_ice_only():
    stats = {"rx_packets": 100, "rx_dropped": 7, "tx_packets": 90, "tx_dropped": 0}
    assert vf_counters(stats, None, "ice")["rx_packets"] == 93
    assert vf_counters(stats, None, "mlx5_core")["rx_packets"] == 100


def test_ethtool_per_vf_stats_as_fallback():
    per_vf = parse_ethtool_vf_stats(text("ethtool_ixgbe_vf.txt"))  # ixgbe out-of-tree, as posted
    assert sorted(per_vf) == [0, 1, 2]
    assert per_vf[0] == {"rx_packets": 54659374, "rx_bytes": 78420771894, "tx_packets": 20317044,
                         "tx_bytes": 15179104572, "multicast": 3}
    assert vf_counters(None, per_vf[1], "ixgbe") == {"rx_packets": 13497449, "tx_packets": 20547911}
    assert parse_ethtool_vf_stats(text("ip_link_ice_example_cnf.txt")) == {}


def test_ethtool_i40e_vfnnn_stats_carry_drops():
    per_vf = parse_ethtool_vf_stats(text("ethtool_i40e_vf000.txt"))  # i40e 2.12.6 out-of-tree, as posted
    assert per_vf[0] == {"rx_packets": 14578155363, "tx_packets": 14577242919, "rx_bytes": 933001945820,
                         "tx_bytes": 874634580760, "rx_dropped": 144076, "tx_dropped": 0}
    # the VSI's packet counters include its discards: delivered = unicast + multicast + broadcast - discards
    assert vf_counters(None, per_vf[0], "i40e") == {"rx_packets": 14578155363 - 144076, "rx_dropped": 144076,
                                                    "tx_packets": 14577242919, "tx_dropped": 0}
    # ip's per-VF stats win over ethtool's when both have the VF
    assert vf_counters({"rx_packets": 5, "rx_dropped": 0}, per_vf[0], "i40e")["rx_packets"] == 5


def fake_sysfs(root: Path, numvfs: int = 4) -> Path:
    """/sys as drivers/pci/iov.c lays it out: PF 0000:37:00.0 (ens2f0, ice) with VFs 0000:37:01.N (the lab test's
    tree, tests/lab/fake_sriov.py)."""
    from lab.fake_sriov import build_sysfs  # tests/ is on the path: pytest's rootdir import of this file

    return build_sysfs(root, numvfs)


def test_resolve_vf_by_pci_and_by_pf_index(tmp_path):
    root = Root(fake_sysfs(tmp_path))
    vf = resolve(root, "0000:37:01.2")
    assert (vf.pf_pci, vf.index, vf.pf_netdev, vf.numvfs, vf.totalvfs, vf.pf_driver, vf.vf_driver) == \
        ("0000:37:00.0", 2, "ens2f0", 4, 128, "ice", "vfio-pci")
    assert resolve(root, "ens2f0/3").vf_pci == "0000:37:01.3"
    assert resolve(root, "0000:37:00.0/1").vf_pci == "0000:37:01.1"


def test_resolve_errors_name_the_fix(tmp_path):
    root = Root(fake_sysfs(tmp_path))
    with pytest.raises(ZeroLossError, match="has no VF 7 .sriov_numvfs 4") as e:
        resolve(root, "ens2f0/7")
    assert "sriov_numvfs" in (e.value.remedy or "")
    with pytest.raises(ZeroLossError, match="a PCI function but not a VF"):
        resolve(root, "0000:37:00.0")
    with pytest.raises(ZeroLossError, match="no such PCI device"):
        resolve(root, "0000:99:00.0")
    with pytest.raises(ZeroLossError, match="no PCI network interface 'eth9'"):
        resolve(root, "eth9")


def use(tmp_path, info: VfInfo, **kw) -> VfUse:
    port = resolve(Root(fake_sysfs(tmp_path)), "ens2f0/0")
    return VfUse(port, info, parse_ip_link(text("ip_link_ice_example_cnf.txt")), **kw)


def test_audit_spoofchk_with_io_forwarding_and_trust(tmp_path):
    pf = parse_ip_link(text("ip_link_ice_example_cnf.txt"))
    u = use(tmp_path, pf.vfs[0], forward="io", dst_mac="92:be:3c:24:4a:7d")
    found = {f.rule: f for f in check([u])}
    assert found["vf-spoofchk"].severity == "error" and "spoofchk off" in found["vf-spoofchk"].remedy
    assert found["vf-trust"].severity == "warning"  # its own MAC, but testpmd asks for promiscuous mode
    foreign = {f.rule: f for f in check([use(tmp_path / "b", pf.vfs[0], dst_mac="02:00:00:00:00:01")])}
    assert foreign["vf-trust"].severity == "error" and "trust on" in foreign["vf-trust"].remedy
    assert "vf-spoofchk" not in foreign  # forward mac: the VNF sends with its own MAC
    trusted = parse_ip_link(text("ip_link_trust_on.txt")).vfs[0]
    assert not [f for f in check([use(tmp_path / "c", trusted, dst_mac="02:00:00:00:00:01")]) if f.rule == "vf-trust"]


def test_audit_vlan_mtu_link_state_and_count(tmp_path):
    old = parse_ip_link(text("ip_link_mlx_vlan_old.txt"))
    rules = {f.rule for f in check([use(tmp_path, old.vfs[0], vlan=-1, promisc=False)])}
    assert "vf-vlan" in rules  # port VLAN 10, the generator sends untagged
    assert not [f for f in check([use(tmp_path / "b", old.vfs[0], vlan=10, promisc=False)]) if f.rule == "vf-vlan"]
    big = check([use(tmp_path / "c", old.vfs[1], max_frame=9600, promisc=False)])
    assert [f.rule for f in big if f.rule == "vf-mtu"] == ["vf-mtu"] and "mtu 9582" in big[0].remedy
    down = check([use(tmp_path / "d", VfInfo(0, link_state="disable", spoofchk=False, trust=True), promisc=False)])
    assert [f.rule for f in down] == ["vf-link-state"] and "state auto" in down[0].remedy
    many = check([use(tmp_path / "e", VfInfo(0, link_state="auto", trust=True), needed_on_pf=6, promisc=False)])
    assert [f.rule for f in many] == ["vf-count"] and "echo 6 >" in many[0].remedy


SRIOV_LAB = """\
dut: {ssh: compute-0}
dut_vnfs: []
generator:
  ports:
    - {name: A, device: 0000:3b:00.0, dut_port: "sriov:ens2f0/0", dst_mac: "92:be:3c:24:4a:7d"}
    - {name: B, device: 0000:3b:00.1, dut_port: "sriov:ens2f0/1", dst_mac: "be:c8:8b:88:a2:15"}
traffic: {pairs: [[A, B]]}
"""


def sriov_lab():
    doc = yaml.safe_load(SRIOV_LAB)
    doc.pop("dut_vnfs")
    doc["dut"]["vnfs"] = [{"name": "cnf1", "ports": ["sriov:ens2f0/0", "sriov:ens2f0/1"],
                           "telemetry": "/var/run/dpdk/rte/dpdk_telemetry.v2"}]
    return parse(doc, "lab.yaml")


def test_lab_file_takes_sriov_ports_and_keeps_todays_files():
    lab = sriov_lab()
    assert lab.vnf_of("sriov:ens2f0/1")[1] == 1
    parse(yaml.safe_load(EXAMPLE), "example")
    doc = yaml.safe_load(SRIOV_LAB)
    doc.pop("dut_vnfs")
    doc["generator"]["ports"][0]["dut_port"] = "sriov:ens2f0/x"
    with pytest.raises(ZeroLossError, match="is not sriov:<VF PCI address>"):
        parse(doc, "lab.yaml")


def test_vf_path_ledger_accounts_vf_drops():
    lab = sriov_lab()
    chains = [vf_chain(lab, 0, 1), vf_chain(lab, 1, 0)]
    paths = lab_paths(lab, chains, ledger_paths)
    assert [h["kind"] for h in paths[0]["hops"]] == ["gen_tx", "vf_rx", "proc_tx", "vf_tx", "gen_rx"]
    # 1000 frames A -> B: VF 0 drops 10 (ring full), the VNF forwards 990, VF 1 drops 2 on TX, zlgen gets 988
    c = {"gen": {"dirs": {"0": {"offered": 1000, "refused": 0, "rx_unique": 988}}},
         "procs": {"cnf1": [{"ipackets": 990, "opackets": 0}, {"ipackets": 0, "opackets": 990}]},
         "vfs": {"sriov:ens2f0/0": {"rx_packets": 990, "rx_dropped": 10, "tx_packets": 0, "tx_dropped": 0},
                 "sriov:ens2f0/1": {"rx_packets": 0, "rx_dropped": 0, "tx_packets": 988, "tx_dropped": 2}}}
    led = ledger(paths[:1], c)[0]
    assert (led["sent"], led["received"], led["counted"], led["unexplained"]) == (1000, 988, 12, 0)
    drops = {d["reason"]: d["frames"] for h in led["hops"] for d in h["drops"]}
    assert drops == {"vf_rx_dropped": 10, "vf_tx_dropped": 2}
    assert all(h["unexplained"] == 0 for h in led["hops"])
    found = {f["reason"]: f for f in diagnose([led], c, {}, {"vnfs": ["cnf1"], "lab": True})}
    rx, tx = found["vf_rx_dropped"], found["vf_tx_dropped"]
    assert (rx["frames"], rx["where"], tx["frames"], tx["where"]) == (10, "sriov:ens2f0/0", 2, "sriov:ens2f0/1")
    assert "cnf1 did not drain its RX ring" in rx["cause"] and any("--rxd=4096" in r for r in rx["remedies"])
    assert "anti-spoofing" in tx["cause"] and any("spoofchk off" in r for r in tx["remedies"])
    for p in paths:  # the result file's schema knows the VF hops and what each needs
        schema.check(p, schema.PATH, "path")
    with pytest.raises(ZeroLossError, match="vf"):
        schema.check({**paths[0], "hops": [{k: v for k, v in h.items() if k != "vf"} for h in paths[0]["hops"]]},
                     schema.PATH, "path")


def test_vf_path_refuses_mixed_and_unheld_vfs():
    lab = sriov_lab()
    doc = yaml.safe_load(SRIOV_LAB)
    doc.pop("dut_vnfs")
    lonely = parse(doc, "lab.yaml")
    with pytest.raises(ZeroLossError, match="no VNF holds VF sriov:ens2f0/0"):
        vf_chain(lonely, 0, 1)
    assert summed({"a": {"rx_packets": 1}, "b": {"rx_packets": 2}}, {"a+b"})["a+b"] == {"rx_packets": 3}
    assert lab.ports[0].dut_port == "sriov:ens2f0/0"


def test_domain_xml_vfs_read_back_and_rendered():
    two = parse_domain(text("domain_vmx_two_vfs.xml"))
    assert two.pci_passthrough() == ["0000:04:10.0", "0000:04:10.1"]
    assert [i.mac for i in two.interfaces] == ["aa:ss:bb:cc:dd:ee", "bb:55:77:11:00:00"]
    assert parse_domain(text("domain_libvirt_hostdev_pci.xml")).pci_passthrough() == ["0000:06:12.5"]
    xml = with_vfs(text("domain_libvirt_hostdev_pci.xml"), [("0000:3b:02.1", "02:00:00:00:00:0a", 15)])
    back = parse_domain(xml)
    assert back.pci_passthrough() == ["0000:3b:02.1", "0000:06:12.5"]
    assert "<tag id=\"15\" />" in xml or "<tag id=\"15\"/>" in xml
    with pytest.raises(ZeroLossError, match="not a VF's PCI address"):
        with_vfs(xml, [("3b:02.1", "02:00:00:00:00:0a", 0)])


def test_lab_file_mixes_that_cannot_work_are_one_line():
    def lab(gen=("sriov:ens2f0/0", "sriov:ens2f0/1"), vnf=("sriov:ens2f0/0", "sriov:ens2f0/1"), **extra):
        doc = yaml.safe_load(SRIOV_LAB)
        doc.pop("dut_vnfs")
        for p, q in zip(doc["generator"]["ports"], gen, strict=True):
            p["dut_port"] = q
        doc["dut"]["vnfs"] = [{"name": "v", "ports": list(vnf), "telemetry": "/t", **extra}]
        return parse(doc, "lab.yaml")

    assert lab().ovs_db.endswith("db.sock")  # no dut.ovs: valid for a pure SR-IOV node
    with pytest.raises(ZeroLossError, match="A are cabled to SR-IOV VFs and B to OVS ports: one lab file is all"):
        lab(gen=("sriov:ens2f0/0", "dpdk1"))
    with pytest.raises(ZeroLossError, match="port 'vhu1' is not an SR-IOV VF, but the generator ports are cabled"):
        lab(vnf=("sriov:ens2f0/0", "vhu1"))
    with pytest.raises(ZeroLossError, match="port 'sriov:ens2f0/1' is an SR-IOV VF, but the generator ports are "
                                            "cabled to OVS ports"):
        lab(gen=("dpdk0", "dpdk1"), vnf=("vhu0", "sriov:ens2f0/1"))
    assert lab(vm={"domain": "vnf-vm"}).vnfs[0].vm_domain == "vnf-vm"
    with pytest.raises(ZeroLossError, match="vm and kubectl both given"):
        lab(vm={"domain": "vnf-vm"}, kubectl={"pod": "p"})
    with pytest.raises(ZeroLossError, match="dut.vnfs.0.vm.domain: '-x' is not a libvirt domain name"):
        lab(vm={"domain": "-x"})


def test_vm_domain_must_hold_the_vnfs_vfs():
    xml = Ran.from_json({"rc": 0, "out": text("domain_vmx_two_vfs.xml"), "err": ""})
    assert check_domain("v", "vmx", xml, {"sriov:0000:04:10.1": "0000:04:10.1"}) == ["0000:04:10.0", "0000:04:10.1"]
    with pytest.raises(ZeroLossError, match=r"v's port sriov:ens2f0/0 is VF 0000:37:01.0, which VM vmx does not hold "
                                            r"\(virsh dumpxml vmx passes 0000:04:10.0, 0000:04:10.1\)"):
        check_domain("v", "vmx", xml, {"sriov:ens2f0/0": "0000:37:01.0"})
    with pytest.raises(ZeroLossError, match="virsh dumpxml gone failed: error: failed to get domain 'gone'"):
        check_domain("v", "gone", Ran(rc=1, err="error: failed to get domain 'gone'\n"), {})


def test_vf_count_against_the_plans_sriov_policy(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "host", "plan", "--root",
                        str(FIX.parent / "host" / "r740xd"), "--ports", "ens4f0", "--format", "k8s"],
                       capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    (tmp_path / "plan.yaml").write_text(r.stdout)
    policies = read_plan(str(tmp_path / "plan.yaml"))
    name, spec = policies[0]
    pf = (spec.nic_selector.pf_names or [""])[0]
    root = (spec.nic_selector.root_devices or [""])[0]
    assert plan_for(policies, pf, root) == PlanVfs(name, 1)  # host plan renders numVfs 1 per port
    port = resolve(Root(fake_sysfs(tmp_path / "s")), "ens2f0/0")  # sriov_numvfs 4
    ip = parse_ip_link(text("ip_link_ice_example_cnf.txt"))
    trusted = VfInfo(0, link_state="auto", trust=True)

    def rules(plan, **kw):  # each rule's first finding (errors come first)
        found = check([VfUse(port, trusted, ip, promisc=False, plan=plan, plan_given=True, **kw)])
        return {f.rule: f for f in reversed(found)}

    drift = rules(PlanVfs(name, 1))["vf-count-plan"]
    assert drift.severity == "warning" and "has 4 VFs enabled, the plan's policy" in drift.message
    short = rules(PlanVfs(name, 1), needed_on_pf=2)
    assert short["vf-count-plan"].severity == "error" and "numVfs: 2 in SriovNetworkNodePolicy" in \
        short["vf-count-plan"].remedy
    assert not rules(PlanVfs("p", 4))  # as planned, and enough
    ranged = plan_for([("p", PolicySpec.from_json({"numVfs": 4, "nicSelector": {"pfNames": ["ens2f0#2-3"]}}))],
                      "ens2f0", "")
    assert ranged == PlanVfs("p", 4, 2, 3) and "outside the plan's range" in rules(ranged)["vf-count-plan"].message
    # the study's policies select PFs by netFilter (OpenStack): none names ens2f0
    ref = read_plan(str(FIX.parent / "cnf" / "reference-sriov-policies.json"))
    assert [n for n, _ in ref] == ["provider1", "provider2"] and plan_for(ref, "ens2f0", port.pf_pci) is None
    assert "no SriovNetworkNodePolicy of the plan selects PF ens2f0" in rules(None)["vf-count-plan"].message
    (tmp_path / "none.yaml").write_text("kind: Pod\n")
    with pytest.raises(ZeroLossError, match="no SriovNetworkNodePolicy in it"):
        read_plan(str(tmp_path / "none.yaml"))
    (tmp_path / "bad.yaml").write_text("kind: SriovNetworkNodePolicy\nspec: {nicSelector: ens2f0}\n")
    with pytest.raises(ZeroLossError) as e:  # a policy of another shape: one line naming the file and the key
        read_plan(str(tmp_path / "bad.yaml"))
    assert "bad.yaml: an SriovNetworkNodePolicy not of its kind's shape (nicSelector: " in e.value.message
    assert "\n" not in e.value.message


def test_readme_sriov_lab_example_is_a_valid_lab_file():
    page = (Path(__file__).parent.parent / "docs" / "sriov.md").read_text()
    block = page[page.index("# SR-IOV VF ports"):].split("```yaml\n", 1)[1].split("```", 1)[0]
    lab = parse(yaml.safe_load(block), "docs/sriov.md")
    assert lab.sriov_policy == "sriov-plan.yaml" and [p.dut_port for p in lab.ports] == ["sriov:ens2f0/0",
                                                                                         "sriov:0000:37:01.1"]
