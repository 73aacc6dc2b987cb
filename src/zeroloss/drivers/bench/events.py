"""Changes made to a running DUT during a fixed-rate trial (`zeroloss events`, runs/events.py): the one interface of
an event, and the bench's events over OvsBench. Like testpmd's table of forwarding engines, the engine holds an
Event and never asks which it is: prepare (before traffic), apply (at t_event), undo (at t_undo, when it has one),
restore (after the trial, whatever happened).

The bench's events:
- bond-down / bond-up: bond-b's active member's link taken down (ovs-appctl netdev-dpdk/set-admin-state MEMBER
  down, as a failed port; OVS fails over to the other member) and up again; bond-up starts with it down.
- rxq-rebalance: dpif-netdev/pmd-rxq-rebalance (no undo).
- pmd-mask: pmd-cpu-mask with one more core (the lowest the mask lacks), then back: PMD threads added and removed,
  every RX queue reassigned twice.
- ovs-restart: ovs-vswitchd restarted (OvsBench.restart_switch: the vhost-user ports reconnect; no undo).
- vnf-restart: VNF 1 stopped and started again (a process, a container or a VM; no undo).
- flows-10k: 10 000 OpenFlow rules the traffic does not match added to the VNFs' bridge, then deleted by cookie.
- mtu: mtu_request of VNF 1's first port (ovs-p2p: zlgen's side B port) raised by 100 bytes, then back.
"""

from __future__ import annotations

import os
import re
import time
from abc import ABC, abstractmethod

from zeroloss.core.errors import ZeroLossError

from .ovsbench import BONDS, OvsBench, bond_members

FLOWS = 10_000
FLOW_COOKIE = "0x7a1e7000"  # the rules flows-10k adds, deleted by this cookie
MTU_STEP = 100
SETTLE_S = 10.0  # how long a change may take to show (a PMD reloaded, a port reconfigured, a bond failed over)


def flow_lines(n: int = FLOWS, cookie: str = FLOW_COOKIE) -> str:
    """n OpenFlow rules no trial frame matches (UDP to 10.0.0.0/8, port 9; the traffic is 198.18.0.0/15), above the
    topology's rules: OVS's classifier gains a subtable and every datapath flow is revalidated."""
    return "".join(f"cookie={cookie},priority=40000,udp,nw_dst=10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255},"
                   f"tp_dst=9,actions=drop\n" for i in range(n))


def wider_mask(mask: str, ncpu: int) -> str:
    """The PMD mask with the lowest core it lacks added (a PMD thread more); a mask of every core loses its
    highest instead."""
    m = int(mask, 16)
    free = [c for c in range(ncpu) if not m >> c & 1]
    if free:
        return hex(m | 1 << free[0])
    if m & (m - 1) == 0:
        raise ZeroLossError(f"event pmd-mask: pmd-cpu-mask {mask} has one core and the host no other")
    return hex(m & ~(1 << (m.bit_length() - 1)))


def active_member(text: str) -> str | None:
    """The member `ovs-appctl bond/show BOND` marks "active member" (the one carrying traffic). Its line "active
    member mac: ...(gN)" names the member whose MAC the bond took, which need not be the active one (seen on OVS
    3.1: mac (g3) while g1 was active): used only when no member is marked."""
    m = re.search(r"^member (\S+): \w+\n\s+active member", text, re.M)
    if m:
        return m.group(1)
    m = re.search(r"^active member mac: \S+\((\S+)\)", text, re.M)
    return m.group(1) if m and m.group(1) != "none" else None


class Event(ABC):
    """One change to the DUT during a trial."""

    name: str = ""
    has_undo = True
    # the counter readings' parts that start from zero when the event is applied (a restarted process): the
    # engine reads them just before the event and adds what they counted until then
    resets: tuple[tuple[str, ...], ...] = ()
    # the counter readings' parts an action (apply, undo) may set back to zero, not all of them and not always (an
    # OVS port's counters, OVS 3.1's lib/netdev-dpdk.c): the engine reads them just before and after each action and
    # adds what a counter that went down had counted (outagerun.restarted); none of them among resets
    watch: tuple[tuple[str, ...], ...] = ()
    # the zlgen port cabled to the DUT port whose link the event takes down (a bond member), known after prepare:
    # what zlgen offers into it while the link is down is not the DUT's loss (results.events.EventDirection). The
    # link is down from the apply to the end of the undo; with starts_down, from before the trial to the apply's end
    link_down_port: int | None = None
    starts_down = False

    def prepare(self) -> list[str]:
        """Before the trial's traffic: the state the event changes from; what was done."""
        return []

    @abstractmethod
    def apply(self) -> str:
        """The change, returned once it has taken effect; what was done."""

    def undo(self) -> str:
        """The change undone; what was done."""
        raise NotImplementedError

    def restore(self) -> None:
        """After the trial, however it ended: the DUT as it was before prepare (idempotent)."""
        return None


class BenchEvent(Event):
    def __init__(self, bench: OvsBench):
        self.bench = bench
        assert bench.ovs is not None
        self.ovs = bench.ovs
        self.spec = bench.spec


class BondMember(BenchEvent):
    """bond-b's active member disabled, then enabled (bond-down); or disabled before the trial and enabled
    (bond-up). Setting a vhost member up zeroes its tx_dropped (OVS 3.1 netdev_dpdk_update_flags__)."""

    bond = BONDS[1]
    watch = (("ovs", "ports"),)

    def __init__(self, bench: OvsBench, name: str):
        super().__init__(bench)
        self.name = name
        self.has_undo = name == "bond-down"
        self.starts_down = name == "bond-up"
        self.member = ""

    def _pick(self) -> str:
        text = self.ovs.appctl("bond/show", self.bond)
        return active_member(text) or self.spec.side(1)[0]

    def _set(self, member: str, enable: bool) -> str:
        """The member's link down or up (netdev-dpdk/set-admin-state), as a failed NIC port or cable: the bond
        fails over. bond/disable-member does not hold on OVS 3.1: bond_run enables a member whose link is up again
        at once (updelay 0)."""
        state = "up" if enable else "down"
        self.ovs.appctl("netdev-dpdk/set-admin-state", member, state)
        want = "enabled" if enable else "disabled"
        deadline = time.monotonic() + SETTLE_S
        while bond_members(self.ovs.appctl("bond/show", self.bond)).get(member) != want:
            if time.monotonic() > deadline:
                raise ZeroLossError(f"event {self.name}: bond member {member} not {want} after {SETTLE_S:.0f} s")
            time.sleep(0.01)
        return f"ovs-appctl netdev-dpdk/set-admin-state {member} {state}"

    def prepare(self) -> list[str]:
        self.member = self._pick()
        self.link_down_port = self.spec.gen_ports.index(self.member)
        return [self._set(self.member, False)] if self.name == "bond-up" else []

    def apply(self) -> str:
        return self._set(self.member, self.name == "bond-up")

    def undo(self) -> str:
        return self._set(self.member, True)

    def restore(self) -> None:
        for bond in BONDS:
            for member in bond_members(self.ovs.appctl("bond/show", bond)):
                self.ovs.appctl("netdev-dpdk/set-admin-state", member, "up")
        self.bench._bond_ready()


class RxqRebalance(BenchEvent):
    name = "rxq-rebalance"
    has_undo = False

    def apply(self) -> str:
        self.ovs.appctl("dpif-netdev/pmd-rxq-rebalance")
        return "ovs-appctl dpif-netdev/pmd-rxq-rebalance"


def pmd_cores(rxq_show: str) -> set[int]:
    """The cores of the PMD threads `dpif-netdev/pmd-rxq-show` lists."""
    return {int(c) for c in re.findall(r"^pmd thread numa_id \S+ core_id (\d+):", rxq_show, re.M)}


def mask_cores(mask: str) -> set[int]:
    m = int(mask, 16)
    return {c for c in range(m.bit_length()) if m >> c & 1}


class PmdMask(BenchEvent):
    name = "pmd-mask"

    def __init__(self, bench: OvsBench):
        super().__init__(bench)
        self.old = self.spec.pmd_cpu_mask
        self.new = wider_mask(self.old, os.cpu_count() or 1)

    def _set(self, mask: str) -> str:
        self.ovs.vsctl("set", "Open_vSwitch", ".", f"other_config:pmd-cpu-mask={mask}")
        deadline = time.monotonic() + SETTLE_S
        while pmd_cores(self.ovs.appctl("dpif-netdev/pmd-rxq-show")) != mask_cores(mask):
            if time.monotonic() > deadline:
                raise ZeroLossError(f"event pmd-mask: OVS's PMD threads not on pmd-cpu-mask {mask} after "
                                    f"{SETTLE_S:.0f} s")
            time.sleep(0.01)
        return f"ovs-vsctl set Open_vSwitch . other_config:pmd-cpu-mask={mask}"

    def apply(self) -> str:
        return self._set(self.new)

    def undo(self) -> str:
        return self._set(self.old)

    def restore(self) -> None:
        if pmd_cores(self.ovs.appctl("dpif-netdev/pmd-rxq-show")) != mask_cores(self.old):
            self._set(self.old)


class OvsRestart(BenchEvent):
    name = "ovs-restart"
    has_undo = False
    resets = (("ovs",),)

    def apply(self) -> str:
        self.bench.restart_switch()
        return "ovs-vswitchd restarted; every port up again"

    def restore(self) -> None:
        self.bench.warm_up()  # the new process's rings and pages touched once, as at the bench's start


class VnfRestart(BenchEvent):
    name = "vnf-restart"
    has_undo = False
    resets = (("procs", "vnf0"),)
    # the VNF's vhost ports' packet counters are its virtqueues' (OVS 3.1): new with its new connection
    watch = (("ovs", "ports"),)

    def apply(self) -> str:
        vnf = self.bench.vnfs[0]
        kind = vnf.placement().kind
        vnf.stop()
        vnf.start()
        for port in self.spec.vnf_ports[:2]:
            self.ovs.check_port(port, self.spec.port_mtu(port), timeout=SETTLE_S)
        return f"VNF 1 ({kind}) stopped and started; its OVS ports up again"

    def restore(self) -> None:
        self.bench.warm_up()  # the new VNF's rings and pages touched once: its first frames are not the next trial's


class Flows10k(BenchEvent):
    name = "flows-10k"

    def __init__(self, bench: OvsBench):
        super().__init__(bench)
        self.bridge = self.spec.bridge_names[1]
        self.file = bench.ws.root / "flows-10k.txt"

    def apply(self) -> str:
        self.file.write_text(flow_lines())
        self.ovs.ofctl("add-flows", self.bridge, str(self.file), timeout=60)
        return f"ovs-ofctl add-flows {self.bridge} ({FLOWS} rules, cookie {FLOW_COOKIE})"

    def undo(self) -> str:
        self.ovs.ofctl("del-flows", self.bridge, f"cookie={FLOW_COOKIE}/-1", timeout=60)
        return f"ovs-ofctl del-flows {self.bridge} cookie={FLOW_COOKIE}/-1"

    def restore(self) -> None:
        self.ovs.ofctl("del-flows", self.bridge, f"cookie={FLOW_COOKIE}/-1", timeout=60)


class Mtu(BenchEvent):
    name = "mtu"
    # reconfiguring a vhost port zeroes its tx_dropped, rx_dropped and ovs_* counters (OVS 3.1
    # dpdk_vhost_reconfigure_helper); the frames sent to it meanwhile are datapath_drop_invalid_port
    watch = (("ovs", "ports"),)

    def __init__(self, bench: OvsBench):
        super().__init__(bench)
        self.port = (self.spec.vnf_ports or self.spec.side(1))[0]
        self.old = self.spec.port_mtu(self.port)

    def _set(self, mtu: int) -> str:
        self.ovs.vsctl("set", "Interface", self.port, f"mtu_request={mtu}")
        self.ovs.check_port(self.port, mtu, timeout=SETTLE_S)
        return f"ovs-vsctl set Interface {self.port} mtu_request={mtu}"

    def apply(self) -> str:
        return self._set(self.old + MTU_STEP)

    def undo(self) -> str:
        return self._set(self.old)

    def restore(self) -> None:
        self._set(self.old)


def bench_event(bench: OvsBench, name: str) -> Event:
    """The bench's event of that name (the OVS kind's unfit, targets/kinds/ovs, has said it can happen here)."""
    if name.startswith("bond-"):
        return BondMember(bench, name)
    kinds: dict[str, type[BenchEvent]] = {"rxq-rebalance": RxqRebalance, "pmd-mask": PmdMask,
                                          "ovs-restart": OvsRestart, "vnf-restart": VnfRestart,
                                          "flows-10k": Flows10k, "mtu": Mtu}
    return kinds[name](bench)
