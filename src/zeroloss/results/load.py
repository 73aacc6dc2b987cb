"""One reader for every file zeroloss writes: `load(path)` reads it once (plain or gzip, bounded, its journal
replayed: resultfile.read_json), tells its kind by its format, checks the shape its readers index and returns its
typed record. `zeroloss report`, `compare` and `explain` read files only through here.

- a result file (`zeroloss run`), `format: zeroloss-result`: a RunRecord, its format version and schema.RUN checked;
- a campaign file (`zeroloss campaign`), `format: zeroloss-campaign`: a CampaignRecord, schema.CAMPAIGN checked; a
  tune file (`zeroloss tune`) is a campaign with a `tune` section (`.tune`), schema.TUNE checked too;
- a soak file (`zeroloss trial --interval`), `kind: zeroloss-soak`: a SoakRecord (results/soak.py `read`);
- an events file (`zeroloss events`), `kind: zeroloss-events`: an EventsRecord, its format version checked
  (results/events.py `read`).

A reader that chooses among several files by their kind (report: a soak or events file is reported on its own)
takes each in two steps, `read` (the document and the kind it says it is) then `record`. A reader that indexes
other parts of a result or campaign file than the report passes its own shape (explain: schema.EXPLAIN, the
searches, trials, counters and paths of a result of any version); it is checked instead of the report's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zeroloss.core.errors import ZeroLossError
from zeroloss.results import campaigns, events, schema, soak
from zeroloss.results.campaigns import CampaignRecord
from zeroloss.results.events import EventsRecord
from zeroloss.results.records import FORMAT as RESULT_FORMAT
from zeroloss.results.records import RunRecord
from zeroloss.results.resultfile import check_result, read_json, records
from zeroloss.results.soak import SoakRecord

Document = RunRecord | CampaignRecord | SoakRecord | EventsRecord
Shape = dict[str, Any]  # a schema of results/schema.py
ANY = "result, campaign, soak or events file"  # what a file of none of the kinds is not


@dataclass(frozen=True)
class DocKind:
    """A kind of file: the field and value that name it, its words in messages, its record, and how its document
    is checked and made that record (doc, the file as messages name it, a reader's own shape or None)."""

    key: str  # "format" (result and campaign files) or "kind" (soak and events files)
    format: str
    what: str  # "a soak file"
    record: type[Document]
    read: Callable[[dict[str, Any], object, Shape | None], Document]


def _run(doc: dict[str, Any], name: object, shape: Shape | None) -> RunRecord:
    """A result file: its format version and the report's shape (schema.RUN), or the shape the reader gives."""
    checked = check_result(doc, name, schema.RUN) if shape is None else schema.check(doc, shape, name)
    return records(RunRecord, checked, name)


def _campaign(doc: dict[str, Any], name: object, shape: Shape | None) -> CampaignRecord:
    """A campaign file, or a tune file (a campaign whose `tune` section holds the steps of `zeroloss tune`): the
    report's shape (schema.CAMPAIGN, and schema.TUNE for a tune), or the shape the reader gives."""
    if shape is not None:
        schema.check(doc, shape, name)
    else:
        schema.check(doc, schema.CAMPAIGN, name)
        if isinstance(campaigns.Tuned.from_json(doc).tune, dict):
            schema.check(doc, schema.TUNE, name)
    return records(CampaignRecord, doc, name)


def _soak(doc: dict[str, Any], name: object, _shape: Shape | None) -> SoakRecord:
    return soak.read(doc, name)


def _events(doc: dict[str, Any], name: object, _shape: Shape | None) -> EventsRecord:
    return events.read(doc, name)


RESULT = DocKind("format", RESULT_FORMAT, "a result file", RunRecord, _run)
CAMPAIGN = DocKind("format", campaigns.FORMAT, "a campaign file", CampaignRecord, _campaign)
SOAK = DocKind("kind", soak.KIND, "a soak file", SoakRecord, _soak)
EVENTS = DocKind("kind", events.KIND, "an events file", EventsRecord, _events)
KINDS = (RESULT, CAMPAIGN, SOAK, EVENTS)  # in this order: a document's `format` names it before its `kind`


def kind_of(doc: object) -> DocKind | None:
    """The kind a document says it is, or None (not a zeroloss file)."""
    if not isinstance(doc, dict):
        return None
    return next((k for k in KINDS if doc.get(k.key) == k.format), None)


@dataclass(frozen=True)
class Raw:
    """A file read once, not yet checked: its document and the kind it says it is (None: not a zeroloss file)."""

    path: Path
    name: object  # the file as the caller named it: what messages show
    doc: Any
    kind: DocKind | None


def read(path: str | Path) -> Raw:
    """A file's document and its kind; one line when it cannot be read or is not JSON (resultfile.read_json)."""
    doc = read_json(Path(path), "result file")
    return Raw(Path(path), path, doc, kind_of(doc))


def record(raw: Raw, want: tuple[type[Document], ...] = (), what: str = ANY, shape: Shape | None = None) -> Document:
    """The record of a file read: its shape checked (a reader's own shape for result and campaign files, else
    each kind's), or one line naming the file and the fault. want: the records the reader takes (default: all);
    a file of another kind, or of none, is `... is not a zeroloss {what}`."""
    if raw.kind is None or want and raw.kind.record not in want:
        raise ZeroLossError(f"{schema.shown(raw.name)} is not a zeroloss {what}")
    return raw.kind.read(raw.doc, raw.name, shape)


def load(path: str | Path, want: tuple[type[Document], ...] = (), what: str = ANY,
         shape: Shape | None = None) -> Document:
    """A file's record: read once, its kind told by its format, its shape checked (record)."""
    return record(read(path), want, what, shape)
