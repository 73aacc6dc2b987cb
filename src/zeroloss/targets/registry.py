"""The DUT kinds: one table, one interface. As testpmd keeps its forwarding engines in one table
(`fwd_engines[]`) behind one loop, zeroloss keeps its kinds of DUT here behind run's, soak's and events' loops.

A kind is one module (or package) under targets/kinds/ that calls register(Kind(...)) when imported; kinds() imports
every one of them once. Nothing else names a kind: the CLI's --dut choices and their help, the targets a run makes,
whether it can soak, its events, the settings tune may change on it, the cores it names and the ledger's readers
for hop kinds of its own all come from its entry. A kind module is light at import time: it imports no driver
(zlgen, DPDK, OVS, the bench) until it starts something, so that `zeroloss report` (which builds the whole
command line) loads none.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeroloss.core import config, cores
from zeroloss.core.config import RunConfig, _shown
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.frames import Frame
from zeroloss.loss import readers
from zeroloss.loss.readers import HopReader

if TYPE_CHECKING:
    from zeroloss.drivers.bench.events import Event

    from .base import Target


def _quiet(line: str) -> None:
    return None


@dataclass(frozen=True)
class Needs:
    """What a loop hands a kind to make its target with."""

    warn: Callable[[str], None] = _quiet  # a warning for the result file
    host_facts_known: bool = False  # the file has the node's facts already (a lab's soak, events, a resumed run)
    note: Callable[[str], None] | None = None  # each change made to a node and each undone (None: on stderr)


def _no_fault(cfg: RunConfig) -> None:
    return None


@dataclass(frozen=True)
class Events:
    """The changes `zeroloss events` can make on a kind of DUT (results.events.EVENTS names them)."""

    names: tuple[str, ...]  # the events it can make
    unfit: Callable[[str, RunConfig], str | None]  # why not on these settings (one line with the fix), or None
    check: Callable[[Target, tuple[str, ...]], None]  # before traffic: the started DUT has what they need
    make: Callable[[Target, str], Event]  # the event on a started target
    allowed: Callable[[RunConfig], None] = _no_fault  # raises when the settings let no event change this DUT
    every: Callable[[RunConfig], tuple[str, ...]] | None = None  # `--event all` (None: every event that fits)

    def chosen(self, cfg: RunConfig) -> tuple[str, ...]:
        """What `--event all` runs on these settings."""
        if self.every is not None:
            return self.every(cfg)
        return tuple(n for n in self.names if self.unfit(n, cfg) is None)


def one_target(cfg: RunConfig) -> list[tuple[str, list[Frame]]]:
    """Every frame size on one target (a kind whose DUT takes any size as it is)."""
    return [("", list(cfg.frame_sizes))]


def _core_keys(cfg: RunConfig) -> tuple[str, ...]:
    return cores.CORE_KEYS


def _no_vnfs(cfg: RunConfig) -> int:
    return 0


NO_EVENTS = ("events change a DUT: this kind of DUT has none", "use --topology ovs-p2p, pvp or pvvp, or --lab FILE")


@dataclass(frozen=True)
class Kind:
    """One kind of DUT: how a run's settings choose it and everything the loops ask of it."""

    name: str  # "testpmd-p2p", "ovs", "external", "lab"
    duts: tuple[str, ...]  # the --dut values that choose it (testpmd: the bench, P2P or OVS by topology)
    topologies: tuple[str, ...] | None  # the --topology values it takes (None: any, not its concern)
    order: int  # its place in --dut's choices and help
    help: str  # its words in --dut's help ("external (yours, no counters)"); "" when a kind of the same --dut says them
    make: Callable[[RunConfig, str, list[Frame], Needs], Target]  # its target for (link, sizes): a context manager
    plan: Callable[[RunConfig], list[tuple[str, list[Frame]]]] = one_target  # the targets a run makes: (link, sizes)
    check: Callable[[RunConfig], None] = _no_fault  # its faults in the settings, one line each
    core_keys: Callable[[RunConfig], tuple[str, ...]] = _core_keys  # the settings naming host cores (check_cores)
    vnfs: Callable[[RunConfig], int] = _no_vnfs  # the VNFs the bench runs for it (tune's hugepage arithmetic)
    soak: tuple[str, str] | None = None  # None: it can soak; else why not and the fix
    events: Events | tuple[str, str] = NO_EVENTS  # its events, or why none and the fix
    knobs: frozenset[str] = frozenset()  # the RunConfig keys tune may change on it (runs/tune/knobs.KNOBS)
    readers: Mapping[str, HopReader] = field(default_factory=dict)  # the ledger's readers of hop kinds it adds
    ours: bool = True  # its settings are the run's own (False: a node someone else runs, changed only by dut_set)

    def takes(self, dut: str, topology: str) -> bool:
        return dut in self.duts and (self.topologies is None or topology in self.topologies)


_KINDS: dict[str, Kind] = {}
_loaded = False


def register(kind: Kind) -> Kind:
    """Adds a kind to the table and its hop readers to the ledger's; a name, or a (--dut, --topology) pair, that a
    kind registered already has is refused."""
    if kind.name in _KINDS:
        raise ValueError(f"DUT kind {kind.name!r} is registered already")
    for other in _KINDS.values():
        both = set(kind.duts) & set(other.duts)
        if both and (kind.topologies is None or other.topologies is None
                     or set(kind.topologies) & set(other.topologies)):
            raise ValueError(f"DUT kinds {other.name!r} and {kind.name!r} both take --dut {sorted(both)[0]} on one "
                             "topology")
    for hop_kind, fn in kind.readers.items():
        readers.add_reader(hop_kind, fn)
    _KINDS[kind.name] = kind
    return kind


def kinds() -> tuple[Kind, ...]:
    """Every kind, by order (the modules of targets/kinds/ imported once)."""
    global _loaded
    if not _loaded:
        here = Path(__file__).with_name("kinds")
        for m in sorted(pkgutil.iter_modules([str(here)]), key=lambda m: m.name):
            importlib.import_module(f"{__package__}.kinds.{m.name}")
        _loaded = True
    return tuple(sorted(_KINDS.values(), key=lambda k: (k.order, k.name)))


def duts() -> tuple[str, ...]:
    """--dut's choices, by order."""
    return tuple(dict.fromkeys(d for k in kinds() for d in k.duts))


def dut_help() -> str:
    """--dut's help: each choice in its first kind's words."""
    words = [next(k.help for k in kinds() if d in k.duts and k.help) for d in duts()]
    listed = ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)
    return f"device under test: {listed}"


def kind_of(cfg: RunConfig) -> Kind:
    """The kind of the settings' (dut, topology), its check run; an unknown one in one line with the choices."""
    table = kinds()
    if cfg.dut not in duts():
        raise ZeroLossError(f"config: dut must be one of {', '.join(duts())}, got {_shown(cfg.dut)}")
    kind = next((k for k in table if k.takes(cfg.dut, cfg.topology)), None)
    if kind is None:
        takes = sorted({t for k in table if cfg.dut in k.duts for t in k.topologies or ()})
        raise ZeroLossError(f"config: dut {cfg.dut} takes topology {', '.join(takes)}, not {cfg.topology}",
                            f"use --topology {takes[0]}")
    kind.check(cfg)
    return kind


def load(path: Path | None, overrides: dict[str, Any]) -> RunConfig:
    """The settings (core.config.load) with their kind's check run: an unknown dut, or a fault of the kind's, is
    one line where the settings are read."""
    cfg = config.load(path, overrides)
    kind_of(cfg)
    return cfg


def check_cores(cfg: RunConfig, online: set[int] | None = None, usable: set[int] | None = None) -> None:
    """The host cores the settings' kind names, checked against this host (core.cores.check_cores)."""
    cores.check_cores(cfg, kind_of(cfg).core_keys(cfg), online, usable)


def targets(cfg: RunConfig, needs: Needs) -> Iterator[tuple[list[Frame], Callable[[list[Frame]], Target]]]:
    """The run's targets in order, each with the frame sizes it measures (one target per group of sizes that share
    a DUT) and how to make it for the sizes left to measure."""
    kind = kind_of(cfg)
    for link, frames in kind.plan(cfg):
        yield frames, _maker(kind, cfg, link, needs)


def _maker(kind: Kind, cfg: RunConfig, link: str, needs: Needs) -> Callable[[list[Frame]], Target]:
    def make(frames: list[Frame]) -> Target:
        return kind.make(cfg, link, frames, needs)
    return make


def target(cfg: RunConfig, frame: Frame, needs: Needs) -> Target:
    """The target of one frame size of the settings (a soak's, the events'), as the run makes it."""
    kind = kind_of(cfg)
    link = next((link for link, frames in kind.plan(cfg) if frame in frames), None)
    if link is None:
        raise ValueError(f"frame size {frame} is not one of the settings' {cfg.frame_sizes}")
    return kind.make(cfg, link, [frame], needs)


def as_events(kind: Kind) -> Events:
    """The kind's events; one line saying why it has none, with the fix, when it has none."""
    if isinstance(kind.events, Events):
        return kind.events
    raise ZeroLossError(*kind.events)


__all__ = ["Events", "Kind", "Needs", "as_events", "check_cores", "dut_help", "duts", "kind_of", "kinds", "load",
           "one_target", "register", "target", "targets"]
