"""The linux-bridge kind (targets/kinds/linuxbridge.py): added as one module and this test, nothing else edited.

Unit tests read the kind through the registry and its readers on recorded counters; the bench test runs it: zlgen
on af_packet veths through a real Linux bridge in a network namespace of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from zeroloss.core import config
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss.ledger import ledger
from zeroloss.targets import registry
from zeroloss.targets.kinds import linuxbridge as lb

HOST = ("zb1a", "zb1b")


def cfg(**kw):
    return config.load(None, {"dut": "linux-bridge", **kw})


def test_the_registry_finds_it_and_dut_chooses_it():
    assert "linux-bridge" in registry.duts()
    assert registry.kind_of(cfg()).name == "linux-bridge"
    assert "linux-bridge (the kernel's bridge" in registry.dut_help()
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "run", "--help"], capture_output=True, text=True)
    assert "linux-bridge" in r.stdout


@pytest.mark.parametrize("kw, expect", [
    ({"ports": ["net_null0", "net_null1"]}, "ports are for dut external"),
    ({"dut_rxq": 2}, "one queue pair per port, not dut_rxq 2"),
    ({"link": "memif"}, "wire is a veth, not link memif"),
    ({"topology": "pvp"}, "dut linux-bridge takes topology p2p, not pvp"),
    ({"frame_sizes": [64, 9728]}, "carries frames up to 9000 B through af_packet, not 9728 B"),
])
def test_settings_it_cannot_run_are_one_line(kw, expect):
    with pytest.raises(ZeroLossError, match=expect):
        registry.kind_of(cfg(**kw))


def test_it_has_no_events_and_says_which_kinds_do():
    with pytest.raises(ZeroLossError, match="dut linux-bridge has none") as e:
        registry.as_events(registry.kind_of(cfg()))
    assert "ovs-p2p" in e.value.remedy


def counters(sent: int, *, tx_drop: int = 0, br_drop: int = 0, gone: int = 0, back: int = 0) -> dict:
    """One trial's counter deltas of A->B (sent frames of zlgen; tx_drop refused by the bridge port's backlog,
    br_drop refused at the bridge port, gone lost in the bridge uncounted) and `back` frames of B->A."""
    def dev(tx=0, rx=0, txd=0, rxd=0):
        return {"tx_packets": tx, "rx_packets": rx, "tx_dropped": txd, "rx_dropped": rxd, "tx_errors": 0,
                "rx_errors": 0}
    into = sent - tx_drop  # what bridge port a received
    out = into - br_drop - gone  # what bridge port b sent on
    return {"gen": {"dirs": {"0": {"offered": sent, "tx": sent, "refused": 0, "rx_unique": out, "late": 0,
                                   "duplicate": 0},
                             "1": {"offered": back, "tx": back, "refused": 0, "rx_unique": back, "late": 0,
                                   "duplicate": 0}},
                    "ports": []},
            "netdev": {"host": {HOST[0]: dev(tx=into, txd=tx_drop, rx=back), HOST[1]: dev(tx=back, rx=out)},
                       "ns": {"a": dev(rx=into, rxd=br_drop, tx=back), "b": dev(tx=out, rx=back),
                              "br0": dev()}}}


def test_every_frame_is_accounted_for_hop_by_hop():
    led = ledger(lb.bridge_paths(HOST), counters(1000, tx_drop=7, br_drop=5, gone=3, back=400))
    ab, ba = led
    assert (ab["sent"], ab["received"], ab["lost"], ab["counted"], ab["unexplained"]) == (1000, 985, 15, 12, 3)
    gen, veth_a, bridge, veth_b, _ = ab["hops"]
    assert veth_a["drops"] == [{"reason": "rx_dropped", "frames": 7,
                                "counter": "zb1a tx_dropped (the peer's backlog was full)"}]
    assert (bridge["in"], bridge["out"], bridge["unexplained"]) == (993, 985, 3)
    assert bridge["drops"][0]["counter"] == "bridge port a rx_dropped"
    assert (veth_b["in"], veth_b["out"], veth_b["unexplained"]) == (985, 985, 0)
    assert all(h["counters"] for h in ab["hops"])
    assert (ba["sent"], ba["lost"], ba["unexplained"]) == (400, 0, 0)
    for d in led:  # conservation, each hop: in = out + drops + unexplained
        for h in d["hops"][1:]:
            assert h["in"] == h["out"] + sum(x["frames"] for x in h["drops"]) + h["unexplained"]


def test_a_hop_without_counters_reads_as_unknown():
    c = counters(100)
    del c["netdev"]["ns"]["b"]
    ab = ledger(lb.bridge_paths(HOST), c)[0]
    bridge = next(h for h in ab["hops"] if h["kind"] == "bridge")
    assert bridge["counters"] is False and ab["unexplained"] == 0 and ab["received"] == 100


@pytest.mark.parametrize("frame", [64, 1518, 2048, 9000])
def test_af_packet_rings_hold_the_largest_frame(frame):
    framesz = lb.ring_frame(frame)
    assert framesz % 16 == 0 and framesz >= frame + 66 and framesz >= 2048
    block = lb.ring_block(framesz)
    assert block % os.sysconf("SC_PAGE_SIZE") == 0 and block % framesz == 0 and block <= 4 * framesz
    assert f"framesz={framesz},blocksz={block}" in lb.vdev(0, "x", framesz)


def _links() -> set[str]:
    return {ln["ifname"] for ln in json.loads(subprocess.run(["ip", "-j", "link", "show"], capture_output=True,
                                                             text=True, check=True).stdout)}


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


@pytest.mark.bench
def test_a_run_through_the_bridge_counts_every_hop_and_leaves_nothing(tmp_path):
    """64 B and 9000 B through a real bridge: an NDR each; every hop of a validation trial counted the frames zlgen
    sent (the kernel added none of its own and lost none uncounted); a namespace a killed run left is deleted; no
    namespace or veth of this run is left."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"zlbr-{dead.pid}-0"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    before = _links()
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "run", "--dut", "linux-bridge", "--frame-sizes",
                        "64,9000", "--max-rate", "20k", "--trial", "0.3", "--validation", "0.6", "--drain-ms", "100",
                        "--granularity", "5", "--flows", "64", "--warmup", "0", "--latency-loads", "none",
                        "--set", "core_probe=false", "-o", str(out), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 3), r.stdout[-2000:] + r.stderr
    doc = json.loads(out.read_text())
    assert stale not in _netns() and not {n for n in _netns() if n.startswith(f"zlbr-{os.getpid()}")}
    assert _links() <= before
    place = doc["placement"]["linux-bridge"]
    assert place["mtu"] == 8982 and place["af_packet_framesz"] == lb.ring_frame(9000)
    for s in doc["searches"]:
        assert s["link"] == "linux-bridge" and s["result"]["ndr"]["rate_pps"], s["result"]
        valid = [t for t in s["trials"] if t["kind"] == "validation" and t["verdict"] == "pass"]
        assert valid, s["trials"]
        for d in valid[-1]["ledger"]:
            kinds = [h["kind"] for h in d["hops"]]
            assert kinds == ["gen_tx", "veth", "bridge", "veth", "gen_rx"]
            assert all(h["counters"] for h in d["hops"]), d["hops"]
            assert all(h["in"] == d["sent"] and h["unexplained"] == 0 for h in d["hops"][1:]), d["hops"]
