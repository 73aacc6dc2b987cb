"""`zeroloss bench --lab`'s document and table without a lab: what bench_lab returns and the CLI prints."""

from __future__ import annotations

import json

import pytest

from zeroloss.studies import labbench as lb


def test_a_remote_only_lab_has_no_local_columns():
    doc = lb.report(10, 1, 40, ([2.0, 4.0, 3.0], [10.0, 30.0, 20.0]), 0.5, lb.Walls(none=500.0, remote=550.0), None)
    out = doc.to_json()
    assert list(out) == ["readings", "ssh_logins", "requests", "remote_ms", "remote_state_ms", "trial_s",
                         "trial_wall_ms", "trial_overhead_pct"]
    assert out["remote_ms"] == {"median": 3.0, "p90": 4.0, "min": 2.0}
    assert out["trial_wall_ms"] == {"none": 500.0, "remote": 550.0}
    assert out["trial_overhead_pct"] == {"remote": pytest.approx(10.0)}
    text = lb.table(json.loads(json.dumps(out)), "root@node")
    row = next(ln for ln in text.splitlines() if ln.startswith("OVS + VNF counters"))
    assert row.split()[-3:] == ["3.00", "n/a", "n/a"]
    assert text.splitlines()[-2] == ("a 0.5 s trial (+0.1 s drain) takes 500 ms without readings, 550 ms with the "
                                     "remote readings (+10.0 %)")
    assert text.endswith("node: root@node")


def test_a_local_lab_is_compared_with_the_benchs_own_reading():
    doc = lb.report(3, 2, 9, ([8.0], [20.0]), 1.0, lb.Walls(none=1000.0, remote=1100.0, local=1050.0),
                    ([2.0], [5.0])).to_json()
    assert doc["ratio"] == 4.0 and doc["local_state_ms"] == {"median": 5.0, "p90": 5.0, "min": 5.0}
    assert doc["trial_overhead_pct"] == {"remote": pytest.approx(10.0), "local": pytest.approx(5.0)}
    text = lb.table(doc, "n")
    row = next(ln for ln in text.splitlines() if ln.startswith("OVS state"))
    assert row.split()[-3:] == ["20.00", "5.00", "4.00"]
    assert "1050 ms with the local readings (+5.0 %)" in text


def test_no_readings_is_an_error():
    with pytest.raises(lb.ZeroLossError, match="no readings"):
        lb.report(0, 1, 0, ([], []), 0.5, lb.Walls(none=1.0, remote=1.0), None)
