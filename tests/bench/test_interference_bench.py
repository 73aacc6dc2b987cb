"""Host interference on the real bench: the targets find their poller threads by name and core in the running
testpmd, ovs-vswitchd and zlgen, a trial's snapshots give each a reading, and zlgen reports its TX lateness."""

from __future__ import annotations

import time

from zeroloss.core.config import RunConfig
from zeroloss.drivers.dut.ovsstats import pmd_perf, pmd_perf_delta
from zeroloss.drivers.probe.interference import delta, snapshot
from zeroloss.targets.kinds.ovs import OvsTarget
from zeroloss.targets.kinds.testpmd import P2pTarget


def _trial(target, rate_pps: float = 100_000):
    """One 1 s trial through target with snapshots of its pollers around it: (result, interference)."""
    probe = target.probe()
    threads = probe.threads()
    target.client.configure(target.streams(64, rate_pps))
    before = snapshot(threads, probe.rings)
    r = target.client.run_trial(duration_s=1.0, drain_ms=200)
    return r, threads, delta(before, snapshot(threads, probe.rings))


def test_p2p_pollers_and_tx_lateness():
    cfg = RunConfig(frame_sizes=[64])
    with P2pTarget(cfg, "memif", [64]) as t:
        r, threads, got = _trial(t)
    by_role = {(x.role, x.name, x.core) for x in threads}
    # testpmd forwards on lcore 0 (its main lcore 1 reads commands); zlgen's worker 0 is its main thread, on 1
    assert ("testpmd", "rte-worker-0", 0) in by_role, by_role
    assert any(role == "zlgen" and core == 1 for role, _, core in by_role), by_role
    assert not any(role == "testpmd" and core == 1 for role, _, core in by_role), by_role
    assert {d.role for d in got.threads} == {"testpmd", "zlgen"}
    assert all(d.run_ms > 500 for d in got.threads), got  # busy pollers ran most of the trial
    assert {c.core for c in got.cores} == {0, 1}
    assert all(s.pace_max_late_ns > 0 for s in r.streams), [s.pace_max_late_ns for s in r.streams]
    assert set(got.stall_ms_by_core()) == {0, 1}


def test_ovs_p2p_pmd_threads_found():
    cfg = RunConfig(topology="ovs-p2p", frame_sizes=[64])
    with OvsTarget(cfg, [64]) as t:
        ovs = t.bench.ovs
        ovs.vsctl("set", "Open_vSwitch", ".", "other_config:pmd-perf-metrics=true")
        perf = pmd_perf(ovs.appctl("dpif-netdev/pmd-perf-show"))
        r, threads, got = _trial(t)
        t0 = time.monotonic()
        perf = pmd_perf_delta(perf, pmd_perf(ovs.appctl("dpif-netdev/pmd-perf-show")))
        read_s = time.monotonic() - t0
    pmds = [x for x in threads if x.role == "pmd"]
    assert pmds and all(x.name.startswith("pmd-c00/id:") and x.core == 0 for x in pmds), threads
    assert any(x.role == "zlgen" for x in threads)
    assert any(d.role == "pmd" and d.run_ms > 500 for d in got.threads), got
    assert r.tx_pkts > 0
    # the PMD's iterations over the trial, and its longest one bounded by the cycles/it histogram
    assert list(perf) == ["0"] and perf["0"]["iterations"] > 0 and perf["0"]["rx_packets"] >= r.tx_pkts, perf
    assert perf["0"]["max_iteration_cycles_gt"] >= 0 and "max_iteration_ms_le" in perf["0"], perf
    assert read_s < 0.5


def test_every_run_trial_keeps_its_interference_and_ovs_pmd_iterations(ovs_p2p_run):
    """A real `zeroloss run` on ovs-p2p (conftest.py's, shared with test_telemetry_bench): every trial stores the
    stalls of its pollers (PMD, zlgen), the cores' steal, and each PMD's iterations over the trial (pmd-perf-metrics
    on: its longest iteration's bounds); a disturbed trial, if the host caused one, names its core and never counts as
    the DUT's loss."""
    from zeroloss.results.resultfile import read_doc

    from .verdicts import assert_ran

    r, out = ovs_p2p_run
    assert_ran(r)
    (search,) = read_doc(out)["searches"]
    assert search["trials"]
    for t in search["trials"]:
        inter = t["interference"]
        assert {x["role"] for x in inter["threads"]} >= {"pmd", "zlgen"}, inter["threads"]
        assert inter["cores"] and set(map(int, inter["stall_ms"])) == {c["core"] for c in inter["cores"]}
        assert inter["pmd_perf"] and all(p["iterations"] > 0 for p in inter["pmd_perf"].values())
        assert all("max_iteration_ms_gt" in p for p in inter["pmd_perf"].values())
        assert (t["verdict"] == "disturbed") == bool(t["outcome"].get("disturbed")) or t["verdict"] in (
            "generator-failure", "anomaly")
        if t["verdict"] == "disturbed":
            text = t["outcome"]["disturbed"]
            assert ("stalled" in text or "of the trial to other tasks" in text or "zlgen caught up" in text) \
                and inter["disturbed"] == text
