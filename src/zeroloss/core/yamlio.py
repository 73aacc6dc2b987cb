"""Every YAML file zeroloss reads comes through here, bounded before the work is done: the file's size (fileio's
bounded read), its nesting, and what its aliases expand to (a 1 KB "billion laughs" file is refused while it is
composed, before any value is built or checked). Faults are one ZeroLossError line naming the file.

Limits: MAX_BYTES per file (config, campaign and lab files are a few KB; on a busy host pure-Python parsing takes up to
30 s a MiB, and a lab file's schema check as long again), MAX_DEPTH levels of nesting, MAX_ALIASES aliases (*name) per
document and MAX_ALIAS_NODES nodes added by them. A caller with larger files (rxq-plan's loads files) subclasses
BoundedLoader and checks the size itself.

A low-layer module: the standard library, PyYAML, zeroloss.core.errors and zeroloss.core.fileio only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import read_bytes_plain, shown

MAX_BYTES = 64 * 1024
MAX_DEPTH = 100
MAX_ALIASES = 100
MAX_ALIAS_NODES = 10_000
REMEDY = "write the values out instead of repeating them through aliases (*name)"


class LimitError(yaml.MarkedYAMLError):
    """A document beyond one of the limits, marked where it was found."""

    def __init__(self, problem: str, mark: Any, remedy: str = REMEDY) -> None:
        super().__init__(problem=problem, problem_mark=mark)
        self.remedy = remedy


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader that refuses, while composing, a document nested over MAX_DEPTH levels, over MAX_ALIASES
    aliases, an alias inside the node it names (a cycle), or aliases that stand for over MAX_ALIAS_NODES nodes."""

    def __init__(self, stream: str | bytes) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0
        self._open: set[str] = set()

    def compose_node(self, parent: Any, index: Any) -> Any:
        """One node, counted: aliases, nesting, and anchors still open (an alias to one of them is a cycle)."""
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise LimitError(f"more than {MAX_ALIASES} aliases (*name) in one document", event.start_mark)
            if event.anchor in self._open:
                raise LimitError(f"the alias *{event.anchor} is inside the node it names (a cycle)", event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise LimitError(f"nested too deeply (more than {MAX_DEPTH} levels)", event.start_mark,
                             "is it the right file?")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor)

    def get_single_node(self) -> Any:
        """The document's node, refused when its aliases expand to more than MAX_ALIAS_NODES nodes."""
        node = super().get_single_node()
        if node is not None and self._aliases:
            written, expanded = sizes(node)
            if expanded - written > MAX_ALIAS_NODES:
                raise LimitError(f"its aliases (*name) expand to {expanded:,} nodes from {written:,} written, more "
                                 f"than the {MAX_ALIAS_NODES:,} more zeroloss reads", None)
        return node


def sizes(root: Any) -> tuple[int, int]:
    """(nodes written, nodes once every alias is expanded) of a composed document: each node is visited once,
    whatever its aliases expand to (an acyclic graph: BoundedLoader refuses cycles)."""
    size: dict[int, int] = {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        children = _children(node)
        if done:
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
        else:
            stack.append((node, True))
            stack += [(c, False) for c in children if id(c) not in size]
    return len(size), size[id(root)]


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def read(path: Path | str, what: str, limit: int = MAX_BYTES) -> bytes:
    """A YAML file's bytes, at most limit (refused before it is read whole), or one line naming the file."""
    try:
        return read_bytes_plain(Path(path), what, limit)
    except FileNotFoundError as e:
        raise ZeroLossError(f"cannot read {what} {shown(path)}: {e.strerror or e}") from e


def load(text: str | bytes, where: str, prepare: Callable[[Any], None] | None = None,
         loader: type[BoundedLoader] = BoundedLoader, limit: int = MAX_BYTES) -> Any:
    """YAML text (at most limit bytes) as Python values, or one line naming `where` and the fault; prepare, when
    given, sees the composed node before any value is built (config keeps CPU masks as text there)."""
    if len(text) > limit:
        raise ZeroLossError(f"{where} is {len(text):,} bytes, more than the {limit:,} zeroloss reads",
                            "is it the right file?")
    ld = None
    try:
        ld = loader(text)
        node = ld.get_single_node()
        if node is None:
            return None
        if prepare is not None:
            prepare(node)
        return ld.construct_document(node)
    except LimitError as e:
        at = f", at line {e.problem_mark.line + 1}" if e.problem_mark else ""
        raise ZeroLossError(f"{where}: {e.problem}{at}", e.remedy) from e
    except yaml.YAMLError as e:
        raise ZeroLossError(f"{where}: not valid YAML ({fault(e)})") from e
    except RecursionError as e:
        raise ZeroLossError(f"{where}: nested too deeply") from e
    except (ValueError, TypeError, OverflowError) as e:  # a scalar no Python value holds: 2024-13-45, 5000 digits
        raise ZeroLossError(f"{where}: a value YAML cannot convert ({' '.join(str(e).split(':')[0].split())})") from e
    finally:
        if ld is not None:
            ld.dispose()


def fault(e: Exception) -> str:
    """A YAML error in one line: where (line, column) and what."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    what = ", ".join(str(x) for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or \
        getattr(e, "reason", None) or str(e)
    at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    if getattr(e, "position", None) is not None and not mark:  # a reader error: bad bytes or characters
        at = f"at character {e.position}: "
    return at + " ".join(str(what).split())
