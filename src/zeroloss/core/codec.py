"""One JSON codec for the typed records of result, campaign and tune files (pyperf's model: the file becomes
objects in one loader, and objects become the file in one writer).

A record is a frozen, keyword-only dataclass whose fields are the document's keys. `from_json` turns a JSON object
(already checked against results/schema.py) into the record, nested records included; `to_json` gives the object
back. Two rules make `to_json(from_json(doc)) == doc` hold for every file written before:

- keys this zeroloss does not know (a later version's, or a lab's own) are kept in `extra` and written back;
- a record read from a file writes back exactly the keys it was read with (`keys`), so an absent key stays absent
  and a null stays null. A record built in code writes every field that is not None, and those of its
  `NULLABLE` fields that are None as null (e.g. an unfinished search's `result`).

Lists become tuples (records are immutable) and lists again on the way out. Values typed `Json`/`JsonObject` are
kept as read: counters, ledgers and states whose shape belongs to the module that measures them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar, Union

Json = Any  # a JSON value as json.loads gives it
JsonObject = dict[str, Any]

R = TypeVar("R", bound="Record")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    """The base of every stored record: unknown keys and the keys read travel with it."""

    extra: Mapping[str, Json] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    keys: frozenset[str] | None = dataclasses.field(default=None, repr=False, compare=False)

    NULLABLE: ClassVar[frozenset[str]] = frozenset()  # fields written as null when None (built in code)

    @classmethod
    def from_json(cls: type[R], doc: Mapping[str, Json]) -> R:
        """The record of a JSON object; unknown keys go to `extra`."""
        codec = _codec(cls)
        if not isinstance(doc, Mapping):
            raise RecordError(f"is not an object (found {type(doc).__name__})")
        values = {}
        for name, key, conv, _ in codec:
            if key in doc:
                try:
                    values[name] = conv(doc[key])
                except RecordError as e:
                    raise RecordError(f"{key}{'' if not e.at or e.at.startswith('[') else '.'}{e.at}", e.what) \
                        from None
                except (TypeError, AttributeError, ValueError) as e:
                    raise RecordError(key, f"has the wrong shape ({e})") from None
        known = {key for _, key, _, _ in codec}
        extra = {k: v for k, v in doc.items() if k not in known}
        return cls(**values, extra=extra, keys=frozenset(doc))

    def to_json(self) -> JsonObject:
        """The JSON object of the record (a new dict: the caller may keep or change it)."""
        out: JsonObject = {}
        for name, key, _, conv in _codec(type(self)):
            value = getattr(self, name)
            if self.keys is not None:
                if key not in self.keys:
                    continue
            elif value is None and name not in self.NULLABLE:
                continue
            out[key] = None if value is None else conv(value)
        out.update(self.extra)
        return out

    def with_(self: R, **changes: Any) -> R:
        """A copy with fields changed; the changed fields are written even where the source lacked them."""
        keys = None if self.keys is None else self.keys | {_key(type(self), n) for n in changes}
        return dataclasses.replace(self, **changes, keys=keys)


class RecordError(ValueError):
    """A document that does not have a record's shape: `at` names the field (trials[3].outcome), `what` the fault."""

    def __init__(self, at: str, what: str = ""):
        super().__init__(f"{at}: {what}" if what else at)
        self.at, self.what = (at, what) if what else ("", at)


Conv = Callable[[Any], Any]
_CODECS: dict[type, list[tuple[str, str, Conv, Conv]]] = {}


def _key(cls: type, name: str) -> str:
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    return str(f.metadata.get("key", name))


def _codec(cls: type) -> list[tuple[str, str, Conv, Conv]]:
    """(field name, JSON key, from JSON, to JSON) of each field of a record class, worked out once."""
    c = _CODECS.get(cls)
    if c is None:
        hints = typing.get_type_hints(cls)
        c = [(f.name, str(f.metadata.get("key", f.name)), *_convs(hints[f.name]))
             for f in dataclasses.fields(cls) if f.name not in ("extra", "keys")]
        _CODECS[cls] = c
    return c


def _same(x: Any) -> Any:
    return x


def _convs(t: Any) -> tuple[Conv, Conv]:
    """How a value of type t is read from JSON and written back."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            fin, fout = _convs(inner[0])
            return (lambda x: None if x is None else fin(x)), (lambda x: None if x is None else fout(x))
        return _same, _same
    if isinstance(t, type) and issubclass(t, Record):
        return t.from_json, lambda x: x.to_json()
    if origin is tuple:
        fin, fout = _convs(args[0])
        return (lambda xs: tuple(_at(i, fin, x) for i, x in enumerate(xs))), (lambda xs: [fout(x) for x in xs])
    if origin in (Mapping, dict) and args and args[1] is not Any:
        fin, fout = _convs(args[1])
        return (lambda d: {k: fin(v) for k, v in d.items()}), (lambda d: {k: fout(v) for k, v in d.items()})
    return _same, _same


def _at(i: int, conv: Conv, x: Any) -> Any:
    """conv(x) for item i of a list, a fault named with its index."""
    try:
        return conv(x)
    except RecordError as e:
        raise RecordError(f"[{i}]{'' if not e.at or e.at.startswith('[') else '.'}{e.at}", e.what) from None
