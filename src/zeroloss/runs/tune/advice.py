"""zeroloss tune: what the findings call for that the bench cannot try. Pure.

Kernel isolation, C-states, 1 GB pages, a NIC's descriptors, an MTU mismatch, the generator's own limit, and on a lab
node the VNF's and the controller's settings are not knobs: advice() names each, with the `zeroloss host` command that
plans or audits it.
"""

from __future__ import annotations

from collections.abc import Callable

from zeroloss.core.config import RunConfig
from zeroloss.core.cpuset import format_list, parse_mask
from zeroloss.host.memory import tripleo_socket_mem
from zeroloss.targets.registry import kind_of

from .knobs import ovs_mtu
from .sites import (
    DATAPATH,
    DUT_RX,
    EMC,
    GENERATOR,
    MEMPOOL,
    METER,
    OVS_RX_GEN,
    OVS_RX_VNF,
    OVS_TX_NIC,
    PMD,
    PROC_MBUFS,
    QOS,
    TX_MTU,
    UPCALL,
    VNF_DOWN,
    VNF_RX,
    VNF_TX,
    Finding,
    finding_size,
    site,
)

POLLERS = {OVS_RX_GEN, OVS_RX_VNF, VNF_TX, VNF_RX, DUT_RX, PMD, EMC, UPCALL}  # losses of a poller that fell behind


def _hops(fs: list[Finding]) -> str:
    names = list(dict.fromkeys(f.hop for f in fs))
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _isolation(fs: list[Finding], cfg: RunConfig) -> str:
    ovs = "ovs_pmd_cpu_mask" in kind_of(cfg).knobs  # the bench's OVS: its PMDs poll
    cores = (f"OVS's PMD CPUs {format_list(parse_mask(cfg.ovs_pmd_cpu_mask))} and the VNF's"
             if ovs else f"testpmd's CPUs {cfg.dut_lcores}")
    return (f"isolcpus/nohz_full/rcu_nocbs for the polling cores ({cores}): a poller that loses its core for a few "
            f"ms overflows its ring ({_hops(fs)}); not a bench setting: `zeroloss host plan --format cmdline` writes "
            f"the kernel arguments, `zeroloss host audit` checks them")


def _cstates(fs: list[Finding], cfg: RunConfig) -> str:
    return ("C-states held at C1 (processor.max_cstate=1 intel_idle.max_cstate=0): a core waking from a deep C-state "
            "stalls its poller; `zeroloss host plan` adds them (unless --keep-cstates), `zeroloss host audit` checks "
            "the power states")


def _pages(fs: list[Finding], cfg: RunConfig) -> str:
    return ("1 GB hugepages for OVS and the guests (default_hugepagesz=1G hugepagesz=1G, flavor hw:mem_page_size=1GB): "
            "the bench runs on 2 MB pages; `zeroloss host plan` sizes them per NUMA node, `zeroloss host audit` "
            "checks them")


def _socket(fs: list[Finding], cfg: RunConfig) -> str:
    mtu = ovs_mtu(cfg)
    return (f"dpdk-socket-mem by the TripleO formula: {tripleo_socket_mem([mtu])} MB per NUMA node with DPDK ports for "
            f"MTU {mtu}; where the hugepages cannot hold it here, plan the host with `zeroloss host plan --mtu {mtu}`")


def _descriptors(fs: list[Finding], cfg: RunConfig) -> str | None:
    if not kind_of(cfg).ours:
        return None  # a knob there
    return ("on a physical (type dpdk) port, n_rxq_desc=n_txq_desc=4096 absorb bursts (Dell/Intel whitepaper); the "
            "bench's ports are vhost-user, where OVS ignores both: `zeroloss host plan --descriptors 4096`, "
            "`zeroloss host audit` checks them")


def _mtu(fs: list[Finding], cfg: RunConfig) -> str | None:
    if not kind_of(cfg).ours:
        return None  # a knob there
    need = ovs_mtu(cfg)
    ports = ", ".join(dict.fromkeys(f.where for f in fs))
    return (f"mtu_request mismatch on {ports}: frames above a port's MTU + 18 B are dropped; every port of the path "
            f"and the guest need MTU >= {need} (ovs-vsctl set Interface PORT mtu_request={need}; `zeroloss host plan "
            f"--mtu {need}`)")


def _lab_vnf(fs: list[Finding], cfg: RunConfig) -> str | None:
    if kind_of(cfg).ours:
        return None  # the bench's VNF settings are knobs
    return (f"the VNF's own rings and cores ({_hops(fs)}) are the VM's, which tune does not change on a node: "
            f"virtio ring size in nova.conf [libvirt] rx_queue_size = tx_queue_size = 1024, a flavor with "
            f"hw:cpu_policy=dedicated and hw:emulator_threads_policy=isolate, and multiqueue "
            f"(hw:vif_multiqueue_enabled) for more queue pairs; measure the bench's equivalent with zeroloss tune "
            f"--set topology=pvp")


def _lab_meter(fs: list[Finding], cfg: RunConfig) -> str | None:
    if kind_of(cfg).ours:
        return None  # a knob on the bench
    return (f"an OpenFlow meter polices the path below the target ({_hops(fs)}): the flows are the controller's, "
            f"so tune leaves them; ovs-ofctl -O OpenFlow13 dump-meters BRIDGE shows its rate")


def _generator(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"the generator is the bottleneck ({_hops(fs)}): no DUT setting lifts the NDR there; more zlgen cores "
            f"(--set gen_lcores) or a hardware generator; tune stops when every size below the target is "
            f"generator-bound")


def _vnf_down(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"OVS dropped to a VNF whose virtqueue was not running ({_hops(fs)}): a paused or migrating guest, not a "
            f"setting; check virsh domstate and the guest's testpmd")


def _qos(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"QoS or ingress policing drops frames ({_hops(fs)}): a policy, not a capacity; ovs-vsctl set Interface "
            f"PORT ingress_policing_rate=0, or ovs-vsctl clear Port PORT qos")


def _datapath(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"OVS's datapath dropped frames ({_hops(fs)}): a rule or port problem, not a tuning setting; trace one "
            f"frame with ovs-appctl ofproto/trace and read ovs-ofctl dump-flows (`zeroloss explain` shows the counter)")


def _mbufs(fs: list[Finding], cfg: RunConfig) -> str:
    return (f"testpmd ran out of mbufs ({_hops(fs)}): its mempool (--total-num-mbufs) is not a bench setting; give "
            f"the VNF more mbufs and hugepage memory")


# (the sites that call for it, its line): one line each, in the order of the largest finding calling for it
ADVICE: list[tuple[set[str], Callable[[list[Finding], RunConfig], str | None]]] = [
    (POLLERS, _isolation),
    (POLLERS, _cstates),
    ({MEMPOOL, VNF_TX, VNF_RX}, _pages),
    ({MEMPOOL}, _socket),
    ({OVS_RX_GEN, OVS_TX_NIC}, _descriptors),
    ({TX_MTU}, _mtu),
    ({VNF_TX, VNF_RX, OVS_RX_VNF}, _lab_vnf),
    ({METER}, _lab_meter),
    ({GENERATOR}, _generator),
    ({VNF_DOWN}, _vnf_down),
    ({QOS}, _qos),
    ({DATAPATH}, _datapath),
    ({PROC_MBUFS}, _mbufs),
]


def advice(findings: list[Finding], cfg: RunConfig, vnf_ports: set[str] | None = None) -> list[str]:
    """One line per thing the findings call for that tune cannot try (on the bench, or on a lab node whose VNF
    ports are vnf_ports), naming the `zeroloss host` command that plans or audits it; in the order of the findings
    (largest first)."""
    by_site: dict[str, list[Finding]] = {}
    for f in sorted(findings, key=finding_size):
        by_site.setdefault(site(f, vnf_ports), []).append(f)
    order = list(by_site)
    out: list[tuple[int, str]] = []
    for sites, fn in ADVICE:
        hit = [s for s in order if s in sites]
        if not hit:
            continue
        line = fn([f for s in hit for f in by_site[s]], cfg)
        if line:
            out.append((order.index(hit[0]), line))
    return [line for _, line in sorted(out, key=lambda x: x[0])]
