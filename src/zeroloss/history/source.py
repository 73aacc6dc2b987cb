"""A file given to `zeroloss history ingest`, read into its typed record (results/: RunRecord, CampaignRecord for a
campaign or tune file, EventsRecord, SoakRecord), and the content hash that stores it once.

read_document is the one place the history reads a file; when results/load.py's `load(path)` (issue 39, §3.4)
is in, its body becomes that call.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroloss.core.codec import Json, Record
from zeroloss.core.errors import ZeroLossError
from zeroloss.results import events, schema, soak
from zeroloss.results.campaigns import FORMAT as CAMPAIGN
from zeroloss.results.campaigns import VERSION as CAMPAIGN_VERSION
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.events import EventsRecord
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import check_result, read_json, records
from zeroloss.results.soak import SoakRecord

Document = RunRecord | CampaignRecord | EventsRecord | SoakRecord
KINDS = "a zeroloss result, campaign, tune, soak or events file"


@dataclass(frozen=True, kw_only=True)
class _Head(Record):
    """What tells a file's kind and version apart before its kind's reader reads it (and a campaign's parts)."""

    format: Json = None
    version: Json = None
    cases: Json = None
    tune: Json = None


@dataclass(frozen=True, kw_only=True)
class _Case(Record):
    run: Json = None


def read_document(path: Path) -> Document:
    """The record of a file of any kind the history keeps, or one line naming the file and its fault: not a file of
    ours, a format newer than this zeroloss reads, a damaged field."""
    raw = read_json(path, "result file")
    head = _Head.from_json(raw) if isinstance(raw, dict) else _Head()
    if soak.is_soak(raw):
        _check_version(path, head.version, "soak", soak.VERSION)
        return soak.read(raw, schema.shown(path))
    if events.is_events(raw):
        _check_version(path, head.version, "events", events.VERSION)
        return events.read(raw, schema.shown(path))
    if isinstance(raw, dict) and head.format == CAMPAIGN:
        return _campaign(path, raw, head)
    if not isinstance(raw, dict) or "format" not in raw:
        raise ZeroLossError(f"{schema.shown(path)} is not {KINDS}")
    return records(RunRecord, _run_doc(raw, path), path)


def _run_doc(raw: Any, path: Path) -> dict[str, Any]:
    """A run document of a version this zeroloss reads, of the shape every result file has (schema.FILE: a file
    `report` refuses for a field it shows, such as a search's link, is still history; its records take the rest)."""
    return check_result(raw, path)


def _campaign(path: Path, raw: dict[str, Any], head: _Head) -> CampaignRecord:
    """A campaign or tune file, its cases' run documents of a version this zeroloss reads."""
    _check_version(path, head.version, "campaign", CAMPAIGN_VERSION)
    if not isinstance(head.cases, list):
        raise ZeroLossError(f"{schema.shown(path)}: cases: is not a list", "the campaign file is damaged")
    if isinstance(head.tune, dict):
        schema.check(raw, schema.TUNE, path)
    for case in head.cases:
        run = _Case.from_json(case).run if isinstance(case, dict) else None
        if run is not None:
            _run_doc(run, path)
    return records(CampaignRecord, raw, path)


def _check_version(path: Path, version: object, what: str, newest: int) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= newest:
        shown = schema.short(version)
        raise ZeroLossError(f"{schema.shown(path)} has {what} format version {shown}; this zeroloss reads versions "
                            f"1 to {newest}", "update zeroloss" if isinstance(version, int) else
                            "the file is damaged")


def content_hash(doc: Document) -> str:
    """The document's content as its record holds it (whatever its compression or indentation), hashed: the same
    content ingested twice is stored once."""
    text = json.dumps(doc.to_json(), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
