"""Lab mode's SR-IOV VF ports (issue 31 Must 3) over the same SSH/agent layer as the other lab tests: a node with no
OVS at all, zlgen's ports "cabled to VFs" that a testpmd VNF holds (a VM by its libvirt domain), so the path is
zlgen -> VF -> the VNF -> VF -> zlgen. This host has no SR-IOV NIC and no libvirt: the node's session (this test's own
sshd) reads a sysfs tree laid out as the kernel's (ZEROLOSS_TEST_SYSFS_ROOT, honoured by the agent's sysfs op only) and
finds tests/lab/fake_sriov.py first on PATH as `ip` and `virsh`: ip prints the real `ip -s -d link show dev ens2f0` of
an E810 (tests/fixtures/sriov) with the VFs' numbers read live from the VNF's ports, which stand in for the VFs as
vhost-user stands in for NICs in the other lab tests. The zeroloss code under test reads /sys and runs ip/virsh as on
a real node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from zeroloss.drivers.vnf.domain import with_vfs

from .fake_sriov import build_sysfs
from .lab import missing
from .sshd import SshServer
from .test_lab_run import ZL, no_traceback

pytestmark = pytest.mark.bench

FAKE = Path(__file__).with_name("fake_sriov.py")
FIX = Path(__file__).parent.parent / "fixtures" / "sriov"
# the VFs' MACs of the fixture's `ip link` (vf 0, vf 1 of ens2f0): the VNF's ports are those VFs
VF_MACS = ("92:be:3c:24:4a:7d", "be:c8:8b:88:a2:15")
GEN_MACS = ("02:00:5a:00:00:01", "02:00:5a:00:00:02")
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class NodeSshd(SshServer):
    """The test's sshd whose sessions get the stand-ins' directory first on PATH and the fake sysfs root (sshd uses
    its first SetEnv line only: the one line is extended)."""

    def __init__(self, workdir: Path, env: str):
        super().__init__(workdir)
        self.extra_env = env

    def _write_configs(self) -> None:
        super()._write_configs()
        self.config.write_text(self.config.read_text().replace("SetEnv SHLVL=1", f"SetEnv SHLVL=1 {self.extra_env}"))


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A pure SR-IOV node: fake sysfs, ip/virsh stand-ins, its own sshd, and a testpmd VNF holding "VFs" 0 and 1
    (vhost-user clients of zlgen's sockets). No OVS is started."""
    why = missing()
    if why:
        pytest.skip(f"no lab here: {why}")
    for tool in ("/usr/sbin/sshd", "ssh-keygen", "ssh"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is missing")
    d = tmp_path_factory.mktemp("sriov") / f"s{os.getpid()}"
    d.mkdir()
    build_sysfs(d / "root")
    bin_dir = d / "bin"
    bin_dir.mkdir()
    for tool in ("ip", "virsh"):
        (bin_dir / tool).symlink_to(FAKE)
    prefix = f"zlsriov{os.getpid()}"
    telemetry = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    socks = [str(d / f"vf{i}.sock") for i in (0, 1)]
    # the VM holding the VFs, as zeroloss's own renderer writes it over a real libvirt domain XML
    (d / "zl-vm.xml").write_text(with_vfs((FIX / "domain_libvirt_hostdev_pci.xml").read_text(),
                                          [("0000:37:01.0", VF_MACS[0], 0), ("0000:37:01.1", VF_MACS[1], 0)]))
    conf = {"pfs": {"ens2f0": {"template": str(FIX / "ip_link_ice_example_cnf.txt"),
                               "vfs": {"0": [telemetry, 0], "1": [telemetry, 1]}}},
            "domains": {"zl-vm": str(d / "zl-vm.xml"), "vmx": str(FIX / "domain_vmx_two_vfs.xml")}}
    (d / "fake.json").write_text(json.dumps(conf))
    env = f"PATH={bin_dir}:{BASE_PATH} ZEROLOSS_TEST_SYSFS_ROOT={d / 'root'} ZL_FAKE_SRIOV={d / 'fake.json'}"
    log = open(d / "vnf.log", "wb")
    vnf = subprocess.Popen(
        ["dpdk-testpmd", "-l", "0,1", "--main-lcore", "1", "--file-prefix", prefix, "--in-memory",
         "--single-file-segments", "-m", "256", "--no-pci",
         "--vdev", f"net_vhost0,iface={socks[0]},client=1", "--vdev", f"net_vhost1,iface={socks[1]},client=1",
         "--", "--forward-mode=mac", f"--eth-peer=0,{GEN_MACS[0]}", f"--eth-peer=1,{GEN_MACS[1]}", "--auto-start",
         "--total-num-mbufs=8192"], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(telemetry):
            if vnf.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the VNF did not come up (log: {d / 'vnf.log'})")
            time.sleep(0.1)
        with NodeSshd(d / "sshd", env) as sshd:
            yield {"dir": d, "sshd": sshd, "socks": socks, "telemetry": telemetry, "vnf": vnf}
    finally:
        vnf.terminate()
        try:
            vnf.wait(timeout=10)
        except subprocess.TimeoutExpired:
            vnf.kill()
            vnf.wait()
        log.close()


def sriov_lab(node, domain="zl-vm") -> str:
    """No dut.ovs: every generator port is cabled to a VF (by PF/index and by PCI address) the VM VNF holds."""
    socks = node["socks"]
    doc = {
        "dut": {"ssh": "lab1", "ssh_config": str(node["sshd"].ssh_config),
                "vnfs": [{"name": "vnf1", "ports": ["sriov:ens2f0/0", "sriov:0000:37:01.1"],
                          "telemetry": node["telemetry"], "forward": "mac", "vm": {"domain": domain}}]},
        "generator": {"lcores": "1", "ports": [
            {"name": "A", "device": f"net_virtio_user0,path={socks[0]},server=1,mac={GEN_MACS[0]},queue_size=1024",
             "dut_port": "sriov:ens2f0/0", "dst_mac": VF_MACS[0], "speed_gbps": 10},
            {"name": "B", "device": f"net_virtio_user1,path={socks[1]},server=1,mac={GEN_MACS[1]},queue_size=1024",
             "dut_port": "sriov:0000:37:01.1", "dst_mac": VF_MACS[1], "speed_gbps": 10}]},
        "traffic": {"pairs": [["A", "B"]], "flows": 64},
    }
    path = node["dir"] / f"lab-{domain}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_vf_path_without_ovs_balances_with_vf_hops_in_the_ledger(node, tmp_path):
    f = sriov_lab(node)
    r = subprocess.run([*ZL, "trial", "--lab", f, "--frame-size", "64", "--duration", "1", "--interval", "1",
                        "--json", "-o", str(tmp_path / "soak.json"), "--rate", "0.5%"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    no_traceback(r)
    assert r.returncode in (0, 2), r.stderr
    doc = json.loads(r.stdout)
    assert doc["state"] == "complete"
    # the node's VFs as its sysfs says, and the VM's domain holding them
    lab = doc["placement"]["lab"]  # the node's placement, as in a run file's
    place = lab["sriov"]
    assert (place["sriov:ens2f0/0"]["vf_pci"], place["sriov:ens2f0/0"]["pf_driver"]) == ("0000:37:01.0", "ice")
    assert (place["sriov:0000:37:01.1"]["pf"], place["sriov:0000:37:01.1"]["index"]) == ("ens2f0", 1)
    assert place["vm_domains"]["vnf1"] == {"domain": "zl-vm", "vfs": ["0000:37:01.0", "0000:37:01.1", "0000:06:12.5"]}
    assert lab["ovs_version"] == "" and doc["dut_state"] == {}
    for led in doc["ledger"]:
        assert [h["kind"] for h in led["hops"]] == ["gen_tx", "vf_rx", "proc_tx", "vf_tx", "gen_rx"]
        assert led["sent"] > 0 and led["sent"] == led["received"] + led["counted"] + led["unexplained"]
        assert led["unexplained"] == 0, led
        assert all(h["counters"] for h in led["hops"]), led["hops"]
    vfs = doc["counters"]["vfs"]  # the PF's per-VF counters (ip -s -d link show dev ens2f0) over the trial
    sent_a = next(d["tx"] for d in doc["result"]["directions"] if d["tx_side"] == 0)
    assert vfs["sriov:ens2f0/0"]["rx_packets"] + vfs["sriov:ens2f0/0"]["rx_dropped"] == sent_a
    # the audit read the fixture's VF settings: trust off with a promiscuous DPDK
    assert any(w.startswith("SR-IOV vf-trust: VF ens2f0 vf 0") for w in doc["warnings"]), doc["warnings"]


def test_vm_holding_other_vfs_is_one_line_before_traffic(node, tmp_path):
    f = sriov_lab(node, domain="vmx")  # its XML passes 0000:04:10.0 and 0000:04:10.1
    t0 = time.monotonic()
    r = subprocess.run([*ZL, "trial", "--lab", f, "--rate", "1%", "--duration", "1", "-o", str(tmp_path / "s.json")],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    no_traceback(r)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "port sriov:ens2f0/0 is VF 0000:37:01.0, which VM vmx does not hold (virsh dumpxml vmx passes " \
           "0000:04:10.0, 0000:04:10.1)" in r.stderr
    assert time.monotonic() - t0 < 20


def test_a_search_runs_on_a_vf_path_without_ovs(node, tmp_path):
    """`zeroloss run --lab` on the pure SR-IOV node: the search finds an NDR (or says the generator limited it), every
    trial's ledger has the VF hops and balances."""
    out = tmp_path / "r.json"
    r = subprocess.run([*ZL, "run", "--lab", sriov_lab(node), "--frame-sizes", "64", "--trial", "0.3",
                        "--validation", "0.6", "--granularity", "20", "--latency-loads", "none", "-o", str(out),
                        "--json"], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    no_traceback(r)
    assert r.returncode in (0, 2, 3), r.stderr
    doc = json.loads(out.read_text())
    (s,) = doc["searches"]
    # an NDR, the generator's limit, or none with the evidence for it: a clean trial at the search's lowest step
    # in which the VNF lost frames (its VF's rx_missed, counted below). How fast the VNF forwards on this 2-vCPU host
    # is not this test's: at 20 % granularity one step is 2.98 Mpps, which it misses now and then (rx_missed at 3 Mpps)
    ndr = s["result"]["ndr"]
    assert ndr["rate_pps"] or "generator-limited" in s["result"]["flags"] or ndr["clean_fail_pps"], s["result"]
    for t in s["trials"]:
        for led in t["ledger"]:
            assert [h["kind"] for h in led["hops"]] == ["gen_tx", "vf_rx", "proc_tx", "vf_tx", "gen_rx"]
            assert led["unexplained"] == 0, led
