"""A search flagged noisy because an OpenFlow meter's burst let short trials pass where its validations lost frames
is flagged meter-burst, with the meter and its burst named (runner.meter_burst; issue 38, 11)."""

from __future__ import annotations

from zeroloss.loss.records import Finding
from zeroloss.results.records import TrialEntry
from zeroloss.runs.run import meter_burst

METER = {"hop": "OVS meter br0/1", "where": "br0", "reason": "meter", "frames": 900, "counter": "meter",
         "cause": "OpenFlow meter 1 on bridge br0 polices this direction to 100000 pps",
         "evidence": ["meter 1 on br0: drop band at 100000 pps, burst 2000"], "remedies": []}
OVERLOAD = {**METER, "reason": "rx_missed", "evidence": ["PMD core 1 was 99 % busy"]}


def _t(i: int, kind: str, verdict: str, finding: dict | None = None) -> TrialEntry:
    return TrialEntry(index=i, rate_pps=101_000.0, duration_s=5.0 if kind == "validation" else 0.5, kind=kind,
                      verdict=verdict, goal="ndr", passes=("ndr",) if verdict == "pass" else (),
                      diagnosis=(Finding.from_json(finding),) if finding else None)


def test_a_meter_deciding_short_against_long_trials_is_named_not_noise():
    trials = [_t(0, "search", "pass"), _t(1, "validation", "fail", METER), _t(2, "validation", "pass")]
    flags, why = meter_burst(("generator-bound", "noisy"), trials, 0.5, 5.0)
    assert flags == ("generator-bound", "meter-burst")
    assert why.startswith("meter 1 on br0: drop band at 100000 pps, burst 2000: its burst decides the search")
    assert "0.5 s trials" in why and "5 s validations" in why and "burst_size" in why


def test_noise_elsewhere_stays_noise():
    # a validation lost at a PMD, or no failed validation with a diagnosis: the flag is the search's
    for trials in ([_t(1, "validation", "fail", OVERLOAD)], [_t(1, "validation", "fail", METER),
                                                             _t(2, "validation", "fail", OVERLOAD)],
                   [_t(1, "search", "fail", METER)], []):
        assert meter_burst(("noisy",), trials, 0.5, 5.0) == (("noisy",), "")
    assert meter_burst(("anomalies",), [_t(1, "validation", "fail", METER)], 0.5, 5.0) == (("anomalies",), "")
