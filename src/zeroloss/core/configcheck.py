"""The checks of `zeroloss run`'s settings one value at a time (range, choices, type) and the cross-field checks an
OVS bench topology needs; the way a message shows a value. core.config runs them on a RunConfig."""

from __future__ import annotations

import dataclasses
import reprlib
from pathlib import Path
from typing import Any

from . import frames
from .errors import ZeroLossError
from .frames import Frame

# balance-tcp needs LACP, which zlgen does not speak (OVS's fallback would be active-backup anyway)
BOND_MODES = ("none", "active-backup", "balance-slb")
FIREWALLS = ("none", "conntrack")  # Neutron's openvswitch firewall driver (conntrack) or port security off
TUNNELS = ("none", "vxlan")


def require_map(value: Any, sizes: list[Frame]) -> dict[Frame, float] | None:
    """--require-ndr as {frame key: % of line rate}: None, one number for every size, a YAML map, or the
    command-line text "25" / "64:10,9000:50" / "64:10,imix:5" (imix: the run's one mix, whatever its label)."""
    if value is None or value == {}:
        return None
    if isinstance(value, str):
        text = value.strip()
        try:
            if ":" not in text:
                value = float(text)
            else:
                value = {k: float(v) for k, _, v in (part.rpartition(":") for part in text.split(",") if part.strip())}
        except ValueError:
            raise ZeroLossError(f"config: require_ndr {_shown(value)} is neither a percentage nor SIZE:PCT pairs",
                                "e.g. --require-ndr 25 or --require-ndr 64:10,1518:50,imix:30") from None
    if isinstance(value, bool):
        raise ZeroLossError(f"config: require_ndr must be a percentage or a map of frame size to percentage, "
                            f"got {_shown(value)}")
    if isinstance(value, int | float):
        value = {s: float(value) for s in sizes}
    if not isinstance(value, dict):
        raise ZeroLossError(f"config: require_ndr must be a percentage or a map of frame size to percentage, "
                            f"got {_shown(value)}")
    mixes = [s for s in sizes if isinstance(s, str)]
    out: dict[Frame, float] = {}
    for k, v in value.items():
        try:
            size = frames.key(k)
        except ZeroLossError:
            raise ZeroLossError(f"config: require_ndr key {_shown(k)} is not a frame size") from None
        if size == frames.IMIX and size not in sizes and len(mixes) == 1:
            size = mixes[0]  # imix names the run's one mix
        if size not in sizes:
            raise ZeroLossError(f"config: require_ndr names {frames.text(size)}, which is not in frame_sizes",
                                "add it to frame_sizes or drop it from require_ndr")
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 100:
            raise ZeroLossError(f"config: require_ndr for {frames.text(size)} must be a percentage in (0, 100], "
                                f"got {_shown(v)}")
        out[size] = float(v)
    return out


def check_ovs_topology(bridges: int, vlan: int, bond: str) -> None:
    """What an OVS bench topology can be built of."""
    if vlan >= 0 and bridges != 2:
        raise ZeroLossError("VLAN translation needs two bridges", "set bridges: 2")
    if bond not in BOND_MODES:
        raise ZeroLossError(f"bond mode '{bond}' is not available on the bench",
                            "use active-backup or balance-slb (balance-tcp needs LACP, which zlgen does not speak)")
    if bond != "none" and bridges != 2:
        raise ZeroLossError("bonding needs two bridges (the bond sits on br-phy, as dpdkbond0 in the references)",
                            "set bridges: 2")


def check_neutron(topology: str, bridges: int, vlan: int, bond: str, meter_pps: int, firewall: str,
                  tunnel: str) -> None:
    """What the Neutron options (firewall, tunnel) combine with on an OVS bench."""
    if firewall not in FIREWALLS or tunnel not in TUNNELS:
        raise ZeroLossError(f"firewall '{firewall}' / tunnel '{tunnel}' is not available on the bench",
                            f"firewall: {', '.join(FIREWALLS)}; tunnel: {', '.join(TUNNELS)}")
    if tunnel != "none" and (bridges != 1 or vlan >= 0 or bond != "none" or meter_pps):
        raise ZeroLossError(f"tunnel {tunnel} builds its own bridges (br-int, br-tun, br-phy): bridges, vlan, bond "
                            "and meter_pps do not combine with it", "drop bridges, vlan, bond and meter_pps")
    if firewall != "none" and topology == "ovs-p2p" and bridges == 2 and tunnel == "none":
        raise ZeroLossError("firewall on ovs-p2p with two bridges: br-int holds no tenant port to protect",
                            "use bridges: 1, --tunnel vxlan, or --topology pvp")


def number_text(x: float) -> str:
    """A number as messages and help show it: 2, not 2.0; 0.5 as 0.5."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclasses.dataclass(frozen=True)
class FieldMeta:
    """A RunConfig field's metadata (core/config.py _f), read once: its help, range or choices, unit, flag and
    metavar."""

    help: str
    lo: Any
    hi: Any
    choices: Any
    unit: str
    flag: str
    metavar: str

    @classmethod
    def of(cls, f: dataclasses.Field) -> FieldMeta:
        return cls(**f.metadata)

    @property
    def range_text(self) -> str:
        """lo..hi as messages and help show them ('' without a range)."""
        return f"{number_text(self.lo)}..{number_text(self.hi)}" if self.lo is not None else ""


def _check(f: dataclasses.Field, value: Any) -> None:
    meta, name = FieldMeta.of(f), f.name
    kind = f.type if isinstance(f.type, str) else f.type.__name__
    rng = meta.range_text
    unit = f" {meta.unit}" if meta.unit else ""

    def bad(what: str) -> ZeroLossError:
        return ZeroLossError(f"config: {name} {what}, got {_shown(value)}")

    if kind.startswith("list"):
        if not isinstance(value, list | tuple):
            raise bad("must be a list")
        items = list(value)
        inner = kind[5:-1]
        for v in items:
            if inner == "Frame" and isinstance(v, str):  # an IMIX's label (frame sizes are checked below)
                frames.key(v)
                continue
            if inner in ("int", "Frame") and (not isinstance(v, int) or isinstance(v, bool)):
                raise bad("must be a list of whole numbers")
            if inner == "str" and not isinstance(v, str):
                raise bad("must be a list of strings")
            if meta.choices and v not in meta.choices:
                raise bad(f"may only hold {', '.join(map(str, meta.choices))}")
            if meta.lo is not None and not meta.lo <= v <= meta.hi:
                raise ZeroLossError(f"config: {name} must hold values in {rng}{unit}, got {_shown(v)}")
        return
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("must be true or false")
        return
    if kind == "int" and (not isinstance(value, int) or isinstance(value, bool)):
        raise bad(f"must be a whole number{' in ' + rng + unit if rng else ''}")
    if kind == "float" and (not isinstance(value, int | float) or isinstance(value, bool)):
        raise bad(f"must be a number{' in ' + rng + unit if rng else ''}")
    if kind == "str" and not isinstance(value, str):
        raise bad("must be a string")
    if meta.choices and value not in meta.choices:
        raise bad(f"must be one of {', '.join(map(str, meta.choices))}")
    if meta.lo is not None and not meta.lo <= value <= meta.hi:
        raise bad(f"must be in {rng}{unit}")


_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 40


def _shown(value: Any) -> str:
    """A value as messages show it: its repr, cut short, on one line."""
    return _repr.repr(value)


def _shown_path(path: Path | str) -> str:
    text = str(path)
    return text if text.isprintable() else repr(text)


def _kind(x: Any) -> str:
    return {type(None): "empty", bool: "true or false", int: "a number", float: "a number", str: "a string",
            list: "a list", dict: "a mapping"}.get(type(x), type(x).__name__)
