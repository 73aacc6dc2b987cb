"""CPU lists and OVS masks, including the whitepaper's masks (Appendix C)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeroloss.core.cpuset import format_list, parse_list, parse_mask, to_mask


def test_parse_and_format_lists():
    assert parse_list("0-2,8,10-11") == (0, 1, 2, 8, 10, 11)
    assert parse_list(" \n") == ()
    assert format_list([11, 10, 8, 2, 1, 0, 1]) == "0-2,8,10-11"
    assert format_list([]) == ""


@pytest.mark.parametrize("text, fault", [("1-a", "'1-a'"), ("5-2", "runs backwards")])
def test_bad_lists_name_the_item(text, fault):
    with pytest.raises(ValueError, match=fault):
        parse_list(text)


def test_whitepaper_masks():
    # dpdk-lcore-mask and pmd-cpu-mask from the whitepaper's `ovs-vsctl get Open_vSwitch . other_config`
    assert parse_mask("3000000003") == (0, 1, 36, 37)
    assert parse_mask("100601004100601004") == (2, 12, 21, 22, 32, 38, 48, 57, 58, 68)
    assert to_mask([0, 1, 36, 37]) == "0x3000000003"
    assert parse_mask("0x606") == (1, 2, 9, 10)
    with pytest.raises(ValueError, match="not a hexadecimal CPU mask"):
        parse_mask("0xzz")


@given(st.sets(st.integers(0, 255)))
def test_round_trips(cpus):
    assert parse_list(format_list(cpus)) == tuple(sorted(cpus))
    assert parse_mask(to_mask(cpus)) == tuple(sorted(cpus))
