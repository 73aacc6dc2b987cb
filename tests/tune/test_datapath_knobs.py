"""tune's datapath knobs: an EMC thrash, upcall storm, conntrack full or tunnel MTU finding names the setting that
answers it, on the bench (RunConfig keys) and on a lab node (other_config / dpctl entries), one step at a time."""

from zeroloss.core.config import load
from zeroloss.loss.records import Finding
from zeroloss.runs.tune import knobs as kn
from zeroloss.runs.tune import labknobs as lk
from zeroloss.runs.tune import sites


def _f(reason: str, hop: str = "OVS g0 rx", where: str = "g0", frames: int = 1000) -> Finding:
    return Finding(hop=hop, where=where, reason=reason, frames=frames, cause="")


def _bench(reason: str, tried=frozenset(), **settings):
    cfg = load(None, {"topology": "ovs-p2p", "frame_sizes": [64], **settings})
    return [(c.key, c.new) for c in kn.candidates([_f(reason)], cfg, set(tried), 2, 4096)]


def test_bench_ladders():
    assert _bench("emc_thrash")[:2] == [("ovs_smc_enable", True), ("ovs_emc_insert_inv_prob", 0)]
    assert _bench("emc_thrash", ovs_smc_enable=True)[0] == ("ovs_emc_insert_inv_prob", 0)
    assert _bench("upcall_storm")[:2] == [("ovs_flow_limit", 400000), ("ovs_revalidators", 2)]
    assert _bench("upcall_storm", {("ovs_flow_limit", 400000)})[0] == ("ovs_flow_limit", 1000000)
    assert _bench("conntrack_full", ovs_ct_maxconns=20000) == [("ovs_ct_maxconns", 3000000)]
    assert _bench("conntrack_full", ovs_ct_zone_limit=1000) == [("ovs_ct_maxconns", 6000000),
                                                                ("ovs_ct_zone_limit", 4000)]
    assert sites.site(_f("tunnel_mtu")) == sites.TUNNEL_MTU and sites.site(_f("emc_thrash")) == sites.EMC


def test_bench_settings_reach_ovs():
    """A tuned key becomes OVS's other_config or a dpctl command on the bench."""
    from zeroloss.drivers.dut.ovs import OvsSettings
    from zeroloss.targets.kinds.ovs import ovs_spec

    cfg = load(None, {"topology": "ovs-p2p", "ovs_smc_enable": True, "ovs_emc_insert_inv_prob": 0,
                      "ovs_ct_maxconns": 50000})
    spec = ovs_spec(cfg, 1518)
    oc = OvsSettings(file_prefix="x", datapath=spec.datapath).other_config()
    assert oc["smc-enable"] == "true" and oc["emc-insert-inv-prob"] == "0"
    assert spec.datapath.ct_commands() == [("dpctl/ct-set-maxconns", "netdev@ovs-netdev", "50000")]


NODE = lk.Node(other_config={"pmd-cpu-mask": "0x4"}, ports={"dpdk0": lk.Port("dpdk0", "dpdk", 1500)},
               gen_ports=("dpdk0",), vnf_ports=(), ct={"ct-maxconns": "20000", "ct-limits:default": "0"})


def _lab(reason: str, where: str = "dpdk0", tried=frozenset(), frame: int = 64):
    cfg = load(None, {"lab": "x.yaml", "allow_dut_changes": True, "frame_sizes": [frame]})
    return [c.sets for c in lk.candidates([_f(reason, f"OVS {where} rx", where)], cfg, NODE, set(tried))]


def test_lab_ladders_and_render():
    oc = lk.OC
    assert _lab("emc_thrash")[:2] == [{oc + "smc-enable": "true"}, {oc + "emc-insert-inv-prob": "0"}]
    assert _lab("upcall_storm")[:2] == [{oc + "flow-limit": "400000"}, {oc + "n-revalidator-threads": "2"}]
    ct = "dpctl:netdev@ovs-netdev:"
    assert _lab("conntrack_full") == [{ct + "ct-maxconns": "3000000"}]
    assert _lab("tunnel_mtu", frame=1518) == [{"Interface:dpdk0:mtu_request": "1550"}]
    assert lk.value(NODE, {}, ct + "ct-maxconns") == "20000"
    text = lk.render({ct + "ct-maxconns": "3000000", oc + "smc-enable": "true"})
    assert "ovs-appctl dpctl/ct-set-maxconns netdev@ovs-netdev 3000000" in text
    assert "ovs-vsctl set Open_vSwitch . other_config:smc-enable=true" in text
    assert lk.Node.from_dict(NODE.to_dict()) == NODE
