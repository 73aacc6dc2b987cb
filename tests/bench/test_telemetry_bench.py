"""Telemetry per trial on the real bench (issue 30 Must 3): one short `zeroloss run` on ovs-p2p, its result file's
trials carry the telemetry of the bench's cores (zlgen's, the PMD's), processes (zlgen, ovs-vswitchd) and OVS PMD,
with numbers that add up; the HTML report plots it and `zeroloss explain` prints it."""

from __future__ import annotations

import subprocess
import sys

from zeroloss.results.resultfile import read_doc

from .verdicts import assert_ran

ZEROLOSS = [sys.executable, "-m", "zeroloss.cli"]
SHARES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def test_every_trial_keeps_the_telemetry_of_the_bench(ovs_p2p_run, tmp_path):
    r, out = ovs_p2p_run  # the run on ovs-p2p of conftest.py, shared with test_interference_bench
    assert_ran(r)
    (search,) = read_doc(out)["searches"]
    full = [t for t in search["trials"] if t.get("kept") != "summary"]  # clean search trials: summaries (keep.py)
    assert full
    for t in full:
        tel = t["telemetry"]
        hz, window = tel["user_hz"], tel["window_s"]
        assert window >= t["duration_s"], (window, t["duration_s"])  # read before and after the trial
        roles = {r for c in tel["cores"] for r in c["roles"]}
        assert {"pmd", "zlgen"} <= roles, tel["cores"]
        for c in tel["cores"]:
            ticks = c["ticks"]
            total = sum(ticks.values())
            # every tick of the core over the trial is one of the kinds, and they are the time that passed
            assert abs(total - window * hz) <= 0.1 * window * hz + 3, (c, window)
            assert abs(sum(c["pct"][k] for k in SHARES) - 100) <= 0.5, c
            assert c["pct"]["busy"] == round(100 * sum(ticks[k] for k in ("user", "nice", "system", "irq",
                                                                          "softirq")) / total, 1)
            assert c["interrupts"] == sum(c["irqs"].values()) and all(n > 0 for n in c["irqs"].values())
            if "pmd" in c["roles"]:  # a PMD polls: its core runs (or is stolen) for most of the trial
                assert c["pct"]["busy"] + c["pct"]["steal"] >= 50, c
        names = {p["name"] for p in tel["procs"]}
        assert "ovs-vswitchd" in names or any("vswitchd" in n for n in names), names
        assert any(p["role"] == "zlgen" for p in tel["procs"]), tel["procs"]
        assert all(p["minflt"] >= 0 and p["majflt"] >= 0 for p in tel["procs"])
        (pmd,) = tel["pmds"].values()
        assert pmd["iterations"] == pmd["busy_iterations"] + pmd["idle_iterations"] > 0, pmd
        if pmd["rx_packets"] > 0:  # OVS's own count of cycles per packet, > 0, and a whole iteration in µs
            assert pmd["cycles_per_pkt"] > 0 and pmd["us_per_it"] > 0, pmd
    html = tmp_path / "r.html"
    rep = subprocess.run([*ZEROLOSS, "report", str(out), "-o", str(html), "-q"], capture_output=True, text=True,
                         timeout=300)
    assert rep.returncode == 0, rep.stderr
    page = html.read_text()
    assert page.count('<div class="fig telemetry">') == 1 and "cycles/packet" in page
    ex = subprocess.run([*ZEROLOSS, "explain", "--trial", "1", str(out)], capture_output=True, text=True, timeout=60)
    assert ex.returncode == 0, ex.stderr
    assert "telemetry (local" in ex.stdout and "page faults (minor/major)" in ex.stdout and "cycles/pkt" in ex.stdout
