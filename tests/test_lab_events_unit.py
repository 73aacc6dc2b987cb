"""Lab events without a node: the lab file's restart commands (dut.ovs.restart, dut.vnfs[].restart), the one-line
refusals when a key is missing, and the bond event's choices (bond/list parsed, the bond on the path, the command that
takes a member down). The events on a node are in tests/lab/test_lab_events.py."""

import copy
import subprocess
import sys

import pytest
import yaml

from test_labfile import GOOD
from zeroloss.core.config import yaml_load
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.lab import labevents
from zeroloss.drivers.lab.labdut import LabDut
from zeroloss.drivers.lab.labfile import EXAMPLE, missing_command, parse
from zeroloss.loss.ledger import STAT_KEYS, counter_delta
from zeroloss.results.events import EVENTS
from zeroloss.runs.eventplan import rebase
from zeroloss.targets import registry
from zeroloss.targets.kinds.lab import KIND as LAB


def lab_with(ovs=None, vnf=None):
    doc = copy.deepcopy(GOOD)
    if ovs is not None:
        doc["dut"]["ovs"]["restart"] = ovs
    if vnf is not None:
        doc["dut"]["vnfs"][0]["restart"] = vnf
    return parse(doc, "lab.yaml")


def fault(**kw) -> str:
    with pytest.raises(ZeroLossError) as e:
        lab_with(**kw)
    assert "\n" not in e.value.message
    return e.value.message


def test_restart_commands_are_argv():
    lab = lab_with(ovs="systemctl restart 'openvswitch-switch'", vnf=["virsh", "reboot", "vnf 1"])
    assert lab.ovs_restart == ("systemctl", "restart", "openvswitch-switch")  # split as a shell would, no shell
    assert lab.vnfs[0].restart == ("virsh", "reboot", "vnf 1")              # a list as it is
    assert missing_command(lab, "ovs-restart") is None and missing_command(lab, "vnf-restart") is None
    assert lab_with().ovs_restart is None and lab_with().vnfs[0].restart is None


def test_bad_restart_commands_are_one_line_naming_the_key():
    assert "dut.ovs.restart: the command begins with '--now'" in fault(ovs="--now restart ovs")
    assert "dut.vnfs.0.restart: the command begins with '-c'" in fault(vnf=["-c", "x"])
    assert "dut.ovs.restart: an empty command" in fault(ovs="  ")
    assert "dut.vnfs.0.restart: an empty command" in fault(vnf=[])
    assert "not a command line (No closing quotation)" in fault(ovs="systemctl restart 'ovs")
    assert "1001 characters (at most 1000)" in fault(ovs="x" * 1001)
    assert "65 words (at most 64" in fault(vnf=["x"] * 65)
    assert "dut.ovs.restart: 7 is not of type 'string', 'array'" in fault(ovs=7)
    assert "dut.vnfs.0.restart.1: 2 is not of type 'string'" in fault(vnf=["virsh", 2])


def test_the_example_documents_the_keys():
    text = EXAMPLE.replace("# restart:", "restart:")
    lab = parse(yaml_load(text, "example"), "example")
    assert lab.ovs_restart == ("systemctl", "restart", "openvswitch-switch")
    assert lab.vnfs[0].restart == ("virsh", "reboot", "vnf1")


def test_every_event_is_a_lab_event_and_a_missing_command_is_named():
    # every event is a lab event (the lab kind's, targets/kinds/lab.py); whether the lab file has a restart's
    # command is the lab file's to say (below), the node's bonds are known once connected
    assert registry.as_events(LAB).names == tuple(EVENTS)
    why = missing_command(lab_with(), "ovs-restart")
    assert why and "add dut.ovs.restart to lab.yaml" in why and "\n" not in why
    assert "add dut.vnfs.0.restart" in missing_command(lab_with(), "vnf-restart")
    assert "virsh reboot vnf1" in missing_command(lab_with(), "vnf-restart")
    assert missing_command(lab_with(ovs="systemctl restart openvswitch-switch"), "ovs-restart") is None
    assert missing_command(lab_with(), "mtu") is None and missing_command(lab_with(), "bond-down") is None
    dut = LabDut(lab_with())  # no session is opened before a request
    with pytest.raises(ZeroLossError, match="dut.vnfs.0.restart"):
        labevents.check(dut, ["mtu", "vnf-restart"])
    with pytest.raises(ZeroLossError, match="add dut.ovs.restart"):
        labevents.lab_event(dut, "ovs-restart")
    assert not dut.agents  # refused before anything reached the node


BOND_LIST = ("bond\ttype\trecircID\tmembers\n"
             "bond-b\tactive-backup\t0\tdpdk1, dpdk3\n"
             "bond-a\tbalance-slb\t1\tdpdk0, dpdk2\n")


def test_the_bond_on_the_path_and_its_commands():
    bonds = labevents.bond_list(BOND_LIST)
    assert bonds == {"bond-b": ["dpdk1", "dpdk3"], "bond-a": ["dpdk0", "dpdk2"]}
    assert labevents.bond_list("bond\ttype\trecircID\tmembers\n") == {}
    assert labevents.path_bond(bonds, ["dpdk0", "dpdk1"]) == "bond-b"   # side B's, as on the bench
    assert labevents.path_bond(bonds, ["dpdk0", "eth9"]) == "bond-a"    # a member cabled to the generator
    assert labevents.path_bond(bonds, ["bond-a", "x"]) == "bond-a"      # or the bond's own name
    assert labevents.path_bond(bonds, ["x", "y"]) is None
    dut = LabDut(lab_with())
    dut.ctl = "/run/ovs/ovs-vswitchd.7.ctl"
    assert labevents.admin_argv(dut, "dpdk", "br-phy", "dpdk1", False) == [
        "ovs-appctl", "-t", "/run/ovs/ovs-vswitchd.7.ctl", "netdev-dpdk/set-admin-state", "dpdk1", "down"]
    assert labevents.admin_argv(dut, "", "br-phy", "eth1", True) == [
        "ovs-ofctl", "-O", "OpenFlow13", "--names", "mod-port", "br-phy", "eth1", "up"]


def test_cli_refuses_a_restart_without_its_command_before_anything(tmp_path):
    f = tmp_path / "lab.yaml"
    f.write_text(yaml.safe_dump(GOOD))
    r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "events", "--lab", str(f), "--allow-dut-changes",
                        "--event", "ovs-restart", "--rate", "10k", "-o", str(tmp_path / "e.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"add dut.ovs.restart to {f}" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "e.json").exists()


SHOW = """OFPT_FEATURES_REPLY (OF1.3) (xid=0x2): dpid:0000a2b1c3d4e5f6
 1(nic0): addr:00:00:00:00:00:00
     config:     0
     state:      LIVE
     speed: 0 Mbps now, 0 Mbps max
 2(nic1): addr:00:00:00:00:00:00
     config:     0
     state:      LINK_DOWN
     speed: 0 Mbps now, 0 Mbps max
"""


def test_a_port_is_up_by_its_openflow_state_when_ovsdb_lags():
    assert labevents.openflow_up(SHOW, "nic0") and not labevents.openflow_up(SHOW, "nic1")
    assert not labevents.openflow_up(SHOW, "vhu0")  # not on the bridge


def _port(n: int) -> dict:
    return {k: n for k in STAT_KEYS}


def test_a_restarted_vnf_in_a_summed_stage_is_rebased_there_too():
    """Two VNFs in parallel make one stage 'vnf1+vnf2' (their counters summed). vnf1 restarts mid-trial (its counters
    start from zero): rebasing vnf1 alone left the sum short by what vnf1 had counted; Probe.derive (LabDut.derive)
    sums the rebased counters, so the stage's delta is vnf1's and vnf2's deltas."""
    dut = LabDut(lab_with())
    dut.stage_procs = {"vnf1", "vnf2", "vnf1+vnf2"}

    def reading(v1: int, v2: int) -> dict:
        procs = {"vnf1": [_port(v1), _port(v1)], "vnf2": [_port(v2), _port(v2)]}
        return {"ovs": {"t_ns": 0}, "procs": dut._sums(procs)}

    before, mid, after = reading(100, 100), reading(400, 400), reading(50, 700)  # vnf1 restarted after mid
    rebased = dut.derive(rebase(before, mid, (("procs", "vnf1"),)))
    c = counter_delta(after, rebased)["procs"]
    assert c["vnf1"][0]["ipackets"] == 300 + 50 and c["vnf2"][0]["ipackets"] == 600
    assert c["vnf1+vnf2"][0]["ipackets"] == 350 + 600
    stale = counter_delta(after, rebase(before, mid, (("procs", "vnf1"),)))["procs"]["vnf1+vnf2"][0]["ipackets"]
    assert stale == 750 - 200  # without derive: the sum was not rebased
    assert dut.derive({"ovs": {}}) == {"ovs": {}}


def test_lab_events_that_may_zero_the_nodes_port_counters_watch_them():
    assert labevents.LabMtu.watch == labevents.LabBond.watch == labevents.LabVnfRestart.watch == (("ovs", "ports"),)
    assert labevents.LabOvsRestart.resets == (("ovs",),)


def test_an_ovs_restart_sets_the_runs_conntrack_limits_again():
    """--dut-set dpctl:... lives in the datapath, not OVSDB: a restarted ovs-vswitchd starts with the defaults, so the
    ovs-restart event sets them again, and the session's undo still puts back what was found (the node's commands
    recorded, no node)."""
    dut = LabDut(lab_with())
    dut.ovs = True
    calls = []
    found = {"dpctl/ct-get-maxconns": "100000\n", "dpctl/ct-get-limits": "default limit=0\n"}
    dut.appctl = lambda *argv: calls.append(list(argv)) or found.get(argv[0], "")
    dut.change("dpctl:netdev@ovs-netdev:ct-maxconns=3000000")
    dut.change("dpctl:netdev@ovs-netdev:ct-limits:default=5000")
    calls.clear()
    assert dut.reapply_datapath() == ["dpctl:netdev@ovs-netdev:ct-maxconns=3000000",
                                      "dpctl:netdev@ovs-netdev:ct-limits:default=5000"]
    assert calls == [["dpctl/ct-set-maxconns", "netdev@ovs-netdev", "3000000"],
                     ["dpctl/ct-set-limits", "netdev@ovs-netdev", "default=5000"]]
    assert [u[3:] for u, _ in dut.changes] == [["dpctl/ct-set-maxconns", "netdev@ovs-netdev", "100000"],
                                               ["dpctl/ct-set-limits", "netdev@ovs-netdev", "default=0"]]


def test_a_lab_bond_event_knows_the_generator_port_cabled_to_the_member_it_takes_down():
    """bond-down takes the active member down; the generator port cabled to it (dut_port: the member) is the one
    whose frames are offered into a downed link (results.events.EventDirection.link_down). An active member no
    generator port is cabled to (reached through a switch) names no port of ours."""
    show = ("---- bond-b ----\nbond_mode: active-backup\n\nmember dpdk1: enabled\n  active member\n\n"
            "member dpdk3: enabled\n")
    dut = LabDut(lab_with())
    dut.appctl = lambda cmd, *a: BOND_LIST if cmd == "bond/list" else show
    ev = labevents.LabBond(dut, "bond-down")
    assert ev.prepare() == [] and ev.member == "dpdk1" and not ev.starts_down
    assert dut.lab.ports[ev.link_down_port].dut_port == "dpdk1"
    assert labevents.LabBond(dut, "bond-up").starts_down
    other = LabDut(lab_with())
    other.appctl = lambda cmd, *a: BOND_LIST if cmd == "bond/list" else show.replace("dpdk1", "dpdk9")
    ev = labevents.LabBond(other, "bond-down")
    ev.prepare()
    assert ev.member == "dpdk9" and ev.link_down_port is None
