"""zeroloss tune on a lab node, pure: which OVSDB setting answers which finding there, from the node's own values,
as dut_set entries; what stays advice; the loop over a fake node keeps what helps and renders ovs-vsctl lines."""

from __future__ import annotations

import pytest

from zeroloss.core.config import RunConfig, load
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss.records import Finding
from zeroloss.results.records import SearchOutcome, TrialEntry
from zeroloss.results.resultfile import ResultFile
from zeroloss.runs.tune import advice, loop
from zeroloss.runs.tune.labknobs import Node, Port, candidates, sets_of, skipped, with_sets
from zeroloss.runs.tune.render import render

VHOST = "dpdkvhostuserclient"


def node(gen_type="dpdk", spare=(6, 7), mtu=1500, **ports) -> Node:
    p = {"dpdk0": Port("dpdk0", gen_type, mtu), "dpdk1": Port("dpdk1", gen_type, mtu),
         "vhu0": Port("vhu0", VHOST, mtu), "vhu1": Port("vhu1", VHOST, mtu)}
    p.update(ports)
    return Node({"pmd-cpu-mask": "0x4"}, p, ("dpdk0", "dpdk1"), ("vhu0", "vhu1"), tuple(spare))


def finding(hop: str, reason: str, frames: int = 100) -> Finding:
    return Finding.from_json({"hop": hop, "where": hop.split()[1], "reason": reason, "frames": frames, "cause": "",
                              "evidence": [], "remedies": []})


CFG = RunConfig(lab="lab.yaml", allow_dut_changes=True, frame_sizes=[64])
NIC_RX = finding("OVS dpdk0 rx", "rx_missed", 400)
VNF_TX = finding("OVS vhu0 tx", "tx_failure", 500)


def changes(findings, cfg=CFG, n=None, tried=frozenset()):
    return [(c.key, c.sets) for c in candidates(findings, cfg, n or node(), set(tried))]


def test_nic_rx_missed_adds_a_spare_pmd_then_queues_then_descriptors_on_that_port():
    assert changes([NIC_RX]) == [
        ("pmd-cpu-mask", {"Open_vSwitch:.:other_config:pmd-cpu-mask": "0x44"}),  # CPU 6: the first spare one
        ("n_rxq", {"Interface:dpdk0:options:n_rxq": "2"}),
        ("n_rxq_desc", {"Interface:dpdk0:options:n_rxq_desc": "4096"})]  # OVS's default is 2048
    # no spare CPU named: the PMD knob is not tried, and the tune says why
    assert changes([NIC_RX], n=node(spare=()))[0][0] == "n_rxq"
    assert "dut.ovs.spare_cpus" in skipped([NIC_RX], node(spare=()))[0]["why"]
    # vhost-user stand-ins for NICs (the test lab): OVS reads neither n_rxq nor descriptors there
    assert [k for k, _ in changes([NIC_RX], n=node(gen_type=VHOST))] == ["pmd-cpu-mask"]


def test_two_pmds_open_the_placement_knob():
    cfg = RunConfig(lab="lab.yaml", allow_dut_changes=True, frame_sizes=[64],
                    dut_set=["Open_vSwitch:.:other_config:pmd-cpu-mask=0x44"])
    out = changes([NIC_RX], cfg=cfg)
    assert out[0] == ("pmd-cpu-mask", {"Open_vSwitch:.:other_config:pmd-cpu-mask": "0xc4"})
    assert ("pmd-rxq-assign", {"Open_vSwitch:.:other_config:pmd-rxq-assign": "group"}) in out


def test_vnf_tx_failure_raises_tx_retries_from_the_nodes_value_on_that_port():
    assert changes([VNF_TX]) == [("tx-retries-max", {"Interface:vhu0:options:tx-retries-max": "32"})]
    zero = node(vhu0=Port("vhu0", VHOST, 1500, options={"tx-retries-max": "0"}))
    c = candidates([VNF_TX], CFG, zero, set())[0]
    assert (c.old, c.new, c.sets) == ("0 (vhu0)", "8", {"Interface:vhu0:options:tx-retries-max": "8"})
    assert changes([VNF_TX], n=zero, tried={("tx-retries-max", "8")}) == [
        ("tx-retries-max", {"Interface:vhu0:options:tx-retries-max": "32"})]
    # the VNF's own ring and cores are the VM's: advice, not a knob
    assert any("rx_queue_size" in line for line in advice.advice([VNF_TX], CFG, {"vhu0", "vhu1"}))


def test_jumbo_frames_above_the_mtu_raise_every_port_of_the_path_at_once():
    cfg = RunConfig(lab="lab.yaml", allow_dut_changes=True, frame_sizes=[64, 9000])
    mtu = finding("OVS vhu0 tx", "tx_mtu", 1000)
    c = candidates([mtu], cfg, node(), set())[0]
    assert c.key == "mtu_request" and c.new == "8982"
    assert c.sets == {f"Interface:{p}:mtu_request": "8982" for p in ("dpdk0", "dpdk1", "vhu0", "vhu1")}
    assert not any("mtu_request mismatch" in line for line in advice.advice([mtu], cfg, {"vhu0"}))  # a knob here
    done = RunConfig(lab="lab.yaml", allow_dut_changes=True, frame_sizes=[64, 9000],
                     dut_set=[f"{k}={v}" for k, v in c.sets.items()])
    assert candidates([mtu], done, node(), set()) == []  # nothing left below the need
    assert candidates([mtu], cfg, node(mtu=9000), set()) == []


def test_a_policer_on_the_path_is_taken_off_that_port_only():
    policed = node(dpdk0=Port("dpdk0", "dpdk", 1500, policing_kbps=10_000))
    qos = finding("OVS dpdk0 rx", "rx_qos", 900)
    assert changes([qos], n=policed) == [("ingress_policing_rate", {"Interface:dpdk0:ingress_policing_rate": "0"})]
    assert changes([qos]) == []  # no policer configured there: nothing to take off


def test_sets_merge_and_the_node_round_trips():
    s = with_sets({"dut_set": ["A:b:c=1", "X:y:z=2"]}, {"A:b:c": "3"})
    assert s["dut_set"] == ["A:b:c=3", "X:y:z=2"] and sets_of(s["dut_set"]) == {"A:b:c": "3", "X:y:z": "2"}
    n = node(vhu0=Port("vhu0", VHOST, 1500, 9000, {"n_rxq": "2"}, 5))
    assert Node.from_dict(n.to_dict()) == n


def test_render_gives_the_nodes_own_commands():
    keys = {"Open_vSwitch:.:other_config:pmd-cpu-mask": "0x44", "Interface:vhu0:options:tx-retries-max": "32",
            "Interface:dpdk0:options:n_rxq": "2", "drain_ms": 1000}
    text = render(keys, "ovs-vsctl")
    assert "ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask=0x44   # CPUs 2,6" in text
    assert "ovs-vsctl set Interface vhu0 options:tx-retries-max=32" in text
    trip = render(keys, "tripleo")
    assert 'OvsPmdCoreList: "2,6"' in trip and "NumDpdkInterfaceRxQueues: 2" in trip and "ovs_tx_retries_max" in trip
    assert "drain_ms = 1000" in render(keys, "summary")
    assert "no guest setting" in render(keys, "flavor")


# -- the loop on a fake node -------------------------------------------------------------------------------------

LINE = 14_880_952.0


def fake_node(ndr_of):
    """run_case for a lab tune: two searches per size, NDR ndr_of(the step's dut_set entries); the failed
    validation's diagnosis names frames above vhu0's MTU, then OVS's vhost TX into the VNF."""
    calls = []

    def run_case(name, cfg, rf: ResultFile) -> None:
        sets = sets_of(cfg.dut_set)
        calls.append(sets)
        big = "Interface:vhu0:mtu_request" not in sets
        for f in cfg.frame_sizes:
            for rep in range(cfg.repeat):
                diag = [{"hop": "OVS vhu0 tx", "where": "vhu0", "reason": "tx_mtu" if big else "tx_failure",
                         "frames": 1000, "share_pct": 100.0, "cause": "", "evidence": [], "remedies": []}]
                ndr = ndr_of(sets, f) * (1.005 if rep else 0.995)
                rf.start_search(f, rep, line_rate_pps=LINE)
                rf.add_trial(f, rep, TrialEntry.from_json(
                    {"kind": "validation", "verdict": "fail", "rate_pps": ndr * 1.1, "diagnosis": diag}))
                rf.finish_search(f, rep, SearchOutcome.from_json({
                    "ndr": {"rate_pps": ndr, "generator_bound": False, "line_rate_pct": 100 * ndr / LINE},
                    "flags": []}))
        rf.set_state("complete")
    return run_case, calls


def test_a_lab_tune_keeps_the_mtu_reverts_retries_and_ends(tmp_path):
    def ndr(sets, frame):
        return 10.0 if "Interface:vhu0:mtu_request" not in sets and frame > 1518 else 80_000.0
    base = load(None, {"lab": "lab.yaml", "allow_dut_changes": True, "frame_sizes": [64, 2048],
                       "dut_set": ["Open_vSwitch:.:other_config:pmd-rxq-assign=cycles"]}).to_dict()
    with pytest.raises(ZeroLossError, match="needs the node"):
        loop.create(tmp_path / "x.json", base, ("pct", 100.0), 60, 2.0, {"hostname": "t"})
    cf = loop.create(tmp_path / "t.json", base, ("pct", 100.0), 60, 2.0, {"hostname": "t"},
                     node=node(spare=()).to_dict())
    run_case, calls = fake_node(ndr)
    t = loop.run_tune(cf, {"hostname": "t"}, run_case, lambda *_: None)
    steps = t.steps
    assert [s.change["key"] for s in steps[1:]] == ["mtu_request", "tx-retries-max"]
    assert steps[1].kept and not steps[2].kept
    assert steps[1].change["new"] == "2030" and steps[2].decision["effect"] == "no effect"
    # each step's run got the user's own dut_set entry plus the tune's: the kept MTU, then the retries on top
    assert calls[0] == {"Open_vSwitch:.:other_config:pmd-rxq-assign": "cycles"}
    assert calls[2]["Interface:vhu0:options:tx-retries-max"] == "32"
    assert calls[2]["Interface:vhu0:mtu_request"] == "2030"
    assert loop.tuned_keys(t) == {f"Interface:{p}:mtu_request": "2030" for p in ("dpdk0", "dpdk1", "vhu0", "vhu1")}
    assert t.stop.startswith("no remedy left")
    assert any("rx_queue_size" in a for a in t.advice)
