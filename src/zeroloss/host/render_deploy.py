"""A Plan rendered for today's deployers: an OpenShift PerformanceProfile, RHOSO 18 EDPM (edpm-ansible) variables,
and the boot unit that sets 1 GB pages per NUMA node on kernels older than 5.16.

Field and variable names were checked against their sources (named in each output's header comment):
- PerformanceProfile: openshift/cluster-node-tuning-operator pkg/apis/performanceprofile/v2/performanceprofile_types.go
  (cpu.reserved/isolated, hugepages.defaultHugepagesSize/pages[].size/count/node, numa.topologyPolicy,
  realTimeKernel.enabled, workloadHints.realTime/highPowerConsumption/perPodPowerManagement,
  globallyDisableIrqLoadBalancing, nodeSelector, machineConfigPoolSelector, additionalKernelArgs) and the OpenShift
  docs "PerformanceProfile [performance.openshift.io/v2]"; PPC output sorts keys, as here. cpu.ovsDpdk (CPUs for
  OVS-DPDK PMD threads, none shared with reserved, isolated, shared or offlined; WorkloadPartitioning or kubelet's
  strict-cpu-reservation first) came with commit 3cc5d864 "api: add spec.cpu.ovsDpdk" (2026-07), in release-4.23
  and not in release-4.22: written only for --ocp-version 4.23 or later.
- EDPM: openstack-k8s-operators/edpm-ansible roles/edpm_ovs_dpdk/defaults/main.yml (edpm_ovs_dpdk_pmd_core_list,
  _socket_memory, _memory_channels, _pmd_auto_lb, _pmd_load_threshold, _pmd_improvement_threshold,
  _pmd_rebal_interval, _vhost_postcopy_support, _enable_tso), roles/edpm_kernel (edpm_kernel_args), roles/edpm_tuned
  (edpm_tuned_profile, edpm_tuned_isolated_cores), docs "NFV OVS DPDK" (edpm_nova_libvirt_qemu_group: hugetlbfs).
  edpm_ovs_dpdk_lcore_list was removed (edpm-ansible PR #876, commit b13d5b00, 2025-02-07: "strongly discouraged"),
  so OVS's non-PMD threads are not pinned. The role has no variable for other_config:per-port-memory
  (tasks/configure.yml builds other_config from its own variables only).
"""

from __future__ import annotations

import json
import textwrap

import yaml

from zeroloss.core.cpuset import format_list

from .plan import Plan

HUGEPAGE_DIR = "/sys/devices/system/node/node{node}/hugepages/hugepages-1048576kB/nr_hugepages"
UNIT_NAME = "zeroloss-hugepages.service"
PP_ROLE = "worker-cnf"
OVS_DPDK_OCP = (4, 23)  # the first OpenShift whose PerformanceProfile has spec.cpu.ovsDpdk
# kernel arguments the PerformanceProfile derives itself (cpu, hugepages, workload hints); the rest go to
# additionalKernelArgs
PP_DERIVED = ("default_hugepagesz", "hugepagesz", "hugepages", "isolcpus", "nohz", "nohz_full", "rcu_nocbs",
              "skew_tick", "processor.max_cstate", "intel_idle.max_cstate")


def comment(text: str, width: int = 110, indent: str = "") -> list[str]:
    """text as '# ' comment lines of at most width characters."""
    return textwrap.wrap(text, width, initial_indent=indent + "# ", subsequent_indent=indent + "# ",
                         break_long_words=False, break_on_hyphens=False)


def scalar(value: str) -> str:
    """A YAML scalar as Go's yaml (PPC) writes it: plain unless it would read back as something else."""
    return value if value and yaml.safe_load(value) == value else json.dumps(value)


def hugepages_unit(plan: Plan) -> list[str]:
    """A systemd unit setting each node's 1 GB pages at boot, before OVS and libvirt ([] when not needed)."""
    if not plan.hugepages_sysfs:
        return []
    lines = [f"# /etc/systemd/system/{UNIT_NAME}, then: systemctl daemon-reload && systemctl enable {UNIT_NAME}",
             "[Unit]", "Description=1 GB hugepages per NUMA node (zeroloss host plan)", "DefaultDependencies=no",
             "After=sysinit.target dev-hugepages.mount",
             "Before=openvswitch.service ovs-vswitchd.service libvirtd.service virtqemud.service",
             "", "[Service]", "Type=oneshot", "RemainAfterExit=yes"]
    lines += [f"ExecStart=/bin/sh -c 'echo {count} > {HUGEPAGE_DIR.format(node=node)}'"
              for node, count in sorted(plan.hugepages_sysfs.items())]
    return lines + ["", "[Install]", "WantedBy=multi-user.target"]


def ocp_version(text: str) -> tuple[int, int] | None:
    """'4.23' (or '4.23.1') -> (4, 23); '' -> None (not given); ValueError for anything else."""
    if not text:
        return None
    parts = text.split(".")
    if not (2 <= len(parts) <= 3 and all(p.isdigit() and len(p) <= 4 for p in parts)):
        raise ValueError(f"'{text[:40]}' is not an OpenShift version X.Y (e.g. 4.23)")
    return int(parts[0]), int(parts[1])


def _pp_cpus(plan: Plan) -> tuple[list[str], list[tuple[str, str]]]:
    """(the comment on the cpu sets, the cpu keys and values): spec.cpu.ovsDpdk for the PMD CPUs on OpenShift
    >= 4.23 (with VM CPUs left for isolated, which may not be empty), else PMD and VM CPUs in isolated."""
    version = ocp_version(plan.intent.ocp_version)
    with_ovs = version is not None and version >= OVS_DPDK_OCP and bool(plan.vm_cpus)
    target = f"OpenShift {plan.intent.ocp_version}" if version else "an OpenShift version not given (--ocp-version)"
    if with_ovs:
        keys = [("isolated", format_list(plan.vm_cpus)), ("ovsDpdk", format_list(plan.pmd_cpus))]
        why = (f"For {target}: cpu.ovsDpdk = the PMD CPUs (OVS-DPDK's PMD threads, apart from the OS and Kubernetes; "
               "set pmd-cpu-mask to them, see --format ovs-vsctl; the operator needs WorkloadPartitioning or "
               "kubelet's strict-cpu-reservation for it); cpu.isolated = the VM CPUs; every online CPU in one set.")
    else:
        keys = [("isolated", format_list(plan.isolated))]
        why = (f"For {target}: no cpu.ovsDpdk, so the PMD CPUs are in cpu.isolated with the VM CPUs "
               + ("(OpenShift 4.23 and later have spec.cpu.ovsDpdk: give --ocp-version 4.23 for it)."
                  if not version or version < OVS_DPDK_OCP else
                  "(cpu.ovsDpdk needs a non-empty isolated set, and no CPU is left for VMs)."))
    return [why], keys + [("reserved", format_list(plan.housekeeping))]


def performance_profile(plan: Plan, name: str = "zeroloss-ovs-dpdk") -> str:
    """The plan as an OpenShift PerformanceProfile (performance.openshift.io/v2), laid out as PPC writes it."""
    extra = [a for a in plan.kernel_args if a.partition("=")[0] not in PP_DERIVED]
    low = plan.intent.low_latency
    cpu_why, cpu_keys = _pp_cpus(plan)
    why = [
        "OpenShift PerformanceProfile written by `zeroloss host plan`, in the layout of the Performance Profile "
        "Creator (keys sorted). Fields: performance.openshift.io/v2 PerformanceProfileSpec (cluster-node-tuning-"
        "operator pkg/apis/performanceprofile/v2/performanceprofile_types.go; OpenShift docs 'PerformanceProfile "
        f"[performance.openshift.io/v2]'). Label the nodes node-role.kubernetes.io/{PP_ROLE}=\"\" and give them a "
        f"MachineConfigPool labelled machineconfiguration.openshift.io/role: {PP_ROLE} first.",
        "cpu.reserved = the housekeeping CPUs (the first physical core of each node with its sibling threads); the "
        "other sets hold the rest, so every online CPU is in one set (the operator's rule); DPDK pods or VMs get "
        "theirs from isolated.",
        *cpu_why,
        "hugepages: the plan's 1 GB pages per node (OVS socket memory + guests); the operator allocates per-node "
        "pages at boot itself, on any kernel.",
        "numa.topologyPolicy single-numa-node, not PPC's default restricted: restricted admits a pod whose CPUs, "
        "pages and NIC span NUMA nodes when they do not fit on one, single-numa-node rejects it; a rejected pod is "
        "a visible error, a spread one forwards about 50 % slower and loses packets.",
        "realTimeKernel.enabled false: DPDK polls on isolated tickless CPUs and needs no PREEMPT_RT for zero-loss "
        "throughput (TripleO and EDPM OVS-DPDK computes run the standard kernel with cpu-partitioning).",
        f"workloadHints: realTime true (tickless isolated CPUs, the low-latency tuning); highPowerConsumption "
        f"{'true: C-states held at C1 as the plan says' if low else 'false (--keep-cstates)'}; "
        "perPodPowerManagement false (it cannot be combined with highPowerConsumption).",
        "globallyDisableIrqLoadBalancing true: no device IRQ is balanced onto the isolated CPUs (the audit's "
        "irq-on-isolated and irq-count-isolated rules), without per-pod annotations.",
        f"additionalKernelArgs: {' '.join(extra) or 'none'} (vfio-pci needs the IOMMU; the rest of the plan's "
        "kernel arguments the profile derives itself).",
        "OVS's own settings (dpdk-socket-mem, pmd-cpu-mask, pmd-auto-lb, per-port-memory) have no PerformanceProfile "
        "field (spec.cpu.ovsDpdk only sets the CPUs apart); use --format ovs-vsctl where OVS-DPDK runs.",
    ]
    lines = [line for text in why for line in comment(text)]
    lines += ["apiVersion: performance.openshift.io/v2", "kind: PerformanceProfile", "metadata:", f"  name: {name}",
              "spec:"]
    if extra:
        lines += ["  additionalKernelArgs:"] + [f"  - {scalar(a)}" for a in extra]
    lines += ["  cpu:"] + [f"    {key}: {scalar(value)}" for key, value in cpu_keys]
    lines += ["  globallyDisableIrqLoadBalancing: true",
              "  hugepages:", "    defaultHugepagesSize: 1G", "    pages:"]
    for node in plan.nodes:
        lines += [f"    - count: {plan.hugepages_1g[node]}", f"      node: {node}", "      size: 1G"]
    lines += ["  machineConfigPoolSelector:", f"    machineconfiguration.openshift.io/role: {PP_ROLE}",
              "  nodeSelector:", f'    node-role.kubernetes.io/{PP_ROLE}: ""',
              "  numa:", "    topologyPolicy: single-numa-node",
              "  realTimeKernel:", "    enabled: false",
              "  workloadHints:", f"    highPowerConsumption: {'true' if low else 'false'}",
              "    perPodPowerManagement: false", "    realTime: true"]
    return "\n".join(lines)


def edpm(plan: Plan) -> str:
    """RHOSO 18 data plane variables for edpm-ansible, as an OpenStackDataPlaneNodeSet merge patch."""
    ind = "        "
    lines = comment("RHOSO 18 data plane variables written by `zeroloss host plan`: merge into the "
                    "OpenStackDataPlaneNodeSet (oc patch openstackdataplanenodeset/<name> --type merge --patch-file "
                    "FILE). Names: openstack-k8s-operators/edpm-ansible roles/edpm_ovs_dpdk, edpm_kernel and "
                    "edpm_tuned defaults/main.yml and the EDPM 'NFV OVS DPDK' docs.")
    lines += ["spec:", "  nodeTemplate:", "    ansible:", "      ansibleVars:"]
    for name, value, key in _edpm_params(plan):
        text = plan.reasons[key] if key else _EDPM_NOTES.get(name)
        if text:
            lines += comment(text, 110, ind)
        lines.append(f"{ind}{name}: {value}")
    return "\n".join(lines + [line for text in _edpm_tail(plan) for line in comment(text)])


# why each variable has its value, where the plan gives no reason of its own
_EDPM_NOTES = {
    "edpm_tuned_profile": "tuned cpu-partitioning isolates edpm_tuned_isolated_cores (the TripleO setting)",
    "edpm_nova_libvirt_qemu_group": "QEMU runs in group hugetlbfs so it can map the 1 GB pages and the "
                                    "vhost-user sockets (EDPM NFV OVS DPDK docs)",
    "edpm_ovs_dpdk_socket_memory": "edpm_ovs_dpdk sets dpdk-socket-mem and dpdk-socket-limit to it",
    "edpm_ovs_dpdk_vhost_postcopy_support": "postcopy live migration needs OVS without mlockall (its memory "
                                            "may then be paged out: a stall on the data path); keep it off",
    "edpm_ovs_dpdk_enable_tso": "userspace TSO changes OVS's mbuf handling and is not needed to forward "
                                "frames at zero loss; keep OVS's default",
}


def _edpm_params(plan: Plan) -> list[tuple[str, str, str | None]]:
    """The edpm-ansible variables in the order written: (name, value, the plan's reason key or None)."""
    alb = plan.pmd_auto_lb
    params = [
        ("edpm_kernel_args", json.dumps(" ".join(plan.kernel_args)), "kernel_args"),
        ("edpm_tuned_profile", "cpu-partitioning", None),
        ("edpm_tuned_isolated_cores", json.dumps(format_list(plan.isolated)), "isolated"),
        ("edpm_nova_libvirt_qemu_group", "hugetlbfs", None),
        ("edpm_ovs_dpdk_pmd_core_list", json.dumps(format_list(plan.pmd_cpus)), "pmd"),
        ("edpm_ovs_dpdk_socket_memory", json.dumps(plan.socket_mem_list()), "socket_mem"),
        ("edpm_ovs_dpdk_memory_channels", str(plan.memory_channels), "memory_channels"),
        ("edpm_ovs_dpdk_pmd_auto_lb", "true" if alb else "false", "pmd_auto_lb"),
    ]
    if alb:
        settings = plan.auto_lb
        params += [("edpm_ovs_dpdk_pmd_load_threshold", json.dumps(settings.load_threshold), "pmd_auto_lb_load"),
                   ("edpm_ovs_dpdk_pmd_improvement_threshold", json.dumps(settings.improvement_threshold),
                    "pmd_auto_lb_improvement"),
                   ("edpm_ovs_dpdk_pmd_rebal_interval", json.dumps(settings.rebal_interval), "pmd_auto_lb_interval")]
    params += [("edpm_ovs_dpdk_vhost_postcopy_support", "false", None), ("edpm_ovs_dpdk_enable_tso", "false", None)]
    return params


def _edpm_tail(plan: Plan) -> list[str]:
    """What RHOSO 18 sets outside the EDPM variables (nova, the DPDK ports, per-port-memory, old kernels)."""
    reserved = ", ".join(f"node:{n},size:1GB,count:{plan.socket_mem[n] // 1024}" for n in plan.nodes)
    tail = [
        "Not EDPM variables, set elsewhere in RHOSO 18:",
        f"nova (a ConfigMap in the nova data plane service's dataSources): [compute] cpu_shared_set = "
        f"{format_list(plan.housekeeping)}, cpu_dedicated_set = {format_list(plan.vm_cpus)}; [DEFAULT] "
        f"reserved_huge_pages = {reserved} (one line each), reserved_host_memory_mb = "
        f"{plan.intent.host_reserve_gb * 1024}; [libvirt] rx_queue_size = tx_queue_size = {plan.vhost_ring}.",
        f"DPDK ports (edpm_network_config_template, ovs_user_bridge members): type ovs_dpdk_port, rx_queue: "
        f"{plan.rxq}, mtu: {plan.ports[0].mtu if plan.ports else 1500}; descriptors n_rxq_desc/n_txq_desc "
        f"{plan.descriptors} have no EDPM variable: ovs-vsctl set Interface (see --format ovs-vsctl).",
    ]
    if plan.intent.per_port_memory:
        tail.append("per-port-memory: edpm_ovs_dpdk has no variable for it (its tasks/configure.yml builds "
                    "other_config from its own variables only): on each node, before OVS initialises DPDK, run "
                    "ovs-vsctl set Open_vSwitch . other_config:per-port-memory=true (e.g. from an "
                    "OpenStackDataPlaneService playbook); dpdk-socket-memory above is sized for it.")
    if plan.hugepages_sysfs:
        tail.append(f"per-node hugepages: the kernel is older than 5.16, so also install {UNIT_NAME} (see --format "
                    "cmdline), e.g. with an OpenStackDataPlaneService running a playbook")
    return tail
