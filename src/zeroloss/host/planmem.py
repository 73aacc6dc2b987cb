"""The plan's 1 GB pages: how many each node gets (OVS socket memory + guests) and how the kernel command line
asks for them (one total, per node, or a boot unit's per-node counts on kernels older than 5.16). Pure, as plan.py."""

from __future__ import annotations

from zeroloss.core.cpuset import format_list
from zeroloss.core.errors import ZeroLossError

from .hostfacts import kernel_version
from .inventory import Inventory

HUGEPAGE_1G_KB = 1048576
NODE_HUGEPAGES_SYNTAX = (5, 16)  # hugepages=N:C,... per node (commit b5389086, Linux 5.16)
BOOT_HEADROOM_GB = 2  # memory a node keeps while the boot allocation holds the largest node's count


def node_hugepages(inv: Inventory, socket_mem: dict[int, int], host_reserve_gb: int, vm_memory_gb: int | None,
                   warnings: list[str]) -> tuple[dict[int, int], dict[int, int], dict[str, str]]:
    """Guest memory and 1 GB pages per node (OVS socket memory + guests), and the reasons for both; refuses more
    pages than a node holds."""
    vm_mem: dict[int, int] = {}
    hugepages: dict[int, int] = {}
    for node in inv.nodes:
        if node.mem_total_kb <= 0:
            raise ZeroLossError(f"node {node.id}: its memory is unknown (no MemTotal in its meminfo): 1 GB pages "
                                "cannot be planned", "read the host itself, or recapture its sys/ and proc/")
        ovs_gb = socket_mem[node.id] // 1024
        total_gb = node.mem_total_kb // (1024 * 1024)
        left = max(0, total_gb - host_reserve_gb - ovs_gb)
        vm_mem[node.id] = left if vm_memory_gb is None else vm_memory_gb
        hugepages[node.id] = ovs_gb + vm_mem[node.id]
        if node.mem_total_kb and hugepages[node.id] > total_gb:
            raise ZeroLossError(f"node {node.id}: {hugepages[node.id]} 1 GB pages planned ({ovs_gb} GB OVS socket "
                                f"memory + {vm_mem[node.id]} GB guests), but the node has {total_gb} GB "
                                f"(MemTotal {node.mem_total_kb} kB): the kernel cannot allocate them",
                                f"lower --vm-memory-gb to at most {max(0, total_gb - host_reserve_gb - ovs_gb)}"
                                f" (node memory - {host_reserve_gb} GB host reserve - {ovs_gb} GB OVS)")
        if hugepages[node.id] + host_reserve_gb > total_gb:
            warnings.append(f"node {node.id}: {hugepages[node.id]} GB of hugepages + {host_reserve_gb} GB for "
                            f"the host exceed its {total_gb} GB")
    reasons = {"vm_memory": ("as given" if vm_memory_gb is not None else
                             f"node memory - {host_reserve_gb} GB for the host - OVS socket memory"),
               "hugepages": ("1 GB pages per node = OVS socket memory + guest memory (whitepaper: 1 GiB pages back "
                             "OVS and the guests; NovaReservedHugePages keeps OVS's share from nova)")}
    if "pdpe1gb" not in inv.cpu_flags and inv.cpu_flags:
        warnings.append("the CPU lacks the pdpe1gb flag: 1 GB hugepages are not available; use 2 MB pages")
    return vm_mem, hugepages, reasons


def hugepages_arg(hugepages: dict[int, int], totals_gb: dict[int, int], release: str, warnings: list[str]
                  ) -> tuple[str, dict[int, int], str]:
    """The hugepages= value, the per-node counts a boot unit must write (none when the kernel line does it all), and
    how: one total when every node gets the same count; per node (N:C) on Linux >= 5.16; on older kernels the
    largest count on every node (the kernel splits a total evenly) lowered per node at boot, since freeing pages
    cannot fail while raising a node's 1 GB pages after boot needs 1 GB of contiguous free memory."""
    counts = [hugepages[n] for n in sorted(hugepages)]
    if len(set(counts)) <= 1:
        return str(sum(counts)), {}, "one total: the kernel splits boot-time pages evenly over the nodes"
    version = kernel_version(release)
    if version and version >= NODE_HUGEPAGES_SYNTAX:
        return (",".join(f"{n}:{hugepages[n]}" for n in sorted(hugepages)), {},
                f"per node (node:count), which Linux {release} reads (>= 5.16, commit b5389086)")
    kernel = (f"Linux {release}, older than 5.16," if version else
              "the kernel (version unknown: no proc/sys/kernel/osrelease; assumed older than 5.16)")
    top = max(counts)
    tight = [n for n in sorted(hugepages) if totals_gb.get(n, 0) and top + BOOT_HEADROOM_GB > totals_gb[n]]
    if not tight:
        return (str(top * len(counts)), dict(hugepages),
                f"{kernel} reads no per-node hugepages=N:C, so boot with {top} pages on every node ({top} x "
                f"{len(counts)}, split evenly) and let a boot unit lower each node to its count through "
                "/sys/devices/system/node/nodeN/hugepages/hugepages-1048576kB/nr_hugepages (freeing cannot fail)")
    warnings.append(f"{kernel} reads no per-node hugepages=N:C and node(s) {format_list(tight)} cannot hold {top} "
                    "pages at boot: the boot unit must raise some nodes after boot, which needs 1 GB of contiguous "
                    "free memory per page and may fall short; check nr_hugepages per node after boot (or boot a "
                    "kernel >= 5.16)")
    return (str(sum(counts)), dict(hugepages),
            f"{kernel} reads no per-node hugepages=N:C: boot with the total (split evenly) and let a boot unit set "
            "each node's count through /sys/devices/system/node/nodeN/hugepages/hugepages-1048576kB/nr_hugepages")
