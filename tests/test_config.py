"""Run settings: defaults, YAML, flags on top, one-line faults naming key and range."""

import pytest

from zeroloss.config import DEFAULT_SIZES, RunConfig, field_help, load
from zeroloss.errors import ZeroLossError


def test_defaults_are_the_issue_defaults():
    c = RunConfig()
    assert tuple(c.frame_sizes) == DEFAULT_SIZES == (64, 128, 256, 512, 1024, 1280, 1518, 4096, 8192, 9000)
    assert c.flows == 1024 and c.bidirectional and c.dut == "testpmd" and c.link_speed_gbps == 25


def test_yaml_then_flags(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("frame_sizes: [64, 1518]\nflows: 10\ntrial_s: 1.5\n")
    c = load(f, {"flows": 99, "trial_s": None})
    assert c.frame_sizes == [64, 1518] and c.flows == 99 and c.trial_s == 1.5


@pytest.mark.parametrize("yaml_text, message", [
    ("trial_s: -3\n", "config: trial_s must be in 0.1..86400 s, got -3"),
    ("frame_sizes: [64, 10000]\n", "frame_sizes must hold values in 64..9728 B, got 10000"),
    ("flows: many\n", "flows must be a whole number in 1..1048576"),
    ("dut: ovs\n", "dut must be one of testpmd, external"),
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
