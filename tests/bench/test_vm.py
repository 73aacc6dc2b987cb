"""The VNF as a real virtual machine (--vnf vm): QEMU boots the guest built from Debian packages, its virtio-net
devices are vhost-user ports of the bench's OVS, the guest's testpmd forwards and its counters reach the ledger.

On a host whose /dev/kvm has no hardware virtualization behind it (KVM-PVM in a nested VM) the guest runs under
QEMU's emulator (TCG), as `--set vnf_accel=auto` decides: slow, but every part of the path is the real one."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from zeroloss.drivers.vnf.vm import GUEST_DIR, kvm_usable
from zeroloss.host.domxml import parse_domain
from zeroloss.results.resultfile import read_doc

from .test_faults import ZEROLOSS, one_error_line, pid_of, start, trials, wait_trials
from .test_ovs import _conserved
from .test_run import run
from .verdicts import assert_ran

why = kvm_usable() or (None if (GUEST_DIR / "initrd.gz").exists() else "the guest is not built (make setup)")
pytestmark = pytest.mark.skipif(why is not None, reason=f"no VM here: {why}")

# short trials, a coarse search: the emulated guest forwards some 100 kpps. The first trial at half the top: the top
# (5 % above the MRR) fails and its disturbed or generator-short trials are retried, some 3 s a search; the claims
# are about the path's ledger, not about the search's top
VM = ["--vnf", "vm", "--trial", "0.5", "--validation", "1", "--drain-ms", "300", "--granularity", "10",
      "--start", "50", "--flows", "16", "--warmup", "0.3", "--latency-loads", "none", "--set", "core_probe=false"]


def qemus(tag: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
    return [ln for ln in ps.splitlines() if "qemu-system" in ln and tag in ln and " Z" not in ln]


@pytest.mark.parametrize("topology,vnfs,sizes,queues", [("pvp", 1, "64,9000", 2), ("pvvp", 2, "64", 1)])
def test_vm_path_accounts_for_every_frame(tmp_path, topology, vnfs, sizes, queues):
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"))
    out = tmp_path / "r.json"
    r = run("--topology", topology, "--frame-sizes", sizes, *VM, "--set", f"vnf_queues={queues}", "-o", str(out),
            "--json", env=env, timeout=900)
    assert_ran(r)
    doc = read_doc(out)
    place = doc["placement"][topology]
    assert place["vnf"] == "vm" and len(place["vnf_domains"]) == vnfs and all(place["vnf_boot_s"])
    for xml in place["vnf_domains"]:
        dom = parse_domain(xml)
        assert [(i.rx_queue_size, i.queues) for i in dom.vhost_interfaces()] == [(1024, queues)] * 2
        assert dom.hugepages and dom.vcpupins
    want = {f"vnf{k}" for k in range(vnfs)}
    for s in doc["searches"]:
        assert s["result"]["ndr"]["rate_pps"], s["frame"]
        for t in s["trials"]:
            if t.get("kept") == "summary":  # a clean search trial keeps no counters (results/keep.py)
                continue
            assert set(t["counters"]["procs"]) == want  # the guests' testpmd counters came through the relay
    if queues > 1:  # the guest enabled every queue pair: OVS polls queue 1 of the VM's ports too
        show = doc["searches"][-1]["trials"][-1]["dut_state"]["pmd_rxq_show"]
        assert re.search(r"port: v0\s+queue-id:\s+1 ", show) and re.search(r"port: v1\s+queue-id:\s+1 ", show), show
    dirs = _conserved(doc)  # nothing unexplained: the VNF hops have counters
    assert sum(d["ledger"]["sent"] for d in dirs) > 0
    assert qemus(str(tmp_path)) == []


def test_vm_paused_mid_trial_is_attributed_to_the_vnf_port():
    """check ledger's vnf-stop case with the guest paused (QMP stop, as virsh suspend) instead of SIGSTOP."""
    r = subprocess.run([*ZEROLOSS, "check", "ledger", "--case", "vnf-stop", "--vnf", "vm", "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    (case,) = json.loads(r.stdout)
    assert case["passed"] and case["lost"] > 0 and case["attributed_pct"] >= 99, case


def test_jumbo_check_passes_with_a_vm():
    r = subprocess.run([*ZEROLOSS, "check", "jumbo", "--vnf", "vm", "--json"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr + r.stdout
    assert all(s["passed"] for s in json.loads(r.stdout))


def test_kill_9_of_qemu_mid_run_is_one_line_and_resumable(tmp_path):
    out, rundir = tmp_path / "r.json", tmp_path / "run"
    p = start(out, rundir, "--topology", "pvp", "--frame-sizes", "64", *VM)
    kept = wait_trials(p, out, 1, timeout=300)
    os.kill(pid_of(rundir, "vnf0.log.pid"), signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    line = one_error_line(err)
    assert "VNF 1 (qemu-system-x86_64)" in line and "killed by SIGKILL" in line, line
    assert f"zeroloss run --resume {out}" in line
    doc = read_doc(out)
    assert doc["state"] == "failed" and trials(out) >= kept
    deadline = time.monotonic() + 10
    while qemus(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert qemus(str(tmp_path)) == []
