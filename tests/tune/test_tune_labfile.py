"""`zeroloss tune --lab` checks the lab file before it takes the bench: a broken file is named, never 'the bench is
in use' while another zeroloss holds it (issue 29, item 13)."""

from __future__ import annotations

import os
import subprocess
import sys


def test_a_broken_lab_file_is_named_while_another_run_holds_the_bench(tmp_path):
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"), ZEROLOSS_LOCKDIR=str(tmp_path / "lock"))
    holder = subprocess.Popen([sys.executable, "-c", "from zeroloss.drivers.session import BENCH\nimport sys, time\n"
                               "with BENCH:\n    print('held', flush=True)\n    time.sleep(60)"],
                              env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        lab = tmp_path / "lab.yaml"
        lab.write_text("dut: {ssh: compute-0}\n")
        r = subprocess.run([sys.executable, "-m", "zeroloss.cli", "tune", "--lab", str(lab), "--target", "100%",
                            "--allow-dut-changes", "-o", str(tmp_path / "t.json")],
                           env=env, capture_output=True, text=True, timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert r.returncode == 1 and "Traceback" not in r.stderr
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and str(lab) in err and "generator" in err and "in use" not in err, err
