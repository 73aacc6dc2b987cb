"""The versioned result file of `zeroloss run`: written after every trial, resumable.

Format history:
- version 1 (zeroloss 0.1): host, config, placement, ceilings, and per (frame size, repeat) a search
  entry with every trial (search verdict, per-direction counts, latency, DUT counters) and the result.
  Per direction `ledger` = {tx, rx, lost, wire_refused, dut_rx_missed, dut_dropped, unexplained}; the DUT
  testpmd's port counters in the trial's `dut_ports`.
- version 2 (zeroloss 0.1, the loss ledger): every trial also keeps `counters` (the delta of every stage's
  counters over the trial), `ledger` (hop by hop, per direction), `diagnosis` and `dut_state`; per direction
  `ledger` = {sent, received, lost, counted, unexplained}; each search keeps its `paths` and `ledger_context`.
  `zeroloss report`, `compare` and `explain` read versions 1 and 2; `--resume` continues version 2 only.
"""

from __future__ import annotations

import gzip
import json
import os
import time
import zlib
from pathlib import Path
from typing import Any

from zeroloss import __version__
from zeroloss.errors import ZeroLossError
from zeroloss.hostinfo import fingerprint

FORMAT = "zeroloss-result"
VERSION = 2
READABLE = (1, 2)  # versions the report, compare and explain read


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def write_json_atomic(path: Path, doc: dict) -> None:
    """Writes doc so that a crash leaves either the old file or the new one: tmp file, fsync, rename."""
    write_text_atomic(path, json.dumps(doc, indent=1))


def write_text_atomic(path: Path, text: str) -> None:
    """Writes text so that a crash leaves either the old file or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: Path, what: str):
    """A JSON document from a file (plain or gzip-compressed), or a one-line error naming the file and the fault."""
    try:
        data = Path(path).read_bytes()
        if data[:2] == b"\x1f\x8b":  # gzip: archived result files are read as they are
            data = gzip.decompress(data)
        return json.loads(data)
    except OSError as e:
        raise ZeroLossError(f"cannot read {what} {path}: {e.strerror or e}") from e
    except (EOFError, zlib.error) as e:
        raise ZeroLossError(f"{what} {path} is a damaged gzip file ({e})") from e
    except UnicodeDecodeError as e:
        raise ZeroLossError(f"{what} {path} is not JSON text ({e.reason})") from e
    except json.JSONDecodeError as e:
        raise ZeroLossError(f"{what} {path} is not valid JSON (line {e.lineno})") from e


def read_result(path: Path) -> dict:
    """A result document of any version this zeroloss reads (for reports and comparisons, never resumed)."""
    doc = read_json(path, "result file")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ZeroLossError(f"{path} is not a zeroloss result file")
    if doc.get("version") not in READABLE:
        raise ZeroLossError(f"{path} has result format version {doc.get('version')}; this zeroloss reads "
                            f"versions {', '.join(map(str, READABLE))}", "update zeroloss")
    return doc


class ResultFile:
    """A result document kept on disk: every change is saved at once, atomically (write, fsync, rename)."""

    def __init__(self, path: Path, doc: dict):
        self.path = path
        self.doc = doc

    @classmethod
    def create(cls, path: Path, config: dict, host: dict) -> ResultFile:
        if path.exists():
            raise ZeroLossError(f"result file {path} exists", "pass --resume to continue it, or another --output")
        doc = {"format": FORMAT, "version": VERSION, "zeroloss": __version__, "created": now_iso(),
               "updated": now_iso(), "state": "running", "host": host, "config": config, "placement": {},
               "ceilings": {}, "searches": [], "warnings": []}
        rf = cls(path, doc)
        rf.save()
        return rf

    @classmethod
    def load(cls, path: Path) -> ResultFile:
        doc = read_result(path)
        if doc["version"] != VERSION:
            raise ZeroLossError(f"{path} has result format version {doc['version']}, written by an older zeroloss: "
                                f"it cannot be continued (this one writes version {VERSION})",
                                "start the run again; report, compare and explain still read it")
        return cls(Path(path), doc)

    def check_host(self, host: dict) -> None:
        """Refuses to continue a result measured on another host (its numbers would not mix)."""
        if fingerprint(self.doc["host"]) != fingerprint(host):
            a, b = self.doc["host"], host
            raise ZeroLossError(f"{self.path} was measured on {a.get('hostname')} ({a.get('cpu_model')}, kernel "
                                f"{a.get('kernel')}), this is {b.get('hostname')} ({b.get('cpu_model')}, kernel "
                                f"{b.get('kernel')})", "resume it on the host that started it")

    def search(self, frame: int, repeat: int) -> dict | None:
        for s in self.doc["searches"]:
            if s["frame"] == frame and s["repeat"] == repeat:
                return s
        return None

    def start_search(self, frame: int, repeat: int, **info: Any) -> dict:
        s = self.search(frame, repeat)
        if s is None:
            s = {"frame": frame, "repeat": repeat, "trials": [], "result": None, **info}
            self.doc["searches"].append(s)
        else:
            s.update(info)
        self.save()
        return s

    def add_trial(self, search: dict, trial: dict) -> None:
        search["trials"].append(trial)
        self.save()

    def finish_search(self, search: dict, result: dict) -> None:
        search["result"] = result
        self.save()

    def warn(self, text: str) -> None:
        if text not in self.doc["warnings"]:
            self.doc["warnings"].append(text)
            self.save()

    def set_state(self, state: str) -> None:
        self.doc["state"] = state
        self.save()

    def save(self) -> None:
        self.doc["updated"] = now_iso()
        write_json_atomic(self.path, self.doc)
