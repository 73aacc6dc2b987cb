"""A Plan rendered for the tools that apply it: ovs-vsctl commands, the kernel command line, tuned
cpu-partitioning variables, a TripleO heat environment, RHOSO 18 EDPM variables, an OpenShift PerformanceProfile,
`openstack flavor set` properties, and a summary (the deployers of today: render_deploy.py)."""

from __future__ import annotations

import json

from zeroloss.core.cpuset import format_list, to_mask

from .plan import Plan
from .render_deploy import UNIT_NAME, edpm, hugepages_unit, performance_profile

FORMATS = ("summary", "ovs-vsctl", "cmdline", "tuned", "tripleo", "edpm", "performance-profile", "flavor")
BRIDGE = "br-dpdk"


def _wrap(text: str, width: int = 100, indent: str = "    ") -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(indent + cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    return lines + ([indent + cur] if cur else [])


def summary(plan: Plan) -> str:
    """Every planned value with its reason, the three socket memory figures side by side, then the warnings."""
    def per_node(values: dict[int, int]) -> str:
        return ", ".join(f"node {n}: {values.get(n, 0)}" for n in plan.nodes)

    pmd = "; ".join(f"node {n}: {format_list(c)}" for n, c in sorted(plan.pmd_by_node.items()))
    ports = "; ".join(f"{p.name} = {p.pci}{' (' + p.netdev + ')' if p.netdev else ''} node {p.node}"
                      f"{' (reported -1)' if p.reported_node < 0 else ''}, MTU {p.mtu}" for p in plan.ports)
    need = ", ".join(f"node {n}: {plan.ovs_need_mib.get(n, 0.0):.0f} MiB" for n in plan.nodes)
    rows = [
        ("DPDK ports", ports, None),
        ("housekeeping CPUs", format_list(plan.housekeeping), "housekeeping"),
        ("PMD CPUs", pmd, "pmd"),
        ("VM CPUs", format_list(plan.vm_cpus) or "none", "vm_cpus"),
        ("isolcpus / nohz_full / rcu_nocbs", format_list(plan.isolated), "isolated"),
        ("dpdk-socket-mem (MB)", plan.socket_mem_list(), "socket_mem"),
        ("  TripleO, distinct MTUs", plan.socket_mem_list(plan.socket_mem_tripleo), None),
        ("  per-port variant", plan.socket_mem_list(plan.socket_mem_per_port), None),
        ("  OVS mempool model", need, None),
        ("1 GB hugepages", per_node(plan.hugepages_1g), "hugepages"),
        *([("  set per node at boot", f"{UNIT_NAME} (kernel {plan.kernel_release or 'unknown'} < 5.16)", None)]
          if plan.hugepages_sysfs else []),
        ("guest memory (GB)", per_node(plan.vm_memory_gb), "vm_memory"),
        ("memory channels", str(plan.memory_channels), "memory_channels"),
        ("RX queues per port", str(plan.rxq), "rxq"),
        ("RX/TX descriptors", str(plan.descriptors), "descriptors"),
        ("vhost ring size", str(plan.vhost_ring), "vhost_ring"),
        ("emulator threads", plan.emulator_policy, "emulator_policy"),
        ("kernel arguments", " ".join(plan.kernel_args), "kernel_args"),
        ("PMD auto load balance", "off" if plan.auto_lb.enabled is None else plan.auto_lb.enabled, "pmd_auto_lb"),
        *[(f"  {key}", plan.pmd_auto_lb[key], why) for key, why in (
            ("pmd-auto-lb-load-threshold", "pmd_auto_lb_load"),
            ("pmd-auto-lb-improvement-threshold", "pmd_auto_lb_improvement"),
            ("pmd-auto-lb-rebal-interval", "pmd_auto_lb_interval")) if key in plan.pmd_auto_lb],
    ]
    out = []
    for label, value, key in rows:
        out.append(f"{label}: {value}")
        if key:
            out += _wrap("why: " + plan.reasons[key])
    out += [f"warning: {w}" for w in plan.warnings]
    return "\n".join(out)


def ovs_vsctl(plan: Plan) -> str:
    oc = "ovs-vsctl --no-wait set Open_vSwitch . other_config:"
    lines = ["# OVS-DPDK settings (dpdk-* keys take effect when ovs-vswitchd restarts)"]
    for p in plan.ports:
        if p.driver != "vfio-pci":
            lines.append(f"driverctl set-override {p.pci} vfio-pci   # {p.netdev or p.pci} is on {p.driver or 'none'}")
    lines += [f"{oc}dpdk-init=true",
              f'{oc}dpdk-socket-mem="{plan.socket_mem_list()}"   # MB per NUMA node',
              f"{oc}dpdk-lcore-mask={to_mask(plan.housekeeping)}   # CPUs {format_list(plan.housekeeping)}",
              f"{oc}pmd-cpu-mask={to_mask(plan.pmd_cpus)}   # CPUs {format_list(plan.pmd_cpus)}",
              f'{oc}dpdk-extra="-n {plan.memory_channels}"   # memory channels']
    if plan.intent.per_port_memory:
        lines.append(f"{oc}per-port-memory=true")
    lines += [f"{oc}{k}={v}" for k, v in plan.pmd_auto_lb.items()]
    lines.append(f"ovs-vsctl --may-exist add-br {BRIDGE} -- set Bridge {BRIDGE} datapath_type=netdev")
    for p in plan.ports:
        lines.append(f"ovs-vsctl --may-exist add-port {BRIDGE} {p.name} -- set Interface {p.name} type=dpdk "
                     f"options:dpdk-devargs={p.pci} mtu_request={p.mtu} options:n_rxq={p.n_rxq} "
                     f"options:n_rxq_desc={p.rxq_desc} options:n_txq_desc={p.txq_desc}")
    return "\n".join(lines)


def cmdline(plan: Plan) -> str:
    """The kernel arguments, and on kernels < 5.16 with different page counts per node the unit that sets them."""
    args = " ".join(plan.kernel_args)
    lines = [f"# append to the kernel command line, then reboot: grubby --update-kernel=ALL --args=\"{args}\"", args]
    if plan.hugepages_sysfs:
        lines += _wrap(f"and, since hugepages= cannot name nodes before Linux 5.16 (this host: "
                       f"{plan.kernel_release or 'unknown'}), this unit sets each node's 1 GB pages at boot:",
                       110, "# ")
        lines += hugepages_unit(plan)
    return "\n".join(lines)


def tuned(plan: Plan) -> str:
    return "\n".join(["# /etc/tuned/cpu-partitioning-variables.conf, then: tuned-adm profile cpu-partitioning",
                      f"isolated_cores={format_list(plan.isolated)}",
                      f"no_balance_cores={format_list(plan.pmd_cpus)}"])


def tripleo(plan: Plan, role: str = "ComputeOvsDpdk") -> str:
    """A heat environment file with TripleO's OVS-DPDK role parameters (values quoted as TripleO expects), and
    NumDpdkInterfaceRxQueues among the global ones: tripleo-heat-templates overcloud.j2.yaml declares it a
    top-level parameter (it is read by the network config templates, not a role's service), so it goes directly
    under parameter_defaults, not under {role}Parameters."""
    reserved = [f"node:{n},size:1GB,count:{plan.socket_mem[n] // 1024}" for n in plan.nodes]
    params = [
        ("KernelArgs", json.dumps(" ".join(plan.kernel_args)), "kernel_args"),
        ("TunedProfileName", '"cpu-partitioning"', None),
        ("IsolCpusList", json.dumps(format_list(plan.isolated)), "isolated"),
        ("OvsDpdkCoreList", json.dumps(format_list(plan.housekeeping)), "housekeeping"),
        ("OvsPmdCoreList", json.dumps(format_list(plan.pmd_cpus)), "pmd"),
        ("NovaComputeCpuDedicatedSet", json.dumps(format_list(plan.vm_cpus)), "vm_cpus"),
        ("NovaComputeCpuSharedSet", json.dumps(format_list(plan.housekeeping)), None),
        ("OvsDpdkSocketMemory", json.dumps(plan.socket_mem_list()), "socket_mem"),
        ("OvsDpdkMemoryChannels", json.dumps(str(plan.memory_channels)), "memory_channels"),
        ("NovaReservedHugePages", json.dumps(reserved), None),
        ("NovaReservedHostMemory", str(plan.intent.host_reserve_gb * 1024), None),
        ("NovaLibvirtRxQueueSize", str(plan.vhost_ring), "vhost_ring"),
        ("NovaLibvirtTxQueueSize", str(plan.vhost_ring), None),
        ("OvsPmdAutoLb", "true" if plan.pmd_auto_lb else "false", "pmd_auto_lb"),
    ]
    if plan.pmd_auto_lb:
        alb = plan.auto_lb
        params += [("OvsPmdLoadThreshold", json.dumps(alb.load_threshold), "pmd_auto_lb_load"),
                   ("OvsPmdImprovementThreshold", json.dumps(alb.improvement_threshold), "pmd_auto_lb_improvement"),
                   ("OvsPmdRebalInterval", json.dumps(alb.rebal_interval), "pmd_auto_lb_interval")]
    lines = ["# TripleO heat environment written by `zeroloss host plan`", "parameter_defaults:"]
    lines += _wrap("a global parameter (tripleo-heat-templates overcloud.j2.yaml), not a role one: "
                   + plan.reasons["rxq"], 110, "  # ")
    lines += [f"  NumDpdkInterfaceRxQueues: {plan.rxq}", f"  {role}Parameters:"]
    for name, value, key in params:
        if key:
            lines += _wrap(plan.reasons[key], 110, "    # ")
        lines.append(f"    {name}: {value}")
    if plan.intent.per_port_memory:
        lines += _wrap("per-port-memory: tripleo-heat-templates has no parameter for OVS other_config:per-port-memory "
                       "(deployment/openvswitch/openvswitch-dpdk-baremetal-ansible.yaml): on these nodes, before OVS "
                       "initialises DPDK, run ovs-vsctl set Open_vSwitch . other_config:per-port-memory=true (e.g. in "
                       "a pre-network ExtraConfig script); OvsDpdkSocketMemory above is sized for it", 110, "# ")
    if plan.hugepages_sysfs:
        lines += _wrap(f"TripleO has no parameter for per-node pages on a kernel < 5.16: install {UNIT_NAME} (see "
                       "--format cmdline) on these nodes, e.g. with a first-boot script", 110, "# ")
    return "\n".join(lines)


def flavor(plan: Plan, name: str = "<flavor>") -> str:
    props = ["hw:cpu_policy=dedicated", "hw:mem_page_size=1GB",
             f"hw:emulator_threads_policy={plan.emulator_policy}", "hw:vif_multiqueue_enabled=true",
             "hw:numa_nodes=1"]
    return "\n".join([f"# guests: pinned vCPUs on 1 GB pages, emulator threads apart, virtio multiqueue "
                      f"({plan.rxq} queues), one NUMA node",
                      f"openstack flavor set {name} " + " ".join(f"--property {p}" for p in props)])


def k8s(plan: Plan) -> str:
    """The CNF's Kubernetes manifests (render_k8s.py; not in 'all': it loads the kubernetes models to check them)."""
    from .render_k8s import render_k8s

    return render_k8s(plan)


RENDERERS = {"summary": summary, "ovs-vsctl": ovs_vsctl, "cmdline": cmdline, "tuned": tuned, "tripleo": tripleo,
             "edpm": edpm, "performance-profile": performance_profile, "flavor": flavor, "k8s": k8s}


def render(plan: Plan, fmt: str) -> str:
    if fmt == "all":
        return "\n\n".join(f"== {f} ==\n{RENDERERS[f](plan)}" for f in FORMATS)
    return RENDERERS[fmt](plan)
