"""OVS 3.1 RX queue to PMD assignment: the worked example from OVS commit cd995c7 (quoted in Red Hat's go-live
slides), each algorithm's walk, pinning and isolation, NUMA fallback, auto load balance, and the inputs."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.ovsstate import parse_pmd_rxq_show
from zeroloss.host.rxq import Pmd, Rxq, alb_estimate, assign, from_assignment, parse_affinity, split_queues
from zeroloss.host.rxqinput import from_pmd_rxq_show, parse_loads, parse_pmds
from zeroloss.host.rxqorder import visit_order

from .conftest import FIXTURES

EXAMPLE = (FIXTURES / "rxq-redhat-example.yaml").read_text()


def cores_in_order(a, rxqs):
    where = a.core_of()
    return [where[(q.port, q.queue)] for q in rxqs]


def test_worked_example_cycles():
    pmds, rxqs, opts = parse_loads(EXAMPLE)
    a = assign(pmds, rxqs, opts["algorithm"])
    # "Core 3: Q1 (80%) | Core 7: Q4 (70%) | Q5 (10%) | Core 8: Q3 (60%) | Q0 (30%)"
    assert {p.core: [q.queue for q in p.queues] for p in a.pmds} == {3: [1], 7: [4, 5], 8: [3, 0]}
    assert [p.load for p in a.pmds] == [80, 80, 90] and a.variance(0) == 22


def test_worked_example_holds_in_any_visit_order():
    # one port on one node: neither the port order nor the hash build can move a queue
    pmds, rxqs, opts = parse_loads(EXAMPLE)
    for build in ("plain", "sse42"):
        order = visit_order(rxqs, pmds, {"dpdk0": 2, "br0": 1}, build)
        a = assign(pmds, rxqs, opts["algorithm"], order=order)
        assert {p.core: [q.queue for q in p.queues] for p in a.pmds} == {3: [1], 7: [4, 5], 8: [3, 0]}


def test_worked_example_roundrobin_and_group():
    pmds, rxqs, _ = parse_loads(EXAMPLE)
    rr = assign(pmds, rxqs, "roundrobin")
    assert {p.core: [q.queue for q in p.queues] for p in rr.pmds} == {3: [0, 4], 7: [1, 5], 8: [3]}
    assert [p.load for p in rr.pmds] == [100, 90, 60] and rr.variance(0) == 289
    group = assign(pmds, rxqs, "group")
    assert {p.core: [q.queue for q in p.queues] for p in group.pmds} == {3: [1], 7: [4, 5], 8: [3, 0]}


def queues(loads, numa=0, port="p"):
    return [Rxq(port, i, numa, load) for i, load in enumerate(loads)]


def test_cycles_walks_up_and_down_roundrobin_wraps():
    pmds = [Pmd(3, 0), Pmd(1, 0), Pmd(2, 0)]  # sorted by core inside the node
    rxqs = queues([70, 60, 50, 40, 30, 20, 10])
    assert cores_in_order(assign(pmds, rxqs, "cycles"), rxqs) == [1, 2, 3, 3, 2, 1, 1]
    assert cores_in_order(assign(pmds, rxqs, "roundrobin"), rxqs) == [1, 2, 3, 1, 2, 3, 1]
    # group without measured cycles picks the PMD with the fewest queues, first core on ties
    flat = queues([0] * 5)
    assert cores_in_order(assign(pmds, flat, "group"), flat) == [1, 2, 3, 1, 2]


def test_ties_break_on_port_then_queue_and_roundrobin_ignores_load():
    rxqs = [Rxq("b", 1, 0, 50, port_no=1), Rxq("b", 0, 0, 50, port_no=1), Rxq("a", 0, 0, 50, port_no=0),
            Rxq("a", 1, 0, 90, port_no=0)]
    a = assign([Pmd(1, 0), Pmd(2, 0), Pmd(3, 0), Pmd(4, 0)], rxqs, "cycles")
    assert [(q.port, q.queue) for p in a.pmds for q in p.queues] == [("a", 1), ("a", 0), ("b", 0), ("b", 1)]
    # roundrobin keeps the order OVS met the queues in: port by port (here the input's, b first: no datapath port
    # numbers), each port's queues by queue id whatever order the input lists them in
    rr = assign([Pmd(1, 0), Pmd(2, 0), Pmd(3, 0), Pmd(4, 0)], rxqs, "roundrobin")
    assert [(q.port, q.queue) for p in rr.pmds for q in p.queues] == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]


@pytest.mark.parametrize("build", ["plain", "sse42"])
def test_ovs_pmd_at_distribution_of_rx_queues(build):
    # OVS 3.1 tests/pmd.at "PMD - pmd-cpu-mask/distribution of rx queues": p0 with 8 queues (NOT AVAIL: no
    # cycles), PMDs on cores 0 and 1 of node 0. One port and one node: the hash build cannot change it.
    rxqs = [Rxq("p0", q, 0) for q in (7, 3, 0, 5, 1, 6, 2, 4)]  # any listing order: OVS goes by queue id
    order = visit_order(rxqs, [Pmd(0, 0), Pmd(1, 0)], {"p0": 1, "br0": 100}, build)
    assert order.notes == ()
    for algorithm, expected in (("roundrobin", [[0, 2, 4, 6], [1, 3, 5, 7]]), ("cycles", [[0, 3, 4, 7], [1, 2, 5, 6]]),
                                ("group", [[0, 2, 4, 6], [1, 3, 5, 7]])):
        a = assign([Pmd(0, 0), Pmd(1, 0)], rxqs, algorithm, order=order)
        assert sorted([q.queue for q in p.queues] for p in a.pmds) == expected, algorithm


def test_pinned_queue_isolates_its_pmd():
    rxqs = [Rxq("p", 0, 0, 10, pin=3), *queues([50, 40, 30], port="q")]
    a = assign([Pmd(3, 0), Pmd(7, 0), Pmd(8, 0)], rxqs, "cycles")
    by_core = {p.core: p for p in a.pmds}
    assert by_core[3].isolated and [q.label for q in by_core[3].queues] == ["p/0"]
    assert sorted(q.label for q in by_core[7].queues + by_core[8].queues) == ["q/0", "q/1", "q/2"]
    # group with pmd-rxq-isolate=false: the pinned PMD takes other queues too (q0 50 -> 7, q1 40 -> 3 at 10,
    # q2 30 -> 3 again: both at 50, the first core wins the tie)
    g = assign([Pmd(3, 0), Pmd(7, 0)], rxqs, "group", isolate=False)
    assert not g.pmds[0].isolated and [q.label for q in g.pmds[0].queues] == ["p/0", "q/1", "q/2"]
    # other algorithms force isolation, as OVS does (with a warning)
    c = assign([Pmd(3, 0), Pmd(7, 0)], rxqs, "cycles", isolate=False)
    assert c.pmds[0].isolated and "pmd-rxq-isolate can only be false" in c.log[0]


def test_pin_to_a_core_without_pmd_is_scheduled_normally():
    a = assign([Pmd(3, 0)], [Rxq("p", 0, 0, 10, pin=9)], "cycles")
    assert a.pmds[0].queues[0].label == "p/0" and not a.pmds[0].isolated
    assert "core 9 runs no PMD" in a.log[0]


def test_cross_numa_fallback_walks_the_nodes():
    rxqs = queues([40, 30, 20, 10], numa=2)
    a = assign([Pmd(1, 0), Pmd(5, 1)], rxqs, "cycles")
    assert cores_in_order(a, rxqs) == [1, 5, 1, 5]
    assert len(a.cross_numa()) == 4 and "cross-NUMA" in a.log[0]
    local = assign([Pmd(1, 0), Pmd(5, 1)], queues([40, 30], numa=1), "cycles")
    assert cores_in_order(local, queues([40, 30], numa=1)) == [5, 5] and local.cross_numa() == []


def test_node_whose_pmds_are_all_isolated_sends_queues_away_or_leaves_them_unpolled():
    rxqs = [Rxq("p", 0, 0, 10, pin=1), *queues([50], port="q")]
    a = assign([Pmd(1, 0), Pmd(5, 1)], rxqs, "cycles")
    assert a.core_of()[("q", 0)] == 5 and a.pmds[0].isolated
    alone = assign([Pmd(1, 0)], rxqs, "cycles")
    assert [q.label for q in alone.unpolled] == ["q/0"] and "will not be polled" in alone.log[-1]


def test_auto_load_balance_estimate():
    pmds, rxqs, _ = parse_loads(EXAMPLE)
    current = from_assignment(assign(pmds, rxqs, "roundrobin").pmds)
    (est,) = alb_estimate(current, assign(pmds, rxqs, "cycles"))
    assert (est["current_variance"], est["estimated_variance"], est["improvement_pct"]) == (289, 22, 92)
    assert est["busiest_pmd_pct"] == 100 and est["would_rebalance"]
    calm = [Rxq(q.port, q.queue, q.numa, q.load / 2) for q in rxqs]
    (quiet,) = alb_estimate(from_assignment(assign(pmds, calm, "roundrobin").pmds), assign(pmds, calm, "cycles"))
    assert quiet["improvement_pct"] >= 25 and not quiet["would_rebalance"]  # busiest PMD only 50 %


def test_split_queues_and_affinity():
    rxqs = [Rxq("p", 0, 0, 30, pin=3, port_no=4), Rxq("p", 1, 0, 80, port_no=4)]
    split = split_queues(rxqs, 4)
    assert [(q.queue, q.load, q.pin, q.port_no) for q in split] == [(0, 27.5, 3, 4), (1, 27.5, None, 4),
                                                                     (2, 27.5, None, 4), (3, 27.5, None, 4)]
    assert parse_affinity('"0:3,1:7"') == {0: 3, 1: 7} and parse_affinity("") == {}
    for bad in ("0-3", "a:1"):
        with pytest.raises(ValueError, match="is not QUEUE:CORE"):
            parse_affinity(bad)


@pytest.mark.parametrize("text, fault", [
    ("pmds: [1\nports: [", "is not YAML or JSON"),
    ("pmds: [1]", "has no 'ports' list"),
    ("pmds: 3\nports: [{name: a, loads: [1]}]", "'pmds' must be a list of cores or a map"),
    ("pmds: [1]\nports: [{name: a}]", "port #1 needs 'name' and 'loads'"),
    ("pmds: [1]\nports: [{name: a, loads: [x]}]", "port a:"),
    ("pmds: [1]\nports: [{name: a, loads: [-1]}]", "queue 0 has a negative load"),
    ("pmds: [1]\nports: [{name: a, loads: [1], affinity: '0-1'}]", "is not QUEUE:CORE"),
    ("pmds: [1]\nalgorithm: fast\nports: [{name: a, loads: [1]}]", "unknown algorithm 'fast'"),
    ("pmds: [1]\nports: [{name: a, loads: []}]", "lists no queues"),
])
def test_bad_loads_files_are_user_errors(text, fault):
    with pytest.raises(ZeroLossError, match=fault):
        parse_loads(text, "f.yaml")


def test_json_loads_and_list_of_pmds():
    pmds, rxqs, opts = parse_loads('{"pmds": [2, 4], "ports": [{"name": "x", "numa": -1, "loads": [5, 6]}]}')
    assert pmds == [Pmd(2, 0), Pmd(4, 0)] and [q.numa for q in rxqs] == [0, 0] and opts == {}


SHOW = """pmd thread numa_id 0 core_id 2:
  isolated : false
  port: dpdk0             queue-id:  0 (enabled)   pmd usage: 38 %
  port: vhu1              queue-id:  1 (disabled)  pmd usage: NOT AVAIL
  overhead:  2 %
pmd thread numa_id 1 core_id 3:
  isolated : true
  port: dpdk1             queue-id:  0 (enabled)   pmd usage: 12 %
  overhead:  0 %
"""


def test_parse_pmd_rxq_show():
    polls = parse_pmd_rxq_show(SHOW)
    assert [(p.core, p.numa, p.isolated) for p in polls] == [(2, 0, False), (3, 1, True)]
    assert [(q.port, q.queue, q.enabled, q.usage_pct) for q in polls[0].queues] == [("dpdk0", 0, True, 38),
                                                                                   ("vhu1", 1, False, None)]
    with pytest.raises(ZeroLossError, match="no 'pmd thread numa_id N core_id M:' lines"):
        parse_pmd_rxq_show("Error: no such command")


def test_from_pmd_rxq_show_infers_nodes_and_pins():
    pmds, rxqs, current, notes = from_pmd_rxq_show(parse_pmd_rxq_show(SHOW), {"vhu1": 1})
    assert pmds == [Pmd(2, 0), Pmd(3, 1)]
    assert [(q.label, q.numa, q.load, q.pin) for q in rxqs] == [("dpdk0/0", 0, 38.0, None), ("dpdk1/0", 1, 12.0, 3),
                                                                 ("vhu1/1", 1, 0.0, None)]
    assert [p.load for p in current] == [38.0, 12.0]
    assert "dpdk0=0, dpdk1=1" in notes[0] and "NOT AVAIL" in notes[1]


def test_r740xd_capture_round_trip():
    polls = parse_pmd_rxq_show((FIXTURES / "r740xd" / "ovs" / "pmd-rxq-show.txt").read_text())
    pmds, rxqs, current, _ = from_pmd_rxq_show(polls)
    assert len(pmds) == 10 and len(rxqs) == 6
    a = assign(pmds, rxqs, "cycles")
    # busiest first over the node 0 PMDs in core order: dpdk0 38 % -> 2, dpdk1 35 -> 12, vhu1 31 -> 22, vhu2 30 -> 32
    assert [a.core_of()[(p, 0)] for p in ("dpdk0", "dpdk1", "vhu1", "vhu2")] == [2, 12, 22, 32]
    assert {p.numa for p in a.pmds if p.queues} == {0}


def test_parse_pmds():
    assert parse_pmds("3,21", {21: 1}) == [Pmd(3, 0), Pmd(21, 1)]
    assert parse_pmds("3:1, 4:0", {}) == [Pmd(3, 1), Pmd(4, 0)]
    with pytest.raises(ZeroLossError, match="'x' in --pmds: core 'x' is not a whole number"):
        parse_pmds("x", {})


@given(st.lists(st.tuples(st.integers(0, 1), st.floats(0, 100), st.one_of(st.none(), st.integers(0, 7))),
                min_size=1, max_size=12),
       st.sets(st.integers(0, 7), min_size=1), st.sampled_from(["roundrobin", "cycles", "group"]))
def test_assignment_invariants(specs, cores, algorithm):
    pmds = [Pmd(c, c // 4) for c in cores]
    rxqs = [Rxq("p", i, numa, load, pin) for i, (numa, load, pin) in enumerate(specs)]
    a = assign(pmds, rxqs, algorithm)
    placed = [q for p in a.pmds for q in p.queues]
    assert sorted(q.queue for q in placed + a.unpolled) == list(range(len(rxqs)))  # each queue exactly once
    for p in a.pmds:
        for q in p.queues:
            if q.pin in cores:
                assert q.pin == p.core  # pins are honoured
            elif p.isolated:
                pytest.fail("an unpinned queue landed on an isolated PMD")
    for q, _pmd in a.cross_numa():  # cross-NUMA only when the port's node has no free PMD
        assert all(x.isolated for x in a.pmds if x.numa == q.numa)
