"""The CNF as Kubernetes manifests (zeroloss.host.cnf): the Pod is Guaranteed with the CRI-O annotations, the CRDs
follow their upstream types, validate() refuses a bad field in one line naming it, and `host plan --format k8s` prints
documents that all validate. The reference study's own manifests (tests/fixtures/cnf/README.md) must pass."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from zeroloss.core.errors import ZeroLossError
from zeroloss.host.cnf import k8s, sriovnics
from zeroloss.host.cnf.manifest import NicSelector
from zeroloss.host.inventory import collect
from zeroloss.host.sysfs import Root

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SPEC = k8s.PodSpec(name="zl-cnf", image="localhost/zeroloss-testpmd:24.11", command=("dpdk-testpmd", "--", "-i"),
                   cpus=3, memory_mb=1024, hugepages_2mi_mb=1024,
                   host_paths=(("vhu", "/run/zl/vhu", "/vhu"), ("sock", "/run/zl/a.sock", "/a.sock", "Socket")),
                   networks=("net-a", "net-b"), sriov_resource="openshift.io/intelnics",
                   runtime_class=k8s.runtime_class("zeroloss-cnf"))


@pytest.fixture(scope="module")
def pod():
    return k8s.pod_manifest(SPEC)


def container(doc):
    return doc["spec"]["containers"][0]


def test_pod_is_guaranteed(pod):
    res = container(pod)["resources"]
    assert res["requests"] == res["limits"] == {"cpu": "3", "memory": "1Gi", "hugepages-2Mi": "1Gi",
                                                "openshift.io/intelnics": "2"}
    assert res["requests"] is not res["limits"]  # two mappings, so an edit of one cannot pass as Guaranteed


def test_pod_annotations_runtime_class_and_podman_shape(pod):
    notes = pod["metadata"]["annotations"]
    assert {k: notes[k] for k in ("cpu-quota.crio.io", "irq-load-balancing.crio.io", "cpu-load-balancing.crio.io")} \
        == dict.fromkeys(("cpu-quota.crio.io", "irq-load-balancing.crio.io", "cpu-load-balancing.crio.io"), "disable")
    assert notes["k8s.v1.cni.cncf.io/networks"] == "net-a, net-b"
    assert pod["spec"]["runtimeClassName"] == "performance-zeroloss-cnf" and pod["spec"]["restartPolicy"] == "Never"
    ctr = container(pod)
    assert ctr["stdin"] is True and ctr["command"] == ["dpdk-testpmd", "--", "-i"]
    assert {"IPC_LOCK", "SYS_NICE", "NET_RAW"} <= set(ctr["securityContext"]["capabilities"]["add"])
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert vols["vhu"]["hostPath"] == {"path": "/run/zl/vhu", "type": "Directory"}
    assert vols["sock"]["hostPath"]["type"] == "Socket"
    assert vols["hugepages"]["emptyDir"] == {"medium": "HugePages"}
    assert {m["mountPath"] for m in ctr["volumeMounts"]} == {"/vhu", "/a.sock", "/dev/hugepages"}


def test_hugepages_volumes():
    hugetlbfs = (("hp", "/dev/hugepages", "/dev/hugepages"),)
    bench = k8s.pod_manifest(k8s.PodSpec(name="b", image="i", command=("t",), cpus=2, memory_mb=512,
                                         hugepages_2mi_mb=512, host_paths=hugetlbfs))
    assert [v["name"] for v in bench["spec"]["volumes"]] == ["hp"]  # the host's hugetlbfs, no emptyDir
    both = k8s.pod_manifest(k8s.PodSpec(name="b", image="i", command=("t",), cpus=2, memory_mb=512,
                                        hugepages_2mi_mb=512, hugepages_1gi_mb=2048))
    assert {v["emptyDir"]["medium"] for v in both["spec"]["volumes"]} == {"HugePages-2Mi", "HugePages-1Gi"}
    assert container(both)["resources"]["limits"]["hugepages-1Gi"] == "2Gi"


@pytest.mark.parametrize("changes, words", [
    ({"command": ()}, "no command"),
    ({"hugepages_2mi_mb": 3}, "hugepages-2Mi of 3 MB is not a non-negative multiple of 2 MB"),
    ({"cpus": 0}, "0 CPUs"),
    ({"networks": ()}, "SR-IOV resource(s) openshift.io/intelnics for 0 network(s)"),
    ({"sriov_resource": None, "sriov_resources": ("openshift.io/a",)}, "resource(s) openshift.io/a for 2 network(s)"),
    ({"host_paths": (("x", "/a", "/b", "DirectoryOrCreate"),)}, "hostPath x of type 'DirectoryOrCreate'"),
])
def test_pod_builder_errors(changes, words):
    fields = {**SPEC.__dict__, **changes}
    with pytest.raises(ZeroLossError) as err:
        k8s.pod_manifest(k8s.PodSpec(**fields))
    assert words in str(err.value) and "\n" not in str(err.value)


def edit(doc, path, value=None, delete=False):
    """doc with the value at path ('a.b[0].c') set or deleted."""
    out = copy.deepcopy(doc)
    keys = [int(k) if k.isdigit() else k for k in path.replace("[", ".").replace("]", "").split(".")]
    node = out
    for key in keys[:-1]:
        node = node[key]
    if delete:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return out


def refused(doc):
    with pytest.raises(ZeroLossError) as err:
        k8s.validate(doc)
    text = str(err.value)
    assert "\n" not in text and "Traceback" not in text
    return text


POD_FAULTS = [
    ("spec.containers[0].imagePullPolcy", "Never", False, "spec.containers[0].imagePullPolcy: unknown field"),
    ("spec.containers[0].securityContext.capabilities.ad", ["NET_ADMIN"], False,
     "spec.containers[0].securityContext.capabilities.ad: unknown field"),
    ("metadata.anotations", {}, False, "metadata.anotations: unknown field"),
    ("spec.containers[0].name", None, True, "spec.containers[0].name: required, missing"),
    ("spec.containers[0].stdin", "yes", False, "spec.containers[0].stdin: Input should be a valid boolean"),
    ("spec.containers[0].resources.limits.cpu", "2x", False,
     "spec.containers[0].resources.limits.cpu: '2x' is not a quantity"),
    ("spec.containers[0].resources.requests.memory", "-1Gi", False,
     "spec.containers[0].resources.requests.memory: '-1Gi' is negative"),
    ("spec.containers[0].resources.requests.hugepages-2Mi", "512Mi", False,
     "spec.containers[0].resources.requests.hugepages-2Mi: must equal the limit"),
    ("spec.containers[0].resources.limits.hugepages-2Mi", "3Mi", False,
     "spec.containers[0].resources.limits.hugepages-2Mi: not a multiple of the page size"),
    ("spec.restartPolicy", "Sometimes", False, "spec.restartPolicy: 'Sometimes' is not one of Always"),
    ("spec.volumes[0].hostPath.type", "Dir", False, "spec.volumes[0].hostPath.type: 'Dir' is not one of"),
    ("spec.volumes[2].emptyDir.medium", "Hugepages", False, "spec.volumes[2].emptyDir.medium: 'Hugepages'"),
    ("spec.containers[0].volumeMounts[0].name", "nosuch", False, "volumeMounts[0].name: no volume 'nosuch'"),
    ("metadata.name", "Zl_CNF", False, "metadata.name: missing or not a DNS subdomain"),
]


@pytest.mark.parametrize("path, value, delete, words", POD_FAULTS, ids=[f[0] for f in POD_FAULTS])
def test_pod_validation_names_the_field(pod, path, value, delete, words):
    text = refused(edit(pod, path, value, delete))
    assert text.startswith("Pod '") and words in text, text


@pytest.fixture(scope="module")
def crds():
    return {
        "nad": k8s.nad_manifests((k8s.NetworkSpec("net-a", resource="openshift.io/intelnics"),
                                  k8s.NetworkSpec("vhu-a", kind="vhostuser")))[0],
        "vhost": k8s.nad_manifests((k8s.NetworkSpec("vhu-a", kind="vhostuser"),))[0],
        "policy": k8s.sriov_node_policy(k8s.SriovPolicySpec("intel", "intelnics", ("ens1f0",), 4, mtu=9000)),
        "profile": k8s.performance_profile("zeroloss-cnf", "2-7", "0-1", (("1G", 8, 0),)),
    }


def test_crd_builders(crds):
    sriov = json.loads(crds["nad"]["spec"]["config"])
    assert sriov["type"] == "sriov" and crds["nad"]["metadata"]["annotations"] == {
        "k8s.v1.cni.cncf.io/resourceName": "openshift.io/intelnics"}
    vhost = json.loads(crds["vhost"]["spec"]["config"])
    assert vhost["type"] == "userspace" and vhost["host"]["vhost"]["mode"] == "client"
    spec = crds["policy"]["spec"]
    assert spec["nicSelector"] == {"pfNames": ["ens1f0"]} and spec["deviceType"] == "vfio-pci" and spec["numVfs"] == 4
    assert crds["profile"]["spec"]["cpu"] == {"isolated": "2-7", "reserved": "0-1"}
    assert "namespace" not in crds["profile"]["metadata"]  # cluster-scoped


CRD_FAULTS = [
    ("policy", "spec.numVfs", "4", "spec.numVfs: '4' is not of type 'integer'"),
    ("policy", "spec.deviceType", "vfio", "spec.deviceType: 'vfio' is not one of"),
    ("policy", "spec.priority", 100, "spec.priority: 100 is greater than the maximum of 99"),
    ("policy", "spec.nicSelector.pfName", ["ens1f0"], "spec.nicSelector: Additional properties are not allowed"),
    ("policy", "metadata.labels", {"a": 1}, "metadata.labels.a: Input should be a valid string"),
    ("policy", "metadata.lables", {}, "metadata.lables: unknown field"),
    ("profile", "spec.hugepages.pages[0].count", "8", "spec.hugepages.pages[0].count: '8' is not of type 'integer'"),
    ("profile", "spec.cpu.isolated", "1-7", "spec.cpu.reserved: CPU 1 is also in cpu.isolated"),
    ("profile", "spec.cpu.isolated", "2-7;9", "spec.cpu.isolated: '2-7;9' does not match"),
    ("profile", "spec.globallyDisableIrqLoadBalancing", "true", "spec.globallyDisableIrqLoadBalancing: 'true' is not"),
    ("nad", "spec.config", "{cniVersion: 0.3.1}", "spec.config: not JSON"),
    ("nad", "spec.config", '{"cniVersion": "0.3.1"}', "spec.config.type: missing"),
]


@pytest.mark.parametrize("which, path, value, words", CRD_FAULTS, ids=[f"{f[0]}:{f[1]}" for f in CRD_FAULTS])
def test_crd_validation_names_the_field(crds, which, path, value, words):
    text = refused(edit(crds[which], path, value))
    assert words in text, text


def test_required_crd_fields_and_unknown_kinds(crds):
    assert "spec: 'nodeSelector' is a required property" in refused(edit(crds["policy"], "spec.nodeSelector",
                                                                          delete=True))
    assert "spec.cpu: 'reserved' is a required property" in refused(edit(crds["profile"], "spec.cpu.reserved",
                                                                          delete=True))
    assert "no schema for apiVersion 'apps/v1' kind 'Deployment'" in refused({"apiVersion": "apps/v1",
                                                                              "kind": "Deployment"})
    assert "SriovNetworkNodePolicy" in refused(edit(crds["policy"], "apiVersion", "sriovnetwork.openshift.io/v2"))


def test_the_reference_manifests_validate():
    """The study's own PerformanceProfile, policies (server-set metadata included) and Pod pass."""
    cnf = FIXTURES / "cnf"
    k8s.validate(yaml.safe_load((cnf / "reference-performanceprofile.yaml").read_text()))
    policies = json.loads((cnf / "reference-sriov-policies.json").read_text())["items"]
    for policy in policies:
        k8s.validate(policy)
    pod = json.loads((cnf / "reference-pod.json").read_text())
    k8s.validate(pod)
    assert len(policies) == 2 and container(pod)["resources"]["requests"] == container(pod)["resources"]["limits"]


KERNEL_PFS = "ens4f0,ens4f1,ens6f0,ens6f1"  # the fixture host's XXV710 PFs on i40e (3b:00.*, 5e:00.* are on vfio-pci)


def plan_k8s(*args):
    return subprocess.run([sys.executable, "-m", "zeroloss.cli", "host", "plan", "--root",
                           str(FIXTURES / "host" / "r740xd"), *args, "--format", "k8s"],
                          capture_output=True, text=True, timeout=120)


def test_host_plan_format_k8s_every_document_validates():
    r = plan_k8s("--mtu", "9000", "--ports", KERNEL_PFS)
    assert r.returncode == 0, r.stderr
    docs = list(yaml.safe_load_all(r.stdout))
    assert [d["kind"] for d in docs] == ["PerformanceProfile"] + ["SriovNetworkNodePolicy"] * 4 + \
        ["NetworkAttachmentDefinition"] * 4 + ["Pod"]
    for doc in docs:
        k8s.validate(doc)
    profile, pod = docs[0], docs[-1]
    assert profile["spec"]["cpu"] == {"isolated": "2-35,38-71", "reserved": "0-1,36-37"}
    assert [(p["count"], p["node"]) for p in profile["spec"]["hugepages"]["pages"]] == [(89, 0), (90, 1)]
    assert pod["spec"]["runtimeClassName"] == "performance-" + profile["metadata"]["name"]
    res = container(pod)["resources"]
    assert res["requests"] == res["limits"] and res["limits"]["cpu"] == "5" and res["limits"]["hugepages-1Gi"] == "4Gi"
    nads = [d["metadata"]["name"] for d in docs if d["kind"] == "NetworkAttachmentDefinition"]
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ", ".join(nads)
    pools = {f"openshift.io/{d['spec']['resourceName']}" for d in docs if d["kind"] == "SriovNetworkNodePolicy"}
    assert {k for k in res["limits"] if k.startswith("openshift.io/")} == pools
    assert "--max-pkt-len=9018" in container(pod)["command"][2]


def discovered_pfs():
    """The fixture host's PFs the SR-IOV operator's config daemon would put in its node state."""
    inv = collect(Root(FIXTURES / "host" / "r740xd"))
    pfs = [sriovnics.Pf(n.pci, n.vendor, n.device, n.driver, n.name) for n in inv.nics]
    return [pf for pf in pfs if sriovnics.discovery_refusal(pf) is None]


def test_k8s_policies_select_the_pfs_as_the_operator_discovers_them():
    """Each policy selects its PF by kernel name (pfNames) with the NIC's vendor and device, never by rootDevices,
    and the webhook's node check (validateNicModel over the discovered PFs) finds exactly that PF; the comment says
    which kernel driver the PF is on. HEAD before issue 38 rendered rootDevices for vfio-pci PFs, which no
    discovered PF matches."""
    r = plan_k8s("--ports", KERNEL_PFS)
    assert r.returncode == 0, r.stderr
    found = discovered_pfs()
    assert sorted(pf.name for pf in found) == sorted(KERNEL_PFS.split(","))  # the i40e PFs; not vfio-pci, not tg3
    policies = [d for d in yaml.safe_load_all(r.stdout) if d["kind"] == "SriovNetworkNodePolicy"]
    for doc, name in zip(policies, KERNEL_PFS.split(","), strict=True):
        sel = doc["spec"]["nicSelector"]
        assert sel == {"vendor": "8086", "deviceID": "158b", "pfNames": [name]}
        assert [pf.name for pf in found if sriovnics.selector_refusal(NicSelector.from_json(sel), pf) is None] == \
            [name]
        assert sriovnics.policy_refusal(doc) is None
    assert r.stdout.count("on its kernel driver i40e") == 4
    old_style = {"rootDevices": ["0000:3b:00.0"]}  # what was rendered for a vfio-pci PF: selects nothing discovered
    assert all(sriovnics.selector_refusal(NicSelector.from_json(old_style), pf) for pf in found)


@pytest.mark.parametrize("ports, words", [
    ("0000:3b:00.0", ["SR-IOV PF of dpdk0, 0000:3b:00.0: it is bound to vfio-pci and has no kernel interface",
                      "no supported NIC is selected by the nicSelector", "bind the PF to i40e",
                      "driverctl unset-override 0000:3b:00.0"]),
    (None, ["bound to vfio-pci"]),  # the default ports: the NICs bound to vfio-pci for OVS-DPDK
    ("eno1", ["eno1 (0000:19:00.0): NIC 14e4:165f is not in the operator's supported-nic-ids list",
              "no supported NIC is selected by the nicSelector"]),
])
def test_k8s_plan_refuses_a_pf_the_operator_would_not_see(ports, words):
    r = plan_k8s(*(("--ports", ports) if ports else ()))
    assert r.returncode != 0 and r.stdout == "" and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def policy(**kw):
    base = {"name": "p", "resource_name": "zl_ens1f0", "pf_names": ("ens1f0",), "num_vfs": 4}
    return k8s.sriov_node_policy(k8s.SriovPolicySpec(**(base | kw)))


@pytest.mark.parametrize("kw, words", [
    ({"vendor": "0x10ec"}, "vendor 10ec is not in the operator's supported-nic-ids list"),
    ({"vendor": "0x14e4", "device_id": "0x165f"}, "vendor/device 14e4/165f is not in the operator's supported-nic"),
    ({"vendor": "8086", "device_id": "10fb"}, "vendor/device 8086/10fb is not in the operator's supported-nic-ids"),
    ({"device_id": "beef"}, "device beef is not in the operator's supported-nic-ids list"),
    ({"pf_names": ("ens1f0#0-4",)}, "pfNames entry 'ens1f0#0-4': VF 4 is past numVfs 4"),
    ({"pf_names": ("ens1f0#3-1",)}, "the last VF is below the first"),
    ({"pf_names": ("ens1f0#1",)}, "is not name#first-last"),
    ({"is_rdma": True}, "deviceType vfio-pci conflicts with isRdma true"),
    ({"resource_name": "zl_"}, "resourceName 'zl_' must be"),
    ({"resource_name": "openshift.io/x"}, "resourceName 'openshift.io/x' must be"),
    ({"num_vfs": 0}, "numVfs 0 is refused"),
    ({"vendor": "15b3", "device_id": "1017", "num_vfs": 200}, "numVfs 200 is over the webhook's 128"),
])
def test_a_policy_the_webhook_refuses_is_not_rendered(kw, words):
    """staticValidateSriovNetworkNodePolicy's refusals (pkg/webhook/validate.go), one line naming why."""
    with pytest.raises(ZeroLossError, match="SR-IOV policy p: the SR-IOV operator's webhook would refuse it") as e:
        policy(**kw)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_policies_the_webhook_accepts():
    assert policy(pf_names=("ens1f0#0-3",))["spec"]["nicSelector"] == {"pfNames": ["ens1f0#0-3"]}
    assert policy(vendor="0x8086", device_id="0x159B")["spec"]["nicSelector"] == {
        "vendor": "8086", "deviceID": "159b", "pfNames": ["ens1f0"]}
    assert policy(device_type="netdevice", is_rdma=True)["spec"]["isRdma"] is True
    assert sriovnics.kernel_driver("0x8086", "0x1592") == "ice" and sriovnics.kernel_driver("0x15b3", "0x101d") == \
        "mlx5_core" and sriovnics.kernel_driver("0x14e4", "0x165f") is None
