"""The versioned result file of `zeroloss run`: written after every trial, resumable.

Format history:
- version 1 (zeroloss 0.1): host, config, placement, ceilings, and per (frame size, repeat) a search
  entry with every trial (search verdict, per-direction counts, latency, DUT counters) and the result.
  Per direction `ledger` = {tx, rx, lost, wire_refused, dut_rx_missed, dut_dropped, unexplained}; the DUT
  testpmd's port counters in the trial's `dut_ports`.
- version 2 (zeroloss 0.1, the loss ledger): every trial also keeps `counters` (the delta of every stage's
  counters over the trial), `ledger` (hop by hop, per direction), `diagnosis` and `dut_state`; per direction
  `ledger` = {sent, received, lost, counted, unexplained}; each search keeps its `paths` and `ledger_context`.
- version 3 (zeroloss 0.1, files a lab can keep): a latency histogram is {count, min, max, mean, bins} with its
  buckets in one text (`bins`, zeroloss.core.latency.bins_text; past 1 KB deflated, "z:" and base64: bins_stored)
  instead of `buckets` pairs; a search trial that lost
  nothing keeps a summary (`kept: "summary"`: no latency_hist, counters, dut_state or telemetry; results/keep.py);
  the document is written compact (no indentation).
  `zeroloss report`, `compare` and `explain` read versions 1, 2 and 3; `--resume` continues version 3 only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zeroloss import __version__
from zeroloss.core import fileio
from zeroloss.core.codec import Json, JsonObject, R, Record, RecordError
from zeroloss.core.errors import ZeroLossError
from zeroloss.core.fileio import now_iso, patch_state_in_place, write_text_atomic
from zeroloss.results import journal, schema
from zeroloss.results.journal import Change, Journal
from zeroloss.results.records import (
    FORMAT,
    READABLE,
    VERSION,
    B2bRecord,
    Ceiling,
    CoreProbe,
    LoadTrial,
    RunRecord,
    SearchEntry,
    SearchOutcome,
    TrialEntry,
    Warmup,
    fingerprint,
)


@dataclass(frozen=True, kw_only=True)
class Head(Record):
    """What a reader looks at in a document before it knows its kind: its format, version and state (any JSON: the
    document is not checked yet), and the last journal line folded into it."""

    format: Json = None
    version: Json = None
    state: Json = None
    journal_seq: int | None = None


@dataclass(frozen=True, kw_only=True)
class HostFacts(Record):
    """The host a result was measured on, as named to the user (hostinfo.collect writes more)."""

    hostname: Json = None
    cpu_model: Json = None
    kernel: Json = None

    def __str__(self) -> str:
        return f"{self.hostname} ({self.cpu_model}, kernel {self.kernel})"


def read_json(path: Path, what: str, shape: dict[str, Any] | None = None) -> Any:
    """A JSON document from a file (plain or gzip-compressed, bounded: fileio.read_json), or a one-line error naming
    the file and the fault. Any document nests at most schema.MAX_DEPTH levels and has valid text; with a shape (a
    schema of zeroloss.results.schema) it is also checked to have it."""
    doc = fileio.read_json(path, what)
    schema.plain(doc, path)
    if isinstance(doc, dict) and Head.from_json(doc).format in (FORMAT, "zeroloss-campaign"):
        journal.replay(doc, Path(path))  # the changes a run appended since the document was last written whole
    return doc if shape is None else schema.check(doc, shape, path)


def read_result(path: Path, shape: dict[str, Any] | None = None) -> dict[str, Any]:
    """A result document of any version this zeroloss reads, checked to have the shape given (default: what every
    result file holds, schema.FILE; the report, compare and export read schema.RUN)."""
    return check_result(read_json(path, "result file"), path, shape)


def check_result(doc: Any, path: object, shape: dict[str, Any] | None = None) -> dict[str, Any]:
    """A result document already read from path (read_json), checked as read_result checks it (messages name path
    as given)."""
    head = Head.from_json(doc) if isinstance(doc, dict) else None
    if head is None or head.format != FORMAT:
        raise ZeroLossError(f"{schema.shown(path)} is not a zeroloss result file")
    if head.version not in READABLE or isinstance(head.version, bool):
        raise ZeroLossError(f"{schema.shown(path)} has result format version {schema.short(head.version)}; "
                            f"this zeroloss reads versions {', '.join(map(str, READABLE))}", "update zeroloss")
    checked: dict[str, Any] = schema.check(doc, schema.FILE if shape is None else shape, path)
    return checked


def resolve_own_link(path: Path) -> Path:
    """The file a result path names, for writing it again: a symlink is followed (its target is rewritten, the link
    stays) when it belongs to this user or root, the user's own choice; another user's symlink is refused."""
    if not path.is_symlink():
        return path
    owner = path.lstat().st_uid
    if owner not in (0, os.geteuid()):
        raise ZeroLossError(f"{path} is a symlink owned by another user (uid {owner}): not following it",
                            "give the path of the file itself")
    return Path(os.path.realpath(path))


class ResultFile:
    """A result document kept on disk. Every change is a record given to one of its methods, appended to the
    journal (results/journal.py) before the method returns; the whole document is written when the run starts,
    ends, or is resumed (compaction). Readers read `run`, the typed document."""

    def __init__(self, path: Path, doc: dict[str, Any], journal: Journal | None = None, case: str | None = None):
        self.path = path
        self._doc = doc
        self._journal = journal or Journal(path, Head.from_json(doc).journal_seq or 0)
        self._case = case  # the campaign case whose run this is (its lines name it)
        self._run: RunRecord | None = None

    @classmethod
    def create(cls, path: Path, config: dict[str, Any], host: dict[str, Any]) -> ResultFile:
        if path.exists():
            raise ZeroLossError(f"result file {path} exists", "pass --resume to continue it, or another --output")
        rf = cls(path, new_document(config, host))
        rf.save()
        return rf

    @classmethod
    def load(cls, path: Path) -> ResultFile:
        """A result file to continue, its journal folded in (and the folded file written)."""
        path = resolve_own_link(Path(path))
        doc = read_result(path)
        version = Head.from_json(doc).version
        if version != VERSION:
            raise ZeroLossError(f"{path} has result format version {version}, written by an older zeroloss: "
                                f"it cannot be continued (this one writes version {VERSION})",
                                "start the run again; report, compare and explain still read it")
        rf = cls(Path(path), doc)
        records(RunRecord, doc, path)  # every stored trial has a record's shape before the run replays them
        if journal.path_of(rf.path).exists():
            rf.save()
        return rf

    @property
    def run(self) -> RunRecord:
        """The document as typed records (made again after each change)."""
        if self._run is None:
            self._run = records(RunRecord, self._doc, self.path)
        return self._run

    def check_host(self, host: dict[str, Any]) -> None:
        """Refuses to continue a result measured on another host (its numbers would not mix)."""
        check_same_host(self.path, self.run.host, host)

    def search(self, frame: int, repeat: int) -> SearchEntry | None:
        return self.run.search(frame, repeat)

    def _change(self, op: str, **fields: Any) -> None:
        """Appends the change to the journal, then makes it in memory."""
        line = self._journal.append(Change(t=now_iso(), case=self._case or None, op=op, **fields))
        journal.apply(self._doc, replace(line, case=None))
        self._run = None

    def start_search(self, frame: int, repeat: int, **info: Any) -> None:
        """A search starts, or starts again: its stored trials are dropped here and added again as it replays
        them. info: its range, link, paths and ledger context (JSON values)."""
        self._change("search", frame=frame, repeat=repeat, info=info)

    def add_trial(self, frame: int, repeat: int, trial: TrialEntry) -> None:
        self._change("trial", frame=frame, repeat=repeat, trial=trial.to_json())

    def set_warmup(self, frame: int, repeat: int, warmup: Warmup) -> None:
        self._change("warmup", frame=frame, repeat=repeat, fields=_fields(warmup=warmup))

    def set_latency_loads(self, frame: int, repeat: int, loads: tuple[LoadTrial, ...]) -> None:
        """A search's latency-vs-load trials so far (each written before the next starts)."""
        self._change("latency_loads", frame=frame, repeat=repeat, fields=_fields(latency_loads=loads))

    def set_b2b(self, frame: int, repeat: int, b2b: B2bRecord) -> None:
        """A frame size's back-to-back frames so far (each search saved before the next starts)."""
        self._change("b2b", frame=frame, repeat=repeat, fields=_fields(b2b=b2b))

    def finish_search(self, frame: int, repeat: int, result: SearchOutcome, wall_s: float | None = None) -> None:
        self._change("result", frame=frame, repeat=repeat, fields=_fields(wall_s=wall_s, result=result))

    def set_ceiling(self, frame: int, ceiling: Ceiling) -> None:
        self._change("entry", key="ceilings", name=str(frame), value=ceiling.to_json())

    def set_placement(self, key: str, info: dict[str, Any]) -> None:
        self._change("entry", key="placement", name=key, value=info)

    def add_core_probe(self, probe: CoreProbe) -> None:
        self._change("core_probe", value=probe.to_json())

    def warn(self, text: str) -> None:
        if text not in self._doc["warnings"]:
            self._change("warn", text=text)

    def set_state(self, state: str, best_effort: bool = False) -> None:
        """Sets the run's state; a final state writes the whole document. best_effort (a run that is ending on an
        error): when the file cannot be written (a full disk), the state is patched in place where it fits, and
        no error replaces the cause."""
        previous = self.run.state
        try:
            self._change("state", state=state)
            if state != "running":
                self.save()
        except ZeroLossError:
            if not best_effort:
                raise
            self._doc["state"] = state
            self._run = None
            patch_state_in_place(self.path, previous, state)

    def discard(self) -> None:
        """Removes the file and its journal: a run that ended before its first trial has nothing to keep."""
        self._journal.remove()
        self.path.unlink(missing_ok=True)

    def save(self) -> None:
        """Compaction: the whole document, with every journal line folded in, then the journal goes."""
        self._doc["updated"] = now_iso()
        self._doc["journal_seq"] = self._journal.seq
        self._run = None
        write_compact(self.path, self._doc)
        self._journal.remove()


def _fields(**values: Record | tuple[Record, ...] | float | None) -> JsonObject:
    """The fields a change sets on a search, in the order given (those given as None left out), as JSON."""
    return {k: [r.to_json() for r in v] if isinstance(v, tuple) else v.to_json() if isinstance(v, Record) else v
            for k, v in values.items() if v is not None}


def write_compact(path: Path, doc: dict[str, Any]) -> None:
    """A result document written whole, without indentation (a third of the indented size; results are read by
    tools: `jq .` shows it indented), atomically (fileio.write_text_atomic)."""
    write_text_atomic(path, json.dumps(doc, separators=(",", ":")))


def new_document(config: dict[str, Any], host: dict[str, Any]) -> dict[str, Any]:
    """A run document before its first trial."""
    return {"format": FORMAT, "version": VERSION, "zeroloss": __version__, "created": now_iso(),
            "updated": now_iso(), "state": "running", "host": host, "config": config, "placement": {},
            "ceilings": {}, "searches": [], "warnings": []}


def check_same_host(path: Path, stored: dict[str, Any], host: dict[str, Any]) -> None:
    """Refuses to continue a result measured on another host (its numbers would not mix)."""
    if fingerprint(stored) != fingerprint(host):
        was, now = HostFacts.from_json(stored), HostFacts.from_json(host)
        raise ZeroLossError(f"{path} was measured on {was}, this is {now}", "resume it on the host that started it")


def read_doc(path: Path) -> dict[str, Any]:
    """A result or campaign file as it stands, its journal applied, unchecked (tests and tools that watch a run)."""
    doc = read_json(Path(path), "result file")
    if not isinstance(doc, dict):
        raise ZeroLossError(f"{schema.shown(path)} is not a zeroloss result file")
    return doc


def records(cls: type[R], doc: dict[str, Any], path: object) -> R:
    """The records of a document read from path, or one line naming the file and the field that is not
    what its record holds."""
    try:
        return cls.from_json(doc)
    except RecordError as e:
        raise ZeroLossError(f"{schema.shown(path)}: {e}", "the file is damaged; start a new run or restore it") \
            from None


def mark_interrupted(path: Path) -> list[str]:
    """A result or campaign file left `running` by a zeroloss that is gone becomes `interrupted`: read as its
    readers see it (its journal applied: the last state is among the journal's lines), written whole, the journal
    folded in and removed. One line for the user, or none."""
    try:
        doc = read_json(path, "result file")
    except ZeroLossError:
        return []
    if not isinstance(doc, dict) or Head.from_json(doc).state != "running":
        return []
    doc["state"] = "interrupted"
    try:
        write_compact(path, doc)  # journal_seq: the journal's last line, applied by read_json
        Journal(path, 0).remove()
    except ZeroLossError as e:
        return [f"could not mark {path} interrupted: {e}"]
    verb = "campaign" if Head.from_json(doc).format == "zeroloss-campaign" else "run"
    return [f"{path} was left running by a zeroloss that is gone: marked interrupted; continue it with "
            f"'zeroloss {verb} --resume {path}'"]

