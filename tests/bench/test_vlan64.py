"""64 B frames with an 802.1Q tag through the bench's OVS (issue 29 item 8): zlgen's frame version 2 carries its
signature in a tagged 64 B frame (version 1 needed 68 B and refused the run), and every frame is accounted for."""

from __future__ import annotations

from zeroloss.results.resultfile import read_doc

from .test_ovs import _conserved
from .test_run import FAST, run
from .verdicts import assert_ran


def test_ovs_p2p_vlan_at_64_bytes_counts_every_frame(tmp_path):
    """br-phy takes VLAN 100 from zlgen, translates it to 200 towards br-int and back: zlgen sends and receives
    tagged 64 B frames (60 B without the FCS), recognises every one as its own, and each trial's ledger balances.
    Also the suite's OVS P2P dual-bridge VLAN test: the NDR is found and OVS has no vhost (VNF) port."""
    out = tmp_path / "r.json"
    r = run("--topology", "ovs-p2p", "--set", "bridges=2", "--set", "vlan=100", "--frame-sizes", "64", *FAST,
            "-o", str(out))
    assert_ran(r)
    doc = read_doc(out)
    assert doc["state"] == "complete"
    (s,) = doc["searches"]
    assert s["frame"] == 64 and s["result"]["ndr"]["rate_pps"] > 0
    assert _conserved(doc)
    ports = s["trials"][-1]["counters"]["ovs"]["ports"]
    assert not any(k.startswith("v") for k in ports), sorted(ports)  # ovs-p2p: zlgen's ports only, no VNF
    trials = [t for t in s["trials"] if t.get("kept") != "summary"]  # a clean search trial keeps no counters
    assert trials
    for t in trials:
        gen = t["counters"]["gen"]
        for p in gen["ports"]:
            assert p["obytes"] == 60 * p["opackets"] and p["ibytes"] == 60 * p["ipackets"], p  # tagged 64 B
            assert p["rx_foreign"] == 0, p
        for d in gen["dirs"].values():
            assert d["late"] == 0 and d["duplicate"] == 0, d
    passed = [t for t in trials if t["loss_ratio"] == 0]
    assert passed, [t["loss_ratio"] for t in trials]
    for t in passed:  # a trial that lost nothing received every frame it sent as zlgen's own, tagged 64 B
        for d in t["counters"]["gen"]["dirs"].values():
            assert d["rx_unique"] == d["tx"] > 0, d
