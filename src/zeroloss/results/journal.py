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
from pathlib import Path
from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import append_line, read_lines

SUFFIX = ".journal"
MAX_BYTES = 1 << 31  # a journal is read whole when a file is opened: 2 GiB is ~100,000 trials of a large bench


def path_of(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def _run_of(doc: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    """The run document a line changes: the document itself, or a campaign case's run."""
    case = op.get("case")
    if case is None:
        return doc
    entry = next((c for c in doc["cases"] if c["name"] == case), None)
    if entry is None or not isinstance(entry.get("run"), dict):
        raise KeyError(f"case {case!r}")
    run: dict[str, Any] = entry["run"]
    return run


def _search(run: dict[str, Any], op: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] | None = next((s for s in run["searches"]
                                     if s["frame"] == op["frame"] and s["repeat"] == op["repeat"]), None)
    if s is None:
        raise KeyError(f"search {op['frame']} B repeat {op['repeat']}")
    return s


def apply(doc: dict[str, Any], op: dict[str, Any]) -> None:
    """Changes doc (a run or campaign document) as the line op says."""
    run = _run_of(doc, op)
    kind = op["op"]
    if kind == "search":  # a search starts (or restarts: its stored trials are replayed and appended again)
        s = next((s for s in run["searches"] if s["frame"] == op["frame"] and s["repeat"] == op["repeat"]), None)
        if s is None:
            run["searches"].append({"frame": op["frame"], "repeat": op["repeat"], "trials": [], "result": None,
                                    **op["info"]})
        else:
            s.update(op["info"])
            s["trials"] = []
    elif kind == "trial":
        _search(run, op)["trials"].append(op["trial"])
    elif kind in ("result", "warmup", "latency_loads", "b2b"):
        s = _search(run, op)
        s.update(op["fields"])
    elif kind == "entry":  # ceilings[name], placement[name]
        run.setdefault(op["key"], {})[op["name"]] = op["value"]
    elif kind == "core_probe":
        run.setdefault("core_probes", []).append(op["value"])
    elif kind == "warn":
        if op["text"] not in run["warnings"]:
            run["warnings"].append(op["text"])
    elif kind == "state":
        run["state"] = op["state"]
    else:
        raise KeyError(f"op {kind!r}")
    run["updated"] = op["t"]
    if run is not doc:
        doc["updated"] = op["t"]


def replay(doc: dict[str, Any], path: Path) -> int:
    """Applies to doc the journal lines of the file at path that it does not hold yet; the number applied."""
    jpath = path_of(Path(path))
    lines, _torn = read_lines(jpath, MAX_BYTES)
    applied = 0
    have = doc.get("journal_seq") or 0
    for n, line in enumerate(lines, 1):
        try:
            op = json.loads(line)
            if op["seq"] <= have:
                continue
            apply(doc, op)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise ZeroLossError(f"{jpath}: line {n} is not a change of this result file ({type(e).__name__}: {e})",
                                "move the journal away to read the file without its last changes") from e
        doc["journal_seq"] = op["seq"]
        applied += 1
    return applied


class Journal:
    """The appending side: one line per change, fsynced before the call returns."""

    def __init__(self, path: Path, seq: int):
        self.path = path_of(Path(path))
        self.seq = seq

    def append(self, op: dict[str, Any]) -> dict[str, Any]:
        """Writes op as the next line; returns it as written (with seq)."""
        self.seq += 1
        line = {"seq": self.seq, **op}
        append_line(self.path, json.dumps(line, separators=(",", ":")))
        return line

    def remove(self) -> None:
        """Drops the journal once the document holds every line (after compaction)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            raise ZeroLossError(f"cannot remove {self.path}: {e.strerror or e}") from e
