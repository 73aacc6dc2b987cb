"""`zeroloss bench --search`'s pure parts: the strategies and what each runs."""

from __future__ import annotations

import pytest

from zeroloss.searchbench import STRATEGIES, _search_and_trial, parse_cases, parse_strategies


def test_rfc2544_is_the_binary_search_with_every_trial_at_the_final_duration():
    assert _search_and_trial("rfc2544", 2.0, 5.0) == ("binary", 5.0)
    assert _search_and_trial("binary", 2.0, 5.0) == ("binary", 2.0)
    assert _search_and_trial("mlr", 2.0, 5.0) == ("mlr", 2.0)


def test_strategies_are_known_names_each_once_in_order():
    assert parse_strategies("mlr, rfc2544") == ["mlr", "rfc2544"]
    assert parse_strategies(",".join(STRATEGIES)) == list(STRATEGIES)
    for bad in ("", "binary,binary", "binary,fast", ","):
        with pytest.raises(ValueError):
            parse_strategies(bad)


def test_cases_are_topology_and_size():
    assert parse_cases("p2p:64, pvp:1518") == [("p2p", 64), ("pvp", 1518)]
    with pytest.raises(ValueError):
        parse_cases("p2p")
