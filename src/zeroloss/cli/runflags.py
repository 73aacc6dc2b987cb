"""The run settings offered as flags, made from RunConfig's fields: each field with a `flag` gives the flag's name,
its help, unit, range or choices and the default shown; the flag's dest is the field's name, so the values read
back are the config's keys (run_overrides)."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

from zeroloss.cli.argtypes import frame_sizes, number, rate, whole_number
from zeroloss.core.config import RunConfig, number_text
from zeroloss.report.docparts import meta

# a unit as the help says it, and the metavar it gives a flag that names none
UNIT_WORDS = {"B": "bytes", "s": "seconds", "ms": "milliseconds", "us": "microseconds", "pps": "frames/s",
              "%": "%", "Gb/s": "Gb/s", "MB": "MB"}
UNIT_METAVARS = {"B": "B", "s": "S", "ms": "MS", "us": "US", "pps": "PPS", "%": "PCT", "Gb/s": "GBPS", "MB": "MB"}
# the value type of a flag, by the field's type and unit (a rate takes k/M/G suffixes)
_TYPES: dict[tuple[str, str], Callable[[str], Any]] = {("list[Frame]", "B"): frame_sizes, ("float", "pps"): rate}
_KIND_TYPES: dict[str, Callable[[str], Any]] = {"int": whole_number(), "float": number, "str": str, "Any": str}
DEST_KEY = "run_flag_names"  # the parser default naming the run settings a sub-command offers as flags


def _kind(f: dataclasses.Field) -> str:
    """The field's type as written in RunConfig ('int', 'list[int]', ...)."""
    return f.type if isinstance(f.type, str) else f.type.__name__


@functools.cache
def _flagged() -> dict[str, dataclasses.Field]:
    """RunConfig's fields that have a flag, by name, in field order: read once (each flag of each parser asks)."""
    return {f.name: f for f in dataclasses.fields(RunConfig) if meta(f).flag}


def flag_fields(names: Iterable[str] | None = None) -> list[dataclasses.Field]:
    """RunConfig's fields that have a flag, in field order, or those of `names` in that order."""
    by_name = _flagged()
    if names is None:
        return list(by_name.values())
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"RunConfig fields without a flag: {', '.join(missing)}")
    return [by_name[n] for n in names]


def default_text(value: Any) -> str:
    """A default as the help shows it: 2 not 2.0, a list as 64,1518, nothing as none, a switch as on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None or value == "" or value == []:
        return "none"
    if isinstance(value, list | tuple):
        return ",".join(default_text(v) for v in value)
    if isinstance(value, float):
        return number_text(value)
    return str(value)


def field_default(f: dataclasses.Field) -> Any:
    """The field's default value."""
    return f.default_factory() if f.default is dataclasses.MISSING else f.default  # type: ignore[misc]


def choices(f: dataclasses.Field) -> tuple[tuple[str, ...] | None, str]:
    """The field's choices and help: the config's, but for dut the DUT kinds' (targets/registry.py)."""
    if f.name == "dut":
        from zeroloss.targets import registry

        return registry.duts(), registry.dut_help()
    m = meta(f)
    return (tuple(m.choices) if m.choices else None), m.help


def field_help() -> dict[str, str]:
    """Help text per key, with unit and range, for --help (core.config.field_help, dut's from its kinds)."""
    from zeroloss.core.config import field_help as config_help

    out = config_help()
    (f,) = flag_fields(["dut"])
    values, words = choices(f)
    out["dut"] = f"{words} [{'|'.join(values or ())}]"
    return out


def flag_help(f: dataclasses.Field, default: Any = dataclasses.MISSING, scope: str = "") -> str:
    """The flag's help: the field's help, then its unit, range and default in brackets (argparse-escaped)."""
    m = meta(f)
    parts = [UNIT_WORDS[m.unit]] if m.unit else []
    if m.lo is not None:
        parts.append(f"{number_text(m.lo)}..{number_text(m.hi)}" + (" each" if _kind(f).startswith("list")
                                                                     else ""))
    parts.append("default " + default_text(field_default(f) if default is dataclasses.MISSING else default))
    text = f"{scope + ': ' if scope else ''}{choices(f)[1]} [{', '.join(parts)}]"
    return text.replace("%", "%%")


def _metavar(f: dataclasses.Field) -> str | None:
    """The flag's metavar: the field's own, none for choices (argparse lists them), else from the unit."""
    m, kind = meta(f), _kind(f)
    if m.metavar:
        return m.metavar
    if choices(f)[0]:
        return None
    one = UNIT_METAVARS.get(m.unit) or ("N" if kind in ("int", "list[int]") else "VALUE")
    return f"{one},{one},..." if kind.startswith("list") else one


def add_run_flag(parser: argparse.ArgumentParser, name: str, *, flag: str = "", dest: str = "",
                 default: Any = dataclasses.MISSING, scope: str = "") -> argparse.Action:
    """One run setting as a flag of `parser`. Without `default` the flag's value is None unless given (the
    config's default then applies); a sub-command with a default of its own gives it (and the help shows it)."""
    (f,) = flag_fields([name])
    m, kind = meta(f), _kind(f)
    common: dict[str, Any] = {"dest": dest or f.name, "help": flag_help(f, default, scope),
                              "default": None if default is dataclasses.MISSING else default}
    if kind == "bool":
        return parser.add_argument(flag or m.flag, action="store_true", **common)
    values = choices(f)[0]
    many = kind == "list[str]"  # each flag adds one (action append); else one value of the field's type
    return parser.add_argument(flag or m.flag, action="append" if many else None,
                               type=None if many else _TYPES.get((kind, m.unit)) or _KIND_TYPES[kind],
                               choices=list(values) if values else None, metavar=_metavar(f), **common)


def add_run_flags(parser: argparse.ArgumentParser, names: Iterable[str] | None = None) -> None:
    """The run settings (all that have a flag, or `names`) as flags of `parser`, read back by run_overrides."""
    chosen = [f.name for f in flag_fields(names)]
    for name in chosen:
        add_run_flag(parser, name)
    parser.set_defaults(**{DEST_KEY: tuple(chosen)})


def run_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The run settings given as flags, by config key (flags not given are left out)."""
    values = {name: getattr(args, name) for name in getattr(args, DEST_KEY, ())}
    return {k: v for k, v in values.items() if v is not None}
