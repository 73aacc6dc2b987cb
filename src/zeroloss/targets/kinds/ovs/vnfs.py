"""The VNFs of an OVS bench, one entry per kind (a testpmd process, a container, a VM), as testpmd keeps its
forwarding engines in one table: where each polls, the ring it takes, the settings that pin it to host cores and
what the result file keeps of it (domains, Pod manifests, boot times). Light at import time: the VNF drivers are
imported where a bench runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zeroloss.core.config import RunConfig
from zeroloss.core.cores import core_list, lcore_set
from zeroloss.drivers.probe.interference import ThreadRef, thread

from ...bench import dpdk_pollers

if TYPE_CHECKING:
    from zeroloss.drivers.bench.ovsbench import OvsBench, OvsBenchSpec


@dataclass(frozen=True)
class VnfKind:
    """One kind of VNF the OVS bench runs (--vnf)."""

    name: str
    host_lcores: bool  # its testpmd runs on the host's vnf_lcores (False: the guest's, on its vCPUs)
    ring_max: int  # the deepest virtio ring it takes (QEMU's virtio-net: 1024)
    pins: tuple[str, ...]  # the settings that pin it to host cores besides vnf_lcores (checked: core.cores)
    pollers: Callable[[Any], list[ThreadRef]]  # a running VNF's forwarding threads now
    placement: Callable[[OvsBenchSpec, OvsBench], dict]  # what the result file keeps of the bench's VNFs


def _process_pollers(vnf: Any) -> list[ThreadRef]:
    return dpdk_pollers(vnf.proc.pid, "vnf", main_polls=False)


def _container_pollers(vnf: Any) -> list[ThreadRef]:
    return dpdk_pollers(vnf.pid, "vnf", main_polls=False)  # the container's testpmd, a host process in its namespaces


def _vm_pollers(vnf: Any) -> list[ThreadRef]:
    """A VM's vCPUs 1.., where the guest's testpmd forwards."""
    pid = vnf.proc.pid
    refs = [thread(pid, tid, "vcpu") for i, tid in sorted(vnf.vcpu_threads.items()) if i >= 1 and pid]
    return [r for r in refs if r is not None]


def _process_placement(spec: OvsBenchSpec, bench: OvsBench) -> dict:
    from zeroloss.drivers.vnf.vm import hardware_virt

    out: dict = {"vnf_link": spec.vnf_link}
    why = hardware_virt()
    if why:
        out["vnf_vm_unavailable"] = why
    return out


def _container_placement(spec: OvsBenchSpec, bench: OvsBench) -> dict:
    places = [v.placement() for v in bench.vnfs]
    image = getattr(bench.vnfs[0].spec, "image", None) if bench.vnfs else None
    out: dict = {"cnf_launch": spec.cnf_launch, "vnf_link": spec.vnf_link, "cnf_image": image,
                 "vnf_cpus": [list(p.cpus) for p in places], "cnf_start_s": [p.boot_s for p in places]}
    if spec.cnf_launch == "kube":
        out["cnf_pods"] = [p.manifest for p in places]
    return out


def _vm_placement(spec: OvsBenchSpec, bench: OvsBench) -> dict:
    from zeroloss.drivers.vnf.vm import guest_manifest, resolve_accel

    accel, why = resolve_accel(spec.vnf_accel)
    return {"vnf_accel": accel, "vnf_accel_why": why,
            "vnf_vcpus": list(spec.vnf_vcpus), "vnf_emulator_cpus": list(spec.vnf_emulator_cpus),
            "vnf_memory_mb": spec.vnf_memory_mb, "vnf_queues": spec.vnf_queues or spec.queues,
            "vnf_domains": bench.domains(), "vnf_boot_s": [v.placement().boot_s for v in bench.vnfs],
            "vnf_guest": guest_manifest()}


VNF_KINDS = {k.name: k for k in (
    VnfKind("process", True, 4096, (), _process_pollers, _process_placement),
    VnfKind("container", True, 4096, (), _container_pollers, _container_placement),
    VnfKind("vm", False, 1024, ("vnf_vcpus", "vnf_emulator_cpus"), _vm_pollers, _vm_placement),
)}
AUTO = ("vm", "process")  # what --vnf auto becomes: a VM where KVM works, else a process (drivers/vnf/vm.resolve_vnf)


def may_be(vnf: str) -> tuple[VnfKind, ...]:
    """The kinds a --vnf value may turn out to be (auto: either of AUTO, known when the bench starts)."""
    return tuple(VNF_KINDS[k] for k in (AUTO if vnf == "auto" else (vnf,)))


def pins(cfg: RunConfig) -> tuple[str, ...]:
    """The settings that pin the run's VNFs to host cores, where one may run (a VM's vCPUs and emulator threads)."""
    if cfg.topology not in ("pvp", "pvvp"):
        return ()
    return tuple(dict.fromkeys(key for k in may_be(cfg.vnf) for key in k.pins))


def ring_max(vnf: str) -> int:
    """The deepest ring every kind the --vnf value may be takes."""
    return min(k.ring_max for k in may_be(vnf))


def vnf_settings(cfg: RunConfig) -> dict:
    """The OvsBenchSpec fields of the VNFs: --vnf auto becomes vm where KVM works (else process, and why)."""
    from zeroloss.drivers.vnf.vm import resolve_vnf

    vnf = "process" if cfg.topology in ("p2p", "ovs-p2p") else resolve_vnf(cfg.vnf)
    return {"vnf": vnf, "vnf_accel": cfg.vnf_accel,
            "vnf_vcpus": core_list("vnf_vcpus", cfg.vnf_vcpus),
            "vnf_emulator_cpus": core_list("vnf_emulator_cpus", cfg.vnf_emulator_cpus),
            "vnf_memory_mb": cfg.vnf_memory_mb, "vnf_boot_timeout_s": cfg.vnf_boot_timeout_s,
            "vnf_queues": cfg.vnf_queues, "cnf_launch": cfg.cnf_launch,
            "vnf_link": cfg.vnf_link}


def vnf_placement(spec: OvsBenchSpec, bench: OvsBench) -> dict:
    """What the result file keeps of the VNFs: their kind and that kind's own part."""
    if not spec.vnf_ports:
        return {}
    return {"vnf": spec.vnf, **VNF_KINDS[spec.vnf].placement(spec, bench)}


def probe_cores(spec: OvsBenchSpec) -> set[int]:
    """The host cores the VNFs' testpmd runs on, for the core probe (a VM's vCPUs are not probed)."""
    return lcore_set("vnf_lcores", spec.vnf_lcores) if spec.vnf_ports and VNF_KINDS[spec.vnf].host_lcores else set()


def poller_cores(spec: OvsBenchSpec) -> set[int]:
    """The host cores the VNFs forward on: testpmd's lcores but its main one, or a VM's vCPUs 1.. pins."""
    if not spec.vnf_ports:
        return set()
    if VNF_KINDS[spec.vnf].host_lcores:
        return lcore_set("vnf_lcores", spec.vnf_lcores) - {spec.vnf_main_lcore}
    return set(spec.vnf_vcpus[1:])
