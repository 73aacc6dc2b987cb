"""The datapath caches, the slow path and conntrack as OVS 3.1 prints them (captured on this bench: ovs-p2p, 100k
flows through ct(zone=1), 2026-11-26) parsed, and the diagnoses built on them (known answers)."""

from pathlib import Path

from zeroloss.core.ovsfacts import DatapathTuning, cache_stats, datapath_tuning
from zeroloss.drivers.dut.ovsstats import (
    datapath_state,
    parse_coverage_drops,
    parse_ct_limits,
    parse_ct_stats,
    parse_pmd_stats,
    parse_upcall_show,
)
from zeroloss.loss.diagnose import findings
from zeroloss.loss.ledger import counter_delta
from zeroloss.loss.records import Finding, Ledger

FIX = Path(__file__).parent / "fixtures" / "ovs" / "datapath"


def diagnose(leds: list, c: dict, state: dict | None, ctx: dict) -> list[Finding]:
    """The findings of a trial (loss/diagnose.py findings) over ledgers as the files hold them."""
    return findings([Ledger.of(led) for led in leds], c, state, ctx)


def text(name: str) -> str:
    return (FIX / name).read_text()


def test_pmd_stats_cache_counters():
    pmd = parse_pmd_stats(text("ct100k_pmd_stats_show.txt"))["0"]
    assert (pmd["packets_received"], pmd["recirculations"]) == (1058019, 1041635)
    assert (pmd["emc_hits"], pmd["smc_hits"], pmd["megaflow_hits"]) == (21809, 0, 2061428)
    assert (pmd["upcalls"], pmd["lost_upcalls"], pmd["simple_hits"]) == (4, 0, 16413)
    assert pmd["megaflow_lookups"] == round(1.50 * 2061428)
    plain = parse_pmd_stats(text("plain100k_pmd_stats_show.txt"))  # the main thread is left out
    assert list(plain) == ["0"] and plain["0"]["simple_hits"] == 1853481


def test_cache_stats_of_a_delta():
    """Shares are of lookups (received + recirculated); the subtable average comes back from the difference."""
    before = {"0": {"packets_received": 100, "recirculations": 100, "emc_hits": 10, "smc_hits": 0,
                    "megaflow_hits": 180, "megaflow_lookups": 270, "upcalls": 10, "lost_upcalls": 0}}
    after = {"0": {"packets_received": 1100, "recirculations": 1100, "emc_hits": 30, "smc_hits": 0,
                   "megaflow_hits": 2150, "megaflow_lookups": 4210, "upcalls": 30, "lost_upcalls": 0}}
    c = cache_stats(counter_delta(after, before))
    assert c["lookups"] == 2000 and c["emc_hits"] == 20 and c["megaflow_hits"] == 1970 and c["upcalls"] == 20
    assert (c["emc_pct"], c["megaflow_pct"], c["upcalls_pct"]) == (1.0, 98.5, 1.0)
    assert c["subtable_lookups_per_hit"] == 2.0
    assert cache_stats({"0": {"packets_received": 0, "emc_hits": 0, "megaflow_hits": 0}}) == {}
    assert cache_stats({"0": {"packets_received": 5, "idle_cycles": 1}}) == {}  # an OVS without cache counters


def test_datapath_state_from_captured_outputs():
    st = datapath_state({"dpctl_show": text("ct100k_dpctl_show.txt"), "upcall_show": text("ct100k_upcall_show.txt"),
                         "ct_nconns": text("ct100k_ct_nconns.txt"), "ct_maxconns": text("ct100k_ct_maxconns.txt"),
                         "ct_limits": text("ct100k_ct_limits.txt"), "ct_stats_show": text("ct100k_ct_stats_show.txt")})
    assert st["flows"] == 4 and st["flow_limit"] == 10000 and st["revalidators"] == 1
    assert st["lookups_hit"] == 2099650 and st["lookups_lost"] == 0 and st["dump_duration_ms"] == 1
    assert st["ct"] == {"nconns": 50000, "maxconns": 3000000, "default_limit": 50000, "zones": {}, "total": 50000,
                        "udp": 50000}
    assert datapath_state({"ct_nconns": "unavailable: no such command", "dpctl_show": ""}) == {}


def test_upcall_show_and_ct_limits():
    up = parse_upcall_show(text("ct100k_upcall_show.txt"))["netdev@ovs-netdev"]
    assert up["flows"] == 4 and up["flows_max"] == 4 and up["revalidator_keys"] == [4]
    assert parse_ct_limits(text("ctfull_ct_limits_zone1.txt")) == {
        "default_limit": 0, "zones": {"1": {"limit": 0, "count": 0}}}
    # OVS's ct_dpif_format_zone_limits with a zone at its limit
    assert parse_ct_limits("default limit=0\nzone=3,limit=1000,count=1000")["zones"]["3"] == {"limit": 1000,
                                                                                          "count": 1000}
    assert parse_ct_stats(text("plain_ct_stats_show.txt")) == {"total": 0}


def test_coverage_keeps_conntrack_and_reads_unlisted_counters_as_zero():
    cov = parse_coverage_drops(text("ctfull_coverage_show.txt"))
    assert cov["conntrack_full"] == 1762310
    assert cov["datapath_drop_tunnel_push_error"] == 0 and cov["upcall_flow_limit_hit"] == 0
    assert "netdev_sent" not in cov


def test_tuning_other_config_and_ct_commands():
    assert DatapathTuning().other_config() == {} and DatapathTuning().ct_commands() == []
    t = DatapathTuning(emc_insert_inv_prob=0, smc_enable=True, flow_limit=400000, revalidators=3, ct_maxconns=10,
                       ct_zone_limit=5)
    assert t.other_config() == {"emc-insert-inv-prob": "0", "smc-enable": "true", "flow-limit": "400000",
                                "n-revalidator-threads": "3"}
    assert t.ct_commands() == [("dpctl/ct-set-maxconns", "netdev@ovs-netdev", "10"),
                               ("dpctl/ct-set-limits", "netdev@ovs-netdev", "default=5")]
    from zeroloss.core.config import load

    cfg = load(None, {"ovs_smc_enable": True, "ovs_ct_maxconns": 7})
    assert datapath_tuning(cfg) == DatapathTuning(smc_enable=True, ct_maxconns=7)


# -- diagnoses: one OVS RX hop that lost frames, and the datapath's figures around it ----------------------------

def _trial(pmd: dict, dp: dict | None = None, coverage: dict | None = None, lost: int = 1000):
    hop = {"kind": "ovs_rx", "name": "OVS g0 rx", "where": "g0", "ports": ["g0"], "sender": {"gen": 0},
           "drops": [{"reason": "rx_missed", "frames": lost, "counter": "zlgen tx_refused into g0"}],
           "unexplained": 0, "counters": True}
    led = [{"lost": lost, "unexplained": 0, "hops": [hop]}]
    c = {"ovs": {"pmds": {"0": {"processing_cycles": 90, "idle_cycles": 10, **pmd}}, "coverage": coverage or {}}}
    return led, c, {"datapath": dp or {}}


CTX = {"frame": 64, "rate_pps": 1e6, "flows": 100000, "pmd_cpu_mask": "0x1"}
THRASH = {"packets_received": 100000, "recirculations": 100000, "emc_hits": 2000, "smc_hits": 0,
          "megaflow_hits": 198000, "megaflow_lookups": 297000, "upcalls": 0, "lost_upcalls": 0}


def test_emc_thrash_names_smc_and_emc_insertion():
    f = diagnose(*_trial(THRASH), CTX)[0]
    assert (f.hop, f.reason, f.frames) == ("OVS g0 rx", "emc_thrash", 1000)
    assert "EMC hits 1.0 %" in f.evidence[0] and "100,000 flows" in f.evidence[0]
    assert "smc-enable=true" in f.remedies[0] and "emc-insert-inv-prob=0" in f.remedies[1]
    # the SMC already on and hitting: the EMC insertion is what is left; few flows: no thrash
    smc = {**THRASH, "smc_hits": 20000, "megaflow_hits": 178000}
    assert "emc-insert-inv-prob=0" in diagnose(*_trial(smc), CTX)[0].remedies[0]
    assert diagnose(*_trial(THRASH), {**CTX, "flows": 1000})[0].reason == "rx_missed"
    hits = {**THRASH, "emc_hits": 150000, "megaflow_hits": 50000}
    assert diagnose(*_trial(hits), CTX)[0].reason == "rx_missed"


def test_upcall_storm_from_upcalls_or_the_flow_limit():
    storm = {**THRASH, "upcalls": 5000, "lost_upcalls": 7}
    f = diagnose(*_trial(storm, {"flows": 2000, "flow_limit": 200000, "revalidators": 1}), CTX)[0]
    assert f.reason == "upcall_storm" and "7 upcall(s) failed" in f.evidence[0]
    assert "other_config:flow-limit=400000" in f.remedies[0] and "n-revalidator-threads=3" in f.remedies[1]
    near = diagnose(*_trial({**THRASH, "emc_hits": 150000, "megaflow_hits": 50000},
                            {"flows": 9500, "flow_limit": 10000, "revalidators": 2}), CTX)[0]
    assert near.reason == "upcall_storm" and "flow limit 10000" in near.evidence[1]


def test_conntrack_full_from_coverage_maxconns_or_a_zone():
    ct = {"nconns": 20000, "maxconns": 20000, "zones": {}, "default_limit": 0}
    f = diagnose(*_trial(THRASH, {"ct": ct}, {"conntrack_full": 842913}), CTX)[0]
    assert f.reason == "conntrack_full" and "842,913" in f.evidence[0]
    assert f.remedies[0].startswith("ovs-appctl dpctl/ct-set-maxconns netdev@ovs-netdev 3000000")
    zone = {"nconns": 1000, "maxconns": 3000000, "default_limit": 0, "zones": {"3": {"limit": 1000, "count": 1000}}}
    f = diagnose(*_trial(THRASH, {"ct": zone}), CTX)[0]
    assert f.reason == "conntrack_full" and "zone 3: 1,000 connection(s) of its limit 1,000" in f.evidence
    assert "ct-set-limits netdev@ovs-netdev default=200000 zone=3,limit=200000" in f.remedies[0]
    room = {"nconns": 1000, "maxconns": 3000000, "default_limit": 0, "zones": {}}
    assert diagnose(*_trial(THRASH, {"ct": room}), CTX)[0].reason == "emc_thrash"


def test_tunnel_mtu_on_the_underlay():
    hop = {"kind": "ovs_tx", "name": "OVS p-tun tx", "where": "p-tun", "ports": ["p-tun"], "underlay": True,
           "drops": [{"reason": "tx_mtu", "frames": 50, "counter": "p-tun ovs_tx_mtu_exceeded_drops"}],
           "unexplained": 0, "counters": True}
    led = [{"lost": 50, "unexplained": 0, "hops": [hop]}]
    state = {"dpctl_show": "  port 4: p-tun (dpdkvhostuserclient: mtu=1500)\n"}
    f = diagnose(led, {"ovs": {}}, state, {**CTX, "frame": 1518})[0]
    assert f.reason == "tunnel_mtu" and "1500 B inner packet + 50 B" in f.cause
    assert f.remedies[0].startswith("ovs-vsctl set Interface p-tun mtu_request=1550")
    state = {"dpctl_show": "  port 4: p-tun (dpdkvhostuserclient: mtu=1600)\n"}  # room for it: another cause
    assert diagnose(led, {"ovs": {}}, state, {**CTX, "frame": 1518})[0].reason == "tx_mtu"
