"""What the SR-IOV Network Operator accepts: the NICs it supports, which PFs its config daemon discovers, and the
SriovNetworkNodePolicy checks of its admission webhook, so `host plan --format k8s` never renders a policy the
cluster would refuse. Read from k8snetworkplumbingwg/sriov-network-operator (deploy/configmap.yaml,
pkg/host/internal/sriov/sriov.go DiscoverSriovDevices, pkg/webhook/validate.go); the rules are restated here, each
with the function it comes from. Pure: strings and records in, a reason (or None) out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .manifest import NicSelector, SriovPolicy, SriovPolicySpecDoc

__all__ = ["SUPPORTED", "Pf", "hex_id", "kernel_driver", "model", "discovery_refusal", "selector_refusal",
           "policy_refusal", "DPDK_DRIVERS"]

# (vendor, PF device) -> (model, kernel driver of the PF, VF device): the operator's supported-nic-ids ConfigMap
# (deploy/configmap.yaml; IsSupportedModel in api/v1/helper.go reads it), the driver being the Linux driver that
# claims the PF's ID (the ConfigMap's names say it for most; 8086:10c9, the 82576, is igb's).
SUPPORTED: dict[tuple[str, str], tuple[str, str, str]] = {
    ("8086", "158a"): ("Intel XXV710", "i40e", "154c"),
    ("8086", "158b"): ("Intel XXV710 25G SFP28", "i40e", "154c"),
    ("8086", "1572"): ("Intel X710 10G SFP+", "i40e", "154c"),
    ("8086", "1563"): ("Intel X550", "ixgbe", "1565"),
    ("8086", "10c9"): ("Intel 82576", "igb", "10ca"),
    ("8086", "1589"): ("Intel X710/X557-AT 10G", "i40e", "154c"),
    ("8086", "1581"): ("Intel X710 10G backplane", "i40e", "154c"),
    ("8086", "15ff"): ("Intel X710 10G BASE-T", "i40e", "154c"),
    ("8086", "0d58"): ("Intel XXV710 (N3000)", "i40e", "154c"),
    ("8086", "1583"): ("Intel XL710 40G QSFP+", "i40e", "154c"),
    ("8086", "1592"): ("Intel E810-C QSFP", "ice", "1889"),
    ("8086", "1593"): ("Intel E810-XXVDA4", "ice", "1889"),
    ("8086", "159b"): ("Intel E810-XXVDA2", "ice", "1889"),
    ("8086", "1599"): ("Intel E810-XXV backplane", "ice", "1889"),
    ("8086", "1591"): ("Intel E810-C backplane", "ice", "1889"),
    ("8086", "188a"): ("Intel E823-C", "ice", "1889"),
    ("8086", "124d"): ("Intel E823-L SFP", "ice", "1889"),
    ("8086", "124c"): ("Intel E823-L backplane", "ice", "1889"),
    ("8086", "579c"): ("Intel E825-C backplane", "ice", "1889"),
    ("8086", "579d"): ("Intel E825-C QSFP", "ice", "1889"),
    ("8086", "579e"): ("Intel E825-C SFP", "ice", "1889"),
    ("8086", "12d2"): ("Intel E830-CC QSFP", "ice", "1889"),
    ("8086", "12d3"): ("Intel E830-CC SFP", "ice", "1889"),
    ("8086", "1249"): ("Intel E835-CC QSFP", "ice", "1889"),
    ("8086", "124a"): ("Intel E835-CC SFP", "ice", "1889"),
    ("15b3", "1013"): ("NVIDIA ConnectX-4", "mlx5_core", "1014"),
    ("15b3", "1015"): ("NVIDIA ConnectX-4 Lx", "mlx5_core", "1016"),
    ("15b3", "1017"): ("NVIDIA ConnectX-5", "mlx5_core", "1018"),
    ("15b3", "1019"): ("NVIDIA ConnectX-5 Ex", "mlx5_core", "101a"),
    ("15b3", "101b"): ("NVIDIA ConnectX-6", "mlx5_core", "101c"),
    ("15b3", "101d"): ("NVIDIA ConnectX-6 Dx", "mlx5_core", "101e"),
    ("15b3", "101f"): ("NVIDIA ConnectX-6 Lx", "mlx5_core", "101e"),
    ("15b3", "1021"): ("NVIDIA ConnectX-7", "mlx5_core", "101e"),
    ("15b3", "1023"): ("NVIDIA ConnectX-8", "mlx5_core", "101e"),
    ("15b3", "1025"): ("NVIDIA ConnectX-9", "mlx5_core", "101e"),
    ("15b3", "a2d6"): ("NVIDIA BlueField-2", "mlx5_core", "101e"),
    ("15b3", "a2dc"): ("NVIDIA BlueField-3", "mlx5_core", "101e"),
    ("14e4", "16d7"): ("Broadcom BCM57414", "bnxt_en", "16dc"),
    ("14e4", "1750"): ("Broadcom BCM57508", "bnxt_en", "1806"),
    ("1077", "1654"): ("QLogic QL45000", "qede", "1664"),
    ("1af4", "1000"): ("virtio-net", "virtio-pci", "1000"),
    ("1af4", "1041"): ("virtio-net 1.0", "virtio-pci", "1041"),
    ("177d", "b200"): ("Marvell OCTEON TX2 CN96XX", "rvu_nicpf", "b203"),
    ("177d", "b100"): ("Marvell OCTEON TX2 CN98XX", "rvu_nicpf", "b103"),
    ("177d", "b600"): ("Marvell OCTEON Fusion CNF95XX", "rvu_nicpf", "b603"),
    ("177d", "b900"): ("Marvell OCTEON 10 CN10XXX", "rvu_nicpf", "b903"),
    ("177d", "ba00"): ("Marvell OCTEON Fusion CNF105XX", "rvu_nicpf", "ba03"),
    ("1d0f", "ec20"): ("Amazon ENA", "ena", "ec20"),
}
DPDK_DRIVERS = ("vfio-pci", "uio_pci_generic", "igb_uio")  # a PF bound to one of these has no kernel interface
RESOURCE_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_-]*[A-Za-z0-9])?")  # validate.go resourceNameRegexp
RESOURCE_NAME_MAX = 63  # validate.go resourceNameMaxLen
MLX_MAX_VFS = 128  # validate.go MlxMaxVFs: the webhook's cap for NVIDIA PFs
NO_NIC = "its webhook refuses the policy ('no supported NIC is selected by the nicSelector')"


def hex_id(value: str) -> str:
    """A PCI ID as the operator writes it (ghw's form): '0x8086' -> '8086'."""
    return value.lower().removeprefix("0x")


def model(vendor: str, device: str) -> str:
    entry = SUPPORTED.get((hex_id(vendor), hex_id(device)))
    return entry[0] if entry else f"{hex_id(vendor)}:{hex_id(device)}"


def kernel_driver(vendor: str, device: str) -> str | None:
    """The kernel driver the PF must be bound to for the operator to see it, or None for an unsupported NIC."""
    entry = SUPPORTED.get((hex_id(vendor), hex_id(device)))
    return entry[1] if entry else None


@dataclass(frozen=True)
class Pf:
    """A physical function as the operator's config daemon would find it on the node."""

    pci: str
    vendor: str
    device: str
    driver: str  # '' when unbound
    name: str  # the kernel netdev, '' when there is none


def discovery_refusal(pf: Pf) -> str | None:
    """Why DiscoverSriovDevices (pkg/host/internal/sriov/sriov.go) leaves the PF out of the node state, or None.
    It skips a model that IsSupportedModel does not know, then a device with no kernel interface
    (TryGetInterfaceName empty: a PF bound to vfio-pci or to no driver); a policy selecting only such PFs selects
    no interface and the webhook's dynamicValidateSriovNetworkNodePolicy refuses it."""
    if kernel_driver(pf.vendor, pf.device) is None:
        return (f"NIC {hex_id(pf.vendor)}:{hex_id(pf.device)} is not in the operator's supported-nic-ids list, so its "
                f"config daemon does not discover it and {NO_NIC}")
    if not pf.name:
        bound = f"bound to {pf.driver}" if pf.driver else "bound to no driver"
        return (f"it is {bound} and has no kernel interface: the operator's config daemon discovers a PF by its "
                f"netdev name and skips it, so {NO_NIC}")
    return None


def _pf_names(selector: NicSelector) -> list[str]:
    return [p.partition("#")[0] for p in selector.pf_names or ()]


def selector_refusal(selector: NicSelector, pf: Pf) -> str | None:
    """Why the webhook's validateNicModel does not count the discovered PF as selected by nicSelector, or None."""
    if selector.vendor and selector.vendor != hex_id(pf.vendor):
        return f"nicSelector.vendor {selector.vendor} is not the PF's vendor {hex_id(pf.vendor)}"
    if selector.device_id and selector.device_id != hex_id(pf.device):
        return f"nicSelector.deviceID {selector.device_id} is not the PF's device {hex_id(pf.device)}"
    if selector.root_devices and pf.pci not in selector.root_devices:
        return f"nicSelector.rootDevices does not hold {pf.pci}"
    if selector.pf_names and pf.name not in _pf_names(selector):
        return f"nicSelector.pfNames does not hold {pf.name or 'the PF (it has no kernel name)'}"
    return None


def _range_refusal(entry: str, num_vfs: int) -> str | None:
    """staticValidateSriovNetworkNodePolicy's check of a 'name#first-last' pfNames entry."""
    fields = entry.split("#")
    if len(fields) != 2:
        return f"pfNames entry '{entry}' has more than one '#'"
    bounds = fields[1].split("-")
    if len(bounds) != 2 or not all(b.isdigit() for b in bounds):
        return f"pfNames entry '{entry}' is not name#first-last"
    first, last = int(bounds[0]), int(bounds[1])
    if last < first:
        return f"pfNames entry '{entry}': the last VF is below the first"
    if last >= num_vfs:
        return f"pfNames entry '{entry}': VF {last} is past numVfs {num_vfs} (VFs are 0..{num_vfs - 1})"
    return None


def policy_refusal(doc: Mapping[str, Any]) -> str | None:
    """Why the operator's webhook refuses the SriovNetworkNodePolicy whatever the node holds, or None: the static
    checks of staticValidateSriovNetworkNodePolicy (pkg/webhook/validate.go) that a rendered policy can fail."""
    policy = SriovPolicy.from_json(doc)
    spec, sel = policy.spec or SriovPolicySpecDoc(), policy.selector
    name = str(spec.resource_name)
    if not name or len(name) > RESOURCE_NAME_MAX or not RESOURCE_NAME.fullmatch(name):
        return (f"resourceName '{name}' must be 1..{RESOURCE_NAME_MAX} letters, digits, '-' or '_', starting and "
                "ending with a letter or digit")
    named = (sel.vendor, sel.device_id, sel.pf_names, sel.root_devices)
    if not any((*named, sel.net_filter)):
        return "nicSelector names no vendor, deviceID, pfNames, rootDevices or netFilter"
    if sel.net_filter and any(named):
        return "nicSelector.netFilter excludes vendor, deviceID, pfNames and rootDevices"
    vendor, device = sel.vendor or "", sel.device_id or ""
    if vendor and not any(v == vendor for v, _ in SUPPORTED):
        return f"vendor {vendor} is not in the operator's supported-nic-ids list"
    if vendor and device and (vendor, device) not in SUPPORTED:
        return f"vendor/device {vendor}/{device} is not in the operator's supported-nic-ids list"
    if device and not vendor and not any(d == device for _, d in SUPPORTED):
        return f"device {device} is not in the operator's supported-nic-ids list"
    for entry in sel.pf_names or ():
        why = _range_refusal(entry, int(spec.num_vfs)) if "#" in entry else None
        if why:
            return why
    if spec.device_type == "vfio-pci" and spec.is_rdma:
        return "deviceType vfio-pci conflicts with isRdma true"
    # the next two are validatePolicyForNodeState's, known here without the node
    if int(spec.num_vfs) == 0:
        return "numVfs 0 is refused for any policy but the operator's default"
    if vendor == "15b3" and int(spec.num_vfs) > MLX_MAX_VFS:
        return f"numVfs {spec.num_vfs} is over the webhook's {MLX_MAX_VFS} for NVIDIA NICs"
    return None
