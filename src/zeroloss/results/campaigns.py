"""The typed records of campaign and tune files: a campaign holds one run document per case; a tune file is a
campaign whose `tune` section records the steps of `zeroloss tune` (runs/tune/loop.py writes it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from zeroloss.core.codec import Json, JsonObject, Record
from zeroloss.core.fileio import write_json_atomic
from zeroloss.results.records import RunRecord

FORMAT = "zeroloss-campaign"
VERSION = 1


@dataclass(frozen=True, kw_only=True)
class CaseRecord(Record):
    """One case of a campaign: its name, its run once started, or why it was skipped."""

    name: str = ""
    run: RunRecord | None = None
    skip: str | None = None


@dataclass(frozen=True, kw_only=True)
class Decision(Record):
    """What a tune step's decision says of the change: kept or not (its effect, reasons and sizes in `extra`)."""

    keep: Json = None


@dataclass(frozen=True, kw_only=True)
class TuneStep(Record):
    """One step of a tune: the change tried (None for the baseline), its settings, what was measured and decided."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"change"})  # the baseline's change is null

    name: str = ""
    change: JsonObject | None = None  # {key, old, new, why, ...} (runs/tune/knobs.py)
    settings: JsonObject | None = None
    stats: dict[str, JsonObject] | None = None  # per frame size (runs/tune/decide.py SizeStats)
    decision: JsonObject | None = None  # {effect, keep, why, per_size}

    @property
    def kept(self) -> bool:
        return bool(Decision.from_json(self.decision or {}).keep)


@dataclass(frozen=True, kw_only=True)
class TuneRecord(Record):
    """A tune file's section: the target, the budget, the settings as given and as kept, and every step."""

    NULLABLE: ClassVar[frozenset[str]] = frozenset({"max_steps", "current_step", "stop"})  # null until set

    target: tuple[Json, ...] = ()  # (kind, value), e.g. ("line-rate-pct", 100)
    budget_min: float = 0.0
    max_steps: int | None = None
    noise_pct: float = 0.0
    spent_s: float = 0.0
    base: JsonObject | None = None
    current: JsonObject | None = None
    current_step: str | None = None
    steps: tuple[TuneStep, ...] = ()
    stop: str | None = None
    skipped: tuple[Json, ...] = ()
    advice: tuple[Json, ...] = ()
    node: JsonObject | None = None  # a lab node's settings, as read there (runs/tune/labknobs.py)


@dataclass(frozen=True, kw_only=True)
class CampaignRecord(Record):
    """A whole campaign (or tune) document; its fields in the order the file has them (runs/campaign.py writes
    it through `write`)."""

    format: str = FORMAT
    version: int = VERSION
    run_format_version: int | None = None
    zeroloss: str | None = None
    name: str = ""
    description: str | None = None
    columns: tuple[str, ...] | None = None
    created: str | None = None
    state: str = "running"
    host: JsonObject | None = None
    definition: JsonObject | None = None
    overrides: JsonObject | None = None
    cases: tuple[CaseRecord, ...] = ()
    tune: TuneRecord | None = None
    updated: str | None = None
    journal_seq: int | None = None

    def case(self, name: str) -> CaseRecord | None:
        return next((c for c in self.cases if c.name == name), None)

    def measured(self) -> tuple[CaseRecord, ...]:
        return tuple(c for c in self.cases if c.run is not None)


@dataclass(frozen=True, kw_only=True)
class Tuned(Record):
    """A campaign document before it is checked: its `tune` section, if any (any JSON)."""

    tune: Json = None


def write(path: Path, rec: CampaignRecord) -> None:
    """The campaign (or tune) file, whole: indented JSON, written atomically (fileio.write_json_atomic)."""
    write_json_atomic(path, rec.to_json())
