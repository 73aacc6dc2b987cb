"""The settings of a lab node a run may read and change (--allow-dut-changes, zeroloss tune), each change
remembered with its undo and restored at the end (a base of drivers.lab.labdut.LabDut)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import ClassVar

from zeroloss.core.codec import Json, Record
from zeroloss.core.cpuset import parse_list
from zeroloss.core.errors import ZeroLossError

from ..dut.ovsports import parse_map
from ..dut.ovsstats import NETDEV_DP, parse_ct_limits
from ..proc import ComponentDied
from .labctl import LabCtl


def _dpctl_set(dp: str, ref: str, value: str) -> list[str]:
    """The ovs-appctl command (after -t CTL) that sets a datapath setting of --dut-set dpctl:DP:REF=VALUE."""
    if ref == "ct-maxconns":
        return ["dpctl/ct-set-maxconns", dp, value]
    return ["dpctl/ct-set-limits", dp, f"default={value}"]


@dataclass(frozen=True, kw_only=True)
class Change(Record):
    """A --dut-set change made on the node: the setting, what it was (None: unset) and what it is now (a run's
    placement keeps them, lab.dut_changes)."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"from_"})

    setting: str
    from_: str | None = field(metadata={"key": "from"})
    to: str


@dataclass(frozen=True, kw_only=True)
class VsctlTable(Record):
    """`ovs-vsctl --format=json list TABLE`: its column names and rows of cells."""

    headings: tuple[str, ...] = ()
    data: tuple[Json, ...] = ()


@dataclass(frozen=True)
class InterfaceRow:
    """A row of OVSDB's Interface table as node_settings asks for it (its columns, in this order)."""

    name: str
    type: str | None
    mtu: int | None
    mtu_request: int | None
    options: dict | None
    ingress_policing_rate: int | None


class LabChanges(LabCtl):
    """OVS's settings on the node: read (what tune starts from), changed, restored newest first."""

    changes: list[tuple[list[str], list[str]]]

    def other_config(self) -> dict[str, str]:
        if not self.ovs:
            return {}
        return {k: str(v) for k, v in parse_map(self.vsctl("get", "Open_vSwitch", ".", "other_config")).items()}

    def node_settings(self) -> dict:
        """What zeroloss tune starts from (tune/labknobs.Node): OVS's other_config and the interfaces at the ends
        of the path (the generator ports' and the VNFs') with their type, MTU, options and ingress policing."""
        self._need_ovs("zeroloss tune changes OVS settings")
        gen = [p.dut_port for p in self.lab.ports]
        vnf = [p for v in self.lab.vnfs for p in v.ports]
        cols = tuple(f.name for f in fields(InterfaceRow))
        text = self.vsctl("--format=json", f"--columns={','.join(cols)}", "list", "Interface", *gen, *vnf)
        ports = {}
        for row in VsctlTable.from_json(json.loads(text)).data:
            d = InterfaceRow(*(_ovsdb_value(x) for x in row))
            ports[d.name] = {"type": d.type or "", "mtu": d.mtu, "mtu_request": d.mtu_request,
                             "options": {str(k): str(v) for k, v in (d.options or {}).items()},
                             "policing_kbps": int(d.ingress_policing_rate or 0)}
        return {"other_config": self.other_config(), "ports": ports, "gen_ports": gen, "vnf_ports": vnf,
                "spare_cpus": parse_list(self.lab.spare_cpus) if self.lab.spare_cpus else [], "ct": self.ct_settings()}

    def ct_settings(self) -> dict[str, str]:
        """Conntrack's maxconns and default zone limit on the node (what OVS answered of them)."""
        try:
            maxconns = self.appctl("dpctl/ct-get-maxconns", NETDEV_DP).strip()
        except ComponentDied:
            raise
        except ZeroLossError:
            return {}
        try:
            limit = str(parse_ct_limits(self.appctl("dpctl/ct-get-limits", NETDEV_DP)).get("default_limit", 0))
        except ComponentDied:
            raise
        except ZeroLossError:
            return {"ct-maxconns": maxconns}
        return {"ct-maxconns": maxconns, "ct-limits:default": limit}

    def change(self, setting: str) -> Change:
        """Applies one TABLE:RECORD:COLUMN[:KEY]=VALUE with ovs-vsctl and remembers how to undo it."""
        spec, sep, value = setting.partition("=")
        parts = spec.split(":")
        if not sep or len(parts) not in (3, 4) or not all(parts):
            raise ZeroLossError(f"--dut-set {setting!r}: not TABLE:RECORD:COLUMN[:KEY]=VALUE",
                                "e.g. Open_vSwitch:.:other_config:pmd-rxq-assign=roundrobin")
        table, record, column = parts[:3]
        key = parts[3] if len(parts) == 4 else None
        ref = f"{column}:{key}" if key else column
        self._need_ovs(f"--dut-set {setting} is an OVS setting")
        if table == "dpctl":
            return self._change_dpctl(record, ref, value, setting)
        before = self.agent().run(self.vsctl_argv("--if-exists", "get", table, record, ref), env=self.env)
        if before.rc:
            raise ZeroLossError(f"--dut-set {setting}: {before.err.strip() or 'ovs-vsctl get failed'}")
        old = before.out.strip()
        if key is not None and old == "":
            undo = self.vsctl_argv("remove", table, record, column, key)
        else:
            undo = self.vsctl_argv("set", table, record, f"{ref}={old}")
        steps = [(undo, [table, record, ref, value])]
        if table == "Interface" and ref == "mtu_request" and old in ("", "[]"):
            # clearing mtu_request leaves the MTU where it is: the port's MTU is put back first, then the request
            # is cleared as found. A port with no peer yet (a vhost-user client whose socket is not served) shows MTU
            # 0 or []: it then gets 1500, the MTU OVS gives every DPDK netdev it creates (RTE_ETHER_MTU).
            mtu = self.vsctl("get", "Interface", record, "mtu").strip()
            mtu = mtu if mtu.isdigit() and int(mtu) > 0 else "1500"
            steps.append((self.vsctl_argv("set", table, record, f"mtu_request={mtu}"), [table, record, ref, mtu]))
        self.vsctl("set", table, record, f"{ref}={value}")
        self.changes += steps
        return Change(setting=f"{table}:{record}:{ref}", from_=old if old != "" else None, to=value)

    def _change_dpctl(self, dp: str, ref: str, value: str, setting: str) -> Change:
        """Conntrack's limits, which live in the datapath (not OVSDB): dpctl:DP:ct-maxconns=N and
        dpctl:DP:ct-limits:default=N, set with ovs-appctl and undone the same way."""
        if ref == "ct-maxconns":
            old = self.appctl("dpctl/ct-get-maxconns", dp).strip()
        elif ref == "ct-limits:default":
            old = str(parse_ct_limits(self.appctl("dpctl/ct-get-limits", dp)).get("default_limit", 0))
        else:
            raise ZeroLossError(f"--dut-set {setting!r}: dpctl settings are ct-maxconns and ct-limits:default",
                                "e.g. dpctl:netdev@ovs-netdev:ct-maxconns=3000000")
        if not value.isdigit():
            raise ZeroLossError(f"--dut-set {setting!r}: {ref} takes a number of connections")
        self.appctl(*_dpctl_set(dp, ref, value))
        self.changes.append((["ovs-appctl", "-t", self.ctl, *_dpctl_set(dp, ref, old)], ["dpctl", dp, ref, value]))
        return Change(setting=f"dpctl:{dp}:{ref}", from_=old, to=value)

    def reapply_datapath(self) -> list[str]:
        """The --dut-set dpctl settings set again (a restarted ovs-vswitchd starts with its datapath's defaults:
        they live in the datapath, not in OVSDB); what was set."""
        done = []
        for _, what in self.changes:
            if what[0] == "dpctl":
                _, dp, ref, value = what
                self.appctl(*_dpctl_set(dp, ref, value))
                done.append(f"dpctl:{dp}:{ref}={value}")
        return done

    def restore(self, note: Callable[[str], None] = lambda _: None) -> list[str]:
        """Undoes every change, newest first, telling note each undo done; the faults, if any (the node then needs
        a hand)."""
        faults = []
        while self.changes:
            undo, what = self.changes.pop()
            try:
                r = self.agent().run(undo, env=self.env)
                if r.rc:
                    faults.append(f"{':'.join(what[:3])}: {r.err.strip()}")
                else:
                    shown = [w for w in undo if not w.startswith(("--db=", "--timeout="))]
                    note(f"restored {':'.join(what[:3])} on {self.lab.dut.target}: {shlex.join(shown)}")
            except ComponentDied as e:
                faults.append(f"{':'.join(what[:3])}: {e.message}; undo by hand: {shlex.join(undo)}")
                self.changes.clear()
                break
        return faults


def _ovsdb_value(x):
    """A cell of ovs-vsctl --format=json: an atom, ["set", [...]] (None when empty, the atom when one), ["map",
    [[k, v]...]] as a dict, ["uuid", u] as u."""
    if isinstance(x, list) and len(x) == 2 and x[0] in ("set", "map", "uuid", "named-uuid"):
        if x[0] == "map":
            return {_ovsdb_value(k): _ovsdb_value(v) for k, v in x[1]}
        if x[0] == "set":
            items = [_ovsdb_value(i) for i in x[1]]
            return None if not items else items[0] if len(items) == 1 else items
        return x[1]
    return x
