"""zeroloss events on tests/lab's node (a real OVS-DPDK reached over sshd): the mtu event is made through the node's
own commands only with --allow-dut-changes, and the node's mtu_request is as it was afterwards; without the flag
it is refused in one line before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zeroloss.results import events as ev

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
