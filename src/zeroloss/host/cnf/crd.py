"""JSON schemas of the three custom resources the CNF needs, written from their upstream Go types (the `json:` tags;
a field without omitempty is required) and checked with jsonschema. An unknown key is refused
(additionalProperties: false): the API server's structural pruning would drop it silently, so a misspelled field
would be lost, not applied.

- NetworkAttachmentDefinition k8s.cni.cncf.io/v1: k8snetworkplumbingwg/network-attachment-definition-client
  pkg/apis/k8s.cni.cncf.io/v1/types.go (spec.config, a CNI configuration as a JSON string).
- SriovNetworkNodePolicy sriovnetwork.openshift.io/v1: k8snetworkplumbingwg/sriov-network-operator
  api/v1/sriovnetworknodepolicy_types.go (kubebuilder markers: priority 0..99, mtu >= 1, numVfs >= 0, deviceType
  netdevice | vfio-pci, linkType eth | ETH | ib | IB, eSwitchMode legacy | switchdev, vdpaType virtio | vhost).
- PerformanceProfile performance.openshift.io/v2: openshift/cluster-node-tuning-operator
  pkg/apis/performanceprofile/v2/performanceprofile_types.go (cpu.reserved and cpu.isolated and nodeSelector
  required; hugepages.pages[].count int32); cpu.ovsDpdk since commit 3cc5d864 (release-4.23).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .manifest import CniConfig, Nad, NadSpec, PerformanceProfile, ProfileSpec

Fault = tuple[str, str] | None  # (field path, what is wrong)

_STR: dict[str, Any] = {"type": "string"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_STR_MAP: dict[str, Any] = {"type": "object", "additionalProperties": _STR}
_STR_LIST: dict[str, Any] = {"type": "array", "items": _STR}
_INT32 = {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_CPUSET = {"type": "string", "pattern": r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"}  # CPUSet "0-3,8-11"


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required), "additionalProperties": False}


def _doc(api: str, kind: str, spec: dict[str, Any], namespaced: bool = True) -> dict[str, Any]:
    """The object around a spec; metadata is the core ObjectMeta, checked further with the kubernetes models
    (schema.py), status is the operator's and not checked."""
    meta: dict[str, Any] = {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "pattern": _DNS_SUBDOMAIN, "maxLength": 253}},
        **({} if namespaced else {"not": {"required": ["namespace"]}})}
    return _obj({"apiVersion": {"const": api}, "kind": {"const": kind}, "metadata": meta, "spec": spec,
                 "status": {"type": "object"}}, ("apiVersion", "kind", "metadata", "spec"))


NAD = _doc("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition", _obj({"config": _STR}, ("config",)))

_OVS_IFACE = _obj({"type": _STR, "options": _STR_MAP, "externalIDs": _STR_MAP, "otherConfig": _STR_MAP,
                   "mtuRequest": {"type": "integer"}})
_OVS = _obj({"bridge": _obj({"datapathType": _STR, "externalIDs": _STR_MAP, "otherConfig": _STR_MAP,
                             "failMode": {"enum": ["secure", "standalone"]}}),
             "uplink": _obj({"interface": _OVS_IFACE})})
SRIOV_POLICY = _doc("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy", _obj({
    "resourceName": _STR,
    "nodeSelector": _STR_MAP,
    "priority": {"type": "integer", "minimum": 0, "maximum": 99},
    "mtu": {"type": "integer", "minimum": 1},
    "numVfs": {"type": "integer", "minimum": 0},
    "nicSelector": _obj({"vendor": _STR, "deviceID": _STR, "rootDevices": _STR_LIST, "pfNames": _STR_LIST,
                         "netFilter": _STR}),
    "deviceType": {"enum": ["netdevice", "vfio-pci"]},
    "isRdma": _BOOL,
    "needVhostNet": _BOOL,
    "linkType": {"enum": ["eth", "ETH", "ib", "IB"]},
    "eSwitchMode": {"enum": ["legacy", "switchdev"]},
    "vdpaType": {"enum": ["virtio", "vhost"]},
    "excludeTopology": _BOOL,
    "externallyManaged": _BOOL,
    "bridge": _obj({"ovs": _OVS}),
    "eSwitchParams": _obj({"multiport": _BOOL}),
}, ("resourceName", "nodeSelector", "numVfs", "nicSelector")))

PERFORMANCE_PROFILE = _doc("performance.openshift.io/v2", "PerformanceProfile", _obj({
    "cpu": _obj({"reserved": _CPUSET, "isolated": _CPUSET, "balanceIsolated": _BOOL, "offlined": _CPUSET,
                 "shared": _CPUSET, "ovsDpdk": _CPUSET}, ("reserved", "isolated")),
    "hardwareTuning": _obj({"isolatedCpuFreq": {"type": "integer"}, "reservedCpuFreq": {"type": "integer"}}),
    "hugepages": _obj({"defaultHugepagesSize": _STR,
                       "pages": {"type": "array", "items": _obj({"size": _STR, "count": _INT32, "node": _INT32})}}),
    "machineConfigLabel": _STR_MAP,
    "machineConfigPoolSelector": _STR_MAP,
    "nodeSelector": _STR_MAP,
    "realTimeKernel": _obj({"enabled": _BOOL}),
    "kernelPageSize": _STR,
    "additionalKernelArgs": _STR_LIST,
    "numa": _obj({"topologyPolicy": _STR}),
    "net": _obj({"userLevelNetworking": _BOOL, "devices": {"type": "array", "items": _obj(
        {"interfaceName": _STR, "vendorID": _STR, "deviceID": _STR})}}),
    "globallyDisableIrqLoadBalancing": _BOOL,
    "workloadHints": _obj({"highPowerConsumption": _BOOL, "realTime": _BOOL, "perPodPowerManagement": _BOOL,
                           "mixedCpus": _BOOL}),
}, ("cpu", "nodeSelector")), namespaced=False)  # +kubebuilder:resource:scope=Cluster


def _nad_config(doc: dict[str, Any]) -> Fault:
    """spec.config is a CNI network configuration: a JSON object with cniVersion and a type (or a plugins list);
    name may be left out (Userspace CNI's examples/crd-userspace-net-ovs-no-ipam.yaml has none) but is a string."""
    try:
        conf = json.loads((Nad.from_json(doc).spec or NadSpec()).config)
    except ValueError as err:
        return "spec.config", f"not JSON ({err})"
    if not isinstance(conf, dict):
        return "spec.config", "not a JSON object"
    cni = CniConfig.from_json(conf)
    if not isinstance(cni.cni_version, str):
        return "spec.config.cniVersion", "missing or not a string (a CNI configuration names its version)"
    if not isinstance(cni.name, str):
        return "spec.config.name", "not a string"
    if not isinstance(cni.type, str) and not isinstance(cni.plugins, list):
        return "spec.config.type", "missing (a CNI configuration has a type or a plugins list)"
    return None


def _pp_cpus(doc: dict[str, Any]) -> Fault:
    """The operator's rule: no CPU is in two of the sets."""
    seen: dict[int, str] = {}
    spec = PerformanceProfile.from_json(doc).spec or ProfileSpec()
    for key, text in (spec.cpu or {}).items():
        if not isinstance(text, str):
            continue
        for part in filter(None, text.split(",")):
            low, _, high = part.partition("-")
            for cpu in range(int(low), int(high or low) + 1):
                if cpu in seen:
                    return f"spec.cpu.{key}", f"CPU {cpu} is also in cpu.{seen[cpu]}"
                seen[cpu] = key
    return None


# (apiVersion, kind) -> (schema, a further check or None)
SCHEMAS: dict[tuple[str, str], tuple[dict[str, Any], Callable[[dict[str, Any]], Fault] | None]] = {
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"): (NAD, _nad_config),
    ("sriovnetwork.openshift.io/v1", "SriovNetworkNodePolicy"): (SRIOV_POLICY, None),
    ("performance.openshift.io/v2", "PerformanceProfile"): (PERFORMANCE_PROFILE, _pp_cpus),
}
