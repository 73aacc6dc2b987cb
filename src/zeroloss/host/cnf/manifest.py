"""The parts of Kubernetes manifests that zeroloss reads, as records: a manifest is read into these once (after its
schema check, so the shapes hold) and its fields are attributes from then on. Keys the records do not name are kept
(Record.extra), so a record built in code writes the manifest back key for key."""

from __future__ import annotations

from dataclasses import dataclass, field

from zeroloss.core.codec import Json, JsonObject, Record


def _key(json_key: str) -> dict[str, str]:
    return {"key": json_key}


@dataclass(frozen=True, kw_only=True)
class ObjectMeta(Record):
    """metadata: the object's name ('?' when a manifest has none) and namespace."""
    name: Json = "?"
    namespace: Json = None
    annotations: Json = None


@dataclass(frozen=True, kw_only=True)
class Manifest(Record):
    """Any Kubernetes object: apiVersion and kind, metadata and spec as read."""
    api_version: Json = field(default=None, metadata=_key("apiVersion"))
    kind: Json = None
    metadata: Json = None
    spec: Json = None

    @property
    def name(self) -> str:
        """metadata.name as a string, '?' when it is missing."""
        return str(ObjectMeta.from_json(self.metadata or {}).name)


# -- Pod ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class EmptyDir(Record):
    medium: Json = ""


@dataclass(frozen=True, kw_only=True)
class Volume(Record):
    name: Json = None
    host_path: JsonObject | None = field(default=None, metadata=_key("hostPath"))
    empty_dir: EmptyDir | None = field(default=None, metadata=_key("emptyDir"))


@dataclass(frozen=True, kw_only=True)
class VolumeMount(Record):
    name: Json = None
    mount_path: Json = field(default=None, metadata=_key("mountPath"))


@dataclass(frozen=True, kw_only=True)
class Resources(Record):
    """requests and limits: resource name -> quantity."""
    requests: JsonObject | None = None
    limits: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class Container(Record):
    name: Json = None
    resources: Resources | None = None
    volume_mounts: tuple[VolumeMount, ...] | None = field(default=None, metadata=_key("volumeMounts"))


@dataclass(frozen=True, kw_only=True)
class PodSpecDoc(Record):
    """A Pod's spec as the API reads it (cnf.k8s.PodSpec is what zeroloss builds one from)."""
    containers: tuple[Container, ...] | None = None
    volumes: tuple[Volume, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class Pod(Record):
    metadata: Json = None
    spec: PodSpecDoc | None = None


# -- the CRDs ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class NicSelector(Record):
    """A SriovNetworkNodePolicy's nicSelector (sriov-network-operator api/v1 SriovNetworkNicSelector)."""
    vendor: str | None = None
    device_id: str | None = field(default=None, metadata=_key("deviceID"))
    pf_names: tuple[str, ...] | None = field(default=None, metadata=_key("pfNames"))
    root_devices: tuple[str, ...] | None = field(default=None, metadata=_key("rootDevices"))
    net_filter: Json = field(default=None, metadata=_key("netFilter"))


@dataclass(frozen=True, kw_only=True)
class SriovPolicySpecDoc(Record):
    """A SriovNetworkNodePolicy's spec (api/v1 SriovNetworkNodePolicySpec), in the order zeroloss writes it."""
    device_type: Json = field(default=None, metadata=_key("deviceType"))
    is_rdma: Json = field(default=None, metadata=_key("isRdma"))
    nic_selector: NicSelector | None = field(default=None, metadata=_key("nicSelector"))
    node_selector: JsonObject | None = field(default=None, metadata=_key("nodeSelector"))
    num_vfs: Json = field(default=0, metadata=_key("numVfs"))
    priority: Json = None
    resource_name: Json = field(default="", metadata=_key("resourceName"))
    mtu: Json = None


@dataclass(frozen=True, kw_only=True)
class SriovPolicy(Manifest):
    """A sriovnetwork.openshift.io/v1 SriovNetworkNodePolicy."""
    spec: SriovPolicySpecDoc | None = None

    @property
    def selector(self) -> NicSelector:
        """spec.nicSelector (empty when missing)."""
        return (self.spec.nic_selector if self.spec else None) or NicSelector()


@dataclass(frozen=True, kw_only=True)
class NadSpec(Record):
    config: Json = None


@dataclass(frozen=True, kw_only=True)
class Nad(Manifest):
    """A k8s.cni.cncf.io/v1 NetworkAttachmentDefinition: spec.config is a CNI configuration as a JSON string."""
    spec: NadSpec | None = None


@dataclass(frozen=True, kw_only=True)
class CniConfig(Record):
    """A CNI network configuration (spec.config of a NetworkAttachmentDefinition), values as read."""
    cni_version: Json = field(default=None, metadata=_key("cniVersion"))
    name: Json = ""
    type: Json = None
    plugins: Json = None


@dataclass(frozen=True, kw_only=True)
class ProfileSpec(Record):
    """The part of a PerformanceProfile's spec checked beyond its schema: the CPU sets."""
    cpu: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class PerformanceProfile(Manifest):
    """A performance.openshift.io/v2 PerformanceProfile."""
    spec: ProfileSpec | None = None
