"""The VNFs of an OVS bench as run settings and as the result file keeps them (process, container or VM, pins,
domains, Pod manifests)."""

from __future__ import annotations

from zeroloss.core.config import RunConfig
from zeroloss.core.cores import core_list
from zeroloss.drivers.bench.ovsbench import OvsBench, OvsBenchSpec
from zeroloss.drivers.vnf.vm import guest_manifest, hardware_virt, resolve_accel, resolve_vnf


def vnf_settings(cfg: RunConfig) -> dict:
    """The OvsBenchSpec fields of the VNFs: --vnf auto becomes vm where KVM works (else process, and why)."""
    vnf = "process" if cfg.topology in ("p2p", "ovs-p2p") else resolve_vnf(cfg.vnf)
    return {"vnf": vnf, "vnf_accel": cfg.vnf_accel,
            "vnf_vcpus": core_list("vnf_vcpus", cfg.vnf_vcpus),
            "vnf_emulator_cpus": core_list("vnf_emulator_cpus", cfg.vnf_emulator_cpus),
            "vnf_memory_mb": cfg.vnf_memory_mb, "vnf_boot_timeout_s": cfg.vnf_boot_timeout_s,
            "vnf_queues": cfg.vnf_queues, "cnf_launch": cfg.cnf_launch,
            "vnf_link": cfg.vnf_link}


def vnf_placement(spec: OvsBenchSpec, bench: OvsBench) -> dict:
    """What the result file keeps of the VNFs: process or VM and, for VMs, the domain XML, boot time, pins."""
    if not spec.vnf_ports:
        return {}
    out: dict = {"vnf": spec.vnf}
    if spec.vnf == "container":
        places = [v.placement() for v in bench.vnfs]
        image = getattr(bench.vnfs[0].spec, "image", None) if bench.vnfs else None
        out.update({"cnf_launch": spec.cnf_launch, "vnf_link": spec.vnf_link, "cnf_image": image,
                    "vnf_cpus": [list(p.cpus) for p in places], "cnf_start_s": [p.boot_s for p in places]})
        if spec.cnf_launch == "kube":
            out["cnf_pods"] = [p.manifest for p in places]
        return out
    if spec.vnf == "process":
        out["vnf_link"] = spec.vnf_link
        why = hardware_virt()
        if why:
            out["vnf_vm_unavailable"] = why
        return out
    accel, why = resolve_accel(spec.vnf_accel)
    out.update({"vnf_accel": accel, "vnf_accel_why": why,
                "vnf_vcpus": list(spec.vnf_vcpus), "vnf_emulator_cpus": list(spec.vnf_emulator_cpus),
                "vnf_memory_mb": spec.vnf_memory_mb, "vnf_queues": spec.vnf_queues or spec.queues,
                "vnf_domains": bench.domains(), "vnf_boot_s": [v.placement().boot_s for v in bench.vnfs],
                "vnf_guest": guest_manifest()})
    return out
