"""The counter records (loss/counters.py): a trial's counters and paths read from every stored file write back the
same JSON, byte for byte (keys, order, nulls), and the readers see what the JSON holds."""

from __future__ import annotations

import gzip
import json
from pathlib import Path as FsPath

from zeroloss.loss.counters import Counters, NetdevStats, Path, PathHop, PortStats

FIX = FsPath(__file__).parent / "fixtures"


def stored() -> list[dict]:
    """Every search of the result fixtures and the recorded ledger fixtures: (paths, counters) pairs."""
    out = []
    for f in sorted([*FIX.glob("*.json.gz"), *FIX.glob("*.json")]):
        doc = json.loads(gzip.open(f).read() if f.suffix == ".gz" else f.read_text())
        for s in doc.get("searches") or []:
            out += [{"paths": s.get("paths") or [], "counters": t["counters"]} for t in s.get("trials") or []
                    if t.get("counters") is not None]
    out += [json.loads(f.read_text()) for f in sorted((FIX / "ledger").glob("*.json"))]
    return out


def test_stored_counters_and_paths_write_back_byte_for_byte():
    docs = stored()
    assert len(docs) > 100 and any("ovs" in d["counters"] for d in docs)
    for d in docs:
        c = d["counters"]
        assert json.dumps(Counters.from_json(c).to_json()) == json.dumps(c)
        for p in d["paths"]:
            assert json.dumps(Path.from_json(p).to_json()) == json.dumps(p)


def test_records_read_the_counters_and_keep_what_they_do_not_know():
    c = Counters.from_json({"procs": {"vnf0": [{}, {"ipackets": 5, "opackets": 4, "q_ipackets": [2, 3]}], "x": None},
                            "ovs": {"ports": {"g0": {"rx_packets": 9, "tx_q1_good_packets": 4,
                                                     "tx_q0_good_packets": 1}}},
                            "gen": {"dirs": {"1": {"offered": 10, "rx_unique": 8}}}, "netdev": {"host": {}}})
    assert c.proc_port("vnf0", 0) is None and c.proc_port("vnf0", 2) is None and c.proc_port("x", 0) is None
    assert c.proc_port("vnf0", 1) == PortStats(ipackets=5, opackets=4, q_ipackets=(2, 3))
    assert c.ovs_ports(("g0", "g1")) is None
    (g0,) = c.ovs_ports(("g0",)) or []
    assert g0.rx_packets == 9 and g0.tx_dropped == 0 and g0.queues("tx") == {1: 4, 0: 1} and g0.queues("rx") == {}
    assert c.gen_dir(1) is not None and c.gen_dir(1).late == 0 and c.gen_dir(0) is None
    assert c.extra == {"netdev": {"host": {}}}
    assert NetdevStats(rx_packets=1).to_json() == {k: 1 if k == "rx_packets" else 0 for k in NetdevStats().to_json()}
    hop = PathHop.from_json({"kind": "ovs_rx", "name": "n", "ports": ["a"], "sender": {"gen": 0}, "own": 1})
    assert hop.ports == ("a",) and hop.sender.gen == 0 and hop.sender.proc is None and hop.extra == {"own": 1}


def test_stored_dut_states_and_contexts_write_back_byte_for_byte():
    from zeroloss.loss.facts import DutState, RunContext

    seen = 0
    for f in sorted([*FIX.glob("*.json.gz"), *(FIX / "ledger").glob("*.json")]):
        doc = json.loads(gzip.open(f).read() if f.suffix == ".gz" else f.read_text())
        states = [doc.get("dut_state")] + [t.get("dut_state") for s in doc.get("searches") or []
                                           for t in s.get("trials") or []]
        contexts = [doc.get("context")] + [s.get("ledger_context") for s in doc.get("searches") or []]
        for st in filter(None, states):
            assert json.dumps(DutState.from_json(st).to_json()) == json.dumps(st)
            seen += 1
        for ctx in filter(None, contexts):
            assert json.dumps(RunContext.from_json(ctx).to_json()) == json.dumps(ctx)
    assert seen > 50
