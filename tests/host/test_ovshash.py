"""OVS's hash functions and hash-map iteration order (ovshash.py), and the visit order rxq-plan derives from them
(rxqorder.py): known answers, an independent brute model of the hmap, dpif/show parsing and hash-build detection."""

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.ovshash import (
    BUILDS,
    calc_mask,
    crc32c,
    hash_int,
    hmap_mask,
    hmap_order,
    numa_visit_order,
    port_visit_order,
    shared_bucket,
)
from zeroloss.host.rxq import Pmd, Rxq, VisitOrder, assign, visit
from zeroloss.host.rxqinput import parse_loads
from zeroloss.host.rxqorder import build_from_cflags, detect_build, number_ports, parse_dpif_show, visit_order

from .test_host_cli import one_line_error, run


def test_crc32c_check_values():
    # the CRC catalogue's check value, and RFC 3720 (iSCSI) B.4's 32-byte patterns (bytes shown LSB first there)
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C


def murmur3_32(data: bytes, seed: int) -> int:
    """MurmurHash3_x86_32 written from its definition, independently of ovshash.py."""
    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    def fmix(h):
        h ^= h >> 16
        h = h * 0x85EBCA6B & 0xFFFFFFFF
        h ^= h >> 13
        h = h * 0xC2B2AE35 & 0xFFFFFFFF
        return h ^ (h >> 16)

    c1, c2, h = 0xCC9E2D51, 0x1B873593, seed
    nblocks = len(data) // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        h ^= rotl(k * c1 & 0xFFFFFFFF, 15) * c2 & 0xFFFFFFFF
        h = (rotl(h, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = data[4 * nblocks:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= rotl(k * c1 & 0xFFFFFFFF, 15) * c2 & 0xFFFFFFFF
    return fmix(h ^ len(data))


def test_murmur3_reference_matches_published_vectors():
    for data, seed, expected in [(b"", 0, 0), (b"", 1, 0x514E28B7), (b"", 0xFFFFFFFF, 0x81F16F39),
                                 (b"\0\0\0\0", 0, 0x2362F9DE), (b"\x21\x43\x65\x87", 0, 0xF55B516B),
                                 (b"\x21\x43\x65", 0, 0x7E4A8634), (b"\x21", 0, 0x72661CF4),
                                 (b"aaaa", 0x9747B28C, 0x5A97808A), (b"Hello, world!", 0x9747B28C, 0x24884CBA)]:
        assert murmur3_32(data, seed) == expected, (data, seed)


@given(st.integers(0, 2**32 - 1))
def test_plain_hash_int_is_murmur3_of_two_zero_words_seeded_with_x(x):
    # lib/hash.h: hash_int(x, 0) = hash_finish(hash_add(hash_add(x, 0), 0), 8): seed x, two zero words, length 8
    assert hash_int(x, 0, "plain") == murmur3_32(bytes(8), x)


def crc32c_bitwise(crc: int, data: bytes) -> int:
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_sse42_hash_int_follows_hash_h(x, basis):
    # hash_uint64(basis << 32 | x): crc32_u64(0, word), crc32_u64(.., 23), * 0x805204f3, low 32 bits v ^ v >> 16
    crc = crc32c_bitwise(crc32c_bitwise(0, (basis << 32 | x).to_bytes(8, "little")), (23).to_bytes(8, "little"))
    v = crc * 0x805204F3 & 0xFFFFFFFF
    assert hash_int(x, basis, "sse42") == v ^ (v >> 16)


# OVS 3.1's own hash_int(x, basis): a harness including lib/hash.h (branch-3.1), gcc 12 -O2 (plain) and
# -O2 -msse4.2 (sse42, checked to contain crc32 instructions); keys: (x, basis)
OVS_HASH_INT = {
    "plain": {(0, 0): 0x63852AFC, (1, 0): 0xEA95647D, (2, 0): 0xA1CBA8CE, (4, 0): 0xC9F3B13D, (8, 0): 0xFEA88401,
              (100, 0): 0xC458B0B3, (1000, 0): 0x56E8EAA4, (4095, 0): 0x12FD7DD4, (7, 12345): 0xBF98428D,
              (0xDEADBEEF, 0xFFFFFFFF): 0x68BCC3B1},
    "sse42": {(0, 0): 0x933B582B, (1, 0): 0xFC3B8931, (2, 0): 0xF94E4329, (4, 0): 0x5D10FF71, (8, 0): 0x43CC6799,
              (100, 0): 0xEF2D15D6, (1000, 0): 0xE387CC6D, (4095, 0): 0x73D32C56, (7, 12345): 0x6C87ED42,
              (0xDEADBEEF, 0xFFFFFFFF): 0x699451A9},
}


@pytest.mark.parametrize("build", BUILDS)
def test_hash_int_known_answers_from_ovs(build):
    for (x, basis), expected in OVS_HASH_INT[build].items():
        assert hash_int(x, basis, build) == expected, (build, x, basis)


def test_calc_mask_and_growth():
    assert [calc_mask(n) for n in (0, 1, 2, 3, 4, 7, 8, 16, 17, 100)] == [0, 0, 3, 3, 3, 3, 7, 15, 15, 63]
    # the map grows when n / 2 > mask: 1 bucket, 4 from the 2nd node, 8 from the 8th, 16 from the 16th
    assert [hmap_mask(n) for n in (0, 1, 2, 7, 8, 15, 16, 32)] == [0, 0, 3, 3, 7, 7, 15, 31]


def brute_hmap_order(hashes):
    """A deliberately simple second model: one list of all nodes, each insert at its front, each growth reverses
    it (a resize re-inserts every chain's nodes at the heads of the new chains); the final buckets then sort it."""
    nodes, mask = [], 0
    for n, _ in enumerate(hashes, start=1):
        nodes.insert(0, n - 1)
        if n // 2 > mask:
            mask = max(3, (1 << (n // 2).bit_length()) - 1)
            nodes.reverse()
    return sorted(nodes, key=lambda i: hashes[i] & mask)  # stable: chain order within a bucket


@given(st.lists(st.integers(0, 2**32 - 1), max_size=80))
def test_hmap_order_matches_the_brute_model(hashes):
    assert hmap_order(hashes) == brute_hmap_order(hashes)


def test_reverse_insertion_is_not_the_chain_order():
    # two keys in one bucket: the second is inserted at the head, then the growth to 4 buckets reverses the chain
    assert hmap_order([0, 4]) == [0, 1] and hmap_order([0, 4, 8]) == [2, 0, 1]


# OVS 3.1's HMAP_FOR_EACH order over hash_int(key, 0) for keys inserted in this order (the same harness, linking
# lib/hmap.c; 2,000 random key lists of up to 70 keys per build agreed too)
OVS_HMAP_ORDER = {
    "plain": {(0, 1, 2, 3): (0, 1, 2, 3), tuple(range(10)): (8, 9, 5, 0, 1, 4, 6, 7, 2, 3),
              tuple(range(17)): (8, 10, 14, 11, 13, 16, 5, 9, 12, 0, 15, 7, 6, 4, 1, 2, 3),
              (0, 100, 1, 2, 3, 4): (0, 4, 1, 2, 3, 100)},
    "sse42": {(0, 1, 2, 3): (2, 1, 3, 0), tuple(range(10)): (8, 1, 2, 4, 9, 7, 0, 3, 6, 5),
              tuple(range(17)): (4, 1, 9, 6, 14, 5, 16, 11, 2, 8, 13, 7, 3, 0, 12, 15, 10),
              (0, 100, 1, 2, 3, 4): (4, 2, 1, 100, 3, 0)},
}


@pytest.mark.parametrize("build", BUILDS)
def test_hmap_order_known_answers_from_ovs(build):
    for keys, expected in OVS_HMAP_ORDER[build].items():
        assert [keys[i] for i in hmap_order([hash_int(k, 0, build) for k in keys])] == list(expected), (build, keys)


def test_port_and_numa_visit_order():
    ports = {"br0": 1, "dpdk0": 2, "dpdk1": 3, "vhu0": 4, "vxlan0": 5, "vxlan1": 5}
    for build in BUILDS:
        numbers = [0, 1, 2, 3, 4, 5]
        expected = [numbers[i] for i in hmap_order([hash_int(n, 0, build) for n in numbers])]
        got = port_visit_order(ports, build)
        assert list(dict.fromkeys(ports[n] for n in got)) == [n for n in expected if n]  # port 0 added, dropped
        assert got.index("vxlan1") == got.index("vxlan0") + 1  # one datapath port, two names
    assert numa_visit_order([1, 0], "plain") == [0, 1] and numa_visit_order([0, 1], "sse42") == [1, 0]
    with pytest.raises(ValueError, match="every port number"):
        port_visit_order({"a": 1}, "plain", insertion=[1])
    with pytest.raises(ValueError, match="unknown OVS hash build"):
        hash_int(1, 0, "avx")


def test_shared_bucket():
    assert not shared_bucket([0, 1], "plain") and not shared_bucket([0, 1, 2, 3], "plain")
    assert shared_bucket([0, 1, 2], "sse42")  # nodes 1 and 2 land in one of the 4 buckets


def random_ports(rng):
    numbers = rng.sample(range(1, 300), rng.randint(1, 40))
    pmd = rng.sample(numbers, rng.randint(1, len(numbers)))
    ports = {f"p{n}": n for n in numbers}
    rxqs = [Rxq(f"p{n}", q, 0, rng.choice([0, 10, 30])) for n in pmd for q in range(rng.randint(1, 4))]
    rng.shuffle(rxqs)  # a loads file may list ports and queues in any order
    return ports, rxqs


def test_visit_order_differential():
    rng = random.Random(17)
    for _ in range(300):
        ports, rxqs = random_ports(rng)
        build = rng.choice(BUILDS)
        numbered = number_ports(rxqs, ports)
        order = visit_order(numbered, [Pmd(1, 0)], ports, build)
        numbers = sorted({0, *ports.values()})
        brute = [numbers[i] for i in brute_hmap_order([hash_int(n, 0, build) for n in numbers])]
        expected = sorted(((q.port, q.queue) for q in rxqs), key=lambda pq: (brute.index(ports[pq[0]]), pq[1]))
        assert [(q.port, q.queue) for q in visit(numbered, order)] == expected
        # roundrobin hands the queues out in exactly that order, core after core
        pmds = [Pmd(c, 0) for c in range(1, rng.randint(2, 5))]
        a = assign(pmds, numbered, "roundrobin", order=order)
        assert [a.core_of()[pq] for pq in expected] == [1 + i % len(pmds) for i in range(len(expected))]


def test_cross_numa_walk_follows_the_numa_hash_order():
    rxqs = [Rxq("p", i, 2, load) for i, load in enumerate([40, 30, 20, 10])]
    pmds = [Pmd(1, 0), Pmd(5, 1)]
    for build, cores in (("plain", [1, 5, 1, 5]), ("sse42", [5, 1, 5, 1])):
        a = assign(pmds, rxqs, "cycles", order=visit_order(rxqs, pmds, None, build))
        assert [a.core_of()[("p", i)] for i in range(4)] == cores


def test_cycles_tie_break_uses_the_datapath_port_number():
    rxqs = number_ports([Rxq("a", 0, 0, 50, port_no=0), Rxq("b", 0, 0, 50, port_no=1)], {"a": 7, "b": 3})
    a = assign([Pmd(1, 0), Pmd(2, 0)], rxqs, "cycles")
    assert a.core_of() == {("b", 0): 1, ("a", 0): 2}


DPIF_SHOW = """netdev@ovs-netdev: hit:1034 missed:7
  br-int:
    br-int 65534/1: (tap)
    dpdk0 1/2: (dpdk: configured_rx_queues=2, configured_rxq_descriptors=2048, mtu=1500, numa_id=0)
    patch-ex 2/none: (patch: peer=patch-int)
    vhu0 3/4: (dpdkvhostuserclient: configured_rx_queues=1, mode=client, socket=/run/vhu0)
  br-ex:
    br-ex 65534/3: (tap)
system@ovs-system: hit:0 missed:0
  br-k:
    br-k 65534/1: (internal)
"""


def test_parse_dpif_show():
    assert parse_dpif_show(DPIF_SHOW) == {"br-int": 1, "dpdk0": 2, "vhu0": 4, "br-ex": 3}
    with pytest.raises(ZeroLossError, match="no 'TYPE@NAME"):
        parse_dpif_show("Error: unknown command")
    with pytest.raises(ZeroLossError, match="no port of a userspace"):
        parse_dpif_show("system@ovs-system: hit:0 missed:0\n  br0:\n    br0 65534/0: (internal)\n")


def test_visit_order_notes():
    rxqs = [Rxq("dpdk0", 0, 0), Rxq("vhu0", 0, 0)]
    plain = visit_order(rxqs, [Pmd(1, 0)], None, "plain", "not read from a live OVS, plain assumed", True)
    assert plain.ports is None and "ports are visited in input order" in plain.notes[0]
    assert len(plain.notes) == 1  # one node, ports not modelled: the build changes nothing, no note about it
    known = visit_order(rxqs, [Pmd(1, 0), Pmd(2, 1)], parse_dpif_show(DPIF_SHOW), "plain", "assumed", True)
    assert known.ports == tuple(n for n in port_visit_order(parse_dpif_show(DPIF_SHOW), "plain") if n in
                                ("dpdk0", "vhu0"))
    assert known.numas == (0, 1) and "OVS hash build: assumed" in known.notes[0]
    partial = visit_order(rxqs, [Pmd(1, 0)], {"dpdk0": 2, "vhu0": 4}, "plain", complete=False)
    assert "other ports" in partial.notes[0]
    assert VisitOrder() == VisitOrder(None, None, ())


def test_build_from_cflags():
    assert build_from_cflags("-O2 -g -march=x86-64-v2 -mtune=generic") == "sse42"
    assert build_from_cflags("-O2 -march=x86-64 -mtune=generic") == "plain"
    assert build_from_cflags("-O2 -msse4.2 -mpopcnt") == "sse42"
    assert build_from_cflags("-march=haswell -mno-sse4.2") == "plain"
    assert build_from_cflags("-O2 -march=native") is None
    assert build_from_cflags("-O2 -g") == "plain"


class FakeRun:
    def __init__(self, outputs):
        self.outputs, self.calls = outputs, []

    def __call__(self, argv, **_):
        self.calls.append(argv)
        out = self.outputs.get(argv[0])
        return type("R", (), {"returncode": 0 if out is not None else 1, "stdout": out or "", "stderr": ""})()


def test_detect_build(tmp_path):
    cpu = tmp_path / "cpuinfo"
    cpu.write_text("flags\t\t: fpu sse4_1 sse4_2 avx\n")
    which = {"ovs-vswitchd": "/usr/sbin/ovs-vswitchd", "rpm": "/usr/bin/rpm", "dpkg": "/usr/bin/dpkg"}.get
    rhel9 = FakeRun({"rpm": "openvswitch3.1-3.1.0 -O2 -flto=auto -march=x86-64-v2 -mtune=generic\n"})
    assert detect_build(rhel9, which, lambda: "x86_64", cpu)[:1] == ("sse42",)
    assert rhel9.calls[0][:2] == ["rpm", "-q"] and rhel9.calls[0][-1] == "/usr/sbin/ovs-vswitchd"
    rhel8 = detect_build(FakeRun({"rpm": "openvswitch2.17-2.17.0 -O2 -march=x86-64\n"}), which, lambda: "x86_64", cpu)
    assert rhel8[0] == "plain" and rhel8[2] and "spec file" in rhel8[1]
    debian = detect_build(FakeRun({"dpkg": "openvswitch-switch: /usr/sbin/ovs-vswitchd"}), which, lambda: "x86_64",
                          cpu)
    assert debian[0] == "plain" and not debian[2] and "Debian" in debian[1]
    assert detect_build(FakeRun({}), lambda _: None, lambda: "x86_64", cpu)[2]  # nothing found: assumed
    assert detect_build(FakeRun({}), which, lambda: "aarch64", cpu)[2]
    cpu.write_text("flags\t\t: fpu sse4_1\n")
    build, _, assumed = detect_build(FakeRun({}), which, lambda: "x86_64", cpu)
    assert (build, assumed) == ("plain", False)  # without SSE4.2 the CRC32C build could not run


def test_loads_file_port_numbers():
    text = ("pmds: [1, 2]\ndatapath_ports: {br0: 1}\nports:\n  - {name: b, port_no: 3, loads: {1: 5, 0: 5}}\n"
            "  - {name: a, port_no: 2, loads: [5]}\n")
    _, rxqs, opts = parse_loads(text)
    assert opts["dp_ports"] == {"a": 2, "b": 3, "br0": 1} and opts["dp_ports_complete"]
    assert [(q.port, q.queue) for q in visit(rxqs)] == [("b", 0), ("b", 1), ("a", 0)]  # queues by id
    for bad, fault in [("[{name: a, port_no: 2, loads: [1]}, {name: b, loads: [1]}]", "given for 1 of 2 ports"),
                       ("[{name: a, port_no: x, loads: [1]}]", "port_no 'x' is not a whole number"),
                       ("[{name: a, port_no: 2, loads: [1]}, {name: b, port_no: 2, loads: [1]}]", "same port_no")]:
        with pytest.raises(ZeroLossError, match=fault):
            parse_loads(f"pmds: [1]\nports: {bad}\n")


def test_rxq_plan_visit_order_cli(tmp_path):
    loads = tmp_path / "loads.yaml"
    loads.write_text("pmds: {1: 0, 2: 0}\nalgorithm: roundrobin\nports:\n  - {name: dpdk0, loads: [10, 10]}\n"
                     "  - {name: vhu0, loads: [10]}\n")
    dpif = tmp_path / "dpif-show.txt"
    dpif.write_text(DPIF_SHOW)
    r = run("rxq-plan", "--loads", str(loads))
    assert r.returncode == 0 and "caveat: no datapath port number for dpdk0, vhu0" in r.stdout
    for build in BUILDS:
        r = run("rxq-plan", "--loads", str(loads), "--dpif-show", str(dpif), "--hash-build", build, "--json")
        doc = json.loads(r.stdout)["visit_order"]
        order = [n for n in port_visit_order(parse_dpif_show(DPIF_SHOW), build) if n in ("dpdk0", "vhu0")]
        assert doc["ports"] == order and doc["hash_build"] == build
        assert not any("hash build" in a for a in doc["assumptions"])
        assert doc["hash_build_source"] == "given with --hash-build"
    r = run("rxq-plan", "--loads", str(loads), "--dpif-show", str(dpif))
    assert "OVS visit order (plain hash: not read from a live OVS, plain assumed): ports vhu0, dpdk0" in r.stdout
    assert "caveat" not in r.stdout  # both builds put vhu0 (4) before dpdk0 (2): the build does not matter here
    loads.write_text(loads.read_text().replace("{1: 0, 2: 0}", "{1: 0, 2: 1}"))
    r = run("rxq-plan", "--loads", str(loads), "--dpif-show", str(dpif))  # 2 nodes: plain 0, 1; sse42 1, 0
    assert "NUMA nodes 0, 1" in r.stdout and "caveat: OVS hash build: not read from a live OVS" in r.stdout
    bad = run("rxq-plan", "--loads", str(loads), "--hash-build", "avx")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    one_line_error(run("rxq-plan", "--loads", str(loads), "--dpif-show", str(loads)), "no 'TYPE@NAME")


@settings(max_examples=50)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=8, unique=True), st.sampled_from(BUILDS))
def test_numa_visit_order_is_a_permutation(nodes, build):
    assert sorted(numa_visit_order(nodes, build)) == sorted(nodes)
