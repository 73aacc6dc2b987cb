"""A Plan rendered as the CNF's Kubernetes manifests (`zeroloss host plan --format k8s`): the PerformanceProfile, an
SriovNetworkNodePolicy and a NetworkAttachmentDefinition per planned port, and the testpmd Pod that takes one VF of
each, as the reference study deploys its CNF (redhat-sriov-shiftonstack-perf). Every document is validated
(zeroloss.host.cnf.schema) before it is printed.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from zeroloss.core.cpuset import format_list
from zeroloss.core.errors import ZeroLossError

from .cnf import k8s, sriovnics
from .cnf.manifest import SriovPolicy
from .plan import Plan, PlannedPort
from .render_deploy import PP_DERIVED, PP_ROLE, comment

PROFILE = "zeroloss-cnf"
NAMESPACE = "zeroloss-cnf"
POD = "zeroloss-testpmd"
IMAGE = "localhost/zeroloss-testpmd:latest"  # scripts/build-cnf-image.sh builds it; push it where the nodes pull
RESOURCE_PREFIX = "openshift.io/"  # the SR-IOV operator's default resource prefix
POLICY_NAMESPACE = "openshift-sriov-network-operator"
MBUF_HEADROOM = 128  # RTE_PKTMBUF_HEADROOM


def resource_name(port: PlannedPort) -> str:
    """The device plugin resource of a port's VFs: letters, digits and '_' only (the operator's webhook rule)."""
    return "zl_" + re.sub(r"[^A-Za-z0-9]", "_", port.netdev or port.pci)


def pci_env(resource: str) -> str:
    """The variable the SR-IOV device plugin sets in the pod to the VFs' PCI addresses: openshift.io/zl_x ->
    PCIDEVICE_OPENSHIFT_IO_ZL_X (openshift-kni/cnf-features-deploy's DPDK tests read the same variables)."""
    return "PCIDEVICE_" + re.sub(r"[./]", "_", resource).upper()


def sriov_pf(port: PlannedPort) -> sriovnics.Pf:
    """The port's PF as the SR-IOV operator's config daemon would discover it; refused in one line when it would
    not (an unsupported NIC, or a PF with no kernel interface: bound to vfio-pci for OVS-DPDK), since the operator's
    webhook then refuses every policy selecting it."""
    pf = sriovnics.Pf(port.pci, port.vendor, port.device, port.driver, port.netdev)
    why = sriovnics.discovery_refusal(pf)
    if why is None:
        return pf
    driver = sriovnics.kernel_driver(port.vendor, port.device)
    if driver is None:
        remedy = (f"choose supported PFs with --ports, or add '<name>: {sriovnics.hex_id(port.vendor)} "
                  f"{sriovnics.hex_id(port.device)} <VF device>' to the operator's supported-nic-ids ConfigMap")
    else:
        remedy = (f"bind the PF to {driver} (driverctl unset-override {port.pci}, or write {port.pci} to "
                  f"/sys/bus/pci/drivers/{driver}/bind) and plan with --ports naming its interface")
    label = f"{port.netdev} ({port.pci})" if port.netdev else port.pci
    raise ZeroLossError(f"SR-IOV PF of {port.name}, {label}: {why}", remedy)


def testpmd_argv(plan: Plan, resources: list[str]) -> tuple[str, ...]:
    """testpmd through sh (the VFs' addresses are only known in the pod, from the device plugin's variables):
    no -l, so EAL takes the CPUs the static CPU manager gave the container (its affinity); the first is the main
    lcore, one forwarding core per port; frames of the plan's MTU fit one mbuf."""
    mtu = max((p.mtu for p in plan.ports), default=1500)
    frame = mtu + 18
    args = [f"-n {plan.memory_channels}", *(f"-a ${pci_env(r)}" for r in resources), "--file-prefix cnf", "--",
            "-i", "--auto-start", "--forward-mode=io", f"--nb-cores={len(resources)}",
            f"--rxd={plan.descriptors}", f"--txd={plan.descriptors}"]
    if mtu > 1500:
        args += [f"--max-pkt-len={frame}", f"--mbuf-size={frame + MBUF_HEADROOM}"]
    return ("/bin/sh", "-c", "exec dpdk-testpmd " + " ".join(args))


def documents(plan: Plan) -> list[tuple[str, dict[str, Any]]]:
    """(a comment, the manifest) for the profile, each port's policy and network, and the Pod."""
    extra = tuple(a for a in plan.kernel_args if a.partition("=")[0] not in PP_DERIVED)
    profile = k8s.performance_profile(
        PROFILE, format_list(plan.isolated), format_list(plan.housekeeping),
        tuple(("1G", plan.hugepages_1g[n], n) for n in plan.nodes if plan.hugepages_1g.get(n)),
        node_selector=((f"node-role.kubernetes.io/{PP_ROLE}", ""),), additional_kernel_args=extra,
        high_power=plan.intent.low_latency)
    docs: list[tuple[str, dict[str, Any]]] = [(
        f"cpu.isolated = the plan's PMD and guest CPUs (where the CNF's pinned CPUs come from), cpu.reserved = the "
        f"housekeeping CPUs; 1 GB pages per node as planned. Pods use it with runtimeClassName "
        f"{k8s.runtime_class(PROFILE)}. Label the nodes node-role.kubernetes.io/{PP_ROLE}=\"\" first.", profile)]
    networks, resources = [], []
    for i, port in enumerate(plan.ports):
        name = resource_name(port)
        pf = sriov_pf(port)
        policy = k8s.sriov_node_policy(k8s.SriovPolicySpec(
            name=f"zl-{name.removeprefix('zl_').replace('_', '-').lower()}", resource_name=name, pf_names=(pf.name,),
            num_vfs=1, mtu=port.mtu, namespace=POLICY_NAMESPACE, vendor=pf.vendor, device_id=pf.device))
        read = SriovPolicy.from_json(policy)
        miss = sriovnics.selector_refusal(read.selector, pf)
        if miss:  # the webhook's validateNicModel would not count the PF as selected
            raise ZeroLossError(f"SR-IOV policy {read.name} misses its PF: {miss}")
        docs.append((
            f"{port.name} (PF {pf.name}, {port.pci}, node {port.node}, {sriovnics.model(pf.vendor, pf.device)} on "
            f"its kernel driver {sriovnics.kernel_driver(pf.vendor, pf.device)}, selected by name as the operator "
            f"discovers it): 1 VF bound to vfio-pci for DPDK, MTU {port.mtu}, offered as {RESOURCE_PREFIX}{name}",
            policy))
        networks.append(k8s.NetworkSpec(name=f"zl-sriov-{i}", resource=RESOURCE_PREFIX + name))
        resources.append(RESOURCE_PREFIX + name)
    for net, doc in zip(networks, k8s.nad_manifests(tuple(networks), NAMESPACE), strict=True):
        docs.append((f"{net.name}: the VF of {net.resource} in the pod (sriov CNI, no IPAM: DPDK owns the VF)", doc))
    pod = k8s.pod_manifest(k8s.PodSpec(
        name=POD, image=IMAGE, command=testpmd_argv(plan, resources), cpus=1 + len(resources), memory_mb=1024,
        hugepages_1gi_mb=1024 * max(1, len(resources)), networks=tuple(n.name for n in networks),
        sriov_resources=tuple(resources), runtime_class=k8s.runtime_class(PROFILE), namespace=NAMESPACE,
        node_selector=((f"node-role.kubernetes.io/{PP_ROLE}", ""),)))
    docs.append((f"testpmd, Guaranteed QoS: {1 + len(resources)} whole CPUs (a main lcore and one forwarding core "
                 f"per port), 1 GB pages (one per port), one VF per port; requests = limits; the CRI-O annotations "
                 f"take effect with runtimeClassName {k8s.runtime_class(PROFILE)}.", pod))
    return docs


def render_k8s(plan: Plan) -> str:
    """The manifests as YAML documents separated by ---, each validated and preceded by its comment."""
    out = comment("Kubernetes manifests of the CNF written by `zeroloss host plan --format k8s`, each checked against "
                  "its API schema (Pod: the kubernetes Python models; CRDs: their upstream Go types). Apply with "
                  f"kubectl apply -f FILE (namespace {NAMESPACE} first: kubectl create namespace {NAMESPACE}).")
    for i, (why, doc) in enumerate(documents(plan)):
        k8s.validate(doc)
        out += (["---"] if i else []) + comment(why) + yaml.safe_dump(doc, sort_keys=False).rstrip().splitlines()
    return "\n".join(out)
