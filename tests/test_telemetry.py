"""host/telemetry: the parsers on /proc text captured on this host (two readings 1 s apart), the arithmetic of a
trial's telemetry between two snapshots, the OVS PMD part on recorded pmd-perf-show output, the local reader on this
process, the stored record through the result file's schema and records, and the lab's taskset parser."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.dut.ovsstats import pmd_perf
from zeroloss.drivers.lab.labtelemetry import parse_taskset
from zeroloss.drivers.probe.interference import ThreadRef
from zeroloss.drivers.probe.telemetry import (
    CPU_FIELDS,
    Telemetry,
    delta,
    parse_cpu_times,
    parse_irqs,
    parse_isolated,
    parse_pid_stat,
    pmd_telemetry,
    read_local,
    snapshot_of,
    summary_lines,
    trial_record,
    vhost_tx_retries,
)
from zeroloss.drivers.probe.telemetryrecords import PmdTelemetry, TelemetryRecord
from zeroloss.results import schema
from zeroloss.results.records import TrialEntry

FIX = Path(__file__).parent / "fixtures"
TEL = FIX / "telemetry"


def texts(when: str) -> dict[str, str]:
    return {"stat": (TEL / f"stat.{when}").read_text(), "interrupts": (TEL / f"interrupts.{when}").read_text(),
            "isolated": "\n", "pid:1": (TEL / f"pid1-stat.{when}").read_text()}


def snaps(isolated: str = "\n"):
    cores, procs = {0: ["zlgen"], 1: ["pmd", "vnf"]}, {1: "zlgen"}
    before = snapshot_of({**texts("before"), "isolated": isolated}, cores, procs, t=10.0)
    after = snapshot_of({**texts("after"), "isolated": isolated}, cores, procs, t=11.0)
    return before, after


def test_parse_cpu_times_known_answer():
    cpus = parse_cpu_times((TEL / "stat.before").read_text())
    assert sorted(cpus) == [0, 1]  # the 'cpu' total line is not a CPU
    c = cpus[0]
    assert (c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal) == (2461, 0, 1696, 34426, 547, 0,
                                                                                       16, 33)
    assert c.total == 2461 + 1696 + 34426 + 547 + 16 + 33
    # an old kernel's 4 columns: the rest are 0; fewer is not /proc/stat
    assert parse_cpu_times("cpu3 1 2 3 4\n")[3].steal == 0
    with pytest.raises(ValueError, match="expected at least 4"):
        parse_cpu_times("cpu0 1 2\n")


def test_parse_irqs_known_answer():
    irqs = parse_irqs((TEL / "interrupts.after").read_text())
    assert irqs["36"].per_cpu == {0: 0, 1: 118226}
    assert irqs["36"].name == "virtio1-req.0"
    assert irqs["LOC"].per_cpu == {0: 28002, 1: 33903}
    assert irqs["LOC"].name == "Local timer interrupts"
    assert "ERR" not in irqs and "MIS" not in irqs  # one count for all CPUs
    assert parse_irqs("") == {}


def test_parse_pid_stat_known_answer_and_odd_names():
    s = parse_pid_stat((TEL / "pid1-stat.after").read_text())
    assert (s.comm, s.minflt, s.majflt) == ("process_api", 56120, 0)
    # a comm with spaces and parentheses (a thread may name itself so): fields are read after the last ')'
    odd = parse_pid_stat("42 (a) (b c) S 1 42 42 0 -1 4194560 7 0 3 0 0 0\n")
    assert (odd.comm, odd.minflt, odd.majflt) == ("a) (b c", 7, 3)
    with pytest.raises(ValueError, match="not a /proc/PID/stat"):
        parse_pid_stat("garbage")


def test_parse_isolated():
    assert parse_isolated("\n") == frozenset()
    assert parse_isolated("2-3,6\n") == frozenset({2, 3, 6})


def test_delta_known_answer_from_two_readings():
    tel = delta(*snaps())
    assert tel.window_s == pytest.approx(1.0)
    c0, c1 = tel.cores
    assert c0.core == 0 and c0.roles == ("zlgen",) and c1.roles == ("pmd", "vnf")
    assert dict(c0.ticks) == {"user": 3, "nice": 0, "system": 5, "idle": 91, "iowait": 0, "irq": 0, "softirq": 0,
                              "steal": 0}
    assert c0.total == 99 and c1.total == 102  # ~1 s at USER_HZ 100
    assert sum(c0.pct(k) for k in CPU_FIELDS) == pytest.approx(100)
    assert c0.busy_pct == pytest.approx(100 * 8 / 99)
    # per IRQ on each core, nonzero only, and the total
    assert dict(c0.irqs) == {"41": 2, "LOC": 66, "RES": 36, "CAL": 64, "TLB": 9}
    assert dict(c1.irqs) == {"36": 7, "42": 5, "LOC": 88, "RES": 28, "CAL": 44, "TLB": 7}
    assert (c0.interrupts, c1.interrupts) == (177, 179)
    assert tel.irq_names["42"] == "virtio3-tx"
    (p,) = tel.procs
    assert (p.pid, p.role, p.name, p.minflt, p.majflt) == (1, "zlgen", "process_api", 143, 0)
    assert tel.flags() == []


def test_interrupts_on_an_isolated_core_are_flagged():
    tel = delta(*snaps(isolated="1\n"))
    assert [c.isolated for c in tel.cores] == [False, True]
    assert tel.flags() == ["isolated core 1 took 179 interrupts (LOC 88, CAL 44, RES 28)"]


def test_counters_that_went_back_and_gone_processes():
    before, after = snaps()
    # after is the earlier reading: every counter went back, none is negative
    tel = delta(after, before)
    assert all(v == 0 for c in tel.cores for v in c.ticks.values()) and all(not c.irqs for c in tel.cores)
    assert tel.procs[0].minflt == 0
    # a process gone at the second reading (its stat unreadable) is left out, not an error
    gone = snapshot_of({**texts("after"), "pid:1": None}, {0: ["zlgen"]}, {1: "zlgen"}, t=11.0)
    assert delta(before, gone).procs == ()


def test_record_round_trip_schema_and_trial_entry():
    before, after = snaps()
    rec = trial_record(before, after)
    assert rec["cores"][0]["pct"]["idle"] == pytest.approx(91.9, abs=0.05)
    assert rec["cores"][0]["interrupts"] == 177 and rec["procs"][0]["minflt"] == 143
    back = Telemetry.from_json(rec)
    assert back.to_json() == rec
    # the result file keeps it: the trial schema accepts it and the trial record carries it unchanged
    trial = {"index": 0, "kind": "search", "verdict": "pass", "rate_pps": 1.0, "duration_s": 1.0, "loss_ratio": 0.0,
             "outcome": {"directions": []}, "telemetry": rec}
    schema.check(trial, schema.TRIAL, "t.json")
    entry = TrialEntry.from_json(trial)
    assert entry.telemetry == rec and entry.to_json()["telemetry"] == rec
    bad = {**trial, "telemetry": {**rec, "cores": [{"core": "x", "ticks": {}}]}}
    with pytest.raises(ZeroLossError):
        schema.check(bad, schema.TRIAL, "t.json")


def test_pmd_telemetry_from_recorded_pmd_perf_show():
    after = pmd_perf((FIX / "ovs" / "pmd-perf-show.txt").read_text())
    a = after["0"]
    assert (a["upcalls"], a["lost_upcalls"], a["tx_packets"], a["tx_batches"]) == (0, 0, 397940, 393558)
    assert a["max_vhost_qlen"][:2] == [[0, 11891126], [1, 196395]] and a["max_vhost_qlen"][-1] == [None, 0]
    # the reading before: 1,000 iterations (10 busy), 100 packets and 1,000,000 cycles fewer, no queue seen yet
    before = {"0": {**a, "iterations": a["iterations"] - 1000, "busy_iterations": a["busy_iterations"] - 10,
                    "idle_iterations": a["idle_iterations"] - 990, "rx_packets": a["rx_packets"] - 100,
                    "used_cycles": a["used_cycles"] - 1_000_000, "upcalls": 0,
                    "max_vhost_qlen": [[w, 0] for w, _ in a["max_vhost_qlen"]]}}
    counters = {"ovs": {"pmds": {"0": {"processing_cycles": 50_000, "packets_received": 100, "idle_cycles": 9}},
                        "ports": {"vhu0": {"ovs_tx_retries": 12, "tx_packets": 5}, "vhu1": {"ovs_tx_retries": 0}}}}
    d = pmd_telemetry(before, after, counters)["0"]
    assert (d["iterations"], d["busy_iterations"], d["idle_iterations"], d["rx_packets"]) == (1000, 10, 990, 100)
    assert d["cycles_per_pkt"] == 500.0  # processing cycles over packets received, as OVS counts it
    assert d["us_per_it"] == pytest.approx(1_000_000 / a["tsc_hz"] / 1000 * 1e6, rel=1e-3)
    # the highest bin of the 5th histogram that counted in between: more than 48, at most 59 frames queued
    assert (d["max_vhost_qlen_gt"], d["max_vhost_qlen_le"]) == (48, 59)
    assert vhost_tx_retries(counters) == {"vhu0": 12}
    # a PMD only in one reading (restarted OVS) is left out; no counters: no cycles per packet
    assert pmd_telemetry({}, after) == {}
    assert pmd_telemetry(before, after)["0"]["cycles_per_pkt"] is None
    lines = summary_lines(trial_record(*snaps(), before, after, counters))
    assert any("OVS PMD core 0 500 cycles/pkt: 1,000 iterations (10 busy)" in line for line in lines)
    assert any("vhost TX retries: vhu0 12" in line for line in lines)
    assert any("longest vhost queue <= 59" in line for line in lines)


def test_read_local_on_this_process():
    """The local reader on this host's real files: this process's page faults grow when it touches new memory,
    every core's ticks add up to its share of the elapsed time."""
    me = os.getpid()
    core = os.sched_getaffinity(0)
    refs = [ThreadRef("zlgen", me, me, "pytest", min(core))]
    before = read_local(refs, extra_cores=core)
    buf = bytearray(64 << 20)  # 64 MB touched: thousands of minor faults
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    after = read_local(refs, extra_cores=core)
    tel = delta(before, after)
    assert {c.core for c in tel.cores} == core
    assert next(c for c in tel.cores if c.core == min(core)).roles == ("zlgen",)
    (p,) = tel.procs
    assert p.pid == me and p.minflt >= 4000 and p.majflt >= 0
    for c in tel.cores:
        assert c.total <= (tel.window_s * tel.user_hz) + 2  # no more ticks than the time that passed (+ rounding)


def test_parse_taskset():
    text = "pid 10's current affinity list: 2\npid 11's current affinity list: 0-3\n"
    assert parse_taskset(text) == {10: [2], 11: [0, 1, 2, 3]}


def test_report_plots_a_searchs_telemetry_and_explain_tells_it(tmp_path):
    """A stored run whose first search's trials carry telemetry: the HTML report draws one telemetry figure (cores'
    shares, interrupts, page faults, PMD cycles/packet) with its numbers, and `zeroloss explain` prints them."""
    import gzip
    import json

    from zeroloss.report.explain import trial_text
    from zeroloss.report.html import render
    from zeroloss.results.records import RunRecord
    from zeroloss.results.summary import load_runs

    doc = json.loads(gzip.open(FIX / "result_v2.json.gz").read())
    after = pmd_perf((FIX / "ovs" / "pmd-perf-show.txt").read_text())
    before = {"0": {**after["0"], "rx_packets": 0, "iterations": 0, "busy_iterations": 0, "idle_iterations": 0}}
    counters = {"ovs": {"pmds": {"0": {"processing_cycles": 40_000, "packets_received": 100}}}}
    rec = trial_record(*snaps(isolated="1\n"), before, after, counters)
    first = doc["searches"][0]
    for t in first["trials"]:
        t["telemetry"] = rec
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    page = render(load_runs([str(path)]))
    assert page.count('<div class="fig telemetry">') == 1  # the one search with telemetry, no other
    fig = page[page.index('<div class="fig telemetry">'):]
    fig = fig[:fig.index("</div>")]
    for text in ("% of the core", "interrupts/s", "page faults", "cycles/packet", "core 1 isolated", "process_api"):
        assert text in fig, text
    assert "1*: 9/0.0/0.0 %, 179 int" in page and "process_api 143/0" in page and "0: 400" in page
    assert "isolated core 1 took 179 interrupts" in page
    run = RunRecord.from_json(doc)
    t = run.searches[0].trials[0]
    text = trial_text(run.searches[0].frame, t, [], [])
    assert "core 1* (pmd/vnf) busy 9 %" in text and "process_api 143/0" in text
    assert "OVS PMD core 0 400 cycles/pkt" in text and "flag: isolated core 1 took 179 interrupts" in text


def test_stored_telemetry_reads_back_byte_for_byte():
    """TelemetryRecord and PmdTelemetry (drivers/probe/telemetryrecords.py) write back what they read, keys, order
    and nulls; a PMD whose iterations saw no vhost queue has no bounds, one past the last wall a null upper one."""
    after = pmd_perf((FIX / "ovs" / "pmd-perf-show.txt").read_text())
    last = {"0": {**after["0"], "max_vhost_qlen": [[w, n + (1 if w is None else 0)] for w, n in
                                                    after["0"]["max_vhost_qlen"]]}}
    none = pmd_telemetry(after, after)["0"]
    top = pmd_telemetry(after, last)["0"]
    assert "max_vhost_qlen_gt" not in none and none["us_per_it"] is None and none["cycles_per_pkt"] is None
    assert list(top)[-2:] == ["max_vhost_qlen_gt", "max_vhost_qlen_le"] and top["max_vhost_qlen_le"] is None
    rec = trial_record(*snaps(), after, last, {"ovs": {"ports": {"v": {"ovs_tx_retries": 2}}}})
    assert rec["pmds"]["0"] == top and rec["vhost_tx_retries"] == {"v": 2}
    for doc in (rec, {"host": "h", "cores": [{"core": 1, "extra": 1, "roles": None}], "pmds": {"0": top}}):
        assert json.dumps(TelemetryRecord.from_json(doc).to_json()) == json.dumps(doc)
    assert json.dumps(PmdTelemetry.from_json(top).to_json()) == json.dumps(top)


def test_node_telemetry_learns_the_nodes_cores_and_processes_from_the_agents_replies():
    """NodeTelemetry reads the agent's replies as records (drivers/lab/replies.py Ran, labtelemetry InfoReply): the
    PMDs' cores from pmd-stats-show, each VNF's pid from /info (a reply without one, or an error, names none), its
    core from taskset; a file the node could not read is None in the snapshot."""
    from types import SimpleNamespace as NS

    from zeroloss.drivers.lab.labtelemetry import NodeTelemetry

    replies = [[{"rc": 0, "out": (FIX / "ovs" / "pmd-stats-show.txt").read_text()}, {"/info": {"pid": 42}},
                {"/info": {"pid": "x"}}, {"error": "no socket"}],
               [{"rc": 0, "out": "pid 42's current affinity list: 3\npid 43's current affinity list: 3\n"}],
               None]

    def batch(items):
        if replies[0] is None:  # the snapshot: every file but the VNF's stat
            return [{"rc": 0, "out": (FIX / "telemetry" / "stat.after").read_text()} if i["argv"][1] == "/proc/stat"
                    else {"rc": 1, "out": "", "err": "gone"} for i in items]
        return replies.pop(0)

    vnfs = [NS(remote=False, telemetry=f"/t{i}") for i in range(3)]
    dut = NS(lab=NS(vnfs=vnfs, dut=NS(target="node1")), ovs=True, ctl="/ctl", pids={"ovs-vswitchd": 7},
             agent=lambda: NS(batch=batch))
    tel = NodeTelemetry(dut)
    assert tel.cores == {0: ["pmd"], 3: ["vnf"]} and tel.procs == {7: "pmd", 42: "vnf"}
    snap = tel()
    assert snap.host == "node1" and snap.cpus and not snap.irqs and snap.procs == {} and snap.cores == {
        0: ("pmd",), 3: ("vnf",)}
