"""PVP through a private OVS-DPDK on the bench: the search runs, every frame is accounted for,
OVS state is kept per trial, and everything started is stopped."""

from __future__ import annotations

import json
import os

from .test_cli_bench import our_processes
from .test_run import FAST, run


def test_pvp_run_accounts_for_every_frame(tmp_path):
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"))
    out = tmp_path / "r.json"
    r = run("--topology", "pvp", "--frame-sizes", "64,9000", *FAST, "-o", str(out), "--json", env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["state"] == "complete"
    place = doc["placement"]["pvp"]
    assert place["ovs_mtu_request"] == 8982 and place["vnf_ring"] == 1024
    for s in doc["searches"]:
        assert s["link"] == "pvp" and s["result"]["ndr"]["rate_pps"]
        for t in s["trials"]:
            ports = t["dut_ports"]
            assert "ovs_v0_tx_packets" in ports[0] and "ovs_v1_rx_packets" in ports[0]
            assert "pmd thread" in t["dut_state"]["pmd_rxq_show"]
            for d in t["directions"]:
                led = d["ledger"]
                assert led["unexplained"] == 0
                assert led["tx"] == led["rx"] + led["wire_refused"] + led["dut_rx_missed"] + led["dut_dropped"]
    assert our_processes(str(tmp_path)) == []
    assert "ovs" not in os.popen(f"ps -eo args= | grep {tmp_path} | grep -v grep").read()
