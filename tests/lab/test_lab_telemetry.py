"""Telemetry per trial in lab mode (issue 30 Must 3): the node's cores, interrupts and DPDK processes read over its
agent (drivers/lab/labtelemetry.py), the OVS PMD's iterations from pmd-perf-show, kept with every trial of a real run
through the lab node of tests/lab/lab.sh (OVS-DPDK and a testpmd VNF, reached over sshd on 127.0.0.1)."""

from __future__ import annotations

import pytest
import yaml

from zeroloss.results.resultfile import read_doc

from .test_lab_run import FAST, lab_file, no_traceback, zl

pytestmark = pytest.mark.bench


def test_every_trial_keeps_the_nodes_telemetry(tmp_path, lab, sshd):
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    out = tmp_path / "run.json"
    r = zl("run", "--lab", f, "--frame-sizes", "64", *FAST, "--granularity", "20", "--max-rate", "100k",
           "-o", str(out), "-q")
    no_traceback(r)
    assert r.returncode in (0, 3), r.stderr
    (search,) = read_doc(out)["searches"]
    trials = [t for t in search["trials"] if "ledger" in t]
    # a clean search trial is kept as a summary (results/keep.py: telemetry only where it decides); every other
    # trial keeps the node's telemetry, and the search has some (its validations)
    full = [t for t in trials if t.get("kept") != "summary"]
    assert full and all("telemetry" not in t for t in trials if t not in full)
    for t in full:
        tel = t["telemetry"]
        assert tel["host"] == "lab1"  # the node, by its ssh destination
        roles = {role for c in tel["cores"] for role in c["roles"]}
        assert {"pmd", "vnf"} <= roles, tel["cores"]  # the PMD's core and the VNF's pinned cores
        hz, window = tel["user_hz"], tel["window_s"]
        for c in tel["cores"]:
            total = sum(c["ticks"].values())
            assert abs(total - window * hz) <= 0.15 * window * hz + 3, (c, window)
            assert c["interrupts"] == sum(c["irqs"].values())
        procs = {p["role"]: p for p in tel["procs"]}
        assert set(procs) == {"pmd", "vnf"} and "vswitchd" in procs["pmd"]["name"], tel["procs"]
        assert procs["vnf"]["pid"] == int(lab.vnf_pid)  # found by its DPDK telemetry /info
        assert all(p["minflt"] >= 0 and p["majflt"] >= 0 for p in tel["procs"])
        assert tel["pmds"] and all(p["iterations"] > 0 for p in tel["pmds"].values()), tel["pmds"]
    ex = zl("explain", "--trial", str(full[0]["index"] + 1), str(out))
    assert ex.returncode == 0 and "telemetry (lab1" in ex.stdout, ex.stderr


def test_a_vnf_whose_telemetry_cannot_be_read_is_refused_before_traffic(tmp_path, lab, sshd):
    """A VNF's hops whose counters never come would stand in the ledger uncounted (issue 38, 9): one line naming
    the key, no trial run (and so no result file)."""
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    doc = yaml.safe_load(open(f))
    doc["dut"]["vnfs"][0]["telemetry"] = str(tmp_path / "no-such-socket")
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(doc))
    r = zl("lab", "--check", f)
    assert r.returncode == 0, r.stderr  # the check contacts nothing: the run is where it is found
    out = tmp_path / "run.json"
    r = zl("run", "--lab", f, "--frame-sizes", "64", *FAST, "--max-rate", "50k", "-o", str(out), "-q")
    no_traceback(r)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "dut.vnfs.0 (vnf1)" in r.stderr and "no-such-socket" in r.stderr and "--resume" not in r.stderr
    assert not out.exists()
