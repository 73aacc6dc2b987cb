"""A bond event's downed link (results.events.EventDirection.link_down): the frames zlgen offered into the member whose
link the event took down are the generator's (a peer does not send into a link that is down), not the DUT's loss,
and out of its outages; known answers on recorded-shape counters, no processes."""

from types import SimpleNamespace

from zeroloss.core.model import Intervals, StreamResult, TrialResult
from zeroloss.core.outage import down_link
from zeroloss.loss.diagnose import findings
from zeroloss.loss.records import Ledger
from zeroloss.results.events import EventDirection, EventTrial
from zeroloss.runs.eventtrial import direction_intervals, down_window, find_outages, into_down_link

BASE = {"queue": 0, "flows": 1, "requested_pps": 1000, "achieved_pps": 1000.0, "tx_bytes": 0, "tx_nombuf": 0,
        "pace_restarts": 0, "pace_skipped": 0, "rx_bytes": 0, "lost": 0, "seq_gaps": 0, "reordered": 0,
        "duplicate": 0, "late": 0, "latency_ns": {"count": 0}}


def stream(i: int, port: int, tx: list[int], rx: list[int], refused: int = 0, unplaced: int = 0) -> StreamResult:
    s = StreamResult.from_dict({**BASE, "id": i, "port": port, "rx_port": (port + 1) % 2, "tx_pkts": sum(tx),
                                "rx_pkts": sum(rx) + unplaced, "rx_unique": sum(rx) + unplaced, "tx_refused": refused,
                                "intervals": {"ms": 10, "tx": tx, "rx": rx, "rx_unplaced": unplaced}})
    assert s.intervals == Intervals(ms=10, tx=tuple(tx), rx=tuple(rx), rx_unplaced=unplaced)
    return s


def trial(*streams: StreamResult) -> TrialResult:
    return TrialResult(trial=1, tx_window_s=0.1, tx_elapsed_s=0.1, drain_ms=100, stopped=False, streams=streams,
                       ports=())


def test_down_link_counts_only_the_window_and_an_interval_of_slack():
    tx, rx = [10] * 10, [10, 10, 10, 0, 0, 0, 4, 10, 10, 3]  # 3..6 the link down; 9: the DUT lost 7
    assert down_link(tx, rx, 10, 35, 62) == [0, 0, 0, 10, 10, 10, 6, 0, 0, 0]  # intervals 2..7
    assert down_link(tx, rx, 10, 0, 12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]  # nothing lost in 0..2
    assert down_link(tx, rx, 10, 80, None) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 7]  # down to the end


def test_frames_into_the_downed_member_are_not_lost_nor_an_outage():
    """B->A: g1 (port 1) downed from 30 to 62 ms, g3 (port 3) carries on; A->B (the bond's egress) loses 5 frames
    at the failover. The DUT's outage is A->B's, B->A lost nothing of its own."""
    a_to_b = stream(0, 0, [10] * 10, [10, 10, 10, 5, 10, 10, 10, 10, 10, 10])
    g1 = stream(1, 1, [10] * 10, [10, 10, 10, 0, 0, 0, 4, 10, 10, 10], refused=40)
    g3 = stream(2, 3, [10] * 10, [10] * 10)
    r = trial(a_to_b, g1, g3)
    down = (1, 30.0, 62.0)
    iv = direction_intervals(r, down)
    assert iv is not None
    assert iv.directions["B->A"].link_down == (0, 0, 0, 10, 10, 10, 6, 0, 0, 0)
    assert iv.directions["A->B"].link_down is None
    assert iv.to_json() == {"ms": 10, "directions": {  # the events file's intervals: link_down only where sent
        "A->B": {"tx": [10] * 10, "rx": [10, 10, 10, 5, 10, 10, 10, 10, 10, 10]},
        "B->A": {"tx": [20] * 10, "rx": [20, 20, 20, 10, 10, 10, 14, 20, 20, 20],
                 "link_down": [0, 0, 0, 10, 10, 10, 6, 0, 0, 0]}}}
    assert into_down_link([g1, g3], down, iv, "B->A", True) == 36 + 40  # sent while down + refused
    assert into_down_link([g1, g3], down, iv, "B->A", False) == 36       # refusals not loss (external mode)
    assert into_down_link([a_to_b], down, iv, "A->B", True) == 0
    (o,) = find_outages(iv, 2000)
    assert (o.direction, o.lost) == ("A->B", 5)
    without = find_outages(direction_intervals(r), 2000)  # the ingress outage, had the link-down not been known
    assert {x.direction for x in without} == {"A->B", "B->A"}


def test_link_down_never_exceeds_what_the_ports_streams_lost():
    # interval 2 lost 10 by TX time, but 5 of them arrived unplaced (zlgen could not place them): the stream lost
    # 5 sent frames and 40 refused, so at most 45 were offered into the downed link and lost
    g1 = stream(1, 1, [10] * 4, [10, 10, 0, 10], refused=40, unplaced=5)
    r = trial(g1)
    assert into_down_link([g1], (1, 0.0, None), direction_intervals(r, (1, 0.0, None)), "B->A", True) == 45
    assert into_down_link([g1], (1, 0.0, None), None, "B->A", True) == 45  # no intervals: the port's lost frames


def test_the_window_is_from_the_actions():
    ev = SimpleNamespace(link_down_port=3, starts_down=False)
    assert down_window(ev, [3.0, 3.1, 6.0, 6.2]) == (3, 3000.0, 6200.0)  # bond-down: apply start .. undo end
    assert down_window(ev, [3.0, 3.1]) == (3, 3000.0, None)               # no undo: down to the end
    up = SimpleNamespace(link_down_port=1, starts_down=True)
    assert down_window(up, [3.0, 3.1]) == (1, 0.0, 3100.0)                # bond-up: from the start to the apply
    assert down_window(SimpleNamespace(link_down_port=None, starts_down=False), [3.0, 3.1]) is None
    assert down_window(None, []) is None


def test_the_trial_counts_the_dut_and_names_the_lossy_directions_hop():
    dirs = (EventDirection(direction="A->B", tx=100, rx=95, lost=5),
            EventDirection(direction="B->A", tx=100, rx=24, lost=0, refused=40, link_down=116))
    ledger = [{"direction": "A->B", "hops": [{"name": "OVS bond-b tx", "where": "ovs", "drops": [
                  {"reason": "tx_dropped", "frames": 5, "counter": "tx_dropped"}], "unexplained": 0}]},
              {"direction": "B->A", "hops": [{"name": "OVS bond-b rx", "where": "ovs", "drops": [
                  {"reason": "rx_missed", "frames": 116, "counter": "zlgen tx_refused into g1"}], "unexplained": 0}]}]
    t = EventTrial(event="bond-down", repeat=1, rate_pps=1000, duration_s=1, directions=dirs, ledger=ledger)
    assert t.lost == 5 and t.outage_ms == 5.0  # the bond's egress, not the 116 offered into the downed member
    assert t.where.startswith("OVS bond-b tx"), t.where
    assert dirs[1].text() == "B->A 0 (40 refused) (+116 into the downed link, not lost)"
    assert EventDirection.from_json(dirs[1].to_json()) == dirs[1]
    assert EventDirection.from_json({"direction": "A->B", "tx": 1, "rx": 1, "lost": 0}).link_down == 0  # older files


def _hop(name: str, kind: str, reason: str, frames: int, counter: str) -> dict:
    return {"name": name, "where": name.split(" ")[0], "kind": kind, "ports": [], "counters": True, "unexplained": 0,
            "drops": [{"reason": reason, "frames": frames, "counter": counter}]}


def test_the_diagnosis_names_refusals_into_the_downed_link_as_the_generators_and_puts_the_dut_first():
    ledgers = [{"direction": "A->B", "tx_side": 0, "lost": 5, "unexplained": 0,
                "hops": [_hop("OVS bond-b tx", "other", "tx_dropped", 5, "g1+g3 tx_dropped")]},
               {"direction": "B->A", "tx_side": 1, "lost": 116, "unexplained": 0,
                "hops": [_hop("OVS bond-b rx", "other", "rx_missed", 116, "zlgen tx_refused into g1+g3")]}]
    down = {"side": 1, "port": 1, "member": "g1", "event": "bond-down", "refused": 100}
    leds = [Ledger.from_json(led) for led in ledgers]
    found = findings(leds, {}, {}, {"link_down": down})
    assert [(f.hop, f.reason, f.frames) for f in found] == [
        ("OVS bond-b rx", "rx_missed", 16),    # refused beyond the downed port's: the DUT's, as before
        ("OVS bond-b tx", "tx_dropped", 5),
        ("OVS bond-b rx", "link_down", 100)]   # the generator's, last
    assert "bond-down took the link of g1 down" in found[2].cause and not found[2].remedies
    plain = findings(leds, {}, {}, {})  # without the event's link: every refusal is the DUT's, as before
    assert [(f.reason, f.frames) for f in plain] == [("rx_missed", 116), ("tx_dropped", 5)]
    other_side = findings(leds, {}, {}, {"link_down": {**down, "side": 0}})
    assert [f.reason for f in other_side] == ["rx_missed", "tx_dropped"]


def test_where_is_the_duts_top_hop_not_the_refusals_into_the_downed_link():
    """B->A lost 6 frames of its own (OVS v1 tx) beside the 116 zlgen's wire refused into the downed member: the
    table's 'where' names the DUT's hop."""
    dirs = (EventDirection(direction="A->B", tx=100, rx=95, lost=5),
            EventDirection(direction="B->A", tx=100, rx=18, lost=6, refused=116, link_down=116))
    ledger = [{"direction": "A->B", "hops": [_hop("OVS bond-b tx", "other", "tx_dropped", 5, "g1+g3 tx_dropped")]},
              {"direction": "B->A", "hops": [
                  _hop("OVS bond-b rx", "other", "rx_missed", 116, "zlgen tx_refused into g1+g3"),
                  _hop("OVS v1 tx", "other", "tx_failure", 6, "v1 ovs_tx_failure_drops")]}]
    t = EventTrial(event="bond-down", repeat=1, rate_pps=1000, duration_s=1, directions=dirs, ledger=ledger)
    assert t.where == "OVS v1 tx: tx_failure"
    assert ledger[1]["hops"][0]["drops"][0]["frames"] == 116  # the stored ledger is left as it is
    plain = EventTrial(event="mtu", repeat=1, rate_pps=1000, duration_s=1, ledger=ledger)  # no directions: all
    assert plain.where == "OVS bond-b rx: rx_missed"
