"""zeroloss events' pure parts: the events file's records and table, the counters of restarted parts, which events a
topology can have, and the CLI's one-line refusals (nothing started)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from zeroloss.core.config import RunConfig
from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.bench.events import active_member, flow_lines, mask_cores, pmd_cores, wider_mask
from zeroloss.results import events as ev
from zeroloss.runs.eventplan import Plan, check, rebase
from zeroloss.targets.kinds.ovs import unfit

ZL = [sys.executable, "-m", "zeroloss.cli"]


def trial(name: str, rep: int, lost: int, rate: float = 1000.0, hop: str = "OVS v0 tx") -> ev.EventTrial:
    led = [{"direction": "A->B", "hops": [{"name": hop, "drops": [{"reason": "tx_dropped", "frames": lost}],
                                           "unexplained": 0}]}] if lost else []
    return ev.EventTrial(event=name, repeat=rep, rate_pps=rate, duration_s=10, t_event_ms=3000, t_undo_ms=None,
                         directions=(ev.EventDirection(direction="A->B", tx=10_000, rx=10_000 - lost, lost=lost),),
                         outages=(ev.OutageRecord(direction="A->B", start_ms=3000, end_ms=3000 + lost, lost=lost,
                                                  outage_ms=lost),) if lost else (),
                         ledger=led, diagnosis=[])


def test_summary_is_mean_min_max_over_repeats_with_where():
    rows = ev.summarise([trial("baseline", 1, 0), trial("vnf-restart", 1, 100), trial("baseline", 2, 0),
                         trial("vnf-restart", 2, 300)])
    assert [r.event for r in rows] == ["baseline", "vnf-restart"]
    b, v = rows
    assert (b.repeats, b.lost_mean, b.lost_max, b.outage_ms_max, b.where) == (2, 0, 0, 0, "")
    assert (v.lost_mean, v.lost_min, v.lost_max) == (200, 100, 300)
    assert (v.outage_ms_min, v.outage_ms_max) == (100.0, 300.0)  # lost / 1000 pps, in ms
    assert v.span_ms_mean == 200 and v.where == "OVS v0 tx: tx_dropped"


def test_file_round_trip_and_table():
    trials = (trial("baseline", 1, 0), trial("mtu", 1, 50))
    rec = ev.EventsRecord(frame=64, rate_pps=1000.0, ndr_pps=2000.0, plan={"load_pct": 50}, trials=trials,
                          summary=ev.summarise(trials))
    doc = json.loads(json.dumps(rec.to_json()))
    assert ev.is_events(doc) and doc["version"] == 1
    back = ev.read(doc, "f.json")
    assert back.trials[1].lost == 50 and back.to_json() == doc
    text = ev.table(back)
    assert "50 % of the NDR 2,000 pps" in text
    assert text.splitlines()[1].split()[:2] == ["event", "repeats"]
    assert "mtu" in text and "OVS v0 tx: tx_dropped" in text


def test_damaged_file_is_one_line():
    with pytest.raises(ZeroLossError, match=r"f.json: trials: has the wrong shape.*repeat"):
        ev.read({"kind": ev.KIND, "version": 1, "trials": [{"event": "x"}]}, "f.json")
    with pytest.raises(ZeroLossError, match="version 9"):
        ev.read({"kind": ev.KIND, "version": 9}, "f.json")


def test_rebase_adds_what_a_restarted_part_counted_before_the_event():
    before = {"ovs": {"ports": {"v0": {"rx": 10}}, "t_ns": 5}, "procs": {"vnf0": [{"ipackets": 100}]}}
    mid = {"ovs": {"ports": {"v0": {"rx": 60}}, "t_ns": 9}, "procs": {"vnf0": [{"ipackets": 400}]}}
    after = {"ovs": {"ports": {"v0": {"rx": 90}}, "t_ns": 20}, "procs": {"vnf0": [{"ipackets": 50}]}}  # restarted
    b = rebase(before, mid, (("procs", "vnf0"),))
    assert b["procs"]["vnf0"][0]["ipackets"] == -300
    from zeroloss.loss.ledger import counter_delta

    assert counter_delta(after, b)["procs"]["vnf0"][0]["ipackets"] == 350  # 300 before the restart, 50 since
    assert b["ovs"] == before["ovs"] and before["procs"]["vnf0"][0]["ipackets"] == 100  # not changed in place
    o = rebase(before, mid, (("ovs",),))
    assert o["ovs"]["ports"]["v0"]["rx"] == -50 and o["ovs"]["t_ns"] == 5


def test_which_events_a_topology_can_have():
    # the OVS kind's events (targets/kinds/ovs); a lab's: tests/test_lab_events_unit.py; unknown: test_registry.py
    pvp = RunConfig(topology="pvp")
    assert unfit("vnf-restart", pvp) is None
    assert "ovs-p2p has no VNF" in unfit("vnf-restart", RunConfig(topology="ovs-p2p"))
    assert "--bond" in unfit("bond-down", pvp)
    assert unfit("bond-up", RunConfig(topology="pvp", bond="active-backup", bridges=2)) is None
    assert unfit("mtu", pvp) is None and unfit("ovs-restart", pvp) is None


def test_masks_members_and_flows():
    assert wider_mask("0x1", 2) == "0x3" and wider_mask("0x2", 4) == "0x3" and wider_mask("0x3", 2) == "0x1"
    with pytest.raises(ZeroLossError):
        wider_mask("0x1", 1)
    assert mask_cores("0x5") == {0, 2}
    show = "pmd thread numa_id 0 core_id 0:\n  isolated : false\npmd thread numa_id 0 core_id 1:\n"
    assert pmd_cores(show) == {0, 1}
    assert active_member("bond_mode: active-backup\nactive member mac: aa:bb:cc:dd:ee:ff(g3)\n") == "g3"
    assert active_member("member g1: enabled\n  active member\n  may_enable: true\n") == "g1"
    # OVS 3.1's bond/show on the bench: the MAC's member is not the active one
    assert active_member("active member mac: 00:00:00:00:00:00(g3)\n\nmember g1: enabled\n  active member\n"
                         "  may_enable: true\n\nmember g3: enabled\n  may_enable: true\n") == "g1"
    lines = flow_lines(300).splitlines()
    assert len(set(lines)) == 300 and all("nw_dst=10." in x and "cookie=0x7a1e7000" in x for x in lines)


@pytest.mark.parametrize("cfg,plan,match", [
    (RunConfig(topology="p2p", frame_sizes=[64]), Plan(("mtu",)), "topology p2p"),
    (RunConfig(topology="pvp", frame_sizes=[64, 1518]), Plan(("mtu",)), "one frame size"),
    (RunConfig(topology="pvp", frame_sizes=[64]), Plan(("mtu",), t_event_s=3, t_undo_s=2), "undo at 2"),
    (RunConfig(topology="pvp", frame_sizes=[64]), Plan(("mtu",), rate_pps=1.0, ndr_from="x"), "--rate and"),
    (RunConfig(topology="pvp", frame_sizes=[64]), Plan(("mtu",), load_pct=0), "--load 0"),
])
def test_plan_faults_are_one_line(cfg, plan, match):
    with pytest.raises(ZeroLossError, match=match):
        check(cfg, plan)


def test_cli_refusals_start_nothing(tmp_path):
    out = tmp_path / "e.json"
    for args, text in ((["--topology", "pvp", "--event", "bond-down"], "needs bonded generator ports"),
                       (["--topology", "ovs-p2p", "--event", "vnf-restart"], "ovs-p2p has no VNF")):
        r = subprocess.run([*ZL, "events", *args, "-o", str(out)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and text in r.stderr, r.stderr
        assert not out.exists()


class _NoBench:
    """session.BENCH for tests of refusals: taking the bench fails the test (the value was not checked first)."""

    def __enter__(self):
        raise AssertionError("the bench was taken: a bad value was not refused before anything started")

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("args,text", [
    (["--rate", "0"], "--rate 0 pps must be above 0 and at most 37,202,381 pps"),   # an outage needs a paced rate
    (["--rate", "nan"], "--rate nan pps must be above 0"),
    (["--rate", "inf"], "--rate inf pps must be above 0"),
    (["--rate", "1e99"], "--rate 1e+99 pps must be above 0"),
    (["--rate", "-5"], "--rate -5 pps must be above 0"),
    (["--duration", "nan"], "--duration nan s must be above 0 and at most 10,486 s"),
    (["--duration", "inf"], "--duration inf s must be above 0"),
    (["--duration", "1e99", "--rate", "1000"], "--duration 1e+99 s must be above 0"),
    (["--load", "nan"], "--load nan is not in 0..100"),
    (["--at", "nan"], "the event at nan s"),
    (["--undo-at", "inf"], "the undo at inf s"),
    (["--ndr-from", "missing.json"], "missing.json"),
    (["--set", "frame_sizes=128"], "events run at one frame size"),
])
def test_every_value_is_checked_before_anything_starts(tmp_path, monkeypatch, capsys, args, text):
    """A value events cannot run with is one line and exit 1 before the bench is taken or a file written (was:
    --rate 0 ran and called the loss of 249 M frames an outage of 0.0 ms; nan, inf and 1e99 were taken; a missing
    --ndr-from file failed only after the bench had started)."""
    from zeroloss.cli.main import main
    from zeroloss.drivers import session

    monkeypatch.setattr(session, "BENCH", _NoBench())
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "e.json"
    assert main(["events", "--topology", "pvp", "--event", "mtu", *args, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err, err
    assert not out.exists()


def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path, monkeypatch, capsys):
    from zeroloss.cli.main import main
    from zeroloss.drivers import session

    monkeypatch.setattr(session, "BENCH", _NoBench())
    (tmp_path / "file").write_text("")
    assert main(["events", "--topology", "pvp", "--event", "mtu", "--rate", "1000",
                 "-o", str(tmp_path / "file" / "sub" / "e.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot make the folder of the events file" in err, err


@pytest.mark.parametrize("args", [["--frame-sizes", ""], ["--frame-size", ""], ["--repeat", "1001"]])
def test_flags_events_does_not_take_are_a_usage_error(args, capsys):
    from zeroloss.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["events", "--topology", "pvp", "--event", "mtu", *args])
    assert e.value.code == 2 and "error:" in capsys.readouterr().err
