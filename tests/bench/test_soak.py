"""A soak on the bench (`zeroloss trial --interval`): 20 s at 100 kpps per direction through testpmd P2P, the DUT
frozen (SIGSTOP) for 0.5 s mid-soak. The file holds exactly one loss event at the freeze's time, its ledger
balances (every lost frame counted at a hop), and `report` and `explain` read the file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.resultfile import read_doc

from .test_faults import pid_of
from .test_run import ZEROLOSS


def _rows(out) -> int:
    try:
        return len(read_doc(out)["intervals"])
    except (OSError, ValueError, KeyError, ZeroLossError):
        return 0


def test_bench_soak_finds_the_freeze_as_one_loss_event_with_a_balanced_ledger(tmp_path):
    out, rundir = tmp_path / "soak.json", tmp_path / "run"
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(rundir))
    p = subprocess.Popen([*ZEROLOSS, "trial", "--duration", "20", "--interval", "1", "--rate", "100k",
                          "--drain-ms", "300", "-o", str(out)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 40
        while _rows(out) < 8 and time.monotonic() < deadline:
            assert p.poll() is None, p.communicate()[1]
            time.sleep(0.05)
        pid = pid_of(rundir, "testpmd.log.pid")
        t_stop = time.time()
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(pid, signal.SIGCONT)
        stdout, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            p.wait(30)
    assert "Traceback" not in err and p.returncode == 2, err  # 2: frames were lost
    doc = json.loads(out.read_text())
    assert doc["state"] == "complete" and doc["version"] == 2 and doc["target"] == "memif"
    events = doc["loss_events"]
    assert len(events) == 1, events
    (e,) = events
    at = t_stop - doc["started_at"]
    assert e["start_s"] - 0.2 <= at <= e["end_s"] + 0.2, (at, e)
    assert e["end_s"] - e["start_s"] <= 3.5, e  # the freeze's interval(s), not the soak
    total = sum(d["lost"] for d in doc["result"]["directions"])
    # the frames lost, lost then (less at most the frames a reading found in flight: the totals are exact)
    assert total > 0 and 0.995 * total <= e["lost"] <= total, (e["lost"], total)
    # sent = received + counted + unexplained, and nothing unexplained beyond what the readings at the ledger's two
    # ends leave open: the frames zlgen sent or received while the DUT's counters were read (read_slack, measured
    # per reading: a hypervisor's stall during a read widens it), plus a burst (32) in flight per end
    assert set(e["read_slack"]) == {led["direction"] for led in e["ledger"]}, e["read_slack"]
    for led in e["ledger"]:
        assert led["sent"] == led["received"] + led["counted"] + led["unexplained"]
        assert 0 < e["read_slack"][led["direction"]] < 0.2 * led["sent"], (e["read_slack"], led)
        assert abs(led["unexplained"]) <= e["read_slack"][led["direction"]] + 64, json.dumps(e, indent=1)
    assert sum(led["counted"] for led in e["ledger"]) >= 0.99 * e["lost"], e["ledger"]
    assert e["diagnosis"] and e["diagnosis"][0]["frames"] > 0
    page = tmp_path / "soak.html"
    r = subprocess.run([*ZEROLOSS, "report", str(out), "-o", str(page)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "Loss events" in page.read_text() and page.read_text().count("<svg") == 1
    r = subprocess.run([*ZEROLOSS, "explain", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and "loss events: 1" in r.stdout and "event 1 ledger" in r.stdout, r.stdout + r.stderr
