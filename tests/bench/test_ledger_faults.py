"""Frames lost on purpose at a known place of the bench (an MTU too small, a frozen VNF, an OpenFlow meter,
an overloaded RX queue): at least 99 % of them are attributed to that hop and reason, and the diagnosis
names the knob that fixes it (issue 5's acceptance cases, through `zeroloss check ledger`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from zeroloss.studies import ledgercheck

from .test_cli_bench import our_processes


@pytest.mark.parametrize("name", ["mtu", "vnf-stop", "overload"])
def test_injected_loss_is_attributed(name):
    (case,) = ledgercheck.run([name])
    assert case.lost > 0
    assert case.attributed_pct >= 99, (case.attributed_pct, case.detail["ledger"])
    assert case.knob_named, case.finding
    for led in case.detail["ledger"]:
        assert led["sent"] == led["received"] + led["counted"] + led["unexplained"]
    if name == "overload":
        assert any("% busy while zlgen sent" in e for e in case.finding["evidence"])
    if name == "vnf-stop":  # the VNF answered again after it was resumed
        assert "vnf0" in case.detail["counters"]["procs"]


def test_check_ledger_cli_meter_case(tmp_path):
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"))
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "check", "ledger", "--case", "meter", "--json"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    (case,) = json.loads(r.stdout)
    assert case["passed"] and case["attributed_pct"] >= 99 and case["expected_reason"] == "meter"
    assert case["diagnosis"][0]["remedies"][0].startswith("raise it: ovs-ofctl -O OpenFlow13 mod-meter br0 meter=1")
    assert our_processes(str(tmp_path)) == []  # zlgen, VNF and OVS are all stopped
    assert "ovs-vswitchd" not in subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout
