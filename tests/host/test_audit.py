"""`host audit`: each rule fires on a host that breaks it and stays quiet on the tuned single-socket fixture."""

import dataclasses
from collections import Counter

import pytest

from zeroloss.core.cpuset import to_mask
from zeroloss.host import rules, rules_guest, rules_kernel, rules_zpl  # noqa: F401  (registers the rules)
from zeroloss.host.audit import RULES, Context, format_report, run
from zeroloss.host.domxml import parse_domain
from zeroloss.host.hostfacts import PcieLink, Proc

from .conftest import FIXTURES, load

HOSTS = {name: load(name) for name in ("r740xd", "single-socket", "numa-minus-one", "vm-2core")}
UNTUNED = (FIXTURES / "domain-untuned.xml").read_text()
TUNED = (FIXTURES / "domain-tuned.xml").read_text()


def domain(text, **replace):
    """A domain parsed from text with each old=new replacement made (multi-line olds use \\n)."""
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    return parse_domain(text, "vm.xml")


NO_PAGES = ("  <memoryBacking>\n    <hugepages>\n      <page size='1' unit='GiB'/>\n    </hugepages>\n"
            "  </memoryBacking>\n")


def with_ovs(name, other_config=None, drop=(), iface=None, **fields):
    """The host's inventory with its OVS state changed (other_config keys set or dropped, interface fields)."""
    inv = HOSTS[name]
    oc = {k: v for k, v in inv.ovs.other_config.items() if k not in drop} | (other_config or {})
    ifaces = [dataclasses.replace(i, **iface[i.name]) if iface and i.name in iface else i for i in inv.ovs.interfaces]
    return dataclasses.replace(inv, ovs=dataclasses.replace(inv.ovs, other_config=oc, interfaces=ifaces, **fields))


def ctx(inv, dom=None, **kw):
    return Context(inv, inv.ovs, dom, **kw)


R740_SHOW = (FIXTURES / "r740xd" / "ovs" / "pmd-rxq-show.txt").read_text()
TRIGGERS = {  # rule -> (context that breaks it, severity, words of the message)
    "isolation-missing": (lambda: ctx(HOSTS["numa-minus-one"]), "error", "no CPU is isolated"),
    "pmd-mask-unset": (lambda: ctx(with_ovs("single-socket", drop=["pmd-cpu-mask"])), "warning",
                       "pmd-cpu-mask is not set"),
    "pmd-not-isolated": (lambda: ctx(with_ovs("single-socket", {"pmd-cpu-mask": "0x607"})), "error",
                         "PMD CPUs 0 are not isolated"),
    "pmd-shared": (lambda: ctx(with_ovs("single-socket", {"pmd-cpu-mask": "0x206"})), "error",
                   "sibling threads 10 of PMD cores are not PMDs"),
    "numa-no-pmd": (lambda: ctx(with_ovs("r740xd", {"pmd-cpu-mask": to_mask([3, 39])})), "error",
                    "node 0 has DPDK ports (dpdk0, dpdk1, dpdk2, dpdk3) but no PMD"),
    "pmd-nic-numa": (lambda: ctx(with_ovs("r740xd", iface={"dpdk0": {"other_config": {"pmd-rxq-affinity": "0:3"}}})),
                     "error", "dpdk0 (node 0) has queues pinned to PMDs on another node: q0->CPU 3 (node 1)"),
    "cross-numa-rxq": (lambda: ctx(with_ovs("r740xd", pmd_rxq_show=R740_SHOW.replace(
        "core_id 21:\n  isolated : false", "core_id 21:\n  isolated : false\n  port: dpdk3             queue-id:  1 "
        "(enabled)   pmd usage: 12 %"))), "error", "1 RX queue(s) are polled across NUMA"),
    "hugepages-short": (lambda: ctx(HOSTS["single-socket"], vm_memory_gb=60), "error",
                        "node 0: 51200 MB of free hugepages, 61440 MB needed (0 MB OVS by OVS DPDK already"),
    "hugepages-1g": (lambda: ctx(HOSTS["numa-minus-one"]), "warning", "node 0 has no 1 GB hugepages"),
    "socket-mem-low": (lambda: ctx(with_ovs("single-socket", {"dpdk-socket-mem": "1024"})), "error",
                       "node 0: dpdk-socket-mem 1024 MB < 3072 MB the TripleO formula gives for dpdk0 (MTU 9000), "
                       "dpdk1 (MTU 9000) (per-port variant: 6144 MB)"),
    "memory-channels": (lambda: ctx(HOSTS["r740xd"]), "warning",
                        "DPDK is told nothing (default 4) memory channels, the DIMMs populate 6 per socket"),
    "descriptors": (lambda: ctx(HOSTS["r740xd"]), "warning",
                    "dpdk0 carries jumbo frames (MTU 9000) with 2048/2048 RX/TX descriptors"),
    "single-rxq": (lambda: ctx(HOSTS["r740xd"]), "error", "dpdk0 has 1 RX queue but carries MTU 9000"),
    "irq-on-isolated": (lambda: ctx(HOSTS["r740xd"]), "warning", "2 IRQ(s) may fire on isolated/PMD CPUs"),
    "nohz-rcu-missing": (lambda: ctx(dataclasses.replace(HOSTS["r740xd"], cmdline=HOSTS["r740xd"].cmdline.replace(
        "rcu_nocbs=2-35,38-71", ""))), "warning", "CPUs 2-35,38-71 are isolated or run PMDs but are not in rcu_nocbs"),
    "iommu": (lambda: ctx(HOSTS["numa-minus-one"]), "error",
              "0000:82:00.0 bound to vfio-pci, but the kernel has no IOMMU groups"),
    "cpu-governor": (lambda: ctx(HOSTS["numa-minus-one"]), "warning", "CPUs 0-7 run the schedutil governor"),
    "cstates": (lambda: ctx(HOSTS["r740xd"]), "warning", "CPUs 2-35,38-71 may sleep in C6 (133 us)"),
    "nic-numa-unknown": (lambda: ctx(HOSTS["numa-minus-one"]), "warning", "0000:82:00.0 reports NUMA node -1"),
    "vhost-ring": (lambda: ctx(HOSTS["r740xd"], domain(UNTUNED)), "warning",
                   "interface /var/lib/vhost_sockets/vhu1 has rx/tx rings 256/256"),
    "emulator-on-vcpu": (lambda: ctx(HOSTS["r740xd"], domain(UNTUNED)), "warning",
                         "pins its emulator threads onto vCPU cores 10,14,46,50"),
    "vm-hugepages": (lambda: ctx(HOSTS["single-socket"], domain(TUNED, **{NO_PAGES: ""})), "warning",
                     "has vhost-user ports but no hugepage-backed memory"),
    "vm-nic-numa": (lambda: ctx(HOSTS["r740xd"], domain(UNTUNED, **{"cpuset='10'": "cpuset='11'"})), "warning",
                    "runs or keeps memory on node(s) 1; the DPDK NICs are on 0"),
    "vhost-multiqueue": (lambda: ctx(HOSTS["single-socket"], domain(UNTUNED)), "warning",
                         "has 1 queue pair(s), the DPDK ports 2 RX queues"),
    "pcie-link": (lambda: ctx(HOSTS["r740xd"]), "error",
                  "0000:5e:00 carries 2 port(s), 50 Gb/s in all, on a PCIe gen3 x4 (8.0 GT/s) link of 31.5 Gb/s per "
                  "direction: it cannot forward line rate"),
    "pmd-other-process": (lambda: ctx(HOSTS["r740xd"]), "error",
                          "1 process(es) other than ovs-vswitchd last ran on PMD CPUs 12: collectd"),
    "irq-count-isolated": (lambda: ctx(HOSTS["r740xd"]), "warning",
                           "2 device IRQ(s) have fired on isolated/PMD CPUs 5,7 since boot"),
    "datapath-mixed": (lambda: ctx(with_ovs("single-socket", bridges={"br-dpdk": "netdev", "br-ex": ""})), "error",
                       "bridges br-ex use the kernel datapath and br-dpdk the userspace (netdev) one"),
}


def findings(rule_id, context):
    rule = next(r for r in RULES if r.id == rule_id)
    report = run(context, only=[rule])
    assert rule_id not in report.skipped, report.skipped
    return report.findings


def test_every_rule_has_a_trigger_test():
    assert set(TRIGGERS) == {r.id for r in RULES}
    assert len(RULES) == 28 and all(r.source and r.what for r in RULES)


@pytest.mark.parametrize("rule_id", sorted(TRIGGERS))
def test_rule_fires(rule_id):
    build, severity, words = TRIGGERS[rule_id]
    found = findings(rule_id, build())
    assert found and found[0].severity == severity and words in found[0].message, found
    assert all(f.evidence and f.remedy and f.source for f in found)


def test_tuned_single_socket_host_is_clean():
    report = run(ctx(HOSTS["single-socket"], parse_domain(TUNED, "tuned.xml")))
    assert report.findings == [] and report.skipped == {} and len(report.passed) == 28
    assert report.exit_code == 0


def test_r740xd_audit_finds_what_the_whitepaper_fixed():
    report = run(ctx(HOSTS["r740xd"], parse_domain(UNTUNED, "untuned.xml")))
    assert Counter(f.rule for f in report.findings) == Counter({
        "single-rxq": 4, "descriptors": 4, "memory-channels": 1, "irq-on-isolated": 1, "cstates": 1,
        "vhost-ring": 2, "emulator-on-vcpu": 1, "pcie-link": 1, "pmd-other-process": 2, "irq-count-isolated": 1})
    assert [f.severity for f in report.findings[:6]] == ["error"] * 6  # errors first
    assert report.exit_code == 2
    irq = next(f for f in report.findings if f.rule == "irq-on-isolated")
    assert "98 (PCI-MSI 91750401-edge i40e-ens4f0-TxRx-0): 5" in irq.evidence
    assert "echo 0-1,36-37 > /proc/irq/$i/smp_affinity_list" in irq.remedy


@pytest.mark.parametrize("rule_id, build", [
    ("cstates", lambda: ctx(dataclasses.replace(HOSTS["r740xd"], pm_qos_latency_us=1))),  # a PM QoS cap holds C6 off
    ("pmd-shared", lambda: ctx(HOSTS["r740xd"])),  # the whitepaper's PMDs are whole sibling pairs
    ("numa-no-pmd", lambda: ctx(HOSTS["r740xd"])),
    ("socket-mem-low", lambda: ctx(HOSTS["r740xd"])),  # 8192 >= 3072 for 4 x MTU 9000 on node 0
    ("hugepages-short", lambda: ctx(HOSTS["single-socket"], vm_memory_gb=50)),
    ("single-rxq", lambda: ctx(with_ovs("r740xd", iface={f"dpdk{i}": {"mtu": 1500} for i in range(4)}))),
    ("vhost-multiqueue", lambda: ctx(HOSTS["r740xd"], domain(UNTUNED))),  # the ports themselves have 1 queue
    ("vm-nic-numa", lambda: ctx(HOSTS["r740xd"], domain(UNTUNED))),
    ("emulator-on-vcpu", lambda: ctx(HOSTS["single-socket"], domain(TUNED))),
    ("pcie-link", lambda: ctx(HOSTS["single-socket"])),  # 2 x 25 GbE on gen4 x8
    ("pmd-other-process", lambda: ctx(HOSTS["single-socket"])),  # only ovs-vswitchd near the PMDs
    ("irq-count-isolated", lambda: ctx(HOSTS["single-socket"])),
    ("datapath-mixed", lambda: ctx(with_ovs("single-socket", bridges={"br-ex": "system", "br-int": "system"}))),
])
def test_rule_stays_quiet(rule_id, build):
    assert findings(rule_id, build()) == []


def test_rule_variants():
    lcores = findings("pmd-shared", ctx(with_ovs("single-socket", {"dpdk-lcore-mask": "0x103"})))
    assert "PMD CPUs 1 also run OVS's non-PMD (lcore) threads" in lcores[0].message
    assert "dpdk-lcore-mask=0x101" in lcores[0].remedy
    guest = findings("pmd-shared", ctx(HOSTS["single-socket"], domain(TUNED, **{"cpuset='3'": "cpuset='2'"})))
    assert "runs vCPUs or its emulator on PMD CPUs 2" in guest[0].message
    bad = findings("descriptors", ctx(with_ovs("single-socket", iface={"dpdk0": {"options": {
        "dpdk-devargs": "0000:17:00.0", "n_rxq": "2", "n_rxq_desc": "3000", "n_txq_desc": "4096"}}})))
    assert bad[0].severity == "error" and "n_rxq_desc=3000: not a power of 2" in bad[0].message
    flows = findings("single-rxq", ctx(with_ovs("r740xd", iface={"dpdk0": {"mtu": 1500}}), flows=1000))
    assert "dpdk0 has 1 RX queue but carries 1000 flows" in flows[0].message
    unset = findings("socket-mem-low", ctx(with_ovs("single-socket", drop=["dpdk-socket-mem"])))
    assert unset[0].severity == "warning" and 'dpdk-socket-mem="3072"' in unset[0].remedy
    cold = findings("hugepages-short", ctx(with_ovs("single-socket", dpdk_initialized=False), vm_memory_gb=48))
    assert "51200 MB of free hugepages, 52224 MB needed (3072 MB OVS by dpdk-socket-mem" in cold[0].message
    single = HOSTS["single-socket"]
    no_pin = findings("emulator-on-vcpu", ctx(single, domain(TUNED, **{"<emulatorpin cpuset='5'/>": ""})))
    assert "has no <emulatorpin>" in no_pin[0].message
    small = findings("vm-hugepages", ctx(single, domain(TUNED, **{"size='1' unit='GiB'": "size='2048'"})))
    assert "backed by 2048 KiB pages" in small[0].message
    intel = findings("iommu", ctx(dataclasses.replace(HOSTS["r740xd"], cmdline="ro iommu=pt")))
    assert [f.message.split(":")[0] for f in intel] == ["intel_iommu=on is missing"]


def test_live_vm_fixture_has_nothing_to_audit_without_dpdk():
    report = run(ctx(HOSTS["vm-2core"]))
    assert report.findings == []
    assert report.skipped["iommu"].startswith("no DPDK in use") and report.skipped["descriptors"] == "no OVS state"
    text = format_report(report, ["head"])
    assert "no findings; 5 rule(s) passed, 23 not applicable or lacking data" in text
    assert "skipped (no --domain-xml): vhost-ring, emulator-on-vcpu, vm-hugepages, vhost-multiqueue" in text


def test_pcie_link_variants():
    inv = HOSTS["r740xd"]
    fast = {pci: PcieLink(8.0, 8, 8.0, 8) for pci in inv.pcie}
    assert findings("pcie-link", ctx(dataclasses.replace(inv, pcie=fast))) == []
    gen1 = fast | {"0000:3b:00.0": PcieLink(2.5, 8, 8.0, 8)}  # trained at gen1: 16 Gb/s for 50
    (f,) = findings("pcie-link", ctx(dataclasses.replace(inv, pcie=gen1)))
    assert f.severity == "error" and "gen1 x8 (2.5 GT/s) link of 16.0 Gb/s" in f.message
    slow = fast | {"0000:3b:00.0": PcieLink(5.0, 8, 8.0, 8)}  # gen2 x8: 32 Gb/s; only the degradation is reported
    single = dataclasses.replace(inv, nics=[n for n in inv.nics if n.pci != "0000:3b:00.1"], pcie=slow)
    (w,) = findings("pcie-link", ctx(single))
    assert w.severity == "warning" and "trained its PCIe link at gen2 x8 (5.0 GT/s) although it supports gen3 x8" \
        in w.message and "32.0 Gb/s still covers its 25 Gb/s" in w.message
    named = with_ovs("r740xd", iface={"dpdk2": {"status": {"numa_id": "0", "link_speed": "10Gbps"}},
                                      "dpdk3": {"status": {"numa_id": "0", "link_speed": "10Gbps"}}})
    (ok,) = findings("pcie-link", ctx(named))  # OVS says 2 x 10 Gb/s: x4 still carries them, the x4 is reported
    assert ok.severity == "warning" and "OVS dpdk2 link_speed" in ok.evidence


def test_other_processes_on_pmds():
    inv = HOSTS["r740xd"]
    found = findings("pmd-other-process", ctx(inv))
    assert [f.severity for f in found] == ["error", "warning"]
    assert "irqbalance (pid 2388): allowed 0-71, last CPU 37" in found[1].evidence
    assert "taskset -a -p -c 0-1,36-37" in found[0].remedy
    assert "ovs-vswitchd" not in found[0].evidence and "kthreadd" not in found[1].evidence
    quiet = dataclasses.replace(inv, procs=[Proc(1, "systemd", (0, 1, 36, 37), 0)])
    assert findings("pmd-other-process", ctx(quiet)) == []
    report = run(ctx(dataclasses.replace(inv, procs=[])), only=[r for r in RULES if r.id == "pmd-other-process"])
    assert report.skipped == {"pmd-other-process": "no process list (/proc/PID)"}


def test_hugepages_remedy_that_cannot_fit_is_said_so():
    (f,) = findings("hugepages-short", ctx(HOSTS["single-socket"], vm_memory_gb=70))
    assert "the 73 1 GB pages that would take exceed the node's 62 GB of memory (MemTotal 65617692 kB)" in f.message
    assert f.remedy.startswith("impossible on node 0: at most 59 GB of guests fit there (62 GB - 3 GB of pages in "
                               "use - 0 GB OVS")
