"""The run's one loop goes over targets: which target measures which frame sizes, and what each says before it
starts anything (streams, lanes, cores, how zlgen's ceiling is measured). No process is started here."""

from __future__ import annotations

from zeroloss.core.config import RunConfig
from zeroloss.targets.kinds.external import ExternalTarget
from zeroloss.targets.kinds.ovs import OvsTarget
from zeroloss.targets.kinds.testpmd import P2pTarget
from zeroloss.targets.registry import Needs, targets


def made(cfg: RunConfig, tmp_path) -> list[tuple[list[int], object]]:
    return [(frames, make(frames)) for frames, make in targets(cfg, Needs())]


def test_p2p_sizes_go_to_one_target_per_wire_in_the_order_given(tmp_path):
    out = made(RunConfig(frame_sizes=[64, 1518, 9000, 128]), tmp_path)
    assert [(f, type(t).__name__, t.link) for f, t in out] == [
        ([64, 1518], "P2pTarget", "memif"), ([9000], "P2pTarget", "vhost"), ([128], "P2pTarget", "memif")]
    memif = out[0][1]
    assert memif.loopback().link == "memif" and memif.loopback().max_frame == 1518
    assert memif.cores() == {0, 1} and memif.refused_is_loss


def test_bench_streams_split_each_direction_over_its_lanes(tmp_path):
    ((_, t),) = made(RunConfig(topology="pvp", vnf="process", dut_rxq=2, flows=1024, frame_sizes=[64]), tmp_path)
    assert isinstance(t, OvsTarget) and t.lanes == 2 and t.link == "pvp"
    streams = t.streams(64, 1000.0)
    assert [(s.port, s.queue) for s in streams] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(s.rate_pps == 500.0 and s.flows == 512 and s.to_wire()["frame_size"] == 64 for s in streams)
    assert t.loopback().link == "vhost"


def test_an_external_dut_has_no_loopback_and_its_top_is_the_users(tmp_path):
    cfg = RunConfig(dut="external", ports=["net_null0", "net_null1"], max_rate_pps=200_000, frame_sizes=[64, 1518])
    ((frames, t),) = made(cfg, tmp_path)
    assert isinstance(t, ExternalTarget) and frames == [64, 1518]
    assert t.loopback() is None and not t.refused_is_loss and t.cores() == set()
    assert t.top(64, 14_880_952.0) == 200_000


def test_only_the_sizes_left_are_given_to_a_target(tmp_path):
    cfg = RunConfig(frame_sizes=[64, 128])
    ((frames, make),) = list(targets(cfg, Needs()))
    t = make([128])
    assert isinstance(t, P2pTarget) and t.spec.max_frame == 1518 and frames == [64, 128]
