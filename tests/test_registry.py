"""The DUT kinds' registry (targets/registry.py): which kind the settings choose, the --dut choices and help it
gives the CLI, what a kind adds when it registers (hop readers), and that listing the kinds starts no driver."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from zeroloss.core.config import RunConfig, load
from zeroloss.core.errors import ZeroLossError
from zeroloss.loss import readers
from zeroloss.loss.ledger import ledger
from zeroloss.runs.events import Plan, check
from zeroloss.runs.soak import soak_target
from zeroloss.targets import registry
from zeroloss.targets.registry import Kind, Needs, kind_of


def test_listing_the_kinds_loads_no_driver():
    """A kind module is light at import time: `zeroloss report` builds the --dut choices and must start nothing."""
    code = ("import sys\n"
            "from zeroloss.targets import registry\n"
            "assert len(registry.kinds()) >= 4 and registry.duts()\n"
            "print(sorted(m for m in sys.modules if m.startswith(tuple(f'zeroloss.drivers.{p}' "
            "for p in ('bench', 'gen', 'dpdk', 'dut', 'vnf', 'lab')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_settings_choose_their_kind():
    assert kind_of(RunConfig()).name == "testpmd-p2p"
    assert [kind_of(RunConfig(topology=t)).name for t in ("ovs-p2p", "pvp", "pvvp")] == ["ovs"] * 3
    assert kind_of(RunConfig(dut="external", ports=["a", "b"])).name == "external"
    lab = RunConfig(lab="lab.yaml", topology="pvp")
    assert lab.dut == "lab" and kind_of(lab).name == "lab" and not kind_of(lab).ours


TODAY = ["testpmd (started by zeroloss)", "external (yours, no counters)",
         "lab (a compute node described by a lab file, read over SSH; implied by lab)"]


def test_dut_choices_and_help_are_the_kinds():
    """Today's three in their words and order (the help as the config's field said it), then any kind added since."""
    assert registry.duts()[:3] == ("testpmd", "external", "lab")
    words = TODAY + [next(k.help for k in registry.kinds() if d in k.duts and k.help) for d in registry.duts()[3:]]
    assert registry.dut_help() == "device under test: " + ", ".join(words[:-1]) + " or " + words[-1]
    if len(registry.duts()) == 3:
        assert registry.dut_help() == (
            "device under test: testpmd (started by zeroloss), external (yours, no counters) or lab (a compute node "
            "described by a lab file, read over SSH; implied by lab)")


def test_an_unknown_dut_is_refused_in_one_line_with_the_choices(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("dut: ovs\n")
    cfg = load(f, {})  # the config takes any word: the kinds decide
    with pytest.raises(ZeroLossError) as e:
        registry.check_cores(cfg)
    assert str(e.value) == f"config: dut must be one of {', '.join(registry.duts())}, got 'ovs'"
    assert str(e.value).startswith("config: dut must be one of testpmd, external, lab")


def test_the_vm_pins_are_checked_only_where_a_vm_may_run():
    cfg = {"vnf_vcpus": "2,3", "vnf_emulator_cpus": "3"}
    assert "vnf_vcpus" not in kind_of(RunConfig(topology="ovs-p2p", **cfg)).core_keys(RunConfig(**cfg))
    keys = kind_of(RunConfig(topology="pvp", **cfg)).core_keys(RunConfig(topology="pvp", **cfg))
    assert keys == ("ovs_pmd_cpu_mask", "ovs_lcore_mask", "gen_lcores", "dut_lcores", "vnf_vcpus",
                    "vnf_emulator_cpus", "dut_main_lcore")
    process = RunConfig(topology="pvp", vnf="process", **cfg)
    assert "vnf_vcpus" not in kind_of(process).core_keys(process)


def test_a_soak_takes_its_size_s_wire_and_an_external_dut_cannot_soak():
    big = soak_target(RunConfig(frame_sizes=[9000]), 9000, print)
    assert type(big).__name__ == "P2pTarget" and big.link == "vhost"
    with pytest.raises(ZeroLossError, match="a soak needs a DUT it can read: .*drop --dut external"):
        soak_target(RunConfig(dut="external", ports=["a", "b"], frame_sizes=[64]), 64, print)


def test_events_are_the_kinds():
    plan = Plan(events=("vnf-restart",))
    with pytest.raises(ZeroLossError, match="events are changes to OVS: topology p2p has none"):
        check(RunConfig(frame_sizes=[64]), plan)
    with pytest.raises(ZeroLossError, match="ovs-p2p has no VNF"):
        check(RunConfig(topology="ovs-p2p", frame_sizes=[64]), plan)
    check(RunConfig(topology="pvp", frame_sizes=[64]), plan)
    with pytest.raises(ZeroLossError, match="unknown event 'reboot'"):
        check(RunConfig(topology="pvp", frame_sizes=[64]), replace(plan, events=("reboot",)))
    with pytest.raises(ZeroLossError, match="add --allow-dut-changes"):
        check(RunConfig(lab="lab.yaml", frame_sizes=[64]), plan)
    pvp = RunConfig(topology="pvp", frame_sizes=[64])
    assert registry.as_events(kind_of(pvp)).chosen(pvp) == (
        "rxq-rebalance", "pmd-mask", "ovs-restart", "vnf-restart", "flows-10k", "mtu")  # no bond: not bonded


def _reader(h, c, budget):
    n = c.extra["probe"]["n"]  # a kind's own counters: in Counters.extra (loss/counters.py)
    return readers.HopReading(n, n - 3, [readers.drop("rx_dropped", 3, "probe rx_dropped")])


@pytest.fixture
def probe_kind():
    """A kind registered for the test only (a --dut value of its own, a hop kind of its own), taken out after."""
    kind = Kind(name="probe-kind", duts=("probe",), topologies=None, order=99, help="probe (a test's)",
                make=lambda cfg, link, frames, needs: None, readers={"probe_hop": _reader})
    registry.kinds()
    registry.register(kind)
    yield kind
    del registry._KINDS[kind.name]
    del readers.READERS["probe_hop"]


def test_a_kind_is_one_registration(probe_kind):
    assert registry.duts()[-1] == "probe" and registry.dut_help().endswith(" or probe (a test's)")
    assert kind_of(RunConfig(dut="probe")) is probe_kind
    (frames, make), = registry.targets(RunConfig(dut="probe", frame_sizes=[64, 1518]), Needs())
    assert frames == [64, 1518] and make(frames) is None
    path = {"direction": "A->B", "tx_side": 0, "rx_side": 1,
            "hops": [{"kind": "probe_hop", "name": "probe", "where": "probe"}]}
    (led,) = ledger([path], {"probe": {"n": 100}})  # the kind's reader reads its hop
    assert (led["sent"], led["received"], led["counted"], led["unexplained"]) == (100, 97, 3, 0)
    with pytest.raises(ValueError, match="registered already"):
        registry.register(probe_kind)
    with pytest.raises(ValueError, match="both take --dut testpmd"):
        registry.register(replace(probe_kind, name="p2p-again", duts=("testpmd",), topologies=("p2p",)))
    with pytest.raises(ValueError, match="has a reader already"):
        readers.add_reader("proc_rx", _reader)


@pytest.mark.parametrize("overrides, expect", [
    ({"dut": "external"}, "dut external needs ports: the two ports as EAL device arguments"),
    ({"dut": "lab"}, "dut lab needs a lab file"),
])
def test_a_kinds_own_needs_are_its_check(overrides, expect):
    """What one kind needs of the settings is checked by that kind where the settings meet it, not by every
    RunConfig (a stored config of another kind never asks for ports)."""
    cfg = load(None, overrides)
    with pytest.raises(ZeroLossError, match=expect):
        registry.kind_of(cfg)
