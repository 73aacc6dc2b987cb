"""Lab mode's CNF endpoint (issue 31 Must 3): the testpmd VNF of tests/lab/lab.sh read as a CNF, through `kubectl exec`
into its pod. No cluster exists here: tests/lab/fake_kubectl.py stands first on PATH as kubectl, checks the command
line zeroloss gives it and runs the command on this host (the "pod" is this host, as sshd's guest is for the SSH VNF),
or prints kubectl's own error texts (tests/fixtures/kube)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from zeroloss.core.errors import ZeroLossError
from zeroloss.results.resultfile import read_doc

from .test_lab_run import ZL, lab_file, no_traceback

pytestmark = pytest.mark.bench

FAKE = Path(__file__).with_name("fake_kubectl.py")
FIXTURES = Path(__file__).parent.parent / "fixtures" / "kube"
POD = {"pod": "testpmd-cnf", "namespace": "cnf", "container": "testpmd"}


def cnf_lab(tmp_path, lab, sshd) -> str:
    """The lab file of test_lab_run with its VNF reached as a CNF: the telemetry socket read inside the pod."""
    f = lab_file(tmp_path / "lab.yaml", lab, sshd)
    doc = yaml.safe_load(open(f))
    doc["dut"]["vnfs"][0]["kubectl"] = dict(POD)
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(doc))
    return f


def env(tmp_path, **extra) -> dict:
    """The environment with fake_kubectl first on PATH as kubectl, logging its command lines and the pod's pids."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "kubectl").exists():
        (bin_dir / "kubectl").symlink_to(FAKE)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "ZL_KUBECTL_LOG": str(tmp_path / "argv.log"), "ZL_KUBECTL_PIDS": str(tmp_path / "pids"), **extra}


def soak(f, out, environ, rate="0.5%") -> subprocess.Popen:
    return subprocess.Popen([*ZL, "trial", "--lab", f, "--frame-size", "1518", "--duration", "2", "--interval", "1",
                             "--json", "-o", str(out), "--rate", rate], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environ, stdin=subprocess.DEVNULL)


def finish(p: subprocess.Popen, timeout=120) -> tuple[str, str]:
    try:
        return p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_cnf_counters_are_ledger_hops_read_through_kubectl_exec(tmp_path, lab, sshd):
    f = cnf_lab(tmp_path, lab, sshd)
    out, err = finish(soak(f, tmp_path / "soak.json", env(tmp_path)))
    assert "Traceback" not in err
    doc = json.loads(out)
    assert doc["state"] == "complete" and len(doc["intervals"]) >= 2
    for d in doc["result"]["directions"]:
        assert d["tx"] > 0
    for led in doc["ledger"]:
        assert led["sent"] == led["received"] + led["counted"] + led["unexplained"]
        assert led["unexplained"] == 0, led
        kinds = [h["kind"] for h in led["hops"]]
        assert kinds.count("proc_rx") == 1 and all(h["counters"] for h in led["hops"]), led["hops"]
    assert doc["counters"]["procs"]["vnf1"][0]["ipackets"] > 0  # the CNF's testpmd, read in its pod
    # one exec session for the whole trial, in the shape kubectl takes, running the pod's python3
    (call,) = [json.loads(x) for x in (tmp_path / "argv.log").read_text().splitlines()]
    assert (call["tool"], call["namespace"], call["pod"], call["container"]) == ("kubectl", "cnf", "testpmd-cnf",
                                                                                  "testpmd")
    assert call["options"] == {} and call["cmd"][:2] == ["sh", "-c"]


def test_cnf_pod_gone_mid_trial_is_one_line(tmp_path, lab, sshd):
    f = cnf_lab(tmp_path, lab, sshd)
    out_file = tmp_path / "soak.json"
    p = soak(f, out_file, env(tmp_path))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if "placement" in read_doc(out_file):
                break
        except (OSError, ValueError, ZeroLossError):
            pass
        time.sleep(0.02)
    else:
        p.kill()
        pytest.fail("the trial did not start in 60 s")
    os.kill(int((tmp_path / "pids").read_text().split()[0]), signal.SIGKILL)  # the pod deleted: its process killed
    _, err = finish(p)
    assert p.returncode == 1 and "Traceback" not in err, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("zeroloss:")]
    assert len(lines) == 1, err
    assert "lost the kubectl exec session to pod cnf/testpmd-cnf container testpmd: command terminated with exit " \
           "code 137" in lines[0] and "kubectl get pod -n cnf testpmd-cnf" in lines[0], lines[0]
    assert read_doc(out_file)["state"] == "failed"


def test_cnf_pod_not_found_is_one_line_before_traffic(tmp_path, lab, sshd):
    f = cnf_lab(tmp_path, lab, sshd)
    doc = yaml.safe_load(open(f))
    doc["dut"]["vnfs"][0]["kubectl"]["pod"] = "deployment"  # the pod of the fixture's kubectl text
    (tmp_path / "lab.yaml").write_text(yaml.safe_dump(doc))
    t0 = time.monotonic()
    r = subprocess.run([*ZL, "trial", "--lab", f, "--rate", "1%", "--duration", "1", "-o", str(tmp_path / "s.json")],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env=env(tmp_path, ZL_KUBECTL_FAIL=str(FIXTURES / "pod-not-found.txt")))
    no_traceback(r)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
    assert "kubectl: no pod 'deployment' in namespace 'cnf'" in r.stderr and "kubectl get pods -n cnf" in r.stderr
    assert time.monotonic() - t0 < 30  # at the session's start, not after a trial
