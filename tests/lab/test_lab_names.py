"""Lab mode on a node whose OVS holds names with spaces: a bridge nobody's path uses must not block a run."""

from __future__ import annotations

import json

import pytest

from zeroloss.drivers.lab.labdut import LabDut
from zeroloss.drivers.lab.labfile import load

from .test_lab_run import lab_file, no_traceback, zl

pytestmark = pytest.mark.bench


def test_a_bridge_whose_name_holds_a_space_does_not_block_a_run(tmp_path, lab, sshd):
    """`ovs-vsctl list-br` prints one name a line; split on whitespace, 'br ops' was two bridges nobody has."""
    lab.vsctl("add-br", "br ops", "--", "set", "Bridge", "br ops", "datapath_type=netdev", "--",
              "add-port", "br ops", "tap one", "--", "set", "Interface", "tap one", "type=internal")
    try:
        f = lab_file(tmp_path / "lab.yaml", lab, sshd)
        with LabDut(load(f)) as dut:
            assert dut.bridge_of["br ops"] == "br ops" and dut.bridge_of["tap one"] == "br ops"
            assert dut.bridge_of["nic0"] != "br ops"
        r = zl("trial", "--lab", f, "--rate", "1000", "--duration", "1", "--interval", "0.5", "--json",
               "-o", str(tmp_path / "soak.json"))
        no_traceback(r)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert all(d["tx"] > 0 and d["lost"] == 0 for d in doc["result"]["directions"])
    finally:
        lab.vsctl("--if-exists", "del-br", "br ops")
