"""A hop without counters in the ledger (OVS 3.1 reports none for a dpdkvhostuser server port): the frames zlgen
saw refused at that port's full ring are still put on it, and the ledger and its text say it had no counters."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from zeroloss.report.explain import analyse, direction_text

FIX = Path(__file__).parent / "fixtures" / "ledger"


def _ledger(doc: dict) -> dict:
    ctx = {**doc["context"], "frame": doc["frame"], "rate_pps": doc["rate_pps"]}
    leds, _ = analyse(doc["paths"], doc["counters"], doc["dut_state"], ctx, set(doc["sides"]))
    return leds[0]


def test_refusals_into_a_port_without_counters_are_its_rx_missed_not_unexplained():
    doc = json.loads((FIX / "overload.json").read_text())  # zlgen refused 678,963 frames into OVS's g0
    full = _ledger(doc)
    blind = copy.deepcopy(doc)
    del blind["counters"]["ovs"]["ports"]["g0"]  # g0 reports nothing, as a dpdkvhostuser server port on OVS 3.1
    led = _ledger(blind)
    rx = next(h for h in led["hops"] if h["kind"] == "ovs_rx")
    assert not rx["counters"]
    assert [(d["reason"], d["frames"]) for d in rx["drops"]] == [("rx_missed", 678_963)]
    assert "zlgen tx_refused into g0" in rx["drops"][0]["counter"]
    assert led["sent"] == full["sent"] and led["received"] == full["received"]
    assert led["sent"] == led["received"] + led["counted"] + led["unexplained"]
    assert led["counted"] >= 678_963 and led["unexplained"] <= full["unexplained"] + full["counted"] - 678_963
    text = "\n".join(direction_text({**led, "direction": "0->1"}))
    assert "OVS g0 rx (no counters)" in text
