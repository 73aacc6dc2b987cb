"""Run settings: defaults, YAML, flags on top, one-line faults naming key and range."""

import pytest

from zeroloss.core.config import DEFAULT_SIZES, RunConfig, field_help, load, stored
from zeroloss.core.errors import ZeroLossError
from zeroloss.targets.registry import check_cores


def test_defaults_are_the_issue_defaults():
    c = RunConfig()
    assert tuple(c.frame_sizes) == DEFAULT_SIZES == (64, 128, 256, 512, 1024, 1280, 1518, 4096, 8192, 9000)
    assert c.flows == 1024 and c.bidirectional and c.dut == "testpmd" and c.link_speed_gbps == 25


def test_yaml_then_flags(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("frame_sizes: [64, 1518]\nflows: 10\ntrial_s: 1.5\n")
    c = load(f, {"flows": 99, "trial_s": None})
    assert c.frame_sizes == [64, 1518] and c.flows == 99 and c.trial_s == 1.5


def test_yaml_frame_sizes_take_imixes(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("frame_sizes: [64, IMIX, 'imix:64:1,1518:1']\nrequire_ndr: {64: 10, imix: 5}\n")
    c = load(f, {})
    assert c.frame_sizes == [64, "imix", "imix:64:1,1518:1"] and c.require_ndr == {64: 10.0, "imix": 5.0}


@pytest.mark.parametrize("yaml_text, message", [
    ("trial_s: -3\n", "config: trial_s must be in 0.1..86400 s, got -3"),
    ("ceiling_s: 0\n", "config: ceiling_s must be in 0.1..60 s, got 0"),
    ("frame_sizes: [64, 10000]\n", "frame_sizes must hold values in 64..9728 B, got 10000"),
    ("frame_sizes: [64, jumbo]\n", "frame size 'jumbo' is neither a size in bytes nor an IMIX"),
    ("frame_sizes: [64, 'imix:64:7,10:1']\n", "IMIX entry 10:1: sizes are 64..9728 B"),
    ("flows: many\n", "flows must be a whole number in 1..1048576"),
    ("vnf_ring: 300\n", "vnf_ring must be one of 256, 512, 1024, 2048, 4096, got 300"),
    ("colour: red\n", "unknown key 'colour'"),
    ("[1, 2]\n", "must be a mapping"),
    ("a: [\n", "not valid YAML"),
])
def test_bad_files_name_the_key(tmp_path, yaml_text, message):
    f = tmp_path / "c.yaml"
    f.write_text(yaml_text)
    with pytest.raises(ZeroLossError) as e:
        load(f, {})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_strict_preset():
    c = RunConfig(strict_rfc2544=True, ndr_loss_pct=0.5, pdr_loss_pct=1).effective()
    assert (c.trial_s, c.validation_s, c.drain_ms, c.ndr_loss_pct) == (60.0, 60.0, 2000, 0.0)


def test_cross_field_rules():
    with pytest.raises(ZeroLossError, match="pdr_loss_pct"):
        RunConfig(ndr_loss_pct=1, pdr_loss_pct=0.5)
    with pytest.raises(ZeroLossError, match="70000 flows"):
        RunConfig(flows=70000, flow_fields=["dst_port"])
    RunConfig(flows=70000)  # stepping IPs: fine


def test_every_key_has_help_with_units():
    h = field_help()
    assert h["trial_s"].endswith("[s, 0.1..86400]")
    assert set(h) == set(RunConfig.__dataclass_fields__)


def test_hex_masks_and_lcore_lists_given_as_numbers_are_text(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("ovs_pmd_cpu_mask: 0x6\novs_lcore_mask: 10\ngen_lcores: 1\ndut_lcores: 0\ndut_main_lcore: 0\n")
    c = load(f, {})
    assert (c.ovs_pmd_cpu_mask, c.ovs_lcore_mask, c.gen_lcores, c.dut_lcores) == ("0x6", "10", "1", "0")
    c = load(None, {"ovs_pmd_cpu_mask": 4, "gen_lcores": 1})  # numbers from elsewhere (a stored campaign)
    assert (c.ovs_pmd_cpu_mask, c.gen_lcores) == ("0x4", "1")
    with pytest.raises(ZeroLossError, match="ovs_pmd_cpu_mask must be a hex CPU mask .* got '-0x4'"):
        load(None, {"ovs_pmd_cpu_mask": -4})


def test_text_keys_are_the_cpu_masks_and_lcore_lists():
    """core.configfile names the settings YAML keeps as text (it cannot import RunConfig: core.config imports it);
    they must be every RunConfig field named like a CPU mask or lcore list, and only those, and the run's label
    (a name, whatever YAML makes of `label: 2026`)."""
    from zeroloss.core.configfile import TEXT_KEYS

    masks = {n for n in RunConfig.__dataclass_fields__ if n.endswith(("_mask", "_lcores", "_cpus"))}
    assert TEXT_KEYS == masks | {"label"}


@pytest.mark.parametrize("text, message", [
    (b"flows: 10 # caf\xe9\n", "c.yaml: not valid YAML (at character 15: invalid continuation byte)"),
    ("a: " + "[" * 3000 + "]" * 3000 + "\n", "c.yaml: nested too deeply"),
    ("flows: 2024-13-45\n", "a value YAML cannot convert (month must be in 1..12)"),
    ("flows: " + "9" * 5000 + "\n", "a value YAML cannot convert"),
    ("? [1]\n: 2\n", "not valid YAML (line 1, column 3: while constructing a mapping, found unhashable key)"),
    ("flows: 1\n---\nflows: 2\n", "expected a single document in the stream, but found another document"),
    ("flows: !!python/name:os.system\n", "could not determine a constructor"),
    ("\"a\\nb\": 1\n", r"unknown key 'a\nb'"),
    ("yes: 1\n", "unknown key True"),
    ("a: &x [*x]\n", "c.yaml: the alias *x is inside the node it names (a cycle), at line 1"),
    ("ports: [&x [1], *x, *x]\n", "ports must be a list of strings"),
    ("flows: &x 20\ndut_rxq: *x\n", "dut_rxq must be in 1..16, got 20"),
    ("flows: !!set {a, b}\n", "flows must be a whole number"),
    ("trial_s: .nan\n", "trial_s must be in 0.1..86400 s, got nan"),
])
def test_odd_yaml_is_one_line(tmp_path, text, message):
    f = tmp_path / "c.yaml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ZeroLossError) as e:
        load(f, {})
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_socket_limit_below_socket_mem_is_refused():
    with pytest.raises(ZeroLossError, match="ovs_socket_limit_mb 1024 is below ovs_socket_mem_mb 2048") as e:
        RunConfig(ovs_socket_mem_mb=2048, ovs_socket_limit_mb=1024)
    assert "\n" not in str(e.value)
    RunConfig(ovs_socket_mem_mb=2048, ovs_socket_limit_mb=0)  # 0: no limit of its own, the same as the memory
    RunConfig(ovs_socket_mem_mb=2048, ovs_socket_limit_mb=2048)


@pytest.mark.parametrize("settings, message", [
    ({"ovs_pmd_cpu_mask": "0x4"}, "config: ovs_pmd_cpu_mask 0x4 names core 2; this host has cores 0-1"),
    ({"ovs_lcore_mask": "0x3"}, None),
    ({"ovs_lcore_mask": "f0"}, "config: ovs_lcore_mask f0 names core 4; this host has cores 0-1"),
    ({"gen_lcores": "0-3"}, "config: gen_lcores 0-3 names core 2; this host has cores 0-1"),
    ({"gen_lcores": "0-99999999"}, "config: gen_lcores 0-99999999 names core 2"),
    ({"dut_lcores": "1,5"}, "config: dut_lcores 1,5 names core 5"),
    ({"dut_lcores": "0-1", "dut_main_lcore": 7}, "config: dut_main_lcore 7 names core 7; this host has cores 0-1"),
    ({"dut_lcores": "1-0"}, "the range 1-0 runs backwards"),
    ({"gen_lcores": "1@2"}, "gen_lcores '1@2' is not a list of cores such as 0,1 or 0-3"),
    ({"gen_lcores": ""}, "is not a list of cores"),
])
def test_check_cores_names_the_core_the_host_lacks(settings, message):
    cfg = RunConfig(**settings)
    if message is None:
        check_cores(cfg, online={0, 1}, usable={0, 1})
        return
    with pytest.raises(ZeroLossError) as e:
        check_cores(cfg, online={0, 1}, usable={0, 1})
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_check_cores_refuses_cores_outside_the_affinity():
    with pytest.raises(ZeroLossError, match="gen_lcores 1 names core 1, which this process may not use; it may use "
                                            "cores 0,2-3"):
        check_cores(RunConfig(gen_lcores="1", dut_lcores="0", dut_main_lcore=0), online={0, 1, 2, 3},
                    usable={0, 2, 3})
    check_cores(RunConfig(gen_lcores="2-3", dut_lcores="0,2", dut_main_lcore=0), online={0, 1, 2, 3},
                usable={0, 2, 3})


def test_check_cores_reads_this_host():
    import os

    usable = sorted(os.sched_getaffinity(0))
    check_cores(RunConfig(ovs_pmd_cpu_mask=hex(1 << usable[0]), ovs_lcore_mask=hex(1 << usable[-1]),
                          gen_lcores=str(usable[0]), dut_lcores=str(usable[-1]), dut_main_lcore=usable[-1]))
    with pytest.raises(ZeroLossError, match="names core 4096"):
        check_cores(RunConfig(gen_lcores="4096"))


def test_stored_configs_of_another_zeroloss_are_one_line():
    with pytest.raises(ZeroLossError, match="config has a key this zeroloss does not know: 'colour'"):
        stored({"colour": "red"})
    with pytest.raises(ZeroLossError, match="config is a list, not a mapping"):
        stored([1])


def test_check_cores_checks_the_vm_pins_only_where_a_vm_may_run():
    cfg = dict(gen_lcores="0", dut_lcores="0", dut_main_lcore=0, vnf_vcpus="0,5")
    check_cores(RunConfig(**cfg), online={0, 1}, usable={0, 1})  # p2p: no VM
    check_cores(RunConfig(topology="pvp", vnf="process", **cfg), online={0, 1}, usable={0, 1})
    with pytest.raises(ZeroLossError, match="vnf_vcpus 0,5 names core 5; this host has cores 0-1"):
        check_cores(RunConfig(topology="pvp", vnf="vm", **cfg), online={0, 1}, usable={0, 1})


def test_a_vm_ring_qemu_cannot_have_is_refused_before_anything_starts():
    with pytest.raises(ZeroLossError, match="QEMU's virtio-net takes 256, 512 or 1024"):
        RunConfig(topology="pvp", vnf="vm", vnf_ring=4096)
    RunConfig(topology="pvp", vnf="process", vnf_ring=4096)


def test_the_flat_out_measurement_lasts_ceiling_s():
    """zlgen's ceiling and the DUT's MRR are measured for ceiling_s (default 1 s, as before the setting)."""
    from types import SimpleNamespace

    from zeroloss.runs.trial import flat_out

    asked = []

    class Client:
        def configure(self, streams):
            return len(streams)

        def run_trial(self, duration_s, drain_ms):
            asked.append(duration_s)
            s = SimpleNamespace(port=0, rx_port=1, rx_unique=900, tx_pkts=1000, tx_refused=0)
            return SimpleNamespace(streams=(s,), tx_window_s=duration_s)

    target = SimpleNamespace(client=Client(), streams=lambda frame, rate: [None])
    assert flat_out(target, 64) == (900 / 1.0, 1000 / 1.0) and asked == [1.0]
    assert flat_out(target, 64, RunConfig(ceiling_s=0.3).ceiling_s) == (900 / 0.3, 1000 / 0.3) and asked[-1] == 0.3
    assert RunConfig().ceiling_s == 1.0
