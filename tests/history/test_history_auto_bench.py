"""`zeroloss run --history DB` on the real bench (a short 64 B search): the result file is in the history when the
run ends, its NDR as the file has it; a database that cannot take it is one warning line, and the run's exit code
and file are what they are without --history."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy import select

from zeroloss.history.db import open_db
from zeroloss.history.models import Point, Run
from zeroloss.results.resultfile import ResultFile, read_doc
from zeroloss.results.verdict import verdict

from .helpers import counts

pytestmark = pytest.mark.bench

FAST = ["--frame-sizes", "64", "--trial", "0.3", "--validation", "0.6", "--drain-ms", "100", "--granularity", "5",
        "--flows", "64", "--warmup", "0", "--set", "ceiling_s=0.3", "--latency-loads", "none", "--set",
        "core_probe=false"]


def _own_code(r: subprocess.CompletedProcess[str], out) -> None:
    """The run's exit code is its verdict's (0 pass or no requirement; 3 inconclusive when a loaded host kept zlgen
    from its core), whatever happened to the history."""
    assert r.returncode in (0, 2, 3), r.stderr[-3000:]
    assert r.returncode == verdict(ResultFile.load(out).run).exit_code


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ZEROLOSS_HISTORY_AUTO"}
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", "run", *FAST, *args], capture_output=True,
                          text=True, timeout=600, env=env)


def test_a_run_is_in_the_history_when_it_ends(tmp_path):
    db, out = tmp_path / "history.sqlite", tmp_path / "r.json"
    r = _run("-o", str(out), "--history", str(db))
    _own_code(r, out)
    stored = [line for line in r.stderr.splitlines() if line.startswith("history: ")]
    assert len(stored) == 1 and f"{out}: stored (run, 1 run(s), 1 point(s)" in stored[0], r.stderr[-3000:]
    doc = read_doc(out)
    history = open_db(str(db))
    assert counts(history)["documents"] == 1
    with history.transaction() as conn:
        run = conn.execute(select(Run.node, Run.topology, Run.trials, Run.zlgen_version, Run.dpdk_version,
                                  Run.zeroloss_version, Run.kernel)).one()
        ndr = conn.execute(select(Point.ndr_pps).where(Point.frame == "64")).scalar_one()
    assert run.topology == "p2p" and run.node != "unknown"
    # the versions a history tells changes by: zlgen's own (its hello), the DPDK it runs, zeroloss, the kernel
    assert run.zlgen_version == doc["placement"]["memif"]["zlgen"] and run.zlgen_version
    assert run.dpdk_version.startswith("DPDK ") and run.zeroloss_version and run.kernel
    assert run.trials == len(doc["searches"][0]["trials"])
    assert ndr == pytest.approx(doc["searches"][0]["result"]["ndr"]["rate_pps"])


def test_a_database_that_cannot_take_it_changes_nothing_but_one_line(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database " * 100)
    out = tmp_path / "r.json"
    r = _run("-o", str(out), "--history", str(junk), "--json")
    _own_code(r, out)
    warned = [line for line in r.stderr.splitlines() if "history" in line]
    assert len(warned) == 1 and warned[0].startswith(f"warning: history: {out} not stored: "), r.stderr[-3000:]
    assert read_doc(out)["state"] == "complete"
    assert junk.read_text() == "not a database " * 100
