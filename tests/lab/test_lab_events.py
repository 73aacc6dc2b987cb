"""zeroloss events on tests/lab's node (a real OVS-DPDK reached over sshd): the mtu event is made through the node's
own commands only with --allow-dut-changes, and the node's mtu_request is as it was afterwards; without the flag
it is refused in one line before anything starts. ovs-restart and vnf-restart run the lab file's commands (lab.sh
restart-ovs / restart-vnf, as a node's service manager would restart them): frames are lost, every one accounted for,
and the node is as before with new processes. The test node has no bond: a bond event is one line before traffic
(the bond's commands are unit-tested in tests/test_lab_events_unit.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from zeroloss.drivers.lab.labevents import openflow_up
from zeroloss.results import events as ev

from .lab import LAB_SH
from .test_lab_run import lab_file

pytestmark = pytest.mark.bench

ZL = [sys.executable, "-m", "zeroloss.cli", "events"]


def test_refused_without_allow_dut_changes(tmp_path, lab, sshd):
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    r = subprocess.run([*ZL, "--lab", f, "--event", "mtu", "--rate", "10k", "-o", str(tmp_path / "e.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "--allow-dut-changes" in r.stderr, r.stderr
    assert not (tmp_path / "e.json").exists()


def test_mtu_event_on_the_node_is_undone(tmp_path, lab, sshd):
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    before = lab.vsctl("get", "Interface", "vhu0", "mtu_request").strip()
    out = tmp_path / "e.json"
    r = subprocess.run([*ZL, "--lab", f, "--allow-dut-changes", "--event", "mtu", "--repeat", "1", "--rate", "10k",
                        "--duration", "2", "--at", "0.5", "--undo-at", "1.2", "--frame-size", "64", "-o", str(out)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    rec = ev.read(json.loads(out.read_text()), out)
    assert rec.state == "complete" and [t.event for t in rec.trials] == ["baseline", "mtu"]
    (t,) = [t for t in rec.trials if t.event == "mtu"]
    assert [a.what.split(" mtu_request")[0] for a in t.actions] == ["ovs-vsctl set Interface vhu0"] * 2
    assert t.actions[0].t_ms >= 500 and t.actions[1].t_ms >= 1200
    assert t.ledger and all(led["sent"] == led["received"] + led["lost"] for led in t.ledger)
    assert lab.vsctl("get", "Interface", "vhu0", "mtu_request").strip() == before  # the node as it was
    assert "mtu" in r.stdout


def test_ovs_and_vnf_restart_through_the_lab_files_commands(tmp_path, lab, sshd):
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    doc = yaml.safe_load(open(f))
    doc["dut"]["ovs"]["restart"] = [str(LAB_SH), "restart-ovs", lab.dir]
    doc["dut"]["vnfs"][0]["restart"] = f"{LAB_SH} restart-vnf {lab.dir}"
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(doc))
    other = lab.vsctl("get", "Open_vSwitch", ".", "other_config")
    facts = json.loads(open(f"{lab.dir}/lab.json").read())
    out = tmp_path / "e.json"
    r = subprocess.run([*ZL, "--lab", f, "--allow-dut-changes", "--event", "ovs-restart", "--event", "vnf-restart",
                        "--repeat", "1", "--no-baseline", "--rate", "10k", "--duration", "8", "--at", "1",
                        "--frame-size", "64", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rec = ev.read(json.loads(out.read_text()), out)
    assert rec.state == "complete" and [t.event for t in rec.trials] == ["ovs-restart", "vnf-restart"]
    for t in rec.trials:
        assert len(t.actions) == 1 and f"restart-{t.event.split('-')[0]} {lab.dir}" in t.actions[0].what
        assert t.actions[0].t_ms >= 1000 and t.t_undo_ms is None
        assert t.lost > 0, t  # the restart lost frames...
        for d in t.directions:  # ...every one accounted for
            assert d.tx + d.refused == d.rx + d.lost
        assert t.ledger and all(led["sent"] == led["received"] + led["lost"] for led in t.ledger)
        assert t.where, t.ledger  # and the ledger says where
        assert not [w for w in t.warnings if "after the trial" in w]
    now = json.loads(open(f"{lab.dir}/lab.json").read())
    assert now["ovs_pids"][1] != facts["ovs_pids"][1] and now["vnf_pid"] != facts["vnf_pid"]  # restarted
    assert now["ovs_pids"][0] == facts["ovs_pids"][0]  # lab.sh restarts ovs-vswitchd, not its database
    assert lab.vsctl("get", "Open_vSwitch", ".", "other_config") == other  # the node as before
    show = lab.ofctl("show", "br-int")  # the VNF's ports connected to the new vswitchd (OVSDB's link_state may lag)
    assert openflow_up(show, "vhu0") and openflow_up(show, "vhu1"), show
    print({t.event: (t.lost, round(t.outage_ms), t.where) for t in rec.trials})


def test_bond_event_without_a_bond_is_one_line_before_traffic(tmp_path, lab, sshd):
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    out = tmp_path / "e.json"
    r = subprocess.run([*ZL, "--lab", f, "--allow-dut-changes", "--event", "bond-down", "--rate", "10k",
                        "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "no OVS bond on the traffic's path" in r.stderr, r.stderr
    assert "nic0, nic1" in r.stderr
    rec = ev.read(json.loads(out.read_text()), out)
    assert rec.state == "failed" and not rec.trials and rec.rate_pps is None  # no trial, not even the rate's
