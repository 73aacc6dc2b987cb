"""The result journal: every change to a result or campaign document appended as one JSON line beside the file,
so that saving a trial costs the same at trial 1 and trial 10,000.

`FILE.journal` holds lines {"seq": N, "t": time, "op": ..., ...}; the document holds `journal_seq`, the last line
folded into it. Reading a document (resultfile.read_json) applies the lines after that; compacting writes the
whole document with the new `journal_seq` (atomically), then removes the journal. A kill -9 at any moment leaves
either a document and the lines not yet in it, or a torn last line, which is not a change and is skipped.

One function (`apply`) changes a document for a line, the same when the run writes it and when a reader replays
it: what a reader sees is what the run saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import append_line, read_lines

SUFFIX = ".journal"
MAX_BYTES = 1 << 31  # a journal is read whole when a file is opened: 2 GiB is ~100,000 trials of a large bench


def path_of(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


@dataclass(frozen=True, kw_only=True)
class Change(Record):
    """One line of a journal: its number, when, the campaign case whose run it changes (None: the document's own
    run), and what changed (`op` and its fields, in the order a line has them)."""

    seq: int = 0
    t: str | None = None
    case: str | None = None
    op: str = ""
    frame: Json = None  # search, trial, result, warmup, latency_loads, b2b: the search changed (frame, repeat)
    repeat: Json = None
    info: JsonObject | None = None  # search: its range, link, paths, ledger context
    trial: JsonObject | None = None  # trial: the trial appended
    fields: JsonObject | None = None  # result, warmup, latency_loads, b2b: the search's fields set
    key: str | None = None  # entry: run[key][name] = value
    name: str | None = None
    value: Json = None  # entry, core_probe: the value stored
    text: str | None = None  # warn: the warning
    state: str | None = None  # state: the run's new state


# the fields each kind of change needs besides the search it names (a line without one is damaged)
_NEEDS = {"search": ("info",), "trial": ("trial",), "result": ("fields",), "warmup": ("fields",),
          "latency_loads": ("fields",), "b2b": ("fields",), "entry": ("key", "name", "value"), "core_probe": ("value",),
          "warn": ("text",), "state": ("state",)}


def _need(c: Change, *names: str) -> None:
    """KeyError naming the first of the fields a change read from a line lacks."""
    for k in names:
        if c.keys is not None and k not in c.keys:
            raise KeyError(k)


def _run_of(doc: dict[str, Any], c: Change) -> dict[str, Any]:
    """The run document a change changes: the document itself, or a campaign case's run."""
    if c.case is None:
        return doc
    entry = next((e for e in doc["cases"] if e["name"] == c.case), None)
    if entry is None or not isinstance(entry.get("run"), dict):
        raise KeyError(f"case {c.case!r}")
    run: dict[str, Any] = entry["run"]
    return run


def _search(run: dict[str, Any], c: Change) -> dict[str, Any] | None:
    _need(c, "frame", "repeat")
    s: dict[str, Any] | None = next((s for s in run["searches"] if s["frame"] == c.frame and s["repeat"] == c.repeat),
                                    None)
    return s


def _found(run: dict[str, Any], c: Change) -> dict[str, Any]:
    s = _search(run, c)
    if s is None:
        raise KeyError(f"search {c.frame} B repeat {c.repeat}")
    _need(c, *_NEEDS[c.op])
    return s


def apply(doc: dict[str, Any], c: Change) -> None:
    """Changes doc (a run or campaign document) as the change c says."""
    run = _run_of(doc, c)
    _need(c, "op")
    if c.op not in ("search", "trial", "result", "warmup", "latency_loads", "b2b"):
        _need(c, *_NEEDS.get(c.op, ()))
    if c.op == "search":  # a search starts (or restarts: its stored trials are replayed and appended again)
        s = _search(run, c)
        _need(c, "info")
        if s is None:
            run["searches"].append({"frame": c.frame, "repeat": c.repeat, "trials": [], "result": None,
                                    **(c.info or {})})
        else:
            s.update(c.info or {})
            s["trials"] = []
    elif c.op == "trial":
        _found(run, c)["trials"].append(c.trial)
    elif c.op in ("result", "warmup", "latency_loads", "b2b"):
        _found(run, c).update(c.fields or {})
    elif c.op == "entry":  # ceilings[name], placement[name]
        run.setdefault(str(c.key), {})[c.name] = c.value
    elif c.op == "core_probe":
        run.setdefault("core_probes", []).append(c.value)
    elif c.op == "warn":
        if c.text not in run["warnings"]:
            run["warnings"].append(c.text)
    elif c.op == "state":
        run["state"] = c.state
    else:
        raise KeyError(f"op {c.op!r}")
    _need(c, "t")
    run["updated"] = c.t
    if run is not doc:
        doc["updated"] = c.t


def replay(doc: dict[str, Any], path: Path) -> int:
    """Applies to doc the journal lines of the file at path that it does not hold yet; the number applied."""
    jpath = path_of(Path(path))
    lines, _torn = read_lines(jpath, MAX_BYTES)
    applied = 0
    have = doc.get("journal_seq") or 0
    for n, line in enumerate(lines, 1):
        try:
            c = Change.from_json(json.loads(line))
            _need(c, "seq")
            if c.seq <= have:
                continue
            apply(doc, c)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ZeroLossError(f"{jpath}: line {n} is not a change of this result file ({type(e).__name__}: {e})",
                                "move the journal away to read the file without its last changes") from e
        doc["journal_seq"] = c.seq
        applied += 1
    return applied


class Journal:
    """The appending side: one line per change, fsynced before the call returns."""

    def __init__(self, path: Path, seq: int):
        self.path = path_of(Path(path))
        self.seq = seq

    def append(self, change: Change) -> Change:
        """Writes the change as the next line; returns it as written (with seq)."""
        self.seq += 1
        line = replace(change, seq=self.seq)
        append_line(self.path, json.dumps(line.to_json(), separators=(",", ":")))
        return line

    def remove(self) -> None:
        """Drops the journal once the document holds every line (after compaction)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            raise ZeroLossError(f"cannot remove {self.path}: {e.strerror or e}") from e
