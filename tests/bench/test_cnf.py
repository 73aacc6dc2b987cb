"""The VNF as a container (--vnf container, a CNF): testpmd from the image built from the host's DPDK, run by podman
(runc), its vhost-user sockets mounted, its counters read from inside through its mounted EAL runtime folder; started
by `podman run` or by `podman kube play` of the Pod manifest cnf.k8s renders. Nothing is left after a run, an error
or a kill -9 of any part: the container's testpmd, its conmon, or zeroloss itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from zeroloss.drivers.vnf.container import image_name
from zeroloss.host.cnf.k8s import validate
from zeroloss.results.resultfile import read_doc

from .test_faults import SEARCH, ZEROLOSS, leftovers, one_error_line, pid_of, start, trials, wait_trials
from .test_ovs import _conserved
from .test_run import run
from .verdicts import assert_ran


def _image_missing() -> str | None:
    try:
        r = subprocess.run(["podman", "image", "exists", image_name()], capture_output=True, timeout=30)
    except FileNotFoundError:
        return "podman is not installed (make setup)"
    return None if r.returncode == 0 else "the CNF image is not built (make setup)"


why = _image_missing()
pytestmark = pytest.mark.skipif(why is not None, reason=f"no CNF here: {why}")

# the first trial at half the top: the top (5 % above the MRR) fails and its disturbed or generator-short trials
# are retried, some 4 s a search; the claims are about the path's ledger, not about the search's top
CNF = ["--vnf", "container", "--trial", "0.5", "--validation", "1", "--drain-ms", "300", "--granularity", "10",
       "--start", "50", "--flows", "16", "--warmup", "0.3", "--latency-loads", "none", "--set", "core_probe=false"]


def ours(pid: int) -> list[str]:
    """Containers and Pods of the zeroloss with this pid (their names carry its session prefix zl<pid>s)."""
    names = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True,
                           timeout=60).stdout.split()
    pods = subprocess.run(["podman", "pod", "ls", "--format", "{{.Name}}"], capture_output=True, text=True,
                          timeout=60).stdout.split()
    return [n for n in names + pods if f"zl-zl{pid}s" in n]


# podman run with vhost-user ports at 64 and 9000 B; the Pod from its manifest, with memif ports (1518 B at most)
@pytest.mark.parametrize("launch,link,sizes", [("run", "vhost", "64,9000"), ("kube", "memif", "64")])
def test_container_path_accounts_for_every_frame(tmp_path, launch, link, sizes):
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"))
    out = tmp_path / "r.json"
    r = run("--topology", "pvp", "--frame-sizes", sizes, *CNF, "--cnf-launch", launch, "--vnf-link", link,
            "-o", str(out), "--json", env=env, timeout=600)
    assert_ran(r)
    doc = read_doc(out)
    place = doc["placement"]["pvp"]
    assert place["vnf"] == "container" and place["cnf_launch"] == launch and place["vnf_link"] == link
    assert place["cnf_image"].startswith("localhost/zeroloss-testpmd:") and all(place["cnf_start_s"])
    assert place["vnf_cpus"] == [[0, 1]]
    if launch == "kube":  # the Pod that ran is the one kept, and it is a valid Kubernetes Pod
        (pod,) = place["cnf_pods"]
        pod = json.loads(pod)
        validate(pod)
        (ctr,) = pod["spec"]["containers"]
        assert ctr["resources"]["requests"] == ctr["resources"]["limits"]
        assert {v["hostPath"]["path"] for v in pod["spec"]["volumes"]} >= {"/dev/hugepages"}
    for s in doc["searches"]:  # an NDR, or a search the shared host's stalls left to the generator (and said so)
        assert s["result"]["ndr"]["rate_pps"] or "generator-limited" in s["result"]["flags"], s["frame"]
        for t in s["trials"]:
            if t.get("kept") == "summary":  # a clean search trial keeps no counters (results/keep.py)
                continue
            assert set(t["counters"]["procs"]) == {"vnf0"}  # the container testpmd's counters, from inside
    dirs = _conserved(doc)  # nothing unexplained
    assert sum(d["ledger"]["sent"] for d in dirs) > 0
    assert leftovers(tmp_path) == []
    left = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}} {{.Mounts}}"], capture_output=True,
                          text=True, timeout=60).stdout
    assert str(tmp_path) not in left, left


def test_kill_9_of_the_containers_testpmd_conmon_or_zeroloss_leaves_nothing(tmp_path):
    """One search cut by kill -9 of the container's testpmd, then of its conmon, then by Ctrl-C, then by kill -9 of
    zeroloss itself, resumed after each: each cut is one line naming what died, no container or Pod is left, and the
    search completes."""
    out, rundir = tmp_path / "r.json", tmp_path / "run"
    # 2 %: the top (5 % above the MRR) fails, then 6 bisections (2**6 > 100 / 2) and a validation: at least 8 trials,
    # more than the 4 cuts need (one new trial each), and few enough that the last resume is short (at 0.2 % the
    # search took 11 trials at least, and its validations near the edge often failed: 66 records, 49 s, seen)
    args = ["--topology", "pvp", "--vnf", "container", "--frame-sizes", "64", *SEARCH, "--granularity", "2"]
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(rundir))
    p = start(out, rundir, *args)
    for pidfile, words in (("testpmd.pid", ("testpmd", "container", "killed by SIGKILL")),
                           ("conmon.pid", ("conmon", "is gone"))):
        wait_trials(p, out, trials(out) + 1)
        os.kill(pid_of(rundir, pidfile), signal.SIGKILL)
        _, err = p.communicate(timeout=120)
        assert p.returncode == 1, (pidfile, err)
        line = one_error_line(err)
        assert all(w in line for w in words), (pidfile, line)
        assert f"zeroloss run --resume {out}" in line, line
        assert read_doc(out)["state"] == "failed"
        assert ours(p.pid) == [], f"{pidfile}: a container outlived the run"
        assert leftovers(tmp_path) == [], pidfile
        p = subprocess.Popen([*ZEROLOSS, "run", "--resume", str(out), "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)

    # Ctrl-C: the run stops in order, the file is resumable, the container is gone
    wait_trials(p, out, trials(out) + 1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert "Traceback" not in err and read_doc(out)["state"] == "interrupted", err
    assert ours(p.pid) == [] and leftovers(tmp_path) == []
    p = subprocess.Popen([*ZEROLOSS, "run", "--resume", str(out), "-q"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)

    # zeroloss itself: the podman client gets SIGTERM as it dies, podman passes it to testpmd, --rm removes it
    wait_trials(p, out, trials(out) + 1)
    p.kill()
    p.communicate(timeout=30)
    deadline = time.monotonic() + 20
    while ours(p.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ours(p.pid) == [], "the container outlived zeroloss"
    r = subprocess.run([*ZEROLOSS, "run", "--resume", str(out), "-q", "--json"], capture_output=True, text=True,
                       env=env, timeout=600)
    assert_ran(r)
    doc = read_doc(out)
    assert doc["state"] == "complete" and doc["searches"][0]["result"]["ndr"]["rate_pps"]
    assert leftovers(tmp_path) == []


def test_missing_image_is_one_line(tmp_path):
    """A CNF whose image is not there: one line naming it and the remedy, nothing started or left."""
    env = dict(os.environ, ZEROLOSS_RUNDIR=str(tmp_path / "run"), ZEROLOSS_CNF_IMAGE="localhost/zeroloss-none:0")
    r = subprocess.run([*ZEROLOSS, "run", "--topology", "pvp", "--frame-sizes", "64", *CNF, "-o",
                        str(tmp_path / "r.json")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1
    line = one_error_line(r.stderr)
    assert "localhost/zeroloss-none:0" in line and "make setup" in line, line
    assert leftovers(tmp_path) == []
