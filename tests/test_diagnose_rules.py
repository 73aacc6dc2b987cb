"""The diagnosis's rule registry (loss/rulebase.py): the rules are tried in the order the old if-chain tried its
causes, a rule registered elsewhere is used without touching the engine, and each rule module explains a recorded
ledger (tests/fixtures/ledger, the result fixtures, the SR-IOV fixtures)."""

from __future__ import annotations

import copy
import gzip
import itertools
import json
from pathlib import Path

import pytest

from zeroloss.host.sriov import parse_ip_link, vf_counters
from zeroloss.loss import diagnose, rules_ovs, rules_pmd, rules_proc, rules_vf
from zeroloss.loss.diagnose import findings
from zeroloss.loss.ledger import REASONS, counter_delta, ledgers
from zeroloss.loss.records import Finding, Hop, Ledger
from zeroloss.loss.rulebase import RISKS, RULES, Ctx, Drop, Explanation, Rule, explain, risk, rule
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import records

FIX = Path(__file__).parent / "fixtures"
BUILT_IN = ("zeroloss.loss.",)  # the rules of the rule modules, not one a test registers

# loss/diagnose.py's `_finding` before the registry (e72640a), its causes in the order the if-chain tried them:
# (the rule that now holds it, the reasons, the hop kinds (none: any))
OLD_CHAIN = [
    ("vf_rx_dropped", ("vf_rx_dropped",), ()),
    ("vf_tx_dropped", ("vf_tx_dropped",), ()),
    ("rx_missed_ovs", ("rx_missed",), ("ovs_rx",)),
    ("tx_failure", ("tx_failure",), ()),
    ("tunnel_mtu", ("tx_mtu",), ()),
    ("tx_mtu", ("tx_mtu",), ()),
    ("tx_vring_down", ("tx_dropped",), ()),
    ("meter", ("meter",), ()),
    ("datapath", ("datapath",), ()),
    ("nombuf", ("rx_nombuf",), ()),
    ("generator_bound", ("rx_missed", "tx_refused"), ("gen_rx", "proc_tx")),
    ("rx_missed_proc", ("rx_missed",), ("proc_rx",)),
    ("qos", ("rx_qos", "tx_qos"), ()),
]
HOP_KINDS = ("gen_tx", "gen_rx", "proc_rx", "proc_tx", "ovs_rx", "ovs_tx", "ovs_switch", "vf_rx", "vf_tx", "dut")


def built_in() -> list[Rule]:
    return [r for r in RULES if r.explain.__module__.startswith(BUILT_IN)]


def ledger_fixture(name: str) -> dict:
    return json.loads((FIX / "ledger" / f"{name}.json").read_text())


def recorded(doc: dict) -> tuple[list[Ledger], dict, dict, dict]:
    """A recorded ledger fixture's ledger, counters, DUT state and context, as `zeroloss run` diagnoses them."""
    ctx = {**doc["context"], "frame": doc["frame"], "rate_pps": doc["rate_pps"]}
    leds = ledgers([p for p in doc["paths"] if p["tx_side"] in doc["sides"]], doc["counters"])
    return leds, doc["counters"], doc["dut_state"], ctx


def ledgers_in(doc: object) -> list[dict]:
    """Every stored ledger direction in a document: objects with hops that have drops."""
    if isinstance(doc, dict):
        if isinstance(doc.get("hops"), list) and all(isinstance(h, dict) and "drops" in h for h in doc["hops"]):
            return [doc]
        return [led for v in doc.values() for led in ledgers_in(v)]
    if isinstance(doc, list):
        return [led for v in doc for led in ledgers_in(v)]
    return []


def seen_pairs() -> set[tuple[str, str]]:
    """(reason, hop kind) of every drop in the fixtures' ledgers: recorded ledger fixtures and stored files."""
    leds = [led for f in sorted((FIX / "ledger").glob("*.json")) for led in recorded(json.loads(f.read_text()))[0]]
    for f in sorted([*FIX.glob("*.json"), *FIX.glob("*.json.gz"), *FIX.glob("events/*.json")]):
        leds += ledgers_in(json.loads(gzip.open(f).read() if f.suffix == ".gz" else f.read_text()))
    return {(d.reason, h.kind) for led in map(Ledger.of, leds) for h in led.hops for d in h.drops}


def chain_order(rules: list[tuple[str, tuple[str, ...], tuple[str, ...]]], reason: str, kind: str) -> list[str]:
    return [n for n, reasons, kinds in rules if reason in reasons and (not kinds or kind in kinds)]


def first_rule(hop: Hop, drop: Drop, x: Ctx) -> Rule | None:
    """The rule that explains a drop (None: the generic line)."""
    return next((r for r in RULES if r.matches(hop, drop) and r.explain(hop, drop, x) is not None), None)


def test_the_registry_holds_the_old_chain_in_its_order_for_every_reason_seen():
    pairs = seen_pairs()
    assert {("rx_missed", "ovs_rx"), ("rx_missed", "proc_rx"), ("tx_refused", "proc_tx"), ("meter", "ovs_switch"),
            ("tx_mtu", "ovs_tx"), ("tx_failure", "ovs_tx")} <= pairs, pairs
    ours = [(r.name, r.reasons, r.kinds) for r in built_in()]
    assert sorted(n for n, _, _ in ours) == sorted(n for n, _, _ in OLD_CHAIN)
    for reason, kind in pairs | set(itertools.product([*REASONS, "made_up"], HOP_KINDS)):
        assert chain_order(ours, reason, kind) == chain_order(OLD_CHAIN, reason, kind), (reason, kind)


def test_rules_of_two_modules_never_explain_the_same_drop():
    """So the order the engine imports the rule modules in changes no finding."""
    def drops(r: Rule) -> set[tuple[str, str]]:
        return set(itertools.product(r.reasons, r.kinds or HOP_KINDS))

    for a, b in itertools.combinations(built_in(), 2):
        if a.explain.__module__ != b.explain.__module__:
            assert not drops(a) & drops(b), (a.name, b.name)


@pytest.fixture
def registry():
    """The registries as they are; restored after the test."""
    rules, risks = RULES[:], RISKS[:]
    yield
    RULES[:], RISKS[:] = rules, risks


def test_a_rule_registered_here_is_used_without_editing_the_engine(registry):
    hop = {"name": "DUT rx port 0", "where": "port 0", "kind": "proc_rx", "counters": True, "unexplained": 0,
           "drops": [{"reason": "rx_errors", "frames": 7, "counter": "ierrors"}]}
    led = {"direction": "0->1", "tx_side": 0, "lost": 7, "hops": [hop]}
    (before,) = findings([Ledger.from_json(led)], {}, {}, {})
    assert before.cause == "DUT rx port 0: ierrors" and before.reason == "rx_errors"  # the generic line

    @rule(reasons=("rx_errors",), kinds=("proc_rx",))
    def bad_frames(hop, drop, x):
        return Explanation("the NIC saw bad frames", [f"{drop.counter}: {drop.frames}"], ["check the cable"],
                           reason="rx_bad_frames")

    @rule(reasons=("rx_missed",), kinds=("proc_rx",))
    def late_for_rx_missed(hop, drop, x):  # after rules_proc's: never asked
        raise AssertionError("a later rule for an explained drop is not asked")

    (after,) = findings([Ledger.from_json(led)], {}, {}, {})
    assert (after.reason, after.cause, after.evidence, after.remedies, after.share_pct) == \
        ("rx_bad_frames", "the NIC saw bad frames", ("ierrors: 7",), ("check the cable",), 100.0)
    hop["drops"] = [{"reason": "rx_missed", "frames": 7, "counter": "imissed"}]
    assert findings([Ledger.from_json(led)], {}, {}, {})[0].cause.endswith("the DUT's forwarding core did not keep up")


def test_a_rule_that_returns_none_passes_the_drop_on(registry):
    @rule(reasons=("made_up",))
    def never(hop, drop, x):
        return None

    hop = Hop.from_json({"name": "h", "where": "w", "kind": "dut", "counters": True, "unexplained": 0,
                         "drops": [{"reason": "made_up", "frames": 1, "counter": "c"}]})
    assert explain(hop, hop.drops[0], Ctx({}, None, {})) == Explanation("h: c")


def test_a_trial_wide_risk_registered_here_follows_the_drops(registry):
    @risk()
    def always(x):
        return [Finding(hop="test", where="here", reason="test_risk", frames=0, cause="a risk")]

    hop = {"name": "h", "where": "w", "kind": "dut", "counters": True, "unexplained": 0,
           "drops": [{"reason": "rx_errors", "frames": 3, "counter": "c"}]}
    out = diagnose.diagnose([{"tx_side": 0, "lost": 3, "hops": [hop]}], {}, {}, {})
    assert [f["reason"] for f in out] == ["rx_errors", "test_risk"]
    assert list(out[1]) == ["hop", "where", "reason", "frames", "share_pct", "cause", "evidence", "remedies"]


# -- each rule module on a recorded ledger -------------------------------------------------------------------------

def test_rules_ovs_on_the_recorded_meter_mtu_and_vnf_stop_trials():
    want = {"meter": rules_ovs.meter, "mtu": rules_ovs.tx_mtu, "vnf-stop": rules_ovs.tx_failure,
            "overload": rules_ovs.rx_missed_ovs}
    for name, fn in want.items():
        doc = ledger_fixture(name)
        leds, c, state, ctx = recorded(doc)
        x = Ctx(c, state, ctx)
        (hop,) = [h for led in leds for h in led.hops if h.name == doc["hop"]]
        drop = next(d for d in hop.drops if d.reason == doc["reason"])
        assert first_rule(hop, drop, x).explain is fn, name
        top = findings(leds, c, state, ctx)[0]
        assert (top.hop, top.reason) == (doc["hop"], doc["reason"]) and top.cause == fn(hop, drop, x).cause
        assert any(doc["knob"] in r for r in top.remedies), (name, top.remedies)


def test_rules_pmd_on_the_recorded_overload_and_mtu_trials():
    """overload: a PMD lost frames with no datapath cause; the same trial with conntrack refusing connections is
    conntrack's. mtu: OVS made the port's mempool smaller than asked, a trial-wide risk after the drops."""
    leds, c, state, ctx = recorded(ledger_fixture("overload"))
    x = Ctx(c, state, ctx)
    assert rules_pmd.pmd_cause(x) is None and max(x.load.values()) >= rules_pmd.BUSY_PCT
    assert findings(leds, c, state, ctx)[0].reason == "rx_missed"
    full = copy.deepcopy(c)
    full["ovs"].setdefault("coverage", {})["conntrack_full"] = 5000
    x = Ctx(full, state, ctx)
    why = rules_pmd.pmd_cause(x)
    assert why.reason == "conntrack_full" and rules_pmd.pmd_cause(x) is why  # worked out once per trial
    top = findings(leds, full, state, ctx)[0]
    assert top.reason == "conntrack_full" and top.cause.startswith("conntrack was full") and top.hop == "OVS g0 rx"
    assert top.evidence[0] == "coverage conntrack_full: 5,000 new connection(s) refused in the trial"
    leds, c, state, ctx = recorded(ledger_fixture("mtu"))
    risks = rules_pmd.mempool_small(Ctx(c, state, ctx))
    assert [f.reason for f in risks] == ["mempool_small"] and risks[0].counter is None
    assert findings(leds, c, state, ctx)[-1] == risks[0]


def test_rules_proc_on_a_recorded_testpmd_trial():
    """result_v3's first 64 B trial: testpmd's RX rings overflowed and its TX into zlgen was refused."""
    doc = json.loads(gzip.open(FIX / "result_v3.json.gz").read())
    s = next(s for s in records(RunRecord, doc, "result_v3").searches if s.frame == 64)
    t = s.trials[0]
    ctx = {**(s.ledger_context or {}), "frame": s.frame, "rate_pps": t.rate_pps}
    x = Ctx(t.counters, t.dut_state, ctx)
    leds = [Ledger.of(led) for led in t.ledger]
    used = {(d.reason, h.kind): first_rule(h, d, x).explain for led in leds for h in led.hops for d in h.drops}
    assert used == {("rx_missed", "proc_rx"): rules_proc.rx_missed_proc,
                    ("tx_refused", "proc_tx"): rules_proc.generator_bound}
    found = {(f.hop, f.reason): f for f in findings(leds, t.counters, t.dut_state, ctx)}
    rx = found[("DUT (testpmd) rx port 0", "rx_missed")]
    assert rx.cause.endswith("found its RX ring full: the DUT's forwarding core did not keep up")
    assert "generator-bound" in found[("DUT (testpmd) tx port 0", "tx_refused")].cause


def test_rules_vf_on_the_recorded_i40e_tx_dropped_reading():
    """The i40e patch's two bad frames (fixtures/sriov): VF 0's TX dropped both; the VNF forwarded them."""
    text = (FIX / "sriov" / "ip_link_i40e_before.txt").read_text(), \
        (FIX / "sriov" / "ip_link_i40e_tx_dropped.txt").read_text()
    before, after = (parse_ip_link(t).vfs[0] for t in text)
    vf_tx = counter_delta(vf_counters(after.stats, None, "i40e"), vf_counters(before.stats, None, "i40e"))
    assert vf_tx["tx_dropped"] == 2
    hops = [{"name": "VF 0 tx", "where": "0000:02:02.0", "kind": "vf_tx", "counters": True, "unexplained": 0,
             "drops": [{"reason": "vf_tx_dropped", "frames": vf_tx["tx_dropped"], "counter": "vf tx_dropped"}]}]
    led = Ledger.from_json({"direction": "0->1", "tx_side": 0, "lost": 2, "hops": hops})
    x = Ctx({}, {}, {"vnfs": ["cnf1"]})
    assert first_rule(led.hops[0], led.hops[0].drops[0], x).explain is rules_vf.vf_tx_dropped
    (f,) = findings([led], {}, {}, {"vnfs": ["cnf1"]})
    assert (f.reason, f.frames, f.share_pct) == ("vf_tx_dropped", 2, 100.0)
    assert f.cause.startswith("the NIC dropped frames cnf1 sent by VF 0000:02:02.0: MAC anti-spoofing")


def test_findings_write_the_keys_the_result_files_have():
    """to_json keeps each kind of finding's key order (result files are compared byte for byte)."""
    leds, c, state, ctx = recorded(ledger_fixture("mtu"))
    drop_f, risk_f = (f.to_json() for f in findings(leds, c, state, ctx))
    assert list(drop_f) == ["hop", "where", "reason", "frames", "counter", "cause", "evidence", "remedies",
                            "share_pct"]
    assert list(risk_f) == ["hop", "where", "reason", "frames", "share_pct", "cause", "evidence", "remedies"]
    down = {"side": 0, "port": 0, "member": None, "event": "link-down", "refused": 5}
    hop = {"name": "zlgen tx 0", "where": "port 0", "kind": "gen_tx", "counters": True, "unexplained": 0,
           "drops": [{"reason": "tx_refused", "frames": 5, "counter": "zlgen tx_refused 0"}]}
    (f,) = findings([Ledger.from_json({"tx_side": 0, "lost": 5, "hops": [hop]})], {}, {}, {"link_down": down})
    assert list(f.to_json()) == ["hop", "where", "reason", "frames", "counter", "remedies", "cause", "evidence",
                                 "share_pct"]
    assert Finding.from_json(drop_f).to_json() == drop_f
