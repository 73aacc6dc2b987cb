"""Socket memory: TripleO's formula and its per-port variant, and OVS's mempool model, on the references'
worked examples."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.host import memory as mem


def test_tripleo_single_mtus():
    # BRIEF §6: MTU 1500 -> 2048 MB, MTU 9000 -> 3072 MB; a node without DPDK ports gets 1024 MB
    assert mem.tripleo_socket_mem([1500]) == 2048
    assert mem.tripleo_socket_mem([9000]) == 3072
    assert mem.tripleo_socket_mem([]) == 1024


def test_red_hat_guide_example_mtu_9000_and_2000():
    # Red Hat OSP NFV guide: dpdk0 MTU 9000 and dpdk1 MTU 2000 on one node: 2625634304 + 746586112 B + 512 MB
    # = 3728 MB -> 4096 MB
    assert mem.tripleo_mtu_bytes(9000) == 2_625_634_304
    assert mem.tripleo_mtu_bytes(2000) == 746_586_112
    assert mem.tripleo_socket_mem([9000, 2000]) == 4096


def test_tripleo_unit_test_cases():
    # tripleo-common's own cases: two ports at MTU 4096 on one node count once; MTU 1200 rounds up to 2048
    assert mem.tripleo_socket_mem([4096, 4096]) == 2048
    assert mem.tripleo_socket_mem([1200]) == 2048


def test_whitepaper_per_port_example():
    # Dell/Intel whitepaper, DPDK socket memory: four 9000-MTU ports: 4 x 2,625,634,304 + 536,870,912 =
    # 11,039,408,128 B = 10,528 MB -> 11,264 MB per node
    assert 4 * mem.tripleo_mtu_bytes(9000) + 512 * mem.MiB == 11_039_408_128
    assert 11_039_408_128 // mem.MiB == 10_528
    assert mem.tripleo_socket_mem([9000] * 4, per_port=True) == 11264
    assert mem.tripleo_socket_mem([9000] * 4) == 3072  # the distinct-MTU formula counts the MTU once


@pytest.mark.parametrize("mtu, buf, mbuf", [(1500, 2176, 3008), (1800, 2176, 3008), (6000, 6272, 7104),
                                            (9000, 9344, 10176)])
def test_ovs_mbuf_sizes_match_memory_rst(mtu, buf, mbuf):
    # OVS Documentation/topics/dpdk/memory.rst: mbuf size 3008 B at MTU 1500 and 1800, 7104 at 6000, 10176 at 9000
    assert mem.ovs_buf_size(mtu) == buf
    assert mem.ovs_mbuf_bytes(mtu) == mbuf


def test_ovs_shared_mbuf_count_follows_the_rounded_mtu():
    assert mem.ovs_shared_mbufs(1500) == 262144
    assert mem.ovs_shared_mbufs(999) == 262144  # buffer 2176 B holds MTU 2158 >= 1500
    assert mem.ovs_shared_mbufs(998) == 16384  # buffer 1152 B holds MTU 1134
    assert 262144 * mem.ovs_mbuf_bytes(1500) == 788_529_152  # memory.rst example 1: "788 MB"
    assert 262144 * mem.ovs_mbuf_bytes(9000) == 2_667_577_344  # example 4: "2667 MB"


def test_ovs_per_port_mbufs():
    # memory.rst examples 1 and 2 (2048 descriptors, n_txq = PMDs + 1)
    assert mem.ovs_per_port_mbufs(1, 2048, 2, 2048) == 22560
    assert mem.ovs_per_port_mbufs(1, 2048, 3, 2048) == 24608
    # example 3 (2 rxq, 2 PMD): the doc prints 26656 with 1 x 32; the code takes min(RTE_MAX_LCORE, 2 rxq) x 32
    assert mem.ovs_per_port_mbufs(2, 2048, 3, 2048) == 26688


def test_pools_shared_and_per_port():
    ports = [mem.PortMem("a", 0, 1500), mem.PortMem("b", 0, 1800), mem.PortMem("c", 0, 9000),
             mem.PortMem("d", 1, 1500, n_rxq=2, n_txq=3)]
    shared = mem.ovs_pools(ports)
    assert [(p.node, p.buf_size, p.ports) for p in shared] == [(0, 2176, ("a", "b")), (0, 9344, ("c",)),
                                                                (1, 2176, ("d",))]
    by_node = mem.pools_mib_by_node(shared)
    assert by_node[0] == pytest.approx((262144 * 3008 + 262144 * 10176) / mem.MiB)
    per_port = mem.ovs_pools(ports, per_port=True)
    assert len(per_port) == 4 and per_port[3].mbufs == 2 * 2048 + 3 * 2048 + 2 * 32 + 16384


@given(st.lists(st.integers(mem.MIN_MTU, mem.MAX_MTU), max_size=8))
def test_tripleo_is_whole_gigabytes_and_covers_its_terms(mtus):
    for per_port in (False, True):
        mb = mem.tripleo_socket_mem(mtus, per_port)
        terms = mtus if per_port else set(mtus)
        assert mb % 1024 == 0
        assert mb * mem.MiB >= sum(mem.tripleo_mtu_bytes(m) for m in terms) + (512 * mem.MiB if mtus else 0)
    assert mem.tripleo_socket_mem(mtus, per_port=True) >= mem.tripleo_socket_mem(mtus)
