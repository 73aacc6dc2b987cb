"""Lab mode's CNF endpoint (drivers/lab/kube.py): the `kubectl exec` command line, the lab file's `kubectl:` key,
kubectl's error texts (tests/fixtures/kube, each from a public source) turned into one line, and zeroloss's reader
driven over tests/lab/fake_kubectl.py, a kubectl stand-in whose "pod" is this host."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import time
from pathlib import Path

import pytest

from zeroloss.core.errors import ZeroLossError
from zeroloss.drivers.lab.kube import KubeExecTarget, explain
from zeroloss.drivers.lab.labfile import parse
from zeroloss.drivers.lab.remote import RemoteAgent, SshLost

FIXTURES = Path(__file__).parent / "fixtures" / "kube"
FAKE = Path(__file__).parent / "lab" / "fake_kubectl.py"


def _fake_module():
    spec = importlib.util.spec_from_file_location("fake_kubectl", FAKE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _doc(**vnf) -> dict:
    return {"dut": {"ssh": "node", "vnfs": [{"name": "cnf1", "ports": ["vhu0", "vhu1"],
                                             "telemetry": "/var/run/dpdk/rte/dpdk_telemetry.v2", **vnf}]},
            "generator": {"ports": [{"name": "A", "device": "0000:3b:00.0", "dut_port": "nic0",
                                     "dst_mac": "02:00:00:00:00:01"},
                                    {"name": "B", "device": "0000:3b:00.1", "dut_port": "nic1",
                                     "dst_mac": "02:00:00:00:00:02"}]},
            "traffic": {"pairs": [["A", "B"]]}}


# the command line ------------------------------------------------------------------------------------------------
def test_argv_is_kubectl_exec_with_stdin_and_the_users_options():
    t = KubeExecTarget("testpmd-cnf")
    assert t.argv(["python3", "-u"]) == ["kubectl", "exec", "-i", "-n", "default", "testpmd-cnf", "--", "python3", "-u"]
    t = KubeExecTarget("testpmd-cnf", "cnf", "testpmd", "prod", "oc", "/etc/kube/lab.conf")
    assert t.argv(["true"]) == ["oc", "--kubeconfig", "/etc/kube/lab.conf", "--context", "prod", "exec", "-i", "-n",
                                "cnf", "testpmd-cnf", "-c", "testpmd", "--", "true"]
    assert t.target == "pod cnf/testpmd-cnf container testpmd (context prod)"
    # the stand-in the lab tests use accepts exactly this shape and nothing else
    fake = _fake_module()
    assert fake.parse(t.argv(["true"])[1:]) == ({"--kubeconfig": "/etc/kube/lab.conf", "--context": "prod"}, "cnf",
                                                 "testpmd-cnf", "testpmd", ["true"])
    for bad in (["exec", "-n", "cnf", "p", "--", "true"], ["exec", "-i", "-t", "-n", "cnf", "p", "--", "true"],
                ["exec", "-i", "-n", "cnf", "p", "true"], ["exec", "-i", "-n", "cnf", "p", "--"],
                ["get", "pods"], ["exec", "-i", "-n", "cnf", "p", "-c", "--", "true"]):
        assert fake.parse(bad) is None, bad


# the lab file ----------------------------------------------------------------------------------------------------
def test_lab_file_kubectl_key():
    lab = parse(_doc(kubectl={"pod": "testpmd-cnf"}))
    (v,) = lab.vnfs
    assert v.kubectl == KubeExecTarget("testpmd-cnf", "default", None, None, "kubectl", None)
    assert v.remote and lab.vnf_target(v) is v.kubectl
    lab = parse(_doc(kubectl={"pod": "testpmd-cnf", "namespace": "cnf", "container": "testpmd", "context": "prod",
                              "tool": "oc", "kubeconfig": "~/lab.conf"}))
    t = lab.vnf_target(lab.vnfs[0])
    assert (t.tool, t.namespace, t.container, t.context) == ("oc", "cnf", "testpmd", "prod")
    assert t.kubeconfig == os.path.expanduser("~/lab.conf")
    assert not parse(_doc()).vnfs[0].remote  # no ssh, no kubectl: read on the node


@pytest.mark.parametrize("vnf, words", [
    ({"ssh": "guest", "kubectl": {"pod": "p"}}, "dut.vnfs.0: ssh and kubectl both given"),
    ({"kubectl": {}}, "dut.vnfs.0.kubectl: 'pod' is missing"),
    ({"kubectl": {"pod": "-it"}}, "'-it' is not a pod name"),
    ({"kubectl": {"pod": "p", "namespace": "Cnf"}}, "'Cnf' is not a Kubernetes name"),
    ({"kubectl": {"pod": "p", "context": "--all"}}, "'--all' is not a kubeconfig context"),
    ({"kubectl": {"pod": "p", "tool": "helm"}}, "'helm' is not one of kubectl, oc"),
    ({"kubectl": {"pod": "p", "image": "x"}}, "unknown key 'image'"),
])
def test_lab_file_kubectl_faults_are_one_line(vnf, words):
    with pytest.raises(ZeroLossError) as e:
        parse(_doc(**vnf), "lab.yaml")
    assert words in str(e.value) and "\n" not in str(e.value)


# kubectl's error texts -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fixture, target, words", [
    ("pod-not-found.txt", KubeExecTarget("deployment"), ["no pod 'deployment' in namespace 'default'",
                                                         "kubectl get pods -n default"]),
    ("container-not-found.txt", KubeExecTarget("task-pv-pod", container="task-pv-container"),
     ["container 'task-pv-container' of pod default/task-pv-pod container task-pv-container is not running"]),
    ("container-not-valid.txt", KubeExecTarget("test-pod", container="abc"),
     ["pod test-pod has no container 'abc' (its containers: main-0, main-1, main-2, init-0 (init), init-1 (init))",
      "kubectl.container"]),
    ("container-not-valid-server.txt", KubeExecTarget("test-pod", container="abc"),
     ["pod test-pod has no container 'abc' (see `kubectl get pods -n default`)"]),
    ("forbidden.txt", KubeExecTarget("yb-master-0", "yb-dev-yugabyte-db"),
     ["kubectl may not exec into pod yb-dev-yugabyte-db/yb-master-0",
      'cannot create resource "pods/exec"', "pods/exec", "RoleBinding"]),
    ("context-not-found.txt", KubeExecTarget("p", context="kind-kind", tool="oc"),
     ["oc: no context 'kind-kind' in the kubeconfig", "oc --context kind-kind config get-contexts"]),
    ("no-server.txt", KubeExecTarget("p"), ["API server localhost:8080 (connection refused)", "kubectl.kubeconfig"]),
    ("no-executable.txt", KubeExecTarget("hello-pod"),
     ["pod default/hello-pod cannot run 'ps' (executable file not found in $PATH)", "python3"]),
])
def test_kubectls_errors_are_one_line_with_a_fix(fixture, target, words):
    msg, fix = explain((FIXTURES / fixture).read_text(), target)
    line = f"{msg}: {fix}"
    assert "\n" not in line
    for w in words:
        assert w in line, (w, line)


def test_pod_gone_and_unknown_texts_keep_kubectls_last_line():
    t = KubeExecTarget("testpmd-cnf", "cnf")
    text = (FIXTURES / "exit-137.txt").read_text()
    assert explain(text, t) is None  # not a configuration fault: the session died
    msg, fix = t.fault(text.encode(), 137, connecting=False)
    assert msg == "lost the kubectl exec session to pod cnf/testpmd-cnf: command terminated with exit code 137"
    assert fix == "is the pod still running? `kubectl get pod -n cnf testpmd-cnf`"
    msg, fix = t.fault(b"", 1, connecting=True)
    assert msg == "cannot exec into pod cnf/testpmd-cnf with kubectl: kubectl exited 1"
    assert "kubectl exec -i -n cnf testpmd-cnf -- true" in fix


# zeroloss's reader through the stand-in -----------------------------------------------------------------------------
@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    """A PATH whose kubectl and oc are tests/lab/fake_kubectl.py; its log and pid files."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("kubectl", "oc"):
        (bin_dir / tool).symlink_to(FAKE)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ZL_KUBECTL_LOG", str(tmp_path / "argv.log"))
    monkeypatch.setenv("ZL_KUBECTL_PIDS", str(tmp_path / "pids"))
    return tmp_path


def test_reader_runs_in_the_pod_over_one_exec_session(fake_path):
    t = KubeExecTarget("testpmd-cnf", "cnf", "testpmd", "lab", "oc", str(fake_path / "kubeconfig"))
    with RemoteAgent(t) as a:
        assert a.name == "pod cnf/testpmd-cnf container testpmd (context lab)"
        assert a.info["pid"] == int((fake_path / "pids").read_text().split()[0])
        assert a.run(["echo", "from the pod"]).out == "from the pod\n"
        assert a.batch([{"op": "run", "argv": ["true"], "timeout": 5}] * 3) == [{"rc": 0, "out": "", "err": ""}] * 3
    (call,) = [json.loads(x) for x in (fake_path / "argv.log").read_text().splitlines()]
    assert call["tool"] == "oc" and call["namespace"] == "cnf" and call["pod"] == "testpmd-cnf"
    assert call["container"] == "testpmd"
    assert call["options"] == {"--kubeconfig": str(fake_path / "kubeconfig"), "--context": "lab"}
    assert call["cmd"][:2] == ["sh", "-c"]  # the pod's system python3, found as on an ssh host


def test_pod_gone_mid_session_is_one_line(fake_path):
    a = RemoteAgent(KubeExecTarget("testpmd-cnf", "cnf")).start()
    try:
        pid = int((fake_path / "pids").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)  # the pod deleted: its processes are killed
        deadline = time.monotonic() + 10
        while a.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not a.alive()
        e = a.lost()
        assert str(e) == ("lost the kubectl exec session to pod cnf/testpmd-cnf: command terminated with exit code "
                          "137: is the pod still running? `kubectl get pod -n cnf testpmd-cnf`")
    finally:
        a.close()
    # the same during a request
    a = RemoteAgent(KubeExecTarget("testpmd-cnf", "cnf")).start()
    try:
        pid = int((fake_path / "pids").read_text().split()[1])
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(SshLost, match="command terminated with exit code 137"):
            a.run(["sleep", "5"])
    finally:
        a.close()


@pytest.mark.parametrize("fixture, words", [
    ("pod-not-found.txt", "kubectl: no pod 'deployment' in namespace 'cnf' (Error from server (NotFound))"),
    ("forbidden.txt", "kubectl may not exec into pod cnf/deployment: pods \"yb-master-0\" is forbidden"),
])
def test_kubectl_refusing_the_exec_is_one_line(fake_path, monkeypatch, fixture, words):
    monkeypatch.setenv("ZL_KUBECTL_FAIL", str(FIXTURES / fixture))
    with pytest.raises(SshLost) as e:
        RemoteAgent(KubeExecTarget("deployment", "cnf")).start()
    assert words in str(e.value) and "\n" not in str(e.value)


def test_tool_not_installed_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # neither kubectl nor oc
    with pytest.raises(SshLost) as e:
        RemoteAgent(KubeExecTarget("p", tool="oc")).start()
    assert str(e.value) == ("cannot run oc to reach pod default/p: OpenShift's oc is not installed (not on PATH): "
                            "install OpenShift's oc on this machine, or set kubectl.tool in the lab file to the one "
                            "you use")
