"""make check's workers (tests/workers.py): a test marked `alone` runs while no other test does, the others run side
by side, and a waiting `alone` test is not passed over by tests that ask after it."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

import workers

TESTS = Path(__file__).resolve().parent


def test_an_alone_test_waits_for_the_running_ones_and_the_later_ones_wait_for_it(tmp_path):
    events: list[str] = []
    running = threading.Event()

    def hold(name: str, alone: bool, seconds: float, ready: threading.Event | None = None) -> None:
        with workers.turn(tmp_path, alone):
            events.append(f"{name} in")
            if ready is not None:
                ready.set()
            time.sleep(seconds)
            events.append(f"{name} out")

    first = threading.Thread(target=hold, args=("first", False, 0.6, running))
    first.start()
    running.wait(5)
    side = threading.Thread(target=hold, args=("side", False, 0.1))  # shares with first
    side.start()
    side.join(5)
    alone = threading.Thread(target=hold, args=("alone", True, 0.3))
    alone.start()
    time.sleep(0.2)  # alone now waits for first, holding the turn
    later = threading.Thread(target=hold, args=("later", False, 0.1))
    later.start()
    for t in (first, alone, later):
        t.join(10)
    assert events == ["first in", "side in", "side out", "first out", "alone in", "alone out", "later in",
                      "later out"]


INNER = '''
import json, os, time
import pytest

def _note(name):
    t0 = time.monotonic()
    time.sleep(0.4)
    line = json.dumps({"name": name, "worker": os.environ["PYTEST_XDIST_WORKER"], "in": t0, "out": time.monotonic()})
    with open(os.environ["ZL_INNER_LOG"], "a") as f:
        f.write(line + "\\n")

@pytest.mark.parametrize("i", range(4))
def test_before(i):
    _note(f"before{i}")

@pytest.mark.alone
def test_alone():
    _note("alone")

@pytest.mark.parametrize("i", range(4))
def test_after(i):
    _note(f"after{i}")
'''


def test_under_xdist_the_alone_test_overlaps_no_other(pytester, monkeypatch, tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (make setup installs the test extra)")
    log = tmp_path / "log"
    monkeypatch.setenv("ZL_INNER_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p))
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "workers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    spans = {d["name"]: d for d in map(json.loads, log.read_text().splitlines())}
    alone = spans.pop("alone")
    assert not [n for n, d in spans.items() if d["in"] < alone["out"] and alone["in"] < d["out"]], (alone, spans)
    # not vacuous: the other tests did run side by side on both workers
    assert {d["worker"] for d in spans.values()} == {"gw0", "gw1"}
    assert any(a["in"] < b["out"] and b["in"] < a["out"] for a in spans.values() for b in spans.values()
               if a["worker"] != b["worker"])
