"""Open vSwitch's integer hash and hash-map (hmap) iteration order: the order in which OVS 3.1 visits datapath
ports and NUMA nodes when it assigns RX queues to PMDs. Pure; re-implemented from OVS branch-3.1.

Facts taken from OVS (the code here is ours, not OVS's):
- lib/dpif-netdev.c: dp->ports is an hmap keyed by hash_port_no(port_no) = hash_int(port_no, 0);
  sched_numa_list_schedule() walks it with HMAP_FOR_EACH (skipping non-PMD ports) and each port's queues by
  queue id; the scheduler's NUMA list is an hmap keyed by hash_int(numa_id, 0), walked with hmap_next() when
  a queue must go to another node. Port 0 (the datapath's own 'ovs-netdev' port) is added first, when the
  datapath is created; new ports get the lowest free number from 1 (choose_port).
- lib/hash.h: two builds of hash_int(x, basis) on x86-64. 'plain' (murmur3 steps: mhash_add, mhash_finish)
  and 'sse42', compiled when __SSE4_2__ is defined (-msse4.2, -march=x86-64-v2 or newer, -march=native on a
  recent CPU): CRC32C instructions and a multiply. aarch64 builds with the CRC extension compute the same
  values as 'sse42' (lib/hash-aarch64.h).
- include/openvswitch/hmap.h, lib/hmap.c: buckets = mask + 1, a node goes to bucket hash & mask at the head
  of its chain; after an insert, when n / 2 > mask the map grows to calc_mask(n) buckets, re-inserting the
  old chains bucket by bucket, each node again at the head (which reverses their order); removals never
  shrink it. HMAP_FOR_EACH walks buckets 0..mask, each chain from its head.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

BUILDS = ("plain", "sse42")
_M32 = 0xFFFFFFFF
_CRC32C_POLY = 0x82F63B78  # Castagnoli, bit-reflected


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_CRC32C_POLY if crc & 1 else 0)
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c_update(crc: int, data: bytes) -> int:
    """CRC32C of data continuing from crc, without pre/post inversion: what SSE4.2's crc32 instruction does."""
    for b in data:
        crc = (crc >> 8) ^ _CRC_TABLE[(crc ^ b) & 0xFF]
    return crc


def crc32c(data: bytes) -> int:
    """The standard CRC-32C (initial value and final XOR 0xFFFFFFFF); crc32c(b'123456789') == 0xE3069283."""
    return crc32c_update(_M32, data) ^ _M32


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M32


def mhash_add(hash_: int, data: int) -> int:
    """One murmur3 block step (lib/hash.h mhash_add)."""
    if data:  # OVS skips a zero word; murmur3's arithmetic gives the same result
        data = (data * 0xCC9E2D51) & _M32
        data = (_rot(data, 15) * 0x1B873593) & _M32
        hash_ ^= data
    return (_rot(hash_, 13) * 5 + 0xE6546B64) & _M32


def mhash_finish(hash_: int) -> int:
    """murmur3's fmix32 (lib/hash.h mhash_finish)."""
    hash_ ^= hash_ >> 16
    hash_ = (hash_ * 0x85EBCA6B) & _M32
    hash_ ^= hash_ >> 13
    hash_ = (hash_ * 0xC2B2AE35) & _M32
    return hash_ ^ (hash_ >> 16)


def hash_int(x: int, basis: int = 0, build: str = "plain") -> int:
    """OVS's hash_int(x, basis) = hash_2words(x, basis) for the given build."""
    x &= _M32
    basis &= _M32
    if build == "plain":
        # hash_2words: hash_finish(hash_add(hash_add(x, 0), basis), 8), hash_finish = mhash_finish(h ^ final)
        return mhash_finish(mhash_add(mhash_add(x, 0), basis) ^ 8)
    if build == "sse42":
        # hash_2words -> hash_uint64(basis << 32 | x) = hash_finish(crc32_u64(0, word), 23), and hash_finish
        # = crc32_u64(h, final) * 0x805204f3, whose low 32 bits v give v ^ (v >> 16)
        crc = crc32c_update(0, ((basis << 32) | x).to_bytes(8, "little"))
        crc = crc32c_update(crc, (23).to_bytes(8, "little"))
        v = (crc * 0x805204F3) & _M32
        return v ^ (v >> 16)
    raise ValueError(f"unknown OVS hash build '{build}' (one of {', '.join(BUILDS)})")


def calc_mask(capacity: int) -> int:
    """lib/hmap.c calc_mask(): the bucket mask for a map expected to hold capacity nodes."""
    mask = capacity // 2
    for shift in (1, 2, 4, 8, 16, 32):
        mask |= mask >> shift
    return mask | ((mask & 1) << 1)  # never 2 buckets: 1 or at least 4


def hmap_mask(n: int) -> int:
    """The bucket mask of an hmap after n hmap_insert() calls (and no hmap_reserve or hmap_shrink)."""
    mask = 0
    for i in range(1, n + 1):
        if i // 2 > mask:
            mask = max(mask, calc_mask(i))
    return mask


def shared_bucket(keys: Iterable[int], build: str, n: int | None = None) -> bool:
    """Whether two of these keys (hashed with hash_int(key, 0)) share a bucket of a map of n nodes (default: just
    these keys): then their visit order depends on the order they were inserted in, not only on their hashes."""
    keys = set(keys)
    mask = hmap_mask(len(keys) if n is None else n)
    return len({hash_int(k, 0, build) & mask for k in keys}) < len(keys)


def hmap_order(hashes: Sequence[int]) -> list[int]:
    """Indexes of nodes inserted with hmap_insert() in this order, in the order HMAP_FOR_EACH visits them."""
    mask = 0
    buckets: list[list[int]] = [[]]  # each chain head first
    for n, h in enumerate(hashes, start=1):
        buckets[h & mask].insert(0, n - 1)
        if n // 2 > mask and calc_mask(n) > mask:  # hmap_insert -> hmap_expand -> resize
            mask = calc_mask(n)
            grown: list[list[int]] = [[] for _ in range(mask + 1)]
            for chain in buckets:
                for node in chain:
                    grown[hashes[node] & mask].insert(0, node)
            buckets = grown
    return [node for chain in buckets for node in chain]


def port_visit_order(dp_ports: dict[str, int], build: str, insertion: Iterable[int] | None = None) -> list[str]:
    """Port names in the order sched_numa_list_schedule() walks dp->ports (HMAP_FOR_EACH).

    dp_ports: every port of the datapath (PMD or not: bridges' own ports count, they size the map) -> its odp
    port number; names sharing a number (tunnel ports share their vport) come out together. Port 0, the
    datapath's own port, is inserted first when missing. insertion: the port numbers in the order they were
    added; by default ascending, which is what a datapath built from scratch (ovs-vswitchd start) gives as
    numbers are handed out lowest-free first. Ports deleted and added since change both."""
    numbers = sorted(set(dp_ports.values()) | {0}) if insertion is None else list(dict.fromkeys(insertion))
    if set(numbers) != set(dp_ports.values()) | {0}:
        raise ValueError("insertion must give every port number of dp_ports (and 0)")
    by_number: dict[int, list[str]] = {}
    for name, no in sorted(dp_ports.items()):
        by_number.setdefault(no, []).append(name)
    order = hmap_order([hash_int(no, 0, build) for no in numbers])
    return [name for i in order for name in by_number.get(numbers[i], [])]


def numa_visit_order(numa_ids: Iterable[int], build: str) -> list[int]:
    """NUMA nodes in the order the scheduler's numa list (hmap keyed by hash_int(numa_id, 0)) is walked.

    The list is filled in the order PMD threads come out of dp->poll_threads (a cmap); that order is taken as
    ascending node id here. It only matters for nodes whose hashes share a bucket: see numa_visit_orders."""
    ids = sorted(set(numa_ids))
    return [ids[i] for i in hmap_order([hash_int(n, 0, build) for n in ids])]


def numa_visit_orders(numa_ids: Iterable[int], build: str, limit: int = 7) -> list[tuple[int, ...]]:
    """Every order the scheduler's numa list may be walked in, the ascending-insertion one first.

    OVS inserts the nodes in the order its poll-thread cmap yields the PMDs, and a cmap rehashes its keys with a
    basis drawn by random_uint32() when it is created (lib/cmap.c): that order, and so the walk order of nodes
    sharing a bucket, may change at each start of ovs-vswitchd. Up to `limit` nodes every insertion order is
    tried; beyond, ascending and descending only."""
    ids = sorted(set(numa_ids))
    inserts = itertools.permutations(ids) if len(ids) <= limit else iter([tuple(ids), tuple(reversed(ids))])
    orders: dict[tuple[int, ...], None] = {}
    for ins in inserts:
        orders.setdefault(tuple(ins[i] for i in hmap_order([hash_int(n, 0, build) for n in ins])), None)
    return list(orders)
