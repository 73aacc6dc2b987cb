"""The CNF as Kubernetes manifests, as the reference study deploys it (redhat-sriov-shiftonstack-perf): a testpmd Pod
of Guaranteed QoS with the CRI-O annotations, Multus NetworkAttachmentDefinitions, the SR-IOV operator's
SriovNetworkNodePolicy and the Node Tuning Operator's PerformanceProfile. Pure: dicts in, dicts out; each builder's
output passes validate() (schema.py).

The same Pod runs on the bench with `podman kube play` (podman 4.3): hostPath volumes of type Directory, Socket or
File, stdin true, restartPolicy Never, and no field podman refuses. podman gives an emptyDir no hugetlbfs, so the bench
mounts the host's hugetlbfs with a hostPath at /dev/hugepages, and pod_manifest then adds no HugePages emptyDir.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from zeroloss.core.errors import ZeroLossError

from . import sriovnics
from .manifest import NicSelector, SriovPolicy, SriovPolicySpecDoc
from .schema import validate

__all__ = ["PodSpec", "pod_manifest", "nad_manifests", "sriov_node_policy", "performance_profile", "runtime_class",
           "validate", "NetworkSpec", "SriovPolicySpec"]

HUGEPAGES_MOUNT = "/dev/hugepages"
# CRI-O annotations of the reference's Pod (cpu-quota, irq-load-balancing) and of OpenShift's "Disabling CPU load
# balancing for DPDK" (cpu-load-balancing; docs.redhat.com OpenShift 4.16 and 4.19 "Low latency tuning"): CRI-O
# honours them only for a Guaranteed pod with whole CPUs and runtimeClassName performance-<profile name>.
CRIO_ANNOTATIONS = {"cpu-load-balancing.crio.io": "disable", "cpu-quota.crio.io": "disable",
                    "irq-load-balancing.crio.io": "disable"}
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"  # Multus: the NADs a pod attaches, comma separated
RESOURCE_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"  # on a NAD: the device plugin resource its VFs come from
# testpmd locks its memory (IPC_LOCK), raises its limits and scheduling priority (SYS_RESOURCE, SYS_NICE) and opens
# raw sockets for the kernel-side PMDs (NET_RAW); the reference's Pod adds IPC_LOCK, SYS_RESOURCE and NET_RAW too
CAPABILITIES = ("IPC_LOCK", "SYS_NICE", "SYS_RESOURCE", "NET_RAW")
HOSTPATH_TYPES = ("Directory", "Socket", "File")  # the kinds the bench mounts (podman 4.3 checks each)
PP_PREFIX = "performance-"  # the Node Tuning Operator names a profile's RuntimeClass performance-<profile name>


@dataclass(frozen=True)
class PodSpec:
    name: str
    image: str
    command: tuple[str, ...]  # the container's argv (testpmd ...)
    cpus: int  # whole CPUs: requests = limits, so the static CPU manager gives them exclusively
    memory_mb: int
    hugepages_2mi_mb: int = 0
    hugepages_1gi_mb: int = 0
    # hostPath volumes: (volume name, host path, mount path) or (..., type): type Directory unless given
    host_paths: tuple[tuple[str, str, str] | tuple[str, str, str, str], ...] = ()
    networks: tuple[str, ...] = ()  # NAD names -> the k8s.v1.cni.cncf.io/networks annotation
    sriov_resource: str | None = None  # e.g. openshift.io/intelnics: 1 per network in requests = limits
    sriov_resources: tuple[str, ...] = ()  # or one resource per network (a VF from each PF's own pool)
    runtime_class: str | None = None  # the PerformanceProfile's RuntimeClass (runtime_class(profile name))
    namespace: str = "default"
    stdin: bool = True
    container: str = "testpmd"  # podman names the container <pod>-<container>
    image_pull_policy: str = "IfNotPresent"  # Never for an image built on the host
    node_selector: tuple[tuple[str, str], ...] = ()  # e.g. (("node-role.kubernetes.io/worker-cnf", ""),)


def runtime_class(profile_name: str) -> str:
    """The RuntimeClass the Node Tuning Operator creates for a PerformanceProfile (its status.runtimeClass)."""
    return PP_PREFIX + profile_name


def _mib(mb: int, what: str, page_mb: int = 1) -> str:
    """A quantity in Mi (or Gi when whole), refusing a negative size or one that is not a multiple of the page."""
    if mb < 0 or mb % page_mb:
        raise ZeroLossError(f"{what} of {mb} MB is not a non-negative multiple of {page_mb} MB",
                            f"give {what} in whole {page_mb} MB pages")
    return f"{mb // 1024}Gi" if mb and mb % 1024 == 0 else f"{mb}Mi"


def _resources(spec: PodSpec) -> dict[str, str]:
    if spec.cpus < 1:
        raise ZeroLossError(f"pod {spec.name}: {spec.cpus} CPUs", "a Guaranteed DPDK pod needs at least 1 whole CPU")
    if spec.memory_mb < 1:
        raise ZeroLossError(f"pod {spec.name}: memory of {spec.memory_mb} MB", "give the container's memory in MB")
    res = {"cpu": str(spec.cpus), "memory": _mib(spec.memory_mb, "memory"),
           **({"hugepages-2Mi": _mib(spec.hugepages_2mi_mb, "hugepages-2Mi", 2)} if spec.hugepages_2mi_mb else {}),
           **({"hugepages-1Gi": _mib(spec.hugepages_1gi_mb, "hugepages-1Gi", 1024)} if spec.hugepages_1gi_mb else {})}
    if spec.sriov_resource and spec.sriov_resources:
        raise ZeroLossError(f"pod {spec.name}: both sriov_resource and sriov_resources", "give one of them")
    per_network = spec.sriov_resources or ((spec.sriov_resource,) * len(spec.networks) if spec.sriov_resource else ())
    wanted = bool(spec.sriov_resource or spec.sriov_resources)
    if wanted and (not spec.networks or len(per_network) != len(spec.networks)):
        given = ", ".join(spec.sriov_resources or (str(spec.sriov_resource),))
        raise ZeroLossError(f"pod {spec.name}: SR-IOV resource(s) {given} for {len(spec.networks)} network(s)",
                            "name one NetworkAttachmentDefinition per VF the pod takes")
    for name in dict.fromkeys(per_network):
        res[name] = str(per_network.count(name))
    return res


def _volumes(spec: PodSpec) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volumeMounts): the hostPaths, then a HugePages emptyDir per page size unless a hostPath mounts
    /dev/hugepages (the bench's hugetlbfs)."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for entry in spec.host_paths:
        name, path, mount = entry[0], entry[1], entry[2]
        kind = entry[3] if len(entry) == 4 else "Directory"
        if kind not in HOSTPATH_TYPES:
            raise ZeroLossError(f"pod {spec.name}: hostPath {name} of type '{kind}'",
                                f"use one of {', '.join(HOSTPATH_TYPES)}")
        volumes.append({"name": name, "hostPath": {"path": path, "type": kind}})
        mounts.append({"name": name, "mountPath": mount})
    if any(entry[2] == HUGEPAGES_MOUNT for entry in spec.host_paths):
        return volumes, mounts
    sizes = [s for s, mb in (("2Mi", spec.hugepages_2mi_mb), ("1Gi", spec.hugepages_1gi_mb)) if mb]
    for size in sizes:
        # one size: medium HugePages at /dev/hugepages (the reference's Pod); two: one HugePages-<size> each
        name, medium, mount = (("hugepages", "HugePages", HUGEPAGES_MOUNT) if len(sizes) == 1 else
                               (f"hugepages-{size.lower()}", f"HugePages-{size}", f"{HUGEPAGES_MOUNT}-{size}"))
        volumes.append({"name": name, "emptyDir": {"medium": medium}})
        mounts.append({"name": name, "mountPath": mount})
    return volumes, mounts


def pod_manifest(spec: PodSpec) -> dict[str, Any]:
    """The testpmd Pod: Guaranteed QoS (requests = limits for CPU, memory, hugepages and VFs), the CRI-O
    annotations, the Multus networks, IPC_LOCK and friends, restartPolicy Never (a crashed testpmd is a result,
    not something to restart); validated before it is returned."""
    if not spec.command:
        raise ZeroLossError(f"pod {spec.name}: no command", "give the container's argv (testpmd ...)")
    resources = _resources(spec)
    volumes, mounts = _volumes(spec)
    annotations = dict(CRIO_ANNOTATIONS)
    if spec.networks:
        annotations[NETWORKS_ANNOTATION] = ", ".join(spec.networks)
    container: dict[str, Any] = {
        "name": spec.container, "image": spec.image, "imagePullPolicy": spec.image_pull_policy,
        "command": list(spec.command), "stdin": spec.stdin,
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "securityContext": {"capabilities": {"add": list(CAPABILITIES)}},
        **({"volumeMounts": mounts} if mounts else {}),
    }
    pod_spec: dict[str, Any] = {"containers": [container], "restartPolicy": "Never",
                                **({"runtimeClassName": spec.runtime_class} if spec.runtime_class else {}),
                                **({"nodeSelector": dict(spec.node_selector)} if spec.node_selector else {}),
                                **({"volumes": volumes} if volumes else {})}
    doc = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": spec.name, "namespace": spec.namespace, "annotations": annotations},
           "spec": pod_spec}
    validate(doc)
    return doc


@dataclass(frozen=True)
class NetworkSpec:
    """One NetworkAttachmentDefinition: an SR-IOV VF network (CNI type sriov) or a vhost-user one (Userspace CNI)."""
    name: str
    kind: str = "sriov"  # sriov | vhostuser
    resource: str | None = None  # sriov: the device plugin resource (openshift.io/<resourceName>)
    vlan: int = 0  # sriov: VF VLAN (0 = none)
    bridge: str = "br-dpdk"  # vhostuser: the OVS-DPDK bridge the host side joins


def _cni_config(net: NetworkSpec) -> dict[str, Any]:
    if net.kind == "sriov":
        # k8snetworkplumbingwg/sriov-cni docs/configuration-reference.md: type sriov, vlan (0 = none), spoofchk and
        # trust "on"/"off"; deviceID comes from the device plugin; a DPDK (vfio-pci) VF needs no IPAM
        return {"cniVersion": "0.3.1", "name": net.name, "type": "sriov", "vlan": net.vlan,
                "spoofchk": "off", "trust": "on"}
    if net.kind == "vhostuser":
        # intel/userspace-cni-network-plugin examples/ovs-vhost/userspace-ovs-netAttach-2.yaml, with the host side in
        # client mode (cniovs/cniovs.go: vhost mode "client" -> an OVS dpdkvhostuserclient port, as the bench's OVS
        # has) and the container's testpmd the vhost-user server; the socket is <container id[:12]>-<ifname> in the
        # directory the CNI shares with the pod
        return {"cniVersion": "0.3.1", "name": net.name, "type": "userspace",
                "host": {"engine": "ovs-dpdk", "iftype": "vhostuser", "netType": "bridge",
                         "vhost": {"mode": "client"}, "bridge": {"bridgeName": net.bridge}},
                "container": {"engine": "ovs-dpdk", "iftype": "vhostuser", "netType": "interface",
                              "vhost": {"mode": "server"}}}
    raise ZeroLossError(f"network {net.name} of kind '{net.kind}'", "use sriov or vhostuser")


def nad_manifests(networks: tuple[NetworkSpec, ...], namespace: str = "default") -> list[dict[str, Any]]:
    """A k8s.cni.cncf.io/v1 NetworkAttachmentDefinition per network; spec.config is the CNI config as a JSON
    string, an SR-IOV one names its device plugin resource in the resourceName annotation."""
    docs = []
    for net in networks:
        if net.kind == "sriov" and not net.resource:
            raise ZeroLossError(f"SR-IOV network {net.name} has no resource",
                                "name the SriovNetworkNodePolicy resource (openshift.io/<resourceName>)")
        meta: dict[str, Any] = {"name": net.name, "namespace": namespace,
                                **({"annotations": {RESOURCE_ANNOTATION: net.resource}} if net.kind == "sriov" else {})}
        doc = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition", "metadata": meta,
               "spec": {"config": json.dumps(_cni_config(net), separators=(",", ":"))}}
        validate(doc)
        docs.append(doc)
    return docs


@dataclass(frozen=True)
class SriovPolicySpec:
    name: str
    resource_name: str  # the device plugin resource, without the openshift.io/ prefix
    pf_names: tuple[str, ...]
    num_vfs: int
    device_type: str = "vfio-pci"  # vfio-pci (DPDK) | netdevice
    mtu: int | None = None
    is_rdma: bool = False
    node_selector: tuple[tuple[str, str], ...] = (("feature.node.kubernetes.io/network-sriov.capable", "true"),)
    root_devices: tuple[str, ...] = ()  # PCI addresses of the PFs
    namespace: str = "openshift-sriov-network-operator"
    priority: int = 99
    vendor: str = ""  # nicSelector.vendor / deviceID, as the operator writes PCI IDs ('8086', '158b')
    device_id: str = ""


def sriov_node_policy(spec: SriovPolicySpec) -> dict[str, Any]:
    """An sriovnetwork.openshift.io/v1 SriovNetworkNodePolicy: numVfs VFs on the named PFs, bound to
    device_type, offered as openshift.io/<resource_name>. One the operator's webhook would refuse is not rendered
    (sriovnics.policy_refusal)."""
    if not spec.pf_names and not spec.root_devices:
        raise ZeroLossError(f"SR-IOV policy {spec.name} selects no NIC", "name the PFs (pfNames or rootDevices)")
    selector = NicSelector(vendor=sriovnics.hex_id(spec.vendor) if spec.vendor else None,
                           device_id=sriovnics.hex_id(spec.device_id) if spec.device_id else None,
                           pf_names=spec.pf_names or None, root_devices=spec.root_devices or None)
    body = SriovPolicySpecDoc(device_type=spec.device_type, is_rdma=spec.is_rdma, nic_selector=selector,
                              node_selector=dict(spec.node_selector), num_vfs=spec.num_vfs, priority=spec.priority,
                              resource_name=spec.resource_name, mtu=spec.mtu)
    doc = SriovPolicy(api_version="sriovnetwork.openshift.io/v1", kind="SriovNetworkNodePolicy",
                      metadata={"name": spec.name, "namespace": spec.namespace}, spec=body).to_json()
    validate(doc)
    why = sriovnics.policy_refusal(doc)
    if why:
        raise ZeroLossError(f"SR-IOV policy {spec.name}: the SR-IOV operator's webhook would refuse it: {why}")
    return doc


def performance_profile(name: str, isolated: str, reserved: str, pages: tuple[tuple[str, int, int], ...],
                        node_selector: tuple[tuple[str, str], ...] = (("node-role.kubernetes.io/worker-cnf", ""),),
                        default_size: str = "1G", additional_kernel_args: tuple[str, ...] = (),
                        high_power: bool = True) -> dict[str, Any]:
    """A performance.openshift.io/v2 PerformanceProfile: isolated and reserved CPU lists, hugepages as
    (size '1G' | '2M', count, NUMA node); pods reach it through runtimeClassName runtime_class(name)."""
    spec: dict[str, Any] = {
        "cpu": {"isolated": isolated, "reserved": reserved},
        "globallyDisableIrqLoadBalancing": True,
        "hugepages": {"defaultHugepagesSize": default_size,
                      "pages": [{"size": size, "count": count, "node": node} for size, count, node in pages]},
        "nodeSelector": dict(node_selector),
        "numa": {"topologyPolicy": "single-numa-node"},
        "realTimeKernel": {"enabled": False},
        "workloadHints": {"highPowerConsumption": high_power, "perPodPowerManagement": False, "realTime": True},
        **({"additionalKernelArgs": list(additional_kernel_args)} if additional_kernel_args else {}),
    }
    doc = {"apiVersion": "performance.openshift.io/v2", "kind": "PerformanceProfile", "metadata": {"name": name},
           "spec": spec}
    validate(doc)
    return doc
