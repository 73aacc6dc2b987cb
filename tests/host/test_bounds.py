"""Host planning inputs bounded and read as the kernel and OVS read them (issue 29, items 7 and 15): every numeric
flag in range as one line, loads files linear in size and refused before the work when larger than a datapath,
pmd-rxq-show lines OVS never prints, damaged meminfo, the kernel's grouped CPU lists, OVS's affinity parser, and the
NUMA walk order OVS draws at each start."""

import dataclasses
import json
import shutil
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.core.cpuset import parse_kernel_list
from zeroloss.core.errors import ZeroLossError
from zeroloss.host.inventory import Inventory, collect
from zeroloss.host.ovshash import numa_visit_orders, shared_bucket
from zeroloss.host.ovsstate import parse_pmd_rxq_show
from zeroloss.host.plan import Intent, make_plan
from zeroloss.host.rxq import Pmd, Rxq, assign, parse_affinity
from zeroloss.host.rxqinput import MAX_PORTS, parse_loads
from zeroloss.host.rxqorder import visit_order
from zeroloss.host.sysfs import Root

from .conftest import FIXTURES
from .test_host_cli import one_line_error, run

R740 = str(FIXTURES / "r740xd")


@pytest.mark.parametrize("flag, value, words", [
    ("--vhost-ports", "99999999999", "argument --vhost-ports: 99999999999 must be at most 1,024"),
    ("--vhost-ring", "0", "argument --vhost-ring: 0 is not one of 256, 512, 1024"),
    ("--vhost-ring", "-1", "argument --vhost-ring: -1 is not one of 256, 512, 1024"),
    ("--vhost-ring", "99999999999", "argument --vhost-ring: 99999999999 is not one of"),
    ("--memory-channels", "-1", "argument --memory-channels: -1 must be at least 1"),
    ("--memory-channels", "0", "argument --memory-channels: 0 must be at least 1"),
    ("--rxq", "-1", "argument --rxq: -1 must be at least 1"),
    ("--rxq", "0", "argument --rxq: 0 must be at least 1"),
    ("--mtu", "1" * 60, "is not a whole number"),
    ("--socket-mem", "0", "argument --socket-mem: 0 must be at least 1024"),
    ("--pmd-cores-per-node", "99999999999", "must be at most 4,096"),
    ("--ocp-version", "four", "'four' is not an OpenShift version X.Y"),
])
def test_plan_flags_out_of_range_are_one_line(flag, value, words):
    r = run("host", "plan", "--root", R740, flag, value, "--format", "tripleo")
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    assert words in r.stderr.strip().splitlines()[-1], r.stderr


def test_rxq_plan_flags_out_of_range_are_one_line(tmp_path):
    loads = tmp_path / "l.yaml"
    loads.write_text("pmds: [2]\nports: [{name: a, loads: [10, 20]}]\n")
    r = run("rxq-plan", "--loads", str(loads), "--rxq", "99999999999")
    assert r.returncode == 2 and "argument --rxq: 99999999999 must be at most 1,024" in r.stderr, r.stderr
    one_line_error(run("rxq-plan", "--loads", str(loads), "--pmds", "99999999999"),
                   "'99999999999' in --pmds: core 99999999999 is outside 0..8191")
    one_line_error(run("rxq-plan", "--loads", str(loads), "--pmds", "2:99999"), "node 99999 is outside 0..1023")
    one_line_error(run("rxq-plan", "--loads", str(loads), "--pmds", "2,2"), "core 2 is listed twice")


def test_an_intent_out_of_range_is_refused_by_the_planner_too(r740xd):
    """API callers (host fleet builds Intents) get the flags' checks; 0 is never silently a default."""
    for intent, words in [(Intent(vhost_ring=99999999999), "--vhost-ring 99999999999 is not one of 256, 512, 1024"),
                          (Intent(rxq=0), "--rxq 0 is outside 1..1024"),
                          (Intent(memory_channels=-1), "--memory-channels -1 is outside 1..16"),
                          (Intent(vhost_ports=99999999999), "--vhost-ports 99999999999 is outside 0..1024")]:
        with pytest.raises(ZeroLossError, match=words):
            make_plan(r740xd, dataclasses.replace(intent, mtu=9000, pmd_cores_per_node=4))
    plan = make_plan(r740xd, Intent(mtu=9000, pmd_cores_per_node=4, memory_channels=2, rxq=1))
    assert (plan.memory_channels, plan.rxq) == (2, 1)


def _loads_json(n_ports: int, **extra) -> str:
    doc = {"pmds": {2: 0, 3: 0, 4: 1, 5: 1},
           "ports": [{"name": f"p{i}", "numa": i % 2, "loads": [i % 90 + 1]} for i in range(n_ports)], **extra}
    return json.dumps(doc)


def test_a_loads_file_of_50k_ports_is_read_and_planned_in_seconds():
    text = _loads_json(50_000)
    start = time.perf_counter()
    pmds, rxqs, _ = parse_loads(text, "big.json")
    for algorithm in ("roundrobin", "cycles", "group"):
        a = assign(pmds, rxqs, algorithm)
        assert sum(len(p.queues) for p in a.pmds) == 50_000
    assert time.perf_counter() - start < 20  # minutes before (a quadratic re-sum of every PMD's load)


def test_datapath_ports_up_to_the_datapath_limit_are_linear():
    ports = {f"x{i}": i + 3 for i in range(MAX_PORTS - 3)}
    text = json.dumps({"pmds": [2, 3], "ports": [{"name": "a", "loads": [1], "port_no": 1},
                                                 {"name": "b", "loads": [2], "port_no": 2}],
                       "datapath_ports": ports})
    start = time.perf_counter()
    pmds, rxqs, opts = parse_loads(text, "dp.json")
    order = visit_order(rxqs, pmds, opts["dp_ports"], "plain")
    assert set(order.ports) == {"a", "b"} and time.perf_counter() - start < 15
    with pytest.raises(ZeroLossError, match="65,536 datapath_ports, more than the 65,535"):
        parse_loads(json.dumps({"ports": [{"name": "a", "loads": [1]}],
                                "datapath_ports": {f"x{i}": i + 1 for i in range(MAX_PORTS + 1)}}), "dp.json")


@pytest.mark.parametrize("text, words", [
    ('{"pmds": [2], "ports": [{"name": "a", "loads": [' + ",".join(["1"] * 1_000_000) + "]}]}",
     "port #1 has 1,000,000 loads, more than the 1024 queues a DPDK port has"),
    ("pmds: [2]\nports:\n- name: a\n  loads: [" + ",".join(["1"] * 1_000_000) + "]\n",
     "characters of YAML, more than the 1,048,576 read as YAML"),
    (_loads_json(MAX_PORTS + 1), "65,536 ports, more than the 65,535 a datapath holds"),
    ('{"ports": [{"name": "a", "loads": [1]}], "ports": []}', "key 'ports' appears twice in an object"),
])
def test_a_loads_file_larger_than_a_datapath_is_refused_before_the_work(text, words):
    start = time.perf_counter()
    with pytest.raises(ZeroLossError, match=words.replace("(", r"\(")):
        parse_loads(text, "f")
    assert time.perf_counter() - start < 5  # 78 s and 694 MB before


def test_a_yaml_map_with_many_keys_checks_duplicates_linearly():
    text = "pmds: [2]\nports: [{name: a, loads: [1], port_no: 1}]\ndatapath_ports:\n" + "".join(
        f"  x{i}: {i + 2}\n" for i in range(20_000))
    start = time.perf_counter()
    assert len(parse_loads(text, "f")[2]["dp_ports"]) == 20_001
    assert time.perf_counter() - start < 15
    with pytest.raises(ZeroLossError, match="key 'x5' appears twice"):
        parse_loads(text + "  x5: 9\n", "f")


@pytest.mark.parametrize("usage", ["nan %", "-5 %", "NaN", "12.5 %"])
def test_a_pmd_rxq_show_line_ovs_never_prints_is_named(usage):
    text = ("pmd thread numa_id 0 core_id 2:\n  isolated : false\n"
            "  port: dpdk0             queue-id:  0 (enabled)   pmd usage: 10 %\n"
            f"  port: dpdk1             queue-id:  0 (enabled)   pmd usage: {usage}\n")
    with pytest.raises(ZeroLossError, match=r"show.txt: line 4 'port: dpdk1 .* is not 'port: NAME queue-id"):
        parse_pmd_rxq_show(text, "show.txt")


def test_rxq_plan_refuses_a_nan_usage_instead_of_planning_nothing(tmp_path):
    text = ("pmd thread numa_id 0 core_id 2:\n  isolated : false\n"
            "  port: dpdk0  queue-id:  0 (enabled)  pmd usage: nan %\n")
    one_line_error(run("rxq-plan", "--pmd-rxq-show", "-", stdin=text), "stdin: line 3 'port: dpdk0")


@pytest.mark.parametrize("meminfo", [b"Node 0 MemTotal:       nan kB\n", b"Node 0 MemTotal: -5 kB\n", b"garbage\n",
                                     b"Node 0 MemFree: 1000 kB\n", b""])
def test_a_damaged_node_meminfo_is_refused_not_planned_as_0_gib(tmp_path, meminfo):
    root = tmp_path / "host"
    shutil.copytree(FIXTURES / "single-socket", root, symlinks=True)
    (root / "sys/devices/system/node/node0/meminfo").write_bytes(meminfo)
    one_line_error(run("host", "plan", "--root", str(root), "--format", "summary"), "node0/meminfo")
    with pytest.raises(ZeroLossError, match="node0/meminfo"):
        collect(Root(root))


def test_a_node_without_meminfo_is_not_planned(single):
    unknown = dataclasses.replace(single, nodes=[dataclasses.replace(n, mem_total_kb=0) for n in single.nodes])
    with pytest.raises(ZeroLossError, match="node 0: its memory is unknown"):
        make_plan(unknown, Intent(mtu=9000, pmd_cores_per_node=2))


def test_isolcpus_group_syntax_is_read_as_the_kernel_reads_it():
    inv = Inventory(root="x", cpus=[], nodes=[], nics=[], cmdline="isolcpus=managed_irq,domain,2-35:2/4")
    assert inv.cmdline_cpus("isolcpus") == (2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31, 34, 35)
    # Documentation/admin-guide/kernel-parameters.rst "CPU lists": 0-1023:2/256 ==> 0,1,256,257,512,513,768,769
    assert parse_kernel_list("0-1023:2/256") == (0, 1, 256, 257, 512, 513, 768, 769)
    assert parse_kernel_list("1,4-9:1/3") == (1, 4, 7)
    for bad in ("2-35:2/0", "2-35:5/4", "3:1/2", "2-35:2", "2-35:x/4"):
        with pytest.raises(ValueError):
            parse_kernel_list(bad)


@pytest.mark.parametrize("text, pins", [
    ("0:3 1:2", {0: 3, 1: 2}), ("0=3", {0: 3}), ("0:3,1:7", {0: 3, 1: 7}), ('"0:3"', {0: 3}), ("", {}),
    ("0(3)", {0: 3}), ("0x1:010", {1: 8}), ("0:3,0:4", {0: 4}), (",, 0:3\t1:2,", {0: 3, 1: 2})])
def test_affinity_lists_as_ovs_reads_them(text, pins):
    assert parse_affinity(text) == pins


@pytest.mark.parametrize("text", [" 0 : 3 ", "0:99999999999", "0:-1", "a:1", "0", "08:1", "0:3,1"])
def test_affinity_lists_ovs_refuses(text):
    with pytest.raises(ValueError, match="OVS refuses the whole list"):
        parse_affinity(text)


def _naive_group(pmds: list[Pmd], rxqs: list[Rxq]) -> dict:
    """The group algorithm's placement by a full scan per queue (what assign's heap must match)."""
    per: dict[int, list] = {p.core: [0.0, 0] for p in pmds}
    out = {}
    for q in sorted(rxqs, key=lambda q: (-q.load, q.port_no, q.queue)):
        best = min(sorted(per), key=lambda c: (per[c][0], c) if q.load else (per[c][1], c))
        per[best][0] += q.load
        per[best][1] += 1
        out[(q.port, q.queue)] = best
    return out


@given(st.lists(st.sampled_from([0.0, 0.0, 1.0, 5.0, 5.0, 30.0, 70.5]), min_size=1, max_size=40),
       st.integers(1, 6))
def test_group_heap_matches_a_full_scan(loads, n_pmds):
    pmds = [Pmd(c, 0) for c in range(2, 2 + n_pmds)]
    rxqs = [Rxq(f"p{i % 3}", i, 0, load, port_no=i % 3) for i, load in enumerate(loads)]
    assert assign(pmds, rxqs, "group").core_of() == _naive_group(pmds, rxqs)


def test_numa_nodes_sharing_a_bucket_show_every_start_whose_placement_differs(tmp_path):
    """sse42: nodes 1 and 2 share a bucket; OVS's poll-thread cmap is seeded at each start (lib/cmap.c)."""
    assert shared_bucket([1, 2], "sse42") and numa_visit_orders([1, 2], "sse42") == [(1, 2), (2, 1)]
    loads = tmp_path / "numa.yaml"
    loads.write_text("pmds: {2: 1, 3: 2}\nports:\n  - {name: a, numa: 0, loads: [30, 20, 10], port_no: 1}\n"
                     "  - {name: b, numa: 1, loads: [5], port_no: 2}\n")
    r = run("rxq-plan", "--loads", str(loads), "--hash-build", "sse42")
    assert r.returncode == 0, r.stderr
    assert "random per start: 2 orders are possible (1, 2; 2, 1)" in r.stdout
    assert "after a start that walks the NUMA nodes as 2, 1, OVS places them so:" in r.stdout
    doc = json.loads(run("rxq-plan", "--loads", str(loads), "--hash-build", "sse42", "--json").stdout)
    (other,) = doc["other_starts"]
    assert other["numas"] == [2, 1]
    cores = {q["port"] + str(q["queue"]): p["core"] for p in other["assignment"]["pmds"] for q in p["queues"]}
    assert cores == {"a0": 3, "a1": 2, "a2": 3, "b0": 2}
    plain = run("rxq-plan", "--loads", str(loads), "--hash-build", "plain").stdout
    assert "after a start" not in plain  # nodes 1 and 2 do not share a bucket there
