"""Campaign files: cases, crosses, skips, checked settings, and the combined table."""

import json
from pathlib import Path

import pytest

from zeroloss.campaign import builtin_names, campaign_table, expand, read
from zeroloss.errors import ZeroLossError

FIX = Path(__file__).parent / "fixtures"


def test_builtins_expand_to_checked_settings():
    assert {"reference-matrix", "vnf-ring"} <= set(builtin_names())
    cases = expand(read("reference-matrix"), {"trial_s": 1})
    names = [c["name"] for c in cases]
    assert names[0].startswith("1 ") and len(names) == 8
    skipped = [c["name"][0] for c in cases if "skip" in c]
    assert skipped == ["2"]
    assert (cases[5]["config"].bond, cases[7]["config"].bond, cases[7]["config"].dut_rxq) == \
        ("balance-slb", "balance-slb", 2)
    seven = cases[6]["config"]
    assert (seven.bridges, seven.vlan, seven.dut_rxq, seven.topology, seven.trial_s) == (2, 100, 2, "pvp", 1)
    assert seven.frame_sizes == [4096, 8192, 9000]


def test_cross_makes_every_combination(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("name: x\nbase: {frame_sizes: [64]}\ncases:\n  - name: a\n  - name: b\n    set: {flows: 8}\n"
                 "cross:\n  vnf_ring: [256, 4096]\n  dut_rxq: [1, 2]\n")
    cases = expand(read(str(f)), {})
    assert [c["name"] for c in cases][:2] == ["a (vnf_ring=256, dut_rxq=1)", "a (vnf_ring=256, dut_rxq=2)"]
    assert len(cases) == 8 and cases[-1]["config"].flows == 8 and cases[-1]["config"].vnf_ring == 4096


@pytest.mark.parametrize("text, message", [
    ("cases: [{name: a, set: {flows: 0}}]\n", "campaign case 'a': config: flows must be in 1..1048576, got 0"),
    ("colour: red\n", "unknown key 'colour'"),
    ("- 1\n", "must be a mapping"),
])
def test_bad_campaigns_name_the_fault(tmp_path, text, message):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(ZeroLossError, match=message):
        expand(read(str(f)), {})


def test_unknown_campaign_lists_the_builtins():
    with pytest.raises(ZeroLossError, match="built-in: .*reference-matrix"):
        read("no-such-campaign")


def test_v1_campaign_fixture_prints_the_same_table():
    doc = json.loads((FIX / "campaign_v1.json").read_text())
    assert doc["format"] == "zeroloss-campaign" and doc["version"] == 1
    assert campaign_table(doc) + "\n" == (FIX / "campaign_v1.table.txt").read_text()
