"""Parsing what ovs-vsctl and ovs-appctl print (recorded outputs)."""

from zeroloss.bench.ovsbench import dpctl_ports
from zeroloss.dut.ovs import OvsSettings, parse_map

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


def test_dpctl_show_ports():
    ports = dpctl_ports(DPCTL)
    assert ports["g0"] == {"rx_packets": 8192, "rx_errors": 0, "rx_dropped": 3,
                           "tx_packets": 8190, "tx_errors": 0, "tx_dropped": 2}
    assert ports["ovs-netdev"]["rx_packets"] == 0


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
    from zeroloss.dut.ovs import Ovs

    ovs = Ovs(tmp_path, OvsSettings(file_prefix="t"))
    ovs.appctl = lambda *a: DPCTL + "  port 3: v0 (dpdkvhostuserclient: mtu=1500)\n"
    ovs.vsctl = lambda *a: "br0\n"
    ovs.ofctl = lambda *a: OFCTL_SHOW
    assert ovs.datapath_port_up("g0", 1500) is True
    assert ovs.datapath_port_up("g0", 9000) is False  # configured at another MTU
    assert ovs.datapath_port_up("v0", 1500) is False  # LINK_DOWN
    assert ovs.datapath_port_up("g9", None) is False  # not in the datapath


def test_interface_statistics_csv():
    from zeroloss.dut.ovs import parse_interface_statistics

    text = ('g0,"ovs_tx_failure_drops=3 ovs_tx_retries=0 rx_bytes=100 rx_packets=2 tx_dropped=3"\n'
            'br0,"collisions=0 rx_bytes=0"\nv0,""\n')
    assert parse_interface_statistics(text) == {
        "g0": {"ovs_tx_failure_drops": 3, "ovs_tx_retries": 0, "rx_bytes": 100, "rx_packets": 2, "tx_dropped": 3},
        "br0": {"collisions": 0, "rx_bytes": 0}, "v0": {}}
