"""Parsing what ovs-vsctl and ovs-appctl print (recorded outputs)."""

from pathlib import Path

from zeroloss.drivers.dut.ovs import OvsSettings
from zeroloss.drivers.dut.ovsports import parse_map
from zeroloss.drivers.dut.ovsstats import (
    parse_coverage_drops,
    parse_dpctl_config,
    parse_dump_ports,
    parse_mempool,
    parse_meter_config,
    parse_meter_stats,
    parse_pmd_rxq,
    parse_pmd_stats,
)

DPCTL = """netdev@ovs-netdev:
  lookups: hit:32764 missed:4 lost:0
  flows: 4
  port 0: ovs-netdev (tap)
    RX packets:0 errors:0 dropped:0 overruns:0 frame:0
    TX packets:0 errors:0 dropped:0 aborted:0 carrier:0
  port 2: g0 (dpdkvhostuserclient: configured_rx_queues=1, configured_tx_queues=1, mtu=1500)
    RX packets:8192 errors:? dropped:3 overruns:? frame:?
    TX packets:8190 errors:? dropped:2 aborted:? carrier:?
    RX bytes:12402688 (11.8 MiB)  TX bytes:12402688 (11.8 MiB)
"""


def test_vsctl_map():
    assert parse_map('{ovs_tx_failure_drops=5, ovs_tx_retries=0, rx_packets=10, name="a b"}') == {
        "ovs_tx_failure_drops": 5, "ovs_tx_retries": 0, "rx_packets": 10, "name": "a b"}
    assert parse_map("{}") == {}


def test_other_config_keeps_ovs_private():
    oc = OvsSettings(file_prefix="zlx", socket_mem_mb=2048, pmd_cpu_mask="0x2").other_config()
    assert oc["dpdk-socket-mem"] == "2048" and oc["pmd-cpu-mask"] == "0x2"
    assert "--file-prefix=zlx" in oc["dpdk-extra"] and "--no-pci" in oc["dpdk-extra"]


OFCTL_SHOW = """OFPT_FEATURES_REPLY (OF1.3) (xid=0x2): dpid:00002e6f90a15f4a
OFPST_PORT_DESC reply (OF1.3) (xid=0x3):
 1(g0): addr:00:00:00:00:00:00
     config:     0
     state:      LIVE
     speed: 0 Mbps now, 0 Mbps max
 2(v0): addr:00:00:00:00:00:00
     config:     0
     state:      LINK_DOWN
     speed: 0 Mbps now, 0 Mbps max
 LOCAL(br0): addr:2e:6f:90:a1:5f:4a
     config:     PORT_DOWN
     state:      LINK_DOWN
"""


def test_datapath_port_state_reads_only_its_own_port(tmp_path):
    """After a vswitchd restart OVSDB's link_state can stay stale: the port is judged by dpctl and OpenFlow."""
    from zeroloss.drivers.dut.ovs import Ovs

    ovs = Ovs(tmp_path, OvsSettings(file_prefix="t"))
    ovs.appctl = lambda *a: DPCTL + "  port 3: v0 (dpdkvhostuserclient: mtu=1500)\n"
    ovs.vsctl = lambda *a: "br0\n"
    ovs.ofctl = lambda *a: OFCTL_SHOW
    assert ovs.datapath_port_up("g0", 1500) is True
    assert ovs.datapath_port_up("g0", 9000) is False  # configured at another MTU
    assert ovs.datapath_port_up("v0", 1500) is False  # LINK_DOWN
    assert ovs.datapath_port_up("g9", None) is False  # not in the datapath


def test_interface_statistics_csv():
    from zeroloss.drivers.dut.ovsread import parse_interface_statistics

    text = ('g0,"ovs_tx_failure_drops=3 ovs_tx_retries=0 rx_bytes=100 rx_packets=2 tx_dropped=3"\n'
            'br0,"collisions=0 rx_bytes=0"\nv0,""\n')
    assert parse_interface_statistics(text) == {
        "g0": {"ovs_tx_failure_drops": 3, "ovs_tx_retries": 0, "rx_bytes": 100, "rx_packets": 2, "tx_dropped": 3},
        "br0": {"collisions": 0, "rx_bytes": 0}, "v0": {}}


# live counters and state for the loss ledger (tests/fixtures/ovs: recorded from OVS 3.1 on the bench,
# PVP with two bridges, 2 RX queues and meters)
FIX = Path(__file__).parent / "fixtures" / "ovs"


def text(name: str) -> str:
    return (FIX / name).read_text()


def test_dump_ports_of14_with_custom_counters():
    ports = parse_dump_ports(text("dump-ports-br-phy.txt"))
    assert "LOCAL" not in ports and set(ports) == {"patch-p0", "patch-p1", "g0", "g1"}
    g0 = ports["g0"]
    assert (g0["rx_packets"], g0["tx_packets"], g0["rx_dropped"], g0["tx_dropped"]) == (16384, 13284, 0, 0)
    assert "rx_errors" not in g0  # vhost ports print '?'
    assert g0["ovs_tx_failure_drops"] == 0 and g0["ovs_tx_mtu_exceeded_drops"] == 0
    assert (g0["rx_q0_good_packets"], g0["rx_q1_good_packets"]) == (8192, 8192)
    assert not any("size" in k or "bytes" in k for k in g0)  # histograms left out
    assert "rx_dropped" not in ports["patch-p1"]


def test_meter_stats_and_config():
    stats = parse_meter_stats(text("meter-stats-br-phy.txt"))
    assert set(stats) == {1, 2} and all(set(m) == {"packets_in", "dropped"} for m in stats.values())
    assert parse_meter_config(text("dump-meters-br-phy.txt")) == {
        1: {"unit": "pktps", "rate": 30000, "burst_size": 1000}, 2: {"unit": "pktps", "rate": 30000,
                                                                   "burst_size": 1000}}


def test_meter_stats_sums_band_drops():
    out = parse_meter_stats("OFPST_METER reply (OF1.3) (xid=0x2):\nmeter:1 flow_count:1 packet_in_count:107717 "
                            "byte_in_count:18374188 duration:6.020s bands:\n0: packet_count:68518 byte_count:4111080\n")
    assert out == {1: {"packets_in": 107717, "dropped": 68518}}


def test_pmd_stats_and_rxq_placement():
    pmds = parse_pmd_stats(text("pmd-stats-show.txt"))
    assert set(pmds) == {"0"}  # the main thread is not a PMD
    assert {"packets_received", "idle_cycles", "processing_cycles"} <= set(pmds["0"])
    rxq = parse_pmd_rxq(text("pmd-rxq-show.txt"))
    assert len(rxq) == 8 and {r["core"] for r in rxq} == {0}
    assert rxq[0] == {"core": 0, "numa": 0, "isolated": False, "port": "g0", "queue": 0, "enabled": True,
                      "usage_pct": None}
    assert parse_pmd_rxq("pmd thread numa_id 1 core_id 5:\n  isolated : true\n  port: dpdk0  queue-id:  3 "
                         "(enabled)   pmd usage: 87 %\n")[0] == {
        "core": 5, "numa": 1, "isolated": True, "port": "dpdk0", "queue": 3, "enabled": True, "usage_pct": 87}


def test_dpctl_config_and_mempool():
    cfg = parse_dpctl_config(text("dpctl-show.txt"))
    assert cfg["g0"]["mtu"] == 1500 and cfg["g0"]["configured_rx_queues"] == 2
    assert cfg["br-phy"] == {"type": "tap"}
    mp = parse_mempool(text("mempool-g0.txt"))
    assert mp == {"name": "ovs7bbff29800021580262144", "size": 262144, "populated_size": 262144,
                  "elt_size": 2880, "avail": 262144, "in_use": 0}


def test_coverage_drop_counters():
    out = parse_coverage_drops("datapath_drop_meter        0.0/sec     0.000/sec        0.0000/sec   total: 67633\n"
                               "netdev_sent                0.0/sec     0.000/sec        0.0000/sec   total: 20306\n")
    assert out == {"datapath_drop_meter": 67633}


def test_only_taps_of_our_bridges_that_were_not_there_before_are_removed():
    from zeroloss.drivers.dut.ovs import left_taps

    now = {"br-int": True, "br-phy": True, "ovs-netdev": True, "eth0": False, "br-tun": False}
    # br-phy was there before (not ours), br-tun is no tap, eth0 is not a bridge of ours
    assert left_taps(["br-int", "br-phy", "br-tun", "br-int", "ovs-netdev"], {"br-phy", "eth0"}, now) == \
        ["br-int", "ovs-netdev"]
    assert left_taps(["br0", "ovs-netdev"], set(), {}) == []
