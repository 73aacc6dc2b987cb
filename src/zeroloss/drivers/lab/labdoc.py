"""The lab file's YAML as records (core.codec): LabFile and its sections, read once after LAB_SCHEMA passed
(labschema.py), so that labfile.parse checks for consistency and builds the Lab by attributes. A field's default is
what the lab file means when the key is absent (labexample.py documents each)."""

from __future__ import annotations

from dataclasses import dataclass

from zeroloss.core.codec import Json, Record


@dataclass(frozen=True, kw_only=True)
class KubeSection(Record):
    """dut.vnfs[].kubectl: a CNF's pod, reached through kubectl / oc exec (drivers/lab/kube.py)."""

    pod: str
    namespace: str = "default"
    container: str | None = None
    context: str | None = None
    tool: str = "kubectl"
    kubeconfig: str | None = None


@dataclass(frozen=True, kw_only=True)
class VmSection(Record):
    """dut.vnfs[].vm: the libvirt domain of a VM holding SR-IOV VFs."""

    domain: str


@dataclass(frozen=True, kw_only=True)
class VnfSection(Record):
    """dut.vnfs[]: a VNF, its two ports and its DPDK telemetry socket."""

    name: str
    ports: tuple[str, ...]
    telemetry: str
    ssh: str | None = None
    kubectl: KubeSection | None = None
    vm: VmSection | None = None
    forward: str = "mac"
    restart: Json = None  # a command: a string or a list of words (labfile.command)
    peer_macs: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class OvsSection(Record):
    """dut.ovs: where OVS keeps its sockets, the CPUs tune may add, the command that restarts it."""

    rundir: str = "/var/run/openvswitch"
    db: str | None = None  # None: unix:RUNDIR/db.sock
    spare_cpus: str | None = None
    restart: Json = None


@dataclass(frozen=True, kw_only=True)
class DutSection(Record):
    """dut: the node, how it is reached, its OVS and VNFs."""

    ssh: str
    ssh_config: str | None = None
    ssh_options: tuple[str, ...] = ()
    sudo: str = "auto"
    sriov_policy: str | None = None
    ovs: OvsSection | None = None
    vnfs: tuple[VnfSection, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PortSection(Record):
    """generator.ports[]: a zlgen port and the DUT port it is cabled to."""

    name: str
    device: str
    dut_port: str
    dst_mac: str
    mac: str | None = None
    ip: str | None = None
    dst_ip: str | None = None
    vlan: int = -1
    speed_gbps: float | None = None


@dataclass(frozen=True, kw_only=True)
class GeneratorSection(Record):
    lcores: str = "1"
    ports: tuple[PortSection, ...] = ()


@dataclass(frozen=True, kw_only=True)
class LearningSection(Record):
    """traffic.learning when a map (false: no learning frames)."""

    rate_pps: float = 1000
    seconds: float = 1.0


@dataclass(frozen=True, kw_only=True)
class TrafficSection(Record):
    pairs: tuple[tuple[str, ...], ...] = ()
    direction: str = "bidirectional"
    flows: int | None = None
    learning: Json = None  # false, or a map (LearningSection)

    def learning_map(self) -> LearningSection | None:
        """The learning frames' rate and time; None for `learning: false`."""
        return None if self.learning is False else LearningSection.from_json(self.learning or {})


@dataclass(frozen=True, kw_only=True)
class LabFile(Record):
    """A lab file that passed LAB_SCHEMA."""

    dut: DutSection
    generator: GeneratorSection
    traffic: TrafficSection
