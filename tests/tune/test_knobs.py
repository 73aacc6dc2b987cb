"""zeroloss tune's finding -> setting table: which knob answers which loss, the ladders, what applies where, and
that every proposal is a RunConfig that constructs."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zeroloss.core.config import RunConfig
from zeroloss.core.cpuset import parse_mask
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss.records import Finding
from zeroloss.results.records import RunRecord
from zeroloss.runs.tune import knobs, sites
from zeroloss.runs.tune.advice import advice
from zeroloss.runs.tune.decide import findings_of
from zeroloss.runs.tune.knobs import KNOBS, candidates
from zeroloss.runs.tune.sites import TABLE, site
from zeroloss.targets.registry import kind_of

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def finding(hop: str, reason: str, frames: int = 100, where: str | None = None, cause: str = "") -> Finding:
    """A diagnosis finding as loss/diagnose.py writes it (the fields the table reads)."""
    if where is None:
        where = hop.split()[1] if hop.startswith("OVS ") else hop
    return Finding.from_json({"hop": hop, "where": where, "reason": reason, "frames": frames, "share_pct": 0.0,
                              "cause": cause, "evidence": [], "remedies": []})


VNF_TX = finding("OVS v0 tx", "tx_failure", 500)
GEN_RX = finding("OVS g0 rx", "rx_missed", 400)
VNF_OUT = finding("OVS v1 rx", "rx_missed", 300)
VNF_RX = finding("VNF 1 (testpmd) rx port 0", "rx_missed", 200, where="vnf0")
DUT_RX = finding("DUT (testpmd) rx port 0", "rx_missed", 200, where="DUT (testpmd) port 0")
METER = finding("OVS br0 g0->v0", "meter", 900, where="br0")
MEMPOOL = finding("OVS g0 mempool", "mempool_small", 0, where="g0")
IMBALANCE = finding("OVS PMD placement", "pmd_imbalance", 0, where="core 0")
GEN_TX = finding("OVS g1 tx", "tx_failure", 50, cause="zlgen did not drain its RX virtqueue behind g1: the "
                 "generator's receive side is the bottleneck (generator-bound), not OVS")
MTU = finding("OVS v0 tx", "tx_mtu", 70)
UNEXPLAINED = finding("OVS br0 g0->v0", "unexplained", 30, where="br0")

PVP = RunConfig(topology="pvp", vnf="process", frame_sizes=[64])
PVP_VM = RunConfig(topology="pvp", vnf="vm", frame_sizes=[64], vnf_ring=256, vnf_vcpus="1,0", vnf_emulator_cpus="1")
TWO_CPUS, NO_PAGES = 2, 0


def keys(changes) -> list[str]:
    return [c.key for c in changes]


@pytest.mark.parametrize("f, expected", [
    (VNF_TX, sites.VNF_TX), (GEN_RX, sites.OVS_RX_GEN), (VNF_OUT, sites.OVS_RX_VNF), (VNF_RX, sites.VNF_RX),
    (DUT_RX, sites.DUT_RX), (METER, sites.METER), (MEMPOOL, sites.MEMPOOL), (IMBALANCE, sites.PMD),
    (GEN_TX, sites.GENERATOR), (MTU, sites.TX_MTU), (UNEXPLAINED, sites.UNEXPLAINED),
    (finding("OVS bond-a (g0+g2) rx", "rx_missed"), sites.OVS_RX_GEN),
    (finding("zlgen rx g1", "rx_missed", where="zlgen"), sites.GENERATOR),
    (finding("OVS v0 tx", "tx_dropped", cause="while its virtqueue was not running"), sites.VNF_DOWN),
    (finding("OVS dpdk1 tx", "tx_dropped"), sites.OVS_TX_NIC),
    (finding("VNF 1 (testpmd) rx port 1", "rx_nombuf", where="vnf0"), sites.PROC_MBUFS),
    (finding("OVS g0 rx", "rx_qos"), sites.QOS),
    (finding("OVS br0 g0->v0", "datapath", where="br0"), sites.DATAPATH),
    (finding("OVS g0 rx", "rx_errors"), sites.OTHER),
    (Finding(hop="", reason="", frames=0, cause=""), sites.OTHER),
])
def test_site_of_each_finding(f, expected):
    assert site(f) == expected


def test_table_names_only_knobs_that_exist_and_keys_of_runconfig():
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    assert set(KNOBS) <= fields
    for entries in TABLE.values():
        assert entries and all(key in KNOBS and why for key, why in entries)
        assert len({k for k, _ in entries}) == len(entries)


def test_vnf_tx_failure_with_ring_256_proposes_the_ring_1024_first():
    cfg = dataclasses.replace(PVP, vnf_ring=256)
    out = candidates([VNF_TX], cfg, set(), TWO_CPUS, NO_PAGES)
    assert out[0].key == "vnf_ring" and out[0].old == 256 and out[0].new == 1024
    assert out[0].knob == "VNF virtio ring size" and out[0].finding == "tx_failure at OVS v0 tx"
    assert "256 -> 1024" in out[0].why and "\n" not in out[0].why
    assert keys(out) == ["vnf_ring", "ovs_tx_retries_max", "dut_rxq"]  # a process VNF has no vCPUs to add


def test_ring_ladder_stops_at_what_the_vnf_takes():
    process = candidates([VNF_TX], dataclasses.replace(PVP, vnf_ring=1024), set(), TWO_CPUS, NO_PAGES)
    assert (process[0].key, process[0].new) == ("vnf_ring", 4096)
    vm = candidates([VNF_TX], dataclasses.replace(PVP_VM, vnf_ring=1024), set(), TWO_CPUS, NO_PAGES)
    assert "vnf_ring" not in keys(vm)  # QEMU's virtio-net takes at most 1024
    auto = candidates([VNF_TX], RunConfig(topology="pvp", vnf="auto", vnf_ring=1024), set(), TWO_CPUS, NO_PAGES)
    assert "vnf_ring" not in keys(auto)  # auto may start a VM
    top = candidates([VNF_TX], dataclasses.replace(PVP, vnf_ring=4096), set(), TWO_CPUS, NO_PAGES)
    assert "vnf_ring" not in keys(top)


def test_tried_pairs_are_passed_over_for_the_next_value_of_the_ladder():
    cfg = dataclasses.replace(PVP, vnf_ring=256)
    out = candidates([VNF_TX], cfg, {("vnf_ring", 1024)}, TWO_CPUS, NO_PAGES)
    assert (out[0].key, out[0].new) == ("vnf_ring", 4096)
    out = candidates([VNF_TX], cfg, {("vnf_ring", 1024), ("vnf_ring", 4096), ("ovs_tx_retries_max", 32)}, TWO_CPUS,
                     NO_PAGES)
    assert keys(out) == ["dut_rxq"]
    vm = candidates([VNF_TX], PVP_VM, {("vnf_ring", 1024)}, TWO_CPUS, NO_PAGES)
    assert "vnf_ring" not in keys(vm)


def test_tx_retries_ladder_restores_the_default_before_raising_it():
    off = candidates([VNF_TX], dataclasses.replace(PVP, vnf_ring=4096, ovs_tx_retries_max=0), set(), 2, 0)
    assert (off[0].key, off[0].old, off[0].new) == ("ovs_tx_retries_max", 0, 8)
    default = candidates([VNF_TX], dataclasses.replace(PVP, vnf_ring=4096), set(), 2, 0)
    assert (default[0].key, default[0].old, default[0].new) == ("ovs_tx_retries_max", -1, 32)
    top = candidates([VNF_TX], dataclasses.replace(PVP, vnf_ring=4096, ovs_tx_retries_max=32), set(), 2, 0)
    assert "ovs_tx_retries_max" not in keys(top)


def test_vm_vnf_gets_a_vcpu_only_where_a_cpu_is_free():
    assert "vnf_vcpus" not in keys(candidates([VNF_TX], PVP_VM, set(), 2, 0))
    out = candidates([VNF_TX], PVP_VM, set(), 4, 0)
    vcpu = next(c for c in out if c.key == "vnf_vcpus")
    assert (vcpu.old, vcpu.new) == ("1,0", "1,0,2")  # 0: PMD and testpmd, 1: zlgen and the emulator
    first_vnf_rx = candidates([VNF_RX], PVP_VM, set(), 4, 0)[0]
    assert (first_vnf_rx.key, first_vnf_rx.new) == ("vnf_vcpus", "1,0,2")


def test_rx_missed_at_ovs_ingress_adds_a_pmd_only_where_a_cpu_is_free():
    busy = candidates([GEN_RX], PVP, set(), TWO_CPUS, NO_PAGES)
    assert "ovs_pmd_cpu_mask" not in keys(busy)
    assert keys(busy) == ["dut_rxq"]  # one PMD: placement is moot; vhost ports: descriptors are moot
    free = candidates([GEN_RX], PVP, set(), 4, NO_PAGES)
    assert (free[0].key, free[0].old, free[0].new) == ("ovs_pmd_cpu_mask", "0x1", "0x5")  # CPU 1 is zlgen's
    spare = dataclasses.replace(PVP, gen_lcores="2", dut_lcores="0,2", dut_main_lcore=2)
    assert candidates([GEN_RX], spare, set(), 3, NO_PAGES)[0].new == "0x3"
    assert keys(free) == ["ovs_pmd_cpu_mask", "dut_rxq"]


def test_bench_knobs_leave_a_lab_node_to_labknobs():
    lab = RunConfig(topology="pvp", lab="lab.yaml", frame_sizes=[64])
    assert lab.dut == "lab"
    assert candidates([GEN_RX], lab, set(), TWO_CPUS, NO_PAGES) == []  # a node's knobs are OVSDB settings
    assert not any("n_rxq_desc" in line for line in advice([GEN_RX], lab))


def test_ovs_ingress_from_a_vnf_tries_pmd_then_the_ring():
    cfg = dataclasses.replace(PVP, vnf_ring=256)
    assert keys(candidates([VNF_OUT], cfg, set(), 2, 0)) == ["vnf_ring", "dut_rxq"]
    assert keys(candidates([VNF_OUT], cfg, set(), 4, 0))[:2] == ["ovs_pmd_cpu_mask", "vnf_ring"]


def test_pmd_imbalance_reassigns_queues_when_there_are_two_pmds():
    two = dataclasses.replace(PVP, ovs_pmd_cpu_mask="0x3")
    out = candidates([IMBALANCE], two, set(), 4, 0)
    assert (out[0].key, out[0].old, out[0].new) == ("ovs_rxq_assign", "cycles", "group")
    assert candidates([IMBALANCE], two, {("ovs_rxq_assign", "group")}, 4, 0)[0].new == "roundrobin"
    grouped = dataclasses.replace(two, ovs_rxq_assign="group")
    assert candidates([IMBALANCE], grouped, set(), 4, 0)[0].new == "cycles"
    assert keys(candidates([IMBALANCE], PVP, set(), 4, 0)) == ["dut_rxq"]


def test_queue_ladders_stop_at_four():
    q = candidates([GEN_RX], dataclasses.replace(PVP, dut_rxq=3), set(), 2, 0)
    assert [(c.key, c.new) for c in q] == [("dut_rxq", 4)]
    assert candidates([GEN_RX], dataclasses.replace(PVP, dut_rxq=4), set(), 2, 0) == []
    vq = candidates([VNF_RX], dataclasses.replace(PVP, vnf_ring=4096, dut_rxq=2), set(), 2, 0)
    assert [(c.key, c.old, c.new) for c in vq] == [("vnf_queues", 0, 3), ("dut_rxq", 2, 3)]


def test_a_meter_left_too_low_is_taken_off():
    out = candidates([METER, VNF_TX], dataclasses.replace(PVP, meter_pps=20_000), set(), 2, 0)
    assert (out[0].key, out[0].old, out[0].new) == ("meter_pps", 20_000, 0)
    assert "meter_pps" not in keys(candidates([METER], PVP, set(), 2, 0))


def test_socket_memory_follows_the_formula_within_the_hugepages():
    jumbo = RunConfig(topology="pvp", vnf="process", frame_sizes=[64, 9000])
    assert knobs.ovs_mtu(jumbo) == 8982
    # 256 MB zlgen + 256 MB the VNF: 3584 MB of pages leave OVS 3072, the formula's value for MTU 8982
    out = candidates([MEMPOOL], jumbo, set(), 2, 3584)
    assert [(c.key, c.old, c.new) for c in out] == [("ovs_socket_mem_mb", 1024, 3072)]
    assert candidates([MEMPOOL], jumbo, set(), 2, 3583)[0].new == 2048  # doubling when the formula does not fit
    assert candidates([MEMPOOL], jumbo, set(), 2, 2048) == []  # the 2-core bench's 1024 pages of 2 MB
    after = candidates([MEMPOOL], jumbo, {("ovs_socket_mem_mb", 3072)}, 2, 8192)
    assert after[0].new == 6144
    small = RunConfig(topology="pvp", vnf="process", frame_sizes=[64, 1518])
    assert candidates([MEMPOOL], small, set(), 2, 8192)[0].new == 2048  # formula for MTU 1500


def test_socket_memory_never_under_a_socket_limit_runconfig_refuses():
    jumbo = RunConfig(topology="pvp", vnf="process", frame_sizes=[9000], ovs_socket_limit_mb=1024)
    assert candidates([MEMPOOL], jumbo, set(), 2, 8192) == []


def test_knobs_that_do_not_apply_are_left_out():
    p2p = RunConfig(topology="p2p")
    # no OVS, no VNF: only testpmd's queues remain of what these findings call for
    assert keys(candidates([VNF_TX, GEN_RX, METER, MEMPOOL, IMBALANCE], p2p, set(), 8, 8192)) == ["dut_rxq"]
    assert keys(candidates([DUT_RX], p2p, set(), 4, 0)) == ["dut_rxq", "dut_lcores"]
    assert candidates([DUT_RX], p2p, set(), 4, 0)[1].new == "0,1,2"
    ovs_p2p = RunConfig(topology="ovs-p2p")
    assert "vnf_ring" not in keys(candidates([VNF_TX, VNF_OUT], ovs_p2p, set(), 2, 0))
    external = RunConfig(dut="external", ports=["a", "b"])
    assert keys(candidates([DUT_RX, GEN_RX, UNEXPLAINED], external, set(), 8, 8192)) == ["drain_ms"]


def test_generator_and_mtu_findings_propose_nothing_but_advice():
    assert candidates([GEN_TX, MTU], PVP, set(), 8, 8192) == []
    lines = advice([GEN_TX, MTU], PVP)  # the larger finding's advice first
    assert len(lines) == 2 and "generator is the bottleneck" in lines[1] and "OVS g1 tx" in lines[1]
    assert "mtu_request mismatch on v0" in lines[0] and "zeroloss host plan --mtu 1500" in lines[0]


def test_unexplained_loss_gets_a_longer_drain():
    out = candidates([UNEXPLAINED], PVP, set(), 2, 0)
    assert [(c.key, c.old, c.new) for c in out] == [("drain_ms", 500, 1000)]


def test_largest_finding_first_and_one_change_per_key():
    cfg = dataclasses.replace(PVP, vnf_ring=256, meter_pps=50_000)
    small_meter = METER.with_(frames=10)
    out = candidates([VNF_TX, finding("OVS v1 tx", "tx_failure", 499), small_meter, GEN_RX], cfg, set(), 2, 0)
    assert keys(out) == ["vnf_ring", "ovs_tx_retries_max", "dut_rxq", "meter_pps"]
    assert out[2].finding == "tx_failure at OVS v0 tx"  # dut_rxq answers the larger finding


def test_advice_names_host_plan_and_audit_for_what_the_bench_cannot_try():
    lines = advice([VNF_TX, GEN_RX, MEMPOOL], RunConfig(topology="pvp", frame_sizes=[9000]))
    text = "\n".join(lines)
    assert len(lines) == len(set(lines)) == 5
    assert "isolcpus" in lines[0] and "zeroloss host audit" in lines[0] and "host plan --format cmdline" in lines[0]
    assert "C-states" in text and "1 GB hugepages" in text and "n_rxq_desc" in text
    assert "3072 MB" in text and "--mtu 8982" in text
    assert advice([], PVP) == []
    assert all("\n" not in line for line in lines)


def test_bench_memory_constants_match_the_bench():
    from zeroloss.drivers.bench import ovsbench

    assert (knobs.GEN_MB, knobs.VNF_MB) == (ovsbench.GEN_MB, ovsbench.VNF_MB)
    vnfs = {t: kind_of(RunConfig(topology=t)).vnfs(RunConfig(topology=t)) for t in ("p2p", *ovsbench.VNFS)}
    assert vnfs == {"p2p": 0, **ovsbench.VNFS}  # the VNFs each kind runs (targets/kinds) are the bench's


def test_ring256_fixture_proposes_the_ring_first():
    """The issue's bench scenario, on a recorded run: PVP with the VNF's ring at 256."""
    doc = json.loads(gzip.decompress((FIX / "result_v2_ring256.json.gz").read_bytes()))
    cfg = dataclasses.replace(RunConfig(**doc["config"]), vnf="process")
    out = candidates(findings_of(RunRecord.from_json(doc)), cfg, {("vnf_ring", 256)}, 2, 2048)
    assert (out[0].key, out[0].old, out[0].new) == ("vnf_ring", 256, 1024)


# -- property: whatever the findings and settings, every proposal is a RunConfig that constructs --------------

HOPS = [("OVS v0 tx", "tx_failure"), ("OVS v1 tx", "tx_dropped"), ("OVS g0 rx", "rx_missed"),
        ("OVS v1 rx", "rx_missed"), ("VNF 1 (testpmd) rx port 0", "rx_missed"),
        ("DUT (testpmd) rx port 1", "rx_missed"),
        ("OVS br0 g0->v0", "meter"), ("OVS g0 mempool", "mempool_small"), ("OVS PMD placement", "pmd_imbalance"),
        ("OVS v0 tx", "tx_mtu"), ("OVS br0 g0->v0", "datapath"), ("zlgen rx g1", "rx_missed"),
        ("OVS g1 tx", "tx_failure"), ("OVS br0 g0->v0", "unexplained"), ("OVS dpdk0 tx", "tx_dropped"),
        ("VNF 1 (testpmd) rx port 0", "rx_nombuf"), ("OVS g0 rx", "rx_qos")]


@st.composite
def configs(draw) -> RunConfig:
    topology = draw(st.sampled_from(["p2p", "ovs-p2p", "pvp", "pvvp"]))
    vnf = draw(st.sampled_from(["auto", "vm", "process"]))
    values = {
        "topology": topology, "vnf": vnf,
        "frame_sizes": draw(st.lists(st.sampled_from([64, 512, 1518, 4096, 9000]), min_size=1, max_size=3,
                                     unique=True)),
        "vnf_ring": draw(st.sampled_from([256, 512, 1024] + ([2048, 4096] if vnf != "vm" else []))),
        "dut_rxq": draw(st.integers(1, 6)),
        "vnf_queues": draw(st.integers(0, 5)),
        "ovs_pmd_cpu_mask": hex(draw(st.integers(1, 15))),
        "ovs_rxq_assign": draw(st.sampled_from(["cycles", "group", "roundrobin"])),
        "ovs_rxd": draw(st.sampled_from([512, 1024, 2048, 4096])),
        "ovs_txd": draw(st.sampled_from([512, 2048, 4096])),
        "ovs_tx_retries_max": draw(st.integers(-1, 32)),
        "ovs_socket_mem_mb": draw(st.sampled_from([512, 1024, 2048, 3072, 4096])),
        "ovs_socket_limit_mb": draw(st.sampled_from([0, 0, 4096, 8192])),
        "meter_pps": draw(st.sampled_from([0, 10_000])) if topology != "p2p" else 0,
        "gen_lcores": draw(st.sampled_from(["1", "2", "1-2"])),
        "dut_lcores": draw(st.sampled_from(["0,1", "0", "0-3"])),
        "dut_main_lcore": 0,
        "vnf_vcpus": draw(st.sampled_from(["1,0", "0", "2,3"])),
        "drain_ms": draw(st.sampled_from([200, 500, 1000, 5000])),
    }
    if draw(st.booleans()):
        values["lab"] = "lab.yaml"
    try:
        return RunConfig(**values)
    except ZeroLossError:
        return RunConfig(topology=topology, vnf=vnf)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs(),
       fs=st.lists(st.tuples(st.sampled_from(HOPS), st.integers(-5, 10_000)), max_size=8),
       cpus=st.integers(1, 16), pages=st.sampled_from([0, 2048, 4096, 16384]),
       tried_n=st.integers(0, 6))
def test_every_candidate_constructs_and_applies(cfg, fs, cpus, pages, tried_n):
    findings = [finding(hop, reason, frames, where="vnf0" if hop.startswith("VNF") else None)
                for (hop, reason), frames in fs]
    first = candidates(findings, cfg, set(), cpus, pages)
    tried = {(c.key, c.new) for c in first[:tried_n]}
    out = candidates(findings, cfg, tried, cpus, pages)
    assert len({c.key for c in out}) == len(out)
    for c in out:
        assert (c.key, c.new) not in tried and c.new != c.old == getattr(cfg, c.key)
        new = dataclasses.replace(cfg, **{c.key: c.new})  # raises if RunConfig refuses it
        assert knobs.applies(KNOBS[c.key], cfg)
        assert c.finding and c.why and c.knob and "\n" not in c.why
        if c.key == "vnf_ring":
            assert new.vnf_ring <= (4096 if cfg.vnf == "process" else 1024)
        if c.key == "ovs_pmd_cpu_mask":
            added = set(parse_mask(c.new)) - set(parse_mask(c.old))
            assert len(added) == 1 and max(added) < cpus and not added & knobs.used_cpus(cfg)
        if c.key in ("vnf_vcpus", "dut_lcores"):
            assert int(c.new.split(",")[-1]) < cpus
            assert cfg.vnf == "vm" or c.key == "dut_lcores"
        if c.key == "ovs_socket_mem_mb":
            assert c.new <= knobs.ovs_hugepages_mb(cfg, pages)
        if cfg.topology == "p2p":
            assert c.key in ("dut_rxq", "dut_lcores", "drain_ms")
    for line in advice(findings, cfg):
        assert line and "\n" not in line
